-- Relays of ordering.outbox: FOR UPDATE SKIP LOCKED, so parallel relays
-- never wait for each other.  One function with defaults, not overloads of
-- its own: claim_unpublished(100) must stay unambiguous.
CREATE OR REPLACE FUNCTION ordering.claim_unpublished(batch_size integer DEFAULT 100,
                                           replicated boolean DEFAULT false,
                                           timeout interval DEFAULT '10s')
    RETURNS SETOF ordering.outbox
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF batch_size IS NULL THEN
        RAISE EXCEPTION 'batch_size must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF batch_size OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'batch_size must not be negative, got %', batch_size
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF replicated IS NULL OR timeout IS NULL THEN
        RAISE EXCEPTION 'replicated and timeout must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF timeout OPERATOR(pg_catalog.<) '0'::pg_catalog.interval THEN
        RAISE EXCEPTION 'timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The rows are handed to the caller only when the function returns.
    RETURN QUERY
    SELECT o.* FROM ordering.outbox o
     WHERE o.published_at IS NULL
     ORDER BY o.id
     LIMIT batch_size
       FOR UPDATE SKIP LOCKED;
    -- Every commit whose rows were just read or locked is in the WAL before
    -- this point: wait until the standbys have it (see wait_for_standbys).
    IF replicated AND FOUND THEN
        PERFORM ordering.wait_for_standbys(timeout);
    END IF;
END
$$;
COMMENT ON FUNCTION ordering.claim_unpublished(integer, boolean, interval) IS
    'For relays: up to batch_size unpublished outbox rows, locked until the end of the caller''s transaction and skipped by other relays; with replicated, only once every connected standby, and at least ordering.min_standbys of them, has flushed them (SQLSTATE 55000 after timeout)';
REVOKE EXECUTE ON FUNCTION ordering.claim_unpublished(integer, boolean, interval) FROM PUBLIC;

-- Relays of an outbox distributed by Citus, on each node that holds its
-- shards (lock_shard_for_relay.sql): the overload with the outbox first, as
-- mark_published(outbox, ids) is one of mark_published().  batch_size has
-- no default, so that a call with one argument is always the one above:
-- claim_unpublished($1) with an untyped parameter, which is how lib/pq and
-- node-postgres send one, would be ambiguous otherwise.
CREATE OR REPLACE FUNCTION ordering.claim_unpublished(outbox anyelement, batch_size integer)
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
                  HINT = 'Call it as ordering.claim_unpublished(NULL::my_outbox, 100).';
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
COMMENT ON FUNCTION ordering.claim_unpublished(anyelement, integer) IS
    'For relays of an outbox distributed by Citus, on each node that holds its shards: up to batch_size unpublished rows of the shards placed on this node, locked until the end of the caller''s transaction and skipped by other relays; call it as claim_unpublished(NULL::my_outbox, n)';
REVOKE EXECUTE ON FUNCTION ordering.claim_unpublished(anyelement, integer) FROM PUBLIC;
