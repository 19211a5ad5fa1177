/*-------------------------------------------------------------------------
 *
 * call.c
 *	  The frame of a call of a consumer function: its arguments checked,
 *	  where it runs decided once, its tables opened, its decision made, its
 *	  tables closed (README.md, "A call").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "consumer.h"

/*
 * Check a consumer name: not empty, not too long (SQLSTATE 22023).
 */
void
consumer_check_consumer(text *consumer)
{
	if (VARSIZE_ANY_EXHDR(consumer) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("consumer must not be empty")));
	owned_check_key_length(consumer, "consumer");
}

/*
 * Check a sequence number handed in: at least 1 (SQLSTATE 22023).
 */
void
consumer_check_seq(int64 seq)
{
	if (seq < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sequence number must be positive, got " INT64_FORMAT,
						seq)));
}

/*
 * A frame that runs here, on the extension's own tables, until routed.
 */
static void
call_init(ConsumerCall *call, int flags)
{
	call->flags = flags;
	for (int i = 0; i < OWNED_NUM_TABLES; i++)
		call->tables[i] = InvalidOid;
	call->ords = NULL;
}

/*
 * Start a call's frame with the (consumer, resource_id [, seq]) arguments
 * common to the consumer functions, checked: NULL is SQLSTATE 22004, a bad
 * value 22023.  flags say what the call does (consumer.h).
 */
void
consumer_call_args(ConsumerCall *call, FunctionCallInfo fcinfo, int flags)
{
	call_init(call, flags);
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("consumer must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("resource_id must not be null")));
	if ((flags & CALL_SEQ) && PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("seq must not be null")));
	call->consumer = PG_GETARG_TEXT_PP(0);
	call->resource = PG_GETARG_TEXT_PP(1);
	consumer_check_consumer(call->consumer);
	owned_check_key_length(call->resource, "resource_id");
	call->seq = 0;
	if (flags & CALL_SEQ)
	{
		call->seq = PG_GETARG_INT64(2);
		consumer_check_seq(call->seq);
	}
	call->key[0] = PointerGetDatum(call->consumer);
	call->key[1] = PointerGetDatum(call->resource);
}

/*
 * Open the tables of a call that runs here: ordering.positions first, whose
 * lock lets in what committed before, so that the routing can confirm its
 * decision; then ordering.parked if the call needs it.  A call that returns
 * rows sets up its tuplestore first.
 */
static void
call_open(ConsumerCall *call, FunctionCallInfo fcinfo)
{
	if (call->flags & CALL_ROWS)
		consumer_materialize(fcinfo);
	owned_open_as(OWNED_POSITIONS, call->tables[OWNED_POSITIONS],
				  (call->flags & CALL_READ) ? AccessShareLock : RowExclusiveLock,
				  &call->positions);
	citus_route_confirm(call);
	if (call->flags & CALL_PARKED)
		owned_open_as(OWNED_PARKED, call->tables[OWNED_PARKED],
					  RowExclusiveLock, &call->parked);
}

/*
 * Begin the call of consumer function "op" whose frame consumer_call_args()
 * started: refuse it in a read-only transaction (unless it only reads:
 * "what" NULL, else what names it), decide where it runs, and open its
 * tables.  False when it ran on another node (its consumer is distributed),
 * with a scalar result in *result and rows in the function's tuplestore;
 * the frame then holds nothing.
 */
bool
consumer_call_begin(ConsumerCall *call, FunctionCallInfo fcinfo, char op,
					const char *what, Datum *result)
{
	if (what != NULL)
		owned_prevent_write(what);
	if (citus_route_call(fcinfo, op, call, result))
		return false;
	call_open(call, fcinfo);
	return true;
}

/*
 * consumer_call_begin() for a batch of consumer's n events (batch.c), with
 * flags for the whole frame: a batch has no resource of its own.
 */
bool
consumer_call_begin_batch(ConsumerCall *call, FunctionCallInfo fcinfo,
						  char op, const char *what, text *consumer,
						  const BatchEvent *events, int n, int flags,
						  Datum *result)
{
	call_init(call, flags);
	call->consumer = consumer;
	call->resource = NULL;
	call->seq = 0;
	owned_prevent_write(what);
	if (citus_route_batch(fcinfo, op, events, n, call, result))
		return false;
	call_open(call, fcinfo);
	return true;
}

/*
 * Decide for one key of ordering.positions with decide(), which sees the
 * key's parked events through kd->parked with the decision snapshot, and
 * write what it decided.
 */
void
consumer_decide(OwnedDecide decide, KeyDecision *kd, OwnedRel *positions)
{
	SnapshotData buf;
	OwnedRow	row;

	handler_check_reentry(kd->key);
	kd->positions = positions;
	kd->snapshot = owned_decision_snapshot(&buf);
	owned_advance(positions, kd->key, decide, kd, &row);
}

/*
 * Decide, in the call, for the key of its frame with decide(), which sees
 * the key's parked events through kd->parked (decisions.c).
 */
void
consumer_call_decide(ConsumerCall *call, OwnedDecide decide, KeyDecision *kd)
{
	kd->key = call->key;
	kd->tables = call->tables;
	if (call->flags & CALL_PARKED)
		kd->parked = &call->parked;
	consumer_decide(decide, kd, &call->positions);
}

/*
 * End a call that ran here: close its tables (the locks stay to the end of
 * the transaction).
 */
void
consumer_call_end(ConsumerCall *call)
{
	if (call->flags & CALL_PARKED)
		owned_close(&call->parked);
	owned_close(&call->positions);
}
