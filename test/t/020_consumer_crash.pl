# Crash recovery of the consumer side.  Concurrent producers emit into the
# outbox of a producer database; a relay moves the events, shuffled,
# duplicated and 2% lost for real, into a consumer database where concurrent
# consumers pass each one to ordering.deliver (applying the returned rows
# into a ledger in the same transaction) and to ordering.apply_if_newer
# (upserting a state table).  The workload is interrupted by immediate
# shutdowns and by kill -9 of a backend in the middle of deliver (inside its
# handler).  After each restart: every outbox resource is 1..n; every ledger
# is exactly 1..position, each step once and in order, with the payload the
# producer emitted; parked events are all beyond position + 1; gap requests
# exist only while events are parked; the state table follows its
# positions; nothing of the killed transactions survived; the launcher and
# the gap sweeper are back.  Losses are healed by republishing (on the
# sweeper's gap requests while the workload runs, and for whatever is still
# behind at the end); at the end every produced event has been applied
# exactly once.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use OrderingWorkload;

my $node = PostgreSQL::Test::Cluster->new('consumer_crash');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ordering'
restart_after_crash = on
ordering.sweep_databases = 'consumerdb'
ordering.sweep_interval = '1s'
ordering.gap_deadline = '1s'
});
$node->start;
my $w = OrderingWorkload::setup($node, resources => 20);
# the sweeper of consumerdb may have started before the extension existed
$node->reload;

# A handler that applies into the ledger and, for the victim's own event,
# sleeps: a backend killed there is inside deliver().
$node->safe_psql('consumerdb', q{
	CREATE FUNCTION slow_apply(r text, s bigint, p jsonb) RETURNS void
	LANGUAGE plpgsql AS $$
	BEGIN
	    INSERT INTO ledger (resource_id, seq, payload) VALUES (r, s, p);
	    IF p ? 'victim' THEN
	        PERFORM pg_sleep(600);
	    END IF;
	END
	$$;});

sub workers_back
{
	my ($what) = @_;
	ok( $node->poll_query_until('postgres', q{
		SELECT count(*) FILTER (WHERE backend_type = 'ordering launcher') = 1
		   AND count(*) FILTER (WHERE backend_type = 'ordering gap sweeper'
		                          AND datname = 'consumerdb') = 1
		  FROM pg_stat_activity}),
		"$what: the launcher and the sweeper of consumerdb run");
}

my ($max_parked, $max_gaps);

# Run producers, consumers and the relay until the ledger has grown by at
# least $more rows; returns the pgbench handles (still running).
sub run_workload
{
	my ($more) = @_;
	my $start = $node->safe_psql('consumerdb', 'SELECT count(*) FROM ledger');
	my @h = (
		OrderingWorkload::start_pgbench($w, 'produce', 2, 120, '-R', '150'),
		OrderingWorkload::start_pgbench($w, 'consume', 3, 120));
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		OrderingWorkload::relay($w, batch => 100, dup => 0.2, loss => 0.02);
		OrderingWorkload::answer_gap_requests($w);
		my ($n, $p, $g) = split /\|/, $node->safe_psql('consumerdb', q{
			SELECT (SELECT count(*) FROM ledger), (SELECT count(*) FROM ordering.parked),
			       (SELECT count(*) FROM ordering.gap_requests)});
		$max_parked = $p if $p > $max_parked;
		$max_gaps = $g if $g > $max_gaps;
		last if $n >= $start + $more;
		select(undef, undef, undef, 0.05);
	}
	return @h;
}

workers_back('start');
my $applied = 0;
($max_parked, $max_gaps) = (0, 0);

# Immediate shutdowns with everything in flight.
for my $round (1 .. 2)
{
	my @h = run_workload(300);
	# and one relay batch more, so that the inbox is not empty
	OrderingWorkload::relay($w, batch => 100, dup => 0.2, loss => 0.02);
	$node->stop('immediate');
	OrderingWorkload::stop_pgbench(@h);
	$node->start;
	my $now = OrderingWorkload::check_invariants($w, "immediate shutdown $round", settle => 1);
	cmp_ok($now, '>', $applied, "immediate shutdown $round: progress was made and kept");
	$applied = $now;
	workers_back("immediate shutdown $round", settle => 1);
}

# kill -9 of a backend in the middle of deliver(handler): it has advanced
# r2 and sleeps in its handler.  Another victim holds the lock of r1 (the
# others wait for it), has applied what deliver returned, parked a far event
# of its own, and not committed.
for my $round (1 .. 2)
{
	my @h = run_workload(300);
	my $victim = $node->background_psql('consumerdb');
	$victim->query_safe('BEGIN');
	my $pos = $victim->query_safe(q{SELECT ordering.position('ledger', 'r1')});
	my $next = $pos + 1;
	$victim->query_safe(qq{
		INSERT INTO ledger (resource_id, seq, payload)
		SELECT 'r1', d.seq, d.payload
		  FROM ordering.deliver('ledger', 'r1', $next, '{"victim": true}') d});
	$victim->query_safe(q{SELECT * FROM ordering.deliver('ledger', 'victim', 5, '{}')});
	$victim->query_safe(q{SELECT ordering.apply_if_newer('state', 'victim', 5)});
	cmp_ok($victim->query_safe(q{SELECT ordering.position('ledger', 'r1')}), '>=', $next,
		"kill -9 $round: the victim advanced r1 in its transaction");
	# A second victim is killed inside deliver(), in its handler, after
	# advancing its resource and applying the events it drained: 1 arrives,
	# 2 and 3 were parked (committed), the handler sleeps on 3.
	my $res2 = "victim2-$round";
	$node->safe_psql('consumerdb', qq{
		SELECT count(*) FROM ordering.deliver('ledger', '$res2', 2, '{}');
		SELECT count(*) FROM ordering.deliver('ledger', '$res2', 3, '{"victim": true}');});
	my $inside = $node->background_psql('consumerdb');
	my $pid = $inside->query_safe('SELECT pg_backend_pid()');
	$inside->query_until(qr/delivering/, qq{
\\echo delivering
SELECT ordering.deliver('ledger', '$res2', 1, '{}', 'slow_apply(text, bigint, jsonb)');
});
	ok( $node->poll_query_until('consumerdb', qq{
		SELECT wait_event = 'PgSleep' FROM pg_stat_activity WHERE pid = $pid}),
		"kill -9 $round: the second victim sleeps inside deliver");
	# let the consumers pile up behind the victims' locks of r1 and r2
	OrderingWorkload::relay($w, batch => 100, dup => 0.2);
	my $offset = -s $node->logfile;
	kill 'KILL', $pid;
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
	$node->wait_for_log(qr/database system is ready to accept connections/, $offset);
	OrderingWorkload::stop_pgbench(@h);
	{
		local $SIG{PIPE} = 'IGNORE';
		eval { $victim->quit };
		eval { $inside->quit };
	}
	my $now = OrderingWorkload::check_invariants($w, "kill -9 $round", settle => 1);
	cmp_ok($now, '>', $applied, "kill -9 $round: progress was made and kept");
	$applied = $now;
	is($node->safe_psql('consumerdb', q{
		SELECT (SELECT count(*) FROM ledger WHERE payload ? 'victim')
		     + (SELECT count(*) FROM ordering.parked WHERE resource_id = 'victim')
		     + (SELECT count(*) FROM ordering.positions WHERE resource_id = 'victim')}),
		'0', "kill -9 $round: nothing of the killed transactions survived");
	is($node->safe_psql('consumerdb', qq{
		SELECT ordering.position('ledger', '$res2') || ':' ||
		       (SELECT count(*) FROM ledger WHERE resource_id = '$res2') || ':' ||
		       (SELECT string_agg(seq::text, ',' ORDER BY seq) FROM ordering.parked
		         WHERE resource_id = '$res2')}),
		'0:0:2,3', "kill -9 $round: killed inside deliver: position, ledger and parked as before");
	# (an operator's cleanup: these events have no producer)
	$node->safe_psql('consumerdb', qq{
		BEGIN;
		DELETE FROM ordering.parked WHERE resource_id = '$res2';
		DELETE FROM ordering.gap_requests WHERE resource_id = '$res2';
		DELETE FROM ordering.positions WHERE resource_id = '$res2';
		COMMIT;});
	workers_back("kill -9 $round", settle => 1);
}

# Heal: what the dead relays had marked published without delivering is
# republished; then every event is applied exactly once.
my $ranges = OrderingWorkload::heal($w);
note("relayed $w->{relayed} rows, duplicated $w->{duplicated}, lost $w->{lost}, "
	  . "republished $w->{republished} ranges on gap requests and $ranges at the end; seen at once: $max_parked parked, $max_gaps gap requests");
cmp_ok($max_parked, '>', 0, 'the shuffled deliveries did park events');
cmp_ok($w->{republished} + $ranges, '>', 0, 'the lost events were republished');
OrderingWorkload::check_invariants($w, 'healed', settle => 1);
my $total = OrderingWorkload::check_complete($w, 'healed');
cmp_ok($total, '>=', $applied, 'healed: every event produced is applied');

$node->stop;
done_testing();
