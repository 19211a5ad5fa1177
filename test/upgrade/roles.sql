-- In database upgrade_roles, after ALTER EXTENSION ordering UPDATE (or the
-- restore of a dump taken before it): the roles fill.sql gave each set
-- work with the set of this version, and keep no privilege it dropped:
-- producers write the registry of attached tables only through attach(),
-- consumers write no table with SQL, operators check ordering.outbox,
-- monitors read the metrics.  test/upgrade/privileges.sql lists all they
-- hold, for upgrade.sh to compare with a new install.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE SCHEMA upgrade_check;
CREATE FUNCTION upgrade_check.expect(label text, got anycompatible, want anycompatible)
    RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    IF got IS DISTINCT FROM want THEN
        RAISE EXCEPTION 'after the update, %: got %, expected %', label, got, want;
    END IF;
    RETURN 'ok: ' || label;
END
$$;
GRANT USAGE ON SCHEMA upgrade_check TO PUBLIC;
SELECT upgrade_check.expect('producer: no INSERT or UPDATE on ordering.attachments',
       has_table_privilege('upgrade_producer', 'ordering.attachments', 'INSERT')
       OR has_table_privilege('upgrade_producer', 'ordering.attachments', 'UPDATE'), false);
SET ROLE upgrade_producer;
CREATE TABLE upgrade_role_outbox (r text, s bigint);
SELECT ordering.attach('upgrade_role_outbox', 'r', 's');
INSERT INTO upgrade_role_outbox (r) VALUES ('x'), ('x');
SELECT upgrade_check.expect('producer: attach() and inserts number',
       (SELECT max(s) FROM upgrade_role_outbox), 2::bigint);
SELECT upgrade_check.expect('producer: reconcile() runs what moved to ordering_internal',
       (SELECT status FROM ordering.reconcile('[]', 1, '{0}', 'public.upgrade_role_outbox')),
       'behind');
RESET ROLE;
SELECT upgrade_check.expect('consumer: no INSERT or DELETE on ordering.parked, no DELETE on ordering.gap_requests',
       has_table_privilege('upgrade_consumer', 'ordering.parked', 'INSERT')
       OR has_table_privilege('upgrade_consumer', 'ordering.parked', 'DELETE')
       OR has_table_privilege('upgrade_consumer', 'ordering.gap_requests', 'DELETE'), false);
CREATE FUNCTION upgrade_check.handler(resource_id text, seq bigint, payload jsonb)
    RETURNS void LANGUAGE sql AS 'SELECT';
SET ROLE upgrade_consumer;
SELECT upgrade_check.expect('consumer: deliver() works',
       (SELECT count(*) FROM ordering.deliver('upgrade-roles', 'r', 1, '{}')), 1::bigint);
-- the one deliver() through a handler, called as the 5-argument form was
SELECT upgrade_check.expect('consumer: deliver() through a handler works',
       ordering.deliver('upgrade-handlers', 'h', 1, '{}', 'upgrade_check.handler(text,bigint,jsonb)'), 1);
SELECT upgrade_check.expect('consumer: and with on_error',
       ordering.deliver('upgrade-handlers', 'h', 2, '{}', 'upgrade_check.handler(text,bigint,jsonb)',
                        on_error => 'dead_letter'), 1);
RESET ROLE;
SET ROLE upgrade_handler_caller;
SELECT upgrade_check.expect('a role granted the 5-argument deliver() by hand may still call it',
       ordering.deliver('upgrade-handlers', 'h', 3, '{}', 'upgrade_check.handler(text,bigint,jsonb)'), 1);
RESET ROLE;
SELECT upgrade_check.expect('operator: keeps the writes of ordering.gap_requests, not of ordering.parked',
       has_table_privilege('upgrade_operator', 'ordering.gap_requests', 'DELETE')
       AND NOT has_table_privilege('upgrade_operator', 'ordering.parked', 'INSERT'), true);
SELECT upgrade_check.expect('operator: may read ordering.outbox, which check() checks',
       has_table_privilege('upgrade_operator', 'ordering.outbox', 'SELECT'), true);
SET ROLE upgrade_operator;
SELECT upgrade_check.expect('operator: check() finds nothing wrong',
       (SELECT count(*) FROM ordering.check()), 0::bigint);
RESET ROLE;
SET ROLE upgrade_monitor;
SELECT upgrade_check.expect('monitor: metrics() works',
       ordering.metrics() LIKE '%ordering_events_consumed_total{consumer="upgrade-roles"} 1%', true);
SELECT upgrade_check.expect('monitor: ordering.open_gaps reads',
       (SELECT count(*) FROM ordering.open_gaps), 0::bigint);
RESET ROLE;
