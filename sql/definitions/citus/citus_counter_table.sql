-- The counter table of a distributed stream: made the first time the stream
-- is attached, checked when it exists.  Citus co-locates only tables
-- distributed by columns of one type and collation.  A text resource
-- column: the counters are distributed by resource_id, in the column's
-- collation.  Any other type (1.3): by a fourth column, resource_value, of
-- the resource column's type and collation, which holds the resource's key
-- read back as that type (the key stays the counter's identity, as on one
-- node: citext's 'A' and 'a' are two resources in one shard).  stream is
-- "C", like ordering.sequences.
CREATE OR REPLACE FUNCTION ordering_internal.citus_counter_table(tbl regclass, resource_column name,
                                                      stream text)
    RETURNS regclass
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    relname name := ordering_internal.counter_table_name(stream);
    counters regclass := ordering_internal.distributed_counters(stream);
    res record;
    counted record;
    mine record;
    theirs record;
BEGIN
    SELECT a.atttypid, pg_catalog.format_type(a.atttypid, a.atttypmod) AS typname,
           CASE WHEN c.oid IS NOT NULL
                THEN pg_catalog.format('%I.%I', n.nspname, c.collname) END AS collation
      INTO res
      FROM pg_catalog.pg_attribute a
      LEFT JOIN pg_catalog.pg_collation c ON c.oid OPERATOR(pg_catalog.=) a.attcollation
      LEFT JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.collnamespace
     WHERE a.attrelid OPERATOR(pg_catalog.=) tbl
       AND a.attname OPERATOR(pg_catalog.=) resource_column;
    IF counters IS NULL THEN
        IF res.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.text'::pg_catalog.regtype THEN
            EXECUTE pg_catalog.format(
                'CREATE TABLE ordering_internal.%I ('
                '    stream text COLLATE "C" NOT NULL,'
                '    resource_id text COLLATE %s NOT NULL,'
                '    last_seq bigint NOT NULL CONSTRAINT %I CHECK (last_seq OPERATOR(pg_catalog.>=) 0),'
                '    PRIMARY KEY (stream, resource_id))',
                relname, res.collation, relname OPERATOR(pg_catalog.||) '_last_seq_check');
        ELSE
            EXECUTE pg_catalog.format(
                'CREATE TABLE ordering_internal.%I ('
                '    stream text COLLATE "C" NOT NULL,'
                '    resource_id text COLLATE "C" NOT NULL,'
                '    last_seq bigint NOT NULL CONSTRAINT %I CHECK (last_seq OPERATOR(pg_catalog.>=) 0),'
                '    resource_value %s %s NOT NULL,'
                '    PRIMARY KEY (stream, resource_id, resource_value))',
                relname, relname OPERATOR(pg_catalog.||) '_last_seq_check', res.typname,
                COALESCE('COLLATE ' OPERATOR(pg_catalog.||) res.collation, ''));
        END IF;
        counters := ordering_internal.distributed_counters(stream);
        EXECUTE pg_catalog.format('COMMENT ON TABLE %s IS %L', counters,
            pg_catalog.format('Counters of stream %s, distributed by Citus and co-located with %s (made by ordering.attach())',
                              pg_catalog.quote_literal(stream), tbl));
        EXECUTE 'SELECT pg_catalog.create_distributed_table($1, $2, colocate_with => $3)'
          USING counters, CASE WHEN res.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.text'::pg_catalog.regtype
                               THEN 'resource_id' ELSE 'resource_value' END,
                tbl::pg_catalog.text;
        RETURN counters;
    END IF;
    -- the stream was attached before (this table, or another one): its
    -- counters are distributed by a column of one type, which every table
    -- of the stream must have
    SELECT a.atttypid INTO counted
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid OPERATOR(pg_catalog.=) counters
       AND a.attname OPERATOR(pg_catalog.=) CASE WHEN EXISTS (
               SELECT FROM pg_catalog.pg_attribute v
                WHERE v.attrelid OPERATOR(pg_catalog.=) counters
                  AND v.attname OPERATOR(pg_catalog.=) 'resource_value' AND NOT v.attisdropped)
           THEN 'resource_value'::pg_catalog.name ELSE 'resource_id'::pg_catalog.name END;
    IF counted.atttypid IS DISTINCT FROM res.atttypid THEN
        RAISE EXCEPTION 'resource column "%" of relation "%" is of type %, but stream "%" counts resources of type %',
                        resource_column, tbl, res.atttypid::pg_catalog.regtype, stream,
                        counted.atttypid::pg_catalog.regtype
            USING ERRCODE = 'datatype_mismatch',
                  DETAIL = pg_catalog.format('A distributed stream has one counter table, %s, co-located with its tables by a column of one type.', counters),
                  HINT = 'Give the table a resource column of the stream''s type, or attach it to another stream.';
    END IF;
    SELECT * INTO mine FROM ordering_internal.citus_distribution(tbl);
    SELECT * INTO theirs FROM ordering_internal.citus_distribution(counters);
    IF theirs.colocationid IS DISTINCT FROM mine.colocationid
       OR theirs.distribution_column NOT IN ('resource_id', 'resource_value') THEN
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
    'Internal to ordering.attach(): the counter table of a distributed stream, created and distributed co-located with the table the first time (by resource_id for a text resource, else by resource_value, of the resource column''s type)';
-- SECURITY INVOKER: it does only what its caller may do anyway, for
-- attach(), detach(), last_sequence(), check() and post_restore(), which
-- call it only where Citus is.
GRANT EXECUTE ON FUNCTION ordering_internal.citus_counter_table(regclass, name, text) TO PUBLIC;
