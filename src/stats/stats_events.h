/*-------------------------------------------------------------------------
 *
 * stats_events.h
 *	  What the statistics count: the kinds of events, the buckets of the
 *	  reorder distance and the length of a name.  stats.h says when each
 *	  event is counted; the pending counts (stats.c) and the shared entries
 *	  (stats_shmem.c) are both sized by these.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_STATS_EVENTS_H
#define ORDERING_STATS_EVENTS_H

typedef enum OrderingEvent
{
	ORDERING_EVENT_CONSUMED,	/* any event handed to a consumer function */
	ORDERING_EVENT_APPLIED,		/* the caller applies it now */
	ORDERING_EVENT_STALE,		/* older than the position */
	ORDERING_EVENT_DUPLICATE,	/* equal to the position, or already parked */
	ORDERING_EVENT_PARKED,		/* early: parked */
	ORDERING_EVENT_DRAINED,		/* parked earlier, applied now */
	ORDERING_EVENT_GAP_ESCALATED,	/* a gap passed the deadline */
	ORDERING_EVENT_DEAD_LETTERED,	/* became the dead letter of its resource */
	ORDERING_EVENT_SKIPPED,		/* given up by skip_gap or discard_dead_letter */
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

#endif							/* ORDERING_STATS_EVENTS_H */
