-- ordering 1.0 -> 1.1.
--
-- A fresh CREATE EXTENSION runs ordering--1.0.sql and then this script, so
-- an upgraded database and a new one are made by the same statements.
-- Written search-path-proof, like the 1.0 script.

\echo Use "ALTER EXTENSION ordering UPDATE TO '1.1'" to load this file. \quit

-------------------------------------------------------------------------------
-- Dead letters: a poison event blocks only its own (consumer, resource)
-------------------------------------------------------------------------------

-- At most one dead letter per (consumer, resource): the event whose handling
-- failed, kept with the error.  While it is here the resource is blocked at
-- its seq: later events park behind it, a redelivery of it is a duplicate.
CREATE TABLE ordering.dead_letter_events (
    consumer    text COLLATE "C" NOT NULL,
    resource_id text COLLATE "C" NOT NULL,
    seq         bigint NOT NULL CHECK (seq OPERATOR(pg_catalog.>) 0),
    payload     jsonb,
    sqlstate    text,
    message     text,
    detail      text,
    failed_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    attempts    integer NOT NULL DEFAULT 1 CHECK (attempts OPERATOR(pg_catalog.>) 0),
    PRIMARY KEY (consumer, resource_id)
);
COMMENT ON TABLE ordering.dead_letter_events IS
    'The dead letter of each blocked (consumer, resource): the event whose handling failed, with its error; see the view ordering.dead_letters';
SELECT pg_catalog.pg_extension_config_dump('ordering.dead_letter_events', '');

CREATE VIEW ordering.dead_letters AS
SELECT d.consumer, d.resource_id, d.seq, d.payload, d.sqlstate, d.message,
       d.failed_at, d.attempts,
       (SELECT pg_catalog.count(*) FROM ordering.parked p
         WHERE p.consumer OPERATOR(pg_catalog.=) d.consumer
           AND p.resource_id OPERATOR(pg_catalog.=) d.resource_id
           AND p.seq OPERATOR(pg_catalog.>) d.seq) AS parked_behind,
       d.detail
  FROM ordering.dead_letter_events d;
COMMENT ON VIEW ordering.dead_letters IS
    'One row per dead letter: the event that blocks its (consumer, resource), its error, how often it was tried, and how many events wait behind it';

-------------------------------------------------------------------------------
-- Failover-safe publishing (issue 18)
-------------------------------------------------------------------------------

-- A relay calls it after reading what it will publish and before publishing
-- it (claim_unpublished(..., replicated => true) does): it returns once every
-- connected standby has flushed the WAL of everything the caller has seen.
CREATE FUNCTION ordering.wait_for_standbys(timeout interval DEFAULT '10s')
    RETURNS pg_catalog.pg_lsn
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_wait_for_standbys';
COMMENT ON FUNCTION ordering.wait_for_standbys(interval) IS
    'Waits until every connected streaming standby has flushed the WAL of everything this transaction has seen, and returns that WAL position; SQLSTATE 55000 when that has not happened within the timeout';
REVOKE EXECUTE ON FUNCTION ordering.wait_for_standbys(interval) FROM PUBLIC;

-- claim_unpublished gains replicated and timeout.  An added overload would
-- make claim_unpublished(100) ambiguous, so the 1.0 function is replaced;
-- every call it accepted means what it meant.
CREATE FUNCTION ordering.claim_unpublished(batch_size integer DEFAULT 100,
                                           replicated boolean DEFAULT false,
                                           timeout interval DEFAULT '10s')
    RETURNS SETOF ordering.outbox
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF batch_size IS NULL THEN
        RAISE EXCEPTION 'batch_size must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF batch_size OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'batch_size must not be negative, got %', batch_size
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF replicated IS NULL OR timeout IS NULL THEN
        RAISE EXCEPTION 'replicated and timeout must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF timeout OPERATOR(pg_catalog.<) '0'::pg_catalog.interval THEN
        RAISE EXCEPTION 'timeout must not be negative'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The rows are handed to the caller only when the function returns.
    RETURN QUERY
    SELECT o.* FROM ordering.outbox o
     WHERE o.published_at IS NULL
     ORDER BY o.id
     LIMIT batch_size
       FOR UPDATE SKIP LOCKED;
    -- Every commit whose rows were just read or locked is in the WAL before
    -- this point: wait until the standbys have it (see wait_for_standbys).
    IF replicated AND FOUND THEN
        PERFORM ordering.wait_for_standbys(timeout);
    END IF;
END
$$;
COMMENT ON FUNCTION ordering.claim_unpublished(integer, boolean, interval) IS
    'For relays: up to batch_size unpublished outbox rows, locked until the end of the caller''s transaction and skipped by other relays; with replicated, only once every connected standby has flushed them (SQLSTATE 55000 after timeout)';
REVOKE EXECUTE ON FUNCTION ordering.claim_unpublished(integer, boolean, interval) FROM PUBLIC;

-- An upgraded database keeps who may claim: whoever could execute the 1.0
-- function may execute the new one.  Those grants are the users', not the
-- extension's, so they are kept out of the function's initial privileges,
-- which pg_dump leaves out of a dump.
DO $$
DECLARE
    old_fn pg_catalog.regprocedure := 'ordering.claim_unpublished(integer)';
    new_fn pg_catalog.regprocedure := 'ordering.claim_unpublished(integer, boolean, interval)';
    initial pg_catalog.aclitem[];
    g record;
BEGIN
    SELECT p.proacl INTO initial FROM pg_catalog.pg_proc p
     WHERE p.oid OPERATOR(pg_catalog.=) new_fn;
    FOR g IN
        SELECT e.grantee, e.is_grantable
          FROM pg_catalog.pg_proc p,
               pg_catalog.aclexplode(COALESCE(p.proacl, pg_catalog.acldefault('f', p.proowner))) e
         WHERE p.oid OPERATOR(pg_catalog.=) old_fn
           AND e.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
           AND e.grantee OPERATOR(pg_catalog.<>) p.proowner
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', new_fn,
            CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                 ELSE g.grantee::pg_catalog.regrole::pg_catalog.text END,
            CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
    UPDATE pg_catalog.pg_init_privs i SET initprivs = initial
     WHERE i.objoid OPERATOR(pg_catalog.=) new_fn
       AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
       AND i.objsubid OPERATOR(pg_catalog.=) 0;
END
$$;
DROP FUNCTION ordering.claim_unpublished(integer);

-- The producer set names the new signature and wait_for_standbys.
CREATE OR REPLACE FUNCTION ordering.grant_producer(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM ordering.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.emit(text, text, jsonb, bigint), '
        'ordering.next_sequence(text, text), ordering.last_sequence(text, text), '
        'ordering.attach(regclass, name, name, text), ordering.detach(regclass), '
        'ordering.sequence_trigger(), ordering.claim_unpublished(integer, boolean, interval), '
        'ordering.wait_for_standbys(interval), '
        'ordering.mark_published(bigint[]), ordering.republish(text, bigint, bigint), '
        'ordering.purge_published(interval)',
        -- the outbox is written by plain SQL (emit, relays, retention)
        'SELECT, INSERT, UPDATE, DELETE ON ordering.outbox',
        'SELECT ON ordering.sequences');
END
$$;
