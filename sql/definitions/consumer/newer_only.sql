-- A BEFORE UPDATE row trigger for a consumer's own projection table
-- (src/newer_only.c): an INSERT ... ON CONFLICT DO UPDATE becomes
-- stale-safe.
CREATE OR REPLACE FUNCTION ordering.newer_only() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'ordering_newer_only';
COMMENT ON FUNCTION ordering.newer_only() IS
    'BEFORE UPDATE FOR EACH ROW trigger for projection tables, arguments (version_column [, consumer]): skips every update whose new version is not greater than the stored one';
REVOKE EXECUTE ON FUNCTION ordering.newer_only() FROM PUBLIC;
