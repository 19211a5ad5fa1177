/*-------------------------------------------------------------------------
 *
 * parked.c
 *	  Storage of ordering.parked, and the probe and delete of a key's row in
 *	  ordering.gap_requests, for deliver() and skip_gap() (consumer.c).
 *
 * Step events that arrive ahead of a missing predecessor wait in
 * ordering.parked.  Every deliver() probes it, so it is read, and while it
 * is as installed also written, below SPI, the way keyed.c accesses
 * ordering.positions.
 *
 * Locking rules
 *
 * Every function here is called with the key lock of the (consumer,
 * resource) held: keyed_lock_key(&ordering_positions, consumer, resource),
 * transaction-scoped, taken by deliver() and skip_gap() before they decide
 * (see consumer.c).  Once we hold it, every earlier holder has committed or
 * rolled back, and no other transaction has changes in progress for this
 * key, so:
 *
 *	- ordering.parked rows of this key are read below SPI with SnapshotSelf
 *	  (index scans of its primary key, as keyed.c does for positions): the
 *	  probes every deliver() makes and the run it drains.  That is safe
 *	  because nobody but a lock holder inserts or deletes them, so
 *	  "committed or ours" is exactly the current set, at any isolation
 *	  level; and it is cheap, which matters because every call probes;
 *	- parked rows are written below SPI too while the table is exactly what
 *	  the install script made (no triggers, rules or row security; plain
 *	  btree indexes only, checked under the RowExclusiveLock we write with):
 *	  heap_insert() plus an entry in each index, as CatalogTupleInsert()
 *	  does, and simple_heap_delete() of the drained rows, whose TIDs the
 *	  SnapshotSelf scan just returned and which nobody else may touch.  The
 *	  values are checked first (seq > 0, keys not null), as the table's
 *	  constraints would.  Otherwise (say a trigger was added) the same
 *	  writes go through SPI plans, so whatever was added is honoured;
 *	- the gap request of a key is probed the same way and, when there is
 *	  one, deleted with SQL.  Sweeps (gaps.c) write that table without key
 *	  locks, so a call that may close a gap (parked_drain_finish) first
 *	  takes ROW EXCLUSIVE on ordering.gap_requests, which a sweep's SHARE
 *	  ROW EXCLUSIVE excludes: from then on no sweep is in progress, one that
 *	  ran has committed its requests (the probe sees them), and one that
 *	  starts waits for our commit before it takes its snapshot (it will see
 *	  the gap closed).  That lock is taken after the key lock, never before,
 *	  and a gap-closing call may wait for a running sweep.
 *	  SPI plans are prepared once per backend and run with a fresh snapshot
 *	  (GetLatestSnapshot) so they see the same rows as the probes even in
 *	  REPEATABLE READ transactions, whose snapshot may predate the commit of
 *	  the previous lock holder.
 *
 * The OIDs of ordering.parked and ordering.gap_requests and of their primary
 * keys are cached per backend, checked once for the shape the scans rely
 * on, and forgotten on relcache invalidation (a relcache callback).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "ordering.h"
#include "parked.h"

/* columns of ordering.parked, and of its primary key (the same order) */
#define PARKED_ATT_CONSUMER 1
#define PARKED_ATT_RESOURCE 2
#define PARKED_ATT_SEQ		3
#define PARKED_ATT_PAYLOAD	4

/* A table of the extension whose OIDs we cache, with its primary key */
typedef struct CachedRel
{
	const char *relname;		/* in schema "ordering" */
	int			nkeys;			/* primary key: its first nkeys columns */
	Oid			relid;			/* InvalidOid until looked up */
	Oid			indexid;
} CachedRel;

static CachedRel parked_rel = {"parked", 3, InvalidOid, InvalidOid};
static CachedRel gaps_rel = {"gap_requests", 2, InvalidOid, InvalidOid};
static bool parked_callback_registered = false;

/*
 * May ordering.parked be written below SPI?  Only while it is exactly what
 * the install script made: the five columns, no triggers, no rules, no row
 * security, and only valid, immediate btree indexes on plain columns, which
 * we can maintain by hand.  Otherwise parking and draining go through SPI,
 * so that whatever was added is honoured.  Set with parked_rel.
 */
#define PARKED_NATTS		5
#define PARKED_MAX_INDEXES	8
static bool parked_direct = false;
static int	parked_nindexes = 0;
static Oid	parked_indexes[PARKED_MAX_INDEXES];

/* SPI plans, prepared once per backend */
static SPIPlanPtr plan_park = NULL;
static SPIPlanPtr plan_drain = NULL;
static SPIPlanPtr plan_gap_settle = NULL;

/*
 * Forget cached OIDs when a table's relcache entry is invalidated (dropped
 * with the extension, altered, an index or trigger added, or everything).
 * Adding or dropping an index or trigger invalidates the table itself.
 */
static void
parked_relcache_callback(Datum arg, Oid relid)
{
	CachedRel  *rels[2] = {&parked_rel, &gaps_rel};

	for (int i = 0; i < lengthof(rels); i++)
	{
		if (relid == InvalidOid || relid == rels[i]->relid ||
			relid == rels[i]->indexid)
			rels[i]->relid = rels[i]->indexid = InvalidOid;
	}
}

/*
 * Decide whether ordering.parked may be written below SPI (see above), and
 * remember its indexes.
 */
static void
parked_check_direct(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Oid			types[PARKED_NATTS] = {TEXTOID, TEXTOID, INT8OID, JSONBOID,
	TIMESTAMPTZOID};
	List	   *indexes;
	ListCell   *lc;
	bool		ok;

	ok = desc->natts == PARKED_NATTS && rel->trigdesc == NULL &&
		rel->rd_rules == NULL && !rel->rd_rel->relrowsecurity;
	for (int i = 0; ok && i < PARKED_NATTS; i++)
		ok = !TupleDescAttr(desc, i)->attisdropped &&
			TupleDescAttr(desc, i)->atttypid == types[i];

	indexes = RelationGetIndexList(rel);
	ok = ok && list_length(indexes) <= PARKED_MAX_INDEXES;
	parked_nindexes = 0;
	foreach(lc, indexes)
	{
		Relation	idx;

		if (!ok)
			break;
		idx = index_open(lfirst_oid(lc), AccessShareLock);
		ok = idx->rd_rel->relam == BTREE_AM_OID &&
			idx->rd_index->indisvalid && idx->rd_index->indisready &&
			idx->rd_index->indimmediate && !idx->rd_index->indisexclusion &&
			RelationGetIndexExpressions(idx) == NIL &&
			RelationGetIndexPredicate(idx) == NIL;
		parked_indexes[parked_nindexes++] = RelationGetRelid(idx);
		index_close(idx, AccessShareLock);
	}
	list_free(indexes);
	parked_direct = ok;
}

/*
 * Look up a table of the extension and its primary key, and check that the
 * key is still its first nkeys columns, which the scans below rely on.  For
 * ordering.parked, also check the types of seq and payload and decide how
 * it is written.
 */
static void
cached_resolve(CachedRel *cr)
{
	Oid			relid = ordering_relation_oid(cr->relname);
	Relation	rel;
	Oid			indexid;
	bool		ok;

	rel = table_open(relid, AccessShareLock);
	indexid = ordering_primary_key_on_leading(rel, cr->nkeys);
	ok = OidIsValid(indexid);
	if (ok && cr == &parked_rel)
	{
		TupleDesc	desc = RelationGetDescr(rel);

		ok = desc->natts >= PARKED_ATT_PAYLOAD &&
			TupleDescAttr(desc, PARKED_ATT_SEQ - 1)->atttypid == INT8OID &&
			TupleDescAttr(desc, PARKED_ATT_PAYLOAD - 1)->atttypid == JSONBOID;
		if (ok)
			parked_check_direct(rel);
	}
	table_close(rel, AccessShareLock);
	if (!ok)
		ordering_relation_altered(cr->relname);

	if (!parked_callback_registered)
	{
		CacheRegisterRelcacheCallback(parked_relcache_callback, (Datum) 0);
		parked_callback_registered = true;
	}
	cr->relid = relid;
	cr->indexid = indexid;
}

/*
 * Open ordering.parked and its primary key for probing.
 */
void
parked_open(ParkedScan *ps)
{
	Oid			relid;
	Oid			indexid;

	if (!OidIsValid(parked_rel.relid))
		cached_resolve(&parked_rel);
	/* opening may process invalidations that reset the cache: copy first */
	relid = parked_rel.relid;
	indexid = parked_rel.indexid;
	ps->rel = table_open(relid, AccessShareLock);
	ps->idx = index_open(indexid, AccessShareLock);
	ps->slot = table_slot_create(ps->rel, NULL);
}

/*
 * Close what parked_open() opened; the locks stay to the end of the
 * transaction.
 */
void
parked_close(ParkedScan *ps)
{
	ExecDropSingleTupleTableSlot(ps->slot);
	index_close(ps->idx, NoLock);
	table_close(ps->rel, NoLock);
}

/*
 * Scan the parked seqs of (consumer, resource) in the given direction,
 * optionally restricted by "seq <strategy> value", with SnapshotSelf (see
 * the file header for why that is the truth under the key lock).  Returns
 * how many rows were seen, stopping at "limit"; *first gets the first seq.
 */
static int64
parked_scan(ParkedScan *ps, text *consumer, text *resource,
			StrategyNumber strategy, int64 value, ScanDirection dir,
			int64 limit, int64 *first)
{
	ScanKeyData keys[3];
	int			nkeys = 2;
	IndexScanDesc scan;
	int64		seen = 0;

	/* ScanKeyInit compares in the "C" collation, the columns' collation */
	ScanKeyInit(&keys[0], PARKED_ATT_CONSUMER, BTEqualStrategyNumber,
				F_TEXTEQ, PointerGetDatum(consumer));
	ScanKeyInit(&keys[1], PARKED_ATT_RESOURCE, BTEqualStrategyNumber,
				F_TEXTEQ, PointerGetDatum(resource));
	if (strategy == BTEqualStrategyNumber)
		ScanKeyInit(&keys[nkeys++], PARKED_ATT_SEQ, strategy, F_INT8EQ,
					Int64GetDatum(value));

	scan = index_beginscan(ps->rel, ps->idx, SnapshotSelf, nkeys, 0);
	index_rescan(scan, keys, nkeys, NULL, 0);
	while (seen < limit && index_getnext_slot(scan, dir, ps->slot))
	{
		if (seen == 0)
		{
			bool		isnull;

			*first = DatumGetInt64(slot_getattr(ps->slot, PARKED_ATT_SEQ,
												&isnull));
		}
		seen++;
	}
	index_endscan(scan);
	return seen;
}

/* The lowest parked seq of a key; false if nothing is parked. */
bool
parked_lowest(ParkedScan *ps, text *consumer, text *resource, int64 *seq)
{
	return parked_scan(ps, consumer, resource, InvalidStrategy, 0,
					   ForwardScanDirection, 1, seq) > 0;
}

/* The highest parked seq of a key; false if nothing is parked. */
bool
parked_highest(ParkedScan *ps, text *consumer, text *resource, int64 *seq)
{
	return parked_scan(ps, consumer, resource, InvalidStrategy, 0,
					   BackwardScanDirection, 1, seq) > 0;
}

/* Is this seq parked? */
bool
parked_exists(ParkedScan *ps, text *consumer, text *resource, int64 seq)
{
	int64		found;

	return parked_scan(ps, consumer, resource, BTEqualStrategyNumber, seq,
					   ForwardScanDirection, 1, &found) > 0;
}

/* How many events of a key are parked, counting no further than limit. */
int64
parked_count(ParkedScan *ps, text *consumer, text *resource, int64 limit)
{
	int64		found;

	return parked_scan(ps, consumer, resource, InvalidStrategy, 0,
					   ForwardScanDirection, limit, &found);
}

/*
 * Run a kept plan with a fresh snapshot (see the file header).
 */
static int
run_plan(SPIPlanPtr plan, Datum *values, int expected)
{
	int			rc;

	rc = SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(),
							  InvalidSnapshot, false, true, 0);
	if (rc != expected)
		elog(ERROR, "SPI_execute_snapshot failed: %s",
			 SPI_result_code_string(rc));
	return rc;
}

/*
 * Append an event to the list.
 */
void
parked_ready_add(ReadyList *list, int64 seq, Datum payload, bool isnull)
{
	if (list->n == list->size)
	{
		list->size = list->size == 0 ? 8 : list->size * 2;
		list->events = list->events == NULL ?
			MemoryContextAlloc(list->cxt, list->size * sizeof(ReadyEvent)) :
			repalloc(list->events, list->size * sizeof(ReadyEvent));
	}
	list->events[list->n].seq = seq;
	list->events[list->n].payload = payload;
	list->events[list->n].isnull = isnull;
	ItemPointerSetInvalid(&list->events[list->n].tid);
	list->n++;
}

/*
 * Read the parked run that starts at "from" (from, from + 1, ... while they
 * are parked) with SnapshotSelf, appending its events to "ready" (payloads
 * copied into ready->cxt).  Returns the last seq of the run, from - 1 if
 * "from" is not parked; *beyond tells whether events remain parked after
 * the run.  The caller holds the key lock.
 */
int64
parked_read_run(ParkedScan *ps, text *consumer, text *resource, int64 from,
				ReadyList *ready, bool *beyond)
{
	ScanKeyData keys[3];
	IndexScanDesc scan;
	int64		last = from - 1;	/* from >= 1: no overflow */

	ScanKeyInit(&keys[0], PARKED_ATT_CONSUMER, BTEqualStrategyNumber,
				F_TEXTEQ, PointerGetDatum(consumer));
	ScanKeyInit(&keys[1], PARKED_ATT_RESOURCE, BTEqualStrategyNumber,
				F_TEXTEQ, PointerGetDatum(resource));
	ScanKeyInit(&keys[2], PARKED_ATT_SEQ, BTGreaterEqualStrategyNumber,
				F_INT8GE, Int64GetDatum(from));

	*beyond = false;
	scan = index_beginscan(ps->rel, ps->idx, SnapshotSelf, 3, 0);
	index_rescan(scan, keys, 3, NULL, 0);
	while (index_getnext_slot(scan, ForwardScanDirection, ps->slot))
	{
		bool		isnull;
		int64		seq;
		Datum		payload;

		seq = DatumGetInt64(slot_getattr(ps->slot, PARKED_ATT_SEQ, &isnull));
		if (last == PG_INT64_MAX || seq != last + 1)
		{
			*beyond = true;		/* the run ends at a gap */
			break;
		}
		payload = slot_getattr(ps->slot, PARKED_ATT_PAYLOAD, &isnull);
		if (!isnull)
		{
			MemoryContext old = MemoryContextSwitchTo(ready->cxt);

			/* the slot points into a shared buffer: copy, and detoast */
			payload = PointerGetDatum(PG_DETOAST_DATUM_COPY(payload));
			MemoryContextSwitchTo(old);
		}
		parked_ready_add(ready, seq, payload, isnull);
		ready->events[ready->n - 1].tid = ps->slot->tts_tid;
		last = seq;
	}
	index_endscan(scan);
	return last;
}

/*
 * parked_drain_finish() through SPI (see parked_direct): remove the parked
 * rows [from, last] and settle the gap request, in one statement.
 */
static void
drain_delete_spi(text *consumer, text *resource, int64 from, int64 last,
			 int64 position, bool nothing_left)
{
	Oid			types[6] = {TEXTOID, TEXTOID, INT8OID, INT8OID, INT8OID, BOOLOID};
	Datum		values[6];
	int64		expected = last >= from ? last - from + 1 : 0;
	int64		deleted;
	bool		isnull;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ordering_prepare_once(&plan_drain,
				 "WITH run AS ("
				 " DELETE FROM ordering.parked p"
				 " WHERE p.consumer OPERATOR(pg_catalog.=) $1"
				 " AND p.resource_id OPERATOR(pg_catalog.=) $2"
				 " AND p.seq OPERATOR(pg_catalog.>=) $3"
				 " AND p.seq OPERATOR(pg_catalog.<=) $4"
				 " RETURNING 1),"
				 " gap AS ("
				 " DELETE FROM ordering.gap_requests g"
				 " WHERE g.consumer OPERATOR(pg_catalog.=) $1"
				 " AND g.resource_id OPERATOR(pg_catalog.=) $2"
				 " AND (g.missing_to OPERATOR(pg_catalog.<=) $5 OR $6)"
				 " RETURNING 1)"
				 " SELECT pg_catalog.count(*) FROM run",
				 6, types, CURSOR_OPT_GENERIC_PLAN);
	values[0] = PointerGetDatum(consumer);
	values[1] = PointerGetDatum(resource);
	values[2] = Int64GetDatum(from);
	values[3] = Int64GetDatum(last);
	values[4] = Int64GetDatum(position);
	values[5] = BoolGetDatum(nothing_left);
	run_plan(plan_drain, values, SPI_OK_SELECT);
	deleted = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull));
	if (deleted != expected)
		elog(ERROR, "ordering.parked changed while draining");
	SPI_finish();
}

/*
 * Park an early event through SPI (see parked_direct).
 */
static void
park_spi(text *consumer, text *resource, int64 seq, Datum payload, bool isnull)
{
	Oid			types[4] = {TEXTOID, TEXTOID, INT8OID, JSONBOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	int			rc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ordering_prepare_once(&plan_park,
				 "INSERT INTO ordering.parked (consumer, resource_id, seq, payload)"
				 " VALUES ($1, $2, $3, $4)",
				 4, types, CURSOR_OPT_GENERIC_PLAN);
	values[0] = PointerGetDatum(consumer);
	values[1] = PointerGetDatum(resource);
	values[2] = Int64GetDatum(seq);
	values[3] = payload;
	if (isnull)
		nulls[3] = 'n';
	rc = SPI_execute_snapshot(plan_park, values, nulls, GetLatestSnapshot(),
							  InvalidSnapshot, false, true, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "SPI_execute_snapshot failed: %s",
			 SPI_result_code_string(rc));
	SPI_finish();
}

/*
 * Open ordering.parked for writing and tell whether it may be written below
 * SPI.  The check is made under the RowExclusiveLock, which keeps triggers
 * and indexes from being added until we commit, so it stays true.  Returns
 * NULL when SPI must be used.
 */
static Relation
parked_open_direct(void)
{
	Oid			relid;
	Relation	rel;

	if (!OidIsValid(parked_rel.relid))
		cached_resolve(&parked_rel);
	relid = parked_rel.relid;
	rel = table_open(relid, RowExclusiveLock);
	if (!OidIsValid(parked_rel.relid))
		cached_resolve(&parked_rel);	/* invalidated while we locked */
	if (parked_rel.relid != relid || !parked_direct)
	{
		table_close(rel, NoLock);
		return NULL;
	}
	return rel;
}

/*
 * Insert a parked row below SPI, as CatalogTupleInsert() does: heap_insert()
 * (which TOASTs the payload as needed) and an entry in each index, the
 * primary key checking uniqueness.  parked_at is now(), the column default.
 * Returns false, changing nothing, when SPI must be used instead.
 */
static bool
park_direct(text *consumer, text *resource, int64 seq, Datum payload,
			bool isnull)
{
	Relation	rel = parked_open_direct();
	Datum		values[PARKED_NATTS];
	bool		nulls[PARKED_NATTS] = {false, false, false, isnull, false};
	HeapTuple	tuple;
	TupleTableSlot *slot;

	if (rel == NULL)
		return false;
	values[0] = PointerGetDatum(consumer);
	values[1] = PointerGetDatum(resource);
	values[2] = Int64GetDatum(seq);
	values[3] = payload;
	values[4] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	tuple = heap_form_tuple(RelationGetDescr(rel), values, nulls);
	heap_insert(rel, tuple, GetCurrentCommandId(true), 0, NULL);

	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsHeapTuple);
	ExecStoreHeapTuple(tuple, slot, false);
	for (int i = 0; i < parked_nindexes; i++)
	{
		Relation	idx = index_open(parked_indexes[i], RowExclusiveLock);
		IndexInfo  *ii = BuildIndexInfo(idx);
		Datum		ivalues[INDEX_MAX_KEYS];
		bool		inulls[INDEX_MAX_KEYS];

		/* plain columns only (parked_check_direct): no EState needed */
		FormIndexDatum(ii, slot, NULL, ivalues, inulls);
		index_insert(idx, ivalues, inulls, &tuple->t_self, rel,
					 idx->rd_index->indisunique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO,
					 false, ii);
		index_close(idx, NoLock);
	}
	ExecDropSingleTupleTableSlot(slot);
	heap_freetuple(tuple);
	table_close(rel, NoLock);
	CommandCounterIncrement();
	return true;
}

/*
 * Park an early event.  The caller holds the key lock and has checked that
 * the seq is not parked yet and the cap allows it.
 */
void
parked_insert(text *consumer, text *resource, int64 seq, Datum payload,
			  bool isnull)
{
	if (!park_direct(consumer, resource, seq, payload, isnull))
		park_spi(consumer, resource, seq, payload, isnull);
}

/*
 * Take ROW EXCLUSIVE on ordering.gap_requests before probing it in a call
 * that may close a gap (file header, and gaps.c): waits for a running sweep
 * to commit, and makes a sweep that starts later wait for our commit.
 * Locking processes invalidations, which may reset the cached OID: if the
 * table was replaced meanwhile, lock the new one.
 */
static void
gap_requests_lock(void)
{
	for (;;)
	{
		Oid			relid;

		if (!OidIsValid(gaps_rel.relid))
			cached_resolve(&gaps_rel);
		relid = gaps_rel.relid;
		LockRelationOid(relid, RowExclusiveLock);
		if (!OidIsValid(gaps_rel.relid))
			cached_resolve(&gaps_rel);
		if (gaps_rel.relid == relid)
			return;
		UnlockRelationOid(relid, RowExclusiveLock);
	}
}

/*
 * Is there a gap request for the key?  A SnapshotSelf probe of its primary
 * key.  The caller holds ROW EXCLUSIVE on the table (gap_requests_lock), so
 * no sweep has uncommitted requests: what is committed is the truth.
 */
static bool
gap_request_exists(text *consumer, text *resource)
{
	Oid			relid;
	Oid			indexid;
	Relation	rel;
	Relation	idx;
	ScanKeyData keys[2];
	IndexScanDesc scan;
	TupleTableSlot *slot;
	bool		found;

	if (!OidIsValid(gaps_rel.relid))
		cached_resolve(&gaps_rel);
	relid = gaps_rel.relid;
	indexid = gaps_rel.indexid;
	rel = table_open(relid, AccessShareLock);
	idx = index_open(indexid, AccessShareLock);
	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_TEXTEQ,
				PointerGetDatum(consumer));
	ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_TEXTEQ,
				PointerGetDatum(resource));
	slot = table_slot_create(rel, NULL);
	scan = index_beginscan(rel, idx, SnapshotSelf, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(idx, NoLock);
	table_close(rel, NoLock);
	return found;
}

/*
 * Close the gap request of the key if the position reaches its missing_to
 * or nothing remains parked.
 */
static void
settle_gap_spi(text *consumer, text *resource, int64 position,
			   bool nothing_left)
{
	Oid			types[4] = {TEXTOID, TEXTOID, INT8OID, BOOLOID};
	Datum		values[4];

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ordering_prepare_once(&plan_gap_settle,
				 "DELETE FROM ordering.gap_requests g"
				 " WHERE g.consumer OPERATOR(pg_catalog.=) $1"
				 " AND g.resource_id OPERATOR(pg_catalog.=) $2"
				 " AND (g.missing_to OPERATOR(pg_catalog.<=) $3 OR $4)",
				 4, types, CURSOR_OPT_GENERIC_PLAN);
	values[0] = PointerGetDatum(consumer);
	values[1] = PointerGetDatum(resource);
	values[2] = Int64GetDatum(position);
	values[3] = BoolGetDatum(nothing_left);
	run_plan(plan_gap_settle, values, SPI_OK_DELETE);
	SPI_finish();
}

/*
 * After the position moved to "position" with events parked: remove the
 * rows of the drained events ready->events[first ..] (seqs from ..
 * position; none if from > position), and close the gap request of the key
 * if the position reaches its missing_to, or if nothing remains parked (the
 * sweeper asks again for any gap left).  Rows are deleted below SPI with
 * simple_heap_delete() when allowed (index entries are left to VACUUM, as
 * for any delete); we hold the key lock, so nobody else changes them.
 *
 * This may close a gap, so it first takes the lock of ordering.gap_requests
 * (gap_requests_lock), before any probe or snapshot of that table, and may
 * wait there for a running sweep.
 */
void
parked_drain_finish(text *consumer, text *resource, ReadyList *ready,
					int first, int64 from, int64 position, bool nothing_left)
{
	Relation	rel = NULL;

	gap_requests_lock();
	if (from <= position && (rel = parked_open_direct()) == NULL)
	{
		drain_delete_spi(consumer, resource, from, position, position,
						 nothing_left);
		return;
	}
	if (rel != NULL)
	{
		for (int i = first; i < ready->n; i++)
			simple_heap_delete(rel, &ready->events[i].tid);
		table_close(rel, NoLock);
		CommandCounterIncrement();
	}
	if (gap_request_exists(consumer, resource))
		settle_gap_spi(consumer, resource, position, nothing_left);
}
