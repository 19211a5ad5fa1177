-- A sequenced insert that wakes the relays: one NOTIFY per producer
-- transaction, sent in the same statement (one round trip, as ordering.sql).
-- NOTIFY takes a database-wide lock at commit, which serializes the commits
-- of all notifying transactions: hot-1 and single-10k show what that costs.
-- Once attach() can send the wake-up itself, this becomes ordering.sql's
-- INSERT into a table attached with that option.
\set r random(1, :resources)
WITH e AS (INSERT INTO ext_outbox (resource_id, event_type, payload) VALUES ('r' || :r, 'e', '{"k": 1}')
           RETURNING seq)
SELECT pg_notify('ordering_outbox', '') FROM e;
