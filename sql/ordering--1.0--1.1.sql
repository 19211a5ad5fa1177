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
-- CREATE EXTENSION makes the row of ordering.outbox in ordering.attachments
-- in the restored database too: a dump that carried it would fail there on
-- the primary key.  The dump keeps the rows of users' tables only.
SELECT pg_catalog.pg_extension_config_dump('ordering.attachments',
    'WHERE tbl OPERATOR(pg_catalog.<>) ''ordering.outbox''::pg_catalog.regclass');

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
CREATE FUNCTION ordering.sequence_stored() RETURNS boolean
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_sequence_stored';
COMMENT ON FUNCTION ordering.sequence_stored() IS
    'The WHEN clause of an attached table''s AFTER INSERT trigger: tells the extension that the row just stored keeps its number (it is not given back); always false';
-- Evaluated with the privileges of whoever inserts into an attached table:
-- it only tells this backend that its own row was stored.
GRANT EXECUTE ON FUNCTION ordering.sequence_stored() TO PUBLIC;

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
-- It reads nothing: anyone may compute a key (ordering.check() does, as
-- whoever calls it).
GRANT EXECUTE ON FUNCTION ordering.resource_key(anyelement) TO PUBLIC;

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
        'WHEN (ordering.sequence_stored()) '
        'EXECUTE FUNCTION ordering.sequence_stored_trigger()',
        tbl);
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
    'Before a data-only restore into a database that has the extension (a full restore sets ordering.restoring on the new database instead: README, "Dump and restore"): until ordering.post_restore(), new sessions of this database load sequenced rows with the numbers they carry and assign no new ones';
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

-- dead_letter() may block a resource above position + 1, and the events
-- between may go missing like any others: a gap below the dead letter (the
-- lowest parked event is below it) is a gap the sweeper asks for, as
-- ordering.stats' oldest_gap_age already counts it.  Events parked behind
-- the dead letter wait for it and are no gap.
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

-------------------------------------------------------------------------------
-- Observability
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
    OUT sequence_conflicts bigint,
    OUT reconcile_resources_behind bigint,
    OUT reconcile_events_republished bigint,
    OUT reconcile_events_purged bigint)
    RETURNS SETOF record
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_stream_counters';
COMMENT ON FUNCTION ordering.stream_statistics() IS
    'Per stream of the current database, from shared memory: sequence numbers assigned by committed transactions, supplied numbers refused with SQLSTATE 40001 (counted although their transaction rolled back), and what committed ordering.reconcile() calls found and did (resources behind and missing events no longer in the outbox, dry runs included; events republished); use the view ordering.stream_stats';

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
SELECT s.stream, s.sequences_assigned, r.stats_reset, s.sequence_conflicts,
       s.reconcile_resources_behind, s.reconcile_events_republished,
       s.reconcile_events_purged
  FROM ordering.stream_statistics() s
 CROSS JOIN (SELECT ordering.stats_reset_time() AS stats_reset) r;
COMMENT ON VIEW ordering.stream_stats IS
    'One row per stream of the current database: sequence numbers assigned by committed transactions, supplied numbers refused with SQLSTATE 40001, and reconciliation''s resources found behind, events republished and missing events found purged (committed ordering.reconcile() calls; dry runs count what they found, never a republished event)';

-- The Prometheus text of 1.1: the families of 1.0, then the new ones.
-- oldest_gap_age is 0 when no gap is open; the hot resources are the five
-- busiest of each stream and consumer; the reconciliation families count
-- per stream.
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
           x.reconcile_resources_behind, x.reconcile_events_republished,
           x.reconcile_events_purged,
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
    UNION ALL
    SELECT 19, 0, '', 0, '# HELP ordering_reconcile_resources_behind_total Resources ordering.reconcile() found behind, dry runs included (a resource found again is counted again).'
    UNION ALL
    SELECT 19, 1, '', 0, '# TYPE ordering_reconcile_resources_behind_total counter'
    UNION ALL
    SELECT 19, 2, ss.stream, 0,
           'ordering_reconcile_resources_behind_total{' || ss.label || '} ' || ss.reconcile_resources_behind
      FROM ss
    UNION ALL
    SELECT 20, 0, '', 0, '# HELP ordering_reconcile_events_republished_total Events ordering.reconcile() made unpublished again for the relays to send (none in dry runs).'
    UNION ALL
    SELECT 20, 1, '', 0, '# TYPE ordering_reconcile_events_republished_total counter'
    UNION ALL
    SELECT 20, 2, ss.stream, 0,
           'ordering_reconcile_events_republished_total{' || ss.label || '} ' || ss.reconcile_events_republished
      FROM ss
    UNION ALL
    SELECT 21, 0, '', 0, '# HELP ordering_reconcile_events_purged_total Missing events ordering.reconcile() found no longer in the outbox, never republished; dry runs included.'
    UNION ALL
    SELECT 21, 1, '', 0, '# TYPE ordering_reconcile_events_purged_total counter'
    UNION ALL
    SELECT 21, 2, ss.stream, 0,
           'ordering_reconcile_events_purged_total{' || ss.label || '} ' || ss.reconcile_events_purged
      FROM ss
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
-- Tail loss: reconciliation and ordering.check()
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

-- What a reconcile() call found and did, counted per stream at commit in
-- ordering.stream_stats (src/stats.c); nothing without the library
-- preloaded.
CREATE FUNCTION ordering.count_reconciled(stream text, behind bigint,
                                          republished bigint, purged bigint)
    RETURNS void
    LANGUAGE c VOLATILE STRICT
    AS 'MODULE_PATHNAME', 'ordering_count_reconciled';
COMMENT ON FUNCTION ordering.count_reconciled(text, bigint, bigint, bigint) IS
    'Counts, at commit, the resources one ordering.reconcile() call found behind in a stream, the events it republished and the missing events it found no longer in the outbox (ordering.stream_stats); nothing without the library preloaded; called by ordering.reconcile()';

-- Producer side, step 2: compare the consumer's state with the stream in
-- the listed buckets and republish what the consumer has not got: the
-- outbox rows above its position (and before its lowest parked event), and
-- above its highest parked event.  Rows still unpublished, or published
-- less than "grace" ago, are in flight and left alone; rows locked by a
-- relay too.  Rows no longer in the outbox are counted as purged, never
-- republished.  Streams other than ordering.outbox are only compared.
-- The totals of the rows returned go to the statistics of the stream:
-- resources behind and purged events always, republished events unless it
-- is a dry run.
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
    n_behind bigint := 0;
    n_republished bigint := 0;
    n_purged bigint := 0;
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

    FOR resource_id, "position", last_seq, status, republished, in_flight, purged IN
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
     ORDER BY j.resource_id
    LOOP
        IF status OPERATOR(pg_catalog.=) 'behind' THEN
            n_behind := n_behind OPERATOR(pg_catalog.+) 1;
            n_republished := n_republished OPERATOR(pg_catalog.+) COALESCE(republished, 0);
            n_purged := n_purged OPERATOR(pg_catalog.+) COALESCE(purged, 0);
        END IF;
        RETURN NEXT;
    END LOOP;
    PERFORM ordering.count_reconciled(stream, n_behind,
                                      CASE WHEN dry_run THEN 0 ELSE n_republished END,
                                      n_purged);
END
$$;
COMMENT ON FUNCTION ordering.reconcile(jsonb, integer, integer[], text, text, text[], interval, boolean) IS
    'Reconciliation, producer side: compares the consumer''s state (rows of ordering.consumer_state() as JSON) with the stream in the listed buckets and republishes the outbox rows the consumer has not got, leaving rows in flight alone; one row per resource looked at, with what was done';

-- The tables attached now (ordering.attachments), with whether their
-- sequencing trigger is enabled; a partitioned table stands for its
-- partitions.  ordering.check() finds the attached tables here and nowhere
-- else.
CREATE VIEW ordering.attached_tables AS
SELECT a.tbl AS table_name,
       a.resource_column,
       a.sequence_column,
       a.stream,
       COALESCE((SELECT t.tgenabled OPERATOR(pg_catalog.<>) 'D'
                   FROM pg_catalog.pg_trigger t
                  WHERE t.tgrelid OPERATOR(pg_catalog.=) a.tbl
                    AND t.tgname OPERATOR(pg_catalog.=) 'ordering_sequence'), false) AS enabled
  FROM ordering.attachments a
 WHERE a.attached;
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
        -- the resource as the trigger keys it (ordering.resource_key)
        RETURN QUERY EXECUTE pg_catalog.format($q$
            SELECT 'counter_behind_table'::pg_catalog.text,
                   pg_catalog.format('table %%s (stream %%s), resource %%s: highest seq %%s, counter %%s',
                                     $1, pg_catalog.quote_literal($2), pg_catalog.quote_literal(x.res),
                                     x.hi, COALESCE(s.last_seq::pg_catalog.text, 'missing'))
              FROM (SELECT ordering.resource_key(t.%1$I) AS res, pg_catalog.max(t.%2$I) AS hi
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
    ordering.count_reconciled(text, bigint, bigint, bigint),
    ordering.reconcile(jsonb, integer, integer[], text, text, text[], interval, boolean),
    ordering.check(double precision, bigint)
    FROM PUBLIC;

-------------------------------------------------------------------------------
-- Failover-safe publishing
-------------------------------------------------------------------------------

-- A relay calls it after reading what it will publish and before publishing
-- it (claim_unpublished(..., replicated => true) does): it returns once every
-- connected standby has flushed the WAL of everything the caller has seen.
CREATE FUNCTION ordering.wait_for_standbys(timeout interval DEFAULT '10s')
    RETURNS pg_catalog.pg_lsn
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_wait_for_standbys';
COMMENT ON FUNCTION ordering.wait_for_standbys(interval) IS
    'Waits until every connected streaming standby has flushed the WAL of everything this transaction has seen, and returns that WAL position; SQLSTATE 55000 when that has not happened within the timeout';
REVOKE EXECUTE ON FUNCTION ordering.wait_for_standbys(interval) FROM PUBLIC;

-- claim_unpublished gains replicated and timeout.  An added overload would
-- make claim_unpublished(100) ambiguous, so the 1.0 function is replaced;
-- every call it accepted means what it meant.
CREATE FUNCTION ordering.claim_unpublished(batch_size integer DEFAULT 100,
                                           replicated boolean DEFAULT false,
                                           timeout interval DEFAULT '10s')
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
    IF replicated IS NULL OR timeout IS NULL THEN
        RAISE EXCEPTION 'replicated and timeout must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF timeout OPERATOR(pg_catalog.<) '0'::pg_catalog.interval THEN
        RAISE EXCEPTION 'timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The rows are handed to the caller only when the function returns.
    RETURN QUERY
    SELECT o.* FROM ordering.outbox o
     WHERE o.published_at IS NULL
     ORDER BY o.id
     LIMIT batch_size
       FOR UPDATE SKIP LOCKED;
    -- Every commit whose rows were just read or locked is in the WAL before
    -- this point: wait until the standbys have it (see wait_for_standbys).
    IF replicated AND FOUND THEN
        PERFORM ordering.wait_for_standbys(timeout);
    END IF;
END
$$;
COMMENT ON FUNCTION ordering.claim_unpublished(integer, boolean, interval) IS
    'For relays: up to batch_size unpublished outbox rows, locked until the end of the caller''s transaction and skipped by other relays; with replicated, only once every connected standby has flushed them (SQLSTATE 55000 after timeout)';
REVOKE EXECUTE ON FUNCTION ordering.claim_unpublished(integer, boolean, interval) FROM PUBLIC;

-- An upgraded database keeps who may claim: whoever could execute the 1.0
-- function may execute the new one.  Those grants are the users', not the
-- extension's, so they are kept out of the function's initial privileges,
-- which pg_dump leaves out of a dump.
DO $$
DECLARE
    old_fn pg_catalog.regprocedure := 'ordering.claim_unpublished(integer)';
    new_fn pg_catalog.regprocedure := 'ordering.claim_unpublished(integer, boolean, interval)';
    initial pg_catalog.aclitem[];
    g record;
BEGIN
    SELECT p.proacl INTO initial FROM pg_catalog.pg_proc p
     WHERE p.oid OPERATOR(pg_catalog.=) new_fn;
    FOR g IN
        SELECT e.grantee, e.is_grantable
          FROM pg_catalog.pg_proc p,
               pg_catalog.aclexplode(COALESCE(p.proacl, pg_catalog.acldefault('f', p.proowner))) e
         WHERE p.oid OPERATOR(pg_catalog.=) old_fn
           AND e.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
           AND e.grantee OPERATOR(pg_catalog.<>) p.proowner
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', new_fn,
            CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                 ELSE g.grantee::pg_catalog.regrole::pg_catalog.text END,
            CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
    UPDATE pg_catalog.pg_init_privs i SET initprivs = initial
     WHERE i.objoid OPERATOR(pg_catalog.=) new_fn
       AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
       AND i.objsubid OPERATOR(pg_catalog.=) 0;
END
$$;
DROP FUNCTION ordering.claim_unpublished(integer);

-------------------------------------------------------------------------------
-- Batch consumers and the relay wake-up
-------------------------------------------------------------------------------

-- Set-based consumer calls (src/batch.c, docs/batch.md): for each event of
-- the arrays, what the single call would give, as if the events had been
-- handed to single calls one after another in input order; ord is the
-- event's position in the arrays.
CREATE FUNCTION ordering.deliver_batch(consumer text, resource_ids text[], seqs bigint[],
                                       payloads jsonb[])
    RETURNS TABLE (ord integer, seq bigint, payload jsonb)
    LANGUAGE c VOLATILE ROWS 100 AS 'MODULE_PATHNAME', 'ordering_deliver_batch';
COMMENT ON FUNCTION ordering.deliver_batch(text, text[], bigint[], jsonb[]) IS
    'Step consumers, a batch per call: for each event (ord, its position in the arrays, in input order) the rows deliver() would return for it, as if the events had been delivered one after another in that order';
REVOKE EXECUTE ON FUNCTION ordering.deliver_batch(text, text[], bigint[], jsonb[]) FROM PUBLIC;

CREATE FUNCTION ordering.deliver_batch(consumer text, resource_ids text[], seqs bigint[],
                                       payloads jsonb[], handler regprocedure,
                                       on_error text DEFAULT 'raise')
    RETURNS integer
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_deliver_batch_handler';
COMMENT ON FUNCTION ordering.deliver_batch(text, text[], bigint[], jsonb[], regprocedure, text) IS
    'Step consumers, a batch per call: each event as deliver(..., handler, on_error) would take it, resource by resource; returns how many events the handler ran for';
REVOKE EXECUTE ON FUNCTION ordering.deliver_batch(text, text[], bigint[], jsonb[], regprocedure, text) FROM PUBLIC;

CREATE FUNCTION ordering.apply_batch(consumer text, resource_ids text[], seqs bigint[])
    RETURNS TABLE (ord integer, applied boolean)
    LANGUAGE c VOLATILE ROWS 100 AS 'MODULE_PATHNAME', 'ordering_apply_batch';
COMMENT ON FUNCTION ordering.apply_batch(text, text[], bigint[]) IS
    'State consumers, a batch per call: for each event (ord, its position in the arrays, in input order) what apply_if_newer() would return for it, as if the events had been applied one after another in that order';
REVOKE EXECUTE ON FUNCTION ordering.apply_batch(text, text[], bigint[]) FROM PUBLIC;

-- The relay wake-up (src/wakeup.c): with it on, every transaction that
-- stores rows in the table sends NOTIFY ordering_outbox, '<stream>' at
-- commit.  Kept with the attachment; detaching and attaching again keeps it.
ALTER TABLE ordering.attachments
    ADD COLUMN wake_relays boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN ordering.attachments.wake_relays IS
    'Whether each transaction that stores rows in the table sends NOTIFY ordering_outbox with the stream as payload at commit (ordering.wake_relays())';

CREATE FUNCTION ordering.wake_relays(tbl regclass, enabled boolean DEFAULT true)
    RETURNS void
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_wake_relays';
COMMENT ON FUNCTION ordering.wake_relays(regclass, boolean) IS
    'Turns the relay wake-up of an attached table on or off: with it on, each transaction that stores rows in the table sends NOTIFY ordering_outbox with the table''s stream as payload when it commits';
REVOKE EXECUTE ON FUNCTION ordering.wake_relays(regclass, boolean) FROM PUBLIC;

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
        'ordering.wake_relays(regclass, boolean), '
        'ordering.create_sequencing_triggers(regclass, name, name, text), '
        'ordering.sequence_trigger(), ordering.sequence_stored_trigger(), '
        'ordering.sequence_guard(), ordering.resource_key(anyelement), '
        'ordering.claim_unpublished(integer, boolean, interval), '
        'ordering.wait_for_standbys(interval), '
        'ordering.mark_published(bigint[]), ordering.republish(text, bigint, bigint), '
        'ordering.purge_published(interval), '
        -- reconciliation, producer side
        'ordering.stream_summary(text, integer, text, text[]), '
        'ordering.reconcile(jsonb, integer, integer[], text, text, text[], interval, boolean), '
        'ordering.count_reconciled(text, bigint, bigint, bigint), '
        'ordering.reconcile_check_arguments(integer, text), '
        'ordering.reconcile_check_stream(text, text[]), '
        'ordering.reconcile_producer_resources(text, text, text[]), '
        'ordering.resource_bucket(text, integer), ordering.resource_fingerprint(text, bigint)',
        -- the outbox is written by plain SQL (emit, relays, retention)
        'SELECT, INSERT, UPDATE, DELETE ON ordering.outbox',
        'SELECT ON ordering.sequences',
        -- attach() and detach() keep the registry of attached tables
        'SELECT, INSERT, UPDATE ON ordering.attachments');
END
$$;

COMMENT ON FUNCTION ordering.grant_producer(regrole) IS
    'Grants what a producer and its relays need: emit, next/last_sequence, attach/detach, wake_relays, the relay functions (claim_unpublished, wait_for_standbys, mark_published, republish, purge_published), the producer side of reconciliation, and the outbox';

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
        'ordering.deliver_batch(text, text[], bigint[], jsonb[]), '
        'ordering.deliver_batch(text, text[], bigint[], jsonb[], regprocedure, text), '
        'ordering.apply_batch(text, text[], bigint[]), '
        'ordering.position(text, text), ordering.newer_only(), '
        -- reconciliation, consumer side
        'ordering.consumer_summary(text, integer, text), '
        'ordering.consumer_state(text, integer, integer[], text), '
        'ordering.reconcile_check_arguments(integer, text), '
        'ordering.resource_bucket(text, integer), ordering.resource_fingerprint(text, bigint)',
        'SELECT ON ordering.positions, ordering.gap_requests, ordering.parked, '
        'ordering.dead_letter_events, ordering.dead_letters');
END
$$;
COMMENT ON FUNCTION ordering.grant_consumer(regrole) IS
    'Grants what a consumer needs: apply_if_newer, deliver (all forms), deliver_batch, apply_batch, dead_letter, position, the newer_only trigger, and read access to its state';

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
        'ordering.sweep_gaps(), ordering.stats_reset(), '
        'ordering.check(double precision, bigint), ordering.resource_key(anyelement)',
        'SELECT, INSERT, UPDATE, DELETE ON ordering.gap_requests',
        -- what ordering.check() reads
        'SELECT ON ordering.sequences, ordering.attachments, ordering.attached_tables');
END
$$;
COMMENT ON FUNCTION ordering.grant_operator(regrole) IS
    'Grants what an operator (and the gap-sweeper role) needs: the consumer and monitoring sets plus skip_gap, retry_dead_letter, discard_dead_letter, sweep_gaps, stats_reset and check';


-- Roles given a set by 1.0 get the 1.1 objects of that set, so an upgrade
-- keeps them working: a role that may execute the set's characteristic
-- 1.0 function (attach for producers, deliver for consumers, skip_gap for
-- operators) gets the new objects of the set, and nothing else.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT DISTINCT s.role_set, a.grantee::pg_catalog.regrole AS grantee
          FROM (VALUES ('producer', 'ordering.attach(regclass, name, name, text)'),
                       ('consumer', 'ordering.deliver(text, text, bigint, jsonb)'),
                       ('operator', 'ordering.skip_gap(text, text)')) s(role_set, fn)
          JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) s.fn::pg_catalog.regprocedure
         CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
         WHERE a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
           AND a.grantee OPERATOR(pg_catalog.<>) 0
           AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
    LOOP
        IF r.role_set OPERATOR(pg_catalog.=) 'producer' THEN
            PERFORM ordering.grant_privileges(r.grantee,
                'EXECUTE ON FUNCTION ordering.create_sequencing_triggers(regclass, name, name, text), '
                'ordering.sequence_stored_trigger(), ordering.sequence_guard(), '
                'ordering.wake_relays(regclass, boolean), '
                'ordering.resource_key(anyelement), '
                'ordering.stream_summary(text, integer, text, text[]), '
                'ordering.reconcile(jsonb, integer, integer[], text, text, text[], interval, boolean), '
                'ordering.count_reconciled(text, bigint, bigint, bigint), '
                'ordering.reconcile_check_arguments(integer, text), '
                'ordering.reconcile_check_stream(text, text[]), '
                'ordering.reconcile_producer_resources(text, text, text[]), '
                'ordering.resource_bucket(text, integer), ordering.resource_fingerprint(text, bigint)',
                'SELECT, INSERT, UPDATE ON ordering.attachments');
        ELSIF r.role_set OPERATOR(pg_catalog.=) 'consumer' THEN
            PERFORM ordering.grant_privileges(r.grantee,
                'EXECUTE ON FUNCTION ordering.deliver(text, text, bigint, jsonb, regprocedure, text), '
                'ordering.dead_letter(text, text, bigint, jsonb, text), '
                'ordering.deliver_batch(text, text[], bigint[], jsonb[]), '
                'ordering.deliver_batch(text, text[], bigint[], jsonb[], regprocedure, text), '
                'ordering.apply_batch(text, text[], bigint[]), '
                'ordering.consumer_summary(text, integer, text), '
                'ordering.consumer_state(text, integer, integer[], text), '
                'ordering.reconcile_check_arguments(integer, text), '
                'ordering.resource_bucket(text, integer), ordering.resource_fingerprint(text, bigint)',
                'SELECT ON ordering.dead_letter_events, ordering.dead_letters');
        ELSE
            PERFORM ordering.grant_privileges(r.grantee,
                'EXECUTE ON FUNCTION ordering.retry_dead_letter(text, text), '
                'ordering.retry_dead_letter(text, text, regprocedure), '
                'ordering.discard_dead_letter(text, text), '
                'ordering.check(double precision, bigint), ordering.resource_key(anyelement)',
                'SELECT ON ordering.sequences, ordering.attachments, ordering.attached_tables');
        END IF;
    END LOOP;
END
$$;
