-- The event trigger ordering_protect_tables (src/protect.c): ALTER TABLE
-- commands that would break a promise of the extension's own tables are
-- refused before they run.
CREATE OR REPLACE FUNCTION ordering_internal.protect_tables() RETURNS event_trigger
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'ordering_protect_tables';
COMMENT ON FUNCTION ordering_internal.protect_tables() IS
    'Event trigger: refuses SET UNLOGGED, added, dropped, retyped or renamed columns, NOT NULL changes, another access method, a rename or another schema, inheritance and partitioning of the extension''s own tables (0A000), except in CREATE or ALTER EXTENSION';
REVOKE EXECUTE ON FUNCTION ordering_internal.protect_tables() FROM PUBLIC;
