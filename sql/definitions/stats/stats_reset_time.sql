-- Since when the statistics count.
CREATE OR REPLACE FUNCTION ordering_internal.stats_reset_time() RETURNS timestamptz
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_stats_reset_time';
COMMENT ON FUNCTION ordering_internal.stats_reset_time() IS
    'Since when the statistics count: the last ordering.stats_reset() or the server start';
REVOKE EXECUTE ON FUNCTION ordering_internal.stats_reset_time() FROM PUBLIC;
