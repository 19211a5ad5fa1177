-- The extension's own tables (1.2): an ALTER TABLE that would break a
-- promise is refused when it is made (the event trigger
-- ordering_protect_tables); the storage layer refuses an unlogged table at
-- use and keeps working with columns added and dropped again (as 1.1
-- allowed, or with event triggers off).  In a database of its own, so that
-- the dropped columns stay out of the other tests.
\set VERBOSITY terse
CREATE DATABASE ordering_own_tables;
\c ordering_own_tables
CREATE EXTENSION ordering;
SELECT ordering.next_sequence('own', 'r');
SELECT ordering.apply_if_newer('own', 'r', 1);

-------------------------------------------------------------------------------
-- Refused when made: 0A000, and nothing changes
-------------------------------------------------------------------------------

\set VERBOSITY default
ALTER TABLE ordering.sequences SET UNLOGGED;
ALTER TABLE ordering.outbox ADD COLUMN tenant text;
\set VERBOSITY terse
ALTER TABLE ordering.positions SET UNLOGGED;
ALTER TABLE ordering.outbox SET UNLOGGED;
ALTER TABLE ordering.positions ADD COLUMN note text;
ALTER TABLE ordering.positions DROP COLUMN blocked_at;
ALTER TABLE ordering.positions ALTER COLUMN position TYPE numeric;
ALTER TABLE ordering.positions ALTER COLUMN position DROP NOT NULL;
ALTER TABLE ordering.parked ALTER COLUMN payload SET NOT NULL;
ALTER TABLE ordering.positions RENAME COLUMN position TO pos;
ALTER TABLE ordering.positions RENAME TO positions_old;
ALTER TABLE ordering.positions SET SCHEMA public;
ALTER TABLE ordering.attachments SET ACCESS METHOD heap;
CREATE TABLE counters_parent (LIKE ordering.sequences);
ALTER TABLE ordering.sequences INHERIT counters_parent;
CREATE TABLE counters_parts (LIKE ordering.sequences) PARTITION BY LIST (stream);
ALTER TABLE counters_parts ATTACH PARTITION ordering.sequences FOR VALUES IN ('own');
-- several subcommands: one refused refuses the statement
ALTER TABLE ordering.dead_letter_events SET (fillfactor = 80), ADD COLUMN extra int;
\echo :SQLSTATE
SELECT c.relname, c.relpersistence, c.relnatts, c.reloptions
  FROM pg_class c WHERE c.relnamespace = 'ordering'::regnamespace AND c.relkind = 'r'
 ORDER BY 1;

-- What keeps every promise goes through: storage parameters, statistics,
-- SET LOGGED, a table of one's own in the schema.
ALTER TABLE ordering.positions SET (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01);
ALTER TABLE ordering.sequences ALTER COLUMN last_seq SET STATISTICS 500;
ALTER TABLE ordering.sequences SET LOGGED;
CREATE TABLE ordering.my_notes (n text);
ALTER TABLE ordering.my_notes ADD COLUMN m text, SET UNLOGGED;
DROP TABLE ordering.my_notes;
SELECT ordering.next_sequence('own', 'r');
SELECT ordering.apply_if_newer('own', 'r', 2);

-------------------------------------------------------------------------------
-- Done anyway (event triggers off for a replication session, or 1.1)
-------------------------------------------------------------------------------

SET session_replication_role = replica;
-- An unlogged table is refused at use, with a hint that works.
ALTER TABLE ordering.sequences SET UNLOGGED;
RESET session_replication_role;
\set VERBOSITY default
SELECT ordering.next_sequence('own', 'r');
\set VERBOSITY terse
ALTER TABLE ordering.sequences SET LOGGED;
SELECT ordering.next_sequence('own', 'r');

-- Columns added and dropped again: every function keeps working.
SET session_replication_role = replica;
ALTER TABLE ordering.positions ADD COLUMN note text;
ALTER TABLE ordering.parked ADD COLUMN note text;
ALTER TABLE ordering.gap_requests ADD COLUMN note text, ADD COLUMN more text;
ALTER TABLE ordering.dead_letter_events ADD COLUMN note text;
ALTER TABLE ordering.sequences ADD COLUMN note text;
RESET session_replication_role;
-- (a column still there is refused, naming it and how to drop it)
\set VERBOSITY default
SELECT ordering.apply_if_newer('own', 'r', 3);
\set VERBOSITY terse
-- rows written while the columns existed (the replication role also
-- keeps sequences_load from merging the row), then the columns dropped
SET session_replication_role = replica;
INSERT INTO ordering.positions (consumer, resource_id, position, note)
VALUES ('own', 'written-with-note', 4, 'x');
INSERT INTO ordering.sequences (stream, resource_id, last_seq, note)
VALUES ('own', 'loaded', 7, 'x');
ALTER TABLE ordering.positions DROP COLUMN note;
ALTER TABLE ordering.parked DROP COLUMN note;
ALTER TABLE ordering.gap_requests DROP COLUMN note, DROP COLUMN more;
ALTER TABLE ordering.dead_letter_events DROP COLUMN note;
ALTER TABLE ordering.sequences DROP COLUMN note;
RESET session_replication_role;
SELECT ordering.apply_if_newer('own', 'r', 3);
SELECT ordering.apply_if_newer('own', 'written-with-note', 5);
SELECT ordering.position('own', 'written-with-note');
SELECT ordering.next_sequence('own', 'r'), ordering.next_sequence('own', 'loaded'),
       ordering.next_sequence('own', 'new');
SELECT ordering.emit('own-1', 'E', '{}');
-- the consumer's whole cycle: park, sweep a gap, dead letter, drain
SELECT count(*) FROM ordering.deliver('own', 'g', 3, '{"n": 3}');
UPDATE ordering.parked SET parked_at = now() - interval '1 day';
SELECT consumer, resource_id, missing_from, missing_to FROM ordering.sweep_gaps();
SELECT ordering.dead_letter('own', 'g', 1, '{"n": 1}', 'poison');
SELECT seq, message, parked_behind FROM ordering.dead_letters;
SELECT * FROM ordering.discard_dead_letter('own', 'g');
SELECT * FROM ordering.deliver('own', 'g', 2, '{"n": 2}');
SELECT consumer, resource_id, position, blocked_at FROM ordering.positions ORDER BY 1, 2;
SELECT count(*) AS parked FROM ordering.parked;
SELECT count(*) AS gap_requests FROM ordering.gap_requests;
SELECT * FROM ordering.check();

\c contrib_regression
DROP DATABASE ordering_own_tables;
