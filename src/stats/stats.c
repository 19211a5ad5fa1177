/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  The statistics hooks of the producer and consumer code: counts pending
 *	  in backend memory, published into shared memory at commit (README.md,
 *	  "Pending counts"; stats.h says when each event is counted).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "process_utility.h"
#include "settings.h"
#include "sketch.h"
#include "stats.h"
#include "stats_prepared.h"
#include "stats_shmem.h"

PG_FUNCTION_INFO_V1(ordering_count_reconciled);

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

/* The GID of the PREPARE TRANSACTION of the running transaction, or "" */
static char preparing_gid[GIDSIZE];

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

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
 * (README.md).  Never raises: a full table drops the count, like commits.
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
 * The pending counts of the transaction being prepared, as a record for
 * stats_prepared.c to keep until COMMIT PREPARED: a PreparedCountsHeader,
 * then each entry that counted something (kind, name, its frames added
 * up), then the hot log, each entry naming its owner by rank.  At PREPARE
 * every subtransaction has ended, so each entry has one frame at most and
 * the hot log is at level 1.  Runs in the XACT_EVENT_PREPARE callback,
 * where an error would hit a transaction that is prepared already: the
 * record is allocated without raising, and NULL (nothing kept) when there
 * is no memory for it.  Its length goes to *len.
 */
static char *
pending_save(Size *len)
{
	static const Counters zero_counters;
	PreparedCountsHeader *hdr;
	PreparedCountsEntry *entries;
	PreparedCountsHot *hot;
	char	   *record;

	record = MemoryContextAllocExtended(TopTransactionContext,
										PREPARED_COUNTS_SIZE(pending_ndirty, hot_n),
										MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM |
										MCXT_ALLOC_ZERO);
	if (record == NULL)
		return NULL;
	hdr = (PreparedCountsHeader *) record;
	entries = (PreparedCountsEntry *) (record + sizeof(PreparedCountsHeader));
	hdr->magic = PREPARED_COUNTS_MAGIC;
	hdr->dbid = MyDatabaseId;

	for (int i = 0; i < pending_ndirty; i++)
		pending_dirty[i]->hot = false;
	for (int i = 0; i < hot_n; i++)
		if (hot_log[i].n > 0)
			hot_log[i].owner->hot = true;
	for (int i = 0; i < pending_ndirty; i++)
	{
		PendingEntry *e = pending_dirty[i];
		PreparedCountsEntry *pe = &entries[hdr->entries];

		e->shared = NULL;
		for (PendingFrame *f = e->top; f != NULL; f = f->next)
			add_counters(&pe->c, &f->c);
		if (!e->hot && memcmp(&pe->c, &zero_counters, sizeof(Counters)) == 0)
			continue;
		pe->kind = e->key.kind;
		memcpy(pe->name, e->key.name, sizeof(pe->name));
		/* the entry's rank + 1, for the hot log below */
		e->shared = (void *) (uintptr_t) ++hdr->entries;
	}

	/* the hot log goes right after the entries kept */
	hot = (PreparedCountsHot *) (entries + hdr->entries);
	for (int i = 0; i < hot_n; i++)
	{
		PendingHot *h = &hot_log[i];
		PreparedCountsHot *ph = &hot[hdr->hot];

		if (h->n == 0 || h->owner->shared == NULL)
			continue;
		ph->owner = (int32) (uintptr_t) h->owner->shared - 1;
		ph->hash = h->hash;
		ph->n = h->n;
		/* the id's bytes after its end were never written: not saved */
		strlcpy(ph->id, h->id, sizeof(ph->id));
		hdr->hot++;
	}
	for (int i = 0; i < pending_ndirty; i++)
		pending_dirty[i]->shared = NULL;
	*len = PREPARED_COUNTS_SIZE(hdr->entries, hdr->hot);
	return record;
}

/*
 * Add the counts of a prepared transaction (pending_save()'s record, "len"
 * bytes, checked by stats_prepared.c) to the pending counts of the running
 * one, which publishes them at its commit: COMMIT PREPARED's own
 * transaction.
 */
static void
pending_load(const char *data, Size len)
{
	const PreparedCountsHeader *hdr = (const PreparedCountsHeader *) data;
	const PreparedCountsEntry *entries;
	const PreparedCountsHot *hot;
	PendingEntry **owners;

	if (stats_shared == NULL || !IsTransactionState())
		return;
	Assert(len == PREPARED_COUNTS_SIZE(hdr->entries, hdr->hot));
	entries = (const PreparedCountsEntry *) (data + sizeof(PreparedCountsHeader));
	hot = (const PreparedCountsHot *) (entries + hdr->entries);
	owners = palloc(Max(hdr->entries, 1) * sizeof(PendingEntry *));
	for (int i = 0; i < hdr->entries; i++)
	{
		const PreparedCountsEntry *pe = &entries[i];

		/* a file is read back: its names end inside it, its kinds are ours */
		owners[i] = NULL;
		if ((pe->kind != PENDING_CONSUMER && pe->kind != PENDING_STREAM) ||
			memchr(pe->name, '\0', sizeof(pe->name)) == NULL)
			continue;
		add_counters(pending_counters(pe->kind, pe->name), &pe->c);
		owners[i] = pending_last;
	}
	for (int i = 0; i < hdr->hot; i++)
	{
		if (hot[i].owner < 0 || hot[i].owner >= hdr->entries ||
			owners[hot[i].owner] == NULL || ordering_hot_sketches == 0)
			continue;
		pending_hot_add(owners[hot[i].owner], GetCurrentTransactionNestLevel(),
						hot[i].hash, hot[i].id,
						strnlen(hot[i].id, ORDERING_HOT_ID_LEN - 1), hot[i].n);
	}
	pfree(owners);
}

/*
 * COMMIT PREPARED (commit) or ROLLBACK PREPARED of a GID succeeded: its
 * counts are published with the running transaction's, or dropped.  The
 * prepared transaction is committed already: nothing here raises.
 */
static void
prepared_finish(const char *gid, bool commit)
{
	Size		len;
	char	   *record = stats_prepared_take(gid, &len);

	if (record == NULL)
		return;
	if (commit)
		pending_load(record, len);
	pfree(record);
}

/*
 * ProcessUtility hook: PREPARE TRANSACTION names the GID that the
 * XACT_EVENT_PREPARE callback, when the statement ends, keeps the counts
 * under (the callbacks are not told it); COMMIT PREPARED and ROLLBACK
 * PREPARED, once they succeeded, publish or drop what was kept.
 */
static void
stats_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
					 bool readOnlyTree, ProcessUtilityContext context,
					 ParamListInfo params, QueryEnvironment *queryEnv,
					 DestReceiver *dest, QueryCompletion *qc)
{
	TransactionStmt *stmt = NULL;

	if (IsA(pstmt->utilityStmt, TransactionStmt))
		stmt = (TransactionStmt *) pstmt->utilityStmt;
	if (stmt != NULL && stmt->kind == TRANS_STMT_PREPARE)
		strlcpy(preparing_gid, stmt->gid, sizeof(preparing_gid));
	ordering_process_utility(prev_ProcessUtility, pstmt, queryString,
							 readOnlyTree, context, params, queryEnv, dest, qc);
	if (stmt != NULL && (stmt->kind == TRANS_STMT_COMMIT_PREPARED ||
						 stmt->kind == TRANS_STMT_ROLLBACK_PREPARED))
		prepared_finish(stmt->gid, stmt->kind == TRANS_STMT_COMMIT_PREPARED);
}

/*
 * Transaction callback: publish at commit, forget on abort; at prepare,
 * keep the counts under the transaction's GID (stats_prepared.c) for
 * COMMIT PREPARED to publish.  The GID is forgotten at every end.
 */
static void
stats_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_PREPARE && pending_ndirty > 0 &&
		preparing_gid[0] != '\0')
	{
		Size		len;
		char	   *record = pending_save(&len);

		if (record != NULL)
		{
			stats_prepared_keep(preparing_gid, record, len);
			pfree(record);
		}
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		preparing_gid[0] = '\0';
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

	/* its hot-log entries are the tail of the log (README.md) */
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
 * the transaction callbacks and the ProcessUtility hook of prepared
 * transactions.  Otherwise the hooks stay no-ops.
 */
void
ordering_stats_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;

	stats_shmem_init();
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = stats_ProcessUtility;

	RegisterXactCallback(stats_xact_callback, NULL);
	RegisterSubXactCallback(stats_subxact_callback, NULL);
}
