-- Reconciliation compares a producer stream (ordering.sequences) with a
-- consumer (ordering.positions) in another database: both sides summarise
-- their resources per bucket, the buckets whose summaries differ are looked
-- at resource by resource, and the producer republishes what the consumer
-- has not got.  docs/anti-entropy.md describes the steps; the hashes are
-- defined on bytes (src/producer/antientropy.c) so that two databases on
-- different platforms and PostgreSQL versions agree on them.  Users reach
-- them through the summaries, consumer_state() and reconcile(), so they live
-- in ordering_internal (schema ordering until 1.2); docs/anti-entropy.md
-- gives the same hashes in plain SQL.
CREATE OR REPLACE FUNCTION ordering_internal.resource_bucket(resource_id text, buckets integer)
    RETURNS integer
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'ordering_resource_bucket';
COMMENT ON FUNCTION ordering_internal.resource_bucket(text, integer) IS
    'Internal to reconciliation (the summaries, consumer_state, reconcile): the bucket (0 .. buckets - 1) of a resource: floor(h * buckets / 2^32), h = the first 4 bytes of SHA-256 of the resource''s UTF-8 bytes, big-endian';
REVOKE EXECUTE ON FUNCTION ordering_internal.resource_bucket(text, integer) FROM PUBLIC;
