-- ordering 1.0 -> 1.1.
--
-- A fresh CREATE EXTENSION runs ordering--1.0.sql and then this script, so
-- an upgraded database and a new one are made by the same statements.
-- Written search-path-proof, like the 1.0 script.

\echo Use "ALTER EXTENSION ordering UPDATE TO '1.1'" to load this file. \quit

-------------------------------------------------------------------------------
-- Dead letters: a poison event blocks only its own (consumer, resource)
-------------------------------------------------------------------------------

-- At most one dead letter per (consumer, resource): the event whose handling
-- failed, kept with the error.  While it is here the resource is blocked at
-- its seq: later events park behind it, a redelivery of it is a duplicate.
CREATE TABLE ordering.dead_letter_events (
    consumer    text COLLATE "C" NOT NULL,
    resource_id text COLLATE "C" NOT NULL,
    seq         bigint NOT NULL CHECK (seq OPERATOR(pg_catalog.>) 0),
    payload     jsonb,
    sqlstate    text,
    message     text,
    detail      text,
    failed_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    attempts    integer NOT NULL DEFAULT 1 CHECK (attempts OPERATOR(pg_catalog.>) 0),
    PRIMARY KEY (consumer, resource_id)
);
COMMENT ON TABLE ordering.dead_letter_events IS
    'The dead letter of each blocked (consumer, resource): the event whose handling failed, with its error; see the view ordering.dead_letters';
SELECT pg_catalog.pg_extension_config_dump('ordering.dead_letter_events', '');

CREATE VIEW ordering.dead_letters AS
SELECT d.consumer, d.resource_id, d.seq, d.payload, d.sqlstate, d.message,
       d.failed_at, d.attempts,
       (SELECT pg_catalog.count(*) FROM ordering.parked p
         WHERE p.consumer OPERATOR(pg_catalog.=) d.consumer
           AND p.resource_id OPERATOR(pg_catalog.=) d.resource_id
           AND p.seq OPERATOR(pg_catalog.>) d.seq) AS parked_behind,
       d.detail
  FROM ordering.dead_letter_events d;
COMMENT ON VIEW ordering.dead_letters IS
    'One row per dead letter: the event that blocks its (consumer, resource), its error, how often it was tried, and how many events wait behind it';

-------------------------------------------------------------------------------
-- Tail loss: reconciliation and ordering.check() (issue 19)
-------------------------------------------------------------------------------

-- Reconciliation compares a producer stream (ordering.sequences) with a
-- consumer (ordering.positions) in another database: both sides summarise
-- their resources per bucket, the buckets whose summaries differ are looked
-- at resource by resource, and the producer republishes what the consumer
-- has not got.  docs/anti-entropy.md describes the steps; the hashes are
-- defined on bytes (src/antientropy.c) so that two databases on different
-- platforms and PostgreSQL versions agree on them.

CREATE FUNCTION ordering.resource_bucket(resource_id text, buckets integer)
    RETURNS integer
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'ordering_resource_bucket';
COMMENT ON FUNCTION ordering.resource_bucket(text, integer) IS
    'The reconciliation bucket (0 .. buckets - 1) of a resource: floor(h * buckets / 2^32), h = the first 4 bytes of SHA-256 of the resource''s UTF-8 bytes, big-endian';

CREATE FUNCTION ordering.resource_fingerprint(resource_id text, seq bigint)
    RETURNS bigint
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'ordering_resource_fingerprint';
COMMENT ON FUNCTION ordering.resource_fingerprint(text, bigint) IS
    'The reconciliation hash of a (resource, seq) pair: the first 8 bytes, big-endian, of SHA-256 of the resource''s UTF-8 bytes followed by int8send(seq)';

-- The arguments both sides of a reconciliation take, checked the same way.
CREATE FUNCTION ordering.reconcile_check_arguments(buckets integer,
                                                   resource_prefix text)
    RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF buckets IS NULL THEN
        RAISE EXCEPTION 'buckets must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF buckets OPERATOR(pg_catalog.<) 1 THEN
        RAISE EXCEPTION 'buckets must be at least 1, got %', buckets
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF resource_prefix OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'resource_prefix must not be empty'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass NULL to take every resource.';
    END IF;
END
$$;
COMMENT ON FUNCTION ordering.reconcile_check_arguments(integer, text) IS
    'Internal to the reconciliation functions: refuses a NULL or non-positive bucket count and an empty resource prefix';

-- The producer side's own arguments: event types filter the outbox only.
CREATE FUNCTION ordering.reconcile_check_stream(stream text, event_types text[])
    RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF stream IS NULL THEN
        RAISE EXCEPTION 'stream must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF event_types IS NULL THEN
        RETURN;
    END IF;
    IF stream OPERATOR(pg_catalog.<>) 'ordering.outbox' THEN
        RAISE EXCEPTION 'event_types can only filter stream "ordering.outbox"'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = pg_catalog.format('Stream %s is not the outbox of the extension, whose rows carry the event type.', stream);
    END IF;
    IF pg_catalog.cardinality(event_types) OPERATOR(pg_catalog.=) 0 THEN
        RAISE EXCEPTION 'event_types must not be empty'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass NULL to take every event type.';
    END IF;
END
$$;
COMMENT ON FUNCTION ordering.reconcile_check_stream(text, text[]) IS
    'Internal to the reconciliation functions: refuses a NULL stream, and event types for a stream other than ordering.outbox or an empty list of them';

-- The producer's last seq per resource that a reconciliation compares:
-- the counters of the stream, or, with event types (ordering.outbox only),
-- the highest seq of an outbox row of those types.  Counters at 0 (a
-- resource whose every number was given back) are no resource.  A plain
-- SQL function with every name qualified and no SET clause, so that the
-- planner inlines it into its callers instead of collecting a million rows
-- first; the callers check the arguments (reconcile_check_stream).
CREATE FUNCTION ordering.reconcile_producer_resources(stream text,
                                                      resource_prefix text,
                                                      event_types text[])
    RETURNS TABLE (resource_id text, last_seq bigint)
    LANGUAGE sql STABLE
    AS $$
SELECT s.resource_id COLLATE "default", s.last_seq
  FROM ordering.sequences s
 WHERE $3 IS NULL
   AND s.stream OPERATOR(pg_catalog.=) $1
   AND s.last_seq OPERATOR(pg_catalog.>) 0
   AND ($2 IS NULL OR pg_catalog.starts_with(s.resource_id, $2))
UNION ALL
SELECT o.resource_id COLLATE "default", pg_catalog.max(o.seq)
  FROM ordering.outbox o
 WHERE $3 IS NOT NULL
   AND o.event_type OPERATOR(pg_catalog.=) ANY ($3)
   AND ($2 IS NULL OR pg_catalog.starts_with(o.resource_id, $2))
 GROUP BY o.resource_id
$$;
COMMENT ON FUNCTION ordering.reconcile_producer_resources(text, text, text[]) IS
    'Internal to the reconciliation functions: the last seq per resource of a stream (counters), or of the outbox rows of some event types, under a resource prefix';

-- Producer side, step 1: the summary of each bucket of a stream.
CREATE FUNCTION ordering.stream_summary(stream text DEFAULT 'ordering.outbox',
                                        buckets integer DEFAULT 1024,
                                        resource_prefix text DEFAULT NULL,
                                        event_types text[] DEFAULT NULL)
    RETURNS TABLE (bucket integer, resources bigint, seq_sum numeric, fingerprint bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering.reconcile_check_stream(stream, event_types);
    PERFORM ordering.reconcile_check_arguments(buckets, resource_prefix);
    RETURN QUERY
    SELECT ordering.resource_bucket(p.resource_id, buckets) AS b,
           pg_catalog.count(*),
           pg_catalog.sum(p.last_seq),
           pg_catalog.bit_xor(ordering.resource_fingerprint(p.resource_id, p.last_seq))
      FROM ordering.reconcile_producer_resources(stream, resource_prefix, event_types) p
     GROUP BY b
     ORDER BY b;
END
$$;
COMMENT ON FUNCTION ordering.stream_summary(text, integer, text, text[]) IS
    'Reconciliation, producer side: per non-empty bucket, the number of resources of the stream, the sum of their last seqs and the bit_xor of their fingerprints';

-- Consumer side, step 1: the same summary of a consumer's positions.
CREATE FUNCTION ordering.consumer_summary(consumer text,
                                          buckets integer DEFAULT 1024,
                                          resource_prefix text DEFAULT NULL)
    RETURNS TABLE (bucket integer, resources bigint, seq_sum numeric, fingerprint bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF consumer IS NULL THEN
        RAISE EXCEPTION 'consumer must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM ordering.reconcile_check_arguments(buckets, resource_prefix);
    RETURN QUERY
    SELECT ordering.resource_bucket(p.resource_id, buckets) AS b,
           pg_catalog.count(*),
           pg_catalog.sum(p.position),
           pg_catalog.bit_xor(ordering.resource_fingerprint(p.resource_id, p.position))
      FROM ordering.positions p
     WHERE p.consumer OPERATOR(pg_catalog.=) consumer_summary.consumer
       AND p.position OPERATOR(pg_catalog.>) 0
       AND (resource_prefix IS NULL
            OR pg_catalog.starts_with(p.resource_id, resource_prefix))
     GROUP BY b
     ORDER BY b;
END
$$;
COMMENT ON FUNCTION ordering.consumer_summary(text, integer, text) IS
    'Reconciliation, consumer side: per non-empty bucket, the number of resources with a position, the sum of the positions and the bit_xor of their fingerprints';

-- Consumer side, step 2: what the consumer has of each resource in the
-- buckets that differ.  Besides the position: the lowest and highest
-- parked seq (the producer does not send the parked run again) and the
-- seq of a dead letter (a blocked resource is not sent anything).
CREATE FUNCTION ordering.consumer_state(consumer text, buckets integer,
                                        bucket_list integer[],
                                        resource_prefix text DEFAULT NULL)
    RETURNS TABLE (resource_id text, "position" bigint, parked_from bigint,
                   parked_through bigint, blocked_at bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF consumer IS NULL OR bucket_list IS NULL THEN
        RAISE EXCEPTION 'consumer and bucket_list must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM ordering.reconcile_check_arguments(buckets, resource_prefix);
    RETURN QUERY
    WITH pos AS (
        SELECT p.resource_id, p.position
          FROM ordering.positions p
         WHERE p.consumer OPERATOR(pg_catalog.=) consumer_state.consumer
           AND p.position OPERATOR(pg_catalog.>) 0
           AND (resource_prefix IS NULL
                OR pg_catalog.starts_with(p.resource_id, resource_prefix))
           AND ordering.resource_bucket(p.resource_id, buckets)
               OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.unnest(bucket_list))
    ), park AS (
        SELECT k.resource_id, pg_catalog.min(k.seq) AS lo, pg_catalog.max(k.seq) AS hi
          FROM ordering.parked k
         WHERE k.consumer OPERATOR(pg_catalog.=) consumer_state.consumer
           AND (resource_prefix IS NULL
                OR pg_catalog.starts_with(k.resource_id, resource_prefix))
           AND ordering.resource_bucket(k.resource_id, buckets)
               OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.unnest(bucket_list))
         GROUP BY k.resource_id
    ), dead AS (
        SELECT d.resource_id, d.seq
          FROM ordering.dead_letter_events d
         WHERE d.consumer OPERATOR(pg_catalog.=) consumer_state.consumer
           AND (resource_prefix IS NULL
                OR pg_catalog.starts_with(d.resource_id, resource_prefix))
           AND ordering.resource_bucket(d.resource_id, buckets)
               OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.unnest(bucket_list))
    )
    SELECT COALESCE(pos.resource_id, park.resource_id, dead.resource_id),
           COALESCE(pos.position, 0), park.lo, park.hi, dead.seq
      FROM pos
      FULL JOIN park ON park.resource_id OPERATOR(pg_catalog.=) pos.resource_id
      FULL JOIN dead
        ON dead.resource_id OPERATOR(pg_catalog.=) COALESCE(pos.resource_id, park.resource_id)
     ORDER BY 1;
END
$$;
COMMENT ON FUNCTION ordering.consumer_state(text, integer, integer[], text) IS
    'Reconciliation, consumer side: per resource in the listed buckets, the position, the lowest and highest parked seq and the seq of a dead letter';

-- Producer side, step 2: compare the consumer's state with the stream in
-- the listed buckets and republish what the consumer has not got: the
-- outbox rows above its position (and before its lowest parked event), and
-- above its highest parked event.  Rows still unpublished, or published
-- less than "grace" ago, are in flight and left alone; rows locked by a
-- relay too.  Rows no longer in the outbox are counted as purged, never
-- republished.  Streams other than ordering.outbox are only compared.
CREATE FUNCTION ordering.reconcile(consumer_state jsonb, buckets integer,
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
BEGIN
    IF consumer_state IS NULL OR bucket_list IS NULL OR grace IS NULL OR dry_run IS NULL THEN
        RAISE EXCEPTION 'consumer_state, bucket_list, grace and dry_run must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM ordering.reconcile_check_stream(stream, event_types);
    PERFORM ordering.reconcile_check_arguments(buckets, resource_prefix);
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
        OR NOT ordering.resource_bucket(c.resource_id, buckets) OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.unnest(bucket_list))
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

    RETURN QUERY
    WITH c AS (
        SELECT x.resource_id, x.position, x.parked_from,
               x.parked_through, x.blocked_at
          FROM pg_catalog.jsonb_to_recordset(consumer_state)
               AS x(resource_id text, "position" bigint, parked_from bigint,
                    parked_through bigint, blocked_at bigint)
    ), p AS (
        SELECT r.resource_id, r.last_seq
          FROM ordering.reconcile_producer_resources(stream, resource_prefix, event_types) r
         WHERE ordering.resource_bucket(r.resource_id, buckets) OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.unnest(bucket_list))
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
     ORDER BY j.resource_id;
END
$$;
COMMENT ON FUNCTION ordering.reconcile(jsonb, integer, integer[], text, text, text[], interval, boolean) IS
    'Reconciliation, producer side: compares the consumer''s state (rows of ordering.consumer_state() as JSON) with the stream in the listed buckets and republishes the outbox rows the consumer has not got, leaving rows in flight alone; one row per resource looked at, with what was done';

-- The tables a sequencing trigger numbers: every trigger named
-- ordering_sequence that runs ordering.sequence_trigger(), on a table that
-- holds rows (a partitioned table's trigger is cloned onto each partition,
-- whose rows it numbers).  The stream is the third trigger argument, or the
-- table's qualified name when there is none, as the trigger itself does.
-- ordering.check() finds the attached tables here and nowhere else.
CREATE VIEW ordering.attached_tables AS
SELECT t.tgrelid::pg_catalog.regclass AS table_name,
       a.args[1]::pg_catalog.name AS resource_column,
       a.args[2]::pg_catalog.name AS sequence_column,
       COALESCE(a.args[3], n.nspname OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) c.relname)
           AS stream,
       t.tgenabled OPERATOR(pg_catalog.<>) 'D' AS enabled
  FROM pg_catalog.pg_trigger t
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.tgrelid
  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
 CROSS JOIN LATERAL (
       -- tgargs holds each argument followed by a zero byte
       SELECT pg_catalog.array_agg(pg_catalog.convert_from(
                  pg_catalog.substr(t.tgargs, z.prev OPERATOR(pg_catalog.+) 2,
                                    z.i OPERATOR(pg_catalog.-) z.prev OPERATOR(pg_catalog.-) 1),
                  pg_catalog.getdatabaseencoding()) ORDER BY z.i) AS args
         FROM (SELECT g.i, pg_catalog.lag(g.i, 1, -1) OVER (ORDER BY g.i) AS prev
                 FROM pg_catalog.generate_series(0, pg_catalog.length(t.tgargs) OPERATOR(pg_catalog.-) 1) AS g(i)
                WHERE pg_catalog.get_byte(t.tgargs, g.i) OPERATOR(pg_catalog.=) 0) z) a
 WHERE t.tgname OPERATOR(pg_catalog.=) 'ordering_sequence'
   AND t.tgfoid OPERATOR(pg_catalog.=) 'ordering.sequence_trigger()'::pg_catalog.regprocedure
   AND c.relkind OPERATOR(pg_catalog.=) 'r';
COMMENT ON VIEW ordering.attached_tables IS
    'The tables whose rows ordering.sequence_trigger() numbers: resource and sequence column, stream, and whether the trigger is enabled';

-- ordering.check(): one row per violated invariant, none when consistent.
-- Every check is one statement, so it judges one snapshot and never
-- reports a state that was consistent when it committed.  Each reads one
-- table and looks every row up in another by primary key (a LATERAL
-- subquery with LIMIT 1, which the planner cannot turn into a hash join
-- over the whole table): the attached tables (one aggregate each) against
-- ordering.sequences; the parked events, gap requests and dead letters
-- against ordering.positions and ordering.parked.  So the cost follows the
-- attached tables, parked events, gap requests and dead letters, never the
-- number of positions or counters.  sample_percent
-- reads only that share of the blocks of each table it starts from
-- (TABLESAMPLE SYSTEM); max_per_kind stops each kind after that many rows.
CREATE FUNCTION ordering.check(sample_percent double precision DEFAULT 100,
                               max_per_kind bigint DEFAULT NULL)
    RETURNS TABLE (kind text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    sample text := '';
    att record;
    gauge record;
BEGIN
    IF sample_percent IS NULL THEN
        RAISE EXCEPTION 'sample_percent must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF sample_percent OPERATOR(pg_catalog.<) 0 OR sample_percent OPERATOR(pg_catalog.>) 100
       OR sample_percent OPERATOR(pg_catalog.<>) sample_percent THEN
        RAISE EXCEPTION 'sample_percent must be between 0 and 100, got %', sample_percent
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_per_kind OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'max_per_kind must not be negative, got %', max_per_kind
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF sample_percent OPERATOR(pg_catalog.<) 100 THEN
        sample := pg_catalog.format(' TABLESAMPLE SYSTEM (%s)', sample_percent);
    END IF;

    -- Producer: every counter at or above the highest seq of its attached
    -- tables (a row numbered past its counter would get its number again).
    FOR att IN SELECT a.* FROM ordering.attached_tables a ORDER BY a.table_name::pg_catalog.text LOOP
        IF NOT att.enabled THEN
            kind := 'sequence_trigger_disabled';
            detail := pg_catalog.format('table %s (stream %s): its sequencing trigger is disabled, rows inserted now get no number',
                                        att.table_name, pg_catalog.quote_literal(att.stream));
            RETURN NEXT;
        END IF;
        IF NOT pg_catalog.has_table_privilege(att.table_name, 'SELECT') THEN
            RAISE WARNING 'table % was not checked: permission denied', att.table_name;
            CONTINUE;
        END IF;
        -- the resource as the trigger keys it: its type's output function
        RETURN QUERY EXECUTE pg_catalog.format($q$
            SELECT 'counter_behind_table'::pg_catalog.text,
                   pg_catalog.format('table %%s (stream %%s), resource %%s: highest seq %%s, counter %%s',
                                     $1, pg_catalog.quote_literal($2), pg_catalog.quote_literal(x.res),
                                     x.hi, COALESCE(s.last_seq::pg_catalog.text, 'missing'))
              FROM (SELECT pg_catalog.format('%%s', t.%1$I) AS res, pg_catalog.max(t.%2$I) AS hi
                      FROM %3$s t%4$s
                     WHERE t.%1$I IS NOT NULL
                     GROUP BY 1) x
              LEFT JOIN LATERAL (SELECT q.last_seq FROM ordering.sequences q
                                  WHERE q.stream OPERATOR(pg_catalog.=) $2
                                    AND q.resource_id OPERATOR(pg_catalog.=) x.res
                                  LIMIT 1) s ON true
             WHERE s.last_seq IS NULL OR s.last_seq OPERATOR(pg_catalog.<) x.hi
             ORDER BY x.res
             LIMIT $3$q$,
            att.resource_column, att.sequence_column, att.table_name, sample)
            USING att.table_name::pg_catalog.text, att.stream, max_per_kind;
    END LOOP;

    -- Consumer: a parked event waits for a predecessor, so it lies beyond
    -- position + 1 (at position + 1 it would have been drained).
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'parked_not_ahead'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: parked seq %%s, position %%s',
                                 pg_catalog.quote_literal(p.consumer), pg_catalog.quote_literal(p.resource_id),
                                 p.seq, COALESCE(pos.position, 0))
          FROM ordering.parked p%s
          LEFT JOIN LATERAL (SELECT o.position FROM ordering.positions o
                              WHERE o.consumer OPERATOR(pg_catalog.=) p.consumer
                                AND o.resource_id OPERATOR(pg_catalog.=) p.resource_id
                              LIMIT 1) pos ON true
         WHERE p.seq OPERATOR(pg_catalog.<=) COALESCE(pos.position, 0)
         ORDER BY p.consumer, p.resource_id, p.seq
         LIMIT $1$q$, sample)
        USING max_per_kind;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'parked_not_drained'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: parked seq %%s is next after position %%s',
                                 pg_catalog.quote_literal(p.consumer), pg_catalog.quote_literal(p.resource_id),
                                 p.seq, COALESCE(pos.position, 0))
          FROM ordering.parked p%s
          LEFT JOIN LATERAL (SELECT o.position FROM ordering.positions o
                              WHERE o.consumer OPERATOR(pg_catalog.=) p.consumer
                                AND o.resource_id OPERATOR(pg_catalog.=) p.resource_id
                              LIMIT 1) pos ON true
         WHERE p.seq OPERATOR(pg_catalog.=) (COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1)
         ORDER BY p.consumer, p.resource_id, p.seq
         LIMIT $1$q$, sample)
        USING max_per_kind;

    -- Gaps: a request names a non-empty range not yet applied, in front of
    -- events that are parked (the consumer functions delete it as soon as
    -- the position reaches missing_to or nothing is parked any more).
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'gap_request_without_parked'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: gap request for %%s..%%s, nothing parked',
                                 pg_catalog.quote_literal(g.consumer), pg_catalog.quote_literal(g.resource_id),
                                 g.missing_from, g.missing_to)
          FROM ordering.gap_requests g%s
          LEFT JOIN LATERAL (SELECT true AS found FROM ordering.parked p
                              WHERE p.consumer OPERATOR(pg_catalog.=) g.consumer
                                AND p.resource_id OPERATOR(pg_catalog.=) g.resource_id
                              LIMIT 1) k ON true
         WHERE k.found IS NULL
         ORDER BY g.consumer, g.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'gap_request_filled'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: gap request for %%s..%%s, position %%s',
                                 pg_catalog.quote_literal(g.consumer), pg_catalog.quote_literal(g.resource_id),
                                 g.missing_from, g.missing_to, COALESCE(pos.position, 0))
          FROM ordering.gap_requests g%s
          LEFT JOIN LATERAL (SELECT o.position FROM ordering.positions o
                              WHERE o.consumer OPERATOR(pg_catalog.=) g.consumer
                                AND o.resource_id OPERATOR(pg_catalog.=) g.resource_id
                              LIMIT 1) pos ON true
         WHERE g.missing_to OPERATOR(pg_catalog.<=) COALESCE(pos.position, 0)
         ORDER BY g.consumer, g.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'gap_request_empty'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: gap request for %%s..%%s',
                                 pg_catalog.quote_literal(g.consumer), pg_catalog.quote_literal(g.resource_id),
                                 g.missing_from, g.missing_to)
          FROM ordering.gap_requests g%s
         WHERE g.missing_from OPERATOR(pg_catalog.>) g.missing_to
         ORDER BY g.consumer, g.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;

    -- Dead letters: the event a resource is blocked at was never applied,
    -- and it is held as the dead letter, not parked.
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'dead_letter_not_ahead'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: dead letter seq %%s, position %%s',
                                 pg_catalog.quote_literal(d.consumer), pg_catalog.quote_literal(d.resource_id),
                                 d.seq, COALESCE(pos.position, 0))
          FROM ordering.dead_letter_events d%s
          LEFT JOIN LATERAL (SELECT o.position FROM ordering.positions o
                              WHERE o.consumer OPERATOR(pg_catalog.=) d.consumer
                                AND o.resource_id OPERATOR(pg_catalog.=) d.resource_id
                              LIMIT 1) pos ON true
         WHERE d.seq OPERATOR(pg_catalog.<=) COALESCE(pos.position, 0)
         ORDER BY d.consumer, d.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'dead_letter_parked'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: dead letter seq %%s is also parked',
                                 pg_catalog.quote_literal(d.consumer), pg_catalog.quote_literal(d.resource_id),
                                 d.seq)
          FROM ordering.dead_letter_events d%s
          JOIN LATERAL (SELECT true AS found FROM ordering.parked p
                         WHERE p.consumer OPERATOR(pg_catalog.=) d.consumer
                           AND p.resource_id OPERATOR(pg_catalog.=) d.resource_id
                           AND p.seq OPERATOR(pg_catalog.=) d.seq
                         LIMIT 1) k ON true
         ORDER BY d.consumer, d.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;

    -- Statistics: each gauge of ordering.stats that counts rows of a table
    -- equals that count, per consumer.  Without the library preloaded there
    -- are no statistics to compare.
    FOR gauge IN
        SELECT v.col, v.tbl
          FROM (VALUES ('parked_current', 'ordering.parked'),
                       ('dead_letters_current', 'ordering.dead_letter_events')) AS v(col, tbl)
         WHERE EXISTS (SELECT FROM pg_catalog.pg_attribute a
                        WHERE a.attrelid OPERATOR(pg_catalog.=) 'ordering.stats'::pg_catalog.regclass
                          AND a.attname OPERATOR(pg_catalog.=) v.col
                          AND NOT a.attisdropped)
           AND pg_catalog.to_regclass(v.tbl) IS NOT NULL
    LOOP
        BEGIN
            RETURN QUERY EXECUTE pg_catalog.format($q$
                SELECT 'stats_gauge_mismatch'::pg_catalog.text,
                       pg_catalog.format('consumer %%s: ordering.stats.%1$s is %%s, %2$s holds %%s rows',
                                         pg_catalog.quote_literal(COALESCE(st.consumer, t.consumer)),
                                         COALESCE(st.gauge, 0), COALESCE(t.n, 0))
                  FROM (SELECT s.consumer, s.%1$I AS gauge FROM ordering.stats s) st
                  FULL JOIN (SELECT r.consumer, pg_catalog.count(*) AS n
                               FROM %2$s r GROUP BY r.consumer) t
                    ON t.consumer OPERATOR(pg_catalog.=) st.consumer
                 WHERE COALESCE(st.gauge, 0) OPERATOR(pg_catalog.<>) COALESCE(t.n, 0)
                 ORDER BY 2
                 LIMIT $1$q$, gauge.col, gauge.tbl)
                USING max_per_kind;
        EXCEPTION WHEN object_not_in_prerequisite_state THEN
            EXIT;
        END;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering.check(double precision, bigint) IS
    'Verifies the invariants the extension relies on (counters against attached tables, parked events and gap requests against positions, dead letters, statistics gauges against their tables); one row per violation, none when consistent';

-- As every function of the extension: nothing for PUBLIC (see "Privileges"
-- in the 1.0 script).  The producer side reads counters and republishes,
-- the consumer side reads positions, parked events and dead letters, and
-- check() reads all of it.
REVOKE EXECUTE ON FUNCTION ordering.resource_bucket(text, integer),
    ordering.resource_fingerprint(text, bigint),
    ordering.reconcile_check_arguments(integer, text),
    ordering.reconcile_check_stream(text, text[]),
    ordering.reconcile_producer_resources(text, text, text[]),
    ordering.stream_summary(text, integer, text, text[]),
    ordering.consumer_summary(text, integer, text),
    ordering.consumer_state(text, integer, integer[], text),
    ordering.reconcile(jsonb, integer, integer[], text, text, text[], interval, boolean),
    ordering.check(double precision, bigint)
    FROM PUBLIC;
