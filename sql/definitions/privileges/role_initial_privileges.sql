-- The initial privileges of the extension that a new install does not
-- record: of its objects and their columns, those naming a role that is
-- neither PUBLIC nor the extension's owner; of schema ordering, which the
-- control file makes, any (schema is true).
CREATE OR REPLACE FUNCTION ordering_internal.role_initial_privileges()
    RETURNS TABLE (classoid oid, objoid oid, objsubid integer, owner oid, schema boolean)
    LANGUAGE sql STABLE ROWS 10
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT i.classoid, i.objoid, i.objsubid, e.extowner, false
  FROM pg_catalog.pg_init_privs i
  JOIN pg_catalog.pg_depend d
    ON d.classid OPERATOR(pg_catalog.=) i.classoid
   AND d.objid OPERATOR(pg_catalog.=) i.objoid
  JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
 WHERE e.extname OPERATOR(pg_catalog.=) 'ordering'
   AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
   AND d.deptype OPERATOR(pg_catalog.=) 'e'
   AND EXISTS (SELECT FROM pg_catalog.aclexplode(i.initprivs) a
                WHERE a.grantee NOT IN (0, e.extowner))
UNION ALL
SELECT i.classoid, i.objoid, i.objsubid, e.extowner, true
  FROM pg_catalog.pg_init_privs i, pg_catalog.pg_extension e
 WHERE e.extname OPERATOR(pg_catalog.=) 'ordering'
   AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass
   AND i.objoid OPERATOR(pg_catalog.=) e.extnamespace
   AND i.privtype OPERATOR(pg_catalog.=) 'e'
$$;
COMMENT ON FUNCTION ordering_internal.role_initial_privileges() IS
    'Internal to ordering_internal.renew_privileges(): the initial privileges of the extension (pg_init_privs) that a new install does not record, and that pg_dump would leave out of a dump';
REVOKE EXECUTE ON FUNCTION ordering_internal.role_initial_privileges() FROM PUBLIC;
