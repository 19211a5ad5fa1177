-- The ready outbox's producer call: a plain INSERT, numbered by the outbox's
-- sequencing trigger.
CREATE OR REPLACE FUNCTION ordering.emit(resource_id text, event_type text, payload jsonb,
                              expected_seq bigint DEFAULT NULL)
    RETURNS bigint
    LANGUAGE sql VOLATILE
    AS $$
    INSERT INTO ordering.outbox (resource_id, seq, event_type, payload)
    VALUES ($1, $4, $2, $3)
    RETURNING seq
    $$;
COMMENT ON FUNCTION ordering.emit(text, text, jsonb, bigint) IS
    'Writes an event to ordering.outbox in the caller''s transaction and returns its sequence number; expected_seq, if given, must be that number (else SQLSTATE 40001)';
REVOKE EXECUTE ON FUNCTION ordering.emit(text, text, jsonb, bigint) FROM PUBLIC;
