-- One row per stream.
CREATE OR REPLACE VIEW ordering.stream_stats AS
SELECT s.stream, s.sequences_assigned, r.stats_reset, s.sequence_conflicts,
       s.reconcile_resources_behind, s.reconcile_events_republished,
       s.reconcile_events_purged
  FROM ordering_internal.stream_statistics() s
 CROSS JOIN (SELECT ordering_internal.stats_reset_time() AS stats_reset) r;
COMMENT ON VIEW ordering.stream_stats IS
    'One row per stream of the current database: sequence numbers assigned by committed transactions, supplied numbers refused with SQLSTATE 40001, and reconciliation''s resources found behind, events republished and missing events found purged (committed ordering.reconcile() calls; dry runs count what they found, never a republished event)';
