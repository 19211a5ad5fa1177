/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The PostgreSQL server APIs that differ between the major versions the
 *	  extension builds on (15 to 18), behind one name each.
 *
 * Every difference lives here, as a macro or a static inline wrapper that
 * the rest of the code calls on every version; no other file tests
 * PG_VERSION_NUM.  Each wrapper says why it exists and what it does on each
 * version.  The wrappers add no locking of their own: each takes exactly
 * the locks of the server function it wraps, and the caller holds what that
 * function needs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_COMPAT_H
#define ORDERING_COMPAT_H

#include "access/amapi.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/rel.h"
#include "utils/relcache.h"

/*
 * The varlena macros (VARDATA_ANY, VARSIZE_ANY_EXHDR): 16 moved them from
 * postgres.h into varatt.h.
 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * A function that never returns.  18 replaced the attribute written after
 * the declaration (pg_attribute_noreturn()) by a specifier written before it
 * (pg_noreturn); on 15 to 17 the attribute also works in front, so
 * "ORDERING_NORETURN extern void f(void);" is right everywhere.
 */
#if PG_VERSION_NUM >= 180000
#define ORDERING_NORETURN pg_noreturn
#else
#define ORDERING_NORETURN pg_attribute_noreturn()
#endif

/*
 * The parameters of an ExecutorRun hook, and the arguments that pass them
 * on.  18 dropped execute_once (a portal now says itself whether it may run
 * again); a hook written with these names is right on every version.
 */
#if PG_VERSION_NUM >= 180000
#define ORDERING_EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count
#define ORDERING_EXECUTOR_RUN_ARGS queryDesc, direction, count
#else
#define ORDERING_EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count, \
	bool execute_once
#define ORDERING_EXECUTOR_RUN_ARGS queryDesc, direction, count, execute_once
#endif

/*
 * The primary key of a table, or InvalidOid.  18 added an argument saying
 * whether a deferrable primary key counts; before 18 a deferrable one was
 * never returned, and it is not here either: a key that is checked only at
 * commit cannot serve the probes that expect one row per key.
 */
static inline Oid
ordering_primary_key_index(Relation rel)
{
#if PG_VERSION_NUM >= 180000
	return RelationGetPrimaryKeyIndex(rel, false);
#else
	return RelationGetPrimaryKeyIndex(rel);
#endif
}

/*
 * After attribute i of a descriptor was filled by hand (memcpy of its
 * pg_attribute entry): 18 keeps a cut-down copy of each entry
 * (CompactAttribute), which tuple deforming reads and which must follow.
 */
static inline void
ordering_attribute_filled(TupleDesc desc, int i)
{
#if PG_VERSION_NUM >= 180000
	populate_compact_attribute(desc, i);
#else
	(void) desc;
	(void) i;
#endif
}

/*
 * Start an index scan.  18 added an instrumentation argument for EXPLAIN
 * ANALYZE's counts of index searches; our scans are never explained.
 */
static inline IndexScanDesc
ordering_index_beginscan(Relation heap, Relation index, Snapshot snapshot,
						 int nkeys, int norderbys)
{
#if PG_VERSION_NUM >= 180000
	return index_beginscan(heap, index, snapshot, NULL, nkeys, norderbys);
#else
	return index_beginscan(heap, index, snapshot, nkeys, norderbys);
#endif
}

/*
 * The columns (offset by FirstLowInvalidHeapAttributeNumber) that any index
 * of the table covers, in a key, an INCLUDE list, an expression or a
 * predicate.  16 split INDEX_ATTR_BITMAP_ALL into the columns that block a
 * HOT update (HOT_BLOCKING) and those only summarizing indexes such as BRIN
 * cover (SUMMARIZED); their union is the old set.  The caller frees it.
 */
static inline Bitmapset *
ordering_indexed_columns(Relation rel)
{
#if PG_VERSION_NUM >= 160000
	Bitmapset  *attrs;

	attrs = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_HOT_BLOCKING);
	return bms_add_members(attrs,
						   RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_SUMMARIZED));
#else
	return RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_ALL);
#endif
}

/*
 * Release what an index access method kept in the IndexInfo between the
 * inserts of one statement; call it once the last index_insert() with that
 * IndexInfo is done.  17 added this step (aminsertcleanup): BRIN keeps its
 * range map's buffers pinned there, and they leak without it.  Before 17
 * every insert released its own.
 */
static inline void
ordering_index_insert_cleanup(Relation index, struct IndexInfo *info)
{
#if PG_VERSION_NUM >= 170000
	index_insert_cleanup(index, info);
#endif
}

/*
 * Which indexes need an entry for the new version that heap_update() wrote.
 */
typedef enum OrderingIndexUpdate
{
	ORDERING_INDEXES_NONE,		/* a HOT update: no index needs one */
	ORDERING_INDEXES_ALL,		/* a new TID outside the HOT chain: every
								 * index */
	ORDERING_INDEXES_SUMMARIZING	/* a HOT update that changed a column of a
									 * summarizing index: only those (16+) */
} OrderingIndexUpdate;

/*
 * heap_update(), telling which indexes need an entry for the new version.
 * 16 made heap_update() answer that itself (TU_UpdateIndexes): a change of
 * a column covered only by summarizing indexes no longer prevents a HOT
 * update, but those indexes still need the new version's entry, or their
 * summaries miss its value.  Before 16 such a column prevented HOT, so the
 * answer is "every index" exactly when the new version is not heap-only.
 * *indexes is NONE unless the update succeeded.
 */
static inline TM_Result
ordering_heap_update(Relation rel, ItemPointer otid, HeapTuple newtup,
					 CommandId cid, Snapshot crosscheck, bool wait,
					 TM_FailureData *tmfd, LockTupleMode *lockmode,
					 OrderingIndexUpdate *indexes)
{
	TM_Result	result;
#if PG_VERSION_NUM >= 160000
	TU_UpdateIndexes update_indexes = TU_None;

	result = heap_update(rel, otid, newtup, cid, crosscheck, wait, tmfd,
						 lockmode, &update_indexes);
	if (result != TM_Ok || update_indexes == TU_None)
		*indexes = ORDERING_INDEXES_NONE;
	else if (update_indexes == TU_Summarizing)
		*indexes = ORDERING_INDEXES_SUMMARIZING;
	else
		*indexes = ORDERING_INDEXES_ALL;
#else
	result = heap_update(rel, otid, newtup, cid, crosscheck, wait, tmfd,
						 lockmode);
	if (result == TM_Ok && !HeapTupleIsHeapOnly(newtup))
		*indexes = ORDERING_INDEXES_ALL;
	else
		*indexes = ORDERING_INDEXES_NONE;
#endif
	return result;
}

/*
 * Whether one index needs an entry, given ordering_heap_update()'s answer:
 * the executor's rule (ExecInsertIndexTuples' onlySummarizing) for an index
 * maintained by hand.
 */
static inline bool
ordering_index_needs_entry(Relation index, OrderingIndexUpdate indexes)
{
	if (indexes == ORDERING_INDEXES_ALL)
		return true;
#if PG_VERSION_NUM >= 160000
	if (indexes == ORDERING_INDEXES_SUMMARIZING)
		return index->rd_indam->amsummarizing;
#endif
	return false;
}

/*
 * The storage layer's fast paths, all three behind this one switch: the
 * TID caches (of counters and positions, and of parked events), its own
 * pruning rule and the in-place overwrite of a version
 * of the current command (storage/README.md, "The rows", says what each does
 * and why it is safe).  Each leans on how this server's heap access method
 * behaves: a HOT update keeps the root of the chain, heap_page_prune_opt()
 * prunes whenever a page has less room than the fillfactor leaves, and
 * heap_inplace_update() exists (below).  To compare, or to rule them out,
 * build with them off (make COPT=-DORDERING_FAST_PATHS=0): rows are
 * then found through the primary key, pages are pruned by heapam's rule at
 * every visit, and every write adds a version, as an UPDATE would.
 */
#ifndef ORDERING_FAST_PATHS
#define ORDERING_FAST_PATHS 1
#endif

/*
 * Overwrite a heap tuple's data in place, without a new version:
 * newtup->t_self names the tuple, and newtup has its length and header
 * length (only fixed-width values differ).  The caller overwrites only a
 * version its current subtransaction wrote in the current command, which no
 * snapshot can see (owned_rows.c); the overwrite is WAL-logged but not seen
 * by logical decoding.  Returns false, changing nothing, where it cannot be
 * done: the caller then adds a version with heap_update().
 *
 * heap_inplace_update() does it on 15, 16 and 17, in every minor release:
 * the stable branches kept it when "Fix data loss at inplace update after
 * heap_update()" (15.9, 16.5, 17.1) gave catalogs heap_inplace_lock() and
 * heap_inplace_update_and_unlock().  18 has only that pair, and
 * heap_inplace_lock() refuses a tuple written in the current command (for a
 * catalog tuple that would mean a lost update), which is exactly the tuple
 * we overwrite.  So 18 takes heap_update(), at the cost of a version per
 * row of a statement that writes one row many times.
 */
static inline bool
ordering_heap_inplace_update(Relation rel, HeapTuple newtup)
{
#if PG_VERSION_NUM >= 180000 || !ORDERING_FAST_PATHS
	return false;
#else
	heap_inplace_update(rel, newtup);
	return true;
#endif
}

/*
 * Mark a stack copy of an active snapshot, made for visibility checks
 * during one call while the snapshot it was copied from stays active (and
 * sharing its XID arrays), as in use for those checks.  18 asserts that
 * every snapshot an MVCC check uses is registered or active
 * (HeapTupleSatisfiesMVCC), as a guard against one freed while in use; the
 * copy is neither, but lives only while its source is active, so it counts
 * as active, as 18's reorderbuffer.c marks its own copies.  It is never
 * pushed, popped, registered or freed.  Before 18 nothing checks, and the
 * copy keeps counts of zero.
 */
static inline void
ordering_snapshot_copy_in_use(Snapshot copy)
{
#if PG_VERSION_NUM >= 180000
	copy->active_count = 1;
#else
	copy->active_count = 0;
#endif
	copy->regd_count = 0;
}

/*
 * Whether a role may execute a function.  16 replaced the per-class
 * pg_*_aclcheck() functions by object_aclcheck(class, object, ...).
 */
static inline AclResult
ordering_proc_aclcheck(Oid proc, Oid role, AclMode mode)
{
#if PG_VERSION_NUM >= 160000
	return object_aclcheck(ProcedureRelationId, proc, role, mode);
#else
	return pg_proc_aclcheck(proc, role, mode);
#endif
}

#endif							/* ORDERING_COMPAT_H */
