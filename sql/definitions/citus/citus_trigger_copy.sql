-- Is the sequencing trigger (with four arguments) of this relation one of
-- Citus's copies: on a shard, or on a distributed table's shell on a worker?
-- Those are vetted per insert against Citus's metadata (src/citus.c), not
-- against ordering.attachments, which has a row only for the distributed
-- table on the coordinator; check() and post_restore() leave them alone.
CREATE OR REPLACE FUNCTION ordering_internal.citus_trigger_copy(tbl regclass) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    d record;
    shard boolean;
BEGIN
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_shard') IS NULL THEN
        RETURN false;
    END IF;
    SELECT * INTO d FROM ordering_internal.citus_distribution(tbl);
    IF d.managed THEN
        RETURN NOT d.on_coordinator;
    END IF;
    -- a shard: named "<table>_<shard ID>" after a shard of the metadata
    -- (by its regclass text: Citus hides shards from queries on pg_class)
    EXECUTE $q$
        SELECT EXISTS (
            SELECT FROM pg_catalog.pg_dist_shard s
             WHERE s.shardid OPERATOR(pg_catalog.=)
                   pg_catalog.substring($1::pg_catalog.text, '_([0-9]{1,18})"?$')::pg_catalog.int8
               AND pg_catalog.to_regclass(pg_catalog.shard_name(s.logicalrelid, s.shardid, false))
                   OPERATOR(pg_catalog.=) $1)$q$
       INTO shard USING tbl;
    RETURN COALESCE(shard, false);
END
$$;
COMMENT ON FUNCTION ordering_internal.citus_trigger_copy(regclass) IS
    'Internal to ordering.check() and ordering.post_restore(): whether a relation whose sequencing trigger names a counter table is a copy Citus made (a shard, or a shell on a worker) rather than the distributed table attach() registered';
-- SECURITY INVOKER: it does only what its caller may do anyway, for
-- attach(), detach(), last_sequence(), check() and post_restore(), which
-- call it only where Citus is.
GRANT EXECUTE ON FUNCTION ordering_internal.citus_trigger_copy(regclass) TO PUBLIC;
