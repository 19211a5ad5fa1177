-- The monitoring set: the statistics views, metrics() and what it runs,
-- the open gaps.
CREATE OR REPLACE FUNCTION ordering.grant_monitor(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    -- on a Citus coordinator: the set on every node, by its marker
    IF ordering_internal.grant_set_everywhere('monitor', role) THEN
        RETURN;
    END IF;
    PERFORM ordering_internal.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.metrics(), '
        'ordering_internal.stats_reset_time(), ordering_internal.gap_deadline(), '
        'ordering_internal.consumer_statistics(), ordering_internal.stream_statistics(), '
        'ordering.hot_resources(text, text, integer)',
        'SELECT ON ordering.stats, ordering.stream_stats, ordering.open_gaps, '
        'ordering.gap_requests, ordering.outbox_lag',
        -- what ordering.metrics() runs
        'EXECUTE ON FUNCTION ordering_internal.metric_sources(), ordering_internal.metric_families(), '
        'ordering_internal.metric_samples(text), '
        'ordering_internal.metric_label_set(text[], text[])',
        -- Citus: the distributed consumers' open gaps, listed on every node
        -- (section "Citus: consumers")
        'EXECUTE ON FUNCTION ordering_internal.distributed_open_gaps(), '
        'ordering_internal.shard_gaps(double precision, boolean)',
        -- and their gauges in ordering.stats
        'EXECUTE ON FUNCTION ordering_internal.distributed_consumer_gauges()');
END
$$;
COMMENT ON FUNCTION ordering.grant_monitor(regrole) IS
    'Grants read-only access to the statistics, ordering.metrics(), hot resources, the relay lag and the open gaps (for dashboards and exporters)';
-- Granting is for the extension's owner (or a superuser) to do.
REVOKE EXECUTE ON FUNCTION ordering.grant_monitor(regrole) FROM PUBLIC;
