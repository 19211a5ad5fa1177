-- The column a distributed consumer's tables are distributed by:
-- resource_id, or (1.3, a projection distributed by another type than
-- text) resource_value, which holds the resource id read as that type.  A
-- query through Citus that joins two of its tables names that column in
-- the join, or Citus cannot run the join on each shard group's node.
CREATE OR REPLACE FUNCTION ordering_internal.distributed_consumer_column(consumer text)
    RETURNS name
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT CASE WHEN EXISTS (SELECT FROM pg_catalog.pg_attribute a
                          WHERE a.attrelid OPERATOR(pg_catalog.=)
                                ordering_internal.distributed_consumer_table(consumer, '_positions')
                            AND a.attname OPERATOR(pg_catalog.=) 'resource_value'
                            AND NOT a.attisdropped)
            THEN 'resource_value'::pg_catalog.name
            ELSE 'resource_id'::pg_catalog.name END
$$;
COMMENT ON FUNCTION ordering_internal.distributed_consumer_column(text) IS
    'Internal to the functions that read a distributed consumer''s tables through Citus: the column they are distributed by (resource_id, or resource_value for a projection of another type than text)';
-- Any role may call it: a lookup of a column by name.
GRANT EXECUTE ON FUNCTION ordering_internal.distributed_consumer_column(text) TO PUBLIC;
