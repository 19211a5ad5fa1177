-- The relay wake-up (src/wakeup.c): with it on, every transaction that
-- stores rows in the table sends NOTIFY ordering_outbox, '<stream>' at
-- commit.  Kept with the attachment (ordering.attachments.wake_relays).
CREATE OR REPLACE FUNCTION ordering.wake_relays(tbl regclass, enabled boolean DEFAULT true)
    RETURNS void
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_wake_relays';
COMMENT ON FUNCTION ordering.wake_relays(regclass, boolean) IS
    'Turns the relay wake-up of an attached table on or off: with it on, each transaction that stores rows in the table sends NOTIFY ordering_outbox with the table''s stream as payload when it commits';
REVOKE EXECUTE ON FUNCTION ordering.wake_relays(regclass, boolean) FROM PUBLIC;
