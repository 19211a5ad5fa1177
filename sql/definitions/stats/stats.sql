-- One row per consumer.  A consumer shows up once it has counted committed
-- work, has parked events or has dead letters.  A gap is open for a
-- (consumer, resource) when its lowest parked event is above position + 1
-- and not behind the resource's dead letter (events parked behind a dead
-- letter wait for it, not for a missing event); oldest_gap_age is the age of
-- the lowest parked event of the consumer's oldest open gap, deadline passed
-- or not.  On a Citus coordinator with distributed consumers, the gauges
-- (parked_current, dead_letters_current, oldest_gap_age) count their tables
-- on every node too, and each of them has a row; the counters are this
-- node's, as on every node.  Without distributed consumers (one node,
-- every worker) "dg" is a one-time filter on an empty table: the function
-- is never called.
CREATE OR REPLACE VIEW ordering.stats AS
WITH c AS MATERIALIZED (
    SELECT cs.consumer COLLATE "C" AS consumer, cs.events_consumed,
           cs.events_applied, cs.events_stale, cs.events_duplicate,
           cs.events_parked, cs.events_drained, cs.gaps_escalated,
           cs.reorder_distance_buckets, cs.reorder_distance_sum,
           cs.events_dead_lettered, cs.events_skipped
      FROM ordering_internal.consumer_statistics() cs
), pk AS MATERIALIZED (
    SELECT p.consumer, p.resource_id, pg_catalog.count(*) AS parked,
           pg_catalog.min(p.seq) AS lowest
      FROM ordering.parked p
     GROUP BY p.consumer, p.resource_id
), pc AS (
    SELECT pk.consumer, pg_catalog.sum(pk.parked)::pg_catalog.int8 AS parked_current
      FROM pk
     GROUP BY pk.consumer
), g AS (
    SELECT pk.consumer,
           pg_catalog.max(pg_catalog.now() OPERATOR(pg_catalog.-) lp.parked_at)
             AS oldest_gap_age
      FROM pk
      JOIN ordering.parked lp
        ON lp.consumer OPERATOR(pg_catalog.=) pk.consumer
       AND lp.resource_id OPERATOR(pg_catalog.=) pk.resource_id
       AND lp.seq OPERATOR(pg_catalog.=) pk.lowest
      LEFT JOIN ordering.positions pos
        ON pos.consumer OPERATOR(pg_catalog.=) pk.consumer
       AND pos.resource_id OPERATOR(pg_catalog.=) pk.resource_id
      LEFT JOIN ordering.dead_letter_events d
        ON d.consumer OPERATOR(pg_catalog.=) pk.consumer
       AND d.resource_id OPERATOR(pg_catalog.=) pk.resource_id
     WHERE pk.lowest OPERATOR(pg_catalog.>)
           (COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1)
       AND (d.seq IS NULL OR pk.lowest OPERATOR(pg_catalog.<) d.seq)
     GROUP BY pk.consumer
), dl AS (
    SELECT d.consumer, pg_catalog.count(*) AS dead_letters_current
      FROM ordering.dead_letter_events d
     GROUP BY d.consumer
), dg AS MATERIALIZED (
    SELECT x.consumer COLLATE "C" AS consumer, x.parked_current, x.dead_letters_current,
           x.oldest_gap_age
      FROM ordering_internal.distributed_consumer_gauges() x
     WHERE EXISTS (SELECT FROM ordering_internal.distributed_consumers)
), names AS (
    SELECT c.consumer FROM c
    UNION
    SELECT pc.consumer FROM pc
    UNION
    SELECT dl.consumer FROM dl
    UNION
    SELECT dg.consumer FROM dg
)
SELECT names.consumer,
       COALESCE(c.events_consumed, 0) AS events_consumed,
       COALESCE(c.events_applied, 0) AS events_applied,
       COALESCE(c.events_stale, 0) AS events_stale,
       COALESCE(c.events_duplicate, 0) AS events_duplicate,
       COALESCE(c.events_parked, 0) AS events_parked,
       COALESCE(c.events_drained, 0) AS events_drained,
       COALESCE(c.gaps_escalated, 0) AS gaps_escalated,
       COALESCE(pc.parked_current, 0) OPERATOR(pg_catalog.+) COALESCE(dg.parked_current, 0)
         AS parked_current,
       COALESCE(c.reorder_distance_buckets,
                '{0,0,0,0,0,0,0,0}'::pg_catalog.int8[]) AS reorder_distance_buckets,
       '{1,2,3,5,10,25,100,NULL}'::pg_catalog.int8[] AS reorder_distance_bounds,
       r.stats_reset,
       COALESCE(c.reorder_distance_sum, 0) AS reorder_distance_sum,
       COALESCE(c.events_dead_lettered, 0) AS events_dead_lettered,
       COALESCE(dl.dead_letters_current, 0) OPERATOR(pg_catalog.+) COALESCE(dg.dead_letters_current, 0)
         AS dead_letters_current,
       COALESCE(c.events_skipped, 0) AS events_skipped,
       GREATEST(g.oldest_gap_age, dg.oldest_gap_age) AS oldest_gap_age
  FROM names
  LEFT JOIN c ON c.consumer OPERATOR(pg_catalog.=) names.consumer
  LEFT JOIN pc ON pc.consumer OPERATOR(pg_catalog.=) names.consumer
  LEFT JOIN g ON g.consumer OPERATOR(pg_catalog.=) names.consumer
  LEFT JOIN dl ON dl.consumer OPERATOR(pg_catalog.=) names.consumer
  LEFT JOIN dg ON dg.consumer OPERATOR(pg_catalog.=) names.consumer
 CROSS JOIN (SELECT ordering_internal.stats_reset_time() AS stats_reset) r;
COMMENT ON VIEW ordering.stats IS
    'One row per consumer of the current database: committed-work counters, events parked now, dead letters now, the age of the oldest open gap (on a Citus coordinator, of the distributed consumers too), and the reorder-distance histogram (bucket i counts distances <= bound i and > bound i-1; the last bound, NULL, is the overflow)';
