-- The hash of a (resource, seq) pair that bucket summaries XOR together
-- (resource_bucket.sql).
CREATE OR REPLACE FUNCTION ordering.resource_fingerprint(resource_id text, seq bigint)
    RETURNS bigint
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'ordering_resource_fingerprint';
COMMENT ON FUNCTION ordering.resource_fingerprint(text, bigint) IS
    'The reconciliation hash of a (resource, seq) pair: the first 8 bytes, big-endian, of SHA-256 of the resource''s UTF-8 bytes followed by int8send(seq)';
REVOKE EXECUTE ON FUNCTION ordering.resource_fingerprint(text, bigint) FROM PUBLIC;
