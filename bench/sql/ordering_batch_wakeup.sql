-- ordering_batch.sql into the table with the relay wake-up on: one NOTIFY
-- for the 100 rows of the transaction.
INSERT INTO wake_outbox (resource_id, event_type, payload) SELECT 'r' || (random() * :resources)::int, 'e', '{"k": 1}' FROM generate_series(1, 100);
