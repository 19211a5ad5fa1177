/*-------------------------------------------------------------------------
 *
 * stats_shmem.c
 *	  The shared memory of the statistics: the counters of consumers and
 *	  streams and the pool of hot-resource sketches, and its locking
 *	  protocol (README.md, "Shared memory").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "settings.h"
#include "sketch.h"
#include "stats_shmem.h"

#define STATS_TRANCHE "ordering_stats"

/* Shared state; NULL unless preloaded */
StatsShared *stats_shared = NULL;
HTAB	   *consumer_hash = NULL;
HTAB	   *stream_hash = NULL;
slock_t    *hot_locks = NULL;	/* one per sketch of the pool */
char	   *hot_pool = NULL;	/* the sketches, hot_stride bytes apart */
Size		hot_stride = 0;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * Where the sketches start in the pool's memory: after the spinlocks.
 */
static Size
hot_pool_offset(void)
{
	return MAXALIGN(mul_size(ordering_hot_sketches, sizeof(slock_t)));
}

/*
 * Shared memory needed at the current settings.
 */
static Size
stats_memsize(void)
{
	Size		size;

	size = MAXALIGN(sizeof(StatsShared));
	size = add_size(size, hash_estimate_size(ordering_max_consumers,
											 sizeof(ConsumerEntry)));
	size = add_size(size, hash_estimate_size(ordering_max_streams,
											 sizeof(StreamEntry)));
	size = add_size(size, hot_pool_offset());
	size = add_size(size, mul_size(ordering_hot_sketches,
								   MAXALIGN(SKETCH_BYTES(ordering_hot_size))));
	return size;
}

/*
 * shmem_request_hook: reserve our shared memory and lock.
 */
static void
stats_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();

	RequestAddinShmemSpace(stats_memsize());
	RequestNamedLWLockTranche(STATS_TRANCHE, 1);
}

/*
 * shmem_startup_hook: create or attach to the shared state.
 */
static void
stats_shmem_startup(void)
{
	bool		found;
	HASHCTL		info;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);

	stats_shared = ShmemInitStruct("ordering stats", sizeof(StatsShared),
								   &found);
	if (!found)
	{
		stats_shared->lock = &(GetNamedLWLockTranche(STATS_TRANCHE))->lock;
		stats_shared->stats_reset = GetCurrentTimestamp();
		stats_shared->sketches_used = 0;
	}

	hot_stride = MAXALIGN(SKETCH_BYTES(ordering_hot_size));
	hot_locks = ShmemInitStruct("ordering hot resources",
								add_size(hot_pool_offset(),
										 mul_size(ordering_hot_sketches, hot_stride)),
								&found);
	hot_pool = (char *) hot_locks + hot_pool_offset();
	if (!found)
	{
		for (int i = 0; i < ordering_hot_sketches; i++)
			SpinLockInit(&hot_locks[i]);
	}

	info.keysize = sizeof(StatsKey);
	info.entrysize = sizeof(ConsumerEntry);
	consumer_hash = ShmemInitHash("ordering consumer stats",
								  ordering_max_consumers, ordering_max_consumers,
								  &info, HASH_ELEM | HASH_BLOBS);
	info.entrysize = sizeof(StreamEntry);
	stream_hash = ShmemInitHash("ordering stream stats",
								ordering_max_streams, ordering_max_streams,
								&info, HASH_ELEM | HASH_BLOBS);

	LWLockRelease(AddinShmemInitLock);
}

/*
 * Copy a name into a zeroed key buffer of ORDERING_STATS_NAME_LEN bytes,
 * cut at a character boundary.
 */
void
copy_name(char *dst, const char *name)
{
	int			len = strlen(name);

	if (len >= ORDERING_STATS_NAME_LEN)
		len = pg_mbcliplen(name, len, ORDERING_STATS_NAME_LEN - 1);
	strlcpy(dst, name, len + 1);
}

/*
 * Called from ordering_stats_init() when preloaded: reserve our shared
 * memory and lock, and attach to them at startup.
 */
void
stats_shmem_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = stats_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = stats_shmem_startup;
}

/*
 * Find or create the shared entry of a key in one of the tables; entrysize
 * tells how much to zero in a new one.  The caller holds the LWLock in
 * *mode; it is upgraded to exclusive (released and taken again) when the
 * entry must be created.  Returns NULL when the table is full.
 */
void *
shared_entry(HTAB *hash, int max, Size entrysize, StatsKey *key,
			 LWLockMode *mode)
{
	char	   *entry;
	bool		found;

	entry = hash_search(hash, key, HASH_FIND, NULL);
	if (entry != NULL)
		return entry;
	if (*mode != LW_EXCLUSIVE)
	{
		LWLockRelease(stats_shared->lock);
		LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
		*mode = LW_EXCLUSIVE;
	}
	entry = hash_search(hash, key, HASH_FIND, NULL);
	if (entry != NULL)
		return entry;
	if (hash_get_num_entries(hash) >= max)
		return NULL;
	entry = hash_search(hash, key, HASH_ENTER_NULL, &found);
	if (entry != NULL && !found)
	{
		/* the key comes first in both entry types, then the spinlock */
		memset(entry + sizeof(StatsKey), 0, entrysize - sizeof(StatsKey));
		SpinLockInit((slock_t *) (entry + offsetof(ConsumerEntry, mutex)));
	}
	return entry;
}
