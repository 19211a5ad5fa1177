-- Relays of ordering.outbox, after sending what they claimed.
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
