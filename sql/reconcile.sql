-- Reconciliation of a producer stream with a consumer: the bucket and
-- fingerprint hashes, the summaries of both sides, the drill-down into the
-- buckets that differ, and what ordering.reconcile() republishes (and what
-- it leaves alone: events in flight, purged events, blocked resources).
-- Both sides live in this one database here; every resource starts with
-- 'rc-', and the prefix filter keeps other tests' rows out.
\set VERBOSITY terse

-------------------------------------------------------------------------------
-- The hashes are SHA-256 of the resource's UTF-8 bytes, as documented: the
-- built-in sha256() gives the same buckets and fingerprints, for short ids,
-- ids around the 55/56/64-byte padding boundaries, multibyte ids, the empty
-- id and ids longer than 1024 bytes, and seqs of every size and sign.
-------------------------------------------------------------------------------
CREATE TEMP TABLE ids AS
SELECT r FROM (VALUES (''), ('a'), ('customer-8412'), ('Zürich-€-🙂'), (E'tab\there')) v(r)
UNION ALL
SELECT pg_catalog.repeat('x', n) FROM pg_catalog.generate_series(50, 70) n
UNION ALL
SELECT pg_catalog.repeat('é', n) FROM (VALUES (27), (28), (32), (600)) v(n)
UNION ALL
SELECT 'r' || i FROM pg_catalog.generate_series(1, 500) i;
CREATE TEMP TABLE seqs AS
SELECT s FROM (VALUES (1::bigint), (2), (255), (256), (1000000007), (-1),
                      (9223372036854775807), (-9223372036854775808)) v(s);

SELECT pg_catalog.count(*) AS ids,
       pg_catalog.count(*) FILTER (WHERE ordering_internal.resource_bucket(r, b) IS DISTINCT FROM
           ((('x' || pg_catalog.encode(pg_catalog.substr(pg_catalog.sha256(pg_catalog.convert_to(r, 'UTF8')), 1, 4), 'hex'))::bit(32)::bigint
             & 4294967295) * b >> 32)::integer) AS buckets_differing
  FROM ids, (VALUES (1), (7), (1024), (2147483647)) v(b);

SELECT pg_catalog.count(*) AS pairs,
       pg_catalog.count(*) FILTER (WHERE ordering_internal.resource_fingerprint(r, s) IS DISTINCT FROM
           ('x' || pg_catalog.encode(pg_catalog.substr(pg_catalog.sha256(pg_catalog.convert_to(r, 'UTF8') || pg_catalog.int8send(s)), 1, 8), 'hex'))::bit(64)::bigint)
           AS fingerprints_differing
  FROM ids, seqs;

-- every bucket is in 0 .. n - 1, and they spread: 500 ids over 8 buckets
SELECT ordering_internal.resource_bucket(r, 8) AS bucket, pg_catalog.count(*) BETWEEN 40 AND 85 AS about_an_eighth
  FROM ids WHERE r LIKE 'r%' GROUP BY 1 ORDER BY 1;
-- buckets nest: with 64 buckets, bucket b lies inside bucket b / 4 of 16
SELECT pg_catalog.count(*) FILTER (WHERE ordering_internal.resource_bucket(r, 64) / 4
                                   <> ordering_internal.resource_bucket(r, 16)) AS not_nested
  FROM ids;
-- the fingerprint changes with the seq, and with the resource
SELECT pg_catalog.count(DISTINCT ordering_internal.resource_fingerprint(r, s)) = pg_catalog.count(*) AS all_distinct
  FROM ids, seqs;

-- bad input
SELECT ordering_internal.resource_bucket('a', 0);
SELECT ordering_internal.resource_bucket('a', -5);
SELECT ordering_internal.resource_bucket(NULL, 8) IS NULL AS strict_bucket,
       ordering_internal.resource_fingerprint(NULL, 1) IS NULL AS strict_fingerprint,
       ordering_internal.resource_fingerprint('a', NULL) IS NULL AS strict_fingerprint_seq;

-------------------------------------------------------------------------------
-- A producer and a consumer in sync summarise identically.
-------------------------------------------------------------------------------
DELETE FROM ordering.positions;
DELETE FROM ordering.parked;
DELETE FROM ordering.gap_requests;
DELETE FROM ordering.dead_letter_events;

-- rc-1 .. rc-7 get 4 events each, published an hour ago
SELECT pg_catalog.count(ordering.emit('rc-' || (i % 7 + 1), 'e', pg_catalog.jsonb_build_object('i', i)))
  FROM pg_catalog.generate_series(0, 27) i;
UPDATE ordering.outbox SET published_at = pg_catalog.now() - interval '1 hour'
 WHERE resource_id LIKE 'rc-%';
-- the consumer has applied them all
INSERT INTO ordering.positions (consumer, resource_id, position)
SELECT 'rc', s.resource_id, s.last_seq FROM ordering.sequences s
 WHERE s.stream = 'ordering.outbox' AND s.resource_id LIKE 'rc-%';

SELECT * FROM ordering.stream_summary('ordering.outbox', 16, 'rc-');
SELECT (SELECT pg_catalog.array_agg(p ORDER BY p.bucket) FROM ordering.stream_summary('ordering.outbox', 16, 'rc-') p)::text
     = (SELECT pg_catalog.array_agg(c ORDER BY c.bucket) FROM ordering.consumer_summary('rc', 16, 'rc-') c)::text
       AS same_summaries;

-------------------------------------------------------------------------------
-- Now the consumer falls behind in every way it can:
--   rc-1: its last two events (3, 4) were lost, and event 3 has been purged
--   rc-2: never seen at all
--   rc-3: at 1, with 3 parked: 2 and 4 are missing
--   rc-4: at 1, blocked by a dead letter at 2 (with 3 parked behind it)
--   rc-5: a fifth event was published just now: in flight
--   rc-6: a fifth event is not even published yet: in flight
--   rc-7: in sync
-- and rc-8 has a position but is unknown to the producer, rc-9 is ahead.
-------------------------------------------------------------------------------
UPDATE ordering.positions SET position = 2 WHERE consumer = 'rc' AND resource_id = 'rc-1';
DELETE FROM ordering.outbox WHERE resource_id = 'rc-1' AND seq = 3;
DELETE FROM ordering.positions WHERE consumer = 'rc' AND resource_id = 'rc-2';
UPDATE ordering.positions SET position = 1 WHERE consumer = 'rc' AND resource_id IN ('rc-3', 'rc-4');
INSERT INTO ordering.parked (consumer, resource_id, seq, payload)
VALUES ('rc', 'rc-3', 3, '{}'), ('rc', 'rc-4', 3, '{}');
INSERT INTO ordering.dead_letter_events (consumer, resource_id, seq, payload, message)
VALUES ('rc', 'rc-4', 2, '{}', 'poison');
SELECT ordering.emit('rc-5', 'e', '{}'), ordering.emit('rc-6', 'e', '{}'), ordering.emit('rc-9', 'e', '{}');
UPDATE ordering.outbox SET published_at = pg_catalog.now() - interval '10 s'
 WHERE resource_id = 'rc-5' AND seq = 5;
UPDATE ordering.outbox SET published_at = pg_catalog.now() - interval '1 hour'
 WHERE resource_id = 'rc-9';
INSERT INTO ordering.positions (consumer, resource_id, position)
VALUES ('rc', 'rc-8', 3), ('rc', 'rc-9', 7);

-- the buckets that differ (the whole comparison an operator's command makes)
CREATE TEMP TABLE differing AS
SELECT COALESCE(p.bucket, c.bucket) AS bucket
  FROM ordering.stream_summary('ordering.outbox', 16, 'rc-') p
  FULL JOIN ordering.consumer_summary('rc', 16, 'rc-') c ON c.bucket = p.bucket
 WHERE (p.resources, p.seq_sum, p.fingerprint) IS DISTINCT FROM (c.resources, c.seq_sum, c.fingerprint);
SELECT pg_catalog.array_agg(bucket ORDER BY bucket) AS differing_buckets FROM differing;
-- the resources of those buckets, and only those, are looked at: rc-7,
-- alone in its bucket and in sync, is not
SELECT r, ordering_internal.resource_bucket(r, 16) AS bucket
  FROM pg_catalog.unnest('{rc-1,rc-2,rc-3,rc-4,rc-5,rc-6,rc-7,rc-8,rc-9}'::text[]) r ORDER BY 1;

-- the consumer's side of those buckets
SELECT * FROM ordering.consumer_state('rc', 16, (SELECT pg_catalog.array_agg(bucket) FROM differing), 'rc-');

-- the producer's verdict, first as a dry run: nothing changes
CREATE TEMP TABLE state AS
SELECT pg_catalog.jsonb_agg(s) AS j
  FROM ordering.consumer_state('rc', 16, (SELECT pg_catalog.array_agg(bucket) FROM differing), 'rc-') s;
CREATE TEMP TABLE before AS
SELECT id, published_at FROM ordering.outbox WHERE resource_id LIKE 'rc-%';
-- (what each call finds and does is counted in the statistics of the
-- stream, at commit: the counts of the calls below are the differences)
CREATE TEMP VIEW reconciled AS
SELECT s.reconcile_resources_behind AS behind, s.reconcile_events_republished AS republished,
       s.reconcile_events_purged AS purged
  FROM ordering.stream_stats s WHERE s.stream = 'ordering.outbox';
SELECT * FROM reconciled \gset counted_
SELECT * FROM ordering.reconcile((SELECT j FROM state), 16,
                                 (SELECT pg_catalog.array_agg(bucket) FROM differing),
                                 resource_prefix => 'rc-', dry_run => true);
SELECT pg_catalog.count(*) AS changed_by_dry_run
  FROM ordering.outbox o JOIN before b USING (id)
 WHERE o.published_at IS DISTINCT FROM b.published_at;
-- a dry run counts the resources behind and the purged events it found,
-- and no event republished
SELECT r.behind - :counted_behind AS behind, r.republished - :counted_republished AS republished,
       r.purged - :counted_purged AS purged
  FROM reconciled r;
SELECT * FROM reconciled \gset counted_

-- a reconciliation rolled back counts nothing, nor one in a savepoint
-- rolled back
BEGIN;
SELECT pg_catalog.count(*) FILTER (WHERE status = 'behind') AS behind, pg_catalog.sum(republished) AS republished
  FROM ordering.reconcile((SELECT j FROM state), 16,
                          (SELECT pg_catalog.array_agg(bucket) FROM differing),
                          resource_prefix => 'rc-');
ROLLBACK;
BEGIN;
SAVEPOINT s;
SELECT pg_catalog.count(*) FILTER (WHERE status = 'behind') AS behind, pg_catalog.sum(republished) AS republished
  FROM ordering.reconcile((SELECT j FROM state), 16,
                          (SELECT pg_catalog.array_agg(bucket) FROM differing),
                          resource_prefix => 'rc-');
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT r.behind - :counted_behind AS behind, r.republished - :counted_republished AS republished,
       r.purged - :counted_purged AS purged
  FROM reconciled r;

-- for real (in a savepoint released): rc-1 gets 4 (3 is purged), rc-2
-- everything, rc-3 2 and 4 (not the parked 3), rc-4 nothing (blocked), rc-5
-- and rc-6 nothing (in flight)
BEGIN;
SAVEPOINT s;
SELECT * FROM ordering.reconcile((SELECT j FROM state), 16,
                                 (SELECT pg_catalog.array_agg(bucket) FROM differing),
                                 resource_prefix => 'rc-');
RELEASE SAVEPOINT s;
COMMIT;
SELECT o.resource_id, o.seq
  FROM ordering.outbox o JOIN before b USING (id)
 WHERE o.published_at IS NULL AND b.published_at IS NOT NULL
 ORDER BY 1, 2;
-- counted: the resources behind, the events republished and the purged one
SELECT r.behind - :counted_behind AS behind, r.republished - :counted_republished AS republished,
       r.purged - :counted_purged AS purged
  FROM reconciled r;
SELECT * FROM reconciled \gset counted_

-- a second look right away republishes nothing again: what was sent waits
-- for the relay (unpublished), rc-5's event is still within the grace
SELECT resource_id, status, republished, in_flight, purged
  FROM ordering.reconcile((SELECT j FROM state), 16,
                          (SELECT pg_catalog.array_agg(bucket) FROM differing),
                          resource_prefix => 'rc-')
 WHERE status = 'behind';
-- the resources found behind again are counted again
SELECT r.behind - :counted_behind AS behind, r.republished - :counted_republished AS republished,
       r.purged - :counted_purged AS purged
  FROM reconciled r;
-- once the relay has sent them, they are in flight for the grace period...
UPDATE ordering.outbox SET published_at = pg_catalog.now() WHERE resource_id LIKE 'rc-%' AND published_at IS NULL;
SELECT resource_id, republished, in_flight
  FROM ordering.reconcile((SELECT j FROM state), 16,
                          (SELECT pg_catalog.array_agg(bucket) FROM differing),
                          resource_prefix => 'rc-', grace => '1 min', dry_run => true)
 WHERE status = 'behind';
-- ... and lost again after it
SELECT resource_id, republished, in_flight
  FROM ordering.reconcile((SELECT j FROM state), 16,
                          (SELECT pg_catalog.array_agg(bucket) FROM differing),
                          resource_prefix => 'rc-', grace => '0 s', dry_run => true)
 WHERE status = 'behind';

-------------------------------------------------------------------------------
-- Filters: both sides take the same prefix, and the producer refuses a
-- consumer state that lists resources outside the buckets or the prefix.
-------------------------------------------------------------------------------
SELECT ordering.emit('rd-1', 'e', '{}');
INSERT INTO ordering.positions (consumer, resource_id, position) VALUES ('rc', 'rd-1', 0);
SELECT pg_catalog.count(*) AS rd_buckets FROM ordering.stream_summary('ordering.outbox', 4, 'rd-');
SELECT pg_catalog.count(*) AS rd_resources_for_rc FROM ordering.consumer_state('rc', 4, '{0,1,2,3}', 'rd-');
SELECT * FROM ordering.reconcile('[{"resource_id": "rd-1", "position": 0}]', 4, '{0,1,2,3}', resource_prefix => 'rc-');
SELECT * FROM ordering.reconcile(pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
           'resource_id', 'rc-7', 'position', 4)), 4,
       ARRAY(SELECT b FROM pg_catalog.generate_series(0, 3) b
              WHERE b <> ordering_internal.resource_bucket('rc-7', 4)), resource_prefix => 'rc-');
SELECT * FROM ordering.reconcile('[{"position": 4}]', 4, '{0,1,2,3}');

-- Event types: a state consumer that reads only the PlanChanged events of
-- a resource holds the seq of the last one it applied; the producer
-- compares with its last PlanChanged event and sends only those.
SELECT ordering.emit('rc-t', 'PlanChanged', '{}'), ordering.emit('rc-t', 'SeatsAdded', '{}'),
       ordering.emit('rc-t', 'PlanChanged', '{}'), ordering.emit('rc-t', 'SeatsAdded', '{}');
UPDATE ordering.outbox SET published_at = pg_catalog.now() - interval '1 hour' WHERE resource_id = 'rc-t';
INSERT INTO ordering.positions (consumer, resource_id, position) VALUES ('plans', 'rc-t', 3);
SELECT * FROM ordering.stream_summary('ordering.outbox', 1, 'rc-t', '{PlanChanged}')
EXCEPT
SELECT * FROM ordering.consumer_summary('plans', 1, 'rc-t');
SELECT ordering.emit('rc-t', 'PlanChanged', '{}'), ordering.emit('rc-t', 'SeatsAdded', '{}');
UPDATE ordering.outbox SET published_at = pg_catalog.now() - interval '1 hour' WHERE resource_id = 'rc-t';
SELECT * FROM ordering.reconcile(
    (SELECT pg_catalog.jsonb_agg(s) FROM ordering.consumer_state('plans', 1, '{0}', 'rc-t') s),
    1, '{0}', resource_prefix => 'rc-t', event_types => '{PlanChanged}');
SELECT seq, event_type FROM ordering.outbox
 WHERE resource_id = 'rc-t' AND published_at IS NULL ORDER BY seq;

-- A stream that is not the outbox (a user's attached table, next_sequence):
-- compared, never republished (the extension does not know how that table
-- is relayed); its missing range is (position, last_seq].
SELECT ordering.next_sequence('rc-stream', 'rc-n') FROM pg_catalog.generate_series(1, 3);
INSERT INTO ordering.positions (consumer, resource_id, position) VALUES ('own', 'rc-n', 1);
SELECT * FROM ordering.reconcile(
    (SELECT pg_catalog.jsonb_agg(s) FROM ordering.consumer_state('own', 2, '{0,1}') s),
    2, '{0,1}', stream => 'rc-stream');
-- counted under that stream: behind, never republished
SELECT stream, reconcile_resources_behind, reconcile_events_republished, reconcile_events_purged
  FROM ordering.stream_stats WHERE stream = 'rc-stream';
-- and in the Prometheus text
SELECT m.l AS metrics_line
  FROM pg_catalog.regexp_split_to_table(ordering.metrics(), E'\n') WITH ORDINALITY AS m(l, i)
 WHERE m.l LIKE '# % ordering\_reconcile\_%'
    OR (m.l LIKE 'ordering\_reconcile\_%' AND m.l LIKE '%{stream="rc-stream"}%')
 ORDER BY m.i;
-- negative counts are refused
SELECT ordering_internal.count_reconciled('rc-stream', -1, 0, 0);

-------------------------------------------------------------------------------
-- Bad arguments
-------------------------------------------------------------------------------
SELECT * FROM ordering.stream_summary('ordering.outbox', 0);
SELECT * FROM ordering.stream_summary(NULL);
SELECT * FROM ordering.stream_summary('ordering.outbox', NULL);
SELECT * FROM ordering.stream_summary('ordering.outbox', 4, '');
SELECT * FROM ordering.stream_summary('rc-stream', 4, NULL, '{e}');
SELECT * FROM ordering.stream_summary('ordering.outbox', 4, NULL, '{}');
SELECT * FROM ordering.consumer_summary(NULL);
SELECT * FROM ordering.consumer_summary('rc', -1);
SELECT * FROM ordering.consumer_state('rc', 4, NULL);
SELECT * FROM ordering.reconcile(NULL, 4, '{0}');
SELECT * FROM ordering.reconcile('{"resource_id": "rc-1"}', 4, '{0}');
SELECT * FROM ordering.reconcile('[]', 4, '{0}', grace => '-1 s');
SELECT * FROM ordering.reconcile('[]', 4, '{0}', dry_run => NULL);

-------------------------------------------------------------------------------
-- A hostile search_path changes nothing: look-alike operators, functions
-- and tables in a schema before pg_catalog.
-------------------------------------------------------------------------------
CREATE SCHEMA rc_evil;
CREATE TABLE rc_evil.sequences (LIKE ordering.sequences);
CREATE TABLE rc_evil.positions (LIKE ordering.positions);
CREATE TABLE rc_evil.outbox (LIKE ordering.outbox);
CREATE FUNCTION rc_evil.always(text, text) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE FUNCTION rc_evil.never(bigint, bigint) RETURNS boolean LANGUAGE sql AS $$ SELECT false $$;
CREATE OPERATOR rc_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = rc_evil.always);
CREATE OPERATOR rc_evil.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = rc_evil.never);
CREATE OPERATOR rc_evil.> (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = rc_evil.never);
CREATE FUNCTION rc_evil.sha256(bytea) RETURNS bytea LANGUAGE sql AS $$ SELECT '\x00'::bytea $$;
CREATE FUNCTION rc_evil.starts_with(text, text) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE FUNCTION rc_evil.now() RETURNS timestamptz LANGUAGE sql AS $$ SELECT 'infinity'::timestamptz $$;
CREATE TEMP TABLE clean AS
SELECT 'producer' AS side, s::text AS r FROM ordering.stream_summary('ordering.outbox', 16, 'rc-') s
UNION ALL
SELECT 'consumer', s::text FROM ordering.consumer_summary('rc', 16, 'rc-') s
UNION ALL
SELECT 'state', s::text FROM ordering.consumer_state('rc', 16, (SELECT pg_catalog.array_agg(bucket) FROM differing), 'rc-') s
UNION ALL
SELECT 'reconcile', s::text FROM ordering.reconcile((SELECT j FROM state), 16, (SELECT pg_catalog.array_agg(bucket) FROM differing),
                                                    resource_prefix => 'rc-', dry_run => true) s;
SET search_path = rc_evil, pg_catalog, public;
SELECT 'text'::text = 'other'::text AS "rc_evil = is in force";
SELECT pg_catalog.count(*) AS rows_compared,
       pg_catalog.count(*) FILTER (WHERE x.r IS NULL OR y.r IS NULL) AS rows_differing
  FROM clean x
  FULL JOIN (SELECT 'producer' AS side, s::text AS r FROM ordering.stream_summary('ordering.outbox', 16, 'rc-') s
             UNION ALL
             SELECT 'consumer', s::text FROM ordering.consumer_summary('rc', 16, 'rc-') s
             UNION ALL
             SELECT 'state', s::text FROM ordering.consumer_state('rc', 16, (SELECT pg_catalog.array_agg(bucket) FROM differing), 'rc-') s
             UNION ALL
             SELECT 'reconcile', s::text FROM ordering.reconcile((SELECT j FROM state), 16, (SELECT pg_catalog.array_agg(bucket) FROM differing),
                                                                 resource_prefix => 'rc-', dry_run => true) s) y
    ON x.side OPERATOR(pg_catalog.=) y.side AND x.r OPERATOR(pg_catalog.=) y.r;
RESET search_path;
DROP SCHEMA rc_evil CASCADE;

-------------------------------------------------------------------------------
-- Nothing is granted to PUBLIC
-------------------------------------------------------------------------------
CREATE ROLE regress_rc_nobody;
GRANT USAGE ON SCHEMA ordering TO regress_rc_nobody;
SET ROLE regress_rc_nobody;
SELECT ordering_internal.resource_bucket('a', 4);
SELECT ordering_internal.resource_fingerprint('a', 4);
SELECT * FROM ordering.stream_summary();
SELECT * FROM ordering.consumer_summary('rc');
SELECT * FROM ordering.consumer_state('rc', 4, '{0}');
SELECT * FROM ordering.reconcile('[]', 4, '{0}');
SELECT ordering_internal.count_reconciled('ordering.outbox', 1, 0, 0);
SELECT * FROM ordering_internal.distributed_stream_resources('ordering.outbox', NULL);
SELECT * FROM ordering.check();
RESET ROLE;
REVOKE USAGE ON SCHEMA ordering FROM regress_rc_nobody;
DROP ROLE regress_rc_nobody;

-- What each side needs, and nothing more: a producer role and a consumer
-- role with only these grants run their side of a reconciliation.
CREATE ROLE regress_rc_producer;
CREATE ROLE regress_rc_consumer;
GRANT USAGE ON SCHEMA ordering TO regress_rc_producer, regress_rc_consumer;
GRANT EXECUTE ON FUNCTION ordering_internal.resource_bucket(text, integer),
    ordering_internal.resource_fingerprint(text, bigint),
    ordering_internal.reconcile_check_arguments(integer, text)
    TO regress_rc_producer, regress_rc_consumer;
GRANT EXECUTE ON FUNCTION ordering_internal.reconcile_check_stream(text, text[]),
    ordering_internal.reconcile_producer_resources(text, text, text[]),
    ordering_internal.distributed_stream_resources(text, text),
    ordering.stream_summary(text, integer, text, text[]),
    ordering.reconcile(jsonb, integer, integer[], text, text, text[], interval, boolean),
    ordering_internal.count_reconciled(text, bigint, bigint, bigint)
    TO regress_rc_producer;
GRANT SELECT ON ordering.sequences TO regress_rc_producer;
GRANT SELECT, UPDATE ON ordering.outbox TO regress_rc_producer;
GRANT EXECUTE ON FUNCTION ordering.consumer_summary(text, integer, text),
    ordering.consumer_state(text, integer, integer[], text)
    TO regress_rc_consumer;
GRANT SELECT ON ordering.positions, ordering.parked, ordering.dead_letter_events
    TO regress_rc_consumer;
SET ROLE regress_rc_consumer;
SELECT pg_catalog.count(*) > 0 AS consumer_summarises FROM ordering.consumer_summary('rc', 16, 'rc-');
SELECT pg_catalog.jsonb_agg(s) AS state_by_role
  FROM ordering.consumer_state('rc', 16, '{0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15}', 'rc-') s \gset
SELECT * FROM ordering.reconcile('[]', 16, '{0}');
RESET ROLE;
SET ROLE regress_rc_producer;
SELECT pg_catalog.count(*) > 0 AS producer_summarises FROM ordering.stream_summary('ordering.outbox', 16, 'rc-');
SELECT resource_id, status, republished, in_flight
  FROM ordering.reconcile(:'state_by_role', 16, '{0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15}',
                          resource_prefix => 'rc-')
 WHERE status <> 'in_sync';
SELECT * FROM ordering.consumer_summary('rc');
RESET ROLE;
REVOKE ALL ON ordering.sequences, ordering.outbox, ordering.positions, ordering.parked,
    ordering.dead_letter_events FROM regress_rc_producer, regress_rc_consumer;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA ordering, ordering_internal
    FROM regress_rc_producer, regress_rc_consumer;
REVOKE USAGE ON SCHEMA ordering FROM regress_rc_producer, regress_rc_consumer;
DROP ROLE regress_rc_producer, regress_rc_consumer;

-- leave the consumer tables empty for the tests that follow
DELETE FROM ordering.positions;
DELETE FROM ordering.parked;
DELETE FROM ordering.dead_letter_events;
