/*-------------------------------------------------------------------------
 *
 * stats_shmem.h
 *	  The shared memory of the statistics (stats_shmem.c), for the files
 *	  that publish into it (stats.c) and read it (stats_views.c); README.md
 *	  gives the locking protocol.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_STATS_SHMEM_H
#define ORDERING_STATS_SHMEM_H

#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "sketch.h"
#include "stats_events.h"

/* Key of both shared tables; zero-padded, compared as bytes */
typedef struct StatsKey
{
	Oid			dbid;
	char		name[ORDERING_STATS_NAME_LEN];
} StatsKey;

/* What is counted per consumer (and, in the slots below, per stream) */
typedef struct Counters
{
	int64		events[ORDERING_NUM_EVENTS];
	int64		buckets[ORDERING_NUM_BUCKETS];	/* not cumulative */
	int64		distance_sum;
} Counters;

/* The slots of events[] that a stream's pending counters use */
#define STREAM_ASSIGNED				0	/* sequence numbers assigned */
#define STREAM_RECONCILE_BEHIND		1	/* resources reconcile() found behind */
#define STREAM_RECONCILE_REPUBLISHED 2	/* events it republished */
#define STREAM_RECONCILE_PURGED		3	/* missing events it found purged */
StaticAssertDecl(STREAM_RECONCILE_PURGED < ORDERING_NUM_EVENTS,
				 "too few counter slots for streams");

typedef struct ConsumerEntry
{
	StatsKey	key;
	slock_t		mutex;
	int			sketch;			/* 1 + its sketch in the pool; 0: none */
	Counters	c;
} ConsumerEntry;

typedef struct StreamEntry
{
	StatsKey	key;
	slock_t		mutex;
	int			sketch;			/* as in ConsumerEntry */
	int64		assigned;
	int64		conflicts;		/* supplied numbers refused (40001) */
	int64		reconcile_behind;	/* the STREAM_RECONCILE_* counts */
	int64		reconcile_republished;
	int64		reconcile_purged;
} StreamEntry;

/*
 * shared_entry() initializes both kinds of entry, and the publishing code
 * finds their sketch, through the same offsets
 */
StaticAssertDecl(offsetof(ConsumerEntry, mutex) == offsetof(StreamEntry, mutex),
				 "entry layouts differ");
StaticAssertDecl(offsetof(ConsumerEntry, sketch) == offsetof(StreamEntry, sketch),
				 "entry layouts differ");
#define ENTRY_SKETCH(entry) \
	(*(int *) ((char *) (entry) + offsetof(ConsumerEntry, sketch)))

typedef struct StatsShared
{
	LWLock	   *lock;
	TimestampTz stats_reset;	/* last ordering.stats_reset() or startup */
	int			sketches_used;	/* sketches of the pool given to entries */
} StatsShared;

/* Shared state; NULL unless preloaded */
extern StatsShared *stats_shared;
extern HTAB *consumer_hash;
extern HTAB *stream_hash;
extern slock_t *hot_locks;		/* one per sketch of the pool */
extern char *hot_pool;			/* the sketches, hot_stride bytes apart */
extern Size hot_stride;

#define HOT_SKETCH(i) ((Sketch *) (hot_pool + (Size) (i) * hot_stride))

extern void stats_shmem_init(void);
extern void copy_name(char *dst, const char *name);
extern void *shared_entry(HTAB *hash, int max, Size entrysize, StatsKey *key,
						  LWLockMode *mode);

#endif							/* ORDERING_STATS_SHMEM_H */
