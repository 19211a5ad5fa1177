-- For streams without a table (version columns, custom outboxes): the next
-- number, allocated in the caller's transaction (src/producer.c).
CREATE OR REPLACE FUNCTION ordering.next_sequence(stream text, resource_id text) RETURNS bigint
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_next_sequence';
COMMENT ON FUNCTION ordering.next_sequence(text, text) IS
    'Allocates the next sequence number of (stream, resource) in the caller''s transaction';
REVOKE EXECUTE ON FUNCTION ordering.next_sequence(text, text) FROM PUBLIC;
