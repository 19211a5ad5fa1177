-- Every function of the extension that PUBLIC may execute, called with
-- arguments aimed at another role's stream by a role of each grant set and
-- by a role with none: each needs nothing (it reads only the catalog, or
-- does only what its caller may do anyway), or refuses what the public
-- entry point it serves would refuse.  Nothing of the other role's stream
-- changes.
\set VERBOSITY terse

CREATE ROLE regress_pf_owner;
CREATE ROLE regress_pf_nobody;
CREATE ROLE regress_pf_producer;
CREATE ROLE regress_pf_consumer;
CREATE ROLE regress_pf_monitor;
CREATE ROLE regress_pf_operator;
SELECT ordering.grant_producer('regress_pf_owner');
SELECT ordering.grant_producer('regress_pf_producer');
SELECT ordering.grant_consumer('regress_pf_consumer');
SELECT ordering.grant_monitor('regress_pf_monitor');
SELECT ordering.grant_operator('regress_pf_operator');
GRANT CREATE ON SCHEMA public TO regress_pf_owner;

-- The stream to protect: another role's table, attached, with numbers.
SET ROLE regress_pf_owner;
CREATE TABLE pf_owned (resource_id text NOT NULL, seq bigint);
SELECT ordering.attach('pf_owned', stream => 'pf.victim');
INSERT INTO pf_owned (resource_id) VALUES ('a'), ('a'), ('a');
RESET ROLE;

-- Each caller has a table of its own holding numbers far ahead of the
-- victim's; the producer (whose set may create the sequencing trigger)
-- puts a sequencing trigger made by hand on it, naming the victim's stream.
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['nobody', 'producer', 'consumer', 'monitor', 'operator'] LOOP
        EXECUTE format('CREATE TABLE pf_%s (resource_id text NOT NULL, seq bigint, tseq text)', r);
        EXECUTE format($q$INSERT INTO pf_%s VALUES ('a', 1000000, '1000000'),
                                                    ('b', 9223372036854775807, 'x')$q$, r);
        EXECUTE format('ALTER TABLE pf_%s OWNER TO regress_pf_%s', r, r);
    END LOOP;
END
$$;
SET ROLE regress_pf_producer;
CREATE TRIGGER ordering_sequence BEFORE INSERT ON pf_producer FOR EACH ROW
    EXECUTE FUNCTION ordering.sequence_trigger('resource_id', 'seq', 'pf.victim');
RESET ROLE;

-- What each function PUBLIC may execute is called with: "@own" is the
-- caller's own table.  The list must name every such function (checked
-- below), so that a function made executable by PUBLIC later is tried too.
CREATE TEMP TABLE pf_calls (fn regprocedure, call text);
INSERT INTO pf_calls VALUES
  ('ordering_internal.check_resource_type(regclass, name)',
   $$SELECT ordering_internal.check_resource_type('pf_owned', 'resource_id')$$),
  ('ordering_internal.sequencing_trigger(regclass)',
   $$SELECT ordering_internal.sequencing_trigger('pf_owned')$$),
  ('ordering_internal.seed_counters(regclass)',
   $$SELECT ordering_internal.seed_counters('@own')$$),
  ('ordering_internal.seed_counters(regclass)',
   $$SELECT ordering_internal.seed_counters('pf_owned')$$),
  ('ordering_internal.counter_table_name(text)',
   $$SELECT ordering_internal.counter_table_name('pf.victim')$$),
  ('ordering_internal.distributed_counters(text)',
   $$SELECT ordering_internal.distributed_counters('pf.victim')$$),
  ('ordering_internal.citus_distribution(regclass)',
   $$SELECT ordering_internal.citus_distribution('pf_owned')$$),
  ('ordering_internal.citus_trigger_copy(regclass)',
   $$SELECT ordering_internal.citus_trigger_copy('pf_owned')$$),
  ('ordering_internal.citus_attach_check(regclass, name)',
   $$SELECT ordering_internal.citus_attach_check('pf_owned', 'resource_id')$$),
  ('ordering_internal.citus_key_base_type(regtype)',
   $$SELECT ordering_internal.citus_key_base_type('pg_catalog.int8')$$),
  ('ordering_internal.citus_registry_sync(regclass)',
   $$SELECT ordering_internal.citus_registry_sync('@own')$$),
  ('ordering_internal.citus_registry_sync(regclass)',
   $$SELECT ordering_internal.citus_registry_sync('pf_owned')$$),
  ('ordering_internal.citus_counter_table(regclass, name, text)',
   $$SELECT ordering_internal.citus_counter_table('@own', 'resource_id', 'pf.victim')$$),
  ('ordering_internal.create_distributed_sequencing_triggers(regclass, name, name, text, regclass)',
   $$SELECT ordering_internal.create_distributed_sequencing_triggers('pf_owned', 'resource_id', 'seq', 'pf.victim', 'ordering.sequences')$$),
  ('ordering_internal.check_distributed(regclass, name, name, text, bigint)',
   $$SELECT ordering_internal.check_distributed('pf_owned', 'resource_id', 'seq', 'pf.victim', 10)$$),
  ('ordering_internal.lock_shard_for_relay(regclass, bigint)',
   $$SELECT ordering_internal.lock_shard_for_relay('pf_owned', 1)$$),
  ('ordering_internal.relay_shards(regclass)',
   $$SELECT ordering_internal.relay_shards('pf_owned')$$),
  ('ordering_internal.consumer_tag(text)',
   $$SELECT ordering_internal.consumer_tag('billing')$$),
  ('ordering_internal.check_distributed_consumers(double precision, bigint)',
   $$SELECT ordering_internal.check_distributed_consumers(100, 10)$$),
  ('ordering_internal.distributed_consumer_column(text)',
   $$SELECT ordering_internal.distributed_consumer_column('billing')$$),
  ('ordering_internal.distributed_consumer_table(text, text)',
   $$SELECT ordering_internal.distributed_consumer_table('billing', '_positions')$$),
  ('ordering_internal.sequence_stored()',
   $$SELECT ordering_internal.sequence_stored()$$),
  ('ordering.resource_key(anyelement)',
   $$SELECT ordering.resource_key(42)$$);

-- Every function PUBLIC may execute is called above (none missing, none
-- that PUBLIC may not execute).
SELECT p.oid::regprocedure AS public_function_not_tried
  FROM pg_proc p
 WHERE p.pronamespace IN ('ordering'::regnamespace, 'ordering_internal'::regnamespace)
   AND has_function_privilege('public', p.oid, 'EXECUTE')
   AND p.oid NOT IN (SELECT fn FROM pf_calls)
UNION ALL
SELECT fn FROM pf_calls WHERE NOT has_function_privilege('public', fn, 'EXECUTE');

-- The victim's counters before the calls.
CREATE TEMP TABLE pf_before AS
SELECT stream, resource_id, last_seq FROM ordering.sequences;

-- Each call as each role, in a subtransaction of its own: "ok" or the
-- SQLSTATE it failed with.
CREATE TEMP TABLE pf_outcomes (fn regprocedure, call text, role text, outcome text);
DO $$
DECLARE
    r text;
    c record;
    outcome text;
    outcomes text[];
BEGIN
    FOR c IN SELECT * FROM pf_calls LOOP
        outcomes := '{}';
        FOREACH r IN ARRAY ARRAY['nobody', 'producer', 'consumer', 'monitor', 'operator'] LOOP
            BEGIN
                EXECUTE format('SET LOCAL ROLE regress_pf_%s', r);
                EXECUTE replace(c.call, '@own', 'pf_' || r);
                outcome := 'ok';
                RESET ROLE;
            EXCEPTION WHEN OTHERS THEN
                outcome := SQLSTATE;
            END;
            outcomes := outcomes || outcome;
        END LOOP;
        INSERT INTO pf_outcomes
        SELECT c.fn, c.call, o.r, o.outcome
          FROM unnest(ARRAY['nobody', 'producer', 'consumer', 'monitor', 'operator'], outcomes) o(r, outcome);
    END LOOP;
END
$$;
SELECT current_user = session_user AS back_to_the_session_user;

-- One row per call: the outcome for each role.  "ok" only where the
-- function reads the catalog or nothing, or does what the caller may do
-- anyway; 42501 where it would act on another role's table or stream;
-- 55000 where the caller's own table is not attached; 22023 and 0A000 where
-- the table is not distributed by Citus (there is no Citus here).
SELECT regexp_replace(call, '^SELECT (ordering(_internal)?\.[a-z_]+).*$', '\1') AS function,
       max(outcome) FILTER (WHERE role = 'nobody') AS nobody,
       max(outcome) FILTER (WHERE role = 'producer') AS producer,
       max(outcome) FILTER (WHERE role = 'consumer') AS consumer,
       max(outcome) FILTER (WHERE role = 'monitor') AS monitor,
       max(outcome) FILTER (WHERE role = 'operator') AS operator,
       CASE WHEN call LIKE '%@own%' THEN 'own table' ELSE '' END AS argument
  FROM pf_outcomes
 GROUP BY call
 ORDER BY 1, 7;

-- Nothing of the victim's stream changed, nothing was made: no counter,
-- no trigger on its table, no table in ordering_internal.
SELECT * FROM ordering.sequences
EXCEPT SELECT * FROM pf_before;
SELECT * FROM pf_before
EXCEPT SELECT * FROM ordering.sequences;
SELECT count(*) AS triggers_on_victim FROM pg_trigger WHERE tgrelid = 'pf_owned'::regclass;
SELECT relname AS made_in_ordering_internal FROM pg_class
 WHERE relnamespace = 'ordering_internal'::regnamespace AND relname LIKE 'sequences\_%';

-- seed_counters() with the victim's stream named by a trigger made by hand
-- (the attack of a producer with a table of its own), in full: refused,
-- naming the owner.  The same for the extension's own outbox.
\set VERBOSITY default
SET ROLE regress_pf_producer;
SELECT ordering_internal.seed_counters('pf_producer');
DROP TRIGGER ordering_sequence ON pf_producer;
CREATE TRIGGER ordering_sequence BEFORE INSERT ON pf_producer FOR EACH ROW
    EXECUTE FUNCTION ordering.sequence_trigger('resource_id', 'seq', 'ordering.outbox');
SELECT ordering_internal.seed_counters('pf_producer');
-- a stream of its own that it did not attach: not registered
DROP TRIGGER ordering_sequence ON pf_producer;
CREATE TRIGGER ordering_sequence BEFORE INSERT ON pf_producer FOR EACH ROW
    EXECUTE FUNCTION ordering.sequence_trigger('resource_id', 'seq', 'pf.mine');
SELECT ordering_internal.seed_counters('pf_producer');
RESET ROLE;
-- A registered table whose trigger names a text "sequence column" (as a
-- restore of a damaged dump could register it): the number is checked
-- before it is stored (42804), never read as a bigint.
DROP TRIGGER ordering_sequence ON pf_producer;
CREATE TRIGGER ordering_sequence BEFORE INSERT ON pf_producer FOR EACH ROW
    EXECUTE FUNCTION ordering.sequence_trigger('resource_id', 'tseq', 'pf.text');
INSERT INTO ordering.attachments (tbl, stream, resource_column, sequence_column)
VALUES ('pf_producer', 'pf.text', 'resource_id', 'tseq');
SELECT ordering_internal.seed_counters('pf_producer');
SELECT count(*) AS text_counters FROM ordering.sequences WHERE stream = 'pf.text';
\set VERBOSITY terse
DELETE FROM ordering.attachments WHERE tbl = 'pf_producer'::regclass;

-- The owner's stream goes on where it was.
SET ROLE regress_pf_owner;
INSERT INTO pf_owned (resource_id) VALUES ('a') RETURNING seq;
SELECT ordering.last_sequence('pf.victim', 'a'), ordering.last_sequence('pf.victim', 'b');
RESET ROLE;

-- Clean up.
DELETE FROM ordering.sequences WHERE stream = 'pf.victim';
DROP TABLE pf_owned, pf_nobody, pf_producer, pf_consumer, pf_monitor, pf_operator;
DELETE FROM ordering.attachments WHERE stream = 'pf.victim';
DROP OWNED BY regress_pf_owner, regress_pf_nobody, regress_pf_producer, regress_pf_consumer,
    regress_pf_monitor, regress_pf_operator;
DROP ROLE regress_pf_owner, regress_pf_nobody, regress_pf_producer, regress_pf_consumer,
    regress_pf_monitor, regress_pf_operator;
