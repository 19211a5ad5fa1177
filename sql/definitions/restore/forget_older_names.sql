-- post_restore(): what the dump gave a copy goes to its function (its
-- privileges, made the same; the triggers that use it, made again with the
-- function, enabled as they were), and the copy goes.  A copy that
-- something else of the dump still uses (a view of the user's) stays, with
-- a WARNING naming it.
CREATE OR REPLACE FUNCTION ordering_internal.forget_older_names()
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    n record;
    old pg_catalog.regprocedure;
    fn pg_catalog.regprocedure;
    g record;
    t record;
    def text;
    users text;
BEGIN
    FOR n IN SELECT * FROM ordering_internal.older_names() LOOP
        old := pg_catalog.to_regprocedure(n.older);
        CONTINUE WHEN old IS NULL;
        fn := n.function::pg_catalog.regprocedure;
        -- the privileges of the copy, but for its owner's: what it lacks
        -- is revoked first, then what it has is granted
        FOR g IN
            WITH acl AS (
                SELECT p.oid, e.grantee, e.privilege_type, e.is_grantable
                  FROM pg_catalog.pg_proc p,
                       pg_catalog.aclexplode(COALESCE(p.proacl, pg_catalog.acldefault('f', p.proowner))) e
                 WHERE p.oid IN (old, fn)
                   AND e.grantee OPERATOR(pg_catalog.<>) p.proowner
            ), lacks AS (
                SELECT a.grantee, a.privilege_type, a.is_grantable FROM acl a
                 WHERE a.oid OPERATOR(pg_catalog.=) fn
                EXCEPT
                SELECT a.grantee, a.privilege_type, a.is_grantable FROM acl a
                 WHERE a.oid OPERATOR(pg_catalog.=) old
            ), has AS (
                SELECT a.grantee, a.privilege_type, a.is_grantable FROM acl a
                 WHERE a.oid OPERATOR(pg_catalog.=) old
                EXCEPT
                SELECT a.grantee, a.privilege_type, a.is_grantable FROM acl a
                 WHERE a.oid OPERATOR(pg_catalog.=) fn
            )
            SELECT 1 AS step, 'REVOKE %s ON FUNCTION %s FROM %s' AS command, l.* FROM lacks l
            UNION ALL
            SELECT 2, CASE WHEN h.is_grantable THEN 'GRANT %s ON FUNCTION %s TO %s WITH GRANT OPTION'
                           ELSE 'GRANT %s ON FUNCTION %s TO %s' END, h.* FROM has h
            ORDER BY 1
        LOOP
            EXECUTE pg_catalog.format(g.command, g.privilege_type, fn,
                                      CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                                           ELSE g.grantee::pg_catalog.regrole::pg_catalog.text END);
        END LOOP;
        -- the triggers that use it, as their function or in their WHEN
        -- clause (a partition's clone goes and comes with its table's)
        FOR t IN
            SELECT tg.oid, tg.tgrelid::pg_catalog.regclass AS tbl, tg.tgname,
                   pg_catalog.obj_description(tg.oid, 'pg_trigger') AS comment,
                   ARRAY(SELECT c.tgrelid::pg_catalog.regclass FROM pg_catalog.pg_trigger c
                          WHERE (c.oid OPERATOR(pg_catalog.=) tg.oid
                                 OR c.tgparentid OPERATOR(pg_catalog.=) tg.oid)
                            AND c.tgenabled OPERATOR(pg_catalog.<>) 'O'
                          ORDER BY c.oid) AS rels,
                   ARRAY(SELECT c.tgenabled FROM pg_catalog.pg_trigger c
                          WHERE (c.oid OPERATOR(pg_catalog.=) tg.oid
                                 OR c.tgparentid OPERATOR(pg_catalog.=) tg.oid)
                            AND c.tgenabled OPERATOR(pg_catalog.<>) 'O'
                          ORDER BY c.oid) AS states
              FROM pg_catalog.pg_trigger tg
             WHERE tg.tgparentid OPERATOR(pg_catalog.=) 0
               AND EXISTS (SELECT FROM pg_catalog.pg_depend d
                            WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_trigger'::pg_catalog.regclass
                              AND d.objid OPERATOR(pg_catalog.=) tg.oid
                              AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
                              AND d.refobjid OPERATOR(pg_catalog.=) old)
        LOOP
            def := pg_catalog.pg_get_triggerdef(t.oid);
            FOR g IN SELECT * FROM ordering_internal.older_names() LOOP
                def := pg_catalog.replace(def, pg_catalog.split_part(g.older, '(', 1) OPERATOR(pg_catalog.||) '(',
                                          pg_catalog.split_part(g.function, '(', 1) OPERATOR(pg_catalog.||) '(');
            END LOOP;
            -- Citus: a distributed table's triggers go and come on its
            -- shards too, as attach() and detach() do it
            IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
                IF (ordering_internal.citus_distribution(t.tbl)).managed THEN
                    PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
                END IF;
            END IF;
            EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', t.tgname, t.tbl);
            EXECUTE def;
            EXECUTE pg_catalog.format('COMMENT ON TRIGGER %I ON %s IS %L', t.tgname, t.tbl, t.comment);
            FOR i IN 1 .. pg_catalog.cardinality(t.rels) LOOP
                EXECUTE pg_catalog.format('ALTER TABLE %s %s TRIGGER %I', t.rels[i],
                                          CASE t.states[i] WHEN 'D' THEN 'DISABLE'
                                                           WHEN 'R' THEN 'ENABLE REPLICA'
                                                           WHEN 'A' THEN 'ENABLE ALWAYS' END,
                                          t.tgname);
            END LOOP;
        END LOOP;
        -- the copy, unless something else uses it
        SELECT pg_catalog.string_agg(pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid), ', ')
          INTO users
          FROM pg_catalog.pg_depend d
         WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
           AND d.refobjid OPERATOR(pg_catalog.=) old
           AND d.deptype IN ('n', 'a');
        IF users IS NOT NULL THEN
            RAISE WARNING 'function % is kept: % uses it', old, users
                USING HINT = pg_catalog.format('Make it use %s, then call ordering.post_restore() again.', fn);
            CONTINUE;
        END IF;
        EXECUTE pg_catalog.format('ALTER EXTENSION ordering DROP FUNCTION %s', old);
        EXECUTE pg_catalog.format('DROP FUNCTION %s', old);
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering_internal.forget_older_names() IS
    'Internal to ordering.post_restore(): moves what a dump of the previous version gave the functions of ordering_internal.older_names() under their older names (privileges, triggers) to the functions themselves, and drops the older names';
REVOKE EXECUTE ON FUNCTION ordering_internal.forget_older_names() FROM PUBLIC;
