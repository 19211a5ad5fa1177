# Without shared_preload_libraries the statistics objects raise 55000 with a
# hint, and everything else (producing, sweeping, reconciling,
# ordering.check()) keeps working with the statistics hooks as no-ops.
# With it, the shared memory the statistics reserve at the default settings
# stays within 1 MiB.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('plain');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION ordering');

foreach my $sql ('SELECT * FROM ordering.stats',
	'SELECT * FROM ordering.stream_stats',
	'SELECT ordering.metrics()',
	'SELECT ordering.stats_reset()')
{
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"\\set VERBOSITY verbose\n$sql");
	like($stderr, qr/ERROR:  55000: ordering statistics are not available/,
		"$sql: SQLSTATE 55000");
	like($stderr, qr/HINT:  Add ordering to shared_preload_libraries/,
		"$sql: hint to preload");
}

is( $node->safe_psql('postgres', q{
	BEGIN;
	SELECT ordering.emit('r', 'e', '{}');
	SAVEPOINT s;
	SELECT ordering.emit('r', 'e', '{}');
	ROLLBACK TO SAVEPOINT s;
	COMMIT;
	SELECT ordering.emit('r', 'e', '{}')}),
	"1\n2\n2", 'producing works, savepoints included');
$node->safe_psql('postgres', q{
	INSERT INTO ordering.parked (consumer, resource_id, seq, payload, parked_at)
	VALUES ('c', 'r', 3, '{}', now() - interval '1 h')});
is( $node->safe_psql('postgres',
		'SELECT consumer, missing_from, missing_to FROM ordering.sweep_gaps()'),
	'c|1|2', 'sweeping works (its count is a no-op)');
is($node->safe_psql('postgres', 'SELECT count(*) FROM ordering.check()'), '0',
	'ordering.check() works, leaving out the statistics gauges');
is( $node->safe_psql('postgres', q{
	UPDATE ordering.outbox SET published_at = now() - interval '1 hour';
	SELECT resource_id || ' ' || status || ' ' || republished
	  FROM ordering.reconcile('[]', 1, '{0}')}),
	'r behind 2', 'reconciliation works (its count is a no-op)');
is( $node->safe_psql('postgres',
		q{SELECT ordering_internal.count_reconciled('ordering.outbox', 1, 2, 0)}),
	'', 'counting a reconciliation does nothing and raises nothing');
is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'ordering%'}),
	'0', 'no workers without preloading');

# Shared memory: the whole segment with and without the library.
my $sizeq = 'SELECT sum(allocated_size) FROM pg_shmem_allocations';
my $without = $node->safe_psql('postgres', $sizeq);
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ordering'");
$node->restart;
my $with = $node->safe_psql('postgres', $sizeq);
my $ours = $with - $without;
note "shared memory of the statistics at default settings: $ours bytes";
cmp_ok($ours, '>', 0, 'preloading reserves shared memory');
cmp_ok($ours, '<=', 1024 * 1024, 'at most 1 MiB at the default settings');
is($node->safe_psql('postgres', 'SELECT count(*) FROM ordering.stats'), '1',
	'with the library preloaded the view works');

# A full table: with room for 10 consumers, the 11th and 12th are not
# counted, the session is warned once, and a reset makes room again.
$node->append_conf('postgresql.conf', 'ordering.max_consumers = 10');
$node->restart;
$node->safe_psql('postgres', q{
	DELETE FROM ordering.parked;
	INSERT INTO ordering.parked (consumer, resource_id, seq, payload, parked_at)
	SELECT 'c' || i, 'r', 3, '{}', now() - interval '1 h' FROM generate_series(1, 12) i});
my ($ret, $stdout, $stderr) = $node->psql('postgres', q{
	SELECT count(*) FROM ordering.sweep_gaps();
	UPDATE ordering.gap_requests SET last_requested_at = '2000-01-01';
	SELECT count(*) FROM ordering.sweep_gaps()});
is($stdout, "12\n12", 'twelve gaps escalated twice');
my @warnings = ($stderr =~ /WARNING:  ordering statistics are full/g);
is(scalar(@warnings), 1, 'the session is warned once');
is( $node->safe_psql('postgres', q{
	SELECT count(*), sum(gaps_escalated) FROM ordering.stats WHERE gaps_escalated > 0}),
	'10|20', 'ten consumers are counted, twice each');
$node->safe_psql('postgres', q{
	SELECT ordering.stats_reset();
	UPDATE ordering.gap_requests SET last_requested_at = '2000-01-01';
	SELECT count(*) FROM ordering.sweep_gaps()});
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM ordering.stats WHERE gaps_escalated = 1}),
	'10', 'after a reset there is room again');
$node->stop;

done_testing();
