-- Forgets every counter of the statistics views, cluster-wide.
CREATE OR REPLACE FUNCTION ordering.stats_reset() RETURNS void
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_stats_reset';
COMMENT ON FUNCTION ordering.stats_reset() IS
    'Forgets all counters of ordering.stats and ordering.stream_stats, of every database of the cluster';
-- Resetting erases the history every dashboard and alert of every database
-- relies on (rates jump, counters restart): an operator's decision, so not
-- granted to PUBLIC, as pg_stat_statements_reset().
REVOKE EXECUTE ON FUNCTION ordering.stats_reset() FROM PUBLIC;
