/*-------------------------------------------------------------------------
 *
 * owned_tid_cache.c
 *	  The storage layer's TID caches: where each backend last found the rows
 *	  of the keyed tables and the parked events (README.md, "Finding a
 *	  row").  owned_rows.c fills and reads them; owned.c's relcache callback
 *	  empties them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "owned_tid_cache.h"

/*
 * Entries of the TID cache (a power of two), in sets of OWNED_TID_CACHE_WAYS:
 * 16 bytes each, 512 kB per backend that uses the tables (allocated on first
 * use), enough for nearly every row of 10,000 busy resources to be found
 * without the index.  Eight ways, not two: with two, the 10,000 keys spread
 * over 16,384 sets put 13% of them in a set of three or more, where each
 * evicts the next in turn and every lookup of them descends the btree
 * (bench/RESULTS.md, "batch100 per row"); with eight, fewer than 0.5% are
 * in a set of nine or more.
 */
#define OWNED_TID_CACHE_SIZE	32768

static OwnedTidSlot *owned_tid_cache = NULL;

/* The same for parked events, by (consumer, resource, seq) */
#define OWNED_PARKED_CACHE_SIZE	16384

static OwnedTidSlot *owned_parked_cache = NULL;

/*
 * Forget the cached TIDs of a table (relid), or of all (InvalidOid), in
 * one cache of "size" entries, if it was made.
 */
static void
cache_forget_in(OwnedTidSlot *cache, int size, Oid relid)
{
	if (cache != NULL)
		for (int i = 0; i < size; i++)
			if (relid == InvalidOid || cache[i].relid == relid)
				cache[i].relid = InvalidOid;
}

/*
 * Forget the cached TIDs of a table (relid), or of all (InvalidOid): called
 * by owned.c's relcache callback, since a new relfilenode always comes with
 * an invalidation of the relation's relcache entry.
 */
void
owned_tid_cache_forget(Oid relid)
{
	cache_forget_in(owned_tid_cache, OWNED_TID_CACHE_SIZE, relid);
	cache_forget_in(owned_parked_cache, OWNED_PARKED_CACHE_SIZE, relid);
}

/*
 * The set of a hash in a cache of "size" entries (OWNED_TID_CACHE_WAYS
 * entries, the most recently found first).  The cache is allocated on
 * first use: a backend that never touches the tables pays nothing for it.
 */
static inline OwnedTidSlot *
cache_set_in(OwnedTidSlot **cache, int size, uint64 hash)
{
	if (*cache == NULL)
		*cache = MemoryContextAllocZero(TopMemoryContext,
										sizeof(OwnedTidSlot) * size);
	return &(*cache)[(hash & (size / OWNED_TID_CACHE_WAYS - 1)) * OWNED_TID_CACHE_WAYS];
}

/*
 * The cache set of a key's hash, in the cache of the keyed tables' rows or,
 * for a parked event, in the parked events' own.
 */
OwnedTidSlot *
owned_tid_cache_set(bool parked, uint64 hash)
{
	if (parked)
		return cache_set_in(&owned_parked_cache, OWNED_PARKED_CACHE_SIZE, hash);
	return cache_set_in(&owned_tid_cache, OWNED_TID_CACHE_SIZE, hash);
}

/*
 * Remember a TID in a cache set, as its most recently found entry: it
 * replaces an entry of the same key (a new root after an update that left
 * the HOT chain), else an empty one, else the least recently found.
 */
void
owned_tid_cache_remember(OwnedTidSlot *set, Oid relid, uint64 hash,
						 ItemPointer root)
{
	uint32		hashcheck = (uint32) (hash >> 32);
	int			way = -1;

	for (int i = 0; i < OWNED_TID_CACHE_WAYS; i++)
	{
		if (set[i].relid == relid && set[i].hashcheck == hashcheck)
		{
			way = i;
			break;
		}
		if (way < 0 && set[i].relid == InvalidOid)
			way = i;
	}
	if (way < 0)
		way = OWNED_TID_CACHE_WAYS - 1;
	owned_tid_cache_found(set, way);
	set[0].relid = relid;
	set[0].hashcheck = hashcheck;
	set[0].tid = *root;
}
