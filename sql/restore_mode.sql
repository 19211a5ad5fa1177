-- Restore mode: between ordering.pre_restore() and ordering.post_restore(),
-- sequenced rows keep the numbers they carry, in any order, and no new
-- number is assigned; afterwards every counter continues after the highest
-- number restored.  Both steps may be repeated.
\set VERBOSITY terse

CREATE TABLE rm (r text NOT NULL, s bigint NOT NULL);
SELECT ordering.attach('rm', 'r', 's');
INSERT INTO rm (r) VALUES ('a'), ('a');

SELECT ordering.pre_restore(), ordering.pre_restore() AS again;
SHOW ordering.restoring;
-- the setting is the database's, so pg_restore's own connections see it
SELECT c AS database_setting
  FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase,
       unnest(s.setconfig) c
 WHERE d.datname = current_database() AND s.setrole = 0 AND c LIKE 'ordering.%';

-- History, in any order, by INSERT and by COPY; the counter is untouched.
INSERT INTO rm VALUES ('a', 7), ('b', 4), ('a', 5);
COPY rm FROM STDIN;
c	3
a	6
\.
SELECT ordering.last_sequence('public.rm', 'a') AS counter_a,
       ordering.last_sequence('public.rm', 'b') AS counter_b;
-- A row asking for a new number, or next_sequence(), is refused.
INSERT INTO rm (r) VALUES ('a');
\echo :SQLSTATE
SELECT ordering.next_sequence('public.rm', 'a');
\echo :SQLSTATE
-- Counter rows restored merge, keeping the higher value.
INSERT INTO ordering.sequences VALUES ('public.rm', 'b', 9), ('next-only', 'x', 12);

SELECT ordering.post_restore();
SHOW ordering.restoring;
SELECT count(*) AS settings_left
  FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase,
       unnest(s.setconfig) c
 WHERE d.datname = current_database() AND s.setrole = 0 AND c LIKE 'ordering.%';
SELECT resource_id, last_seq FROM ordering.sequences
 WHERE stream IN ('public.rm', 'next-only') ORDER BY 1;
INSERT INTO rm (r) VALUES ('a'), ('b'), ('c') RETURNING r, s;
SELECT ordering.next_sequence('next-only', 'x');
SELECT ordering.post_restore() AS again;
SELECT resource_id, last_seq FROM ordering.sequences WHERE stream = 'public.rm' ORDER BY 1;

-- Outside restore mode a supplied number is asserted again.
INSERT INTO rm VALUES ('a', 3);
\echo :SQLSTATE
DROP TABLE rm;
DELETE FROM ordering.sequences WHERE stream IN ('public.rm', 'next-only');

-------------------------------------------------------------------------------
-- 1.2: the registry of attached tables during and after a restore
-------------------------------------------------------------------------------

-- While restoring, the trigger does not consult ordering.attachments:
-- pg_restore -j loads big tables before the registry's rows
-- (test/t/002_dump_restore.pl restores so).  Here the table has its
-- triggers and no registry row, as after a schema-only restore, whose
-- inserts, attach() and detach() all point to ordering.post_restore().
CREATE TABLE rm2 (r text NOT NULL, s bigint NOT NULL);
SELECT ordering.attach('rm2', 'r', 's');
DELETE FROM ordering.attachments WHERE tbl = 'rm2'::regclass;
\set VERBOSITY default
INSERT INTO rm2 (r) VALUES ('a');
SELECT ordering.attach('rm2', 'r', 's');
\set VERBOSITY terse
SELECT ordering.pre_restore();
INSERT INTO rm2 VALUES ('a', 4), ('b', 2), ('a', 3);
-- post_restore() registers the table with the stream its trigger names and
-- raises its counters to the rows restored
SELECT ordering.post_restore();
SELECT stream, resource_column, sequence_column, attached
  FROM ordering.attachments WHERE tbl = 'rm2'::regclass;
INSERT INTO rm2 (r) VALUES ('a'), ('b') RETURNING r, s;

-- A registry row that disagrees with the table's trigger is refused by
-- post_restore(), which names the table and leaves restore mode on.
SELECT ordering.pre_restore();
UPDATE ordering.attachments SET stream = 'elsewhere' WHERE tbl = 'rm2'::regclass;
\set VERBOSITY default
SELECT ordering.post_restore();
\set VERBOSITY terse
SHOW ordering.restoring;
UPDATE ordering.attachments SET stream = 'public.rm2', attached = false
 WHERE tbl = 'rm2'::regclass;
SELECT ordering.post_restore();
\echo :SQLSTATE
-- So is an attached table without its triggers (a partial restore).
UPDATE ordering.attachments SET attached = true WHERE tbl = 'rm2'::regclass;
DROP TRIGGER ordering_sequence ON rm2;
DROP TRIGGER ordering_sequence_stored ON rm2;
DROP TRIGGER ordering_sequence_guard ON rm2;
SELECT ordering.post_restore();
\echo :SQLSTATE
-- attach() makes them agree: the triggers again, the stream continued
SELECT ordering.attach('rm2', 'r', 's');
SELECT ordering.post_restore();
SHOW ordering.restoring;
INSERT INTO rm2 (r) VALUES ('a') RETURNING r, s;

-- detach() of a table whose triggers have no registry row says which stream
-- the trigger named.
DELETE FROM ordering.attachments WHERE tbl = 'rm2'::regclass;
SELECT ordering.detach('rm2');
DROP TABLE rm2;
DELETE FROM ordering.sequences WHERE stream = 'public.rm2';

-------------------------------------------------------------------------------
-- 1.2: attach() of a table that holds numbers continues each resource
-------------------------------------------------------------------------------

-- Rows loaded before the table is attached keep their numbers; each
-- resource continues after its highest (rows without a resource or number
-- are not counted).
CREATE TABLE pre_numbered (r text, s bigint);
INSERT INTO pre_numbered VALUES ('a', 1), ('a', 2), ('a', 5), ('b', 3), (NULL, 9), ('c', NULL);
SELECT ordering.attach('pre_numbered', 'r', 's');
INSERT INTO pre_numbered (r) VALUES ('a'), ('b'), ('c') RETURNING r, s;
-- Rows written while detached (numbers given by hand) are continued after
-- too, and a counter is never lowered.
SELECT ordering.detach('pre_numbered');
INSERT INTO pre_numbered VALUES ('a', 10), ('b', 1);
SELECT ordering.attach('pre_numbered', 'r', 's');
INSERT INTO pre_numbered (r) VALUES ('a'), ('b') RETURNING r, s;
DROP TABLE pre_numbered;
DELETE FROM ordering.sequences WHERE stream = 'public.pre_numbered';

-- DROP EXTENSION drops the counters; attaching again after CREATE EXTENSION
-- continues from the table's rows.
CREATE DATABASE ordering_reattach;
\c ordering_reattach
SET client_min_messages = warning;
CREATE EXTENSION ordering;
CREATE TABLE ev (r text NOT NULL, s bigint NOT NULL);
SELECT ordering.attach('ev', 'r', 's');
INSERT INTO ev (r) SELECT 'r' || (i % 3) FROM generate_series(1, 10) i;
DROP EXTENSION ordering CASCADE;
CREATE EXTENSION ordering;
SELECT ordering.attach('ev', 'r', 's');
INSERT INTO ev (r) VALUES ('r0'), ('r1'), ('r2') RETURNING r, s;
\c contrib_regression
DROP DATABASE ordering_reattach;
