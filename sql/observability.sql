-- Observability of 1.1: the new columns of ordering.stats and
-- ordering.stream_stats, ordering.outbox_lag, ordering.hot_resources() and
-- its error bound, and the decision log.
\set VERBOSITY terse
DELETE FROM ordering.parked;
DELETE FROM ordering.positions;
DELETE FROM ordering.gap_requests;
DELETE FROM ordering.dead_letter_events;
SELECT ordering.stats_reset();

-- events_skipped: skip_gap gives up on 2, 3, 4 (position 1, lowest parked 5)
-- and drains 5 and 6
SELECT * FROM ordering.deliver('obs', 'a', 1, '{}');
SELECT * FROM ordering.deliver('obs', 'a', 6, '{}');
SELECT * FROM ordering.deliver('obs', 'a', 5, '{}');
SELECT * FROM ordering.skip_gap('obs', 'a');
-- a rolled-back skip is not counted
BEGIN;
SELECT * FROM ordering.deliver('obs', 'a', 9, '{}');
SELECT * FROM ordering.skip_gap('obs', 'a');
ROLLBACK;
SELECT consumer, events_consumed, events_applied, events_parked, events_drained,
       events_skipped, events_dead_lettered, dead_letters_current, parked_current,
       oldest_gap_age
  FROM ordering.stats WHERE consumer = 'obs';

-- dead_letters_current counts the dead letters of each consumer, which also
-- makes a consumer show up; oldest_gap_age is the age of the lowest parked
-- event of the oldest open gap, and events parked behind a dead letter are
-- no gap.  All in one transaction, so that now() is the same everywhere.
BEGIN;
INSERT INTO ordering.dead_letter_events (consumer, resource_id, seq, payload, message)
VALUES ('obs', 'blocked', 3, '{}', 'poison'),
       ('obs', 'blocked-late', 10, '{}', 'poison'),
       ('obs-dead-only', 'x', 1, '{}', 'poison');
INSERT INTO ordering.positions (consumer, resource_id, position)
VALUES ('obs', 'blocked', 2), ('obs', 'blocked-late', 2), ('obs', 'gap', 4);
INSERT INTO ordering.parked (consumer, resource_id, seq, payload, parked_at) VALUES
    -- behind the dead letter at 3: waits for it, no gap (and the oldest)
    ('obs', 'blocked', 5, '{}', now() - interval '5 hours'),
    -- below the dead letter at 10, above position + 1: a real gap
    ('obs', 'blocked-late', 6, '{}', now() - interval '2 hours'),
    -- a plain gap: the lowest parked event decides, not the oldest
    ('obs', 'gap', 7, '{}', now() - interval '1 hour'),
    ('obs', 'gap', 8, '{}', now() - interval '3 hours');
SELECT consumer, dead_letters_current, parked_current, oldest_gap_age,
       events_consumed
  FROM ordering.stats ORDER BY consumer;
-- without the gap below the dead letter, the plain gap is the oldest
DELETE FROM ordering.parked WHERE resource_id = 'blocked-late';
SELECT oldest_gap_age FROM ordering.stats WHERE consumer = 'obs';
-- without gaps, NULL (and 0 in the metrics)
DELETE FROM ordering.parked WHERE resource_id = 'gap';
SELECT oldest_gap_age FROM ordering.stats WHERE consumer = 'obs';
SELECT line FROM regexp_split_to_table(ordering.metrics(), E'\n') AS line
 WHERE line ~ '^ordering_(dead_letters_current|oldest_gap_age_seconds|events_skipped_total|events_dead_lettered_total)\{';
ROLLBACK;

-- Sequence conflicts: counted although the refusing transaction rolls back,
-- once per refused number, per stream.
SELECT ordering.emit('obs-p', 'e', '{}');
SELECT ordering.emit('obs-p', 'e', '{}', expected_seq => 5);
\echo :SQLSTATE
BEGIN;
SAVEPOINT s;
SELECT ordering.emit('obs-p', 'e', '{}', expected_seq => 1);
ROLLBACK TO SAVEPOINT s;
SELECT ordering.emit('obs-p', 'e', '{}', expected_seq => 2);
COMMIT;
CREATE TABLE obs_outbox (id bigserial PRIMARY KEY, account text NOT NULL,
                         version bigint NOT NULL);
SELECT ordering.attach('obs_outbox', 'account', 'version', 'obs stream');
INSERT INTO obs_outbox (account, version) VALUES ('a', 7);
\echo :SQLSTATE
SELECT stream, sequences_assigned, sequence_conflicts
  FROM ordering.stream_stats ORDER BY stream;
SELECT line FROM regexp_split_to_table(ordering.metrics(), E'\n') AS line
 WHERE line LIKE 'ordering_sequence_conflicts_total%';
SELECT ordering.detach('obs_outbox');
DROP TABLE obs_outbox;

-- The relay's lag: the oldest unpublished row of ordering.outbox by id, 0
-- when nothing waits.
BEGIN;
UPDATE ordering.outbox SET published_at = now() WHERE published_at IS NULL;
SELECT oldest_unpublished_age FROM ordering.outbox_lag;
INSERT INTO ordering.outbox (resource_id, event_type, payload, created_at)
VALUES ('obs-lag', 'e', '{}', now() - interval '90 seconds'),
       ('obs-lag', 'e', '{}', now() - interval '10 minutes');
SELECT oldest_unpublished_age FROM ordering.outbox_lag;
SELECT line FROM regexp_split_to_table(ordering.metrics(), E'\n') AS line
 WHERE line LIKE 'ordering_outbox_oldest_unpublished_age_seconds %';
ROLLBACK;
-- the probe can be one index scan of the relays' partial index (on a small
-- table the planner may rightly prefer to read it all)
SET enable_seqscan = off;
-- (the plan's lines, less those whose wording changed between versions)
CREATE FUNCTION pg_temp.plan_of(query text) RETURNS SETOF text
    LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        IF line NOT LIKE '%InitPlan%' THEN
            RETURN NEXT line;
        END IF;
    END LOOP;
END $$;
SELECT pg_temp.plan_of('SELECT * FROM ordering.outbox_lag');
RESET enable_seqscan;

-- Hot resources.  A skewed stream: resource r<i> gets 1000 / i sequence
-- numbers (i = 1 .. 200, about 5,800 in all), offered in a shuffled order
-- over 10 transactions.  ordering.sequences has the true count of each.
SHOW ordering.hot_resources_size;
DO $$
BEGIN
    FOR t IN 0..9 LOOP
        PERFORM ordering.next_sequence('obs hot', 'r' || i)
           FROM generate_series(1, 200) i, generate_series(1, 1000 / i) j
          WHERE (i * 7919 + j) % 10 = t
          ORDER BY md5(i || '/' || j);
        COMMIT;
    END LOOP;
END
$$;
CREATE TEMP TABLE obs_truth AS
SELECT resource_id, last_seq AS true_events FROM ordering.sequences WHERE stream = 'obs hot';
CREATE TEMP TABLE obs_bound AS
SELECT sequences_assigned AS total,
       sequences_assigned / current_setting('ordering.hot_resources_size')::bigint AS bound
  FROM ordering.stream_stats WHERE stream = 'obs hot';
SELECT total, bound FROM obs_bound;
-- the busiest five, in order
SELECT resource_id FROM ordering.hot_resources('stream', 'obs hot', 5);
-- every reported count is within its error of the truth, and every error
-- within the stated bound
SELECT count(*) AS reported,
       bool_and(h.events - h.max_error <= t.true_events AND t.true_events <= h.events) AS within_error,
       bool_and(h.max_error <= b.bound) AS error_within_bound
  FROM ordering.hot_resources('stream', 'obs hot', 1000) h
  JOIN obs_truth t USING (resource_id) CROSS JOIN obs_bound b;
-- every resource above the bound is reported
SELECT count(*) AS above_bound,
       count(*) FILTER (WHERE resource_id IN
           (SELECT resource_id FROM ordering.hot_resources('stream', 'obs hot', 1000))) AS reported
  FROM obs_truth CROSS JOIN obs_bound WHERE true_events > bound;
-- n limits the rows; 0 gives none
SELECT count(*) FROM ordering.hot_resources('stream', 'obs hot', 3);
SELECT count(*) FROM ordering.hot_resources('stream', 'obs hot', 0);
SELECT count(*) FROM ordering.hot_resources('stream', 'obs hot');
-- the metrics carry the five busiest, with the counts of the function
SELECT substring(line FROM 'resource="([^"]*)"') AS resource,
       substring(line FROM ' ([0-9]+)$')::bigint = h.events AS same_count
  FROM regexp_split_to_table(ordering.metrics(), E'\n') AS line
  JOIN ordering.hot_resources('stream', 'obs hot', 5) h
    ON h.resource_id = substring(line FROM 'resource="([^"]*)"')
 WHERE line LIKE 'ordering_stream_hot_resource_events_total{stream="obs hot"%'
 ORDER BY h.events DESC;
DELETE FROM ordering.sequences WHERE stream = 'obs hot';

-- A consumer's hot resources count the events handed to it (stale and
-- duplicate ones too); a rolled-back savepoint counts nothing, a released
-- one counts.
SELECT ordering.apply_if_newer('obs-c', 'x', s) FROM generate_series(1, 4) s;
SELECT ordering.apply_if_newer('obs-c', 'x', 2);
SELECT count(*) FROM ordering.deliver('obs-c', 'y', 1, '{}');
BEGIN;
SAVEPOINT a;
SELECT count(*) FROM ordering.deliver('obs-c', 'z', 1, '{}');
ROLLBACK TO SAVEPOINT a;
SAVEPOINT b;
SELECT count(*) FROM ordering.deliver('obs-c', 'y', 2, '{}');
RELEASE SAVEPOINT b;
COMMIT;
SELECT * FROM ordering.hot_resources('consumer', 'obs-c');
-- the same with more resources in a transaction than are kept without an
-- index: k1 .. k20 once, a rolled-back savepoint, a released one with k1 ..
-- k5 again and three new ones, then k1 once more
BEGIN;
SELECT count(ordering.apply_if_newer('obs-i', 'k' || i, 1)) FROM generate_series(1, 20) i;
SAVEPOINT a;
SELECT count(ordering.apply_if_newer('obs-i', 'k' || i, 2)) FROM generate_series(1, 20) i;
ROLLBACK TO SAVEPOINT a;
SAVEPOINT b;
SELECT count(ordering.apply_if_newer('obs-i', 'k' || i, 3)) FROM generate_series(1, 5) i;
SELECT count(ordering.apply_if_newer('obs-i', 'new' || i, 1)) FROM generate_series(1, 3) i;
RELEASE SAVEPOINT b;
SELECT ordering.apply_if_newer('obs-i', 'k1', 4);
COMMIT;
SELECT * FROM ordering.hot_resources('consumer', 'obs-i', 4);
SELECT sum(events), count(*), max(max_error)
  FROM ordering.hot_resources('consumer', 'obs-i', 100);
-- an unknown name has none; bad arguments are refused
SELECT count(*) FROM ordering.hot_resources('consumer', 'nobody');
SELECT * FROM ordering.hot_resources('table', 'obs-c');
\echo :SQLSTATE
SELECT * FROM ordering.hot_resources(NULL, 'obs-c');
\echo :SQLSTATE
SELECT * FROM ordering.hot_resources('consumer', 'obs-c', -1);
\echo :SQLSTATE
-- a reset empties the sketches
SELECT ordering.stats_reset();
SELECT count(*) FROM ordering.hot_resources('consumer', 'obs-c');

-- The decision log: off by default, for superusers only; one JSON line per
-- decision, never the payload.
SHOW ordering.log_decisions;
CREATE ROLE obs_nobody;
SET ROLE obs_nobody;
SET ordering.log_decisions = on;
\echo :SQLSTATE
RESET ROLE;
DROP ROLE obs_nobody;
SET ordering.log_decisions = on;
SET client_min_messages = log;
SELECT count(*) FROM ordering.deliver('obs-log', 'acct "9"', 2, '{"secret": "do not log"}');
SELECT count(*) FROM ordering.deliver('obs-log', 'acct "9"', 2, '{"secret": "do not log"}');
SELECT count(*) FROM ordering.deliver('obs-log', 'acct "9"', 1, '{"secret": "do not log"}');
SELECT count(*) FROM ordering.deliver('obs-log', 'acct "9"', 1, '{}');
SELECT ordering.apply_if_newer('obs-log', 'state', 3);
SELECT ordering.apply_if_newer('obs-log', 'state', 2);
SELECT ordering.apply_if_newer('obs-log', 'state', 3);
SELECT count(*) FROM ordering.deliver('obs-log', 'g', 4, '{}');
UPDATE ordering.parked SET parked_at = now() - interval '1 day' WHERE consumer = 'obs-log';
SELECT count(*) FROM ordering.sweep_gaps();
SELECT count(*) FROM ordering.skip_gap('obs-log', 'g');
RESET client_min_messages;
RESET ordering.log_decisions;
SELECT count(*) FROM ordering.deliver('obs-log', 'g', 9, '{}');

-- 1.2: no counter wraps or goes negative: near seq 2^63 - 1 one call adds
-- about 2^63 to events_skipped (a dead letter discarded at the top) or to
-- the reorder distance sum (an event parked there); the counters stop at
-- 9223372036854775807 instead of wrapping, in the view and in the metrics.
SELECT ordering.dead_letter('obs-max', 'a', 9223372036854775807, '{}', 'poison');
SELECT count(*) FROM ordering.discard_dead_letter('obs-max', 'a');
SELECT ordering.dead_letter('obs-max', 'b', 9223372036854775807, '{}', 'poison');
SELECT count(*) FROM ordering.discard_dead_letter('obs-max', 'b');
SELECT count(*) FROM ordering.deliver('obs-max', 'c', 9223372036854775807, '{}');
SELECT count(*) FROM ordering.deliver('obs-max', 'd', 9223372036854775807, '{}');
SELECT count(*) FROM ordering.deliver('obs-max', 'e', 3, '{}');
SELECT events_skipped, reorder_distance_sum, events_parked, events_dead_lettered
  FROM ordering.stats WHERE consumer = 'obs-max';
SELECT line FROM regexp_split_to_table(ordering.metrics(), E'\n') AS line
 WHERE line ~ '^ordering_(events_skipped_total|event_reorder_distance_sum)\{consumer="obs-max"';

DELETE FROM ordering.parked;
DELETE FROM ordering.positions;
DELETE FROM ordering.gap_requests;
DELETE FROM ordering.dead_letter_events;
DELETE FROM ordering.outbox WHERE resource_id LIKE 'obs-%';
DELETE FROM ordering.sequences WHERE resource_id LIKE 'obs-%' OR stream = 'obs stream';
SELECT ordering.stats_reset();
