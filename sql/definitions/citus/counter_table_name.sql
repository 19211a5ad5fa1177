-- The counter table of a stream, in schema ordering_internal (src/citus.c
-- computes the same name).
CREATE OR REPLACE FUNCTION ordering_internal.counter_table_name(stream text) RETURNS name
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
SELECT ('sequences_' OPERATOR(pg_catalog.||)
        pg_catalog.left(pg_catalog.md5($1), 16))::pg_catalog.name
$$;
COMMENT ON FUNCTION ordering_internal.counter_table_name(text) IS
    'Name of the counter table, in schema ordering_internal, of a stream distributed by Citus';
-- SECURITY INVOKER: it does only what its caller may do anyway, for
-- attach(), detach(), last_sequence(), check() and post_restore(), which
-- call it only where Citus is.
GRANT EXECUTE ON FUNCTION ordering_internal.counter_table_name(text) TO PUBLIC;
