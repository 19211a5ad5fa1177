-- What the roles fill.sql gave each privilege set hold on the extension's
-- objects, one line per role, object and privilege, sorted by bytes:
-- test/upgrade.sh compares these lines between a new install where the
-- same grant_* calls were made and each database updated from an older
-- version, or restored from a dump, which must be the same.  As sets,
-- whatever the order of the ACL entries.  Also any privilege of those
-- roles recorded as an initial privilege of the extension (pg_init_privs),
-- which pg_dump would leave out of a dump: a new install has none.
\set ON_ERROR_STOP 1
\pset tuples_only on
\pset format unaligned
SET client_min_messages = warning;

WITH roles AS (
    SELECT r.oid FROM pg_catalog.pg_roles r
     WHERE r.rolname IN ('upgrade_producer', 'upgrade_consumer', 'upgrade_monitor',
                         'upgrade_operator')
), members AS (
    SELECT d.classid, d.objid
      FROM pg_catalog.pg_depend d
      JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
     WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
       AND d.deptype = 'e' AND e.extname = 'ordering'
), granted (object, grantee, privilege_type, is_grantable) AS (
    SELECT 'function ' || p.oid::pg_catalog.regprocedure::text, a.grantee, a.privilege_type,
           a.is_grantable
      FROM pg_catalog.pg_proc p
      JOIN members m ON m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND m.objid = p.oid
     CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
    UNION ALL
    SELECT 'relation ' || c.oid::pg_catalog.regclass::text, a.grantee, a.privilege_type,
           a.is_grantable
      FROM pg_catalog.pg_class c
      JOIN members m ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND m.objid = c.oid
     CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) a
    UNION ALL
    SELECT 'column ' || c.oid::pg_catalog.regclass::text || '.' || att.attname, a.grantee,
           a.privilege_type, a.is_grantable
      FROM pg_catalog.pg_class c
      JOIN members m ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND m.objid = c.oid
      JOIN pg_catalog.pg_attribute att ON att.attrelid = c.oid AND att.attnum > 0
     CROSS JOIN LATERAL pg_catalog.aclexplode(att.attacl) a
    UNION ALL
    -- schema ordering is not a member: the control file makes it
    SELECT 'schema ' || n.nspname, a.grantee, a.privilege_type, a.is_grantable
      FROM pg_catalog.pg_namespace n
     CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) a
     WHERE n.nspname IN ('ordering', 'ordering_internal')
), initial (object, grantee, privilege_type) AS (
    -- of the members, and of schema ordering, which grants in an update
    -- script give initial privileges too
    SELECT pg_catalog.pg_describe_object(i.classoid, i.objoid, i.objsubid), a.grantee,
           a.privilege_type
      FROM pg_catalog.pg_init_privs i
     CROSS JOIN LATERAL pg_catalog.aclexplode(i.initprivs) a
     WHERE (i.classoid, i.objoid) IN (SELECT m.classid, m.objid FROM members m)
        OR (i.classoid = 'pg_catalog.pg_namespace'::pg_catalog.regclass
            AND i.objoid = 'ordering'::pg_catalog.regnamespace)
)
SELECT l.line FROM (
    SELECT pg_catalog.concat_ws(' | ', g.grantee::pg_catalog.regrole::text, g.object,
                                g.privilege_type, CASE WHEN g.is_grantable THEN 'grantable' END)
      FROM granted g JOIN roles r ON r.oid = g.grantee
    UNION ALL
    SELECT pg_catalog.concat_ws(' | ', 'initial privilege', i.grantee::pg_catalog.regrole::text,
                                i.object, i.privilege_type)
      FROM initial i JOIN roles r ON r.oid = i.grantee
) l (line)
 ORDER BY l.line COLLATE "C";
