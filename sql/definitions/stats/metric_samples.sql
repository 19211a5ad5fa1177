-- ordering_internal.metric_samples(source text DEFAULT NULL), generated from
-- the metric families (define_metric_samples.sql): an update script that
-- changes them includes this file again.
SELECT ordering_internal.define_metric_samples();
COMMENT ON FUNCTION ordering_internal.metric_samples(text) IS
    'Internal to the metrics: one row per metric family and label set (of one source, or of all), with its value, or its histogram';
REVOKE EXECUTE ON FUNCTION ordering_internal.metric_samples(text) FROM PUBLIC;
