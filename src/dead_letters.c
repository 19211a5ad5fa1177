/*-------------------------------------------------------------------------
 *
 * dead_letters.c
 *	  Dead letters: a poison event blocks only its own (consumer,
 *	  resource).  dead_letter(), retry_dead_letter(), discard_dead_letter(),
 *	  and the storage of ordering.dead_letter_events.
 *
 * An event whose handling fails for a reason retrying will not fix is set
 * aside with everything after it for the same (consumer, resource), as a
 * sequenced dead-letter queue does: the event goes to
 * ordering.dead_letter_events with its error, and the key's position row
 * says blocked_at = its seq.  While a key is blocked at b (consumer.c): a
 * redelivery of b is a duplicate; later events park behind it as early
 * events do; events below b still apply and drain up to b.  A blocked key
 * is not a gap: the sweeper asks for no republish (ordering.open_gaps leaves
 * it out), and its gap request is removed.
 *
 * A key has at most one dead letter.  When a new block forms below an
 * existing one (dead_letter() may name a seq above position + 1, and an
 * event between may then fail too), the higher dead event is parked again,
 * to be retried in order when the run reaches it.
 *
 * Locking: like every change of a key, these write the key's position row
 * first (consumer.c), and only then its dead letter and parked rows, which
 * are therefore read with SnapshotSelf: nobody else can change them.
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
#include "consumer_citus.h"
#include "decision_log.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(ordering_dead_letter);
PG_FUNCTION_INFO_V1(ordering_retry_dead_letter);
PG_FUNCTION_INFO_V1(ordering_retry_dead_letter_handler);
PG_FUNCTION_INFO_V1(ordering_discard_dead_letter);

/*
 * The dead letter of a key, as the snapshot sees it; false if there is
 * none.  The payload is copied into the current memory context.
 */
static bool
dead_letter_fetch(const Datum *key, Snapshot snapshot, DeadLetter *dead,
				  OwnedRow *row)
{
	OwnedRel	rel;
	bool		found;

	owned_open(OWNED_DEAD_LETTERS, RowExclusiveLock, &rel);
	found = owned_fetch(&rel, key, snapshot, row);
	if (found)
	{
		dead->seq = DatumGetInt64(row->values[DEAD_SEQ - 1]);
		dead->isnull = row->nulls[DEAD_PAYLOAD - 1];
		dead->payload = dead->isnull ? (Datum) 0 :
			PointerGetDatum(PG_DETOAST_DATUM_COPY(row->values[DEAD_PAYLOAD - 1]));
	}
	owned_close(&rel);
	return found;
}

/*
 * A cstring as a text datum, or a null one.
 */
static void
text_or_null(const char *s, Datum *value, bool *isnull)
{
	*isnull = s == NULL;
	*value = s == NULL ? (Datum) 0 : CStringGetTextDatum(s);
}

/*
 * Make an event the dead letter of its key, with its error (sqlstate NULL
 * for a reason given by dead_letter()).  The caller has blocked the key at
 * its seq.  The same event dead again counts an attempt; a dead letter of a
 * higher seq is parked again (file header).
 */
void
dead_letter_put(OwnedRel *parked, const Datum *key, const ReadyEvent *event,
				const char *sqlstate, const char *message, const char *detail)
{
	OwnedRel	rel;
	OwnedRow	row;
	Datum		values[OWNED_MAX_NATTS];
	bool		nulls[OWNED_MAX_NATTS] = {false};

	owned_open(OWNED_DEAD_LETTERS, RowExclusiveLock, &rel);
	if (owned_fetch(&rel, key, SnapshotSelf, &row))
	{
		int64		seq = DatumGetInt64(row.values[DEAD_SEQ - 1]);

		if (seq == event->seq)
		{
			memcpy(values, row.values, sizeof(values));
			memcpy(nulls, row.nulls, sizeof(nulls));
			text_or_null(sqlstate, &values[DEAD_SQLSTATE - 1], &nulls[DEAD_SQLSTATE - 1]);
			text_or_null(message, &values[DEAD_MESSAGE - 1], &nulls[DEAD_MESSAGE - 1]);
			text_or_null(detail, &values[DEAD_DETAIL - 1], &nulls[DEAD_DETAIL - 1]);
			values[DEAD_FAILED_AT - 1] =
				TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
			values[DEAD_ATTEMPTS - 1] =
				Int32GetDatum(DatumGetInt32(row.values[DEAD_ATTEMPTS - 1]) + 1);
			owned_update(&rel, &row, values, nulls);
			owned_close(&rel);
			return;
		}
		if (seq < event->seq)
			elog(ERROR, "a dead letter below the new one of the same key");
		parked_insert(parked, key, seq, row.values[DEAD_PAYLOAD - 1],
					  row.nulls[DEAD_PAYLOAD - 1]);
		owned_delete(&rel, &row.tid);
	}
	values[DEAD_CONSUMER - 1] = key[0];
	values[DEAD_RESOURCE - 1] = key[1];
	values[DEAD_SEQ - 1] = Int64GetDatum(event->seq);
	values[DEAD_PAYLOAD - 1] = event->payload;
	nulls[DEAD_PAYLOAD - 1] = event->isnull;
	text_or_null(sqlstate, &values[DEAD_SQLSTATE - 1], &nulls[DEAD_SQLSTATE - 1]);
	text_or_null(message, &values[DEAD_MESSAGE - 1], &nulls[DEAD_MESSAGE - 1]);
	text_or_null(detail, &values[DEAD_DETAIL - 1], &nulls[DEAD_DETAIL - 1]);
	values[DEAD_FAILED_AT - 1] =
		TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	values[DEAD_ATTEMPTS - 1] = Int32GetDatum(1);
	owned_insert(&rel, values, nulls);
	owned_close(&rel);
}

/*
 * Remove the dead letter of a key (the block was lifted).
 */
void
dead_letter_remove(const Datum *key)
{
	OwnedRel	rel;
	OwnedRow	row;

	owned_open(OWNED_DEAD_LETTERS, RowExclusiveLock, &rel);
	if (owned_fetch(&rel, key, SnapshotSelf, &row))
		owned_delete(&rel, &row.tid);
	owned_close(&rel);
}

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
	text	   *consumer;
	text	   *resource;
	Datum		key[2];
	OwnedRel	positions;
	OwnedRel	parked;
	KeyDecision kd = {0};
	ReadyEvent	event;
	char	   *name;
	Datum		routed;

	consumer_key_args(fcinfo, &consumer, &resource, &kd.seq);
	owned_prevent_write("ordering.dead_letter()");
	if (consumer_routed(fcinfo, DIST_DEAD_LETTER, &routed))
		PG_RETURN_VOID();
	key[0] = PointerGetDatum(consumer);
	key[1] = PointerGetDatum(resource);
	kd.key = key;
	name = text_to_cstring(consumer);
	owned_open(OWNED_POSITIONS, RowExclusiveLock, &positions);
	consumer_route_confirm(consumer);
	owned_open(OWNED_PARKED, RowExclusiveLock, &parked);
	consumer_decide(decide_dead_letter, &kd, &positions);
	if (kd.plan == PLAN_BAD_SEQ)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("event " INT64_FORMAT " of consumer \"%s\" and resource \"%s\" was applied already",
						kd.seq, name, text_to_cstring(resource)),
				 errdetail("The position is " INT64_FORMAT ".", kd.position)));
	if (kd.plan == PLAN_BLOCKED_BELOW)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("consumer \"%s\" and resource \"%s\" are blocked already by the dead letter of event " INT64_FORMAT,
						name, text_to_cstring(resource), kd.blocked_at),
				 errdetail("Event " INT64_FORMAT " waits behind it.", kd.seq),
				 errhint("Retry or discard that dead letter first.")));

	event.seq = kd.seq;
	event.isnull = PG_ARGISNULL(3);
	event.payload = event.isnull ? (Datum) 0 : PG_GETARG_DATUM(3);
	if (parked_exists(&parked, key, kd.seq, SnapshotSelf))
	{
		OwnedScan	scan;

		owned_scan_begin(&parked, &scan, key, 2, BTEqualStrategyNumber,
						 Int64GetDatum(kd.seq), SnapshotSelf);
		if (owned_scan_next(&scan, ForwardScanDirection))
			owned_delete(&parked, &scan.slot->tts_tid);
		owned_scan_end(&scan);
	}
	dead_letter_put(&parked, key, &event, NULL,
					PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4)),
					NULL);
	/* a blocked key is not a gap */
	parked_settle_gap(key, kd.position, true);
	ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
	ordering_stats_count(name, ORDERING_EVENT_DEAD_LETTERED, 1);
	ordering_stats_hot_resource('c', name, text_to_cstring(resource), 1);
	ordering_log_decision(name, resource, kd.position + 1, kd.seq,
						  ORDERING_DECISION_DEAD_LETTERED, 0);
	owned_close(&parked);
	owned_close(&positions);
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
		!dead_letter_fetch(kd->key, kd->snapshot, &dead, &deadrow))
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
 * The routing of retry_dead_letter() (consumer_citus.c), after the checks
 * retry() makes first.
 */
static bool
dead_letter_routed(FunctionCallInfo fcinfo, char op, Datum *result)
{
	text	   *consumer;
	text	   *resource;

	consumer_key_args(fcinfo, &consumer, &resource, NULL);
	owned_prevent_write("ordering.retry_dead_letter()");
	return consumer_routed(fcinfo, op, result);
}

/*
 * retry_dead_letter() in both forms: hc NULL for the table form.  Returns
 * how many events ran (or are ready).
 */
static int
retry(FunctionCallInfo fcinfo, HandlerCache *hc, ReadyList *ready)
{
	text	   *consumer;
	text	   *resource;
	Datum		key[2];
	OwnedRel	positions;
	OwnedRel	parked;
	KeyDecision kd = {0};
	char	   *name;
	int			ran = 0;

	consumer_key_args(fcinfo, &consumer, &resource, NULL);
	owned_prevent_write("ordering.retry_dead_letter()");
	key[0] = PointerGetDatum(consumer);
	key[1] = PointerGetDatum(resource);
	kd.key = key;
	kd.parked = &parked;
	kd.ready = ready;
	name = text_to_cstring(consumer);
	owned_open(OWNED_POSITIONS, RowExclusiveLock, &positions);
	consumer_route_confirm(consumer);
	owned_open(OWNED_PARKED, RowExclusiveLock, &parked);
	consumer_decide(decide_retry, &kd, &positions);
	if (kd.plan == PLAN_PARK)
	{
		/* its predecessors have not all arrived: it waits like an early one */
		parked_insert(&parked, key, kd.seq, kd.payload, kd.payload_isnull);
		dead_letter_remove(key);
	}
	else if (kd.plan == PLAN_APPLY)
	{
		ran = consumer_finish_run(&kd, &positions, hc, hc != NULL, true);
		/* the dead event failing again counts nothing: it stays dead */
		if (ran > 0 || ran == ready->n)
		{
			bool		failed = ran < ready->n;

			ordering_stats_count(name, ORDERING_EVENT_APPLIED, ran);
			ordering_stats_count(name, ORDERING_EVENT_DRAINED, failed ? ran + 1 : ran);
			if (failed)
			{
				ordering_stats_count(name, ORDERING_EVENT_DEAD_LETTERED, 1);
				ordering_log_decision(name, resource, ready->events[ran].seq,
									  ready->events[ran].seq,
									  ORDERING_DECISION_DEAD_LETTERED, 0);
			}
		}
	}
	owned_close(&parked);
	owned_close(&positions);
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
	ReadyList	ready = {NULL, 0, 0, CurrentMemoryContext};
	Datum		routed;

	if (dead_letter_routed(fcinfo, DIST_RETRY, &routed))
		return routed;
	consumer_materialize(fcinfo);
	(void) retry(fcinfo, NULL, &ready);
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
	Datum		routed;

	if (dead_letter_routed(fcinfo, DIST_RETRY_HANDLER, &routed))
		return routed;
	PG_RETURN_INT32(retry(fcinfo, hc, &ready));
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
