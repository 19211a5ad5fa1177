-- The gaps of distributed consumers: each node lists or sweeps those of the
-- shard groups it holds (src/gaps_citus.c), and ordering.sweep_gaps() on
-- the coordinator sweeps every node's and announces their requests there.
CREATE OR REPLACE FUNCTION ordering_internal.shard_gaps(deadline double precision, sweep boolean)
    RETURNS text
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_shard_gaps';
COMMENT ON FUNCTION ordering_internal.shard_gaps(double precision, boolean) IS
    'This node''s part of the gaps of the distributed consumers: the open gaps older than deadline seconds of the shard groups placed here, or with sweep, one gap sweep of them and the requests it emitted; a JSON array of rows';
-- The monitoring set lists the gaps with it; a sweep writes gap requests
-- and needs EXECUTE on ordering.sweep_gaps() too (ordering.sweep_gaps()
-- runs it on every node as its own caller).
REVOKE EXECUTE ON FUNCTION ordering_internal.shard_gaps(double precision, boolean) FROM PUBLIC;
