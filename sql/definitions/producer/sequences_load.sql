-- The trigger of ordering.sequences (src/restore.c): a counter row inserted
-- by SQL (pg_restore's COPY, post_restore(), an operator raising counters)
-- merges with the counter, keeping the higher value.
CREATE OR REPLACE FUNCTION ordering_internal.sequences_load() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'ordering_sequences_load';
COMMENT ON FUNCTION ordering_internal.sequences_load() IS
    'Trigger on ordering.sequences: an inserted counter row raises the counter to at least its value (restores, loads) instead of being inserted';
-- A trigger fires without EXECUTE, and nobody calls it.
REVOKE EXECUTE ON FUNCTION ordering_internal.sequences_load() FROM PUBLIC;
