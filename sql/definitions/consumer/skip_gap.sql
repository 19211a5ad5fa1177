-- Operator action on a gap that will not fill (src/consumer.c).
CREATE OR REPLACE FUNCTION ordering.skip_gap(consumer text, resource_id text)
    RETURNS TABLE (seq bigint, payload jsonb)
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_skip_gap';
COMMENT ON FUNCTION ordering.skip_gap(text, text) IS
    'Operator action: gives up on the events missing before the lowest parked one, moves the position past the gap and returns the parked events that then drain, in order';
REVOKE EXECUTE ON FUNCTION ordering.skip_gap(text, text) FROM PUBLIC;
