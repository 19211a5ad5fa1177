# 100,000 resources in one transaction, with the default
# max_locks_per_transaction: producing by INSERT ... SELECT and by COPY, and
# consuming with apply_if_newer and deliver (in order and parked).  A new
# counter or position is created under a lock that is released at once, and
# an existing one is held by its row, so no lock accumulates per resource.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $n = 100_000;
my $node = PostgreSQL::Test::Cluster->new('many');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ordering'");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION ordering');
is($node->safe_psql('postgres', 'SHOW max_locks_per_transaction'), '64',
	'the default max_locks_per_transaction');

# advisory-class locks this backend holds at the end of the transaction
my $locks = q{SELECT count(*) FROM pg_locks
	WHERE pid = pg_backend_pid() AND locktype = 'advisory'};

is($node->safe_psql('postgres', qq{
	BEGIN;
	INSERT INTO ordering.outbox (resource_id, event_type, payload)
	SELECT 'ins-' || g, 'T', '{}' FROM generate_series(1, $n) g;
	$locks;
	COMMIT;}), '0', "INSERT ... SELECT of $n new resources holds no lock per resource");
is($node->safe_psql('postgres', q{
	SELECT count(*) || '/' || sum(last_seq) FROM ordering.sequences
	 WHERE resource_id LIKE 'ins-%'}), "$n/$n", 'every new resource has its counter at 1');

$node->safe_psql('postgres',
	'CREATE TABLE copied (resource_id text NOT NULL, seq bigint NOT NULL);'
	  . "SELECT ordering.attach('copied');");
my $rows = join('', map { "cp-$_\n" } 1 .. $n);
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"COPY copied (resource_id) FROM STDIN;\n${rows}\\.\n");
is($ret, 0, "COPY of $n new resources succeeds") or diag $stderr;
is($node->safe_psql('postgres', q{
	SELECT count(*) || '/' || max(seq) FROM copied}), "$n/1",
	'COPY gave each new resource its first number');

is($node->safe_psql('postgres', qq{
	BEGIN;
	SELECT count(*) FROM generate_series(1, $n) g,
	       ordering.apply_if_newer('state', 'r-' || g, 1) a WHERE a;
	$locks;
	COMMIT;}), "$n\n0", "apply_if_newer on $n new resources in one transaction");

is($node->safe_psql('postgres', qq{
	BEGIN;
	SELECT count(*) FROM generate_series(1, $n) g,
	       ordering.deliver('step', 'r-' || g, 2, '{}') d;
	SELECT count(*) FROM generate_series(1, $n) g,
	       ordering.deliver('step', 'r-' || g, 1, '{}') d;
	$locks;
	COMMIT;}), "0\n" . (2 * $n) . "\n0",
	"deliver parks and drains $n resources in one transaction");
is($node->safe_psql('postgres', q{
	SELECT count(*) || '/' || min(position) || '/' ||
	       (SELECT count(*) FROM ordering.parked)
	  FROM ordering.positions WHERE consumer = 'step'}), "$n/2/0",
	'every step position is 2 and nothing stays parked');

$node->stop;
done_testing();
