-- A Prometheus label set: {name="value",...}, the values escaped as the
-- format requires (backslash, double quote, newline); '' without labels.
CREATE OR REPLACE FUNCTION ordering_internal.metric_label_set(names text[], vals text[])
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
REVOKE EXECUTE ON FUNCTION ordering_internal.metric_label_set(text[], text[]) FROM PUBLIC;
