-- Retention of ordering.outbox; the counters stay.
CREATE OR REPLACE FUNCTION ordering.purge_published(older_than interval) RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    purged bigint;
BEGIN
    IF older_than IS NULL THEN
        RAISE EXCEPTION 'older_than must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF older_than OPERATOR(pg_catalog.<) '0'::pg_catalog.interval THEN
        RAISE EXCEPTION 'older_than must not be negative, got %', older_than
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM ordering.outbox o
     WHERE o.published_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) older_than);
    GET DIAGNOSTICS purged = ROW_COUNT;
    RETURN purged;
END
$$;
COMMENT ON FUNCTION ordering.purge_published(interval) IS
    'Retention: deletes outbox rows published longer ago than older_than; sequence counters are kept';
REVOKE EXECUTE ON FUNCTION ordering.purge_published(interval) FROM PUBLIC;
