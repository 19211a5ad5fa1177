/*-------------------------------------------------------------------------
 *
 * gaps.h
 *	  What the files of the gap sweep share, and what _PG_init calls: a
 *	  section per file (README.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_GAPS_H
#define ORDERING_GAPS_H

#include "nodes/pg_list.h"

/*
 * The statements of a sweep
 */

/*
 * The columns of ordering.gap_requests: the rows a sweep returns, each
 * followed by the row as JSON, which is what it notifies.
 */
#define GAP_REQUEST_NATTS	9

/*
 * The open gaps past the deadline ($1, seconds) of a consumer's positions
 * and parked events, POSITIONS and PARKED: the first part of the view
 * ordering.open_gaps, for the sweep of the extension's tables (sweep.c)
 * and of a distributed consumer's shards (citus_gaps.c).
 */
#define ORDERING_OPEN_GAPS_SQL(POSITIONS, PARKED) \
"SELECT agg.consumer, agg.resource_id," \
"       COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1 AS missing_from," \
"       agg.lowest OPERATOR(pg_catalog.-) 1 AS missing_to," \
"       agg.parked_count, agg.first_parked_at" \
"  FROM (SELECT p.consumer, p.resource_id," \
"               pg_catalog.min(p.seq) AS lowest," \
"               pg_catalog.count(*) AS parked_count," \
"               pg_catalog.min(p.parked_at) AS first_parked_at" \
"          FROM " PARKED " p" \
"         GROUP BY p.consumer, p.resource_id" \
"        HAVING pg_catalog.min(p.parked_at) OPERATOR(pg_catalog.<)" \
"               (pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $1))) agg" \
"  LEFT JOIN LATERAL (" \
"       SELECT ps.position, ps.blocked_at" \
"         FROM " POSITIONS " ps" \
"        WHERE ps.consumer OPERATOR(pg_catalog.=) agg.consumer" \
"          AND ps.resource_id OPERATOR(pg_catalog.=) agg.resource_id" \
"        LIMIT 1) pos ON true" \
" WHERE agg.lowest OPERATOR(pg_catalog.>)" \
"       (COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1)" \
"   AND (pos.blocked_at IS NULL" \
"        OR agg.lowest OPERATOR(pg_catalog.<) pos.blocked_at)"

/*
 * One sweep: $1 is the deadline in seconds; OPEN_GAPS a relation (or
 * subquery) of the open gaps, REQUESTS the gap requests table, RESULT the
 * select list of the rows returned (of upsert u).  "gap" is the list of
 * open gaps with whether to emit each; "cleaned" deletes the requests of
 * gaps no longer open; "upsert" writes the requests (EXCLUDED.attempts is
 * 1 to emit, 0 to only refresh).  Returns the emitted requests.
 * ROUTING_COLUMN and ROUTING_VALUE are empty, or for the shard of a
 * consumer distributed by another type than text ", resource_value" and
 * ", <the resource id cast to that type>" (README.md).
 */
#define ORDERING_SWEEP_SQL(OPEN_GAPS, REQUESTS, RESULT, ROUTING_COLUMN, ROUTING_VALUE) \
"WITH gap AS MATERIALIZED (" \
"  SELECT o.consumer, o.resource_id, o.missing_from, o.missing_to," \
"         o.parked_count, o.first_parked_at," \
"         (r.consumer IS NULL OR pg_catalog.now() OPERATOR(pg_catalog.>=)" \
"            (r.last_requested_at OPERATOR(pg_catalog.+) pg_catalog.make_interval(" \
"              secs => $1 OPERATOR(pg_catalog.*) pg_catalog.power(2.0::pg_catalog.float8," \
"                (LEAST(r.attempts, 7) OPERATOR(pg_catalog.-) 1)::pg_catalog.float8))))" \
"           AS emit" \
"    FROM " OPEN_GAPS " o" \
"    LEFT JOIN " REQUESTS " r" \
"      ON r.consumer OPERATOR(pg_catalog.=) o.consumer" \
"     AND r.resource_id OPERATOR(pg_catalog.=) o.resource_id" \
"), cleaned AS (" \
"  DELETE FROM " REQUESTS " r" \
"   WHERE NOT EXISTS (SELECT FROM gap" \
"                      WHERE gap.consumer OPERATOR(pg_catalog.=) r.consumer" \
"                        AND gap.resource_id OPERATOR(pg_catalog.=) r.resource_id)" \
"), upsert AS (" \
"  INSERT INTO " REQUESTS " AS g" \
"         (consumer, resource_id, missing_from, missing_to, parked_count," \
"          first_parked_at, detected_at, last_requested_at, attempts" ROUTING_COLUMN ")" \
"  SELECT gap.consumer, gap.resource_id, gap.missing_from, gap.missing_to," \
"         gap.parked_count, gap.first_parked_at, pg_catalog.now(), pg_catalog.now()," \
"         CASE WHEN gap.emit THEN 1 ELSE 0 END" ROUTING_VALUE \
"    FROM gap" \
"  ON CONFLICT (consumer, resource_id" ROUTING_COLUMN ") DO UPDATE" \
"     SET missing_from = EXCLUDED.missing_from," \
"         missing_to = EXCLUDED.missing_to," \
"         parked_count = EXCLUDED.parked_count," \
"         first_parked_at = EXCLUDED.first_parked_at," \
"         last_requested_at = CASE WHEN EXCLUDED.attempts OPERATOR(pg_catalog.=) 1" \
"                                  THEN pg_catalog.now() ELSE g.last_requested_at END," \
"         attempts = g.attempts OPERATOR(pg_catalog.+) EXCLUDED.attempts" \
"  RETURNING g.consumer, g.resource_id, g.missing_from, g.missing_to," \
"            g.parked_count, g.first_parked_at, g.detected_at," \
"            g.last_requested_at, g.attempts" \
")" \
" SELECT " RESULT \
"   FROM upsert u" \
"   JOIN gap ON gap.consumer OPERATOR(pg_catalog.=) u.consumer" \
"           AND gap.resource_id OPERATOR(pg_catalog.=) u.resource_id" \
"  WHERE gap.emit" \
"  ORDER BY u.consumer, u.resource_id"

/*
 * sweep.c: the sweep
 */

/*
 * Is this database being restored: ordering.restoring, or the database's
 * own setting (a long-lived connection predates it)?  Needs SPI.
 */
extern bool ordering_database_restoring(void);

/*
 * citus_gaps.c: the sweep of distributed consumers
 */

extern List *citus_gaps_sweep(double deadline);

/*
 * worker.c: the background workers
 */

/* Registers the background worker launcher; called from _PG_init */
extern void ordering_worker_register(void);

#endif							/* ORDERING_GAPS_H */
