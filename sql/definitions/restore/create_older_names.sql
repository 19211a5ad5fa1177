-- The copies, made by the install script in restore mode: each is the
-- function's own definition under the older name, with the privileges a
-- new install gives it, to which the dump then adds its GRANTs.
CREATE OR REPLACE FUNCTION ordering_internal.create_older_names()
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    n record;
    fn pg_catalog.regprocedure;
BEGIN
    FOR n IN SELECT * FROM ordering_internal.older_names() LOOP
        fn := n.function::pg_catalog.regprocedure;
        EXECUTE pg_catalog.regexp_replace(pg_catalog.pg_get_functiondef(fn),
                                          '^CREATE OR REPLACE FUNCTION [^(]*\(',
                                          'CREATE FUNCTION '
                                          OPERATOR(pg_catalog.||) pg_catalog.split_part(n.older, '(', 1)
                                          OPERATOR(pg_catalog.||) '(');
        EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', n.older,
            pg_catalog.format('The name a dump of the previous version gives %s; ordering.post_restore() moves what the dump gave it there and drops it', fn));
        IF NOT pg_catalog.has_function_privilege('public', fn, 'EXECUTE') THEN
            EXECUTE pg_catalog.format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', n.older);
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering_internal.create_older_names() IS
    'Internal to restores: creates each function of ordering_internal.older_names() under its older name too, for a dump of the previous version to name';
REVOKE EXECUTE ON FUNCTION ordering_internal.create_older_names() FROM PUBLIC;
