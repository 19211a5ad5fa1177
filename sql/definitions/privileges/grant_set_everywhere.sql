-- On a Citus cluster the grant functions run on the coordinator and the set
-- reaches every node, nodes added later included (docs/citus.md,
-- "Privileges on a cluster"): Citus carries a GRANT of a distributed
-- function to every node and replays it on a node it adds, but nothing of
-- the extension's own functions.  So on the coordinator a grant function
-- grants the role the set's marker, ordering_internal.<set>_set(), a
-- distributed function made here on first use (no member of the
-- extension), and the library gives the set on each node where that GRANT
-- runs (src/citus/citus_grants.c).  Returns false where the caller gives
-- the set on this node alone: without Citus, on a worker, with Citus's
-- propagation off, inside an extension's script, and on each node while
-- the set is being given there.
CREATE OR REPLACE FUNCTION ordering_internal.grant_set_everywhere(set text, role regrole)
    RETURNS boolean
    LANGUAGE c STRICT VOLATILE
    AS 'MODULE_PATHNAME', 'ordering_grant_set_everywhere';
COMMENT ON FUNCTION ordering_internal.grant_set_everywhere(text, regrole) IS
    'Internal to the grant_* functions: on the coordinator of a Citus cluster, grants the role the set''s marker ordering_internal.<set>_set(), which gives the set on every node, nodes added later included, and returns true; elsewhere returns false';
-- Granting is for the extension's owner (or a superuser) to do, as for the
-- grant_* functions.
REVOKE EXECUTE ON FUNCTION ordering_internal.grant_set_everywhere(text, regrole) FROM PUBLIC;
