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
#   ORDERING_SOAK_SEED=n    replay a run (the seed is printed): the same
#                           relay decisions and pgbench draws; the
#                           interleaving of the clients still varies
#   ORDERING_SOAK_SCALE=n   n times the events and resources (default 1:
#                           2000 events over 50 resources, a few seconds)
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
$seed = int($seed);
srand($seed);
diag("soak: ORDERING_SOAK_SEED=$seed ORDERING_SOAK_SCALE=$scale");

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
my $w = OrderingWorkload::setup($node, resources => $resources);
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

	# finished producing and relaying: is everything applied?
	if ($n == 0
		&& $node->safe_psql('producerdb', 'SELECT count(*) FROM ordering.outbox') == $events)
	{
		my ($inbox, $behind) = split /\|/, $node->safe_psql('consumerdb', q{
			SELECT (SELECT count(*) FROM inbox), (SELECT count(*) FROM ordering.parked)});
		next if $inbox > 0;
		my $total = $node->safe_psql('producerdb', 'SELECT count(*) FROM ordering.outbox');
		my $applied = $node->safe_psql('consumerdb', q{
			SELECT COALESCE(sum(position), 0) FROM ordering.positions WHERE consumer = 'ledger'});
		if ($applied == $total)
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
ok($done, 'every produced event was applied');
$producers->finish;
OrderingWorkload::stop_pgbench($consumers);

OrderingWorkload::check_invariants($w, 'end', settle => 1);
my $ledger = OrderingWorkload::check_complete($w, 'end');
$checks++;
is($ledger, $events, "end: the ledger holds the $events events produced");
cmp_ok($w->{lost}, '>', 0, 'events were lost for real') if $events >= 1000;

my $stats = $node->safe_psql('consumerdb', q{
	SELECT format('%s consumed, %s applied, %s stale, %s duplicate, %s parked, %s drained, %s gaps escalated',
	              events_consumed, events_applied, events_stale, events_duplicate,
	              events_parked, events_drained, gaps_escalated)
	  FROM ordering.stats WHERE consumer = 'ledger'});
diag(sprintf("soak: seed %d scale %d: %d events over %d resources; relayed %d (%d duplicated, "
	  . "%d lost, %d old re-sent); %d sweeps, %d ranges republished; %d invariant checks "
	  . "(%d tests) in %.1f s",
	$seed, $scale, $events, $resources, $w->{relayed}, $w->{duplicated}, $w->{lost},
	$stale, $sweeps, $requests, $checks, Test::More->builder->current_test,
	time() - $started));
diag("soak: ledger consumer: $stats");

$node->stop;
done_testing();
