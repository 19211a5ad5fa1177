-- Metrics: one source of metric definitions for ordering.metrics() and
-- monitoring/queries.yaml, and no plan of a scrape that JIT-compiles.
\set VERBOSITY terse

-- Some state, so that every family has series.
SELECT ordering.emit('m-' || i % 3, 'e', '{}') IS NOT NULL FROM generate_series(1, 6) i LIMIT 1;
SELECT count(*) FROM ordering.deliver('metrics', 'm-1', 3, '{}');
SELECT ordering.apply_if_newer('metrics', 'm-2', 1);

-------------------------------------------------------------------------------
-- One source: ordering_internal.metric_families()
-------------------------------------------------------------------------------
-- Each family once, each exporter block from one source.
SELECT name FROM ordering_internal.metric_families() GROUP BY name HAVING count(*) > 1;
SELECT block FROM ordering_internal.metric_families() GROUP BY block
HAVING count(DISTINCT source) > 1;
-- metrics() serves exactly the families defined, in their order, with
-- their types and help texts, and a series of each (the state above).
SELECT f.ord, f.name, f.type, t.line IS NOT NULL AS typed, h.line IS NOT NULL AS helped,
       (SELECT count(*) FROM regexp_split_to_table(ordering.metrics(), E'\n') AS s(line)
         WHERE s.line LIKE f.name || '%' AND s.line NOT LIKE '#%') > 0 AS has_series
  FROM ordering_internal.metric_families() f
  LEFT JOIN regexp_split_to_table(ordering.metrics(), E'\n') AS t(line)
    ON t.line = '# TYPE ' || f.name || ' ' || f.type
  LEFT JOIN regexp_split_to_table(ordering.metrics(), E'\n') AS h(line)
    ON h.line = '# HELP ' || f.name || ' ' || f.help
 ORDER BY f.ord;
SELECT count(*) AS families_served
  FROM regexp_split_to_table(ordering.metrics(), E'\n') AS t(line) WHERE t.line LIKE '# TYPE %';
-- the function metrics() reads the samples from is what the definitions
-- generate now (whoever changes them calls define_metric_samples())
BEGIN;
CREATE TEMP TABLE samples_src AS
SELECT prosrc FROM pg_proc WHERE oid = 'ordering_internal.metric_samples(text)'::regprocedure;
SELECT ordering_internal.define_metric_samples();
SELECT p.prosrc = s.prosrc AS samples_function_is_current
  FROM pg_proc p, samples_src s
 WHERE p.oid = 'ordering_internal.metric_samples(text)'::regprocedure;
ROLLBACK;

-- monitoring/queries.yaml is what the definitions generate: the lines that
-- differ (none).  To regenerate it, in a database with this version:
--   psql -XAt -c 'SELECT ordering_internal.exporter_queries()' > monitoring/queries.yaml
\set queries_yaml `cat monitoring/queries.yaml`
SELECT coalesce(g.n, f.n) AS line, g.line AS generated, f.line AS in_file
  FROM regexp_split_to_table(ordering_internal.exporter_queries(), E'\n') WITH ORDINALITY AS g(line, n)
  FULL JOIN regexp_split_to_table(:'queries_yaml', E'\n') WITH ORDINALITY AS f(line, n) USING (n)
 WHERE g.line IS DISTINCT FROM f.line
 ORDER BY 1
 LIMIT 5;
-- and each of its blocks runs, with a row per label set of its families
CREATE FUNCTION pg_temp.block_rows(query text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE 'SELECT count(*) FROM (' || query || ') q' INTO n;
    RETURN n;
END
$$;
SELECT block, pg_temp.block_rows(query) > 0 AS has_rows
  FROM ordering_internal.exporter_block_queries();

-------------------------------------------------------------------------------
-- Plans: with PostgreSQL's default JIT settings, nothing a scrape runs is
-- planned to JIT.  (1.1 estimated each set-returning function at 1,000
-- rows, the hot resources of each consumer at a million: metrics() spent
-- seconds compiling.)
-------------------------------------------------------------------------------
SET jit = on;
SET jit_above_cost = 100000;
CREATE FUNCTION pg_temp.plan_jits(query text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    plan json;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
    RETURN plan -> 0 -> 'JIT' IS NOT NULL;
END
$$;
-- a query that is expensive enough does JIT (the check can fail), on a
-- server built with LLVM (one built without it compiles nothing: there the
-- checks below hold trivially; pg_jit_available() would load the provider)
SELECT (SELECT c.setting NOT LIKE '%--with-llvm%' FROM pg_catalog.pg_config c
         WHERE c.name = 'CONFIGURE')
       OR pg_temp.plan_jits('SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b')
    AS expensive_query_jits;
-- what ordering.metrics() runs: its own query, and the query of each
-- source it reads samples from
SELECT pg_temp.plan_jits(prosrc) AS metrics_jits
  FROM pg_proc WHERE oid = 'ordering.metrics()'::regprocedure;
SELECT source, pg_temp.plan_jits(ordering_internal.metric_source_query(source)) AS jits
  FROM ordering_internal.metric_sources() ORDER BY ord;
-- and, whatever their estimates, they run with jit = off
SELECT oid::regprocedure, proconfig @> '{jit=off}' AS jit_off
  FROM pg_proc WHERE oid IN ('ordering.metrics()'::regprocedure,
                             'ordering_internal.metric_samples(text)'::regprocedure)
 ORDER BY oid::regprocedure::text COLLATE "C";
-- the queries of the exporter's blocks, which cannot set jit
SELECT block, pg_temp.plan_jits(query) AS jits
  FROM ordering_internal.exporter_block_queries();
-- and the views dashboards read
SELECT v, pg_temp.plan_jits('SELECT * FROM ' || v) AS jits
  FROM unnest('{ordering.stats,ordering.stream_stats,ordering.outbox_lag,ordering.open_gaps,ordering.dead_letters}'::text[]) v;
RESET jit;
RESET jit_above_cost;

-------------------------------------------------------------------------------
-- The text does not depend on the session's settings: under each setting
-- that changes how values print, the same lines (but the ages, which grow
-- between two scrapes).  1.2 printed the histogram's bounds as float8 text:
-- under extra_float_digits = -14, le="1e+01", and 25 became "2e+01".
-------------------------------------------------------------------------------
CREATE FUNCTION pg_temp.scrape() RETURNS text[] LANGUAGE sql AS $$
SELECT array_agg(line ORDER BY n)
  FROM regexp_split_to_table(ordering.metrics(), E'\n') WITH ORDINALITY AS t(line, n)
 WHERE line !~ '_age_seconds[{ ]'
$$;
CREATE TEMP TABLE reference_scrape AS SELECT pg_temp.scrape() AS lines;
SELECT count(*) > 0 AS has_bounds FROM unnest((SELECT lines FROM reference_scrape)) AS l
 WHERE l LIKE '%le="25"%';
CREATE FUNCTION pg_temp.scrape_under(setting text, value text) RETURNS TABLE (line text)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config(setting, value, true);
    RETURN QUERY
    SELECT l FROM unnest(pg_temp.scrape()) AS l
    EXCEPT ALL
    SELECT l FROM unnest((SELECT lines FROM reference_scrape)) AS l;
END
$$;
-- the lines that differ (none)
SELECT s.setting, s.value, d.line
  FROM (VALUES ('extra_float_digits', '-15'), ('extra_float_digits', '-14'),
               ('extra_float_digits', '0'), ('extra_float_digits', '3'),
               ('lc_numeric', 'C.utf8'), ('DateStyle', 'SQL, DMY'),
               ('IntervalStyle', 'sql_standard'), ('TimeZone', 'Asia/Kathmandu'),
               ('bytea_output', 'escape')) AS s(setting, value)
 CROSS JOIN LATERAL pg_temp.scrape_under(s.setting, s.value) AS d
 ORDER BY 1, 2, 3;

-- Clean up.
DELETE FROM ordering.outbox WHERE resource_id LIKE 'm-%';
DELETE FROM ordering.sequences WHERE resource_id LIKE 'm-%';
DELETE FROM ordering.positions WHERE consumer = 'metrics';
DELETE FROM ordering.parked WHERE consumer = 'metrics';
