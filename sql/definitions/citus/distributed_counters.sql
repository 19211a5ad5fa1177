-- The counter table of a stream distributed by Citus, or NULL.
CREATE OR REPLACE FUNCTION ordering_internal.distributed_counters(stream text) RETURNS regclass
    LANGUAGE sql STABLE STRICT
    AS $$
SELECT c.oid::pg_catalog.regclass
  FROM pg_catalog.pg_class c
 WHERE c.relnamespace OPERATOR(pg_catalog.=) 'ordering_internal'::pg_catalog.regnamespace
   AND c.relname OPERATOR(pg_catalog.=) ordering_internal.counter_table_name($1)
   AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL
$$;
COMMENT ON FUNCTION ordering_internal.distributed_counters(text) IS
    'The counter table of a stream distributed by Citus, NULL for a stream counted in ordering.sequences';
-- SECURITY INVOKER: it does only what its caller may do anyway, for
-- attach(), detach(), last_sequence(), check() and post_restore(), which
-- call it only where Citus is.
GRANT EXECUTE ON FUNCTION ordering_internal.distributed_counters(text) TO PUBLIC;
