-- The three triggers of an attached table: the sequencing trigger and its
-- two companions (the stored-row trigger and the guard).  Internal to
-- attach(); it runs as attach()'s caller, who needs EXECUTE on the trigger
-- functions (the producer set).
CREATE OR REPLACE FUNCTION ordering_internal.create_sequencing_triggers(tbl regclass, resource_column name,
                                                    sequence_column name, stream text)
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    EXECUTE pg_catalog.format(
        'CREATE TRIGGER ordering_sequence BEFORE INSERT ON %s FOR EACH ROW '
        'EXECUTE FUNCTION ordering.sequence_trigger(%L, %L, %L)',
        tbl, resource_column, sequence_column, stream);
    EXECUTE pg_catalog.format(
        'CREATE TRIGGER ordering_sequence_stored AFTER INSERT ON %s FOR EACH ROW '
        'WHEN (ordering_internal.sequence_stored()) '
        'EXECUTE FUNCTION ordering_internal.sequence_stored_trigger()',
        tbl);
    EXECUTE pg_catalog.format(
        'CREATE TRIGGER ordering_sequence_guard BEFORE UPDATE OR DELETE ON %s FOR EACH ROW '
        'EXECUTE FUNCTION ordering_internal.sequence_guard(%L, %L, %L)',
        tbl, resource_column, sequence_column, stream);
END
$$;
COMMENT ON FUNCTION ordering_internal.create_sequencing_triggers(regclass, name, name, text) IS
    'Internal to ordering.attach(): creates the sequencing trigger and its two companions on a table';
REVOKE EXECUTE ON FUNCTION ordering_internal.create_sequencing_triggers(regclass, name, name, text) FROM PUBLIC;
