-- The one place that writes GRANT statements: USAGE on the schema, then
-- "GRANT <each of grants> TO role".  SECURITY INVOKER, so it grants only what
-- its caller may grant.
CREATE OR REPLACE FUNCTION ordering_internal.grant_privileges(role regrole, VARIADIC grants text[])
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    g text;
BEGIN
    -- format() would make a GRANT with no role, a syntax error (42601)
    IF role IS NULL THEN
        RAISE EXCEPTION 'role must not be null' USING ERRCODE = '22004';
    END IF;
    EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA ordering TO %s', role);
    FOREACH g IN ARRAY grants LOOP
        EXECUTE pg_catalog.format('GRANT %s TO %s', g, role);
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering_internal.grant_privileges(regrole, text[]) IS
    'Internal to the grant_* functions: grants USAGE on schema ordering and each "privileges ON objects" item to the role';
-- Granting is for the extension's owner (or a superuser) to do, as for the
-- grant_* functions.
REVOKE EXECUTE ON FUNCTION ordering_internal.grant_privileges(regrole, text[]) FROM PUBLIC;
