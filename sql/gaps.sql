-- Gap escalation: ordering.open_gaps, ordering.sweep_gaps(), backoff,
-- cleanup of requests, and the statistics the sweep counts.
-- Parked events are written directly (as the consumer functions would) with
-- fixed, old parked_at values so the output is deterministic.
\set VERBOSITY terse
-- start from empty consumer tables, whatever earlier tests left
DELETE FROM ordering.parked;
DELETE FROM ordering.positions;
DELETE FROM ordering.gap_requests;
SET ordering.gap_deadline = '60s';
SELECT ordering_internal.gap_deadline();
SELECT ordering.stats_reset();

INSERT INTO ordering.positions (consumer, resource_id, position) VALUES
    ('billing', 'r1', 3),
    ('billing', 'r2', 0),
    ('ledger', 'r1', 10),
    ('ledger', 'r9', 4);
INSERT INTO ordering.parked (consumer, resource_id, seq, payload, parked_at) VALUES
    -- billing/r1: 4 and 5 missing, two parked, the older one past the deadline
    ('billing', 'r1', 6, '{}', '2020-01-01 10:00:00+00'),
    ('billing', 'r1', 7, '{}', pg_catalog.now()),
    -- billing/r2: 1 missing (no position row: position 0)
    ('billing', 'r2', 2, '{}', '2020-01-01 11:00:00+00'),
    -- billing/r3: no position at all, 1..4 missing
    ('billing', 'r3', 5, '{}', '2020-01-01 12:00:00+00'),
    -- ledger/r1: a gap, but parked too recently: not yet escalated
    ('ledger', 'r1', 12, '{}', pg_catalog.now()),
    -- ledger/r9: the lowest parked seq follows the position: no gap
    ('ledger', 'r9', 5, '{}', '2020-01-01 13:00:00+00');

-- the open gaps past the deadline
SELECT * FROM ordering.open_gaps ORDER BY consumer, resource_id;

-- first sweep: one request per open gap, attempts 1, detected and requested now
SELECT consumer, resource_id, missing_from, missing_to, parked_count,
       first_parked_at, detected_at = now() AS detected_now,
       last_requested_at = now() AS requested_now, attempts
  FROM ordering.sweep_gaps();
SELECT consumer, resource_id, missing_from, missing_to, parked_count, attempts
  FROM ordering.gap_requests ORDER BY consumer, resource_id;

-- a second sweep within the backoff emits nothing and changes nothing
SELECT count(*) FROM ordering.sweep_gaps();
SELECT consumer, resource_id, attempts FROM ordering.gap_requests ORDER BY 1, 2;

-- backoff: a request is repeated once now() >= last_requested_at +
-- deadline * 2^(attempts - 1).  Backdate the requests: one second short of
-- the first wait (60 s) emits nothing, the full wait repeats them.
UPDATE ordering.gap_requests SET last_requested_at = now() - interval '59 s';
SELECT count(*) FROM ordering.sweep_gaps();
UPDATE ordering.gap_requests SET last_requested_at = now() - interval '60 s';
SELECT consumer, resource_id, attempts FROM ordering.sweep_gaps();
-- attempts 2: the wait doubles to 120 s
UPDATE ordering.gap_requests SET last_requested_at = now() - interval '119 s';
SELECT count(*) FROM ordering.sweep_gaps();
UPDATE ordering.gap_requests SET last_requested_at = now() - interval '120 s';
SELECT consumer, resource_id, attempts FROM ordering.sweep_gaps();
-- the wait is capped at 64 deadlines (64 min here), however many attempts
UPDATE ordering.gap_requests SET attempts = 20,
       last_requested_at = now() - interval '3839 s';
SELECT count(*) FROM ordering.sweep_gaps();
UPDATE ordering.gap_requests SET last_requested_at = now() - interval '3840 s';
SELECT consumer, resource_id, attempts FROM ordering.sweep_gaps();
UPDATE ordering.gap_requests SET attempts = 3;

-- the range follows the position: billing/r1 advanced to 4, 5 still missing;
-- the row is refreshed although it is not emitted again
UPDATE ordering.positions SET position = 4
 WHERE consumer = 'billing' AND resource_id = 'r1';
SELECT count(*) FROM ordering.sweep_gaps();
SELECT consumer, resource_id, missing_from, missing_to, attempts
  FROM ordering.gap_requests WHERE resource_id = 'r1';

-- the gap of billing/r2 fills (the consumer drains 2 and deletes what it
-- parked, but here nobody deletes the request): the sweep removes it
DELETE FROM ordering.parked WHERE consumer = 'billing' AND resource_id = 'r2';
UPDATE ordering.positions SET position = 2
 WHERE consumer = 'billing' AND resource_id = 'r2';
SELECT count(*) FROM ordering.sweep_gaps();
SELECT consumer, resource_id FROM ordering.gap_requests ORDER BY 1, 2;
-- billing/r3: its position catches up to just below the parked event, so
-- there is no gap any more, although the event is still parked
INSERT INTO ordering.positions VALUES ('billing', 'r3', 4);
SELECT count(*) FROM ordering.sweep_gaps();
SELECT consumer, resource_id FROM ordering.gap_requests ORDER BY 1, 2;

-- a new gap after the deadline; the sweep in a rolled-back transaction
-- leaves neither a request nor a count behind
UPDATE ordering.parked SET parked_at = '2020-01-02 00:00:00+00'
 WHERE consumer = 'ledger' AND resource_id = 'r1';
BEGIN;
SELECT consumer, resource_id, missing_from, missing_to FROM ordering.sweep_gaps();
ROLLBACK;
SELECT consumer, resource_id FROM ordering.gap_requests ORDER BY 1, 2;
-- same in a rolled-back savepoint, then for real in a released one
BEGIN;
SAVEPOINT a;
SELECT count(*) FROM ordering.sweep_gaps();
ROLLBACK TO SAVEPOINT a;
SAVEPOINT b;
SELECT consumer, resource_id, attempts FROM ordering.sweep_gaps();
RELEASE SAVEPOINT b;
COMMIT;

-- gaps_escalated counts every emission, first or repeated, of committed
-- sweeps only: billing 3 first + 3 + 3 + 3 repeats = 12 (r1, r2, r3 each
-- emitted 4 times), ledger 1
SELECT consumer, gaps_escalated, parked_current FROM ordering.stats ORDER BY 1;

-- the plan: the parked events are read once, grouped by (consumer,
-- resource); only the pairs past the deadline are looked up in
-- ordering.positions, by primary key: the 20000 positions are never
-- scanned; the distributed consumers' gaps (a Citus coordinator) are
-- behind a one-time filter on an empty table
INSERT INTO ordering.positions (consumer, resource_id, position)
SELECT 'bulk', 'res-' || i, i FROM generate_series(1, 20000) i;
INSERT INTO ordering.parked (consumer, resource_id, seq, payload, parked_at)
SELECT 'bulk', 'res-' || i, i + 2, '{}', now() FROM generate_series(1, 2000) i;
ANALYZE ordering.parked;
ANALYZE ordering.positions;
-- (the plan's lines, with an InitPlan's output written one way: 16 says
-- "$2", 17 and later "(InitPlan 1).col1")
CREATE FUNCTION plan_of(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        RETURN NEXT pg_catalog.regexp_replace(
            pg_catalog.regexp_replace(line, 'One-Time Filter: .*', 'One-Time Filter: (InitPlan 1)'),
            'InitPlan 1 .*', 'InitPlan 1');
    END LOOP;
END
$$;
SELECT plan_of('SELECT * FROM ordering.open_gaps');
DROP FUNCTION plan_of(text);
SELECT consumer, resource_id FROM ordering.open_gaps ORDER BY 1, 2;

-- search_path does not matter
SET search_path = pg_temp;
SELECT count(*) FROM ordering.sweep_gaps();
RESET search_path;

DELETE FROM ordering.parked;
DELETE FROM ordering.positions;
SELECT count(*) FROM ordering.sweep_gaps();
SELECT count(*) FROM ordering.gap_requests;
