-- The public surface: schema ordering holds what users
-- call, and nothing else; the extension's plumbing is in ordering_internal.

-- Every function of schema ordering, with its arguments and result.  A
-- function added here is part of the public API: if users do not call it
-- (only the extension's own views, triggers or functions do), create it in
-- ordering_internal instead; if they do, add it to docs/reference.md and to
-- this list.
SELECT p.oid::regprocedure AS function, pg_get_function_result(p.oid) AS result
  FROM pg_proc p
 WHERE p.pronamespace = 'ordering'::regnamespace
 ORDER BY p.oid::regprocedure::text COLLATE "C";

-- At most 40 names, overloads counted once: what a user must learn.
SELECT count(DISTINCT p.proname) AS names, count(DISTINCT p.proname) <= 40 AS at_most_40
  FROM pg_proc p
 WHERE p.pronamespace = 'ordering'::regnamespace;

-- Functions that PUBLIC may execute, in both schemas: each says why in its
-- definition (sql/definitions/): it reads only the catalog or nothing, does
-- only what its caller may do anyway, or checks the caller's rights itself.
-- Every other function needs EXECUTE from one of the grant sets.
SELECT p.oid::regprocedure AS executable_by_public
  FROM pg_proc p
 WHERE p.pronamespace IN ('ordering'::regnamespace, 'ordering_internal'::regnamespace)
   AND has_function_privilege('public', p.oid, 'EXECUTE')
 ORDER BY p.oid::regprocedure::text COLLATE "C";

-- Every function of both schemas belongs to the extension and says what it
-- is for.
SELECT p.oid::regprocedure AS not_a_member_or_without_comment
  FROM pg_proc p
 WHERE p.pronamespace IN ('ordering'::regnamespace, 'ordering_internal'::regnamespace)
   AND (obj_description(p.oid, 'pg_proc') IS NULL
        OR NOT EXISTS (SELECT FROM pg_depend d
                        WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                          AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'))
 ORDER BY p.oid::regprocedure::text COLLATE "C";

-- No SQL or PL/pgSQL function of the extension calls a function of either
-- schema by a name that is not there (a caller left behind when a function
-- moved), but for the list of the names that moved, which restores of a
-- dump of the previous version use (ordering_internal.older_names()).
SELECT p.oid::regprocedure AS caller, m[1] || '.' || m[2] AS calls_missing
  FROM pg_proc p
 CROSS JOIN LATERAL regexp_matches(p.prosrc, '(ordering(?:_internal)?)\.([a-z_]+)\(', 'g') m
 WHERE p.pronamespace IN ('ordering'::regnamespace, 'ordering_internal'::regnamespace)
   AND p.prolang IN (SELECT oid FROM pg_language WHERE lanname IN ('sql', 'plpgsql'))
   AND p.oid <> 'ordering_internal.older_names()'::regprocedure
   AND NOT EXISTS (SELECT FROM pg_proc q
                    WHERE q.pronamespace = m[1]::regnamespace AND q.proname = m[2])
 ORDER BY p.oid::regprocedure::text COLLATE "C", 2;

-- The 1.0 statistics functions are gone (the views replace them), and so
-- is every name that moved.
SELECT f, to_regprocedure(f) IS NULL AS gone
  FROM unnest(ARRAY['ordering.consumer_counters()', 'ordering.stream_counters()',
                    'ordering.metric_label_value(text)',
                    'ordering.deliver(text, text, bigint, jsonb, regprocedure)',
                    'ordering.grant_privileges(regrole, text[])',
                    'ordering.consumer_statistics()', 'ordering.gap_deadline()',
                    'ordering.sequence_stored()', 'ordering.sequence_stored_trigger()',
                    'ordering.sequence_guard()', 'ordering.distributed_open_gaps()',
                    'ordering.mark_published_on_node(regclass, bigint[])',
                    'ordering.claim_unpublished_on_node(anyelement, integer)',
                    'ordering.resource_bucket(text, integer)',
                    'ordering.resource_fingerprint(text, bigint)']) f;

-- The two claims: with one argument, typed or not (lib/pq and node-postgres
-- send parameters untyped), the claim of ordering.outbox; with a row of an
-- outbox first, the claim on a node of an outbox distributed by Citus
-- (without Citus, 0A000).  Two untyped arguments could be either: named,
-- the second says which.
PREPARE claim_untyped AS SELECT count(*) FROM ordering.claim_unpublished($1);
EXECUTE claim_untyped(0);
DEALLOCATE claim_untyped;
SELECT count(*) FROM ordering.claim_unpublished('0');
SELECT * FROM ordering.claim_unpublished(NULL::ordering.outbox, 10);
\echo :LAST_ERROR_SQLSTATE
PREPARE claim_two AS SELECT count(*) FROM ordering.claim_unpublished($1, $2);
PREPARE claim_named AS SELECT count(*) FROM ordering.claim_unpublished($1, replicated => $2);
EXECUTE claim_named(0, false);
DEALLOCATE claim_named;

-------------------------------------------------------------------------------
-- One deliver() through a handler: every call the contract and the README
-- show resolves, positional and named.
-------------------------------------------------------------------------------
SELECT pg_get_function_arguments('ordering.deliver(text, text, bigint, jsonb, regprocedure, text)'::regprocedure);

CREATE TABLE surface_applied (resource_id text, seq bigint);
CREATE FUNCTION surface_apply(resource_id text, seq bigint, payload jsonb) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    IF payload ? 'fail' THEN
        RAISE EXCEPTION 'cannot apply %', seq USING ERRCODE = 'invalid_text_representation';
    END IF;
    INSERT INTO surface_applied VALUES (resource_id, seq);
END
$$;

-- the table form (4 arguments): no handler, so no handler call
SELECT * FROM ordering.deliver('surface', 'r', 1, '{}');
SELECT * FROM ordering.deliver(consumer => 'surface', resource_id => 'r', seq => 2,
                               payload => '{}');
-- through a handler, as 1.0 called it (5 arguments): on_error is 'raise'
SELECT ordering.deliver('surface', 'r', 3, '{}', 'surface_apply(text,bigint,jsonb)');
SELECT ordering.deliver('surface', 'r', 4, '{"fail": true}', 'surface_apply(text,bigint,jsonb)');
-- with on_error, positional and named
SELECT ordering.deliver('surface', 'r', 4, '{}', 'surface_apply(text,bigint,jsonb)', 'raise');
SELECT ordering.deliver('surface', 'r', 6, '{}', 'surface_apply(text,bigint,jsonb)',
                        on_error => 'raise');
SELECT ordering.deliver(consumer => 'surface', resource_id => 'r', seq => 5, payload => '{}',
                        handler => 'surface_apply(text,bigint,jsonb)',
                        on_error => 'dead_letter');
SELECT ordering.deliver('surface', 'r', 7, '{"fail": true}', 'surface_apply(text,bigint,jsonb)',
                        on_error => 'dead_letter');
SELECT resource_id, seq, sqlstate FROM ordering.dead_letters WHERE consumer = 'surface';
SELECT * FROM surface_applied ORDER BY seq;
SELECT * FROM ordering.discard_dead_letter('surface', 'r');
DROP TABLE surface_applied;
DROP FUNCTION surface_apply(text, bigint, jsonb);
