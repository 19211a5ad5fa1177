-- The producer side of a reconciliation of a stream that Citus distributes
-- (docs/citus.md): its counters live in the stream's counter table,
-- ordering_internal.sequences_<h>, on the nodes of its shards, not in
-- ordering.sequences.  C (src/citus/citus_reconcile.c): the counter table,
-- granted to nobody, is read as its owner for a caller who may read
-- ordering.sequences, which a reconciliation of one node's stream needs.
CREATE OR REPLACE FUNCTION ordering_internal.distributed_stream_resources(stream text,
                                                      resource_prefix text)
    RETURNS TABLE (resource_id text, last_seq bigint)
    LANGUAGE c STABLE
    AS 'MODULE_PATHNAME', 'ordering_distributed_stream_resources';
COMMENT ON FUNCTION ordering_internal.distributed_stream_resources(text, text) IS
    'Internal to the reconciliation functions: the last seq per resource of a stream distributed by Citus (its counter table, on every node), under a resource prefix; no row for a stream that is not distributed; needs SELECT on ordering.sequences';
REVOKE EXECUTE ON FUNCTION ordering_internal.distributed_stream_resources(text, text) FROM PUBLIC;
