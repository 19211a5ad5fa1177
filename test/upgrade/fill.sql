-- Fills a database whose extension is at version 1.0 with producer and
-- consumer state, and records what must survive ALTER EXTENSION ordering
-- UPDATE in schema upgrade_check.  Uses only 1.0's functions and tables.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

-- Producer: the ready outbox, res-1 .. res-20 with 1 .. 20 events each; the
-- first 100 rows published, the other 110 not.
SELECT count(ordering.emit('res-' || r, 'e', jsonb_build_object('r', r, 'i', i)))
  FROM generate_series(1, 20) r, generate_series(1, r) i;
SELECT ordering.mark_published(array_agg(c.id))
  FROM ordering.claim_unpublished(100) c;

-- A user's table attached with its own columns; a rolled-back row gives
-- its number back.
CREATE TABLE upgrade_user_outbox (id bigserial PRIMARY KEY, account text NOT NULL,
                                  version bigint NOT NULL, body jsonb,
                                  UNIQUE (account, version));
SELECT ordering.attach('upgrade_user_outbox', 'account', 'version');
INSERT INTO upgrade_user_outbox (account, body)
SELECT 'acct-' || (i % 7), jsonb_build_object('i', i) FROM generate_series(1, 50) i;
BEGIN;
INSERT INTO upgrade_user_outbox (account, body) VALUES ('acct-1', '{}');
ROLLBACK;

-- Streams that only ever used next_sequence().
SELECT count(ordering.next_sequence('invoice-numbers', 'shop-' || (i % 3)))
  FROM generate_series(1, 30) i;

-- A state consumer: positions 3, 6, ... 45.
SELECT count(*) FILTER (WHERE ordering.apply_if_newer('state', 'res-' || r, r * 3))
  FROM generate_series(1, 15) r;

-- A step consumer: 1 .. 4 of res-1 .. res-10 in order, then 6, 7 and 9 of
-- res-1 .. res-6 early (parked behind the gap at 5).
DO $$
BEGIN
    FOR r IN 1 .. 10 LOOP
        FOR i IN 1 .. 4 LOOP
            PERFORM * FROM ordering.deliver('steps', 'res-' || r, i, jsonb_build_object('i', i));
        END LOOP;
    END LOOP;
    FOR r IN 1 .. 6 LOOP
        PERFORM * FROM ordering.deliver('steps', 'res-' || r, 6, jsonb_build_object('i', 6));
        PERFORM * FROM ordering.deliver('steps', 'res-' || r, 7, jsonb_build_object('i', 7));
        PERFORM * FROM ordering.deliver('steps', 'res-' || r, 9, jsonb_build_object('i', 9));
    END LOOP;
END
$$;

-- Gap requests: the events of res-1 .. res-3 have waited an hour.
UPDATE ordering.parked SET parked_at = parked_at - interval '1 hour'
 WHERE consumer = 'steps' AND resource_id IN ('res-1', 'res-2', 'res-3');
SET ordering.gap_deadline = '10min';
SELECT count(*) AS gap_requests_emitted FROM ordering.sweep_gaps();
RESET ordering.gap_deadline;

-- What must survive.  Counters and positions are read back through
-- last_sequence() and position(), the outbox, parked events and gap
-- requests by their columns of 1.0.
CREATE SCHEMA upgrade_check;
-- the version filled, for what the versions key differently (numerics)
CREATE TABLE upgrade_check.filled AS
SELECT extversion AS version FROM pg_extension WHERE extname = 'ordering';
CREATE TABLE upgrade_check.counters AS
SELECT stream, resource_id, last_seq FROM ordering.sequences;
CREATE TABLE upgrade_check.positions AS
SELECT consumer, resource_id, position FROM ordering.positions;

CREATE FUNCTION upgrade_check.fingerprint()
    RETURNS TABLE (what text, row_count bigint, total numeric, digest text)
    LANGUAGE sql AS $f$
SELECT 'counters', count(*), sum(v.n),
       md5(string_agg(v.k || '=' || v.n, ',' ORDER BY v.k))
  FROM (SELECT c.stream || '/' || c.resource_id AS k,
               ordering.last_sequence(c.stream, c.resource_id) AS n
          FROM upgrade_check.counters c) v
UNION ALL
SELECT 'positions', count(*), sum(v.n),
       md5(string_agg(v.k || '=' || v.n, ',' ORDER BY v.k))
  FROM (SELECT p.consumer || '/' || p.resource_id AS k,
               ordering.position(p.consumer, p.resource_id) AS n
          FROM upgrade_check.positions p) v
UNION ALL
SELECT 'outbox', count(*), sum(o.seq),
       md5(string_agg(concat_ws('|', o.id, o.resource_id, o.seq, o.event_type, o.payload,
                                o.headers, o.created_at, o.published_at), ',' ORDER BY o.id))
  FROM ordering.outbox o
UNION ALL
SELECT 'outbox unpublished', count(*), sum(o.seq), NULL
  FROM ordering.outbox o WHERE o.published_at IS NULL
UNION ALL
SELECT 'user table', count(*), sum(u.version),
       md5(string_agg(concat_ws('|', u.id, u.account, u.version, u.body), ',' ORDER BY u.id))
  FROM public.upgrade_user_outbox u
UNION ALL
SELECT 'parked', count(*), sum(p.seq),
       md5(string_agg(concat_ws('|', p.consumer, p.resource_id, p.seq, p.payload, p.parked_at),
                      ',' ORDER BY p.consumer, p.resource_id, p.seq))
  FROM ordering.parked p
UNION ALL
SELECT 'gap requests', count(*), sum(g.missing_from + g.missing_to + g.parked_count + g.attempts),
       md5(string_agg(concat_ws('|', g.consumer, g.resource_id, g.missing_from, g.missing_to,
                                g.parked_count, g.first_parked_at, g.detected_at,
                                g.last_requested_at, g.attempts),
                      ',' ORDER BY g.consumer, g.resource_id))
  FROM ordering.gap_requests g
$f$;

CREATE TABLE upgrade_check.before AS SELECT * FROM upgrade_check.fingerprint();

-- Keys that 1.2 changes (after the record above, which they would fail):
-- a table keyed by numeric, whose 1.0 keys tell 1.50 (3 events) from 1.5
-- (1 event); 1.2 keys both as 1.5, so the update merges their counters,
-- keeping the higher.
CREATE TABLE upgrade_numeric_outbox (amount numeric NOT NULL, version bigint NOT NULL);
SELECT ordering.attach('upgrade_numeric_outbox', 'amount', 'version');
INSERT INTO upgrade_numeric_outbox (amount) VALUES (1.50), (1.50), (1.50), (1.5), (2.0);

-- Roles given each set at this version, in a database of their own (the
-- updated databases are compared with a fresh install, privileges
-- included): verify.sql updates it and checks that each role holds what
-- its set holds now, and nothing the set dropped.
SELECT extversion AS fill_version FROM pg_extension WHERE extname = 'ordering' \gset
CREATE DATABASE upgrade_roles;
\c upgrade_roles
SET client_min_messages = warning;
CREATE EXTENSION ordering VERSION :'fill_version';
CREATE ROLE upgrade_producer;
CREATE ROLE upgrade_consumer;
CREATE ROLE upgrade_monitor;
CREATE ROLE upgrade_operator;
SELECT ordering.grant_producer('upgrade_producer'), ordering.grant_consumer('upgrade_consumer'),
       ordering.grant_monitor('upgrade_monitor'), ordering.grant_operator('upgrade_operator');
-- and a role granted only deliver() through a handler by hand: the
-- 5-argument one before 1.2, which replaces it with the 6-argument one,
-- whose on_error has a default
CREATE ROLE upgrade_handler_caller;
GRANT USAGE ON SCHEMA ordering TO upgrade_handler_caller;
SELECT format('GRANT EXECUTE ON FUNCTION %s TO upgrade_handler_caller',
              COALESCE(to_regprocedure('ordering.deliver(text, text, bigint, jsonb, regprocedure)'),
                       to_regprocedure('ordering.deliver(text, text, bigint, jsonb, regprocedure, text)')))
\gexec
GRANT CREATE ON SCHEMA public TO upgrade_producer;
