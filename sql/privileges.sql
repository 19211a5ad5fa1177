-- Privilege model: nothing for PUBLIC; grant_producer, grant_consumer,
-- grant_monitor and grant_operator hand out exactly what each role needs.
\set VERBOSITY terse

CREATE ROLE regress_nobody;
CREATE ROLE regress_producer;
CREATE ROLE regress_consumer;
CREATE ROLE regress_monitor;
CREATE ROLE regress_operator;
SELECT ordering.grant_producer('regress_producer');
SELECT ordering.grant_consumer('regress_consumer');
SELECT ordering.grant_monitor('regress_monitor');
SELECT ordering.grant_operator('regress_operator');
GRANT CREATE ON SCHEMA public TO regress_producer;

-- Some state to protect.
SELECT ordering.emit('priv-1', 'e', '{}');
SELECT ordering.apply_if_newer('priv', 'r', 5);
SELECT * FROM ordering.deliver('priv', 'r2', 3, '{}');
CREATE TEMP TABLE before AS
SELECT (SELECT count(*) FROM ordering.sequences) AS sequences,
       (SELECT sum(last_seq) FROM ordering.sequences) AS seq_sum,
       (SELECT count(*) FROM ordering.outbox) AS outbox,
       (SELECT sum(position) FROM ordering.positions) AS pos_sum,
       (SELECT count(*) FROM ordering.parked) AS parked,
       (SELECT count(*) FROM ordering.gap_requests) AS requests;
GRANT SELECT ON before TO PUBLIC;

-- A role with no grants can neither read nor change anything.
SET ROLE regress_nobody;
SELECT count(*) FROM ordering.sequences;
\echo :SQLSTATE
SELECT count(*) FROM ordering.positions;
\echo :SQLSTATE
SELECT count(*) FROM ordering.parked;
\echo :SQLSTATE
SELECT count(*) FROM ordering.gap_requests;
\echo :SQLSTATE
SELECT count(*) FROM ordering.outbox;
\echo :SQLSTATE
SELECT ordering.emit('priv-1', 'e', '{}');
\echo :SQLSTATE
SELECT ordering.next_sequence('ordering.outbox', 'priv-1');
\echo :SQLSTATE
SELECT ordering.last_sequence('ordering.outbox', 'priv-1');
\echo :SQLSTATE
SELECT ordering.apply_if_newer('priv', 'r', 9);
\echo :SQLSTATE
SELECT * FROM ordering.deliver('priv', 'r2', 1, '{}');
\echo :SQLSTATE
SELECT ordering.position('priv', 'r');
\echo :SQLSTATE
SELECT * FROM ordering.skip_gap('priv', 'r2');
\echo :SQLSTATE
SELECT ordering.sweep_gaps();
\echo :SQLSTATE
SELECT ordering.stats_reset();
\echo :SQLSTATE
SELECT ordering.metrics() IS NOT NULL;
\echo :SQLSTATE
SELECT ordering.grant_operator('regress_nobody');
\echo :SQLSTATE
RESET ROLE;

-- Even with USAGE on the schema, PUBLIC may execute nothing: the C
-- functions check no table privilege, so EXECUTE is the permission.
GRANT USAGE ON SCHEMA ordering TO regress_nobody;
SET ROLE regress_nobody;
SELECT ordering.next_sequence('ordering.outbox', 'priv-1');
\echo :SQLSTATE
SELECT ordering.apply_if_newer('priv', 'r', 9);
\echo :SQLSTATE
SELECT * FROM ordering.deliver('priv', 'r2', 1, '{}');
\echo :SQLSTATE
SELECT * FROM ordering.skip_gap('priv', 'r2');
\echo :SQLSTATE
SELECT count(*) FROM ordering.positions;
\echo :SQLSTATE
SELECT count(*) FROM ordering.stats;
\echo :SQLSTATE
SELECT ordering.grant_operator('regress_nobody');
\echo :SQLSTATE
SELECT ordering_internal.grant_privileges('regress_nobody', 'SELECT ON ordering.positions');
\echo :SQLSTATE
RESET ROLE;
REVOKE USAGE ON SCHEMA ordering FROM regress_nobody;

-- A consumer consumes, but cannot touch producer counters or operate.
SET ROLE regress_consumer;
SELECT ordering.apply_if_newer('priv', 'r', 6);
SELECT * FROM ordering.deliver('priv', 'r2', 1, '{"a": 1}');
SELECT ordering.position('priv', 'r'), ordering.position('priv', 'r2');
SELECT count(*) FROM ordering.parked WHERE consumer = 'priv';
SELECT ordering.next_sequence('ordering.outbox', 'priv-1');
\echo :SQLSTATE
SELECT ordering.emit('priv-1', 'e', '{}');
\echo :SQLSTATE
SELECT count(*) FROM ordering.sequences;
\echo :SQLSTATE
UPDATE ordering.positions SET position = 0;
\echo :SQLSTATE
SELECT * FROM ordering.skip_gap('priv', 'r2');
\echo :SQLSTATE
SELECT ordering.stats_reset();
\echo :SQLSTATE
RESET ROLE;

-- A producer produces and relays, but cannot consume or operate.
SET ROLE regress_producer;
SELECT ordering.emit('priv-1', 'e', '{}');
SELECT ordering.next_sequence('custom', 'priv-1'), ordering.last_sequence('ordering.outbox', 'priv-1');
SELECT count(*) FROM ordering.claim_unpublished(10) WHERE resource_id = 'priv-1';
SELECT ordering.republish('priv-1', 1);
CREATE TABLE producer_events (r text, s bigint);
SELECT ordering.attach('producer_events', 'r', 's');
INSERT INTO producer_events (r) VALUES ('x'), ('x');
SELECT r, s FROM producer_events ORDER BY s;
SELECT ordering.apply_if_newer('priv', 'r', 99);
\echo :SQLSTATE
SELECT count(*) FROM ordering.positions;
\echo :SQLSTATE
UPDATE ordering.sequences SET last_seq = 0;
\echo :SQLSTATE
SELECT ordering.stats_reset();
\echo :SQLSTATE
SELECT ordering.detach('producer_events');
DROP TABLE producer_events;
RESET ROLE;

-- Producers of one stream can neither break nor borrow another's: the
-- registry of attached tables is written by attach() and detach() only,
-- and attaching to a stream needs the ownership of its tables (42501).
CREATE ROLE regress_producer2;
SELECT ordering.grant_producer('regress_producer2');
GRANT CREATE ON SCHEMA public TO regress_producer2;
SET ROLE regress_producer;
CREATE TABLE owned_events (r text, s bigint);
SELECT ordering.attach('owned_events', 'r', 's');
INSERT INTO owned_events (r) VALUES ('x');
RESET ROLE;
SET ROLE regress_producer2;
SELECT stream, attached FROM ordering.attachments WHERE tbl = 'owned_events'::regclass;
UPDATE ordering.attachments SET attached = false;
\echo :SQLSTATE
UPDATE ordering.attachments SET stream = 'x' WHERE tbl = 'owned_events'::regclass;
\echo :SQLSTATE
DELETE FROM ordering.attachments;
\echo :SQLSTATE
CREATE TABLE borrower (r text, s bigint);
INSERT INTO ordering.attachments (tbl, stream, resource_column, sequence_column)
VALUES ('borrower', 'public.owned_events', 'r', 's');
\echo :SQLSTATE
SELECT ordering.attach('borrower', 'r', 's', stream => 'public.owned_events');
\echo :SQLSTATE
SELECT ordering.attach('borrower', 'r', 's', stream => 'ordering.outbox');
\echo :SQLSTATE
-- nor by hand: the functions attach() writes the registry through record
-- only what the catalog says, under the same rule
CREATE TRIGGER ordering_sequence BEFORE INSERT ON borrower FOR EACH ROW
    EXECUTE FUNCTION ordering.sequence_trigger('r', 's', 'public.owned_events');
SELECT ordering_internal.attachment_register('borrower', 'public.owned_events', 'r', 's');
\echo :SQLSTATE
SELECT ordering_internal.attachment_register('borrower', 'elsewhere', 'r', 's');
\echo :SQLSTATE
SELECT ordering_internal.attachment_unregister('owned_events');
\echo :SQLSTATE
INSERT INTO borrower (r) VALUES ('x');
\echo :SQLSTATE
DROP TRIGGER ordering_sequence ON borrower;
-- its own table in a stream of its own is its business
SELECT ordering.attach('borrower', 'r', 's');
INSERT INTO borrower (r) VALUES ('x');
SELECT r, s FROM borrower;
RESET ROLE;
-- the owner's stream went on undisturbed, and the owner may attach a
-- second table of its own to it
SET ROLE regress_producer;
INSERT INTO owned_events (r) VALUES ('x');
CREATE TABLE owned_events_2 (r text, s bigint);
SELECT ordering.attach('owned_events_2', 'r', 's', stream => 'public.owned_events');
INSERT INTO owned_events_2 (r) VALUES ('x');
SELECT 'owned_events' AS t, r, s FROM owned_events
UNION ALL SELECT 'owned_events_2', r, s FROM owned_events_2 ORDER BY 3;
SELECT ordering.detach('owned_events_2');
RESET ROLE;
SELECT tbl, stream, attached FROM ordering.attachments
 WHERE tbl::text IN ('owned_events', 'owned_events_2', 'borrower') ORDER BY tbl::text;
DROP TABLE owned_events, owned_events_2, borrower;
DELETE FROM ordering.sequences WHERE stream IN ('public.owned_events', 'public.borrower');

-- A monitor reads statistics and metrics, and changes nothing.
SET ROLE regress_monitor;
SELECT count(*) >= 1 AS has_rows FROM ordering.stats WHERE consumer = 'priv';
SELECT ordering.metrics() LIKE '%ordering_events_consumed_total{consumer="priv"}%' AS metric;
SELECT count(*) FROM ordering.open_gaps WHERE consumer = 'priv';
SELECT ordering.apply_if_newer('priv', 'r', 99);
\echo :SQLSTATE
SELECT ordering.sweep_gaps();
\echo :SQLSTATE
SELECT ordering.stats_reset();
\echo :SQLSTATE
RESET ROLE;

-- An operator may skip a gap, sweep and reset.
SET ROLE regress_operator;
SELECT * FROM ordering.skip_gap('priv', 'r2');
SELECT count(*) FROM ordering.sweep_gaps();
SELECT ordering.next_sequence('ordering.outbox', 'priv-1');
\echo :SQLSTATE
RESET ROLE;
-- An operator's check() checks ordering.outbox too (1.1 warned that it
-- was not checked): a counter put behind its rows is found.
BEGIN;
UPDATE ordering.sequences SET last_seq = 0
 WHERE stream = 'ordering.outbox' AND resource_id = 'priv-1';
SET ROLE regress_operator;
-- (other tests' tables, which the operator may not read, are skipped with
-- a WARNING)
SET client_min_messages = error;
SELECT kind, detail FROM ordering.check()
 WHERE kind = 'counter_behind_table' AND detail LIKE '%''priv-1''%';
RESET client_min_messages;
RESET ROLE;
ROLLBACK;

-- Consumers: one trust domain per database.  Consumer names keep the
-- positions of different readers apart; they are not owned by roles: a role
-- with the consumer set acts for, and reads the state of, every consumer of
-- the database, and changes it through the functions only (above).  The
-- boundary is the database: the same role has nothing in another one
-- (below, after the temporary table of this session is used).
SELECT ordering.apply_if_newer('priv-other', 'r', 7);
SET ROLE regress_consumer;
SELECT ordering.position('priv-other', 'r'), ordering.apply_if_newer('priv-other', 'r', 8);
RESET ROLE;
DELETE FROM ordering.positions WHERE consumer = 'priv-other';

-- What the refused calls left: only the granted ones changed anything.
SELECT (SELECT sum(last_seq) FROM ordering.sequences) - seq_sum AS seqs_added,
       (SELECT count(*) FROM ordering.outbox) - outbox AS rows_added,
       (SELECT sum(position) FROM ordering.positions) - pos_sum AS positions_moved,
       (SELECT count(*) FROM ordering.parked) - parked AS parked_delta
  FROM before;

-- Clean up.
DELETE FROM ordering.outbox WHERE resource_id = 'priv-1';
DELETE FROM ordering.sequences WHERE resource_id IN ('priv-1', 'x');
DELETE FROM ordering.positions WHERE consumer = 'priv';
DELETE FROM ordering.parked WHERE consumer = 'priv';
DROP TABLE before;
-- a consumer of one database has nothing in another
CREATE DATABASE ordering_privileges_other;
\c ordering_privileges_other
CREATE EXTENSION ordering;
SELECT ordering.apply_if_newer('priv', 'r', 1);
SET ROLE regress_consumer;
SELECT ordering.position('priv', 'r');
\echo :SQLSTATE
SELECT ordering.apply_if_newer('priv', 'r', 2);
\echo :SQLSTATE
SELECT count(*) FROM ordering.positions;
\echo :SQLSTATE
RESET ROLE;
\c contrib_regression
DROP DATABASE ordering_privileges_other;
DROP OWNED BY regress_nobody, regress_producer, regress_producer2, regress_consumer,
    regress_monitor, regress_operator;
DROP ROLE regress_nobody, regress_producer, regress_producer2, regress_consumer, regress_monitor,
    regress_operator;
