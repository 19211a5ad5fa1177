/*-------------------------------------------------------------------------
 *
 * owned_internal.h
 *	  What the two files of the storage layer share, and nobody else uses.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_OWNED_INTERNAL_H
#define ORDERING_OWNED_INTERNAL_H

#include "owned.h"

/* owned.c: the type of a column of one of the tables */
extern Oid	owned_column_type(OwnedTableId id, AttrNumber attno);

/*
 * owned_tid_cache.c: where a backend last found a key's row (the root of
 * its HOT chain), in sets of OWNED_TID_CACHE_WAYS entries, the most
 * recently found first
 */
#define OWNED_TID_CACHE_WAYS	8

typedef struct OwnedTidSlot
{
	uint32		hashcheck;		/* high half of the key's hash */
	Oid			relid;			/* InvalidOid: empty slot */
	ItemPointerData tid;		/* root of the row's HOT chain */
} OwnedTidSlot;

extern OwnedTidSlot *owned_tid_cache_set(OwnedTableId id, uint64 hash);
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

#endif							/* ORDERING_OWNED_INTERNAL_H */
