-- attach(): may the table be sequenced as a distributed stream?  True if
-- Citus distributes it as we need, false if Citus does not manage it (it is
-- then sequenced like any local table); every other shape is refused with
-- 0A000 and a hint, before anything is created.
CREATE OR REPLACE FUNCTION ordering_internal.citus_attach_check(tbl regclass, resource_column name)
    RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    d record;
    restype pg_catalog.regtype;
    deterministic boolean;
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
    SELECT a.atttypid, COALESCE(c.collisdeterministic, true) INTO restype, deterministic
      FROM pg_catalog.pg_attribute a
      LEFT JOIN pg_catalog.pg_collation c ON c.oid OPERATOR(pg_catalog.=) a.attcollation
     WHERE a.attrelid OPERATOR(pg_catalog.=) tbl
       AND a.attname OPERATOR(pg_catalog.=) resource_column;
    -- 1.3: the counter table is distributed by a column of the resource
    -- column's own type (citus_counter_table()), whose value of a counter
    -- row is the resource's key read back as that type: only types whose
    -- key reads back as an equal value in every session qualify.
    IF ordering_internal.citus_key_base_type(restype) IS NULL THEN
        RAISE EXCEPTION 'resource column "%" of distributed table "%" is of type %, which a distributed stream cannot key its counters by',
                        resource_column, tbl, restype
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'A distributed stream''s counters are distributed by a column of the resource column''s type, holding each resource''s key read back as that type; that is exact for smallint, integer, bigint, uuid, text, varchar, citext and domains over them.',
                  HINT = 'Distribute the table by a bigint, uuid or text resource column (a copy of the key of that type, say).';
    END IF;
    IF NOT deterministic THEN
        RAISE EXCEPTION 'resource column "%" of distributed table "%" has a nondeterministic collation', resource_column, tbl
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'Resources that compare equal but are keyed apart would share the counter table''s shard key; Citus does not distribute by such a column either.',
                  HINT = 'Give the resource column a deterministic collation ("C", say).';
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION ordering_internal.citus_attach_check(regclass, name) IS
    'Internal to ordering.attach(): true for a table Citus distributes by hash on its resource column (integers, uuid, text types, domains over them), false for a table Citus does not manage; refuses every other shape (0A000)';
-- SECURITY INVOKER: it does only what its caller may do anyway, for
-- attach(), detach(), last_sequence(), check() and post_restore(), which
-- call it only where Citus is.
GRANT EXECUTE ON FUNCTION ordering_internal.citus_attach_check(regclass, name) TO PUBLIC;
