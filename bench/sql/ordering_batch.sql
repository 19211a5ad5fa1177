INSERT INTO ext_outbox (resource_id, event_type, payload) SELECT 'r' || (random() * :resources)::int, 'e', '{"k": 1}' FROM generate_series(1, 100);
