-- The relay's lag: how long the row at the head of the relays' queue (the
-- lowest unpublished id, which claim_unpublished() hands out first) has
-- waited since it was written.  One probe of the partial index relays use.
CREATE OR REPLACE VIEW ordering.outbox_lag AS
SELECT COALESCE(GREATEST(pg_catalog.now() OPERATOR(pg_catalog.-)
                           (SELECT o.created_at FROM ordering.outbox o
                             WHERE o.published_at IS NULL
                             ORDER BY o.id LIMIT 1),
                         '0'::pg_catalog.interval),
                '0'::pg_catalog.interval) AS oldest_unpublished_age;
COMMENT ON VIEW ordering.outbox_lag IS
    'How long the oldest unpublished row of ordering.outbox (the next a relay claims) has waited; 0 when nothing waits';
