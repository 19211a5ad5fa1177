-- Relays of a distributed outbox (docs/citus.md, "Relays").  Citus refuses
-- SELECT ... FOR UPDATE SKIP LOCKED across shards, so a relay claims on one
-- node at a time: it connects to every node that holds shards of the outbox
-- (ordering.relay_nodes() names them), and on each claims from the shards
-- placed there, skipping what other relays of that node hold, publishes,
-- marks, and commits.  Each shard is claimed under its Citus metadata lock
-- (this function), so no move or split of it completes while a relay holds
-- rows of it, and a shard that moved away is skipped: its rows are claimed
-- on their new node.  The outbox needs the columns id bigint and
-- published_at timestamptz, as ordering.outbox has.
CREATE OR REPLACE FUNCTION ordering_internal.lock_shard_for_relay(outbox regclass, shardid bigint)
    RETURNS void
    LANGUAGE c VOLATILE STRICT
    AS 'MODULE_PATHNAME', 'ordering_lock_shard_for_relay';
COMMENT ON FUNCTION ordering_internal.lock_shard_for_relay(regclass, bigint) IS
    'Internal to the relay functions: the Citus metadata lock of a shard of an outbox, in share mode, to the end of the transaction, for a caller who may update the outbox';
-- It checks its caller's rights itself (src/citus.c).
GRANT EXECUTE ON FUNCTION ordering_internal.lock_shard_for_relay(regclass, bigint) TO PUBLIC;
