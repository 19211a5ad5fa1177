/*-------------------------------------------------------------------------
 *
 * owned_rows.c
 *	  The storage layer's rows: found, advanced, created, scanned and removed
 *	  below the executor, with the isolation every caller gets (README.md,
 *	  "The rows").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/sysattr.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/smgr.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "owned.h"
#include "owned_tid_cache.h"

/* prune a page when it has less free space than this (README.md) */
#define OWNED_PRUNE_FREE		(BLCKSZ / 8)

/* field4 of our key locks: users' advisory locks use 1 and 2 */
#define OWNED_LOCK_FIELD4_BASE	0x4F00

/* keyed tables have this many key columns */
#define OWNED_KEYED_NKEYS		2

/*
 * The 64-bit hash of a two-text key: the TID cache's key and the key
 * lock's tag.
 */
static uint64
key_hash(const Datum *key)
{
	uint64		hash = 0;

	for (int i = 0; i < OWNED_KEYED_NKEYS; i++)
	{
		text	   *t = DatumGetTextPP(key[i]);

		hash = hash_bytes_extended((const unsigned char *) VARDATA_ANY(t),
								   VARSIZE_ANY_EXHDR(t), hash);
	}
	return hash;
}

/*
 * The 64-bit hash of a parked event's key and seq: its key in the parked
 * events' TID cache.
 */
static uint64
parked_hash(const Datum *key, int64 seq)
{
	return hash_bytes_extended((const unsigned char *) &seq, sizeof(seq),
							   key_hash(key));
}

/*
 * The cache set of a key of ordering.sequences or ordering.positions.
 */
static OwnedTidSlot *
cache_set(uint64 hash)
{
	return owned_tid_cache_set(false, hash);
}

/*
 * Remember where a key's row is: the root of its HOT chain.
 */
static void
cache_remember(Relation rel, uint64 hash, ItemPointer root)
{
	if (!ORDERING_FAST_PATHS)
		return;
	owned_tid_cache_remember(cache_set(hash), RelationGetRelid(rel), hash,
							 root);
}

/*
 * A snapshot that is "snapshot" extended to every change this transaction
 * made so far, including the current command's: a copy whose command ID is
 * past the current one.  The copy shares the source's XID arrays, so it
 * lives no longer than the call that made it.
 */
static Snapshot
extend_to_own_changes(Snapshot snapshot, SnapshotData *buf)
{
	*buf = *snapshot;
	buf->curcid = GetCurrentCommandId(false) + 1;
	ordering_snapshot_copy_in_use(buf);
	buf->copied = false;
	return buf;
}

/*
 * The snapshot of reads that answer a question (README.md).
 */
Snapshot
owned_read_snapshot(SnapshotData *buf)
{
	return extend_to_own_changes(GetActiveSnapshot(), buf);
}

/*
 * The snapshot decisions are made on (README.md): the newest committed
 * row or ours, except under SERIALIZABLE.
 */
Snapshot
owned_decision_snapshot(SnapshotData *buf)
{
	if (!IsolationIsSerializable())
		return SnapshotSelf;
	return extend_to_own_changes(GetActiveSnapshot(), buf);
}

/*
 * Prune a page that is short of room for HOT updates (README.md).  Like
 * heap_page_prune_opt(), this looks at the page without a lock: a stale
 * answer only moves the prune to a later visit.
 */
static void
maybe_prune(Relation rel, Buffer buf)
{
	if (!ORDERING_FAST_PATHS ||
		PageGetHeapFreeSpace(BufferGetPage(buf)) < OWNED_PRUNE_FREE)
		heap_page_prune_opt(rel, buf);
}

/*
 * Does a stored key column equal the key?  A compressed or external value
 * is reported as different: the caller then asks the index, which knows.
 */
static bool
column_equals(HeapTuple tuple, TupleDesc desc, AttrNumber attno, Datum key)
{
	bool		isnull;
	Datum		d = heap_getattr(tuple, attno, desc, &isnull);
	struct varlena *v;
	text	   *k = DatumGetTextPP(key);

	if (isnull)
		return false;
	v = (struct varlena *) DatumGetPointer(d);
	if (VARATT_IS_COMPRESSED(v) || VARATT_IS_EXTERNAL(v))
		return false;
	return VARSIZE_ANY_EXHDR(v) == VARSIZE_ANY_EXHDR(k) &&
		memcmp(VARDATA_ANY(v), VARDATA_ANY(k), VARSIZE_ANY_EXHDR(k)) == 0;
}

/*
 * Fill a row from a tuple found in a pinned, share-locked buffer, with the
 * table's own columns (desc: owned.c).
 */
static void
row_fill(OwnedRow *row, TupleDesc desc, HeapTuple found)
{
	row->found = true;
	row->tid = found->t_self;
	row->tuple = heap_copytuple(found);
	row->xmin = HeapTupleHeaderGetXmin(found->t_data);
	row->cmin = TransactionIdIsCurrentTransactionId(row->xmin) ?
		HeapTupleHeaderGetCmin(found->t_data) : InvalidCommandId;
	heap_deform_tuple(row->tuple, desc, row->values, row->nulls);
}

/*
 * Follow a HOT chain from its root to the version the snapshot sees, in a
 * pinned buffer, and fill the row with it.  *all_dead tells whether the
 * whole chain is dead to everyone (its index entry may then be killed);
 * with check_key, a version whose key is not ours is not taken.
 */
static bool
fetch_chain(OwnedRel *orel, Buffer buf, ItemPointer root, Snapshot snapshot,
			const Datum *check_key, bool *all_dead, OwnedRow *row)
{
	Relation	rel = orel->rel;
	HeapTupleData tuple;
	ItemPointerData tid = *root;
	bool		found;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	found = heap_hot_search_buffer(&tid, rel, buf, snapshot, &tuple, all_dead,
								   true);
	for (int i = 0; found && check_key != NULL && i < OWNED_KEYED_NKEYS; i++)
		found = column_equals(&tuple, RelationGetDescr(rel), i + 1,
							  check_key[i]);
	/* a parked event's key goes on with its seq */
	if (found && check_key != NULL && orel->id == OWNED_PARKED)
	{
		bool		isnull;
		Datum		seq = heap_getattr(&tuple, PARKED_SEQ,
									   RelationGetDescr(rel), &isnull);

		found = !isnull && DatumGetInt64(seq) ==
			DatumGetInt64(check_key[PARKED_SEQ - 1]);
	}
	if (found)
		row_fill(row, orel->desc, &tuple);
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	return found;
}

/*
 * Whether block blkno of the table exists: a cached TID may point past the
 * end of a table that VACUUM truncated since.  We first look at the size the
 * table's SMgrRelation remembers: it may be too small (another backend
 * extended the table: then we ask the kernel), never too large while we
 * hold our lock, because smgrtruncate() sends an smgr invalidation before it
 * touches the file, under AccessExclusiveLock, and we process it when we
 * lock the table.  That is the rule that keeps core's smgr_targblock from
 * pointing past the end.
 */
static bool
block_exists(Relation rel, BlockNumber blkno)
{
	BlockNumber known = RelationGetSmgr(rel)->smgr_cached_nblocks[MAIN_FORKNUM];

	if (known != InvalidBlockNumber && blkno < known)
		return true;
	return blkno < RelationGetNumberOfBlocks(rel);
}

/*
 * Look for a key of a keyed table through the TID cache.
 */
static bool
fetch_cached(OwnedRel *orel, const Datum *key, uint64 hash, Snapshot snapshot,
			 OwnedRow *row)
{
	Relation	rel = orel->rel;
	OwnedTidSlot *set;

	if (!ORDERING_FAST_PATHS)
		return false;
	set = owned_tid_cache_set(orel->id == OWNED_PARKED, hash);
	for (int way = 0; way < OWNED_TID_CACHE_WAYS; way++)
	{
		OwnedTidSlot *slot = &set[way];
		Buffer		buf;
		bool		found;

		if (slot->relid != RelationGetRelid(rel) ||
			slot->hashcheck != (uint32) (hash >> 32) ||
			!block_exists(rel, ItemPointerGetBlockNumber(&slot->tid)))
			continue;
		buf = ReadBuffer(rel, ItemPointerGetBlockNumber(&slot->tid));
		maybe_prune(rel, buf);
		found = fetch_chain(orel, buf, &slot->tid, snapshot, key, NULL, row);
		ReleaseBuffer(buf);
		if (found)
		{
			if (way > 0)
				owned_tid_cache_found(set, way);
			return true;
		}
		slot->relid = InvalidOid;	/* stale: forget it */
	}
	return false;
}

/*
 * Initialize scan keys on the first nkeys columns of a table's primary key
 * (equality), and optionally "column nkeys + 1 <strategy> bound" on a bigint
 * column.  Returns how many keys it filled.  The type and the collation of
 * each column are the descriptor's: owned.c checked them against the
 * definition and the primary key's ("C" for text in the extension's own
 * tables, a deterministic one in a table found by OID).
 */
static int
init_scan_keys(OwnedRel *orel, ScanKey keys, const Datum *key, int nkeys,
			   StrategyNumber strategy, Datum bound)
{
	static const RegProcedure int8procs[BTMaxStrategyNumber + 1] = {
		InvalidOid, F_INT8LT, F_INT8LE, F_INT8EQ, F_INT8GE, F_INT8GT
	};
	int			n = 0;

	for (; n < nkeys; n++)
	{
		Form_pg_attribute att = TupleDescAttr(orel->desc, n);

		ScanKeyInit(&keys[n], n + 1, BTEqualStrategyNumber,
					att->atttypid == TEXTOID ? F_TEXTEQ :
					att->atttypid == REGCLASSOID ? F_OIDEQ : F_INT8EQ,
					key[n]);
		if (att->atttypid == TEXTOID)
			keys[n].sk_collation = att->attcollation;
	}
	if (strategy != InvalidStrategy)
	{
		Assert(TupleDescAttr(orel->desc, n)->atttypid == INT8OID);
		ScanKeyInit(&keys[n], n + 1, strategy, int8procs[strategy], bound);
		n++;
	}
	return n;
}

/*
 * Begin a scan of the table's primary key for the rows whose first nkeys
 * columns equal "key" (and, with a strategy, whose next one compares to
 * "bound"), with the snapshot given.
 */
static IndexScanDesc
pk_scan_begin(OwnedRel *orel, const Datum *key, int nkeys,
			  StrategyNumber strategy, Datum bound, Snapshot snapshot)
{
	ScanKeyData keys[INDEX_MAX_KEYS];
	int			n = init_scan_keys(orel, keys, key, nkeys, strategy, bound);
	IndexScanDesc scan;

	scan = ordering_index_beginscan(orel->rel, owned_pk(orel), snapshot, n, 0);
	index_rescan(scan, keys, n, NULL, 0);
	return scan;
}

/*
 * Find the row of a key (the table's primary key columns) that the snapshot
 * sees; fills "row" and returns whether there is one.  The key columns of
 * row->values are filled in either way.  Keyed tables try the TID cache
 * first (README.md).
 */
bool
owned_fetch(OwnedRel *orel, const Datum *key, Snapshot snapshot,
			OwnedRow *row)
{
	Relation	rel = orel->rel;
	bool		keyed = orel->id == OWNED_SEQUENCES || orel->id == OWNED_POSITIONS;
	uint64		hash = keyed ? key_hash(key) : 0;
	IndexScanDesc scan;
	ItemPointer tid;
	Buffer		buf = InvalidBuffer;

	memset(row, 0, sizeof(OwnedRow));
	/* a row found through the cache never opens the index */
	if (keyed && fetch_cached(orel, key, hash, snapshot, row))
		return true;

	scan = pk_scan_begin(orel, key, orel->nkeys, InvalidStrategy, 0, snapshot);
	while ((tid = index_getnext_tid(scan, ForwardScanDirection)) != NULL)
	{
		bool		all_dead = false;

		if (!BufferIsValid(buf) ||
			BufferGetBlockNumber(buf) != ItemPointerGetBlockNumber(tid))
		{
			buf = ReleaseAndReadBuffer(buf, rel, ItemPointerGetBlockNumber(tid));
			maybe_prune(rel, buf);
		}
		if (fetch_chain(orel, buf, tid, snapshot, NULL, &all_dead, row))
		{
			if (keyed)
				cache_remember(rel, hash, tid);
			break;
		}
		/* as index_fetch_heap() does: later scans skip a dead chain */
		if (!scan->xactStartedInRecovery)
			scan->kill_prior_tuple = all_dead;
	}
	if (BufferIsValid(buf))
		ReleaseBuffer(buf);
	index_endscan(scan);

	if (!row->found)
		for (int i = 0; i < orel->nkeys; i++)
			row->values[i] = key[i];
	return row->found;
}

/*
 * Find the parked event "seq" of a key of ordering.parked (or of a table of
 * its shape) through the TID cache alone (README.md): true, with the row,
 * when the cache leads to a version of it that the snapshot sees; false
 * says nothing about whether it is parked (ask the index).
 */
bool
owned_fetch_parked_cached(OwnedRel *orel, const Datum *key, int64 seq,
						  Snapshot snapshot, OwnedRow *row)
{
	Datum		full[OWNED_KEYED_NKEYS + 1];

	Assert(orel->id == OWNED_PARKED);
	memset(row, 0, sizeof(OwnedRow));
	full[0] = key[0];
	full[1] = key[1];
	full[PARKED_SEQ - 1] = Int64GetDatum(seq);
	return fetch_cached(orel, full, parked_hash(key, seq), snapshot, row);
}

/*
 * The columns whose new value differs from the row's, offset as the
 * relcache's attribute bitmaps are.
 */
static Bitmapset *
changed_columns(TupleDesc desc, const OwnedRow *row, Datum *values,
				bool *nulls)
{
	Bitmapset  *changed = NULL;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (row->nulls[i] != nulls[i] ||
			(!nulls[i] && !datumIsEqual(row->values[i], values[i],
										att->attbyval, att->attlen)))
			changed = bms_add_member(changed,
									 i + 1 - FirstLowInvalidHeapAttributeNumber);
	}
	return changed;
}

/*
 * Was the row's version written by the current subtransaction in the
 * current command?  (No snapshot can see such a version: README.md.)
 */
static bool
written_this_command(const OwnedRow *row)
{
	return TransactionIdIsValid(row->xmin) &&
		TransactionIdEquals(row->xmin, GetCurrentTransactionIdIfAny()) &&
		row->cmin == GetCurrentCommandId(false);
}

/*
 * Replace the row found by a new version with these values.  Returns false,
 * changing nothing, when a concurrent transaction changed or deleted the
 * row first and committed (we waited for it).
 */
static bool
write_version(OwnedRel *orel, const OwnedRow *row, Datum *values,
			  bool *nulls)
{
	Relation	rel = orel->rel;
	HeapTuple	newtup = heap_form_tuple(orel->desc, values, nulls);
	Bitmapset  *changed = changed_columns(orel->desc, row, values, nulls);
	OrderingIndexUpdate indexes;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	TM_Result	result;

	if (written_this_command(row))
	{
		/* only the current subtransaction's own version, never a parent's */
		Assert(TransactionIdEquals(row->xmin, GetCurrentTransactionIdIfAny()));
		newtup->t_self = row->tid;
		if (!RelationIsLogicallyLogged(rel) &&
			newtup->t_len == row->tuple->t_len &&
			newtup->t_data->t_hoff == row->tuple->t_data->t_hoff &&
			!owned_columns_indexed(orel, changed) &&
			ordering_heap_inplace_update(rel, newtup))
		{
			heap_freetuple(newtup);
			bms_free(changed);
			return true;
		}
		/* a version of the current command cannot be updated until ... */
		CommandCounterIncrement();
	}

	result = ordering_heap_update(rel, (ItemPointer) &row->tid, newtup,
								  GetCurrentCommandId(true), InvalidSnapshot,
								  true, &tmfd, &lockmode, &indexes);
	switch (result)
	{
		case TM_Ok:
			if (indexes != ORDERING_INDEXES_NONE)
				owned_index_insert(orel, newtup, changed, indexes);
			/* a version outside the HOT chain is the root of a new one */
			if (indexes == ORDERING_INDEXES_ALL &&
				(orel->id == OWNED_SEQUENCES || orel->id == OWNED_POSITIONS))
				cache_remember(rel, key_hash(values), &newtup->t_self);
			break;
		case TM_Updated:
		case TM_Deleted:
			break;
		default:
			/* we saw the newest version, ours or committed */
			elog(ERROR, "unexpected heap_update status %u on %s.%s", result,
				 get_namespace_name(RelationGetNamespace(rel)),
				 RelationGetRelationName(rel));
	}
	heap_freetuple(newtup);
	bms_free(changed);
	return result == TM_Ok;
}

/*
 * The key lock of a key of a keyed table (README.md).  Two keys share a
 * lock only if their 64-bit hashes collide: then they wait for each other
 * needlessly, but stay correct.
 */
static void
key_lock_tag(LOCKTAG *tag, OwnedTableId id, uint64 hash)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (hash >> 32),
						 (uint32) hash, OWNED_LOCK_FIELD4_BASE + id);
}

/*
 * Probe the primary key with SnapshotDirty: is there a row of the key,
 * committed, ours, or being inserted or deleted by another transaction?
 * *xwait and *token name a transaction to wait for, if any.
 */
static bool
probe_dirty(OwnedRel *orel, const Datum *key, TransactionId *xwait,
			uint32 *token, ItemPointer tid)
{
	SnapshotData dirty;
	IndexScanDesc scan;
	TupleTableSlot *slot = table_slot_create(orel->rel, NULL);
	bool		found;

	InitDirtySnapshot(dirty);
	scan = pk_scan_begin(orel, key, orel->nkeys, InvalidStrategy, 0, &dirty);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);

	/*
	 * The dirty snapshot's fields describe the last tuple it was asked about,
	 * and are unset when no tuple was: read them only for a hit (as
	 * check_exclusion_or_unique_constraint does).
	 */
	*xwait = InvalidTransactionId;
	*token = 0;
	if (found)
	{
		*xwait = TransactionIdIsValid(dirty.xmin) ? dirty.xmin : dirty.xmax;
		*token = dirty.speculativeToken;
		*tid = slot->tts_tid;
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	return found;
}

/*
 * Insert a row, maintaining every index (owned.c); the caller has made sure
 * its key is new.
 */
static void
insert_row(OwnedRel *orel, Datum *values, bool *nulls)
{
	HeapTuple	tuple = heap_form_tuple(orel->desc, values, nulls);

	heap_insert(orel->rel, tuple, GetCurrentCommandId(true), 0, NULL);
	owned_index_insert(orel, tuple, NULL, ORDERING_INDEXES_ALL);
	if (orel->id == OWNED_SEQUENCES || orel->id == OWNED_POSITIONS)
		cache_remember(orel->rel, key_hash(values), &tuple->t_self);
	else if (orel->id == OWNED_PARKED && ORDERING_FAST_PATHS)
	{
		uint64		hash = parked_hash(values,
									   DatumGetInt64(values[PARKED_SEQ - 1]));

		owned_tid_cache_remember(owned_tid_cache_set(true, hash),
								 RelationGetRelid(orel->rel), hash,
								 &tuple->t_self);
	}
	heap_freetuple(tuple);
}

/*
 * Fail with 40001: a concurrent transaction created or changed ("what") a
 * row of "orel" that ours may not decide on again (under SERIALIZABLE, as
 * an UPDATE or INSERT ... ON CONFLICT of the row would fail; or a row whose
 * key the caller was to serialize itself).
 */
static void
concurrent_change(OwnedRel *orel, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent update"),
			 errdetail("A row of %s.%s was %s by a concurrent transaction.",
					   get_namespace_name(RelationGetNamespace(orel->rel)),
					   RelationGetRelationName(orel->rel), what)));
}

/*
 * Create the row of a key that the decision snapshot did not show (README.md).
 * Returns false, having inserted nothing, when the row exists (or
 * existed: we waited for its inserter or deleter): then look again.
 */
static bool
create_row(OwnedRel *orel, const Datum *key, Datum *values, bool *nulls)
{
	LOCKTAG		tag;
	TransactionId xwait;
	uint32		token;
	ItemPointerData tid;
	bool		exists;

	if (orel->routing_att != 0)
		owned_fill_routing(orel, values, nulls);
	key_lock_tag(&tag, orel->id, key_hash(key));
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	exists = probe_dirty(orel, key, &xwait, &token, &tid);
	if (!exists)
		insert_row(orel, values, nulls);
	LockRelease(&tag, ExclusiveLock, false);
	if (!exists)
		return true;

	if (TransactionIdIsValid(xwait))
	{
		if (token != 0)
			SpeculativeInsertionWait(xwait, token);
		else
			XactLockTableWait(xwait, orel->rel, &tid, XLTW_InsertIndex);
	}
	else if (IsolationIsSerializable())
	{
		/*
		 * Committed, or ours; ours the decision snapshot shows.  So another
		 * transaction created the row after our snapshot: an INSERT ... ON
		 * CONFLICT would fail here too.
		 */
		concurrent_change(orel, "created");
	}
	return false;
}

/*
 * Decide and write one row of a keyed table (README.md): find the row of
 * the key with the decision snapshot, let decide() say what it becomes, and
 * write that, creating the row if needed.  If a concurrent transaction
 * changed the row first, decide again on its version (or, under
 * SERIALIZABLE, fail with 40001).  On return "row" is the row as the final
 * decision saw it.
 */
void
owned_advance(OwnedRel *orel, const Datum *key, OwnedDecide decide, void *arg,
			  OwnedRow *row)
{
	SnapshotData buf;
	Snapshot	snapshot = owned_decision_snapshot(&buf);
	Datum		values[OWNED_MAX_NATTS];
	bool		nulls[OWNED_MAX_NATTS];

	for (;;)
	{
		(void) owned_fetch(orel, key, snapshot, row);
		memcpy(values, row->values, sizeof(values));
		memcpy(nulls, row->nulls, sizeof(nulls));
		if (decide(row, values, nulls, arg) == OWNED_KEEP)
			return;
		if (row->found ? write_version(orel, row, values, nulls) :
			create_row(orel, key, values, nulls))
			return;
		if (row->found && IsolationIsSerializable())
			concurrent_change(orel, "changed");
		if (row->tuple != NULL)
			heap_freetuple(row->tuple);
	}
}

/*
 * Replace a row found by the caller, which holds what serializes changes of
 * it (its key's row in ordering.positions), so no concurrent change is
 * expected; one is refused with 40001 like any lost update.
 */
void
owned_update(OwnedRel *orel, const OwnedRow *row, Datum *values, bool *nulls)
{
	if (!write_version(orel, row, values, nulls))
		concurrent_change(orel, "changed");
}

/*
 * Insert a row of a table whose key the caller owns (parked events, dead
 * letters: see decisions.c): every index is maintained and checked.
 */
void
owned_insert(OwnedRel *orel, Datum *values, bool *nulls)
{
	if (orel->routing_att != 0)
		owned_fill_routing(orel, values, nulls);
	insert_row(orel, values, nulls);
}

/*
 * Was the tuple at tid inserted by the current subtransaction in the
 * current command?  heap_delete() refuses such a tuple until the next
 * command.
 */
static bool
inserted_this_command(Relation rel, ItemPointer tid)
{
	Buffer		buf = ReadBuffer(rel, ItemPointerGetBlockNumber(tid));
	Page		page;
	HeapTupleHeader htup;
	bool		result;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	htup = (HeapTupleHeader) PageGetItem(page,
										 PageGetItemId(page, ItemPointerGetOffsetNumber(tid)));
	result = TransactionIdEquals(HeapTupleHeaderGetRawXmin(htup),
								 GetCurrentTransactionIdIfAny()) &&
		HeapTupleHeaderGetCmin(htup) == GetCurrentCommandId(false);
	UnlockReleaseBuffer(buf);
	return result;
}

/*
 * Delete a row the caller found and owns (see owned_insert).  Its index
 * entries are left to VACUUM, as for any delete.
 */
void
owned_delete(OwnedRel *orel, ItemPointer tid)
{
	TM_FailureData tmfd;
	TM_Result	result;

	if (inserted_this_command(orel->rel, tid))
		CommandCounterIncrement();
	result = heap_delete(orel->rel, tid, GetCurrentCommandId(true),
						 InvalidSnapshot, true, &tmfd, false);
	if (result != TM_Ok)
		concurrent_change(orel, "changed");
}

/*
 * Scan the rows whose first nkeys primary key columns equal "key", and,
 * with a strategy, whose next (bigint) column compares to "bound", in key
 * order, with the snapshot given.
 */
void
owned_scan_begin(OwnedRel *orel, OwnedScan *scan, const Datum *key, int nkeys,
				 StrategyNumber strategy, Datum bound, Snapshot snapshot)
{
	scan->slot = table_slot_create(orel->rel, NULL);
	scan->scan = pk_scan_begin(orel, key, nkeys, strategy, bound, snapshot);
}

/*
 * The next row of a scan, in scan->slot; false at the end.
 */
bool
owned_scan_next(OwnedScan *scan, ScanDirection dir)
{
	return index_getnext_slot(scan->scan, dir, scan->slot);
}

/*
 * End a scan.
 */
void
owned_scan_end(OwnedScan *scan)
{
	index_endscan(scan->scan);
	ExecDropSingleTupleTableSlot(scan->slot);
}
