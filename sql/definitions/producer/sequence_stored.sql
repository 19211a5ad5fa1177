-- The WHEN clause of an attached table's AFTER INSERT trigger
-- (ordering_sequence_stored): evaluated for each row stored, it tells this
-- backend that the row keeps its number, which is then no longer given back
-- (src/producer.c), and returns false, so the trigger itself never fires and
-- no after-trigger event is queued.
CREATE OR REPLACE FUNCTION ordering_internal.sequence_stored() RETURNS boolean
    LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'ordering_sequence_stored';
COMMENT ON FUNCTION ordering_internal.sequence_stored() IS
    'The WHEN clause of an attached table''s AFTER INSERT trigger: tells the extension that the row just stored keeps its number (it is not given back); always false';
-- Evaluated with the privileges of whoever inserts into an attached table:
-- it only tells this backend that its own row was stored.
GRANT EXECUTE ON FUNCTION ordering_internal.sequence_stored() TO PUBLIC;
