-- The gaps that have passed the deadline.  It reads the parked events by
-- (consumer, resource), the primary key, and looks each up in
-- ordering.positions by primary key: its cost grows with the events waiting
-- (at most ordering.max_parked_per_resource per resource), never with the
-- number of positions (the plan in expected/gaps.out).  A pair whose lowest
-- parked seq directly follows its position has no gap (it drains on the
-- next delivery), and events parked behind a dead letter wait for it, not
-- for a missing event: neither is listed.  A gap below a dead letter is.
-- On a Citus coordinator with distributed consumers, their gaps follow,
-- listed on every node (ordering_internal.distributed_open_gaps()); without
-- distributed consumers that part is a one-time filter on an empty table.
-- The sweep reads the extension's tables with the first part's query
-- (src/gaps/gaps.h), never this view: a distributed consumer's requests
-- are written on the node of its shards.
CREATE OR REPLACE VIEW ordering.open_gaps AS
SELECT agg.consumer,
       agg.resource_id,
       COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1 AS missing_from,
       agg.lowest OPERATOR(pg_catalog.-) 1 AS missing_to,
       agg.parked_count,
       agg.first_parked_at
  FROM (SELECT p.consumer, p.resource_id,
               pg_catalog.min(p.seq) AS lowest,
               pg_catalog.count(*) AS parked_count,
               pg_catalog.min(p.parked_at) AS first_parked_at
          FROM ordering.parked p
         GROUP BY p.consumer, p.resource_id
        HAVING pg_catalog.min(p.parked_at) OPERATOR(pg_catalog.<)
               (pg_catalog.now() OPERATOR(pg_catalog.-) ordering_internal.gap_deadline())) agg
  -- LIMIT 1 (the primary key gives one row at most) keeps this a lookup
  -- per gap: the planner may not turn it into a join that reads every
  -- position
  LEFT JOIN LATERAL (
       SELECT ps.position, ps.blocked_at
         FROM ordering.positions ps
        WHERE ps.consumer OPERATOR(pg_catalog.=) agg.consumer
          AND ps.resource_id OPERATOR(pg_catalog.=) agg.resource_id
        LIMIT 1) pos ON true
 WHERE agg.lowest OPERATOR(pg_catalog.>)
       (COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1)
   AND (pos.blocked_at IS NULL
        OR agg.lowest OPERATOR(pg_catalog.<) pos.blocked_at)
UNION ALL
SELECT x.consumer COLLATE "C", x.resource_id COLLATE "C", x.missing_from, x.missing_to,
       x.parked_count, x.first_parked_at
  FROM ordering_internal.distributed_open_gaps() x
 WHERE EXISTS (SELECT FROM ordering_internal.distributed_consumers);
COMMENT ON VIEW ordering.open_gaps IS
    'Gaps whose oldest parked event is older than ordering.gap_deadline: the range missing before the lowest parked event (on a Citus coordinator, of the distributed consumers too)';
