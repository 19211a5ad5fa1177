-- The input of ordering_internal.table_ref (src/citus/citus_registry.c): a
-- table's qualified name, resolved on the node that reads it.
CREATE OR REPLACE FUNCTION ordering_internal.table_ref_in(cstring)
    RETURNS ordering_internal.table_ref
    LANGUAGE c STABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'ordering_table_ref_in';
COMMENT ON FUNCTION ordering_internal.table_ref_in(cstring) IS
    'Input of type ordering_internal.table_ref: the table of this qualified name on this node ("-" or a name of no table here: none)';
-- the type calls it whoever reads or writes a table_ref
REVOKE EXECUTE ON FUNCTION ordering_internal.table_ref_in(cstring) FROM PUBLIC;
