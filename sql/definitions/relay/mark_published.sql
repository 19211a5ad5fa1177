-- Relays, after sending what they claimed: of ordering.outbox, or of an
-- outbox distributed by Citus, on each node where they claimed with
-- claim_unpublished(outbox, batch_size) (relay/claim_unpublished.sql).
CREATE OR REPLACE FUNCTION ordering.mark_published(ids bigint[]) RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    marked bigint;
BEGIN
    IF ids IS NULL THEN
        RAISE EXCEPTION 'ids must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    UPDATE ordering.outbox o SET published_at = pg_catalog.now()
     WHERE o.id OPERATOR(pg_catalog.=) ANY (ids)
       AND o.published_at IS NULL;
    GET DIAGNOSTICS marked = ROW_COUNT;
    RETURN marked;
END
$$;
COMMENT ON FUNCTION ordering.mark_published(bigint[]) IS
    'Marks outbox rows as published; returns how many were unpublished before';
REVOKE EXECUTE ON FUNCTION ordering.mark_published(bigint[]) FROM PUBLIC;

CREATE OR REPLACE FUNCTION ordering.mark_published(outbox regclass, ids bigint[])
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    sh record;
    got bigint;
    total bigint := 0;
BEGIN
    IF outbox IS NULL OR ids IS NULL THEN
        RAISE EXCEPTION 'outbox and ids must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    FOR sh IN SELECT * FROM ordering_internal.relay_shards(outbox) LOOP
        EXECUTE pg_catalog.format(
            'UPDATE %s o SET published_at = pg_catalog.now() '
            ' WHERE o.id OPERATOR(pg_catalog.=) ANY ($1) AND o.published_at IS NULL', sh.shard)
          USING ids;
        GET DIAGNOSTICS got = ROW_COUNT;
        total := total OPERATOR(pg_catalog.+) got;
    END LOOP;
    RETURN total;
END
$$;
COMMENT ON FUNCTION ordering.mark_published(regclass, bigint[]) IS
    'For relays of an outbox distributed by Citus: stamps published_at on the rows with these ids in the shards placed on this node (those claim_unpublished(outbox, n) returned there); returns rows changed';
REVOKE EXECUTE ON FUNCTION ordering.mark_published(regclass, bigint[]) FROM PUBLIC;
