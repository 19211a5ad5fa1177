-- C (src/producer.c): the snapshot and privileges of a SQL read of
-- ordering.sequences (SELECT on it is checked), plus what a running bulk
-- statement holds in memory (src/statement_counters.c), and for a stream
-- distributed by Citus the read of its counter shard on the shard's node.
-- Not STRICT: NULL arguments are errors, as for next_sequence().
CREATE OR REPLACE FUNCTION ordering.last_sequence(stream text, resource_id text)
    RETURNS bigint
    LANGUAGE c STABLE AS 'MODULE_PATHNAME', 'ordering_last_sequence';
COMMENT ON FUNCTION ordering.last_sequence(text, text) IS
    'Highest sequence number of (stream, resource) allocated and visible to the caller; 0 if none';
REVOKE EXECUTE ON FUNCTION ordering.last_sequence(text, text) FROM PUBLIC;
