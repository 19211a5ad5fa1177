-- Fills a database whose extension is at version 1.1, after fill.sql (the
-- state of 1.0), with the state of every 1.1 feature, and records what must
-- survive ALTER EXTENSION ordering UPDATE in schema upgrade_check.  Uses
-- only 1.1's functions and tables, called as the contract shows them.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

-- Dead letters.  A handler that refuses payloads marked poison: with
-- on_error => 'dead_letter' its failure blocks only its resource.
CREATE FUNCTION upgrade_apply(resource_id text, seq bigint, payload jsonb)
    RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF payload ? 'poison' THEN
        RAISE EXCEPTION 'cannot apply % %', resource_id, seq USING ERRCODE = 'data_exception';
    END IF;
END
$$;
DO $$
BEGIN
    -- dl-1: 1 .. 3 applied, 4 poison (dead letter), 5 and 6 park behind it
    FOR i IN 1 .. 6 LOOP
        PERFORM ordering.deliver('dl', 'dl-1', i,
            CASE WHEN i = 4 THEN '{"poison": true}' ELSE jsonb_build_object('i', i) END,
            'upgrade_apply(text,bigint,jsonb)'::regprocedure, 'dead_letter');
    END LOOP;
    -- dl-2: 1 .. 2 applied, 3 set aside by a table-form consumer
    FOR i IN 1 .. 2 LOOP
        PERFORM * FROM ordering.deliver('dl', 'dl-2', i, jsonb_build_object('i', i));
    END LOOP;
    PERFORM ordering.dead_letter('dl', 'dl-2', 3, '{"i": 3}', 'cannot parse');
    -- dl-3: poison at 1, retried once with the handler still failing
    PERFORM ordering.deliver('dl', 'dl-3', 1, '{"poison": true}',
        'upgrade_apply(text,bigint,jsonb)'::regprocedure, 'dead_letter');
    PERFORM ordering.retry_dead_letter('dl', 'dl-3', 'upgrade_apply(text,bigint,jsonb)'::regprocedure);
END
$$;

-- Batches: a state consumer and a step consumer fed through the 1.1 batch
-- forms (positions and a parked event, as single calls would leave them).
SELECT count(*) FROM ordering.apply_batch('batch-state',
    ARRAY['b-1', 'b-2', 'b-1', 'b-3'], ARRAY[3, 5, 2, 1]::bigint[]);
SELECT count(*) FROM ordering.deliver_batch('batch-steps',
    ARRAY['b-1', 'b-1', 'b-2', 'b-1'], ARRAY[1, 2, 1, 4]::bigint[],
    ARRAY['{}', '{}', '{}', '{}']::jsonb[]);

-- Attachments: a table attached under a stream name of its own, detached
-- after a few rows (its counters stay); another with the relay wake-up on.
CREATE TABLE upgrade_detached (id bigserial PRIMARY KEY, resource_id text NOT NULL,
                               seq bigint NOT NULL, UNIQUE (resource_id, seq));
SELECT ordering.attach('upgrade_detached', stream => 'detached-stream');
INSERT INTO upgrade_detached (resource_id) SELECT 'd-' || (i % 3) FROM generate_series(1, 12) i;
SELECT ordering.detach('upgrade_detached');
CREATE TABLE upgrade_woken (id bigserial PRIMARY KEY, resource_id text NOT NULL,
                            seq bigint NOT NULL, UNIQUE (resource_id, seq));
SELECT ordering.attach('upgrade_woken');
SELECT ordering.wake_relays('upgrade_woken');
INSERT INTO upgrade_woken (resource_id) SELECT 'w-' || (i % 4) FROM generate_series(1, 9) i;
-- A partitioned table attached (its partitions have clones of its three
-- triggers), and a table whose three triggers fire on replicas too (ENABLE
-- ALWAYS) and have comments: an update keeps them, and the restore of a
-- dump of this version makes the triggers named the old way again
-- (docs/restore.md), as they were.
CREATE TABLE upgrade_parts (resource_id text NOT NULL, seq bigint, part int NOT NULL)
    PARTITION BY LIST (part);
CREATE TABLE upgrade_parts_1 PARTITION OF upgrade_parts FOR VALUES IN (1);
CREATE TABLE upgrade_parts_2 PARTITION OF upgrade_parts FOR VALUES IN (2);
SELECT ordering.attach('upgrade_parts');
INSERT INTO upgrade_parts (resource_id, part) VALUES ('p', 1), ('p', 2), ('p', 1);
CREATE TABLE upgrade_always (resource_id text NOT NULL, seq bigint);
SELECT ordering.attach('upgrade_always');
SELECT format('ALTER TABLE upgrade_always ENABLE ALWAYS TRIGGER %I', t.tgname),
       format('COMMENT ON TRIGGER %I ON upgrade_always IS %L', t.tgname, 'kept: ' || t.tgname)
  FROM pg_trigger t WHERE t.tgrelid = 'upgrade_always'::regclass
\gexec
INSERT INTO upgrade_always (resource_id) VALUES ('a'), ('a');

-- What must survive, beyond what fill.sql records: the dead letters, the
-- blocks and every column of the positions, the registry of attached
-- tables, and what reconciliation sees (the summaries of the outbox and of
-- the consumer "steps", and what reconcile() would do for it; grace 0 and
-- a dry run, so that the answer depends on the rows only).
CREATE TABLE upgrade_check.attachments AS
SELECT tbl::text AS tbl, stream FROM ordering.attachments;

CREATE FUNCTION upgrade_check.fingerprint11()
    RETURNS TABLE (what text, row_count bigint, digest text)
    LANGUAGE sql AS $f$
SELECT 'dead letters', count(*),
       md5(string_agg(concat_ws('|', d.consumer, d.resource_id, d.seq, d.payload, d.sqlstate,
                                d.message, d.detail, d.failed_at, d.attempts),
                      ',' ORDER BY d.consumer, d.resource_id))
  FROM ordering.dead_letter_events d
UNION ALL
SELECT 'dead letters view', count(*),
       md5(string_agg(concat_ws('|', d.consumer, d.resource_id, d.seq, d.parked_behind),
                      ',' ORDER BY d.consumer, d.resource_id))
  FROM ordering.dead_letters d
UNION ALL
SELECT 'positions and blocks', count(*),
       md5(string_agg(concat_ws('|', p.consumer, p.resource_id, p.position, p.blocked_at),
                      ',' ORDER BY p.consumer, p.resource_id))
  FROM ordering.positions p
UNION ALL
SELECT 'attachments', count(*),
       md5(string_agg(concat_ws('|', a.tbl::text, a.stream, a.resource_column,
                                a.sequence_column, a.attached,
                                -- a restore makes the outbox's row anew (a dump
                                -- leaves it out: docs/restore.md)
                                CASE WHEN a.tbl <> 'ordering.outbox'::regclass
                                     THEN a.attached_at END,
                                a.wake_relays),
                      ',' ORDER BY a.tbl::text))
  FROM ordering.attachments a
UNION ALL
SELECT 'stream summary', count(*),
       md5(string_agg(concat_ws('|', s.bucket, s.resources, s.seq_sum, s.fingerprint),
                      ',' ORDER BY s.bucket))
  FROM ordering.stream_summary('ordering.outbox', 16) s
UNION ALL
SELECT 'consumer summary', count(*),
       md5(string_agg(concat_ws('|', s.bucket, s.resources, s.seq_sum, s.fingerprint),
                      ',' ORDER BY s.bucket))
  FROM ordering.consumer_summary('steps', 16) s
UNION ALL
SELECT 'consumer state', count(*),
       md5(string_agg(concat_ws('|', c.resource_id, c.position, c.parked_from,
                                c.parked_through, c.blocked_at), ',' ORDER BY c.resource_id))
  FROM ordering.consumer_state('dl', 16, ARRAY(SELECT generate_series(0, 15))) c
UNION ALL
SELECT 'reconcile (dry run)', count(*),
       md5(string_agg(concat_ws('|', r.resource_id, r.position, r.last_seq, r.status,
                                r.republished, r.in_flight, r.purged), ',' ORDER BY r.resource_id))
  FROM ordering.reconcile(
           (SELECT jsonb_agg(c) FROM ordering.consumer_state('steps', 16,
                                        ARRAY(SELECT generate_series(0, 15))) c),
           16, ARRAY(SELECT generate_series(0, 15)), grace => '0s', dry_run => true) r
$f$;

CREATE TABLE upgrade_check.before11 AS SELECT * FROM upgrade_check.fingerprint11();

-- fill.sql's records again, now that this file added counters, positions
-- and parked events: verify.sql compares with these (the numeric keys,
-- which the update merges, it checks on their own).
TRUNCATE upgrade_check.counters, upgrade_check.positions, upgrade_check.before;
INSERT INTO upgrade_check.counters SELECT stream, resource_id, last_seq FROM ordering.sequences
 WHERE stream <> 'public.upgrade_numeric_outbox';
INSERT INTO upgrade_check.positions SELECT consumer, resource_id, position FROM ordering.positions;
INSERT INTO upgrade_check.before SELECT * FROM upgrade_check.fingerprint();
