# Tail loss healed by reconciliation.  A producer database emits 5000
# events over 600 resources; a relay that loses 1% of what it carries (last
# events of resources included) moves them into a consumer database with
# three consumers: "ledger" (deliver, every resource), "state"
# (apply_if_newer, every resource) and "billing" (apply_if_newer, only the
# resources starting with "acct-": a filter).  No further events are
# produced, so nothing reveals a lost last event to the consumers, and the
# gap sweeper is not running.  tools/ordering-reconcile then finds the
# resources each consumer is behind on, republishes the missing events
# (through the same lossy relay) and repeats until nothing is behind:
# every consumer position equals the producer's last sequence number, each
# step was applied once and in order, and ordering.check() finds nothing on
# either side.  The first round's numbers (resources looked at one by one
# against resources actually behind) are printed.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use OrderingWorkload;

my $tool = "$FindBin::RealBin/../../tools/ordering-reconcile";

my $node = PostgreSQL::Test::Cluster->new('reconcile');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ordering'");
$node->start;
my $w = OrderingWorkload::setup($node);
$node->safe_psql('consumerdb', q{
	CREATE TABLE billing_inbox (id bigserial PRIMARY KEY, resource_id text NOT NULL,
	                            seq bigint NOT NULL);
	CREATE TABLE billing (resource_id text PRIMARY KEY, seq bigint NOT NULL);
	CREATE FUNCTION consume_billing() RETURNS bigint LANGUAGE plpgsql AS $$
	DECLARE
	    m record;
	    n bigint := 0;
	BEGIN
	    FOR m IN SELECT * FROM billing_inbox ORDER BY random() LOOP
	        IF ordering.apply_if_newer('billing', m.resource_id, m.seq) THEN
	            INSERT INTO billing VALUES (m.resource_id, m.seq)
	            ON CONFLICT (resource_id) DO UPDATE SET seq = EXCLUDED.seq;
	            n := n + 1;
	        END IF;
	    END LOOP;
	    DELETE FROM billing_inbox;
	    RETURN n;
	END
	$$;
});

# 5000 events over acct-0 .. acct-299 and misc-0 .. misc-299, in random
# order of resources
srand(30);
$node->safe_psql('producerdb', q{
	SELECT setseed(0.3);
	SELECT count(ordering.emit(r, 'e', jsonb_build_object('n', i)))
	  FROM (SELECT i, (CASE WHEN random() < 0.5 THEN 'acct-' ELSE 'misc-' END)
	                  || floor(random() * 300)::int AS r
	          FROM generate_series(1, 5000) i) x;
});

# The relay: everything unpublished, 1% lost for real; the billing
# consumer gets the acct- events that were not lost.
sub relay_all
{
	my $relayed = 0;
	while (1)
	{
		my $n = OrderingWorkload::relay($w, batch => 1000, loss => 0.01);
		last if $n == 0;
		$relayed += $n;
	}
	# what reached the inbox reaches billing too
	$node->safe_psql('consumerdb', q{
		INSERT INTO billing_inbox (resource_id, seq)
		SELECT resource_id, seq FROM inbox WHERE resource_id LIKE 'acct-%'});
	OrderingWorkload::drain_inbox($w);
	$node->safe_psql('consumerdb', 'SELECT consume_billing()');
	return $relayed;
}

# resource => last seq, from the producer; resource => position of a consumer
sub producer_last
{
	my ($prefix) = @_;
	return { map { split /\|/ } split /\n/, $node->safe_psql('producerdb', qq{
		SELECT resource_id, last_seq FROM ordering.sequences
		 WHERE stream = 'ordering.outbox' AND resource_id LIKE '$prefix%'}) };
}
sub positions
{
	my ($consumer) = @_;
	return { map { split /\|/ } split /\n/, $node->safe_psql('consumerdb', qq{
		SELECT resource_id, position FROM ordering.positions WHERE consumer = '$consumer'}) };
}
# the resources a consumer is behind on, as the test sees them from both sides
sub behind
{
	my ($consumer, $prefix) = @_;
	my $last = producer_last($prefix);
	my $pos = positions($consumer);
	return [ sort grep { ($pos->{$_} // 0) < $last->{$_} } keys %$last ];
}
# the totals of every run's report (republished events: not in dry runs)
my %reported = (behind => 0, republished => 0, purged => 0);
sub run_tool
{
	my ($consumer, @opt) = @_;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ $tool, '--producer', $node->connstr('producerdb'),
		'--consumer', $node->connstr('consumerdb'), '--consumer-name', $consumer,
		'--grace', '0', '--json', @opt ], '>', \$out, '2>', \$err);
	ok($ok, "ordering-reconcile $consumer @opt runs") or diag($err);
	my $o = decode_json($out);
	# what the producer's statistics should have counted
	$reported{behind} += $o->{behind};
	$reported{republished} += $o->{republished} unless $o->{dry_run};
	$reported{purged} += $o->{purged};
	return $o;
}

my $relayed = relay_all();
is($relayed, 5000, 'the relay carried all 5000 events once');
cmp_ok($w->{lost}, '>', 20, "it lost $w->{lost} of them");
my %behind = (ledger => behind('ledger', ''), state => behind('state', ''),
	billing => behind('billing', 'acct-'));
my $last_events_lost = scalar @{ $behind{state} };
cmp_ok($last_events_lost, '>', 0,
	"the last events of $last_events_lost resources were lost (the state consumer is behind on them)");
cmp_ok(scalar @{ $behind{ledger} }, '>', $last_events_lost, 'the ledger is behind on more (gaps too)');
is($node->safe_psql('consumerdb', 'SELECT count(*) FROM ordering.gap_requests'), '0',
	'no gap was requested: the sweeper does not run');

# A dry run reports exactly the resources behind, and changes nothing.
my $dry = run_tool('ledger', '--dry-run');
is(join(' ', sort map { $_->{resource_id} } grep { $_->{status} eq 'behind' } @{ $dry->{resources} }),
	join(' ', @{ $behind{ledger} }), 'dry run: the resources the ledger is behind on');
is($node->safe_psql('producerdb', 'SELECT count(*) FROM ordering.outbox WHERE published_at IS NULL'),
	'0', 'dry run: nothing republished');

# Reconcile until nothing is behind; the first round's numbers are the
# interesting ones.
my %first;
my $rounds = 0;
while ($rounds < 8)
{
	$rounds++;
	my $behind_now = 0;
	foreach my $c ([ 'ledger' ], [ 'state' ], [ 'billing', '--prefix', 'acct-' ])
	{
		my ($consumer, @opt) = @$c;
		my $out = run_tool($consumer, @opt);
		$first{$consumer} //= $out;
		$behind_now += $out->{behind};
	}
	last if $behind_now == 0;
	relay_all();
}
cmp_ok($rounds, '<', 8, "nothing behind after $rounds rounds");

foreach my $consumer ('ledger', 'state', 'billing')
{
	my $o = $first{$consumer};
	diag(sprintf('%s: %d resources, %d buckets, %d buckets differed; %d resources looked at, '
		  . '%d behind (truth: %d), %d events republished',
		$consumer, $o->{producer_resources}, $o->{buckets}, $o->{differing_buckets},
		$o->{resources_drilled}, $o->{behind}, scalar @{ $behind{$consumer} }, $o->{republished}));
	is(join(' ', sort map { $_->{resource_id} } grep { $_->{status} eq 'behind' } @{ $o->{resources} }),
		join(' ', @{ $behind{$consumer} }), "$consumer: found exactly the resources behind");
	cmp_ok($o->{resources_drilled}, '<', $o->{producer_resources} / 2,
		"$consumer: looked at fewer than half of the resources one by one");
}
is($first{billing}{producer_resources}, scalar(keys %{ producer_last('acct-') }),
	'billing: only the acct- resources were summarised');
is(scalar(grep { $_->{resource_id} !~ /^acct-/ } @{ $first{billing}{resources} }), 0,
	'billing: only acct- resources were looked at');

# Every position is the producer's last sequence number.
foreach my $c ([ 'ledger', '' ], [ 'state', '' ], [ 'billing', 'acct-' ])
{
	my ($consumer, $prefix) = @$c;
	my $want = producer_last($prefix);
	my $pos = positions($consumer);
	is(join(' ', map { "$_=" . ($pos->{$_} // 0) } sort keys %$want),
		join(' ', map { "$_=$want->{$_}" } sort keys %$want),
		"$consumer: every position equals the producer's last sequence number");
}
is($node->safe_psql('consumerdb',
	q{SELECT count(*) FROM ordering.positions WHERE consumer = 'billing' AND resource_id NOT LIKE 'acct-%'}),
	'0', 'billing: no position outside its filter');
# The producer's statistics counted what the runs reported.
is( $node->safe_psql('producerdb', q{
		SELECT reconcile_resources_behind || ' behind, ' || reconcile_events_republished
		       || ' republished, ' || reconcile_events_purged || ' purged'
		  FROM ordering.stream_stats WHERE stream = 'ordering.outbox'}),
	"$reported{behind} behind, $reported{republished} republished, $reported{purged} purged",
	'the stream statistics count the resources behind and the events republished the runs reported');
cmp_ok($reported{republished}, '>', 0, 'events were republished');
OrderingWorkload::check_invariants($w, 'reconciled');
OrderingWorkload::check_complete($w, 'reconciled');
is($node->safe_psql($_, q{SELECT string_agg(kind || ': ' || detail, E'\n') FROM ordering.check()}),
	'', "$_: ordering.check() finds nothing")
  foreach ('producerdb', 'consumerdb');

$node->stop;
done_testing();
