-- The producer's last seq per resource that a reconciliation compares:
-- the counters of the stream (in ordering.sequences, or, for a stream
-- Citus distributes, in its counter table on every node), or, with event
-- types (ordering.outbox only), the highest seq of an outbox row of those
-- types.  Counters at 0 (a resource whose every number was given back) are
-- no resource.  A counter of a distributed stream left in
-- ordering.sequences (by a table attached before it was distributed,
-- which attach() carried over) is not the stream's.  A plain SQL function
-- with every name qualified and no SET clause, so that the planner inlines
-- it into its callers instead of collecting a million rows first; the
-- tests on $1 and $3 alone are made once per call, so that a stream of
-- one node costs what it did; the callers check the arguments
-- (reconcile_check_stream).
CREATE OR REPLACE FUNCTION ordering_internal.reconcile_producer_resources(stream text,
                                                      resource_prefix text,
                                                      event_types text[])
    RETURNS TABLE (resource_id text, last_seq bigint)
    LANGUAGE sql STABLE
    AS $$
SELECT s.resource_id COLLATE "default", s.last_seq
  FROM ordering.sequences s
 WHERE $3 IS NULL
   AND ordering_internal.distributed_counters($1) IS NULL
   AND s.stream OPERATOR(pg_catalog.=) $1
   AND s.last_seq OPERATOR(pg_catalog.>) 0
   AND ($2 IS NULL OR pg_catalog.starts_with(s.resource_id, $2))
UNION ALL
SELECT d.resource_id, d.last_seq
  FROM ordering_internal.distributed_stream_resources($1, $2) d
 WHERE $3 IS NULL
UNION ALL
SELECT o.resource_id COLLATE "default", pg_catalog.max(o.seq)
  FROM ordering.outbox o
 WHERE $3 IS NOT NULL
   AND o.event_type OPERATOR(pg_catalog.=) ANY ($3)
   AND ($2 IS NULL OR pg_catalog.starts_with(o.resource_id, $2))
 GROUP BY o.resource_id
$$;
COMMENT ON FUNCTION ordering_internal.reconcile_producer_resources(text, text, text[]) IS
    'Internal to the reconciliation functions: the last seq per resource of a stream (counters, of one node or distributed by Citus), or of the outbox rows of some event types, under a resource prefix';
REVOKE EXECUTE ON FUNCTION ordering_internal.reconcile_producer_resources(text, text, text[]) FROM PUBLIC;
