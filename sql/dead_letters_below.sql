-- Events below a dead letter.  dead_letter() may block a resource at a seq
-- above position + 1; the events between still apply, so they may also go
-- missing and park like any early events.  The dead letter sets aside only
-- itself and what comes after it: below it, skip_gap() and the gap sweeper
-- work as on a resource without a block.
\set VERBOSITY terse

CREATE FUNCTION below(r text) RETURNS TABLE (pos bigint, dead bigint, parked bigint[])
LANGUAGE sql AS $$
    SELECT ordering.position('b', r),
           (SELECT seq FROM ordering.dead_letters WHERE consumer = 'b' AND resource_id = r),
           (SELECT array_agg(seq ORDER BY seq) FROM ordering.parked
             WHERE consumer = 'b' AND resource_id = r)
$$;

-- Blocked at 5; 3 (below the block) and 7 (behind it) arrive; 1 and 2 are
-- missing.
SELECT ordering.dead_letter('b', 'x', 5, '{"n": 5}', 'bad address');
SELECT * FROM ordering.deliver('b', 'x', 3, '{"n": 3}');
SELECT * FROM ordering.deliver('b', 'x', 7, '{"n": 7}');
SELECT * FROM below('x');

-- The missing 1 and 2 are a gap: the sweeper asks for them (the events
-- behind the dead letter are no gap: they wait for it).
SET ordering.gap_deadline = '1s';
UPDATE ordering.parked SET parked_at = parked_at - interval '1 minute' WHERE consumer = 'b';
SELECT resource_id, missing_from, missing_to FROM ordering.open_gaps WHERE consumer = 'b';
SELECT resource_id, missing_from, missing_to, attempts FROM ordering.sweep_gaps() WHERE consumer = 'b';
SELECT oldest_gap_age IS NOT NULL AS gap_open FROM ordering.stats WHERE consumer = 'b';

-- skip_gap() gives up on 1 and 2 only, and returns 3, which then drains;
-- it stops before the dead letter, which stays.  Nothing is left parked at
-- or below the position.
SELECT * FROM ordering.skip_gap('b', 'x');
SELECT * FROM below('x');
SELECT count(*) AS requests FROM ordering.gap_requests WHERE consumer = 'b';
SELECT events_skipped, events_drained FROM ordering.stats WHERE consumer = 'b';
-- Now 4 is missing before the dead letter; skip_gap() gives up on it and
-- the dead letter is next.
SELECT * FROM ordering.skip_gap('b', 'x');
SELECT * FROM below('x');
-- Retried, the dead letter applies and 7 stays parked behind the missing 6.
SELECT * FROM ordering.retry_dead_letter('b', 'x');
SELECT * FROM below('x');
SELECT resource_id, missing_from, missing_to FROM ordering.open_gaps WHERE consumer = 'b';

-- Blocked at 4 with 2 parked below it: 1 arrives and drains 2; the run
-- stops before the dead letter.
SELECT ordering.dead_letter('b', 'y', 4, '{"n": 4}', 'bad address');
SELECT * FROM ordering.deliver('b', 'y', 2, '{"n": 2}');
SELECT * FROM ordering.deliver('b', 'y', 1, '{"n": 1}');
SELECT * FROM below('y');
-- 3 arrives: applies; the dead letter is next and waits for a retry.
SELECT * FROM ordering.deliver('b', 'y', 3, '{"n": 3}');
SELECT * FROM below('y');
SELECT count(*) AS gaps FROM ordering.open_gaps WHERE consumer = 'b' AND resource_id = 'y';
RESET ordering.gap_deadline;

DELETE FROM ordering.positions WHERE consumer = 'b';
DELETE FROM ordering.parked WHERE consumer = 'b';
DELETE FROM ordering.dead_letter_events WHERE consumer = 'b';
DELETE FROM ordering.gap_requests WHERE consumer = 'b';
DROP FUNCTION below(text);
