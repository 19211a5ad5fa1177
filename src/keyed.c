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
 * then heap_update() or heap_insert() with the indexes maintained by hand.
 * No planner, no executor, no SPI on the hot path.
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
 * Rewriting our own version in place
 *
 * When the version we found was written by the current (sub)transaction
 * itself (a multi-row INSERT touching one resource again, or a consumer
 * applying several events of one resource in one transaction), the new
 * value overwrites it with heap_inplace_update() instead of adding a
 * version.  That is safe because nobody else can see or lock that version:
 * other transactions see the version before it (and wait for our
 * transaction on it), and if our subtransaction aborts, the version dies
 * with it whatever its value was.  Only the exact current subtransaction
 * counts: a version of the parent must survive a rollback to savepoint with
 * its old value.  The overwrite is WAL-logged (crash recovery, standbys);
 * logical decoding does not decode in-place updates, so with wal_level =
 * logical (RelationIsLogicallyLogged) we always add a version, and a logical
 * replica of ordering.sequences sees every number.  Nor is it done when an
 * index covers the value column (an administrator's index on the counter,
 * say), which would go on pointing at the old value.  The tuple keeps its
 * length (only the bigint changes), which heap_inplace_update() requires;
 * anything else takes heap_update().
 *
 * Finding the row (keyed_fetch)
 *
 * Every event reads and rewrites one row, so finding it is the hot path.
 * Each backend remembers, in a small two-way set-associative cache, the TID
 * of the index entry (the root of the row's HOT chain) where it last found
 * each key.  A HOT update keeps that root, and pruning turns it into a
 * redirect to the newest version, so the cached TID usually leads straight
 * to the row without descending the btree.  The cache is only a hint: a TID is
 * followed with the same visibility rule (SnapshotSelf) as an index probe,
 * the tuple found is accepted only if its key columns equal the key (the
 * line pointer may have been reused by another key after the chain died),
 * and anything else falls back to the index probe.  At most one version of a
 * key is visible under SnapshotSelf at a time (updaters of a row are
 * serialized by heap_update), so a visible tuple with our key is the row.
 * Blocks past the end of the table (after VACUUM truncated it) are not
 * read; TRUNCATE, VACUUM FULL and CLUSTER send a relcache invalidation,
 * which empties the cache.
 *
 * We also do not let every visit prune the page.  heapam's index fetch
 * prunes whenever the page has less free space than the fillfactor leaves,
 * which with our fillfactor is always, so nearly every event paid for a
 * prune that removed one dead version.  We prune only when the page is
 * short of room for the next HOT updates (KEYED_PRUNE_FREE), removing many
 * dead versions at once.  Index entries whose whole HOT chain is dead are
 * marked killed during the index probe, as index scans do.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/index.h"
#include "catalog/pg_collation.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/smgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "keyed.h"
#include "ordering.h"

#define KEYED_ATT_KEY1	1
#define KEYED_ATT_KEY2	2
#define KEYED_ATT_VALUE 3
#define KEYED_NATTS		3

/* prune a page when it has less free space than this (see file header) */
#define KEYED_PRUNE_FREE		(BLCKSZ / 8)

/*
 * Entries of the TID cache (a power of two), in sets of two: 16 bytes each,
 * 512 kB per backend that uses the tables (allocated on first use), enough
 * for nearly every row of 10,000 busy resources to be found without the
 * index.  More resources than that simply take the index more often.
 */
#define KEYED_TID_CACHE_SIZE	32768

typedef struct KeyedTidSlot
{
	uint32		hashcheck;		/* high half of keyed_hash() of the key */
	Oid			relid;			/* InvalidOid: empty slot */
	ItemPointerData tid;		/* root of the row's HOT chain */
} KeyedTidSlot;

static KeyedTidSlot *keyed_tid_cache = NULL;

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
		{
			kt->relid = kt->indexid = InvalidOid;
			/* a new relfilenode makes every cached TID meaningless */
			if (keyed_tid_cache != NULL)
				MemSet(keyed_tid_cache, 0,
					   sizeof(KeyedTidSlot) * KEYED_TID_CACHE_SIZE);
		}
	}
}

/*
 * Look up the table and its primary key, and check that they still have the
 * shape this file relies on.  Other indexes may come and go (see
 * keyed_index_insert).
 */
static void
keyed_resolve(KeyedTable *kt)
{
	Oid			relid = ordering_relation_oid(kt->relname);
	Relation	rel;
	TupleDesc	desc;
	Oid			indexid;

	rel = table_open(relid, AccessShareLock);
	desc = RelationGetDescr(rel);
	indexid = ordering_primary_key_on_leading(rel, 2);
	if (desc->natts != KEYED_NATTS ||
		TupleDescAttr(desc, KEYED_ATT_KEY1 - 1)->atttypid != TEXTOID ||
		TupleDescAttr(desc, KEYED_ATT_KEY2 - 1)->atttypid != TEXTOID ||
		TupleDescAttr(desc, KEYED_ATT_VALUE - 1)->atttypid != INT8OID ||
		!OidIsValid(indexid))
		ordering_relation_altered(kt->relname);
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
 * The table, open for one call.  Its primary key is opened only when the
 * call needs it (keyed_index): a row found through the TID cache and updated
 * HOT never touches the index, and that is nearly every event.  The table's
 * lock is what keeps the index from being dropped or rebuilt under us.
 */
typedef struct KeyedRel
{
	Relation	rel;
	Relation	idx;			/* NULL until keyed_index() */
	Oid			indexid;
	LOCKMODE	mode;
} KeyedRel;

/*
 * Open the table with the given lock mode.
 */
static void
keyed_open(KeyedTable *kt, LOCKMODE mode, KeyedRel *kr)
{
	if (!OidIsValid(kt->relid))
		keyed_resolve(kt);

	/* opening may process invalidations that reset kt: copy the index first */
	kr->indexid = kt->indexid;
	kr->rel = table_open(kt->relid, mode);
	kr->idx = NULL;
	kr->mode = mode;
}

/*
 * The table's primary key, opened with the table's lock mode on first use.
 */
static Relation
keyed_index(KeyedRel *kr)
{
	if (kr->idx == NULL)
		kr->idx = index_open(kr->indexid, kr->mode);
	return kr->idx;
}

static void
keyed_close(KeyedRel *kr)
{
	if (kr->idx != NULL)
		index_close(kr->idx, NoLock);
	table_close(kr->rel, NoLock);
}

/*
 * The 64-bit hash of a key: the TID cache's key and the key lock's tag.
 */
static uint64
keyed_hash(text *key1, text *key2)
{
	uint64		hash;

	hash = hash_bytes_extended((const unsigned char *) VARDATA_ANY(key1),
							   VARSIZE_ANY_EXHDR(key1), 0);
	return hash_bytes_extended((const unsigned char *) VARDATA_ANY(key2),
							   VARSIZE_ANY_EXHDR(key2), hash);
}

/*
 * The TID cache's set of a key (two entries, the most recently found first),
 * allocated on first use.
 */
static KeyedTidSlot *
keyed_cache_set(uint64 hash)
{
	if (keyed_tid_cache == NULL)
		keyed_tid_cache = MemoryContextAllocZero(TopMemoryContext,
												 sizeof(KeyedTidSlot) * KEYED_TID_CACHE_SIZE);
	return &keyed_tid_cache[(hash & (KEYED_TID_CACHE_SIZE / 2 - 1)) * 2];
}

/*
 * Remember where a key's row is: the root of its HOT chain.
 */
static void
keyed_cache_remember(Relation rel, uint64 hash, ItemPointer root)
{
	KeyedTidSlot *set = keyed_cache_set(hash);

	set[1] = set[0];
	set[0].relid = RelationGetRelid(rel);
	set[0].hashcheck = (uint32) (hash >> 32);
	set[0].tid = *root;
}

/*
 * Prune a page that is short of room for HOT updates (see file header).
 * Like heap_page_prune_opt(), this looks at the page without a lock: a stale
 * answer only moves the prune to a later visit.
 */
static void
keyed_maybe_prune(Relation rel, Buffer buf)
{
	if (PageGetHeapFreeSpace(BufferGetPage(buf)) < KEYED_PRUNE_FREE)
		heap_page_prune_opt(rel, buf);
}

/*
 * Does a stored key column equal the key?  A compressed or external value is
 * reported as different: the caller then asks the index, which knows.
 */
static bool
keyed_column_equals(HeapTuple tuple, TupleDesc desc, AttrNumber attno, text *key)
{
	bool		isnull;
	Datum		d = heap_getattr(tuple, attno, desc, &isnull);
	struct varlena *v;

	if (isnull)
		return false;
	v = (struct varlena *) DatumGetPointer(d);
	if (VARATT_IS_COMPRESSED(v) || VARATT_IS_EXTERNAL(v))
		return false;
	return VARSIZE_ANY_EXHDR(v) == VARSIZE_ANY_EXHDR(key) &&
		memcmp(VARDATA_ANY(v), VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)) == 0;
}

/*
 * Follow a HOT chain from its root to the version we may see, in a pinned
 * buffer.  Returns a copy of it, or NULL.  *all_dead tells whether the whole
 * chain is dead to everyone (its index entry may then be killed); check_key
 * asks to return the tuple only if its key is (key1, key2).
 */
static HeapTuple
keyed_fetch_chain(Relation rel, Buffer buf, ItemPointer root, bool check_key,
				  text *key1, text *key2, bool *all_dead)
{
	HeapTupleData tuple;
	ItemPointerData tid = *root;
	HeapTuple	result = NULL;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	if (heap_hot_search_buffer(&tid, rel, buf, SnapshotSelf, &tuple,
							   all_dead, true) &&
		(!check_key ||
		 (keyed_column_equals(&tuple, RelationGetDescr(rel), KEYED_ATT_KEY1, key1) &&
		  keyed_column_equals(&tuple, RelationGetDescr(rel), KEYED_ATT_KEY2, key2))))
		result = heap_copytuple(&tuple);
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	return result;
}

/*
 * Whether block blkno of the table exists: a cached TID may point past the
 * end of a table that VACUUM truncated since.
 *
 * Asking the kernel (lseek) at every fetch would cost a system call per
 * event, so we first look at the size the table's SMgrRelation remembers
 * from the last time anyone in this backend asked or extended the table.
 * It may be too small (another backend extended the table since: then we
 * ask), never too large while we hold our lock: truncating needs
 * AccessExclusiveLock, and smgrtruncate() sends an smgr invalidation before
 * it touches the file, which we process when we take our lock after it
 * (LockRelationOid), closing the SMgrRelation and its remembered size.  That
 * is the same rule that keeps core's smgr_targblock from pointing past the
 * end.  A new relfilenode (TRUNCATE, CLUSTER, VACUUM FULL) comes with a new
 * SMgrRelation.
 */
static bool
keyed_block_exists(Relation rel, BlockNumber blkno)
{
	BlockNumber known = RelationGetSmgr(rel)->smgr_cached_nblocks[MAIN_FORKNUM];

	if (known != InvalidBlockNumber && blkno < known)
		return true;
	return blkno < RelationGetNumberOfBlocks(rel);
}

/*
 * Find the newest version of (key1, key2) that we may see: committed, or our
 * own.  Returns a copy, or NULL.  Tries the cached TID first, then probes
 * the primary key (see file header).
 */
static HeapTuple
keyed_fetch(KeyedRel *kr, text *key1, text *key2)
{
	Relation	rel = kr->rel;
	uint64		hash = keyed_hash(key1, key2);
	KeyedTidSlot *set;
	ScanKeyData keys[2];
	IndexScanDesc scan;
	ItemPointer tid;
	Buffer		buf = InvalidBuffer;
	HeapTuple	tuple = NULL;

	set = keyed_cache_set(hash);

	for (int way = 0; way < 2; way++)
	{
		KeyedTidSlot *slot = &set[way];

		if (slot->relid != RelationGetRelid(rel) ||
			slot->hashcheck != (uint32) (hash >> 32) ||
			!keyed_block_exists(rel, ItemPointerGetBlockNumber(&slot->tid)))
			continue;
		buf = ReadBuffer(rel, ItemPointerGetBlockNumber(&slot->tid));
		keyed_maybe_prune(rel, buf);
		tuple = keyed_fetch_chain(rel, buf, &slot->tid, true, key1, key2, NULL);
		ReleaseBuffer(buf);
		buf = InvalidBuffer;
		if (tuple != NULL)
		{
			if (way == 1)
			{
				KeyedTidSlot tmp = set[0];

				set[0] = set[1];
				set[1] = tmp;
			}
			return tuple;
		}
		slot->relid = InvalidOid;	/* stale: forget it */
	}

	/* ScanKeyInit compares in the "C" collation, the columns' collation */
	ScanKeyInit(&keys[0], KEYED_ATT_KEY1, BTEqualStrategyNumber, F_TEXTEQ,
				PointerGetDatum(key1));
	ScanKeyInit(&keys[1], KEYED_ATT_KEY2, BTEqualStrategyNumber, F_TEXTEQ,
				PointerGetDatum(key2));

	scan = index_beginscan(rel, keyed_index(kr), SnapshotSelf, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	while ((tid = index_getnext_tid(scan, ForwardScanDirection)) != NULL)
	{
		bool		all_dead = false;

		if (!BufferIsValid(buf) ||
			BufferGetBlockNumber(buf) != ItemPointerGetBlockNumber(tid))
		{
			buf = ReleaseAndReadBuffer(buf, rel, ItemPointerGetBlockNumber(tid));
			keyed_maybe_prune(rel, buf);
		}
		tuple = keyed_fetch_chain(rel, buf, tid, false, NULL, NULL, &all_dead);
		if (tuple != NULL)
		{
			keyed_cache_remember(rel, hash, tid);
			break;
		}
		/* as index_fetch_heap() does: later scans skip a dead chain */
		if (!scan->xactStartedInRecovery)
			scan->kill_prior_tuple = all_dead;
	}
	if (BufferIsValid(buf))
		ReleaseBuffer(buf);
	index_endscan(scan);

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
 * Add the entries of a heap tuple just written to one index, if it is ready
 * for inserts (one that is not yet, being built by CREATE INDEX or REINDEX
 * CONCURRENTLY, will find the tuple when it scans the table).  Only indexes
 * on plain columns can be maintained without an executor: any other kind
 * means the table was altered.
 */
static void
keyed_index_insert_one(Relation rel, Relation idx, HeapTuple tuple,
					   IndexUniqueCheck check)
{
	IndexInfo  *info;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];

	if (!idx->rd_index->indisready)
		return;
	info = BuildIndexInfo(idx);
	if (info->ii_Expressions != NIL || info->ii_Predicate != NIL ||
		!idx->rd_index->indimmediate)
		ordering_relation_altered(RelationGetRelationName(rel));
	for (int i = 0; i < info->ii_NumIndexAttrs; i++)
		values[i] = heap_getattr(tuple, info->ii_IndexAttrNumbers[i],
								 RelationGetDescr(rel), &isnull[i]);
	index_insert(idx, values, isnull, &tuple->t_self, rel, check, false, info);
}

/*
 * Add the entries of a heap tuple just written to every index of the table,
 * as CatalogIndexInsert() does: the primary key, and whatever index an
 * administrator added or REINDEX CONCURRENTLY is building next to it.
 * "pkcheck" is the primary key's unique check: a new version of a row keeps
 * its key and needs none.  Another unique index is checked, as the executor
 * would.
 */
static void
keyed_index_insert(KeyedRel *kr, HeapTuple tuple, IndexUniqueCheck pkcheck)
{
	List	   *indexes = RelationGetIndexList(kr->rel);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Oid			indexid = lfirst_oid(lc);
		Relation	idx;

		if (indexid == kr->indexid)
		{
			keyed_index_insert_one(kr->rel, keyed_index(kr), tuple, pkcheck);
			continue;
		}
		idx = index_open(indexid, kr->mode);
		keyed_index_insert_one(kr->rel, idx, tuple,
							   idx->rd_index->indisunique ?
							   UNIQUE_CHECK_YES : UNIQUE_CHECK_NO);
		index_close(idx, NoLock);
	}
	list_free(indexes);
}

/*
 * Does an index cover the value column?  (Its entries hold the value, so the
 * version cannot be rewritten in place.)
 */
static bool
keyed_value_indexed(Relation rel)
{
	Bitmapset  *attrs = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_ALL);
	bool		indexed;

	indexed = bms_is_member(KEYED_ATT_VALUE - FirstLowInvalidHeapAttributeNumber,
							attrs);
	bms_free(attrs);
	return indexed;
}

/*
 * Replace the value of a row.  Returns TM_Ok, or TM_Updated / TM_Deleted when
 * a concurrent transaction changed the row first and committed (we waited
 * for it); then the caller looks again.
 */
static TM_Result
keyed_update(KeyedRel *kr, HeapTuple oldtup, int64 value)
{
	Relation	rel = kr->rel;
	int			column = KEYED_ATT_VALUE;
	Datum		newvalue = Int64GetDatum(value);
	bool		newisnull = false;
	HeapTuple	newtup;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	TM_Result	result;

	newtup = heap_modify_tuple_by_cols(oldtup, RelationGetDescr(rel),
									   1, &column, &newvalue, &newisnull);

	/*
	 * A version written by this very (sub)transaction is overwritten in
	 * place: see the file header for why that is safe.  It keeps a
	 * multi-row statement from growing one HOT chain and one combo CID per
	 * event.
	 */
	if (!RelationIsLogicallyLogged(rel) &&
		TransactionIdEquals(HeapTupleHeaderGetRawXmin(oldtup->t_data),
							GetCurrentTransactionIdIfAny()) &&
		newtup->t_len == oldtup->t_len &&
		newtup->t_data->t_hoff == oldtup->t_data->t_hoff &&
		!keyed_value_indexed(rel))
	{
		heap_inplace_update(rel, newtup);
		heap_freetuple(newtup);
		return TM_Ok;
	}

	result = heap_update(rel, &oldtup->t_self, newtup,
						 GetCurrentCommandId(true), InvalidSnapshot,
						 true, &tmfd, &lockmode);
	switch (result)
	{
		case TM_Ok:
			/* the key did not change: a HOT update needs no index entry */
			if (!HeapTupleIsHeapOnly(newtup))
				keyed_index_insert(kr, newtup, UNIQUE_CHECK_NO);
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
keyed_insert(KeyedRel *kr, text *key1, text *key2, int64 value)
{
	Relation	rel = kr->rel;
	Datum		values[KEYED_NATTS];
	bool		isnull[KEYED_NATTS] = {false, false, false};
	HeapTuple	tuple;

	values[KEYED_ATT_KEY1 - 1] = PointerGetDatum(key1);
	values[KEYED_ATT_KEY2 - 1] = PointerGetDatum(key2);
	values[KEYED_ATT_VALUE - 1] = Int64GetDatum(value);
	tuple = heap_form_tuple(RelationGetDescr(rel), values, isnull);
	heap_insert(rel, tuple, GetCurrentCommandId(true), 0, NULL);
	keyed_index_insert(kr, tuple, UNIQUE_CHECK_YES);
	/* a new row is the root of its chain; if we roll back, the hint is stale */
	keyed_cache_remember(rel, keyed_hash(key1, key2), &tuple->t_self);
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
	uint64		hash = keyed_hash(key1, key2);
	LOCKTAG		tag;

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
	KeyedRel	kr;
	bool		key_locked = false;
	int64		current;
	int64		next;

	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot change ordering.%s in a read-only transaction",
						kt->relname)));

	keyed_open(kt, RowExclusiveLock, &kr);
	for (;;)
	{
		HeapTuple	tuple = keyed_fetch(&kr, key1, key2);

		if (tuple != NULL)
		{
			TM_Result	result = TM_Ok;

			current = keyed_value(kr.rel, tuple);
			next = decide(current, true, arg);
			if (next != current)
				result = keyed_update(&kr, tuple, next);
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
		keyed_insert(&kr, key1, key2, next);
		break;
	}
	keyed_close(&kr);

	*previous = current;
	return next;
}

/*
 * The value of (key1, key2): committed or our own; 0 if there is no row.
 */
int64
keyed_read(KeyedTable *kt, text *key1, text *key2)
{
	KeyedRel	kr;
	HeapTuple	tuple;
	int64		value = 0;

	keyed_open(kt, AccessShareLock, &kr);
	tuple = keyed_fetch(&kr, key1, key2);
	if (tuple != NULL)
	{
		value = keyed_value(kr.rel, tuple);
		heap_freetuple(tuple);
	}
	keyed_close(&kr);
	return value;
}
