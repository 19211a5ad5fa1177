-- The gauges of ordering.stats for the distributed consumers, counted in
-- their tables through Citus on every node (on the coordinator, where
-- ordering_internal.distributed_consumers lists them; elsewhere it is
-- empty and so is this): events parked now, dead letters now, and the age
-- of the oldest open gap, with the rules of the view (a gap is open when
-- the lowest parked event is above position + 1 and not behind the
-- resource's dead letter).  One row per distributed consumer, so that its
-- gauges read 0 rather than vanish once its state is gone.  Each query
-- groups by the distribution column, so Citus runs it on each shard
-- group's node and adds up the few rows that come back.  SECURITY DEFINER
-- because the view reads the extension's tables as its owner: whoever may
-- read the view (the monitoring set, which gets EXECUTE on this) reads
-- these gauges too.
CREATE OR REPLACE FUNCTION ordering_internal.distributed_consumer_gauges()
    RETURNS TABLE (consumer text, parked_current bigint, dead_letters_current bigint,
                   oldest_gap_age interval)
    LANGUAGE plpgsql STABLE ROWS 10
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    dc record;
    oldest timestamptz;
BEGIN
    FOR dc IN
        SELECT d.consumer,
               ordering_internal.distributed_consumer_table(d.consumer, '_positions') AS positions,
               ordering_internal.distributed_consumer_table(d.consumer, '_parked') AS parked,
               ordering_internal.distributed_consumer_table(d.consumer, '_dead_letters') AS dead
          FROM ordering_internal.distributed_consumers d
         ORDER BY d.consumer
    LOOP
        -- tables dropped by hand: check() reports them
        CONTINUE WHEN dc.positions IS NULL OR dc.parked IS NULL OR dc.dead IS NULL;
        consumer := dc.consumer;
        EXECUTE pg_catalog.format($q$
        SELECT pg_catalog.count(*) FROM %s d WHERE d.consumer OPERATOR(pg_catalog.=) $1$q$, dc.dead)
           INTO dead_letters_current USING dc.consumer;
        EXECUTE pg_catalog.format($q$
        SELECT COALESCE(pg_catalog.sum(x.parked), 0)::pg_catalog.int8, pg_catalog.min(x.gap_since)
          FROM (SELECT pk.parked,
                       CASE WHEN pk.lowest OPERATOR(pg_catalog.>)
                                 (COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1)
                             AND (d.seq IS NULL OR pk.lowest OPERATOR(pg_catalog.<) d.seq)
                            THEN lp.parked_at END AS gap_since
                  FROM (SELECT p.consumer, p.resource_id, p.%4$I AS routing,
                               pg_catalog.count(*) AS parked, pg_catalog.min(p.seq) AS lowest
                          FROM %2$s p
                         WHERE p.consumer OPERATOR(pg_catalog.=) $1
                         GROUP BY p.consumer, p.resource_id, p.%4$I) pk
                  JOIN %2$s lp
                    ON lp.consumer OPERATOR(pg_catalog.=) pk.consumer
                   AND lp.resource_id OPERATOR(pg_catalog.=) pk.resource_id
                   AND lp.%4$I OPERATOR(pg_catalog.=) pk.routing
                   AND lp.seq OPERATOR(pg_catalog.=) pk.lowest
                  LEFT JOIN %1$s pos
                    ON pos.consumer OPERATOR(pg_catalog.=) pk.consumer
                   AND pos.resource_id OPERATOR(pg_catalog.=) pk.resource_id
                   AND pos.%4$I OPERATOR(pg_catalog.=) pk.routing
                  LEFT JOIN %3$s d
                    ON d.consumer OPERATOR(pg_catalog.=) pk.consumer
                   AND d.resource_id OPERATOR(pg_catalog.=) pk.resource_id
                   AND d.%4$I OPERATOR(pg_catalog.=) pk.routing) x$q$,
            dc.positions, dc.parked, dc.dead,
            ordering_internal.distributed_consumer_column(dc.consumer))
           INTO parked_current, oldest USING dc.consumer;
        oldest_gap_age := pg_catalog.now() OPERATOR(pg_catalog.-) oldest;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering_internal.distributed_consumer_gauges() IS
    'Internal to the view ordering.stats: events parked now, dead letters now and the age of the oldest open gap of each distributed consumer, from every node';
-- For the roles that may read ordering.stats (the monitoring set).
REVOKE EXECUTE ON FUNCTION ordering_internal.distributed_consumer_gauges() FROM PUBLIC;
