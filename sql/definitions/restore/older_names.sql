-- Restores of a dump taken at the previous version.  An update moves or
-- renames a function with ALTER FUNCTION, which keeps it, with the triggers
-- that use it and the privileges roles hold on it.  A dump taken before
-- the update names it the old way: in its CREATE TRIGGER and GRANT
-- statements, which a new database, where the function has its new name,
-- would refuse.  So a restore (restore mode is on: docs/restore.md) creates
-- the extension with a copy of each such function under its older name as
-- well, and ordering.post_restore() moves what the dump gave the copies to
-- the functions themselves and drops the copies.
--
-- The functions 1.3 keeps under another name than 1.2: the older name,
-- and the function now.
CREATE OR REPLACE FUNCTION ordering_internal.older_names()
    RETURNS TABLE (older text, function text)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 8
    SET search_path = pg_catalog, pg_temp
    AS $$
VALUES
    ('ordering.sequence_stored()', 'ordering_internal.sequence_stored()'),
    ('ordering.sequence_stored_trigger()', 'ordering_internal.sequence_stored_trigger()'),
    ('ordering.sequence_guard()', 'ordering_internal.sequence_guard()'),
    ('ordering.mark_published_on_node(regclass, bigint[])', 'ordering.mark_published(regclass, bigint[])'),
    ('ordering.distributed_open_gaps()', 'ordering_internal.distributed_open_gaps()'),
    ('ordering.claim_unpublished_on_node(anyelement, integer)', 'ordering.claim_unpublished(anyelement, integer)'),
    ('ordering.resource_bucket(text, integer)', 'ordering_internal.resource_bucket(text, integer)'),
    ('ordering.resource_fingerprint(text, bigint)', 'ordering_internal.resource_fingerprint(text, bigint)')
$$;
COMMENT ON FUNCTION ordering_internal.older_names() IS
    'Internal to restores: the functions that a dump of the previous version names by another name, with the function each is now';
REVOKE EXECUTE ON FUNCTION ordering_internal.older_names() FROM PUBLIC;
