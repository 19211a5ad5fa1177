-- Giving up on a dead letter (src/dead_letters.c).
CREATE OR REPLACE FUNCTION ordering.discard_dead_letter(consumer text, resource_id text)
    RETURNS TABLE (seq bigint, payload jsonb)
    LANGUAGE c VOLATILE ROWS 1 AS 'MODULE_PATHNAME', 'ordering_discard_dead_letter';
COMMENT ON FUNCTION ordering.discard_dead_letter(text, text) IS
    'Operator action: gives up on the dead event of a resource; the position moves past it and the events that then drain are returned';
REVOKE EXECUTE ON FUNCTION ordering.discard_dead_letter(text, text) FROM PUBLIC;
