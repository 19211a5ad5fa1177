-- The Prometheus text: the samples, family by family in the order of their
-- definitions, series by label values.  Set-returning functions below it
-- state the rows they return (a few consumers and streams, n hot resources),
-- and it runs with jit = off: estimated at 1,000 rows each, the hot
-- resources of every consumer came to a million estimated rows, far past
-- jit_above_cost, and a scrape spent seconds compiling what runs in
-- milliseconds.  Every number prints as numeric, whose text no setting
-- changes: a bucket's bound as float8 text followed extra_float_digits
-- (le="2e+01" for 25 under -14).
CREATE OR REPLACE FUNCTION ordering.metrics() RETURNS text
    LANGUAGE sql VOLATILE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $$
WITH f AS MATERIALIZED (
    SELECT x.ord, x.name, x.type, x.help, src.labels AS label_names
      FROM ordering_internal.metric_families() x
      JOIN ordering_internal.metric_sources() src ON src.source = x.source
), m AS MATERIALIZED (
    SELECT * FROM ordering_internal.metric_samples()
), lines(ord, sub, labels, i, line) AS (
    SELECT f.ord, 0, '{}'::text[], 0::bigint, '# HELP ' || f.name || ' ' || f.help FROM f
    UNION ALL
    SELECT f.ord, 1, '{}', 0, '# TYPE ' || f.name || ' ' || f.type FROM f
    UNION ALL
    SELECT f.ord, 2, m.labels, 0,
           f.name || ordering_internal.metric_label_set(f.label_names, m.labels) || ' ' || m.value
      FROM f JOIN m ON m.family = f.ord
     WHERE f.type <> 'histogram'
    UNION ALL
    SELECT f.ord, 2, m.labels, b.i,
           f.name || '_bucket'
           || ordering_internal.metric_label_set(f.label_names || 'le'::text,
                                                 m.labels || COALESCE(b.bound::numeric::text, '+Inf'))
           || ' ' || COALESCE(m.buckets[b.i]::numeric, m.hist_count)
      FROM f JOIN m ON m.family = f.ord
     CROSS JOIN LATERAL unnest(m.bounds || NULL::float8) WITH ORDINALITY AS b(bound, i)
     WHERE f.type = 'histogram'
    UNION ALL
    SELECT f.ord, 2, m.labels, 1000000 + x.i,
           f.name || x.suffix || ordering_internal.metric_label_set(f.label_names, m.labels)
           || ' ' || x.value
      FROM f JOIN m ON m.family = f.ord
     CROSS JOIN LATERAL (VALUES (1, '_sum', m.hist_sum), (2, '_count', m.hist_count)) AS x(i, suffix, value)
     WHERE f.type = 'histogram'
)
SELECT string_agg(l.line, E'\n' ORDER BY l.ord, l.sub, l.labels COLLATE "C", l.i) || E'\n'
  FROM lines l
$$;
COMMENT ON FUNCTION ordering.metrics() IS
    'The statistics of the current database in the Prometheus text exposition format';
REVOKE EXECUTE ON FUNCTION ordering.metrics() FROM PUBLIC;
