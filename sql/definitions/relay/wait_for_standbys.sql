-- A relay calls it after reading what it will publish and before publishing
-- it (claim_unpublished(..., replicated => true) does): it returns once every
-- connected standby, and at least ordering.min_standbys of them, has flushed
-- the WAL of everything the caller has seen (src/standbys.c).
CREATE OR REPLACE FUNCTION ordering.wait_for_standbys(timeout interval DEFAULT '10s')
    RETURNS pg_catalog.pg_lsn
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_wait_for_standbys';
COMMENT ON FUNCTION ordering.wait_for_standbys(interval) IS
    'Waits until every connected streaming standby, and at least ordering.min_standbys of them (default 1), has flushed the WAL of everything this transaction has seen, and returns that WAL position; SQLSTATE 55000 when that has not happened within the timeout';
REVOKE EXECUTE ON FUNCTION ordering.wait_for_standbys(interval) FROM PUBLIC;
