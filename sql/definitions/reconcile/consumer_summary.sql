-- Reconciliation, consumer side: the summary of each bucket, from
-- ordering.positions, or from a distributed consumer's tables through Citus
-- (on any node).
CREATE OR REPLACE FUNCTION ordering.consumer_summary(consumer text,
                                          buckets integer DEFAULT 1024,
                                          resource_prefix text DEFAULT NULL)
    RETURNS TABLE (bucket integer, resources bigint, seq_sum numeric, fingerprint bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    positions regclass;
BEGIN
    IF consumer IS NULL THEN
        RAISE EXCEPTION 'consumer must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM ordering_internal.reconcile_check_arguments(buckets, resource_prefix);
    positions := ordering_internal.distributed_consumer_table(consumer, '_positions');
    RETURN QUERY EXECUTE pg_catalog.format($q$
    SELECT ordering_internal.resource_bucket(p.resource_id, $2) AS b,
           pg_catalog.count(*),
           pg_catalog.sum(p.position),
           pg_catalog.bit_xor(ordering_internal.resource_fingerprint(p.resource_id, p.position))
      FROM %s p
     WHERE p.consumer OPERATOR(pg_catalog.=) $1
       AND p.position OPERATOR(pg_catalog.>) 0
       AND ($3 IS NULL OR pg_catalog.starts_with(p.resource_id, $3))
     GROUP BY b
     ORDER BY b$q$, COALESCE(positions, 'ordering.positions'::pg_catalog.regclass))
    USING consumer, buckets, resource_prefix;
END
$$;
COMMENT ON FUNCTION ordering.consumer_summary(text, integer, text) IS
    'Reconciliation, consumer side: per non-empty bucket, the number of resources with a position, the sum of the positions and the bit_xor of their fingerprints';
REVOKE EXECUTE ON FUNCTION ordering.consumer_summary(text, integer, text) FROM PUBLIC;
