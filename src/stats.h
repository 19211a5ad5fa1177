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
