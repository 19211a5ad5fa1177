/*-------------------------------------------------------------------------
 *
 * keyed.c
 *	  Direct access to the (text, text) -> bigint tables of the extension.
 *
 * ordering.sequences (producer counters) and ordering.positions (consumer
 * positions) share one shape: two key columns of type text in the "C"
 * collation, a bigint value, and a primary key on the two keys.  Both are
 * read and advanced once per event, so they are accessed below the executor,
 * the way catalog code accesses catalogs: a btree probe of the primary key,
 * then heap_update() or heap_insert() with the index maintained by hand.  No
 * planner, no executor, no SPI on the hot path.
 *
 * Locking protocol
 *
 * The row is its own lock.  A reader finds the newest version it may see
 * with SnapshotSelf: committed, or written by its own transaction.  Advancing
 * calls heap_update(wait = true): if another transaction is advancing the
 * same row, we sleep on it exactly like an UPDATE would, and once it commits
 * heap_update reports TM_Updated, we read the newer version and decide again.
 * That is READ COMMITTED behaviour at every isolation level, which is right
 * for bookkeeping rows that the caller never reads under its own snapshot.
 * Since the writer holds the row until it commits, a value advanced by a
 * later transaction is always seen after the earlier one's commit: numbers
 * follow commit order.
 *
 * A row that does not exist yet cannot be locked, so creating one takes a
 * transaction-scoped lock on the key (an advisory-class heavyweight lock with
 * a field4 of our own, so it never collides with users' advisory locks) and
 * looks again before inserting.  Callers that need a whole decision to be
 * serialized, not only the row (deliver() parks events), take the same key
 * lock first.
 *
 * Every change is followed by CommandCounterIncrement(), so that the next
 * change in the same statement (a multi-row INSERT) may update the version
 * just written.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "common/hashfn.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "keyed.h"

#define KEYED_ATT_KEY1	1
#define KEYED_ATT_KEY2	2
#define KEYED_ATT_VALUE 3
#define KEYED_NATTS		3

/* field4 of our key locks: users' advisory locks use 1 and 2 */
#define KEYED_LOCK_FIELD4_BASE	0x4F00

KeyedTable	ordering_sequences = {"sequences", 1, InvalidOid, InvalidOid};
KeyedTable	ordering_positions = {"positions", 2, InvalidOid, InvalidOid};

static KeyedTable *const keyed_tables[] = {&ordering_sequences, &ordering_positions};

static bool keyed_callback_registered = false;

/*
 * Forget the cached OIDs of a table whose relcache entry is invalidated
 * (dropped with the extension, altered, or everything at once).
 */
static void
keyed_relcache_callback(Datum arg, Oid relid)
{
	for (int i = 0; i < lengthof(keyed_tables); i++)
	{
		KeyedTable *kt = keyed_tables[i];

		if (relid == InvalidOid || relid == kt->relid || relid == kt->indexid)
			kt->relid = kt->indexid = InvalidOid;
	}
}

/*
 * Look up the table and its primary key, and check that it still has the
 * shape this file relies on: we maintain exactly one index by hand.
 */
static void
keyed_resolve(KeyedTable *kt)
{
	Oid			nspid = get_namespace_oid("ordering", false);
	Oid			relid = get_relname_relid(kt->relname, nspid);
	Relation	rel;
	TupleDesc	desc;
	Oid			indexid;

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"ordering.%s\" does not exist", kt->relname)));

	rel = table_open(relid, AccessShareLock);
	desc = RelationGetDescr(rel);
	indexid = RelationGetPrimaryKeyIndex(rel);
	if (desc->natts != KEYED_NATTS ||
		TupleDescAttr(desc, KEYED_ATT_KEY1 - 1)->atttypid != TEXTOID ||
		TupleDescAttr(desc, KEYED_ATT_KEY2 - 1)->atttypid != TEXTOID ||
		TupleDescAttr(desc, KEYED_ATT_VALUE - 1)->atttypid != INT8OID ||
		!OidIsValid(indexid) ||
		list_length(RelationGetIndexList(rel)) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"ordering.%s\" has been altered", kt->relname),
				 errhint("Reinstall the extension ordering.")));
	table_close(rel, AccessShareLock);

	if (!keyed_callback_registered)
	{
		CacheRegisterRelcacheCallback(keyed_relcache_callback, (Datum) 0);
		keyed_callback_registered = true;
	}
	kt->relid = relid;
	kt->indexid = indexid;
}

/*
 * Open the table and its primary key with the given lock mode.
 */
static void
keyed_open(KeyedTable *kt, LOCKMODE mode, Relation *rel, Relation *idx)
{
	Oid			indexid;

	if (!OidIsValid(kt->relid))
		keyed_resolve(kt);

	/* opening may process invalidations that reset kt: copy the index first */
	indexid = kt->indexid;
	*rel = table_open(kt->relid, mode);
	*idx = index_open(indexid, mode);
}

static void
keyed_close(Relation rel, Relation idx)
{
	index_close(idx, NoLock);
	table_close(rel, NoLock);
}

/*
 * Find the newest version of (key1, key2) that we may see: committed, or our
 * own.  Returns a copy, or NULL.
 */
static HeapTuple
keyed_fetch(Relation rel, Relation idx, text *key1, text *key2)
{
	ScanKeyData keys[2];
	IndexScanDesc scan;
	TupleTableSlot *slot;
	HeapTuple	tuple = NULL;

	/* ScanKeyInit compares in the "C" collation, the columns' collation */
	ScanKeyInit(&keys[0], KEYED_ATT_KEY1, BTEqualStrategyNumber, F_TEXTEQ,
				PointerGetDatum(key1));
	ScanKeyInit(&keys[1], KEYED_ATT_KEY2, BTEqualStrategyNumber, F_TEXTEQ,
				PointerGetDatum(key2));

	slot = table_slot_create(rel, NULL);
	scan = index_beginscan(rel, idx, SnapshotSelf, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	if (index_getnext_slot(scan, ForwardScanDirection, slot))
		tuple = ExecCopySlotHeapTuple(slot);
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);

	return tuple;
}

static int64
keyed_value(Relation rel, HeapTuple tuple)
{
	bool		isnull;

	return DatumGetInt64(heap_getattr(tuple, KEYED_ATT_VALUE,
									  RelationGetDescr(rel), &isnull));
}

/*
 * Add the index entry of a heap tuple just written.
 */
static void
keyed_index_insert(Relation rel, Relation idx, HeapTuple tuple,
				   IndexUniqueCheck check)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Datum		values[2];
	bool		isnull[2];

	values[0] = heap_getattr(tuple, KEYED_ATT_KEY1, desc, &isnull[0]);
	values[1] = heap_getattr(tuple, KEYED_ATT_KEY2, desc, &isnull[1]);
	index_insert(idx, values, isnull, &tuple->t_self, rel, check, false,
				 BuildIndexInfo(idx));
}

/*
 * Replace the value of a row.  Returns TM_Ok, or TM_Updated / TM_Deleted when
 * a concurrent transaction changed the row first and committed (we waited
 * for it); then the caller looks again.
 */
static TM_Result
keyed_update(Relation rel, Relation idx, HeapTuple oldtup, int64 value)
{
	int			column = KEYED_ATT_VALUE;
	Datum		newvalue = Int64GetDatum(value);
	bool		newisnull = false;
	HeapTuple	newtup;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	TM_Result	result;

	newtup = heap_modify_tuple_by_cols(oldtup, RelationGetDescr(rel),
									   1, &column, &newvalue, &newisnull);
	result = heap_update(rel, &oldtup->t_self, newtup,
						 GetCurrentCommandId(true), InvalidSnapshot,
						 true, &tmfd, &lockmode);
	switch (result)
	{
		case TM_Ok:
			/* the key did not change: a HOT update needs no index entry */
			if (!HeapTupleIsHeapOnly(newtup))
				keyed_index_insert(rel, idx, newtup, UNIQUE_CHECK_NO);
			CommandCounterIncrement();
			break;
		case TM_Updated:
		case TM_Deleted:
			break;
		default:
			/* our own changes are always visible after the CCI above */
			elog(ERROR, "unexpected heap_update status %u on ordering.%s",
				 result, RelationGetRelationName(rel));
	}
	heap_freetuple(newtup);
	return result;
}

/*
 * Create the row of a new key.  The caller holds the key lock and has
 * checked that the row does not exist.
 */
static void
keyed_insert(Relation rel, Relation idx, text *key1, text *key2, int64 value)
{
	Datum		values[KEYED_NATTS];
	bool		isnull[KEYED_NATTS] = {false, false, false};
	HeapTuple	tuple;

	values[KEYED_ATT_KEY1 - 1] = PointerGetDatum(key1);
	values[KEYED_ATT_KEY2 - 1] = PointerGetDatum(key2);
	values[KEYED_ATT_VALUE - 1] = Int64GetDatum(value);
	tuple = heap_form_tuple(RelationGetDescr(rel), values, isnull);
	heap_insert(rel, tuple, GetCurrentCommandId(true), 0, NULL);
	keyed_index_insert(rel, idx, tuple, UNIQUE_CHECK_YES);
	CommandCounterIncrement();
	heap_freetuple(tuple);
}

/*
 * Take the transaction-scoped lock on (key1, key2) of this table.  Two keys
 * share a lock only if their 64-bit hashes collide: then they wait for each
 * other needlessly, but stay correct.
 */
void
keyed_lock_key(KeyedTable *kt, text *key1, text *key2)
{
	uint64		hash;
	LOCKTAG		tag;

	hash = hash_bytes_extended((const unsigned char *) VARDATA_ANY(key1),
							   VARSIZE_ANY_EXHDR(key1), 0);
	hash = hash_bytes_extended((const unsigned char *) VARDATA_ANY(key2),
							   VARSIZE_ANY_EXHDR(key2), hash);
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (hash >> 32),
						 (uint32) hash, KEYED_LOCK_FIELD4_BASE + kt->lockclass);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * Advance the value of (key1, key2) to what decide() says, creating the row
 * if needed.  Returns the value the row has afterwards; *previous gets the
 * value it had before (0 when it did not exist).  See the file header for
 * how concurrent advances of one row are serialized.
 */
int64
keyed_advance(KeyedTable *kt, text *key1, text *key2,
			  KeyedDecide decide, void *arg, int64 *previous)
{
	Relation	rel;
	Relation	idx;
	bool		key_locked = false;
	int64		current;
	int64		next;

	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot change ordering.%s in a read-only transaction",
						kt->relname)));

	keyed_open(kt, RowExclusiveLock, &rel, &idx);
	for (;;)
	{
		HeapTuple	tuple = keyed_fetch(rel, idx, key1, key2);

		if (tuple != NULL)
		{
			TM_Result	result = TM_Ok;

			current = keyed_value(rel, tuple);
			next = decide(current, true, arg);
			if (next != current)
				result = keyed_update(rel, idx, tuple, next);
			heap_freetuple(tuple);
			if (result == TM_Ok)
				break;
			continue;			/* changed under us: look again */
		}
		if (!key_locked)
		{
			/* creating: serialize with other creators, then look again */
			keyed_lock_key(kt, key1, key2);
			key_locked = true;
			continue;
		}
		current = 0;
		next = decide(current, false, arg);
		keyed_insert(rel, idx, key1, key2, next);
		break;
	}
	keyed_close(rel, idx);

	*previous = current;
	return next;
}

/*
 * The value of (key1, key2): committed or our own; 0 if there is no row.
 */
int64
keyed_read(KeyedTable *kt, text *key1, text *key2)
{
	Relation	rel;
	Relation	idx;
	HeapTuple	tuple;
	int64		value = 0;

	keyed_open(kt, AccessShareLock, &rel, &idx);
	tuple = keyed_fetch(rel, idx, key1, key2);
	if (tuple != NULL)
	{
		value = keyed_value(rel, tuple);
		heap_freetuple(tuple);
	}
	keyed_close(rel, idx);
	return value;
}
