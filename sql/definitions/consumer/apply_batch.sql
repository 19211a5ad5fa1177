-- apply_if_newer(), a batch per call (src/batch.c).
CREATE OR REPLACE FUNCTION ordering.apply_batch(consumer text, resource_ids text[], seqs bigint[])
    RETURNS TABLE (ord integer, applied boolean)
    LANGUAGE c VOLATILE ROWS 100 AS 'MODULE_PATHNAME', 'ordering_apply_batch';
COMMENT ON FUNCTION ordering.apply_batch(text, text[], bigint[]) IS
    'State consumers, a batch per call: for each event (ord, its position in the arrays, in input order) what apply_if_newer() would return for it, as if the events had been applied one after another in that order';
REVOKE EXECUTE ON FUNCTION ordering.apply_batch(text, text[], bigint[]) FROM PUBLIC;
