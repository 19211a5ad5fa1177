/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The PostgreSQL APIs whose form differs between the releases we build
 *	  for, each behind one name our code uses on every release.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_COMPAT_H
#define ORDERING_COMPAT_H

#include "access/genam.h"
#include "access/heapam.h"
#include "utils/acl.h"
#include "utils/relcache.h"

/* The primary key of a relation (18 added a "deferrable_ok" argument) */
#define ordering_primary_key_index(rel) RelationGetPrimaryKeyIndex(rel)

/* Every indexed column of a relation */
#define ORDERING_INDEX_ATTR_BITMAP_ALL INDEX_ATTR_BITMAP_ALL

/* An index scan (18 added an instrumentation argument) */
#define ordering_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan(heap, index, snapshot, nkeys, norderbys)

/* Which index entries a new version needs after heap_update() */
typedef enum OrderingIndexUpdate
{
	ORDERING_INDEXES_NONE,		/* heap-only: none */
	ORDERING_INDEXES_ALL		/* a new entry in every index */
} OrderingIndexUpdate;

/*
 * heap_update(), telling which index entries the new version needs (16
 * returns that; before, a version that is not heap-only needs them all).
 */
static inline TM_Result
ordering_heap_update(Relation rel, ItemPointer otid, HeapTuple newtup,
					 CommandId cid, TM_FailureData *tmfd,
					 OrderingIndexUpdate *indexes)
{
	LockTupleMode lockmode;
	TM_Result	result;

	result = heap_update(rel, otid, newtup, cid, InvalidSnapshot, true, tmfd,
						 &lockmode);
	*indexes = HeapTupleIsHeapOnly(newtup) ? ORDERING_INDEXES_NONE :
		ORDERING_INDEXES_ALL;
	return result;
}

/*
 * Overwrite a tuple in place with one of the same length (newtup->t_self
 * names it), WAL-logged.  The caller guarantees that no snapshot can see the
 * tuple (see owned_rows.c).
 */
static inline void
ordering_overwrite_in_place(Relation rel, HeapTuple newtup)
{
	heap_inplace_update(rel, newtup);
}

/* May the role execute the function? (object_aclcheck() since 16) */
#define ordering_proc_aclcheck(funcid, roleid, mode) \
	pg_proc_aclcheck(funcid, roleid, mode)

#endif							/* ORDERING_COMPAT_H */
