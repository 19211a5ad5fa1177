-- The hash of a (resource, seq) pair that bucket summaries XOR together
-- (resource_bucket.sql says why it is in ordering_internal).
CREATE OR REPLACE FUNCTION ordering_internal.resource_fingerprint(resource_id text, seq bigint)
    RETURNS bigint
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'ordering_resource_fingerprint';
COMMENT ON FUNCTION ordering_internal.resource_fingerprint(text, bigint) IS
    'Internal to reconciliation (the summaries): the hash of a (resource, seq) pair: the first 8 bytes, big-endian, of SHA-256 of the resource''s UTF-8 bytes followed by int8send(seq)';
REVOKE EXECUTE ON FUNCTION ordering_internal.resource_fingerprint(text, bigint) FROM PUBLIC;
