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
-- deliver_handler.sql with on_error => 'dead_letter': the handler calls run
-- in a subtransaction, so that a failing one could be set aside (none fails
-- here: this measures what the guard costs on the path where nothing fails).
SELECT ordering.deliver('bench', 'c' || :client_id || '-' || :r, :s, '{"k": 1}',
                        'bench_apply(text, bigint, jsonb)', on_error => 'dead_letter');
