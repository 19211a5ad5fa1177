-- The privilege sets (docs/privileges.md).  The C functions read and write
-- the extension's tables below the executor, where no table privilege is
-- checked: the right to EXECUTE a function is the permission.  So nothing is
-- granted to PUBLIC but what says why, and these functions hand out the
-- sets a producer, a consumer, an operator and a monitoring role need.
--
-- The producer set: producing, attaching, relaying (ordering.outbox and
-- distributed outboxes), the producer side of reconciliation.
CREATE OR REPLACE FUNCTION ordering.grant_producer(role regrole) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    -- on a Citus coordinator: the set on every node, by its marker
    IF ordering_internal.grant_set_everywhere('producer', role) THEN
        RETURN;
    END IF;
    PERFORM ordering_internal.grant_privileges(role,
        'EXECUTE ON FUNCTION ordering.emit(text, text, jsonb, bigint), '
        'ordering.next_sequence(text, text), ordering.last_sequence(text, text), '
        'ordering.attach(regclass, name, name, text), ordering.detach(regclass), '
        'ordering.wake_relays(regclass, boolean), '
        'ordering_internal.create_sequencing_triggers(regclass, name, name, text), '
        'ordering.sequence_trigger(), ordering_internal.sequence_stored_trigger(), '
        'ordering_internal.sequence_guard(), ordering.resource_key(anyelement), '
        'ordering.claim_unpublished(integer, boolean, interval), '
        'ordering.wait_for_standbys(interval), '
        'ordering.mark_published(bigint[]), ordering.republish(text, bigint, bigint), '
        'ordering.purge_published(interval), '
        -- reconciliation, producer side
        'ordering.stream_summary(text, integer, text, text[]), '
        'ordering.reconcile(jsonb, integer, integer[], text, text, text[], interval, boolean), '
        'ordering_internal.count_reconciled(text, bigint, bigint, bigint), '
        'ordering_internal.reconcile_check_arguments(integer, text), '
        'ordering_internal.reconcile_check_stream(text, text[]), '
        'ordering_internal.reconcile_producer_resources(text, text, text[]), '
        'ordering_internal.distributed_stream_resources(text, text), '
        'ordering_internal.resource_bucket(text, integer), '
        'ordering_internal.resource_fingerprint(text, bigint), '
        -- relays of an outbox distributed by Citus
        'ordering.claim_unpublished(anyelement, integer), '
        'ordering.mark_published(regclass, bigint[]), ordering.relay_nodes(regclass)',
        -- the outbox is written by plain SQL (emit, relays, retention)
        'SELECT, INSERT, UPDATE, DELETE ON ordering.outbox',
        'SELECT ON ordering.sequences',
        -- attach() reads the registry; it and detach() write it through
        -- two functions of ordering_internal, never with SQL
        'SELECT ON ordering.attachments',
        'EXECUTE ON FUNCTION ordering_internal.attachment_register(regclass, text, name, name), '
        'ordering_internal.attachment_unregister(regclass)');
END
$$;
COMMENT ON FUNCTION ordering.grant_producer(regrole) IS
    'Grants what a producer and its relays need: emit, next/last_sequence, attach/detach, wake_relays, the relay functions (claim_unpublished, wait_for_standbys, mark_published, republish, purge_published, and for an outbox distributed by Citus claim_unpublished(outbox, n), mark_published(outbox, ids), relay_nodes), the producer side of reconciliation, and the outbox; read access to the counters and to the registry of attached tables, which only attach() and detach() write';
-- Granting is for the extension's owner (or a superuser) to do.
REVOKE EXECUTE ON FUNCTION ordering.grant_producer(regrole) FROM PUBLIC;
