-- The end of every update script, and post_restore(): each role that
-- holds a privilege set holds the set of this version, as a new install
-- with the same grant_* calls gives it, and a dump carries it.
--
-- Roles holding a set are recognized, as the updates of 1.1 and 1.2 did,
-- by EXECUTE on one function of the set, granted to neither PUBLIC nor the
-- owner (attach() for producers, the table form of deliver() for
-- consumers, metrics() for monitors, skip_gap() for operators); the set's
-- grant_* function gives them what it gives now (what an older update did
-- not give: wait_for_standbys() to producers of 1.0).
--
-- A GRANT run by an extension script is recorded as an initial privilege
-- of the extension (pg_init_privs), which pg_dump leaves out of a dump, and
-- CREATE EXTENSION at a restore does not give it back: roles would lose
-- what the updates gave them.  So the initial privileges of the extension's
-- objects (and of their columns) keep only what a new install records,
-- the owner's and PUBLIC's, and schema ordering, which the control file
-- makes (it is no member, and a new install records nothing for it), has
-- none; the roles' privileges stay in the objects' own ACLs, which pg_dump
-- dumps as GRANT statements.
CREATE OR REPLACE FUNCTION ordering_internal.renew_privileges()
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    holder record;
BEGIN
    FOR holder IN
        SELECT DISTINCT s.ord, s.grant_fn, a.grantee::pg_catalog.regrole AS grantee
          FROM (VALUES (1, 'ordering.grant_producer', 'ordering.attach(regclass, name, name, text)'),
                       (2, 'ordering.grant_consumer', 'ordering.deliver(text, text, bigint, jsonb)'),
                       (3, 'ordering.grant_monitor', 'ordering.metrics()'),
                       (4, 'ordering.grant_operator', 'ordering.skip_gap(text, text)'))
               AS s(ord, grant_fn, member)
          JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) s.member::pg_catalog.regprocedure
         CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
         WHERE a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
           AND a.grantee OPERATOR(pg_catalog.<>) 0
           AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
         ORDER BY s.ord, 3
    LOOP
        EXECUTE pg_catalog.format('SELECT %s(%L)', holder.grant_fn, holder.grantee);
    END LOOP;

    -- Only a script's grants land there: after a restore, or a second
    -- call, there is nothing to change (and only a superuser may).
    IF NOT EXISTS (SELECT FROM ordering_internal.role_initial_privileges()) THEN
        RETURN;
    END IF;
    UPDATE pg_catalog.pg_init_privs i
       SET initprivs = ARRAY(SELECT x.item
                               FROM pg_catalog.unnest(i.initprivs) WITH ORDINALITY AS x(item, n)
                              WHERE (SELECT ae.grantee FROM pg_catalog.aclexplode(ARRAY[x.item]) ae LIMIT 1)
                                    IN (0, ri.owner)
                              ORDER BY x.n)
      FROM ordering_internal.role_initial_privileges() ri
     WHERE i.classoid OPERATOR(pg_catalog.=) ri.classoid
       AND i.objoid OPERATOR(pg_catalog.=) ri.objoid
       AND i.objsubid OPERATOR(pg_catalog.=) ri.objsubid
       AND NOT ri.schema;
    DELETE FROM pg_catalog.pg_init_privs i
     USING ordering_internal.role_initial_privileges() ri
     WHERE i.classoid OPERATOR(pg_catalog.=) ri.classoid
       AND i.objoid OPERATOR(pg_catalog.=) ri.objoid
       AND i.objsubid OPERATOR(pg_catalog.=) ri.objsubid
       AND ri.schema;
END
$$;
COMMENT ON FUNCTION ordering_internal.renew_privileges() IS
    'Internal to the update scripts and ordering.post_restore(): gives every role that holds a privilege set the set of this version, and keeps only the owner''s and PUBLIC''s privileges as the extension''s initial privileges, so that pg_dump dumps the roles''';
-- An update and post_restore() run it as the extension's owner or a
-- superuser, who alone may give the sets.
REVOKE EXECUTE ON FUNCTION ordering_internal.renew_privileges() FROM PUBLIC;
