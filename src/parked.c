/*-------------------------------------------------------------------------
 *
 * parked.c
 *	  The parked events of a (consumer, resource) in ordering.parked, and
 *	  the gap request of a key in ordering.gap_requests, for deliver() and
 *	  skip_gap() (consumer.c), through the storage layer.
 *
 * Locking rules
 *
 * A key's parked events change only together with a new version of its
 * row in ordering.positions, which the caller writes first (consumer.c):
 * that row serializes every change of the key, as a row lock serializes
 * UPDATEs.  So the reads here, made with the caller's decision snapshot
 * (owned_rows.c), see every committed change of the key, and a change
 * committed after them makes the caller's write of the position row fail
 * (it then decides again, or under SERIALIZABLE raises 40001).  The rows
 * removed after a drain were found by the caller, which holds the key, so
 * nobody else can touch them.
 *
 * Gap requests are written by sweeps (gaps.c) too, which take no row of
 * ordering.positions.  A call that may close a gap (parked_settle_gap) takes
 * ROW EXCLUSIVE on ordering.gap_requests first, which a sweep's SHARE ROW
 * EXCLUSIVE excludes: from then on no sweep is in progress, one that ran has
 * committed its requests (a SnapshotSelf probe sees them), and one that
 * starts waits for our commit before it takes its snapshot (and will see
 * the gap closed).  That lock is taken after the position row, never
 * before, and a gap-closing call may wait for a running sweep.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "access/xact.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "utils/jsonb.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "parked.h"

/* How many rows parked_highest() walks down before it asks the index */
#define PARKED_WALK		4

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
 * The highest parked seq of a key, and whether "seq" is parked too; false if
 * nothing is parked.  The scan that finds the highest goes on down for a
 * few rows, which usually reaches "seq" (events arrive only a little out of
 * order); farther down, the index is asked.
 */
bool
parked_highest(OwnedRel *parked, const Datum *key, int64 seq,
			   Snapshot snapshot, int64 *highest, bool *seq_parked)
{
	OwnedScan	scan;
	bool		found;
	bool		more;
	int64		s = 0;

	owned_scan_begin(parked, &scan, key, 2, InvalidStrategy, 0, snapshot);
	found = more = owned_scan_next(&scan, BackwardScanDirection);
	if (found)
		*highest = s = scan_seq(&scan);
	for (int steps = 0; more && s > seq && steps < PARKED_WALK; steps++)
	{
		more = owned_scan_next(&scan, BackwardScanDirection);
		if (more)
			s = scan_seq(&scan);
	}
	owned_scan_end(&scan);
	if (more && s > seq)
		*seq_parked = parked_exists(parked, key, seq, snapshot);
	else
		*seq_parked = more && s == seq;
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
 * How many events of a key are parked, counting no further than limit.
 */
int64
parked_count(OwnedRel *parked, const Datum *key, int64 limit,
			 Snapshot snapshot)
{
	OwnedScan	scan;
	int64		seen = 0;

	owned_scan_begin(parked, &scan, key, 2, InvalidStrategy, 0, snapshot);
	while (seen < limit && owned_scan_next(&scan, ForwardScanDirection))
		seen++;
	owned_scan_end(&scan);
	return seen;
}

/*
 * Read the parked run that starts at "from" (from, from + 1, ... while they
 * are parked), appending its events to "ready" (payloads copied into
 * ready->cxt).  Returns the last seq of the run, from - 1 if "from" is not
 * parked; *beyond tells whether events remain parked after the run.
 */
int64
parked_read_run(OwnedRel *parked, const Datum *key, int64 from,
				Snapshot snapshot, ReadyList *ready, bool *beyond)
{
	OwnedScan	scan;
	int64		last = from - 1;	/* from >= 1: no overflow */

	*beyond = false;
	owned_scan_begin(parked, &scan, key, 2, BTGreaterEqualStrategyNumber,
					 Int64GetDatum(from), snapshot);
	while (owned_scan_next(&scan, ForwardScanDirection))
	{
		int64		seq = scan_seq(&scan);
		bool		isnull;
		Datum		payload;

		if (last == PG_INT64_MAX || seq != last + 1)
		{
			*beyond = true;		/* the run ends at a gap */
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
 * Takes the lock of ordering.gap_requests first (file header), and may wait
 * there for a running sweep.
 */
void
parked_settle_gap(const Datum *key, int64 position, bool nothing_left)
{
	OwnedRel	gaps;
	OwnedRow	request;

	owned_open(OWNED_GAP_REQUESTS, RowExclusiveLock, &gaps);
	if (owned_fetch(&gaps, key, SnapshotSelf, &request))
	{
		int64		missing_to = DatumGetInt64(request.values[GAP_REQUESTS_MISSING_TO - 1]);

		if (missing_to <= position || nothing_left)
			owned_delete(&gaps, &request.tid);
	}
	owned_close(&gaps);
}
