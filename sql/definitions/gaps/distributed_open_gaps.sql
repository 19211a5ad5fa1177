-- The open gaps of the distributed consumers, from every node (on the
-- coordinator; the view ordering.open_gaps lists them after those of the
-- other consumers).  SECURITY DEFINER because the view reads the
-- extension's tables as its owner: whoever may read the view (the
-- monitoring set, which gets EXECUTE on this) lists these gaps too, on
-- every node, whatever the consumer's tables were granted.
CREATE OR REPLACE FUNCTION ordering_internal.distributed_open_gaps()
    RETURNS TABLE (nodeid integer, consumer text, resource_id text, missing_from bigint,
                   missing_to bigint, parked_count bigint, first_parked_at timestamptz)
    LANGUAGE plpgsql VOLATILE ROWS 10
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    node record;
BEGIN
    IF NOT EXISTS (SELECT FROM ordering_internal.distributed_consumers) THEN
        RETURN;
    END IF;
    FOR node IN EXECUTE
        'SELECT r.nodeid, r.success, r.result FROM pg_catalog.run_command_on_all_nodes($1) r ORDER BY r.nodeid'
        USING pg_catalog.format('SELECT ordering_internal.shard_gaps(%s, false)',
                                pg_catalog.date_part('epoch', ordering_internal.gap_deadline()))
    LOOP
        IF NOT node.success THEN
            RAISE EXCEPTION 'listing the gaps failed on node %: %', node.nodeid, node.result
                USING ERRCODE = 'connection_failure';
        END IF;
        RETURN QUERY
        SELECT node.nodeid, g.consumer, g.resource_id, g.missing_from, g.missing_to,
               g.parked_count, g.first_parked_at
          FROM pg_catalog.json_to_recordset(node.result::pg_catalog.json)
               AS g(consumer text, resource_id text, missing_from bigint, missing_to bigint,
                    parked_count bigint, first_parked_at timestamptz)
         ORDER BY g.consumer, g.resource_id;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering_internal.distributed_open_gaps() IS
    'Citus: the gaps of the distributed consumers whose oldest parked event is older than ordering.gap_deadline, from every node (nodeid of pg_dist_node); run it on the coordinator';
REVOKE EXECUTE ON FUNCTION ordering_internal.distributed_open_gaps() FROM PUBLIC;
