-- After a restore (docs/restore.md): what a dump of the previous version
-- gave functions under their older names goes to the functions
-- (older_names.sql), every role that holds a privilege set holds the set
-- of this version, as after an update (renew_privileges.sql: a dump taken
-- before 1.3 of a database updated from an older version lacks what the
-- updates gave), the tables with sequencing triggers and the registry
-- must agree (pg_restore -j may load the registry after the
-- tables, and the sequencing trigger does not consult it in restore mode),
-- every counter is raised to the highest number restored in its table, and
-- restore mode ends.
CREATE OR REPLACE FUNCTION ordering.post_restore() RETURNS boolean
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    att record;
    problems text[] := '{}';
BEGIN
    PERFORM ordering_internal.gap_deadline();
    PERFORM ordering_internal.forget_older_names();
    PERFORM ordering_internal.renew_privileges();
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
        -- and the registry of distributed streams on every node says so
        IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
            PERFORM ordering_internal.citus_registry_sync(att.tbl);
        END IF;
    END LOOP;
    EXECUTE pg_catalog.format('ALTER DATABASE %I RESET ordering.restoring',
                              pg_catalog.current_database());
    PERFORM pg_catalog.set_config('ordering.restoring', 'off', false);
    RETURN true;
END
$$;
COMMENT ON FUNCTION ordering.post_restore() IS
    'Call after pg_restore: moves what a dump of the previous version gave functions under their older names to the functions, gives every role that holds a privilege set the set of this version, checks that the tables with sequencing triggers and ordering.attachments agree (registering a table whose row was not restored), raises every counter to the highest number restored in its attached table and ends restore mode; safe to call again';
REVOKE EXECUTE ON FUNCTION ordering.post_restore() FROM PUBLIC;
