-- Statistics: ordering.stats, ordering.stream_stats, ordering.metrics() and
-- ordering.stats_reset().  Counts are of committed work only.
\set VERBOSITY terse
-- start from empty consumer tables, whatever earlier tests left
DELETE FROM ordering.parked;
DELETE FROM ordering.positions;
DELETE FROM ordering.gap_requests;
SELECT ordering.stats_reset();
SELECT count(*) FROM ordering.stats;
SELECT count(*) FROM ordering.stream_stats;
SELECT ordering_internal.stats_reset_time() <= now() AS reset_in_the_past;

-- sequences assigned per stream: committed ones only
CREATE TABLE stats_outbox (id bigserial PRIMARY KEY, account text NOT NULL,
                           version bigint NOT NULL, body jsonb);
SELECT ordering.attach('stats_outbox', 'account', 'version', 'stats "stream"');
SELECT ordering.emit('s-1', 'e', '{}'), ordering.emit('s-1', 'e', '{}'),
       ordering.emit('s-2', 'e', '{}');
INSERT INTO stats_outbox (account) VALUES ('a'), ('a'), ('b');
BEGIN;
SELECT ordering.emit('s-1', 'e', '{}');
INSERT INTO stats_outbox (account) VALUES ('a');
ROLLBACK;
-- a rolled-back savepoint is not counted, a released one is
BEGIN;
SAVEPOINT one;
SELECT ordering.emit('s-3', 'e', '{}');
ROLLBACK TO SAVEPOINT one;
SAVEPOINT two;
SELECT ordering.emit('s-3', 'e', '{}');
SAVEPOINT three;
SELECT ordering.emit('s-3', 'e', '{}');
RELEASE SAVEPOINT three;
RELEASE SAVEPOINT two;
SAVEPOINT four;
INSERT INTO stats_outbox (account) VALUES ('c');
ROLLBACK TO SAVEPOINT four;
COMMIT;
-- an error inside a PL/pgSQL exception block rolls its subtransaction back
DO $$
BEGIN
    PERFORM ordering.emit('s-4', 'e', '{}');
    BEGIN
        PERFORM ordering.emit('s-4', 'e', '{}');
        PERFORM 1 / 0;
    EXCEPTION WHEN division_by_zero THEN
        NULL;
    END;
END
$$;
-- a prepared transaction is counted by COMMIT PREPARED (in any session),
-- not before, and not at all when rolled back
BEGIN;
SELECT ordering.emit('s-5', 'e', '{}');
PREPARE TRANSACTION 'stats_prepared';
SELECT stream, sequences_assigned AS before_commit_prepared
  FROM ordering.stream_stats WHERE stream = 'ordering.outbox';
COMMIT PREPARED 'stats_prepared';
BEGIN;
SELECT ordering.emit('s-6', 'e', '{}'), ordering.emit('s-6', 'e', '{}');
PREPARE TRANSACTION 'stats_rolled_back';
ROLLBACK PREPARED 'stats_rolled_back';
-- a stream used only in a rolled-back savepoint does not show up
BEGIN;
SAVEPOINT x;
SELECT ordering.next_sequence('rolled back', 'r');
ROLLBACK TO SAVEPOINT x;
COMMIT;
-- ordering.outbox: 3 + 2 (savepoints two, three) + 1 (DO) + 1 (prepared) = 7
-- stats "stream": 3
SELECT stream, sequences_assigned FROM ordering.stream_stats ORDER BY stream;

-- consumers show up with their parked events even before counting anything;
-- parked_current is counted from ordering.parked
INSERT INTO ordering.parked (consumer, resource_id, seq, payload) VALUES
    ('billing', 'r1', 5, '{}'), ('billing', 'r2', 3, '{}'),
    (E'we"ird\\name\nwith newline', 'r1', 9, '{}');
SELECT consumer, events_consumed, events_parked, gaps_escalated, parked_current,
       reorder_distance_buckets, reorder_distance_bounds,
       stats_reset = ordering_internal.stats_reset_time() AS stats_reset_ok
  FROM ordering.stats ORDER BY consumer;

-- the Prometheus text: label values escaped, HELP and TYPE once per family
-- (in one transaction with the parking and the relay, so both ages are 0)
BEGIN;
UPDATE ordering.parked SET parked_at = now();
UPDATE ordering.outbox SET published_at = now() WHERE published_at IS NULL;
SELECT ordering.metrics();
ROLLBACK;
DELETE FROM ordering.parked;

-- stats_reset is not for everyone
CREATE ROLE stats_nobody;
GRANT USAGE ON SCHEMA ordering TO stats_nobody;
SET ROLE stats_nobody;
SELECT ordering.stats_reset();
\echo :SQLSTATE
RESET ROLE;
DROP OWNED BY stats_nobody;
DROP ROLE stats_nobody;

-- Consumer statistics, hand-computed.  billing/r1 receives
-- 3 1 2 2 7 5 5 4 6 7 40 1:
--   3  parked (distance 3 - 0 = 3)
--   1  applied
--   2  applied, drains 3                  position 3
--   2  stale
--   7  parked (distance 7 - 3 = 4)
--   5  parked (distance 2)
--   5  duplicate (already parked)
--   4  applied, drains 5                  position 5
--   6  applied, drains 7                  position 7
--   7  duplicate (equal to the position)
--   40 parked (distance 33)
--   1  stale
-- consumed 12, applied 7 (1..7), stale 2, duplicate 2, parked 4, drained 3.
-- billing/r2 receives 200 (parked, distance 200: the overflow bucket), then
-- the gap is skipped: 200 drains (applied 1, drained 1).
-- Histogram: distances 3, 4, 2, 33, 200 -> buckets (<=1, <=2, <=3, <=5,
-- <=10, <=25, <=100, more) = 0,1,1,1,0,0,1,1; sum 242.
-- ledger uses apply_if_newer: 1 applied, 3 applied, 2 stale, 3 duplicate.
SELECT ordering.stats_reset();
DO $$
DECLARE
    s bigint;
BEGIN
    FOREACH s IN ARRAY ARRAY[3, 1, 2, 2, 7, 5, 5, 4, 6, 7, 40, 1] LOOP
        PERFORM count(*) FROM ordering.deliver('billing', 'r1', s, '{}');
    END LOOP;
END
$$;
SELECT * FROM ordering.deliver('billing', 'r2', 200, '{}');
SELECT * FROM ordering.skip_gap('billing', 'r2');
SELECT ordering.apply_if_newer('ledger', 'x', 1), ordering.apply_if_newer('ledger', 'x', 3);
SELECT ordering.apply_if_newer('ledger', 'x', 2), ordering.apply_if_newer('ledger', 'x', 3);
-- rolled back: not counted
BEGIN;
SELECT * FROM ordering.deliver('billing', 'r1', 41, '{}');
SELECT ordering.apply_if_newer('ledger', 'x', 10);
ROLLBACK;
BEGIN;
SAVEPOINT s;
SELECT * FROM ordering.deliver('billing', 'r1', 42, '{}');
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT consumer, events_consumed, events_applied, events_stale,
       events_duplicate, events_parked, events_drained, gaps_escalated,
       parked_current, reorder_distance_buckets, reorder_distance_sum
  FROM ordering.stats ORDER BY consumer;
-- the same as a Prometheus histogram: cumulative, +Inf = _count
SELECT line FROM regexp_split_to_table(ordering.metrics(), E'\n') AS line
 WHERE line LIKE 'ordering_event_reorder_distance%billing%';
DELETE FROM ordering.parked;
DELETE FROM ordering.positions;

SELECT ordering.stats_reset();
SELECT count(*) FROM ordering.stream_stats;
SELECT ordering.detach('stats_outbox');
DROP TABLE stats_outbox;
-- leave no counters or events behind for later tests
DELETE FROM ordering.sequences WHERE stream = 'stats "stream"';
DELETE FROM ordering.outbox WHERE resource_id LIKE 's-%';
DELETE FROM ordering.sequences
 WHERE stream = 'ordering.outbox' AND resource_id LIKE 's-%';
