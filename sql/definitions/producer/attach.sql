-- attach(): checks the table and its columns, creates the sequencing
-- triggers (for a table distributed by Citus, with the stream's counter
-- table), registers the table with its stream, frozen at the first attach
-- (re-attaching continues it, whatever the table was renamed to), and
-- continues the numbers the table holds already.
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
    -- 1.2, Citus: a table distributed by hash on its resource column gets
    -- counters co-located with it ("Citus: producers"); every other shape
    -- Citus makes is refused with 0A000 and a hint, before anything is made
    -- (only where Citus is: one node never calls into these functions).
    -- 1.3: before the triggers are looked at, since a worker's shell of an
    -- attached table carries Citus's copies of them and no registry row:
    -- there the answer is "run it on the coordinator", not a restore.
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        distributed := ordering_internal.citus_attach_check(tbl, resource_column);
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
    -- 1.3: and in the registry of distributed streams on every node
    IF distributed THEN
        PERFORM ordering_internal.citus_registry_sync(tbl);
    END IF;
    -- 1.2: rows the table holds already (attached before, its counters
    -- dropped with the extension or never restored) keep their numbers:
    -- each resource continues after its highest.  The new triggers lock out
    -- inserts until this transaction ends, so no row is missed.
    -- (a distributed stream's counter table, on every shard's node)
    PERFORM ordering_internal.seed_counters(tbl);
END
$$;
COMMENT ON FUNCTION ordering.attach(regclass, name, name, text) IS
    'Installs the sequencing trigger on a table: each inserted row gets the next sequence number of its resource';
REVOKE EXECUTE ON FUNCTION ordering.attach(regclass, name, name, text) FROM PUBLIC;
