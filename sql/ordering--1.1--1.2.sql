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
    -- 1.2: rows the table holds already (attached before, its counters
    -- dropped with the extension or never restored) keep their numbers:
    -- each resource continues after its highest.  The new triggers lock out
    -- inserts until this transaction ends, so no row is missed.
    PERFORM ordering_internal.seed_counters(tbl);
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
    EXECUTE pg_catalog.format('DROP TRIGGER ordering_sequence ON %s', tbl);
    EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS ordering_sequence_stored ON %s', tbl);
    EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS ordering_sequence_guard ON %s', tbl);
    UPDATE ordering.attachments a SET attached = false
     WHERE a.tbl OPERATOR(pg_catalog.=) detach.tbl
    RETURNING a.stream INTO was;
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

-- Restores: the sequencing trigger loads rows without consulting the
-- registry (pg_restore -j may load it after the tables: src/producer.c), so
-- post_restore() makes the triggers and the registry agree before it
-- raises the counters and ends restore mode.
CREATE OR REPLACE FUNCTION ordering.post_restore() RETURNS boolean
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    att record;
    problems text[] := '{}';
BEGIN
    PERFORM ordering.gap_deadline();
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
    FOR att IN SELECT x.tbl FROM ordering.attachments x WHERE x.attached LOOP
        PERFORM ordering_internal.seed_counters(att.tbl);
    END LOOP;
    EXECUTE pg_catalog.format('ALTER DATABASE %I RESET ordering.restoring',
                              pg_catalog.current_database());
    PERFORM pg_catalog.set_config('ordering.restoring', 'off', false);
    RETURN true;
END
$$;
COMMENT ON FUNCTION ordering.post_restore() IS
    'Call after pg_restore: checks that the tables with sequencing triggers and ordering.attachments agree (registering a table whose row was not restored), raises every counter to the highest number restored in its attached table and ends restore mode; safe to call again';

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

-- (end of section)

-- ------------------------------------------------------------------------
-- Bulk producers
-- ------------------------------------------------------------------------

-- (end of section)

-- ------------------------------------------------------------------------
-- Citus: producers
-- ------------------------------------------------------------------------

-- (end of section)

-- ------------------------------------------------------------------------
-- Citus: consumers
-- ------------------------------------------------------------------------

-- (end of section)

-- ------------------------------------------------------------------------
-- The public surface: plumbing moved to ordering_internal, one deliver(),
-- the 1.0 aliases retired (last: every section above uses the 1.1 names)
-- ------------------------------------------------------------------------

-- (end of section)
