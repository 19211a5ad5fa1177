# pg_dump / restore of a consumer database, custom and plain formats, with
# the documented steps (OrderingDump.pm, docs/restore.md): every
# position, parked event (payload and parked_at), gap request (all columns)
# and the user's tables come back unchanged, and delivering after the
# restore continues where the original stopped: a parked event drains when
# its missing predecessor arrives, the gap request goes away, and once every
# loss is republished each produced event has been applied exactly once.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use OrderingDump;
use OrderingWorkload;

my $node = PostgreSQL::Test::Cluster->new('consumer_dump');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ordering'");
$node->start;
my $w = OrderingWorkload::setup($node);

# 10 resources, 30 events each; the relay shuffles, duplicates and loses
# some for real, so that events wait parked behind gaps.
srand(21);
$node->safe_psql('producerdb', q{
	SELECT ordering.emit('r' || (i % 10), 'e', jsonb_build_object('i', i))
	  FROM generate_series(1, 300) i});
1 while OrderingWorkload::relay($w, batch => 50, dup => 0.2, loss => 0.05);
OrderingWorkload::drain_inbox($w);
# and a few still waiting in the broker
$node->safe_psql('producerdb', q{SELECT ordering.emit('r1', 'e', '{"late": true}')});
OrderingWorkload::relay($w);
# gap requests for every gap (their events were parked "an hour ago")
$node->safe_psql('consumerdb', q{
	UPDATE ordering.parked SET parked_at = parked_at - interval '1 hour';
	SELECT count(*) FROM ordering.sweep_gaps();
	SELECT count(*) FROM ordering.sweep_gaps();});
OrderingWorkload::check_invariants($w, 'before the dump');

my $counts_sql = q{
	SELECT (SELECT count(*) FROM ordering.positions) || '/' ||
	       (SELECT count(*) FROM ordering.parked) || '/' ||
	       (SELECT count(*) FROM ordering.gap_requests) || '/' ||
	       (SELECT count(*) FROM inbox)};
my ($npos, $nparked, $ngaps, $ninbox) = split m{/}, $node->safe_psql('consumerdb', $counts_sql);
note("before the dump: $npos positions, $nparked parked, $ngaps gap requests, $ninbox in the inbox");
cmp_ok($nparked, '>', 0, 'events are parked');
cmp_ok($ngaps, '>', 0, 'gaps are requested');
cmp_ok($ninbox, '>', 0, 'events wait in the inbox');

my $state_sql = q{
	SELECT md5(string_agg(x, E'\n' ORDER BY x)) FROM (
	SELECT format('pos %s %s %s', consumer, resource_id, position) AS x FROM ordering.positions
	UNION ALL
	SELECT format('parked %s %s %s %s %s', consumer, resource_id, seq, payload, parked_at)
	  FROM ordering.parked
	UNION ALL
	SELECT format('gap %s', g) FROM ordering.gap_requests g
	UNION ALL
	SELECT format('ledger %s', l) FROM ledger l
	UNION ALL
	SELECT format('state %s', s) FROM state s
	UNION ALL
	SELECT format('inbox %s', i) FROM inbox i) v};
my $state = $node->safe_psql('consumerdb', $state_sql);

my $tempdir = PostgreSQL::Test::Utils::tempdir;
foreach my $format ('custom', 'plain')
{
	my $db = "restored_$format";
	OrderingDump::dump_restore($node, 'consumerdb', $db, $format, "$tempdir/consumer.$format");
	is($node->safe_psql($db, $state_sql), $state,
		"$format: positions, parked events, gap requests and the user's tables restored unchanged");
	is($node->safe_psql($db, $counts_sql), "$npos/$nparked/$ngaps/$ninbox", "$format: same counts");

	# Deliver after the restore: the lowest gap's missing events arrive
	# (straight from the outbox); the parked run behind it drains.
	my $r = { %$w, cdb => $db, answered => {} };
	my ($res, $from, $to, $lowest) = split /\|/, $node->safe_psql($db, q{
		SELECT g.resource_id, g.missing_from, g.missing_to,
		       (SELECT min(seq) FROM ordering.parked p
		         WHERE p.consumer = g.consumer AND p.resource_id = g.resource_id)
		  FROM ordering.gap_requests g ORDER BY resource_id LIMIT 1});
	my $missing = $node->safe_psql('producerdb', qq{
		SELECT string_agg(format('(%L, %s, %L)', resource_id, seq, payload), ',' ORDER BY seq)
		  FROM ordering.outbox WHERE resource_id = '$res' AND seq BETWEEN $from AND $to});
	$node->safe_psql($db, qq{
		SELECT count(*) FROM (SELECT consume_one() FROM generate_series(1, (SELECT count(*) FROM inbox))) x;
		INSERT INTO inbox (resource_id, seq, payload) VALUES $missing;
		SELECT count(*) FROM (SELECT consume_one() FROM generate_series(1, (SELECT count(*) FROM inbox))) x;});
	cmp_ok($node->safe_psql($db, "SELECT ordering.position('ledger', '$res')"), '>=', $lowest,
		"$format: $res: seqs $from..$to arrived, the parked run from $lowest drained");
	is($node->safe_psql($db, qq{
		SELECT count(*) FROM ordering.gap_requests WHERE resource_id = '$res' AND missing_to <= $to}),
		'0', "$format: $res: its gap request is gone");
	OrderingWorkload::check_invariants($r, "$format: after delivering post-restore");

	# Heal the other losses: everything applied exactly once.
	OrderingWorkload::heal($r);
	OrderingWorkload::check_invariants($r, "$format: healed");
	OrderingWorkload::check_complete($r, "$format: healed");
}

# The original is untouched by all this.
is($node->safe_psql('consumerdb', $state_sql), $state, 'the dumped database did not change');

$node->stop;
done_testing();
