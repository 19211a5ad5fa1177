-- Keys (src/resource_key.c): a resource type whose text depends on a
-- setting the key does not fix (money, the reg* types that print names by
-- search_path) is refused at attach() and at every insert; a numeric is
-- keyed without the trailing zeros of its fraction and a float zero as
-- "0", so equal values are one resource.
CREATE OR REPLACE FUNCTION ordering_internal.check_resource_type(tbl regclass, resource_column name)
    RETURNS void
    LANGUAGE c STRICT STABLE
    AS 'MODULE_PATHNAME', 'ordering_check_resource_type';
COMMENT ON FUNCTION ordering_internal.check_resource_type(regclass, name) IS
    'Internal to ordering.attach(): refuses (0A000) a resource column whose type''s text depends on a setting the key does not fix (money, reg* types printed by search_path)';
-- It reads only the catalog: whoever attaches may call it.
GRANT EXECUTE ON FUNCTION ordering_internal.check_resource_type(regclass, name) TO PUBLIC;
