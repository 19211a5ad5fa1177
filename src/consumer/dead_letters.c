/*-------------------------------------------------------------------------
 *
 * dead_letters.c
 *	  The consumer functions of dead letters: dead_letter(),
 *	  retry_dead_letter(), discard_dead_letter() (README.md, "Dead
 *	  letters").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "access/xact.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "consumer.h"
#include "dead_letter_store.h"
#include "decision_log.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(ordering_dead_letter);
PG_FUNCTION_INFO_V1(ordering_retry_dead_letter);
PG_FUNCTION_INFO_V1(ordering_retry_dead_letter_handler);
PG_FUNCTION_INFO_V1(ordering_discard_dead_letter);

/*
 * OwnedDecide of dead_letter(): the key is blocked at kd->seq, unless that
 * is at or below the position, or behind the block there is already.
 */
static OwnedVerdict
decide_dead_letter(const OwnedRow *row, Datum *values, bool *nulls, void *arg)
{
	KeyDecision *kd = (KeyDecision *) arg;

	consumer_read_position(row, values, nulls, kd);
	if (kd->seq <= kd->position)
		kd->plan = PLAN_BAD_SEQ;
	else if (kd->blocked_at != 0 && kd->seq > kd->blocked_at)
		kd->plan = PLAN_BLOCKED_BELOW;
	else
	{
		ParkedSummary unknown = {-1, 0, 0};

		kd->plan = PLAN_BLOCK;
		values[POSITIONS_BLOCKED_AT - 1] = Int64GetDatum(kd->seq);
		nulls[POSITIONS_BLOCKED_AT - 1] = false;
		/* the call may take seq out of the parked events and park another */
		consumer_set_summary(values, &unknown);
		return OWNED_WRITE;
	}
	return OWNED_KEEP;
}

/*
 * ordering.dead_letter(consumer text, resource_id text, seq bigint,
 *						payload jsonb, reason text) returns void
 *
 * For table-form consumers that gave up on an event: records it as the
 * dead letter of its key, with the reason as its message.
 */
Datum
ordering_dead_letter(PG_FUNCTION_ARGS)
{
	ConsumerCall call;
	KeyDecision kd = {0};
	ReadyEvent	event;
	char	   *name;
	Datum		routed;

	consumer_call_args(&call, fcinfo, CALL_SEQ | CALL_PARKED);
	/* a dead letter says why the consumer gave up: an operator reads it */
	if (PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("reason must not be null")));
	if (!consumer_call_begin(&call, fcinfo, CONSUMER_OP_DEAD_LETTER,
							 "ordering.dead_letter()", &routed))
		PG_RETURN_VOID();
	kd.seq = call.seq;
	name = text_to_cstring(call.consumer);
	consumer_call_decide(&call, decide_dead_letter, &kd);
	if (kd.plan == PLAN_BAD_SEQ)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("event " INT64_FORMAT " of consumer \"%s\" and resource \"%s\" was applied already",
						kd.seq, name, text_to_cstring(call.resource)),
				 errdetail("The position is " INT64_FORMAT ".", kd.position)));
	if (kd.plan == PLAN_BLOCKED_BELOW)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("consumer \"%s\" and resource \"%s\" are blocked already by the dead letter of event " INT64_FORMAT,
						name, text_to_cstring(call.resource), kd.blocked_at),
				 errdetail("Event " INT64_FORMAT " waits behind it.", kd.seq),
				 errhint("Retry or discard that dead letter first.")));

	event.seq = kd.seq;
	event.isnull = PG_ARGISNULL(3);
	event.payload = event.isnull ? (Datum) 0 : PG_GETARG_DATUM(3);
	if (parked_exists(&call.parked, call.key, kd.seq, SnapshotSelf))
	{
		OwnedScan	scan;

		owned_scan_begin(&call.parked, &scan, call.key, 2,
						 BTEqualStrategyNumber, Int64GetDatum(kd.seq),
						 SnapshotSelf);
		if (owned_scan_next(&scan, ForwardScanDirection))
			owned_delete(&call.parked, &scan.slot->tts_tid);
		owned_scan_end(&scan);
	}
	dead_letter_put(call.tables[OWNED_DEAD_LETTERS], &call.parked, call.key,
					&event, NULL,
					text_to_cstring(PG_GETARG_TEXT_PP(4)),
					NULL);
	/* a blocked key is not a gap */
	parked_settle_gap(call.tables[OWNED_GAP_REQUESTS], call.key, kd.position,
					  true);
	ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
	ordering_stats_count(name, ORDERING_EVENT_DEAD_LETTERED, 1);
	ordering_stats_hot_resource('c', name, text_to_cstring(call.resource), 1);
	ordering_log_decision(name, call.resource, kd.position + 1, kd.seq,
						  ORDERING_DECISION_DEAD_LETTERED, 0);
	consumer_call_end(&call);
	PG_RETURN_VOID();
}

/*
 * OwnedDecide of retry_dead_letter(): lift the block; the dead event applies
 * now, with the run behind it, if it is next, else it parks.
 */
static OwnedVerdict
decide_retry(const OwnedRow *row, Datum *values, bool *nulls, void *arg)
{
	KeyDecision *kd = (KeyDecision *) arg;
	DeadLetter	dead;
	OwnedRow	deadrow;

	consumer_read_position(row, values, nulls, kd);
	kd->plan = PLAN_NOTHING;
	if (kd->blocked_at == 0 ||
		!dead_letter_fetch(kd->tables[OWNED_DEAD_LETTERS], kd->key,
						   kd->snapshot, &dead, &deadrow))
		return OWNED_KEEP;
	kd->seq = dead.seq;
	kd->payload = dead.payload;
	kd->payload_isnull = dead.isnull;
	values[POSITIONS_BLOCKED_AT - 1] = (Datum) 0;
	nulls[POSITIONS_BLOCKED_AT - 1] = true;
	consumer_know_parked(kd);
	if (dead.seq != kd->position + 1)
	{
		ParkedSummary *summary = &kd->summary;

		kd->plan = PLAN_PARK;
		if (summary->count == 0 || dead.seq < summary->lowest)
			summary->lowest = dead.seq;
		if (dead.seq > summary->highest)
			summary->highest = dead.seq;
		summary->count++;
		consumer_set_summary(values, summary);
		return OWNED_WRITE;
	}
	kd->plan = PLAN_APPLY;
	parked_ready_add(kd->ready, dead.seq, dead.payload, dead.isnull);
	consumer_continue_run(kd, dead.seq);
	values[POSITIONS_POSITION - 1] = Int64GetDatum(kd->end);
	consumer_set_summary(values, &kd->summary);
	return OWNED_WRITE;
}

/*
 * retry_dead_letter() in both forms, in a call that runs here: hc NULL for
 * the table form.  Returns how many events ran (or are ready).
 */
static int
retry(ConsumerCall *call, HandlerCache *hc, ReadyList *ready)
{
	KeyDecision kd = {0};
	char	   *name = text_to_cstring(call->consumer);
	int			ran = 0;

	kd.ready = ready;
	consumer_call_decide(call, decide_retry, &kd);
	if (kd.plan == PLAN_PARK)
	{
		/* its predecessors have not all arrived: it waits like an early one */
		parked_insert(&call->parked, call->key, kd.seq, kd.payload,
					  kd.payload_isnull);
		dead_letter_remove(call->tables[OWNED_DEAD_LETTERS], call->key);
	}
	else if (kd.plan == PLAN_APPLY)
	{
		ran = consumer_finish_run(&kd, &call->positions, hc, hc != NULL, true);
		/* the dead event failing again counts nothing: it stays dead */
		if (ran > 0 || ran == ready->n)
		{
			bool		failed = ran < ready->n;

			ordering_stats_count(name, ORDERING_EVENT_APPLIED, ran);
			ordering_stats_count(name, ORDERING_EVENT_DRAINED, failed ? ran + 1 : ran);
			if (failed)
			{
				ordering_stats_count(name, ORDERING_EVENT_DEAD_LETTERED, 1);
				ordering_log_decision(name, call->resource,
									  ready->events[ran].seq,
									  ready->events[ran].seq,
									  ORDERING_DECISION_DEAD_LETTERED, 0);
			}
		}
	}
	return ran;
}

/*
 * ordering.retry_dead_letter(consumer text, resource_id text)
 * returns table (seq bigint, payload jsonb)
 *
 * Lifts the block and returns the dead event followed by every event that
 * then drains, to apply in the same transaction; a rollback restores the
 * block.
 */
Datum
ordering_retry_dead_letter(PG_FUNCTION_ARGS)
{
	ConsumerCall call;
	ReadyList	ready = {NULL, 0, 0, CurrentMemoryContext};
	Datum		routed;

	consumer_call_args(&call, fcinfo, CALL_PARKED | CALL_ROWS);
	if (!consumer_call_begin(&call, fcinfo, CONSUMER_OP_RETRY,
							 "ordering.retry_dead_letter()", &routed))
		return routed;
	(void) retry(&call, NULL, &ready);
	consumer_call_end(&call);
	consumer_return_ready(fcinfo, &ready);
	return (Datum) 0;
}

/*
 * ordering.retry_dead_letter(consumer text, resource_id text,
 *							  handler regprocedure) returns integer
 *
 * The same through a handler, with dead-lettering: if the dead event fails
 * again it stays dead (attempts + 1) and the call returns 0; if one behind
 * it fails, that one becomes the dead letter.
 */
Datum
ordering_retry_dead_letter_handler(PG_FUNCTION_ARGS)
{
	ReadyList	ready = {NULL, 0, 0, CurrentMemoryContext};
	HandlerCache *hc = handler_lookup(fcinfo, 2);
	ConsumerCall call;
	Datum		routed;
	int			ran;

	consumer_call_args(&call, fcinfo, CALL_PARKED);
	if (!consumer_call_begin(&call, fcinfo, CONSUMER_OP_RETRY_HANDLER,
							 "ordering.retry_dead_letter()", &routed))
		return routed;
	ran = retry(&call, hc, &ready);
	consumer_call_end(&call);
	PG_RETURN_INT32(ran);
}

/*
 * OwnedDecide of discard_dead_letter(): the position moves past the dead
 * event (and past whatever was missing before it), then the run behind it
 * drains.
 */
static OwnedVerdict
decide_discard(const OwnedRow *row, Datum *values, bool *nulls, void *arg)
{
	KeyDecision *kd = (KeyDecision *) arg;

	consumer_read_position(row, values, nulls, kd);
	kd->plan = PLAN_NOTHING;
	if (kd->blocked_at == 0)
		return OWNED_KEEP;
	kd->plan = PLAN_APPLY;
	kd->skipped = kd->blocked_at - kd->position;
	consumer_know_parked(kd);
	consumer_continue_run(kd, kd->blocked_at);
	values[POSITIONS_POSITION - 1] = Int64GetDatum(kd->end);
	consumer_set_summary(values, &kd->summary);
	values[POSITIONS_BLOCKED_AT - 1] = (Datum) 0;
	nulls[POSITIONS_BLOCKED_AT - 1] = true;
	return OWNED_WRITE;
}

/*
 * ordering.discard_dead_letter(consumer text, resource_id text)
 * returns table (seq bigint, payload jsonb)
 *
 * Gives up on the dead event: the position moves past it, and what then
 * drains is returned.
 */
Datum
ordering_discard_dead_letter(PG_FUNCTION_ARGS)
{
	return consumer_give_up(fcinfo, "ordering.discard_dead_letter()",
							decide_discard, true);
}
