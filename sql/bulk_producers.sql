-- Bulk producers: a statement that inserts many rows takes each resource's
-- counter at its first row of it, holds it in memory for the later rows,
-- and writes it once when the statement ends.  Every rule of the
-- single-row path still holds: no gap, no repeat, savepoints, errors in the
-- middle of a statement, next_sequence() and last_sequence() inside the
-- statement's own triggers and functions, nested statements, ON CONFLICT,
-- partitions, COPY, two-phase commit, read-only transactions, restore mode.
-- (Concurrency: test/specs/bulk_concurrent.spec; crashes:
-- test/t/031_bulk_crash.pl.)
\set VERBOSITY terse

CREATE TABLE bk (id bigserial PRIMARY KEY, resource_id text NOT NULL,
                 seq bigint NOT NULL, body text);
SELECT ordering.attach('bk');
-- Every resource of bk (or of those named like the pattern) is 1..n, and
-- its counter row, read with SQL, says n.
CREATE FUNCTION bk_check(pattern text DEFAULT '%')
RETURNS TABLE (resources bigint, events numeric, gapless boolean, counters_written boolean)
LANGUAGE sql AS $$
    SELECT count(*), sum(t.n), bool_and(t.ok), bool_and(s.last_seq IS NOT DISTINCT FROM t.n)
      FROM (SELECT resource_id, count(*) AS n,
                   max(seq) = count(*) AND count(DISTINCT seq) = count(*) AS ok
              FROM bk WHERE resource_id LIKE pattern GROUP BY 1) t
      LEFT JOIN ordering.sequences s
             ON s.stream = 'public.bk' AND s.resource_id = t.resource_id
$$;

-------------------------------------------------------------------------------
-- One counter write per resource per statement
-------------------------------------------------------------------------------

INSERT INTO bk (resource_id, body)
SELECT 'a' || (g % 10), 'x' FROM generate_series(1, 1000) g;
SELECT * FROM bk_check('a%');
SELECT resource_id, min(seq), max(seq) FROM bk WHERE resource_id IN ('a1', 'a2')
 GROUP BY 1 ORDER BY 1;

-- The WAL shows the writes of ordering.sequences: a new counter row and one
-- write with its final value per resource, where every row wrote the
-- counter before.
CREATE EXTENSION pg_walinspect;
SET synchronous_commit = on;	-- the records are read once flushed
BEGIN;
SELECT pg_current_xact_id() AS xid, pg_current_wal_insert_lsn() AS lsn0 \gset
INSERT INTO bk (resource_id, body)
SELECT 'w' || (g % 5), 'x' FROM generate_series(1, 500) g;
COMMIT;
SELECT count(*) AS counter_writes
  FROM pg_get_wal_records_info(:'lsn0', pg_current_wal_flush_lsn())
 WHERE xid = :'xid'::xid8::text::xid AND resource_manager = 'Heap'
   AND block_ref LIKE '%/' || pg_relation_filenode('ordering.sequences') || ' %';
-- The next statement goes on from the counters written.
INSERT INTO bk (resource_id, body)
SELECT 'w' || (g % 5), 'x' FROM generate_series(1, 10) g;
SELECT * FROM bk_check('w%');

-- Multi-row VALUES, and a data-modifying WITH query that its statement
-- does not read to the end (its remaining rows are inserted when the
-- statement finishes).
INSERT INTO bk (resource_id, body) VALUES ('v', '1'), ('v', '2'), ('u', '1'), ('v', '3')
RETURNING resource_id, seq;
WITH ins AS (INSERT INTO bk (resource_id, body)
             SELECT 'v', g::text FROM generate_series(4, 8) g RETURNING seq)
SELECT seq FROM ins LIMIT 2;
SELECT * FROM bk_check('v');

-------------------------------------------------------------------------------
-- Savepoints and errors in the middle of a statement
-------------------------------------------------------------------------------

-- A function with an EXCEPTION block inserts an event of the resource from
-- inside the statement; every other call rolls its insert back.  The
-- numbers of rolled-back inserts go back; the sequence stays gapless.
CREATE FUNCTION insert_inner(r text, keep boolean) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        INSERT INTO bk (resource_id, body) VALUES (r, 'inner');
        IF NOT keep THEN
            RAISE EXCEPTION 'undo';
        END IF;
    EXCEPTION WHEN raise_exception THEN
        RETURN 'inner rolled back';
    END;
    RETURN 'inner kept';
END
$$;
INSERT INTO bk (resource_id, body)
SELECT 's', insert_inner('s', g % 2 = 1) FROM generate_series(1, 6) g;
SELECT seq, body FROM bk WHERE resource_id = 's' ORDER BY seq;
SELECT * FROM bk_check('s');

-- The same with savepoints nested three deep, and a rolled-back one that
-- took numbers after a released one.
CREATE FUNCTION insert_nested(r text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        INSERT INTO bk (resource_id, body) VALUES (r, 'level 1');
        BEGIN
            INSERT INTO bk (resource_id, body) VALUES (r, 'level 2, released');
        END;
        BEGIN
            INSERT INTO bk (resource_id, body)
            SELECT r, 'level 2, rolled back' FROM generate_series(1, 3);
            RAISE EXCEPTION 'undo';
        EXCEPTION WHEN raise_exception THEN
            NULL;
        END;
        INSERT INTO bk (resource_id, body) VALUES (r, 'level 1 again');
    END;
    RETURN 'outer';
END
$$;
INSERT INTO bk (resource_id, body)
SELECT 'n', insert_nested('n') FROM generate_series(1, 2) g;
SELECT seq, body FROM bk WHERE resource_id = 'n' ORDER BY seq;
SELECT * FROM bk_check('n');

-- A statement that fails after half its rows leaves nothing: its rows and
-- the numbers they took go back, and the counters are as before it.
INSERT INTO bk (resource_id, body)
SELECT 'f' || (g % 3), (1 / (50 - g))::text FROM generate_series(1, 100) g;
\echo :SQLSTATE
SELECT count(*) AS counters_left FROM ordering.sequences
 WHERE stream = 'public.bk' AND resource_id LIKE 'f%';
BEGIN;
INSERT INTO bk (resource_id, body)
SELECT 'f' || (g % 3), 'before' FROM generate_series(1, 6) g;
SAVEPOINT s;
INSERT INTO bk (resource_id, body)
SELECT 'f' || (g % 3), (1 / (50 - g))::text FROM generate_series(1, 100) g;
ROLLBACK TO s;
SELECT ordering.last_sequence('public.bk', 'f1');
INSERT INTO bk (resource_id, body)
SELECT 'f' || (g % 3), 'after' FROM generate_series(1, 6) g;
COMMIT;
SELECT * FROM bk_check('f%');
-- Caught by an EXCEPTION block: the same.
DO $$
BEGIN
    BEGIN
        INSERT INTO bk (resource_id, body)
        SELECT 'f' || (g % 3), (1 / (50 - g))::text FROM generate_series(1, 100) g;
    EXCEPTION WHEN division_by_zero THEN
        RAISE NOTICE 'caught';
    END;
    INSERT INTO bk (resource_id, body)
    SELECT 'f' || (g % 3), 'after the catch' FROM generate_series(1, 3) g;
END
$$;
SELECT * FROM bk_check('f%');

-------------------------------------------------------------------------------
-- next_sequence() and last_sequence() inside the statement
-------------------------------------------------------------------------------

-- In the statement's own triggers: a BEFORE trigger after ours and an
-- AFTER trigger log what last_sequence() says, and take a number of the
-- same resource with next_sequence() for some rows.  Everyone sees each
-- number handed out so far, and the numbers interleave without a gap.
CREATE TABLE bk_log (id serial, at text, resource_id text, seq bigint,
                     last_seq bigint, taken bigint);
CREATE FUNCTION zz_bk_probe() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.resource_id LIKE 't%' THEN
        INSERT INTO bk_log (at, resource_id, seq, last_seq, taken)
        VALUES (TG_WHEN, NEW.resource_id, NEW.seq,
                ordering.last_sequence('public.bk', NEW.resource_id),
                CASE WHEN NEW.body = 'take' THEN ordering.next_sequence('public.bk', NEW.resource_id) END);
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER zz_bk_before BEFORE INSERT ON bk FOR EACH ROW EXECUTE FUNCTION zz_bk_probe();
CREATE TRIGGER zz_bk_after AFTER INSERT ON bk FOR EACH ROW EXECUTE FUNCTION zz_bk_probe();
INSERT INTO bk (resource_id, body)
VALUES ('t1', 'plain'), ('t1', 'take'), ('t2', 'plain'), ('t1', 'plain'), ('t2', 'take'),
       ('t1', 'plain');
SELECT at, resource_id, seq, last_seq, taken FROM bk_log ORDER BY id;
SELECT resource_id, seq, body FROM bk WHERE resource_id LIKE 't%' ORDER BY resource_id, seq;
SELECT ordering.last_sequence('public.bk', 't1') AS t1, ordering.last_sequence('public.bk', 't2') AS t2;
DROP TRIGGER zz_bk_before ON bk;
DROP TRIGGER zz_bk_after ON bk;

-- In the statement's own expressions: a volatile function of the select
-- list sees the numbers of the rows before its own; the statement's
-- snapshot (RETURNING) sees none of its own, as before.
CREATE FUNCTION bk_last(r text) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    RETURN ordering.last_sequence('public.bk', r);
END
$$;
INSERT INTO bk (resource_id, body)
SELECT 'p', bk_last('p')::text FROM generate_series(1, 4)
RETURNING seq, body AS seen_before_it, ordering.last_sequence('public.bk', 'p') AS returning_sees;
-- The privilege a SQL read of ordering.sequences needs is checked even when
-- the number comes from memory: a role without SELECT on it is refused
-- inside the statement, where its counter is held, as outside.
CREATE ROLE regress_bk_no_select;
GRANT USAGE ON SCHEMA ordering TO regress_bk_no_select;
GRANT EXECUTE ON FUNCTION ordering.last_sequence(text, text) TO regress_bk_no_select;
CREATE FUNCTION bk_last_no_select(r text) RETURNS bigint LANGUAGE sql
    SECURITY DEFINER AS $$ SELECT ordering.last_sequence('public.bk', r) $$;
ALTER FUNCTION bk_last_no_select(text) OWNER TO regress_bk_no_select;
\set VERBOSITY sqlstate
SELECT bk_last_no_select('p');
INSERT INTO bk (resource_id, body)
SELECT 'p', CASE WHEN g = 2 THEN bk_last_no_select('p')::text END
  FROM generate_series(1, 2) g;
\set VERBOSITY terse
DROP FUNCTION bk_last_no_select(text);
REVOKE ALL ON SCHEMA ordering FROM regress_bk_no_select;
REVOKE ALL ON FUNCTION ordering.last_sequence(text, text) FROM regress_bk_no_select;
DROP ROLE regress_bk_no_select;
-- next_sequence() in the select list takes numbers between the rows'.
INSERT INTO bk (resource_id, body)
SELECT 'q', 'took ' || ordering.next_sequence('public.bk', 'q') FROM generate_series(1, 3)
RETURNING seq, body;
SELECT ordering.last_sequence('public.bk', 'q');
-- A plain SQL read of ordering.sequences inside the running statement sees
-- the counter as of the statement's first row of the resource (it is
-- written when the statement ends); last_sequence() sees every number.
CREATE FUNCTION bk_sql_read(r text) RETURNS text LANGUAGE sql AS $$
    SELECT (SELECT last_seq FROM ordering.sequences
             WHERE stream = 'public.bk' AND resource_id = r)
           || ' / ' || ordering.last_sequence('public.bk', r)
$$;
INSERT INTO bk (resource_id, body)
SELECT 'sql', bk_sql_read('sql') FROM generate_series(1, 3)
RETURNING seq, body AS sql_read_and_last_sequence_before_it;
SELECT bk_sql_read('sql') AS after_the_statement;
-- The same resource again: the counter row says 4, written at the
-- statement's first row of it, while last_sequence() says 4, then 5.
INSERT INTO bk (resource_id, body)
SELECT 'sql', bk_sql_read('sql') FROM generate_series(1, 3)
RETURNING seq, body AS sql_read_and_last_sequence_before_it;
-- In row triggers: BEFORE row triggers run while the statement holds the
-- counter; the AFTER row triggers of an INSERT fire once it has written its
-- counters.  A COPY fires its AFTER triggers inside itself, before a
-- statement's counters are written: a COPY into a table with AFTER triggers
-- of the user's holds no counter, and writes each row's as a single-row
-- INSERT does, so its triggers, BEFORE and AFTER, read what last_sequence()
-- says.
CREATE TABLE bk_reads (id serial, at text, via text, seen text);
CREATE FUNCTION zz_bk_reads() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.resource_id = 'rd' THEN
        INSERT INTO bk_reads (at, via, seen)
        VALUES (TG_WHEN, NEW.body, NEW.seq || ': ' || bk_sql_read('rd'));
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER zz_bk_reads_before BEFORE INSERT ON bk FOR EACH ROW EXECUTE FUNCTION zz_bk_reads();
CREATE TRIGGER zz_bk_reads_after AFTER INSERT ON bk FOR EACH ROW EXECUTE FUNCTION zz_bk_reads();
INSERT INTO bk (resource_id, body) SELECT 'rd', 'insert' FROM generate_series(1, 3);
COPY bk (resource_id, body) FROM STDIN;
rd	copy
rd	copy
rd	copy
\.
SELECT at, via, seen AS "seq: sql read / last_sequence()" FROM bk_reads ORDER BY id;
-- Without one, a COPY holds its counters: its BEFORE row triggers read the
-- counter row as its first row of the resource wrote it.
DROP TRIGGER zz_bk_reads_after ON bk;
TRUNCATE bk_reads;
COPY bk (resource_id, body) FROM STDIN;
rd	copy
rd	copy
rd	copy
\.
SELECT at, via, seen AS "seq: sql read / last_sequence()" FROM bk_reads ORDER BY id;
DROP TRIGGER zz_bk_reads_before ON bk;
-- An AFTER STATEMENT trigger of a COPY, and statements in it, read the
-- counters as last_sequence() does (1.2 read them before the COPY's were
-- written).
CREATE FUNCTION zz_bk_reads_statement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bk_reads (at, via, seen) VALUES (TG_WHEN, TG_LEVEL, bk_sql_read('rd'));
    RETURN NULL;
END
$$;
CREATE TRIGGER zz_bk_reads_statement AFTER INSERT ON bk
    FOR EACH STATEMENT EXECUTE FUNCTION zz_bk_reads_statement();
TRUNCATE bk_reads;
COPY bk (resource_id, body) FROM STDIN;
rd	copy
rd	copy
rd	copy
\.
SELECT at, via, seen AS "sql read / last_sequence()" FROM bk_reads ORDER BY id;
DROP TRIGGER zz_bk_reads_statement ON bk;
DROP FUNCTION zz_bk_reads_statement();
-- And so do the AFTER row triggers that a partition has of its own, on a
-- COPY into the partitioned table.
CREATE TABLE bkp (resource_id text NOT NULL, seq bigint, body text) PARTITION BY LIST (resource_id);
CREATE TABLE bkp_rd PARTITION OF bkp FOR VALUES IN ('rd');
SELECT ordering.attach('bkp');
CREATE FUNCTION zz_bkp_reads() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bk_reads (at, via, seen)
    VALUES (TG_WHEN, NEW.body, NEW.seq || ': ' ||
            (SELECT last_seq FROM ordering.sequences
              WHERE stream = 'public.bkp' AND resource_id = 'rd')
            || ' / ' || ordering.last_sequence('public.bkp', 'rd'));
    RETURN NULL;
END
$$;
CREATE TRIGGER zz_bkp_reads AFTER INSERT ON bkp_rd FOR EACH ROW EXECUTE FUNCTION zz_bkp_reads();
TRUNCATE bk_reads;
COPY bkp (resource_id, body) FROM STDIN;
rd	copy
rd	copy
\.
SELECT at, via, seen AS "seq: sql read / last_sequence()" FROM bk_reads ORDER BY id;
DROP TABLE bkp;
DROP FUNCTION zz_bkp_reads();
DROP TABLE bk_reads;
DROP FUNCTION zz_bk_reads();

-------------------------------------------------------------------------------
-- Nested statements: a trigger that inserts into the same table
-------------------------------------------------------------------------------

CREATE FUNCTION zz_bk_echo() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.body = 'echo' THEN
        INSERT INTO bk (resource_id, body) VALUES (NEW.resource_id, 'echoed after ' || NEW.seq);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER zz_bk_echo AFTER INSERT ON bk FOR EACH ROW EXECUTE FUNCTION zz_bk_echo();
INSERT INTO bk (resource_id, body)
SELECT 'e', CASE WHEN g % 2 = 0 THEN 'echo' ELSE 'plain' END FROM generate_series(1, 4) g;
SELECT seq, body FROM bk WHERE resource_id = 'e' ORDER BY seq;
-- ... and one that inserts from a BEFORE trigger, before its own row is
-- numbered by ours (zz_ sorts after ordering_sequence: ours first).
DROP TRIGGER zz_bk_echo ON bk;
CREATE FUNCTION aa_bk_echo() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.body = 'echo' THEN
        INSERT INTO bk (resource_id, body) VALUES (NEW.resource_id, 'inserted before');
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER aa_bk_echo BEFORE INSERT ON bk FOR EACH ROW EXECUTE FUNCTION aa_bk_echo();
INSERT INTO bk (resource_id, body)
SELECT 'e2', CASE WHEN g % 2 = 0 THEN 'echo' ELSE 'plain' END FROM generate_series(1, 4) g;
SELECT seq, body FROM bk WHERE resource_id = 'e2' ORDER BY seq;
DROP TRIGGER aa_bk_echo ON bk;
SELECT * FROM bk_check('e%');

-------------------------------------------------------------------------------
-- ON CONFLICT, partitions, COPY
-------------------------------------------------------------------------------

-- Skipped rows in a bulk statement give their numbers back.
CREATE TABLE bk_keyed (event_key text PRIMARY KEY, resource_id text NOT NULL,
                       seq bigint NOT NULL);
SELECT ordering.attach('bk_keyed');
INSERT INTO bk_keyed (event_key, resource_id)
SELECT 'k' || g, 'r' || (g % 3) FROM generate_series(1, 30, 2) g;
INSERT INTO bk_keyed (event_key, resource_id)
SELECT 'k' || g, 'r' || (g % 3) FROM generate_series(1, 30) g
ON CONFLICT (event_key) DO NOTHING;
SELECT resource_id, count(*), max(seq), count(DISTINCT seq) FROM bk_keyed GROUP BY 1 ORDER BY 1;
SELECT resource_id, last_seq FROM ordering.sequences WHERE stream = 'public.bk_keyed' ORDER BY 1;
DROP TABLE bk_keyed;

-- Rows routed to partitions share their resources' counters; rows moved
-- between partitions by UPDATE keep their numbers.
CREATE TABLE bk_parts (resource_id text NOT NULL, seq bigint NOT NULL, region text NOT NULL)
    PARTITION BY LIST (region);
CREATE TABLE bk_parts_eu PARTITION OF bk_parts FOR VALUES IN ('eu');
CREATE TABLE bk_parts_us PARTITION OF bk_parts FOR VALUES IN ('us');
SELECT ordering.attach('bk_parts');
INSERT INTO bk_parts (resource_id, region)
SELECT 'r' || (g % 2), CASE WHEN g % 3 = 0 THEN 'us' ELSE 'eu' END FROM generate_series(1, 12) g;
UPDATE bk_parts SET region = 'us' WHERE region = 'eu' AND seq % 2 = 0;
INSERT INTO bk_parts (resource_id, region)
SELECT 'r' || (g % 2), 'eu' FROM generate_series(1, 4) g;
SELECT resource_id, array_agg(seq ORDER BY seq) AS seqs,
       array_agg(tableoid::regclass ORDER BY seq) AS parts
  FROM bk_parts GROUP BY 1 ORDER BY 1;
SELECT resource_id, last_seq FROM ordering.sequences WHERE stream = 'public.bk_parts' ORDER BY 1;
DROP TABLE bk_parts;

-- COPY: numbers assigned, and supplied numbers asserted, row by row.
COPY bk (resource_id, body) FROM STDIN;
c1	x
c2	x
c1	x
c1	x
c2	x
\.
\set VERBOSITY sqlstate
COPY bk (resource_id, seq, body) FROM STDIN;
c1	4	supplied
c3	1	supplied
c1	6	supplied
\.
\set VERBOSITY terse
COPY bk (resource_id, seq, body) FROM STDIN;
c1	4	supplied
c3	1	supplied
c1	5	supplied
c3	2	supplied
\.
SELECT resource_id, array_agg(seq ORDER BY seq) FROM bk WHERE resource_id LIKE 'c_' GROUP BY 1 ORDER BY 1;
SELECT * FROM bk_check('c_');

-------------------------------------------------------------------------------
-- Two-phase commit, read-only transactions, restore mode
-------------------------------------------------------------------------------

BEGIN;
INSERT INTO bk (resource_id, body) SELECT 'x' || (g % 2), 'x' FROM generate_series(1, 6) g;
PREPARE TRANSACTION 'bulk';
SELECT count(*) AS before_commit FROM ordering.sequences
 WHERE stream = 'public.bk' AND resource_id LIKE 'x_';
COMMIT PREPARED 'bulk';
SELECT * FROM bk_check('x_');

BEGIN READ ONLY;
INSERT INTO bk (resource_id, body) SELECT 'ro', 'x' FROM generate_series(1, 3);
\echo :SQLSTATE
ROLLBACK;

-- During a restore rows keep the numbers they carry, and no counter is
-- written.
SET ordering.restoring = on;
INSERT INTO bk (resource_id, seq, body) SELECT 'h', g, 'history' FROM generate_series(1, 5) g;
RESET ordering.restoring;
SELECT count(*) AS rows, ordering.last_sequence('public.bk', 'h') AS counter
  FROM bk WHERE resource_id = 'h';
DELETE FROM bk WHERE resource_id = 'h';

-------------------------------------------------------------------------------
-- More resources than the statement may hold in memory
-------------------------------------------------------------------------------

-- Beyond work_mem * hash_mem_multiplier the statement writes the counters of
-- further resources row by row, as a single-row INSERT does.
SET work_mem = '64kB';
SET hash_mem_multiplier = 1;
INSERT INTO bk (resource_id, body)
SELECT 'm' || (g % 3000), 'x' FROM generate_series(1, 9000) g;
RESET work_mem;
RESET hash_mem_multiplier;
SELECT * FROM bk_check('m%');

DROP EXTENSION pg_walinspect;
DROP TABLE bk, bk_log;
DROP FUNCTION bk_check(text), insert_inner(text, boolean), insert_nested(text),
    zz_bk_probe(), bk_last(text), bk_sql_read(text), zz_bk_echo(), aa_bk_echo();
DELETE FROM ordering.sequences WHERE stream IN ('public.bk', 'public.bk_keyed', 'public.bk_parts');
