# Producers on a Citus cluster: a coordinator and two workers (a third one
# joins for the rebalance), tables distributed by their resource column and
# attached with ordering.attach().  Skipped, with the reason printed, where
# the server's pkglibdir has no citus.so (CI: Citus is not in Debian).
#
# First the rules of one node, shown on shards: refusals (0A000) of every
# shape that cannot keep them, numbers through the coordinator (single rows,
# multi-row, COPY), on a worker, ON CONFLICT and a later BEFORE trigger
# giving numbers back, a later BEFORE trigger renumbering a row (27000),
# asserted numbers, partitions, restore mode with post_restore(),
# next_sequence() and last_sequence() from any node, detach and attach
# again, an altered counter table refused and then used again.  Then the
# producers' privileges of sql/privileges.sql on a cluster: attach() to
# another role's stream (42501), a hand-made sequencing trigger naming it
# (0A000, through the coordinator and on a worker: the registry of
# distributed streams, also through a rename and a change of schema), the
# owner attaching a second table of its own, SQL writes of the counter
# table, its shard on a worker and both registries (42501).
#
# Then the workload: pgbench producers through the coordinator and on a
# worker (10% rollbacks, transactions that write two resources, most often on
# two workers: two-phase commit), and relays on every node that holds shards
# (claim_unpublished(outbox, n), mark_published(outbox, ids)), during a logical move,
# a block_writes move, a blocking split, a non-blocking split whose children
# are on another node (the documented way: docs/citus.md), a rebalance onto a
# third node and a drain.  After each operation numbering continues where it
# was; at the end every stream has 0 duplicates, 0 gaps, 0 restarts, every
# counter equals its resource's highest number, ordering.check() is clean on
# every node, and every row was published (none stranded, none twice).
#
# ORDERING_CITUS_SOAK=N runs the producers N seconds around each operation
# instead of a few, at full speed (a longer soak).  Otherwise each pgbench
# run is held to a rate: the load is there all through each operation, and
# leaves the other suites of the test command their share of the cores.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib $FindBin::RealBin;
use OrderingCitus qw(sql fails sql_as fails_as sequencing_triggers);

OrderingCitus::skip_unless_citus();

my $soak = $ENV{ORDERING_CITUS_SOAK} // 0;
my $resources = 60;
my $clients = 4;

my $cluster = OrderingCitus->new('citus_producer', workers => 2);
my $coord = $cluster->coordinator;
my ($w1, $w2) = $cluster->workers;
note 'Citus ' . $cluster->citus_version . ', '
  . $coord->safe_psql('postgres', 'SELECT version()');

# ---------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------
sql($coord, q{
	SET citus.shard_count = 4;
	CREATE TABLE events (id bigserial, resource_id text NOT NULL, seq bigint,
	                     payload jsonb NOT NULL DEFAULT '{}', published_at timestamptz,
	                     PRIMARY KEY (resource_id, id));
	SELECT create_distributed_table('events', 'resource_id');
	SELECT ordering.attach('events');
	-- partitions, co-located with events
	CREATE TABLE parted (id bigserial, resource_id text NOT NULL, seq bigint, day int NOT NULL,
	                     PRIMARY KEY (resource_id, id, day)) PARTITION BY LIST (day);
	CREATE TABLE parted_1 PARTITION OF parted FOR VALUES IN (1);
	CREATE TABLE parted_2 PARTITION OF parted FOR VALUES IN (2);
	SELECT create_distributed_table('parted', 'resource_id', colocate_with => 'events');
	SELECT ordering.attach('parted');
	-- ON CONFLICT, a later trigger
	CREATE TABLE keyed (resource_id text NOT NULL, k text NOT NULL, seq bigint,
	                    PRIMARY KEY (resource_id, k));
	SELECT create_distributed_table('keyed', 'resource_id', colocate_with => 'events');
	SELECT ordering.attach('keyed');
});
my $counters = sql($coord,
	q{SELECT ordering_internal.distributed_counters('public.events')});
like($counters, qr/^ordering_internal\.sequences_[0-9a-f]{16}$/,
	"attach() made the counter table $counters");
is( sql($coord, qq{
		SELECT count(DISTINCT p.colocationid) FROM pg_dist_partition p
		 WHERE p.logicalrelid IN ('events'::regclass, '$counters'::regclass,
		                          'parted'::regclass, 'keyed'::regclass)}),
	'1', 'the counter table is co-located with the attached tables');

# ---------------------------------------------------------------------------
# Refusals
# ---------------------------------------------------------------------------
sql($coord, q{
	CREATE TABLE ref (resource_id text, seq bigint);
	SELECT create_reference_table('ref');
	CREATE TABLE other_col (k int, resource_id text, seq bigint);
	SELECT create_distributed_table('other_col', 'k');
	CREATE TABLE num_res (resource_id numeric, seq bigint);
	SELECT create_distributed_table('num_res', 'resource_id');
	CREATE TABLE appended (resource_id text, seq bigint);
	SELECT create_distributed_table('appended', 'resource_id', 'append');
	CREATE TABLE citus_local (resource_id text, seq bigint);
	SELECT citus_add_local_table_to_metadata('citus_local');
});
fails($coord, q{SELECT ordering.attach('ref')}, '0A000', qr/reference table/,
	'attach of a reference table');
fails($coord, q{SELECT ordering.attach('other_col')}, '0A000',
	qr/distributed by column "k", not by its resource column/,
	'attach of a table distributed by another column');
fails($coord, q{SELECT ordering.attach('num_res')}, '0A000',
	qr/is of type numeric, which a distributed stream cannot key its counters by/,
	'attach with a numeric resource column (other types: TAP 046)');
fails($coord, q{SELECT ordering.attach('appended')}, '0A000',
	qr/distributed by append/, 'attach of an append-distributed table');
fails($coord, q{SELECT ordering.attach('citus_local')}, '0A000',
	qr/not distributed by a column/, 'attach of a Citus local table');
fails($w1, q{SELECT ordering.attach('other_col', 'k')}, '0A000',
	qr/must run on the coordinator/, 'attach on a worker');

# a local table attached first, then distributed: its shards refuse
sql($coord, q{
	CREATE TABLE attached_first (id bigserial, resource_id text, seq bigint);
	SELECT ordering.attach('attached_first');
	SET citus.enable_unsafe_triggers = on;
	SELECT create_distributed_table('attached_first', 'resource_id');
});
fails($coord, q{INSERT INTO attached_first (resource_id) VALUES ('x')},
	'0A000', qr/is not attached to stream/,
	'a table attached, then distributed: the insert on a shard');
is(sql($coord, q{SELECT count(*) FROM attached_first}), '0',
	'nothing was stored in it');

# the trigger of a distributed stream copied onto a local table
sql($coord, q{CREATE TABLE copied (resource_id text, seq bigint);}
	  . sequencing_triggers('copied', 'public.events', $counters));
fails($coord, q{INSERT INTO copied VALUES ('x')}, '0A000',
	qr/is not a shard of a table distributed by Citus/,
	'the trigger of a distributed stream on a local table');

# a row stored into a shard by hand, outside its hash range
my ($shard, $wrong) = split /\|/, sql($w1, q{
	SET citus.override_table_visibility = off;
	SELECT pg_catalog.shard_name(s.logicalrelid, s.shardid, false),
	       (SELECT 'r' || g FROM generate_series(1, 1000) g
	         WHERE get_shard_id_for_distribution_column('events', 'r' || g) <> s.shardid
	         LIMIT 1)
	  FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
	 WHERE s.logicalrelid = 'events'::regclass
	   AND p.groupid = (SELECT groupid FROM pg_dist_local_group)
	 ORDER BY s.shardid LIMIT 1});
fails($w1, qq{INSERT INTO $shard (id, resource_id) VALUES (-1, '$wrong')}, '0A000',
	qr/does not belong in shard/, 'a row of another hash range stored into a shard');

# the tables of the refusals go: the rebalance and the drain below need not
# move their shards
sql($coord, q{DROP TABLE ref, other_col, num_res, appended, citus_local, attached_first, copied});

# ---------------------------------------------------------------------------
# The rules of one node, on shards
# ---------------------------------------------------------------------------
sql($coord, q{
	INSERT INTO events (resource_id) VALUES ('a');
	INSERT INTO events (resource_id) SELECT 'm' || (g % 7) FROM generate_series(1, 70) g;
});
is(sql($coord, q{SELECT string_agg(seq::text, ',' ORDER BY seq) FROM events WHERE resource_id = 'm3'}),
	'1,2,3,4,5,6,7,8,9,10', 'a multi-row insert through the coordinator numbers each resource');

# COPY through the coordinator
$coord->safe_psql('postgres', "COPY events (resource_id) FROM stdin;\na\nb\na\n\\.\n");
is(sql($coord, q{SELECT string_agg(resource_id || seq, ',' ORDER BY resource_id, seq)
                   FROM events WHERE resource_id IN ('a', 'b')}),
	'a1,a2,a3,b1', 'COPY through the coordinator');

# on a worker: through the distributed table's shell there
sql($w1, q{INSERT INTO events (resource_id) VALUES ('a'), ('b')});
sql($w2, q{INSERT INTO events (resource_id) VALUES ('a')});
is(sql($coord, q{SELECT string_agg(seq::text, ',' ORDER BY seq) FROM events WHERE resource_id = 'a'}),
	'1,2,3,4,5', 'inserts issued on the workers continue the numbering');

# asserted numbers
sql($coord, q{INSERT INTO events (resource_id, seq) VALUES ('b', 3)});
fails($coord, q{INSERT INTO events (resource_id, seq) VALUES ('b', 3)}, '40001',
	qr/expected sequence number 3 .* but the next is 4/, 'an asserted number that is not the next');
fails($coord, q{INSERT INTO events (resource_id, seq) VALUES ('b', 9)}, '40001',
	qr/but the next is 4/, 'an asserted number beyond the next');

# a resource column in another collation than "C": the counter table gets
# it too (Citus co-locates only columns of one collation), and its primary
# key is searched in it; each session below starts without the storage
# layer's TID cache, so every counter is looked up through the index, whose
# order ("und-x-icu": a < A < b < B) is not the bytes' (A < B < a < b)
sql($coord, q{
	CREATE TABLE icu_events (id bigserial, resource_id text COLLATE "und-x-icu" NOT NULL, seq bigint,
	                         PRIMARY KEY (resource_id, id));
	SELECT create_distributed_table('icu_events', 'resource_id', colocate_with => 'none');
	SELECT ordering.attach('icu_events');
});
for my $round (1 .. 3)
{
	sql($coord, q{INSERT INTO icu_events (resource_id)
	              SELECT chr(CASE WHEN g % 2 = 0 THEN 65 ELSE 97 END + g / 2 % 26) || g
	                FROM generate_series(0, 199) g});
}
is(sql($coord, q{WITH e AS MATERIALIZED (SELECT resource_id, seq FROM icu_events)
                 SELECT count(*), count(*) FILTER (WHERE s = '1,2,3')
                   FROM (SELECT resource_id, string_agg(seq::text, ',' ORDER BY seq) AS s FROM e GROUP BY 1) x}),
	'200|200', 'a resource column in an ICU collation: every counter found and advanced');

# a rollback gives numbers back, on two workers at once (two-phase commit)
sql($coord, q{
	BEGIN;
	INSERT INTO events (resource_id) SELECT 'm' || g FROM generate_series(0, 6) g;
	ROLLBACK;
	INSERT INTO events (resource_id) SELECT 'm' || g FROM generate_series(0, 6) g;
});
is(sql($coord, q{SELECT count(*) FROM events WHERE seq = 11 AND resource_id LIKE 'm%'}), '7',
	'numbers of a rolled-back multi-shard transaction are given back');

# ON CONFLICT on a shard gives the number of a row not inserted back
sql($coord, q{
	INSERT INTO keyed VALUES ('k', 'x');
	INSERT INTO keyed VALUES ('k', 'x') ON CONFLICT DO NOTHING;
	INSERT INTO keyed VALUES ('k', 'y') ON CONFLICT DO NOTHING;
	INSERT INTO keyed VALUES ('k', 'y') ON CONFLICT (resource_id, k) DO UPDATE SET k = 'y';
	INSERT INTO keyed VALUES ('k', 'z');
});
is(sql($coord, q{SELECT string_agg(k || seq, ',' ORDER BY seq) FROM keyed WHERE resource_id = 'k'}),
	'x1,y2,z3', 'ON CONFLICT on a shard: skipped rows give their numbers back');

# a later BEFORE trigger that suppresses a row
sql($coord, q{
	CREATE FUNCTION skip_some() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
	    IF NEW.k LIKE 'skip%' THEN RETURN NULL; END IF;
	    RETURN NEW;
	END $$;
	SET citus.enable_unsafe_triggers = on;
	CREATE TRIGGER zz_skip BEFORE INSERT ON keyed FOR EACH ROW EXECUTE FUNCTION skip_some();
	INSERT INTO keyed VALUES ('k', 'skip1');
	INSERT INTO keyed VALUES ('k', 'w');
	DROP TRIGGER zz_skip ON keyed;
});
is(sql($coord, q{SELECT string_agg(k || seq, ',' ORDER BY seq) FROM keyed WHERE resource_id = 'k'}),
	'x1,y2,z3,w4', 'a row a later BEFORE trigger suppressed gives its number back');

# a later BEFORE trigger may not change the row's number (27000), on a
# shard as on one node; the statement's rollback gives the number back
sql($coord, q{
	CREATE FUNCTION renumber() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
	    NEW.seq := NEW.seq + 100;
	    RETURN NEW;
	END $$;
	SET citus.enable_unsafe_triggers = on;
	CREATE TRIGGER zz_renumber BEFORE INSERT ON keyed FOR EACH ROW EXECUTE FUNCTION renumber();
});
fails($coord, q{INSERT INTO keyed VALUES ('k', 'v')}, '27000',
	qr/changed the resource or the sequence number of a row of "keyed_\d+"/,
	'a later BEFORE trigger that renumbers a row on a shard');
sql($coord, q{
	SET citus.enable_unsafe_triggers = on;
	DROP TRIGGER zz_renumber ON keyed;
	INSERT INTO keyed VALUES ('k', 'v');
});
is(sql($coord, q{SELECT string_agg(k || seq, ',' ORDER BY seq) FROM keyed WHERE resource_id = 'k'}),
	'x1,y2,z3,w4,v5', 'the renumbered row stored nothing and its number was given back');

# partitions: numbered through the partitioned table, and a row that an
# UPDATE moves to another partition keeps its number
sql($coord, q{
	INSERT INTO parted (resource_id, day) VALUES ('p', 1), ('p', 2), ('p', 1);
	UPDATE parted SET day = 2 WHERE resource_id = 'p' AND seq = 1;
	INSERT INTO parted (resource_id, day) VALUES ('p', 1);
});
is(sql($coord, q{SELECT string_agg(seq || '@' || day, ',' ORDER BY seq) FROM parted WHERE resource_id = 'p'}),
	'1@2,2@2,3@1,4@1', 'partitions of a distributed table: numbered, and a moved row keeps its number');

# next_sequence() and last_sequence() from the coordinator and a worker
is(sql($coord, q{SELECT ordering.last_sequence('public.events', 'a')}), '5',
	'last_sequence() on the coordinator');
is(sql($w2, q{SELECT ordering.next_sequence('public.events', 'nx')}), '1',
	'next_sequence() on a worker');
is(sql($coord, q{SELECT ordering.next_sequence('public.events', 'nx')}), '2',
	'next_sequence() on the coordinator');
sql($coord, q{INSERT INTO events (resource_id) VALUES ('nx')});
is(sql($coord, q{SELECT max(seq) FROM events WHERE resource_id = 'nx'}), '3',
	'the trigger continues after next_sequence()');
is(sql($w1, q{SELECT ordering.last_sequence('public.events', 'nx')}), '3',
	'last_sequence() on a worker');
is(sql($coord, q{SELECT ordering.last_sequence('public.events', 'never')}), '0',
	'last_sequence() of a resource without numbers');

# ... and inside a multi-row statement, from a later BEFORE trigger on the
# shards: the backend that inserts into a shard holds the counters of the
# statement's resources (docs/bulk.md), so next_sequence() and
# last_sequence() there answer from what it holds (citus.c,
# counter_next_held() and counter_last_held()); an upsert or a read of the
# counter shard would repeat a number or miss the statement's own.  Rows 2
# and 3 of each resource take a number; every row logs what it saw.
sql($coord, q{
	CREATE TABLE traced (id bigserial, resource_id text NOT NULL, seq bigint,
	                     take boolean NOT NULL DEFAULT false, last_seen bigint, taken bigint,
	                     PRIMARY KEY (resource_id, id));
	SELECT create_distributed_table('traced', 'resource_id', colocate_with => 'events');
	SELECT ordering.attach('traced');
	CREATE FUNCTION trace_numbers() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
	    NEW.last_seen := ordering.last_sequence('public.traced', NEW.resource_id);
	    IF NEW.take THEN
	        NEW.taken := ordering.next_sequence('public.traced', NEW.resource_id);
	    END IF;
	    RETURN NEW;
	END $$;
	SET citus.enable_unsafe_triggers = on;
	CREATE TRIGGER zz_trace BEFORE INSERT ON traced FOR EACH ROW EXECUTE FUNCTION trace_numbers();
});
# each row: seq/last_sequence() seen/number taken
my $traced = q{SELECT string_agg(seq || '/' || last_seen || '/' || coalesce(taken::text, '-'), ','
                                  ORDER BY seq)
                 FROM traced WHERE resource_id = 'tr%s'};
my $expected_trace = '1/1/-,2/2/3,4/4/5,6/6/-';
# through the coordinator: a multi-row INSERT (one per shard) and an
# INSERT ... SELECT (a COPY into each shard)
sql($coord, q{INSERT INTO traced (resource_id, take) VALUES
              ('tr1', false), ('tr2', false), ('tr1', true), ('tr2', true),
              ('tr1', true), ('tr2', true), ('tr1', false), ('tr2', false)});
sql($coord, q{INSERT INTO traced (resource_id, take)
              SELECT 'tr' || r, g IN (2, 3) FROM generate_series(3, 4) r, generate_series(1, 4) g});
# on a worker, through the distributed table's shell there
sql($w1, q{INSERT INTO traced (resource_id, take)
           SELECT 'tr' || r, g IN (2, 3) FROM generate_series(5, 6) r, generate_series(1, 4) g});
for my $r (1 .. 6)
{
	is(sql($coord, sprintf($traced, $r)), $expected_trace,
		"tr$r: next_sequence() and last_sequence() in a shard's trigger continue the statement's numbers");
}
is(sql($coord, q{SELECT string_agg(ordering.last_sequence('public.traced', 'tr' || r)::text, ',')
                   FROM generate_series(1, 6) r}),
	'6,6,6,6,6,6', 'the counters were written with the last numbers');
sql($coord, q{INSERT INTO traced (resource_id) VALUES ('tr1')});
is(sql($coord, q{SELECT max(seq) FROM traced WHERE resource_id = 'tr1'}), '7',
	'the next statement continues after them');
sql($coord, q{SELECT ordering.detach('traced'); DROP TABLE traced;});

# restore mode on every node: pre_restore() on the coordinator switches it
# on everywhere (Citus runs ALTER DATABASE ... SET on the workers);
# rows carry their numbers; post_restore() on the coordinator raises the
# counters of the distributed stream and switches it off everywhere
sql($coord, q{SELECT ordering.pre_restore()});
is(sql($w2, q{SHOW ordering.restoring}), 'on', 'pre_restore() on the coordinator reaches the workers');
$coord->safe_psql('postgres',
	"COPY events (resource_id, seq) FROM stdin;\nrestored\t1\nrestored\t2\nrestored\t3\n\\.\n");
fails($coord, q{INSERT INTO events (resource_id) VALUES ('restored')}, '55000',
	qr/while the database is being restored/, 'restore mode on the shards: a row without a number');
is(sql($coord, q{SELECT ordering.last_sequence('public.events', 'restored')}), '0',
	'restored rows did not advance the counter');
sql($coord, q{SELECT ordering.post_restore()});
is(sql($w1, q{SHOW ordering.restoring}), 'off', 'post_restore() on the coordinator reaches the workers');
sql($coord, q{INSERT INTO events (resource_id) VALUES ('restored')});
is(sql($coord, q{SELECT max(seq) FROM events WHERE resource_id = 'restored'}), '4',
	'after post_restore() on the coordinator, numbering continues after the restored rows');

# detach, attach again: the stream continues
sql($coord, q{SELECT ordering.detach('events')});
is(sql($w1, q{SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'ordering_sequence%'
               AND tgrelid::regclass::text LIKE 'events%'}), '0',
	'detach() dropped the triggers on the shell and the shards');
sql($coord, q{SELECT ordering.attach('events')});
sql($coord, q{INSERT INTO events (resource_id) VALUES ('b')});
is(sql($coord, q{SELECT max(seq) FROM events WHERE resource_id = 'b'}), '4',
	'attached again, the stream continues');

# an altered counter table is refused (55000), and used again once undone:
# the storage layer checks each counter shard by OID, per relcache entry
sql($coord, qq{CREATE INDEX counters_expr ON $counters ((last_seq + 1))});
fails($coord, q{INSERT INTO events (resource_id) VALUES ('b')}, '55000',
	qr/ordering cannot use relation "ordering_internal\.sequences_[0-9a-f]+_\d+": its index/,
	'a counter table with an index on an expression');
sql($coord, q{DROP INDEX ordering_internal.counters_expr});
sql($coord, q{INSERT INTO events (resource_id) VALUES ('b')});
is(sql($coord, q{SELECT max(seq) FROM events WHERE resource_id = 'b'}), '5',
	'the index dropped, the counter shard is used again');

is(sql($coord, q{SELECT count(*) FROM ordering.check()}), '0',
	'ordering.check() on the coordinator is clean after the functional tests');

# ---------------------------------------------------------------------------
# The workload: producers and relays during moves, splits, a rebalance and
# a drain
# ---------------------------------------------------------------------------
my $tmp = PostgreSQL::Test::Utils::tempdir;
my $producer = "$tmp/producer.sql";
my $relay = "$tmp/relay.sql";
# Two resources per transaction, locked in one order (no deadlocks), most
# often on two workers; 10% roll back; sometimes a multi-row insert or a row
# of the partitioned table.
PostgreSQL::Test::Utils::append_to_file($producer, qq{
\\set r1 random(1, $resources)
\\set r2 random(1, $resources)
\\set a least(:r1, :r2)
\\set b greatest(:r1, :r2)
\\set roll random(1, 10)
\\set kind random(1, 5)
BEGIN;
INSERT INTO events (resource_id, payload) VALUES ('w' || :a, '{"c": 1}');
\\if :kind = 1
INSERT INTO events (resource_id, payload) VALUES ('w' || :b, '{"c": 2}'), ('w' || :b, '{"c": 3}');
\\elif :kind = 2
INSERT INTO parted (resource_id, day) VALUES ('w' || :b, 1 + :b % 2);
\\else
INSERT INTO events (resource_id, payload) VALUES ('w' || :b, '{"c": 2}');
\\endif
\\if :roll = 1
ROLLBACK;
\\else
COMMIT;
\\endif
});
# A relay: claim on this node, "publish" into a log of this node, mark.
PostgreSQL::Test::Utils::append_to_file($relay, q{
BEGIN;
WITH c AS (SELECT * FROM ordering.claim_unpublished(NULL::events, 50)),
     l AS (INSERT INTO relay_log SELECT c.id, c.resource_id, c.seq FROM c)
SELECT ordering.mark_published('events', ARRAY(SELECT c.id FROM c));
COMMIT;
});
# Producers and relays are roles of their own, with the rights
# docs/citus.md lists (Citus creates roles and grants on every node).
sql($coord, q{
	CREATE ROLE producer LOGIN;
	GRANT SELECT, INSERT ON events, parted TO producer;
	GRANT USAGE ON SEQUENCE events_id_seq, parted_id_seq TO producer;
	CREATE ROLE relay LOGIN;
	GRANT SELECT, UPDATE ON events TO relay;
});
# the producer set, which includes what a relay calls, by the grant
# functions on the coordinator: every node gets it, nodes added later
# included, as docs/citus.md says
sql($coord, q{
	SELECT ordering.grant_producer('producer');
	SELECT ordering.grant_producer('relay');
});
my %relay_nodes;
sub relay_node
{
	my ($node) = @_;
	sql($node, q{CREATE TABLE relay_log (id bigint, resource_id text, seq bigint);
	             GRANT INSERT ON relay_log TO relay});
	$relay_nodes{ $node->name } = $node;
	return;
}
relay_node($_) for ($w1, $w2);

# ---------------------------------------------------------------------------
# Privileges: the producers' rules of sql/privileges.sql, on a cluster.  A
# stream belongs to the owners of its tables (docs/privileges.md): a role
# with the producer set, owning a distributed table co-located with another
# role's attached table, can neither attach it to that stream, nor number
# its rows from that stream with a sequencing trigger made by hand, nor
# write that stream's counter table or the registry with SQL, on the
# coordinator or on a worker.
# ---------------------------------------------------------------------------

# stream Y: public.owned_stream, attached by the extension's owner (its
# first attach makes the counter table), then given to role stream_owner
sql($coord, q{
	CREATE ROLE stream_owner LOGIN;
	CREATE ROLE intruder LOGIN;
	GRANT CREATE ON SCHEMA public TO intruder;
	CREATE TABLE owned_stream (id bigserial, resource_id text NOT NULL, seq bigint,
	                           PRIMARY KEY (resource_id, id));
	SELECT create_distributed_table('owned_stream', 'resource_id', colocate_with => 'events');
	SELECT ordering.attach('owned_stream');
	ALTER TABLE owned_stream OWNER TO stream_owner;
	SELECT ordering.grant_producer('stream_owner');
});
# intruder gets its set as 1.2 said: on every node, with Citus's propagation
# off, which gives it on that node only (docs/citus.md) and still works: it
# acts below on the coordinator and on a worker
$cluster->each_node(sub {
	my ($node) = @_;
	sql($node, q{
		SET citus.enable_ddl_propagation = off;
		SELECT ordering.grant_producer('intruder');
	});
});
my $ycounters = sql($coord,
	q{SELECT ordering_internal.distributed_counters('public.owned_stream')});
sql_as($coord, 'stream_owner', q{INSERT INTO owned_stream (resource_id) VALUES ('pv'), ('pv')});
sql_as($w1, 'stream_owner', q{INSERT INTO owned_stream (resource_id) VALUES ('pw')});
# what stream Y's counters are: its counter table, and nothing of it in
# ordering.sequences on any node
my $y_state = sub {
	return join(';',
		sql($coord, qq{SELECT string_agg(resource_id || ':' || last_seq, ',' ORDER BY resource_id)
		               FROM $ycounters WHERE stream = 'public.owned_stream'}),
		map {
			sql($_, q{SELECT count(*) FROM ordering.sequences WHERE stream = 'public.owned_stream'})
		} $cluster->nodes);
};
my $y_before = $y_state->();
is($y_before, 'pv:2,pw:1;0;0;0', "stream Y's counters are in its counter table $ycounters");

# the intruder's own distributed table, co-located with stream Y's
sql_as($coord, 'intruder', q{
	CREATE TABLE intruder_events (id bigserial, resource_id text NOT NULL, seq bigint,
	                              PRIMARY KEY (resource_id, id));
	SELECT create_distributed_table('intruder_events', 'resource_id', colocate_with => 'owned_stream');
});

# 1. attach() to stream Y: 42501, as on one node
fails_as($coord, 'intruder',
	q{SELECT ordering.attach('intruder_events', stream => 'public.owned_stream')}, '42501',
	qr/permission denied to attach relation "intruder_events" to stream "public.owned_stream".*\n.*owned by role "stream_owner"/,
	'attach() of a producer\'s distributed table to another role\'s stream');
is(sql($coord, q{SELECT count(*) FROM pg_trigger WHERE tgrelid = 'intruder_events'::regclass
                   AND tgname LIKE 'ordering%'}), '0',
	'... which left no trigger on the table');

# 2. the sequencing triggers made by hand, as attach() would make them for
# stream Y (the counter table as the fourth argument), on the intruder's
# own table: Citus copies them to its shards
sql_as($coord, 'intruder', q{SET citus.enable_unsafe_triggers = on;}
	  . sequencing_triggers('intruder_events', 'public.owned_stream', $ycounters));
# nor may it register the table with them (as on one node)
fails_as($coord, 'intruder',
	q{SELECT ordering_internal.attachment_register('intruder_events', 'public.owned_stream', 'resource_id', 'seq')},
	'42501', qr/permission denied to attach relation "intruder_events"/,
	'registering a table whose hand-made trigger names another role\'s stream');
fails_as($coord, 'intruder', q{SELECT ordering_internal.attachment_unregister('owned_stream')},
	'55000', qr/still has its sequencing trigger/, 'unregistering another role\'s table');
# As on one node (0A000, "is not attached"): the shards' trigger asks the
# registry of distributed streams, a reference table on every node, which
# lists stream Y's own tables only (src/citus/citus_registry.c)
fails_as($coord, 'intruder', q{INSERT INTO intruder_events (resource_id) VALUES ('pv')},
	'0A000', qr/relation "intruder_events" is not attached to stream "public.owned_stream"/,
	'an insert numbered from another role\'s stream, through the coordinator');
fails_as($w1, 'intruder', q{INSERT INTO intruder_events (resource_id) VALUES ('pw')},
	'0A000', qr/relation "intruder_events" is not attached to stream "public.owned_stream"/,
	'an insert numbered from another role\'s stream, on a worker');
is($y_state->(), $y_before, "stream Y's counters are unchanged");
is(sql($coord, q{SELECT count(*) FROM intruder_events}), '0', 'nothing was stored');
# the registry copies only what the coordinator's ordering.attachments says
sql_as($coord, 'intruder', q{SELECT ordering_internal.citus_registry_sync('intruder_events')});
fails_as($coord, 'intruder', q{INSERT INTO intruder_events (resource_id) VALUES ('pv')},
	'0A000', qr/is not attached to stream/, '... also after the intruder synced the registry');
# the owner's stream goes on without a gap
sql_as($coord, 'stream_owner', q{INSERT INTO owned_stream (resource_id) VALUES ('pv')});
sql_as($w1, 'stream_owner', q{INSERT INTO owned_stream (resource_id) VALUES ('pw')});
is(sql($coord, q{SELECT string_agg(resource_id || seq, ',' ORDER BY resource_id, seq) FROM owned_stream}),
	'pv1,pv2,pv3,pw1,pw2', "stream Y continues without a gap");

# The registry names stream Y's table on every node by its own OID there,
# through a rename and a change of schema (both keep the OID): the shards
# re-check after each (the relcache invalidation), and go on counting.
sub registry_names
{
	my ($node) = @_;
	return sql($node, q{SELECT string_agg(tbl::text || '=' || (tbl::oid = to_regclass(tbl::text)::oid)::text
	                                      || ':' || stream, ',' ORDER BY stream, tbl::text)
	                      FROM ordering_internal.distributed_attachments
	                     WHERE stream = 'public.owned_stream'});
}
my @registry_nodes = $cluster->nodes;
is(join(' ', map { registry_names($_) } @registry_nodes),
	join(' ', ('public.owned_stream=true:public.owned_stream') x @registry_nodes),
	'the registry names stream Y\'s table on every node, by its OID there');
sql($coord, q{
	CREATE SCHEMA moved_here;
	GRANT USAGE ON SCHEMA moved_here TO stream_owner;
	ALTER TABLE owned_stream RENAME TO owned_stream_renamed;
});
sql_as($coord, 'stream_owner', q{INSERT INTO owned_stream_renamed (resource_id) VALUES ('pv')});
sql_as($w1, 'stream_owner', q{INSERT INTO owned_stream_renamed (resource_id) VALUES ('pw')});
sql($coord, q{ALTER TABLE owned_stream_renamed SET SCHEMA moved_here});
sql_as($coord, 'stream_owner', q{INSERT INTO moved_here.owned_stream_renamed (resource_id) VALUES ('pv')});
sql_as($w1, 'stream_owner', q{INSERT INTO moved_here.owned_stream_renamed (resource_id) VALUES ('pw')});
is(join(' ', map { registry_names($_) } @registry_nodes),
	join(' ', ('moved_here.owned_stream_renamed=true:public.owned_stream') x @registry_nodes),
	'... renamed and moved to another schema, the same table on every node');
sql($coord, q{ALTER TABLE moved_here.owned_stream_renamed SET SCHEMA public;
              ALTER TABLE owned_stream_renamed RENAME TO owned_stream});
is(sql($coord, q{SELECT string_agg(resource_id || seq, ',' ORDER BY resource_id, seq) FROM owned_stream}),
	'pv1,pv2,pv3,pv4,pv5,pw1,pw2,pw3,pw4', "stream Y continues through the rename and the change of schema");
fails_as($w1, 'intruder', q{INSERT INTO intruder_events (resource_id) VALUES ('pw')},
	'0A000', qr/is not attached to stream/, '... and the intruder\'s table is still refused');
$y_before = $y_state->();

# ... and, as on one node, the owner of stream Y's tables may attach another
# table of its own to it (attach() needs no CREATE on ordering_internal once
# the stream has its counter table: docs/citus.md, "Limits")
sql($coord, q{
	CREATE TABLE owned_stream_2 (id bigserial, resource_id text NOT NULL, seq bigint,
	                             PRIMARY KEY (resource_id, id));
	SELECT create_distributed_table('owned_stream_2', 'resource_id', colocate_with => 'owned_stream');
	ALTER TABLE owned_stream_2 OWNER TO stream_owner;
});
# (attach() raises the stream's counters to the numbers the table holds,
# ordering_internal.citus_raise_counters(): it writes the counter table,
# which no set may write, only when the table holds numbers)
{
	my ($ret, $out, $err) = $coord->psql('postgres',
		q{SELECT ordering.attach('owned_stream_2', stream => 'public.owned_stream')},
		extra_params => [ '-U', 'stream_owner' ]);
	is($ret, 0, "the owner of stream Y's tables attaches another table of its own to it")
	  or diag $err;
}
sql_as($coord, 'stream_owner', q{INSERT INTO owned_stream_2 (resource_id) VALUES ('pv'), ('pq')});
my $pv_next = 1 + sql($coord, q{SELECT max(seq) FROM owned_stream WHERE resource_id = 'pv'});
is(sql($coord, q{SELECT string_agg(resource_id || seq, ',' ORDER BY resource_id, seq) FROM owned_stream_2}),
	"pq1,pv$pv_next", "... whose rows continue the stream's numbers");
# attaching a table that holds numbers raises the counters: that needs the
# counter table's owner (docs/citus.md, "Limits")
sql_as($coord, 'stream_owner', q{SELECT ordering.detach('owned_stream_2')});
fails_as($coord, 'stream_owner', q{SELECT ordering.attach('owned_stream_2')}, '42501',
	qr/permission denied for table sequences_/,
	"attaching again a detached table that holds numbers, as the owner of the stream's tables");
sql($coord, q{SELECT ordering.attach('owned_stream_2')});
sql_as($coord, 'stream_owner', q{INSERT INTO owned_stream_2 (resource_id) VALUES ('pq')});
is(sql($coord, q{SELECT string_agg(resource_id || seq, ',' ORDER BY resource_id, seq) FROM owned_stream_2}),
	"pq1,pq2,pv$pv_next", "... which the extension's owner does, and the stream goes on");
sql($coord, q{DROP TABLE owned_stream_2});

# 3. stream Y's counter table and the registry: no SQL writes, on the
# coordinator, on a worker, and on the worker's shard of the counter table
my $ycounter_shard = sql($w1, qq{
	SELECT pg_catalog.shard_name(s.logicalrelid, s.shardid, false)
	  FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
	 WHERE s.logicalrelid = '$ycounters'::regclass
	   AND p.groupid = (SELECT groupid FROM pg_dist_local_group)
	 ORDER BY s.shardid LIMIT 1});
like($ycounter_shard, qr/^ordering_internal\.sequences_[0-9a-f]{16}_\d+$/,
	"a shard of the counter table on a worker: $ycounter_shard");
my $y_now = $y_state->();
for my $case ([ $coord, $ycounters ], [ $w1, $ycounters ], [ $w1, $ycounter_shard ])
{
	my ($node, $rel) = @$case;
	my $where = "$rel on " . $node->name;
	fails_as($node, 'intruder', qq{UPDATE $rel SET last_seq = 0}, '42501',
		qr/permission denied for table/, "UPDATE of $where");
	fails_as($node, 'intruder', qq{DELETE FROM $rel}, '42501',
		qr/permission denied for table/, "DELETE from $where");
	fails_as($node, 'intruder',
		qq{INSERT INTO $rel (stream, resource_id, last_seq) VALUES ('public.owned_stream', 'pz', 7)},
		'42501', qr/permission denied for table/, "INSERT into $where");
}
for my $node ($coord, $w1)
{
	my $where = 'ordering.attachments on ' . $node->name;
	fails_as($node, 'intruder', q{UPDATE ordering.attachments SET attached = false}, '42501',
		qr/permission denied for table attachments/, "UPDATE of $where");
	fails_as($node, 'intruder', q{DELETE FROM ordering.attachments}, '42501',
		qr/permission denied for table attachments/, "DELETE from $where");
	fails_as($node, 'intruder', q{
		INSERT INTO ordering.attachments (tbl, stream, resource_column, sequence_column)
		VALUES ('intruder_events', 'public.owned_stream', 'resource_id', 'seq')}, '42501',
		qr/permission denied for table attachments/, "INSERT into $where");
}
my $registry_shard = sql($w1, q{
	SELECT pg_catalog.shard_name(s.logicalrelid, s.shardid, false)
	  FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
	 WHERE s.logicalrelid = 'ordering_internal.distributed_attachments'::regclass
	   AND p.groupid = (SELECT groupid FROM pg_dist_local_group)});
like($registry_shard, qr/^ordering_internal\.distributed_attachments_\d+$/,
	"the registry of distributed streams on a worker: $registry_shard");
for my $case ([ $coord, 'ordering_internal.distributed_attachments' ],
	[ $w1, 'ordering_internal.distributed_attachments' ], [ $w1, $registry_shard ])
{
	my ($node, $rel) = @$case;
	my $where = "$rel on " . $node->name;
	fails_as($node, 'intruder', qq{UPDATE $rel SET stream = 'x'}, '42501',
		qr/permission denied for table/, "UPDATE of $where");
	fails_as($node, 'intruder', qq{DELETE FROM $rel}, '42501',
		qr/permission denied for table/, "DELETE from $where");
	fails_as($node, 'intruder',
		qq{INSERT INTO $rel (tbl, stream) VALUES ('public.intruder_events', 'public.owned_stream')},
		'42501', qr/permission denied for table/, "INSERT into $where");
}
is($y_state->(), $y_now, "stream Y's counters are unchanged by the refused writes");
is(sql($coord, q{SELECT string_agg(tbl::text || ':' || stream || ':' || attached, ',' ORDER BY tbl::text)
                   FROM ordering.attachments WHERE tbl::text IN ('owned_stream', 'intruder_events')}),
	'owned_stream:public.owned_stream:true', 'the registry is unchanged');

# the tables go: the moves below need not carry them
sql($coord, qq{
	DROP TABLE intruder_events;
	SELECT ordering.detach('owned_stream');
	DROP TABLE owned_stream;
	DROP TABLE $ycounters;
});

# pgbench on a node for $secs seconds, in the background
sub pgbench_start
{
	my ($node, $script, $n, $secs) = @_;
	my ($out, $err) = ('', '');
	my $user = $script eq $relay ? 'relay' : 'producer';
	# transactions per second of one run (a relay's claims 50 rows each)
	my @rate = $soak ? () : ('--rate', $script eq $relay ? 20 : 40 * $n);
	my $h = IPC::Run::start(
		[
			'pgbench', '-n', '-h', $node->host, '-p', $node->port, '-U', $user,
			'-c', $n, '-T', $secs, '--max-tries=50', @rate, '-f', $script, 'postgres'
		],
		'>', \$out, '2>', \$err);
	return { h => $h, out => \$out, err => \$err, node => $node->name };
}

# Wait for pgbench runs; fail on a failed transaction.
my %txns = (producers => 0, failed => 0);
sub pgbench_finish
{
	for my $run (@_)
	{
		$run->{h}->finish;
		my $out = ${ $run->{out} };
		my ($done) = $out =~ /actually processed: (\d+)/;
		my ($failed) = $out =~ /failed transactions: (\d+)/;
		# a relay may find nothing to do; a producer always works
		if (!defined $done || !defined $failed || ${ $run->{err} } =~ /error|ERROR/
			|| ($run->{kind} eq 'producers' && $done == 0))
		{
			diag "pgbench on $run->{node}: $out " . ${ $run->{err} };
			$failed = ($failed // 0) + 1;
		}
		$txns{ $run->{kind} } += $done // 0;
		$txns{failed} += $failed // 0;
	}
	return;
}

# Producers (4 on the coordinator, 1 on a worker) and a relay on every
# node with shards, while the statements @op run on the coordinator, each
# in its own transaction; in chunks of a few seconds until they are done.
my @ops;
sub during_load
{
	my ($name, @op) = @_;
	my $chunk = 3;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-h', $coord->host, '-p', $coord->port,
		  '-d', 'postgres', map { ('-c', $_) } @op ],
		'>', \$out, '2>', \$err);
	my $rounds = 0;
	my $min_rounds = $soak ? int($soak / $chunk) + 1 : 2;
	while ($h->pumpable || $rounds < $min_rounds)
	{
		my @runs = (
			{ %{ pgbench_start($coord, $producer, $clients, $chunk) }, kind => 'producers' },
			{ %{ pgbench_start($w1, $producer, 1, $chunk) }, kind => 'producers' });
		push @runs, { %{ pgbench_start($_, $relay, 1, $chunk) }, kind => 'relays' }
		  for values %relay_nodes;
		pgbench_finish(@runs);
		$h->pump_nb if $h->pumpable;
		$rounds++;
	}
	$h->finish;
	is($h->result(0), 0, "$name completed under load") or diag $err;
	push @ops, $name;
	return;
}

# After an operation: each resource's next number follows its highest one.
sub continues
{
	my ($name) = @_;
	my $before = sql($coord, q{
		WITH e AS MATERIALIZED (SELECT resource_id, seq FROM events WHERE resource_id LIKE 'w%')
		SELECT string_agg(resource_id || ':' || hi, ',' ORDER BY resource_id)
		  FROM (SELECT resource_id, max(seq) AS hi FROM e GROUP BY 1) x});
	sql($coord, q{INSERT INTO events (resource_id, payload)
	              SELECT DISTINCT resource_id, '{"probe": 1}'::jsonb FROM events WHERE resource_id LIKE 'w%'});
	my $after = sql($coord, q{
		WITH e AS MATERIALIZED (SELECT resource_id, seq FROM events
		                         WHERE resource_id LIKE 'w%' AND payload ? 'probe')
		SELECT string_agg(resource_id || ':' || (seq - 1), ',' ORDER BY resource_id)
		  FROM (SELECT resource_id, max(seq) AS seq FROM e GROUP BY 1) x});
	# the probe rows of earlier operations are below: compare the newest
	cmp_ok(length($before), '>', 0, "the producers wrote before $name");
	is($after, $before, "numbering continues after $name");
	return;
}

my $shards = sub {
	return sql($coord, qq{
		SELECT s.shardid, p.nodeport FROM pg_dist_shard s JOIN pg_dist_shard_placement p USING (shardid)
		 WHERE s.logicalrelid = 'events'::regclass ORDER BY s.shardid});
};
my ($shard1) = sql($coord, qq{
	SELECT s.shardid FROM pg_dist_shard s JOIN pg_dist_shard_placement p USING (shardid)
	 WHERE s.logicalrelid = 'events'::regclass AND p.nodeport = @{[ $w1->port ]}
	 ORDER BY s.shardid LIMIT 1});
my ($w1h, $w1p, $w2h, $w2p) = ($w1->host, $w1->port, $w2->host, $w2->port);

$cluster->clean_orphans;
during_load('logical move',
	qq{SELECT citus_move_shard_placement($shard1, '$w1h', $w1p, '$w2h', $w2p, 'force_logical')});
continues('a logical move');

$cluster->clean_orphans;
during_load('block_writes move',
	qq{SELECT citus_move_shard_placement($shard1, '$w2h', $w2p, '$w1h', $w1p, 'block_writes')});
continues('a block_writes move');

my ($w1id, $w2id) = ($cluster->node_id($w1), $cluster->node_id($w2));
during_load('blocking split',
	qq{SELECT citus_split_shard_by_split_points($shard1,
	     ARRAY[((SELECT shardminvalue::bigint + shardmaxvalue::bigint FROM pg_dist_shard
	             WHERE shardid = $shard1) / 2)::text], ARRAY[$w1id, $w2id], 'block_writes')});
continues('a blocking split');

# Non-blocking: the children on a node other than the source's (with a child
# on the source node, Citus stalls: docs/citus.md, "Splits").
my ($shard2, $on) = split /\|/, sql($coord, qq{
	SELECT s.shardid, p.nodeport FROM pg_dist_shard s JOIN pg_dist_shard_placement p USING (shardid)
	 WHERE s.logicalrelid = 'events'::regclass ORDER BY s.shardid DESC LIMIT 1});
my $other = $on == $w1p ? $w2id : $w1id;
during_load('non-blocking split onto another node',
	q{SET statement_timeout = '120s'},
	qq{SELECT citus_split_shard_by_split_points($shard2,
	     ARRAY[((SELECT shardminvalue::bigint + shardmaxvalue::bigint FROM pg_dist_shard
	             WHERE shardid = $shard2) / 2)::text], ARRAY[$other, $other], 'force_logical')});
continues('a non-blocking split');

# Citus copies the database's settings (ALTER DATABASE ... SET on the
# coordinator) to a node it adds (docs/citus.md, "Settings on a cluster")
sql($coord, q{ALTER DATABASE postgres SET ordering.max_parked_per_resource = 5});
my $w3 = $cluster->add_worker;
is(sql($w3, q{SHOW ordering.max_parked_per_resource}), '5',
	'a node added later has the settings of ALTER DATABASE ... SET');
sql($coord, q{ALTER DATABASE postgres RESET ordering.max_parked_per_resource});
is(sql($w3, q{SHOW ordering.max_parked_per_resource}), sql($w1, q{SHOW ordering.max_parked_per_resource}),
	'and its RESET');
relay_node($w3);
$cluster->clean_orphans;
during_load('rebalance onto a third node',
	q{SELECT citus_rebalance_start(shard_transfer_mode => 'force_logical')},
	q{SELECT citus_rebalance_wait()});
isnt(sql($coord, qq{SELECT count(*) FROM pg_dist_shard_placement WHERE nodeport = @{[ $w3->port ]}}), '0',
	'the rebalance moved shards onto the third node');
continues('a rebalance');
# Citus copied the registry of distributed streams onto the third node (as
# names: a table's OID there is its own, here not the coordinator's), so the
# shards it moved there count (continues() above)
{
	my $w3_registry = sql($w3, q{
		SELECT pg_catalog.shard_name(s.logicalrelid, s.shardid, false)
		  FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
		 WHERE s.logicalrelid = 'ordering_internal.distributed_attachments'::regclass
		   AND p.groupid = (SELECT groupid FROM pg_dist_local_group)});
	isnt($w3_registry, '', "the third node holds the registry: $w3_registry");
	is(sql($w3, qq{SELECT string_agg(tbl::text || ':' || stream || ':'
	                                 || (tbl::oid = to_regclass(tbl::text)::oid)::text, ',' ORDER BY tbl::text)
	                 FROM $w3_registry WHERE stream IN ('public.events', 'public.keyed', 'public.parted')}),
		'public.events:public.events:true,public.keyed:public.keyed:true,public.parted:public.parted:true',
		'... naming each attached table by its OID on that node');
	isnt(sql($w3, q{SELECT 'public.events'::regclass::oid}), sql($coord, q{SELECT 'public.events'::regclass::oid}),
		'... which is not the coordinator\'s OID of it');
}

during_load('drain of a worker',
	qq{SELECT citus_drain_node('$w1h', $w1p, shard_transfer_mode => 'force_logical')});
is(sql($coord, qq{SELECT count(*) FROM pg_dist_shard_placement JOIN pg_dist_shard USING (shardid)
                   WHERE nodeport = $w1p AND logicalrelid = 'events'::regclass}), '0',
	'the drained worker holds no shard of the table');
continues('a drain');

# ---------------------------------------------------------------------------
# The end: every stream, every counter, every node, every row published
# ---------------------------------------------------------------------------
is($txns{failed}, 0, 'no producer or relay transaction failed');

# the relays drain what is left, on every node
for my $round (1 .. 100)
{
	last if sql($coord, q{SELECT count(*) FROM events WHERE published_at IS NULL}) eq '0';
	pgbench_finish(map { { %{ pgbench_start($_, $relay, 1, 1) }, kind => 'relays' } } values %relay_nodes);
}

for my $table ('events', 'parted')
{
	my ($rows, $res, $dups, $gaps, $restarts) = split /\|/, sql($coord, qq{
		WITH e AS MATERIALIZED (SELECT resource_id, seq FROM $table
		                         WHERE resource_id <> 'nx'),  -- numbers of next_sequence()
		     s AS MATERIALIZED (SELECT resource_id, count(*) AS n, count(DISTINCT seq) AS d,
		                               max(seq) AS hi, count(*) FILTER (WHERE seq = 1) AS ones
		                          FROM e GROUP BY 1)
		SELECT (SELECT count(*) FROM e), count(*), COALESCE(sum(n - d), 0),
		       count(*) FILTER (WHERE hi <> d), count(*) FILTER (WHERE ones > 1)
		  FROM s});
	note "$table: $rows rows, $res resources, $dups duplicates, $gaps resources with gaps, $restarts restarts";
	is($dups, 0, "$table: no number given twice");
	is($gaps, 0, "$table: no gap");
	is($restarts, 0, "$table: no restart");
	cmp_ok($rows, '>', $table eq 'events' ? 1000 : 100, "$table: the workload stored rows");
}
# every counter is its resource's highest number
is( sql($coord, qq{
		WITH hi AS MATERIALIZED (SELECT resource_id, max(seq) AS hi FROM events GROUP BY 1)
		SELECT count(*) FROM hi LEFT JOIN $counters c
		    ON c.resource_id = hi.resource_id AND c.stream = 'public.events'
		 WHERE c.last_seq IS DISTINCT FROM hi.hi}),
	'0', 'every counter equals its resource\'s highest number');
$cluster->each_node(sub {
	my ($node) = @_;
	is(sql($node, q{SELECT count(*) FROM ordering.check()}), '0',
		'ordering.check() is clean on ' . $node->name);
});

# relays: nothing stranded, nothing published twice
is(sql($coord, q{SELECT count(*) FROM events WHERE published_at IS NULL}), '0',
	'every row was published');
my $logged = 0;
my %seen;
my $twice = 0;
for my $node (values %relay_nodes)
{
	for my $line (split /\n/, sql($node, q{SELECT id FROM relay_log}))
	{
		$twice++ if $seen{$line}++;
		$logged++;
	}
}
is($logged, sql($coord, q{SELECT count(*) FROM events}), 'the relays published every row');
is($twice, 0, 'no row was published twice');

note sprintf('operations: %s; transactions: %d producers, %d relays, %d failed',
	join(', ', @ops), $txns{producers}, $txns{relays} // 0, $txns{failed});

$cluster->stop;
done_testing();
