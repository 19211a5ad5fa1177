-- The arguments both sides of a reconciliation take, checked the same way.
CREATE OR REPLACE FUNCTION ordering_internal.reconcile_check_arguments(buckets integer,
                                                   resource_prefix text)
    RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF buckets IS NULL THEN
        RAISE EXCEPTION 'buckets must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF buckets OPERATOR(pg_catalog.<) 1 THEN
        RAISE EXCEPTION 'buckets must be at least 1, got %', buckets
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF resource_prefix OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'resource_prefix must not be empty'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass NULL to take every resource.';
    END IF;
END
$$;
COMMENT ON FUNCTION ordering_internal.reconcile_check_arguments(integer, text) IS
    'Internal to the reconciliation functions: refuses a NULL or non-positive bucket count and an empty resource prefix';
REVOKE EXECUTE ON FUNCTION ordering_internal.reconcile_check_arguments(integer, text) FROM PUBLIC;
