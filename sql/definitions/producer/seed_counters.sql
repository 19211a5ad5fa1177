-- Raises the counter of every resource of an attached table to the highest
-- number the table holds (src/restore.c): attach() of a table that holds
-- numbers, and post_restore(), continue each resource after its highest.
-- Any role may call it, so it checks what attach() checks before a counter
-- moves: the table registered as attached to the stream its trigger names,
-- attach()'s ownership rule (42501), a bigint sequence column (42804).  A
-- stream distributed by Citus is raised in its counter table, on every
-- shard's node (src/citus.c).
CREATE OR REPLACE FUNCTION ordering_internal.seed_counters(tbl regclass) RETURNS bigint
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_seed_counters';
COMMENT ON FUNCTION ordering_internal.seed_counters(regclass) IS
    'Internal to ordering.attach() and ordering.post_restore(): raises the counter of every resource of the table to its highest number there, in the stream its sequencing trigger names (never lowers one); only for a table registered as attached to that stream, and a caller who may attach it (the TRIGGER privilege, and the ownership of the stream''s other tables); returns how many resources it has (NULL for a stream distributed by Citus)';
-- attach() and post_restore() run as their caller, and it checks the
-- caller's rights itself (above).
GRANT EXECUTE ON FUNCTION ordering_internal.seed_counters(regclass) TO PUBLIC;
