# Randomized soak of the whole loop: concurrent producers over many
# resources; a relay that claims random batch sizes and shuffles,
# duplicates, re-sends old events and loses events for real; concurrent
# step + state consumers; the gap loop (ordering.sweep_gaps called directly,
# gap_deadline 1 s) answered by republish; and at the end a tail check that
# republishes what no parked event could reveal (losses of a resource's last
# events).  The invariants are checked while everything runs and at the
# end, where every produced event must have been applied exactly once, in
# order, with nothing parked or requested.
#
# Poison: a share of the events carry a payload the step consumer rejects
# until the operator fixes it; each becomes the dead letter of its resource
# (through the handler of deliver(..., on_error => 'dead_letter'), or
# through dead_letter() from a table-form consumer: OrderingWorkload.pm),
# and the resource's later events park behind it while the other resources
# keep flowing.  Once every event is applied, parked or dead, the handler
# is fixed and every dead letter retried; then the end checks above hold.
#
#   ORDERING_SOAK_SEED=n    replay a run (the seed is printed): the same
#                           relay decisions and pgbench draws; the
#                           interleaving of the clients still varies
#   ORDERING_SOAK_SCALE=n   n times the events and resources (default 1:
#                           2000 events over 50 resources, a few seconds)
#   ORDERING_SOAK_POISON=p  the share of poison events (default 0.005;
#                           0: none, and the step consumer is the table
#                           form of deliver() throughout)
#
# test/soak.sh runs only this test, in its own sandbox.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use OrderingWorkload;

my $seed = $ENV{ORDERING_SOAK_SEED} // (time() * 1000 % 1000000000);
my $scale = $ENV{ORDERING_SOAK_SCALE} // 1;
my $poison = $ENV{ORDERING_SOAK_POISON} // 0.005;
$seed = int($seed);
srand($seed);
diag("soak: ORDERING_SOAK_SEED=$seed ORDERING_SOAK_SCALE=$scale ORDERING_SOAK_POISON=$poison");

my $resources = 50 * $scale;
my $producer_clients = 3;
# each producer transaction emits 2 events
my $per_client = int(1000 * $scale / $producer_clients) + 1;
my $events = 2 * $producer_clients * $per_client;

my $node = PostgreSQL::Test::Cluster->new('soak');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ordering'
ordering.gap_deadline = '1s'
max_connections = 50
});
$node->start;
my $w = OrderingWorkload::setup($node, resources => $resources, poison => $poison);
my $started = time();

# pgbench draws its own random numbers: give it a seed derived from ours.
# The producers spread their events over about 5 s.
my $producers = OrderingWorkload::start_pgbench($w, 'produce', $producer_clients, undef,
	'-t', $per_client, '-R', 200 * $scale, "--random-seed=$seed");
my $consumers = OrderingWorkload::start_pgbench($w, 'consume', 4, 600,
	"--random-seed=" . ($seed + 1));

# The relay, the gap loop and the checks, until every event is applied.
my ($checks, $sweeps, $requests, $stale) = (0, 0, 0, 0);
my $iteration = 0;
my $deadline = time() + 60 * $scale + $PostgreSQL::Test::Utils::timeout_default;
my $done = 0;
while (!$done && time() < $deadline)
{
	$iteration++;
	my $n = OrderingWorkload::relay($w, batch => 1 + int(rand(200)),
		dup => 0.1, loss => 0.03);

	# sometimes the broker redelivers old events
	if (rand() < 0.2)
	{
		my $old = $node->safe_psql('producerdb', q{
			SELECT string_agg(format('(%L, %s, %L)', resource_id, seq, payload), ',')
			  FROM (SELECT resource_id, seq, payload FROM ordering.outbox
			         WHERE published_at IS NOT NULL ORDER BY random() LIMIT 5) o});
		if ($old ne '')
		{
			$node->safe_psql('consumerdb',
				"INSERT INTO inbox (resource_id, seq, payload) VALUES $old");
			$stale += 5;
		}
	}

	# the gap loop: sweep, answer every emitted request with a republish
	if ($iteration % 5 == 0)
	{
		my $emitted = $node->safe_psql('consumerdb', q{
			SELECT string_agg(format('SELECT ordering.republish(%L, %s, %s);',
			                         resource_id, missing_from, missing_to), E'\n')
			  FROM ordering.sweep_gaps()});
		$sweeps++;
		if ($emitted ne '')
		{
			$node->safe_psql('producerdb', $emitted);
			$requests += () = $emitted =~ /republish/g;
		}
	}

	# the invariants hold at any moment, with everything running
	if ($iteration % 10 == 0)
	{
		OrderingWorkload::check_invariants($w, "iteration $iteration");
		$checks++;
	}

	# finished producing and relaying: is every event applied, or parked
	# or dead behind a dead letter?
	if ($n == 0
		&& $node->safe_psql('producerdb', 'SELECT count(*) FROM ordering.outbox') == $events)
	{
		# events parked behind a dead letter wait for it, not for a gap
		my ($inbox, $behind) = split /\|/, $node->safe_psql('consumerdb', q{
			SELECT (SELECT count(*) FROM inbox),
			       (SELECT count(*) FROM ordering.parked p
			          JOIN ordering.positions o USING (consumer, resource_id)
			         WHERE o.blocked_at IS NULL OR p.seq < o.blocked_at)});
		next if $inbox > 0;
		my $total = $node->safe_psql('producerdb', 'SELECT count(*) FROM ordering.outbox');
		my $held = $node->safe_psql('consumerdb',
			"SELECT COALESCE(sum(n), 0) FROM ($OrderingWorkload::held_sql) h(r, n)");
		if ($held == $total)
		{
			$done = 1;
		}
		elsif ($behind == 0)
		{
			# nothing parked, yet behind: the last events of some resources
			# were lost; the tail check republishes them
			$requests += OrderingWorkload::heal($w);
		}
		else
		{
			select(undef, undef, undef, 0.2);    # wait for the deadline
		}
	}
}
ok($done, 'every produced event was applied, or set aside behind a dead letter');
$producers->finish;

# The operator's fix: the handler accepts what it rejected, and every dead
# letter is retried through it while the consumers keep running.
my ($poisoned, $dead, $retried) = (0, 0, 0);
if ($poison > 0)
{
	$poisoned = $node->safe_psql('producerdb',
		q{SELECT count(*) FROM ordering.outbox WHERE payload ? 'poison'});
	OrderingWorkload::check_invariants($w, 'blocked', settle => 1);
	$dead = $node->safe_psql('consumerdb', 'SELECT count(*) FROM ordering.dead_letters');
	cmp_ok($dead, '>', 0, 'poison events were set aside as dead letters') if $events >= 1000;
	is($node->safe_psql('consumerdb', q{
		SELECT count(*) FROM ledger WHERE payload ? 'poison'}),
		'0', 'no poison event was applied before the fix');
	$node->safe_psql('consumerdb', 'UPDATE handler_fixed SET fixed = true');
	$retried = $node->safe_psql('consumerdb', q{
		SELECT COALESCE(sum(ordering.retry_dead_letter(consumer, resource_id,
		                                               'apply_step(text, bigint, jsonb)')), 0)
		  FROM ordering.dead_letters});
}
OrderingWorkload::stop_pgbench($consumers);

OrderingWorkload::check_invariants($w, 'end', settle => 1);
my $ledger = OrderingWorkload::check_complete($w, 'end');
$checks++;
is($ledger, $events, "end: the ledger holds the $events events produced");
cmp_ok($w->{lost}, '>', 0, 'events were lost for real') if $events >= 1000;
is($node->safe_psql('consumerdb', q{SELECT count(*) FROM ledger WHERE payload ? 'poison'}),
	$poisoned, "end: the $poisoned poison events were applied, once each");
# the counting identity of src/stats/stats.h holds over the whole run
is($node->safe_psql('consumerdb', q{
	SELECT events_consumed + events_drained
	       - (events_applied + events_stale + events_duplicate + events_parked
	          + events_dead_lettered)
	  FROM ordering.stats WHERE consumer = 'ledger'}),
	'0', 'end: consumed + drained = applied + stale + duplicate + parked + dead-lettered');

my $stats = $node->safe_psql('consumerdb', q{
	SELECT format('%s consumed, %s applied, %s stale, %s duplicate, %s parked, %s drained, %s gaps escalated, %s dead-lettered, %s skipped',
	              events_consumed, events_applied, events_stale, events_duplicate,
	              events_parked, events_drained, gaps_escalated, events_dead_lettered,
	              events_skipped)
	  FROM ordering.stats WHERE consumer = 'ledger'});
diag(sprintf("soak: seed %d scale %d: %d events over %d resources; relayed %d (%d duplicated, "
	  . "%d lost, %d old re-sent); %d sweeps, %d ranges republished; %d invariant checks "
	  . "(%d tests) in %.1f s",
	$seed, $scale, $events, $resources, $w->{relayed}, $w->{duplicated}, $w->{lost},
	$stale, $sweeps, $requests, $checks, Test::More->builder->current_test,
	time() - $started));
diag("soak: ledger consumer: $stats");
diag("soak: $poisoned poison events; $dead dead letters at the fix, whose retry applied $retried events")
  if $poison > 0;

$node->stop;
done_testing();
