-- ordering.sql in the statement shape of ordering_notify.sql, without the
-- NOTIFY: the two differ only by what the NOTIFY costs.
\set r random(1, :resources)
WITH e AS (INSERT INTO ext_outbox (resource_id, event_type, payload) VALUES ('r' || :r, 'e', '{"k": 1}')
           RETURNING seq)
SELECT e.seq FROM e;
