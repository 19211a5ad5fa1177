-- Relays of an outbox distributed by Citus, on each node that holds its
-- shards (lock_shard_for_relay.sql).  Not an overload of
-- claim_unpublished(), as mark_published(outbox, ids) is one of
-- mark_published(): claim_unpublished($1) with an untyped parameter, which
-- is how lib/pq and node-postgres send one, would then be ambiguous.
CREATE OR REPLACE FUNCTION ordering.claim_unpublished_on_node(outbox anyelement,
                                                   batch_size integer DEFAULT 100)
    RETURNS SETOF anyelement
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    tbl regclass;
    sh record;
    wanted bigint;
    got bigint;
BEGIN
    IF batch_size IS NULL THEN
        RAISE EXCEPTION 'batch_size must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF batch_size OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'batch_size must not be negative, got %', batch_size
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT NULLIF(t.typrelid, 0)::pg_catalog.regclass INTO tbl
      FROM pg_catalog.pg_type t
     WHERE t.oid OPERATOR(pg_catalog.=) pg_catalog.pg_typeof(outbox);
    IF tbl IS NULL THEN
        RAISE EXCEPTION 'outbox must be a row of the outbox table, got type %', pg_catalog.pg_typeof(outbox)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Call it as ordering.claim_unpublished_on_node(NULL::my_outbox, 100).';
    END IF;
    wanted := batch_size;
    FOR sh IN SELECT * FROM ordering_internal.relay_shards(tbl) LOOP
        EXIT WHEN wanted OPERATOR(pg_catalog.<=) 0;
        RETURN QUERY EXECUTE pg_catalog.format(
            'SELECT * FROM %s o WHERE o.published_at IS NULL '
            ' ORDER BY o.id LIMIT $1 FOR UPDATE SKIP LOCKED', sh.shard)
          USING wanted;
        GET DIAGNOSTICS got = ROW_COUNT;
        wanted := wanted OPERATOR(pg_catalog.-) got;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering.claim_unpublished_on_node(anyelement, integer) IS
    'For relays of an outbox distributed by Citus, on each node that holds its shards: up to batch_size unpublished rows of the shards placed on this node, locked until the end of the caller''s transaction and skipped by other relays; call it as claim_unpublished_on_node(NULL::my_outbox, n)';
REVOKE EXECUTE ON FUNCTION ordering.claim_unpublished_on_node(anyelement, integer) FROM PUBLIC;
