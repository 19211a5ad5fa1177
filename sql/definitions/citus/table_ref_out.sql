-- The output of ordering_internal.table_ref (src/citus/citus_registry.c):
-- the table's qualified name on this node, whatever the search_path.
-- IMMUTABLE, though a rename changes it, as Citus wants of a function of a
-- column in a statement that writes a reference table (the registry's
-- writer deletes a table's row by its name, which each node computes: Citus
-- renames a table on every node alike); no index or stored value uses it.
CREATE OR REPLACE FUNCTION ordering_internal.table_ref_out(ordering_internal.table_ref)
    RETURNS cstring
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'ordering_table_ref_out';
COMMENT ON FUNCTION ordering_internal.table_ref_out(ordering_internal.table_ref) IS
    'Output of type ordering_internal.table_ref: the table''s qualified name on this node ("-" for a table that is gone)';
-- the type calls it whoever reads or writes a table_ref
REVOKE EXECUTE ON FUNCTION ordering_internal.table_ref_out(ordering_internal.table_ref) FROM PUBLIC;
