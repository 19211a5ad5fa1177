/* ordering 1.1 -> 1.2 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ordering UPDATE TO '1.2'" to load this file. \quit

/*
 * A new database runs ordering--1.0.sql, ordering--1.0--1.1.sql and then this
 * script, so a fresh install and an updated one are made by the same
 * statements.  Each section below is one topic; a section never redefines
 * what a later one moves or drops.
 */

/*
 * The internal schema: functions the extension's own objects call and users
 * do not (as Citus keeps citus_internal).  Its functions are not part of the
 * contract and may change in any release.
 */
CREATE SCHEMA ordering_internal;
COMMENT ON SCHEMA ordering_internal IS
	'internal functions of the ordering extension: not for direct use; they may change in any release';
-- Functions of the public schema run as their caller and call these: every
-- role may look up the schema, and each function's EXECUTE privilege says
-- who may call it (revoked from PUBLIC unless any caller may).
GRANT USAGE ON SCHEMA ordering_internal TO PUBLIC;

-- The roles given a privilege set by ordering.grant_producer() (or
-- grant_consumer(), grant_monitor(), grant_operator()), recognized, as 1.1
-- does, by EXECUTE on one function of the set, granted by anyone but to
-- neither PUBLIC nor the owner.  The sections below give such roles what
-- the set gains in 1.2; the script drops this function at its end.
CREATE FUNCTION ordering_internal.roles_holding(member regprocedure)
    RETURNS SETOF regrole
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
    SELECT DISTINCT a.grantee::pg_catalog.regrole
      FROM pg_catalog.pg_proc p
     CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
     WHERE p.oid OPERATOR(pg_catalog.=) member
       AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
       AND a.grantee OPERATOR(pg_catalog.<>) 0
       AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
$$;

-- ------------------------------------------------------------------------
-- Hardening: restores, the extension's own tables, keys, attach
-- ------------------------------------------------------------------------

-- Keys (src/resource_key.c): a resource type whose text depends on a
-- setting the key does not fix (money, the reg* types that print names by
-- search_path) is refused at attach() and at every insert; a numeric is
-- keyed without the trailing zeros of its fraction and a float zero as
-- "0", so equal values are one resource.
CREATE FUNCTION ordering_internal.check_resource_type(tbl regclass, resource_column name)
    RETURNS void
    LANGUAGE c STRICT STABLE
    AS 'MODULE_PATHNAME', 'ordering_check_resource_type';
COMMENT ON FUNCTION ordering_internal.check_resource_type(regclass, name) IS
    'Internal to ordering.attach(): refuses (0A000) a resource column whose type''s text depends on a setting the key does not fix (money, reg* types printed by search_path)';
-- It reads only the catalog: whoever attaches may call it.
GRANT EXECUTE ON FUNCTION ordering_internal.check_resource_type(regclass, name) TO PUBLIC;

-- Counters keyed the 1.1 way by a numeric with trailing zeros (1.50) or a
-- negative float zero (-0) move to the 1.2 key (1.5, 0); where both forms
-- had a counter, the higher value is kept (an insert merges: sequences_load).
DO $$
DECLARE
    att record;
BEGIN
    FOR att IN
        SELECT a.stream, b.typ
          FROM ordering.attachments a
          JOIN pg_catalog.pg_attribute c
            ON c.attrelid OPERATOR(pg_catalog.=) a.tbl
           AND c.attname OPERATOR(pg_catalog.=) a.resource_column
           AND NOT c.attisdropped
         CROSS JOIN LATERAL (
               WITH RECURSIVE d(typ, depth) AS (
                   SELECT c.atttypid, 0
                   UNION ALL
                   SELECT t.typbasetype, d.depth OPERATOR(pg_catalog.+) 1
                     FROM pg_catalog.pg_type t JOIN d ON t.oid OPERATOR(pg_catalog.=) d.typ
                    WHERE t.typtype OPERATOR(pg_catalog.=) 'd')
               SELECT d.typ FROM d ORDER BY d.depth DESC LIMIT 1) b
         WHERE b.typ IN ('pg_catalog.numeric'::pg_catalog.regtype,
                         'pg_catalog.float4'::pg_catalog.regtype,
                         'pg_catalog.float8'::pg_catalog.regtype)
    LOOP
        WITH old AS (
            DELETE FROM ordering.sequences s
             WHERE s.stream OPERATOR(pg_catalog.=) att.stream
               AND CASE WHEN att.typ OPERATOR(pg_catalog.=) 'pg_catalog.numeric'::pg_catalog.regtype
                        THEN s.resource_id OPERATOR(pg_catalog.~) '^-?[0-9]+\.[0-9]*0$'
                        ELSE s.resource_id OPERATOR(pg_catalog.=) '-0' END
            RETURNING s.resource_id, s.last_seq)
        INSERT INTO ordering.sequences (stream, resource_id, last_seq)
        SELECT att.stream,
               CASE WHEN att.typ OPERATOR(pg_catalog.=) 'pg_catalog.numeric'::pg_catalog.regtype
                    THEN ordering.resource_key(o.resource_id::pg_catalog.numeric)
                    ELSE '0' END,
               pg_catalog.max(o.last_seq)
          FROM old o GROUP BY 2;
    END LOOP;
END
$$;

-- Attach: a table that holds numbers already continues after them.
CREATE FUNCTION ordering_internal.sequencing_trigger(tbl regclass,
                                                     OUT resource_column name,
                                                     OUT sequence_column name,
                                                     OUT stream text)
    RETURNS record
    LANGUAGE c STRICT STABLE
    AS 'MODULE_PATHNAME', 'ordering_sequencing_trigger';
COMMENT ON FUNCTION ordering_internal.sequencing_trigger(regclass) IS
    'What the sequencing trigger of a table says (its columns and stream), registered or not; NULLs if it has none';
-- pg_trigger shows the same to anyone.
GRANT EXECUTE ON FUNCTION ordering_internal.sequencing_trigger(regclass) TO PUBLIC;

CREATE FUNCTION ordering_internal.seed_counters(tbl regclass) RETURNS bigint
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_seed_counters';
COMMENT ON FUNCTION ordering_internal.seed_counters(regclass) IS
    'Internal to ordering.attach() and ordering.post_restore(): raises the counter of every resource of the table to its highest number there, in the stream its sequencing trigger names (never lowers one); needs the TRIGGER privilege on the table; returns how many resources it has';
-- It raises only the stream the table's own trigger names, to numbers the
-- table holds, for whoever may attach the table (TRIGGER privilege).
GRANT EXECUTE ON FUNCTION ordering_internal.seed_counters(regclass) TO PUBLIC;

-- attach(), detach() and post_restore() of 1.2 are defined once, in the
-- section "Citus: producers", with the changes of this section and the
-- next: attach() checks the
-- resource type and seeds the counters from the table's rows; detach()
-- and attach() name the step for triggers restored without their registry
-- row; post_restore() makes the triggers and the registry agree before it
-- raises the counters (pg_restore -j may load the registry after the
-- tables: the sequencing trigger does not consult it in restore mode).

-- The extension's own tables (src/protect.c): ALTER TABLE commands that
-- would break a promise are refused before they run.
CREATE FUNCTION ordering_internal.protect_tables() RETURNS event_trigger
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'ordering_protect_tables';
COMMENT ON FUNCTION ordering_internal.protect_tables() IS
    'Event trigger: refuses SET UNLOGGED, added, dropped, retyped or renamed columns, NOT NULL changes, another access method, a rename or another schema, inheritance and partitioning of the extension''s own tables (0A000), except in CREATE or ALTER EXTENSION';
REVOKE EXECUTE ON FUNCTION ordering_internal.protect_tables() FROM PUBLIC;
CREATE EVENT TRIGGER ordering_protect_tables ON ddl_command_start
    WHEN TAG IN ('ALTER TABLE')
    EXECUTE FUNCTION ordering_internal.protect_tables();

-- A table of the extension made unlogged under 1.1 is logged again: the
-- storage layer would refuse it (a crash empties it).
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT c.oid::pg_catalog.regclass AS tbl
          FROM pg_catalog.pg_depend d
          JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
          JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
         WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
           AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
           AND d.deptype OPERATOR(pg_catalog.=) 'e'
           AND e.extname OPERATOR(pg_catalog.=) 'ordering'
           AND c.relkind IN ('r', 'p')
           AND c.relpersistence OPERATOR(pg_catalog.=) 'u'
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE %s SET LOGGED', t.tbl);
        RAISE NOTICE 'table % of the extension ordering was unlogged: it is logged again', t.tbl;
    END LOOP;
END
$$;

-- (end of section)

-- ------------------------------------------------------------------------
-- Hardening: privileges, self-checks, operations
-- ------------------------------------------------------------------------

-- Producers: the registry of attached tables.  It says
-- which tables are sequenced and in which stream, so a role that writes it
-- can switch off every stream or move its table into another's.  No set
-- writes it with SQL any more: attach() and detach() write it through two
-- C functions (src/attachments.c) that record only what the catalog says
-- (the sequencing trigger with its arguments, or its absence), and refuse
-- with 42501 to attach a table to a stream whose other tables the caller
-- does not own.
CREATE FUNCTION ordering_internal.attachment_register(tbl regclass, stream text,
                                                      resource_column name,
                                                      sequence_column name)
    RETURNS void
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_attachment_register';
COMMENT ON FUNCTION ordering_internal.attachment_register(regclass, text, name, name) IS
    'Internal to ordering.attach(): records the table, which has the sequencing trigger with these arguments, as attached to the stream; refuses (42501) a caller who does not own the other tables of that stream';
CREATE FUNCTION ordering_internal.attachment_unregister(tbl regclass)
    RETURNS text
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_attachment_unregister';
COMMENT ON FUNCTION ordering_internal.attachment_unregister(regclass) IS
    'Internal to ordering.detach(): records the table, whose sequencing trigger is gone, as detached; returns the stream it had';
REVOKE EXECUTE ON FUNCTION ordering_internal.attachment_register(regclass, text, name, name),
    ordering_internal.attachment_unregister(regclass) FROM PUBLIC;

-- ordering.attach() of 1.2 is defined once, in the section "Citus: producers",
-- with this section's changes.

-- ordering.detach() of 1.2 is defined once, in the section "Citus: producers",
-- with this section's changes.
COMMENT ON FUNCTION ordering.detach(regclass) IS
    'Removes the sequencing triggers from a table and says which stream it had; its counters are kept, and attaching it again continues the stream';

-- Privileges of the producer set: it reads the
-- registry of attached tables and writes it only through attach() and
-- detach().
-- ordering.grant_producer() of 1.2 is defined once, in the section "Citus: producers",
-- with this section's changes.

-- Roles that have the producer set (recognized, as 1.1 did, by EXECUTE on
-- attach()) lose the writes of the registry, and get what attach() and
-- detach() now call.
DO $$
DECLARE
    grantee regrole;
BEGIN
    FOR grantee IN SELECT * FROM ordering_internal.roles_holding('ordering.attach(regclass, name, name, text)') LOOP
        EXECUTE pg_catalog.format('REVOKE INSERT, UPDATE ON ordering.attachments FROM %s', grantee);
        PERFORM ordering.grant_privileges(grantee,
            'EXECUTE ON FUNCTION ordering_internal.attachment_register(regclass, text, name, name), '
            'ordering_internal.attachment_unregister(regclass)');
    END LOOP;
END
$$;

-- Self-checks: ordering.check() covers every invariant
-- between the extension's tables, and post_restore() and check() report an
-- attached table whose columns changed instead of failing on it.

-- What is wrong with an attached table's columns, or NULL: the columns
-- attach() was given must still exist, the sequence column as a bigint.
-- (A renamed or dropped column fails every insert, 42703, and every query
-- that names it.)
CREATE FUNCTION ordering_internal.attachment_problem(tbl regclass, resource_column name,
                                                     sequence_column name)
    RETURNS text
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT CASE
           WHEN r.attnum IS NULL THEN
               pg_catalog.format('resource column %I does not exist', $2)
           WHEN s.attnum IS NULL THEN
               pg_catalog.format('sequence column %I does not exist', $3)
           WHEN s.atttypid OPERATOR(pg_catalog.<>) 'pg_catalog.int8'::pg_catalog.regtype THEN
               pg_catalog.format('sequence column %I is of type %s, not bigint', $3,
                                 s.atttypid::pg_catalog.regtype)
       END
  FROM (SELECT) AS one
  LEFT JOIN pg_catalog.pg_attribute r
    ON r.attrelid OPERATOR(pg_catalog.=) $1 AND r.attname OPERATOR(pg_catalog.=) $2
   AND r.attnum OPERATOR(pg_catalog.>) 0 AND NOT r.attisdropped
  LEFT JOIN pg_catalog.pg_attribute s
    ON s.attrelid OPERATOR(pg_catalog.=) $1 AND s.attname OPERATOR(pg_catalog.=) $3
   AND s.attnum OPERATOR(pg_catalog.>) 0 AND NOT s.attisdropped
$$;
COMMENT ON FUNCTION ordering_internal.attachment_problem(regclass, name, name) IS
    'Internal to ordering.check() and ordering.post_restore(): why the resource and sequence columns an attached table was attached with cannot be used any more (renamed, dropped, retyped), or NULL';
REVOKE EXECUTE ON FUNCTION ordering_internal.attachment_problem(regclass, name, name) FROM PUBLIC;

-- ordering.check() of 1.2: the checks of 1.1, and
--   - of each attached table, whether its triggers are as attach() made
--     them (missing, disabled, incomplete), and whether its columns still
--     are (a changed table is reported and skipped, where 1.1 failed with
--     42703 for the whole database); a resource holding one number twice;
--   - a sequencing trigger that attach() did not register (inserts fail);
--   - the block of a resource by its dead letter against the dead letter:
--     a dead letter whose resource is not blocked at it (the block cleared,
--     the position row deleted, another seq), and a block without a dead
--     letter (it was deleted: the resource stalls with nothing shown).
-- As in 1.1, each check is one statement, judging one snapshot, and reads
-- one table and looks each row up in another by primary key.  One check
-- reads a table the others never start from: blocks without a dead letter
-- are found only by reading ordering.positions (sample_percent samples it).
-- ordering.check() of 1.2 is defined once, in the section "Citus: producers",
-- with this section's changes.
COMMENT ON FUNCTION ordering.check(double precision, bigint) IS
    'Verifies every invariant between the extension''s tables and of the attached tables (docs/anti-entropy.md lists them: triggers and columns of attached tables, counters against their rows, parked events, gap requests and dead letters against positions and blocks, statistics gauges against their tables); one row per violation, none when consistent';

-- post_restore() of 1.2 (with the previous section's changes): an attached
-- table whose columns were renamed, dropped or retyped no longer fails the
-- whole call (42703): it is named in a WARNING and left, and every other
-- counter is raised (the CONTINUE line in the last loop).
CREATE FUNCTION ordering_internal.attachment_restorable(tbl regclass, stream text,
                                                        resource_column name,
                                                        sequence_column name)
    RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    problem text := ordering_internal.attachment_problem(tbl, resource_column, sequence_column);
BEGIN
    IF problem IS NOT NULL THEN
        RAISE WARNING 'the counters of table % (stream %) were not raised: %', tbl,
            pg_catalog.quote_literal(stream), problem
            USING HINT = 'Give the table back the columns it was attached with and call ordering.post_restore() again, or detach it.';
    END IF;
    RETURN problem IS NULL;
END
$$;
COMMENT ON FUNCTION ordering_internal.attachment_restorable(regclass, text, name, name) IS
    'Internal to ordering.post_restore(): whether the counters of an attached table can be raised from its rows; a WARNING names the table when its columns changed';
REVOKE EXECUTE ON FUNCTION ordering_internal.attachment_restorable(regclass, text, name, name) FROM PUBLIC;

-- ordering.post_restore() of 1.2 is defined once, in the section "Citus: producers",
-- with this section's changes.
COMMENT ON FUNCTION ordering.post_restore() IS
    'Call after pg_restore: checks that the tables with sequencing triggers and ordering.attachments agree (registering a table whose row was not restored), raises every counter to the highest number restored in its attached table and ends restore mode; safe to call again';

-- The operator set may read ordering.outbox, which ordering.check()
-- checks like every attached table (1.1 warned "table ordering.outbox was
-- not checked" to every operator), and runs check()'s helper.
CREATE OR REPLACE FUNCTION ordering.grant_operator(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering.grant_consumer(role);
    PERFORM ordering.grant_monitor(role);
    PERFORM ordering_internal.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.skip_gap(text, text), '
        'ordering.retry_dead_letter(text, text), '
        'ordering.retry_dead_letter(text, text, regprocedure), '
        'ordering.discard_dead_letter(text, text), '
        'ordering.sweep_gaps(), ordering.stats_reset(), '
        'ordering.check(double precision, bigint), ordering.resource_key(anyelement)',
        'SELECT, INSERT, UPDATE, DELETE ON ordering.gap_requests',
        -- what ordering.check() reads: the extension's tables, and its own
        -- attached table (users' attached tables need SELECT granted by
        -- their owners, or check() skips them with a WARNING)
        'SELECT ON ordering.sequences, ordering.attachments, ordering.attached_tables, '
        'ordering.outbox',
        'EXECUTE ON FUNCTION ordering_internal.attachment_problem(regclass, name, name)');
END
$$;
COMMENT ON FUNCTION ordering.grant_operator(regrole) IS
    'Grants what an operator (and the gap-sweeper role) needs: the consumer and monitoring sets plus skip_gap, retry_dead_letter, discard_dead_letter, sweep_gaps, stats_reset and check (with read access to ordering.outbox, which it checks)';

-- Roles that have the operator set (EXECUTE on check()) get the same.
DO $$
DECLARE
    grantee regrole;
BEGIN
    FOR grantee IN SELECT * FROM ordering_internal.roles_holding('ordering.check(double precision, bigint)') LOOP
        PERFORM ordering.grant_privileges(grantee,
            'SELECT ON ordering.outbox',
            'EXECUTE ON FUNCTION ordering_internal.attachment_problem(regclass, name, name)');
    END LOOP;
END
$$;

-- The consumer set is one trust domain per database: a
-- role with it may act as any consumer of the database (consumer names are
-- labels that keep the positions of different readers apart, not owners),
-- reads every consumer's positions, parked events and dead letters, and
-- writes none of the tables with SQL: the functions are its only way to
-- change them.  Consumers that must not see or move each other's state
-- belong in separate databases (docs/privileges.md).  1.0 gave the set
-- INSERT and DELETE on ordering.parked and DELETE on ordering.gap_requests
-- for functions that no longer write with SQL, and updates kept them:
-- roles that have the set (EXECUTE on deliver()) lose them, but for the
-- operators' own rights on ordering.gap_requests (sweep_gaps() writes it
-- with SQL).
COMMENT ON FUNCTION ordering.grant_consumer(regrole) IS
    'Grants what a consumer needs: apply_if_newer, deliver (all forms), deliver_batch, apply_batch, dead_letter, position, the newer_only trigger, and read access to the consumer tables; for every consumer of the database (one trust domain per database: docs/privileges.md)';

DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT h.grantee,
               pg_catalog.has_function_privilege(h.grantee, 'ordering.skip_gap(text, text)',
                                                 'EXECUTE') AS operator
          FROM ordering_internal.roles_holding('ordering.deliver(text, text, bigint, jsonb)') AS h(grantee)
    LOOP
        EXECUTE pg_catalog.format('REVOKE INSERT, DELETE ON ordering.parked FROM %s', r.grantee);
        IF NOT r.operator THEN
            EXECUTE pg_catalog.format('REVOKE DELETE ON ordering.gap_requests FROM %s', r.grantee);
        END IF;
    END LOOP;
END
$$;

-- Metrics: one source of metric
-- definitions, and plans that never JIT.
--
-- ordering_internal.metric_families() defines every metric family of
-- ordering.metrics() and of monitoring/queries.yaml once: its name, type,
-- help text, the rows it is read from (a source of
-- ordering_internal.metric_sources()), the block of the exporter's
-- configuration it goes into, and the SQL expression of its value over a
-- row "s" of its source.  ordering.metrics() reads the samples these give
-- (ordering_internal.metric_samples()); the exporter's configuration is
-- generated from the same rows (ordering_internal.exporter_queries()),
-- and sql/metrics.sql fails when the file in monitoring/ differs from it.
--
-- Plans: a set-returning function is estimated at 1,000 rows unless it
-- says otherwise, so the hot resources of every consumer came to a million
-- estimated rows, far past jit_above_cost: metrics() spent seconds
-- compiling what runs in milliseconds.  The functions below the statistics
-- now state what they return (a few consumers and streams, n hot
-- resources), and the functions a scraper calls run with jit = off.
ALTER FUNCTION ordering.consumer_counters() ROWS 10;
ALTER FUNCTION ordering.stream_counters() ROWS 10;
ALTER FUNCTION ordering.consumer_statistics() ROWS 10;
ALTER FUNCTION ordering.stream_statistics() ROWS 10;
ALTER FUNCTION ordering.hot_resources(text, text, integer) ROWS 10;

-- The rows metrics are read from: a table, view or subquery (its FROM
-- item), and the columns of its rows that are labels (with descriptions
-- and a note for the exporter's configuration).
CREATE FUNCTION ordering_internal.metric_sources()
    RETURNS TABLE (ord integer, source text, labels text[], label_help text[], noun text,
                   note text, from_item text)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 5
    SET search_path = pg_catalog, pg_temp
    AS $$
VALUES
    (1, 'consumer', '{consumer}'::text[], '{Consumer name}'::text[], 'consumer', NULL::text,
     'ordering.stats'),
    (2, 'stream', '{stream}', '{Stream name}', 'stream', NULL,
     'ordering.stream_stats'),
    (3, 'outbox', '{}', '{}', 'outbox', NULL,
     'ordering.outbox_lag'),
    (4, 'stream_hot', '{stream,resource}', '{Stream name,Resource id}', 'stream',
     E'The five busiest resources of each stream: resource ids become label\n'
     'values, leave this block out if they must not leave the database.',
     E'(SELECT x.stream, h.resource_id AS resource, h.events\n'
     '          FROM ordering.stream_stats x\n'
     '         CROSS JOIN LATERAL ordering.hot_resources(''stream'', x.stream, 5) h)'),
    (5, 'consumer_hot', '{consumer,resource}', '{Consumer name,Resource id}', 'consumer',
     E'The five busiest resources of each consumer: resource ids become label\n'
     'values, leave this block out if they must not leave the database.',
     E'(SELECT x.consumer, h.resource_id AS resource, h.events\n'
     '          FROM ordering.stats x\n'
     '         CROSS JOIN LATERAL ordering.hot_resources(''consumer'', x.consumer, 5) h)')
$$;
COMMENT ON FUNCTION ordering_internal.metric_sources() IS
    'Internal to the metrics: the queries metric families are read from, with their label columns';

-- Every metric family.  value: the expression of a counter or gauge;
-- a histogram has bounds (float8[], without +Inf), buckets (cumulative
-- bigint[], one per bound), sum and count instead.  block: the key of the
-- exporter's block, which prefixes the column name.
CREATE FUNCTION ordering_internal.metric_families()
    RETURNS TABLE (ord integer, name text, type text, help text, source text, block text,
                   value text, bounds text, buckets text, sum text, count text)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 25
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT f.ord, f.name, f.type, f.help, f.source, f.block, f.value, h.bounds, h.buckets, h.sum, h.count
  FROM (VALUES
    (1, 'ordering_events_consumed_total', 'counter', 'Events handed to a consumer function.',
     'consumer', 'ordering', 's.events_consumed'),
    (2, 'ordering_events_applied_total', 'counter', 'Events applied when they arrived.',
     'consumer', 'ordering', 's.events_applied'),
    (3, 'ordering_events_stale_total', 'counter', 'Events ignored because a newer one was applied.',
     'consumer', 'ordering', 's.events_stale'),
    (4, 'ordering_events_duplicate_total', 'counter', 'Events ignored because they were applied or parked already.',
     'consumer', 'ordering', 's.events_duplicate'),
    (5, 'ordering_events_parked_total', 'counter', 'Early events parked to wait for a predecessor.',
     'consumer', 'ordering', 's.events_parked'),
    (6, 'ordering_events_drained_total', 'counter', 'Parked events applied once their gap filled.',
     'consumer', 'ordering', 's.events_drained'),
    (7, 'ordering_event_gaps_escalated_total', 'counter', 'Gap requests emitted after the deadline, first and repeated.',
     'consumer', 'ordering', 's.gaps_escalated'),
    (8, 'ordering_events_parked_current', 'gauge', 'Events parked now.',
     'consumer', 'ordering', 's.parked_current'),
    (9, 'ordering_event_reorder_distance', 'histogram', 'How far ahead of the position early events arrived (seq - position).',
     'consumer', 'ordering', NULL),
    (10, 'ordering_sequences_assigned_total', 'counter', 'Sequence numbers assigned by committed transactions.',
     'stream', 'ordering_sequences', 's.sequences_assigned'),
    (11, 'ordering_events_dead_lettered_total', 'counter', 'Events that became the dead letter of their resource.',
     'consumer', 'ordering', 's.events_dead_lettered'),
    (12, 'ordering_dead_letters_current', 'gauge', 'Resources blocked by a dead letter now.',
     'consumer', 'ordering', 's.dead_letters_current'),
    (13, 'ordering_events_skipped_total', 'counter', 'Events given up by skip_gap or discard_dead_letter.',
     'consumer', 'ordering', 's.events_skipped'),
    (14, 'ordering_oldest_gap_age_seconds', 'gauge', 'Age of the lowest parked event of the oldest open gap; 0 when no gap is open.',
     'consumer', 'ordering', 'COALESCE(pg_catalog.extract(''epoch'', s.oldest_gap_age), 0)'),
    (15, 'ordering_sequence_conflicts_total', 'counter', 'Supplied sequence numbers refused with SQLSTATE 40001 (counted although the transaction rolled back).',
     'stream', 'ordering_sequence', 's.sequence_conflicts'),
    (16, 'ordering_outbox_oldest_unpublished_age_seconds', 'gauge', 'How long the oldest unpublished row of ordering.outbox has waited; 0 when nothing waits.',
     'outbox', 'ordering_outbox', 'pg_catalog.extract(''epoch'', s.oldest_unpublished_age)'),
    (17, 'ordering_stream_hot_resource_events_total', 'counter', 'Sequence numbers assigned to each of the busiest resources of a stream (may overcount, see ordering.hot_resources()).',
     'stream_hot', 'ordering_stream_hot_resource', 's.events'),
    (18, 'ordering_consumer_hot_resource_events_total', 'counter', 'Events handed to a consumer for each of its busiest resources (may overcount, see ordering.hot_resources()).',
     'consumer_hot', 'ordering_consumer_hot_resource', 's.events'),
    (19, 'ordering_reconcile_resources_behind_total', 'counter', 'Resources ordering.reconcile() found behind, dry runs included (a resource found again is counted again).',
     'stream', 'ordering_reconcile', 's.reconcile_resources_behind'),
    (20, 'ordering_reconcile_events_republished_total', 'counter', 'Events ordering.reconcile() made unpublished again for the relays to send (none in dry runs).',
     'stream', 'ordering_reconcile', 's.reconcile_events_republished'),
    (21, 'ordering_reconcile_events_purged_total', 'counter', 'Missing events ordering.reconcile() found no longer in the outbox, never republished; dry runs included.',
     'stream', 'ordering_reconcile', 's.reconcile_events_purged')
  ) f(ord, name, type, help, source, block, value)
  LEFT JOIN (VALUES
    -- buckets 1, 2, 3, 5, 10, 25, 100 of ordering.stats (the 8th is the
    -- overflow, +Inf, whose cumulative count is the count)
    (9, 's.reorder_distance_bounds[1:7]',
     'ARRAY(SELECT pg_catalog.sum(b) OVER (ORDER BY i)'
     ' FROM pg_catalog.unnest(s.reorder_distance_buckets[1:7]) WITH ORDINALITY AS u(b, i)'
     ' ORDER BY i)',
     's.reorder_distance_sum',
     '(SELECT pg_catalog.sum(b) FROM pg_catalog.unnest(s.reorder_distance_buckets) AS b)')
  ) h(ord, bounds, buckets, sum, count) ON h.ord OPERATOR(pg_catalog.=) f.ord
$$;
COMMENT ON FUNCTION ordering_internal.metric_families() IS
    'Internal to the metrics: every metric family of ordering.metrics() and monitoring/queries.yaml, with its type, help, source, exporter block and value expression';

-- The query that reads the samples of one source: one row per family and
-- row of the source.
CREATE FUNCTION ordering_internal.metric_source_query(source text)
    RETURNS text
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT 'SELECT v.family, '
       || CASE WHEN pg_catalog.cardinality(src.labels) OPERATOR(pg_catalog.=) 0
               THEN '''{}''::pg_catalog.text[]'
               ELSE 'ARRAY[' || (SELECT pg_catalog.string_agg(pg_catalog.format('s.%I::pg_catalog.text', l), ', ' ORDER BY i)
                                   FROM pg_catalog.unnest(src.labels) WITH ORDINALITY AS u(l, i)) || ']'
          END
       || ', v.value, v.bounds, v.buckets, v.hist_sum, v.hist_count FROM ' || src.from_item || ' s'
       || ' CROSS JOIN LATERAL (VALUES '
       || (SELECT pg_catalog.string_agg(pg_catalog.format(
                      '(%s, (%s)::pg_catalog.numeric, (%s)::pg_catalog.float8[], (%s)::pg_catalog.int8[], (%s)::pg_catalog.numeric, (%s)::pg_catalog.numeric)',
                      f.ord, COALESCE(f.value, 'NULL'), COALESCE(f.bounds, 'NULL'), COALESCE(f.buckets, 'NULL'),
                      COALESCE(f.sum, 'NULL'), COALESCE(f.count, 'NULL')), ', ' ORDER BY f.ord)
             FROM ordering_internal.metric_families() f
            WHERE f.source OPERATOR(pg_catalog.=) src.source)
       || ') v(family, value, bounds, buckets, hist_sum, hist_count)'
  FROM ordering_internal.metric_sources() src
 WHERE src.source OPERATOR(pg_catalog.=) $1
$$;
COMMENT ON FUNCTION ordering_internal.metric_source_query(text) IS
    'Internal to the metrics: the query that reads the samples of every metric family of a source';

-- The samples of every family (or of one source's): what ordering.metrics()
-- prints.  ordering_internal.metric_samples() is generated from the
-- definitions by ordering_internal.define_metric_samples() below, as a
-- PL/pgSQL function whose one query is static: planned once per session
-- and cached, where a query built at each call would be parsed and planned
-- at every scrape.  Whoever changes the definitions calls
-- define_metric_samples() again (sql/metrics.sql fails on a family without
-- series).  With jit = off: a scrape must not compile what runs in
-- milliseconds.
CREATE FUNCTION ordering_internal.define_metric_samples()
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $define$
BEGIN
    EXECUTE pg_catalog.format($f$
CREATE OR REPLACE FUNCTION ordering_internal.metric_samples(source text DEFAULT NULL)
    RETURNS TABLE (family integer, labels text[], value numeric, bounds double precision[],
                   buckets bigint[], hist_sum numeric, hist_count numeric)
    LANGUAGE plpgsql VOLATILE ROWS 100
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $body$
BEGIN
    RETURN QUERY
%s;
END
$body$$f$,
        (SELECT pg_catalog.string_agg(
                    pg_catalog.format(E'    SELECT q.* FROM (%s) q\n     WHERE metric_samples.source IS NULL OR metric_samples.source OPERATOR(pg_catalog.=) %L',
                                      ordering_internal.metric_source_query(x.source), x.source),
                    E'\n    UNION ALL\n' ORDER BY x.ord)
           FROM ordering_internal.metric_sources() x));
END
$define$;
COMMENT ON FUNCTION ordering_internal.define_metric_samples() IS
    'Internal to the metrics: (re)creates ordering_internal.metric_samples() from the metric families; call it after changing them';
REVOKE EXECUTE ON FUNCTION ordering_internal.define_metric_samples() FROM PUBLIC;
SELECT ordering_internal.define_metric_samples();
COMMENT ON FUNCTION ordering_internal.metric_samples(text) IS
    'Internal to the metrics: one row per metric family and label set (of one source, or of all), with its value, or its histogram';

-- A Prometheus label set: {name="value",...}, the values escaped as the
-- format requires (backslash, double quote, newline); '' without labels.
CREATE FUNCTION ordering_internal.metric_label_set(names text[], vals text[])
    RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT CASE WHEN pg_catalog.cardinality($1) OPERATOR(pg_catalog.=) 0 THEN ''
            ELSE '{' || (SELECT pg_catalog.string_agg(
                                    n || '="' || pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(
                                        v, E'\\', E'\\\\'), '"', E'\\"'), E'\n', E'\\n') || '"',
                                    ',' ORDER BY i)
                           FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) WITH ORDINALITY AS u(n, v, i)) || '}'
       END
$$;
COMMENT ON FUNCTION ordering_internal.metric_label_set(text[], text[]) IS
    'Internal to the metrics: a Prometheus label set from label names and values, the values escaped';

-- metrics() prints the samples, family by family in the order of their
-- definitions, series by label values.  The text is the text of 1.1.
CREATE OR REPLACE FUNCTION ordering.metrics() RETURNS text
    LANGUAGE sql VOLATILE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $$
WITH f AS MATERIALIZED (
    SELECT x.ord, x.name, x.type, x.help, src.labels AS label_names
      FROM ordering_internal.metric_families() x
      JOIN ordering_internal.metric_sources() src ON src.source = x.source
), m AS MATERIALIZED (
    SELECT * FROM ordering_internal.metric_samples()
), lines(ord, sub, labels, i, line) AS (
    SELECT f.ord, 0, '{}'::text[], 0::bigint, '# HELP ' || f.name || ' ' || f.help FROM f
    UNION ALL
    SELECT f.ord, 1, '{}', 0, '# TYPE ' || f.name || ' ' || f.type FROM f
    UNION ALL
    SELECT f.ord, 2, m.labels, 0,
           f.name || ordering_internal.metric_label_set(f.label_names, m.labels) || ' ' || m.value
      FROM f JOIN m ON m.family = f.ord
     WHERE f.type <> 'histogram'
    UNION ALL
    SELECT f.ord, 2, m.labels, b.i,
           f.name || '_bucket'
           || ordering_internal.metric_label_set(f.label_names || 'le'::text,
                                                 m.labels || COALESCE(b.bound::text, '+Inf'))
           || ' ' || COALESCE(m.buckets[b.i]::numeric, m.hist_count)
      FROM f JOIN m ON m.family = f.ord
     CROSS JOIN LATERAL unnest(m.bounds || NULL::float8) WITH ORDINALITY AS b(bound, i)
     WHERE f.type = 'histogram'
    UNION ALL
    SELECT f.ord, 2, m.labels, 1000000 + x.i,
           f.name || x.suffix || ordering_internal.metric_label_set(f.label_names, m.labels)
           || ' ' || x.value
      FROM f JOIN m ON m.family = f.ord
     CROSS JOIN LATERAL (VALUES (1, '_sum', m.hist_sum), (2, '_count', m.hist_count)) AS x(i, suffix, value)
     WHERE f.type = 'histogram'
)
SELECT string_agg(l.line, E'\n' ORDER BY l.ord, l.sub, l.labels COLLATE "C", l.i) || E'\n'
  FROM lines l
$$;
COMMENT ON FUNCTION ordering.metrics() IS
    'The statistics of the current database in the Prometheus text exposition format';

-- The exporter's configuration, generated: one block per exporter block of
-- the families, reading the family's source with the family's expressions,
-- one column per family (a histogram: bounds, buckets, sum and count).
CREATE FUNCTION ordering_internal.exporter_block_queries()
    RETURNS TABLE (block text, query text)
    LANGUAGE sql STABLE ROWS 10
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT b.block,
       'SELECT '
       || pg_catalog.array_to_string(
              ARRAY['pg_catalog.current_database() AS datname']
              || ARRAY(SELECT pg_catalog.format('s.%I', l)
                         FROM pg_catalog.unnest(src.labels) WITH ORDINALITY AS u(l, i)
                        ORDER BY i)
              || ARRAY(SELECT pg_catalog.format('(%s)::%s AS %I', x.expr, x.typ,
                                                pg_catalog.substr(f.name, pg_catalog.length(b.block) + 2)
                                                || x.suffix)
                         FROM ordering_internal.metric_families() f
                        CROSS JOIN LATERAL (VALUES (1, f.value, 'pg_catalog.float8', ''),
                                                   (2, f.bounds, 'pg_catalog.float8[]', ''),
                                                   (3, f.buckets, 'pg_catalog.int8[]', '_bucket'),
                                                   (4, f.sum, 'pg_catalog.float8', '_sum'),
                                                   (5, f.count, 'pg_catalog.int8', '_count'))
                                   AS x(i, expr, typ, suffix)
                        WHERE f.block OPERATOR(pg_catalog.=) b.block AND x.expr IS NOT NULL
                        ORDER BY f.ord, x.i),
              E',\n       ')
       || E'\n  FROM ' || src.from_item || ' s'
  FROM (SELECT f.block, pg_catalog.min(f.source) AS source, pg_catalog.min(f.ord) AS ord
          FROM ordering_internal.metric_families() f
         GROUP BY f.block) b
  JOIN ordering_internal.metric_sources() src ON src.source OPERATOR(pg_catalog.=) b.source
 ORDER BY b.ord
$$;
COMMENT ON FUNCTION ordering_internal.exporter_block_queries() IS
    'Internal to the metrics: the query of each block of the exporter''s configuration, from the metric families';

-- One column of an exporter block, in the YAML of its "metrics" list.
CREATE FUNCTION ordering_internal.exporter_column(name text, usage text, description text)
    RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT pg_catalog.format(E'    - %s:\n        usage: "%s"\n        description: "%s"', $1, $2,
                         pg_catalog.replace(pg_catalog.replace($3, E'\\', E'\\\\'), '"', E'\\"'))
$$;
COMMENT ON FUNCTION ordering_internal.exporter_column(text, text, text) IS
    'Internal to ordering_internal.exporter_queries(): a column of an exporter block in YAML';

CREATE FUNCTION ordering_internal.exporter_queries()
    RETURNS text
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT E'# Custom queries for prometheus-postgres-exporter (--extend.query-path):\n'
       '# the statistics of the ordering extension under the same metric names as\n'
       '# ordering.metrics().  Point DATA_SOURCE_NAME at every database that has the\n'
       '# extension (a comma-separated list of DSNs); each series carries the\n'
       '# database in the label "datname".  The role needs the monitoring set:\n'
       '# SELECT ordering.grant_monitor(''role'') (see docs/monitoring.md).\n'
       '#\n'
       '# Generated: do not edit.  The metric families are defined once, in the\n'
       '# extension (ordering_internal.metric_families()), which ordering.metrics()\n'
       '# reads too; this file is the output of\n'
       '#   psql -XAt -c ''SELECT ordering_internal.exporter_queries()''\n'
       '# in a database with this version of the extension, and the regression test\n'
       '# sql/metrics.sql fails when the two differ.  The exporter prefixes each\n'
       '# column with the key of its block: block "ordering" + column\n'
       '# "events_consumed_total" = ordering_events_consumed_total.\n'
       || pg_catalog.string_agg(
              E'\n'
              || COALESCE('# ' || pg_catalog.replace(src.note, E'\n', E'\n# ') || E'\n', '')
              || q.block || E':\n'
              || E'  query: |\n'
              || (SELECT pg_catalog.string_agg('    ' || l, E'\n' ORDER BY n)
                    FROM pg_catalog.regexp_split_to_table(q.query, E'\n') WITH ORDINALITY AS t(l, n))
              || E'\n  metrics:\n'
              || pg_catalog.array_to_string(
                     ARRAY[ordering_internal.exporter_column('datname', 'LABEL',
                                                            'Database of the ' || src.noun)]
                     || ARRAY(SELECT ordering_internal.exporter_column(l, 'LABEL', h)
                                FROM ROWS FROM (pg_catalog.unnest(src.labels), pg_catalog.unnest(src.label_help))
                                     WITH ORDINALITY AS u(l, h, i)
                               ORDER BY i)
                     || ARRAY(SELECT ordering_internal.exporter_column(
                                         pg_catalog.substr(f.name, pg_catalog.length(q.block) + 2),
                                         pg_catalog.upper(f.type), f.help)
                                FROM ordering_internal.metric_families() f
                               WHERE f.block OPERATOR(pg_catalog.=) q.block
                               ORDER BY f.ord),
                     E'\n'),
              E'\n' ORDER BY q.n)
  FROM ordering_internal.exporter_block_queries() WITH ORDINALITY AS q(block, query, n)
  JOIN (SELECT DISTINCT f.block, f.source FROM ordering_internal.metric_families() f) fb
    ON fb.block OPERATOR(pg_catalog.=) q.block
  JOIN ordering_internal.metric_sources() src ON src.source OPERATOR(pg_catalog.=) fb.source
$$;
COMMENT ON FUNCTION ordering_internal.exporter_queries() IS
    'The configuration of prometheus-postgres-exporter for the metric families (monitoring/queries.yaml is its output)';

REVOKE EXECUTE ON FUNCTION ordering_internal.metric_sources(), ordering_internal.metric_families(),
    ordering_internal.metric_source_query(text), ordering_internal.metric_samples(text),
    ordering_internal.metric_label_set(text[], text[]), ordering_internal.exporter_block_queries(),
    ordering_internal.exporter_column(text, text, text), ordering_internal.exporter_queries()
    FROM PUBLIC;

-- The monitoring set runs the metric functions of ordering_internal; roles
-- that have it (EXECUTE on metrics()) get them too.
CREATE OR REPLACE FUNCTION ordering.grant_monitor(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering_internal.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.metrics(), '
        'ordering_internal.stats_reset_time(), ordering_internal.gap_deadline(), '
        'ordering_internal.consumer_statistics(), ordering_internal.stream_statistics(), '
        'ordering.hot_resources(text, text, integer)',
        'SELECT ON ordering.stats, ordering.stream_stats, ordering.open_gaps, '
        'ordering.gap_requests, ordering.outbox_lag',
        -- what ordering.metrics() runs
        'EXECUTE ON FUNCTION ordering_internal.metric_sources(), ordering_internal.metric_families(), '
        'ordering_internal.metric_samples(text), '
        'ordering_internal.metric_label_set(text[], text[])',
        -- Citus: the distributed consumers' open gaps, listed on every node
        -- (section "Citus: consumers")
        'EXECUTE ON FUNCTION ordering.distributed_open_gaps(), '
        'ordering_internal.shard_gaps(double precision, boolean)');
END
$$;
COMMENT ON FUNCTION ordering.grant_monitor(regrole) IS
    'Grants read-only access to the statistics, ordering.metrics(), hot resources, the relay lag and the open gaps (for dashboards and exporters)';

DO $$
DECLARE
    grantee regrole;
BEGIN
    FOR grantee IN SELECT * FROM ordering_internal.roles_holding('ordering.metrics()') LOOP
        PERFORM ordering.grant_privileges(grantee,
            'EXECUTE ON FUNCTION ordering_internal.metric_sources(), ordering_internal.metric_families(), '
            'ordering_internal.metric_samples(text), '
            'ordering_internal.metric_label_set(text[], text[])');
    END LOOP;
END
$$;

-- Failover-safe publishing: which standbys count is
-- stated, and ordering.min_standbys requires more of them (src/standbys.c).
COMMENT ON FUNCTION ordering.wait_for_standbys(interval) IS
    'Waits until every connected streaming standby, and at least ordering.min_standbys of them (default 1), has flushed the WAL of everything this transaction has seen, and returns that WAL position; SQLSTATE 55000 when that has not happened within the timeout';
COMMENT ON FUNCTION ordering.claim_unpublished(integer, boolean, interval) IS
    'For relays: up to batch_size unpublished outbox rows, locked until the end of the caller''s transaction and skipped by other relays; with replicated, only once every connected standby, and at least ordering.min_standbys of them, has flushed them (SQLSTATE 55000 after timeout)';

-- (end of section)

-- ------------------------------------------------------------------------
-- Bulk producers
-- ------------------------------------------------------------------------

-- A statement that inserts many rows writes each resource's counter once,
-- when it ends, and holds it in memory meanwhile (src/statement_counters.c):
-- last_sequence() must read it there, which a SQL read of ordering.sequences
-- cannot.  So last_sequence() becomes a C function; it is defined once, in
-- section "Citus: producers" (which changes it too, and comes later).

-- (end of section)

-- ------------------------------------------------------------------------
-- Consumer speed
-- ------------------------------------------------------------------------

-- Each position row says how many events of its (consumer, resource) wait
-- in ordering.parked, and the lowest and highest of their seqs, so that
-- deliver() finds the parking cap in O(1) and reads ordering.parked only
-- where these do not answer (src/consumer.c).  The C functions keep them
-- exact with every write of the row that a change of the parked events goes
-- with.  parked_count -1 means "not known" (the default: rows inserted by
-- SQL, rows of apply_if_newer(), every row right after this update): the
-- next deliver() of the key counts its parked events once and stores the
-- result.  A constant default adds the columns without rewriting the table.
--
-- 1.1 let a DBA add a column to ordering.positions and drop it again; the
-- dropped column keeps its place, so the new columns would come after it,
-- where the storage layer, which reads and writes a table's own columns by
-- position (src/owned.c), cannot use them: the extension would refuse the
-- table at its first delivery.  Such a database is refused here instead,
-- before anything changes, with the way out: a dump does not carry dropped
-- columns.
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_attribute a
                WHERE a.attrelid OPERATOR(pg_catalog.=) 'ordering.positions'::pg_catalog.regclass
                  AND a.attisdropped) THEN
        RAISE EXCEPTION 'ordering.positions has a column that was added and dropped again'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'Version 1.2 adds columns to the table, which would come after the dropped one.',
                  HINT = 'Dump the database with pg_dump and restore it into a new database (a dump does not carry dropped columns), then update the extension there.';
    END IF;
END
$$;
ALTER TABLE ordering.positions
    ADD COLUMN parked_count bigint NOT NULL DEFAULT -1,
    ADD COLUMN parked_lowest bigint NOT NULL DEFAULT 0,
    ADD COLUMN parked_highest bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN ordering.positions.parked_count IS
    'How many events of this (consumer, resource) wait in ordering.parked; -1 when not known yet (counted by the next delivery)';
COMMENT ON COLUMN ordering.positions.parked_lowest IS
    'The lowest seq parked for this (consumer, resource), 0 when none (meaningful when parked_count > 0)';
COMMENT ON COLUMN ordering.positions.parked_highest IS
    'The highest seq parked for this (consumer, resource), 0 when none (meaningful when parked_count > 0)';

-- A change of ordering.parked by SQL (an operator's DELETE, a test's INSERT,
-- pg_restore's COPY) fires no C code: these statement triggers mark the
-- summary of every key it touched as not known, which the next deliver()
-- recounts (TRUNCATE: nothing is parked).  The extension's own writes go
-- below the executor and fire no trigger; they keep the summary themselves.
-- SECURITY DEFINER: a role that may write ordering.parked need not be able
-- to update ordering.positions.
CREATE FUNCTION ordering_internal.parked_changed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF TG_OP OPERATOR(pg_catalog.=) 'TRUNCATE' THEN
        UPDATE ordering.positions
           SET parked_count = 0, parked_lowest = 0, parked_highest = 0
         WHERE parked_count OPERATOR(pg_catalog.<>) 0;
    ELSIF TG_OP OPERATOR(pg_catalog.=) 'INSERT' THEN
        UPDATE ordering.positions p SET parked_count = -1
          FROM (SELECT DISTINCT n.consumer, n.resource_id FROM parked_new n) c
         WHERE p.consumer OPERATOR(pg_catalog.=) c.consumer
           AND p.resource_id OPERATOR(pg_catalog.=) c.resource_id
           AND p.parked_count OPERATOR(pg_catalog.<>) -1;
    ELSIF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
        UPDATE ordering.positions p SET parked_count = -1
          FROM (SELECT DISTINCT o.consumer, o.resource_id FROM parked_old o) c
         WHERE p.consumer OPERATOR(pg_catalog.=) c.consumer
           AND p.resource_id OPERATOR(pg_catalog.=) c.resource_id
           AND p.parked_count OPERATOR(pg_catalog.<>) -1;
    ELSE
        UPDATE ordering.positions p SET parked_count = -1
          FROM (SELECT o.consumer, o.resource_id FROM parked_old o
                UNION
                SELECT n.consumer, n.resource_id FROM parked_new n) c
         WHERE p.consumer OPERATOR(pg_catalog.=) c.consumer
           AND p.resource_id OPERATOR(pg_catalog.=) c.resource_id
           AND p.parked_count OPERATOR(pg_catalog.<>) -1;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION ordering_internal.parked_changed() IS
    'Trigger on ordering.parked: a SQL change of parked events marks the summary of their keys in ordering.positions as not known';
REVOKE ALL ON FUNCTION ordering_internal.parked_changed() FROM PUBLIC;

-- A trigger with transition tables fires on one kind of event only.
CREATE TRIGGER parked_inserted AFTER INSERT ON ordering.parked
    REFERENCING NEW TABLE AS parked_new
    FOR EACH STATEMENT EXECUTE FUNCTION ordering_internal.parked_changed();
CREATE TRIGGER parked_updated AFTER UPDATE ON ordering.parked
    REFERENCING OLD TABLE AS parked_old NEW TABLE AS parked_new
    FOR EACH STATEMENT EXECUTE FUNCTION ordering_internal.parked_changed();
CREATE TRIGGER parked_deleted AFTER DELETE ON ordering.parked
    REFERENCING OLD TABLE AS parked_old
    FOR EACH STATEMENT EXECUTE FUNCTION ordering_internal.parked_changed();
CREATE TRIGGER parked_truncated AFTER TRUNCATE ON ordering.parked
    FOR EACH STATEMENT EXECUTE FUNCTION ordering_internal.parked_changed();
COMMENT ON TRIGGER parked_inserted ON ordering.parked IS
    'Marks the parked-events summary of the keys an INSERT touched as not known (ordering.positions.parked_count = -1)';
COMMENT ON TRIGGER parked_updated ON ordering.parked IS
    'Marks the parked-events summary of the keys an UPDATE touched as not known (ordering.positions.parked_count = -1)';
COMMENT ON TRIGGER parked_deleted ON ordering.parked IS
    'Marks the parked-events summary of the keys a DELETE touched as not known (ordering.positions.parked_count = -1)';
COMMENT ON TRIGGER parked_truncated ON ordering.parked IS
    'After TRUNCATE nothing is parked: every summary in ordering.positions says so';

-- Parking an event wrote three things: its row and two index entries, the
-- primary key's and parked_at's.  The parked_at index served only the gap
-- sweep, which started from the events parked before the deadline; it cost
-- about 10,000 instructions per parked event, some 6% of a shuffled
-- stream's deliver_batch (bench/RESULTS.md).  The sweep now reads the parked
-- events by (consumer, resource) instead: its cost grows with the events
-- waiting (at most ordering.max_parked_per_resource per resource), as
-- ordering.stats' already did, and never with the number of positions,
-- each of which it looks up by primary key (the plan in expected/gaps.out).
DROP INDEX ordering.parked_parked_at_idx;
CREATE OR REPLACE VIEW ordering.open_gaps AS
SELECT agg.consumer,
       agg.resource_id,
       COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1 AS missing_from,
       agg.lowest OPERATOR(pg_catalog.-) 1 AS missing_to,
       agg.parked_count,
       agg.first_parked_at
  FROM (SELECT p.consumer, p.resource_id,
               pg_catalog.min(p.seq) AS lowest,
               pg_catalog.count(*) AS parked_count,
               pg_catalog.min(p.parked_at) AS first_parked_at
          FROM ordering.parked p
         GROUP BY p.consumer, p.resource_id
        HAVING pg_catalog.min(p.parked_at) OPERATOR(pg_catalog.<)
               (pg_catalog.now() OPERATOR(pg_catalog.-) ordering.gap_deadline())) agg
  -- LIMIT 1 (the primary key gives one row at most) keeps this a lookup
  -- per gap: the planner may not turn it into a join that reads every
  -- position
  LEFT JOIN LATERAL (
       SELECT ps.position, ps.blocked_at
         FROM ordering.positions ps
        WHERE ps.consumer OPERATOR(pg_catalog.=) agg.consumer
          AND ps.resource_id OPERATOR(pg_catalog.=) agg.resource_id
        LIMIT 1) pos ON true
 WHERE agg.lowest OPERATOR(pg_catalog.>)
       (COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1)
   AND (pos.blocked_at IS NULL
        OR agg.lowest OPERATOR(pg_catalog.<) pos.blocked_at);

-- (end of section)

-- ------------------------------------------------------------------------
-- Citus: producers
-- ------------------------------------------------------------------------

-- A table that Citus distributes by hash on its resource column gets, at
-- ordering.attach(), a counter table of its own, shaped like
-- ordering.sequences and co-located with it, so that each counter shard
-- lives, moves and splits with the shard whose rows it counts.  Its name
-- follows from the stream alone, so that every node can name it; the
-- sequencing trigger carries it as a fourth argument, which Citus copies to
-- every shard.  src/citus.c says how a shard finds its counter shard and why
-- every rule of one node still holds; docs/citus.md is the user's side.

-- The counter table of a stream, in schema ordering_internal (src/citus.c
-- computes the same name).
CREATE FUNCTION ordering_internal.counter_table_name(stream text) RETURNS name
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
SELECT ('sequences_' OPERATOR(pg_catalog.||)
        pg_catalog.left(pg_catalog.md5($1), 16))::pg_catalog.name
$$;
COMMENT ON FUNCTION ordering_internal.counter_table_name(text) IS
    'Name of the counter table, in schema ordering_internal, of a stream distributed by Citus';

-- The counter table of a stream distributed by Citus, or NULL.
CREATE FUNCTION ordering_internal.distributed_counters(stream text) RETURNS regclass
    LANGUAGE sql STABLE STRICT
    AS $$
SELECT c.oid::pg_catalog.regclass
  FROM pg_catalog.pg_class c
 WHERE c.relnamespace OPERATOR(pg_catalog.=) 'ordering_internal'::pg_catalog.regnamespace
   AND c.relname OPERATOR(pg_catalog.=) ordering_internal.counter_table_name($1)
   AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL
$$;
COMMENT ON FUNCTION ordering_internal.distributed_counters(text) IS
    'The counter table of a stream distributed by Citus, NULL for a stream counted in ordering.sequences';

-- How Citus manages a table: managed false if it does not (or Citus is not
-- here).  Dynamic SQL, through to_jsonb(): the Citus catalogs exist only
-- where Citus is installed, and a version of them without a column we read
-- gives NULLs (managed, but how is unknown) instead of an error.
CREATE FUNCTION ordering_internal.citus_distribution(tbl regclass,
                                                     OUT managed boolean,
                                                     OUT partmethod text,
                                                     OUT repmodel text,
                                                     OUT colocationid integer,
                                                     OUT distribution_column text,
                                                     OUT on_coordinator boolean)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p jsonb;
BEGIN
    managed := false;
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN;
    END IF;
    EXECUTE $q$
        SELECT pg_catalog.to_jsonb(p) FROM pg_catalog.pg_dist_partition p
         WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1$q$
       INTO p USING tbl;
    IF p IS NULL THEN
        RETURN;
    END IF;
    managed := true;
    partmethod := p OPERATOR(pg_catalog.->>) 'partmethod';
    repmodel := p OPERATOR(pg_catalog.->>) 'repmodel';
    colocationid := (p OPERATOR(pg_catalog.->>) 'colocationid')::integer;
    IF p OPERATOR(pg_catalog.?) 'partkey'
       AND pg_catalog.to_regprocedure('pg_catalog.column_to_column_name(regclass, text)') IS NOT NULL THEN
        EXECUTE 'SELECT pg_catalog.column_to_column_name($1, $2)'
           INTO distribution_column USING tbl, p OPERATOR(pg_catalog.->>) 'partkey';
    END IF;
    on_coordinator := true;
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_local_group') IS NOT NULL THEN
        EXECUTE 'SELECT g.groupid OPERATOR(pg_catalog.=) 0 FROM pg_catalog.pg_dist_local_group g'
           INTO on_coordinator;
        on_coordinator := COALESCE(on_coordinator, true);
    END IF;
END
$$;
COMMENT ON FUNCTION ordering_internal.citus_distribution(regclass) IS
    'How Citus distributes a table (pg_dist_partition); managed false for a table Citus does not manage';

-- Is the sequencing trigger (with four arguments) of this relation one of
-- Citus's copies: on a shard, or on a distributed table's shell on a worker?
-- Those are vetted per insert against Citus's metadata (src/citus.c), not
-- against ordering.attachments, which has a row only for the distributed
-- table on the coordinator; check() and post_restore() leave them alone.
CREATE FUNCTION ordering_internal.citus_trigger_copy(tbl regclass) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    d record;
    shard boolean;
BEGIN
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_shard') IS NULL THEN
        RETURN false;
    END IF;
    SELECT * INTO d FROM ordering_internal.citus_distribution(tbl);
    IF d.managed THEN
        RETURN NOT d.on_coordinator;
    END IF;
    -- a shard: named "<table>_<shard ID>" after a shard of the metadata
    -- (by its regclass text: Citus hides shards from queries on pg_class)
    EXECUTE $q$
        SELECT EXISTS (
            SELECT FROM pg_catalog.pg_dist_shard s
             WHERE s.shardid OPERATOR(pg_catalog.=)
                   pg_catalog.substring($1::pg_catalog.text, '_([0-9]{1,18})"?$')::pg_catalog.int8
               AND pg_catalog.to_regclass(pg_catalog.shard_name(s.logicalrelid, s.shardid, false))
                   OPERATOR(pg_catalog.=) $1)$q$
       INTO shard USING tbl;
    RETURN COALESCE(shard, false);
END
$$;
COMMENT ON FUNCTION ordering_internal.citus_trigger_copy(regclass) IS
    'Internal to ordering.check() and ordering.post_restore(): whether a relation whose sequencing trigger names a counter table is a copy Citus made (a shard, or a shell on a worker) rather than the distributed table attach() registered';

-- attach(): may the table be sequenced as a distributed stream?  True if
-- Citus distributes it as we need, false if Citus does not manage it (it is
-- then sequenced like any local table); every other shape is refused with
-- 0A000 and a hint, before anything is created.
CREATE FUNCTION ordering_internal.citus_attach_check(tbl regclass, resource_column name)
    RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    d record;
    restype pg_catalog.regtype;
    hint text;
BEGIN
    SELECT * INTO d FROM ordering_internal.citus_distribution(tbl);
    IF NOT d.managed THEN
        RETURN false;
    END IF;
    IF d.partmethod IS NULL THEN
        RAISE EXCEPTION 'relation "%" is distributed by Citus', tbl
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'ordering cannot read how: this version of Citus''s metadata is not one it knows.';
    END IF;
    hint := pg_catalog.format(
        'Distribute it by hash on its resource column: SELECT create_distributed_table(%L, %L) (after undistribute_table(), or alter_distributed_table(%L, distribution_column => %L)), then attach it.',
        tbl::pg_catalog.text, resource_column, tbl::pg_catalog.text, resource_column);
    IF NOT d.on_coordinator THEN
        RAISE EXCEPTION 'ordering.attach() of a table that Citus manages must run on the coordinator'
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Connect to the coordinator and call it there.';
    END IF;
    IF d.partmethod OPERATOR(pg_catalog.=) 'n' AND d.repmodel OPERATOR(pg_catalog.=) 't' THEN
        RAISE EXCEPTION 'relation "%" is a reference table', tbl
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'A reference table is written on every node; its rows would be numbered by each node on its own.',
                  HINT = hint;
    END IF;
    IF d.partmethod OPERATOR(pg_catalog.=) 'n' THEN
        RAISE EXCEPTION 'relation "%" is managed by Citus but not distributed by a column', tbl
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'Citus local tables and single-shard tables have no distribution column to co-locate counters by.',
                  HINT = hint;
    END IF;
    IF d.partmethod OPERATOR(pg_catalog.<>) 'h' THEN
        RAISE EXCEPTION 'relation "%" is distributed by % (method %)', tbl,
            CASE d.partmethod WHEN 'a' THEN 'append' WHEN 'r' THEN 'range' ELSE 'another method' END,
            d.partmethod
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'Only hash distribution keeps every resource in one shard that counters can be co-located with.',
                  HINT = hint;
    END IF;
    IF d.distribution_column IS DISTINCT FROM resource_column::pg_catalog.text THEN
        RAISE EXCEPTION 'relation "%" is distributed by column "%", not by its resource column "%"',
            tbl, d.distribution_column, resource_column
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'The events of one resource would be spread over shards, each with counters of its own.',
                  HINT = hint;
    END IF;
    IF d.repmodel OPERATOR(pg_catalog.<>) 's' THEN
        RAISE EXCEPTION 'relation "%" is replicated by Citus statement replication', tbl
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'Each placement of a shard would number its rows on its own.',
                  HINT = 'Distribute it with citus.shard_replication_factor = 1 (use streaming replicas for high availability).';
    END IF;
    SELECT a.atttypid INTO restype FROM pg_catalog.pg_attribute a
     WHERE a.attrelid OPERATOR(pg_catalog.=) tbl
       AND a.attname OPERATOR(pg_catalog.=) resource_column;
    IF restype OPERATOR(pg_catalog.<>) 'pg_catalog.text'::pg_catalog.regtype THEN
        RAISE EXCEPTION 'resource column "%" of distributed table "%" is of type %, not text', resource_column, tbl, restype
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'A distributed stream keeps its counters in a table co-located with it, keyed by the resource as text; Citus co-locates only distribution columns of the same type.',
                  HINT = 'Distribute the table by a text resource column (a text copy of the key, say).';
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION ordering_internal.citus_attach_check(regclass, name) IS
    'Internal to ordering.attach(): true for a table Citus distributes by hash on its text resource column, false for a table Citus does not manage; refuses every other shape (0A000)';

-- The counter table of a distributed stream: made the first time the stream
-- is attached, checked when it exists.  Its resource_id has the collation of
-- the table's resource column (Citus co-locates only columns of one type and
-- collation); stream is "C", like ordering.sequences.
CREATE FUNCTION ordering_internal.citus_counter_table(tbl regclass, resource_column name,
                                                      stream text)
    RETURNS regclass
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    relname name := ordering_internal.counter_table_name(stream);
    counters regclass := ordering_internal.distributed_counters(stream);
    resource_collation text;
    mine record;
    theirs record;
BEGIN
    SELECT pg_catalog.format('%I.%I', n.nspname, c.collname) INTO resource_collation
      FROM pg_catalog.pg_attribute a
      JOIN pg_catalog.pg_collation c ON c.oid OPERATOR(pg_catalog.=) a.attcollation
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.collnamespace
     WHERE a.attrelid OPERATOR(pg_catalog.=) tbl
       AND a.attname OPERATOR(pg_catalog.=) resource_column;
    IF counters IS NULL THEN
        EXECUTE pg_catalog.format(
            'CREATE TABLE ordering_internal.%I ('
            '    stream text COLLATE "C" NOT NULL,'
            '    resource_id text COLLATE %s NOT NULL,'
            '    last_seq bigint NOT NULL CONSTRAINT %I CHECK (last_seq OPERATOR(pg_catalog.>=) 0),'
            '    PRIMARY KEY (stream, resource_id))',
            relname, resource_collation, relname OPERATOR(pg_catalog.||) '_last_seq_check');
        counters := ordering_internal.distributed_counters(stream);
        EXECUTE pg_catalog.format('COMMENT ON TABLE %s IS %L', counters,
            pg_catalog.format('Counters of stream %s, distributed by Citus and co-located with %s (made by ordering.attach())',
                              pg_catalog.quote_literal(stream), tbl));
        EXECUTE 'SELECT pg_catalog.create_distributed_table($1, $2, colocate_with => $3)'
          USING counters, 'resource_id', tbl::pg_catalog.text;
        RETURN counters;
    END IF;
    -- the stream was attached before (this table, or another one)
    SELECT * INTO mine FROM ordering_internal.citus_distribution(tbl);
    SELECT * INTO theirs FROM ordering_internal.citus_distribution(counters);
    IF theirs.colocationid IS DISTINCT FROM mine.colocationid
       OR theirs.distribution_column IS DISTINCT FROM 'resource_id' THEN
        RAISE EXCEPTION 'the counters of stream "%" are not co-located with relation "%"', stream, tbl
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = pg_catalog.format('They are in %s, which is in another co-location group.', counters),
                  HINT = pg_catalog.format('Co-locate the table with them (SELECT alter_distributed_table(%L, colocate_with => %L)), or attach it to another stream.',
                                           tbl::pg_catalog.text, counters::pg_catalog.text);
    END IF;
    RETURN counters;
END
$$;
COMMENT ON FUNCTION ordering_internal.citus_counter_table(regclass, name, text) IS
    'Internal to ordering.attach(): the counter table of a distributed stream, created and distributed co-located with the table the first time';

-- The triggers of a distributed table: those of ordering.create_sequencing_triggers(),
-- the sequencing trigger with the counter table as a fourth argument.  Citus
-- creates triggers on a distributed table's shards only with
-- citus.enable_unsafe_triggers on: ours are safe there (src/citus.c).
CREATE FUNCTION ordering_internal.create_distributed_sequencing_triggers(
        tbl regclass, resource_column name, sequence_column name, stream text,
        counters regclass)
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
    EXECUTE pg_catalog.format(
        'CREATE TRIGGER ordering_sequence BEFORE INSERT ON %s FOR EACH ROW '
        'EXECUTE FUNCTION ordering.sequence_trigger(%L, %L, %L, %L)',
        tbl, resource_column, sequence_column, stream, counters::pg_catalog.text);
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
COMMENT ON FUNCTION ordering_internal.create_distributed_sequencing_triggers(regclass, name, name, text, regclass) IS
    'Internal to ordering.attach(): the three sequencing triggers of a table distributed by Citus, the sequencing trigger naming the stream''s counter table';

-- Every counter of a distributed stream at least the highest number in its
-- table (attach() of a table that holds numbers, post_restore()) and at
-- least the stream's counters in ordering.sequences on this node (a local
-- table attached before, then distributed and attached again).  The first
-- statement joins co-located tables by the distribution column, so Citus
-- runs it on each shard's node.
CREATE FUNCTION ordering_internal.citus_raise_counters(tbl regclass, resource_column name,
                                                       sequence_column name, stream text,
                                                       counters regclass)
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    numbered boolean;
BEGIN
    -- Each statement only where there is something to raise from: its
    -- INSERT needs INSERT and UPDATE on the counter table even when it
    -- writes nothing, so this way the owner of the stream's tables, who may
    -- not write the counter table, attaches a table that holds no numbers
    -- (a new table of the stream) as on one node.  The sequencing trigger,
    -- made already, keeps inserts out meanwhile.
    EXECUTE pg_catalog.format('SELECT true FROM %s t WHERE t.%I IS NOT NULL LIMIT 1',
                              tbl, sequence_column) INTO numbered;
    IF numbered THEN
        EXECUTE pg_catalog.format(
            'INSERT INTO %1$s AS c (stream, resource_id, last_seq) '
            'SELECT %2$L, t.%3$I, pg_catalog.max(t.%4$I) FROM %5$s t '
            ' WHERE t.%4$I IS NOT NULL GROUP BY t.%3$I '
            'ON CONFLICT (stream, resource_id) DO UPDATE '
            '   SET last_seq = GREATEST(c.last_seq, EXCLUDED.last_seq)',
            counters, stream, resource_column, sequence_column, tbl);
    END IF;
    IF EXISTS (SELECT FROM ordering.sequences s
                WHERE s.stream OPERATOR(pg_catalog.=) citus_raise_counters.stream) THEN
        EXECUTE pg_catalog.format(
            'INSERT INTO %1$s AS c (stream, resource_id, last_seq) '
            'SELECT s.stream, s.resource_id, s.last_seq FROM ordering.sequences s '
            ' WHERE s.stream OPERATOR(pg_catalog.=) %2$L '
            'ON CONFLICT (stream, resource_id) DO UPDATE '
            '   SET last_seq = GREATEST(c.last_seq, EXCLUDED.last_seq)',
            counters, stream);
    END IF;
END
$$;
COMMENT ON FUNCTION ordering_internal.citus_raise_counters(regclass, name, name, text, regclass) IS
    'Raises every counter of a distributed stream to the highest number in its table and to its counters in ordering.sequences';

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
    distributed boolean := false;
    counters regclass;
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
    -- 1.2: a type whose text depends on a setting would be keyed twice
    PERFORM ordering_internal.check_resource_type(tbl, resource_column);
    IF stream OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'stream name must not be empty'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_trigger t
                WHERE t.tgrelid OPERATOR(pg_catalog.=) tbl
                  AND t.tgname OPERATOR(pg_catalog.=) 'ordering_sequence') THEN
        -- 1.2: triggers restored without their registry row (a schema-only
        -- restore) have a step of their own
        IF NOT EXISTS (SELECT FROM ordering.attachments a
                        WHERE a.tbl OPERATOR(pg_catalog.=) attach.tbl AND a.attached)
           AND EXISTS (SELECT FROM pg_catalog.pg_trigger t
                        WHERE t.tgrelid OPERATOR(pg_catalog.=) tbl
                          AND t.tgname OPERATOR(pg_catalog.=) 'ordering_sequence'
                          AND t.tgparentid OPERATOR(pg_catalog.=) 0) THEN
            RAISE EXCEPTION 'relation "%" has the sequencing triggers but is not registered in ordering.attachments', tbl
                USING ERRCODE = 'duplicate_object',
                      DETAIL = 'Its triggers were restored without its row of ordering.attachments (a schema-only or partial restore).',
                      HINT = 'Call ordering.post_restore(): it registers the table with the stream its trigger names and continues its counters.';
        END IF;
        RAISE EXCEPTION 'relation "%" is already attached', tbl
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Call ordering.detach() first to change how it is sequenced.';
    END IF;
    -- 1.2, Citus: a table distributed by hash on its resource column gets
    -- counters co-located with it ("Citus: producers"); every other shape
    -- Citus makes is refused with 0A000 and a hint, before anything is made
    -- (only where Citus is: one node never calls into these functions)
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        distributed := ordering_internal.citus_attach_check(tbl, resource_column);
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
    IF distributed THEN
        counters := ordering_internal.citus_counter_table(tbl, resource_column, stream);
        PERFORM ordering_internal.create_distributed_sequencing_triggers(
            tbl, resource_column, sequence_column, stream, counters);
    ELSE
        PERFORM ordering_internal.create_sequencing_triggers(tbl, resource_column, sequence_column, stream);
    END IF;
    -- the registry row: only for a caller who may use the stream (42501)
    PERFORM ordering_internal.attachment_register(tbl, stream, resource_column,
                                                  sequence_column);
    -- 1.2: rows the table holds already (attached before, its counters
    -- dropped with the extension or never restored) keep their numbers:
    -- each resource continues after its highest.  The new triggers lock out
    -- inserts until this transaction ends, so no row is missed.
    IF distributed THEN
        -- in the stream's counter table, on every shard's node
        PERFORM ordering_internal.citus_raise_counters(tbl, resource_column, sequence_column,
                                                        stream, counters);
    ELSE
        PERFORM ordering_internal.seed_counters(tbl);
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION ordering.detach(tbl regclass) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    was text;
    trigger_stream text;
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
    trigger_stream := (ordering_internal.sequencing_trigger(tbl)).stream;
    -- Citus: a distributed table's triggers are dropped on its shards too
    -- with this setting on, as attach() created them
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        IF (ordering_internal.citus_distribution(tbl)).managed THEN
            PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
        END IF;
    END IF;
    EXECUTE pg_catalog.format('DROP TRIGGER ordering_sequence ON %s', tbl);
    EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS ordering_sequence_stored ON %s', tbl);
    EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS ordering_sequence_guard ON %s', tbl);
    was := ordering_internal.attachment_unregister(tbl);
    IF was IS NULL THEN
        -- 1.2: triggers without a registry row (a schema-only restore)
        RAISE NOTICE 'relation "%" had the sequencing triggers of stream "%", but was not registered in ordering.attachments', tbl, trigger_stream
            USING DETAIL = 'Its triggers are dropped; the counters of that stream are kept.';
        RETURN;
    END IF;
    RAISE NOTICE 'relation "%" was sequenced as stream "%"', tbl, was
        USING DETAIL = 'Its counters are kept: ordering.attach() on this table continues the stream.';
END
$$;

-- last_sequence() (defined here once; section "Bulk producers" needs it
-- too): C (src/producer.c), the same signature, errors (it checks its NULL
-- arguments itself: not STRICT), snapshot and privileges as 1.1's SQL read
-- of ordering.sequences (SELECT on it checked), plus what a running bulk
-- statement holds in memory (src/statement_counters.c), and for a stream
-- distributed by Citus the read of its counter shard on the shard's node,
-- as the owner of the counter table (src/citus.c).
CREATE OR REPLACE FUNCTION ordering.last_sequence(stream text, resource_id text)
    RETURNS bigint
    LANGUAGE c STABLE AS 'MODULE_PATHNAME', 'ordering_last_sequence';
COMMENT ON FUNCTION ordering.last_sequence(text, text) IS
    'Highest sequence number of (stream, resource) allocated and visible to the caller; 0 if none';

-- ordering.check() and ordering.post_restore() on the coordinator cover the
-- distributed streams too (docs/citus.md): each is the hardening's function
-- (previous sections) with a branch added for a table whose stream has a
-- counter table, and Citus's copies of the sequencing trigger (shards,
-- shells on workers) left out of the registry checks.  The comparison joins
-- the table and its counter table, co-located, on the distribution column:
-- Citus runs it on every shard's node.
CREATE FUNCTION ordering_internal.check_distributed(tbl regclass, resource_column name,
                                                    sequence_column name, stream text,
                                                    max_per_kind bigint)
    RETURNS TABLE (kind text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    counters regclass := ordering_internal.distributed_counters(stream);
BEGIN
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'counter_behind_table'::pg_catalog.text,
               pg_catalog.format('table %%s (stream %%s), resource %%s: highest seq %%s, counter %%s',
                                 $1, pg_catalog.quote_literal($2), pg_catalog.quote_literal(x.res),
                                 x.hi, COALESCE(c.last_seq::pg_catalog.text, 'missing'))
          FROM (SELECT t.%1$I AS res, pg_catalog.max(t.%2$I) AS hi
                  FROM %3$s t
                 WHERE t.%2$I IS NOT NULL
                 GROUP BY t.%1$I) x
          LEFT JOIN %4$s c
            ON c.resource_id OPERATOR(pg_catalog.=) x.res
           AND c.stream OPERATOR(pg_catalog.=) $2
         WHERE c.last_seq IS NULL OR c.last_seq OPERATOR(pg_catalog.<) x.hi
         ORDER BY x.res
         LIMIT $3$q$,
        resource_column, sequence_column, tbl, counters)
        USING tbl::pg_catalog.text, stream, max_per_kind;
    -- grouped by the distribution column: each node counts its shards
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'seq_repeated_in_table'::pg_catalog.text,
               pg_catalog.format('table %%s (stream %%s), resource %%s: %%s rows hold %%s numbers',
                                 $1, pg_catalog.quote_literal($2), pg_catalog.quote_literal(x.res),
                                 x.n, x.distinct_seqs)
          FROM (SELECT t.%1$I AS res, pg_catalog.count(t.%2$I) AS n,
                       pg_catalog.count(DISTINCT t.%2$I) AS distinct_seqs
                  FROM %3$s t
                 WHERE t.%1$I IS NOT NULL
                 GROUP BY t.%1$I) x
         WHERE x.n OPERATOR(pg_catalog.<>) x.distinct_seqs
         ORDER BY x.res
         LIMIT $3$q$,
        resource_column, sequence_column, tbl)
        USING tbl::pg_catalog.text, stream, max_per_kind;
END
$$;
COMMENT ON FUNCTION ordering_internal.check_distributed(regclass, name, name, text, bigint) IS
    'Internal to ordering.check(): counters of a stream distributed by Citus below the highest number in its table, and numbers held twice by one resource, on every node';

CREATE OR REPLACE FUNCTION ordering.check(sample_percent double precision DEFAULT 100,
                                          max_per_kind bigint DEFAULT NULL)
    RETURNS TABLE (kind text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    sample text := '';
    att record;
    gauge record;
    problem text;
    seq_fn pg_catalog.regprocedure := 'ordering.sequence_trigger()';
    citus boolean := pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
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

    -- Producer, per attached table: its triggers as attach() made them,
    -- its columns as attach() was given them, and every counter at or
    -- above the highest seq of the table (a row numbered past its counter
    -- would get its number again), no resource holding a number twice.
    FOR att IN
        SELECT a.tbl AS table_name, a.stream, a.resource_column, a.sequence_column,
               t.tgenabled,
               (SELECT pg_catalog.count(*) FROM pg_catalog.pg_trigger c
                 WHERE c.tgrelid OPERATOR(pg_catalog.=) a.tbl
                   AND c.tgname OPERATOR(pg_catalog.=) ANY ('{ordering_sequence_stored,ordering_sequence_guard}')
                   AND c.tgenabled OPERATOR(pg_catalog.=) t.tgenabled) AS companions
          FROM ordering.attachments a
          LEFT JOIN pg_catalog.pg_trigger t
            ON t.tgrelid OPERATOR(pg_catalog.=) a.tbl
           AND t.tgname OPERATOR(pg_catalog.=) 'ordering_sequence'
           AND t.tgfoid OPERATOR(pg_catalog.=) seq_fn
         WHERE a.attached
         ORDER BY a.tbl::pg_catalog.text
    LOOP
        IF att.tgenabled IS NULL THEN
            kind := 'sequence_trigger_missing';
            detail := pg_catalog.format('table %s (stream %s): its sequencing trigger is missing, rows inserted now get no number',
                                        att.table_name, pg_catalog.quote_literal(att.stream));
            RETURN NEXT;
        ELSIF att.tgenabled OPERATOR(pg_catalog.=) 'D' THEN
            kind := 'sequence_trigger_disabled';
            detail := pg_catalog.format('table %s (stream %s): its sequencing trigger is disabled, rows inserted now get no number',
                                        att.table_name, pg_catalog.quote_literal(att.stream));
            RETURN NEXT;
        ELSIF att.companions OPERATOR(pg_catalog.<) 2 THEN
            kind := 'sequence_trigger_incomplete';
            detail := pg_catalog.format('table %s (stream %s): a companion of its sequencing trigger is missing or not enabled like it, inserts fail',
                                        att.table_name, pg_catalog.quote_literal(att.stream));
            RETURN NEXT;
        END IF;
        problem := ordering_internal.attachment_problem(att.table_name, att.resource_column,
                                                        att.sequence_column);
        IF problem IS NOT NULL THEN
            kind := 'attached_table_changed';
            detail := pg_catalog.format('table %s (stream %s): %s, inserts fail and its rows were not checked',
                                        att.table_name, pg_catalog.quote_literal(att.stream), problem);
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF NOT pg_catalog.has_table_privilege(att.table_name, 'SELECT') THEN
            RAISE WARNING 'table % was not checked: permission denied', att.table_name;
            CONTINUE;
        END IF;
        -- Citus: a distributed stream's counters are in its own table
        IF citus THEN
            IF ordering_internal.distributed_counters(att.stream) IS NOT NULL THEN
                RETURN QUERY SELECT * FROM ordering_internal.check_distributed(
                    att.table_name, att.resource_column, att.sequence_column, att.stream,
                    max_per_kind);
                CONTINUE;
            END IF;
        END IF;
        -- the resource as the trigger keys it (ordering.resource_key)
        RETURN QUERY EXECUTE pg_catalog.format($q$
            SELECT v.kind, v.detail FROM (
            SELECT k.ord, x.res, k.kind,
                   pg_catalog.row_number() OVER (PARTITION BY k.ord ORDER BY x.res) AS n,
                   CASE k.kind
                   WHEN 'counter_behind_table' THEN
                       pg_catalog.format('table %%s (stream %%s), resource %%s: highest seq %%s, counter %%s',
                                         $1, pg_catalog.quote_literal($2), pg_catalog.quote_literal(x.res),
                                         x.hi, COALESCE(s.last_seq::pg_catalog.text, 'missing'))
                   ELSE
                       pg_catalog.format('table %%s (stream %%s), resource %%s: %%s rows hold %%s numbers',
                                         $1, pg_catalog.quote_literal($2), pg_catalog.quote_literal(x.res),
                                         x.n, x.distinct_seqs)
                   END AS detail
              FROM (SELECT ordering.resource_key(t.%1$I) AS res, pg_catalog.max(t.%2$I) AS hi,
                           pg_catalog.count(t.%2$I) AS n,
                           pg_catalog.count(DISTINCT t.%2$I) AS distinct_seqs
                      FROM %3$s t%4$s
                     WHERE t.%1$I IS NOT NULL
                     GROUP BY 1) x
              LEFT JOIN LATERAL (SELECT q.last_seq FROM ordering.sequences q
                                  WHERE q.stream OPERATOR(pg_catalog.=) $2
                                    AND q.resource_id OPERATOR(pg_catalog.=) x.res
                                  LIMIT 1) s ON true
             CROSS JOIN LATERAL (VALUES
                   (1, 'counter_behind_table'::pg_catalog.text,
                    s.last_seq IS NULL OR s.last_seq OPERATOR(pg_catalog.<) x.hi),
                   (2, 'seq_repeated_in_table',
                    x.n OPERATOR(pg_catalog.<>) x.distinct_seqs)) k(ord, kind, violated)
             WHERE k.violated) v
             WHERE $3 IS NULL OR v.n OPERATOR(pg_catalog.<=) $3
             ORDER BY v.ord, v.res$q$,
            att.resource_column, att.sequence_column, att.table_name, sample)
            USING att.table_name::pg_catalog.text, att.stream, max_per_kind;
    END LOOP;

    -- Producer: a sequencing trigger that attach() did not register (made
    -- by hand, or left on a partition detached from its table) refuses
    -- every insert (0A000).  Clones on partitions follow their table's.
    RETURN QUERY
    SELECT 'sequence_trigger_not_attached'::pg_catalog.text,
           pg_catalog.format('table %s: a sequencing trigger for stream %s that ordering.attach() did not register, inserts fail',
                             t.tgrelid::pg_catalog.regclass, pg_catalog.quote_literal(t.stream))
      FROM (SELECT tg.tgrelid,
                   COALESCE(args[3], n.nspname OPERATOR(pg_catalog.||) '.'
                                     OPERATOR(pg_catalog.||) c.relname) AS stream
              FROM pg_catalog.pg_trigger tg
              JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) tg.tgrelid
              JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
             CROSS JOIN LATERAL pg_catalog.string_to_array(
                   pg_catalog.rtrim(pg_catalog.encode(tg.tgargs, 'escape'), '\000'), '\000') args
             WHERE tg.tgfoid OPERATOR(pg_catalog.=) seq_fn
               AND tg.tgparentid OPERATOR(pg_catalog.=) 0
               -- Citus's copies on shards and workers (src/citus.c checks them)
               AND (tg.tgnargs OPERATOR(pg_catalog.<) 4
                    OR NOT ordering_internal.citus_trigger_copy(tg.tgrelid))) t
     WHERE NOT EXISTS (SELECT FROM ordering.attachments a
                        WHERE a.tbl OPERATOR(pg_catalog.=) t.tgrelid
                          AND a.attached
                          AND a.stream OPERATOR(pg_catalog.=) t.stream)
     ORDER BY t.tgrelid::pg_catalog.regclass::pg_catalog.text
     LIMIT max_per_kind;

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
    -- it is held as the dead letter, not parked, and the resource's
    -- position row is blocked at exactly its seq (blocked_at), which is
    -- what makes later events wait behind it.
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
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'dead_letter_not_blocking'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: dead letter seq %%s, but %%s',
                                 pg_catalog.quote_literal(d.consumer), pg_catalog.quote_literal(d.resource_id),
                                 d.seq,
                                 CASE WHEN pos.found IS NULL THEN 'the resource has no position row'
                                      WHEN pos.blocked_at IS NULL THEN 'the resource is not blocked'
                                      ELSE pg_catalog.format('the resource is blocked at seq %%s', pos.blocked_at)
                                 END)
          FROM ordering.dead_letter_events d%s
          LEFT JOIN LATERAL (SELECT true AS found, o.blocked_at FROM ordering.positions o
                              WHERE o.consumer OPERATOR(pg_catalog.=) d.consumer
                                AND o.resource_id OPERATOR(pg_catalog.=) d.resource_id
                              LIMIT 1) pos ON true
         WHERE pos.found IS NULL
            OR pos.blocked_at IS DISTINCT FROM d.seq
         ORDER BY d.consumer, d.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'block_without_dead_letter'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: blocked at seq %%s, but there is no dead letter',
                                 pg_catalog.quote_literal(o.consumer), pg_catalog.quote_literal(o.resource_id),
                                 o.blocked_at)
          FROM ordering.positions o%s
          LEFT JOIN LATERAL (SELECT true AS found FROM ordering.dead_letter_events d
                              WHERE d.consumer OPERATOR(pg_catalog.=) o.consumer
                                AND d.resource_id OPERATOR(pg_catalog.=) o.resource_id
                              LIMIT 1) k ON true
         WHERE o.blocked_at IS NOT NULL
           AND k.found IS NULL
         ORDER BY o.consumer, o.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;
    -- The summary of parked events kept with each position (its columns
    -- are added in the section "Consumer speed"); -1 is "not known".
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'parked_summary_mismatch'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: the position row says %%s parked in [%%s, %%s], ordering.parked holds %%s in [%%s, %%s]',
                                 pg_catalog.quote_literal(o.consumer), pg_catalog.quote_literal(o.resource_id),
                                 o.parked_count, o.parked_lowest, o.parked_highest,
                                 k.n, COALESCE(k.lowest, 0), COALESCE(k.highest, 0))
          FROM ordering.positions o%s
         CROSS JOIN LATERAL (SELECT pg_catalog.count(*) AS n, pg_catalog.min(p.seq) AS lowest,
                                    pg_catalog.max(p.seq) AS highest
                               FROM ordering.parked p
                              WHERE p.consumer OPERATOR(pg_catalog.=) o.consumer
                                AND p.resource_id OPERATOR(pg_catalog.=) o.resource_id) k
         WHERE o.parked_count OPERATOR(pg_catalog.>=) 0
           AND (o.parked_count OPERATOR(pg_catalog.<>) k.n
                OR (k.n OPERATOR(pg_catalog.>) 0
                    AND (o.parked_lowest OPERATOR(pg_catalog.<>) k.lowest
                         OR o.parked_highest OPERATOR(pg_catalog.<>) k.highest)))
         ORDER BY o.consumer, o.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;

    -- Citus: the distributed consumers' tables, on every node (section
    -- "Citus: consumers")
    RETURN QUERY SELECT * FROM ordering_internal.check_distributed_consumers(sample_percent, max_per_kind);

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

CREATE OR REPLACE FUNCTION ordering.post_restore() RETURNS boolean
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    att record;
    problems text[] := '{}';
BEGIN
    PERFORM ordering_internal.gap_deadline();
    DELETE FROM ordering.attachments a
     WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class c
                        WHERE c.oid OPERATOR(pg_catalog.=) a.tbl::pg_catalog.oid);
    -- Every table with a sequencing trigger (partitions have their parent's
    -- clone) is registered as attached with the trigger's stream and
    -- columns: one whose registry row was not restored (a schema-only
    -- restore) is registered from its trigger, a disagreement is refused.
    FOR att IN
        SELECT t.tgrelid::pg_catalog.regclass AS tbl, s.resource_column,
               s.sequence_column, s.stream, a.tbl AS registered, a.attached,
               a.stream AS registered_stream, a.resource_column AS registered_resource,
               a.sequence_column AS registered_sequence
          FROM pg_catalog.pg_trigger t
         CROSS JOIN LATERAL ordering_internal.sequencing_trigger(t.tgrelid::pg_catalog.regclass) s
          LEFT JOIN ordering.attachments a
            ON a.tbl::pg_catalog.oid OPERATOR(pg_catalog.=) t.tgrelid
         WHERE t.tgfoid OPERATOR(pg_catalog.=) 'ordering.sequence_trigger()'::pg_catalog.regprocedure
           AND t.tgparentid OPERATOR(pg_catalog.=) 0
           -- Citus's copies on shards and workers are not registered
           AND (t.tgnargs OPERATOR(pg_catalog.<) 4
                OR NOT ordering_internal.citus_trigger_copy(t.tgrelid))
         ORDER BY t.tgrelid
    LOOP
        IF att.registered IS NULL THEN
            INSERT INTO ordering.attachments (tbl, stream, resource_column, sequence_column)
            VALUES (att.tbl, att.stream, att.resource_column, att.sequence_column);
            RAISE NOTICE 'relation "%" registered as attached to stream "%", as its sequencing trigger says', att.tbl, att.stream;
        ELSIF NOT att.attached THEN
            problems := problems OPERATOR(pg_catalog.||) pg_catalog.format(
                'relation "%s" has the sequencing trigger of stream "%s", but ordering.attachments says it is detached',
                att.tbl, att.stream);
        ELSIF att.registered_stream OPERATOR(pg_catalog.<>) att.stream
           OR att.registered_resource OPERATOR(pg_catalog.<>) att.resource_column
           OR att.registered_sequence OPERATOR(pg_catalog.<>) att.sequence_column THEN
            problems := problems OPERATOR(pg_catalog.||) pg_catalog.format(
                'relation "%s" has the sequencing trigger of stream "%s" on columns (%s, %s), but ordering.attachments says stream "%s" on columns (%s, %s)',
                att.tbl, att.stream, att.resource_column, att.sequence_column,
                att.registered_stream, att.registered_resource, att.registered_sequence);
        END IF;
    END LOOP;
    FOR att IN
        SELECT a.tbl FROM ordering.attachments a
         WHERE a.attached
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_trigger t
                            WHERE t.tgrelid OPERATOR(pg_catalog.=) a.tbl::pg_catalog.oid
                              AND t.tgfoid OPERATOR(pg_catalog.=) 'ordering.sequence_trigger()'::pg_catalog.regprocedure)
         ORDER BY a.tbl::pg_catalog.oid
    LOOP
        problems := problems OPERATOR(pg_catalog.||) pg_catalog.format(
            'relation "%s" is attached in ordering.attachments, but has no sequencing trigger', att.tbl);
    END LOOP;
    IF pg_catalog.cardinality(problems) OPERATOR(pg_catalog.>) 0 THEN
        RAISE EXCEPTION 'the sequencing triggers and ordering.attachments disagree on % table(s)',
            pg_catalog.cardinality(problems)
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = pg_catalog.array_to_string(problems, E'\n'),
                  HINT = 'Make them agree, then call ordering.post_restore() again (restore mode stays on until then): ordering.detach() drops a trigger, ordering.attach() creates the triggers of a table and continues its stream.';
    END IF;
    -- every counter at least the highest number restored in its table
    FOR att IN SELECT * FROM ordering.attachments x WHERE x.attached LOOP
        -- a table whose columns changed is named and left
        CONTINUE WHEN NOT ordering_internal.attachment_restorable(att.tbl, att.stream,
                                                                  att.resource_column,
                                                                  att.sequence_column);
        -- Citus: a distributed stream's counter table, on every node
        IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
            IF ordering_internal.distributed_counters(att.stream) IS NOT NULL THEN
                PERFORM ordering_internal.citus_raise_counters(
                    att.tbl, att.resource_column, att.sequence_column, att.stream,
                    ordering_internal.distributed_counters(att.stream));
                CONTINUE;
            END IF;
        END IF;
        PERFORM ordering_internal.seed_counters(att.tbl);
    END LOOP;
    EXECUTE pg_catalog.format('ALTER DATABASE %I RESET ordering.restoring',
                              pg_catalog.current_database());
    PERFORM pg_catalog.set_config('ordering.restoring', 'off', false);
    RETURN true;
END
$$;

-- Relays of a distributed outbox (docs/citus.md, "Relays").  Citus refuses
-- SELECT ... FOR UPDATE SKIP LOCKED across shards, so a relay claims on one
-- node at a time: it connects to every node that holds shards of the outbox
-- (ordering.relay_nodes() names them), and on each claims from the shards
-- placed there, skipping what other relays of that node hold, publishes,
-- marks, and commits.  Each shard is claimed under its Citus metadata lock
-- (ordering_internal.lock_shard_for_relay()), so no move or split of it
-- completes while a relay holds rows of it, and a shard that moved away is
-- skipped: its rows are claimed on their new node.  The outbox needs the
-- columns id bigint and published_at timestamptz, as ordering.outbox has.

CREATE FUNCTION ordering_internal.lock_shard_for_relay(outbox regclass, shardid bigint)
    RETURNS void
    LANGUAGE c VOLATILE STRICT
    AS 'MODULE_PATHNAME', 'ordering_lock_shard_for_relay';
COMMENT ON FUNCTION ordering_internal.lock_shard_for_relay(regclass, bigint) IS
    'Internal to the relay functions: the Citus metadata lock of a shard of an outbox, in share mode, to the end of the transaction, for a caller who may update the outbox';
GRANT EXECUTE ON FUNCTION ordering_internal.lock_shard_for_relay(regclass, bigint) TO PUBLIC;

-- The shards of a distributed table placed on this node, locked for relays.
CREATE FUNCTION ordering_internal.relay_shards(outbox regclass)
    RETURNS TABLE (shardid bigint, shard regclass)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    sh record;
    still boolean;
BEGIN
    IF (ordering_internal.citus_distribution(outbox)).partmethod IS DISTINCT FROM 'h' THEN
        RAISE EXCEPTION 'relation "%" is not distributed by Citus', outbox
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Relays of a table on one node claim with SELECT ... FOR UPDATE SKIP LOCKED (ordering.claim_unpublished() for ordering.outbox).';
    END IF;
    FOR sh IN EXECUTE $q$
        SELECT s.shardid, pg_catalog.shard_name(s.logicalrelid, s.shardid, false) AS name
          FROM pg_catalog.pg_dist_shard s
          JOIN pg_catalog.pg_dist_placement p ON p.shardid OPERATOR(pg_catalog.=) s.shardid
         WHERE s.logicalrelid OPERATOR(pg_catalog.=) $1
           AND p.groupid OPERATOR(pg_catalog.=) (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g)
         ORDER BY pg_catalog.random()$q$ USING outbox
    LOOP
        PERFORM ordering_internal.lock_shard_for_relay(outbox, sh.shardid);
        -- after the lock: is it still here (not moved or split meanwhile)?
        EXECUTE $q$
            SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_placement p
                            WHERE p.shardid OPERATOR(pg_catalog.=) $1
                              AND p.groupid OPERATOR(pg_catalog.=)
                                  (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g))$q$
           INTO still USING sh.shardid;
        IF still THEN
            shardid := sh.shardid;
            shard := pg_catalog.to_regclass(sh.name);
            RETURN NEXT;
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering_internal.relay_shards(regclass) IS
    'Internal to the relay functions: the shards of a distributed outbox placed on this node, each locked against moves and splits to the end of the transaction';

CREATE FUNCTION ordering.claim_unpublished_on_node(outbox anyelement,
                                                   batch_size integer DEFAULT 100)
    RETURNS SETOF anyelement
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    tbl regclass;
    sh record;
    wanted bigint;
    got bigint;
BEGIN
    IF batch_size IS NULL THEN
        RAISE EXCEPTION 'batch_size must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF batch_size OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'batch_size must not be negative, got %', batch_size
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT NULLIF(t.typrelid, 0)::pg_catalog.regclass INTO tbl
      FROM pg_catalog.pg_type t
     WHERE t.oid OPERATOR(pg_catalog.=) pg_catalog.pg_typeof(outbox);
    IF tbl IS NULL THEN
        RAISE EXCEPTION 'outbox must be a row of the outbox table, got type %', pg_catalog.pg_typeof(outbox)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Call it as ordering.claim_unpublished_on_node(NULL::my_outbox, 100).';
    END IF;
    wanted := batch_size;
    FOR sh IN SELECT * FROM ordering_internal.relay_shards(tbl) LOOP
        EXIT WHEN wanted OPERATOR(pg_catalog.<=) 0;
        RETURN QUERY EXECUTE pg_catalog.format(
            'SELECT * FROM %s o WHERE o.published_at IS NULL '
            ' ORDER BY o.id LIMIT $1 FOR UPDATE SKIP LOCKED', sh.shard)
          USING wanted;
        GET DIAGNOSTICS got = ROW_COUNT;
        wanted := wanted OPERATOR(pg_catalog.-) got;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering.claim_unpublished_on_node(anyelement, integer) IS
    'For relays of an outbox distributed by Citus, on each node that holds its shards: up to batch_size unpublished rows of the shards placed on this node, locked until the end of the caller''s transaction and skipped by other relays; call it as claim_unpublished_on_node(NULL::my_outbox, n)';
REVOKE EXECUTE ON FUNCTION ordering.claim_unpublished_on_node(anyelement, integer) FROM PUBLIC;

CREATE FUNCTION ordering.mark_published_on_node(outbox regclass, ids bigint[])
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    sh record;
    got bigint;
    total bigint := 0;
BEGIN
    IF outbox IS NULL OR ids IS NULL THEN
        RAISE EXCEPTION 'outbox and ids must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    FOR sh IN SELECT * FROM ordering_internal.relay_shards(outbox) LOOP
        EXECUTE pg_catalog.format(
            'UPDATE %s o SET published_at = pg_catalog.now() '
            ' WHERE o.id OPERATOR(pg_catalog.=) ANY ($1) AND o.published_at IS NULL', sh.shard)
          USING ids;
        GET DIAGNOSTICS got = ROW_COUNT;
        total := total OPERATOR(pg_catalog.+) got;
    END LOOP;
    RETURN total;
END
$$;
COMMENT ON FUNCTION ordering.mark_published_on_node(regclass, bigint[]) IS
    'For relays of an outbox distributed by Citus: stamps published_at on the rows with these ids in the shards placed on this node (those claim_unpublished_on_node() returned there); returns rows changed';
REVOKE EXECUTE ON FUNCTION ordering.mark_published_on_node(regclass, bigint[]) FROM PUBLIC;

CREATE FUNCTION ordering.relay_nodes(outbox regclass)
    RETURNS TABLE (node_name text, node_port integer, shards bigint)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF (ordering_internal.citus_distribution(outbox)).partmethod IS DISTINCT FROM 'h' THEN
        RAISE EXCEPTION 'relation "%" is not distributed by Citus', outbox
            USING ERRCODE = 'feature_not_supported';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT n.nodename::pg_catalog.text, n.nodeport, pg_catalog.count(*)
          FROM pg_catalog.pg_dist_shard s
          JOIN pg_catalog.pg_dist_placement p ON p.shardid OPERATOR(pg_catalog.=) s.shardid
          JOIN pg_catalog.pg_dist_node n ON n.groupid OPERATOR(pg_catalog.=) p.groupid
                                        AND n.noderole OPERATOR(pg_catalog.=) 'primary'
         WHERE s.logicalrelid OPERATOR(pg_catalog.=) $1
         GROUP BY 1, 2
         ORDER BY 1, 2$q$ USING outbox;
END
$$;
COMMENT ON FUNCTION ordering.relay_nodes(regclass) IS
    'For relays of an outbox distributed by Citus: the nodes that hold its shards now, where relays claim with ordering.claim_unpublished_on_node(); ask again after moves, rebalances and new nodes';
REVOKE EXECUTE ON FUNCTION ordering.relay_nodes(regclass) FROM PUBLIC;

-- The producer set gets the relay functions of a distributed outbox.
CREATE OR REPLACE FUNCTION ordering.grant_producer(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering_internal.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.emit(text, text, jsonb, bigint), '
        'ordering.next_sequence(text, text), ordering.last_sequence(text, text), '
        'ordering.attach(regclass, name, name, text), ordering.detach(regclass), '
        'ordering.wake_relays(regclass, boolean), '
        'ordering_internal.create_sequencing_triggers(regclass, name, name, text), '
        'ordering.sequence_trigger(), ordering.sequence_stored_trigger(), '
        'ordering.sequence_guard(), ordering.resource_key(anyelement), '
        'ordering.claim_unpublished(integer, boolean, interval), '
        'ordering.wait_for_standbys(interval), '
        'ordering.mark_published(bigint[]), ordering.republish(text, bigint, bigint), '
        'ordering.purge_published(interval), '
        -- reconciliation, producer side
        'ordering.stream_summary(text, integer, text, text[]), '
        'ordering.reconcile(jsonb, integer, integer[], text, text, text[], interval, boolean), '
        'ordering_internal.count_reconciled(text, bigint, bigint, bigint), '
        'ordering_internal.reconcile_check_arguments(integer, text), '
        'ordering_internal.reconcile_check_stream(text, text[]), '
        'ordering_internal.reconcile_producer_resources(text, text, text[]), '
        'ordering.resource_bucket(text, integer), ordering.resource_fingerprint(text, bigint), '
        -- relays of an outbox distributed by Citus
        'ordering.claim_unpublished_on_node(anyelement, integer), '
        'ordering.mark_published_on_node(regclass, bigint[]), ordering.relay_nodes(regclass)',
        -- the outbox is written by plain SQL (emit, relays, retention)
        'SELECT, INSERT, UPDATE, DELETE ON ordering.outbox',
        'SELECT ON ordering.sequences',
        -- attach() reads the registry; it and detach() write it through
        -- two functions of ordering_internal, never with SQL
        'SELECT ON ordering.attachments',
        'EXECUTE ON FUNCTION ordering_internal.attachment_register(regclass, text, name, name), '
        'ordering_internal.attachment_unregister(regclass)');
END
$$;

COMMENT ON FUNCTION ordering.grant_producer(regrole) IS
    'Grants what a producer and its relays need: emit, next/last_sequence, attach/detach, wake_relays, the relay functions (claim_unpublished, wait_for_standbys, mark_published, republish, purge_published, and for an outbox distributed by Citus claim_unpublished_on_node, mark_published_on_node, relay_nodes), the producer side of reconciliation, and the outbox; read access to the counters and to the registry of attached tables, which only attach() and detach() write';

-- Roles that have the producer set (EXECUTE on attach(), as 1.1 and the
-- hardening recognize them) get them too.
DO $$
DECLARE
    grantee regrole;
BEGIN
    FOR grantee IN SELECT * FROM ordering_internal.roles_holding('ordering.attach(regclass, name, name, text)') LOOP
        PERFORM ordering.grant_privileges(grantee,
            'EXECUTE ON FUNCTION ordering.claim_unpublished_on_node(anyelement, integer), '
            'ordering.mark_published_on_node(regclass, bigint[]), ordering.relay_nodes(regclass)');
    END LOOP;
END
$$;

-- Privileges.  Every function above that is not in schema ordering is
-- SECURITY INVOKER (it does only what its caller may do anyway) or checks
-- its caller's rights itself (lock_shard_for_relay):
-- EXECUTE for PUBLIC, so that attach(), detach(), last_sequence(), check(),
-- post_restore() and the relay functions work for whoever may call those
-- (every role has USAGE on schema ordering_internal).  On one node they
-- never call into these functions.
GRANT EXECUTE ON FUNCTION ordering_internal.counter_table_name(text),
    ordering_internal.distributed_counters(text),
    ordering_internal.citus_distribution(regclass),
    ordering_internal.citus_attach_check(regclass, name),
    ordering_internal.citus_counter_table(regclass, name, text),
    ordering_internal.create_distributed_sequencing_triggers(regclass, name, name, text, regclass),
    ordering_internal.citus_raise_counters(regclass, name, name, text, regclass),
    ordering_internal.citus_trigger_copy(regclass),
    ordering_internal.check_distributed(regclass, name, name, text, bigint),
    ordering_internal.relay_shards(regclass)
    TO PUBLIC;

-- (end of section)

-- ------------------------------------------------------------------------
-- Citus: consumers
-- ------------------------------------------------------------------------

-- A distributed consumer (docs/citus.md, "Consumers"; src/consumer_citus.c)
-- keeps its positions, parked events, dead letters and gap requests in
-- four tables of the shapes of the extension's own, distributed by
-- resource_id and co-located with the consumer's projection, plus a call
-- function that Citus delegates to the node of a resource.  Their names
-- start with the consumer's tag, so that every node finds them from the
-- consumer's name alone.
CREATE FUNCTION ordering_internal.consumer_tag(consumer text) RETURNS text
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'ordering_consumer_tag';
COMMENT ON FUNCTION ordering_internal.consumer_tag(text) IS
    'The prefix of the names of a distributed consumer''s tables and call function: consumer_ followed by the first 16 hex digits of the SHA-256 of its name';
-- Any role may call it: a hash of its argument, telling where an operator
-- finds a consumer's tables.
GRANT EXECUTE ON FUNCTION ordering_internal.consumer_tag(text) TO PUBLIC;

-- The distributed consumers of this database, on the coordinator where
-- ordering.distribute_consumer() ran (the nodes find a consumer's tables by
-- its tag; this list is for SQL: the sweep, check(), reconciliation).
CREATE TABLE ordering_internal.distributed_consumers (
    consumer       text COLLATE "C" PRIMARY KEY,
    tag            text NOT NULL UNIQUE,
    colocate_with  regclass NOT NULL,
    distributed_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE ordering_internal.distributed_consumers IS
    'The consumers whose state Citus distributes (ordering.distribute_consumer): tag of their tables in ordering_internal, and the table they are co-located with';
SELECT pg_catalog.pg_extension_config_dump('ordering_internal.distributed_consumers', '');
-- Readable by every role: it names consumers and the tables they follow
-- (ordering.check() reads it as its caller).
GRANT SELECT ON ordering_internal.distributed_consumers TO PUBLIC;

-- The tables of a distributed consumer, of the shapes of the extension's
-- own (LIKE ... INCLUDING ALL, so they follow any change of those), with
-- the collation of the projection's distribution column on resource_id,
-- as Citus's co-location requires.
CREATE FUNCTION ordering.distribute_consumer(consumer text, colocate_with regclass)
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    tag text;
    part record;
    col record;
    tbl record;
    g record;
    libfile text;
    fn record;
    fn_sig pg_catalog.regprocedure;
    coordinator boolean;
BEGIN
    IF consumer IS NULL OR colocate_with IS NULL THEN
        RAISE EXCEPTION 'consumer and colocate_with must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF consumer OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'consumer must not be empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.octet_length(consumer) OPERATOR(pg_catalog.>) 1024 THEN
        RAISE EXCEPTION 'consumer is too long (% bytes, at most 1024)', pg_catalog.octet_length(consumer)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension e
                    WHERE e.extname OPERATOR(pg_catalog.=) 'citus') THEN
        RAISE EXCEPTION 'Citus is not installed in this database'
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'ordering.distribute_consumer() keeps a consumer''s state in tables that Citus distributes.',
                  HINT = 'Run CREATE EXTENSION citus and add the worker nodes first; on one node, a consumer needs no distribution.';
    END IF;
    EXECUTE 'SELECT pg_catalog.citus_is_coordinator()' INTO coordinator;
    IF NOT coordinator THEN
        RAISE EXCEPTION 'ordering.distribute_consumer() must run on the coordinator'
            USING ERRCODE = 'feature_not_supported';
    END IF;

    -- the projection: hash-distributed, one placement per shard, by a text
    -- column of a deterministic collation
    EXECUTE 'SELECT p.partmethod, p.repmodel, p.colocationid,'
            '       pg_catalog.column_to_column_name(p.logicalrelid, p.partkey) AS distcol'
            '  FROM pg_catalog.pg_dist_partition p'
            ' WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1'
       INTO part USING colocate_with;
    IF part IS NULL OR part.partmethod OPERATOR(pg_catalog.<>) 'h' THEN
        RAISE EXCEPTION 'table % is not a hash-distributed table', colocate_with
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'A distributed consumer''s state is co-located with a table distributed by the resource id.',
                  HINT = 'Distribute the consumer''s projection first: SELECT create_distributed_table(''<table>'', ''<resource column>'').';
    END IF;
    IF part.repmodel OPERATOR(pg_catalog.<>) 's' THEN
        RAISE EXCEPTION 'table % has replicated shards', colocate_with
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'Citus delegates a call only to a shard with one placement.',
                  HINT = 'Distribute the projection with citus.shard_replication_factor = 1.';
    END IF;
    SELECT a.atttypid, a.attcollation, c.collisdeterministic,
           pg_catalog.format('%I.%I', n.nspname, c.collname) AS collname
      INTO col
      FROM pg_catalog.pg_attribute a
      LEFT JOIN pg_catalog.pg_collation c ON c.oid OPERATOR(pg_catalog.=) a.attcollation
      LEFT JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.collnamespace
     WHERE a.attrelid OPERATOR(pg_catalog.=) colocate_with
       AND a.attname OPERATOR(pg_catalog.=) part.distcol;
    IF col.atttypid OPERATOR(pg_catalog.<>) 'pg_catalog.text'::pg_catalog.regtype THEN
        RAISE EXCEPTION 'table % is distributed by column % of type %, not text',
                        colocate_with, part.distcol, col.atttypid::pg_catalog.regtype
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'A distributed consumer is distributed by its resource ids, which are text.',
                  HINT = 'Distribute the projection by a text column that holds the resource id.';
    END IF;
    IF NOT col.collisdeterministic THEN
        RAISE EXCEPTION 'table % is distributed by a column of the nondeterministic collation %',
                        colocate_with, col.collname
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Use a deterministic collation for the resource column.';
    END IF;

    tag := ordering_internal.consumer_tag(consumer);
    IF EXISTS (SELECT FROM ordering_internal.distributed_consumers d
                WHERE d.consumer OPERATOR(pg_catalog.=) distribute_consumer.consumer)
       OR pg_catalog.to_regclass(pg_catalog.format('ordering_internal.%I', tag || '_positions')) IS NOT NULL THEN
        RAISE EXCEPTION 'consumer "%" is distributed already', consumer
            USING ERRCODE = 'duplicate_object';
    END IF;

    -- No local call of the consumer may run meanwhile: those in progress
    -- finish first, later ones wait and then find the consumer distributed.
    LOCK TABLE ordering.positions, ordering.parked, ordering.dead_letter_events,
               ordering.gap_requests IN SHARE ROW EXCLUSIVE MODE;
    -- the tables are new in this transaction: one connection per node
    PERFORM pg_catalog.set_config('citus.multi_shard_modify_mode', 'sequential', true);

    FOR tbl IN
        SELECT v.suffix, v.source::pg_catalog.regclass AS source,
               pg_catalog.format('ordering_internal.%I', tag || v.suffix) AS name
          FROM (VALUES (1, '_positions', 'ordering.positions'),
                       (2, '_parked', 'ordering.parked'),
                       (3, '_dead_letters', 'ordering.dead_letter_events'),
                       (4, '_gap_requests', 'ordering.gap_requests')) v(ord, suffix, source)
         ORDER BY v.ord
    LOOP
        EXECUTE pg_catalog.format('CREATE TABLE %s (LIKE %s INCLUDING ALL)', tbl.name, tbl.source);
        EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN resource_id TYPE pg_catalog.text COLLATE %s',
                                  tbl.name, col.collname);
        -- storage parameters (the fillfactor of positions) are not LIKE's
        IF (SELECT c.reloptions FROM pg_catalog.pg_class c
             WHERE c.oid OPERATOR(pg_catalog.=) tbl.source) IS NOT NULL THEN
            EXECUTE pg_catalog.format('ALTER TABLE %s SET (%s)', tbl.name,
                (SELECT pg_catalog.array_to_string(c.reloptions, ', ') FROM pg_catalog.pg_class c
                  WHERE c.oid OPERATOR(pg_catalog.=) tbl.source));
        END IF;
        EXECUTE pg_catalog.format('COMMENT ON TABLE %s IS %L', tbl.name,
            pg_catalog.format('%s of distributed consumer %s (ordering.distribute_consumer)',
                              tbl.source, pg_catalog.quote_literal(consumer)));
        EXECUTE 'SELECT pg_catalog.create_distributed_table($1, ''resource_id'', colocate_with => $2)'
          USING tbl.name::pg_catalog.regclass, colocate_with::pg_catalog.text;
        -- who may read the extension's table may read the consumer's
        FOR g IN
            SELECT e.privilege_type, e.grantee
              FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) e
             WHERE c.oid OPERATOR(pg_catalog.=) tbl.source
               AND e.grantee OPERATOR(pg_catalog.<>) c.relowner
        LOOP
            EXECUTE pg_catalog.format('GRANT %s ON %s TO %s', g.privilege_type, tbl.name,
                CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                     ELSE g.grantee::pg_catalog.regrole::pg_catalog.text END);
        END LOOP;
        -- the consumer's state so far moves along
        EXECUTE pg_catalog.format('INSERT INTO %s SELECT * FROM %s s WHERE s.consumer OPERATOR(pg_catalog.=) $1',
                                  tbl.name, tbl.source)
          USING consumer;
        EXECUTE pg_catalog.format('DELETE FROM %s s WHERE s.consumer OPERATOR(pg_catalog.=) $1', tbl.source)
          USING consumer;
    END LOOP;
    -- rows written with SQL: the summary of parked events kept with each
    -- position (section "Consumer speed") is not known, the next call of
    -- each resource counts again
    EXECUTE pg_catalog.format('UPDATE ordering_internal.%I SET parked_count = -1', tag || '_positions');

    -- The call and batch functions: the same C functions for every
    -- consumer, which find their tables from their own names.  Every role
    -- may execute them: they check that their caller may execute the
    -- consumer function they run.
    SELECT p.probin INTO libfile FROM pg_catalog.pg_proc p
     WHERE p.oid OPERATOR(pg_catalog.=) 'ordering.deliver(text, text, bigint, jsonb)'::pg_catalog.regprocedure;
    FOR fn IN
        SELECT v.suffix, v.symbol, v.args, v.result, v.rows, v.comment,
               pg_catalog.regexp_replace(v.args, '(^|, )[a-z_]+ ', '\1', 'g') AS types,
               pg_catalog.format('ordering_internal.%I', tag || v.suffix) AS name
          FROM (VALUES ('_call', 'ordering_consumer_call',
                        'op pg_catalog."char", resource_id pg_catalog.text, consumer pg_catalog.text, '
                        'seq pg_catalog.int8, payload pg_catalog.jsonb, handler pg_catalog.regprocedure, '
                        'option pg_catalog.text',
                        'seq pg_catalog.int8, payload pg_catalog.jsonb', 1,
                        'Runs the calls of distributed consumer %s on the node of their resource (ordering.distribute_consumer)'),
                       ('_batch', 'ordering_consumer_batch',
                        'op pg_catalog."char", resource_id pg_catalog.text, consumer pg_catalog.text, '
                        'ords pg_catalog.int4[], resource_ids pg_catalog.text[], seqs pg_catalog.int8[], '
                        'payloads pg_catalog.jsonb[], handler pg_catalog.regprocedure, option pg_catalog.text',
                        'ord pg_catalog.int4, seq pg_catalog.int8, payload pg_catalog.jsonb', 100,
                        'Runs a part of a batch of distributed consumer %s on the node of its shard (ordering.distribute_consumer)'))
               v(suffix, symbol, args, result, rows, comment)
    LOOP
        EXECUTE pg_catalog.format('CREATE FUNCTION %s(%s) RETURNS TABLE (%s) LANGUAGE c VOLATILE ROWS %s AS %L, %L',
                                  fn.name, fn.args, fn.result, fn.rows, libfile, fn.symbol);
        fn_sig := (pg_catalog.format('%s(%s)', fn.name, fn.types))::pg_catalog.regprocedure;
        EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', fn_sig,
                                  pg_catalog.format(fn.comment, pg_catalog.quote_literal(consumer)));
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', fn_sig);
        EXECUTE 'SELECT pg_catalog.create_distributed_function($1, ''$2'', colocate_with => $2, force_delegation => true)'
          USING fn_sig, pg_catalog.format('ordering_internal.%I', tag || '_positions');
    END LOOP;

    INSERT INTO ordering_internal.distributed_consumers (consumer, tag, colocate_with)
    VALUES (consumer, tag, colocate_with);
END
$$;
COMMENT ON FUNCTION ordering.distribute_consumer(text, regclass) IS
    'Citus: keeps the consumer''s positions, parked events, dead letters and gap requests in tables distributed by resource and co-located with colocate_with (its projection, distributed by a text column), and runs each of its calls on the node of its resource; its state so far moves along';
REVOKE EXECUTE ON FUNCTION ordering.distribute_consumer(text, regclass) FROM PUBLIC;


-- The gaps of distributed consumers: each node lists or sweeps those of the
-- shard groups it holds (src/gaps_citus.c), and ordering.sweep_gaps() on
-- the coordinator sweeps every node's and announces their requests there.
CREATE FUNCTION ordering_internal.shard_gaps(deadline double precision, sweep boolean)
    RETURNS text
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_shard_gaps';
COMMENT ON FUNCTION ordering_internal.shard_gaps(double precision, boolean) IS
    'This node''s part of the gaps of the distributed consumers: the open gaps older than deadline seconds of the shard groups placed here, or with sweep, one gap sweep of them and the requests it emitted; a JSON array of rows';
-- The monitoring set lists the gaps with it; a sweep writes gap requests
-- and needs EXECUTE on ordering.sweep_gaps() too (ordering.sweep_gaps()
-- runs it on every node as its own caller).
REVOKE EXECUTE ON FUNCTION ordering_internal.shard_gaps(double precision, boolean) FROM PUBLIC;

-- The open gaps of the distributed consumers, from every node (on the
-- coordinator; ordering.open_gaps lists those of the other consumers).
CREATE FUNCTION ordering.distributed_open_gaps()
    RETURNS TABLE (nodeid integer, consumer text, resource_id text, missing_from bigint,
                   missing_to bigint, parked_count bigint, first_parked_at timestamptz)
    LANGUAGE plpgsql VOLATILE ROWS 10
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    node record;
BEGIN
    IF NOT EXISTS (SELECT FROM ordering_internal.distributed_consumers) THEN
        RETURN;
    END IF;
    FOR node IN EXECUTE
        'SELECT r.nodeid, r.success, r.result FROM pg_catalog.run_command_on_all_nodes($1) r ORDER BY r.nodeid'
        USING pg_catalog.format('SELECT ordering_internal.shard_gaps(%s, false)',
                                pg_catalog.date_part('epoch', ordering_internal.gap_deadline()))
    LOOP
        IF NOT node.success THEN
            RAISE EXCEPTION 'listing the gaps failed on node %: %', node.nodeid, node.result
                USING ERRCODE = 'connection_failure';
        END IF;
        RETURN QUERY
        SELECT node.nodeid, g.consumer, g.resource_id, g.missing_from, g.missing_to,
               g.parked_count, g.first_parked_at
          FROM pg_catalog.json_to_recordset(node.result::pg_catalog.json)
               AS g(consumer text, resource_id text, missing_from bigint, missing_to bigint,
                    parked_count bigint, first_parked_at timestamptz)
         ORDER BY g.consumer, g.resource_id;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering.distributed_open_gaps() IS
    'Citus: the gaps of the distributed consumers whose oldest parked event is older than ordering.gap_deadline, from every node (nodeid of pg_dist_node); run it on the coordinator';
REVOKE EXECUTE ON FUNCTION ordering.distributed_open_gaps() FROM PUBLIC;

-- ordering.check()'s part for the distributed consumers (on the
-- coordinator, through Citus: each query reads every node's shards): the
-- invariants of the extension's own tables, on each consumer's tables,
-- and that the consumer's state is there only.
CREATE FUNCTION ordering_internal.check_distributed_consumers(sample_percent double precision,
                                                              max_per_kind bigint)
    RETURNS TABLE (kind text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    dc record;
    t record;
    sample text := '';
    q text;
BEGIN
    IF sample_percent OPERATOR(pg_catalog.<) 100 THEN
        sample := pg_catalog.format(' TABLESAMPLE SYSTEM (%s)', sample_percent);
    END IF;
    FOR dc IN SELECT d.* FROM ordering_internal.distributed_consumers d ORDER BY d.consumer LOOP
        SELECT pg_catalog.to_regclass(pg_catalog.format('ordering_internal.%I', dc.tag || '_positions')) AS positions,
               pg_catalog.to_regclass(pg_catalog.format('ordering_internal.%I', dc.tag || '_parked')) AS parked,
               pg_catalog.to_regclass(pg_catalog.format('ordering_internal.%I', dc.tag || '_dead_letters')) AS dead,
               pg_catalog.to_regclass(pg_catalog.format('ordering_internal.%I', dc.tag || '_gap_requests')) AS gaps
          INTO t;
        IF t.positions IS NULL OR t.parked IS NULL OR t.dead IS NULL OR t.gaps IS NULL THEN
            kind := 'distributed_consumer_tables_missing';
            detail := pg_catalog.format('consumer %s: its tables %s_* are missing',
                                        pg_catalog.quote_literal(dc.consumer), dc.tag);
            RETURN NEXT;
            CONTINUE;
        END IF;
        -- a distributed consumer's state is in its tables only
        RETURN QUERY
        SELECT 'distributed_consumer_local_rows'::pg_catalog.text,
               pg_catalog.format('consumer %s: %s rows in %s', pg_catalog.quote_literal(dc.consumer), x.n, x.tbl)
          FROM (SELECT 'ordering.positions' AS tbl, (SELECT pg_catalog.count(*) FROM ordering.positions p
                                                     WHERE p.consumer OPERATOR(pg_catalog.=) dc.consumer) AS n
                UNION ALL
                SELECT 'ordering.parked', (SELECT pg_catalog.count(*) FROM ordering.parked p
                                            WHERE p.consumer OPERATOR(pg_catalog.=) dc.consumer)
                UNION ALL
                SELECT 'ordering.dead_letter_events', (SELECT pg_catalog.count(*) FROM ordering.dead_letter_events p
                                                       WHERE p.consumer OPERATOR(pg_catalog.=) dc.consumer)
                UNION ALL
                SELECT 'ordering.gap_requests', (SELECT pg_catalog.count(*) FROM ordering.gap_requests p
                                                 WHERE p.consumer OPERATOR(pg_catalog.=) dc.consumer)) x
         WHERE x.n OPERATOR(pg_catalog.>) 0;
        -- the invariants of ordering.check(), kind by kind
        FOR q IN
            SELECT v.q FROM (VALUES
            ($q$SELECT 'parked_not_ahead'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: parked seq %%s, position %%s',
                                     pg_catalog.quote_literal(p.consumer), pg_catalog.quote_literal(p.resource_id),
                                     p.seq, COALESCE(pos.position, 0))
              FROM %2$s p%6$s
              LEFT JOIN LATERAL (SELECT o.position FROM %1$s o
                                  WHERE o.consumer OPERATOR(pg_catalog.=) p.consumer
                                    AND o.resource_id OPERATOR(pg_catalog.=) p.resource_id
                                  LIMIT 1) pos ON true
             WHERE p.seq OPERATOR(pg_catalog.<=) COALESCE(pos.position, 0)
             ORDER BY p.consumer, p.resource_id, p.seq LIMIT $1$q$),
            ($q$SELECT 'parked_not_drained'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: parked seq %%s is next after position %%s',
                                     pg_catalog.quote_literal(p.consumer), pg_catalog.quote_literal(p.resource_id),
                                     p.seq, COALESCE(pos.position, 0))
              FROM %2$s p%6$s
              LEFT JOIN LATERAL (SELECT o.position FROM %1$s o
                                  WHERE o.consumer OPERATOR(pg_catalog.=) p.consumer
                                    AND o.resource_id OPERATOR(pg_catalog.=) p.resource_id
                                  LIMIT 1) pos ON true
             WHERE p.seq OPERATOR(pg_catalog.=) (COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1)
             ORDER BY p.consumer, p.resource_id, p.seq LIMIT $1$q$),
            ($q$SELECT 'gap_request_without_parked'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: gap request for %%s..%%s, nothing parked',
                                     pg_catalog.quote_literal(g.consumer), pg_catalog.quote_literal(g.resource_id),
                                     g.missing_from, g.missing_to)
              FROM %4$s g%6$s
              LEFT JOIN LATERAL (SELECT true AS found FROM %2$s p
                                  WHERE p.consumer OPERATOR(pg_catalog.=) g.consumer
                                    AND p.resource_id OPERATOR(pg_catalog.=) g.resource_id
                                  LIMIT 1) k ON true
             WHERE k.found IS NULL
             ORDER BY g.consumer, g.resource_id LIMIT $1$q$),
            ($q$SELECT 'gap_request_filled'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: gap request for %%s..%%s, position %%s',
                                     pg_catalog.quote_literal(g.consumer), pg_catalog.quote_literal(g.resource_id),
                                     g.missing_from, g.missing_to, COALESCE(pos.position, 0))
              FROM %4$s g%6$s
              LEFT JOIN LATERAL (SELECT o.position FROM %1$s o
                                  WHERE o.consumer OPERATOR(pg_catalog.=) g.consumer
                                    AND o.resource_id OPERATOR(pg_catalog.=) g.resource_id
                                  LIMIT 1) pos ON true
             WHERE g.missing_to OPERATOR(pg_catalog.<=) COALESCE(pos.position, 0)
             ORDER BY g.consumer, g.resource_id LIMIT $1$q$),
            ($q$SELECT 'gap_request_empty'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: gap request for %%s..%%s',
                                     pg_catalog.quote_literal(g.consumer), pg_catalog.quote_literal(g.resource_id),
                                     g.missing_from, g.missing_to)
              FROM %4$s g%6$s
             WHERE g.missing_from OPERATOR(pg_catalog.>) g.missing_to
             ORDER BY g.consumer, g.resource_id LIMIT $1$q$),
            ($q$SELECT 'dead_letter_not_ahead'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: dead letter seq %%s, position %%s',
                                     pg_catalog.quote_literal(d.consumer), pg_catalog.quote_literal(d.resource_id),
                                     d.seq, COALESCE(pos.position, 0))
              FROM %3$s d%6$s
              LEFT JOIN LATERAL (SELECT o.position FROM %1$s o
                                  WHERE o.consumer OPERATOR(pg_catalog.=) d.consumer
                                    AND o.resource_id OPERATOR(pg_catalog.=) d.resource_id
                                  LIMIT 1) pos ON true
             WHERE d.seq OPERATOR(pg_catalog.<=) COALESCE(pos.position, 0)
             ORDER BY d.consumer, d.resource_id LIMIT $1$q$),
            ($q$SELECT 'dead_letter_parked'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: dead letter seq %%s is also parked',
                                     pg_catalog.quote_literal(d.consumer), pg_catalog.quote_literal(d.resource_id),
                                     d.seq)
              FROM %3$s d%6$s
              JOIN LATERAL (SELECT true AS found FROM %2$s p
                             WHERE p.consumer OPERATOR(pg_catalog.=) d.consumer
                               AND p.resource_id OPERATOR(pg_catalog.=) d.resource_id
                               AND p.seq OPERATOR(pg_catalog.=) d.seq
                             LIMIT 1) k ON true
             ORDER BY d.consumer, d.resource_id LIMIT $1$q$),
            ($q$SELECT 'dead_letter_not_blocking'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: dead letter seq %%s, but %%s',
                                     pg_catalog.quote_literal(d.consumer), pg_catalog.quote_literal(d.resource_id),
                                     d.seq,
                                     CASE WHEN pos.found IS NULL THEN 'the resource has no position row'
                                          WHEN pos.blocked_at IS NULL THEN 'the resource is not blocked'
                                          ELSE pg_catalog.format('the resource is blocked at seq %%s', pos.blocked_at)
                                     END)
              FROM %3$s d%6$s
              LEFT JOIN LATERAL (SELECT true AS found, o.blocked_at FROM %1$s o
                                  WHERE o.consumer OPERATOR(pg_catalog.=) d.consumer
                                    AND o.resource_id OPERATOR(pg_catalog.=) d.resource_id
                                  LIMIT 1) pos ON true
             WHERE pos.found IS NULL
                OR pos.blocked_at IS DISTINCT FROM d.seq
             ORDER BY d.consumer, d.resource_id LIMIT $1$q$),
            ($q$SELECT 'block_without_dead_letter'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: blocked at seq %%s, but there is no dead letter',
                                     pg_catalog.quote_literal(o.consumer), pg_catalog.quote_literal(o.resource_id),
                                     o.blocked_at)
              FROM %1$s o%6$s
              LEFT JOIN LATERAL (SELECT true AS found FROM %3$s d
                                  WHERE d.consumer OPERATOR(pg_catalog.=) o.consumer
                                    AND d.resource_id OPERATOR(pg_catalog.=) o.resource_id
                                  LIMIT 1) k ON true
             WHERE o.blocked_at IS NOT NULL
               AND k.found IS NULL
             ORDER BY o.consumer, o.resource_id LIMIT $1$q$),
            ($q$SELECT 'parked_summary_mismatch'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: the position row says %%s parked in [%%s, %%s], %%s holds %%s in [%%s, %%s]',
                                     pg_catalog.quote_literal(o.consumer), pg_catalog.quote_literal(o.resource_id),
                                     o.parked_count, o.parked_lowest, o.parked_highest, %2$L,
                                     k.n, COALESCE(k.lowest, 0), COALESCE(k.highest, 0))
              FROM %1$s o%6$s
             CROSS JOIN LATERAL (SELECT pg_catalog.count(*) AS n, pg_catalog.min(p.seq) AS lowest,
                                        pg_catalog.max(p.seq) AS highest
                                   FROM %2$s p
                                  WHERE p.consumer OPERATOR(pg_catalog.=) o.consumer
                                    AND p.resource_id OPERATOR(pg_catalog.=) o.resource_id) k
             WHERE o.parked_count OPERATOR(pg_catalog.>=) 0
               AND (o.parked_count OPERATOR(pg_catalog.<>) k.n
                    OR (k.n OPERATOR(pg_catalog.>) 0
                        AND (o.parked_lowest OPERATOR(pg_catalog.<>) k.lowest
                             OR o.parked_highest OPERATOR(pg_catalog.<>) k.highest)))
             ORDER BY o.consumer, o.resource_id LIMIT $1$q$),
            ($q$SELECT 'distributed_consumer_foreign_rows'::pg_catalog.text,
                   pg_catalog.format('consumer %%s: a row of consumer %%s in %%s',
                                     pg_catalog.quote_literal(%5$L), pg_catalog.quote_literal(x.consumer), %1$L)
              FROM %1$s x
             WHERE x.consumer OPERATOR(pg_catalog.<>) %5$L
             ORDER BY x.consumer LIMIT $1$q$)) v(q)
        LOOP
            RETURN QUERY EXECUTE pg_catalog.format(q, t.positions, t.parked, t.dead, t.gaps,
                                                   dc.consumer, sample)
              USING max_per_kind;
        END LOOP;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering_internal.check_distributed_consumers(double precision, bigint) IS
    'Internal to ordering.check(): the invariants of the distributed consumers'' tables, checked through Citus on every node, and that their state is nowhere else';
-- Any role may call it: it reads the tables as its caller (ordering.check()
-- runs it for whoever may run check()).
GRANT EXECUTE ON FUNCTION ordering_internal.check_distributed_consumers(double precision, bigint) TO PUBLIC;

-- Reconciliation, consumer side: a distributed consumer's summary and
-- state are read from its tables, through Citus (on any node).  The 1.1
-- queries, with the tables as arguments.
CREATE FUNCTION ordering_internal.distributed_consumer_table(consumer text, suffix text)
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
    SELECT ordering.resource_bucket(p.resource_id, $2) AS b,
           pg_catalog.count(*),
           pg_catalog.sum(p.position),
           pg_catalog.bit_xor(ordering.resource_fingerprint(p.resource_id, p.position))
      FROM %s p
     WHERE p.consumer OPERATOR(pg_catalog.=) $1
       AND p.position OPERATOR(pg_catalog.>) 0
       AND ($3 IS NULL OR pg_catalog.starts_with(p.resource_id, $3))
     GROUP BY b
     ORDER BY b$q$, COALESCE(positions, 'ordering.positions'::pg_catalog.regclass))
    USING consumer, buckets, resource_prefix;
END
$$;

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
           AND ordering.resource_bucket(p.resource_id, $2)
               OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.unnest($3))
    ), park AS (
        SELECT k.resource_id, pg_catalog.min(k.seq) AS lo, pg_catalog.max(k.seq) AS hi
          FROM %2$s k
         WHERE k.consumer OPERATOR(pg_catalog.=) $1
           AND ($4 IS NULL
                OR pg_catalog.starts_with(k.resource_id, $4))
           AND ordering.resource_bucket(k.resource_id, $2)
               OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.unnest($3))
         GROUP BY k.resource_id
    ), dead AS (
        SELECT d.resource_id, d.seq
          FROM %3$s d
         WHERE d.consumer OPERATOR(pg_catalog.=) $1
           AND ($4 IS NULL
                OR pg_catalog.starts_with(d.resource_id, $4))
           AND ordering.resource_bucket(d.resource_id, $2)
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

-- The monitoring set (and so the operator set) lists the distributed
-- consumers' gaps: grant_monitor() in section "Hardening: privileges,
-- self-checks, operations" grants distributed_open_gaps() and shard_gaps();
-- the operator set sweeps them (ordering.sweep_gaps()).  Citus does not
-- propagate GRANT EXECUTE: run the grant functions on every node
-- (docs/citus.md).  Roles that have the monitoring set (EXECUTE
-- on metrics()) get them on update.
DO $$
DECLARE
    grantee regrole;
BEGIN
    FOR grantee IN SELECT * FROM ordering_internal.roles_holding('ordering.metrics()') LOOP
        PERFORM ordering.grant_privileges(grantee,
            'EXECUTE ON FUNCTION ordering.distributed_open_gaps(), '
            'ordering_internal.shard_gaps(double precision, boolean)');
    END LOOP;
END
$$;

-- (end of section)

-- ------------------------------------------------------------------------
-- The public surface: plumbing moved to ordering_internal, one deliver(),
-- the 1.0 aliases retired (last: it moves what the sections above define)
-- ------------------------------------------------------------------------

-- What stays in schema ordering is what users call: the functions of the
-- contract (docs/reference.md) with the grant sets, the batch forms,
-- pre_restore()/post_restore(), the reconciliation functions and hashes
-- docs/reference.md documents, resource_key(), wake_relays() and
-- wait_for_standbys(); the trigger functions users' tables reference
-- (sequence_trigger(), sequence_stored() with sequence_stored_trigger(),
-- sequence_guard(), newer_only()), which a dump of those tables names and a
-- restore must find where the dump says.  sql/surface.sql lists the set.
--
-- The rest moves to ordering_internal.  ALTER FUNCTION ... SET SCHEMA keeps
-- each function's OID, so the views, the triggers of the extension's own
-- objects and every role's EXECUTE privilege follow it.  What calls one by
-- name uses its new name: the functions an earlier section of this script
-- defines (attach, post_restore, the grant sets, consumer_summary,
-- consumer_state, distributed_open_gaps) say it in that one
-- definition, as PL/pgSQL looks names up when it runs, after this script;
-- those whose newest body is 1.1's are re-created below with the names
-- changed and nothing else.  Statements this script runs before the move
-- (the DO blocks above) use the old names.
ALTER FUNCTION ordering.grant_privileges(regrole, text[]) SET SCHEMA ordering_internal;
ALTER FUNCTION ordering.create_sequencing_triggers(regclass, name, name, text)
    SET SCHEMA ordering_internal;
ALTER FUNCTION ordering.reconcile_check_arguments(integer, text) SET SCHEMA ordering_internal;
ALTER FUNCTION ordering.reconcile_check_stream(text, text[]) SET SCHEMA ordering_internal;
ALTER FUNCTION ordering.reconcile_producer_resources(text, text, text[])
    SET SCHEMA ordering_internal;
ALTER FUNCTION ordering.count_reconciled(text, bigint, bigint, bigint)
    SET SCHEMA ordering_internal;
-- the sources of the views ordering.stats, ordering.stream_stats and
-- ordering.open_gaps
ALTER FUNCTION ordering.consumer_statistics() SET SCHEMA ordering_internal;
ALTER FUNCTION ordering.stream_statistics() SET SCHEMA ordering_internal;
ALTER FUNCTION ordering.stats_reset_time() SET SCHEMA ordering_internal;
ALTER FUNCTION ordering.gap_deadline() SET SCHEMA ordering_internal;
COMMENT ON FUNCTION ordering_internal.consumer_statistics() IS
    'Internal to the view ordering.stats: committed-work counters of the consumers of the current database, from shared memory';
-- the trigger of ordering.sequences and the event trigger that forgets
-- dropped tables (still SECURITY DEFINER, with its search_path pinned)
ALTER FUNCTION ordering.sequences_load() SET SCHEMA ordering_internal;
ALTER FUNCTION ordering.forget_dropped_tables() SET SCHEMA ordering_internal;
-- 1.1 left it executable by PUBLIC; a trigger fires without EXECUTE, and
-- nobody calls it
REVOKE EXECUTE ON FUNCTION ordering_internal.sequences_load() FROM PUBLIC;

-- The 1.0 statistics functions, kept in 1.1 for dashboards that read them:
-- the views ordering.stats and ordering.stream_stats have the same columns
-- and more.  metric_label_value() escaped label values for the metrics()
-- of 1.1; nothing calls it since metrics() reads the metric definitions
-- (ordering_internal.metric_label_set()).
DROP FUNCTION ordering.consumer_counters();
DROP FUNCTION ordering.stream_counters();
DROP FUNCTION ordering.metric_label_value(text);

-- One deliver() through a handler, as deliver_batch(): on_error defaults to
-- 'raise', which is what the 5-argument form did.  The handler has no
-- default: deliver(consumer, resource_id, seq, payload) without one is the
-- table form, whose result differs, and a default would make that call
-- ambiguous.  Roles that could execute the 5-argument form, through the
-- consumer set or granted by hand, get the 6-argument one first.
DO $$
DECLARE
    grantee regrole;
BEGIN
    FOR grantee IN SELECT * FROM ordering_internal.roles_holding('ordering.deliver(text, text, bigint, jsonb, regprocedure)') LOOP
        EXECUTE pg_catalog.format(
            'GRANT EXECUTE ON FUNCTION ordering.deliver(text, text, bigint, jsonb, regprocedure, text) TO %s',
            grantee);
    END LOOP;
END
$$;
DROP FUNCTION ordering.deliver(text, text, bigint, jsonb, regprocedure);
CREATE OR REPLACE FUNCTION ordering.deliver(consumer text, resource_id text, seq bigint,
                                            payload jsonb, handler regprocedure,
                                            on_error text DEFAULT 'raise')
    RETURNS integer
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_deliver_handler';
COMMENT ON FUNCTION ordering.deliver(text, text, bigint, jsonb, regprocedure, text) IS
    'Step consumers: like deliver(consumer, resource_id, seq, payload), but calls handler(resource_id text, seq bigint, payload jsonb) for each ready event in order and returns how many ran; with on_error => ''dead_letter'' a handler that fails (but for transient errors) makes its event the dead letter of the resource, blocking only that resource, and the call returns normally';

-- Callers by name whose newest body is 1.1's, with the names of
-- ordering_internal.
CREATE OR REPLACE FUNCTION ordering.pre_restore() RETURNS boolean
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    -- load the library, which defines the setting
    PERFORM ordering_internal.gap_deadline();
    EXECUTE pg_catalog.format('ALTER DATABASE %I SET ordering.restoring = on',
                              pg_catalog.current_database());
    PERFORM pg_catalog.set_config('ordering.restoring', 'on', false);
    RETURN true;
END
$$;

-- Reconciliation, producer side (1.1; the consumer side is defined by the
-- Citus section).
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
    SELECT ordering.resource_bucket(p.resource_id, buckets) AS b,
           pg_catalog.count(*),
           pg_catalog.sum(p.last_seq),
           pg_catalog.bit_xor(ordering.resource_fingerprint(p.resource_id, p.last_seq))
      FROM ordering_internal.reconcile_producer_resources(stream, resource_prefix, event_types) p
     GROUP BY b
     ORDER BY b;
END
$$;

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
          FROM ordering_internal.reconcile_producer_resources(stream, resource_prefix, event_types) r
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
    PERFORM ordering_internal.count_reconciled(stream, n_behind,
                                      CASE WHEN dry_run THEN 0 ELSE n_republished END,
                                      n_purged);
END
$$;

-- The consumer set (its body is 1.1's; the sections above set its comment):
-- what moved keeps its grants, and the set names it where it is now, and
-- the one deliver() through a handler.
CREATE OR REPLACE FUNCTION ordering.grant_consumer(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering_internal.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.apply_if_newer(text, text, bigint), '
        'ordering.deliver(text, text, bigint, jsonb), '
        'ordering.deliver(text, text, bigint, jsonb, regprocedure, text), '
        'ordering.dead_letter(text, text, bigint, jsonb, text), '
        'ordering.deliver_batch(text, text[], bigint[], jsonb[]), '
        'ordering.deliver_batch(text, text[], bigint[], jsonb[], regprocedure, text), '
        'ordering.apply_batch(text, text[], bigint[]), '
        'ordering.position(text, text), ordering.newer_only(), '
        -- reconciliation, consumer side
        'ordering.consumer_summary(text, integer, text), '
        'ordering.consumer_state(text, integer, integer[], text), '
        'ordering_internal.reconcile_check_arguments(integer, text), '
        'ordering.resource_bucket(text, integer), ordering.resource_fingerprint(text, bigint)',
        'SELECT ON ordering.positions, ordering.gap_requests, ordering.parked, '
        'ordering.dead_letter_events, ordering.dead_letters');
END
$$;

-- (end of section)

-- ------------------------------------------------------------------------
-- End of the script
-- ------------------------------------------------------------------------

-- Only the sections above needed the holders of a set.
DROP FUNCTION ordering_internal.roles_holding(regprocedure);
