-- One gap sweep (src/gaps.c); the background worker runs it every
-- ordering.sweep_interval.
CREATE OR REPLACE FUNCTION ordering.sweep_gaps() RETURNS SETOF ordering.gap_requests
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_sweep_gaps';
COMMENT ON FUNCTION ordering.sweep_gaps() IS
    'One gap sweep: writes ordering.gap_requests for the gaps past the deadline (repeats back off exponentially), sends each emitted request as NOTIFY ordering_gap with the row as JSON, returns the emitted requests';
REVOKE EXECUTE ON FUNCTION ordering.sweep_gaps() FROM PUBLIC;
