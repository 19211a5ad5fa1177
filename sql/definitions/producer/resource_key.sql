-- The text a resource value is keyed by (src/resource_key.c): text as it
-- is, any other type printed under fixed settings, so that no session
-- setting changes it.
CREATE OR REPLACE FUNCTION ordering.resource_key(resource anyelement) RETURNS text
    LANGUAGE c STRICT IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'ordering_resource_key';
COMMENT ON FUNCTION ordering.resource_key(anyelement) IS
    'The text a resource value is keyed by in ordering.sequences: text as it is, any other type printed under fixed settings, so no session setting changes it';
-- It reads nothing: anyone may compute a key (ordering.check() does, as
-- whoever calls it).
GRANT EXECUTE ON FUNCTION ordering.resource_key(anyelement) TO PUBLIC;
