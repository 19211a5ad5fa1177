-- The triggers of a distributed table: those of
-- create_sequencing_triggers(), the sequencing trigger with the counter
-- table as a fourth argument.  Citus creates triggers on a distributed
-- table's shards only with citus.enable_unsafe_triggers on: ours are safe
-- there (src/citus.c).
CREATE OR REPLACE FUNCTION ordering_internal.create_distributed_sequencing_triggers(
        tbl regclass, resource_column name, sequence_column name, stream text,
        counters regclass)
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
    EXECUTE pg_catalog.format(
        'CREATE TRIGGER ordering_sequence BEFORE INSERT ON %s FOR EACH ROW '
        'EXECUTE FUNCTION ordering.sequence_trigger(%L, %L, %L, %L)',
        tbl, resource_column, sequence_column, stream, counters::pg_catalog.text);
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
COMMENT ON FUNCTION ordering_internal.create_distributed_sequencing_triggers(regclass, name, name, text, regclass) IS
    'Internal to ordering.attach(): the three sequencing triggers of a table distributed by Citus, the sequencing trigger naming the stream''s counter table';
-- SECURITY INVOKER: it does only what its caller may do anyway, for
-- attach(), detach(), last_sequence(), check() and post_restore(), which
-- call it only where Citus is.
GRANT EXECUTE ON FUNCTION ordering_internal.create_distributed_sequencing_triggers(regclass, name, name, text, regclass) TO PUBLIC;
