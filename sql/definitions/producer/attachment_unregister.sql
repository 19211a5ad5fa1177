-- detach()'s half of the registry's writes (attachment_register.sql).
CREATE OR REPLACE FUNCTION ordering_internal.attachment_unregister(tbl regclass)
    RETURNS text
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_attachment_unregister';
COMMENT ON FUNCTION ordering_internal.attachment_unregister(regclass) IS
    'Internal to ordering.detach(): records the table, whose sequencing trigger is gone, as detached; returns the stream it had';
REVOKE EXECUTE ON FUNCTION ordering_internal.attachment_unregister(regclass) FROM PUBLIC;
