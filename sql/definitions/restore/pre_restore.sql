-- Restore mode (docs/restore.md): before a data-only restore into a
-- database that has the extension.
CREATE OR REPLACE FUNCTION ordering.pre_restore() RETURNS boolean
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    -- load the library, which defines the setting
    PERFORM ordering_internal.gap_deadline();
    EXECUTE pg_catalog.format('ALTER DATABASE %I SET ordering.restoring = on',
                              pg_catalog.current_database());
    PERFORM pg_catalog.set_config('ordering.restoring', 'on', false);
    RETURN true;
END
$$;
COMMENT ON FUNCTION ordering.pre_restore() IS
    'Before a data-only restore into a database that has the extension (a full restore sets ordering.restoring on the new database instead: README, "Dump and restore"): until ordering.post_restore(), new sessions of this database load sequenced rows with the numbers they carry and assign no new ones';
REVOKE EXECUTE ON FUNCTION ordering.pre_restore() FROM PUBLIC;
