-- Streams distributed by Citus (docs/citus.md): what can be shown without
-- Citus.  test/t/040_citus_producer.pl runs the rest on a cluster (and is
-- skipped where Citus is not installed).
\set VERBOSITY terse

-- A distributed stream's counter table is named after the stream alone, so
-- that every node can find it; without Citus no stream has one, and
-- next_sequence() and last_sequence() keep using ordering.sequences.
SELECT ordering_internal.counter_table_name('public.events');
SELECT ordering_internal.counter_table_name('public.events') =
       ordering_internal.counter_table_name('public.events' COLLATE "C") AS stable;
SELECT ordering_internal.distributed_counters('public.events') IS NULL AS no_counter_table;
SELECT ordering.next_sequence('citus-regress', 'r'), ordering.last_sequence('citus-regress', 'r');
SELECT stream, resource_id, last_seq FROM ordering.sequences WHERE stream = 'citus-regress';

-- A table Citus does not manage is attached as a local table.
SELECT ordering_internal.citus_attach_check('ordering.outbox', 'resource_id');
SELECT (ordering_internal.citus_distribution('ordering.outbox')).partmethod IS NULL AS not_citus;

-- The sequencing trigger of a distributed stream (a fourth argument: the
-- stream's counter table) on a table that is not a shard of a distributed
-- table: refused (0A000), nothing counted.  Also when the table's name
-- looks like a shard's.
CREATE TABLE copied_trigger_102008 (id serial, resource_id text, seq bigint);
CREATE TRIGGER ordering_sequence BEFORE INSERT ON copied_trigger_102008 FOR EACH ROW
  EXECUTE FUNCTION ordering.sequence_trigger('resource_id', 'seq', 'citus-copied',
                                             'ordering_internal.sequences_0123456789abcdef');
CREATE TRIGGER ordering_sequence_stored AFTER INSERT ON copied_trigger_102008 FOR EACH ROW
  WHEN (ordering_internal.sequence_stored()) EXECUTE FUNCTION ordering_internal.sequence_stored_trigger();
CREATE TRIGGER ordering_sequence_guard BEFORE UPDATE OR DELETE ON copied_trigger_102008 FOR EACH ROW
  EXECUTE FUNCTION ordering_internal.sequence_guard('resource_id', 'seq', 'citus-copied');
INSERT INTO copied_trigger_102008 (resource_id) VALUES ('r');
\echo :LAST_ERROR_SQLSTATE
COPY copied_trigger_102008 (resource_id) FROM stdin;
r
\.
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS rows FROM copied_trigger_102008;
SELECT count(*) AS counters FROM ordering.sequences WHERE stream = 'citus-copied';
-- ordering.check() reports it like any trigger attach() did not register:
-- without Citus it is no copy that Citus made.
SELECT ordering_internal.citus_trigger_copy('copied_trigger_102008') AS citus_copy;
SELECT kind FROM ordering.check() WHERE detail LIKE '%copied_trigger_102008%';
-- The registry (attach()'s attachment_register()) takes a fourth argument
-- only when it names the stream's counter table: not this one (55000) ...
SELECT ordering_internal.attachment_register('copied_trigger_102008', 'citus-copied',
                                             'resource_id', 'seq');
\echo :LAST_ERROR_SQLSTATE
-- ... but the one attach() would have made.
DROP TRIGGER ordering_sequence ON copied_trigger_102008;
SELECT format('CREATE TRIGGER ordering_sequence BEFORE INSERT ON copied_trigger_102008 '
              'FOR EACH ROW EXECUTE FUNCTION ordering.sequence_trigger(%L, %L, %L, %L)',
              'resource_id', 'seq', 'citus-copied',
              'ordering_internal.' || ordering_internal.counter_table_name('citus-copied')) \gexec
SELECT ordering_internal.attachment_register('copied_trigger_102008', 'citus-copied',
                                             'resource_id', 'seq');
SELECT stream, resource_column, sequence_column, attached FROM ordering.attachments
 WHERE tbl = 'copied_trigger_102008'::regclass;
DROP TRIGGER ordering_sequence ON copied_trigger_102008;
SELECT ordering_internal.attachment_unregister('copied_trigger_102008');
DELETE FROM ordering.attachments WHERE tbl = 'copied_trigger_102008'::regclass;
-- five arguments: not the trigger's protocol
CREATE TRIGGER ordering_sequence BEFORE INSERT ON copied_trigger_102008 FOR EACH ROW
  EXECUTE FUNCTION ordering.sequence_trigger('resource_id', 'seq', 'citus-copied',
                                             'ordering_internal.sequences_0123456789abcdef', 'x');
INSERT INTO copied_trigger_102008 (resource_id) VALUES ('r');
DROP TABLE copied_trigger_102008;

-- The relay functions of a distributed outbox refuse other tables (0A000),
-- and a claim wants a row of the outbox's type.
SELECT * FROM ordering.claim_unpublished(NULL::ordering.outbox, 10);
\echo :LAST_ERROR_SQLSTATE
SELECT ordering.mark_published('ordering.outbox', ARRAY[1::bigint]);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM ordering.relay_nodes('ordering.outbox');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM ordering.claim_unpublished(1, 10);
SELECT * FROM ordering.claim_unpublished(NULL::ordering.outbox, -1);
SELECT * FROM ordering.claim_unpublished(NULL::ordering.outbox, NULL);

-- The internal helper that PUBLIC may execute answers only whoever may do
-- what it serves: marking rows (UPDATE).  (On
-- a cluster, callers also need USAGE on schema ordering_internal.)
CREATE ROLE regress_citus_nobody;
GRANT USAGE ON SCHEMA ordering, ordering_internal TO regress_citus_nobody;
SET ROLE regress_citus_nobody;
SELECT ordering_internal.lock_shard_for_relay('ordering.outbox', 1);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
REVOKE USAGE ON SCHEMA ordering, ordering_internal FROM regress_citus_nobody;
DROP ROLE regress_citus_nobody;

-- A producer attaches, reads and detaches a local table as in 1.1: on one
-- node none of the Citus functions is called.  The producer set includes
-- the relay functions of a distributed outbox.
CREATE ROLE regress_citus_producer;
SELECT ordering.grant_producer('regress_citus_producer');
SELECT p::regprocedure AS function,
       has_function_privilege('regress_citus_producer', p, 'EXECUTE') AS producer_may
  FROM unnest(ARRAY['ordering.claim_unpublished(anyelement, integer)',
                    'ordering.mark_published(regclass, bigint[])',
                    'ordering.relay_nodes(regclass)']::regprocedure[]) p;
CREATE TABLE citus_local_outbox (id serial, resource_id text, seq bigint);
ALTER TABLE citus_local_outbox OWNER TO regress_citus_producer;
SET ROLE regress_citus_producer;
SELECT ordering.attach('citus_local_outbox');
INSERT INTO citus_local_outbox (resource_id) VALUES ('r'), ('r');
SELECT ordering.last_sequence('public.citus_local_outbox', 'r');
SELECT ordering.detach('citus_local_outbox');
RESET ROLE;
DROP TABLE citus_local_outbox;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA ordering, ordering_internal FROM regress_citus_producer;
REVOKE ALL ON ALL TABLES IN SCHEMA ordering FROM regress_citus_producer;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA ordering FROM regress_citus_producer;
REVOKE USAGE ON SCHEMA ordering FROM regress_citus_producer;
DROP ROLE regress_citus_producer;

-- The registry of distributed streams names its tables by type
-- ordering_internal.table_ref: written as the qualified name whatever the
-- search_path (a node that reads it resolves the same name), stored as the
-- OID on this node; "-", or a name of no table here, is no table.
SET search_path = ordering, public;
SELECT 'outbox'::ordering_internal.table_ref::text AS by_search_path,
       'ordering.outbox'::ordering_internal.table_ref::oid = 'ordering.outbox'::regclass::oid AS this_nodes_oid,
       'nowhere.missing'::ordering_internal.table_ref::oid AS missing,
       '-'::ordering_internal.table_ref::text AS none,
       '"Odd Schema"."Odd"'::ordering_internal.table_ref::oid AS odd_missing;
RESET search_path;
