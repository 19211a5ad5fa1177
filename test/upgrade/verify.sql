-- After ALTER EXTENSION ordering UPDATE of the database that fill.sql
-- filled at an older version, or the restore of a dump of it taken there:
-- every row is still there, and producing and consuming continue from
-- where they stopped.  Every expected value comes from what fill.sql
-- recorded.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

CREATE FUNCTION upgrade_check.expect(label text, got anycompatible, want anycompatible)
    RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    IF got IS DISTINCT FROM want THEN
        RAISE EXCEPTION 'after the update, %: got %, expected %', label, got, want;
    END IF;
    RETURN 'ok: ' || label;
END
$$;

-- Every row survived: counts, sums and a digest of every row, before and
-- after.
CREATE TABLE upgrade_check.after AS SELECT * FROM upgrade_check.fingerprint();
SELECT what, b.row_count AS rows_before, a.row_count AS rows_after,
       b.total AS sum_before, a.total AS sum_after,
       b.digest IS NOT DISTINCT FROM a.digest AS same_rows
  FROM upgrade_check.before b FULL JOIN upgrade_check.after a USING (what)
 ORDER BY what;
\pset tuples_only on
SELECT upgrade_check.expect('tables whose rows changed',
       (SELECT string_agg(what, ', ' ORDER BY what)
          FROM upgrade_check.before b FULL JOIN upgrade_check.after a USING (what)
         WHERE (b.row_count, b.total, b.digest) IS DISTINCT FROM (a.row_count, a.total, a.digest)),
       NULL::text);
SELECT upgrade_check.expect('nothing recorded is empty',
       (SELECT count(*) FROM upgrade_check.before WHERE row_count = 0), 0::bigint);

-- Producing continues every counter.
SELECT upgrade_check.expect('emit continues res-5',
       ordering.emit('res-5', 'e', '{"after": true}'),
       (SELECT last_seq + 1 FROM upgrade_check.counters
         WHERE stream = 'ordering.outbox' AND resource_id = 'res-5'));
SELECT upgrade_check.expect('emit starts a new resource at 1',
       ordering.emit('res-new', 'e', '{}'), 1::bigint);
INSERT INTO upgrade_user_outbox (account, body) VALUES ('acct-1', '{"after": true}');
SELECT upgrade_check.expect('the attached table continues acct-1',
       (SELECT max(version) FROM upgrade_user_outbox WHERE account = 'acct-1'),
       (SELECT last_seq + 1 FROM upgrade_check.counters
         WHERE stream = 'public.upgrade_user_outbox' AND resource_id = 'acct-1'));
SELECT upgrade_check.expect('next_sequence continues shop-0',
       ordering.next_sequence('invoice-numbers', 'shop-0'),
       (SELECT last_seq + 1 FROM upgrade_check.counters
         WHERE stream = 'invoice-numbers' AND resource_id = 'shop-0'));
BEGIN;
SELECT upgrade_check.expect('relays claim every unpublished row, old and new',
       (SELECT count(*) FROM ordering.claim_unpublished(1000)),
       (SELECT row_count + 2 FROM upgrade_check.before WHERE what = 'outbox unpublished'));
COMMIT;

-- Consuming continues every position.
SELECT upgrade_check.expect('apply_if_newer: the next version of res-2 is newer',
       ordering.apply_if_newer('state', 'res-2',
           (SELECT position + 1 FROM upgrade_check.positions
             WHERE consumer = 'state' AND resource_id = 'res-2')), true);
SELECT upgrade_check.expect('apply_if_newer: the version applied before is stale',
       ordering.apply_if_newer('state', 'res-3',
           (SELECT position FROM upgrade_check.positions
             WHERE consumer = 'state' AND resource_id = 'res-3')), false);
SELECT upgrade_check.expect('deliver: the missing event drains the parked ones after it',
       (SELECT string_agg(d.seq::text, ',' ORDER BY d.seq)
          FROM ordering.deliver('steps', 'res-1',
               (SELECT position + 1 FROM upgrade_check.positions
                 WHERE consumer = 'steps' AND resource_id = 'res-1'), '{"i": 5}') d),
       (SELECT string_agg(s::text, ',' ORDER BY s)
          FROM generate_series((SELECT position + 1 FROM upgrade_check.positions
                                 WHERE consumer = 'steps' AND resource_id = 'res-1'),
                               (SELECT position + 3 FROM upgrade_check.positions
                                 WHERE consumer = 'steps' AND resource_id = 'res-1')) s));
SELECT upgrade_check.expect('deliver: the gap request of res-1 is settled',
       (SELECT count(*) FROM ordering.gap_requests
         WHERE consumer = 'steps' AND resource_id = 'res-1'
           AND missing_from = (SELECT position + 1 FROM upgrade_check.positions
                                WHERE consumer = 'steps' AND resource_id = 'res-1')),
       0::bigint);
SELECT upgrade_check.expect('deliver: an early event still parks',
       (SELECT count(*) FROM ordering.deliver('steps', 'res-7', 9, '{"i": 9}')), 0::bigint);
SELECT upgrade_check.expect('skip_gap: res-2 gives up on its gap and drains',
       (SELECT count(*) FROM ordering.skip_gap('steps', 'res-2')), 2::bigint);
SET ordering.gap_deadline = '10min';
SELECT upgrade_check.expect('sweep_gaps: the new gap of res-1 is requested',
       (SELECT count(*) FROM ordering.sweep_gaps()
         WHERE consumer = 'steps' AND resource_id = 'res-1'), 1::bigint);

-- Keys 1.2 changed: the counters of 1.50 and 1.5 are one, at the higher
-- value, so no number is handed out twice; 2.0 continues as 2.  (Filled
-- at 1.2 or later, 1.5 had the 4 events of 1.50 and 1.5 from the start.)
WITH i AS (INSERT INTO upgrade_numeric_outbox (amount) VALUES (1.5), (1.500), (2)
           RETURNING version)
SELECT upgrade_check.expect('numeric keys: 1.5 continues after the 3 events of 1.50',
       (SELECT string_agg(version::text, ',' ORDER BY version) FROM i),
       (SELECT CASE WHEN f.version IN ('1.0', '1.1') THEN '2,4,5' ELSE '2,5,6' END
          FROM upgrade_check.filled f));
SELECT upgrade_check.expect('numeric keys: no counter is left under a 1.0 key',
       (SELECT string_agg(resource_id, ',' ORDER BY resource_id) FROM ordering.sequences
         WHERE stream = 'public.upgrade_numeric_outbox'),
       '1.5,2');
