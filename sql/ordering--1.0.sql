-- ordering 1.0: per-resource message ordering for producers and consumers.
--
-- Written search-path-proof: every name is schema-qualified, every operator
-- spelled OPERATOR(pg_catalog.x), every function body pins its search_path.

\echo Use "CREATE EXTENSION ordering" to load this file. \quit

-------------------------------------------------------------------------------
-- Producer side: counters, the sequencing trigger, the ready outbox
-------------------------------------------------------------------------------

-- Key columns use the "C" collation: byte-wise equality is what identifies a
-- resource, and the C code scans these indexes with that collation.
CREATE TABLE ordering.sequences (
    stream      text COLLATE "C" NOT NULL,
    resource_id text COLLATE "C" NOT NULL,
    last_seq    bigint NOT NULL CHECK (last_seq OPERATOR(pg_catalog.>=) 0),
    PRIMARY KEY (stream, resource_id)
) WITH (fillfactor = 50);
-- fillfactor leaves room on each page so counter updates stay HOT.
COMMENT ON TABLE ordering.sequences IS
    'Producer counters: the last sequence number allocated per (stream, resource). Never reset by deleting outbox rows.';
SELECT pg_catalog.pg_extension_config_dump('ordering.sequences', '');

CREATE FUNCTION ordering.sequence_trigger() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'ordering_sequence_trigger';
COMMENT ON FUNCTION ordering.sequence_trigger() IS
    'BEFORE INSERT FOR EACH ROW trigger that assigns per-resource gapless sequence numbers; arguments (resource_column, sequence_column, stream); install it with ordering.attach';

CREATE FUNCTION ordering.next_sequence(stream text, resource_id text) RETURNS bigint
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_next_sequence';
COMMENT ON FUNCTION ordering.next_sequence(text, text) IS
    'Allocates the next sequence number of (stream, resource) in the caller''s transaction';

CREATE FUNCTION ordering.last_sequence(stream text, resource_id text) RETURNS bigint
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    -- the same errors as next_sequence()
    IF $1 IS NULL THEN
        RAISE EXCEPTION 'stream must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF $2 IS NULL THEN
        RAISE EXCEPTION 'resource_id must not be null' USING ERRCODE = 'not_null_violation';
    END IF;
    RETURN COALESCE((SELECT s.last_seq FROM ordering.sequences s
                      WHERE s.stream OPERATOR(pg_catalog.=) $1
                        AND s.resource_id OPERATOR(pg_catalog.=) $2), 0);
END
$$;
COMMENT ON FUNCTION ordering.last_sequence(text, text) IS
    'Highest sequence number of (stream, resource) allocated and visible to the caller; 0 if none';

-- Restore support: pg_restore may load counters after the outbox rows that
-- raised them (see producer.c); merge instead of failing on the key.  Our C
-- code writes below the executor, so this fires only for INSERT and COPY.
CREATE FUNCTION ordering.sequences_merge() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    UPDATE ordering.sequences s
       SET last_seq = GREATEST(s.last_seq, NEW.last_seq)
     WHERE s.stream OPERATOR(pg_catalog.=) NEW.stream
       AND s.resource_id OPERATOR(pg_catalog.=) NEW.resource_id;
    IF FOUND THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION ordering.sequences_merge() IS
    'Trigger on ordering.sequences: an inserted counter that already exists raises the existing one instead of failing (restores)';
CREATE TRIGGER sequences_merge BEFORE INSERT ON ordering.sequences
    FOR EACH ROW EXECUTE FUNCTION ordering.sequences_merge();

CREATE FUNCTION ordering.attach(tbl regclass,
                                resource_column name DEFAULT 'resource_id',
                                sequence_column name DEFAULT 'seq',
                                stream text DEFAULT NULL)
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    rel record;
    seq_type regtype;
BEGIN
    IF tbl IS NULL OR resource_column IS NULL OR sequence_column IS NULL THEN
        RAISE EXCEPTION 'table, resource column and sequence column must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT c.relname, n.nspname, c.relkind INTO rel
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE c.oid OPERATOR(pg_catalog.=) tbl;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation with OID % does not exist', tbl::pg_catalog.oid
            USING ERRCODE = 'undefined_table';
    END IF;
    IF rel.relkind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '"%" is not a table', tbl
            USING ERRCODE = 'wrong_object_type';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a
                    WHERE a.attrelid OPERATOR(pg_catalog.=) tbl
                      AND a.attname OPERATOR(pg_catalog.=) resource_column
                      AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped) THEN
        RAISE EXCEPTION 'column "%" of relation "%" does not exist', resource_column, tbl
            USING ERRCODE = 'undefined_column';
    END IF;
    SELECT a.atttypid INTO seq_type
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid OPERATOR(pg_catalog.=) tbl
       AND a.attname OPERATOR(pg_catalog.=) sequence_column
       AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation "%" does not exist', sequence_column, tbl
            USING ERRCODE = 'undefined_column';
    END IF;
    IF seq_type OPERATOR(pg_catalog.<>) 'pg_catalog.int8'::pg_catalog.regtype THEN
        RAISE EXCEPTION 'sequence column "%" of relation "%" must be of type bigint, not %',
            sequence_column, tbl, seq_type
            USING ERRCODE = 'datatype_mismatch';
    END IF;
    IF resource_column OPERATOR(pg_catalog.=) sequence_column THEN
        RAISE EXCEPTION 'resource column and sequence column must differ'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF stream OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'stream name must not be empty'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- the trigger refuses longer ones at every insert (keyed.h)
    IF pg_catalog.octet_length(COALESCE(stream, rel.nspname OPERATOR(pg_catalog.||) '.'
                                        OPERATOR(pg_catalog.||) rel.relname))
       OPERATOR(pg_catalog.>) 1024 THEN
        RAISE EXCEPTION 'stream name is too long (at most 1024 bytes)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_trigger t
                WHERE t.tgrelid OPERATOR(pg_catalog.=) tbl
                  AND t.tgname OPERATOR(pg_catalog.=) 'ordering_sequence') THEN
        RAISE EXCEPTION 'relation "%" is already attached', tbl
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Call ordering.detach() first to change how it is sequenced.';
    END IF;
    -- Freeze the stream name now, so renaming the table never restarts it.
    stream := COALESCE(stream, rel.nspname OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) rel.relname);
    EXECUTE pg_catalog.format(
        'CREATE TRIGGER ordering_sequence BEFORE INSERT ON %s FOR EACH ROW '
        'EXECUTE FUNCTION ordering.sequence_trigger(%L, %L, %L)',
        tbl, resource_column, sequence_column, stream);
END
$$;
COMMENT ON FUNCTION ordering.attach(regclass, name, name, text) IS
    'Installs the sequencing trigger on a table: each inserted row gets the next sequence number of its resource';

CREATE FUNCTION ordering.detach(tbl regclass) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF tbl IS NULL THEN
        RAISE EXCEPTION 'table must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_trigger t
                    WHERE t.tgrelid OPERATOR(pg_catalog.=) tbl
                      AND t.tgname OPERATOR(pg_catalog.=) 'ordering_sequence') THEN
        RAISE EXCEPTION 'relation "%" is not attached', tbl
            USING ERRCODE = 'undefined_object';
    END IF;
    EXECUTE pg_catalog.format('DROP TRIGGER ordering_sequence ON %s', tbl);
END
$$;
COMMENT ON FUNCTION ordering.detach(regclass) IS
    'Removes the sequencing trigger from a table; its counters are kept';

CREATE TABLE ordering.outbox (
    id           bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    resource_id  text NOT NULL,
    seq          bigint NOT NULL,
    event_type   text NOT NULL,
    payload      jsonb NOT NULL,
    headers      jsonb,
    created_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    published_at timestamptz,
    UNIQUE (resource_id, seq)
);
-- Relays look for unpublished rows only.
CREATE INDEX outbox_unpublished_idx ON ordering.outbox (id)
    WHERE published_at IS NULL;
COMMENT ON TABLE ordering.outbox IS
    'A ready transactional outbox, sequenced per resource (stream "ordering.outbox"); published_at is NULL until a relay has sent the row';
SELECT pg_catalog.pg_extension_config_dump('ordering.outbox', '');
SELECT pg_catalog.pg_extension_config_dump('ordering.outbox_id_seq', '');
SELECT ordering.attach('ordering.outbox');

CREATE FUNCTION ordering.emit(resource_id text, event_type text, payload jsonb,
                              expected_seq bigint DEFAULT NULL)
    RETURNS bigint
    LANGUAGE sql VOLATILE
    AS $$
    INSERT INTO ordering.outbox (resource_id, seq, event_type, payload)
    VALUES ($1, $4, $2, $3)
    RETURNING seq
    $$;
COMMENT ON FUNCTION ordering.emit(text, text, jsonb, bigint) IS
    'Writes an event to ordering.outbox in the caller''s transaction and returns its sequence number; expected_seq, if given, must be that number (else SQLSTATE 40001)';

CREATE FUNCTION ordering.claim_unpublished(batch_size integer DEFAULT 100)
    RETURNS SETOF ordering.outbox
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF batch_size IS NULL THEN
        RAISE EXCEPTION 'batch_size must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF batch_size OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'batch_size must not be negative, got %', batch_size
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT o.* FROM ordering.outbox o
     WHERE o.published_at IS NULL
     ORDER BY o.id
     LIMIT batch_size
       FOR UPDATE SKIP LOCKED;
END
$$;
COMMENT ON FUNCTION ordering.claim_unpublished(integer) IS
    'For relays: up to batch_size unpublished outbox rows, locked until the end of the caller''s transaction and skipped by other relays';

CREATE FUNCTION ordering.mark_published(ids bigint[]) RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    marked bigint;
BEGIN
    IF ids IS NULL THEN
        RAISE EXCEPTION 'ids must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    UPDATE ordering.outbox o SET published_at = pg_catalog.now()
     WHERE o.id OPERATOR(pg_catalog.=) ANY (ids)
       AND o.published_at IS NULL;
    GET DIAGNOSTICS marked = ROW_COUNT;
    RETURN marked;
END
$$;
COMMENT ON FUNCTION ordering.mark_published(bigint[]) IS
    'Marks outbox rows as published; returns how many were unpublished before';

CREATE FUNCTION ordering.republish(resource_id text, from_seq bigint,
                                   to_seq bigint DEFAULT NULL)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    last_seq bigint;
    wanted bigint;
    found bigint;
BEGIN
    IF resource_id IS NULL OR from_seq IS NULL THEN
        RAISE EXCEPTION 'resource_id and from_seq must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF from_seq OPERATOR(pg_catalog.<) 1 OR to_seq OPERATOR(pg_catalog.<) from_seq THEN
        RAISE EXCEPTION 'invalid range [%, %]', from_seq, to_seq
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    last_seq := ordering.last_sequence('ordering.outbox', resource_id);
    to_seq := LEAST(COALESCE(to_seq, last_seq), last_seq);
    UPDATE ordering.outbox o SET published_at = NULL
     WHERE o.resource_id OPERATOR(pg_catalog.=) republish.resource_id
       AND o.seq OPERATOR(pg_catalog.>=) from_seq
       AND o.seq OPERATOR(pg_catalog.<=) to_seq;
    GET DIAGNOSTICS found = ROW_COUNT;
    wanted := GREATEST(to_seq OPERATOR(pg_catalog.-) from_seq OPERATOR(pg_catalog.+) 1, 0);
    IF found OPERATOR(pg_catalog.<) wanted THEN
        RAISE WARNING '% of the % requested events of resource "%" are no longer in the outbox',
            wanted OPERATOR(pg_catalog.-) found, wanted, resource_id
            USING DETAIL = 'They were purged by ordering.purge_published() or deleted.',
                  HINT = 'The consumer can give up on them with ordering.skip_gap().';
    END IF;
    RETURN found;
END
$$;
COMMENT ON FUNCTION ordering.republish(text, bigint, bigint) IS
    'Marks a resource''s outbox rows in [from_seq, to_seq] unpublished so relays send them again; warns about rows already purged';

CREATE FUNCTION ordering.purge_published(older_than interval) RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    purged bigint;
BEGIN
    IF older_than IS NULL THEN
        RAISE EXCEPTION 'older_than must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF older_than OPERATOR(pg_catalog.<) '0'::pg_catalog.interval THEN
        RAISE EXCEPTION 'older_than must not be negative, got %', older_than
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM ordering.outbox o
     WHERE o.published_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) older_than);
    GET DIAGNOSTICS purged = ROW_COUNT;
    RETURN purged;
END
$$;
COMMENT ON FUNCTION ordering.purge_published(interval) IS
    'Retention: deletes outbox rows published longer ago than older_than; sequence counters are kept';

-------------------------------------------------------------------------------
-- Consumer side: positions and parked events
-------------------------------------------------------------------------------

CREATE TABLE ordering.positions (
    consumer    text COLLATE "C" NOT NULL,
    resource_id text COLLATE "C" NOT NULL,
    position    bigint NOT NULL CHECK (position OPERATOR(pg_catalog.>=) 0),
    PRIMARY KEY (consumer, resource_id)
) WITH (fillfactor = 50);
COMMENT ON TABLE ordering.positions IS
    'Consumer positions: the highest sequence number each consumer has applied per resource';
SELECT pg_catalog.pg_extension_config_dump('ordering.positions', '');

CREATE TABLE ordering.parked (
    consumer    text COLLATE "C" NOT NULL,
    resource_id text COLLATE "C" NOT NULL,
    seq         bigint NOT NULL CHECK (seq OPERATOR(pg_catalog.>) 0),
    payload     jsonb,
    parked_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (consumer, resource_id, seq)
);
-- The gap sweeper looks for the oldest parked events first.
CREATE INDEX parked_parked_at_idx ON ordering.parked (parked_at);
COMMENT ON TABLE ordering.parked IS
    'Step events that arrived ahead of a missing predecessor, waiting durably until the gap fills';
SELECT pg_catalog.pg_extension_config_dump('ordering.parked', '');

-- State consumers (apply only newer versions) and step consumers (park early
-- events, drain in order).  All in C: see src/consumer.c for how each call
-- is serialized per (consumer, resource) and src/newer_only.c for the
-- trigger.  None is STRICT: a NULL argument raises SQLSTATE 22004 instead of
-- silently returning NULL.

CREATE FUNCTION ordering.apply_if_newer(consumer text, resource_id text, seq bigint)
    RETURNS boolean
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_apply_if_newer';
COMMENT ON FUNCTION ordering.apply_if_newer(text, text, bigint) IS
    'State consumers: true when seq is above the consumer''s position (which becomes seq; apply the event in the same transaction), false for stale and duplicate events, which change nothing';

CREATE FUNCTION ordering.newer_only() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'ordering_newer_only';
COMMENT ON FUNCTION ordering.newer_only() IS
    'BEFORE UPDATE FOR EACH ROW trigger for projection tables, arguments (version_column [, consumer]): skips every update whose new version is not greater than the stored one';

-- An IN argument and a result column share the names seq and payload, which
-- C functions may do (PL/pgSQL would refuse).
CREATE FUNCTION ordering.deliver(consumer text, resource_id text, seq bigint, payload jsonb)
    RETURNS TABLE (seq bigint, payload jsonb)
    LANGUAGE c VOLATILE ROWS 1 AS 'MODULE_PATHNAME', 'ordering_deliver';
COMMENT ON FUNCTION ordering.deliver(text, text, bigint, jsonb) IS
    'Step consumers: the events to apply now, in order (this one and the parked run it continues); parks an early event, ignores stale and duplicate ones; all in the caller''s transaction';

CREATE FUNCTION ordering.deliver(consumer text, resource_id text, seq bigint, payload jsonb,
                                 handler regprocedure)
    RETURNS integer
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_deliver_handler';
COMMENT ON FUNCTION ordering.deliver(text, text, bigint, jsonb, regprocedure) IS
    'Step consumers: like deliver(consumer, resource_id, seq, payload), but calls handler(resource_id text, seq bigint, payload jsonb) for each ready event in order; returns how many ran';

CREATE FUNCTION ordering.position(consumer text, resource_id text) RETURNS bigint
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_position';
COMMENT ON FUNCTION ordering.position(text, text) IS
    'The highest sequence number the consumer has applied for the resource; 0 if none';

CREATE FUNCTION ordering.skip_gap(consumer text, resource_id text)
    RETURNS TABLE (seq bigint, payload jsonb)
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_skip_gap';
COMMENT ON FUNCTION ordering.skip_gap(text, text) IS
    'Operator action: gives up on the events missing before the lowest parked one, moves the position past the gap and returns the parked events that then drain, in order';

-------------------------------------------------------------------------------
-- Gaps
-------------------------------------------------------------------------------

CREATE TABLE ordering.gap_requests (
    consumer          text COLLATE "C" NOT NULL,
    resource_id       text COLLATE "C" NOT NULL,
    missing_from      bigint NOT NULL,
    missing_to        bigint NOT NULL,
    parked_count      bigint NOT NULL,
    first_parked_at   timestamptz NOT NULL,
    detected_at       timestamptz NOT NULL,
    last_requested_at timestamptz NOT NULL,
    attempts          integer NOT NULL,
    PRIMARY KEY (consumer, resource_id)
);
COMMENT ON TABLE ordering.gap_requests IS
    'One row per open gap older than ordering.gap_deadline: the missing range to ask the producer to republish';
SELECT pg_catalog.pg_extension_config_dump('ordering.gap_requests', '');

-- The deadline as an interval, for SQL (the setting is in seconds).
CREATE FUNCTION ordering.gap_deadline() RETURNS interval
    LANGUAGE c STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'ordering_gap_deadline_interval';
COMMENT ON FUNCTION ordering.gap_deadline() IS
    'The current ordering.gap_deadline setting as an interval';

-- The gaps that have passed the deadline.  Starts from the parked_at index
-- (events parked before now() - deadline), then looks at each such
-- (consumer, resource) through the primary keys of ordering.parked and
-- ordering.positions: its cost grows with the parked events past the
-- deadline, never with the number of positions.  A pair whose lowest parked
-- seq directly follows its position has no gap (it drains on the next
-- delivery) and is not listed.
CREATE VIEW ordering.open_gaps AS
SELECT d.consumer,
       d.resource_id,
       COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1 AS missing_from,
       agg.lowest OPERATOR(pg_catalog.-) 1 AS missing_to,
       agg.parked_count,
       agg.first_parked_at
  FROM (SELECT DISTINCT p.consumer, p.resource_id
          FROM ordering.parked p
         WHERE p.parked_at OPERATOR(pg_catalog.<)
               (pg_catalog.now() OPERATOR(pg_catalog.-) ordering.gap_deadline())) d
 CROSS JOIN LATERAL (
       SELECT pg_catalog.min(p.seq) AS lowest,
              pg_catalog.count(*) AS parked_count,
              pg_catalog.min(p.parked_at) AS first_parked_at
         FROM ordering.parked p
        WHERE p.consumer OPERATOR(pg_catalog.=) d.consumer
          AND p.resource_id OPERATOR(pg_catalog.=) d.resource_id) agg
  LEFT JOIN ordering.positions pos
    ON pos.consumer OPERATOR(pg_catalog.=) d.consumer
   AND pos.resource_id OPERATOR(pg_catalog.=) d.resource_id
 WHERE agg.lowest OPERATOR(pg_catalog.>)
       (COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1);
COMMENT ON VIEW ordering.open_gaps IS
    'Gaps whose oldest parked event is older than ordering.gap_deadline: the range missing before the lowest parked event';

CREATE FUNCTION ordering.sweep_gaps() RETURNS SETOF ordering.gap_requests
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_sweep_gaps';
COMMENT ON FUNCTION ordering.sweep_gaps() IS
    'One gap sweep: writes ordering.gap_requests for the gaps past the deadline (repeats back off exponentially), sends each emitted request as NOTIFY ordering_gap with the row as JSON, returns the emitted requests';

-------------------------------------------------------------------------------
-- Statistics
-------------------------------------------------------------------------------

-- The raw counters in shared memory (library preloaded only, else 55000).
CREATE FUNCTION ordering.consumer_counters(
    OUT consumer text,
    OUT events_consumed bigint,
    OUT events_applied bigint,
    OUT events_stale bigint,
    OUT events_duplicate bigint,
    OUT events_parked bigint,
    OUT events_drained bigint,
    OUT gaps_escalated bigint,
    OUT reorder_distance_buckets bigint[],
    OUT reorder_distance_sum bigint)
    RETURNS SETOF record
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_consumer_counters';
COMMENT ON FUNCTION ordering.consumer_counters() IS
    'Committed-work counters of the consumers of the current database, from shared memory; use the view ordering.stats';

CREATE FUNCTION ordering.stream_counters(OUT stream text, OUT sequences_assigned bigint)
    RETURNS SETOF record
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_stream_counters';
COMMENT ON FUNCTION ordering.stream_counters() IS
    'Sequence numbers assigned (and committed) per stream of the current database, from shared memory; use the view ordering.stream_stats';

CREATE FUNCTION ordering.stats_reset_time() RETURNS timestamptz
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_stats_reset_time';
COMMENT ON FUNCTION ordering.stats_reset_time() IS
    'Since when the statistics count: the last ordering.stats_reset() or the server start';

CREATE FUNCTION ordering.stats_reset() RETURNS void
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_stats_reset';
COMMENT ON FUNCTION ordering.stats_reset() IS
    'Forgets all counters of ordering.stats and ordering.stream_stats, of every database of the cluster';
-- Resetting erases the history every dashboard and alert of every database
-- relies on (rates jump, counters restart): an operator's decision, so not
-- granted to PUBLIC, as pg_stat_statements_reset().
REVOKE EXECUTE ON FUNCTION ordering.stats_reset() FROM PUBLIC;

-- parked_current is counted from ordering.parked, so it is exact and
-- survives restarts; the counters come from shared memory.  A consumer shows
-- up once it has counted committed work or has parked events.
CREATE VIEW ordering.stats AS
SELECT COALESCE(c.consumer, p.consumer) AS consumer,
       COALESCE(c.events_consumed, 0) AS events_consumed,
       COALESCE(c.events_applied, 0) AS events_applied,
       COALESCE(c.events_stale, 0) AS events_stale,
       COALESCE(c.events_duplicate, 0) AS events_duplicate,
       COALESCE(c.events_parked, 0) AS events_parked,
       COALESCE(c.events_drained, 0) AS events_drained,
       COALESCE(c.gaps_escalated, 0) AS gaps_escalated,
       COALESCE(p.parked_current, 0) AS parked_current,
       COALESCE(c.reorder_distance_buckets,
                '{0,0,0,0,0,0,0,0}'::pg_catalog.int8[]) AS reorder_distance_buckets,
       '{1,2,3,5,10,25,100,NULL}'::pg_catalog.int8[] AS reorder_distance_bounds,
       r.stats_reset,
       COALESCE(c.reorder_distance_sum, 0) AS reorder_distance_sum
  FROM (SELECT cc.consumer COLLATE "C" AS consumer, cc.events_consumed,
               cc.events_applied, cc.events_stale, cc.events_duplicate,
               cc.events_parked, cc.events_drained, cc.gaps_escalated,
               cc.reorder_distance_buckets, cc.reorder_distance_sum
          FROM ordering.consumer_counters() cc) c
  FULL JOIN (SELECT pk.consumer, pg_catalog.count(*) AS parked_current
               FROM ordering.parked pk
              GROUP BY pk.consumer) p
    ON c.consumer OPERATOR(pg_catalog.=) p.consumer
 CROSS JOIN (SELECT ordering.stats_reset_time() AS stats_reset) r;
COMMENT ON VIEW ordering.stats IS
    'One row per consumer of the current database: committed-work counters, events parked now, and the reorder-distance histogram (bucket i counts distances <= bound i and > bound i-1; the last bound, NULL, is the overflow)';

CREATE VIEW ordering.stream_stats AS
SELECT s.stream, s.sequences_assigned, r.stats_reset
  FROM ordering.stream_counters() s
 CROSS JOIN (SELECT ordering.stats_reset_time() AS stats_reset) r;
COMMENT ON VIEW ordering.stream_stats IS
    'One row per stream of the current database: sequence numbers assigned by committed transactions';

CREATE FUNCTION ordering.metric_label_value(value text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
    SELECT replace(replace(replace($1, E'\\', E'\\\\'), '"', E'\\"'), E'\n', E'\\n')
    $$;
COMMENT ON FUNCTION ordering.metric_label_value(text) IS
    'Escapes a Prometheus label value: backslash, double quote and newline';

CREATE FUNCTION ordering.metrics() RETURNS text
    LANGUAGE sql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
WITH s AS MATERIALIZED (
    SELECT st.consumer, st.reorder_distance_buckets, st.reorder_distance_bounds,
           st.reorder_distance_sum, to_jsonb(st) AS j,
           'consumer="' || ordering.metric_label_value(st.consumer) || '"' AS label
      FROM ordering.stats st
), fam(ord, name, kind, help, col) AS (VALUES
    (1, 'ordering_events_consumed_total', 'counter', 'Events handed to a consumer function.', 'events_consumed'),
    (2, 'ordering_events_applied_total', 'counter', 'Events applied when they arrived.', 'events_applied'),
    (3, 'ordering_events_stale_total', 'counter', 'Events ignored because a newer one was applied.', 'events_stale'),
    (4, 'ordering_events_duplicate_total', 'counter', 'Events ignored because they were applied or parked already.', 'events_duplicate'),
    (5, 'ordering_events_parked_total', 'counter', 'Early events parked to wait for a predecessor.', 'events_parked'),
    (6, 'ordering_events_drained_total', 'counter', 'Parked events applied once their gap filled.', 'events_drained'),
    (7, 'ordering_event_gaps_escalated_total', 'counter', 'Gap requests emitted after the deadline, first and repeated.', 'gaps_escalated'),
    (8, 'ordering_events_parked_current', 'gauge', 'Events parked now.', 'parked_current')
), lines(ord, sub, name, i, line) AS (
    SELECT f.ord, 0, '', 0, '# HELP ' || f.name || ' ' || f.help FROM fam f
    UNION ALL
    SELECT f.ord, 1, '', 0, '# TYPE ' || f.name || ' ' || f.kind FROM fam f
    UNION ALL
    SELECT f.ord, 2, s.consumer, 0, f.name || '{' || s.label || '} ' || (s.j ->> f.col)
      FROM fam f CROSS JOIN s
    UNION ALL
    SELECT 9, 0, '', 0, '# HELP ordering_event_reorder_distance How far ahead of the position early events arrived (seq - position).'
    UNION ALL
    SELECT 9, 1, '', 0, '# TYPE ordering_event_reorder_distance histogram'
    UNION ALL
    SELECT 9, 2, s.consumer, b.i::integer,
           'ordering_event_reorder_distance_bucket{' || s.label || ',le="'
           || COALESCE(b.bound::text, '+Inf') || '"} '
           || (SELECT sum(x) FROM unnest(s.reorder_distance_buckets[1:b.i]) x)::bigint
      FROM s CROSS JOIN unnest(s.reorder_distance_bounds) WITH ORDINALITY b(bound, i)
    UNION ALL
    SELECT 9, 2, s.consumer, 100,
           'ordering_event_reorder_distance_sum{' || s.label || '} ' || s.reorder_distance_sum
      FROM s
    UNION ALL
    SELECT 9, 2, s.consumer, 101,
           'ordering_event_reorder_distance_count{' || s.label || '} '
           || (SELECT sum(x) FROM unnest(s.reorder_distance_buckets) x)::bigint
      FROM s
    UNION ALL
    SELECT 10, 0, '', 0, '# HELP ordering_sequences_assigned_total Sequence numbers assigned by committed transactions.'
    UNION ALL
    SELECT 10, 1, '', 0, '# TYPE ordering_sequences_assigned_total counter'
    UNION ALL
    SELECT 10, 2, ss.stream, 0,
           'ordering_sequences_assigned_total{stream="' || ordering.metric_label_value(ss.stream)
           || '"} ' || ss.sequences_assigned
      FROM ordering.stream_stats ss
)
SELECT string_agg(l.line, E'\n' ORDER BY l.ord, l.sub, l.name COLLATE "C", l.i) || E'\n'
  FROM lines l
$$;
COMMENT ON FUNCTION ordering.metrics() IS
    'The statistics of the current database in the Prometheus text exposition format';

-------------------------------------------------------------------------------
-- Privileges
-------------------------------------------------------------------------------

-- The C functions read and write the extension's tables below the executor,
-- where no table privilege is checked: the right to EXECUTE a function is
-- the permission.  So nothing is granted to PUBLIC; the grant_* functions
-- below hand out the sets a producer, a consumer, an operator and a
-- monitoring role need (see README, "Privileges").  Trigger functions need
-- EXECUTE only to create a trigger, never to fire it.
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA ordering FROM PUBLIC;

-- The one place that writes GRANT statements: USAGE on the schema, then
-- "GRANT <each of grants> TO role".  SECURITY INVOKER, so it grants only what
-- its caller may grant.
CREATE FUNCTION ordering.grant_privileges(role regrole, VARIADIC grants text[])
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    g text;
BEGIN
    EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA ordering TO %s', role);
    FOREACH g IN ARRAY grants LOOP
        EXECUTE pg_catalog.format('GRANT %s TO %s', g, role);
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering.grant_privileges(regrole, text[]) IS
    'Internal to the grant_* functions: grants USAGE on schema ordering and each "privileges ON objects" item to the role';

CREATE FUNCTION ordering.grant_producer(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.emit(text, text, jsonb, bigint), '
        'ordering.next_sequence(text, text), ordering.last_sequence(text, text), '
        'ordering.attach(regclass, name, name, text), ordering.detach(regclass), '
        'ordering.sequence_trigger(), ordering.claim_unpublished(integer), '
        'ordering.mark_published(bigint[]), ordering.republish(text, bigint, bigint), '
        'ordering.purge_published(interval)',
        -- the outbox is written by plain SQL (emit, relays, retention)
        'SELECT, INSERT, UPDATE, DELETE ON ordering.outbox',
        'SELECT ON ordering.sequences');
END
$$;
COMMENT ON FUNCTION ordering.grant_producer(regrole) IS
    'Grants what a producer and its relays need: emit, next/last_sequence, attach/detach, the relay functions and the outbox';

CREATE FUNCTION ordering.grant_consumer(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.apply_if_newer(text, text, bigint), '
        'ordering.deliver(text, text, bigint, jsonb), '
        'ordering.deliver(text, text, bigint, jsonb, regprocedure), '
        'ordering.position(text, text), ordering.newer_only()',
        -- deliver() settles gap requests with plain SQL, and parks with plain
        -- SQL when ordering.parked has been given triggers or extra indexes
        'SELECT ON ordering.positions, ordering.gap_requests',
        'SELECT, INSERT, DELETE ON ordering.parked',
        'DELETE ON ordering.gap_requests');
END
$$;
COMMENT ON FUNCTION ordering.grant_consumer(regrole) IS
    'Grants what a consumer needs: apply_if_newer, deliver, position, the newer_only trigger, and read access to its state';

CREATE FUNCTION ordering.grant_monitor(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.metrics(), ordering.metric_label_value(text), '
        'ordering.consumer_counters(), ordering.stream_counters(), '
        'ordering.stats_reset_time(), ordering.gap_deadline()',
        'SELECT ON ordering.stats, ordering.stream_stats, ordering.open_gaps, '
        'ordering.gap_requests');
END
$$;
COMMENT ON FUNCTION ordering.grant_monitor(regrole) IS
    'Grants read-only access to the statistics, ordering.metrics() and the open gaps (for dashboards and exporters)';

CREATE FUNCTION ordering.grant_operator(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering.grant_consumer(role);
    PERFORM ordering.grant_monitor(role);
    PERFORM ordering.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.skip_gap(text, text), '
        'ordering.sweep_gaps(), ordering.stats_reset()',
        'SELECT, INSERT, UPDATE, DELETE ON ordering.gap_requests');
END
$$;
COMMENT ON FUNCTION ordering.grant_operator(regrole) IS
    'Grants what an operator (and the gap-sweeper role) needs: the consumer and monitoring sets plus skip_gap, sweep_gaps and stats_reset';

-- Granting is for the extension's owner (or a superuser) to do.
REVOKE EXECUTE ON FUNCTION ordering.grant_producer(regrole), ordering.grant_consumer(regrole),
    ordering.grant_monitor(regrole), ordering.grant_operator(regrole),
    ordering.grant_privileges(regrole, text[]) FROM PUBLIC;
