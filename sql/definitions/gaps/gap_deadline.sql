-- The deadline as an interval, for SQL (the setting is in seconds).
CREATE OR REPLACE FUNCTION ordering_internal.gap_deadline() RETURNS interval
    LANGUAGE c STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'ordering_gap_deadline_interval';
COMMENT ON FUNCTION ordering_internal.gap_deadline() IS
    'The current ordering.gap_deadline setting as an interval';
REVOKE EXECUTE ON FUNCTION ordering_internal.gap_deadline() FROM PUBLIC;
