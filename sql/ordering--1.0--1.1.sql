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
-- Producer: the sequencing trigger under ordinary SQL, and restores
-------------------------------------------------------------------------------

-- The block of a (consumer, resource) by its dead letter: the seq that
-- waits in ordering.dead_letter_events; NULL when the key is not blocked.
ALTER TABLE ordering.positions ADD COLUMN blocked_at bigint;
COMMENT ON COLUMN ordering.positions.blocked_at IS
    'The seq of the dead letter that blocks this (consumer, resource), NULL when none does';

-- Every row a statement inserts into ordering.sequences (pg_restore's COPY,
-- ordering.post_restore()) merges with the counter, keeping the higher value.
DROP TRIGGER sequences_merge ON ordering.sequences;
DROP FUNCTION ordering.sequences_merge();
CREATE FUNCTION ordering.sequences_load() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'ordering_sequences_load';
COMMENT ON FUNCTION ordering.sequences_load() IS
    'Trigger on ordering.sequences: an inserted counter row raises the counter to at least its value (restores, loads) instead of being inserted';
CREATE TRIGGER sequences_load BEFORE INSERT ON ordering.sequences
    FOR EACH ROW EXECUTE FUNCTION ordering.sequences_load();

-- The tables attach() sequenced, attached now or not: re-attaching a table
-- continues its stream whatever it was renamed to.  regclass survives dump
-- and restore (it is dumped as the table's name); rows of dropped tables are
-- removed by the event trigger below.
CREATE TABLE ordering.attachments (
    tbl             regclass PRIMARY KEY,
    stream          text NOT NULL,
    resource_column name NOT NULL,
    sequence_column name NOT NULL,
    attached        boolean NOT NULL DEFAULT true,
    attached_at     timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE ordering.attachments IS
    'The tables ordering.attach() sequenced, with their frozen stream: attached = false after ordering.detach(), and attaching again continues the stream';
SELECT pg_catalog.pg_extension_config_dump('ordering.attachments', '');

CREATE FUNCTION ordering.forget_dropped_tables() RETURNS event_trigger
    LANGUAGE plpgsql
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    -- DROP EXTENSION drops the registry in the same command
    IF pg_catalog.to_regclass('ordering.attachments') IS NULL THEN
        RETURN;
    END IF;
    DELETE FROM ordering.attachments a
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND a.tbl::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
END
$$;
COMMENT ON FUNCTION ordering.forget_dropped_tables() IS
    'Event trigger: removes dropped tables from ordering.attachments, so no stale OID is dumped and restored there (SECURITY DEFINER: whoever drops a table must not need rights on the registry)';
REVOKE EXECUTE ON FUNCTION ordering.forget_dropped_tables() FROM PUBLIC;
CREATE EVENT TRIGGER ordering_forget_dropped_tables ON sql_drop
    EXECUTE FUNCTION ordering.forget_dropped_tables();

-- The companions of the sequencing trigger (see src/producer.c).
CREATE FUNCTION ordering.sequence_stored(stream text, seq bigint) RETURNS boolean
    LANGUAGE c STRICT VOLATILE AS 'MODULE_PATHNAME', 'ordering_sequence_stored';
COMMENT ON FUNCTION ordering.sequence_stored(text, bigint) IS
    'The WHEN clause of an attached table''s AFTER INSERT trigger: tells the extension that the row holding this number was stored (so it is not given back); always false';
-- Evaluated with the privileges of whoever inserts into an attached table:
-- it only tells this backend that its own row was stored.
GRANT EXECUTE ON FUNCTION ordering.sequence_stored(text, bigint) TO PUBLIC;

CREATE FUNCTION ordering.sequence_stored_trigger() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'ordering_sequence_stored_trigger';
COMMENT ON FUNCTION ordering.sequence_stored_trigger() IS
    'AFTER INSERT FOR EACH ROW trigger installed by ordering.attach(); its WHEN clause ordering.sequence_stored() does the work and never lets it fire';
REVOKE EXECUTE ON FUNCTION ordering.sequence_stored_trigger() FROM PUBLIC;

CREATE FUNCTION ordering.sequence_guard() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'ordering_sequence_guard';
COMMENT ON FUNCTION ordering.sequence_guard() IS
    'BEFORE UPDATE OR DELETE FOR EACH ROW trigger installed by ordering.attach(): a sequenced row keeps its resource and number, also when an UPDATE moves it to another partition';
REVOKE EXECUTE ON FUNCTION ordering.sequence_guard() FROM PUBLIC;

CREATE FUNCTION ordering.resource_key(resource anyelement) RETURNS text
    LANGUAGE c STRICT IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'ordering_resource_key';
COMMENT ON FUNCTION ordering.resource_key(anyelement) IS
    'The text a resource value is keyed by in ordering.sequences: text as it is, any other type printed under fixed settings, so no session setting changes it';
REVOKE EXECUTE ON FUNCTION ordering.resource_key(anyelement) FROM PUBLIC;

-- Create the three triggers of an attached table (internal to attach()).
CREATE FUNCTION ordering.create_sequencing_triggers(tbl regclass, resource_column name,
                                                    sequence_column name, stream text)
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    EXECUTE pg_catalog.format(
        'CREATE TRIGGER ordering_sequence BEFORE INSERT ON %s FOR EACH ROW '
        'EXECUTE FUNCTION ordering.sequence_trigger(%L, %L, %L)',
        tbl, resource_column, sequence_column, stream);
    EXECUTE pg_catalog.format(
        'CREATE TRIGGER ordering_sequence_stored AFTER INSERT ON %s FOR EACH ROW '
        'WHEN (ordering.sequence_stored(%L::pg_catalog.text, NEW.%I)) '
        'EXECUTE FUNCTION ordering.sequence_stored_trigger()',
        tbl, stream, sequence_column);
    EXECUTE pg_catalog.format(
        'CREATE TRIGGER ordering_sequence_guard BEFORE UPDATE OR DELETE ON %s FOR EACH ROW '
        'EXECUTE FUNCTION ordering.sequence_guard(%L, %L, %L)',
        tbl, resource_column, sequence_column, stream);
END
$$;
COMMENT ON FUNCTION ordering.create_sequencing_triggers(regclass, name, name, text) IS
    'Internal to ordering.attach(): creates the sequencing trigger and its two companions on a table';
REVOKE EXECUTE ON FUNCTION ordering.create_sequencing_triggers(regclass, name, name, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION ordering.attach(tbl regclass,
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
    known_stream text;
    generated name;
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
    SELECT a.attname INTO generated
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid OPERATOR(pg_catalog.=) tbl
       AND a.attname IN (resource_column, sequence_column)
       AND a.attgenerated OPERATOR(pg_catalog.<>) '';
    IF FOUND THEN
        RAISE EXCEPTION 'column "%" of relation "%" is a generated column', generated, tbl
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'A generated column has no value yet when the sequencing trigger runs (BEFORE INSERT).',
                  HINT = 'Sequence a plain column; compute the generated one from it.';
    END IF;
    IF stream OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'stream name must not be empty'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_trigger t
                WHERE t.tgrelid OPERATOR(pg_catalog.=) tbl
                  AND t.tgname OPERATOR(pg_catalog.=) 'ordering_sequence') THEN
        RAISE EXCEPTION 'relation "%" is already attached', tbl
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Call ordering.detach() first to change how it is sequenced.';
    END IF;
    -- A table that Citus distributes would be sequenced on each shard by
    -- the shard's node: counters would restart after a shard move.
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        IF (SELECT pg_catalog.count(*) OPERATOR(pg_catalog.>) 0
              FROM pg_catalog.pg_dist_partition p
             WHERE p.logicalrelid OPERATOR(pg_catalog.=) tbl) THEN
            RAISE EXCEPTION 'relation "%" is distributed by Citus', tbl
                USING ERRCODE = 'feature_not_supported',
                      DETAIL = 'Its rows would be sequenced by each shard''s node, with counters of their own.';
        END IF;
    END IF;
    -- Re-attaching continues the stream the table had.
    SELECT a.stream INTO known_stream FROM ordering.attachments a
     WHERE a.tbl OPERATOR(pg_catalog.=) attach.tbl;
    stream := COALESCE(stream, known_stream,
                       rel.nspname OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) rel.relname);
    -- the trigger refuses longer ones at every insert
    IF pg_catalog.octet_length(stream) OPERATOR(pg_catalog.>) 1024 THEN
        RAISE EXCEPTION 'stream name is too long (at most 1024 bytes)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM ordering.create_sequencing_triggers(tbl, resource_column, sequence_column, stream);
    INSERT INTO ordering.attachments AS a (tbl, stream, resource_column, sequence_column)
    VALUES (attach.tbl, attach.stream, attach.resource_column, attach.sequence_column)
    ON CONFLICT ON CONSTRAINT attachments_pkey DO UPDATE
       SET stream = EXCLUDED.stream, resource_column = EXCLUDED.resource_column,
           sequence_column = EXCLUDED.sequence_column, attached = true,
           attached_at = pg_catalog.now();
END
$$;

CREATE OR REPLACE FUNCTION ordering.detach(tbl regclass) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    was text;
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
    EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS ordering_sequence_stored ON %s', tbl);
    EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS ordering_sequence_guard ON %s', tbl);
    UPDATE ordering.attachments a SET attached = false
     WHERE a.tbl OPERATOR(pg_catalog.=) detach.tbl
    RETURNING a.stream INTO was;
    RAISE NOTICE 'relation "%" was sequenced as stream "%"', tbl, was
        USING DETAIL = 'Its counters are kept: ordering.attach() on this table continues the stream.';
END
$$;
COMMENT ON FUNCTION ordering.detach(regclass) IS
    'Removes the sequencing triggers from a table and says which stream it had; its counters are kept, and attaching it again continues the stream';

-- Tables attached by 1.0 get the companions and their registry row.
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT tg.tgrelid::pg_catalog.regclass AS tbl, args[1] AS resource_column,
               args[2] AS sequence_column,
               COALESCE(args[3], n.nspname OPERATOR(pg_catalog.||) '.'
                                 OPERATOR(pg_catalog.||) c.relname) AS stream
          FROM pg_catalog.pg_trigger tg
          JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) tg.tgrelid
          JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
         CROSS JOIN LATERAL pg_catalog.string_to_array(
               pg_catalog.rtrim(pg_catalog.encode(tg.tgargs, 'escape'), '\000'), '\000') args
         WHERE tg.tgname OPERATOR(pg_catalog.=) 'ordering_sequence'
           AND tg.tgfoid OPERATOR(pg_catalog.=) 'ordering.sequence_trigger()'::pg_catalog.regprocedure
           AND tg.tgparentid OPERATOR(pg_catalog.=) 0
    LOOP
        EXECUTE pg_catalog.format('DROP TRIGGER ordering_sequence ON %s', t.tbl);
        PERFORM ordering.create_sequencing_triggers(t.tbl, t.resource_column,
                                                    t.sequence_column, t.stream);
        INSERT INTO ordering.attachments (tbl, stream, resource_column, sequence_column)
        VALUES (t.tbl, t.stream, t.resource_column, t.sequence_column);
    END LOOP;
END
$$;

-- Restores: see README, "Dump and restore".
CREATE FUNCTION ordering.pre_restore() RETURNS boolean
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    -- load the library, which defines the setting
    PERFORM ordering.gap_deadline();
    EXECUTE pg_catalog.format('ALTER DATABASE %I SET ordering.restoring = on',
                              pg_catalog.current_database());
    PERFORM pg_catalog.set_config('ordering.restoring', 'on', false);
    RETURN true;
END
$$;
COMMENT ON FUNCTION ordering.pre_restore() IS
    'Call before pg_restore: until ordering.post_restore(), sessions of this database load sequenced rows with the numbers they carry and assign no new ones';
REVOKE EXECUTE ON FUNCTION ordering.pre_restore() FROM PUBLIC;

CREATE FUNCTION ordering.post_restore() RETURNS boolean
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    att record;
BEGIN
    PERFORM ordering.gap_deadline();
    DELETE FROM ordering.attachments a
     WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class c
                        WHERE c.oid OPERATOR(pg_catalog.=) a.tbl::pg_catalog.oid);
    -- every counter at least the highest number restored in its table
    FOR att IN SELECT * FROM ordering.attachments x WHERE x.attached LOOP
        EXECUTE pg_catalog.format(
            'INSERT INTO ordering.sequences (stream, resource_id, last_seq) '
            'SELECT %L, ordering.resource_key(t.%I), pg_catalog.max(t.%I) '
            '  FROM %s t WHERE t.%I IS NOT NULL GROUP BY 2',
            att.stream, att.resource_column, att.sequence_column, att.tbl,
            att.sequence_column);
    END LOOP;
    EXECUTE pg_catalog.format('ALTER DATABASE %I RESET ordering.restoring',
                              pg_catalog.current_database());
    PERFORM pg_catalog.set_config('ordering.restoring', 'off', false);
    RETURN true;
END
$$;
COMMENT ON FUNCTION ordering.post_restore() IS
    'Call after pg_restore: raises every counter to the highest number restored in its attached table and ends restore mode; safe to call again';
REVOKE EXECUTE ON FUNCTION ordering.post_restore() FROM PUBLIC;

-------------------------------------------------------------------------------
-- Dead letters: the functions (see src/dead_letters.c)
-------------------------------------------------------------------------------

CREATE FUNCTION ordering.deliver(consumer text, resource_id text, seq bigint, payload jsonb,
                                 handler regprocedure, on_error text)
    RETURNS integer
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_deliver_handler';
COMMENT ON FUNCTION ordering.deliver(text, text, bigint, jsonb, regprocedure, text) IS
    'Step consumers: like deliver(..., handler); with on_error => ''dead_letter'' a handler that fails (but for transient errors) makes its event the dead letter of the resource, blocking only that resource, and the call returns normally';
REVOKE EXECUTE ON FUNCTION ordering.deliver(text, text, bigint, jsonb, regprocedure, text) FROM PUBLIC;

CREATE FUNCTION ordering.dead_letter(consumer text, resource_id text, seq bigint,
                                     payload jsonb, reason text)
    RETURNS void
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_dead_letter';
COMMENT ON FUNCTION ordering.dead_letter(text, text, bigint, jsonb, text) IS
    'For table-form consumers that gave up on an event: records it as the dead letter of its resource (the reason as its message); later events wait behind it';
REVOKE EXECUTE ON FUNCTION ordering.dead_letter(text, text, bigint, jsonb, text) FROM PUBLIC;

CREATE FUNCTION ordering.retry_dead_letter(consumer text, resource_id text)
    RETURNS TABLE (seq bigint, payload jsonb)
    LANGUAGE c VOLATILE ROWS 1 AS 'MODULE_PATHNAME', 'ordering_retry_dead_letter';
COMMENT ON FUNCTION ordering.retry_dead_letter(text, text) IS
    'Lifts the block of a resource: returns its dead event followed by every event that then drains, to apply in the same transaction (a rollback restores the block)';
REVOKE EXECUTE ON FUNCTION ordering.retry_dead_letter(text, text) FROM PUBLIC;

CREATE FUNCTION ordering.retry_dead_letter(consumer text, resource_id text,
                                           handler regprocedure)
    RETURNS integer
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_retry_dead_letter_handler';
COMMENT ON FUNCTION ordering.retry_dead_letter(text, text, regprocedure) IS
    'Lifts the block of a resource through a handler: if the dead event fails again it stays dead (attempts + 1) and 0 is returned; else how many events ran';
REVOKE EXECUTE ON FUNCTION ordering.retry_dead_letter(text, text, regprocedure) FROM PUBLIC;

CREATE FUNCTION ordering.discard_dead_letter(consumer text, resource_id text)
    RETURNS TABLE (seq bigint, payload jsonb)
    LANGUAGE c VOLATILE ROWS 1 AS 'MODULE_PATHNAME', 'ordering_discard_dead_letter';
COMMENT ON FUNCTION ordering.discard_dead_letter(text, text) IS
    'Operator action: gives up on the dead event of a resource; the position moves past it and the events that then drain are returned';
REVOKE EXECUTE ON FUNCTION ordering.discard_dead_letter(text, text) FROM PUBLIC;

-- A blocked resource is not a gap: no republish is asked for it.
CREATE OR REPLACE VIEW ordering.open_gaps AS
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
       (COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1)
   AND pos.blocked_at IS NULL;

-------------------------------------------------------------------------------
-- Privileges: the grant_* sets with the 1.1 objects
-------------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION ordering.grant_producer(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.emit(text, text, jsonb, bigint), '
        'ordering.next_sequence(text, text), ordering.last_sequence(text, text), '
        'ordering.attach(regclass, name, name, text), ordering.detach(regclass), '
        'ordering.create_sequencing_triggers(regclass, name, name, text), '
        'ordering.sequence_trigger(), ordering.sequence_stored_trigger(), '
        'ordering.sequence_guard(), ordering.resource_key(anyelement), '
        'ordering.claim_unpublished(integer), '
        'ordering.mark_published(bigint[]), ordering.republish(text, bigint, bigint), '
        'ordering.purge_published(interval)',
        -- the outbox is written by plain SQL (emit, relays, retention)
        'SELECT, INSERT, UPDATE, DELETE ON ordering.outbox',
        'SELECT ON ordering.sequences',
        -- attach() and detach() keep the registry of attached tables
        'SELECT, INSERT, UPDATE ON ordering.attachments');
END
$$;

CREATE OR REPLACE FUNCTION ordering.grant_consumer(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.apply_if_newer(text, text, bigint), '
        'ordering.deliver(text, text, bigint, jsonb), '
        'ordering.deliver(text, text, bigint, jsonb, regprocedure), '
        'ordering.deliver(text, text, bigint, jsonb, regprocedure, text), '
        'ordering.dead_letter(text, text, bigint, jsonb, text), '
        'ordering.position(text, text), ordering.newer_only()',
        'SELECT ON ordering.positions, ordering.gap_requests, ordering.parked, '
        'ordering.dead_letter_events, ordering.dead_letters');
END
$$;
COMMENT ON FUNCTION ordering.grant_consumer(regrole) IS
    'Grants what a consumer needs: apply_if_newer, deliver (all forms), dead_letter, position, the newer_only trigger, and read access to its state';

CREATE OR REPLACE FUNCTION ordering.grant_operator(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering.grant_consumer(role);
    PERFORM ordering.grant_monitor(role);
    PERFORM ordering.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.skip_gap(text, text), '
        'ordering.retry_dead_letter(text, text), '
        'ordering.retry_dead_letter(text, text, regprocedure), '
        'ordering.discard_dead_letter(text, text), '
        'ordering.sweep_gaps(), ordering.stats_reset()',
        'SELECT, INSERT, UPDATE, DELETE ON ordering.gap_requests');
END
$$;
COMMENT ON FUNCTION ordering.grant_operator(regrole) IS
    'Grants what an operator (and the gap-sweeper role) needs: the consumer and monitoring sets plus skip_gap, retry_dead_letter, discard_dead_letter, sweep_gaps and stats_reset';

-------------------------------------------------------------------------------
-- Observability (issue 16)
-------------------------------------------------------------------------------

-- The shared-memory counters with the columns of 1.1 appended.  The same C
-- functions as ordering.consumer_counters() and ordering.stream_counters(),
-- which fill as many columns as the row type asks for: the 1.0 functions
-- keep working (and keep their grants), the views below read these.
CREATE FUNCTION ordering.consumer_statistics(
    OUT consumer text,
    OUT events_consumed bigint,
    OUT events_applied bigint,
    OUT events_stale bigint,
    OUT events_duplicate bigint,
    OUT events_parked bigint,
    OUT events_drained bigint,
    OUT gaps_escalated bigint,
    OUT reorder_distance_buckets bigint[],
    OUT reorder_distance_sum bigint,
    OUT events_dead_lettered bigint,
    OUT events_skipped bigint)
    RETURNS SETOF record
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_consumer_counters';
COMMENT ON FUNCTION ordering.consumer_statistics() IS
    'Committed-work counters of the consumers of the current database, from shared memory (ordering.consumer_counters() with the counters of 1.1); use the view ordering.stats';

CREATE FUNCTION ordering.stream_statistics(
    OUT stream text,
    OUT sequences_assigned bigint,
    OUT sequence_conflicts bigint)
    RETURNS SETOF record
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_stream_counters';
COMMENT ON FUNCTION ordering.stream_statistics() IS
    'Per stream of the current database, from shared memory: sequence numbers assigned by committed transactions, and supplied numbers refused with SQLSTATE 40001 (counted although their transaction rolled back); use the view ordering.stream_stats';

CREATE FUNCTION ordering.hot_resources(kind text, name text, n integer DEFAULT 10)
    RETURNS TABLE (resource_id text, events bigint, max_error bigint)
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_hot_resources';
COMMENT ON FUNCTION ordering.hot_resources(text, text, integer) IS
    'The n busiest resources of a stream (kind ''stream'') or consumer (kind ''consumer'') of the current database since the last ordering.stats_reset(), busiest first, from a fixed-size shared-memory sketch: events overcounts by at most max_error, which is at most the events of that stream or consumer divided by ordering.hot_resources_size';

REVOKE EXECUTE ON FUNCTION ordering.consumer_statistics(), ordering.stream_statistics(),
    ordering.hot_resources(text, text, integer) FROM PUBLIC;

-- The relay's lag: how long the row at the head of the relays' queue (the
-- lowest unpublished id, which claim_unpublished() hands out first) has
-- waited since it was written.  One probe of the partial index relays use.
CREATE VIEW ordering.outbox_lag AS
SELECT COALESCE(GREATEST(pg_catalog.now() OPERATOR(pg_catalog.-)
                           (SELECT o.created_at FROM ordering.outbox o
                             WHERE o.published_at IS NULL
                             ORDER BY o.id LIMIT 1),
                         '0'::pg_catalog.interval),
                '0'::pg_catalog.interval) AS oldest_unpublished_age;
COMMENT ON VIEW ordering.outbox_lag IS
    'How long the oldest unpublished row of ordering.outbox (the next a relay claims) has waited; 0 when nothing waits';

-- Columns of 1.1 appended (CREATE OR REPLACE keeps the grants of the view).
-- A consumer shows up once it has counted committed work, has parked events
-- or has dead letters.  A gap is open for a (consumer, resource) when its
-- lowest parked event is above position + 1 and not behind the resource's
-- dead letter (events parked behind a dead letter wait for it, not for a
-- missing event); oldest_gap_age is the age of the lowest parked event of
-- the consumer's oldest open gap, deadline passed or not.
CREATE OR REPLACE VIEW ordering.stats AS
WITH c AS MATERIALIZED (
    SELECT cs.consumer COLLATE "C" AS consumer, cs.events_consumed,
           cs.events_applied, cs.events_stale, cs.events_duplicate,
           cs.events_parked, cs.events_drained, cs.gaps_escalated,
           cs.reorder_distance_buckets, cs.reorder_distance_sum,
           cs.events_dead_lettered, cs.events_skipped
      FROM ordering.consumer_statistics() cs
), pk AS MATERIALIZED (
    SELECT p.consumer, p.resource_id, pg_catalog.count(*) AS parked,
           pg_catalog.min(p.seq) AS lowest
      FROM ordering.parked p
     GROUP BY p.consumer, p.resource_id
), pc AS (
    SELECT pk.consumer, pg_catalog.sum(pk.parked)::pg_catalog.int8 AS parked_current
      FROM pk
     GROUP BY pk.consumer
), g AS (
    SELECT pk.consumer,
           pg_catalog.max(pg_catalog.now() OPERATOR(pg_catalog.-) lp.parked_at)
             AS oldest_gap_age
      FROM pk
      JOIN ordering.parked lp
        ON lp.consumer OPERATOR(pg_catalog.=) pk.consumer
       AND lp.resource_id OPERATOR(pg_catalog.=) pk.resource_id
       AND lp.seq OPERATOR(pg_catalog.=) pk.lowest
      LEFT JOIN ordering.positions pos
        ON pos.consumer OPERATOR(pg_catalog.=) pk.consumer
       AND pos.resource_id OPERATOR(pg_catalog.=) pk.resource_id
      LEFT JOIN ordering.dead_letter_events d
        ON d.consumer OPERATOR(pg_catalog.=) pk.consumer
       AND d.resource_id OPERATOR(pg_catalog.=) pk.resource_id
     WHERE pk.lowest OPERATOR(pg_catalog.>)
           (COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1)
       AND (d.seq IS NULL OR pk.lowest OPERATOR(pg_catalog.<) d.seq)
     GROUP BY pk.consumer
), dl AS (
    SELECT d.consumer, pg_catalog.count(*) AS dead_letters_current
      FROM ordering.dead_letter_events d
     GROUP BY d.consumer
), names AS (
    SELECT c.consumer FROM c
    UNION
    SELECT pc.consumer FROM pc
    UNION
    SELECT dl.consumer FROM dl
)
SELECT names.consumer,
       COALESCE(c.events_consumed, 0) AS events_consumed,
       COALESCE(c.events_applied, 0) AS events_applied,
       COALESCE(c.events_stale, 0) AS events_stale,
       COALESCE(c.events_duplicate, 0) AS events_duplicate,
       COALESCE(c.events_parked, 0) AS events_parked,
       COALESCE(c.events_drained, 0) AS events_drained,
       COALESCE(c.gaps_escalated, 0) AS gaps_escalated,
       COALESCE(pc.parked_current, 0) AS parked_current,
       COALESCE(c.reorder_distance_buckets,
                '{0,0,0,0,0,0,0,0}'::pg_catalog.int8[]) AS reorder_distance_buckets,
       '{1,2,3,5,10,25,100,NULL}'::pg_catalog.int8[] AS reorder_distance_bounds,
       r.stats_reset,
       COALESCE(c.reorder_distance_sum, 0) AS reorder_distance_sum,
       COALESCE(c.events_dead_lettered, 0) AS events_dead_lettered,
       COALESCE(dl.dead_letters_current, 0) AS dead_letters_current,
       COALESCE(c.events_skipped, 0) AS events_skipped,
       g.oldest_gap_age
  FROM names
  LEFT JOIN c ON c.consumer OPERATOR(pg_catalog.=) names.consumer
  LEFT JOIN pc ON pc.consumer OPERATOR(pg_catalog.=) names.consumer
  LEFT JOIN g ON g.consumer OPERATOR(pg_catalog.=) names.consumer
  LEFT JOIN dl ON dl.consumer OPERATOR(pg_catalog.=) names.consumer
 CROSS JOIN (SELECT ordering.stats_reset_time() AS stats_reset) r;
COMMENT ON VIEW ordering.stats IS
    'One row per consumer of the current database: committed-work counters, events parked now, dead letters now, the age of the oldest open gap, and the reorder-distance histogram (bucket i counts distances <= bound i and > bound i-1; the last bound, NULL, is the overflow)';

CREATE OR REPLACE VIEW ordering.stream_stats AS
SELECT s.stream, s.sequences_assigned, r.stats_reset, s.sequence_conflicts
  FROM ordering.stream_statistics() s
 CROSS JOIN (SELECT ordering.stats_reset_time() AS stats_reset) r;
COMMENT ON VIEW ordering.stream_stats IS
    'One row per stream of the current database: sequence numbers assigned by committed transactions, and supplied numbers refused with SQLSTATE 40001';

-- The Prometheus text of 1.1: the families of 1.0, then the new ones.
-- oldest_gap_age is 0 when no gap is open; the hot resources are the five
-- busiest of each stream and consumer.
CREATE OR REPLACE FUNCTION ordering.metrics() RETURNS text
    LANGUAGE sql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
WITH s AS MATERIALIZED (
    SELECT st.consumer, st.reorder_distance_buckets, st.reorder_distance_bounds,
           st.reorder_distance_sum,
           to_jsonb(st) || jsonb_build_object('oldest_gap_age_seconds',
               COALESCE(extract(epoch FROM st.oldest_gap_age), 0)) AS j,
           'consumer="' || ordering.metric_label_value(st.consumer) || '"' AS label
      FROM ordering.stats st
), ss AS MATERIALIZED (
    SELECT x.stream, x.sequences_assigned, x.sequence_conflicts,
           'stream="' || ordering.metric_label_value(x.stream) || '"' AS label
      FROM ordering.stream_stats x
), fam(ord, name, kind, help, col) AS (VALUES
    (1, 'ordering_events_consumed_total', 'counter', 'Events handed to a consumer function.', 'events_consumed'),
    (2, 'ordering_events_applied_total', 'counter', 'Events applied when they arrived.', 'events_applied'),
    (3, 'ordering_events_stale_total', 'counter', 'Events ignored because a newer one was applied.', 'events_stale'),
    (4, 'ordering_events_duplicate_total', 'counter', 'Events ignored because they were applied or parked already.', 'events_duplicate'),
    (5, 'ordering_events_parked_total', 'counter', 'Early events parked to wait for a predecessor.', 'events_parked'),
    (6, 'ordering_events_drained_total', 'counter', 'Parked events applied once their gap filled.', 'events_drained'),
    (7, 'ordering_event_gaps_escalated_total', 'counter', 'Gap requests emitted after the deadline, first and repeated.', 'gaps_escalated'),
    (8, 'ordering_events_parked_current', 'gauge', 'Events parked now.', 'parked_current'),
    (11, 'ordering_events_dead_lettered_total', 'counter', 'Events that became the dead letter of their resource.', 'events_dead_lettered'),
    (12, 'ordering_dead_letters_current', 'gauge', 'Resources blocked by a dead letter now.', 'dead_letters_current'),
    (13, 'ordering_events_skipped_total', 'counter', 'Events given up by skip_gap or discard_dead_letter.', 'events_skipped'),
    (14, 'ordering_oldest_gap_age_seconds', 'gauge', 'Age of the lowest parked event of the oldest open gap; 0 when no gap is open.', 'oldest_gap_age_seconds')
), hot AS MATERIALIZED (
    SELECT 'stream' AS kind, ss.label, h.resource_id, h.events
      FROM ss CROSS JOIN LATERAL ordering.hot_resources('stream', ss.stream, 5) h
    UNION ALL
    SELECT 'consumer', s.label, h.resource_id, h.events
      FROM s CROSS JOIN LATERAL ordering.hot_resources('consumer', s.consumer, 5) h
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
           'ordering_sequences_assigned_total{' || ss.label || '} ' || ss.sequences_assigned
      FROM ss
    UNION ALL
    SELECT 15, 0, '', 0, '# HELP ordering_sequence_conflicts_total Supplied sequence numbers refused with SQLSTATE 40001 (counted although the transaction rolled back).'
    UNION ALL
    SELECT 15, 1, '', 0, '# TYPE ordering_sequence_conflicts_total counter'
    UNION ALL
    SELECT 15, 2, ss.stream, 0,
           'ordering_sequence_conflicts_total{' || ss.label || '} ' || ss.sequence_conflicts
      FROM ss
    UNION ALL
    SELECT 16, 0, '', 0, '# HELP ordering_outbox_oldest_unpublished_age_seconds How long the oldest unpublished row of ordering.outbox has waited; 0 when nothing waits.'
    UNION ALL
    SELECT 16, 1, '', 0, '# TYPE ordering_outbox_oldest_unpublished_age_seconds gauge'
    UNION ALL
    SELECT 16, 2, '', 0,
           'ordering_outbox_oldest_unpublished_age_seconds '
           || extract(epoch FROM l.oldest_unpublished_age)
      FROM ordering.outbox_lag l
    UNION ALL
    SELECT 17, 0, '', 0, '# HELP ordering_stream_hot_resource_events_total Sequence numbers assigned to each of the busiest resources of a stream (may overcount, see ordering.hot_resources()).'
    UNION ALL
    SELECT 17, 1, '', 0, '# TYPE ordering_stream_hot_resource_events_total counter'
    UNION ALL
    SELECT 17, 2, h.label || h.resource_id, 0,
           'ordering_stream_hot_resource_events_total{' || h.label || ',resource="'
           || ordering.metric_label_value(h.resource_id) || '"} ' || h.events
      FROM hot h WHERE h.kind = 'stream'
    UNION ALL
    SELECT 18, 0, '', 0, '# HELP ordering_consumer_hot_resource_events_total Events handed to a consumer for each of its busiest resources (may overcount, see ordering.hot_resources()).'
    UNION ALL
    SELECT 18, 1, '', 0, '# TYPE ordering_consumer_hot_resource_events_total counter'
    UNION ALL
    SELECT 18, 2, h.label || h.resource_id, 0,
           'ordering_consumer_hot_resource_events_total{' || h.label || ',resource="'
           || ordering.metric_label_value(h.resource_id) || '"} ' || h.events
      FROM hot h WHERE h.kind = 'consumer'
)
SELECT string_agg(l.line, E'\n' ORDER BY l.ord, l.sub, l.name COLLATE "C", l.i) || E'\n'
  FROM lines l
$$;
COMMENT ON FUNCTION ordering.metrics() IS
    'The statistics of the current database in the Prometheus text exposition format';

-- The monitoring set gains what ordering.stats and ordering.metrics() now
-- read.  Roles given it before this update get the same, so their
-- dashboards keep working: whoever may execute ordering.consumer_counters()
-- (the 1.0 monitoring set) gets the new objects too.
CREATE OR REPLACE FUNCTION ordering.grant_monitor(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.metrics(), ordering.metric_label_value(text), '
        'ordering.consumer_counters(), ordering.stream_counters(), '
        'ordering.stats_reset_time(), ordering.gap_deadline(), '
        'ordering.consumer_statistics(), ordering.stream_statistics(), '
        'ordering.hot_resources(text, text, integer)',
        'SELECT ON ordering.stats, ordering.stream_stats, ordering.open_gaps, '
        'ordering.gap_requests, ordering.outbox_lag');
END
$$;
COMMENT ON FUNCTION ordering.grant_monitor(regrole) IS
    'Grants read-only access to the statistics, ordering.metrics(), hot resources, the relay lag and the open gaps (for dashboards and exporters)';
REVOKE EXECUTE ON FUNCTION ordering.grant_monitor(regrole) FROM PUBLIC;

DO $$
DECLARE
    grantee regrole;
BEGIN
    FOR grantee IN
        SELECT DISTINCT a.grantee::pg_catalog.regrole
          FROM pg_catalog.pg_proc p
         CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
         WHERE p.oid OPERATOR(pg_catalog.=) 'ordering.consumer_counters()'::pg_catalog.regprocedure
           AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
           AND a.grantee OPERATOR(pg_catalog.<>) 0
           AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
    LOOP
        EXECUTE pg_catalog.format(
            'GRANT EXECUTE ON FUNCTION ordering.consumer_statistics(), '
            'ordering.stream_statistics(), ordering.hot_resources(text, text, integer) TO %s; '
            'GRANT SELECT ON ordering.outbox_lag TO %s', grantee, grantee);
    END LOOP;
END
$$;

-------------------------------------------------------------------------------
-- Dead letters: events below a dead letter (issue 15)
-------------------------------------------------------------------------------

-- dead_letter() may block a resource above position + 1, and the events
-- between may go missing like any others: a gap below the dead letter (the
-- lowest parked event is below it) is a gap the sweeper asks for, as
-- ordering.stats' oldest_gap_age already counts it.  Events parked behind
-- the dead letter wait for it and are no gap.  (CREATE OR REPLACE keeps the
-- grants and the comment of the view.)
CREATE OR REPLACE VIEW ordering.open_gaps AS
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
       (COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1)
   AND (pos.blocked_at IS NULL
        OR agg.lowest OPERATOR(pg_catalog.<) pos.blocked_at);
