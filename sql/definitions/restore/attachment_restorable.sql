-- post_restore(): an attached table whose columns were renamed, dropped or
-- retyped does not fail the whole call (42703): it is named in a WARNING and
-- left, and every other counter is raised.
CREATE OR REPLACE FUNCTION ordering_internal.attachment_restorable(tbl regclass, stream text,
                                                        resource_column name,
                                                        sequence_column name)
    RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    problem text := ordering_internal.attachment_problem(tbl, resource_column, sequence_column);
BEGIN
    IF problem IS NOT NULL THEN
        RAISE WARNING 'the counters of table % (stream %) were not raised: %', tbl,
            pg_catalog.quote_literal(stream), problem
            USING HINT = 'Give the table back the columns it was attached with and call ordering.post_restore() again, or detach it.';
    END IF;
    RETURN problem IS NULL;
END
$$;
COMMENT ON FUNCTION ordering_internal.attachment_restorable(regclass, text, name, name) IS
    'Internal to ordering.post_restore(): whether the counters of an attached table can be raised from its rows; a WARNING names the table when its columns changed';
REVOKE EXECUTE ON FUNCTION ordering_internal.attachment_restorable(regclass, text, name, name) FROM PUBLIC;
