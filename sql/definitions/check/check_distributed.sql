-- check()'s part for a stream distributed by Citus: the comparison joins
-- the table and its counter table, co-located, on the distribution column,
-- so Citus runs it on every shard's node.  A resource of another type than
-- text is compared by its key (ordering.resource_key()), the counter's
-- identity, and joined on resource_value, the counter table's distribution
-- column (1.3).
CREATE OR REPLACE FUNCTION ordering_internal.check_distributed(tbl regclass, resource_column name,
                                                    sequence_column name, stream text,
                                                    max_per_kind bigint)
    RETURNS TABLE (kind text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    counters regclass := ordering_internal.distributed_counters(stream);
    keyed boolean;
    res_key text;
    join_on text;
BEGIN
    IF counters IS NULL THEN
        RAISE EXCEPTION 'stream "%" is not distributed by Citus', stream
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    keyed := EXISTS (SELECT FROM pg_catalog.pg_attribute a
                      WHERE a.attrelid OPERATOR(pg_catalog.=) counters
                        AND a.attname OPERATOR(pg_catalog.=) 'resource_value'
                        AND NOT a.attisdropped);
    res_key := CASE WHEN keyed THEN pg_catalog.format('ordering.resource_key(t.%I)', resource_column)
                    ELSE pg_catalog.format('t.%I', resource_column) END;
    join_on := CASE WHEN keyed THEN 'c.resource_value OPERATOR(pg_catalog.=) x.val AND ' ELSE '' END;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'counter_behind_table'::pg_catalog.text,
               pg_catalog.format('table %%s (stream %%s), resource %%s: highest seq %%s, counter %%s',
                                 $1, pg_catalog.quote_literal($2), pg_catalog.quote_literal(x.res),
                                 x.hi, COALESCE(c.last_seq::pg_catalog.text, 'missing'))
          FROM (SELECT t.%1$I AS val, %5$s AS res, pg_catalog.max(t.%2$I) AS hi
                  FROM %3$s t
                 WHERE t.%2$I IS NOT NULL
                 GROUP BY t.%1$I, %5$s) x
          LEFT JOIN %4$s c
            ON %6$s c.resource_id OPERATOR(pg_catalog.=) x.res
           AND c.stream OPERATOR(pg_catalog.=) $2
         WHERE c.last_seq IS NULL OR c.last_seq OPERATOR(pg_catalog.<) x.hi
         ORDER BY x.res
         LIMIT $3$q$,
        resource_column, sequence_column, tbl, counters, res_key, join_on)
        USING tbl::pg_catalog.text, stream, max_per_kind;
    -- grouped by the distribution column: each node counts its shards
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'seq_repeated_in_table'::pg_catalog.text,
               pg_catalog.format('table %%s (stream %%s), resource %%s: %%s rows hold %%s numbers',
                                 $1, pg_catalog.quote_literal($2), pg_catalog.quote_literal(x.res),
                                 x.n, x.distinct_seqs)
          FROM (SELECT %4$s AS res, pg_catalog.count(t.%2$I) AS n,
                       pg_catalog.count(DISTINCT t.%2$I) AS distinct_seqs
                  FROM %3$s t
                 WHERE t.%1$I IS NOT NULL
                 GROUP BY t.%1$I, %4$s) x
         WHERE x.n OPERATOR(pg_catalog.<>) x.distinct_seqs
         ORDER BY x.res
         LIMIT $3$q$,
        resource_column, sequence_column, tbl, res_key)
        USING tbl::pg_catalog.text, stream, max_per_kind;
END
$$;
COMMENT ON FUNCTION ordering_internal.check_distributed(regclass, name, name, text, bigint) IS
    'Internal to ordering.check(): counters of a stream distributed by Citus below the highest number in its table, and numbers held twice by one resource, on every node';
-- It reads only what its caller may read (check() runs it as its caller).
GRANT EXECUTE ON FUNCTION ordering_internal.check_distributed(regclass, name, name, text, bigint) TO PUBLIC;
