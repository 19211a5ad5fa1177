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
SELECT ordering.stats_reset_time() <= now() AS reset_in_the_past;

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
-- a prepared transaction is not counted (its commit happens elsewhere)
BEGIN;
SELECT ordering.emit('s-5', 'e', '{}');
PREPARE TRANSACTION 'stats_prepared';
COMMIT PREPARED 'stats_prepared';
-- a stream used only in a rolled-back savepoint does not show up
BEGIN;
SAVEPOINT x;
SELECT ordering.next_sequence('rolled back', 'r');
ROLLBACK TO SAVEPOINT x;
COMMIT;
-- ordering.outbox: 3 + 2 (savepoints two, three) + 1 (DO) = 6
-- stats "stream": 3
SELECT stream, sequences_assigned FROM ordering.stream_stats ORDER BY stream;

-- consumers show up with their parked events even before counting anything;
-- parked_current is counted from ordering.parked
INSERT INTO ordering.parked (consumer, resource_id, seq, payload) VALUES
    ('billing', 'r1', 5, '{}'), ('billing', 'r2', 3, '{}'),
    (E'we"ird\\name\nwith newline', 'r1', 9, '{}');
SELECT consumer, events_consumed, events_parked, gaps_escalated, parked_current,
       reorder_distance_buckets, reorder_distance_bounds,
       stats_reset = ordering.stats_reset_time() AS stats_reset_ok
  FROM ordering.stats ORDER BY consumer;

-- the Prometheus text: label values escaped, HELP and TYPE once per family
SELECT ordering.metrics();
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

SELECT ordering.stats_reset();
SELECT count(*) FROM ordering.stream_stats;
SELECT ordering.detach('stats_outbox');
DROP TABLE stats_outbox;
