-- deliver_batch() and apply_batch(): a batch of events per call, one
-- statement per batch (docs/batch.md); errors.  batch_equivalence.sql
-- compares them with single calls on random streams.
\set VERBOSITY terse
SET client_min_messages = warning;

-------------------------------------------------------------------------------
-- Step events: deliver_batch
-------------------------------------------------------------------------------
CREATE TABLE b_ledger (account text, seq bigint, amount numeric, PRIMARY KEY (account, seq));

-- Each row is one event to apply now; ord says which input it came from
-- (its place in the arrays), and the rows come in input order.  acct-1's 3
-- and acct-2's 2 arrive early and park; acct-2's 1 lets 2 through; the
-- second acct-1 1 is a duplicate.
SELECT * FROM ordering.deliver_batch('b-ledger',
    ARRAY['acct-1', 'acct-1', 'acct-2', 'acct-1', 'acct-2'],
    ARRAY[1, 3, 2, 1, 1],
    ARRAY['{"add": 10}', '{"add": 30}', '{"add": 2}', '{"add": 10}', '{"add": 1}']::jsonb[]);
-- That call was its own transaction: undo it for the ledger below.
DELETE FROM ordering.positions WHERE consumer = 'b-ledger';
DELETE FROM ordering.parked WHERE consumer = 'b-ledger';

-- The same batch applied in the same statement, as a consumer does it: the
-- resource of each row is resource_ids[ord].
WITH batch (ids, seqs, payloads) AS (
    VALUES (ARRAY['acct-1', 'acct-1', 'acct-2', 'acct-1', 'acct-2'],
            ARRAY[1, 3, 2, 1, 1]::bigint[],
            ARRAY['{"add": 10}', '{"add": 30}', '{"add": 2}', '{"add": 10}', '{"add": 1}']::jsonb[]))
INSERT INTO b_ledger
SELECT b.ids[d.ord], d.seq, (d.payload->>'add')::numeric
  FROM batch b, ordering.deliver_batch('b-ledger', b.ids, b.seqs, b.payloads) d
RETURNING *;
SELECT resource_id, seq, payload FROM ordering.parked WHERE consumer = 'b-ledger' ORDER BY 1, 2;

-- The next batch: acct-1's 2 drains the 3 parked before; acct-3's 2 parks
-- and its 1, later in the same batch, drains it; acct-2's 1 is stale now.
WITH batch (ids, seqs, payloads) AS (
    VALUES (ARRAY['acct-3', 'acct-2', 'acct-1', 'acct-3'],
            ARRAY[2, 1, 2, 1]::bigint[],
            ARRAY['{"add": 300}', '{"add": 1}', '{"add": 20}', '{"add": 100}']::jsonb[]))
INSERT INTO b_ledger
SELECT b.ids[d.ord], d.seq, (d.payload->>'add')::numeric
  FROM batch b, ordering.deliver_batch('b-ledger', b.ids, b.seqs, b.payloads) d
RETURNING *;
SELECT resource_id, position FROM ordering.positions WHERE consumer = 'b-ledger' ORDER BY 1;
SELECT count(*) AS parked FROM ordering.parked WHERE consumer = 'b-ledger';
SELECT account, array_agg(seq ORDER BY seq) AS seqs, sum(amount) FROM b_ledger GROUP BY 1 ORDER BY 1;

-- ord is the place in the arrays, whatever their lower bound; an empty
-- batch returns nothing; NULL payloads are kept like deliver()'s.
SELECT * FROM ordering.deliver_batch('b-bounds', '[0:1]={x,y}'::text[], '[5:6]={1,1}'::bigint[],
                                     '[-1:0]={"{\"n\": 1}",NULL}'::jsonb[]);
SELECT count(*) FROM ordering.deliver_batch('b-bounds', '{}', '{}', '{}');

-------------------------------------------------------------------------------
-- Through a handler, and dead letters
-------------------------------------------------------------------------------
CREATE TABLE b_applied (n serial, resource_id text, seq bigint, payload jsonb);
CREATE FUNCTION b_apply(r text, s bigint, p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF p ? 'poison' THEN
        RAISE EXCEPTION 'cannot apply event % of %', s, r;
    END IF;
    INSERT INTO b_applied (resource_id, seq, payload) VALUES (r, s, p);
END $$;

-- Returns how many events the handler ran for; it runs resource by
-- resource (in the order of their ids), each resource's events in order.
SELECT ordering.deliver_batch('b-handler', ARRAY['h2', 'h1', 'h2', 'h1'], ARRAY[2, 2, 1, 1],
                              ARRAY['{}', '{}', '{}', '{}']::jsonb[],
                              'b_apply(text,bigint,jsonb)') AS ran;
SELECT n, resource_id, seq FROM b_applied ORDER BY n;

-- on_error => 'dead_letter': h3's 1 fails and becomes its dead letter, h3's
-- 2 waits behind it; h4 is not held up.  The call returns normally.
SELECT ordering.deliver_batch('b-handler', ARRAY['h3', 'h4', 'h3'], ARRAY[1, 1, 2],
                              ARRAY['{"poison": true}', '{}', '{}']::jsonb[],
                              'b_apply(text,bigint,jsonb)', 'dead_letter') AS ran;
SELECT consumer, resource_id, seq, sqlstate, message, parked_behind FROM ordering.dead_letters
 WHERE consumer = 'b-handler';
-- with on_error => 'raise' (the default) the handler's error fails the call
SELECT ordering.deliver_batch('b-handler', ARRAY['h5'], ARRAY[1], ARRAY['{"poison": 1}']::jsonb[],
                              'b_apply(text,bigint,jsonb)');
SELECT ordering.position('b-handler', 'h5');

-------------------------------------------------------------------------------
-- State events: apply_batch
-------------------------------------------------------------------------------
CREATE TABLE b_plans (id text PRIMARY KEY, plan text NOT NULL, version bigint NOT NULL);

-- One row per event, in input order: true when it is newer than what was
-- applied before it (in this batch too).
SELECT * FROM ordering.apply_batch('b-plans', ARRAY['s1', 's1', 's2', 's1', 's1'],
                                   ARRAY[3, 2, 1, 3, 4]);

-- The projection upserted in the same statement: of the newer events of a
-- resource in the batch, the last one (an upsert may touch a row once).
WITH batch (ids, seqs, plans) AS (
    VALUES (ARRAY['s1', 's2', 's2', 's3', 's1'], ARRAY[5, 3, 2, 1, 4]::bigint[],
            ARRAY['gold', 'pro', 'basic', 'free', 'silver']))
INSERT INTO b_plans AS v (id, plan, version)
SELECT DISTINCT ON (e.id) e.id, e.plan, e.seq
  FROM batch b,
       unnest(b.ids, b.seqs, b.plans) WITH ORDINALITY e(id, seq, plan, ord)
       JOIN ordering.apply_batch('b-plans', b.ids, b.seqs) a ON a.ord = e.ord
 WHERE a.applied
 ORDER BY e.id, e.seq DESC
    ON CONFLICT (id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version;
SELECT * FROM b_plans ORDER BY id;
SELECT resource_id, position FROM ordering.positions WHERE consumer = 'b-plans' ORDER BY 1;

-------------------------------------------------------------------------------
-- Bad input: the SQLSTATEs of the single calls; nothing changes
-------------------------------------------------------------------------------
CREATE FUNCTION pg_temp.try(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    r text;
    st text;
    msg text;
    ctx text;
BEGIN
    EXECUTE q INTO r;
    RETURN 'ok: ' || COALESCE(r, 'NULL');
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, ctx = PG_EXCEPTION_CONTEXT;
    -- the context line that names the event, if there is one
    ctx := substring(ctx FROM '^event [0-9]+ of the batch');
    RETURN st || ': ' || left(msg, 90) || COALESCE(' (' || ctx || ')', '');
END
$$;
CREATE FUNCTION pg_temp.fingerprint() RETURNS text LANGUAGE sql AS $$
    SELECT md5(string_agg(t, ',' ORDER BY t)) FROM (
        SELECT p::text FROM ordering.positions p
        UNION ALL SELECT k::text FROM ordering.parked k
        UNION ALL SELECT d::text FROM ordering.dead_letter_events d
        UNION ALL SELECT l::text FROM b_ledger l) x(t)
$$;
CREATE TEMP TABLE before AS SELECT pg_temp.fingerprint() AS f;

SELECT c AS call, pg_temp.try(c) AS outcome FROM (VALUES
    ($$SELECT count(*) FROM ordering.deliver_batch(NULL, '{a}', '{1}', '{"{}"}')$$),
    ($$SELECT count(*) FROM ordering.deliver_batch('', '{a}', '{1}', '{"{}"}')$$),
    ($$SELECT count(*) FROM ordering.deliver_batch(repeat('c', 1025), '{a}', '{1}', '{"{}"}')$$),
    ($$SELECT count(*) FROM ordering.deliver_batch('b-bad', NULL, '{1}', '{"{}"}')$$),
    ($$SELECT count(*) FROM ordering.deliver_batch('b-bad', '{a}', NULL, '{"{}"}')$$),
    ($$SELECT count(*) FROM ordering.deliver_batch('b-bad', '{a}', '{1}', NULL)$$),
    ($$SELECT count(*) FROM ordering.deliver_batch('b-bad', '{a,NULL}', '{1,2}', '{"{}","{}"}')$$),
    ($$SELECT count(*) FROM ordering.deliver_batch('b-bad', '{a,b,c}', '{1,2,NULL}', '{"{}","{}","{}"}')$$),
    ($$SELECT count(*) FROM ordering.deliver_batch('b-bad', '{a,b}', '{1,0}', '{"{}","{}"}')$$),
    ($$SELECT count(*) FROM ordering.deliver_batch('b-bad', '{a,b}', '{-5,1}', '{"{}","{}"}')$$),
    ($$SELECT count(*) FROM ordering.deliver_batch('b-bad', ARRAY['a', repeat('r', 1025)], '{1,1}', '{"{}","{}"}')$$),
    ($$SELECT count(*) FROM ordering.deliver_batch('b-bad', '{a,b}', '{1}', '{"{}","{}"}')$$),
    ($$SELECT count(*) FROM ordering.deliver_batch('b-bad', '{a,b}', '{1,2}', '{"{}"}')$$),
    ($$SELECT count(*) FROM ordering.deliver_batch('b-bad', '{{a,b},{c,d}}', '{{1,2},{3,4}}', '{{"{}","{}"},{"{}","{}"}}')$$),
    ($$SELECT ordering.deliver_batch('b-bad', '{a}', '{1}', '{"{}"}', NULL)$$),
    ($$SELECT ordering.deliver_batch('b-bad', '{a}', '{1}', '{"{}"}', 'b_apply(text,bigint,jsonb)', NULL)$$),
    ($$SELECT ordering.deliver_batch('b-bad', '{a}', '{1}', '{"{}"}', 'b_apply(text,bigint,jsonb)', 'ignore')$$),
    ($$SELECT ordering.deliver_batch('b-bad', '{a}', '{1}', '{"{}"}', 'pg_catalog.now()')$$),
    ($$SELECT ordering.deliver_batch('b-bad', '{a}', '{0}', '{"{}"}', 'b_apply(text,bigint,jsonb)')$$),
    ($$SELECT count(*) FROM ordering.apply_batch(NULL, '{a}', '{1}')$$),
    ($$SELECT count(*) FROM ordering.apply_batch('b-bad', NULL, '{1}')$$),
    ($$SELECT count(*) FROM ordering.apply_batch('b-bad', '{a}', NULL)$$),
    ($$SELECT count(*) FROM ordering.apply_batch('b-bad', '{a,NULL}', '{1,1}')$$),
    ($$SELECT count(*) FROM ordering.apply_batch('b-bad', '{a,b}', '{1,NULL}')$$),
    ($$SELECT count(*) FROM ordering.apply_batch('b-bad', '{a}', '{0}')$$),
    ($$SELECT count(*) FROM ordering.apply_batch('', '{a}', '{1}')$$),
    ($$SELECT count(*) FROM ordering.apply_batch('b-bad', '{a,b}', '{1}')$$),
    ($$SELECT count(*) FROM ordering.apply_batch('b-bad', '{{a}}', '{{1}}')$$)
) v(c);

-- The parking cap refuses the whole call (54000), and nothing of it is
-- stored: acct-1's 4 (applied before the refusal) and acct-9's 5 and 6
-- (parked before it) are undone with it, and so is the ledger's row.
SET ordering.max_parked_per_resource = 2;
SELECT pg_temp.try($$SELECT count(*) FROM ordering.deliver_batch('b-ledger',
    ARRAY['acct-1', 'acct-9', 'acct-9', 'acct-9'], ARRAY[4, 5, 6, 7],
    ARRAY['{}', '{}', '{}', '{}']::jsonb[])$$) AS outcome;
SELECT pg_temp.try($$WITH i AS (INSERT INTO b_ledger SELECT 'acct-1', d.seq, 0
    FROM ordering.deliver_batch('b-ledger', ARRAY['acct-9', 'acct-9', 'acct-9', 'acct-1'],
                                ARRAY[5, 6, 7, 4], ARRAY['{}', '{}', '{}', '{}']::jsonb[]) d
    RETURNING 1) SELECT count(*) FROM i$$) AS outcome;
-- one event fewer fits
SELECT pg_temp.try($$SELECT count(*) FROM ordering.deliver_batch('b-ledger',
    ARRAY['acct-9', 'acct-9'], ARRAY[5, 6], ARRAY['{}', '{}']::jsonb[])$$) AS outcome;
DELETE FROM ordering.parked WHERE consumer = 'b-ledger' AND resource_id = 'acct-9';
DELETE FROM ordering.positions WHERE consumer = 'b-ledger' AND resource_id = 'acct-9';
RESET ordering.max_parked_per_resource;

-- In a read-only transaction: 25006, whatever the batch would do.
BEGIN READ ONLY;
SELECT pg_temp.try($$SELECT count(*) FROM ordering.deliver_batch('b-ledger', '{acct-1}', '{1}', '{"{}"}')$$) AS deliver,
       pg_temp.try($$SELECT count(*) FROM ordering.apply_batch('b-plans', '{s1}', '{1}')$$) AS apply;
COMMIT;

SELECT f = pg_temp.fingerprint() AS nothing_changed FROM before;

DROP TABLE b_ledger, b_applied, b_plans;
DROP FUNCTION b_apply(text, bigint, jsonb);
DELETE FROM ordering.dead_letter_events WHERE consumer LIKE 'b-%';
DELETE FROM ordering.parked WHERE consumer LIKE 'b-%';
DELETE FROM ordering.positions WHERE consumer LIKE 'b-%';
