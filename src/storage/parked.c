/*-------------------------------------------------------------------------
 *
 * parked.c
 *	  The parked events of a (consumer, resource) and its gap request, for
 *	  the consumer's decisions (README.md, "Parked events and gap
 *	  requests").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/xact.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "utils/jsonb.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "parked.h"

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
 * The seq of the row a parked scan stands on.
 */
static int64
scan_seq(OwnedScan *scan)
{
	bool		isnull;

	return DatumGetInt64(slot_getattr(scan->slot, PARKED_SEQ, &isnull));
}

/*
 * The lowest parked seq of a key; false if nothing is parked.
 */
bool
parked_lowest(OwnedRel *parked, const Datum *key, Snapshot snapshot,
			  int64 *seq)
{
	OwnedScan	scan;
	bool		found;

	owned_scan_begin(parked, &scan, key, 2, InvalidStrategy, 0, snapshot);
	found = owned_scan_next(&scan, ForwardScanDirection);
	if (found)
		*seq = scan_seq(&scan);
	owned_scan_end(&scan);
	return found;
}

/*
 * Is this seq of the key parked?
 */
bool
parked_exists(OwnedRel *parked, const Datum *key, int64 seq,
			  Snapshot snapshot)
{
	OwnedScan	scan;
	bool		found;

	owned_scan_begin(parked, &scan, key, 2, BTEqualStrategyNumber,
					 Int64GetDatum(seq), snapshot);
	found = owned_scan_next(&scan, ForwardScanDirection);
	owned_scan_end(&scan);
	return found;
}

/*
 * Count a key's parked events and find the lowest and highest of their
 * seqs: a scan of all of them, for a key whose position row does not say
 * (decisions.c).
 */
void
parked_summarize(OwnedRel *parked, const Datum *key, Snapshot snapshot,
				 ParkedSummary *summary)
{
	OwnedScan	scan;

	summary->count = 0;
	summary->lowest = 0;
	summary->highest = 0;
	owned_scan_begin(parked, &scan, key, 2, InvalidStrategy, 0, snapshot);
	while (owned_scan_next(&scan, ForwardScanDirection))
	{
		int64		seq = scan_seq(&scan);

		if (summary->count++ == 0)
			summary->lowest = seq;
		summary->highest = seq;
	}
	owned_scan_end(&scan);
}

/*
 * Read the parked run that starts at "from" (from, from + 1, ... while they
 * are parked), appending its events to "ready" (payloads copied into
 * ready->cxt).  Returns the last seq of the run, from - 1 if "from" is not
 * parked; *next is the lowest seq parked after the run, 0 if none.
 */
int64
parked_read_run(OwnedRel *parked, const Datum *key, int64 from,
				Snapshot snapshot, ReadyList *ready, int64 *next)
{
	OwnedScan	scan;
	int64		last = from - 1;	/* from >= 1: no overflow */

	*next = 0;
	owned_scan_begin(parked, &scan, key, 2, BTGreaterEqualStrategyNumber,
					 Int64GetDatum(from), snapshot);
	while (owned_scan_next(&scan, ForwardScanDirection))
	{
		int64		seq = scan_seq(&scan);
		bool		isnull;
		Datum		payload;

		if (last == PG_INT64_MAX || seq != last + 1)
		{
			*next = seq;		/* the run ends at a gap */
			break;
		}
		payload = slot_getattr(scan.slot, PARKED_PAYLOAD, &isnull);
		if (!isnull)
		{
			MemoryContext old = MemoryContextSwitchTo(ready->cxt);

			/* the slot points into a shared buffer: copy, and detoast */
			payload = PointerGetDatum(PG_DETOAST_DATUM_COPY(payload));
			MemoryContextSwitchTo(old);
		}
		parked_ready_add(ready, seq, payload, isnull);
		ready->events[ready->n - 1].tid = scan.slot->tts_tid;
		last = seq;
	}
	owned_scan_end(&scan);
	return last;
}

/*
 * parked_read_run() for a key whose parked events "summary" describes, the
 * lowest of them being "from": the events the parked events' TID cache
 * finds (owned_rows.c) are read without descending the primary key, and
 * the index is asked only from the first one the cache does not know (it
 * never says an event is not parked).  A run that takes every parked event
 * of the key needs no index at all.  Under SERIALIZABLE the index is
 * always asked: its scan takes the predicate locks a SQL read would.
 */
int64
parked_read_known_run(OwnedRel *parked, const Datum *key, int64 from,
					  const ParkedSummary *summary, Snapshot snapshot,
					  ReadyList *ready, int64 *next)
{
	int64		last = from - 1;	/* from >= 1: no overflow */
	int64		left = summary->count;

	Assert(summary->count > 0 && summary->lowest == from);
	if (IsolationIsSerializable())
		return parked_read_run(parked, key, from, snapshot, ready, next);
	while (left > 0 && last < summary->highest)
	{
		OwnedRow	row;
		Datum		payload;
		bool		isnull;

		if (!owned_fetch_parked_cached(parked, key, last + 1, snapshot, &row))
			break;
		payload = row.values[PARKED_PAYLOAD - 1];
		isnull = row.nulls[PARKED_PAYLOAD - 1];
		if (!isnull)
		{
			MemoryContext old = MemoryContextSwitchTo(ready->cxt);

			/* the row is a copy that goes now: copy, and detoast */
			payload = PointerGetDatum(PG_DETOAST_DATUM_COPY(payload));
			MemoryContextSwitchTo(old);
		}
		parked_ready_add(ready, last + 1, payload, isnull);
		ready->events[ready->n - 1].tid = row.tid;
		heap_freetuple(row.tuple);
		last++;
		left--;
	}
	if (left == 0 || last == PG_INT64_MAX)
	{
		*next = 0;
		return last;
	}
	return parked_read_run(parked, key, last + 1, snapshot, ready, next);
}

/*
 * Park an early event.  parked_at is the transaction's start, as the
 * column's default now() would be.
 */
void
parked_insert(OwnedRel *parked, const Datum *key, int64 seq, Datum payload,
			  bool isnull)
{
	Datum		values[OWNED_MAX_NATTS];
	bool		nulls[OWNED_MAX_NATTS] = {false};

	values[PARKED_CONSUMER - 1] = key[0];
	values[PARKED_RESOURCE - 1] = key[1];
	values[PARKED_SEQ - 1] = Int64GetDatum(seq);
	values[PARKED_PAYLOAD - 1] = payload;
	nulls[PARKED_PAYLOAD - 1] = isnull;
	values[PARKED_PARKED_AT - 1] =
		TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	owned_insert(parked, values, nulls);
}

/*
 * After the position of the key moved to "position" with events parked:
 * close the gap request of the key if the position reaches its missing_to,
 * or if nothing remains parked (the sweeper asks again for any gap left).
 * Takes the lock of the gap requests table first (README.md), and may
 * wait there for a running sweep.  gap_requests is that table if it is not
 * ordering.gap_requests (InvalidOid): a distributed consumer's shard.
 */
void
parked_settle_gap(Oid gap_requests, const Datum *key, int64 position,
				  bool nothing_left)
{
	OwnedRel	gaps;
	OwnedRow	request;

	owned_open_as(OWNED_GAP_REQUESTS, gap_requests, RowExclusiveLock, &gaps);
	if (owned_fetch(&gaps, key, SnapshotSelf, &request))
	{
		int64		missing_to = DatumGetInt64(request.values[GAP_REQUESTS_MISSING_TO - 1]);

		if (missing_to <= position || nothing_left)
			owned_delete(&gaps, &request.tid);
	}
	owned_close(&gaps);
}
