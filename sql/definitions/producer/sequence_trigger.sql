-- The sequencing trigger (src/producer.c): BEFORE INSERT FOR EACH ROW, with
-- the arguments (resource_column, sequence_column, stream[, counter table of
-- a stream distributed by Citus]); it numbers each row, or asserts the number
-- a row carries.  attach() creates it with its two companions; any other use
-- (AFTER, FOR EACH STATEMENT, UPDATE or DELETE) is refused.
CREATE OR REPLACE FUNCTION ordering.sequence_trigger() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'ordering_sequence_trigger';
COMMENT ON FUNCTION ordering.sequence_trigger() IS
    'BEFORE INSERT FOR EACH ROW trigger that assigns per-resource gapless sequence numbers; arguments (resource_column, sequence_column, stream); install it with ordering.attach';
-- EXECUTE is needed to create the trigger, never to fire it: the producer set
-- has it, for attach().
REVOKE EXECUTE ON FUNCTION ordering.sequence_trigger() FROM PUBLIC;
