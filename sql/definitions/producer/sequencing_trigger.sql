-- What the sequencing trigger of a table says (its columns and stream),
-- registered in ordering.attachments or not: post_restore() registers a
-- table from it, detach() names the stream it had.
CREATE OR REPLACE FUNCTION ordering_internal.sequencing_trigger(tbl regclass,
                                                     OUT resource_column name,
                                                     OUT sequence_column name,
                                                     OUT stream text)
    RETURNS record
    LANGUAGE c STRICT STABLE
    AS 'MODULE_PATHNAME', 'ordering_sequencing_trigger';
COMMENT ON FUNCTION ordering_internal.sequencing_trigger(regclass) IS
    'What the sequencing trigger of a table says (its columns and stream), registered or not; NULLs if it has none';
-- pg_trigger shows the same to anyone.
GRANT EXECUTE ON FUNCTION ordering_internal.sequencing_trigger(regclass) TO PUBLIC;
