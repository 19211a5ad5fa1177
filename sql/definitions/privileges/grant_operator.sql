-- The operator set: the consumer and monitoring sets, the operator actions
-- (skip_gap, the dead letters, sweep_gaps, stats_reset) and check(), with
-- read access to what check() reads (ordering.outbox included: check()
-- checks it like every attached table).
CREATE OR REPLACE FUNCTION ordering.grant_operator(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    -- on a Citus coordinator: the set on every node, by its marker
    IF ordering_internal.grant_set_everywhere('operator', role) THEN
        RETURN;
    END IF;
    PERFORM ordering.grant_consumer(role);
    PERFORM ordering.grant_monitor(role);
    PERFORM ordering_internal.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.skip_gap(text, text), '
        'ordering.retry_dead_letter(text, text), '
        'ordering.retry_dead_letter(text, text, regprocedure), '
        'ordering.discard_dead_letter(text, text), '
        'ordering.sweep_gaps(), ordering.stats_reset(), '
        'ordering.check(double precision, bigint), ordering.resource_key(anyelement)',
        'SELECT, INSERT, UPDATE, DELETE ON ordering.gap_requests',
        -- what ordering.check() reads: the extension's tables, and its own
        -- attached table (users' attached tables need SELECT granted by
        -- their owners, or check() skips them with a WARNING)
        'SELECT ON ordering.sequences, ordering.attachments, ordering.attached_tables, '
        'ordering.outbox',
        'EXECUTE ON FUNCTION ordering_internal.attachment_problem(regclass, name, name)');
END
$$;
COMMENT ON FUNCTION ordering.grant_operator(regrole) IS
    'Grants what an operator (and the gap-sweeper role) needs: the consumer and monitoring sets plus skip_gap, retry_dead_letter, discard_dead_letter, sweep_gaps, stats_reset and check (with read access to ordering.outbox, which it checks)';
-- Granting is for the extension's owner (or a superuser) to do.
REVOKE EXECUTE ON FUNCTION ordering.grant_operator(regrole) FROM PUBLIC;
