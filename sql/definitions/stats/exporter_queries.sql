-- monitoring/queries.yaml, generated from the metric families.
CREATE OR REPLACE FUNCTION ordering_internal.exporter_queries()
    RETURNS text
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT E'# Custom queries for prometheus-postgres-exporter (--extend.query-path):\n'
       '# the statistics of the ordering extension under the same metric names as\n'
       '# ordering.metrics().  Point DATA_SOURCE_NAME at every database that has the\n'
       '# extension (a comma-separated list of DSNs); each series carries the\n'
       '# database in the label "datname".  The role needs the monitoring set:\n'
       '# SELECT ordering.grant_monitor(''role'') (see docs/monitoring.md).\n'
       '#\n'
       '# Generated: do not edit.  The metric families are defined once, in the\n'
       '# extension (ordering_internal.metric_families()), which ordering.metrics()\n'
       '# reads too; this file is the output of\n'
       '#   psql -XAt -c ''SELECT ordering_internal.exporter_queries()''\n'
       '# in a database with this version of the extension, and the regression test\n'
       '# sql/metrics.sql fails when the two differ.  The exporter prefixes each\n'
       '# column with the key of its block: block "ordering" + column\n'
       '# "events_consumed_total" = ordering_events_consumed_total.\n'
       || pg_catalog.string_agg(
              E'\n'
              || COALESCE('# ' || pg_catalog.replace(src.note, E'\n', E'\n# ') || E'\n', '')
              || q.block || E':\n'
              || E'  query: |\n'
              || (SELECT pg_catalog.string_agg('    ' || l, E'\n' ORDER BY n)
                    FROM pg_catalog.regexp_split_to_table(q.query, E'\n') WITH ORDINALITY AS t(l, n))
              || E'\n  metrics:\n'
              || pg_catalog.array_to_string(
                     ARRAY[ordering_internal.exporter_column('datname', 'LABEL',
                                                            'Database of the ' || src.noun)]
                     || ARRAY(SELECT ordering_internal.exporter_column(l, 'LABEL', h)
                                FROM ROWS FROM (pg_catalog.unnest(src.labels), pg_catalog.unnest(src.label_help))
                                     WITH ORDINALITY AS u(l, h, i)
                               ORDER BY i)
                     || ARRAY(SELECT ordering_internal.exporter_column(
                                         pg_catalog.substr(f.name, pg_catalog.length(q.block) + 2),
                                         pg_catalog.upper(f.type), f.help)
                                FROM ordering_internal.metric_families() f
                               WHERE f.block OPERATOR(pg_catalog.=) q.block
                               ORDER BY f.ord),
                     E'\n'),
              E'\n' ORDER BY q.n)
  FROM ordering_internal.exporter_block_queries() WITH ORDINALITY AS q(block, query, n)
  JOIN (SELECT DISTINCT f.block, f.source FROM ordering_internal.metric_families() f) fb
    ON fb.block OPERATOR(pg_catalog.=) q.block
  JOIN ordering_internal.metric_sources() src ON src.source OPERATOR(pg_catalog.=) fb.source
$$;
COMMENT ON FUNCTION ordering_internal.exporter_queries() IS
    'The configuration of prometheus-postgres-exporter for the metric families (monitoring/queries.yaml is its output)';
REVOKE EXECUTE ON FUNCTION ordering_internal.exporter_queries() FROM PUBLIC;
