-- The counter table of a distributed stream: made the first time the stream
-- is attached, checked when it exists.  Its resource_id has the collation of
-- the table's resource column (Citus co-locates only columns of one type and
-- collation); stream is "C", like ordering.sequences.
CREATE OR REPLACE FUNCTION ordering_internal.citus_counter_table(tbl regclass, resource_column name,
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
-- SECURITY INVOKER: it does only what its caller may do anyway, for
-- attach(), detach(), last_sequence(), check() and post_restore(), which
-- call it only where Citus is.
GRANT EXECUTE ON FUNCTION ordering_internal.citus_counter_table(regclass, name, text) TO PUBLIC;
