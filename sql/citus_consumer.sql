-- Consumers whose state Citus distributes (ordering.distribute_consumer):
-- what holds without Citus.  On a cluster: test/t/041_citus_consumer.pl.
\set VERBOSITY terse

-- A statement's outcome: "ran here", or its error's SQLSTATE, message and
-- hint.
CREATE FUNCTION try_call(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    hint text;
BEGIN
    EXECUTE q;
    RETURN 'ran here';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
    RETURN SQLSTATE || ': ' || SQLERRM || CASE WHEN hint <> '' THEN ' (hint: ' || hint || ')' ELSE '' END;
END $$;

-- Refused without Citus, and for bad arguments, before anything changes.
SELECT try_call($$SELECT ordering.distribute_consumer('billing', 'pg_class')$$) AS without_citus;
SELECT try_call(q) AS bad_arguments
  FROM (VALUES ($$SELECT ordering.distribute_consumer(NULL, 'pg_class')$$),
               ($$SELECT ordering.distribute_consumer('billing', NULL)$$),
               ($$SELECT ordering.distribute_consumer('', 'pg_class')$$),
               ($$SELECT ordering.distribute_consumer(repeat('x', 1025), 'pg_class')$$)) v(q);
SELECT count(*) AS registered FROM ordering_internal.distributed_consumers;

-- The tag of a consumer names its tables and call functions on every node:
-- "consumer_" and the first 16 hex digits of SHA-256 of its name.
SELECT ordering_internal.consumer_tag('billing') AS tag,
       ordering_internal.consumer_tag('billing')
         = 'consumer_' || left(encode(sha256(convert_to('billing', 'UTF8')), 'hex'), 16) AS sha256;
SELECT ordering_internal.distributed_consumer_table('billing', '_positions') IS NULL AS local;

-- Nothing is distributed: the consumer functions work here, and the
-- cluster's parts of the gaps and of check() are empty.
SELECT * FROM ordering.deliver('billing', 'r1', 2, '{"n": 2}');
SELECT * FROM ordering.deliver('billing', 'r1', 1, '{"n": 1}');
SELECT * FROM ordering_internal.distributed_open_gaps();
SELECT * FROM ordering_internal.check_distributed_consumers(100, NULL);
SELECT ordering_internal.shard_gaps(60, true) AS this_nodes_part;

-- A consumer is distributed where its tables are: with a relation of the
-- name of its positions table, every consumer function sends its calls to
-- Citus, and without Citus refuses them instead of using the extension's
-- tables; another consumer keeps working here.
CREATE FUNCTION noop(r text, s bigint, p jsonb) RETURNS void LANGUAGE sql AS '';
SELECT format('CREATE TABLE ordering_internal.%I (x int)',
              ordering_internal.consumer_tag('billing') || '_positions') \gexec
SELECT c.call, ok
  FROM (VALUES
    ('deliver', $$SELECT * FROM ordering.deliver('billing', 'r1', 3, '{}')$$),
    ('deliver with a handler', $$SELECT ordering.deliver('billing', 'r1', 3, '{}', 'noop(text,bigint,jsonb)')$$),
    ('apply_if_newer', $$SELECT ordering.apply_if_newer('billing', 'r1', 3)$$),
    ('position', $$SELECT ordering.position('billing', 'r1')$$),
    ('skip_gap', $$SELECT * FROM ordering.skip_gap('billing', 'r1')$$),
    ('dead_letter', $$SELECT ordering.dead_letter('billing', 'r1', 5, '{}', 'bad')$$),
    ('retry_dead_letter', $$SELECT * FROM ordering.retry_dead_letter('billing', 'r1')$$),
    ('discard_dead_letter', $$SELECT * FROM ordering.discard_dead_letter('billing', 'r1')$$),
    ('deliver_batch', $$SELECT * FROM ordering.deliver_batch('billing', '{r1}', '{3}', '{"{}"}')$$),
    ('apply_batch', $$SELECT * FROM ordering.apply_batch('billing', '{r1}', '{3}')$$)) c(call, q),
  LATERAL (SELECT try_call(c.q) AS ok) t
 ORDER BY 1;
SELECT * FROM ordering.deliver('ledger', 'r1', 1, '{"n": 1}');
SELECT format('DROP TABLE ordering_internal.%I',
              ordering_internal.consumer_tag('billing') || '_positions') \gexec
SELECT ordering.position('billing', 'r1') AS local_again;

-- Privileges: the monitoring set lists the gaps of the distributed
-- consumers (each node's part), the operator set also sweeps them;
-- check()'s part reads the tables as its caller (any role); only the
-- owner distributes a consumer.
CREATE ROLE regress_cc_nobody;
CREATE ROLE regress_cc_monitor;
CREATE ROLE regress_cc_operator;
SELECT ordering.grant_monitor('regress_cc_monitor');
SELECT ordering.grant_operator('regress_cc_operator');
GRANT EXECUTE ON FUNCTION try_call(text) TO PUBLIC;
CREATE TEMP TABLE cc_calls (n int, call text, q text);
INSERT INTO cc_calls VALUES
    (1, 'list', $$SELECT * FROM ordering_internal.distributed_open_gaps()$$),
    (2, 'list a node', $$SELECT ordering_internal.shard_gaps(60, false)$$),
    (3, 'sweep a node', $$SELECT ordering_internal.shard_gaps(60, true)$$),
    (4, 'check', $$SELECT * FROM ordering_internal.check_distributed_consumers(100, NULL)$$),
    (5, 'distribute', $$SELECT ordering.distribute_consumer('billing', 'pg_class')$$);
GRANT SELECT ON cc_calls TO PUBLIC;
SET ROLE regress_cc_nobody;
SELECT current_user, call, try_call(q) AS outcome FROM cc_calls ORDER BY n;
SET ROLE regress_cc_monitor;
SELECT current_user, call, try_call(q) AS outcome FROM cc_calls ORDER BY n;
SET ROLE regress_cc_operator;
SELECT current_user, call, try_call(q) AS outcome FROM cc_calls ORDER BY n;
RESET ROLE;
DROP OWNED BY regress_cc_nobody, regress_cc_monitor, regress_cc_operator;
DROP ROLE regress_cc_nobody, regress_cc_monitor, regress_cc_operator;

-- A consumer that is not distributed, called where Citus carried a query
-- from another node (a consumer function in a query over a distributed
-- table runs on the workers, in sessions Citus names "citus_internal"):
-- refused, its single and batch forms, and nothing is written.
SET application_name = 'citus_internal gpid=10000000123';
SELECT try_call(q) AS carried_here
  FROM (VALUES ($$SELECT ordering.apply_if_newer('carried', 'r', 1)$$),
               ($$SELECT * FROM ordering.deliver('carried', 'r', 1, '{}')$$),
               ($$SELECT ordering.position('carried', 'r')$$),
               ($$SELECT * FROM ordering.deliver_batch('carried', ARRAY['r'], ARRAY[1::bigint], ARRAY['{}'::jsonb])$$)) v(q);
RESET application_name;
SELECT count(*) AS carried_positions FROM ordering.positions WHERE consumer = 'carried';
-- and in a session of its own, where the application calls it
SELECT ordering.apply_if_newer('carried', 'r', 1) AS called_here;
DELETE FROM ordering.positions WHERE consumer = 'carried';

DROP FUNCTION try_call(text), noop(text, bigint, jsonb);
DELETE FROM ordering.parked WHERE consumer IN ('billing', 'ledger');
DELETE FROM ordering.positions WHERE consumer IN ('billing', 'ledger');
