-- How Citus manages a table: managed false if it does not (or Citus is not
-- here).  Dynamic SQL, through to_jsonb(): the Citus catalogs exist only
-- where Citus is installed, and a version of them without a column we read
-- gives NULLs (managed, but how is unknown) instead of an error.
CREATE OR REPLACE FUNCTION ordering_internal.citus_distribution(tbl regclass,
                                                     OUT managed boolean,
                                                     OUT partmethod text,
                                                     OUT repmodel text,
                                                     OUT colocationid integer,
                                                     OUT distribution_column text,
                                                     OUT on_coordinator boolean)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p jsonb;
BEGIN
    managed := false;
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN;
    END IF;
    EXECUTE $q$
        SELECT pg_catalog.to_jsonb(p) FROM pg_catalog.pg_dist_partition p
         WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1$q$
       INTO p USING tbl;
    IF p IS NULL THEN
        RETURN;
    END IF;
    managed := true;
    partmethod := p OPERATOR(pg_catalog.->>) 'partmethod';
    repmodel := p OPERATOR(pg_catalog.->>) 'repmodel';
    colocationid := (p OPERATOR(pg_catalog.->>) 'colocationid')::integer;
    IF p OPERATOR(pg_catalog.?) 'partkey'
       AND pg_catalog.to_regprocedure('pg_catalog.column_to_column_name(regclass, text)') IS NOT NULL THEN
        EXECUTE 'SELECT pg_catalog.column_to_column_name($1, $2)'
           INTO distribution_column USING tbl, p OPERATOR(pg_catalog.->>) 'partkey';
    END IF;
    on_coordinator := true;
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_local_group') IS NOT NULL THEN
        EXECUTE 'SELECT g.groupid OPERATOR(pg_catalog.=) 0 FROM pg_catalog.pg_dist_local_group g'
           INTO on_coordinator;
        on_coordinator := COALESCE(on_coordinator, true);
    END IF;
END
$$;
COMMENT ON FUNCTION ordering_internal.citus_distribution(regclass) IS
    'How Citus distributes a table (pg_dist_partition); managed false for a table Citus does not manage';
-- SECURITY INVOKER: it does only what its caller may do anyway, for
-- attach(), detach(), last_sequence(), check() and post_restore(), which
-- call it only where Citus is.
GRANT EXECUTE ON FUNCTION ordering_internal.citus_distribution(regclass) TO PUBLIC;
