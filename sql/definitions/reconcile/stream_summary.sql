-- Reconciliation, producer side: the summary of each bucket.
CREATE OR REPLACE FUNCTION ordering.stream_summary(stream text DEFAULT 'ordering.outbox',
                                                   buckets integer DEFAULT 1024,
                                                   resource_prefix text DEFAULT NULL,
                                                   event_types text[] DEFAULT NULL)
    RETURNS TABLE (bucket integer, resources bigint, seq_sum numeric, fingerprint bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering_internal.reconcile_check_stream(stream, event_types);
    PERFORM ordering_internal.reconcile_check_arguments(buckets, resource_prefix);
    RETURN QUERY
    SELECT ordering_internal.resource_bucket(p.resource_id, buckets) AS b,
           pg_catalog.count(*),
           pg_catalog.sum(p.last_seq),
           pg_catalog.bit_xor(ordering_internal.resource_fingerprint(p.resource_id, p.last_seq))
      FROM ordering_internal.reconcile_producer_resources(stream, resource_prefix, event_types) p
     GROUP BY b
     ORDER BY b;
END
$$;
COMMENT ON FUNCTION ordering.stream_summary(text, integer, text, text[]) IS
    'Reconciliation, producer side: per non-empty bucket, the number of resources of the stream, the sum of their last seqs and the bit_xor of their fingerprints';
REVOKE EXECUTE ON FUNCTION ordering.stream_summary(text, integer, text, text[]) FROM PUBLIC;
