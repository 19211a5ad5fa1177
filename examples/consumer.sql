-- The consumer database of the client examples: where the step consumer
-- applies each event, and the handler that deliver() calls for the
-- dead-letter variant.  Run once in the consumer database (after
-- CREATE EXTENSION ordering):  psql -d billing -f examples/consumer.sql

-- One row per applied event, in the order they were applied.
CREATE TABLE IF NOT EXISTS example_ledger (
    applied_order bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    resource_id   text NOT NULL,
    seq           bigint NOT NULL,
    payload       jsonb NOT NULL
);

-- The handler of ordering.deliver(..., handler, on_error => 'dead_letter'):
-- the same work as the clients' own apply, but it rejects a payload marked
-- "poison" (a stand-in for bad data or a bug), until the operator sets
-- example.accept_poison = on (a stand-in for the fix).
CREATE OR REPLACE FUNCTION example_apply_step(resource_id text, seq bigint, payload jsonb)
    RETURNS void
    LANGUAGE plpgsql
AS $$
BEGIN
    IF example_apply_step.payload ? 'poison'
       AND current_setting('example.accept_poison', true) IS DISTINCT FROM 'on' THEN
        RAISE EXCEPTION 'cannot apply step % of %: the payload is poison',
            example_apply_step.seq, example_apply_step.resource_id
            USING ERRCODE = 'data_exception';
    END IF;
    INSERT INTO example_ledger (resource_id, seq, payload)
    VALUES (example_apply_step.resource_id, example_apply_step.seq,
            example_apply_step.payload);
END
$$;
