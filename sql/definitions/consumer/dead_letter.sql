-- Dead letters (src/dead_letters.c): a poison event blocks only its own
-- (consumer, resource).  dead_letter() is for table-form consumers that gave
-- up on an event.
CREATE OR REPLACE FUNCTION ordering.dead_letter(consumer text, resource_id text, seq bigint,
                                     payload jsonb, reason text)
    RETURNS void
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_dead_letter';
COMMENT ON FUNCTION ordering.dead_letter(text, text, bigint, jsonb, text) IS
    'For table-form consumers that gave up on an event: records it as the dead letter of its resource (the reason as its message); later events wait behind it';
REVOKE EXECUTE ON FUNCTION ordering.dead_letter(text, text, bigint, jsonb, text) FROM PUBLIC;
