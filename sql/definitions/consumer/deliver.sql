-- Step consumers (src/consumer.c).  The table form: an IN argument and a
-- result column share the names seq and payload, which C functions may do
-- (PL/pgSQL would refuse).
CREATE OR REPLACE FUNCTION ordering.deliver(consumer text, resource_id text, seq bigint, payload jsonb)
    RETURNS TABLE (seq bigint, payload jsonb)
    LANGUAGE c VOLATILE ROWS 1 AS 'MODULE_PATHNAME', 'ordering_deliver';
COMMENT ON FUNCTION ordering.deliver(text, text, bigint, jsonb) IS
    'Step consumers: the events to apply now, in order (this one and the parked run it continues); parks an early event, ignores stale and duplicate ones; all in the caller''s transaction';
REVOKE EXECUTE ON FUNCTION ordering.deliver(text, text, bigint, jsonb) FROM PUBLIC;

-- Through a handler, which the events run through in order.  on_error
-- defaults to 'raise'; the handler has no default: deliver(consumer,
-- resource_id, seq, payload) without one is the table form, whose result
-- differs, and a default would make that call ambiguous.
CREATE OR REPLACE FUNCTION ordering.deliver(consumer text, resource_id text, seq bigint,
                                            payload jsonb, handler regprocedure,
                                            on_error text DEFAULT 'raise')
    RETURNS integer
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_deliver_handler';
COMMENT ON FUNCTION ordering.deliver(text, text, bigint, jsonb, regprocedure, text) IS
    'Step consumers: like deliver(consumer, resource_id, seq, payload), but calls handler(resource_id text, seq bigint, payload jsonb) for each ready event in order and returns how many ran; with on_error => ''dead_letter'' a handler that fails (but for transient errors) makes its event the dead letter of the resource, blocking only that resource, and the call returns normally';
REVOKE EXECUTE ON FUNCTION ordering.deliver(text, text, bigint, jsonb, regprocedure, text) FROM PUBLIC;
