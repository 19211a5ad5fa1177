-- Lifting the block of a dead letter (src/dead_letters.c): the table form,
-- whose rows the caller applies in the same transaction.
CREATE OR REPLACE FUNCTION ordering.retry_dead_letter(consumer text, resource_id text)
    RETURNS TABLE (seq bigint, payload jsonb)
    LANGUAGE c VOLATILE ROWS 1 AS 'MODULE_PATHNAME', 'ordering_retry_dead_letter';
COMMENT ON FUNCTION ordering.retry_dead_letter(text, text) IS
    'Lifts the block of a resource: returns its dead event followed by every event that then drains, to apply in the same transaction (a rollback restores the block)';
REVOKE EXECUTE ON FUNCTION ordering.retry_dead_letter(text, text) FROM PUBLIC;

-- Through a handler: a dead event that fails again stays dead.
CREATE OR REPLACE FUNCTION ordering.retry_dead_letter(consumer text, resource_id text,
                                           handler regprocedure)
    RETURNS integer
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_retry_dead_letter_handler';
COMMENT ON FUNCTION ordering.retry_dead_letter(text, text, regprocedure) IS
    'Lifts the block of a resource through a handler: if the dead event fails again it stays dead (attempts + 1) and 0 is returned; else how many events ran';
REVOKE EXECUTE ON FUNCTION ordering.retry_dead_letter(text, text, regprocedure) FROM PUBLIC;
