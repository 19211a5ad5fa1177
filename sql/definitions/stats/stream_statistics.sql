-- The committed-work counters of the streams, from shared memory
-- (src/stats_views.c); the view ordering.stream_stats reads them.
CREATE OR REPLACE FUNCTION ordering_internal.stream_statistics(
    OUT stream text,
    OUT sequences_assigned bigint,
    OUT sequence_conflicts bigint,
    OUT reconcile_resources_behind bigint,
    OUT reconcile_events_republished bigint,
    OUT reconcile_events_purged bigint)
    RETURNS SETOF record
    LANGUAGE c VOLATILE ROWS 10
    AS 'MODULE_PATHNAME', 'ordering_stream_counters';
COMMENT ON FUNCTION ordering_internal.stream_statistics() IS
    'Per stream of the current database, from shared memory: sequence numbers assigned by committed transactions, supplied numbers refused with SQLSTATE 40001 (counted although their transaction rolled back), and what committed ordering.reconcile() calls found and did (resources behind and missing events no longer in the outbox, dry runs included; events republished); use the view ordering.stream_stats';
REVOKE EXECUTE ON FUNCTION ordering_internal.stream_statistics() FROM PUBLIC;
