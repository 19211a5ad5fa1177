-- Reconciliation, producer side: the drill-down.  Compares the consumer's
-- state with the stream, resource by resource, and republishes from the
-- outbox what the consumer has not got, leaving rows a relay holds alone.
CREATE OR REPLACE FUNCTION ordering.reconcile(consumer_state jsonb, buckets integer,
                                              bucket_list integer[],
                                              stream text DEFAULT 'ordering.outbox',
                                              resource_prefix text DEFAULT NULL,
                                              event_types text[] DEFAULT NULL,
                                              grace interval DEFAULT '5min',
                                              dry_run boolean DEFAULT false)
    RETURNS TABLE (resource_id text, "position" bigint, last_seq bigint, status text,
                   republished bigint, in_flight bigint, purged bigint)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    stray text;
    outbox boolean;
    n_behind bigint := 0;
    n_republished bigint := 0;
    n_purged bigint := 0;
BEGIN
    IF consumer_state IS NULL OR bucket_list IS NULL OR grace IS NULL OR dry_run IS NULL THEN
        RAISE EXCEPTION 'consumer_state, bucket_list, grace and dry_run must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM ordering_internal.reconcile_check_stream(stream, event_types);
    PERFORM ordering_internal.reconcile_check_arguments(buckets, resource_prefix);
    IF pg_catalog.jsonb_typeof(consumer_state) OPERATOR(pg_catalog.<>) 'array' THEN
        RAISE EXCEPTION 'consumer_state must be a JSON array of the rows of ordering.consumer_state()'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF grace OPERATOR(pg_catalog.<) '0'::pg_catalog.interval THEN
        RAISE EXCEPTION 'grace must not be negative, got %', grace
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Both sides must have looked at the same resources.
    SELECT c.resource_id INTO stray
      FROM pg_catalog.jsonb_to_recordset(consumer_state) AS c(resource_id text)
     WHERE c.resource_id IS NULL
        OR NOT ordering_internal.resource_bucket(c.resource_id, buckets) OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.unnest(bucket_list))
        OR NOT (resource_prefix IS NULL OR pg_catalog.starts_with(c.resource_id, resource_prefix))
     LIMIT 1;
    IF FOUND AND stray IS NULL THEN
        RAISE EXCEPTION 'every row of consumer_state needs a resource_id'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF FOUND THEN
        RAISE EXCEPTION 'consumer_state lists resource % outside the buckets or the prefix given',
            pg_catalog.quote_literal(stray)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass the same buckets, bucket list and resource prefix to ordering.consumer_state() and ordering.reconcile().';
    END IF;
    outbox := stream OPERATOR(pg_catalog.=) 'ordering.outbox';

    FOR resource_id, "position", last_seq, status, republished, in_flight, purged IN
    WITH c AS (
        SELECT x.resource_id, x.position, x.parked_from,
               x.parked_through, x.blocked_at
          FROM pg_catalog.jsonb_to_recordset(consumer_state)
               AS x(resource_id text, "position" bigint, parked_from bigint,
                    parked_through bigint, blocked_at bigint)
    ), p AS (
        SELECT r.resource_id, r.last_seq
          FROM ordering_internal.reconcile_producer_resources(stream, resource_prefix, event_types) r
         WHERE ordering_internal.resource_bucket(r.resource_id, buckets) OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.unnest(bucket_list))
    ), j AS (
        SELECT COALESCE(c.resource_id, p.resource_id) AS resource_id,
               COALESCE(c.position, 0) AS pos,
               COALESCE(p.last_seq, 0) AS last_seq,
               c.parked_from, c.parked_through,
               CASE
                   WHEN p.resource_id IS NULL THEN 'unknown'
                   WHEN COALESCE(c.position, 0) OPERATOR(pg_catalog.=) p.last_seq THEN 'in_sync'
                   WHEN COALESCE(c.position, 0) OPERATOR(pg_catalog.>) p.last_seq THEN 'ahead'
                   WHEN c.blocked_at IS NOT NULL THEN 'blocked'
                   ELSE 'behind'
               END AS status
          FROM c FULL JOIN p ON p.resource_id OPERATOR(pg_catalog.=) c.resource_id
    ), ranges AS (
        -- (position, lowest parked - 1] and (highest parked, last_seq]
        SELECT j.resource_id, g.lo, g.hi
          FROM j CROSS JOIN LATERAL (VALUES
                   (j.pos, LEAST(COALESCE(j.parked_from OPERATOR(pg_catalog.-) 1, j.last_seq), j.last_seq)),
                   (GREATEST(j.parked_through, j.pos), CASE WHEN j.parked_through IS NULL THEN 0 ELSE j.last_seq END)
               ) AS g(lo, hi)
         WHERE j.status OPERATOR(pg_catalog.=) 'behind' AND g.hi OPERATOR(pg_catalog.>) g.lo AND outbox
    ), present AS (
        -- the outbox rows in the ranges (any event type), and whether each
        -- is one to send: of the types asked for, published before the grace
        SELECT o.id, r.resource_id,
               (event_types IS NULL OR o.event_type OPERATOR(pg_catalog.=) ANY (event_types)) AS wanted,
               (o.published_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) grace)) AS sendable
          FROM ranges r
          JOIN ordering.outbox o
            ON o.resource_id OPERATOR(pg_catalog.=) r.resource_id
           AND o.seq OPERATOR(pg_catalog.>) r.lo
           AND o.seq OPERATOR(pg_catalog.<=) r.hi
    ), locked AS (
        -- rows a relay holds are in flight: skipped, not waited for
        SELECT o.id
          FROM ordering.outbox o
         WHERE NOT dry_run
           AND o.id OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT present.id FROM present
                                                        WHERE present.wanted AND present.sendable))
           AND o.published_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) grace)
           FOR UPDATE SKIP LOCKED
    ), sent AS (
        UPDATE ordering.outbox o SET published_at = NULL
          FROM locked
         WHERE o.id OPERATOR(pg_catalog.=) locked.id
        RETURNING o.id
    ), counts AS (
        SELECT present.resource_id,
               pg_catalog.count(*) AS rows_present,
               pg_catalog.count(*) FILTER (WHERE present.wanted) AS rows_wanted,
               pg_catalog.count(*) FILTER (WHERE present.wanted AND
                   CASE WHEN dry_run THEN present.sendable ELSE sent.id IS NOT NULL END)
                   AS rows_sent
          FROM present
          LEFT JOIN sent ON sent.id OPERATOR(pg_catalog.=) present.id
         GROUP BY present.resource_id
    ), span AS (
        SELECT ranges.resource_id,
               pg_catalog.sum(ranges.hi OPERATOR(pg_catalog.-) ranges.lo)::bigint AS seqs
          FROM ranges
         GROUP BY ranges.resource_id
    )
    SELECT j.resource_id::text, j.pos, j.last_seq, j.status,
           CASE WHEN j.status OPERATOR(pg_catalog.=) 'behind' AND outbox
                THEN COALESCE(counts.rows_sent, 0) END,
           CASE WHEN j.status OPERATOR(pg_catalog.=) 'behind' AND outbox
                THEN COALESCE(counts.rows_wanted, 0) OPERATOR(pg_catalog.-) COALESCE(counts.rows_sent, 0) END,
           CASE WHEN j.status OPERATOR(pg_catalog.=) 'behind' AND outbox
                THEN COALESCE(span.seqs, 0) OPERATOR(pg_catalog.-) COALESCE(counts.rows_present, 0) END
      FROM j
      LEFT JOIN counts ON counts.resource_id OPERATOR(pg_catalog.=) j.resource_id
      LEFT JOIN span ON span.resource_id OPERATOR(pg_catalog.=) j.resource_id
     ORDER BY j.resource_id
    LOOP
        IF status OPERATOR(pg_catalog.=) 'behind' THEN
            n_behind := n_behind OPERATOR(pg_catalog.+) 1;
            n_republished := n_republished OPERATOR(pg_catalog.+) COALESCE(republished, 0);
            n_purged := n_purged OPERATOR(pg_catalog.+) COALESCE(purged, 0);
        END IF;
        RETURN NEXT;
    END LOOP;
    PERFORM ordering_internal.count_reconciled(stream, n_behind,
                                      CASE WHEN dry_run THEN 0 ELSE n_republished END,
                                      n_purged);
END
$$;
COMMENT ON FUNCTION ordering.reconcile(jsonb, integer, integer[], text, text, text[], interval, boolean) IS
    'Reconciliation, producer side: compares the consumer''s state (rows of ordering.consumer_state() as JSON) with the stream in the listed buckets and republishes the outbox rows the consumer has not got, leaving rows in flight alone; one row per resource looked at, with what was done';
REVOKE EXECUTE ON FUNCTION ordering.reconcile(jsonb, integer, integer[], text, text, text[], interval, boolean) FROM PUBLIC;
