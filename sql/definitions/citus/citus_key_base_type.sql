-- The types a distributed stream's counters and a distributed consumer's
-- tables may be keyed by, written once for attach() and
-- distribute_consumer(): their tables hold each resource's key read back
-- as the resource column's type, which is exact only where the key reads
-- back as an equal value in every session.  citext is known by its input
-- function, since the extension may live in any schema.
CREATE OR REPLACE FUNCTION ordering_internal.citus_key_base_type(keytype regtype)
    RETURNS regtype
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
WITH RECURSIVE chain(oid, typtype, typbasetype, typname, typinput) AS (
    SELECT t.oid, t.typtype, t.typbasetype, t.typname, t.typinput
      FROM pg_catalog.pg_type t
     WHERE t.oid OPERATOR(pg_catalog.=) keytype
    UNION ALL
    SELECT t.oid, t.typtype, t.typbasetype, t.typname, t.typinput
      FROM chain c, pg_catalog.pg_type t
     WHERE c.typtype OPERATOR(pg_catalog.=) 'd'
       AND t.oid OPERATOR(pg_catalog.=) c.typbasetype
)
SELECT c.oid::pg_catalog.regtype
  FROM chain c
 WHERE c.typtype OPERATOR(pg_catalog.<>) 'd'
   AND (c.oid IN ('pg_catalog.int2'::pg_catalog.regtype, 'pg_catalog.int4'::pg_catalog.regtype,
                  'pg_catalog.int8'::pg_catalog.regtype, 'pg_catalog.uuid'::pg_catalog.regtype,
                  'pg_catalog.text'::pg_catalog.regtype, 'pg_catalog.varchar'::pg_catalog.regtype)
        OR (c.typname OPERATOR(pg_catalog.=) 'citext'
            AND c.typinput OPERATOR(pg_catalog.=) ANY
                (SELECT p.oid FROM pg_catalog.pg_proc p
                  WHERE p.proname OPERATOR(pg_catalog.=) 'citextin')))
$$;
COMMENT ON FUNCTION ordering_internal.citus_key_base_type(regtype) IS
    'Internal to attach() and distribute_consumer(): the base type of a type that Citus-distributed counters and consumer tables may be keyed by (smallint, integer, bigint, uuid, text, varchar, citext, domains over them), else NULL';
-- attach() runs it as its caller; it reads only the catalog
GRANT EXECUTE ON FUNCTION ordering_internal.citus_key_base_type(regtype) TO PUBLIC;
