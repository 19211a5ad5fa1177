/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  Statistics of consumers and streams, kept in shared memory and
 *	  counted at commit only.
 *
 * The producer and consumer code report what happens through the hooks of
 * stats.h.  A hook only adds to a pending count in backend-local memory (a
 * small hash by consumer or stream name, with the last entry used cached in
 * front of it): no shared lock is taken per event.  The pending counts of a
 * transaction are published into shared memory by the XACT_EVENT_COMMIT
 * callback, i.e. after the commit record is written, so that only committed
 * work is counted (PRE_COMMIT would be too early: the commit may still fail
 * after it, e.g. on a serialization failure).  They are discarded on abort
 * and on PREPARE TRANSACTION (the prepared transaction is committed by
 * another session, which cannot see our pending counts; undercounting is the
 * safe side).
 *
 * Savepoints: pending counts are kept as a stack of frames per name, one
 * frame per subtransaction nesting level that counted something.  A
 * subtransaction commit folds its frame into its parent's; an abort drops
 * it, so a rolled-back savepoint is not counted either.
 *
 * Shared memory (reserved only with shared_preload_libraries, through
 * shmem_request_hook and shmem_startup_hook, as in pg_stat_statements): two
 * fixed-size hash tables, one for consumers (ordering.max_consumers entries)
 * and one for streams (ordering.max_streams entries), keyed by (database,
 * name).  When a table is full, counts for new names are dropped and a
 * WARNING is logged once per backend.
 *
 * Locking protocol:
 *	- StatsShared->lock (an LWLock of tranche "ordering_stats") protects the
 *	  structure of both hash tables and stats_reset: looking up an entry or
 *	  reading stats_reset needs it in shared mode, inserting or removing
 *	  entries and changing stats_reset needs it exclusive.
 *	- The counters of an entry are changed and read under the entry's
 *	  spinlock, with the LWLock held in either mode.
 *	- A backend takes the LWLock once per committing transaction that counted
 *	  something (never per event), and never while holding another lock of
 *	  ours.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "ordering.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(ordering_consumer_counters);
PG_FUNCTION_INFO_V1(ordering_stream_counters);
PG_FUNCTION_INFO_V1(ordering_stats_reset);
PG_FUNCTION_INFO_V1(ordering_stats_reset_time);

#define STATS_TRANCHE "ordering_stats"

/* Key of both shared tables; zero-padded, compared as bytes */
typedef struct StatsKey
{
	Oid			dbid;
	char		name[ORDERING_STATS_NAME_LEN];
} StatsKey;

/* What is counted per consumer (and, in events[0], per stream) */
typedef struct Counters
{
	int64		events[ORDERING_NUM_EVENTS];
	int64		buckets[ORDERING_NUM_BUCKETS];	/* not cumulative */
	int64		distance_sum;
} Counters;

typedef struct ConsumerEntry
{
	StatsKey	key;
	slock_t		mutex;
	Counters	c;
} ConsumerEntry;

typedef struct StreamEntry
{
	StatsKey	key;
	slock_t		mutex;
	int64		assigned;
} StreamEntry;

/* shared_entry() initializes both kinds of entry through the same offset */
StaticAssertDecl(offsetof(ConsumerEntry, mutex) == offsetof(StreamEntry, mutex),
				 "entry layouts differ");

typedef struct StatsShared
{
	LWLock	   *lock;
	TimestampTz stats_reset;	/* last ordering.stats_reset() or startup */
} StatsShared;

/* Backend-local pending counts */
typedef enum PendingKind
{
	PENDING_CONSUMER = 'c',
	PENDING_STREAM = 's'
} PendingKind;

typedef struct PendingKey
{
	char		kind;
	char		name[ORDERING_STATS_NAME_LEN];
} PendingKey;

typedef struct PendingFrame
{
	int			level;			/* transaction nesting level */
	struct PendingFrame *next;	/* the frame of an outer level */
	Counters	c;
} PendingFrame;

typedef struct PendingEntry
{
	PendingKey	key;
	PendingFrame *top;			/* innermost frame; NULL if nothing pending */
	bool		dirty;			/* listed in pending_dirty */
} PendingEntry;

static const int64 distance_bounds[ORDERING_NUM_BOUNDS] = ORDERING_DISTANCE_BOUNDS;

/* Shared state; NULL unless preloaded */
static StatsShared *stats_shared = NULL;
static HTAB *consumer_hash = NULL;
static HTAB *stream_hash = NULL;

/* Backend state */
static HTAB *pending_hash = NULL;
static PendingEntry *pending_last = NULL;
static PendingEntry **pending_dirty = NULL;
static int	pending_ndirty = 0;
static int	pending_maxdirty = 0;
static bool warned_full = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

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
static void
copy_name(char *dst, const char *name)
{
	int			len = strlen(name);

	if (len >= ORDERING_STATS_NAME_LEN)
		len = pg_mbcliplen(name, len, ORDERING_STATS_NAME_LEN - 1);
	strlcpy(dst, name, len + 1);
}

/*
 * The pending counters of (kind, name) at the current nesting level,
 * creating the entry and frame as needed.  The caller adds to them.
 */
static Counters *
pending_counters(char kind, const char *name)
{
	PendingEntry *e = pending_last;
	int			level = GetCurrentTransactionNestLevel();

	if (e == NULL || e->key.kind != kind || strcmp(e->key.name, name) != 0)
	{
		PendingKey	key;
		bool		found;

		if (pending_hash == NULL)
		{
			HASHCTL		info;

			info.keysize = sizeof(PendingKey);
			info.entrysize = sizeof(PendingEntry);
			info.hcxt = TopMemoryContext;
			pending_hash = hash_create("ordering pending stats", 16, &info,
									   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		}
		memset(&key, 0, sizeof(key));
		key.kind = kind;
		copy_name(key.name, name);
		e = hash_search(pending_hash, &key, HASH_ENTER, &found);
		if (!found)
		{
			e->top = NULL;
			e->dirty = false;
		}
		pending_last = e;
	}

	if (e->top == NULL || e->top->level < level)
	{
		PendingFrame *f;

		if (!e->dirty)
		{
			if (pending_ndirty >= pending_maxdirty)
			{
				int			newmax = Max(8, pending_maxdirty * 2);

				if (pending_dirty == NULL)
					pending_dirty = MemoryContextAlloc(TopMemoryContext,
													   newmax * sizeof(PendingEntry *));
				else
					pending_dirty = repalloc(pending_dirty,
											 newmax * sizeof(PendingEntry *));
				pending_maxdirty = newmax;
			}
			pending_dirty[pending_ndirty++] = e;
			e->dirty = true;
		}
		f = MemoryContextAllocZero(TopTransactionContext, sizeof(PendingFrame));
		f->level = level;
		f->next = e->top;
		e->top = f;
	}
	return &e->top->c;
}

/*
 * Hook: count n events of one kind for a consumer.
 */
void
ordering_stats_count(const char *consumer, OrderingEvent event, int64 n)
{
	if (stats_shared == NULL || !IsTransactionState())
		return;
	Assert(event >= 0 && event < ORDERING_NUM_EVENTS);
	pending_counters(PENDING_CONSUMER, consumer)->events[event] += n;
}

/*
 * Hook: record the reorder distance of an early arrival.
 */
void
ordering_stats_reorder_distance(const char *consumer, int64 distance)
{
	Counters   *c;
	int			i;

	if (stats_shared == NULL || !IsTransactionState())
		return;
	c = pending_counters(PENDING_CONSUMER, consumer);
	for (i = 0; i < ORDERING_NUM_BOUNDS; i++)
		if (distance <= distance_bounds[i])
			break;
	c->buckets[i]++;
	c->distance_sum += distance;
}

/*
 * Hook: count one sequence number assigned in a stream.
 */
void
ordering_stats_sequence_assigned(const char *stream)
{
	if (stats_shared == NULL || !IsTransactionState())
		return;
	pending_counters(PENDING_STREAM, stream)->events[0]++;
}

/*
 * Add one set of counters to another.
 */
static void
add_counters(Counters *dst, const Counters *src)
{
	int			i;

	for (i = 0; i < ORDERING_NUM_EVENTS; i++)
		dst->events[i] += src->events[i];
	for (i = 0; i < ORDERING_NUM_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	dst->distance_sum += src->distance_sum;
}

/*
 * Forget every pending count (the frames die with TopTransactionContext).
 */
static void
pending_discard(void)
{
	int			i;

	for (i = 0; i < pending_ndirty; i++)
	{
		pending_dirty[i]->top = NULL;
		pending_dirty[i]->dirty = false;
	}
	pending_ndirty = 0;
}

/*
 * Find or create the shared entry of a key in one of the tables; entrysize
 * tells how much to zero in a new one.  The caller holds the LWLock in
 * *mode; it is upgraded to exclusive (released and taken again) when the
 * entry must be created.  Returns NULL when the table is full.
 */
static void *
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

/*
 * Publish the pending counts of the committed transaction.  Runs in the
 * XACT_EVENT_COMMIT callback, so it must not raise.
 */
static void
pending_publish(void)
{
	static const Counters zero_counters;
	LWLockMode	mode = LW_SHARED;
	bool		dropped = false;
	int			i;

	LWLockAcquire(stats_shared->lock, mode);
	for (i = 0; i < pending_ndirty; i++)
	{
		PendingEntry *e = pending_dirty[i];
		PendingFrame *f;
		Counters	total;
		StatsKey	key;

		memset(&total, 0, sizeof(total));
		for (f = e->top; f != NULL; f = f->next)
			add_counters(&total, &f->c);
		/* all of it was in rolled-back savepoints: nothing to publish */
		if (memcmp(&total, &zero_counters, sizeof(Counters)) == 0)
			continue;

		memset(&key, 0, sizeof(key));
		key.dbid = MyDatabaseId;
		memcpy(key.name, e->key.name, sizeof(key.name));

		if (e->key.kind == PENDING_CONSUMER)
		{
			ConsumerEntry *entry;

			entry = shared_entry(consumer_hash, ordering_max_consumers,
								 sizeof(ConsumerEntry), &key, &mode);
			if (entry == NULL)
				dropped = true;
			else
			{
				SpinLockAcquire(&entry->mutex);
				add_counters(&entry->c, &total);
				SpinLockRelease(&entry->mutex);
			}
		}
		else
		{
			StreamEntry *entry;

			entry = shared_entry(stream_hash, ordering_max_streams,
								 sizeof(StreamEntry), &key, &mode);
			if (entry == NULL)
				dropped = true;
			else
			{
				SpinLockAcquire(&entry->mutex);
				entry->assigned += total.events[0];
				SpinLockRelease(&entry->mutex);
			}
		}
	}
	LWLockRelease(stats_shared->lock);
	pending_discard();

	if (dropped && !warned_full)
	{
		warned_full = true;
		ereport(WARNING,
				(errmsg("ordering statistics are full, counts of new consumers or streams are lost"),
				 errhint("Raise ordering.max_consumers or ordering.max_streams, or call ordering.stats_reset().")));
	}
}

/*
 * Transaction callback: publish at commit, forget on abort and prepare.
 */
static void
stats_xact_callback(XactEvent event, void *arg)
{
	if (pending_ndirty == 0)
		return;
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			pending_publish();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			pending_discard();
			break;
		default:
			break;
	}
}

/*
 * Subtransaction callback: fold a committed subtransaction's frames into its
 * parent's, drop an aborted one's.
 */
static void
stats_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	int			level;
	int			i;

	if (pending_ndirty == 0 ||
		(event != SUBXACT_EVENT_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB))
		return;

	/* still the level of the subtransaction that ends */
	level = GetCurrentTransactionNestLevel();
	for (i = 0; i < pending_ndirty; i++)
	{
		PendingEntry *e = pending_dirty[i];
		PendingFrame *f = e->top;

		if (f == NULL || f->level < level)
			continue;
		Assert(f->level == level);
		e->top = f->next;
		if (event == SUBXACT_EVENT_ABORT_SUB)
			pfree(f);
		else if (e->top != NULL && e->top->level == level - 1)
		{
			add_counters(&e->top->c, &f->c);
			pfree(f);
		}
		else
		{
			f->level = level - 1;
			f->next = e->top;
			e->top = f;
		}
	}
}

/*
 * Called from _PG_init: when preloaded, reserve shared memory and install
 * the transaction callbacks.  Otherwise the hooks stay no-ops.
 */
void
ordering_stats_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = stats_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = stats_shmem_startup;

	RegisterXactCallback(stats_xact_callback, NULL);
	RegisterSubXactCallback(stats_subxact_callback, NULL);
}

/*
 * Raise 55000 unless the shared statistics exist.
 */
static void
check_preloaded(void)
{
	if (stats_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("ordering statistics are not available"),
				 errdetail("The library \"ordering\" was not loaded through shared_preload_libraries."),
				 errhint("Add ordering to shared_preload_libraries and restart the server.")));
}

/*
 * ordering.consumer_counters(): the counters of the consumers of the current
 * database, one row each, buckets not cumulative.
 */
Datum
ordering_consumer_counters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS hs;
	ConsumerEntry *entry;

	check_preloaded();
	InitMaterializedSRF(fcinfo, 0);

	LWLockAcquire(stats_shared->lock, LW_SHARED);
	hash_seq_init(&hs, consumer_hash);
	while ((entry = hash_seq_search(&hs)) != NULL)
	{
		Datum		values[ORDERING_NUM_EVENTS + 3];
		bool		nulls[ORDERING_NUM_EVENTS + 3] = {0};
		Datum		buckets[ORDERING_NUM_BUCKETS];
		Counters	c;
		int			i;

		if (entry->key.dbid != MyDatabaseId)
			continue;
		SpinLockAcquire(&entry->mutex);
		c = entry->c;
		SpinLockRelease(&entry->mutex);

		values[0] = CStringGetTextDatum(entry->key.name);
		for (i = 0; i < ORDERING_NUM_EVENTS; i++)
			values[i + 1] = Int64GetDatum(c.events[i]);
		for (i = 0; i < ORDERING_NUM_BUCKETS; i++)
			buckets[i] = Int64GetDatum(c.buckets[i]);
		values[ORDERING_NUM_EVENTS + 1] =
			PointerGetDatum(construct_array(buckets, ORDERING_NUM_BUCKETS,
											INT8OID, sizeof(int64),
											FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		values[ORDERING_NUM_EVENTS + 2] = Int64GetDatum(c.distance_sum);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(stats_shared->lock);
	return (Datum) 0;
}

/*
 * ordering.stream_counters(): sequence numbers assigned per stream of the
 * current database.
 */
Datum
ordering_stream_counters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS hs;
	StreamEntry *entry;

	check_preloaded();
	InitMaterializedSRF(fcinfo, 0);

	LWLockAcquire(stats_shared->lock, LW_SHARED);
	hash_seq_init(&hs, stream_hash);
	while ((entry = hash_seq_search(&hs)) != NULL)
	{
		Datum		values[2];
		bool		nulls[2] = {0};
		int64		assigned;

		if (entry->key.dbid != MyDatabaseId)
			continue;
		SpinLockAcquire(&entry->mutex);
		assigned = entry->assigned;
		SpinLockRelease(&entry->mutex);

		values[0] = CStringGetTextDatum(entry->key.name);
		values[1] = Int64GetDatum(assigned);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(stats_shared->lock);
	return (Datum) 0;
}

/*
 * ordering.stats_reset_time(): since when the counters count.
 */
Datum
ordering_stats_reset_time(PG_FUNCTION_ARGS)
{
	TimestampTz result;

	check_preloaded();
	LWLockAcquire(stats_shared->lock, LW_SHARED);
	result = stats_shared->stats_reset;
	LWLockRelease(stats_shared->lock);
	PG_RETURN_TIMESTAMPTZ(result);
}

/*
 * ordering.stats_reset(): forget all counters, of every database.
 */
Datum
ordering_stats_reset(PG_FUNCTION_ARGS)
{
	HASH_SEQ_STATUS hs;
	StatsKey   *key;

	check_preloaded();
	LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
	hash_seq_init(&hs, consumer_hash);
	while ((key = hash_seq_search(&hs)) != NULL)
		hash_search(consumer_hash, key, HASH_REMOVE, NULL);
	hash_seq_init(&hs, stream_hash);
	while ((key = hash_seq_search(&hs)) != NULL)
		hash_search(stream_hash, key, HASH_REMOVE, NULL);
	stats_shared->stats_reset = GetCurrentTimestamp();
	LWLockRelease(stats_shared->lock);
	PG_RETURN_VOID();
}
