-- State consumers (src/consumer.c): each call is serialized per (consumer,
-- resource).  Like every consumer function, not STRICT: a NULL argument
-- raises SQLSTATE 22004 instead of silently returning NULL.
CREATE OR REPLACE FUNCTION ordering.apply_if_newer(consumer text, resource_id text, seq bigint)
    RETURNS boolean
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_apply_if_newer';
COMMENT ON FUNCTION ordering.apply_if_newer(text, text, bigint) IS
    'State consumers: true when seq is above the consumer''s position (which becomes seq; apply the event in the same transaction), false for stale and duplicate events, which change nothing';
REVOKE EXECUTE ON FUNCTION ordering.apply_if_newer(text, text, bigint) FROM PUBLIC;
