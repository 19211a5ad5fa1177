-- A consumer's position (src/consumer.c).
CREATE OR REPLACE FUNCTION ordering."position"(consumer text, resource_id text) RETURNS bigint
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_position';
COMMENT ON FUNCTION ordering."position"(text, text) IS
    'The highest sequence number the consumer has applied for the resource; 0 if none';
REVOKE EXECUTE ON FUNCTION ordering."position"(text, text) FROM PUBLIC;
