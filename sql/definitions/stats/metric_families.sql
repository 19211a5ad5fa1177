-- Every metric family.  value: the expression of a counter or gauge;
-- a histogram has bounds (float8[], without +Inf), buckets (cumulative
-- bigint[], one per bound), sum and count instead.  block: the key of the
-- exporter's block, which prefixes the column name.
CREATE OR REPLACE FUNCTION ordering_internal.metric_families()
    RETURNS TABLE (ord integer, name text, type text, help text, source text, block text,
                   value text, bounds text, buckets text, sum text, count text)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 25
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT f.ord, f.name, f.type, f.help, f.source, f.block, f.value, h.bounds, h.buckets, h.sum, h.count
  FROM (VALUES
    (1, 'ordering_events_consumed_total', 'counter', 'Events handed to a consumer function.',
     'consumer', 'ordering', 's.events_consumed'),
    (2, 'ordering_events_applied_total', 'counter', 'Events applied when they arrived.',
     'consumer', 'ordering', 's.events_applied'),
    (3, 'ordering_events_stale_total', 'counter', 'Events ignored because a newer one was applied.',
     'consumer', 'ordering', 's.events_stale'),
    (4, 'ordering_events_duplicate_total', 'counter', 'Events ignored because they were applied or parked already.',
     'consumer', 'ordering', 's.events_duplicate'),
    (5, 'ordering_events_parked_total', 'counter', 'Early events parked to wait for a predecessor.',
     'consumer', 'ordering', 's.events_parked'),
    (6, 'ordering_events_drained_total', 'counter', 'Parked events applied once their gap filled.',
     'consumer', 'ordering', 's.events_drained'),
    (7, 'ordering_event_gaps_escalated_total', 'counter', 'Gap requests emitted after the deadline, first and repeated.',
     'consumer', 'ordering', 's.gaps_escalated'),
    (8, 'ordering_events_parked_current', 'gauge', 'Events parked now.',
     'consumer', 'ordering', 's.parked_current'),
    (9, 'ordering_event_reorder_distance', 'histogram', 'How far ahead of the position early events arrived (seq - position).',
     'consumer', 'ordering', NULL),
    (10, 'ordering_sequences_assigned_total', 'counter', 'Sequence numbers assigned by committed transactions.',
     'stream', 'ordering_sequences', 's.sequences_assigned'),
    (11, 'ordering_events_dead_lettered_total', 'counter', 'Events that became the dead letter of their resource.',
     'consumer', 'ordering', 's.events_dead_lettered'),
    (12, 'ordering_dead_letters_current', 'gauge', 'Resources blocked by a dead letter now.',
     'consumer', 'ordering', 's.dead_letters_current'),
    (13, 'ordering_events_skipped_total', 'counter', 'Events given up by skip_gap or discard_dead_letter.',
     'consumer', 'ordering', 's.events_skipped'),
    (14, 'ordering_oldest_gap_age_seconds', 'gauge', 'Age of the lowest parked event of the oldest open gap; 0 when no gap is open.',
     'consumer', 'ordering', 'COALESCE(pg_catalog.extract(''epoch'', s.oldest_gap_age), 0)'),
    (15, 'ordering_sequence_conflicts_total', 'counter', 'Supplied sequence numbers refused with SQLSTATE 40001 (counted although the transaction rolled back).',
     'stream', 'ordering_sequence', 's.sequence_conflicts'),
    (16, 'ordering_outbox_oldest_unpublished_age_seconds', 'gauge', 'How long the oldest unpublished row of ordering.outbox has waited; 0 when nothing waits.',
     'outbox', 'ordering_outbox', 'pg_catalog.extract(''epoch'', s.oldest_unpublished_age)'),
    (17, 'ordering_stream_hot_resource_events_total', 'counter', 'Sequence numbers assigned to each of the busiest resources of a stream (may overcount, see ordering.hot_resources()).',
     'stream_hot', 'ordering_stream_hot_resource', 's.events'),
    (18, 'ordering_consumer_hot_resource_events_total', 'counter', 'Events handed to a consumer for each of its busiest resources (may overcount, see ordering.hot_resources()).',
     'consumer_hot', 'ordering_consumer_hot_resource', 's.events'),
    (19, 'ordering_reconcile_resources_behind_total', 'counter', 'Resources ordering.reconcile() found behind, dry runs included (a resource found again is counted again).',
     'stream', 'ordering_reconcile', 's.reconcile_resources_behind'),
    (20, 'ordering_reconcile_events_republished_total', 'counter', 'Events ordering.reconcile() made unpublished again for the relays to send (none in dry runs).',
     'stream', 'ordering_reconcile', 's.reconcile_events_republished'),
    (21, 'ordering_reconcile_events_purged_total', 'counter', 'Missing events ordering.reconcile() found no longer in the outbox, never republished; dry runs included.',
     'stream', 'ordering_reconcile', 's.reconcile_events_purged')
  ) f(ord, name, type, help, source, block, value)
  LEFT JOIN (VALUES
    -- buckets 1, 2, 3, 5, 10, 25, 100 of ordering.stats (the 8th is the
    -- overflow, +Inf, whose cumulative count is the count)
    (9, 's.reorder_distance_bounds[1:7]',
     'ARRAY(SELECT pg_catalog.sum(b) OVER (ORDER BY i)'
     ' FROM pg_catalog.unnest(s.reorder_distance_buckets[1:7]) WITH ORDINALITY AS u(b, i)'
     ' ORDER BY i)',
     's.reorder_distance_sum',
     '(SELECT pg_catalog.sum(b) FROM pg_catalog.unnest(s.reorder_distance_buckets) AS b)')
  ) h(ord, bounds, buckets, sum, count) ON h.ord OPERATOR(pg_catalog.=) f.ord
$$;
COMMENT ON FUNCTION ordering_internal.metric_families() IS
    'Internal to the metrics: every metric family of ordering.metrics() and monitoring/queries.yaml, with its type, help, source, exporter block and value expression';
REVOKE EXECUTE ON FUNCTION ordering_internal.metric_families() FROM PUBLIC;
