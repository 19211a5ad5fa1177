-- ordering.check(): nothing on a consistent database; each kind of
-- inconsistency, planted by hand in a transaction that is rolled back
-- afterwards, is reported.  Runs in a database of its own so that no other
-- test's rows are judged.
\set VERBOSITY terse
CREATE DATABASE ordering_check;
\c ordering_check
CREATE EXTENSION ordering;

-------------------------------------------------------------------------------
-- A healthy database, made by the extension's own functions: producers on
-- the outbox, on a table keyed by an integer and on a partitioned table;
-- step and state consumers with events parked, drained and skipped; gap
-- requests written by a sweep; a dead letter with an event behind it.
-------------------------------------------------------------------------------
SELECT pg_catalog.count(ordering.emit('r' || (i % 5), 'e', '{}'))
  FROM pg_catalog.generate_series(1, 40) i;
CREATE TABLE accounts_log (id serial PRIMARY KEY, account integer NOT NULL, version bigint);
SELECT ordering.attach('accounts_log', 'account', 'version');
INSERT INTO accounts_log (account) SELECT i % 3 FROM pg_catalog.generate_series(1, 10) i;
CREATE TABLE events (region text NOT NULL, n bigint) PARTITION BY LIST (region);
CREATE TABLE events_eu PARTITION OF events FOR VALUES IN ('eu');
CREATE TABLE events_us PARTITION OF events FOR VALUES IN ('us');
SELECT ordering.attach('events', 'region', 'n', 'regional');
INSERT INTO events (region) VALUES ('eu'), ('us'), ('eu');
SELECT * FROM ordering.attached_tables ORDER BY table_name::text;

SELECT pg_catalog.count(*) FROM ordering.deliver('ledger', 'a', 1, '{}');
SELECT pg_catalog.count(*) FROM ordering.deliver('ledger', 'a', 3, '{}');
SELECT pg_catalog.count(*) FROM ordering.deliver('ledger', 'a', 5, '{}');
SELECT pg_catalog.count(*) FROM ordering.deliver('ledger', 'b', 4, '{}');
SELECT pg_catalog.count(*) FROM ordering.deliver('ledger', 'c', 2, '{}');
SELECT pg_catalog.count(*) FROM ordering.deliver('ledger', 'c', 1, '{}');
SELECT pg_catalog.count(*) FROM ordering.deliver('ledger', 'd', 3, '{}');
SELECT pg_catalog.count(*) FROM ordering.skip_gap('ledger', 'd');
SELECT ordering.apply_if_newer('state', 'a', 7), ordering.apply_if_newer('state', 'a', 2);
UPDATE ordering.parked SET parked_at = parked_at - interval '1 hour';
SELECT consumer, resource_id, missing_from, missing_to FROM ordering.sweep_gaps() ORDER BY 1, 2;
SELECT ordering.apply_if_newer('ledger', 'e', 3);
SELECT ordering.dead_letter('ledger', 'e', 4, '{}', 'poison');
SELECT pg_catalog.count(*) FROM ordering.deliver('ledger', 'e', 5, '{}');

SELECT * FROM ordering.check();

-------------------------------------------------------------------------------
-- Each inconsistency, planted by hand
-------------------------------------------------------------------------------
-- a counter below the highest seq of its table (the next event would get a
-- number that exists), and a counter that is missing
BEGIN;
UPDATE ordering.sequences SET last_seq = 6 WHERE stream = 'ordering.outbox' AND resource_id = 'r1';
DELETE FROM ordering.sequences WHERE stream = 'public.accounts_log' AND resource_id = '2';
UPDATE ordering.sequences SET last_seq = 1 WHERE stream = 'regional' AND resource_id = 'eu';
SELECT * FROM ordering.check();
ROLLBACK;

-- a sequencing trigger that is disabled
BEGIN;
ALTER TABLE accounts_log DISABLE TRIGGER ordering_sequence;
SELECT * FROM ordering.check();
ROLLBACK;

-- a hole in a table's numbers is no violation: next_sequence() may take
-- numbers of the table's stream (docs/anti-entropy.md)
BEGIN;
SELECT ordering.next_sequence('public.accounts_log', '1');
INSERT INTO accounts_log (account) VALUES (1) RETURNING version;
SELECT * FROM ordering.check();
ROLLBACK;

-- parked events at or below the position, and one that should have drained
BEGIN;
INSERT INTO ordering.parked (consumer, resource_id, seq, payload)
VALUES ('ledger', 'a', 1, '{}'), ('ledger', 'c', 2, '{}'), ('ledger', 'b', 1, '{}'),
       ('ledger', 'c', 3, '{}');
SELECT * FROM ordering.check();
ROLLBACK;

-- gap requests: nothing parked, a range already applied, an empty range
BEGIN;
INSERT INTO ordering.gap_requests (consumer, resource_id, missing_from, missing_to, parked_count,
                                   first_parked_at, detected_at, last_requested_at, attempts)
VALUES ('ledger', 'c', 3, 4, 1, now(), now(), now(), 1);
UPDATE ordering.gap_requests SET missing_to = 1 WHERE resource_id = 'a';
UPDATE ordering.gap_requests SET missing_from = 4, missing_to = 3 WHERE resource_id = 'b';
SELECT * FROM ordering.check();
ROLLBACK;

-- dead letters: one at or below its position (so the event parked behind
-- it looks ready to drain too), one whose event is also parked
BEGIN;
UPDATE ordering.positions SET position = 4 WHERE consumer = 'ledger' AND resource_id = 'e';
INSERT INTO ordering.dead_letter_events (consumer, resource_id, seq, message)
VALUES ('ledger', 'a', 5, 'poison');
SELECT * FROM ordering.check();
ROLLBACK;

-- the summary of parked events kept with a position: deliver() keeps it
-- (no report above for 'f'), a wrong count or range is reported, and -1
-- ("not known") never is
BEGIN;
SELECT pg_catalog.count(*) FROM ordering.deliver('ledger', 'f', 3, '{}');
SELECT pg_catalog.count(*) FROM ordering.deliver('ledger', 'f', 5, '{}');
SELECT parked_count, parked_lowest, parked_highest FROM ordering.positions
 WHERE consumer = 'ledger' AND resource_id = 'f';
SELECT * FROM ordering.check();
UPDATE ordering.positions SET parked_count = 3 WHERE consumer = 'ledger' AND resource_id = 'f';
SELECT * FROM ordering.check();
UPDATE ordering.positions SET parked_count = 2, parked_highest = 9
 WHERE consumer = 'ledger' AND resource_id = 'f';
SELECT * FROM ordering.check();
UPDATE ordering.positions SET parked_count = -1 WHERE consumer = 'ledger' AND resource_id = 'f';
SELECT * FROM ordering.check();
ROLLBACK;

-- the block of a resource against its dead letter ('e' is blocked at 4 by
-- its dead letter): the dead letter deleted (the resource stalls with
-- nothing shown), the block cleared while the dead letter stays, another
-- seq, a block without any dead letter, the blocked resource's position
-- row deleted
BEGIN;
DELETE FROM ordering.dead_letter_events WHERE consumer = 'ledger' AND resource_id = 'e';
SELECT * FROM ordering.check();
ROLLBACK;
BEGIN;
UPDATE ordering.positions SET blocked_at = NULL WHERE consumer = 'ledger' AND resource_id = 'e';
UPDATE ordering.positions SET blocked_at = 9 WHERE consumer = 'ledger' AND resource_id = 'a';
SELECT * FROM ordering.check();
ROLLBACK;
BEGIN;
UPDATE ordering.positions SET blocked_at = 5 WHERE consumer = 'ledger' AND resource_id = 'e';
SELECT * FROM ordering.check();
ROLLBACK;
BEGIN;
DELETE FROM ordering.positions WHERE consumer = 'ledger' AND resource_id = 'e';
SELECT * FROM ordering.check();
ROLLBACK;

-- attached tables whose triggers are not as attach() made them: the
-- sequencing trigger dropped, a companion disabled, and a sequencing
-- trigger attach() never registered
BEGIN;
DROP TRIGGER ordering_sequence ON accounts_log;
ALTER TABLE events DISABLE TRIGGER ordering_sequence_guard;
CREATE TABLE lone (resource_id text, seq bigint);
CREATE TRIGGER ordering_sequence BEFORE INSERT ON lone FOR EACH ROW
    EXECUTE FUNCTION ordering.sequence_trigger('resource_id', 'seq');
SELECT * FROM ordering.check();
ROLLBACK;

-- a resource that holds a number twice (stored while the triggers were off)
BEGIN;
ALTER TABLE accounts_log DISABLE TRIGGER USER;
INSERT INTO accounts_log (account, version) VALUES (1, 2), (1, 3);
ALTER TABLE accounts_log ENABLE TRIGGER USER;
SELECT * FROM ordering.check();
ROLLBACK;

-- an attached table whose columns changed is reported, and the others are
-- checked all the same (1.1 failed with 42703): a renamed sequence column
-- (with a counter behind elsewhere), a dropped resource column, a retyped
-- sequence column
BEGIN;
ALTER TABLE accounts_log RENAME COLUMN version TO v;
UPDATE ordering.sequences SET last_seq = 1 WHERE stream = 'regional' AND resource_id = 'eu';
SELECT * FROM ordering.check();
ROLLBACK;
BEGIN;
ALTER TABLE accounts_log DROP COLUMN account;
SELECT * FROM ordering.check();
ROLLBACK;
BEGIN;
ALTER TABLE accounts_log ALTER COLUMN version TYPE numeric;
SELECT * FROM ordering.check();
ROLLBACK;
-- so does post_restore(): it names the table and raises every other counter
BEGIN;
ALTER TABLE accounts_log RENAME COLUMN version TO v;
DELETE FROM ordering.sequences WHERE stream = 'regional';
SELECT ordering.post_restore();
SELECT resource_id, last_seq FROM ordering.sequences WHERE stream = 'regional' ORDER BY 1;
ROLLBACK;

-- a statistics gauge that does not match its table: ordering.stats is
-- given a wrong parked_current (the view is rebuilt from its own definition)
BEGIN;
DO $$
DECLARE
    cols text;
BEGIN
    SELECT pg_catalog.string_agg(CASE WHEN a.attname = 'parked_current'
                                      THEN 's.parked_current + 1 AS parked_current'
                                      ELSE pg_catalog.format('s.%I', a.attname) END,
                                 ', ' ORDER BY a.attnum)
      INTO cols
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = 'ordering.stats'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
    EXECUTE pg_catalog.format('CREATE OR REPLACE VIEW ordering.stats AS SELECT %s FROM (%s) s', cols,
                              pg_catalog.rtrim(pg_catalog.pg_get_viewdef('ordering.stats'::regclass), ';'));
END
$$;
SELECT * FROM ordering.check();
ROLLBACK;

-------------------------------------------------------------------------------
-- Options for huge databases
-------------------------------------------------------------------------------
BEGIN;
-- c is at 2: 1 and 2 are not ahead, 3 should have drained
INSERT INTO ordering.parked (consumer, resource_id, seq, payload)
SELECT 'ledger', 'c', s, '{}' FROM pg_catalog.generate_series(1, 3) s;
UPDATE ordering.sequences SET last_seq = 1 WHERE stream = 'ordering.outbox';
-- at most n rows of each kind (for each attached table)
SELECT * FROM ordering.check(max_per_kind => 1);
SELECT * FROM ordering.check(max_per_kind => 0);
-- a sample of no block finds nothing in the tables it starts from
SELECT * FROM ordering.check(sample_percent => 0);
-- a full sample finds everything
SELECT pg_catalog.count(*) FROM ordering.check(sample_percent => 100);
ROLLBACK;
SELECT * FROM ordering.check(sample_percent => -1);
SELECT * FROM ordering.check(sample_percent => 100.5);
SELECT * FROM ordering.check(sample_percent => 'NaN');
SELECT * FROM ordering.check(sample_percent => NULL);
SELECT * FROM ordering.check(max_per_kind => -1);

-------------------------------------------------------------------------------
-- A role that may not read an attached table is warned that it was not
-- checked; a hostile search_path changes nothing.
-------------------------------------------------------------------------------
CREATE ROLE ordering_check_reader;
GRANT USAGE ON SCHEMA ordering TO ordering_check_reader;
GRANT SELECT ON ordering.sequences, ordering.positions, ordering.parked, ordering.gap_requests,
    ordering.dead_letter_events, ordering.stats, ordering.attached_tables, ordering.attachments,
    ordering.outbox TO ordering_check_reader;
GRANT SELECT ON events TO ordering_check_reader;
GRANT EXECUTE ON FUNCTION ordering.check(double precision, bigint),
    ordering_internal.consumer_statistics(), ordering_internal.stats_reset_time(),
    ordering_internal.distributed_consumer_gauges()
    TO ordering_check_reader;
GRANT EXECUTE ON FUNCTION ordering_internal.attachment_problem(regclass, name, name)
    TO ordering_check_reader;
BEGIN;
UPDATE ordering.sequences SET last_seq = 1 WHERE stream = 'public.accounts_log';
SET ROLE ordering_check_reader;
SELECT * FROM ordering.check();
RESET ROLE;
ROLLBACK;

CREATE SCHEMA evil;
CREATE FUNCTION evil.always(text, text) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE FUNCTION evil.never(bigint, bigint) RETURNS boolean LANGUAGE sql AS $$ SELECT false $$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.always);
CREATE OPERATOR evil.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.never);
CREATE OPERATOR evil.<= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.never);
CREATE FUNCTION evil.quote_literal(text) RETURNS text LANGUAGE sql AS $$ SELECT 'evil' $$;
CREATE AGGREGATE evil.max(bigint) (SFUNC = pg_catalog.int8smaller, STYPE = bigint);
CREATE FUNCTION evil.coalesce(bigint, integer) RETURNS bigint LANGUAGE sql AS $$ SELECT 1000::bigint $$;
CREATE TABLE evil.sequences (LIKE ordering.sequences);
CREATE TABLE evil.parked (LIKE ordering.parked);
BEGIN;
UPDATE ordering.sequences SET last_seq = 6 WHERE stream = 'ordering.outbox' AND resource_id = 'r1';
INSERT INTO ordering.parked (consumer, resource_id, seq, payload) VALUES ('ledger', 'a', 1, '{}');
SET LOCAL search_path = evil, pg_catalog, public;
SELECT 'x'::text = 'y'::text AS "evil = is in force";
SELECT * FROM ordering.check();
ROLLBACK;

\c contrib_regression
DROP DATABASE ordering_check;
