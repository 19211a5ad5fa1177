-- The BEFORE UPDATE OR DELETE trigger ordering_sequence_guard: a sequenced
-- row keeps its resource and number, also when an UPDATE moves it to another
-- partition (src/producer.c).
CREATE OR REPLACE FUNCTION ordering_internal.sequence_guard() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'ordering_sequence_guard';
COMMENT ON FUNCTION ordering_internal.sequence_guard() IS
    'BEFORE UPDATE OR DELETE FOR EACH ROW trigger installed by ordering.attach(): a sequenced row keeps its resource and number, also when an UPDATE moves it to another partition';
REVOKE EXECUTE ON FUNCTION ordering_internal.sequence_guard() FROM PUBLIC;
