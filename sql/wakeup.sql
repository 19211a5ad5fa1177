-- ordering.wake_relays(): the relay wake-up of an attached table, kept in
-- ordering.attachments.  What the wake-up sends, and when, is shown by the
-- isolation spec wakeup_notify (a listener in another session).
\set VERBOSITY terse

CREATE TABLE wk_out (id bigserial PRIMARY KEY, resource_id text NOT NULL, seq bigint);
SELECT ordering.attach('wk_out', stream => 'wk stream');
CREATE TABLE wk_parts (resource_id text NOT NULL, seq bigint) PARTITION BY LIST (resource_id);
CREATE TABLE wk_parts_a PARTITION OF wk_parts FOR VALUES IN ('a');
SELECT ordering.attach('wk_parts');
CREATE TABLE wk_plain (resource_id text, seq bigint);

-- Off by default, for every attached table.
SELECT tbl, stream, wake_relays FROM ordering.attachments
 WHERE tbl IN ('wk_out'::regclass, 'wk_parts'::regclass, 'ordering.outbox'::regclass)
 ORDER BY stream;

-- On and off; detaching and attaching again keeps the setting.
SELECT ordering.wake_relays('wk_out');
SELECT wake_relays FROM ordering.attachments WHERE tbl = 'wk_out'::regclass;
SELECT ordering.detach('wk_out');
SELECT ordering.attach('wk_out');
SELECT stream, wake_relays FROM ordering.attachments WHERE tbl = 'wk_out'::regclass;
SELECT ordering.wake_relays('wk_out', false);
SELECT wake_relays FROM ordering.attachments WHERE tbl = 'wk_out'::regclass;

-- Errors: NULLs 22004; a table that is not attached (a partition follows
-- its partitioned table and is not attached itself) 42704; no such
-- relation 42P01; a read-only transaction 25006.
SELECT ordering.wake_relays(NULL);
SELECT ordering.wake_relays('wk_out', NULL);
SELECT ordering.wake_relays('wk_plain');
SELECT ordering.wake_relays('wk_parts_a');
SELECT ordering.wake_relays(4294967295::oid::regclass);
BEGIN READ ONLY;
SELECT ordering.wake_relays('wk_out');
ROLLBACK;

-- It needs the TRIGGER privilege on the table, as attaching it does.
CREATE ROLE regress_wk_producer;
GRANT USAGE ON SCHEMA ordering TO regress_wk_producer;
GRANT EXECUTE ON FUNCTION ordering.wake_relays(regclass, boolean) TO regress_wk_producer;
SET ROLE regress_wk_producer;
SELECT ordering.wake_relays('wk_out');
RESET ROLE;
GRANT TRIGGER ON wk_out TO regress_wk_producer;
SET ROLE regress_wk_producer;
SELECT ordering.wake_relays('wk_out');
RESET ROLE;
SELECT wake_relays FROM ordering.attachments WHERE tbl = 'wk_out'::regclass;

DROP TABLE wk_out, wk_parts, wk_plain;
REVOKE ALL ON SCHEMA ordering FROM regress_wk_producer;
REVOKE ALL ON FUNCTION ordering.wake_relays(regclass, boolean) FROM regress_wk_producer;
DROP ROLE regress_wk_producer;
