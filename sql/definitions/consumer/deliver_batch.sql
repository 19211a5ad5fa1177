-- Set-based consumer calls (src/batch.c, docs/batch.md): for each event of
-- the arrays, what the single call would give, as if the events had been
-- handed to single calls one after another in input order; ord is the
-- event's position in the arrays.  The table form of deliver().
CREATE OR REPLACE FUNCTION ordering.deliver_batch(consumer text, resource_ids text[], seqs bigint[],
                                       payloads jsonb[])
    RETURNS TABLE (ord integer, seq bigint, payload jsonb)
    LANGUAGE c VOLATILE ROWS 100 AS 'MODULE_PATHNAME', 'ordering_deliver_batch';
COMMENT ON FUNCTION ordering.deliver_batch(text, text[], bigint[], jsonb[]) IS
    'Step consumers, a batch per call: for each event (ord, its position in the arrays, in input order) the rows deliver() would return for it, as if the events had been delivered one after another in that order';
REVOKE EXECUTE ON FUNCTION ordering.deliver_batch(text, text[], bigint[], jsonb[]) FROM PUBLIC;

-- deliver() through a handler, a batch per call.
CREATE OR REPLACE FUNCTION ordering.deliver_batch(consumer text, resource_ids text[], seqs bigint[],
                                       payloads jsonb[], handler regprocedure,
                                       on_error text DEFAULT 'raise')
    RETURNS integer
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_deliver_batch_handler';
COMMENT ON FUNCTION ordering.deliver_batch(text, text[], bigint[], jsonb[], regprocedure, text) IS
    'Step consumers, a batch per call: each event as deliver(..., handler, on_error) would take it, resource by resource; returns how many events the handler ran for';
REVOKE EXECUTE ON FUNCTION ordering.deliver_batch(text, text[], bigint[], jsonb[], regprocedure, text) FROM PUBLIC;
