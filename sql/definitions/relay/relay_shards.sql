-- The shards of a distributed table placed on this node, each locked for
-- relays (lock_shard_for_relay.sql).
CREATE OR REPLACE FUNCTION ordering_internal.relay_shards(outbox regclass)
    RETURNS TABLE (shardid bigint, shard regclass)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    sh record;
    still boolean;
BEGIN
    IF (ordering_internal.citus_distribution(outbox)).partmethod IS DISTINCT FROM 'h' THEN
        RAISE EXCEPTION 'relation "%" is not distributed by Citus', outbox
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Relays of a table on one node claim with SELECT ... FOR UPDATE SKIP LOCKED (ordering.claim_unpublished() for ordering.outbox).';
    END IF;
    FOR sh IN EXECUTE $q$
        SELECT s.shardid, pg_catalog.shard_name(s.logicalrelid, s.shardid, false) AS name
          FROM pg_catalog.pg_dist_shard s
          JOIN pg_catalog.pg_dist_placement p ON p.shardid OPERATOR(pg_catalog.=) s.shardid
         WHERE s.logicalrelid OPERATOR(pg_catalog.=) $1
           AND p.groupid OPERATOR(pg_catalog.=) (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g)
         ORDER BY pg_catalog.random()$q$ USING outbox
    LOOP
        PERFORM ordering_internal.lock_shard_for_relay(outbox, sh.shardid);
        -- after the lock: is it still here (not moved or split meanwhile)?
        EXECUTE $q$
            SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_placement p
                            WHERE p.shardid OPERATOR(pg_catalog.=) $1
                              AND p.groupid OPERATOR(pg_catalog.=)
                                  (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g))$q$
           INTO still USING sh.shardid;
        IF still THEN
            shardid := sh.shardid;
            shard := pg_catalog.to_regclass(sh.name);
            RETURN NEXT;
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering_internal.relay_shards(regclass) IS
    'Internal to the relay functions: the shards of a distributed outbox placed on this node, each locked against moves and splits to the end of the transaction';
-- SECURITY INVOKER: it does only what its caller may do anyway.
GRANT EXECUTE ON FUNCTION ordering_internal.relay_shards(regclass) TO PUBLIC;
