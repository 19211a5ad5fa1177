-- search_path safety of the gap sweep and the statistics: a hostile schema
-- placed before pg_catalog, in a fresh session (so the sweep prepares its
-- statements under it), full of look-alike tables, functions and operators,
-- changes nothing.  Every result is what a clean path gives.
\set VERBOSITY terse
DELETE FROM ordering.parked;
DELETE FROM ordering.positions;
DELETE FROM ordering.gap_requests;
SELECT ordering.stats_reset();

CREATE SCHEMA evil;
CREATE TABLE evil.parked (LIKE ordering.parked);
CREATE TABLE evil.positions (LIKE ordering.positions);
CREATE TABLE evil.gap_requests (LIKE ordering.gap_requests);
CREATE FUNCTION evil.now() RETURNS timestamptz
    LANGUAGE sql AS $$ SELECT '2000-01-01 00:00:00+00'::pg_catalog.timestamptz $$;
CREATE FUNCTION evil.row_to_json(anyelement) RETURNS json
    LANGUAGE sql AS $$ SELECT '{"evil": true}'::pg_catalog.json $$;
CREATE FUNCTION evil.replace(text, text, text) RETURNS text
    LANGUAGE sql AS $$ SELECT 'evil'::pg_catalog.text $$;
CREATE FUNCTION evil.always(bigint, bigint) RETURNS boolean
    LANGUAGE sql AS $$ SELECT true $$;
CREATE FUNCTION evil.always(text, text) RETURNS boolean
    LANGUAGE sql AS $$ SELECT true $$;
CREATE FUNCTION evil.never(bigint, bigint) RETURNS boolean
    LANGUAGE sql AS $$ SELECT false $$;
CREATE FUNCTION evil.never(timestamptz, timestamptz) RETURNS boolean
    LANGUAGE sql AS $$ SELECT false $$;
CREATE FUNCTION evil.minus(bigint, bigint) RETURNS bigint
    LANGUAGE sql AS $$ SELECT $1 OPERATOR(pg_catalog.-) $2 $$;
CREATE FUNCTION evil.cat(text, text) RETURNS text
    LANGUAGE sql AS $$ SELECT 'evil'::pg_catalog.text $$;
CREATE AGGREGATE evil.count(*) (SFUNC = pg_catalog.int8inc, STYPE = bigint,
                               INITCOND = '1000');
CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.always);
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.always);
CREATE OPERATOR evil.> (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.never);
CREATE OPERATOR evil.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.never);
CREATE OPERATOR evil.>= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.never);
CREATE OPERATOR evil.+ (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.minus);
CREATE OPERATOR evil.- (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.minus);
CREATE OPERATOR evil.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.cat);

INSERT INTO ordering.positions VALUES ('c', 'r1', 1);
INSERT INTO ordering.parked (consumer, resource_id, seq, payload, parked_at) VALUES
    ('c', 'r1', 4, '{}', '2020-01-01 00:00:00+00'),
    ('c', 'r1', 5, '{}', '2020-01-01 00:00:00+00'),
    ('c', 'r2', 2, '{}', '2020-01-01 00:00:00+00');

-- a fresh session with the hostile schema first
\c
SET search_path = evil, pg_catalog, public;
SET ordering.gap_deadline = '60s';
SELECT 1::bigint = 2::bigint AS "evil = is in force";
SELECT consumer, resource_id, missing_from, missing_to, parked_count,
       first_parked_at OPERATOR(pg_catalog.=) '2020-01-01 00:00:00+00' AS first_ok,
       attempts
  FROM ordering.sweep_gaps();
-- within the backoff: nothing
SELECT pg_catalog.count(*) FROM ordering.sweep_gaps();
SELECT consumer, resource_id, missing_from, missing_to, parked_count
  FROM ordering.open_gaps ORDER BY 1, 2;
SELECT consumer, gaps_escalated, parked_current, reorder_distance_buckets
  FROM ordering.stats;
-- (the gap age counts from 2020: shown as whether it is over three years)
SELECT CASE WHEN line LIKE 'ordering_oldest_gap_age_seconds%'
            THEN pg_catalog.split_part(line, ' ', 1) OPERATOR(pg_catalog.||) ' '
                 OPERATOR(pg_catalog.||)
                 (pg_catalog.split_part(line, ' ', 2)::pg_catalog.numeric
                  OPERATOR(pg_catalog.>) 94608000)::pg_catalog.text
            ELSE line END AS line
  FROM pg_catalog.regexp_split_to_table(ordering.metrics(), E'\n') AS line
 WHERE line LIKE '%consumer="c"%' AND line NOT LIKE '%reorder%';

-- nothing was read from or written to the look-alikes
RESET search_path;
SELECT (SELECT count(*) FROM evil.parked) + (SELECT count(*) FROM evil.positions)
     + (SELECT count(*) FROM evil.gap_requests) AS rows_in_evil;
SELECT consumer, resource_id, missing_from, missing_to, attempts
  FROM ordering.gap_requests ORDER BY 1, 2;

DROP SCHEMA evil CASCADE;
DELETE FROM ordering.parked;
DELETE FROM ordering.positions;
DELETE FROM ordering.gap_requests;
