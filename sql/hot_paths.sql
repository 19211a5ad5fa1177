-- The hot paths of keyed.c: a version rewritten in place by its own
-- subtransaction, the per-backend TID cache, and what must defeat both.
\set VERBOSITY terse

-- One statement advancing one counter many times: the first number writes a
-- new version, the rest rewrite that version in place; all consecutive.
SELECT array_agg(ordering.next_sequence('hp', 'a') ORDER BY g) AS seqs
  FROM generate_series(1, 5) g;
SELECT ordering.last_sequence('hp', 'a');

-- In-place rewrites inside a savepoint are given back by its rollback, and
-- the parent's version keeps the value it had before the savepoint.
BEGIN;
SELECT ordering.next_sequence('hp', 'a');              -- 6, parent version
SAVEPOINT s1;
SELECT array_agg(ordering.next_sequence('hp', 'a') ORDER BY g) AS seqs
  FROM generate_series(1, 3) g;                        -- 7..9 in s1
SAVEPOINT s2;
SELECT ordering.next_sequence('hp', 'a');              -- 10 in s2
RELEASE s2;
SELECT ordering.next_sequence('hp', 'a');              -- 11: s2's work is s1's now
ROLLBACK TO s1;
SELECT ordering.last_sequence('hp', 'a');              -- 6 again
SELECT array_agg(ordering.next_sequence('hp', 'a') ORDER BY g) AS seqs
  FROM generate_series(1, 2) g;                        -- 7, 8
COMMIT;
SELECT ordering.last_sequence('hp', 'a');              -- 8

-- A rolled-back transaction that rewrote its own version in place leaves
-- the committed value.
BEGIN;
SELECT array_agg(ordering.next_sequence('hp', 'a') ORDER BY g) AS seqs
  FROM generate_series(1, 4) g;
ROLLBACK;
SELECT ordering.next_sequence('hp', 'a');              -- 9

-- Rewriting the table (new relfilenode) empties the TID cache: numbers go on.
VACUUM FULL ordering.sequences;
SELECT ordering.next_sequence('hp', 'a');              -- 10
CLUSTER ordering.sequences USING sequences_pkey;
SELECT ordering.next_sequence('hp', 'a');              -- 11

-- A cached TID whose row was deleted and whose line pointer another key may
-- reuse: the key check sends the lookup to the index, which finds nothing.
SELECT ordering.next_sequence('hp', 'gone');           -- 1, now cached
DELETE FROM ordering.sequences WHERE stream = 'hp' AND resource_id = 'gone';
VACUUM ordering.sequences;
SELECT ordering.next_sequence('hp', 'new-' || g) FROM generate_series(1, 3) g;
SELECT ordering.next_sequence('hp', 'gone');           -- 1: a new counter
SELECT resource_id, last_seq FROM ordering.sequences
 WHERE stream = 'hp' ORDER BY resource_id;

-- A cached TID whose row was replaced by a new row of the same key (say, an
-- operator raised a counter by deleting and inserting it): the dead chain is
-- not visible, the index finds the new row.
SELECT ordering.next_sequence('hp', 'moved');          -- 1, now cached
DELETE FROM ordering.sequences WHERE stream = 'hp' AND resource_id = 'moved';
INSERT INTO ordering.sequences VALUES ('hp', 'moved', 41);
SELECT ordering.next_sequence('hp', 'moved');          -- 42
SELECT ordering.next_sequence('hp', 'moved');          -- 43, from the cache again

-- A new row is cached when it is created; if its creation is rolled back,
-- the hint leads to a dead tuple and the key is created again.
BEGIN;
SAVEPOINT s;
SELECT ordering.next_sequence('hp', 'fresh');          -- 1, created and cached
ROLLBACK TO s;
SELECT ordering.next_sequence('hp', 'fresh');          -- 1 again
SELECT ordering.next_sequence('hp', 'fresh');          -- 2, in place
COMMIT;
SELECT ordering.next_sequence('hp', 'fresh');          -- 3

-- Consumer positions use the same paths: several events of one resource
-- applied in one transaction, some in a rolled-back savepoint.
BEGIN;
SELECT ordering.apply_if_newer('hp', 'r', 1), ordering.apply_if_newer('hp', 'r', 2);
SAVEPOINT s;
SELECT ordering.apply_if_newer('hp', 'r', 5), ordering.apply_if_newer('hp', 'r', 7);
ROLLBACK TO s;
SELECT ordering.position('hp', 'r');                   -- 2
SELECT ordering.apply_if_newer('hp', 'r', 3);
COMMIT;
SELECT ordering.position('hp', 'r');                   -- 3

-- Indexes an administrator adds are maintained like the primary key: a
-- plain one on the counter makes every update non-HOT, so new rows and new
-- versions both get entries in both indexes (amcheck finds every tuple).
CREATE EXTENSION amcheck;
CREATE INDEX sequences_by_last_seq ON ordering.sequences (last_seq);
CREATE INDEX positions_by_position ON ordering.positions (position);
SELECT ordering.next_sequence('ix', 'r' || g) FROM generate_series(1, 3) g;
SELECT ordering.next_sequence('ix', 'r1'), ordering.next_sequence('ix', 'r1');
SELECT ordering.apply_if_newer('ix', 'r1', 4), ordering.apply_if_newer('ix', 'r1', 9);
-- A batch writes one position three times in one command: the index on the
-- column forbids overwriting the version in place each time, not only the
-- first time the call asks which columns its indexes cover.
SELECT count(*) FILTER (WHERE applied)
  FROM ordering.apply_batch('ix', ARRAY['r2', 'r2', 'r2'], ARRAY[1, 2, 3]);  -- 3
SELECT bt_index_check(i, true) FROM unnest(ARRAY[
    'ordering.sequences_pkey', 'ordering.sequences_by_last_seq',
    'ordering.positions_pkey', 'ordering.positions_by_position']::regclass[]) i;
SET enable_seqscan = off;
SELECT stream, resource_id, last_seq FROM ordering.sequences
 WHERE last_seq = 3 AND stream = 'ix';                 -- r1, through the new index
RESET enable_seqscan;
DROP INDEX ordering.sequences_by_last_seq, ordering.positions_by_position;
-- An index the C code cannot maintain without an executor (an expression, a
-- predicate) is refused when a row needs index entries, and nothing changes.
CREATE INDEX sequences_partial ON ordering.sequences (last_seq) WHERE last_seq > 100;
SELECT ordering.next_sequence('ix', 'r9');
\echo :SQLSTATE
DROP INDEX ordering.sequences_partial;
SELECT ordering.next_sequence('ix', 'r9');             -- 1: the failed call left nothing
DROP EXTENSION amcheck;

-- Parked events drain through a TID cache of their own, filled when this
-- backend parks them; it only ever finds rows, the index says what is not
-- there.  Rows changed by SQL since they were parked: a HOT update (the
-- cached TID leads along the chain to the new payload), a delete and a new
-- row of the same seq elsewhere (the cached TID is dead: the index finds
-- the new row), a delete without a new row (the run ends there).
SELECT * FROM ordering.deliver('pc', 'r', 2, '{"v": 2}');
SELECT * FROM ordering.deliver('pc', 'r', 3, '{"v": 3}');
SELECT * FROM ordering.deliver('pc', 'r', 4, '{"v": 4}');
SELECT * FROM ordering.deliver('pc', 'r', 6, '{"v": 6}');
UPDATE ordering.parked SET payload = '{"v": 22}' WHERE consumer = 'pc' AND seq = 2;
DELETE FROM ordering.parked WHERE consumer = 'pc' AND seq = 3;
INSERT INTO ordering.parked (consumer, resource_id, seq, payload)
VALUES ('pc', 'r', 3, '{"v": 33}');
DELETE FROM ordering.parked WHERE consumer = 'pc' AND seq = 4;
SELECT * FROM ordering.deliver('pc', 'r', 1, '{"v": 1}');   -- 1, 22, 33
SELECT position, parked_count, parked_lowest, parked_highest
  FROM ordering.positions WHERE consumer = 'pc';           -- 3, 1 parked (6)
SELECT * FROM ordering.deliver('pc', 'r', 4, '{"v": 44}');  -- 44 (5 is missing)
SELECT * FROM ordering.deliver('pc', 'r', 5, '{"v": 5}');   -- 5, then 6 from the cache
SELECT count(*) AS parked FROM ordering.parked WHERE consumer = 'pc';
SELECT * FROM ordering.check();
