# With wal_level = logical, every counter value a transaction writes reaches
# logical decoding: keyed.c never rewrites a counter in place then (logical
# decoding does not decode in-place updates).  A statement writes a
# resource's counter when it first numbers the resource and once more at its
# end (docs/bulk.md), so a multi-row statement's last value is decoded.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('logical');
$node->init(allows_streaming => 'logical');
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ordering'");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION ordering');
$node->safe_psql('postgres',
	"SELECT pg_create_logical_replication_slot('s', 'test_decoding')");

my $decoded = q{
	SELECT string_agg(substring(data from 'last_seq\[bigint\]:(\d+)'), ',' ORDER BY lsn)
	  FROM pg_logical_slot_get_changes('s', NULL, NULL)
	 WHERE data LIKE 'table ordering.sequences:%'};

# three numbers for one resource in one transaction, a statement each
$node->safe_psql('postgres', q{
	BEGIN;
	SELECT ordering.emit('r', 'e', '{}');
	SELECT ordering.emit('r', 'e', '{}');
	SELECT ordering.emit('r', 'e', '{}');
	COMMIT});
is($node->safe_psql('postgres', $decoded), '1,2,3',
	'every counter value of the transaction is decoded');

# three more in one statement: its last value is decoded last
$node->safe_psql('postgres', q{
	INSERT INTO ordering.outbox (resource_id, event_type, payload)
	SELECT 'r', 'e', '{}' FROM generate_series(1, 3)});
like($node->safe_psql('postgres', $decoded), qr/(^|,)6$/,
	'the counter value a multi-row statement ends with is decoded');

$node->stop;
done_testing();
