-- One column of an exporter block, in the YAML of its "metrics" list.
CREATE OR REPLACE FUNCTION ordering_internal.exporter_column(name text, usage text, description text)
    RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT pg_catalog.format(E'    - %s:\n        usage: "%s"\n        description: "%s"', $1, $2,
                         pg_catalog.replace(pg_catalog.replace($3, E'\\', E'\\\\'), '"', E'\\"'))
$$;
COMMENT ON FUNCTION ordering_internal.exporter_column(text, text, text) IS
    'Internal to ordering_internal.exporter_queries(): a column of an exporter block in YAML';
REVOKE EXECUTE ON FUNCTION ordering_internal.exporter_column(text, text, text) FROM PUBLIC;
