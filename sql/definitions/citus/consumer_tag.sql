-- A distributed consumer (docs/citus.md, "Consumers"; src/consumer_citus.c)
-- keeps its positions, parked events, dead letters and gap requests in
-- four tables of the shapes of the extension's own, distributed by
-- resource_id and co-located with the consumer's projection, plus a call
-- function that Citus delegates to the node of a resource.  Their names
-- start with the consumer's tag, so that every node finds them from the
-- consumer's name alone.
CREATE OR REPLACE FUNCTION ordering_internal.consumer_tag(consumer text) RETURNS text
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'ordering_consumer_tag';
COMMENT ON FUNCTION ordering_internal.consumer_tag(text) IS
    'The prefix of the names of a distributed consumer''s tables and call function: consumer_ followed by the first 16 hex digits of the SHA-256 of its name';
-- Any role may call it: a hash of its argument, telling where an operator
-- finds a consumer's tables.
GRANT EXECUTE ON FUNCTION ordering_internal.consumer_tag(text) TO PUBLIC;
