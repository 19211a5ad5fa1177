/*-------------------------------------------------------------------------
 *
 * consumer.c
 *	  Consumer side: apply_if_newer() for state events, deliver() and
 *	  skip_gap() for step events, position().
 *
 * A consumer's position per resource lives in ordering.positions and is
 * read and advanced through keyed.c (no executor, no SPI).  Step events that
 * arrive ahead of a missing predecessor wait in ordering.parked.
 *
 * State events: apply_if_newer() is one keyed_advance() whose decision is
 * "seq if seq > current, else current".  The check and the write are one
 * atomic step on the position row (the row is its own lock, see keyed.c): a
 * concurrent advance of the same row makes us wait for its commit and decide
 * again on the newer value, so a read-compare-write race cannot happen.  A
 * plainly stale event (seq <= the committed position) changes nothing and
 * therefore never waits.
 *
 * Step events: deliver() and skip_gap() decide on the position and on the
 * parked rows together, so a whole call is serialized per (consumer,
 * resource): each first takes keyed_lock_key(&ordering_positions, consumer,
 * resource), the transaction-scoped key lock of the position row, and holds
 * it to the end of the transaction.  Different resources take different
 * locks and never wait for each other.  Once we hold the lock, every earlier
 * holder has committed or rolled back, and no other transaction has changes
 * in progress for this key, so:
 *
 *	- the position read with keyed_read() (SnapshotSelf: committed or ours) is
 *	  the truth and stays so until we commit;
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
 *	  one, deleted with SQL: the sweeper writes that table concurrently, and
 *	  an SQL DELETE waits for it and rechecks.
 *	  SPI plans are prepared once per backend and run with a fresh snapshot
 *	  (GetLatestSnapshot) so they see the same rows as the probes even in
 *	  REPEATABLE READ transactions, whose snapshot may predate the commit of
 *	  the previous lock holder.
 *
 * Invariants kept by deliver()/skip_gap(): every parked seq of a key is
 * greater than position + 1 (an event that continues the run is never
 * parked, and every move of the position drains what continues it).  Hence
 * the parked seqs are distinct values in [position + 2, highest parked], and
 * their number is at most highest - position - 1: the parking cap only needs
 * counting when that bound exceeds it.
 *
 * Everything happens in the caller's transaction: a rollback restores the
 * position, the parked rows and the gap requests.
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
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "keyed.h"
#include "ordering.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(ordering_apply_if_newer);
PG_FUNCTION_INFO_V1(ordering_deliver);
PG_FUNCTION_INFO_V1(ordering_deliver_handler);
PG_FUNCTION_INFO_V1(ordering_position);
PG_FUNCTION_INFO_V1(ordering_skip_gap);

/* columns of ordering.parked, and of its primary key (the same order) */
#define PARKED_ATT_CONSUMER 1
#define PARKED_ATT_RESOURCE 2
#define PARKED_ATT_SEQ		3
#define PARKED_ATT_PAYLOAD	4

/* An event to apply now: the one delivered, or a drained one */
typedef struct ReadyEvent
{
	int64		seq;
	Datum		payload;
	bool		isnull;
	ItemPointerData tid;		/* its row in ordering.parked, if drained */
} ReadyEvent;

/* The events a call hands back, in order, allocated in "cxt" */
typedef struct ReadyList
{
	ReadyEvent *events;
	int			n;
	int			size;
	MemoryContext cxt;
} ReadyList;

/* ordering.parked and its primary key, open for probing */
typedef struct ParkedScan
{
	Relation	rel;
	Relation	idx;
	TupleTableSlot *slot;
} ParkedScan;

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
static bool consumer_callback_registered = false;

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

/* a resolved handler of deliver(..., handler), cached in fn_extra */
typedef struct HandlerCache
{
	Oid			handler;
	bool		strict;
	FmgrInfo	flinfo;
} HandlerCache;

/*
 * Forget cached OIDs when a table's relcache entry is invalidated (dropped
 * with the extension, altered, an index or trigger added, or everything).
 * Adding or dropping an index or trigger invalidates the table itself.
 */
static void
consumer_relcache_callback(Datum arg, Oid relid)
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
	indexid = RelationGetPrimaryKeyIndex(rel);
	ok = OidIsValid(indexid);
	if (ok)
	{
		Relation	idx = index_open(indexid, AccessShareLock);

		ok = idx->rd_index->indnkeyatts == cr->nkeys;
		for (int i = 0; ok && i < cr->nkeys; i++)
			ok = idx->rd_index->indkey.values[i] == i + 1;
		index_close(idx, AccessShareLock);
	}
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

	if (!consumer_callback_registered)
	{
		CacheRegisterRelcacheCallback(consumer_relcache_callback, (Datum) 0);
		consumer_callback_registered = true;
	}
	cr->relid = relid;
	cr->indexid = indexid;
}

/*
 * Open ordering.parked and its primary key for probing.
 */
static void
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

static void
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
static bool
parked_lowest(ParkedScan *ps, text *consumer, text *resource, int64 *seq)
{
	return parked_scan(ps, consumer, resource, InvalidStrategy, 0,
					   ForwardScanDirection, 1, seq) > 0;
}

/* The highest parked seq of a key; false if nothing is parked. */
static bool
parked_highest(ParkedScan *ps, text *consumer, text *resource, int64 *seq)
{
	return parked_scan(ps, consumer, resource, InvalidStrategy, 0,
					   BackwardScanDirection, 1, seq) > 0;
}

/* Is this seq parked? */
static bool
parked_exists(ParkedScan *ps, text *consumer, text *resource, int64 seq)
{
	int64		found;

	return parked_scan(ps, consumer, resource, BTEqualStrategyNumber, seq,
					   ForwardScanDirection, 1, &found) > 0;
}

/* How many events of a key are parked, counting no further than limit. */
static int64
parked_count(ParkedScan *ps, text *consumer, text *resource, int64 limit)
{
	int64		found;

	return parked_scan(ps, consumer, resource, InvalidStrategy, 0,
					   ForwardScanDirection, limit, &found);
}

/*
 * Prepare and keep an SPI plan once per backend.  The caller is connected.
 */
static SPIPlanPtr
prepare_once(SPIPlanPtr *cache, const char *sql, int nargs, Oid *argtypes)
{
	if (*cache == NULL)
	{
		SPIPlanPtr	plan;

		/* always the generic plan: the parameters never change the best plan */
		plan = SPI_prepare_cursor(sql, nargs, argtypes, CURSOR_OPT_GENERIC_PLAN);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s",
				 sql, SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		*cache = plan;
	}
	return *cache;
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
static void
ready_add(ReadyList *list, int64 seq, Datum payload, bool isnull)
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
static int64
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
		ready_add(ready, seq, payload, isnull);
		ready->events[ready->n - 1].tid = ps->slot->tts_tid;
		last = seq;
	}
	index_endscan(scan);
	return last;
}

/*
 * drain_finish() through SPI (see parked_direct): remove the parked rows
 * [from, last] and settle the gap request, in one statement.
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
	prepare_once(&plan_drain,
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
				 6, types);
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
	prepare_once(&plan_park,
				 "INSERT INTO ordering.parked (consumer, resource_id, seq, payload)"
				 " VALUES ($1, $2, $3, $4)",
				 4, types);
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
static void
park(text *consumer, text *resource, int64 seq, Datum payload, bool isnull)
{
	if (!park_direct(consumer, resource, seq, payload, isnull))
		park_spi(consumer, resource, seq, payload, isnull);
}

/*
 * Is there a gap request for the key?  A SnapshotSelf probe of its primary
 * key: the sweeper's uncommitted requests are not seen, exactly as an SQL
 * DELETE would not see them.
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
	prepare_once(&plan_gap_settle,
				 "DELETE FROM ordering.gap_requests g"
				 " WHERE g.consumer OPERATOR(pg_catalog.=) $1"
				 " AND g.resource_id OPERATOR(pg_catalog.=) $2"
				 " AND (g.missing_to OPERATOR(pg_catalog.<=) $3 OR $4)",
				 4, types);
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
 */
static void
drain_finish(text *consumer, text *resource, ReadyList *ready, int first,
			 int64 from, int64 position, bool nothing_left)
{
	Relation	rel = NULL;

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

/* KeyedDecide: seq if it is newer, else no change */
static int64
decide_newer(int64 current, bool exists, void *arg)
{
	int64		seq = *(int64 *) arg;

	return seq > current ? seq : current;
}

/*
 * Move the position of a key forward to "target" (never backward).
 */
static void
advance_position(text *consumer, text *resource, int64 target)
{
	int64		previous;

	(void) keyed_advance(&ordering_positions, consumer, resource,
						 decide_newer, &target, &previous);
}

/*
 * Check the (consumer, resource_id [, seq]) arguments common to the
 * consumer functions: NULL is SQLSTATE 22004, a bad value 22023.
 */
static void
get_key_args(FunctionCallInfo fcinfo, text **consumer, text **resource,
			 int64 *seq)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("consumer must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("resource_id must not be null")));
	if (seq != NULL && PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("seq must not be null")));
	*consumer = PG_GETARG_TEXT_PP(0);
	*resource = PG_GETARG_TEXT_PP(1);
	if (VARSIZE_ANY_EXHDR(*consumer) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("consumer must not be empty")));
	keyed_check_key_length(*consumer, "consumer");
	keyed_check_key_length(*resource, "resource_id");
	if (seq != NULL)
	{
		*seq = PG_GETARG_INT64(2);
		if (*seq < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("sequence number must be positive, got " INT64_FORMAT,
							*seq)));
	}
}

/*
 * ordering.apply_if_newer(consumer text, resource_id text, seq bigint)
 * returns boolean
 *
 * True when seq is above the position: the position is now seq and the
 * caller owns the event.  One atomic check-and-advance (see file header).
 */
Datum
ordering_apply_if_newer(PG_FUNCTION_ARGS)
{
	text	   *consumer;
	text	   *resource;
	int64		seq;
	int64		previous;
	char	   *name;
	bool		applied;

	get_key_args(fcinfo, &consumer, &resource, &seq);
	(void) keyed_advance(&ordering_positions, consumer, resource,
						 decide_newer, &seq, &previous);
	applied = previous < seq;

	name = text_to_cstring(consumer);
	ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
	if (applied)
		ordering_stats_count(name, ORDERING_EVENT_APPLIED, 1);
	else
		ordering_stats_count(name, previous == seq ? ORDERING_EVENT_DUPLICATE :
							 ORDERING_EVENT_STALE, 1);
	PG_RETURN_BOOL(applied);
}

/*
 * The decision of deliver(): fills "ready" with the events to apply now, in
 * order, and changes position, parking and gap request accordingly.
 */
static void
deliver_event(text *consumer, text *resource, int64 seq,
			  Datum payload, bool payload_isnull, ReadyList *ready)
{
	char	   *name = text_to_cstring(consumer);
	int64		position;
	int64		lowest = 0;
	int64		highest = 0;
	bool		has_parked;
	ParkedScan	ps;

	/* the whole decision is serialized per key (file header) */
	keyed_lock_key(&ordering_positions, consumer, resource);
	position = keyed_read(&ordering_positions, consumer, resource);

	if (seq <= position)
	{
		ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
		ordering_stats_count(name, seq == position ? ORDERING_EVENT_DUPLICATE :
							 ORDERING_EVENT_STALE, 1);
		return;
	}

	parked_open(&ps);
	has_parked = parked_lowest(&ps, consumer, resource, &lowest);

	if (seq == position + 1)
	{
		int64		end = seq;
		bool		beyond = true;

		ready_add(ready, seq, payload, payload_isnull);
		/* nothing can be parked above the largest seq */
		has_parked = has_parked && seq < PG_INT64_MAX;
		if (has_parked && lowest == seq + 1)
			end = parked_read_run(&ps, consumer, resource, seq + 1, ready,
								  &beyond);
		parked_close(&ps);
		advance_position(consumer, resource, end);
		if (has_parked)
			drain_finish(consumer, resource, ready, 1, seq + 1, end, !beyond);

		ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
		ordering_stats_count(name, ORDERING_EVENT_APPLIED, ready->n);
		if (ready->n > 1)
			ordering_stats_count(name, ORDERING_EVENT_DRAINED, ready->n - 1);
		return;
	}

	/* early: park it, unless it is parked already or the cap is reached */
	if (has_parked)
	{
		(void) parked_highest(&ps, consumer, resource, &highest);
		if (seq >= lowest && seq <= highest &&
			parked_exists(&ps, consumer, resource, seq))
		{
			parked_close(&ps);
			ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
			ordering_stats_count(name, ORDERING_EVENT_DUPLICATE, 1);
			return;
		}
	}

	/*
	 * After parking, the parked seqs are distinct values in [position + 2,
	 * Max(highest, seq)] (file header), so their number cannot exceed the
	 * cap unless that range is longer than the cap; only then count.
	 */
	if (Max(highest, seq) - position - 1 > ordering_max_parked_per_resource)
	{
		int64		cap = ordering_max_parked_per_resource;
		int64		parked = parked_count(&ps, consumer, resource, cap);

		if (parked >= cap)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many events parked for consumer \"%s\" and resource \"%s\"",
							name, text_to_cstring(resource)),
					 errdetail("Event " INT64_FORMAT " arrived at position " INT64_FORMAT ", and " INT64_FORMAT " events are parked already, the limit set by ordering.max_parked_per_resource.",
							   seq, position, parked),
					 errhint("Redeliver the event later, or give up on the missing events with ordering.skip_gap().")));
	}
	parked_close(&ps);

	park(consumer, resource, seq, payload, payload_isnull);
	ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
	ordering_stats_count(name, ORDERING_EVENT_PARKED, 1);
	ordering_stats_reorder_distance(name, seq - position);
}

/*
 * The payload argument, detoasted: it may be returned as it is, and a
 * tuplestore must not keep a pointer to some table's TOAST data.
 */
static Datum
payload_arg(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(3))
		return (Datum) 0;
	return PointerGetDatum(PG_DETOAST_DATUM(PG_GETARG_DATUM(3)));
}

/*
 * Hand the ready events back as the (seq, payload) rows of a set-returning
 * call (deliver() and skip_gap()).
 */
static void
ready_return(ReadyList *ready, ReturnSetInfo *rsinfo)
{
	for (int i = 0; i < ready->n; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, ready->events[i].isnull};

		values[0] = Int64GetDatum(ready->events[i].seq);
		values[1] = ready->events[i].payload;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * ordering.deliver(consumer text, resource_id text, seq bigint,
 *					payload jsonb) returns table (seq bigint, payload jsonb)
 */
Datum
ordering_deliver(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	text	   *consumer;
	text	   *resource;
	int64		seq;
	ReadyList	ready = {NULL, 0, 0, CurrentMemoryContext};

	get_key_args(fcinfo, &consumer, &resource, &seq);
	InitMaterializedSRF(fcinfo, 0);
	deliver_event(consumer, resource, seq, payload_arg(fcinfo), PG_ARGISNULL(3),
				  &ready);

	ready_return(&ready, rsinfo);
	return (Datum) 0;
}

/*
 * Resolve and check a handler of deliver(): a plain function taking
 * (text, bigint, jsonb) that the caller may execute.  Cached in fn_extra.
 */
static HandlerCache *
handler_lookup(FunctionCallInfo fcinfo, Oid handler)
{
	HandlerCache *hc = (HandlerCache *) fcinfo->flinfo->fn_extra;
	HeapTuple	proctup;
	Form_pg_proc proc;
	AclResult	aclresult;
	bool		ok;

	if (hc != NULL && hc->handler == handler)
		return hc;

	proctup = SearchSysCache1(PROCOID, ObjectIdGetDatum(handler));
	if (!HeapTupleIsValid(proctup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("handler function with OID %u does not exist", handler)));
	proc = (Form_pg_proc) GETSTRUCT(proctup);
	ok = proc->prokind == PROKIND_FUNCTION && !proc->proretset &&
		proc->pronargs == 3 &&
		proc->proargtypes.values[0] == TEXTOID &&
		proc->proargtypes.values[1] == INT8OID &&
		proc->proargtypes.values[2] == JSONBOID;
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("handler %s must be a function taking (text, bigint, jsonb)",
						format_procedure(handler)),
				 errhint("Declare it as handler(resource_id text, seq bigint, payload jsonb); it must not return a set.")));
	aclresult = pg_proc_aclcheck(handler, GetUserId(), ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, NameStr(proc->proname));

	if (hc == NULL)
		hc = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(HandlerCache));
	hc->handler = InvalidOid;
	hc->strict = proc->proisstrict;
	ReleaseSysCache(proctup);
	fmgr_info_cxt(handler, &hc->flinfo, fcinfo->flinfo->fn_mcxt);
	hc->handler = handler;
	fcinfo->flinfo->fn_extra = hc;
	return hc;
}

/*
 * ordering.deliver(consumer text, resource_id text, seq bigint,
 *					payload jsonb, handler regprocedure) returns integer
 *
 * The same decision as deliver(); calls the handler for each ready event in
 * order and returns how many ran.
 */
Datum
ordering_deliver_handler(PG_FUNCTION_ARGS)
{
	text	   *consumer;
	text	   *resource;
	int64		seq;
	HandlerCache *hc;
	ReadyList	ready = {NULL, 0, 0, CurrentMemoryContext};

	get_key_args(fcinfo, &consumer, &resource, &seq);
	if (PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("handler must not be null")));
	hc = handler_lookup(fcinfo, PG_GETARG_OID(4));
	deliver_event(consumer, resource, seq, payload_arg(fcinfo), PG_ARGISNULL(3),
				  &ready);

	for (int i = 0; i < ready.n; i++)
	{
		LOCAL_FCINFO(hcinfo, 3);

		if (hc->strict && ready.events[i].isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("strict handler %s cannot take the null payload of event " INT64_FORMAT,
							format_procedure(hc->handler), ready.events[i].seq)));
		InitFunctionCallInfoData(*hcinfo, &hc->flinfo, 3,
								 PG_GET_COLLATION(), NULL, NULL);
		hcinfo->args[0].value = PointerGetDatum(resource);
		hcinfo->args[0].isnull = false;
		hcinfo->args[1].value = Int64GetDatum(ready.events[i].seq);
		hcinfo->args[1].isnull = false;
		hcinfo->args[2].value = ready.events[i].payload;
		hcinfo->args[2].isnull = ready.events[i].isnull;
		(void) FunctionCallInvoke(hcinfo);
	}
	PG_RETURN_INT32(ready.n);
}

/*
 * ordering.position(consumer text, resource_id text) returns bigint
 */
Datum
ordering_position(PG_FUNCTION_ARGS)
{
	text	   *consumer;
	text	   *resource;

	get_key_args(fcinfo, &consumer, &resource, NULL);
	PG_RETURN_INT64(keyed_read(&ordering_positions, consumer, resource));
}

/*
 * ordering.skip_gap(consumer text, resource_id text)
 * returns table (seq bigint, payload jsonb)
 *
 * Gives up on the events missing before the lowest parked one: the position
 * moves to just before it, and the run that then drains is returned (and
 * its rows removed).  Nothing parked: nothing changes.
 */
Datum
ordering_skip_gap(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	text	   *consumer;
	text	   *resource;
	int64		lowest;
	int64		end = 0;
	bool		beyond = false;
	bool		has_parked;
	ParkedScan	ps;
	ReadyList	ready = {NULL, 0, 0, CurrentMemoryContext};

	get_key_args(fcinfo, &consumer, &resource, NULL);
	InitMaterializedSRF(fcinfo, 0);

	keyed_lock_key(&ordering_positions, consumer, resource);
	parked_open(&ps);
	has_parked = parked_lowest(&ps, consumer, resource, &lowest);
	if (has_parked)
		end = parked_read_run(&ps, consumer, resource, lowest, &ready, &beyond);
	parked_close(&ps);
	if (!has_parked)
		return (Datum) 0;

	advance_position(consumer, resource, end);
	drain_finish(consumer, resource, &ready, 0, lowest, end, !beyond);

	if (ready.n > 0)
	{
		char	   *name = text_to_cstring(consumer);

		ordering_stats_count(name, ORDERING_EVENT_APPLIED, ready.n);
		ordering_stats_count(name, ORDERING_EVENT_DRAINED, ready.n);
	}
	ready_return(&ready, rsinfo);
	return (Datum) 0;
}
