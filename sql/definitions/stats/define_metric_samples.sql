-- The samples of every family (or of one source's): what ordering.metrics()
-- prints.  ordering_internal.metric_samples() is generated from the
-- definitions by define_metric_samples(), as a PL/pgSQL function whose one
-- query is static: planned once per session and cached, where a query built
-- at each call would be parsed and planned at every scrape.  Whoever changes
-- the definitions calls define_metric_samples() again (metric_samples.sql;
-- sql/metrics.sql fails on a family without series).  With jit = off: a
-- scrape must not compile what runs in milliseconds.
CREATE OR REPLACE FUNCTION ordering_internal.define_metric_samples()
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $define$
BEGIN
    EXECUTE pg_catalog.format($f$
CREATE OR REPLACE FUNCTION ordering_internal.metric_samples(source text DEFAULT NULL)
    RETURNS TABLE (family integer, labels text[], value numeric, bounds double precision[],
                   buckets bigint[], hist_sum numeric, hist_count numeric)
    LANGUAGE plpgsql VOLATILE ROWS 100
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $body$
BEGIN
    RETURN QUERY
%s;
END
$body$$f$,
        (SELECT pg_catalog.string_agg(
                    pg_catalog.format(E'    SELECT q.* FROM (%s) q\n     WHERE metric_samples.source IS NULL OR metric_samples.source OPERATOR(pg_catalog.=) %L',
                                      ordering_internal.metric_source_query(x.source), x.source),
                    E'\n    UNION ALL\n' ORDER BY x.ord)
           FROM ordering_internal.metric_sources() x));
END
$define$;
COMMENT ON FUNCTION ordering_internal.define_metric_samples() IS
    'Internal to the metrics: (re)creates ordering_internal.metric_samples() from the metric families; call it after changing them';
REVOKE EXECUTE ON FUNCTION ordering_internal.define_metric_samples() FROM PUBLIC;
