-- The query that reads the samples of one source: one row per family and
-- row of the source.
CREATE OR REPLACE FUNCTION ordering_internal.metric_source_query(source text)
    RETURNS text
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT 'SELECT v.family, '
       || CASE WHEN pg_catalog.cardinality(src.labels) OPERATOR(pg_catalog.=) 0
               THEN '''{}''::pg_catalog.text[]'
               ELSE 'ARRAY[' || (SELECT pg_catalog.string_agg(pg_catalog.format('s.%I::pg_catalog.text', l), ', ' ORDER BY i)
                                   FROM pg_catalog.unnest(src.labels) WITH ORDINALITY AS u(l, i)) || ']'
          END
       || ', v.value, v.bounds, v.buckets, v.hist_sum, v.hist_count FROM ' || src.from_item || ' s'
       || ' CROSS JOIN LATERAL (VALUES '
       || (SELECT pg_catalog.string_agg(pg_catalog.format(
                      '(%s, (%s)::pg_catalog.numeric, (%s)::pg_catalog.float8[], (%s)::pg_catalog.int8[], (%s)::pg_catalog.numeric, (%s)::pg_catalog.numeric)',
                      f.ord, COALESCE(f.value, 'NULL'), COALESCE(f.bounds, 'NULL'), COALESCE(f.buckets, 'NULL'),
                      COALESCE(f.sum, 'NULL'), COALESCE(f.count, 'NULL')), ', ' ORDER BY f.ord)
             FROM ordering_internal.metric_families() f
            WHERE f.source OPERATOR(pg_catalog.=) src.source)
       || ') v(family, value, bounds, buckets, hist_sum, hist_count)'
  FROM ordering_internal.metric_sources() src
 WHERE src.source OPERATOR(pg_catalog.=) $1
$$;
COMMENT ON FUNCTION ordering_internal.metric_source_query(text) IS
    'Internal to the metrics: the query that reads the samples of every metric family of a source';
REVOKE EXECUTE ON FUNCTION ordering_internal.metric_source_query(text) FROM PUBLIC;
