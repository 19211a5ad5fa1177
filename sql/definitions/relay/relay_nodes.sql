-- Where the relays of a distributed outbox connect: the nodes that hold its
-- shards now.
CREATE OR REPLACE FUNCTION ordering.relay_nodes(outbox regclass)
    RETURNS TABLE (node_name text, node_port integer, shards bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF (ordering_internal.citus_distribution(outbox)).partmethod IS DISTINCT FROM 'h' THEN
        RAISE EXCEPTION 'relation "%" is not distributed by Citus', outbox
            USING ERRCODE = 'feature_not_supported';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT n.nodename::pg_catalog.text, n.nodeport, pg_catalog.count(*)
          FROM pg_catalog.pg_dist_shard s
          JOIN pg_catalog.pg_dist_placement p ON p.shardid OPERATOR(pg_catalog.=) s.shardid
          JOIN pg_catalog.pg_dist_node n ON n.groupid OPERATOR(pg_catalog.=) p.groupid
                                        AND n.noderole OPERATOR(pg_catalog.=) 'primary'
         WHERE s.logicalrelid OPERATOR(pg_catalog.=) $1
         GROUP BY 1, 2
         ORDER BY 1, 2$q$ USING outbox;
END
$$;
COMMENT ON FUNCTION ordering.relay_nodes(regclass) IS
    'For relays of an outbox distributed by Citus: the nodes that hold its shards now, where relays claim with ordering.claim_unpublished(outbox, n); ask again after moves, rebalances and new nodes';
REVOKE EXECUTE ON FUNCTION ordering.relay_nodes(regclass) FROM PUBLIC;
