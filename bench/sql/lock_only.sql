\set r random(1, :resources)
INSERT INTO lock_only_outbox (resource_id, event_type, payload) VALUES ('r' || :r, 'e', '{"k": 1}');
