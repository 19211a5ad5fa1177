-- Event stream of this client (see setup_consumer.sql): k counts deliveries,
-- 5% of them repeat the previous event (a duplicate); event j of the stream is
-- (resource j % resources, seq j / resources + 1), shuffled within blocks of
-- resources * d events, so each resource sees d consecutive seqs per block in
-- random order (d = 1: in order).
\set k :k + case when random(1, 100) > 5 then 1 else 0 end
\set bs :resources * :d
\set j (:k / :bs) * :bs + permute(:k % :bs, :bs, :k / :bs)
\set r :j % :resources
\set s :j / :resources + 1
-- The floor of the consumer workloads: the same stream and round trip, and
-- the least any durable consumer writes per event, its position, upserted
-- without any check (nothing ordered, nothing parked).  No implementation
-- can beat it; its ratio bounds what any consumer function could reach.
INSERT INTO floor_positions (resource_id, position) VALUES ('c' || :client_id || '-' || :r, :s)
    ON CONFLICT (resource_id) DO UPDATE SET position = EXCLUDED.position;
