-- Reconciliation, consumer side: the state of each resource of the listed
-- buckets, handed to reconcile() as JSON.
CREATE OR REPLACE FUNCTION ordering.consumer_state(consumer text, buckets integer,
                                        bucket_list integer[],
                                        resource_prefix text DEFAULT NULL)
    RETURNS TABLE (resource_id text, "position" bigint, parked_from bigint,
                   parked_through bigint, blocked_at bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    positions regclass := ordering_internal.distributed_consumer_table(consumer, '_positions');
    parked regclass := ordering_internal.distributed_consumer_table(consumer, '_parked');
    dead regclass := ordering_internal.distributed_consumer_table(consumer, '_dead_letters');
BEGIN
    IF consumer IS NULL OR bucket_list IS NULL THEN
        RAISE EXCEPTION 'consumer and bucket_list must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM ordering_internal.reconcile_check_arguments(buckets, resource_prefix);
    RETURN QUERY EXECUTE pg_catalog.format($q$
    WITH pos AS (
        SELECT p.resource_id, p.position
          FROM %1$s p
         WHERE p.consumer OPERATOR(pg_catalog.=) $1
           AND p.position OPERATOR(pg_catalog.>) 0
           AND ($4 IS NULL
                OR pg_catalog.starts_with(p.resource_id, $4))
           AND ordering_internal.resource_bucket(p.resource_id, $2)
               OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.unnest($3))
    ), park AS (
        SELECT k.resource_id, pg_catalog.min(k.seq) AS lo, pg_catalog.max(k.seq) AS hi
          FROM %2$s k
         WHERE k.consumer OPERATOR(pg_catalog.=) $1
           AND ($4 IS NULL
                OR pg_catalog.starts_with(k.resource_id, $4))
           AND ordering_internal.resource_bucket(k.resource_id, $2)
               OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.unnest($3))
         GROUP BY k.resource_id
    ), dead AS (
        SELECT d.resource_id, d.seq
          FROM %3$s d
         WHERE d.consumer OPERATOR(pg_catalog.=) $1
           AND ($4 IS NULL
                OR pg_catalog.starts_with(d.resource_id, $4))
           AND ordering_internal.resource_bucket(d.resource_id, $2)
               OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.unnest($3))
    )
    SELECT COALESCE(pos.resource_id, park.resource_id, dead.resource_id),
           COALESCE(pos.position, 0), park.lo, park.hi, dead.seq
      FROM pos
      FULL JOIN park ON park.resource_id OPERATOR(pg_catalog.=) pos.resource_id
      FULL JOIN dead
        ON dead.resource_id OPERATOR(pg_catalog.=) COALESCE(pos.resource_id, park.resource_id)
     ORDER BY 1$q$,
        COALESCE(positions, 'ordering.positions'::pg_catalog.regclass),
        COALESCE(parked, 'ordering.parked'::pg_catalog.regclass),
        COALESCE(dead, 'ordering.dead_letter_events'::pg_catalog.regclass))
    USING consumer, buckets, bucket_list, resource_prefix;
END
$$;
COMMENT ON FUNCTION ordering.consumer_state(text, integer, integer[], text) IS
    'Reconciliation, consumer side: per resource in the listed buckets, the position, the lowest and highest parked seq and the seq of a dead letter';
REVOKE EXECUTE ON FUNCTION ordering.consumer_state(text, integer, integer[], text) FROM PUBLIC;
