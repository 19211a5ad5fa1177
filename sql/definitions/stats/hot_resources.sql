-- The busiest resources of a stream or consumer, from a fixed-size
-- shared-memory sketch (src/sketch.c).
CREATE OR REPLACE FUNCTION ordering.hot_resources(kind text, name text, n integer DEFAULT 10)
    RETURNS TABLE (resource_id text, events bigint, max_error bigint)
    LANGUAGE c VOLATILE ROWS 10
    AS 'MODULE_PATHNAME', 'ordering_hot_resources';
COMMENT ON FUNCTION ordering.hot_resources(text, text, integer) IS
    'The n busiest resources of a stream (kind ''stream'') or consumer (kind ''consumer'') of the current database since the last ordering.stats_reset(), busiest first, from a fixed-size shared-memory sketch: events overcounts by at most max_error, which is at most the events of that stream or consumer divided by ordering.hot_resources_size';
REVOKE EXECUTE ON FUNCTION ordering.hot_resources(text, text, integer) FROM PUBLIC;
