-- The event trigger ordering_forget_dropped_tables: a dropped table leaves
-- ordering.attachments, so no stale OID is dumped and restored there.
-- SECURITY DEFINER: whoever drops a table must not need rights on the
-- registry.
CREATE OR REPLACE FUNCTION ordering_internal.forget_dropped_tables() RETURNS event_trigger
    LANGUAGE plpgsql
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    -- DROP EXTENSION drops the registry in the same command
    IF pg_catalog.to_regclass('ordering.attachments') IS NULL THEN
        RETURN;
    END IF;
    DELETE FROM ordering.attachments a
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND a.tbl::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
END
$$;
COMMENT ON FUNCTION ordering_internal.forget_dropped_tables() IS
    'Event trigger: removes dropped tables from ordering.attachments, so no stale OID is dumped and restored there (SECURITY DEFINER: whoever drops a table must not need rights on the registry)';
REVOKE EXECUTE ON FUNCTION ordering_internal.forget_dropped_tables() FROM PUBLIC;
