/* ordering 1.2 -> 1.3 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ordering UPDATE TO '1.3'" to load this file. \quit

/*
 * A new database runs ordering--1.0.sql and every upgrade script after it,
 * this one last, so a fresh install and an updated one are made by the same
 * statements.  Each section below is one topic.
 */

-- ------------------------------------------------------------------------
-- Counters are raised by one checked function
-- ------------------------------------------------------------------------

-- ordering_internal.seed_counters() may be called by anyone (attach() and
-- post_restore() run as their caller), so it now checks what attach()
-- checks before a counter moves: the table registered as attached to the
-- stream its trigger names, attach()'s ownership rule (42501), a bigint
-- sequence column (42804).  It raises a stream distributed by Citus too, in
-- C (src/citus.c), so the unchecked ordering_internal.citus_raise_counters()
-- is gone.
COMMENT ON FUNCTION ordering_internal.seed_counters(regclass) IS
    'Internal to ordering.attach() and ordering.post_restore(): raises the counter of every resource of the table to its highest number there, in the stream its sequencing trigger names (never lowers one); only for a table registered as attached to that stream, and a caller who may attach it (the TRIGGER privilege, and the ownership of the stream''s other tables); returns how many resources it has (NULL for a stream distributed by Citus)';

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
    -- (a distributed stream's counter table, on every shard's node)
    PERFORM ordering_internal.seed_counters(tbl);
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
        -- (a distributed stream's counter table, on every node)
        PERFORM ordering_internal.seed_counters(att.tbl);
    END LOOP;
    EXECUTE pg_catalog.format('ALTER DATABASE %I RESET ordering.restoring',
                              pg_catalog.current_database());
    PERFORM pg_catalog.set_config('ordering.restoring', 'off', false);
    RETURN true;
END
$$;

DROP FUNCTION ordering_internal.citus_raise_counters(regclass, name, name, text, regclass);

-- ------------------------------------------------------------------------
-- What PUBLIC may execute says what is wrong with what it was given
-- ------------------------------------------------------------------------

-- ordering_internal.check_distributed() of a stream that is not
-- distributed failed with a syntax error of the query it builds (42P01);
-- it now says so (22023).  It reads only what its caller may read.
CREATE OR REPLACE FUNCTION ordering_internal.check_distributed(tbl regclass, resource_column name,
                                                    sequence_column name, stream text,
                                                    max_per_kind bigint)
    RETURNS TABLE (kind text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    counters regclass := ordering_internal.distributed_counters(stream);
BEGIN
    IF counters IS NULL THEN
        RAISE EXCEPTION 'stream "%" is not distributed by Citus', stream
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
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
