# pg_dump / pg_restore round-trips a producer database: outbox rows keep their
# sequence numbers, counters (also of purged rows and of users' own attached
# tables) are kept, producing after the restore continues the sequences, and
# ordering.check() finds nothing before the dump or after the restore.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use OrderingDump;
use OrderingWorkload;

my $node = PostgreSQL::Test::Cluster->new('dump');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ordering'");
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', q{
	CREATE EXTENSION ordering;
	-- 3 resources, 10 events each, interleaved so rows are not in seq order
	SELECT ordering.emit('r' || (i % 3), 'e', jsonb_build_object('i', i))
	  FROM generate_series(1, 30) i;
	-- publish and purge the first half of r0: its counter must survive
	UPDATE ordering.outbox SET published_at = now() - interval '2 days'
	 WHERE resource_id = 'r0' AND seq <= 5;
	SELECT ordering.purge_published('1 day');
	-- a user's own attached table
	CREATE TABLE my_events (id serial PRIMARY KEY, account text, version bigint);
	SELECT ordering.attach('my_events', 'account', 'version');
	INSERT INTO my_events (account) SELECT 'a' || (i % 2) FROM generate_series(1, 5) i;
	DELETE FROM my_events WHERE version = 3;
	SELECT ordering.next_sequence('custom', 'x') FROM generate_series(1, 4);
});

my $state_sql = q{
	SELECT string_agg(format('%s/%s=%s', stream, resource_id, last_seq), ' '
	                  ORDER BY stream, resource_id)
	  FROM ordering.sequences;
};
my $rows_sql = q{
	SELECT string_agg(format('%s:%s:%s', id, resource_id, seq), ' ' ORDER BY id)
	  FROM ordering.outbox;
};
my $counters = $node->safe_psql('src', $state_sql);
my $rows = $node->safe_psql('src', $rows_sql);
like($counters, qr{ordering\.outbox/r0=10 ordering\.outbox/r1=10 ordering\.outbox/r2=10},
	'source counters as produced');

OrderingWorkload::self_check($node, 'src', 'source');

my $tempdir = PostgreSQL::Test::Utils::tempdir;
foreach my $format ('custom', 'plain')
{
	my $db = "restored_$format";
	OrderingDump::dump_restore($node, 'src', $db, $format, "$tempdir/src.$format");
	OrderingWorkload::self_check($node, $db, "$format: restored");

	is($node->safe_psql($db, $state_sql), $counters, "$format: counters restored");
	is($node->safe_psql($db, $rows_sql), $rows, "$format: outbox rows keep id and seq");
	is($node->safe_psql($db, q{
		SELECT ordering.emit('r0', 'e', '{}') || ',' || ordering.emit('new', 'e', '{}')}),
		'11,1', "$format: producing continues the sequences (also past purged rows)");
	is($node->safe_psql($db, q{
		INSERT INTO my_events (account) VALUES ('a1') RETURNING version}),
		'4', "$format: attached user table continues its sequence (past a deleted row)");
	is($node->safe_psql($db, q{SELECT ordering.next_sequence('custom', 'x')}),
		'5', "$format: next_sequence counter continues");
	is($node->safe_psql($db, q{
		SELECT (SELECT id FROM ordering.outbox WHERE resource_id = 'new')
		     > (SELECT max(id) FROM ordering.outbox WHERE resource_id <> 'new'
		                                              AND seq <= 10)}),
		't', "$format: the outbox identity continues after the restored ids");
	OrderingWorkload::self_check($node, $db, "$format: after producing");
}

$node->stop;
done_testing();
