\set r random(1, :resources)
INSERT INTO no_counter_outbox (resource_id, event_type, payload) VALUES ('r' || :r, 'e', '{"k": 1}');
