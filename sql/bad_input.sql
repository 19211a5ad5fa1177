-- Hostile and odd input to every function and trigger of the contract.
--
-- Table-driven: each case is one SQL statement returning one value; it runs
-- in its own subtransaction and the outcome is printed as 'ok: <result>' or
-- '<SQLSTATE>: <message>'.  Each case names the SQLSTATE it must get
-- (the contract's where it says one, else the one documented here), and the
-- bookkeeping tables are compared before and after the cases that must fail.
\set VERBOSITY terse
SET client_min_messages = warning;

-- Start from empty consumer tables (other tests may leave rows behind).
DELETE FROM ordering.parked;
DELETE FROM ordering.gap_requests;

CREATE FUNCTION pg_temp.try(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    r text;
    st text;
    msg text;
BEGIN
    EXECUTE q INTO r;
    RETURN 'ok: ' || COALESCE(left(r, 70), 'NULL');
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
    -- long resource ids would make the messages long: cut them
    RETURN st || ': ' || left(regexp_replace(msg, '[0-9a-fx]{40,}', '...', 'g'), 110);
END
$$;

CREATE TEMP TABLE cases (n serial PRIMARY KEY, name text NOT NULL, expect text NOT NULL,
                         sql text NOT NULL, outcome text);
CREATE FUNCTION pg_temp.run_cases() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT n, sql FROM cases WHERE outcome IS NULL ORDER BY n LOOP
        UPDATE cases SET outcome = pg_temp.try(c.sql) WHERE n = c.n;
    END LOOP;
END
$$;

-------------------------------------------------------------------------------
-- Fixtures: state a wrong call could damage
-------------------------------------------------------------------------------
-- consumer 'bad', resource 'r': position 2, seqs 4 and 5 parked, a gap request
SELECT ordering.apply_if_newer('bad', 'r', 2);
SELECT count(*) FROM ordering.deliver('bad', 'r', 4, '{"n": 4}');
SELECT count(*) FROM ordering.deliver('bad', 'r', 5, '{"n": 5}');
INSERT INTO ordering.gap_requests
VALUES ('bad', 'r', 3, 3, 2, now(), now(), now(), 1);
-- producer: resource 'p' at seq 2
SELECT ordering.emit('bad-p', 'e', '{}') FROM generate_series(1, 2);
-- a projection with newer_only installed the right way
CREATE TABLE bad_projection (id int PRIMARY KEY, version bigint, note text, tversion text);
INSERT INTO bad_projection VALUES (1, 5, 'five', '5');
CREATE TRIGGER newer_only BEFORE UPDATE ON bad_projection
    FOR EACH ROW EXECUTE FUNCTION ordering.newer_only('version');
-- a user's table attached the right way
CREATE TABLE bad_attached (k text, v bigint, vi int, vt text);
SELECT ordering.attach('bad_attached', 'k', 'v');
INSERT INTO bad_attached (k) VALUES ('a');
-- tables with the triggers attached the wrong way (creating them is allowed;
-- firing them must fail)
CREATE TABLE wrong_way (k text, v bigint, version bigint);
INSERT INTO wrong_way VALUES ('a', 1, 1);
CREATE TRIGGER seq_after AFTER INSERT ON wrong_way
    FOR EACH ROW WHEN (NEW.k = 'after') EXECUTE FUNCTION ordering.sequence_trigger('k', 'v');
CREATE TRIGGER seq_stmt BEFORE INSERT ON wrong_way
    FOR EACH STATEMENT EXECUTE FUNCTION ordering.sequence_trigger('k', 'v');
CREATE TABLE wrong_way2 (k text, v bigint);
CREATE TRIGGER seq_update BEFORE UPDATE ON wrong_way2
    FOR EACH ROW EXECUTE FUNCTION ordering.sequence_trigger('k', 'v');
INSERT INTO wrong_way2 VALUES ('a', 1);
-- attached, then its columns changed under the trigger
CREATE TABLE changed_cols (k text, v bigint, k2 text, v2 bigint);
SELECT ordering.attach('changed_cols', 'k', 'v');
ALTER TABLE changed_cols DROP COLUMN k;
-- (an attached table's sequence column cannot be retyped: the companion
-- trigger's WHEN clause uses it; a bare trigger does not protect it)
CREATE TABLE changed_type (k text, v bigint);
CREATE TRIGGER seq_retyped BEFORE INSERT ON changed_type
    FOR EACH ROW EXECUTE FUNCTION ordering.sequence_trigger('k', 'v');
ALTER TABLE changed_type ALTER COLUMN v TYPE int;
CREATE TABLE wrong_args (k text, v bigint);
CREATE TRIGGER seq_noargs BEFORE INSERT ON wrong_args
    FOR EACH ROW EXECUTE FUNCTION ordering.sequence_trigger();
CREATE TABLE wrong_cols (k text, v bigint, vi int, vt text);
CREATE TRIGGER seq_nocol BEFORE INSERT ON wrong_cols
    FOR EACH ROW WHEN (NEW.k = 'nocol') EXECUTE FUNCTION ordering.sequence_trigger('k', 'nope');
CREATE TRIGGER seq_int BEFORE INSERT ON wrong_cols
    FOR EACH ROW WHEN (NEW.k = 'int') EXECUTE FUNCTION ordering.sequence_trigger('k', 'vi');
CREATE TRIGGER seq_text BEFORE INSERT ON wrong_cols
    FOR EACH ROW WHEN (NEW.k = 'text') EXECUTE FUNCTION ordering.sequence_trigger('k', 'vt');
CREATE TABLE wrong_newer (id int PRIMARY KEY, version bigint, vt text);
INSERT INTO wrong_newer VALUES (1, 1, '1');
CREATE TRIGGER newer_after AFTER UPDATE ON wrong_newer
    FOR EACH ROW WHEN (NEW.id = 1 AND NEW.version = 100) EXECUTE FUNCTION ordering.newer_only('version');
CREATE TRIGGER newer_insert BEFORE INSERT ON wrong_newer
    FOR EACH ROW WHEN (NEW.id = 2) EXECUTE FUNCTION ordering.newer_only('version');
CREATE TRIGGER newer_stmt BEFORE DELETE ON wrong_newer
    FOR EACH STATEMENT EXECUTE FUNCTION ordering.newer_only('version');
CREATE TRIGGER newer_noargs BEFORE UPDATE ON wrong_newer
    FOR EACH ROW WHEN (NEW.version = 200) EXECUTE FUNCTION ordering.newer_only();
CREATE TRIGGER newer_nocol BEFORE UPDATE ON wrong_newer
    FOR EACH ROW WHEN (NEW.version = 300) EXECUTE FUNCTION ordering.newer_only('nope');
CREATE TRIGGER newer_text BEFORE UPDATE ON wrong_newer
    FOR EACH ROW WHEN (NEW.version = 400) EXECUTE FUNCTION ordering.newer_only('vt');
-- a handler with the wrong signature
CREATE FUNCTION bad_handler(int) RETURNS void LANGUAGE sql AS '';
SET ordering.max_parked_per_resource = 2;

-- Fingerprint of everything the functions may change.
CREATE VIEW pg_temp.fingerprint AS
SELECT 'sequences' AS tbl, count(*) AS n,
       md5(string_agg(format('%s|%s|%s', stream, resource_id, last_seq), ',' ORDER BY stream, resource_id)) AS hash
  FROM ordering.sequences
UNION ALL
SELECT 'outbox', count(*),
       md5(string_agg(format('%s|%s|%s|%s|%s', id, resource_id, seq, payload, published_at), ',' ORDER BY id))
  FROM ordering.outbox
UNION ALL
SELECT 'positions', count(*),
       md5(string_agg(format('%s|%s|%s', consumer, resource_id, position), ',' ORDER BY consumer, resource_id))
  FROM ordering.positions
UNION ALL
SELECT 'parked', count(*),
       md5(string_agg(format('%s|%s|%s|%s', consumer, resource_id, seq, payload), ',' ORDER BY consumer, resource_id, seq))
  FROM ordering.parked
UNION ALL
SELECT 'gap_requests', count(*),
       md5(string_agg(format('%s|%s|%s|%s', consumer, resource_id, missing_from, missing_to), ',' ORDER BY consumer, resource_id))
  FROM ordering.gap_requests
UNION ALL
SELECT 'projection', count(*), md5(string_agg(format('%s|%s', id, version), ',' ORDER BY id))
  FROM bad_projection
UNION ALL
SELECT 'attached', count(*), md5(string_agg(format('%s|%s', k, v), ',' ORDER BY k, v))
  FROM bad_attached;

CREATE TEMP TABLE before AS SELECT * FROM pg_temp.fingerprint;

-------------------------------------------------------------------------------
-- Part 1: calls that must fail and change nothing
-------------------------------------------------------------------------------
INSERT INTO cases (name, expect, sql) VALUES
-- apply_if_newer
('apply: NULL consumer',           '22004', $$SELECT ordering.apply_if_newer(NULL, 'r', 9)$$),
('apply: NULL resource',           '22004', $$SELECT ordering.apply_if_newer('bad', NULL, 9)$$),
('apply: NULL seq',                '22004', $$SELECT ordering.apply_if_newer('bad', 'r', NULL)$$),
('apply: all NULL',                '22004', $$SELECT ordering.apply_if_newer(NULL, NULL, NULL)$$),
('apply: seq 0',                   '22023', $$SELECT ordering.apply_if_newer('bad', 'r', 0)$$),
('apply: seq -1',                  '22023', $$SELECT ordering.apply_if_newer('bad', 'r', -1)$$),
('apply: seq -2^63',               '22023', $$SELECT ordering.apply_if_newer('bad', 'r', -9223372036854775808)$$),
('apply: seq 2^63 (no bigint)',    '22003', $$SELECT ordering.apply_if_newer('bad', 'r', '9223372036854775808'::bigint)$$),
('apply: empty consumer',          '22023', $$SELECT ordering.apply_if_newer('', 'r', 9)$$),
('apply: a NUL in text',           '54000', $$SELECT ordering.apply_if_newer('bad', 'r' || chr(0), 9)$$),
('apply: a NUL as escape',         '42601', $$SELECT ordering.apply_if_newer('bad', E'r\u0000', 9)$$),
('apply: invalid UTF-8 bytes',     '22021', $$SELECT ordering.apply_if_newer('bad', convert_from('\xc328'::bytea, 'UTF8'), 9)$$),
('apply: incompressible 3000',     '22023', $$SELECT ordering.apply_if_newer('bad', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 94) i), 9)$$),
('apply: incompressible 100000',   '22023', $$SELECT ordering.apply_if_newer('bad', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 3125) i), 9)$$),
-- position
('position: NULL consumer',        '22004', $$SELECT ordering.position(NULL, 'r')$$),
('position: NULL resource',        '22004', $$SELECT ordering.position('bad', NULL)$$),
('position: empty consumer',       '22023', $$SELECT ordering.position('', 'r')$$),
-- deliver
('deliver: NULL consumer',         '22004', $$SELECT count(*) FROM ordering.deliver(NULL, 'r', 3, '{}')$$),
('deliver: NULL resource',         '22004', $$SELECT count(*) FROM ordering.deliver('bad', NULL, 3, '{}')$$),
('deliver: NULL seq',              '22004', $$SELECT count(*) FROM ordering.deliver('bad', 'r', NULL, '{}')$$),
('deliver: seq 0',                 '22023', $$SELECT count(*) FROM ordering.deliver('bad', 'r', 0, '{}')$$),
('deliver: seq -1',                '22023', $$SELECT count(*) FROM ordering.deliver('bad', 'r', -1, '{}')$$),
('deliver: seq -2^63',             '22023', $$SELECT count(*) FROM ordering.deliver('bad', 'r', -9223372036854775808, '{}')$$),
('deliver: empty consumer',        '22023', $$SELECT count(*) FROM ordering.deliver('', 'r', 3, '{}')$$),
('deliver: over the parked cap',   '54000', $$SELECT count(*) FROM ordering.deliver('bad', 'r', 7, '{}')$$),
('deliver: cap, seq 2^63-1',       '54000', $$SELECT count(*) FROM ordering.deliver('bad', 'r', 9223372036854775807, '{}')$$),
('deliver: incompressible 3000',   '22023', $$SELECT count(*) FROM ordering.deliver('bad', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 94) i), 2, '{}')$$),
('deliver: incompressible id',     '22023', $$SELECT count(*) FROM ordering.deliver('bad', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 3125) i), 2, '{}')$$),
('deliver: payload not jsonb',     '22P02', $$SELECT count(*) FROM ordering.deliver('bad', 'r', 3, '{not json')$$),
('deliver: handler NULL consumer', '22004', $$SELECT ordering.deliver(NULL, 'r', 3, '{}', 'bad_handler(int)')$$),
('deliver: handler NULL seq',      '22004', $$SELECT ordering.deliver('bad', 'r', NULL, '{}', 'bad_handler(int)')$$),
('deliver: handler unknown',       '42883', $$SELECT ordering.deliver('bad', 'r', 3, '{}', 'no_such_handler(text, bigint, jsonb)')$$),
('deliver: handler wrong args',    '22023', $$SELECT ordering.deliver('bad', 'r', 3, '{}', 'bad_handler(int)')$$),
('deliver: handler by oid 0',      '42883', $$SELECT ordering.deliver('bad', 'r', 3, '{}', 0::oid::regprocedure)$$),
-- dead_letter: the reason is the dead letter's message
('dead_letter: NULL reason',       '22004', $$SELECT ordering.dead_letter('bad', 'r', 9, '{}', NULL)$$),
-- the grant functions: no GRANT is built for no role
('grant_producer: NULL role',      '22004', $$SELECT ordering.grant_producer(NULL)$$),
('grant_consumer: NULL role',      '22004', $$SELECT ordering.grant_consumer(NULL)$$),
('grant_operator: NULL role',      '22004', $$SELECT ordering.grant_operator(NULL)$$),
('grant_monitor: NULL role',       '22004', $$SELECT ordering.grant_monitor(NULL)$$),
-- skip_gap
('skip_gap: NULL consumer',        '22004', $$SELECT count(*) FROM ordering.skip_gap(NULL, 'r')$$),
('skip_gap: NULL resource',        '22004', $$SELECT count(*) FROM ordering.skip_gap('bad', NULL)$$),
('skip_gap: empty consumer',       '22023', $$SELECT count(*) FROM ordering.skip_gap('', 'r')$$),
-- producer: counters
('next_sequence: NULL stream',     '22004', $$SELECT ordering.next_sequence(NULL, 'x')$$),
('next_sequence: NULL resource',   '23502', $$SELECT ordering.next_sequence('bad-stream', NULL)$$),
('next_sequence: incompressible',  '22023', $$SELECT ordering.next_sequence('bad-stream', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 3125) i))$$),
('last_sequence: NULL stream',     '22004', $$SELECT ordering.last_sequence(NULL, 'x')$$),
('last_sequence: NULL resource',   '23502', $$SELECT ordering.last_sequence('bad-stream', NULL)$$),
-- producer: emit and the outbox
('emit: NULL resource',            '23502', $$SELECT ordering.emit(NULL, 'e', '{}')$$),
('emit: NULL event_type',          '23502', $$SELECT ordering.emit('bad-p', NULL, '{}')$$),
('emit: NULL payload',             '23502', $$SELECT ordering.emit('bad-p', 'e', NULL)$$),
('emit: expected_seq 0',           '40001', $$SELECT ordering.emit('bad-p', 'e', '{}', 0)$$),
('emit: expected_seq -1',          '40001', $$SELECT ordering.emit('bad-p', 'e', '{}', -1)$$),
('emit: expected_seq taken',       '40001', $$SELECT ordering.emit('bad-p', 'e', '{}', 2)$$),
('emit: expected_seq ahead',       '40001', $$SELECT ordering.emit('bad-p', 'e', '{}', 4)$$),
('emit: expected_seq 2^63-1',      '40001', $$SELECT ordering.emit('bad-p', 'e', '{}', 9223372036854775807)$$),
('outbox: NULL resource',          '23502', $$INSERT INTO ordering.outbox (resource_id, event_type, payload) VALUES (NULL, 'e', '{}') RETURNING seq$$),
('outbox: seq asserted wrongly',   '40001', $$INSERT INTO ordering.outbox (resource_id, seq, event_type, payload) VALUES ('bad-p', 1, 'e', '{}') RETURNING seq$$),
('outbox: seq asserted 0',         '40001', $$INSERT INTO ordering.outbox (resource_id, seq, event_type, payload) VALUES ('bad-p', 0, 'e', '{}') RETURNING seq$$),
('outbox: seq asserted negative',  '40001', $$INSERT INTO ordering.outbox (resource_id, seq, event_type, payload) VALUES ('bad-p', -3, 'e', '{}') RETURNING seq$$),
('outbox: second row mismatches',  '40001', $$WITH i AS (INSERT INTO ordering.outbox (resource_id, seq, event_type, payload) VALUES ('bad-p', 3, 'e', '{}'), ('bad-p', 3, 'e', '{}') RETURNING seq) SELECT string_agg(seq::text, ',') FROM i$$),
('outbox: incompressible id',      '22023', $$SELECT ordering.emit((SELECT string_agg(md5(i::text), '') FROM generate_series(1, 3125) i), 'e', '{}')$$),
-- producer: relay side
('claim: NULL batch',              '22004', $$SELECT count(*) FROM ordering.claim_unpublished(NULL)$$),
('claim: batch -1',                '22023', $$SELECT count(*) FROM ordering.claim_unpublished(-1)$$),
('republish: NULL resource',       '22004', $$SELECT ordering.republish(NULL, 1, 2)$$),
('republish: NULL from',           '22004', $$SELECT ordering.republish('bad-p', NULL, 2)$$),
('republish: from 0',              '22023', $$SELECT ordering.republish('bad-p', 0, 2)$$),
('republish: to below from',       '22023', $$SELECT ordering.republish('bad-p', 2, 1)$$),
('purge: NULL',                    '22004', $$SELECT ordering.purge_published(NULL)$$),
('purge: negative interval',       '22023', $$SELECT ordering.purge_published('-1 year')$$),
('mark_published: NULL',           '22004', $$SELECT ordering.mark_published(NULL)$$),
-- attach / detach
('attach: NULL table',             '22004', $$SELECT ordering.attach(NULL)$$),
('attach: no such table',          '42P01', $$SELECT ordering.attach('no_such_table')$$),
('attach: no such column',         '42703', $$SELECT ordering.attach('wrong_cols', 'k', 'nope')$$),
('attach: seq column int',         '42804', $$SELECT ordering.attach('wrong_cols', 'k', 'vi')$$),
('attach: seq column text',        '42804', $$SELECT ordering.attach('wrong_cols', 'k', 'vt')$$),
('attach: NULL column name',       '22004', $$SELECT ordering.attach('wrong_cols', NULL, 'v')$$),
('attach: to a view',              '42809', $$SELECT ordering.attach('ordering.stats')$$),
('attach: empty stream',           '22023', $$SELECT ordering.attach('wrong_cols', 'k', 'v', '')$$),
('attach: twice',                  '42710', $$SELECT ordering.attach('bad_attached', 'k', 'v')$$),
('detach: not attached',           '42704', $$SELECT ordering.detach('wrong_cols')$$),
('detach: NULL table',             '22004', $$SELECT ordering.detach(NULL)$$),
('attach: one column for both',    '22023', $$SELECT ordering.attach('wrong_cols', 'v', 'v')$$),
('attach: a dropped relation OID', '42P01', $$SELECT ordering.attach(0::regclass)$$),
-- sequence_trigger used the wrong way
('trigger: called as a function',  '39P01', $$SELECT ordering.sequence_trigger()$$),
('trigger: AFTER INSERT',          '39P01', $$INSERT INTO wrong_way (k) VALUES ('after') RETURNING v$$),
('trigger: FOR EACH STATEMENT',    '39P01', $$INSERT INTO wrong_way (k) VALUES ('stmt') RETURNING v$$),
('trigger: BEFORE UPDATE',         '39P01', $$UPDATE wrong_way2 SET v = 2 RETURNING v$$),
('trigger: no arguments',          '39P01', $$INSERT INTO wrong_args (k) VALUES ('a') RETURNING v$$),
('trigger: unknown column',        '42703', $$INSERT INTO wrong_cols (k) VALUES ('nocol') RETURNING v$$),
('trigger: int sequence column',   '42804', $$INSERT INTO wrong_cols (k) VALUES ('int') RETURNING vi$$),
('trigger: text sequence column',  '42804', $$INSERT INTO wrong_cols (k) VALUES ('text') RETURNING vt$$),
('trigger: resource column gone',  '42703', $$INSERT INTO changed_cols (k2) VALUES ('a') RETURNING v$$),
('trigger: seq column now int',    '42804', $$INSERT INTO changed_type (k) VALUES ('a') RETURNING v$$),
('trigger: NULL resource',         '23502', $$INSERT INTO bad_attached (k) VALUES (NULL) RETURNING v$$),
('trigger: asserted 0',            '40001', $$INSERT INTO bad_attached (k, v) VALUES ('a', 0) RETURNING v$$),
('trigger: asserted stale',        '40001', $$INSERT INTO bad_attached (k, v) VALUES ('a', 1) RETURNING v$$),
-- newer_only used the wrong way
('newer_only: as a function',      '39P01', $$SELECT ordering.newer_only()$$),
('newer_only: AFTER UPDATE',       '39P01', $$UPDATE wrong_newer SET version = 100 WHERE id = 1 RETURNING version$$),
('newer_only: BEFORE INSERT',      '39P01', $$INSERT INTO wrong_newer VALUES (2, 1) RETURNING version$$),
('newer_only: FOR EACH STATEMENT', '39P01', $$DELETE FROM wrong_newer WHERE id = 1 RETURNING version$$),
('newer_only: no arguments',       '39P01', $$UPDATE wrong_newer SET version = 200 WHERE id = 1 RETURNING version$$),
('newer_only: unknown column',     '42703', $$UPDATE wrong_newer SET version = 300 WHERE id = 1 RETURNING version$$),
('newer_only: text column',        '42804', $$UPDATE wrong_newer SET version = 400 WHERE id = 1 RETURNING version$$),
('newer_only: NULL new version',   '22004', $$UPDATE bad_projection SET version = NULL WHERE id = 1 RETURNING version$$);

SELECT pg_temp.run_cases();
SELECT n, name, outcome, CASE WHEN outcome LIKE expect || ':%' THEN '' ELSE 'WRONG, expected ' || expect END AS verdict
  FROM cases ORDER BY n;

-- Nothing changed.
-- (row counts as differences: other tests leave rows of their own)
SELECT b.tbl, a.n - b.n AS rows_changed, b.hash = a.hash AS same
  FROM before b JOIN pg_temp.fingerprint a USING (tbl) ORDER BY 1;

-------------------------------------------------------------------------------
-- Part 2: odd input that is valid; what it does
-------------------------------------------------------------------------------
RESET ordering.max_parked_per_resource;
-- counters and positions at the top of bigint
INSERT INTO ordering.sequences VALUES ('bad-stream', 'top', 9223372036854775806);
INSERT INTO ordering.positions VALUES ('bad', 'top', 9223372036854775805);
CREATE TEMP TABLE big AS
SELECT jsonb_build_object('blob', string_agg(md5(i::text), '')) AS payload
  FROM generate_series(1, 125000) i;   -- 4 MB of incompressible text
CREATE FUNCTION good_handler(resource_id text, seq bigint, payload jsonb) RETURNS void
LANGUAGE sql AS 'SELECT NULL';

INSERT INTO cases (name, expect, sql) VALUES
-- the last bigint
('next_sequence: to 2^63-1',       'ok',    $$SELECT ordering.next_sequence('bad-stream', 'top')$$),
('next_sequence: past 2^63-1',     '2200H', $$SELECT ordering.next_sequence('bad-stream', 'top')$$),
('last_sequence: at 2^63-1',       'ok',    $$SELECT ordering.last_sequence('bad-stream', 'top')$$),
('deliver: 2^63-1 parks',          'ok',    $$SELECT string_agg(seq::text, ',') FROM ordering.deliver('bad', 'top', 9223372036854775807, '{"last": true}')$$),
('deliver: 2^63-2 drains 2^63-1',  'ok',    $$SELECT string_agg(seq::text, ',') FROM ordering.deliver('bad', 'top', 9223372036854775806, '{}')$$),
('deliver: 2^63-1 duplicate',      'ok',    $$SELECT count(*) FROM ordering.deliver('bad', 'top', 9223372036854775807, '{}')$$),
('apply: 2^63-1 is newer',         'ok',    $$SELECT ordering.apply_if_newer('bad', 'top-state', 9223372036854775807)$$),
('apply: 2^63-1 again',            'ok',    $$SELECT ordering.apply_if_newer('bad', 'top-state', 9223372036854775807)$$),
('skip_gap: to 2^63-1',            'ok',    $$SELECT ordering.deliver('bad', 'top-skip', 9223372036854775807, '{}', 'good_handler(text, bigint, jsonb)')::text || ',' || (SELECT string_agg(seq::text, ',') FROM ordering.skip_gap('bad', 'top-skip'))$$),
('position: after skip to 2^63-1', 'ok',    $$SELECT ordering.position('bad', 'top-skip')$$),
-- odd resource ids and consumer names
('apply: empty resource',          'ok',    $$SELECT ordering.apply_if_newer('bad', '', 1)$$),
('deliver: empty resource',        'ok',    $$SELECT string_agg(seq::text, ',') FROM ordering.deliver('bad-step', '', 1, '{}')$$),
('next_sequence: empty both',      'ok',    $$SELECT ordering.next_sequence('', '')$$),
('emit: empty resource',           'ok',    $$SELECT ordering.emit('', 'e', '{}')$$),
('apply: control character',       'ok',    $$SELECT ordering.apply_if_newer('bad', E'\x01', 1)$$),
('apply: trailing blank is other', 'ok',    $$SELECT ordering.apply_if_newer('bad', E'\x01 ', 1)$$),
('apply: odd unicode',             'ok',    $$SELECT ordering.apply_if_newer('bad', U&'\202E\FFFF\+01F600e\0301', 1)$$),
('apply: composed form is other',  'ok',    $$SELECT ordering.apply_if_newer('bad', U&'\202E\FFFF\+01F600\00E9', 1)$$),
('apply: a 1024-byte id',          'ok',    $$SELECT ordering.apply_if_newer('bad', repeat('z', 1024), 1)$$),
('apply: a 1025-byte id',          '22023', $$SELECT ordering.apply_if_newer('bad', repeat('z', 1025), 1)$$),
('apply: long compressible id',    '22023', $$SELECT ordering.apply_if_newer('bad', repeat('x', 100000), 7)$$),
('position: long compressible id', '22023', $$SELECT ordering.position('bad', repeat('x', 100000))$$),
('deliver: long id parks',         '22023', $$SELECT count(*) FROM ordering.deliver('bad', repeat('x', 100000), 9, '{}')$$),
('emit: long compressible id',     '22023', $$SELECT ordering.emit(repeat('y', 100000), 'e', '{}')$$),
('apply: quoting consumer',        'ok',    $$SELECT ordering.apply_if_newer(E'we"ird\\con\nsumer', 'r', 1)$$),
-- unknown consumers and resources
('position: unknown',              'ok',    $$SELECT ordering.position('nobody', 'nothing')$$),
('skip_gap: nothing parked',       'ok',    $$SELECT count(*) FROM ordering.skip_gap('nobody', 'nothing')$$),
('skip_gap: position, no parked',  'ok',    $$SELECT count(*) FROM ordering.skip_gap('bad', 'top-state')$$),
('republish: unknown resource',    'ok',    $$SELECT ordering.republish('nobody', 1, 5)$$),
('republish: past the end',        'ok',    $$SELECT ordering.republish('bad-p', 2, 9223372036854775807)$$),
('claim: batch 0',                 'ok',    $$SELECT count(*) FROM ordering.claim_unpublished(0)$$),
('mark_published: empty',          'ok',    $$SELECT ordering.mark_published('{}')$$),
('mark_published: NULLs, unknown', 'ok',    $$SELECT ordering.mark_published(ARRAY[NULL, -1, 0]::bigint[])$$),
-- huge payloads
('deliver: 4 MB payload parks',    'ok',    $$SELECT count(*) FROM ordering.deliver('bad', 'huge', 2, (SELECT payload FROM big))$$),
('deliver: 4 MB payload drains',   'ok',    $$SELECT string_agg(format('%s:%s', seq, length(payload->>'blob')), ',') FROM ordering.deliver('bad', 'huge', 1, (SELECT payload FROM big))$$),
('emit: 4 MB payload',             'ok',    $$SELECT ordering.emit('huge', 'e', (SELECT payload FROM big))$$),
('deliver: NULL payload',          'ok',    $$SELECT string_agg(format('%s:%s', seq, COALESCE(payload::text, 'NULL')), ',') FROM ordering.deliver('bad', 'null-payload', 1, NULL)$$),
-- triggers: an equal version is skipped, an int resource column works
('newer_only: equal version',      'ok',    $$WITH u AS (UPDATE bad_projection SET note = 'again' WHERE id = 1 RETURNING 1) SELECT count(*) FROM u$$),
('newer_only: lower version',      'ok',    $$WITH u AS (UPDATE bad_projection SET version = 4, note = 'older' WHERE id = 1 RETURNING 1) SELECT count(*) FROM u$$),
('newer_only: higher version',     'ok',    $$WITH u AS (UPDATE bad_projection SET version = 6, note = 'six' WHERE id = 1 RETURNING 1) SELECT count(*) FROM u$$),
('sweep_gaps: nothing past due',   'ok',    $$SELECT count(*) FROM ordering.sweep_gaps()$$);

SELECT pg_temp.run_cases();
SELECT n, name, outcome, CASE WHEN outcome LIKE expect || ':%' THEN '' ELSE 'WRONG, expected ' || expect END AS verdict
  FROM cases WHERE n > (SELECT max(n) FROM cases WHERE expect <> 'ok' AND name LIKE 'newer_only: NULL%')
 ORDER BY n;

-- What part 2 left behind: resources keyed byte by byte ("C" collation), the
-- other bytes than printable ASCII shown as '?' here and in hex.
SELECT consumer, left(regexp_replace(resource_id, '[^ -~]', '?', 'g'), 12) AS resource, length(resource_id) AS len,
       encode(convert_to(left(resource_id, 6), 'UTF8'), 'hex') AS first_bytes, position
  FROM ordering.positions WHERE consumer IN ('bad', 'bad-step') ORDER BY resource_id COLLATE "C", consumer;
SELECT left(resource_id, 12) AS resource, length(resource_id) AS len, seq, length(payload::text) AS payload_len
  FROM ordering.parked ORDER BY 1, 3;
SELECT stream, left(resource_id, 12) AS resource, last_seq
  FROM ordering.sequences WHERE stream IN ('bad-stream', '') ORDER BY 1, 2;
SELECT left(resource_id, 12) AS resource, seq, length(payload::text) AS payload_len
  FROM ordering.outbox WHERE resource_id IN ('', 'huge') OR resource_id LIKE 'yyy%' ORDER BY 1, 2;
SELECT id, version, note FROM bad_projection;
-- The metrics escape a consumer name with a quote, a backslash and a newline.
SELECT line FROM regexp_split_to_table(ordering.metrics(), E'\n') AS line
 WHERE line LIKE 'ordering_events_consumed_total{consumer="we%';

-- Clean up what other tests might trip over.
DELETE FROM ordering.parked;
DELETE FROM ordering.gap_requests;
DELETE FROM ordering.positions WHERE consumer IN ('bad', 'bad-step') OR consumer LIKE 'we"ird%';
DELETE FROM ordering.outbox WHERE resource_id IN ('', 'huge', 'bad-p') OR resource_id LIKE 'yyy%';
DELETE FROM ordering.sequences WHERE stream IN ('bad-stream', '', 'public.bad_attached');
DROP VIEW pg_temp.fingerprint;
DROP TABLE bad_projection, bad_attached, changed_cols, changed_type, wrong_way, wrong_way2, wrong_args, wrong_cols, wrong_newer;
DROP FUNCTION bad_handler(int), good_handler(text, bigint, jsonb);
