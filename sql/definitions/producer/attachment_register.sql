-- The registry of attached tables says which tables are sequenced and in
-- which stream, so a role that writes it could switch off every stream or
-- move its table into another's.  No privilege set writes it with SQL:
-- attach() and detach() write it through these two C functions
-- (src/attachments.c), which record only what the catalog says (the
-- sequencing trigger with its arguments, or its absence) and refuse with
-- 42501 to attach a table to a stream whose other tables the caller does
-- not own.
CREATE OR REPLACE FUNCTION ordering_internal.attachment_register(tbl regclass, stream text,
                                                      resource_column name,
                                                      sequence_column name)
    RETURNS void
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_attachment_register';
COMMENT ON FUNCTION ordering_internal.attachment_register(regclass, text, name, name) IS
    'Internal to ordering.attach(): records the table, which has the sequencing trigger with these arguments, as attached to the stream; refuses (42501) a caller who does not own the other tables of that stream';
REVOKE EXECUTE ON FUNCTION ordering_internal.attachment_register(regclass, text, name, name) FROM PUBLIC;
