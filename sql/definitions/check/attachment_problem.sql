-- What is wrong with an attached table's columns, or NULL: the columns
-- attach() was given must still exist, the sequence column as a bigint.
-- (A renamed or dropped column fails every insert, 42703, and every query
-- that names it.)
CREATE OR REPLACE FUNCTION ordering_internal.attachment_problem(tbl regclass, resource_column name,
                                                     sequence_column name)
    RETURNS text
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT CASE
           WHEN r.attnum IS NULL THEN
               pg_catalog.format('resource column %I does not exist', $2)
           WHEN s.attnum IS NULL THEN
               pg_catalog.format('sequence column %I does not exist', $3)
           WHEN s.atttypid OPERATOR(pg_catalog.<>) 'pg_catalog.int8'::pg_catalog.regtype THEN
               pg_catalog.format('sequence column %I is of type %s, not bigint', $3,
                                 s.atttypid::pg_catalog.regtype)
       END
  FROM (SELECT) AS one
  LEFT JOIN pg_catalog.pg_attribute r
    ON r.attrelid OPERATOR(pg_catalog.=) $1 AND r.attname OPERATOR(pg_catalog.=) $2
   AND r.attnum OPERATOR(pg_catalog.>) 0 AND NOT r.attisdropped
  LEFT JOIN pg_catalog.pg_attribute s
    ON s.attrelid OPERATOR(pg_catalog.=) $1 AND s.attname OPERATOR(pg_catalog.=) $3
   AND s.attnum OPERATOR(pg_catalog.>) 0 AND NOT s.attisdropped
$$;
COMMENT ON FUNCTION ordering_internal.attachment_problem(regclass, name, name) IS
    'Internal to ordering.check() and ordering.post_restore(): why the resource and sequence columns an attached table was attached with cannot be used any more (renamed, dropped, retyped), or NULL';
REVOKE EXECUTE ON FUNCTION ordering_internal.attachment_problem(regclass, name, name) FROM PUBLIC;
