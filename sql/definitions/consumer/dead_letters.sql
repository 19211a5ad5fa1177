-- The dead letters with how many events wait behind each.
CREATE OR REPLACE VIEW ordering.dead_letters AS
SELECT d.consumer, d.resource_id, d.seq, d.payload, d.sqlstate, d.message,
       d.failed_at, d.attempts,
       (SELECT pg_catalog.count(*) FROM ordering.parked p
         WHERE p.consumer OPERATOR(pg_catalog.=) d.consumer
           AND p.resource_id OPERATOR(pg_catalog.=) d.resource_id
           AND p.seq OPERATOR(pg_catalog.>) d.seq) AS parked_behind,
       d.detail
  FROM ordering.dead_letter_events d;
COMMENT ON VIEW ordering.dead_letters IS
    'One row per dead letter: the event that blocks its (consumer, resource), its error, how often it was tried, and how many events wait behind it';
