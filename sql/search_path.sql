-- search_path safety: a hostile schema placed before pg_catalog, full of
-- look-alike tables, functions and operators, changes nothing the extension
-- does.  Every result below is what the same calls give on a clean path.
\set VERBOSITY terse

CREATE SCHEMA evil;
-- look-alike tables
CREATE TABLE evil.outbox (LIKE ordering.outbox);
CREATE TABLE evil.sequences (LIKE ordering.sequences);
CREATE TABLE evil.positions (LIKE ordering.positions);
CREATE TABLE evil.parked (LIKE ordering.parked);
CREATE TABLE evil.gap_requests (LIKE ordering.gap_requests);
-- look-alike functions
CREATE FUNCTION evil.now() RETURNS timestamptz
    LANGUAGE sql AS $$ SELECT '2000-01-01 00:00:00+00'::pg_catalog.timestamptz $$;
CREATE FUNCTION evil.jsonb_build_object(VARIADIC "any") RETURNS jsonb
    LANGUAGE sql AS $$ SELECT '{"evil": true}'::pg_catalog.jsonb $$;
CREATE FUNCTION evil.always(bigint, bigint) RETURNS boolean
    LANGUAGE sql AS $$ SELECT true $$;
CREATE FUNCTION evil.always(text, text) RETURNS boolean
    LANGUAGE sql AS $$ SELECT true $$;
CREATE FUNCTION evil.never(bigint, bigint) RETURNS boolean
    LANGUAGE sql AS $$ SELECT false $$;
CREATE FUNCTION evil.minus(bigint, bigint) RETURNS bigint
    LANGUAGE sql AS $$ SELECT $1 OPERATOR(pg_catalog.-) $2 $$;
CREATE AGGREGATE evil.count(*) (SFUNC = pg_catalog.int8inc, STYPE = bigint,
                               INITCOND = '1000');
-- look-alike operators on bigint and text
CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.always);
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.always);
CREATE OPERATOR evil.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.never);
CREATE OPERATOR evil.> (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.never);
CREATE OPERATOR evil.<= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.never);
CREATE OPERATOR evil.>= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.never);
CREATE OPERATOR evil.+ (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.minus);
CREATE OPERATOR evil.- (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.minus);

CREATE TABLE projection (id text PRIMARY KEY, plan text, version bigint);
CREATE TRIGGER projection_newer_only BEFORE UPDATE ON projection
    FOR EACH ROW EXECUTE FUNCTION ordering.newer_only('version');
CREATE TABLE user_events (r text, s bigint);

-- The hostile schema comes before pg_catalog from here on.
SET search_path = evil, pg_catalog, public;
SELECT 1::bigint = 2::bigint AS "evil = is in force", 3::bigint < 4::bigint AS "evil < is in force";

-- producer side
SELECT ordering.emit('sp-1', 'e', '{"n": 1}'), ordering.emit('sp-1', 'e', '{"n": 2}'),
       ordering.emit('sp-2', 'e', '{"n": 3}');
SELECT ordering.emit('sp-1', 'e', '{"n": 4}', 9);     -- still an assertion
\echo :SQLSTATE
SELECT ordering.emit('sp-1', 'e', '{"n": 4}', 3);
SELECT ordering.next_sequence('sp', 'x'), ordering.next_sequence('sp', 'x');
SELECT ordering.last_sequence('ordering.outbox', 'sp-1'),
       ordering.last_sequence('ordering.outbox', 'sp-2'),
       ordering.last_sequence('ordering.outbox', 'nobody');
SELECT ordering.attach('user_events', 'r', 's');
INSERT INTO user_events (r) VALUES ('a'), ('a'), ('b');
SELECT r, s FROM user_events ORDER BY s, r;
SELECT pg_catalog.count(*) AS claimable FROM ordering.claim_unpublished(2);
SELECT ordering.mark_published(pg_catalog.array_agg(id))
  FROM ordering.outbox WHERE resource_id OPERATOR(pg_catalog.=) 'sp-1';
SELECT ordering.republish('sp-1', 2, 3);
SELECT ordering.purge_published('0 seconds');
SELECT resource_id, seq, published_at IS NULL AS unpublished,
       created_at OPERATOR(pg_catalog.>) '2001-01-01' AS real_now
  FROM ordering.outbox WHERE resource_id LIKE 'sp-%' ORDER BY id;

-- consumer side
SELECT ordering.apply_if_newer('c', 'r', 5), ordering.apply_if_newer('c', 'r', 4),
       ordering.apply_if_newer('c', 'r', 5), ordering.apply_if_newer('c', 'r', 6);
SELECT ordering.position('c', 'r');
SELECT * FROM ordering.deliver('d', 'r', 2, '{"s": 2}');
SELECT * FROM ordering.deliver('d', 'r', 3, '{"s": 3}');
SELECT * FROM ordering.deliver('d', 'r', 1, '{"s": 1}');
SELECT * FROM ordering.deliver('d', 'r', 1, '{"s": 1}');
SELECT * FROM ordering.deliver('d', 'r', 6, '{"s": 6}');
SELECT * FROM ordering.skip_gap('d', 'r');
SELECT ordering.position('d', 'r');
INSERT INTO projection VALUES ('p', 'basic', 5)
    ON CONFLICT (id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version;
INSERT INTO projection VALUES ('p', 'old', 4)
    ON CONFLICT (id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version;
INSERT INTO projection VALUES ('p', 'pro', 7)
    ON CONFLICT (id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version;
SELECT * FROM projection;

-- Nothing was read from or written to the look-alikes.
RESET search_path;
SELECT (SELECT count(*) FROM evil.outbox) + (SELECT count(*) FROM evil.sequences)
     + (SELECT count(*) FROM evil.positions) + (SELECT count(*) FROM evil.parked)
     + (SELECT count(*) FROM evil.gap_requests) AS rows_in_evil;
SELECT stream, resource_id, last_seq FROM ordering.sequences
 WHERE resource_id IN ('sp-1', 'sp-2', 'x', 'a', 'b') ORDER BY 1, 2;
SELECT consumer, resource_id, position FROM ordering.positions
 WHERE consumer IN ('c', 'd') ORDER BY 1;

SELECT ordering.detach('user_events');
DROP TABLE user_events, projection;
DROP SCHEMA evil CASCADE;
DELETE FROM ordering.outbox WHERE resource_id LIKE 'sp-%';
