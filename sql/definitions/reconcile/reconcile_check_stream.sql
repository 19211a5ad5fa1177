-- The producer side's own arguments: event types filter the outbox only.
CREATE OR REPLACE FUNCTION ordering_internal.reconcile_check_stream(stream text, event_types text[])
    RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF stream IS NULL THEN
        RAISE EXCEPTION 'stream must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF event_types IS NULL THEN
        RETURN;
    END IF;
    IF stream OPERATOR(pg_catalog.<>) 'ordering.outbox' THEN
        RAISE EXCEPTION 'event_types can only filter stream "ordering.outbox"'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = pg_catalog.format('Stream %s is not the outbox of the extension, whose rows carry the event type.', stream);
    END IF;
    IF pg_catalog.cardinality(event_types) OPERATOR(pg_catalog.=) 0 THEN
        RAISE EXCEPTION 'event_types must not be empty'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass NULL to take every event type.';
    END IF;
END
$$;
COMMENT ON FUNCTION ordering_internal.reconcile_check_stream(text, text[]) IS
    'Internal to the reconciliation functions: refuses a NULL stream, and event types for a stream other than ordering.outbox or an empty list of them';
REVOKE EXECUTE ON FUNCTION ordering_internal.reconcile_check_stream(text, text[]) FROM PUBLIC;
