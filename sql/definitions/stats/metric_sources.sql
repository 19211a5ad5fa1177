-- Metrics: one source of metric definitions, and plans that never JIT.
-- ordering_internal.metric_families() defines every metric family of
-- ordering.metrics() and of monitoring/queries.yaml once: its name, type,
-- help text, the rows it is read from (a source of metric_sources()), the
-- block of the exporter's configuration it goes into, and the SQL expression
-- of its value over a row "s" of its source.  ordering.metrics() reads the
-- samples these give (metric_samples()); the exporter's configuration is
-- generated from the same rows (exporter_queries()), and sql/metrics.sql
-- fails when the file in monitoring/ differs from it.
--
-- The sources: the rows metrics are read from, a table, view or subquery
-- (its FROM item), and the columns of its rows that are labels (with
-- descriptions and a note for the exporter's configuration).
CREATE OR REPLACE FUNCTION ordering_internal.metric_sources()
    RETURNS TABLE (ord integer, source text, labels text[], label_help text[], noun text,
                   note text, from_item text)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 5
    SET search_path = pg_catalog, pg_temp
    AS $$
VALUES
    (1, 'consumer', '{consumer}'::text[], '{Consumer name}'::text[], 'consumer', NULL::text,
     'ordering.stats'),
    (2, 'stream', '{stream}', '{Stream name}', 'stream', NULL,
     'ordering.stream_stats'),
    (3, 'outbox', '{}', '{}', 'outbox', NULL,
     'ordering.outbox_lag'),
    (4, 'stream_hot', '{stream,resource}', '{Stream name,Resource id}', 'stream',
     E'The five busiest resources of each stream: resource ids become label\n'
     'values, leave this block out if they must not leave the database.',
     E'(SELECT x.stream, h.resource_id AS resource, h.events\n'
     '          FROM ordering.stream_stats x\n'
     '         CROSS JOIN LATERAL ordering.hot_resources(''stream'', x.stream, 5) h)'),
    (5, 'consumer_hot', '{consumer,resource}', '{Consumer name,Resource id}', 'consumer',
     E'The five busiest resources of each consumer: resource ids become label\n'
     'values, leave this block out if they must not leave the database.',
     E'(SELECT x.consumer, h.resource_id AS resource, h.events\n'
     '          FROM ordering.stats x\n'
     '         CROSS JOIN LATERAL ordering.hot_resources(''consumer'', x.consumer, 5) h)')
$$;
COMMENT ON FUNCTION ordering_internal.metric_sources() IS
    'Internal to the metrics: the queries metric families are read from, with their label columns';
REVOKE EXECUTE ON FUNCTION ordering_internal.metric_sources() FROM PUBLIC;
