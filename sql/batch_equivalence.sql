-- deliver_batch() and apply_batch() against single calls: random streams
-- (reordered within a window, with duplicates, lost events and poison
-- events) are fed to two consumers of each kind, one event per single call
-- and in batches of random sizes, one transaction per batch on both sides;
-- positions, parked events, dead letters, the rows returned, the handler's
-- calls, the statistics and the hot resources must come out the same.
\set VERBOSITY terse
-- every consumer here gets a hot-resources sketch of its own
SELECT ordering.stats_reset();

-- The streams: event i of trial t, and the batch it belongs to.
CREATE TABLE be_stream (trial int, i int, resource_id text, seq bigint, payload jsonb,
                        batch int, PRIMARY KEY (trial, i));
-- What the calls returned: the rows of event i (n: their order), the
-- events the handlers ran for (n: their order), what apply returned, and
-- how many events each batch's handler calls ran for.
CREATE TABLE be_rows (consumer text, i int, n int, seq bigint, payload jsonb);
CREATE TABLE be_handled (n bigserial, consumer text, resource_id text, seq bigint, payload jsonb);
CREATE TABLE be_applied (consumer text, i int, applied boolean);
CREATE TABLE be_ran (consumer text, batch int, ran int);

-- Handlers: a poison event fails, every other one is recorded.
CREATE FUNCTION be_handle(consumer text, r text, s bigint, p jsonb) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF (p->>'poison')::boolean THEN
        RAISE EXCEPTION 'poison event % of %', s, r;
    END IF;
    INSERT INTO be_handled (consumer, resource_id, seq, payload) VALUES (consumer, r, s, p);
END $$;
CREATE FUNCTION be_handle_single(r text, s bigint, p jsonb) RETURNS void
    LANGUAGE sql AS $$ SELECT be_handle('h-single-' || current_setting('be.trial'), r, s, p) $$;
CREATE FUNCTION be_handle_batch(r text, s bigint, p jsonb) RETURNS void
    LANGUAGE sql AS $$ SELECT be_handle('h-batch-' || current_setting('be.trial'), r, s, p) $$;

-- A stream: seqs 1..per_resource of each resource, each event arriving at
-- its seq plus a random delay of up to "win"; lost_pct of the events never
-- arrive, dup_pct arrive twice; poison_pct are poison.  Then cut into
-- batches of 1..max_batch events.
CREATE FUNCTION be_make_stream(t int, seed float8, resources int, per_resource int,
                               win int, lost_pct int, dup_pct int, poison_pct int,
                               max_batch int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    n int;
    first int := 1;
    b int := 0;
    size int;
BEGIN
    PERFORM setseed(seed);
    INSERT INTO be_stream (trial, i, resource_id, seq, payload)
    WITH ev AS (
        SELECT 'r' || r AS resource_id, s::bigint AS seq, s + random() * win AS at,
               random() AS lost, random() AS dup, random() AS poison
          FROM generate_series(1, resources) r, generate_series(1, per_resource) s
    ), arrivals AS (
        SELECT resource_id, seq, at, poison FROM ev WHERE lost >= lost_pct / 100.0
        UNION ALL
        SELECT resource_id, seq, at + 1 + random() * win, poison
          FROM ev WHERE lost >= lost_pct / 100.0 AND dup < dup_pct / 100.0
    )
    SELECT t, row_number() OVER (ORDER BY at, resource_id, seq), resource_id, seq,
           jsonb_build_object('r', resource_id, 's', seq, 'poison', poison < poison_pct / 100.0)
      FROM arrivals;
    SELECT count(*) INTO n FROM be_stream WHERE trial = t;
    WHILE first <= n LOOP
        size := 1 + floor(random() * max_batch)::int;
        b := b + 1;
        UPDATE be_stream SET batch = b WHERE trial = t AND i BETWEEN first AND first + size - 1;
        first := first + size;
    END LOOP;
END $$;

-- Feed trial t to the six consumers, one transaction per batch: each event
-- to single calls, the batch to one batch call, for the table form of
-- deliver, its handler form (dead-lettering) and apply_if_newer.
CREATE PROCEDURE be_feed(t int) LANGUAGE plpgsql AS $$
DECLARE
    nb int;
    e record;
    total int;
    one int;
BEGIN
    PERFORM set_config('be.trial', t::text, false);
    SELECT max(batch) INTO nb FROM be_stream WHERE trial = t;
    FOR b IN 1..nb LOOP
        total := 0;
        FOR e IN SELECT * FROM be_stream WHERE trial = t AND batch = b ORDER BY i LOOP
            INSERT INTO be_rows
            SELECT 'single-' || t, e.i, d.n, d.seq, d.payload
              FROM ordering.deliver('single-' || t, e.resource_id, e.seq, e.payload)
                   WITH ORDINALITY d(seq, payload, n);
            one := ordering.deliver('h-single-' || t, e.resource_id, e.seq, e.payload,
                                    'be_handle_single(text,bigint,jsonb)', 'dead_letter');
            total := total + one;
            INSERT INTO be_applied
            VALUES ('a-single-' || t, e.i, ordering.apply_if_newer('a-single-' || t, e.resource_id, e.seq));
        END LOOP;
        INSERT INTO be_ran VALUES ('h-single-' || t, b, total);

        INSERT INTO be_rows
        SELECT 'batch-' || t, s.ids[d.ord], row_number() OVER (PARTITION BY d.ord ORDER BY d.n),
               d.seq, d.payload
          FROM (SELECT array_agg(i ORDER BY i) AS ids, array_agg(resource_id ORDER BY i) AS rs,
                       array_agg(seq ORDER BY i) AS ss, array_agg(payload ORDER BY i) AS ps
                  FROM be_stream WHERE trial = t AND batch = b) s,
               ordering.deliver_batch('batch-' || t, s.rs, s.ss, s.ps)
                   WITH ORDINALITY d(ord, seq, payload, n);
        INSERT INTO be_ran
        SELECT 'h-batch-' || t, b,
               ordering.deliver_batch('h-batch-' || t, array_agg(resource_id ORDER BY i),
                                      array_agg(seq ORDER BY i), array_agg(payload ORDER BY i),
                                      'be_handle_batch(text,bigint,jsonb)', 'dead_letter')
          FROM be_stream WHERE trial = t AND batch = b;
        INSERT INTO be_applied
        SELECT 'a-batch-' || t, s.ids[a.ord], a.applied
          FROM (SELECT array_agg(i ORDER BY i) AS ids, array_agg(resource_id ORDER BY i) AS rs,
                       array_agg(seq ORDER BY i) AS ss
                  FROM be_stream WHERE trial = t AND batch = b) s,
               ordering.apply_batch('a-batch-' || t, s.rs, s.ss) a;
        COMMIT;
    END LOOP;
END $$;

-- How many rows differ between what consumer a and consumer b have, of
-- each thing compared (0 everywhere: the same).
CREATE FUNCTION be_compare(a text, b text)
RETURNS TABLE (compared text, differences bigint) LANGUAGE sql AS $$
    WITH pos AS (
        SELECT consumer, resource_id, position, blocked_at FROM ordering.positions
    ), park AS (
        SELECT consumer, resource_id, seq, payload, parked_at FROM ordering.parked
    ), dead AS (
        SELECT consumer, resource_id, seq, payload, sqlstate, message, failed_at, attempts
          FROM ordering.dead_letter_events
    ), st AS (
        SELECT consumer, events_consumed, events_applied, events_stale, events_duplicate,
               events_parked, events_drained, events_dead_lettered, events_skipped,
               parked_current, dead_letters_current, reorder_distance_buckets,
               reorder_distance_sum, oldest_gap_age
          FROM ordering.stats
    ), hot AS (
        SELECT x.consumer, h.resource_id, h.events, h.max_error
          FROM (VALUES (a), (b)) x(consumer),
               ordering.hot_resources('consumer', x.consumer, 1000) h
    ), handled AS (
        -- per resource, in the order the handler ran for them
        SELECT consumer, resource_id, seq, payload,
               row_number() OVER (PARTITION BY consumer, resource_id ORDER BY n) AS k
          FROM be_handled
    )
    SELECT 'positions', count(*) FROM (
        (SELECT resource_id, position, blocked_at FROM pos WHERE consumer = a
         EXCEPT ALL SELECT resource_id, position, blocked_at FROM pos WHERE consumer = b)
        UNION ALL
        (SELECT resource_id, position, blocked_at FROM pos WHERE consumer = b
         EXCEPT ALL SELECT resource_id, position, blocked_at FROM pos WHERE consumer = a)) x
    UNION ALL
    SELECT 'parked events', count(*) FROM (
        (SELECT resource_id, seq, payload, parked_at FROM park WHERE consumer = a
         EXCEPT ALL SELECT resource_id, seq, payload, parked_at FROM park WHERE consumer = b)
        UNION ALL
        (SELECT resource_id, seq, payload, parked_at FROM park WHERE consumer = b
         EXCEPT ALL SELECT resource_id, seq, payload, parked_at FROM park WHERE consumer = a)) x
    UNION ALL
    SELECT 'dead letters', count(*) FROM (
        (SELECT resource_id, seq, payload, sqlstate, message, failed_at, attempts FROM dead WHERE consumer = a
         EXCEPT ALL SELECT resource_id, seq, payload, sqlstate, message, failed_at, attempts FROM dead WHERE consumer = b)
        UNION ALL
        (SELECT resource_id, seq, payload, sqlstate, message, failed_at, attempts FROM dead WHERE consumer = b
         EXCEPT ALL SELECT resource_id, seq, payload, sqlstate, message, failed_at, attempts FROM dead WHERE consumer = a)) x
    UNION ALL
    SELECT 'rows returned', count(*) FROM (
        (SELECT i, n, seq, payload FROM be_rows WHERE consumer = a
         EXCEPT ALL SELECT i, n, seq, payload FROM be_rows WHERE consumer = b)
        UNION ALL
        (SELECT i, n, seq, payload FROM be_rows WHERE consumer = b
         EXCEPT ALL SELECT i, n, seq, payload FROM be_rows WHERE consumer = a)) x
    UNION ALL
    SELECT 'handler calls', count(*) FROM (
        (SELECT resource_id, k, seq, payload FROM handled WHERE consumer = a
         EXCEPT ALL SELECT resource_id, k, seq, payload FROM handled WHERE consumer = b)
        UNION ALL
        (SELECT resource_id, k, seq, payload FROM handled WHERE consumer = b
         EXCEPT ALL SELECT resource_id, k, seq, payload FROM handled WHERE consumer = a)) x
    UNION ALL
    SELECT 'handler counts', count(*) FROM (
        (SELECT batch, ran FROM be_ran WHERE consumer = a
         EXCEPT ALL SELECT batch, ran FROM be_ran WHERE consumer = b)
        UNION ALL
        (SELECT batch, ran FROM be_ran WHERE consumer = b
         EXCEPT ALL SELECT batch, ran FROM be_ran WHERE consumer = a)) x
    UNION ALL
    SELECT 'applied', count(*) FROM (
        (SELECT i, applied FROM be_applied WHERE consumer = a
         EXCEPT ALL SELECT i, applied FROM be_applied WHERE consumer = b)
        UNION ALL
        (SELECT i, applied FROM be_applied WHERE consumer = b
         EXCEPT ALL SELECT i, applied FROM be_applied WHERE consumer = a)) x
    UNION ALL
    SELECT 'statistics', count(*) FROM (
        (SELECT events_consumed, events_applied, events_stale, events_duplicate,
                events_parked, events_drained, events_dead_lettered, events_skipped,
                parked_current, dead_letters_current, reorder_distance_buckets,
                reorder_distance_sum, oldest_gap_age FROM st WHERE consumer = a
         EXCEPT ALL SELECT events_consumed, events_applied, events_stale, events_duplicate,
                events_parked, events_drained, events_dead_lettered, events_skipped,
                parked_current, dead_letters_current, reorder_distance_buckets,
                reorder_distance_sum, oldest_gap_age FROM st WHERE consumer = b)
        UNION ALL
        (SELECT events_consumed, events_applied, events_stale, events_duplicate,
                events_parked, events_drained, events_dead_lettered, events_skipped,
                parked_current, dead_letters_current, reorder_distance_buckets,
                reorder_distance_sum, oldest_gap_age FROM st WHERE consumer = b
         EXCEPT ALL SELECT events_consumed, events_applied, events_stale, events_duplicate,
                events_parked, events_drained, events_dead_lettered, events_skipped,
                parked_current, dead_letters_current, reorder_distance_buckets,
                reorder_distance_sum, oldest_gap_age FROM st WHERE consumer = a)) x
    UNION ALL
    SELECT 'hot resources', count(*) FROM (
        (SELECT resource_id, events, max_error FROM hot WHERE consumer = a
         EXCEPT ALL SELECT resource_id, events, max_error FROM hot WHERE consumer = b)
        UNION ALL
        (SELECT resource_id, events, max_error FROM hot WHERE consumer = b
         EXCEPT ALL SELECT resource_id, events, max_error FROM hot WHERE consumer = a)) x
$$;

-- What the single calls of a trial went through, so that the comparison
-- is known to have covered it (every kind of decision, and something left
-- parked, dead and blocked at the end).
CREATE FUNCTION be_covered(t int) RETURNS TABLE (trial int, events bigint, covered text)
LANGUAGE sql AS $$
    SELECT t, (SELECT count(*) FROM be_stream s WHERE s.trial = t),
           concat_ws(', ',
               CASE WHEN d.events_stale > 0 THEN 'stale' END,
               CASE WHEN d.events_duplicate > 0 THEN 'duplicate' END,
               CASE WHEN d.events_parked > 0 THEN 'parked' END,
               CASE WHEN d.events_drained > 0 THEN 'drained' END,
               CASE WHEN d.parked_current > 0 THEN 'parked at the end' END,
               CASE WHEN h.events_dead_lettered > 0 THEN 'dead-lettered' END,
               CASE WHEN h.dead_letters_current > 0 THEN 'blocked at the end' END,
               CASE WHEN a.events_applied > 0 AND a.events_stale > 0 THEN 'newer and older states' END,
               CASE WHEN EXISTS (SELECT FROM ordering.hot_resources('consumer', 'single-' || t))
                    THEN 'hot resources' END)
      FROM ordering.stats d, ordering.stats h, ordering.stats a
     WHERE d.consumer = 'single-' || t AND h.consumer = 'h-single-' || t
       AND a.consumer = 'a-single-' || t
$$;

-- Trials: (seed, resources, seqs per resource, reorder window, % lost,
-- % duplicated, % poison, largest batch).  At most 32 resources per trial,
-- what a hot-resources sketch holds exactly: beyond that its estimates
-- depend on the order of the offers (see docs/batch.md).
SELECT be_make_stream(1, 0.11, 12, 20, 8, 3, 10, 2, 40);
SELECT be_make_stream(2, 0.22, 4, 60, 40, 2, 25, 3, 100);
SELECT be_make_stream(3, 0.33, 30, 6, 0, 0, 5, 5, 7);
SELECT be_make_stream(4, 0.44, 25, 16, 100, 5, 15, 1, 250);
SELECT be_make_stream(5, 0.55, 2, 150, 12, 1, 30, 2, 1);
CALL be_feed(1);
CALL be_feed(2);
CALL be_feed(3);
CALL be_feed(4);
CALL be_feed(5);

-- One row per trial and form: what differs ("nothing": all nine things
-- compared are the same).
SELECT t AS trial, f.form,
       COALESCE(string_agg(c.compared || ' ' || c.differences, ', ' ORDER BY c.compared)
                    FILTER (WHERE c.differences > 0), 'nothing') AS differences
  FROM generate_series(1, 5) t,
       (VALUES ('deliver_batch', ''), ('deliver_batch with handler', 'h-'),
               ('apply_batch', 'a-')) f(form, prefix),
       be_compare(f.prefix || 'single-' || t, f.prefix || 'batch-' || t) c
 GROUP BY t, f.form
 ORDER BY t, f.form;

SELECT c.* FROM generate_series(1, 5) t, be_covered(t) c ORDER BY c.trial;

-- The comparison sees differences: the same stream fed to the batch
-- consumer once more (every event a stale or duplicate one now) changes its
-- statistics and rows, and nothing else.
SELECT count(*) > 0 AS rows_before FROM be_rows WHERE consumer = 'batch-1';
SELECT count(*) AS rows_again
  FROM ordering.deliver_batch('batch-1',
       (SELECT array_agg(resource_id ORDER BY i) FROM be_stream WHERE trial = 1),
       (SELECT array_agg(seq ORDER BY i) FROM be_stream WHERE trial = 1),
       (SELECT array_agg(payload ORDER BY i) FROM be_stream WHERE trial = 1));
SELECT * FROM be_compare('single-1', 'batch-1') WHERE differences > 0;
DELETE FROM be_rows WHERE consumer = 'batch-1' AND i = 1;
SELECT * FROM be_compare('single-1', 'batch-1') WHERE differences > 0;

DROP PROCEDURE be_feed(int);
DROP FUNCTION be_make_stream(int, float8, int, int, int, int, int, int, int), be_compare(text, text),
    be_covered(int), be_handle_single(text, bigint, jsonb), be_handle_batch(text, bigint, jsonb),
    be_handle(text, text, bigint, jsonb);
DROP TABLE be_stream, be_rows, be_handled, be_applied, be_ran;
DELETE FROM ordering.parked WHERE consumer ~ '^(h-|a-)?(single|batch)-[0-9]$';
DELETE FROM ordering.dead_letter_events WHERE consumer ~ '^(h-|a-)?(single|batch)-[0-9]$';
DELETE FROM ordering.positions WHERE consumer ~ '^(h-|a-)?(single|batch)-[0-9]$';
