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
