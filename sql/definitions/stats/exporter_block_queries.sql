-- The exporter's configuration, generated: one block per exporter block of
-- the families, reading the family's source with the family's expressions,
-- one column per family (a histogram: bounds, buckets, sum and count).
CREATE OR REPLACE FUNCTION ordering_internal.exporter_block_queries()
    RETURNS TABLE (block text, query text)
    LANGUAGE sql STABLE ROWS 10
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT b.block,
       'SELECT '
       || pg_catalog.array_to_string(
              ARRAY['pg_catalog.current_database() AS datname']
              || ARRAY(SELECT pg_catalog.format('s.%I', l)
                         FROM pg_catalog.unnest(src.labels) WITH ORDINALITY AS u(l, i)
                        ORDER BY i)
              || ARRAY(SELECT pg_catalog.format('(%s)::%s AS %I', x.expr, x.typ,
                                                pg_catalog.substr(f.name, pg_catalog.length(b.block) + 2)
                                                || x.suffix)
                         FROM ordering_internal.metric_families() f
                        CROSS JOIN LATERAL (VALUES (1, f.value, 'pg_catalog.float8', ''),
                                                   (2, f.bounds, 'pg_catalog.float8[]', ''),
                                                   (3, f.buckets, 'pg_catalog.int8[]', '_bucket'),
                                                   (4, f.sum, 'pg_catalog.float8', '_sum'),
                                                   (5, f.count, 'pg_catalog.int8', '_count'))
                                   AS x(i, expr, typ, suffix)
                        WHERE f.block OPERATOR(pg_catalog.=) b.block AND x.expr IS NOT NULL
                        ORDER BY f.ord, x.i),
              E',\n       ')
       || E'\n  FROM ' || src.from_item || ' s'
  FROM (SELECT f.block, pg_catalog.min(f.source) AS source, pg_catalog.min(f.ord) AS ord
          FROM ordering_internal.metric_families() f
         GROUP BY f.block) b
  JOIN ordering_internal.metric_sources() src ON src.source OPERATOR(pg_catalog.=) b.source
 ORDER BY b.ord
$$;
COMMENT ON FUNCTION ordering_internal.exporter_block_queries() IS
    'Internal to the metrics: the query of each block of the exporter''s configuration, from the metric families';
REVOKE EXECUTE ON FUNCTION ordering_internal.exporter_block_queries() FROM PUBLIC;
