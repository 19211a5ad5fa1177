-- Dead letters: a poison event blocks only its own (consumer, resource).
\set VERBOSITY terse

CREATE TABLE applied (consumer text, resource_id text, seq bigint, payload jsonb,
                      at serial);
-- A handler that rejects poison payloads until an operator "fixes" it.
CREATE TABLE handler_fixed (fixed boolean);
INSERT INTO handler_fixed VALUES (false);
CREATE FUNCTION apply_event(resource_id text, seq bigint, payload jsonb) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO applied (consumer, resource_id, seq, payload) VALUES ('dl', resource_id, seq, payload);
    IF payload ? 'poison' AND NOT (SELECT fixed FROM handler_fixed) THEN
        RAISE EXCEPTION 'cannot apply event % of %', seq, resource_id
            USING ERRCODE = 'check_violation', DETAIL = 'The payload is poison.';
    END IF;
    IF payload ? 'busy' THEN
        RAISE EXCEPTION 'try again' USING ERRCODE = 'serialization_failure';
    END IF;
END
$$;
CREATE FUNCTION state(r text) RETURNS TABLE (pos bigint, dead bigint, attempts int,
                                             parked bigint[], applied bigint[])
LANGUAGE sql AS $$
    SELECT ordering.position('dl', r),
           (SELECT seq FROM ordering.dead_letters WHERE consumer = 'dl' AND resource_id = r),
           (SELECT attempts FROM ordering.dead_letters WHERE consumer = 'dl' AND resource_id = r),
           (SELECT array_agg(seq ORDER BY seq) FROM ordering.parked WHERE consumer = 'dl' AND resource_id = r),
           (SELECT array_agg(seq ORDER BY at) FROM applied WHERE consumer = 'dl' AND resource_id = r)
$$;

-- The handler fails on event 2: its work is undone, the event becomes the
-- resource's dead letter, and the call returns normally (0 ran), so the
-- broker acks.
SELECT ordering.deliver('dl', 'a', 1, '{}', 'apply_event(text, bigint, jsonb)', on_error => 'dead_letter');
SELECT ordering.deliver('dl', 'a', 2, '{"poison": true}', 'apply_event(text, bigint, jsonb)', on_error => 'dead_letter');
SELECT * FROM state('a');
SELECT consumer, resource_id, seq, payload, sqlstate, message, attempts, parked_behind, detail
  FROM ordering.dead_letters;
-- A redelivery of the dead event is a duplicate; later events park behind it.
SELECT ordering.deliver('dl', 'a', 2, '{"poison": true}', 'apply_event(text, bigint, jsonb)', on_error => 'dead_letter');
SELECT ordering.deliver('dl', 'a', 4, '{}', 'apply_event(text, bigint, jsonb)', on_error => 'dead_letter');
SELECT ordering.deliver('dl', 'a', 3, '{}', 'apply_event(text, bigint, jsonb)', on_error => 'dead_letter');
SELECT * FROM state('a');
SELECT parked_behind FROM ordering.dead_letters WHERE resource_id = 'a';
-- Other resources of the consumer keep flowing.
SELECT ordering.deliver('dl', 'b', 1, '{}', 'apply_event(text, bigint, jsonb)', on_error => 'dead_letter');
SELECT * FROM state('b');

-- The parking cap applies behind a block: one more is refused, nothing stored.
SET ordering.max_parked_per_resource = 2;
SELECT ordering.deliver('dl', 'a', 5, '{}', 'apply_event(text, bigint, jsonb)', on_error => 'dead_letter');
\echo :SQLSTATE
RESET ordering.max_parked_per_resource;
-- A blocked resource is not a gap, however old its parked events.
SET ordering.gap_deadline = '1s';
SELECT pg_sleep(1.1);
SELECT count(*) AS gaps FROM ordering.open_gaps WHERE consumer = 'dl';
SELECT count(*) AS requested FROM ordering.sweep_gaps() WHERE consumer = 'dl';
RESET ordering.gap_deadline;

-- Transient errors are raised, so the broker retries: nothing is stored.
SELECT ordering.deliver('dl', 'c', 1, '{"busy": true}', 'apply_event(text, bigint, jsonb)', on_error => 'dead_letter');
\echo :SQLSTATE
SELECT * FROM state('c');
-- With on_error => 'raise' (the five-argument form) a failure goes up.
SELECT ordering.deliver('dl', 'c', 1, '{"poison": true}', 'apply_event(text, bigint, jsonb)');
\echo :SQLSTATE
SELECT ordering.deliver('dl', 'c', 1, '{"poison": true}', 'apply_event(text, bigint, jsonb)', on_error => 'raise');
\echo :SQLSTATE
SELECT ordering.deliver('dl', 'c', 1, '{}', 'apply_event(text, bigint, jsonb)', on_error => 'skip');
\echo :SQLSTATE
SELECT ordering.deliver('dl', 'c', 1, '{}', 'apply_event(text, bigint, jsonb)', on_error => NULL);
\echo :SQLSTATE

-- A parked event that fails while draining is dead-lettered the same way,
-- and the drain stops there; the events behind it stay parked.
SELECT ordering.deliver('dl', 'd', 3, '{"poison": true}', 'apply_event(text, bigint, jsonb)', on_error => 'dead_letter');
SELECT ordering.deliver('dl', 'd', 4, '{}', 'apply_event(text, bigint, jsonb)', on_error => 'dead_letter');
SELECT ordering.deliver('dl', 'd', 1, '{}', 'apply_event(text, bigint, jsonb)', on_error => 'dead_letter');
SELECT ordering.deliver('dl', 'd', 2, '{}', 'apply_event(text, bigint, jsonb)', on_error => 'dead_letter');
SELECT * FROM state('d');

-- Retrying with a handler that still fails keeps the block and counts an
-- attempt; nothing else changes.
SELECT ordering.retry_dead_letter('dl', 'a', 'apply_event(text, bigint, jsonb)');
SELECT * FROM state('a');
-- Fixed: the dead event and the run behind it apply, in order.
UPDATE handler_fixed SET fixed = true;
SELECT ordering.retry_dead_letter('dl', 'a', 'apply_event(text, bigint, jsonb)');
SELECT * FROM state('a');
SELECT ordering.retry_dead_letter('dl', 'a', 'apply_event(text, bigint, jsonb)') AS nothing_to_retry;
UPDATE handler_fixed SET fixed = false;

-- Table-form consumers record a dead letter themselves, with a reason.
SELECT * FROM ordering.deliver('dl', 'e', 1, '{}');
SELECT ordering.dead_letter('dl', 'e', 1, '{}', 'too late');   -- applied already
\echo :SQLSTATE
-- Above position + 1: the events between still apply; the block starts there.
SELECT ordering.dead_letter('dl', 'e', 3, '{"n": 3}', 'bad address');
SELECT seq, sqlstate, message, attempts FROM ordering.dead_letters WHERE resource_id = 'e';
SELECT * FROM ordering.deliver('dl', 'e', 4, '{"n": 4}');
SELECT * FROM ordering.deliver('dl', 'e', 2, '{"n": 2}');
SELECT ordering.dead_letter('dl', 'e', 5, '{}', 'behind');     -- behind the block
\echo :SQLSTATE
SELECT ordering.position('dl', 'e'),
       (SELECT array_agg(seq ORDER BY seq) FROM ordering.parked WHERE resource_id = 'e') AS parked;
-- Retrying returns the dead event and the run behind it; a rollback keeps
-- the block.
BEGIN;
SELECT * FROM ordering.retry_dead_letter('dl', 'e');
ROLLBACK;
SELECT seq FROM ordering.dead_letters WHERE resource_id = 'e';
SELECT * FROM ordering.retry_dead_letter('dl', 'e');
SELECT ordering.position('dl', 'e'), (SELECT count(*) FROM ordering.dead_letters WHERE resource_id = 'e') AS dead;

-- A dead letter whose predecessors have not all arrived parks when retried.
SELECT ordering.dead_letter('dl', 'f', 3, '{}', 'x');
SELECT * FROM ordering.retry_dead_letter('dl', 'f');
SELECT ordering.position('dl', 'f'),
       (SELECT array_agg(seq) FROM ordering.parked WHERE resource_id = 'f') AS parked,
       (SELECT count(*) FROM ordering.dead_letters WHERE resource_id = 'f') AS dead;

-- Discarding gives up on the dead event (and what was missing before it):
-- the position moves past it and the run behind it drains.
SELECT * FROM state('d');
SELECT * FROM ordering.discard_dead_letter('dl', 'd');
SELECT ordering.position('dl', 'd'), (SELECT count(*) FROM ordering.dead_letters WHERE resource_id = 'd') AS dead;
SELECT * FROM ordering.discard_dead_letter('dl', 'd') AS nothing_to_discard;

-- skip_gap on a blocked resource gives up only on what is missing before the
-- dead letter; the block stays.
SELECT ordering.dead_letter('dl', 'g', 4, '{}', 'x');
SELECT * FROM ordering.deliver('dl', 'g', 6, '{}');
SELECT * FROM ordering.skip_gap('dl', 'g');
SELECT ordering.position('dl', 'g'), (SELECT seq FROM ordering.dead_letters WHERE resource_id = 'g') AS dead;

-- A block below an existing one (dead_letter() named a seq above position + 1,
-- then an event before it failed): the higher dead event is parked again.
SELECT ordering.dead_letter('dl', 'h', 3, '{"n": 3}', 'later');
SELECT ordering.deliver('dl', 'h', 1, '{}', 'apply_event(text, bigint, jsonb)', on_error => 'dead_letter');
SELECT ordering.deliver('dl', 'h', 2, '{"poison": true}', 'apply_event(text, bigint, jsonb)', on_error => 'dead_letter');
SELECT * FROM state('h');

-- Writes are refused in a read-only transaction.
BEGIN READ ONLY;
SELECT ordering.dead_letter('dl', 'z', 1, '{}', 'x');
\echo :SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT * FROM ordering.retry_dead_letter('dl', 'a');
\echo :SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT * FROM ordering.discard_dead_letter('dl', 'a');
\echo :SQLSTATE
ROLLBACK;

-- Without distributed consumers (one node, a Citus worker) the view's part
-- for those of a Citus coordinator costs a look at an empty table: the
-- function that reads them through Citus is never called.
CREATE FUNCTION distributed_part(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
        IF line ~ 'distributed' THEN
            -- (PostgreSQL 18 prints rows with two decimals)
            RETURN NEXT pg_catalog.regexp_replace(pg_catalog.btrim(line, ' ->'),
                                                  'rows=(\d+)\.00', 'rows=\1');
        END IF;
    END LOOP;
END
$$;
SELECT distributed_part($$SELECT * FROM ordering.dead_letters WHERE consumer = 'dl'$$);
DROP FUNCTION distributed_part(text);

DELETE FROM ordering.positions WHERE consumer = 'dl';
DELETE FROM ordering.parked WHERE consumer = 'dl';
DELETE FROM ordering.dead_letter_events WHERE consumer = 'dl';
DROP TABLE applied, handler_fixed;
DROP FUNCTION apply_event(text, bigint, jsonb), state(text);
