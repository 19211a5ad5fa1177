-- The consumer set is one trust domain per database: a role with it may act
-- as any consumer of the database (consumer names are labels that keep the
-- positions of different readers apart, not owners), reads every consumer's
-- positions, parked events and dead letters, and writes none of the tables
-- with SQL: the functions are its only way to change them.  Consumers that
-- must not see or move each other's state belong in separate databases
-- (docs/privileges.md).
CREATE OR REPLACE FUNCTION ordering.grant_consumer(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    -- on a Citus coordinator: the set on every node, by its marker
    IF ordering_internal.grant_set_everywhere('consumer', role) THEN
        RETURN;
    END IF;
    PERFORM ordering_internal.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.apply_if_newer(text, text, bigint), '
        'ordering.deliver(text, text, bigint, jsonb), '
        'ordering.deliver(text, text, bigint, jsonb, regprocedure, text), '
        'ordering.dead_letter(text, text, bigint, jsonb, text), '
        'ordering.deliver_batch(text, text[], bigint[], jsonb[]), '
        'ordering.deliver_batch(text, text[], bigint[], jsonb[], regprocedure, text), '
        'ordering.apply_batch(text, text[], bigint[]), '
        'ordering.position(text, text), ordering.newer_only(), '
        -- reconciliation, consumer side
        'ordering.consumer_summary(text, integer, text), '
        'ordering.consumer_state(text, integer, integer[], text), '
        'ordering_internal.reconcile_check_arguments(integer, text), '
        'ordering_internal.resource_bucket(text, integer), '
        'ordering_internal.resource_fingerprint(text, bigint), '
        -- what ordering.dead_letters reads on a Citus coordinator
        'ordering_internal.distributed_dead_letters()',
        'SELECT ON ordering.positions, ordering.gap_requests, ordering.parked, '
        'ordering.dead_letter_events, ordering.dead_letters');
END
$$;
COMMENT ON FUNCTION ordering.grant_consumer(regrole) IS
    'Grants what a consumer needs: apply_if_newer, deliver (all forms), deliver_batch, apply_batch, dead_letter, position, the newer_only trigger, and read access to the consumer tables; for every consumer of the database (one trust domain per database: docs/privileges.md)';
-- Granting is for the extension's owner (or a superuser) to do.
REVOKE EXECUTE ON FUNCTION ordering.grant_consumer(regrole) FROM PUBLIC;
