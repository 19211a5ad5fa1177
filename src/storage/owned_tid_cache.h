/*-------------------------------------------------------------------------
 *
 * owned_tid_cache.h
 *	  The storage layer's TID caches (owned_tid_cache.c), for owned_rows.c
 *	  and owned.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_OWNED_TID_CACHE_H
#define ORDERING_OWNED_TID_CACHE_H

#include "storage/itemptr.h"

/*
 * Where a backend last found a key's row (the root of its HOT chain), in
 * sets of OWNED_TID_CACHE_WAYS entries, the most recently found first
 */
#define OWNED_TID_CACHE_WAYS	8

typedef struct OwnedTidSlot
{
	uint32		hashcheck;		/* high half of the key's hash */
	Oid			relid;			/* InvalidOid: empty slot */
	ItemPointerData tid;		/* root of the row's HOT chain */
} OwnedTidSlot;

extern OwnedTidSlot *owned_tid_cache_set(bool parked, uint64 hash);
extern void owned_tid_cache_remember(OwnedTidSlot *set, Oid relid,
									 uint64 hash, ItemPointer root);
extern void owned_tid_cache_forget(Oid relid);

/*
 * Make way "way" of a cache set its first (most recently found) entry, the
 * entries before it moving down one.
 */
static inline void
owned_tid_cache_found(OwnedTidSlot *set, int way)
{
	OwnedTidSlot tmp = set[way];

	memmove(&set[1], &set[0], way * sizeof(OwnedTidSlot));
	set[0] = tmp;
}

#endif							/* ORDERING_OWNED_TID_CACHE_H */
