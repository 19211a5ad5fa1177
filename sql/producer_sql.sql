-- The sequencing trigger under ordinary SQL: ON CONFLICT, other BEFORE
-- triggers, COPY, partitions, non-text resources under other settings,
-- rename/detach/attach, generated columns, copies of the trigger, read-only
-- transactions, savepoints, two-phase commit.  (Many resources in one
-- transaction: test/t/005_many_resources.pl.)
\set VERBOSITY terse

-- The idempotent-producer pattern: a unique event key, retried with
-- ON CONFLICT DO NOTHING.  A row that is not inserted gives its number back.
CREATE TABLE ev (id bigserial PRIMARY KEY, event_key text UNIQUE NOT NULL,
                 resource_id text NOT NULL, seq bigint NOT NULL, body text);
SELECT ordering.attach('ev');
INSERT INTO ev (event_key, resource_id, body) VALUES ('k1', 'r', 'first')
    ON CONFLICT (event_key) DO NOTHING;
INSERT INTO ev (event_key, resource_id, body) VALUES ('k1', 'r', 'retried')
    ON CONFLICT (event_key) DO NOTHING;
INSERT INTO ev (event_key, resource_id, body) VALUES ('k2', 'r', 'second')
    ON CONFLICT (event_key) DO NOTHING;
SELECT event_key, seq, body FROM ev ORDER BY id;
SELECT ordering.last_sequence('public.ev', 'r');

-- Multi-row: a skipped row before an inserted one of the same resource; the
-- number goes to the next row at once, so the sequence stays gapless.
INSERT INTO ev (event_key, resource_id, body)
VALUES ('k2', 'r', 'dup'), ('k3', 'r', 'third'), ('k1', 'r', 'dup'),
       ('k4', 'r', 'fourth'), ('k4', 'r', 'dup in the same statement')
    ON CONFLICT (event_key) DO NOTHING;
SELECT event_key, seq, body FROM ev ORDER BY id;
SELECT ordering.last_sequence('public.ev', 'r');

-- DO UPDATE updates the existing row, which keeps its own number, and
-- RETURNING shows it; the number the proposed row got is given back.
INSERT INTO ev (event_key, resource_id, body) VALUES ('k2', 'r', 'updated')
    ON CONFLICT (event_key) DO UPDATE SET body = EXCLUDED.body
    RETURNING event_key, seq, body;
INSERT INTO ev (event_key, resource_id, body) VALUES ('k5', 'r', 'fifth')
    RETURNING seq;
-- An update that would give the existing row the proposed number is
-- refused: a stored event keeps its number.
INSERT INTO ev (event_key, resource_id, body) VALUES ('k5', 'r', 'x')
    ON CONFLICT (event_key) DO UPDATE SET seq = EXCLUDED.seq;
\echo :SQLSTATE
SELECT ordering.last_sequence('public.ev', 'r');

-- A later BEFORE trigger that suppresses the row: its number goes back.
CREATE FUNCTION zz_filter() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.body = 'drop me' THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER zz_filter BEFORE INSERT ON ev FOR EACH ROW EXECUTE FUNCTION zz_filter();
INSERT INTO ev (event_key, resource_id, body) VALUES ('k6', 'r', 'drop me');
INSERT INTO ev (event_key, resource_id, body)
VALUES ('k7', 'r', 'drop me'), ('k8', 'r', 'sixth'), ('k9', 'r', 'drop me');
SELECT event_key, seq, body FROM ev WHERE seq > 4 ORDER BY id;
SELECT ordering.last_sequence('public.ev', 'r');

-- Giving a number back is impossible once a later row of the same resource
-- holds a higher one: here a trigger inserts another event of the resource
-- and then suppresses its own row.  The statement fails; nothing changes.
CREATE FUNCTION zz_sneak() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.body = 'sneak' THEN
        INSERT INTO ev (event_key, resource_id, body) VALUES ('sneaked', NEW.resource_id, 'x');
        RETURN NULL;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER zz_sneak BEFORE INSERT ON ev FOR EACH ROW EXECUTE FUNCTION zz_sneak();
INSERT INTO ev (event_key, resource_id, body) VALUES ('k10', 'r', 'sneak');
\echo :SQLSTATE
SELECT count(*) AS rows, max(seq) AS highest, ordering.last_sequence('public.ev', 'r') AS counter
  FROM ev WHERE resource_id = 'r';
DROP TRIGGER zz_sneak ON ev;
DROP TRIGGER zz_filter ON ev;

-- 1.2: a later BEFORE trigger that changes the resource (a normalizing
-- lower(), say) would store the number of one resource in a row of
-- another, repeating it: the statement fails with 27000 instead, whether
-- the rows come by INSERT or COPY, and nothing is stored.
CREATE TABLE norm (r text NOT NULL, s bigint NOT NULL);
SELECT ordering.attach('norm', 'r', 's');
CREATE FUNCTION normalize_r() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.r := lower(NEW.r);
    RETURN NEW;
END
$$;
CREATE TRIGGER zz_normalize BEFORE INSERT ON norm FOR EACH ROW EXECUTE FUNCTION normalize_r();
INSERT INTO norm (r) VALUES ('acct-1'), ('ACCT-1'), ('acct-1');
\echo :SQLSTATE
\set VERBOSITY default
INSERT INTO norm (r) VALUES ('ACCT-2');
\set VERBOSITY sqlstate
COPY norm (r) FROM STDIN;
acct-1
ACCT-1
\.
\set VERBOSITY terse
SELECT count(*) AS stored, ordering.last_sequence('public.norm', 'acct-1') AS counter_lower,
       ordering.last_sequence('public.norm', 'ACCT-1') AS counter_upper
  FROM norm;
-- Rows the trigger leaves as they are get their numbers as always.
INSERT INTO norm (r) VALUES ('acct-1'), ('acct-2'), ('acct-1') RETURNING r, s;
-- A later trigger that changes the number is refused the same way.
CREATE FUNCTION renumber_s() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.s := NEW.s + 10;
    RETURN NEW;
END
$$;
DROP TRIGGER zz_normalize ON norm;
CREATE TRIGGER zz_renumber BEFORE INSERT ON norm FOR EACH ROW EXECUTE FUNCTION renumber_s();
INSERT INTO norm (r) VALUES ('acct-1');
\echo :SQLSTATE
DROP TRIGGER zz_renumber ON norm;
-- Normalizing in a trigger that fires before ordering's (triggers fire in
-- the order of their names) keys each row by the resource it stores.
CREATE TRIGGER a_normalize BEFORE INSERT ON norm FOR EACH ROW EXECUTE FUNCTION normalize_r();
INSERT INTO norm (r) VALUES ('ACCT-1'), ('acct-1'), ('Acct-2') RETURNING r, s;
SELECT r, array_agg(s ORDER BY s) FROM norm GROUP BY r ORDER BY r;
DROP TABLE norm;

-- A skipped row inside a savepoint that is rolled back, and one in a
-- released savepoint: numbers stay gapless either way.
BEGIN;
SAVEPOINT a;
INSERT INTO ev (event_key, resource_id) VALUES ('k1', 'r') ON CONFLICT DO NOTHING;
ROLLBACK TO a;
SAVEPOINT b;
INSERT INTO ev (event_key, resource_id) VALUES ('k1', 'r') ON CONFLICT DO NOTHING;
RELEASE b;
INSERT INTO ev (event_key, resource_id, body) VALUES ('k11', 'r', 'seventh') RETURNING seq;
COMMIT;

-- Prepared: a skipped row's number is given back before PREPARE.
BEGIN;
INSERT INTO ev (event_key, resource_id) VALUES ('k1', 'r') ON CONFLICT DO NOTHING;
PREPARE TRANSACTION 'skip';
COMMIT PREPARED 'skip';
INSERT INTO ev (event_key, resource_id, body) VALUES ('k12', 'r', 'eighth') RETURNING seq;
SELECT array_agg(seq ORDER BY seq) = array_agg(g ORDER BY g) AS gapless
  FROM (SELECT seq, row_number() OVER (ORDER BY seq) AS g FROM ev WHERE resource_id = 'r') s;

-- ON CONFLICT in a data-modifying WITH query that its statement does not
-- read: PostgreSQL inserts those rows when the statement finishes.  Here
-- that statement runs inside a function called by one without ON CONFLICT;
-- the skipped row's number is given back all the same.
CREATE FUNCTION insert_in_with(k text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('WITH ins AS (INSERT INTO ev (event_key, resource_id) VALUES (%L, %L)
                    ON CONFLICT (event_key) DO NOTHING RETURNING seq) SELECT 1', k, 'r');
END
$$;
SELECT insert_in_with('k1');
SELECT insert_in_with('k13');
SELECT event_key, seq FROM ev WHERE seq > 8 ORDER BY seq;
SELECT ordering.last_sequence('public.ev', 'r');

-- Only a statement that may skip rows asks the companion trigger which
-- were stored: a plain INSERT settles its numbers at once.
SET track_functions = 'all';
BEGIN;
INSERT INTO ev (event_key, resource_id) VALUES ('k14', 'r');
SELECT coalesce(pg_stat_get_xact_function_calls('ordering_internal.sequence_stored'::regproc), 0)
    AS companion_calls;
INSERT INTO ev (event_key, resource_id) VALUES ('k15', 'r'), ('k1', 'r')
    ON CONFLICT (event_key) DO NOTHING;
SELECT coalesce(pg_stat_get_xact_function_calls('ordering_internal.sequence_stored'::regproc), 0)
    AS companion_calls;
COMMIT;
RESET track_functions;
SELECT event_key, seq FROM ev WHERE seq > 9 ORDER BY seq;

-------------------------------------------------------------------------------
-- COPY: a supplied number is asserted, as in INSERT
-------------------------------------------------------------------------------

CREATE TABLE cv (account text NOT NULL, version bigint NOT NULL);
SELECT ordering.attach('cv', 'account', 'version');
INSERT INTO cv (account) VALUES ('a'), ('a'), ('a');
-- (psql does not report the SQLSTATE of a failed COPY in a variable: the
-- verbosity shows it)
\set VERBOSITY sqlstate
COPY cv (account, version) FROM STDIN;
a	2
a	10
\.
\set VERBOSITY terse
SELECT array_agg(version ORDER BY version) AS versions FROM cv;
COPY cv (account, version) FROM STDIN;
a	4
a	5
b	1
\.
COPY cv (account) FROM STDIN;
b
\.
SELECT account, array_agg(version ORDER BY version) AS versions FROM cv GROUP BY 1 ORDER BY 1;
-- A function called from COPY TO asserts too: nothing is taken.
\set VERBOSITY sqlstate
COPY (SELECT ordering.emit('copy-to', 'T', '{}', 50)) TO STDOUT;
\set VERBOSITY terse
SELECT ordering.last_sequence('ordering.outbox', 'copy-to');
COPY (SELECT ordering.emit('copy-to', 'T', '{}', 1)) TO STDOUT;

-------------------------------------------------------------------------------
-- Partitions: attach on the parent; a row moved by UPDATE keeps its number
-------------------------------------------------------------------------------

CREATE TABLE pev (resource_id text NOT NULL, seq bigint NOT NULL, region text NOT NULL)
    PARTITION BY LIST (region);
CREATE TABLE pev_eu PARTITION OF pev FOR VALUES IN ('eu');
CREATE TABLE pev_us PARTITION OF pev FOR VALUES IN ('us');
SELECT ordering.attach('pev');
INSERT INTO pev (resource_id, region) VALUES ('r', 'eu'), ('r', 'us'), ('r', 'eu');
UPDATE pev SET region = 'us' WHERE seq = 3;
SELECT tableoid::regclass AS part, resource_id, seq FROM pev ORDER BY seq;
INSERT INTO pev (resource_id, region) VALUES ('r', 'eu') RETURNING seq;
-- Neither the number nor the resource of a stored row may change.
UPDATE pev SET seq = 9 WHERE seq = 1;
\echo :SQLSTATE
UPDATE pev SET resource_id = 'other' WHERE seq = 1;
\echo :SQLSTATE
-- A move that does not finish leaves nothing behind: the number of the row
-- it would have moved is asserted again like any other (40001), in the same
-- transaction or the next, whatever stopped the move.
CREATE TABLE pev_mv (resource_id text NOT NULL, seq bigint, region text NOT NULL)
    PARTITION BY LIST (region);
CREATE TABLE pev_mv_eu PARTITION OF pev_mv FOR VALUES IN ('eu');
CREATE TABLE pev_mv_us PARTITION OF pev_mv FOR VALUES IN ('us');
SELECT ordering.attach('pev_mv');
INSERT INTO pev_mv (resource_id, region) SELECT 'm', 'eu' FROM generate_series(1, 6);
\set VERBOSITY sqlstate
-- no partition for the new row
UPDATE pev_mv SET region = 'asia' WHERE seq = 2;
INSERT INTO pev_mv (resource_id, seq, region) VALUES ('m', 2, 'eu');
-- a later BEFORE DELETE trigger that raises, in a savepoint
CREATE FUNCTION pev_mv_refuse() RETURNS trigger LANGUAGE plpgsql AS
  $$BEGIN RAISE EXCEPTION 'no deletes here'; END$$;
CREATE TRIGGER zz_refuse BEFORE DELETE ON pev_mv_eu FOR EACH ROW EXECUTE FUNCTION pev_mv_refuse();
BEGIN;
SAVEPOINT s;
UPDATE pev_mv SET region = 'us' WHERE seq = 3;
ROLLBACK TO SAVEPOINT s;
INSERT INTO pev_mv (resource_id, seq, region) VALUES ('m', 3, 'us');
ROLLBACK;
DROP TRIGGER zz_refuse ON pev_mv_eu;
-- a later BEFORE DELETE trigger that skips the delete: the UPDATE succeeds
-- and moves nothing; an insert in the same transaction, and one in the next
CREATE FUNCTION pev_mv_keep() RETURNS trigger LANGUAGE plpgsql AS
  $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER zz_keep BEFORE DELETE ON pev_mv_eu FOR EACH ROW EXECUTE FUNCTION pev_mv_keep();
BEGIN;
UPDATE pev_mv SET region = 'us' WHERE seq = 4;
INSERT INTO pev_mv (resource_id, seq, region) VALUES ('m', 4, 'us');
ROLLBACK;
UPDATE pev_mv SET region = 'us' WHERE seq = 4;
INSERT INTO pev_mv (resource_id, seq, region) VALUES ('m', 4, 'us');
DROP TRIGGER zz_keep ON pev_mv_eu;
\set VERBOSITY terse
-- the same on a plain table: an UPDATE that fails a CHECK, then a DELETE of
-- the row, then an insert that supplies its number
CREATE TABLE mv_plain (resource_id text NOT NULL, seq bigint, v int CHECK (v < 100));
SELECT ordering.attach('mv_plain');
INSERT INTO mv_plain (resource_id, v) SELECT 'p', 1 FROM generate_series(1, 10);
\set VERBOSITY sqlstate
UPDATE mv_plain SET v = 200 WHERE seq = 3;
\set VERBOSITY terse
DELETE FROM mv_plain WHERE seq = 3;
\set VERBOSITY sqlstate
INSERT INTO mv_plain (resource_id, seq, v) VALUES ('p', 3, 5);
\set VERBOSITY terse
-- and a move that finishes still keeps its number, after all of the above
UPDATE pev_mv SET region = 'us' WHERE seq = 5;
SELECT tableoid::regclass AS part, resource_id, seq FROM pev_mv ORDER BY seq;
SELECT resource_id, array_agg(seq ORDER BY seq) AS seqs FROM mv_plain GROUP BY 1;
SELECT ordering.last_sequence('public.pev_mv', 'm'), ordering.last_sequence('public.mv_plain', 'p');
-- Dropping or detaching a partition never restarts the stream.
ALTER TABLE pev DETACH PARTITION pev_us;
DROP TABLE pev_eu;
INSERT INTO pev_us (resource_id, seq, region) VALUES ('r', 99, 'us');
CREATE TABLE pev_eu2 PARTITION OF pev FOR VALUES IN ('eu');
INSERT INTO pev (resource_id, region) VALUES ('r', 'eu') RETURNING seq;
-- A partition of an attached table cannot be attached on its own.
SELECT ordering.attach('pev_eu2');
\echo :SQLSTATE

-- Rows skipped in a partition: by ON CONFLICT, and by a BEFORE trigger that
-- only one partition has; plain rows of the same statements keep theirs.
CREATE TABLE kev (event_key text, resource_id text NOT NULL, seq bigint NOT NULL,
                  region text NOT NULL, PRIMARY KEY (event_key, region))
    PARTITION BY LIST (region);
CREATE TABLE kev_eu PARTITION OF kev FOR VALUES IN ('eu');
CREATE TABLE kev_us PARTITION OF kev FOR VALUES IN ('us');
SELECT ordering.attach('kev');
INSERT INTO kev (event_key, resource_id, region) VALUES ('a', 'r', 'eu'), ('b', 'r', 'us');
INSERT INTO kev (event_key, resource_id, region)
VALUES ('a', 'r', 'eu'), ('c', 'r', 'us'), ('b', 'r', 'us'), ('d', 'r', 'eu')
    ON CONFLICT DO NOTHING;
CREATE FUNCTION zz_drop_us() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RETURN CASE WHEN NEW.event_key LIKE 'drop%' THEN NULL ELSE NEW END;
END
$$;
CREATE TRIGGER zz_drop_us BEFORE INSERT ON kev_us FOR EACH ROW EXECUTE FUNCTION zz_drop_us();
INSERT INTO kev (event_key, resource_id, region)
VALUES ('drop1', 'r', 'us'), ('e', 'r', 'eu'), ('f', 'r', 'us'), ('drop2', 'r', 'us');
INSERT INTO kev_us (event_key, resource_id, region) VALUES ('drop3', 'r', 'us'), ('g', 'r', 'us');
SELECT tableoid::regclass AS part, event_key, seq FROM kev ORDER BY seq;
SELECT ordering.last_sequence('public.kev', 'r');

-------------------------------------------------------------------------------
-- Non-text resources are keyed the same under every session setting
-------------------------------------------------------------------------------

CREATE TABLE typed (d date, ts timestamptz, n numeric, b bytea, f float8,
                    sd bigint, sts bigint, sn bigint, sb bigint, sf bigint);
CREATE TABLE typed_d (d date NOT NULL, seq bigint);
CREATE TABLE typed_ts (ts timestamptz NOT NULL, seq bigint);
CREATE TABLE typed_n (n numeric NOT NULL, seq bigint);
CREATE TABLE typed_b (b bytea NOT NULL, seq bigint);
CREATE TABLE typed_f (f float8 NOT NULL, seq bigint);
SELECT ordering.attach('typed_d', 'd', 'seq'), ordering.attach('typed_ts', 'ts', 'seq'),
       ordering.attach('typed_n', 'n', 'seq'), ordering.attach('typed_b', 'b', 'seq'),
       ordering.attach('typed_f', 'f', 'seq');
SET DateStyle = 'ISO, YMD';
SET TimeZone = 'UTC';
SET extra_float_digits = 1;
SET bytea_output = 'hex';
INSERT INTO typed_d VALUES ('2026-11-30');
INSERT INTO typed_ts VALUES ('2026-11-30 12:00:00+00');
INSERT INTO typed_n VALUES (12.50);
INSERT INTO typed_b VALUES ('\x0102');
INSERT INTO typed_f VALUES (0.1);
SET DateStyle = 'SQL, DMY';
SET TimeZone = 'America/New_York';
SET extra_float_digits = -3;
SET bytea_output = 'escape';
INSERT INTO typed_d VALUES ('2026-11-30'::date);
INSERT INTO typed_ts VALUES ('2026-11-30 12:00:00+00'::timestamptz);
INSERT INTO typed_n VALUES (12.50);
INSERT INTO typed_b VALUES ('\x0102'::bytea);
INSERT INTO typed_f VALUES (0.1);
RESET DateStyle;
RESET TimeZone;
RESET extra_float_digits;
RESET bytea_output;
SELECT 'date' AS type, array_agg(seq ORDER BY seq) FROM typed_d
UNION ALL SELECT 'timestamptz', array_agg(seq ORDER BY seq) FROM typed_ts
UNION ALL SELECT 'numeric', array_agg(seq ORDER BY seq) FROM typed_n
UNION ALL SELECT 'bytea', array_agg(seq ORDER BY seq) FROM typed_b
UNION ALL SELECT 'float8', array_agg(seq ORDER BY seq) FROM typed_f;
SELECT stream, resource_id, last_seq FROM ordering.sequences
 WHERE stream LIKE 'public.typed%' ORDER BY 1;
SET DateStyle = 'German';
SELECT ordering.resource_key('2026-11-30'::date) AS key_of_date;
RESET DateStyle;
DROP TABLE typed;

-- 1.2: equal values are one resource where the type allows it: a numeric
-- without the trailing zeros of its fraction, a float zero of either sign.
INSERT INTO typed_n VALUES (12.5), (12.500) RETURNING n, seq;
INSERT INTO typed_f VALUES ('-0'), (0) RETURNING f, seq;
SELECT ordering.resource_key(1.50) AS numeric_key, ordering.resource_key(100.0) AS integral,
       ordering.resource_key('-0'::float8) AS negative_zero,
       ordering.resource_key('-0'::float4) AS float4_zero,
       ordering.resource_key('NaN'::numeric) AS nan;
-- Other types are keyed by their text: values that compare equal but
-- print differently (citext ignores case when comparing) are different
-- resources (docs/resource-keys.md).
CREATE EXTENSION citext;
CREATE TABLE typed_ci (c citext NOT NULL, seq bigint);
SELECT ordering.attach('typed_ci', 'c', 'seq');
INSERT INTO typed_ci VALUES ('Acct-1'), ('acct-1') RETURNING c, seq;
DROP TABLE typed_ci;
DROP EXTENSION citext;
-- A type whose text depends on a setting the key does not fix is refused
-- at attach() and at every insert: money (lc_monetary), and the reg* types
-- that print names by search_path, also inside an array.
CREATE TABLE typed_m (m money NOT NULL, seq bigint);
\set VERBOSITY default
SELECT ordering.attach('typed_m', 'm', 'seq');
\set VERBOSITY terse
CREATE DOMAIN price AS money;
CREATE TABLE typed_r (r regclass, a regtype[], p price, seq bigint);
SELECT ordering.attach('typed_r', 'r', 'seq');
\echo :SQLSTATE
SELECT ordering.attach('typed_r', 'a', 'seq');
\echo :SQLSTATE
SELECT ordering.attach('typed_r', 'p', 'seq');
\echo :SQLSTATE
SELECT ordering.resource_key(1::money);
\echo :SQLSTATE
-- (a table attached with another type, and then altered)
CREATE TABLE typed_m2 (m numeric NOT NULL, seq bigint);
SELECT ordering.attach('typed_m2', 'm', 'seq');
ALTER TABLE typed_m2 ALTER COLUMN m TYPE money;
INSERT INTO typed_m2 (m) VALUES (1);
\echo :SQLSTATE
DROP TABLE typed_m, typed_r, typed_m2;
DROP DOMAIN price;

-------------------------------------------------------------------------------
-- Rename, detach, attach: the stream continues; detach says which it was
-------------------------------------------------------------------------------

CREATE TABLE renamed (r text, s bigint);
SELECT ordering.attach('renamed', 'r', 's');
INSERT INTO renamed (r) VALUES ('x'), ('x'), ('x');
ALTER TABLE renamed RENAME TO renamed_again;
SELECT ordering.detach('renamed_again');
SELECT ordering.attach('renamed_again', 'r', 's');
INSERT INTO renamed_again (r) VALUES ('x') RETURNING s;
SELECT tbl, stream, attached FROM ordering.attachments WHERE stream = 'public.renamed';
-- A dropped table leaves the registry: its OID cannot be confused with a
-- later table's.
DROP TABLE renamed_again;
SELECT count(*) AS left_behind FROM ordering.attachments WHERE stream = 'public.renamed';

-------------------------------------------------------------------------------
-- Generated columns, copies of the trigger, disabled companions
-------------------------------------------------------------------------------

CREATE TABLE gen (a text, r text GENERATED ALWAYS AS (a || '!') STORED, s bigint);
SELECT ordering.attach('gen', 'r', 's');
\echo :SQLSTATE

-- The sequencing trigger on a relation that is neither an attached table
-- nor a partition of one (as a tool that copies triggers to shards would
-- make) refuses to count numbers of its own.
CREATE TABLE shard_copy (resource_id text, seq bigint);
SELECT ordering_internal.create_sequencing_triggers('shard_copy', 'resource_id', 'seq', 'public.ev');
INSERT INTO shard_copy (resource_id) VALUES ('r');
\echo :SQLSTATE
DROP TABLE shard_copy;
-- A lone sequencing trigger, created by hand on a table that was never
-- attached, is refused as not attached (not as "attached incompletely").
CREATE TABLE lone (resource_id text, seq bigint);
CREATE TRIGGER ordering_sequence BEFORE INSERT ON lone FOR EACH ROW
    EXECUTE FUNCTION ordering.sequence_trigger('resource_id', 'seq');
INSERT INTO lone (resource_id) VALUES ('r');
\echo :SQLSTATE
DROP TABLE lone;

-- Attaching a table that Citus manages in a way ordering cannot read is
-- refused (a stand-in for Citus's catalog table here, without its columns;
-- test/t/040_citus_producer.pl attaches real distributed tables).
SET allow_system_table_mods = on;
CREATE TABLE pg_catalog.pg_dist_partition (logicalrelid regclass);
RESET allow_system_table_mods;
CREATE TABLE distributed (resource_id text, seq bigint);
INSERT INTO pg_catalog.pg_dist_partition VALUES ('distributed');
SELECT ordering.attach('distributed');
\echo :SQLSTATE
SET allow_system_table_mods = on;
DROP TABLE pg_catalog.pg_dist_partition;
RESET allow_system_table_mods;
DROP TABLE distributed;

-- Disabling one companion but not the sequencing trigger is refused: stored
-- rows would give their numbers back.
ALTER TABLE cv DISABLE TRIGGER ordering_sequence_stored;
INSERT INTO cv (account) VALUES ('a');
\echo :SQLSTATE
ALTER TABLE cv ENABLE TRIGGER ordering_sequence_stored;
-- Disabling the sequencing trigger alone is refused too, by every statement
-- that inserts: nothing of ours would number the rows, stored with no
-- number or a number repeated.
CREATE TABLE half (account text, version bigint UNIQUE);
SELECT ordering.attach('half', 'account', 'version');
INSERT INTO half (account) VALUES ('a');
ALTER TABLE half DISABLE TRIGGER ordering_sequence;
INSERT INTO half (account) VALUES ('a');
\echo :SQLSTATE
INSERT INTO half (account, version) VALUES ('a', 1) ON CONFLICT DO NOTHING;
\echo :SQLSTATE
INSERT INTO half (account) SELECT 'a' FROM generate_series(1, 2);
\echo :SQLSTATE
WITH w AS (INSERT INTO half (account) VALUES ('a') RETURNING 1) SELECT count(*) FROM w;
\echo :SQLSTATE
MERGE INTO half USING (VALUES ('a')) AS v (account) ON false
    WHEN NOT MATCHED THEN INSERT (account) VALUES (v.account);
\echo :SQLSTATE
-- (from a program: psql 16 and later do not swallow the data lines of a
-- COPY FROM stdin refused before it starts)
COPY half (account) FROM PROGRAM 'echo a';
\echo :SQLSTATE
-- a statement that does not insert is not refused
DELETE FROM half WHERE version > 1;
ALTER TABLE half ENABLE TRIGGER ordering_sequence;
SELECT account, version FROM half ORDER BY version;
DROP TABLE half;
DELETE FROM ordering.sequences WHERE stream = 'public.half';
-- The same on a partition, for the statements that insert through its
-- partitioned table: the partition a row goes to is chosen row by row, so
-- the statement is refused whichever partitions its rows would go to.
CREATE TABLE half_p (account text, version bigint) PARTITION BY LIST (account);
CREATE TABLE half_pa PARTITION OF half_p FOR VALUES IN ('a');
CREATE TABLE half_pb PARTITION OF half_p FOR VALUES IN ('b');
SELECT ordering.attach('half_p', 'account', 'version');
INSERT INTO half_p (account) VALUES ('a'), ('b');
ALTER TABLE half_pb DISABLE TRIGGER ordering_sequence;
INSERT INTO half_p (account) VALUES ('b');
\echo :SQLSTATE
INSERT INTO half_p (account) VALUES ('a');
\echo :SQLSTATE
INSERT INTO half_p (account) SELECT 'b' FROM generate_series(1, 2);
\echo :SQLSTATE
COPY half_p (account) FROM PROGRAM 'echo b';
\echo :SQLSTATE
-- into the partition that is whole, directly: its own triggers are whole
INSERT INTO half_pa (account) VALUES ('a');
-- a partition attached later, incompletely, is seen by the next statement
ALTER TABLE half_pb ENABLE TRIGGER ordering_sequence;
INSERT INTO half_p (account) VALUES ('b');
CREATE TABLE half_pc (account text, version bigint);
ALTER TABLE half_p ATTACH PARTITION half_pc FOR VALUES IN ('c');
ALTER TABLE half_pc DISABLE TRIGGER ordering_sequence;
INSERT INTO half_p (account) VALUES ('c');
\echo :SQLSTATE
ALTER TABLE half_pc ENABLE TRIGGER ordering_sequence;
INSERT INTO half_p (account) VALUES ('c');
SELECT account, version FROM half_p ORDER BY account, version;
-- a partition of a partition whose trigger is disabled after rows went
-- through: seen by the next statement, whichever partition it writes
CREATE TABLE half_pd PARTITION OF half_p FOR VALUES IN ('d')
    PARTITION BY LIST (account);
CREATE TABLE half_pd1 PARTITION OF half_pd FOR VALUES IN ('d');
INSERT INTO half_p (account) VALUES ('d');
ALTER TABLE half_pd1 DISABLE TRIGGER ordering_sequence;
INSERT INTO half_p (account) VALUES ('a');
\echo :SQLSTATE
-- detached (its triggers go with it), it no longer counts
ALTER TABLE half_pd DETACH PARTITION half_pd1;
INSERT INTO half_p (account) VALUES ('a');
DROP TABLE half_pd1;
DROP TABLE half_p;
DELETE FROM ordering.sequences WHERE stream = 'public.half_p';
-- All of them together is the user's choice: nothing is sequenced.
ALTER TABLE cv DISABLE TRIGGER USER;
INSERT INTO cv (account, version) VALUES ('z', 7);
ALTER TABLE cv ENABLE TRIGGER USER;
SELECT ordering.last_sequence('public.cv', 'z');

-------------------------------------------------------------------------------
-- Read-only transactions: every write is refused with 25006
-------------------------------------------------------------------------------

BEGIN READ ONLY;
SELECT ordering.emit('ro', 'x', '{}');
\echo :SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT * FROM ordering.deliver('ro', 'r', 5, '{}');
\echo :SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT * FROM ordering.deliver('ro', 'r', 1, '{}');
\echo :SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT ordering.apply_if_newer('ro', 'r', 1);
\echo :SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT * FROM ordering.skip_gap('ro', 'r');
\echo :SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT ordering.next_sequence('ro', 'r');
\echo :SQLSTATE
ROLLBACK;
-- reads work
BEGIN READ ONLY;
SELECT ordering.position('ro', 'r'), ordering.last_sequence('ro', 'r');
ROLLBACK;
SELECT count(*) AS written FROM ordering.parked WHERE consumer = 'ro';

-------------------------------------------------------------------------------
-- Counter rows inserted by statements merge, keeping the higher value
-------------------------------------------------------------------------------

INSERT INTO ordering.sequences VALUES ('loaded', 'r', 5), ('loaded', 'r', 3);
INSERT INTO ordering.sequences VALUES ('loaded', 'r', 7);
SELECT last_seq FROM ordering.sequences WHERE stream = 'loaded';
SELECT ordering.next_sequence('loaded', 'r');

DROP TABLE ev, cv, pev, pev_us, typed_d, typed_ts, typed_n, typed_b, typed_f, gen, pev_mv, mv_plain;
DROP FUNCTION zz_filter(), zz_sneak(), pev_mv_refuse(), pev_mv_keep();
-- (leave no counters behind for the tests that follow)
DELETE FROM ordering.sequences
 WHERE stream IN ('public.ev', 'public.cv', 'public.pev', 'public.typed_d',
                  'public.typed_ts', 'public.typed_n', 'public.typed_b',
                  'public.typed_f', 'public.renamed', 'loaded', 'public.pev_mv',
                  'public.mv_plain')
    OR resource_id = 'copy-to';
DELETE FROM ordering.outbox WHERE resource_id = 'copy-to';
