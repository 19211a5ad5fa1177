-- The extension's schema, one line per object or part of one, each with what
-- defines it and without OIDs, sorted by bytes: test/upgrade.sh compares
-- these lines between a fresh CREATE EXTENSION and each updated database,
-- which must be the same.  pg_dump cannot be used for it: it dumps an
-- extension as its CREATE EXTENSION line.
--
-- The members of the extension (pg_depend, deptype 'e') with, for
-- functions, pg_get_functiondef(); for relations, their kind, persistence,
-- options and every column, constraint, index, trigger, rule and policy;
-- for views, their query; for types, domains and sequences, their
-- definition; for event triggers, their event, tags and function; and for
-- all, owner, privileges, initial privileges (pg_init_privs, which dumps
-- use) and comment.  Also every relation and function in the extension's
-- schemas that is not a member, and the extension's own row (version,
-- configuration tables and their dump conditions).
\set ON_ERROR_STOP 1
\pset tuples_only on
\pset format unaligned
SET client_min_messages = warning;

WITH ext AS (
    SELECT e.oid, e.extversion, e.extrelocatable, e.extnamespace::regnamespace::text AS nsp,
           e.extconfig, e.extcondition
      FROM pg_catalog.pg_extension e
     WHERE e.extname = 'ordering'
), members AS (
    SELECT d.classid, d.objid
      FROM pg_catalog.pg_depend d, ext
     WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
       AND d.refobjid = ext.oid AND d.deptype = 'e'
), rels AS (
    SELECT c.oid, pg_catalog.pg_describe_object('pg_class'::regclass, c.oid, 0) AS what
      FROM pg_catalog.pg_class c JOIN members m
        ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND m.objid = c.oid
), lines (line) AS (
    -- the extension itself, its configuration tables by name (the order of
    -- the scripts' pg_extension_config_dump() calls means nothing)
    SELECT pg_catalog.concat_ws(' | ', 'extension', e.extversion, e.extrelocatable, e.nsp,
               (SELECT pg_catalog.string_agg(t::pg_catalog.regclass::text || ' ' ||
                                             COALESCE(e.extcondition[i], '<null>'), ', '
                                             ORDER BY t::pg_catalog.regclass::text COLLATE "C")
                  FROM pg_catalog.unnest(e.extconfig) WITH ORDINALITY u (t, i)))
      FROM ext e
    UNION ALL
    -- every member, with owner-independent comment
    SELECT pg_catalog.concat_ws(' | ', 'member',
               pg_catalog.pg_describe_object(m.classid, m.objid, 0),
               'comment: ' || pg_catalog.obj_description(m.objid,
                   (SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid = m.classid)))
      FROM members m
    UNION ALL
    -- initial privileges of members and of their columns
    SELECT pg_catalog.concat_ws(' | ', 'init privileges',
               pg_catalog.pg_describe_object(i.classoid, i.objoid, i.objsubid),
               i.privtype, i.initprivs::text)
      FROM pg_catalog.pg_init_privs i JOIN members m
        ON m.classid = i.classoid AND m.objid = i.objoid
    UNION ALL
    -- functions, procedures, aggregates
    SELECT pg_catalog.concat_ws(' | ', 'function', p.oid::pg_catalog.regprocedure::text,
               pg_catalog.pg_get_userbyid(p.proowner), p.proacl::text,
               CASE WHEN p.prokind = 'a' THEN 'aggregate'
                    ELSE pg_catalog.pg_get_functiondef(p.oid) END)
      FROM pg_catalog.pg_proc p JOIN members m
        ON m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND m.objid = p.oid
    UNION ALL
    -- relations
    SELECT pg_catalog.concat_ws(' | ', 'relation', r.what, c.relkind, c.relpersistence,
               c.relreplident, c.relrowsecurity, c.relforcerowsecurity,
               c.reloptions::text, pg_catalog.pg_get_userbyid(c.relowner), c.relacl::text,
               c.relispartition, pg_catalog.pg_get_partkeydef(c.oid),
               CASE WHEN c.relkind IN ('v', 'm') THEN pg_catalog.pg_get_viewdef(c.oid) END)
      FROM rels r JOIN pg_catalog.pg_class c ON c.oid = r.oid
    UNION ALL
    -- their columns, by position among the columns not dropped
    SELECT pg_catalog.concat_ws(' | ', 'column', r.what,
               pg_catalog.rank() OVER (PARTITION BY a.attrelid ORDER BY a.attnum),
               a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod),
               'not null ' || a.attnotnull, a.attidentity, a.attgenerated,
               'default ' || pg_catalog.pg_get_expr(ad.adbin, ad.adrelid),
               'collation ' || (SELECT co.collname FROM pg_catalog.pg_collation co
                                 WHERE co.oid = a.attcollation),
               a.attstorage, a.attcompression, a.attacl::text,
               'comment: ' || pg_catalog.col_description(a.attrelid, a.attnum))
      FROM rels r
      JOIN pg_catalog.pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
      LEFT JOIN pg_catalog.pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
    UNION ALL
    SELECT pg_catalog.concat_ws(' | ', 'constraint', r.what, co.conname,
               pg_catalog.pg_get_constraintdef(co.oid), co.condeferrable, co.condeferred,
               'comment: ' || pg_catalog.obj_description(co.oid, 'pg_constraint'))
      FROM rels r JOIN pg_catalog.pg_constraint co ON co.conrelid = r.oid
    UNION ALL
    SELECT pg_catalog.concat_ws(' | ', 'index', r.what, pg_catalog.pg_get_indexdef(i.indexrelid),
               i.indisclustered, i.indisreplident,
               (SELECT ic.reloptions::text FROM pg_catalog.pg_class ic WHERE ic.oid = i.indexrelid),
               'comment: ' || pg_catalog.obj_description(i.indexrelid, 'pg_class'))
      FROM rels r JOIN pg_catalog.pg_index i ON i.indrelid = r.oid
    UNION ALL
    SELECT pg_catalog.concat_ws(' | ', 'trigger', r.what, pg_catalog.pg_get_triggerdef(t.oid),
               t.tgenabled,
               'comment: ' || pg_catalog.obj_description(t.oid, 'pg_trigger'))
      FROM rels r JOIN pg_catalog.pg_trigger t ON t.tgrelid = r.oid AND NOT t.tgisinternal
    UNION ALL
    SELECT pg_catalog.concat_ws(' | ', 'rule', r.what, pg_catalog.pg_get_ruledef(ru.oid), ru.ev_enabled)
      FROM rels r JOIN pg_catalog.pg_rewrite ru ON ru.ev_class = r.oid AND ru.rulename <> '_RETURN'
    UNION ALL
    SELECT pg_catalog.concat_ws(' | ', 'policy', r.what, po.polname, po.polcmd, po.polpermissive,
               po.polroles::pg_catalog.regrole[]::text,
               pg_catalog.pg_get_expr(po.polqual, po.polrelid),
               pg_catalog.pg_get_expr(po.polwithcheck, po.polrelid))
      FROM rels r JOIN pg_catalog.pg_policy po ON po.polrelid = r.oid
    UNION ALL
    SELECT pg_catalog.concat_ws(' | ', 'sequence', r.what, s.seqtypid::pg_catalog.regtype::text,
               s.seqstart, s.seqincrement, s.seqmax, s.seqmin, s.seqcache, s.seqcycle)
      FROM rels r JOIN pg_catalog.pg_sequence s ON s.seqrelid = r.oid
    UNION ALL
    -- types, domains and their constraints, enums
    SELECT pg_catalog.concat_ws(' | ', 'type', t.oid::pg_catalog.regtype::text, t.typtype,
               pg_catalog.format_type(t.typbasetype, t.typtypmod), t.typnotnull, t.typdefault,
               pg_catalog.pg_get_userbyid(t.typowner), t.typacl::text,
               (SELECT pg_catalog.string_agg(pg_catalog.pg_get_constraintdef(co.oid), ', '
                                             ORDER BY co.conname)
                  FROM pg_catalog.pg_constraint co WHERE co.contypid = t.oid),
               (SELECT pg_catalog.string_agg(en.enumlabel, ', ' ORDER BY en.enumsortorder)
                  FROM pg_catalog.pg_enum en WHERE en.enumtypid = t.oid))
      FROM pg_catalog.pg_type t JOIN members m
        ON m.classid = 'pg_catalog.pg_type'::pg_catalog.regclass AND m.objid = t.oid
    UNION ALL
    -- schemas and event triggers
    SELECT pg_catalog.concat_ws(' | ', 'schema', n.nspname, pg_catalog.pg_get_userbyid(n.nspowner),
               n.nspacl::text)
      FROM pg_catalog.pg_namespace n JOIN members m
        ON m.classid = 'pg_catalog.pg_namespace'::pg_catalog.regclass AND m.objid = n.oid
    UNION ALL
    SELECT pg_catalog.concat_ws(' | ', 'event trigger', et.evtname, et.evtevent,
               et.evtfoid::pg_catalog.regprocedure::text, et.evtenabled, et.evttags::text,
               pg_catalog.pg_get_userbyid(et.evtowner))
      FROM pg_catalog.pg_event_trigger et JOIN members m
        ON m.classid = 'pg_catalog.pg_event_trigger'::pg_catalog.regclass AND m.objid = et.oid
    UNION ALL
    -- what lies in the extension's schemas without being a member
    SELECT pg_catalog.concat_ws(' | ', 'not a member', pg_catalog.pg_describe_object(o.classid, o.oid, 0))
      FROM (SELECT 'pg_catalog.pg_class'::pg_catalog.regclass AS classid, c.oid, c.relnamespace AS nsp
              FROM pg_catalog.pg_class c
             WHERE c.relkind NOT IN ('i', 'I', 't')
            UNION ALL
            SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass, p.oid, p.pronamespace
              FROM pg_catalog.pg_proc p) o
      JOIN pg_catalog.pg_namespace n ON n.oid = o.nsp
     WHERE n.nspname IN ('ordering', 'ordering_internal')
       AND NOT EXISTS (SELECT FROM members m WHERE m.classid = o.classid AND m.objid = o.oid)
)
SELECT line FROM lines ORDER BY line COLLATE "C";
