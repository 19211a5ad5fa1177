-- check()'s part for a stream distributed by Citus: the comparison joins
-- the table and its counter table, co-located, on the distribution column,
-- so Citus runs it on every shard's node.
CREATE OR REPLACE FUNCTION ordering_internal.check_distributed(tbl regclass, resource_column name,
                                                    sequence_column name, stream text,
                                                    max_per_kind bigint)
    RETURNS TABLE (kind text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    counters regclass := ordering_internal.distributed_counters(stream);
BEGIN
    IF counters IS NULL THEN
        RAISE EXCEPTION 'stream "%" is not distributed by Citus', stream
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'counter_behind_table'::pg_catalog.text,
               pg_catalog.format('table %%s (stream %%s), resource %%s: highest seq %%s, counter %%s',
                                 $1, pg_catalog.quote_literal($2), pg_catalog.quote_literal(x.res),
                                 x.hi, COALESCE(c.last_seq::pg_catalog.text, 'missing'))
          FROM (SELECT t.%1$I AS res, pg_catalog.max(t.%2$I) AS hi
                  FROM %3$s t
                 WHERE t.%2$I IS NOT NULL
                 GROUP BY t.%1$I) x
          LEFT JOIN %4$s c
            ON c.resource_id OPERATOR(pg_catalog.=) x.res
           AND c.stream OPERATOR(pg_catalog.=) $2
         WHERE c.last_seq IS NULL OR c.last_seq OPERATOR(pg_catalog.<) x.hi
         ORDER BY x.res
         LIMIT $3$q$,
        resource_column, sequence_column, tbl, counters)
        USING tbl::pg_catalog.text, stream, max_per_kind;
    -- grouped by the distribution column: each node counts its shards
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'seq_repeated_in_table'::pg_catalog.text,
               pg_catalog.format('table %%s (stream %%s), resource %%s: %%s rows hold %%s numbers',
                                 $1, pg_catalog.quote_literal($2), pg_catalog.quote_literal(x.res),
                                 x.n, x.distinct_seqs)
          FROM (SELECT t.%1$I AS res, pg_catalog.count(t.%2$I) AS n,
                       pg_catalog.count(DISTINCT t.%2$I) AS distinct_seqs
                  FROM %3$s t
                 WHERE t.%1$I IS NOT NULL
                 GROUP BY t.%1$I) x
         WHERE x.n OPERATOR(pg_catalog.<>) x.distinct_seqs
         ORDER BY x.res
         LIMIT $3$q$,
        resource_column, sequence_column, tbl)
        USING tbl::pg_catalog.text, stream, max_per_kind;
END
$$;
COMMENT ON FUNCTION ordering_internal.check_distributed(regclass, name, name, text, bigint) IS
    'Internal to ordering.check(): counters of a stream distributed by Citus below the highest number in its table, and numbers held twice by one resource, on every node';
-- It reads only what its caller may read (check() runs it as its caller).
GRANT EXECUTE ON FUNCTION ordering_internal.check_distributed(regclass, name, name, text, bigint) TO PUBLIC;
