-- The dead letters with how many events wait behind each: those of the
-- extension's tables, then, on a Citus coordinator with distributed
-- consumers, theirs, read on every node.  Without distributed consumers
-- (one node, every worker) the second part is a one-time filter on an
-- empty table: the function is never called.
CREATE OR REPLACE VIEW ordering.dead_letters AS
SELECT d.consumer, d.resource_id, d.seq, d.payload, d.sqlstate, d.message,
       d.failed_at, d.attempts,
       (SELECT pg_catalog.count(*) FROM ordering.parked p
         WHERE p.consumer OPERATOR(pg_catalog.=) d.consumer
           AND p.resource_id OPERATOR(pg_catalog.=) d.resource_id
           AND p.seq OPERATOR(pg_catalog.>) d.seq) AS parked_behind,
       d.detail
  FROM ordering.dead_letter_events d
UNION ALL
SELECT x.consumer COLLATE "C", x.resource_id COLLATE "C", x.seq, x.payload, x.sqlstate,
       x.message, x.failed_at, x.attempts, x.parked_behind, x.detail
  FROM ordering_internal.distributed_dead_letters() x
 WHERE EXISTS (SELECT FROM ordering_internal.distributed_consumers);
COMMENT ON VIEW ordering.dead_letters IS
    'One row per dead letter: the event that blocks its (consumer, resource), its error, how often it was tried, and how many events wait behind it (on a Citus coordinator, of the distributed consumers too)';
