# The whole loop in one cluster: a producer database with the outbox, a
# consumer database with a step consumer, and a few lines of Perl as the
# relay and the gap listener.  The relay loses one event for real (marks it
# published without delivering it); the consumer parks what follows; the
# worker escalates the gap after the deadline; the listener asks the
# producer to republish the missing range; the relay sends it again; the
# consumer drains in order and the request disappears.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('loop');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ordering'
ordering.sweep_databases = 'consumerdb'
ordering.sweep_interval = '1s'
ordering.gap_deadline = '1s'
});
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE producerdb');
$node->safe_psql('postgres', 'CREATE DATABASE consumerdb');
$node->safe_psql('producerdb', q{
	CREATE EXTENSION ordering;
	SELECT ordering.emit('acct-1', 'Step', jsonb_build_object('n', i)) FROM generate_series(1, 5) i;
	SELECT ordering.emit('acct-2', 'Step', jsonb_build_object('n', i)) FROM generate_series(1, 3) i;
});
$node->safe_psql('consumerdb', q{
	CREATE EXTENSION ordering;
	CREATE TABLE ledger (id bigserial PRIMARY KEY, resource_id text, seq bigint, payload jsonb);
});
# The sweeper of consumerdb may have started before the extension existed.
$node->reload;

# The relay: claim, deliver (applying what deliver returns in the consumer's
# transaction), mark published.  acct-1 seq 3 is lost the first time.
my $lost = 0;
sub relay
{
	my $rows = $node->safe_psql('producerdb',
		'SELECT id, resource_id, seq, payload FROM ordering.claim_unpublished(100)');
	my @ids;
	foreach my $line (split /\n/, $rows)
	{
		my ($id, $res, $seq, $payload) = split /\|/, $line;
		push @ids, $id;
		if (!$lost && $res eq 'acct-1' && $seq == 3)
		{
			$lost = 1;
			next;
		}
		$node->safe_psql('consumerdb', qq{
			INSERT INTO ledger (resource_id, seq, payload)
			SELECT '$res', d.seq, d.payload
			  FROM ordering.deliver('billing', '$res', $seq, '$payload') d});
	}
	$node->safe_psql('producerdb',
		'SELECT ordering.mark_published(ARRAY[' . join(',', @ids) . ']::bigint[])')
	  if @ids;
	return scalar(@ids);
}

# The listener: LISTEN ordering_gap in the consumer database, republish in
# the producer database.
my $listener = $node->background_psql('consumerdb');
$listener->query_safe('LISTEN ordering_gap');
my @requests;
sub listen_and_republish
{
	my $out = $listener->query_safe('SELECT 1');
	foreach my $payload ($out =~ /Asynchronous notification "ordering_gap" with payload "(.*?)" received/g)
	{
		my $r = decode_json($payload);
		push @requests, $r;
		$node->safe_psql('producerdb',
			"SELECT ordering.republish('$r->{resource_id}', $r->{missing_from}, $r->{missing_to})");
	}
}

is(relay(), 8, 'the relay sent (or lost) all 8 events');
ok($lost, 'one event was lost');
is($node->safe_psql('consumerdb', q{SELECT ordering.position('billing', 'acct-1')}),
	'2', 'acct-1 stopped before the lost event');
is($node->safe_psql('consumerdb', 'SELECT count(*) FROM ordering.parked'),
	'2', 'and parked the two after it');

my $done = 0;
foreach (1 .. $PostgreSQL::Test::Utils::timeout_default * 5)
{
	listen_and_republish();
	relay();
	$done = $node->safe_psql('consumerdb', q{
		SELECT ordering.position('billing', 'acct-1') = 5
		   AND NOT EXISTS (SELECT FROM ordering.parked)
		   AND NOT EXISTS (SELECT FROM ordering.gap_requests)});
	last if $done eq 't';
	usleep(200_000);
}
is($done, 't', 'the consumer drained, nothing parked, no request left');
$listener->quit;

cmp_ok(scalar(@requests), '>=', 1, 'the gap was escalated');
is("$requests[0]{consumer}/$requests[0]{resource_id}/$requests[0]{missing_from}-$requests[0]{missing_to}",
	'billing/acct-1/3-3', 'the request named exactly the lost event');
is( $node->safe_psql('consumerdb',
		q{SELECT string_agg(seq::text, ',' ORDER BY id) FROM ledger WHERE resource_id = 'acct-1'}),
	'1,2,3,4,5', 'acct-1 was applied once each, in order');
is( $node->safe_psql('consumerdb',
		q{SELECT string_agg((payload->>'n'), ',' ORDER BY id) FROM ledger WHERE resource_id = 'acct-2'}),
	'1,2,3', 'acct-2 was never held up');
is( $node->safe_psql('consumerdb', q{
	SELECT events_parked, events_drained, gaps_escalated >= 1, parked_current
	  FROM ordering.stats WHERE consumer = 'billing'}),
	'2|2|t|0', 'the statistics saw the parking, the drain and the escalation');

$node->stop;
done_testing();
