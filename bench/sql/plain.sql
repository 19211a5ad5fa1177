\set r random(1, :resources)
INSERT INTO plain_outbox (resource_id, seq, event_type, payload) VALUES ('r' || :r, nextval('plain_seq'), 'e', '{"k": 1}');
