/*-------------------------------------------------------------------------
 *
 * decisions.c
 *	  The decisions on a (consumer, resource), and the single-event consumer
 *	  functions that make them: apply_if_newer(), deliver(), position(),
 *	  skip_gap() (README.md, "Decisions").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "consumer.h"
#include "dead_letter_store.h"
#include "decision_log.h"
#include "settings.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(ordering_apply_if_newer);
PG_FUNCTION_INFO_V1(ordering_deliver);
PG_FUNCTION_INFO_V1(ordering_deliver_handler);
PG_FUNCTION_INFO_V1(ordering_position);
PG_FUNCTION_INFO_V1(ordering_skip_gap);

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
 * call.
 */
void
consumer_return_ready(FunctionCallInfo fcinfo, ReadyList *ready)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

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
 * Make a position row's summary of the parked events say "summary".
 */
void
consumer_set_summary(Datum *values, const ParkedSummary *summary)
{
	values[POSITIONS_PARKED_COUNT - 1] = Int64GetDatum(summary->count);
	values[POSITIONS_PARKED_LOWEST - 1] = Int64GetDatum(summary->lowest);
	values[POSITIONS_PARKED_HIGHEST - 1] = Int64GetDatum(summary->highest);
}

/*
 * The position, the block and the summary of the parked events of a
 * position row as found (0, 0 and "not known" for a row that does not exist
 * yet: it starts at position 0, unblocked).
 */
void
consumer_read_position(const OwnedRow *row, Datum *values, bool *nulls,
					   KeyDecision *kd)
{
	if (!row->found)
	{
		ParkedSummary unknown = {-1, 0, 0};

		values[POSITIONS_POSITION - 1] = Int64GetDatum(0);
		nulls[POSITIONS_POSITION - 1] = false;
		nulls[POSITIONS_BLOCKED_AT - 1] = true;
		consumer_set_summary(values, &unknown);
		nulls[POSITIONS_PARKED_COUNT - 1] = false;
		nulls[POSITIONS_PARKED_LOWEST - 1] = false;
		nulls[POSITIONS_PARKED_HIGHEST - 1] = false;
		ItemPointerSetInvalid(&kd->row_tid);
	}
	else
		kd->row_tid = row->tid;
	kd->position = DatumGetInt64(values[POSITIONS_POSITION - 1]);
	kd->blocked_at = nulls[POSITIONS_BLOCKED_AT - 1] ? 0 :
		DatumGetInt64(values[POSITIONS_BLOCKED_AT - 1]);
	kd->summary.count = DatumGetInt64(values[POSITIONS_PARKED_COUNT - 1]);
	kd->summary.lowest = DatumGetInt64(values[POSITIONS_PARKED_LOWEST - 1]);
	kd->summary.highest = DatumGetInt64(values[POSITIONS_PARKED_HIGHEST - 1]);
	/* a block is always ahead of the position (README.md) */
	Assert(kd->blocked_at == 0 || kd->blocked_at > kd->position);
	if (kd->ready != NULL)
		kd->ready->n = 0;
}

#ifdef USE_ASSERT_CHECKING
/*
 * Whether the version of the position row that kd was read from is still
 * the one a decision finds.  Decisions under SnapshotSelf (file header of
 * owned_rows.c) read the row, then the parked events, at two moments: a
 * transaction that changed both and committed in between makes them
 * disagree (and the decision is made again, once our write of the row
 * finds its newer version).  Such a transaction changes the row first, so
 * while the version read is still visible, nothing read after it changed.
 * An MVCC decision snapshot (SERIALIZABLE) reads both at one moment.
 */
static bool
row_still_current(const KeyDecision *kd)
{
	HeapTupleData tuple;
	Buffer		buf;

	if (IsMVCCSnapshot(kd->snapshot) || kd->positions == NULL)
		return true;
	/* no row was read: a concurrent writer may have made one since */
	if (!ItemPointerIsValid(&kd->row_tid))
		return false;
	tuple.t_self = kd->row_tid;
	if (!heap_fetch(kd->positions->rel, kd->snapshot, &tuple, &buf, false))
		return false;
	ReleaseBuffer(buf);
	return true;
}
#endif

/*
 * Make sure kd->summary is known: a row that does not say (parked_count
 * -1) has its parked events counted, with the decision snapshot, once; the
 * decision writes the result with the row.  Assert-enabled builds check a
 * known summary of a few events against the table, where both were read
 * as of one moment.
 */
void
consumer_know_parked(KeyDecision *kd)
{
	if (kd->summary.count < 0)
	{
		parked_summarize(kd->parked, kd->key, kd->snapshot, &kd->summary);
		return;
	}
#ifdef USE_ASSERT_CHECKING
	if (kd->summary.count <= 10)
	{
		ParkedSummary table;

		parked_summarize(kd->parked, kd->key, kd->snapshot, &table);
		Assert(!row_still_current(kd) ||
			   (table.count == kd->summary.count &&
				table.lowest == kd->summary.lowest &&
				table.highest == kd->summary.highest));
	}
#endif
}

/*
 * Make a position row say: position, and blocked at blocked_at (0: not).
 */
static void
set_position(Datum *values, bool *nulls, int64 position, int64 blocked_at)
{
	values[POSITIONS_POSITION - 1] = Int64GetDatum(position);
	values[POSITIONS_BLOCKED_AT - 1] = Int64GetDatum(blocked_at);
	nulls[POSITIONS_BLOCKED_AT - 1] = blocked_at == 0;
}

/*
 * OwnedDecide of apply_if_newer(): seq if it is newer, else no change.
 */
static OwnedVerdict
decide_newer(const OwnedRow *row, Datum *values, bool *nulls, void *arg)
{
	KeyDecision *kd = (KeyDecision *) arg;

	consumer_read_position(row, values, nulls, kd);
	if (kd->seq <= kd->position)
		return OWNED_KEEP;
	values[POSITIONS_POSITION - 1] = Int64GetDatum(kd->seq);
	return OWNED_WRITE;
}

/*
 * The position moves to "to": add the parked run that continues it to
 * kd->ready, and say where the position ends (kd->end), whether events stay
 * parked beyond the run (kd->beyond) and whether any were parked
 * (kd->had_parked); kd->summary (known) becomes what remains parked.  Scans
 * ordering.parked only when the summary says that "to + 1" may be parked,
 * and then once.
 */
void
consumer_continue_run(KeyDecision *kd, int64 to)
{
	ParkedSummary *summary = &kd->summary;

	Assert(summary->count >= 0);
	kd->end = to;
	kd->had_parked = summary->count > 0;
	if (summary->count > 0 && summary->lowest <= to + 1 && to < PG_INT64_MAX)
	{
		int64		next;

		if (summary->lowest == to + 1)
			kd->end = parked_read_known_run(kd->parked, kd->key, to + 1,
											summary, kd->snapshot, kd->ready,
											&next);
		else
			kd->end = parked_read_run(kd->parked, kd->key, to + 1,
									  kd->snapshot, kd->ready, &next);
		if (summary->lowest == to + 1)
		{
			summary->count -= kd->end - to;
			summary->lowest = next;
			if (summary->count == 0)
				summary->highest = 0;
		}
		else if (kd->end > to)
		{
			/*
			 * Events remain parked at or below the new position (only SQL
			 * writes leave such): the next decision counts them again.
			 */
			summary->count = -1;
			summary->lowest = summary->highest = 0;
		}
	}
	kd->beyond = summary->count != 0;
}

/*
 * Is seq, above the position, parked?  The summary answers most cases
 * (outside [lowest, highest]: no; at either end, or the range full: yes);
 * in between, the index does.
 */
static bool
seq_parked(KeyDecision *kd, int64 seq)
{
	ParkedSummary *summary = &kd->summary;

	if (summary->count == 0 || seq < summary->lowest || seq > summary->highest)
		return false;
	if (seq == summary->lowest || seq == summary->highest ||
		summary->count == summary->highest - summary->lowest + 1)
		return true;
	return parked_exists(kd->parked, kd->key, seq, kd->snapshot);
}

/*
 * OwnedDecide of deliver() (README.md).  Reads the parked events with the
 * same snapshot the row was found with, where the row's summary of them
 * does not answer; has no side effects but filling kd->ready.
 */
static OwnedVerdict
decide_deliver(const OwnedRow *row, Datum *values, bool *nulls, void *arg)
{
	KeyDecision *kd = (KeyDecision *) arg;
	ParkedSummary *summary = &kd->summary;

	consumer_read_position(row, values, nulls, kd);
	if (kd->seq <= kd->position || kd->seq == kd->blocked_at)
	{
		kd->plan = kd->seq < kd->position ? PLAN_STALE : PLAN_DUPLICATE;
		return OWNED_KEEP;
	}
	consumer_know_parked(kd);
#ifdef USE_ASSERT_CHECKING
	{
		int64		lowest;

		/* nothing that continues the run is ever parked (README.md) */
		Assert(!parked_lowest(kd->parked, kd->key, kd->snapshot, &lowest) ||
			   lowest > kd->position + 1);
	}
#endif

	if (kd->seq == kd->position + 1)
	{
		kd->plan = PLAN_APPLY;
		parked_ready_add(kd->ready, kd->seq, kd->payload, kd->payload_isnull);
		consumer_continue_run(kd, kd->seq);
		values[POSITIONS_POSITION - 1] = Int64GetDatum(kd->end);
		consumer_set_summary(values, summary);
		return OWNED_WRITE;
	}

	/* early: a duplicate of a parked event, or to park */
	if (seq_parked(kd, kd->seq))
	{
		kd->plan = PLAN_DUPLICATE;
		return OWNED_KEEP;
	}
	if (summary->count >= ordering_max_parked_per_resource)
	{
		kd->plan = PLAN_CAP_REACHED;
		return OWNED_KEEP;
	}
	kd->plan = PLAN_PARK;
	if (summary->count == 0 || kd->seq < summary->lowest)
		summary->lowest = kd->seq;
	if (kd->seq > summary->highest)
		summary->highest = kd->seq;
	summary->count++;
	consumer_set_summary(values, summary);
	return OWNED_WRITE;
}

/*
 * OwnedDecide of skip_gap(): past the events missing before the lowest
 * parked one, then the run that drains, which stops before a dead letter
 * (it is not parked).  On a blocked key whose parked events are all behind
 * the dead letter: past the events missing before the dead letter.
 */
static OwnedVerdict
decide_skip(const OwnedRow *row, Datum *values, bool *nulls, void *arg)
{
	KeyDecision *kd = (KeyDecision *) arg;
	int64		lowest;

	consumer_read_position(row, values, nulls, kd);
	kd->plan = PLAN_NOTHING;
	consumer_know_parked(kd);
	kd->had_parked = kd->summary.count > 0;
	if (!kd->had_parked)
		return OWNED_KEEP;
	lowest = kd->summary.lowest;
	if (kd->blocked_at != 0 && kd->blocked_at < lowest)
	{
		/* the dead letter stays: skip only what is missing before it */
		if (kd->blocked_at - 1 <= kd->position)
			return OWNED_KEEP;
		kd->end = kd->blocked_at - 1;
		kd->skipped = kd->end - kd->position;
		kd->beyond = true;
	}
	else
	{
		kd->skipped = lowest - kd->position - 1;
		consumer_continue_run(kd, lowest - 1);
	}
	kd->plan = PLAN_APPLY;
	values[POSITIONS_POSITION - 1] = Int64GetDatum(kd->end);
	consumer_set_summary(values, &kd->summary);
	return OWNED_WRITE;
}

/*
 * OwnedDecide that blocks a key at kd->seq after its handler failed: the
 * position is just before it (consumer_finish_run).
 */
static OwnedVerdict
decide_block(const OwnedRow *row, Datum *values, bool *nulls, void *arg)
{
	KeyDecision *kd = (KeyDecision *) arg;
	ParkedSummary unknown = {-1, 0, 0};

	consumer_read_position(row, values, nulls, kd);
	set_position(values, nulls, kd->seq - 1, kd->seq);
	/* what stays parked (and what dead_letter_put parks) is counted later */
	consumer_set_summary(values, &unknown);
	return OWNED_WRITE;
}

/*
 * The position row of kd->key was written for applying kd->ready (position
 * kd->end).  Run the handler on the events, if there is one (without, the
 * caller applies the returned rows itself), and settle the rest:
 *	- every event ran: the parked rows of the drained events go, and so does
 *	  the dead letter when retrying (the first event was it);
 *	- event i failed (dead-lettering): the key is blocked at its seq with
 *	  the position just before it, the event becomes the key's dead letter
 *	  (attempts + 1 if it was already), the parked rows of the events before
 *	  it go (and its own, if it was parked), the events after it stay parked
 *	  behind it.
 * Then the key's gap request is settled: the position moved past parked
 * events, or the key is blocked, which is not a gap.  Returns how many
 * events ran.
 */
int
consumer_finish_run(KeyDecision *kd, OwnedRel *positions, HandlerCache *hc,
					bool dead_lettering, bool retrying)
{
	ReadyList  *ready = kd->ready;
	ErrorData  *failure = NULL;
	int			ran = ready->n;
	int			leaving;

	if (hc != NULL)
		ran = handler_run(hc, kd->key, ready, dead_lettering, &failure);

	/* the events that leave ordering.parked: those that ran, and a failed one */
	leaving = failure == NULL ? ready->n : ran + 1;
	for (int i = 0; i < leaving; i++)
		if (ItemPointerIsValid(&ready->events[i].tid))
			owned_delete(kd->parked, &ready->events[i].tid);

	if (failure != NULL)
	{
		KeyDecision block = *kd;
		OwnedRow	row;

		/* a guarded run stops at the event that failed */
		Assert(dead_lettering && ran < ready->n);
		block.seq = ready->events[ran].seq;
		block.ready = NULL;
		owned_advance(positions, kd->key, decide_block, &block, &row);
		if (retrying && ran > 0)
			dead_letter_remove(kd->tables[OWNED_DEAD_LETTERS], kd->key);
		dead_letter_put(kd->tables[OWNED_DEAD_LETTERS], kd->parked, kd->key,
						&ready->events[ran],
						unpack_sql_state(failure->sqlerrcode), failure->message,
						failure->detail);
		kd->end = block.seq - 1;
		parked_settle_gap(kd->tables[OWNED_GAP_REQUESTS], kd->key, kd->end,
						  true);
		return ran;
	}
	if (retrying)
		dead_letter_remove(kd->tables[OWNED_DEAD_LETTERS], kd->key);
	if (kd->had_parked)
		parked_settle_gap(kd->tables[OWNED_GAP_REQUESTS], kd->key, kd->end,
						  !kd->beyond);
	return ran;
}

/*
 * Count an event handed to a consumer function, and offer it to the
 * consumer's hot-resources sketch.
 */
static void
count_consumed(const char *name, text *resource)
{
	ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
	ordering_stats_hot_resource('c', name, text_to_cstring(resource), 1);
}

/*
 * Count what a run that applied events did: "ran" of the "n" events ran;
 * "first_drained" is the index of the first one that came from
 * ordering.parked (or from the dead letters); a run that stopped at a dead
 * letter counts it (stats.h has the identities).
 */
static void
count_run(const char *name, int n, int ran, int first_drained)
{
	bool		failed = ran < n;
	int			left = failed ? ran + 1 : n;	/* events handed out */

	ordering_stats_count(name, ORDERING_EVENT_APPLIED, ran);
	if (left > first_drained)
		ordering_stats_count(name, ORDERING_EVENT_DRAINED, left - first_drained);
	if (failed)
		ordering_stats_count(name, ORDERING_EVENT_DEAD_LETTERED, 1);
}

/*
 * The decision of deliver() and what follows it, in a call whose frame
 * holds ordering.positions and ordering.parked open: applies, parks or
 * ignores the event, runs the handler (hc, or NULL for the table form) and
 * counts, for the consumer named "name" (its text "consumer").  The one
 * implementation of deliver(): the single call and a batch (batch.c) run it
 * for each event.  Returns how many events are ready (or, with a handler,
 * ran); "ready" holds them.
 */
int
consumer_deliver_event(ConsumerCall *call, const char *name,
					   text *consumer, text *resource, int64 seq,
					   Datum payload, bool payload_isnull, ReadyList *ready,
					   HandlerCache *hc, bool dead_lettering)
{
	Datum		key[2] = {PointerGetDatum(consumer), PointerGetDatum(resource)};
	KeyDecision kd = {0};
	int			ran = 0;

	kd.key = key;
	kd.seq = seq;
	kd.payload = payload;
	kd.payload_isnull = payload_isnull;
	kd.parked = &call->parked;
	kd.tables = call->tables;
	kd.ready = ready;
	consumer_decide(decide_deliver, &kd, &call->positions);

	switch (kd.plan)
	{
		case PLAN_STALE:
		case PLAN_DUPLICATE:
			ordering_stats_count(name, kd.plan == PLAN_STALE ?
								 ORDERING_EVENT_STALE : ORDERING_EVENT_DUPLICATE, 1);
			ordering_log_decision(name, resource, kd.position + 1, seq,
								  kd.plan == PLAN_STALE ? ORDERING_DECISION_STALE :
								  ORDERING_DECISION_DUPLICATE, 0);
			break;
		case PLAN_CAP_REACHED:
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many events parked for consumer \"%s\" and resource \"%s\"",
							name, text_to_cstring(resource)),
					 errdetail("Event " INT64_FORMAT " arrived at position " INT64_FORMAT ", and " INT64_FORMAT " events are parked already, the limit set by ordering.max_parked_per_resource.",
							   seq, kd.position, kd.summary.count),
					 errhint("Redeliver the event later, or give up on the missing events with ordering.skip_gap().")));
			break;
		case PLAN_PARK:
			parked_insert(&call->parked, key, seq, payload, payload_isnull);
			ordering_stats_count(name, ORDERING_EVENT_PARKED, 1);
			ordering_stats_reorder_distance(name, seq - kd.position);
			ordering_log_decision(name, resource, kd.position + 1, seq,
								  ORDERING_DECISION_PARKED, 0);
			break;
		case PLAN_APPLY:
			ran = consumer_finish_run(&kd, &call->positions, hc,
									  dead_lettering, false);
			count_run(name, ready->n, ran, 1);
			ordering_log_decision(name, resource, kd.position + 1, seq,
								  ran > 0 || ready->n == 0 ? ORDERING_DECISION_APPLIED :
								  ORDERING_DECISION_DEAD_LETTERED, Max(ran - 1, 0));
			if (ran > 0 && ran < ready->n)
				ordering_log_decision(name, resource, ready->events[ran].seq,
									  ready->events[ran].seq,
									  ORDERING_DECISION_DEAD_LETTERED, 0);
			break;
		default:
			elog(ERROR, "unexpected deliver plan %d", (int) kd.plan);
	}
	count_consumed(name, resource);
	return ran;
}

/*
 * deliver() of the event of a call's frame, its payload argument taken as
 * it is; hc NULL for the table form.
 */
static int
deliver_event(ConsumerCall *call, FunctionCallInfo fcinfo, ReadyList *ready,
			  HandlerCache *hc, bool dead_lettering)
{
	return consumer_deliver_event(call, text_to_cstring(call->consumer),
								  call->consumer, call->resource, call->seq,
								  payload_arg(fcinfo), PG_ARGISNULL(3), ready,
								  hc, dead_lettering);
}

/*
 * The decision of apply_if_newer() on ordering.positions, open, and its
 * counts, for the consumer named "name" (its text "consumer").  The one
 * implementation of apply_if_newer(): the single call and a batch
 * (batch.c) run it for each event.  True when the event is newer: the
 * position is now seq.
 */
bool
consumer_apply_event(OwnedRel *positions, const char *name, text *consumer,
					 text *resource, int64 seq)
{
	Datum		key[2] = {PointerGetDatum(consumer), PointerGetDatum(resource)};
	KeyDecision kd = {0};
	OwnedRow	row;
	bool		applied;

	kd.key = key;
	kd.seq = seq;
	handler_check_reentry(key);
	owned_advance(positions, key, decide_newer, &kd, &row);
	applied = kd.position < kd.seq;

	count_consumed(name, resource);
	if (applied)
		ordering_stats_count(name, ORDERING_EVENT_APPLIED, 1);
	else
		ordering_stats_count(name, kd.position == kd.seq ?
							 ORDERING_EVENT_DUPLICATE : ORDERING_EVENT_STALE, 1);
	ordering_log_decision(name, resource, kd.position + 1, kd.seq,
						  applied ? ORDERING_DECISION_APPLIED :
						  kd.position == kd.seq ? ORDERING_DECISION_DUPLICATE :
						  ORDERING_DECISION_STALE, 0);
	return applied;
}

/*
 * ordering.apply_if_newer(consumer text, resource_id text, seq bigint)
 * returns boolean
 *
 * True when seq is above the position: the position is now seq and the
 * caller owns the event.  One atomic check-and-advance (README.md).
 */
Datum
ordering_apply_if_newer(PG_FUNCTION_ARGS)
{
	ConsumerCall call;
	bool		applied;
	Datum		routed;

	consumer_call_args(&call, fcinfo, CALL_SEQ);
	if (!consumer_call_begin(&call, fcinfo, CONSUMER_OP_APPLY,
							 "ordering.apply_if_newer()", &routed))
		return routed;
	applied = consumer_apply_event(&call.positions,
								   text_to_cstring(call.consumer),
								   call.consumer, call.resource, call.seq);
	consumer_call_end(&call);
	PG_RETURN_BOOL(applied);
}

/*
 * ordering.deliver(consumer text, resource_id text, seq bigint,
 *					payload jsonb) returns table (seq bigint, payload jsonb)
 *
 * Applies, parks or ignores the event; returns the events to apply now, in
 * order: this one and the parked run it continues.
 */
Datum
ordering_deliver(PG_FUNCTION_ARGS)
{
	ConsumerCall call;
	ReadyList	ready = {NULL, 0, 0, CurrentMemoryContext};
	Datum		routed;

	consumer_call_args(&call, fcinfo, CALL_SEQ | CALL_PARKED | CALL_ROWS);
	if (!consumer_call_begin(&call, fcinfo, CONSUMER_OP_DELIVER,
							 "ordering.deliver()", &routed))
		return routed;
	(void) deliver_event(&call, fcinfo, &ready, NULL, false);
	consumer_call_end(&call);
	consumer_return_ready(fcinfo, &ready);
	return (Datum) 0;
}

/*
 * ordering.deliver(consumer text, resource_id text, seq bigint,
 *					payload jsonb, handler regprocedure,
 *					on_error text DEFAULT 'raise') returns integer
 *
 * The same decision as deliver(); calls the handler for each ready event in
 * order and returns how many ran.  With on_error => 'dead_letter' a handler
 * that fails makes its event the dead letter of the resource (handlers.c,
 * dead_letters.c) and the call returns normally.
 */
Datum
ordering_deliver_handler(PG_FUNCTION_ARGS)
{
	ConsumerCall call;
	HandlerCache *hc;
	bool		dead_lettering;
	ReadyList	ready = {NULL, 0, 0, CurrentMemoryContext};
	Datum		routed;
	int			ran;

	consumer_call_args(&call, fcinfo, CALL_SEQ | CALL_PARKED);
	hc = handler_lookup(fcinfo, 4);
	dead_lettering = handler_dead_lettering(fcinfo, 5);
	if (!consumer_call_begin(&call, fcinfo, CONSUMER_OP_DELIVER_HANDLER,
							 "ordering.deliver()", &routed))
		return routed;
	ran = deliver_event(&call, fcinfo, &ready, hc, dead_lettering);
	consumer_call_end(&call);
	PG_RETURN_INT32(ran);
}

/*
 * ordering.position(consumer text, resource_id text) returns bigint: a read
 * with the snapshot a SQL read of ordering.positions would use, extended to
 * this transaction's own changes (owned_rows.c).
 */
Datum
ordering_position(PG_FUNCTION_ARGS)
{
	ConsumerCall call;
	SnapshotData buf;
	OwnedRow	row;
	int64		position = 0;
	Datum		routed;

	consumer_call_args(&call, fcinfo, CALL_READ);
	if (!consumer_call_begin(&call, fcinfo, CONSUMER_OP_POSITION, NULL,
							 &routed))
		return routed;
	if (owned_fetch(&call.positions, call.key, owned_read_snapshot(&buf), &row))
		position = DatumGetInt64(row.values[POSITIONS_POSITION - 1]);
	consumer_call_end(&call);
	PG_RETURN_INT64(position);
}

/*
 * The body of skip_gap() and discard_dead_letter(), which give up on events
 * of one (consumer, resource): decide() moves the position past them
 * (kd.skipped events, PLAN_APPLY when it moved) and reads the run that then
 * drains, which is returned (and its rows removed).  Giving up a dead
 * letter also removes it ("dead_letter").
 */
Datum
consumer_give_up(FunctionCallInfo fcinfo, const char *caller,
				 OwnedDecide decide, bool dead_letter)
{
	ConsumerCall call;
	KeyDecision kd = {0};
	ReadyList	ready = {NULL, 0, 0, CurrentMemoryContext};
	Datum		routed;

	consumer_call_args(&call, fcinfo, CALL_PARKED | CALL_ROWS);
	if (!consumer_call_begin(&call, fcinfo,
							 dead_letter ? CONSUMER_OP_DISCARD : CONSUMER_OP_SKIP_GAP,
							 caller, &routed))
		return routed;
	kd.ready = &ready;
	consumer_call_decide(&call, decide, &kd);
	if (kd.plan == PLAN_APPLY)
	{
		char	   *name = text_to_cstring(call.consumer);

		if (dead_letter)
			dead_letter_remove(call.tables[OWNED_DEAD_LETTERS], call.key);
		(void) consumer_finish_run(&kd, &call.positions, NULL, false, false);
		ordering_stats_count(name, ORDERING_EVENT_SKIPPED, kd.skipped);
		count_run(name, ready.n, ready.n, 0);
		ordering_log_decision(name, call.resource, kd.position + 1,
							  kd.position + kd.skipped + 1,
							  ORDERING_DECISION_SKIPPED, 0);
	}
	consumer_call_end(&call);
	consumer_return_ready(fcinfo, &ready);
	return (Datum) 0;
}

/*
 * ordering.skip_gap(consumer text, resource_id text)
 * returns table (seq bigint, payload jsonb)
 *
 * Gives up on the events missing before the lowest parked one: the position
 * moves to just before it, and the run that then drains is returned (and
 * its rows removed).  On a blocked key only events missing below the dead
 * letter are given up, and the dead letter stays.  Nothing parked: nothing
 * changes.
 */
Datum
ordering_skip_gap(PG_FUNCTION_ARGS)
{
	return consumer_give_up(fcinfo, "ordering.skip_gap()", decide_skip, false);
}
