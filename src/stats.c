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
 * Hot resources: a pool of ordering.hot_resources_sketches heavy-hitters
 * sketches (sketch.c) of ordering.hot_resources_size counters each.  A
 * stream or consumer entry gets one from the pool the first time it commits
 * a hot-resource count, and keeps it until ordering.stats_reset(); when the
 * pool is used up, later names get none (a WARNING once per backend).  The
 * pending side is a log of (name, resource, nesting level, n) in backend
 * memory with one entry per distinct (name, resource, level): an event adds
 * to the entry it finds through a small open-addressing index (or, first,
 * to the last entry), so memory grows with the distinct resources of a
 * transaction, not with its events.  The log is kept in nesting-level
 * order: a rolled-back savepoint truncates its tail, a released one
 * relabels it (merging into the parent level's entries).
 *
 * Sequence conflicts are the exception to "at commit": counted into the
 * stream's shared entry at once, since the transaction that refuses the
 * number rolls back.
 *
 * Reconciliation (1.1): ordering.reconcile() reports what it found and did
 * through ordering_internal.count_reconciled(), counted per stream at
 * commit like the sequence numbers assigned (a stream's pending counters
 * keep them in the slots STREAM_*).
 *
 * Locking protocol:
 *	- StatsShared->lock (an LWLock of tranche "ordering_stats") protects the
 *	  structure of both hash tables and stats_reset: looking up an entry or
 *	  reading stats_reset needs it in shared mode, inserting or removing
 *	  entries and changing stats_reset needs it exclusive.
 *	- The counters of an entry are changed and read under the entry's
 *	  spinlock, with the LWLock held in either mode.
 *	- The LWLock also protects the pool of sketches: taking a sketch for an
 *	  entry (entry->sketch, StatsShared->sketches_used) needs it exclusive.
 *	  A sketch's contents are changed and read under its own spinlock
 *	  (hot_locks[i]), with the LWLock held in either mode.
 *	- A backend takes the LWLock once per committing transaction that counted
 *	  something (never per event), in shared mode unless a new entry or
 *	  sketch is needed, in which case it takes it exclusive from the start
 *	  (it never upgrades in the middle of a publish, so the entries it found
 *	  stay valid).  A sequence conflict takes it once more, at the conflict.
 *	  It is never taken while holding another lock of ours.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
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

#include "settings.h"
#include "sketch.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(ordering_consumer_counters);
PG_FUNCTION_INFO_V1(ordering_stream_counters);
PG_FUNCTION_INFO_V1(ordering_hot_resources);
PG_FUNCTION_INFO_V1(ordering_stats_reset);
PG_FUNCTION_INFO_V1(ordering_stats_reset_time);
PG_FUNCTION_INFO_V1(ordering_count_reconciled);

#define STATS_TRANCHE "ordering_stats"

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
	/* used while publishing only */
	bool		hot;			/* has entries in the hot log */
	void	   *shared;			/* its shared entry, NULL if dropped */
	Counters	total;			/* its frames added up */
} PendingEntry;

/* Events of one resource offered to the sketch of "owner", not yet published */
typedef struct PendingHot
{
	PendingEntry *owner;
	int			level;			/* transaction nesting level */
	uint64		hash;			/* of the whole resource id */
	int64		n;
	char		id[ORDERING_HOT_ID_LEN];	/* as the sketch keeps it */
} PendingHot;

/* The hot log starts with room for this many; a larger one is freed at end */
#define HOT_LOG_INITIAL		64
#define HOT_LOG_KEEP		4096
/* Up to this many entries are searched one by one, without the index */
#define HOT_LOG_LINEAR		8

/* The index of the hot log: (owner, level, resource hash) -> entry */
typedef struct HotKey
{
	PendingEntry *owner;
	uint64		hash;
	int			level;
} HotKey;

typedef struct HotIndexEntry
{
	HotKey		key;
	int			entry;			/* in hot_log */
	char		status;			/* simplehash's */
} HotIndexEntry;

/*
 * Hash of a HotKey: the resource hash is a good 64-bit hash already; mix
 * in the owner and the level.
 */
static inline uint32
hot_key_hash(HotKey key)
{
	uint64		h = key.hash ^ ((uint64) (uintptr_t) key.owner * UINT64CONST(0x9E3779B97F4A7C15));

	return murmurhash32((uint32) (h ^ (h >> 32)) ^ (uint32) key.level);
}

#define SH_PREFIX hotindex
#define SH_ELEMENT_TYPE HotIndexEntry
#define SH_KEY_TYPE HotKey
#define SH_KEY key
#define SH_HASH_KEY(tb, k) hot_key_hash(k)
#define SH_EQUAL(tb, a, b) \
	((a).owner == (b).owner && (a).hash == (b).hash && (a).level == (b).level)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

static const int64 distance_bounds[ORDERING_NUM_BOUNDS] = ORDERING_DISTANCE_BOUNDS;

/* Shared state; NULL unless preloaded */
static StatsShared *stats_shared = NULL;
static HTAB *consumer_hash = NULL;
static HTAB *stream_hash = NULL;
static slock_t *hot_locks = NULL;	/* one per sketch of the pool */
static char *hot_pool = NULL;	/* the sketches, hot_stride bytes apart */
static Size hot_stride = 0;

#define HOT_SKETCH(i) ((Sketch *) (hot_pool + (Size) (i) * hot_stride))

/* Backend state */
static HTAB *pending_hash = NULL;
static PendingEntry *pending_last = NULL;
static PendingEntry **pending_dirty = NULL;
static int	pending_ndirty = 0;
static int	pending_maxdirty = 0;
static PendingHot *hot_log = NULL;
static int	hot_n = 0;
static int	hot_max = 0;
static hotindex_hash *hot_index = NULL;
static bool hot_indexed = false;	/* hot_index holds the log's keys */
static bool warned_full = false;
static bool warned_sketches = false;

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
			e->hot = false;
			e->shared = NULL;
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
	{
		Counters   *c = pending_counters(PENDING_CONSUMER, consumer);

		c->events[event] = ordering_counter_add(c->events[event], n);
	}
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
	c->buckets[i] = ordering_counter_add(c->buckets[i], 1);
	c->distance_sum = ordering_counter_add(c->distance_sum, distance);
}

/*
 * Hook: count n sequence numbers assigned in a stream.
 */
void
ordering_stats_sequence_assigned(const char *stream, int64 n)
{
	Counters   *c;

	if (stats_shared == NULL || !IsTransactionState())
		return;
	c = pending_counters(PENDING_STREAM, stream);
	c->events[STREAM_ASSIGNED] = ordering_counter_add(c->events[STREAM_ASSIGNED], n);
}

/*
 * ordering_internal.count_reconciled(stream text, behind bigint,
 * republished bigint, purged bigint) returns void
 *
 * What one ordering.reconcile() call found and did in a stream: resources
 * behind, events republished, missing events no longer in the outbox.
 * Counted at commit, like the hooks above, so a rolled-back reconciliation
 * (or savepoint) counts nothing.  Without shared_preload_libraries it counts
 * nothing and raises nothing, so that reconcile() works there too; negative
 * counts are refused either way.
 */
Datum
ordering_count_reconciled(PG_FUNCTION_ARGS)
{
	int64		behind = PG_GETARG_INT64(1);
	int64		republished = PG_GETARG_INT64(2);
	int64		purged = PG_GETARG_INT64(3);
	char	   *stream;
	Counters   *c;

	if (behind < 0 || republished < 0 || purged < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("reconciliation counts must not be negative, got behind %lld, republished %lld, purged %lld",
						(long long) behind, (long long) republished,
						(long long) purged)));
	if (stats_shared == NULL || !IsTransactionState() ||
		(behind == 0 && republished == 0 && purged == 0))
		PG_RETURN_VOID();

	stream = text_to_cstring(PG_GETARG_TEXT_PP(0));
	c = pending_counters(PENDING_STREAM, stream);
	c->events[STREAM_RECONCILE_BEHIND] =
		ordering_counter_add(c->events[STREAM_RECONCILE_BEHIND], behind);
	c->events[STREAM_RECONCILE_REPUBLISHED] =
		ordering_counter_add(c->events[STREAM_RECONCILE_REPUBLISHED], republished);
	c->events[STREAM_RECONCILE_PURGED] =
		ordering_counter_add(c->events[STREAM_RECONCILE_PURGED], purged);
	PG_RETURN_VOID();
}

/*
 * Keep a resource id as the sketches do: at most ORDERING_HOT_ID_LEN - 1
 * bytes, cut at a character boundary.  "len" is strlen(resource).
 */
static void
copy_resource(char *dst, const char *resource, int len)
{
	if (len >= ORDERING_HOT_ID_LEN)
		len = pg_mbcliplen(resource, len, ORDERING_HOT_ID_LEN - 1);
	memcpy(dst, resource, len);
	dst[len] = '\0';
}

/*
 * Make room for one more entry in the hot log.
 */
static void
pending_hot_make_room(void)
{
	if (hot_log == NULL)
	{
		hot_max = HOT_LOG_INITIAL;
		hot_log = MemoryContextAlloc(TopMemoryContext,
									 hot_max * sizeof(PendingHot));
	}
	else if (hot_n >= hot_max)
	{
		hot_max *= 2;
		hot_log = repalloc_huge(hot_log, (Size) hot_max * sizeof(PendingHot));
	}
}

/*
 * The key of a hot-log entry.
 */
static inline HotKey
hot_key(PendingEntry *owner, uint64 hash, int level)
{
	HotKey		key;

	key.owner = owner;
	key.hash = hash;
	key.level = level;
	return key;
}

/*
 * The entry of a key among the first "upto" entries of the hot log, or -1:
 * searched one by one while the log is short, else through the index.
 */
static int
pending_hot_find(HotKey key, int upto)
{
	if (hot_indexed)
	{
		HotIndexEntry *ie = hotindex_lookup(hot_index, key);

		return ie != NULL && ie->entry < upto ? ie->entry : -1;
	}
	for (int i = 0; i < upto; i++)
	{
		PendingHot *h = &hot_log[i];

		if (h->owner == key.owner && h->hash == key.hash && h->level == key.level)
			return i;
	}
	return -1;
}

/*
 * Add n to the entry of (owner, level, hash) in the hot log, or append one.
 * The entry is told by its key alone: two resource ids with the same 64-bit
 * hash count as one.  A transaction's first HOT_LOG_LINEAR entries are
 * searched one by one (most transactions have a few); from one more on,
 * through the index, built then.
 */
static void
pending_hot_add(PendingEntry *owner, int level, uint64 hash,
				const char *resource, int len, int64 n)
{
	HotKey		key = hot_key(owner, hash, level);
	int			found = pending_hot_find(key, hot_n);
	PendingHot *h;

	if (found >= 0)
	{
		hot_log[found].n = ordering_counter_add(hot_log[found].n, n);
		return;
	}
	if (hot_log == NULL || hot_n >= hot_max)
		pending_hot_make_room();
	if (!hot_indexed && hot_n >= HOT_LOG_LINEAR)
	{
		if (hot_index == NULL)
			hot_index = hotindex_create(TopMemoryContext, HOT_LOG_INITIAL, NULL);
		for (int i = 0; i < hot_n; i++)
		{
			HotIndexEntry *ie;
			bool		exists;

			ie = hotindex_insert(hot_index,
								 hot_key(hot_log[i].owner, hot_log[i].hash,
										 hot_log[i].level), &exists);
			if (!exists)
				ie->entry = i;
		}
		hot_indexed = true;
	}
	if (hot_indexed)
	{
		bool		exists;

		hotindex_insert(hot_index, key, &exists)->entry = hot_n;
	}
	h = &hot_log[hot_n++];
	h->owner = owner;
	h->level = level;
	h->hash = hash;
	h->n = n;
	copy_resource(h->id, resource, len);
}

/*
 * Hook: offer n events of a resource to the sketch of a stream or consumer.
 * Once per event on the hot paths: a cached owner, a hash, and an add to
 * the last entry or one found by the index (or an append).
 */
void
ordering_stats_hot_resource(char kind, const char *name, const char *resource,
							int64 n)
{
	PendingEntry *owner;
	PendingHot *h;
	int			level;
	int			len;
	uint64		hash;

	if (stats_shared == NULL || ordering_hot_sketches == 0 || n <= 0 ||
		!IsTransactionState())
		return;
	Assert(kind == PENDING_STREAM || kind == PENDING_CONSUMER);
	(void) pending_counters(kind, name);
	owner = pending_last;
	level = GetCurrentTransactionNestLevel();
	len = strlen(resource);
	hash = hash_bytes_extended((const unsigned char *) resource, len, 0);

	/* the same resource as the last event: no lookup */
	if (hot_n > 0)
	{
		h = &hot_log[hot_n - 1];
		if (h->owner == owner && h->level == level && h->hash == hash)
		{
			h->n = ordering_counter_add(h->n, n);
			return;
		}
	}
	pending_hot_add(owner, level, hash, resource, len, n);
}

/*
 * Add one set of counters to another.
 */
static void
add_counters(Counters *dst, const Counters *src)
{
	int			i;

	for (i = 0; i < ORDERING_NUM_EVENTS; i++)
		dst->events[i] = ordering_counter_add(dst->events[i], src->events[i]);
	for (i = 0; i < ORDERING_NUM_BUCKETS; i++)
		dst->buckets[i] = ordering_counter_add(dst->buckets[i], src->buckets[i]);
	dst->distance_sum = ordering_counter_add(dst->distance_sum, src->distance_sum);
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
		pending_dirty[i]->hot = false;
		pending_dirty[i]->shared = NULL;
	}
	pending_ndirty = 0;

	/*
	 * Empty the index: entry by entry when it holds few (a reset clears all
	 * of its memory, which after one large transaction is large), and drop
	 * log and index when they grew large.
	 */
	if (hot_indexed && hot_max > HOT_LOG_KEEP)
	{
		hotindex_destroy(hot_index);
		hot_index = NULL;
	}
	else if (hot_indexed && (uint64) hot_n * 8 < hot_index->size)
	{
		for (i = 0; i < hot_n; i++)
			(void) hotindex_delete(hot_index,
								   hot_key(hot_log[i].owner, hot_log[i].hash,
										   hot_log[i].level));
	}
	else if (hot_indexed)
		hotindex_reset(hot_index);
	if (hot_max > HOT_LOG_KEEP)
	{
		pfree(hot_log);
		hot_log = NULL;
		hot_max = 0;
	}
	hot_indexed = false;
	hot_n = 0;
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
 * The shared table and its size for a pending entry's kind.
 */
static HTAB *
kind_hash(const PendingEntry *e, int *max, Size *entrysize)
{
	if (e->key.kind == PENDING_CONSUMER)
	{
		*max = ordering_max_consumers;
		*entrysize = sizeof(ConsumerEntry);
		return consumer_hash;
	}
	*max = ordering_max_streams;
	*entrysize = sizeof(StreamEntry);
	return stream_hash;
}

/*
 * Whether publishing needs the LWLock exclusive: some pending entry has no
 * shared entry yet (and its table has room for one), or needs a sketch the
 * pool can still give.  The caller holds the LWLock shared; this adds up
 * the frames of each entry into its total and remembers the shared entry it
 * found (valid while the lock is held).
 */
static bool
publish_needs_exclusive(void)
{
	static const Counters zero_counters;
	bool		exclusive = false;

	for (int i = 0; i < pending_ndirty; i++)
	{
		PendingEntry *e = pending_dirty[i];
		PendingFrame *f;
		StatsKey	key;
		HTAB	   *hash;
		int			max;
		Size		entrysize;
		void	   *entry;

		memset(&e->total, 0, sizeof(Counters));
		e->shared = NULL;
		for (f = e->top; f != NULL; f = f->next)
			add_counters(&e->total, &f->c);
		/* all of it was in rolled-back savepoints: nothing to publish */
		if (!e->hot && memcmp(&e->total, &zero_counters, sizeof(Counters)) == 0)
			continue;
		if (exclusive)
			continue;

		memset(&key, 0, sizeof(key));
		key.dbid = MyDatabaseId;
		memcpy(key.name, e->key.name, sizeof(key.name));
		hash = kind_hash(e, &max, &entrysize);
		entry = hash_search(hash, &key, HASH_FIND, NULL);
		e->shared = entry;
		if (entry == NULL)
			exclusive = hash_get_num_entries(hash) < max;
		else if (e->hot && ENTRY_SKETCH(entry) == 0)
			exclusive = stats_shared->sketches_used < ordering_hot_sketches;
	}
	return exclusive;
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
	bool		no_sketch = false;
	int			i;

	for (i = 0; i < hot_n; i++)
		hot_log[i].owner->hot = true;

	LWLockAcquire(stats_shared->lock, mode);
	if (publish_needs_exclusive())
	{
		/* taken again from the start: no entry was looked at yet */
		LWLockRelease(stats_shared->lock);
		mode = LW_EXCLUSIVE;
		LWLockAcquire(stats_shared->lock, mode);
	}

	for (i = 0; i < pending_ndirty; i++)
	{
		PendingEntry *e = pending_dirty[i];
		StatsKey	key;
		HTAB	   *hash;
		int			max;
		Size		entrysize;
		void	   *entry;

		if (!e->hot && memcmp(&e->total, &zero_counters, sizeof(Counters)) == 0)
		{
			e->shared = NULL;
			continue;
		}

		/*
		 * In shared mode, the lock was held since publish_needs_exclusive()
		 * looked the entry up, and what was missing stays missing (its table
		 * is full): never upgrade here, the entries found so far must stay
		 * valid.
		 */
		if (mode == LW_EXCLUSIVE)
		{
			memset(&key, 0, sizeof(key));
			key.dbid = MyDatabaseId;
			memcpy(key.name, e->key.name, sizeof(key.name));
			hash = kind_hash(e, &max, &entrysize);
			entry = shared_entry(hash, max, entrysize, &key, &mode);
		}
		else
			entry = e->shared;
		if (entry == NULL)
		{
			dropped = true;
			continue;
		}
		e->shared = entry;

		if (e->key.kind == PENDING_CONSUMER)
		{
			ConsumerEntry *ce = (ConsumerEntry *) entry;

			SpinLockAcquire(&ce->mutex);
			add_counters(&ce->c, &e->total);
			SpinLockRelease(&ce->mutex);
		}
		else
		{
			StreamEntry *se = (StreamEntry *) entry;

			SpinLockAcquire(&se->mutex);
			se->assigned = ordering_counter_add(se->assigned,
												e->total.events[STREAM_ASSIGNED]);
			se->reconcile_behind =
				ordering_counter_add(se->reconcile_behind,
									 e->total.events[STREAM_RECONCILE_BEHIND]);
			se->reconcile_republished =
				ordering_counter_add(se->reconcile_republished,
									 e->total.events[STREAM_RECONCILE_REPUBLISHED]);
			se->reconcile_purged =
				ordering_counter_add(se->reconcile_purged,
									 e->total.events[STREAM_RECONCILE_PURGED]);
			SpinLockRelease(&se->mutex);
		}

		if (e->hot && ENTRY_SKETCH(entry) == 0)
		{
			if (mode == LW_EXCLUSIVE &&
				stats_shared->sketches_used < ordering_hot_sketches)
			{
				int			s = stats_shared->sketches_used++;

				ordering_sketch_clear(HOT_SKETCH(s), ordering_hot_size);
				ENTRY_SKETCH(entry) = s + 1;
			}
			else
				no_sketch = true;
		}
	}

	for (i = 0; i < hot_n; i++)
	{
		PendingHot *h = &hot_log[i];
		int			s;

		if (h->n == 0 || h->owner->shared == NULL)
			continue;
		s = ENTRY_SKETCH(h->owner->shared) - 1;
		if (s < 0)
			continue;
		SpinLockAcquire(&hot_locks[s]);
		ordering_sketch_add(HOT_SKETCH(s), h->hash, h->id, h->n);
		SpinLockRelease(&hot_locks[s]);
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
	if (no_sketch && !warned_sketches)
	{
		warned_sketches = true;
		ereport(WARNING,
				(errmsg("ordering hot-resource sketches are all in use, hot resources of new consumers or streams are not counted"),
				 errhint("Raise ordering.hot_resources_sketches, or call ordering.stats_reset().")));
	}
}

/*
 * Hook: a supplied sequence number of a stream was refused (40001).  Counted
 * into shared memory at once, as the transaction is about to roll back
 * (file header).  Never raises: a full table drops the count, like commits.
 */
void
ordering_stats_sequence_conflict(const char *stream)
{
	LWLockMode	mode = LW_SHARED;
	StatsKey	key;
	StreamEntry *entry;

	if (stats_shared == NULL)
		return;
	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	copy_name(key.name, stream);

	LWLockAcquire(stats_shared->lock, mode);
	entry = shared_entry(stream_hash, ordering_max_streams, sizeof(StreamEntry),
						 &key, &mode);
	if (entry != NULL)
	{
		SpinLockAcquire(&entry->mutex);
		entry->conflicts = ordering_counter_add(entry->conflicts, 1);
		SpinLockRelease(&entry->mutex);
	}
	LWLockRelease(stats_shared->lock);
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
 * A subtransaction at "level" ends: drop its entries of the hot log (the
 * tail at that level), or, when it committed, move them to the parent
 * level, adding each to the parent's entry of the same resource if there
 * is one (it is then left with n = 0, published as nothing).
 */
static void
pending_hot_subxact_end(int level, bool committed)
{
	int			first = hot_n;

	while (first > 0 && hot_log[first - 1].level >= level)
		first--;
	for (int i = first; i < hot_n; i++)
	{
		PendingHot *h = &hot_log[i];
		int			parent;

		Assert(h->level == level);
		if (hot_indexed)
			(void) hotindex_delete(hot_index, hot_key(h->owner, h->hash, level));
		if (!committed)
			continue;
		h->level = level - 1;
		parent = pending_hot_find(hot_key(h->owner, h->hash, level - 1), first);
		if (parent >= 0)
		{
			hot_log[parent].n = ordering_counter_add(hot_log[parent].n, h->n);
			h->n = 0;
		}
		else if (hot_indexed)
		{
			bool		exists;

			hotindex_insert(hot_index, hot_key(h->owner, h->hash, level - 1),
							&exists)->entry = i;
		}
	}
	if (!committed)
		hot_n = first;
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

	/* its hot-log entries are the tail of the log (file header) */
	if (hot_n > 0 && hot_log[hot_n - 1].level >= level)
		pending_hot_subxact_end(level, event == SUBXACT_EVENT_COMMIT_SUB);
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
 * Columns of ordering_internal.consumer_statistics(): the name, the events
 * up to GAP_ESCALATED, the buckets, their sum, then the events added in 1.1.
 * ordering.consumer_counters() of 1.0 and 1.1 (dropped by 1.2, and still
 * called by a database not yet updated) is the same function with the first
 * CONSUMER_COLUMNS_1_0 of them.
 */
#define CONSUMER_COLUMNS_1_0	(ORDERING_EVENT_GAP_ESCALATED + 4)
#define CONSUMER_COLUMNS		(ORDERING_NUM_EVENTS + 3)

/*
 * ordering_internal.consumer_statistics() and ordering.consumer_counters():
 * the counters of the consumers of the current database, one row each,
 * buckets not cumulative.  Fills as many columns as the caller's row type
 * has (the 1.0 function has fewer), in the order above.
 */
Datum
ordering_consumer_counters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS hs;
	ConsumerEntry *entry;

	check_preloaded();
	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts < CONSUMER_COLUMNS_1_0 ||
		rsinfo->setDesc->natts > CONSUMER_COLUMNS)
		elog(ERROR, "unexpected row type of %d columns for consumer statistics",
			 rsinfo->setDesc->natts);

	LWLockAcquire(stats_shared->lock, LW_SHARED);
	hash_seq_init(&hs, consumer_hash);
	while ((entry = hash_seq_search(&hs)) != NULL)
	{
		Datum		values[CONSUMER_COLUMNS];
		bool		nulls[CONSUMER_COLUMNS] = {0};
		Datum		buckets[ORDERING_NUM_BUCKETS];
		Counters	c;
		int			i;
		int			col;

		if (entry->key.dbid != MyDatabaseId)
			continue;
		SpinLockAcquire(&entry->mutex);
		c = entry->c;
		SpinLockRelease(&entry->mutex);

		col = 0;
		values[col++] = CStringGetTextDatum(entry->key.name);
		for (i = 0; i <= ORDERING_EVENT_GAP_ESCALATED; i++)
			values[col++] = Int64GetDatum(c.events[i]);
		for (i = 0; i < ORDERING_NUM_BUCKETS; i++)
			buckets[i] = Int64GetDatum(c.buckets[i]);
		values[col++] =
			PointerGetDatum(construct_array(buckets, ORDERING_NUM_BUCKETS,
											INT8OID, sizeof(int64),
											FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		values[col++] = Int64GetDatum(c.distance_sum);
		for (i = ORDERING_EVENT_GAP_ESCALATED + 1; i < ORDERING_NUM_EVENTS; i++)
			values[col++] = Int64GetDatum(c.events[i]);
		Assert(col == CONSUMER_COLUMNS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(stats_shared->lock);
	return (Datum) 0;
}

/*
 * Columns of ordering_internal.stream_statistics(): the name, sequence
 * numbers assigned, then those added in 1.1: supplied numbers refused, and
 * what reconciliation found and did.  ordering.stream_counters() of 1.0 and
 * 1.1 (dropped by 1.2, and still called by a database not yet updated) is
 * the same function with the first STREAM_COLUMNS_1_0 of them.
 */
#define STREAM_COLUMNS_1_0		2
#define STREAM_COLUMNS			6

/*
 * ordering_internal.stream_statistics() and ordering.stream_counters(): the
 * counters of the streams of the current database, one row each.  Fills as
 * many columns as the caller's row type has, in the order above.
 */
Datum
ordering_stream_counters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS hs;
	StreamEntry *entry;
	int			natts;

	check_preloaded();
	InitMaterializedSRF(fcinfo, 0);
	natts = rsinfo->setDesc->natts;
	if (natts < STREAM_COLUMNS_1_0 || natts > STREAM_COLUMNS)
		elog(ERROR, "unexpected row type of %d columns for stream statistics",
			 natts);

	LWLockAcquire(stats_shared->lock, LW_SHARED);
	hash_seq_init(&hs, stream_hash);
	while ((entry = hash_seq_search(&hs)) != NULL)
	{
		Datum		values[STREAM_COLUMNS];
		bool		nulls[STREAM_COLUMNS] = {0};
		int64		counts[STREAM_COLUMNS - 1];

		if (entry->key.dbid != MyDatabaseId)
			continue;
		SpinLockAcquire(&entry->mutex);
		counts[0] = entry->assigned;
		counts[1] = entry->conflicts;
		counts[2] = entry->reconcile_behind;
		counts[3] = entry->reconcile_republished;
		counts[4] = entry->reconcile_purged;
		SpinLockRelease(&entry->mutex);

		values[0] = CStringGetTextDatum(entry->key.name);
		for (int i = 1; i < STREAM_COLUMNS; i++)
			values[i] = Int64GetDatum(counts[i - 1]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(stats_shared->lock);
	return (Datum) 0;
}

/*
 * ordering_internal.stats_reset_time(): since when the counters count.
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
	/* the entries that held the sketches are gone */
	stats_shared->sketches_used = 0;
	LWLockRelease(stats_shared->lock);
	PG_RETURN_VOID();
}

/*
 * ordering.hot_resources(kind text, name text, n integer)
 * returns table (resource_id text, events bigint, max_error bigint)
 *
 * The n busiest resources of a stream or consumer of the current database
 * from its sketch, busiest first: "events" overcounts by at most max_error,
 * which is at most the events of that stream or consumer since the last
 * reset divided by ordering.hot_resources_size (sketch.h).  Nothing for a
 * name without a sketch.
 */
Datum
ordering_hot_resources(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *kind;
	HTAB	   *hash = NULL;
	int32		n;
	StatsKey	key;
	void	   *entry;
	Sketch	   *copy = NULL;
	int			used;

	check_preloaded();
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null",
						PG_ARGISNULL(0) ? "kind" : PG_ARGISNULL(1) ? "name" : "n")));
	kind = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (strcmp(kind, "stream") == 0)
		hash = stream_hash;
	else if (strcmp(kind, "consumer") == 0)
		hash = consumer_hash;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kind must be \"stream\" or \"consumer\", not \"%s\"", kind)));
	n = PG_GETARG_INT32(2);
	if (n < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n must not be negative, got %d", n)));
	InitMaterializedSRF(fcinfo, 0);

	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	copy_name(key.name, text_to_cstring(PG_GETARG_TEXT_PP(1)));

	LWLockAcquire(stats_shared->lock, LW_SHARED);
	entry = hash_search(hash, &key, HASH_FIND, NULL);
	if (entry != NULL && ENTRY_SKETCH(entry) != 0)
	{
		int			s = ENTRY_SKETCH(entry) - 1;

		copy = palloc(hot_stride);
		SpinLockAcquire(&hot_locks[s]);
		memcpy(copy, HOT_SKETCH(s), SKETCH_BYTES(ordering_hot_size));
		SpinLockRelease(&hot_locks[s]);
	}
	LWLockRelease(stats_shared->lock);
	if (copy == NULL)
		return (Datum) 0;

	used = ordering_sketch_sort(copy);
	for (int i = 0; i < Min(used, n); i++)
	{
		Datum		values[3];
		bool		nulls[3] = {0};

		values[0] = CStringGetTextDatum(copy->counters[i].id);
		values[1] = Int64GetDatum(copy->counters[i].count);
		values[2] = Int64GetDatum(copy->counters[i].error);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
