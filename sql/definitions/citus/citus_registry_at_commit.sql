-- The registry of distributed streams for a Citus cluster updated from
-- 1.2, made at the commit of ALTER EXTENSION ordering UPDATE on the
-- coordinator.  The update script cannot make it itself: Citus runs the
-- update on the workers only after the coordinator's script, so while it
-- runs the workers lack ordering_internal.table_ref, which the reference
-- table's CREATE TABLE on each worker needs; and a table made by the
-- script would belong to the extension (dropped with it, left out of
-- dumps), unlike the one attach() makes on a cluster made at 1.3.  So the
-- script fires this at commit (a deferred constraint trigger on a
-- temporary table), when every node is at the new version, and no script
-- runs: citus_registry_sync() then makes the registry, filled with every
-- distributed table attached, as the first attach() on 1.3 would.
CREATE OR REPLACE FUNCTION ordering_internal.citus_registry_at_commit() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    tbl regclass;
BEGIN
    SELECT a.tbl INTO tbl
      FROM ordering.attachments a
     WHERE a.attached AND (ordering_internal.citus_distribution(a.tbl)).managed
     ORDER BY a.tbl::pg_catalog.oid
     LIMIT 1;
    IF tbl IS NOT NULL THEN
        PERFORM ordering_internal.citus_registry_sync(tbl);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION ordering_internal.citus_registry_at_commit() IS
    'Internal to ALTER EXTENSION ordering UPDATE from 1.2 on a Citus coordinator: makes the registry of distributed streams at commit, once every node is updated';
-- a trigger of the update only
REVOKE EXECUTE ON FUNCTION ordering_internal.citus_registry_at_commit() FROM PUBLIC;
