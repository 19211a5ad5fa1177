-- The committed-work counters of the consumers, from shared memory
-- (src/stats_views.c); the view ordering.stats reads them.
CREATE OR REPLACE FUNCTION ordering_internal.consumer_statistics(
    OUT consumer text,
    OUT events_consumed bigint,
    OUT events_applied bigint,
    OUT events_stale bigint,
    OUT events_duplicate bigint,
    OUT events_parked bigint,
    OUT events_drained bigint,
    OUT gaps_escalated bigint,
    OUT reorder_distance_buckets bigint[],
    OUT reorder_distance_sum bigint,
    OUT events_dead_lettered bigint,
    OUT events_skipped bigint)
    RETURNS SETOF record
    LANGUAGE c VOLATILE ROWS 10
    AS 'MODULE_PATHNAME', 'ordering_consumer_counters';
COMMENT ON FUNCTION ordering_internal.consumer_statistics() IS
    'Internal to the view ordering.stats: committed-work counters of the consumers of the current database, from shared memory';
REVOKE EXECUTE ON FUNCTION ordering_internal.consumer_statistics() FROM PUBLIC;
