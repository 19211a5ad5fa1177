# Dump and restore of a database that uses the extension, in every pg_dump
# format, at 100,000 resources and with the default max_locks_per_transaction:
# custom with pg_restore, directory with pg_restore -j 4 (five times), plain
# SQL, --inserts and --column-inserts through psql, and a data-only dump
# restored into a database whose schema was restored first.  Each restore
# follows the documented steps (docs/restore.md) and is compared with the
# source: every outbox row, every counter (also of streams used only through
# next_sequence(), of rows purged or deleted, of users' attached tables with
# text, date, uuid and partitioned resources), every position, parked event,
# gap request and dead letter.  The data-only dump is also restored with
# pg_restore -j 4, which loads users' tables before the registry of attached
# tables; a schema-only restore gets its tables registered by
# ordering.post_restore().  Then producing continues every stream at the
# counter + 1, and ordering.check() finds nothing wrong.  Counter rows
# restored into a database that has produced keep the higher value; a
# restore without the steps fails loudly.
#
# ORDERING_DUMP_RESOURCES changes the number of resources (default 100000).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use OrderingDump;
use OrderingWorkload;

my $nres = $ENV{ORDERING_DUMP_RESOURCES} // 100000;
my $started = time;

my $node = PostgreSQL::Test::Cluster->new('dump');
$node->init;
# default max_locks_per_transaction: a restore must not need more
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ordering'");
$node->start;
is($node->safe_psql('postgres', 'SHOW max_locks_per_transaction'), '64',
	'the default max_locks_per_transaction');

# The source database: a producer and a consumer.
$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', qq{
	CREATE EXTENSION ordering;

	-- the outbox: one event for each of $nres resources, in one statement;
	-- every tenth resource gets four more, interleaved with the others
	INSERT INTO ordering.outbox (resource_id, event_type, payload)
	SELECT 'c-' || i, 'Created', jsonb_build_object('i', i)
	  FROM generate_series(1, $nres) i;
	INSERT INTO ordering.outbox (resource_id, event_type, payload)
	SELECT 'c-' || i, 'Changed', jsonb_build_object('i', i, 'k', k)
	  FROM generate_series(1, 4) k, generate_series(10, $nres, 10) i;
	-- relays published a third of the rows: updated rows move in the heap,
	-- so a dump reads them in another order than their numbers
	SELECT ordering.mark_published(ARRAY(SELECT id FROM ordering.outbox WHERE id % 3 = 0));
	-- every hundredth resource had its first two events purged: its counter
	-- is all that remembers them
	UPDATE ordering.outbox SET published_at = now() - interval '2 days'
	 WHERE seq <= 2 AND substr(resource_id, 3)::int % 100 = 0;
	SELECT ordering.purge_published('1 day');

	-- streams used only through next_sequence(): nothing but their counters
	SELECT count(ordering.next_sequence('invoices', 'shop-' || (i % 500)))
	  FROM generate_series(1, 1700) i;
	SELECT ordering.next_sequence('tickets', 'desk') FROM generate_series(1, 7);

	-- a user's table with a text resource; the last versions of some
	-- accounts were deleted, so their counters are above the table
	CREATE TABLE account_events (id bigserial PRIMARY KEY, account text NOT NULL,
	                             version bigint NOT NULL, amount numeric NOT NULL);
	SELECT ordering.attach('account_events', 'account', 'version');
	INSERT INTO account_events (account, amount)
	SELECT 'acct-' || (i % 2000), i FROM generate_series(1, 10000) i;
	DELETE FROM account_events WHERE version = 5 AND account LIKE 'acct-1%';

	-- resources of other types: date and uuid
	CREATE TABLE daily_totals (day date NOT NULL, version bigint NOT NULL,
	                           total numeric NOT NULL);
	SELECT ordering.attach('daily_totals', 'day', 'version');
	INSERT INTO daily_totals (day, total)
	SELECT date '2026-01-01' + (i % 365), i FROM generate_series(1, 1100) i;
	CREATE TABLE device_readings (device uuid NOT NULL, n bigint NOT NULL, reading float8);
	SELECT ordering.attach('device_readings', 'device', 'n');
	INSERT INTO device_readings (device, reading)
	SELECT md5((i % 300)::text)::uuid, i FROM generate_series(1, 1200) i;

	-- a partitioned table, attached on its parent; one row moved between
	-- partitions by UPDATE (it keeps its number)
	CREATE TABLE orders (region text NOT NULL, order_id text NOT NULL,
	                     seq bigint NOT NULL, note text) PARTITION BY LIST (region);
	CREATE TABLE orders_eu PARTITION OF orders FOR VALUES IN ('eu');
	CREATE TABLE orders_us PARTITION OF orders FOR VALUES IN ('us');
	SELECT ordering.attach('orders', 'order_id', 'seq');
	INSERT INTO orders (region, order_id, note)
	SELECT CASE WHEN i % 2 = 0 THEN 'eu' ELSE 'us' END, 'o-' || (i % 1000), 'n' || i
	  FROM generate_series(1, 4000) i;
	UPDATE orders SET region = 'us' WHERE order_id = 'o-2' AND seq = 1;

	-- the consumer side: positions of a state consumer and a step consumer
	SELECT count(*) FROM generate_series(1, 5000) i
	 WHERE ordering.apply_if_newer('billing', 'c-' || i, 1 + i % 4);
	SELECT count(*) FROM generate_series(1, 3000) i,
	       ordering.deliver('ledger', 'c-' || i, 1, '{}') d;
	-- parked events: 3 and 4 of a thousand resources wait for 2
	SELECT count(*) FROM generate_series(1, 1000) i, generate_series(3, 4) s,
	       ordering.deliver('ledger', 'c-' || i, s, jsonb_build_object('s', s)) d;
	-- gap requests for them: they were parked an hour ago
	UPDATE ordering.parked SET parked_at = parked_at - interval '1 hour'
	 WHERE consumer = 'ledger' AND resource_id < 'c-3';
	SELECT count(*) FROM ordering.sweep_gaps();
	-- a dead letter: c-2999 is blocked at 2, with 3 parked behind it
	SELECT ordering.dead_letter('ledger', 'c-2999', 2, '{"poison": true}', 'cannot apply');
	SELECT count(*) FROM ordering.deliver('ledger', 'c-2999', 3, '{}');
});
note(sprintf('source built in %.1f s', time - $started));

# Row counts and sums of the numbers, and a digest of every row, of each
# table; one line per table.
my $fingerprint_sql = q{
	SELECT t, n, s, d FROM (
	SELECT 1, 'outbox', count(*), sum(seq),
	       md5(string_agg(format('%s %s %s %s %s %s %s', id, resource_id, seq, event_type,
	                             payload, created_at, published_at), E'\n' ORDER BY id))
	  FROM ordering.outbox
	UNION ALL
	SELECT 2, 'sequences', count(*), sum(last_seq),
	       md5(string_agg(format('%s %s %s', stream, resource_id, last_seq), E'\n'
	                      ORDER BY stream, resource_id))
	  FROM ordering.sequences
	UNION ALL
	SELECT 3, 'account_events', count(*), sum(version),
	       md5(string_agg(a::text, E'\n' ORDER BY id)) FROM account_events a
	UNION ALL
	SELECT 4, 'daily_totals', count(*), sum(version),
	       md5(string_agg(d::text, E'\n' ORDER BY day, version)) FROM daily_totals d
	UNION ALL
	SELECT 5, 'device_readings', count(*), sum(n),
	       md5(string_agg(r::text, E'\n' ORDER BY device, n)) FROM device_readings r
	UNION ALL
	SELECT 6, 'orders', count(*), sum(seq),
	       md5(string_agg(format('%s %s', tableoid::regclass, o), E'\n' ORDER BY order_id, seq))
	  FROM orders o
	UNION ALL
	SELECT 7, 'positions', count(*), sum(position),
	       -- the parked-events summary is a cache: a restore may leave it
	       -- "not known" (-1), and check() compares it with ordering.parked
	       md5(string_agg(format('%s %s %s %s', consumer, resource_id, position, blocked_at),
	                      E'\n' ORDER BY consumer, resource_id)) FROM ordering.positions p
	UNION ALL
	SELECT 8, 'parked', count(*), sum(seq),
	       md5(string_agg(p::text, E'\n' ORDER BY consumer, resource_id, seq)) FROM ordering.parked p
	UNION ALL
	SELECT 9, 'gap_requests', count(*), sum(missing_to),
	       md5(string_agg(g::text, E'\n' ORDER BY consumer, resource_id)) FROM ordering.gap_requests g
	UNION ALL
	SELECT 10, 'dead_letter_events', count(*), sum(seq),
	       md5(string_agg(d::text, E'\n' ORDER BY consumer, resource_id))
	  FROM ordering.dead_letter_events d
	UNION ALL
	SELECT 11, 'attachments', count(*), NULL,
	       string_agg(format('%s=%s', tbl, stream), ' ' ORDER BY stream)
	  FROM ordering.attachments
	) x(o, t, n, s, d) ORDER BY o};

# Some counters by name, read through last_sequence() and position().
my $sample_sql = q{
	SELECT string_agg(format('%s/%s=%s', s, r, ordering.last_sequence(s, r)), ' ' ORDER BY s, r)
	  FROM (VALUES ('ordering.outbox', 'c-1'), ('ordering.outbox', 'c-10'),
	               ('ordering.outbox', 'c-100'), ('ordering.outbox', 'c-' || (SELECT max(substr(resource_id, 3)::int)
	                                                    FROM ordering.outbox)),
	               ('invoices', 'shop-0'), ('invoices', 'shop-199'), ('invoices', 'shop-200'),
	               ('tickets', 'desk'), ('public.account_events', 'acct-1'),
	               ('public.account_events', 'acct-2'),
	               ('public.daily_totals', ordering.resource_key(date '2026-01-02')),
	               ('public.device_readings', ordering.resource_key(md5('7')::uuid)),
	               ('public.orders', 'o-2')) v(s, r)
	UNION ALL
	SELECT string_agg(format('%s/%s=%s', c, r, ordering.position(c, r)), ' ' ORDER BY c, r)
	  FROM (VALUES ('billing', 'c-3'), ('ledger', 'c-1'), ('ledger', 'c-2999'),
	               ('ledger', 'c-4000')) v(c, r)};

# Produce once more, in a transaction rolled back at the end: in every stream,
# for a sample of its resources (also purged and deleted ones), the number
# given is the counter + 1 and above every number in the table.  One line per
# stream: how many numbers were given, how many were wrong.
my $produce_sql = q{
	BEGIN;
	CREATE TEMP TABLE counters_before ON COMMIT DROP AS SELECT * FROM ordering.sequences;
	CREATE TEMP TABLE given (stream text, resource_id text, seq bigint, table_max bigint)
	    ON COMMIT DROP;
	WITH s AS (SELECT 'c-' || i AS r FROM generate_series(1, (SELECT count(DISTINCT resource_id)
	                                                            FROM ordering.outbox)) i
	            WHERE i % 50 IN (0, 1)),
	     m AS (SELECT s.r, (SELECT max(seq) FROM ordering.outbox o WHERE o.resource_id = s.r) AS mx
	             FROM s),
	     i AS (INSERT INTO ordering.outbox (resource_id, event_type, payload)
	           SELECT r, 'After', '{}' FROM s RETURNING resource_id, seq)
	INSERT INTO given SELECT 'ordering.outbox', i.resource_id, i.seq, m.mx
	  FROM i JOIN m ON m.r = i.resource_id;
	INSERT INTO given
	SELECT 'invoices', r, ordering.next_sequence('invoices', r), NULL
	  FROM (SELECT 'shop-' || i FROM generate_series(0, 499) i) x(r);
	INSERT INTO given VALUES ('tickets', 'desk', ordering.next_sequence('tickets', 'desk'), NULL);
	WITH m AS (SELECT account, max(version) AS mx FROM account_events GROUP BY account),
	     i AS (INSERT INTO account_events (account, amount)
	           SELECT account, 0 FROM m RETURNING account, version)
	INSERT INTO given SELECT 'public.account_events', i.account, i.version, m.mx
	  FROM i JOIN m USING (account);
	WITH m AS (SELECT day, max(version) AS mx FROM daily_totals GROUP BY day),
	     i AS (INSERT INTO daily_totals (day, total) SELECT day, 0 FROM m RETURNING day, version)
	INSERT INTO given SELECT 'public.daily_totals', ordering.resource_key(i.day), i.version, m.mx
	  FROM i JOIN m USING (day);
	WITH m AS (SELECT device, max(n) AS mx FROM device_readings GROUP BY device),
	     i AS (INSERT INTO device_readings (device) SELECT device FROM m RETURNING device, n)
	INSERT INTO given SELECT 'public.device_readings', ordering.resource_key(i.device), i.n, m.mx
	  FROM i JOIN m USING (device);
	WITH m AS (SELECT order_id, max(seq) AS mx, min(region) AS region FROM orders GROUP BY order_id),
	     i AS (INSERT INTO orders (region, order_id) SELECT region, order_id FROM m
	           RETURNING order_id, seq)
	INSERT INTO given SELECT 'public.orders', i.order_id, i.seq, m.mx
	  FROM i JOIN m USING (order_id);
	SELECT g.stream, count(*),
	       count(*) FILTER (WHERE g.seq IS DISTINCT FROM coalesce(b.last_seq, 0) + 1
	                           OR g.seq <= g.table_max)
	  FROM given g LEFT JOIN counters_before b USING (stream, resource_id)
	 GROUP BY g.stream ORDER BY g.stream;
	ROLLBACK;
};

my $fingerprint = $node->safe_psql('src', $fingerprint_sql);
my $sample = $node->safe_psql('src', $sample_sql);
my $produced = $node->safe_psql('src', $produce_sql);
note("source:\n$fingerprint\n$sample\n$produced");
like($sample, qr{ordering\.outbox/c-100=5 ordering\.outbox/c-$nres=5 .*tickets/desk=7},
	'source counters as produced');
like($fingerprint, qr{^dead_letter_events\|1\|}m, 'source: a dead letter');
like($fingerprint, qr{^gap_requests\|[1-9]\d*\|}m, 'source: gap requests');
like($fingerprint, qr{^parked\|2001\|}m, 'source: parked events');
unlike($produced, qr{\|[1-9]\d*$}m, 'source: producing continues every stream at the counter + 1');
is($node->safe_psql('src', q{
	SELECT count(*) FROM (
	  SELECT seq < lag(seq) OVER (PARTITION BY resource_id ORDER BY ctid) AS back
	    FROM ordering.outbox) x WHERE back}) > 0 ? 'yes' : 'no', 'yes',
	'source: a dump reads some outbox rows after rows with higher numbers');

OrderingWorkload::self_check($node, 'src', 'source');

my $tempdir = PostgreSQL::Test::Utils::tempdir;

# Compare restored database $db with the source.
sub compare
{
	my ($db, $what) = @_;
	is($node->safe_psql($db, $fingerprint_sql), $fingerprint,
		"$what: every table's rows, counts and sums of numbers as in the source");
	is($node->safe_psql($db, $sample_sql), $sample, "$what: counters and positions by name");
	is($node->safe_psql($db, 'SHOW ordering.restoring'), 'off', "$what: restore mode ended");
	OrderingWorkload::self_check($node, $db, $what);
	is($node->safe_psql($db, $produce_sql), $produced,
		"$what: producing continues every stream at the counter + 1");
	return;
}

my %took;

# custom format, plain pg_restore
OrderingDump::dump_ok($node, 'src', "$tempdir/src.custom", '--format=custom');
OrderingDump::prepare($node, 'r_custom');
$took{custom} = OrderingDump::restore_ok($node, 'r_custom', "$tempdir/src.custom", 'archive');
OrderingDump::finish($node, 'r_custom');
compare('r_custom', 'custom');

# directory format, pg_restore -j 4, five times
OrderingDump::dump_ok($node, 'src', "$tempdir/src.dir", '--format=directory', '--jobs=2');
foreach my $run (1 .. 5)
{
	my $db = "r_parallel_$run";
	OrderingDump::prepare($node, $db);
	$took{"directory -j 4 ($run)"} =
	  OrderingDump::restore_ok($node, $db, "$tempdir/src.dir", 'archive', '--jobs=4');
	OrderingDump::finish($node, $db);
	compare($db, "directory -j 4, run $run");
}

# plain SQL, --inserts, --column-inserts, through psql
foreach my $format ([ 'plain' ], [ 'inserts', '--inserts' ],
	[ 'column_inserts', '--column-inserts' ])
{
	my ($name, @opts) = @$format;
	my $db = "r_$name";
	OrderingDump::dump_ok($node, 'src', "$tempdir/src.$name.sql", '--format=plain', @opts);
	OrderingDump::prepare($node, $db);
	$took{$name} = OrderingDump::restore_ok($node, $db, "$tempdir/src.$name.sql", 'plain');
	OrderingDump::finish($node, $db);
	compare($db, $name);
}

# data-only, into a database whose schema was restored first
OrderingDump::dump_ok($node, 'src', "$tempdir/src.schema", '--format=custom', '--schema-only');
OrderingDump::dump_ok($node, 'src', "$tempdir/src.data", '--format=custom', '--data-only');
OrderingDump::prepare($node, 'r_data_only', "$tempdir/src.schema");
$took{'data-only'} =
  OrderingDump::restore_ok($node, 'r_data_only', "$tempdir/src.data", 'archive', '--data-only');
OrderingDump::finish($node, 'r_data_only');
compare('r_data_only', 'data-only');

# data-only with pg_restore -j 4, as docs/restore.md says: pg_restore loads
# the largest tables first, so the users' tables (account_events: 10,000
# rows) load before the rows of ordering.attachments; the sequencing
# triggers keep the numbers without the registry, and post_restore() checks
# that every table with a trigger is registered with the trigger's stream.
OrderingDump::prepare($node, 'r_data_only_parallel', "$tempdir/src.schema");
$took{'data-only -j 4'} =
  OrderingDump::restore_ok($node, 'r_data_only_parallel', "$tempdir/src.data", 'archive',
	'--data-only', '--jobs=4');
OrderingDump::finish($node, 'r_data_only_parallel');
compare('r_data_only_parallel', 'data-only -j 4');

note(join "\n", 'restore times:', map { sprintf('  %-24s %6.1f s', $_, $took{$_}) } sort keys %took);

# A schema-only restore has the sequencing triggers of the users' tables but
# none of the registry's rows: inserts are refused with a hint naming
# ordering.post_restore(), which registers each table with the stream its
# trigger names; then each table's numbering starts again (no data).
$node->safe_psql('postgres', 'CREATE DATABASE r_schema_only');
OrderingDump::restore_ok($node, 'r_schema_only', "$tempdir/src.schema", 'archive');
my ($ret, $out, $err) = $node->psql('r_schema_only',
	q{INSERT INTO account_events (account, amount) VALUES ('acct-1', 1)});
like($err, qr/is not attached to stream "public\.account_events".*HINT:  After a restore, call ordering\.post_restore\(\)/s,
	'schema-only: an insert names ordering.post_restore()');
($ret, $out, $err) = $node->psql('r_schema_only',
	q{SELECT ordering.attach('account_events', 'account', 'version')});
like($err, qr/not registered in ordering\.attachments.*HINT:  Call ordering\.post_restore\(\)/s,
	'schema-only: attach() names ordering.post_restore()');
OrderingDump::finish($node, 'r_schema_only');
is($node->safe_psql('r_schema_only', q{
	SELECT string_agg(format('%s=%s', tbl, stream), ' ' ORDER BY stream)
	  FROM ordering.attachments WHERE attached}),
	'ordering.outbox=ordering.outbox account_events=public.account_events '
	  . 'daily_totals=public.daily_totals device_readings=public.device_readings '
	  . 'orders=public.orders',
	'schema-only: post_restore() registered every attached table with its stream');
is($node->safe_psql('r_schema_only', q{
	WITH a AS (INSERT INTO account_events (account, amount) VALUES ('acct-1', 1) RETURNING version),
	     o AS (INSERT INTO orders (region, order_id) VALUES ('eu', 'o-1') RETURNING seq)
	SELECT a.version || ' ' || o.seq FROM a, o}),
	'1 1', 'schema-only: producing works after post_restore()');

# Counters restored into a database that has produced keep the higher value:
# the schema is restored, then producing goes on there (above the dump in
# some counters, below it in others, in a stream the dump lacks), then the
# data-only dump is restored with the steps.
$node->safe_psql('postgres', 'CREATE DATABASE r_merge');
OrderingDump::restore_ok($node, 'r_merge', "$tempdir/src.schema", 'archive');
$node->safe_psql('r_merge', q{
	SELECT ordering.next_sequence('invoices', 'shop-1') FROM generate_series(1, 40);
	SELECT ordering.next_sequence('invoices', 'shop-2');
	SELECT ordering.next_sequence('public.account_events', 'acct-3') FROM generate_series(1, 30);
	SELECT ordering.next_sequence('only-here', 'x') FROM generate_series(1, 3);
});
$node->safe_psql('r_merge', 'SELECT ordering.pre_restore()');
OrderingDump::restore_ok($node, 'r_merge', "$tempdir/src.data", 'archive', '--data-only');
OrderingDump::finish($node, 'r_merge');
is($node->safe_psql('r_merge', q{
	SELECT string_agg(format('%s/%s=%s', s, r, ordering.last_sequence(s, r)), ' ' ORDER BY s, r)
	  FROM (VALUES ('invoices', 'shop-1'), ('invoices', 'shop-2'), ('invoices', 'shop-3'),
	               ('public.account_events', 'acct-3'), ('only-here', 'x')) v(s, r)}),
	$node->safe_psql('src', q{
	SELECT format('invoices/shop-1=40 invoices/shop-2=%s invoices/shop-3=%s only-here/x=3 public.account_events/acct-3=30',
	              ordering.last_sequence('invoices', 'shop-2'),
	              ordering.last_sequence('invoices', 'shop-3'))}),
	'a database that produced: every counter keeps the higher value');
is($node->safe_psql('r_merge', q{
	WITH i AS (INSERT INTO account_events (account, amount) VALUES ('acct-3', 0)
	           RETURNING version)
	SELECT ordering.next_sequence('invoices', 'shop-1') || ' ' || version FROM i}),
	'41 31', 'a database that produced: producing continues after the higher value');
OrderingWorkload::self_check($node, 'r_merge', 'a database that produced');

# A restore without the steps fails loudly.  pg_restore (without
# --exit-on-error) reports the refused COPY of ordering.outbox, naming
# ordering.pre_restore(), goes on, and exits non-zero: the database it leaves
# has every table but an empty ordering.outbox.
$node->safe_psql('postgres', 'CREATE DATABASE r_no_steps');
my ($stdout, $stderr) = ('', '');
my $ok = PostgreSQL::Test::Utils::run_log(
	[ 'pg_restore', '-d', $node->connstr('r_no_steps'), "$tempdir/src.custom" ],
	'>', \$stdout, '2>', \$stderr);
ok(!$ok, 'without the steps: pg_restore exits non-zero');
like($stderr, qr/COPY failed for table "outbox": ERROR:  expected sequence number/,
	'without the steps: the COPY of ordering.outbox is refused');
like($stderr, qr/HINT:  .*ordering\.restoring = on .*ordering\.pre_restore\(\).*ordering\.post_restore\(\)/,
	'without the steps: the hint names the steps');
like($stderr, qr/errors ignored on restore: 1$/m, 'without the steps: that is the only error');
my %source = map { (split /\|/)[0] => $_ } split /\n/, $fingerprint;
my %left = map { (split /\|/)[0] => $_ } split /\n/, $node->safe_psql('r_no_steps', $fingerprint_sql);
is($left{outbox}, 'outbox|0||', 'without the steps: ordering.outbox is left empty');
delete $source{outbox};
delete $left{outbox};
is_deeply(\%left, \%source, 'without the steps: every other table is restored');

# With --exit-on-error it stops there.
$node->safe_psql('postgres', 'CREATE DATABASE r_no_steps_exit');
($stdout, $stderr) = ('', '');
$ok = PostgreSQL::Test::Utils::run_log(
	[ 'pg_restore', '--exit-on-error', '-d', $node->connstr('r_no_steps_exit'),
	  "$tempdir/src.custom" ],
	'>', \$stdout, '2>', \$stderr);
ok(!$ok, 'without the steps: pg_restore --exit-on-error exits non-zero');
like($stderr, qr/COPY failed for table "outbox"/, 'without the steps: at the COPY of ordering.outbox');
is($node->safe_psql('r_no_steps_exit', 'SELECT count(*) FROM ordering.outbox'), '0',
	'without the steps: pg_restore --exit-on-error leaves ordering.outbox empty');

# Through psql in one transaction, a plain dump restored without the steps
# leaves nothing.
$node->safe_psql('postgres', 'CREATE DATABASE r_no_steps_plain');
($stdout, $stderr) = ('', '');
$ok = PostgreSQL::Test::Utils::run_log(
	[ 'psql', '-X', '-q', '--single-transaction', '-v', 'ON_ERROR_STOP=1',
	  '-d', $node->connstr('r_no_steps_plain'), '-f', "$tempdir/src.plain.sql" ],
	'>', \$stdout, '2>', \$stderr);
ok(!$ok, 'without the steps: psql exits non-zero');
like($stderr, qr/HINT:  .*ordering\.pre_restore\(\)/, 'without the steps: psql shows the hint');
is($node->safe_psql('r_no_steps_plain',
	q{SELECT count(*) FROM pg_namespace WHERE nspname IN ('ordering', 'public')}), '1',
	'without the steps: psql in one transaction left nothing but the public schema');

note(sprintf('total %.1f s', time - $started));
$node->stop;
done_testing();
