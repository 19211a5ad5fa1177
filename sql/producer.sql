-- Producer side: sequencing trigger, counters, the ready outbox.
\set VERBOSITY terse

-- The ready outbox numbers each resource on its own, from 1, with no gap.
SELECT ordering.emit('customer-1', 'address.updated', '{"street": "A"}');
SELECT ordering.emit('customer-1', 'address.updated', '{"street": "B"}');
SELECT ordering.emit('customer-2', 'address.updated', '{"street": "C"}');
SELECT ordering.emit('customer-1', 'address.updated', '{"street": "D"}');
SELECT resource_id, seq, payload->>'street' AS street
  FROM ordering.outbox ORDER BY id;
SELECT ordering.last_sequence('ordering.outbox', 'customer-1'),
       ordering.last_sequence('ordering.outbox', 'customer-2'),
       ordering.last_sequence('ordering.outbox', 'nobody');

-- A multi-row INSERT gets consecutive numbers per resource, in row order.
INSERT INTO ordering.outbox (resource_id, event_type, payload)
SELECT 'batch-' || (i % 3), 'step', pg_catalog.jsonb_build_object('i', i)
  FROM generate_series(1, 9) i;
SELECT resource_id, array_agg(seq ORDER BY id) AS seqs, array_agg((payload->>'i')::int ORDER BY id) AS rows
  FROM ordering.outbox WHERE resource_id LIKE 'batch-%' GROUP BY 1 ORDER BY 1;

-- A rolled-back insert gives its number back.
BEGIN;
SELECT ordering.emit('customer-2', 'x', '{}');
ROLLBACK;
SELECT ordering.emit('customer-2', 'x', '{}');

-- So does a subtransaction rolled back to its savepoint.
BEGIN;
SELECT ordering.emit('customer-3', 'x', '{}');
SAVEPOINT s;
SELECT ordering.emit('customer-3', 'x', '{}');
ROLLBACK TO SAVEPOINT s;
SELECT ordering.emit('customer-3', 'x', '{}');
COMMIT;
SELECT seq FROM ordering.outbox WHERE resource_id = 'customer-3' ORDER BY seq;

-- A supplied sequence number is an expected-version assertion.
SELECT ordering.emit('customer-1', 'x', '{}', 4);
SELECT ordering.emit('customer-1', 'x', '{}', 4);   -- 40001: 5 is next
\echo :SQLSTATE
SELECT ordering.emit('customer-1', 'x', '{}', 9);   -- 40001
\echo :SQLSTATE
SELECT ordering.emit('customer-1', 'x', '{}', 0);   -- 40001
\echo :SQLSTATE
INSERT INTO ordering.outbox (resource_id, seq, event_type, payload)
VALUES ('customer-1', 5, 'x', '{}') RETURNING seq;
\set VERBOSITY default
SELECT ordering.emit('customer-1', 'x', '{}', 1);
\echo :SQLSTATE
-- A number beyond the next is no concurrent producer's doing, but what
-- history loaded without its counters looks like: the hint says so.
INSERT INTO ordering.outbox (resource_id, seq, event_type, payload)
VALUES ('customer-1', 9, 'x', '{}');
-- emit() is never a restore: a number beyond the next one is asserted
-- wrongly, and the hint says which number to assert.
SELECT ordering.emit('customer-1', 'x', '{}', 9);
-- and 0 is no sequence number at all
SELECT ordering.emit('customer-1', 'x', '{}', 0);
-- nor is an INSERT run by a function
DO $$ BEGIN
    INSERT INTO ordering.outbox (resource_id, seq, event_type, payload)
    VALUES ('customer-1', 9, 'x', '{}');
END $$;
-- a COPY is what pg_restore runs: any refused number gets the restore hint
COPY ordering.outbox (resource_id, seq, event_type, payload) FROM stdin;
customer-1	1	x	{}
\.
\set VERBOSITY terse
SELECT ordering.last_sequence('ordering.outbox', 'customer-1');

-- NULL resource: 23502, nothing allocated.
\set VERBOSITY default
SELECT ordering.emit(NULL, 'x', '{}');
\set VERBOSITY terse
\echo :SQLSTATE
INSERT INTO ordering.outbox (resource_id, event_type, payload) VALUES (NULL, 'x', '{}');
\echo :SQLSTATE
SELECT ordering.next_sequence('s', NULL);
\echo :SQLSTATE
SELECT ordering.next_sequence(NULL, 'r');
\echo :SQLSTATE
-- NULL event type or payload: the table's NOT NULL constraints.
SELECT ordering.emit('customer-9', NULL, '{}');
\echo :SQLSTATE
SELECT ordering.emit('customer-9', 'x', NULL);
\echo :SQLSTATE
SELECT ordering.last_sequence('ordering.outbox', 'customer-9');

-- Counters survive deletion of the rows: sequences never restart.
DELETE FROM ordering.outbox WHERE resource_id = 'customer-2';
SELECT ordering.emit('customer-2', 'x', '{}');
TRUNCATE ordering.outbox;
SELECT ordering.emit('customer-1', 'x', '{}');

-- next_sequence for version columns and custom outboxes.
SELECT ordering.next_sequence('orders', 'o-1'), ordering.next_sequence('orders', 'o-1'),
       ordering.next_sequence('orders', 'o-2'), ordering.next_sequence('invoices', 'o-1');
SELECT ordering.last_sequence('orders', 'o-1');
SELECT * FROM ordering.sequences WHERE stream IN ('orders', 'invoices') ORDER BY 1, 2;

-- Writing counters needs a read-write transaction.
BEGIN READ ONLY;
SELECT ordering.next_sequence('orders', 'o-1');
\echo :SQLSTATE
ROLLBACK;

-- The counter stops at the largest bigint instead of wrapping.
INSERT INTO ordering.sequences VALUES ('edge', 'max', 9223372036854775806);
SELECT ordering.next_sequence('edge', 'max');
\echo :SQLSTATE
SELECT ordering.next_sequence('edge', 'max');
\echo :SQLSTATE
SELECT ordering.last_sequence('edge', 'max');

-- Inserting a counter that exists merges (restores load counters this way).
INSERT INTO ordering.sequences VALUES ('orders', 'o-1', 1);
SELECT ordering.last_sequence('orders', 'o-1');
INSERT INTO ordering.sequences VALUES ('orders', 'o-1', 40);
SELECT ordering.last_sequence('orders', 'o-1');
SELECT ordering.next_sequence('orders', 'o-1');
\echo :SQLSTATE

-- attach: a user's own outbox, with its own column names and stream.
CREATE TABLE my_events (
    id serial PRIMARY KEY,
    account uuid,
    version bigint,
    body text
);
SELECT ordering.attach('my_events', 'account', 'version');
INSERT INTO my_events (account, body) VALUES
    ('00000000-0000-0000-0000-000000000001', 'a'),
    ('00000000-0000-0000-0000-000000000002', 'b'),
    ('00000000-0000-0000-0000-000000000001', 'c');
SELECT account, version, body FROM my_events ORDER BY id;
SELECT stream, resource_id, last_seq FROM ordering.sequences
 WHERE stream = 'public.my_events' ORDER BY 2;

-- The stream name is frozen at attach: renaming the table continues it.
ALTER TABLE my_events RENAME TO my_renamed_events;
INSERT INTO my_renamed_events (account, body)
VALUES ('00000000-0000-0000-0000-000000000001', 'd') RETURNING version;

-- Attaching twice is refused; detach keeps the counters.
SELECT ordering.attach('my_renamed_events', 'account', 'version');
\echo :SQLSTATE
SELECT ordering.detach('my_renamed_events');
\echo :SQLSTATE
SELECT ordering.detach('my_renamed_events');
\echo :SQLSTATE
INSERT INTO my_renamed_events (account, version, body)
VALUES ('00000000-0000-0000-0000-000000000001', NULL, 'unsequenced') RETURNING version;
SELECT ordering.attach('my_renamed_events', 'account', 'version', 'public.my_events');
INSERT INTO my_renamed_events (account, body)
VALUES ('00000000-0000-0000-0000-000000000001', 'e') RETURNING version;

-- Two tables may share an explicit stream: one numbering across both.
CREATE TABLE shared_a (r text, s bigint);
CREATE TABLE shared_b (r text, s bigint);
SELECT ordering.attach('shared_a', 'r', 's', 'shared');
SELECT ordering.attach('shared_b', 'r', 's', 'shared');
INSERT INTO shared_a (r) VALUES ('k');
INSERT INTO shared_b (r) VALUES ('k');
INSERT INTO shared_a (r) VALUES ('k');
SELECT 'a' AS t, s FROM shared_a UNION ALL SELECT 'b', s FROM shared_b ORDER BY s;

-- attach validates the table and its columns up front.
CREATE TABLE bad_events (resource_id text, seq integer, other bigint);
CREATE VIEW bad_view AS SELECT 1 AS resource_id, 1::bigint AS seq;
SELECT ordering.attach('bad_events');                          -- integer seq
\echo :SQLSTATE
SELECT ordering.attach('bad_events', 'nope', 'other');          -- no column
\echo :SQLSTATE
SELECT ordering.attach('bad_events', 'resource_id', 'nope');    -- no column
\echo :SQLSTATE
SELECT ordering.attach('bad_view');                            -- not a table
\echo :SQLSTATE
SELECT ordering.attach('bad_events', 'resource_id', 'other', '');
\echo :SQLSTATE
SELECT ordering.attach(NULL);
\echo :SQLSTATE
SELECT ordering.attach('no_such_table');
\echo :SQLSTATE
SELECT ordering.detach('bad_events');                          -- not attached
\echo :SQLSTATE

-- The trigger refuses any other use, with a clear error at first use.
CREATE TRIGGER wrong_after AFTER INSERT ON bad_events
    FOR EACH ROW EXECUTE FUNCTION ordering.sequence_trigger('resource_id', 'other');
INSERT INTO bad_events VALUES ('r', 1, NULL);
\echo :SQLSTATE
DROP TRIGGER wrong_after ON bad_events;
CREATE TRIGGER wrong_stmt BEFORE INSERT ON bad_events
    FOR EACH STATEMENT EXECUTE FUNCTION ordering.sequence_trigger('resource_id', 'other');
INSERT INTO bad_events VALUES ('r', 1, NULL);
\echo :SQLSTATE
DROP TRIGGER wrong_stmt ON bad_events;
CREATE TRIGGER wrong_update BEFORE UPDATE ON bad_events
    FOR EACH ROW EXECUTE FUNCTION ordering.sequence_trigger('resource_id', 'other');
INSERT INTO bad_events VALUES ('r', 1, NULL);
\echo :SQLSTATE
UPDATE bad_events SET other = 1;
\echo :SQLSTATE
DROP TRIGGER wrong_update ON bad_events;
CREATE TRIGGER wrong_type BEFORE INSERT ON bad_events
    FOR EACH ROW EXECUTE FUNCTION ordering.sequence_trigger('resource_id', 'seq');
INSERT INTO bad_events VALUES ('r', NULL, NULL);
\echo :SQLSTATE
DROP TRIGGER wrong_type ON bad_events;
CREATE TRIGGER wrong_column BEFORE INSERT ON bad_events
    FOR EACH ROW EXECUTE FUNCTION ordering.sequence_trigger('nope', 'other');
INSERT INTO bad_events VALUES ('r', NULL, NULL);
\echo :SQLSTATE
DROP TRIGGER wrong_column ON bad_events;
CREATE TRIGGER wrong_args BEFORE INSERT ON bad_events
    FOR EACH ROW EXECUTE FUNCTION ordering.sequence_trigger();
INSERT INTO bad_events VALUES ('r', NULL, NULL);
\echo :SQLSTATE
DROP TRIGGER wrong_args ON bad_events;
SELECT ordering.sequence_trigger();
\echo :SQLSTATE
SELECT count(*) FROM bad_events;

-- Relays: claim, mark published, republish, purge.
TRUNCATE ordering.outbox;
SELECT ordering.emit('r-' || (i % 2), 'e', pg_catalog.jsonb_build_object('i', i))
  FROM generate_series(1, 6) i;
SELECT resource_id, seq FROM ordering.claim_unpublished(4) ORDER BY id;
SELECT ordering.mark_published(array_agg(id)) FROM ordering.claim_unpublished(4);
SELECT ordering.mark_published(array_agg(id)) FROM ordering.outbox;   -- only the rest
SELECT ordering.mark_published('{}');
SELECT count(*) FROM ordering.claim_unpublished();
SELECT ordering.republish('r-1', 2);
SELECT resource_id, seq FROM ordering.claim_unpublished() ORDER BY id;
SELECT ordering.mark_published(array_agg(id)) FROM ordering.claim_unpublished();
SELECT ordering.republish('r-0', 1, 2);
SELECT ordering.mark_published(array_agg(id)) FROM ordering.claim_unpublished();
SELECT ordering.republish('r-0', 0);
\echo :SQLSTATE
SELECT ordering.republish('r-0', 3, 2);
\echo :SQLSTATE
SELECT ordering.republish('r-0', NULL);
\echo :SQLSTATE
-- Purging keeps what is not yet published and what is too recent.
SELECT ordering.republish('r-0', 3, 3);
UPDATE ordering.outbox SET published_at = now() - interval '2 days'
 WHERE published_at IS NOT NULL AND resource_id = 'r-1';
SELECT ordering.purge_published('1 day');
SELECT resource_id, seq, published_at IS NULL AS unpublished
  FROM ordering.outbox ORDER BY id;
-- Republishing a purged range says so and returns what it could.
SELECT ordering.republish('r-1', 1, 3);
SELECT ordering.emit('r-1', 'e', '{}');   -- the counter did not restart
