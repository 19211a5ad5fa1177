-- Failover-safe publishing on a server without standbys:
-- claim_unpublished(..., replicated => true) and ordering.wait_for_standbys().
-- test/t/023_failover.pl runs them against a streaming standby and a failover.

-- Every call of the 1.0 claim_unpublished(integer) still resolves, to the
-- one function that replaced it (the claim of a distributed outbox takes
-- two arguments).
SELECT to_regprocedure('ordering.claim_unpublished(integer)') IS NULL AS old_signature_gone;
SELECT p.oid::regprocedure, pg_get_function_arguments(p.oid) FROM pg_proc p
 WHERE p.proname IN ('claim_unpublished', 'wait_for_standbys')
   AND p.pronamespace = 'ordering'::regnamespace
 ORDER BY 1::text;

BEGIN;
-- hide the unpublished rows earlier tests left (rolled back at the end)
UPDATE ordering.outbox SET published_at = now() WHERE published_at IS NULL;
SELECT count(*) AS nothing_to_claim FROM ordering.claim_unpublished();
SELECT count(*) AS nothing_to_claim FROM ordering.claim_unpublished(10);
SELECT count(*) AS nothing_to_claim FROM ordering.claim_unpublished(batch_size => 10);

-- Nothing to claim: a replicated claim returns at once, without asking any
-- standby (none is connected to this server).
SELECT count(*) AS nothing_to_claim
  FROM ordering.claim_unpublished(10, replicated => true, timeout => '0');

SELECT ordering.emit('repl-1', 'e', '{"n": 1}'), ordering.emit('repl-1', 'e', '{"n": 2}');

-- Rows to claim and no standby: the claim waits for the timeout, then fails,
-- and hands out nothing.
SAVEPOINT claim;
SELECT clock_timestamp() AS t0 \gset
SELECT resource_id, seq FROM ordering.claim_unpublished(10, replicated => true, timeout => '50ms');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK TO claim;
SELECT clock_timestamp() - :'t0'::timestamptz >= '50ms' AS waited_for_the_timeout;

-- timeout 0 checks once
SAVEPOINT claim;
SELECT resource_id, seq FROM ordering.claim_unpublished(10, replicated => true, timeout => '0');
ROLLBACK TO claim;

-- The failed claim locked nothing: the rows are still there to claim.
SELECT resource_id, seq FROM ordering.claim_unpublished(10) ORDER BY id;

-- The function a relay of its own outbox table calls, alone.
SAVEPOINT w;
SELECT ordering.wait_for_standbys('0');
ROLLBACK TO w;
ROLLBACK;

-- Bad input: the SQLSTATE of each.
\set VERBOSITY terse
SELECT count(*) FROM ordering.claim_unpublished(10, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM ordering.claim_unpublished(10, true, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM ordering.claim_unpublished(10, true, '-1 ms');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM ordering.claim_unpublished(10, false, '-1 day');
\echo :LAST_ERROR_SQLSTATE
SELECT ordering.wait_for_standbys(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT ordering.wait_for_standbys('-1 s');
\echo :LAST_ERROR_SQLSTATE
SELECT ordering.wait_for_standbys('1 mon -31 days');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default

-- Privileges: not for PUBLIC; the producer set has both.
CREATE ROLE regress_relay;
SELECT has_function_privilege('regress_relay', 'ordering.claim_unpublished(integer, boolean, interval)', 'EXECUTE') AS relay_claim,
       has_function_privilege('regress_relay', 'ordering.wait_for_standbys(interval)', 'EXECUTE') AS relay_wait;
SELECT ordering.grant_producer('regress_relay');
SELECT has_function_privilege('regress_relay', 'ordering.claim_unpublished(integer, boolean, interval)', 'EXECUTE') AS relay_claim,
       has_function_privilege('regress_relay', 'ordering.wait_for_standbys(interval)', 'EXECUTE') AS relay_wait;
SET ROLE regress_relay;
BEGIN;
UPDATE ordering.outbox SET published_at = now() WHERE published_at IS NULL;
SELECT count(*) AS claimed FROM ordering.claim_unpublished(1, replicated => true, timeout => '0');
SELECT ordering.wait_for_standbys('0');
ROLLBACK;
RESET ROLE;
DROP OWNED BY regress_relay;
DROP ROLE regress_relay;
