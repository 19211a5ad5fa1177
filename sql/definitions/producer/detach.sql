-- detach(): drops the three triggers and records the table as detached; the
-- counters stay, so attaching it again continues the stream.
CREATE OR REPLACE FUNCTION ordering.detach(tbl regclass) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    was text;
    trigger_stream text;
BEGIN
    IF tbl IS NULL THEN
        RAISE EXCEPTION 'table must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_trigger t
                    WHERE t.tgrelid OPERATOR(pg_catalog.=) tbl
                      AND t.tgname OPERATOR(pg_catalog.=) 'ordering_sequence') THEN
        RAISE EXCEPTION 'relation "%" is not attached', tbl
            USING ERRCODE = 'undefined_object';
    END IF;
    trigger_stream := (ordering_internal.sequencing_trigger(tbl)).stream;
    -- Citus: a distributed table's triggers are dropped on its shards too
    -- with this setting on, as attach() created them
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        IF (ordering_internal.citus_distribution(tbl)).managed THEN
            PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
        END IF;
    END IF;
    EXECUTE pg_catalog.format('DROP TRIGGER ordering_sequence ON %s', tbl);
    EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS ordering_sequence_stored ON %s', tbl);
    EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS ordering_sequence_guard ON %s', tbl);
    was := ordering_internal.attachment_unregister(tbl);
    -- 1.3: the registry of distributed streams on every node follows
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        PERFORM ordering_internal.citus_registry_sync(tbl);
    END IF;
    IF was IS NULL THEN
        -- 1.2: triggers without a registry row (a schema-only restore)
        RAISE NOTICE 'relation "%" had the sequencing triggers of stream "%", but was not registered in ordering.attachments', tbl, trigger_stream
            USING DETAIL = 'Its triggers are dropped; the counters of that stream are kept.';
        RETURN;
    END IF;
    RAISE NOTICE 'relation "%" was sequenced as stream "%"', tbl, was
        USING DETAIL = 'Its counters are kept: ordering.attach() on this table continues the stream.';
END
$$;
COMMENT ON FUNCTION ordering.detach(regclass) IS
    'Removes the sequencing triggers from a table and says which stream it had; its counters are kept, and attaching it again continues the stream';
REVOKE EXECUTE ON FUNCTION ordering.detach(regclass) FROM PUBLIC;
