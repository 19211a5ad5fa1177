-- A table of a distributed consumer, by its suffix, or NULL.
CREATE OR REPLACE FUNCTION ordering_internal.distributed_consumer_table(consumer text, suffix text)
    RETURNS regclass
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT pg_catalog.to_regclass(pg_catalog.format('ordering_internal.%I',
                              ordering_internal.consumer_tag(consumer) OPERATOR(pg_catalog.||) suffix))
$$;
COMMENT ON FUNCTION ordering_internal.distributed_consumer_table(text, text) IS
    'Internal to the consumer side of reconciliation: a table of a distributed consumer (suffix _positions, _parked, _dead_letters or _gap_requests), or NULL if the consumer is not distributed';
-- Any role may call it: a lookup of a relation by name.
GRANT EXECUTE ON FUNCTION ordering_internal.distributed_consumer_table(text, text) TO PUBLIC;
