-- After verify.sql, in the database filled at version 1.1: the 1.1
-- features go on working on the state they had before the update.  Every
-- expected value comes from what fill11.sql recorded or did.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\pset tuples_only on

-- Dead letters: a redelivery of a dead event is a duplicate; later events
-- still park behind it; retrying drains it and what waits behind it, in
-- order; discarding moves past it.
SELECT upgrade_check.expect('dead letter: a redelivery of dl-1 4 changes nothing',
       (SELECT count(*) FROM ordering.deliver('dl', 'dl-1', 4, '{"poison": true}')), 0::bigint);
SELECT upgrade_check.expect('dead letter: dl-1 7 parks behind the block',
       (SELECT count(*) FROM ordering.deliver('dl', 'dl-1', 7, '{"i": 7}')), 0::bigint);
SELECT upgrade_check.expect('dead letter: retrying dl-1 drains 4 .. 7 in order',
       (SELECT string_agg(r.seq::text, ',') FROM ordering.retry_dead_letter('dl', 'dl-1') r),
       '4,5,6,7');
SELECT upgrade_check.expect('dead letter: dl-1 is no longer blocked',
       (SELECT blocked_at FROM ordering.positions WHERE consumer = 'dl' AND resource_id = 'dl-1'),
       NULL::bigint);
SELECT upgrade_check.expect('dead letter: discarding dl-2 moves its position past 3',
       (SELECT count(*) FROM ordering.discard_dead_letter('dl', 'dl-2')) IS NOT NULL
       AND ordering.position('dl', 'dl-2') = 3, true);
SELECT upgrade_check.expect('dead letter: dl-3 keeps its attempts and stays blocked',
       (SELECT attempts || '@' || seq FROM ordering.dead_letters
         WHERE consumer = 'dl' AND resource_id = 'dl-3'), '2@1');
SELECT upgrade_check.expect('dead letters left', (SELECT count(*) FROM ordering.dead_letters), 1::bigint);

-- Batches continue their positions.
SELECT upgrade_check.expect('apply_batch: b-1 3 is stale, 4 is newer',
       (SELECT string_agg(applied::text, ',' ORDER BY ord)
          FROM ordering.apply_batch('batch-state', ARRAY['b-1', 'b-1'], ARRAY[3, 4]::bigint[])),
       'false,true');
SELECT upgrade_check.expect('deliver_batch: b-1 3 drains the parked 4',
       (SELECT string_agg(seq::text, ',' ORDER BY ord, seq)
          FROM ordering.deliver_batch('batch-steps', ARRAY['b-1'], ARRAY[3]::bigint[],
                                      ARRAY['{}']::jsonb[])),
       '3,4');

-- Attachments: the table attached with a stream of its own continues it
-- when attached again; the table with the wake-up keeps numbering.
DO $$ BEGIN PERFORM ordering.attach('upgrade_detached', stream => 'detached-stream'); END $$;
INSERT INTO upgrade_detached (resource_id) VALUES ('d-1');
SELECT upgrade_check.expect('re-attached: d-1 continues its stream',
       (SELECT max(seq) FROM upgrade_detached WHERE resource_id = 'd-1'),
       (SELECT last_seq + 1 FROM upgrade_check.counters
         WHERE stream = 'detached-stream' AND resource_id = 'd-1'));
INSERT INTO upgrade_woken (resource_id) VALUES ('w-1');
SELECT upgrade_check.expect('wake-up table: w-1 continues',
       (SELECT max(seq) FROM upgrade_woken WHERE resource_id = 'w-1'),
       (SELECT last_seq + 1 FROM upgrade_check.counters
         WHERE stream = 'public.upgrade_woken' AND resource_id = 'w-1'));
SELECT upgrade_check.expect('wake-up table: the wake-up is still on',
       (SELECT wake_relays FROM ordering.attachments WHERE tbl = 'upgrade_woken'::regclass), true);

-- The partitioned table numbers on in each partition; the triggers of
-- upgrade_always are still ENABLE ALWAYS, with their comments.
WITH i AS (INSERT INTO upgrade_parts (resource_id, part) VALUES ('p', 2), ('p', 1) RETURNING seq)
SELECT upgrade_check.expect('partitioned table: p continues',
       (SELECT string_agg(seq::text, ',' ORDER BY seq) FROM i), '4,5');
SELECT upgrade_check.expect('ENABLE ALWAYS triggers: as they were, with their comments',
       (SELECT string_agg(t.tgname || ' ' || t.tgenabled::text || ' ' || obj_description(t.oid, 'pg_trigger'),
                          ', ' ORDER BY t.tgname)
          FROM pg_trigger t WHERE t.tgrelid = 'upgrade_always'::regclass),
       'ordering_sequence A kept: ordering_sequence, '
       'ordering_sequence_guard A kept: ordering_sequence_guard, '
       'ordering_sequence_stored A kept: ordering_sequence_stored');
WITH i AS (INSERT INTO upgrade_always (resource_id) VALUES ('a') RETURNING seq)
SELECT upgrade_check.expect('ENABLE ALWAYS triggers: a continues', (SELECT seq FROM i), 3::bigint);

-- The self-check finds nothing wrong in what the update left, but what
-- docs/resource-keys.md says it shows: the rows 1.1 numbered under two keys
-- that 1.2 keys as one (1.50 and 1.5) hold a number twice.
SELECT upgrade_check.expect('check() after the update',
       (SELECT string_agg(kind || ': ' || detail, '; ') FROM ordering.check()
         WHERE detail NOT LIKE '%upgrade_numeric_outbox%'), NULL::text);
SELECT upgrade_check.expect('check() shows the rows 1.1 numbered under two keys of one numeric',
       (SELECT string_agg(kind || ': ' || detail, '; ') FROM ordering.check()
         WHERE detail LIKE '%upgrade_numeric_outbox%'),
       (SELECT CASE WHEN f.version = '1.1'
                    THEN 'seq_repeated_in_table: table public.upgrade_numeric_outbox (stream ''public.upgrade_numeric_outbox''), resource ''1.5'': 6 rows hold 5 numbers'
               END
          FROM upgrade_check.filled f));
