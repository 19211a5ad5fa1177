/* ordering 1.1 -> 1.2 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ordering UPDATE TO '1.2'" to load this file. \quit

/*
 * A new database runs ordering--1.0.sql, ordering--1.0--1.1.sql and then this
 * script, so a fresh install and an updated one are made by the same
 * statements.  Each section below is one topic; a section never redefines
 * what a later one moves or drops.
 */

/*
 * The internal schema: functions the extension's own objects call and users
 * do not (as Citus keeps citus_internal).  Its functions are not part of the
 * contract and may change in any release.
 */
CREATE SCHEMA ordering_internal;
COMMENT ON SCHEMA ordering_internal IS
	'internal functions of the ordering extension: not for direct use; they may change in any release';
-- Functions of the public schema run as their caller and call these: every
-- role may look up the schema, and each function's EXECUTE privilege says
-- who may call it (revoked from PUBLIC unless any caller may).
GRANT USAGE ON SCHEMA ordering_internal TO PUBLIC;

-- ------------------------------------------------------------------------
-- Hardening: restores, the extension's own tables, keys, attach
-- ------------------------------------------------------------------------

-- The extension's own tables (src/protect.c): ALTER TABLE commands that
-- would break a promise are refused before they run.
CREATE FUNCTION ordering_internal.protect_tables() RETURNS event_trigger
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'ordering_protect_tables';
COMMENT ON FUNCTION ordering_internal.protect_tables() IS
    'Event trigger: refuses SET UNLOGGED, added, dropped, retyped or renamed columns, NOT NULL changes, another access method, a rename or another schema, inheritance and partitioning of the extension''s own tables (0A000), except in CREATE or ALTER EXTENSION';
REVOKE EXECUTE ON FUNCTION ordering_internal.protect_tables() FROM PUBLIC;
CREATE EVENT TRIGGER ordering_protect_tables ON ddl_command_start
    WHEN TAG IN ('ALTER TABLE')
    EXECUTE FUNCTION ordering_internal.protect_tables();

-- A table of the extension made unlogged under 1.1 is logged again: the
-- storage layer would refuse it (a crash empties it).
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT c.oid::pg_catalog.regclass AS tbl
          FROM pg_catalog.pg_depend d
          JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
          JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
         WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
           AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
           AND d.deptype OPERATOR(pg_catalog.=) 'e'
           AND e.extname OPERATOR(pg_catalog.=) 'ordering'
           AND c.relkind IN ('r', 'p')
           AND c.relpersistence OPERATOR(pg_catalog.=) 'u'
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE %s SET LOGGED', t.tbl);
        RAISE NOTICE 'table % of the extension ordering was unlogged: it is logged again', t.tbl;
    END LOOP;
END
$$;

-- (end of section)

-- ------------------------------------------------------------------------
-- Hardening: privileges, self-checks, operations
-- ------------------------------------------------------------------------

-- (end of section)

-- ------------------------------------------------------------------------
-- Bulk producers
-- ------------------------------------------------------------------------

-- (end of section)

-- ------------------------------------------------------------------------
-- Citus: producers
-- ------------------------------------------------------------------------

-- (end of section)

-- ------------------------------------------------------------------------
-- Citus: consumers
-- ------------------------------------------------------------------------

-- (end of section)

-- ------------------------------------------------------------------------
-- The public surface: plumbing moved to ordering_internal, one deliver(),
-- the 1.0 aliases retired (last: every section above uses the 1.1 names)
-- ------------------------------------------------------------------------

-- (end of section)
