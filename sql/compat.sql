-- The server APIs that differ between PostgreSQL versions (src/compat.h),
-- seen from SQL on whatever server runs the test: each block fails if its
-- wrapper does the wrong thing on that version.
\set VERBOSITY terse

-- The in-place overwrite (heap_inplace_update, on 15 to 17).  One
-- statement advancing one counter five times writes one new version and
-- overwrites it four times; the statistics count only the new version.
-- (18 writes a version each time: expected/compat_1.out.)
SELECT ordering.next_sequence('cp', 'a');                       -- 1, created
BEGIN;
SELECT array_agg(ordering.next_sequence('cp', 'a') ORDER BY g) AS seqs
  FROM generate_series(1, 5) g;
SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables
 WHERE relid = 'ordering.sequences'::regclass;
COMMIT;
SELECT ordering.last_sequence('cp', 'a');                       -- 6
SELECT last_seq FROM ordering.sequences WHERE stream = 'cp' AND resource_id = 'a';

-- A summarizing (BRIN) index on the position.  From 16 on, an update that
-- changes only that column stays HOT, and the index still needs the new
-- version's entry: without it the summary of the page's range would not
-- cover the new value, and a scan through the index would miss the row.
CREATE INDEX positions_brin ON ordering.positions
    USING brin (position) WITH (pages_per_range = 1);
SELECT ordering.apply_if_newer('cp', 'brin', 1);
SELECT FROM brin_summarize_new_values('ordering.positions_brin');  -- every range
SELECT ordering.apply_if_newer('cp', 'brin', 1000000);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
SELECT consumer, resource_id FROM ordering.positions WHERE position = 1000000;
SELECT consumer, resource_id FROM ordering.positions WHERE position = 1000000;
RESET enable_seqscan;
DROP INDEX ordering.positions_brin;

-- A deferrable primary key cannot serve the probes that expect one row per
-- key: the table counts as altered (18 would hand such a key out if asked).
ALTER TABLE ordering.positions DROP CONSTRAINT positions_pkey,
    ADD PRIMARY KEY (consumer, resource_id) DEFERRABLE;
SELECT ordering.apply_if_newer('cp', 'brin', 1000001);
\echo :SQLSTATE
ALTER TABLE ordering.positions DROP CONSTRAINT positions_pkey,
    ADD PRIMARY KEY (consumer, resource_id);
SELECT ordering.apply_if_newer('cp', 'brin', 1000001);          -- t again

-- A handler runs only for a role that may execute it.
CREATE ROLE regress_compat_consumer;
SELECT ordering.grant_consumer('regress_compat_consumer');
CREATE FUNCTION compat_handler(text, bigint, jsonb) RETURNS void
    LANGUAGE sql AS '';
REVOKE EXECUTE ON FUNCTION compat_handler(text, bigint, jsonb) FROM PUBLIC;
SET ROLE regress_compat_consumer;
SELECT ordering.deliver('cp-h', 'r', 1, '{}', 'compat_handler(text,bigint,jsonb)');
\echo :SQLSTATE
RESET ROLE;
GRANT EXECUTE ON FUNCTION compat_handler(text, bigint, jsonb)
    TO regress_compat_consumer;
SET ROLE regress_compat_consumer;
SELECT ordering.deliver('cp-h', 'r', 1, '{}', 'compat_handler(text,bigint,jsonb)');
RESET ROLE;

-- Clean up.
DELETE FROM ordering.sequences WHERE stream = 'cp';
DELETE FROM ordering.positions WHERE consumer LIKE 'cp%';
DROP FUNCTION compat_handler(text, bigint, jsonb);
DROP OWNED BY regress_compat_consumer;
DROP ROLE regress_compat_consumer;
