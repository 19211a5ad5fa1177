-- The function of the AFTER INSERT trigger ordering_sequence_stored, which
-- its WHEN clause (sequence_stored()) never lets fire; it refuses to be
-- fired.
CREATE OR REPLACE FUNCTION ordering_internal.sequence_stored_trigger() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'ordering_sequence_stored_trigger';
COMMENT ON FUNCTION ordering_internal.sequence_stored_trigger() IS
    'AFTER INSERT FOR EACH ROW trigger installed by ordering.attach(); its WHEN clause ordering_internal.sequence_stored() does the work and never lets it fire';
REVOKE EXECUTE ON FUNCTION ordering_internal.sequence_stored_trigger() FROM PUBLIC;
