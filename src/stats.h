/*-------------------------------------------------------------------------
 *
 * stats.h
 *	  Statistics hooks called by the producer and consumer code.
 *
 * Callers report what happened as it happens; the statistics code keeps it
 * pending in backend memory and publishes it at commit only, so work that is
 * rolled back is never counted.  Without shared_preload_libraries the hooks
 * are cheap no-ops.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_STATS_H
#define ORDERING_STATS_H

/*
 * What the consumer functions count (consumer.c, newer_only.c), per consumer:
 *
 * apply_if_newer(c, r, seq), position p before the call:
 *	CONSUMED 1, and APPLIED 1 if seq > p, DUPLICATE 1 if seq = p, STALE 1 if
 *	seq < p.
 * deliver(c, r, seq, ...), position p before the call:
 *	CONSUMED 1, and then one of
 *	- seq < p: STALE 1; seq = p, or seq already parked: DUPLICATE 1;
 *	- seq = p + 1: APPLIED n, where n is the number of events returned (or
 *	  handed to the handler): this one plus the parked run it continues, and
 *	  DRAINED n - 1 for those parked ones;
 *	- seq > p + 1: PARKED 1, and reorder distance seq - p.
 *	So CONSUMED = APPLIED - DRAINED + STALE + DUPLICATE + PARKED.
 *	A delivery refused by the parking cap (SQLSTATE 54000) counts nothing.
 * skip_gap(c, r): APPLIED n and DRAINED n for the n parked events it returns
 *	(nothing is CONSUMED: no event is handed in).
 * newer_only('version', c), for each UPDATE that reaches the trigger:
 *	CONSUMED 1, and APPLIED 1 if the new version is greater (or the stored
 *	one NULL), DUPLICATE 1 if equal, STALE 1 if smaller.  The first INSERT
 *	of a row fires no UPDATE trigger and is not counted.
 * Errors count nothing: every count is made after the decision, and pending
 * counts of aborted work are never published.
 */

typedef enum OrderingEvent
{
	ORDERING_EVENT_CONSUMED,	/* any event handed to a consumer function */
	ORDERING_EVENT_APPLIED,		/* the caller applies it now */
	ORDERING_EVENT_STALE,		/* older than the position */
	ORDERING_EVENT_DUPLICATE,	/* equal to the position, or already parked */
	ORDERING_EVENT_PARKED,		/* early: parked */
	ORDERING_EVENT_DRAINED,		/* parked earlier, applied now */
	ORDERING_EVENT_GAP_ESCALATED,	/* a gap passed the deadline */
	ORDERING_NUM_EVENTS
} OrderingEvent;

/*
 * Reorder-distance histogram: upper bounds of the buckets; one more bucket
 * counts everything above the last bound.
 */
#define ORDERING_DISTANCE_BOUNDS	{1, 2, 3, 5, 10, 25, 100}
#define ORDERING_NUM_BOUNDS			7
#define ORDERING_NUM_BUCKETS		(ORDERING_NUM_BOUNDS + 1)

/*
 * Consumer and stream names are kept up to this many bytes (including the
 * terminating zero); longer names are cut at a character boundary.
 */
#define ORDERING_STATS_NAME_LEN		128

/* Called from _PG_init: request shared memory when preloaded. */
extern void ordering_stats_init(void);

/* Count n events of one kind for a consumer. */
extern void ordering_stats_count(const char *consumer, OrderingEvent event, int64 n);

/* Record the reorder distance (seq - position) of an early arrival. */
extern void ordering_stats_reorder_distance(const char *consumer, int64 distance);

/* Count one sequence number assigned in a stream. */
extern void ordering_stats_sequence_assigned(const char *stream);

#endif							/* ORDERING_STATS_H */
