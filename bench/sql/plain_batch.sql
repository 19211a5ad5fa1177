INSERT INTO plain_outbox (resource_id, seq, event_type, payload) SELECT 'r' || (random() * :resources)::int, nextval('plain_seq'), 'e', '{"k": 1}' FROM generate_series(1, 100);
