-- What a reconcile() call found and did, counted per stream at commit in
-- ordering.stream_stats (src/stats.c); nothing without the library
-- preloaded.
CREATE OR REPLACE FUNCTION ordering_internal.count_reconciled(stream text, behind bigint,
                                          republished bigint, purged bigint)
    RETURNS void
    LANGUAGE c VOLATILE STRICT
    AS 'MODULE_PATHNAME', 'ordering_count_reconciled';
COMMENT ON FUNCTION ordering_internal.count_reconciled(text, bigint, bigint, bigint) IS
    'Counts, at commit, the resources one ordering.reconcile() call found behind in a stream, the events it republished and the missing events it found no longer in the outbox (ordering.stream_stats); nothing without the library preloaded; called by ordering.reconcile()';
REVOKE EXECUTE ON FUNCTION ordering_internal.count_reconciled(text, bigint, bigint, bigint) FROM PUBLIC;
