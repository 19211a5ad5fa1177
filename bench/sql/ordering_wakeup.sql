-- ordering.sql into a table attached with the relay wake-up on
-- (ordering.wake_relays): the same sequenced insert, and one
-- NOTIFY ordering_outbox per transaction at commit, which takes a
-- database-wide lock while it writes the notification queue.  Its distance
-- to ordering is what the wake-up costs a producer.
\set r random(1, :resources)
INSERT INTO wake_outbox (resource_id, event_type, payload) VALUES ('r' || :r, 'e', '{"k": 1}');
