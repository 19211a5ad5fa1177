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
