-- The floor: no trigger, the client supplies the seq as a literal (a random
-- bigint: the unique (resource_id, seq) constraint is all it must satisfy).
\set r random(1, :resources)
\set s random(1, 9000000000000000000)
INSERT INTO plain_outbox (resource_id, seq, event_type, payload) VALUES ('r' || :r, :s, 'e', '{"k": 1}');
