-- The floor: no trigger, the client supplies the seqs (see plain.sql).
\set s random(1, 8999999999999999000)
INSERT INTO plain_outbox (resource_id, seq, event_type, payload) SELECT 'r' || (random() * :resources)::int, :s::bigint + g, 'e', '{"k": 1}' FROM generate_series(1, 100) g;
