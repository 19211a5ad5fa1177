-- The dead letters of the distributed consumers, read through Citus from
-- every node (on the coordinator, where ordering_internal.distributed_consumers
-- lists them; elsewhere it is empty and so is this), each with the events
-- parked behind it: the part of the view ordering.dead_letters that the
-- extension's own tables do not hold.  SECURITY DEFINER because the view
-- reads the extension's tables as its owner: whoever may read the view
-- (the consumer set, which gets EXECUTE on this) reads these rows too,
-- whatever the consumer's tables were granted when it was distributed.
CREATE OR REPLACE FUNCTION ordering_internal.distributed_dead_letters()
    RETURNS TABLE (consumer text, resource_id text, seq bigint, payload jsonb, sqlstate text,
                   message text, failed_at timestamptz, attempts integer, parked_behind bigint,
                   detail text)
    LANGUAGE plpgsql STABLE ROWS 10
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    dc record;
BEGIN
    FOR dc IN
        SELECT d.consumer,
               ordering_internal.distributed_consumer_table(d.consumer, '_dead_letters') AS dead,
               ordering_internal.distributed_consumer_table(d.consumer, '_parked') AS parked
          FROM ordering_internal.distributed_consumers d
         ORDER BY d.consumer
    LOOP
        -- tables dropped by hand: check() reports them
        CONTINUE WHEN dc.dead IS NULL OR dc.parked IS NULL;
        -- the lateral count is on the distribution column (%3$I: resource_id,
        -- or resource_value): Citus runs it on each shard group's node
        RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT d.consumer::pg_catalog.text, d.resource_id::pg_catalog.text, d.seq, d.payload,
               d.sqlstate, d.message, d.failed_at, d.attempts, k.n, d.detail
          FROM %1$s d
          LEFT JOIN LATERAL (SELECT pg_catalog.count(*) AS n FROM %2$s p
                              WHERE p.consumer OPERATOR(pg_catalog.=) d.consumer
                                AND p.resource_id OPERATOR(pg_catalog.=) d.resource_id
                                AND p.%3$I OPERATOR(pg_catalog.=) d.%3$I
                                AND p.seq OPERATOR(pg_catalog.>) d.seq) k ON true
         WHERE d.consumer OPERATOR(pg_catalog.=) $1$q$, dc.dead, dc.parked,
            ordering_internal.distributed_consumer_column(dc.consumer))
        USING dc.consumer;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering_internal.distributed_dead_letters() IS
    'Internal to the view ordering.dead_letters: the dead letters of the distributed consumers, from every node, with the events parked behind each';
-- For the roles that may read ordering.dead_letters (the consumer set).
REVOKE EXECUTE ON FUNCTION ordering_internal.distributed_dead_letters() FROM PUBLIC;
