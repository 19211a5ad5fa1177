/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  deliver_batch() and apply_batch(): each event decided by the code of
 *	  the single calls, the tables opened once (README.md, "Batches").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "consumer.h"
#include "text_equal.h"

PG_FUNCTION_INFO_V1(ordering_deliver_batch);
PG_FUNCTION_INFO_V1(ordering_deliver_batch_handler);
PG_FUNCTION_INFO_V1(ordering_apply_batch);

/* A batch as handed in, checked */
typedef struct Batch
{
	text	   *consumer;
	char	   *name;			/* the consumer, as a C string */
	int			n;
	BatchEvent *events;			/* in input order */
	int		   *order;			/* indexes into events, in deciding order */
	int			current;		/* the event at hand, for the error context */
	const int32 *ords;			/* a part of a larger batch (its call's
								 * ConsumerCall.ords), else NULL */
} Batch;

/*
 * The ord of event i (0-based) of a batch: its position in the arrays, or
 * in the whole batch that it is a part of.
 */
static inline int32
batch_ord(const Batch *batch, int i)
{
	return batch->ords != NULL ? batch->ords[i] : i + 1;
}

/* A row of deliver_batch()'s result */
typedef struct BatchRow
{
	int64		seq;
	Datum		payload;
	bool		isnull;
} BatchRow;

/* The rows of deliver_batch(), collected in deciding order */
typedef struct BatchOutput
{
	int		   *first;			/* per event: its first row in rows */
	int		   *count;			/* per event: how many rows */
	BatchRow   *rows;
	int			n;
	int			size;
} BatchOutput;

/*
 * Error context of a batch: the event at hand, by its ord.
 */
static void
batch_error_context(void *arg)
{
	Batch	   *batch = (Batch *) arg;

	if (batch->current >= 0)
		errcontext("event %d of the batch", batch_ord(batch, batch->current));
}

/*
 * A memory context for what deciding one event leaves behind, reset after
 * each (the rows a call returns live in its parent).  The default sizes,
 * spelled as Size.
 */
static MemoryContext
batch_event_context(MemoryContext parent)
{
	return AllocSetContextCreate(parent, "ordering batch event",
								 ALLOCSET_DEFAULT_MINSIZE,
								 (Size) ALLOCSET_DEFAULT_INITSIZE,
								 (Size) ALLOCSET_DEFAULT_MAXSIZE);
}

/*
 * Push the error context of a batch.
 */
static void
batch_push_context(Batch *batch, ErrorContextCallback *callback)
{
	batch->current = -1;
	callback->callback = batch_error_context;
	callback->arg = batch;
	callback->previous = error_context_stack;
	error_context_stack = callback;
}

/*
 * The elements of the array in argument argno (named "name"), of a type of
 * the given length, by-value-ness and alignment; returns how many.  A NULL
 * array is SQLSTATE 22004, one of more than one dimension 22023.
 */
static int
batch_array(FunctionCallInfo fcinfo, int argno, const char *name,
			Oid elemtype, int16 typlen, bool typbyval, char typalign,
			Datum **values, bool **nulls)
{
	ArrayType  *array;
	int			n;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
	array = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a one-dimensional array", name)));
	Assert(ARR_ELEMTYPE(array) == elemtype);
	deconstruct_array(array, elemtype, typlen, typbyval, typalign, values,
					  nulls, &n);
	return n;
}

/*
 * qsort_arg comparator of the deciding order (README.md): resource ids
 * byte-wise, then input order.
 */
static int
batch_order_cmp(const void *a, const void *b, void *arg)
{
	const BatchEvent *events = (const BatchEvent *) arg;
	int			ia = *(const int *) a;
	int			ib = *(const int *) b;
	int			c = ordering_text_cmp(events[ia].resource, events[ib].resource);

	if (c != 0)
		return c;
	return ia < ib ? -1 : (ia > ib ? 1 : 0);
}

/*
 * Read and check the arguments (consumer text, resource_ids text[], seqs
 * bigint[] [, payloads jsonb[]]) of a batch call, every event of them, and
 * put the events in deciding order (README.md).
 */
static void
batch_read(FunctionCallInfo fcinfo, bool with_payloads, Batch *batch)
{
	Datum	   *ids;
	Datum	   *seqs;
	Datum	   *payloads = NULL;
	bool	   *idnulls;
	bool	   *seqnulls;
	bool	   *payloadnulls = NULL;
	int			nseqs;
	int			npayloads = 0;
	ErrorContextCallback callback;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("consumer must not be null")));
	batch->consumer = PG_GETARG_TEXT_PP(0);
	batch->ords = NULL;
	batch->n = batch_array(fcinfo, 1, "resource_ids", TEXTOID, -1, false,
						   TYPALIGN_INT, &ids, &idnulls);
	nseqs = batch_array(fcinfo, 2, "seqs", INT8OID, sizeof(int64),
						FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &seqs, &seqnulls);
	if (with_payloads)
		npayloads = batch_array(fcinfo, 3, "payloads", JSONBOID, -1, false,
								TYPALIGN_INT, &payloads, &payloadnulls);
	consumer_check_consumer(batch->consumer);
	if (with_payloads && (nseqs != batch->n || npayloads != batch->n))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("resource_ids, seqs and payloads must have the same length"),
				 errdetail("resource_ids has %d elements, seqs %d, payloads %d.",
						   batch->n, nseqs, npayloads)));
	if (!with_payloads && nseqs != batch->n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("resource_ids and seqs must have the same length"),
				 errdetail("resource_ids has %d elements, seqs %d.",
						   batch->n, nseqs)));

	batch->name = text_to_cstring(batch->consumer);
	batch->events = palloc(sizeof(BatchEvent) * Max(batch->n, 1));
	batch->order = palloc(sizeof(int) * Max(batch->n, 1));
	batch_push_context(batch, &callback);
	for (int i = 0; i < batch->n; i++)
	{
		BatchEvent *event = &batch->events[i];

		batch->current = i;
		if (idnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("resource_id must not be null")));
		if (seqnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("seq must not be null")));
		event->resource = DatumGetTextPP(ids[i]);
		owned_check_key_length(event->resource, "resource_id");
		event->seq = DatumGetInt64(seqs[i]);
		consumer_check_seq(event->seq);
		event->isnull = !with_payloads || payloadnulls[i];
		event->payload = event->isnull ? (Datum) 0 : payloads[i];
		batch->order[i] = i;
	}
	error_context_stack = callback.previous;
	qsort_arg(batch->order, batch->n, sizeof(int), batch_order_cmp,
			  batch->events);
}

/*
 * Keep the rows deliver() returned for event i (ready, whose payloads live
 * as long as the call).
 */
static void
batch_output_add(BatchOutput *out, int i, const ReadyList *ready)
{
	out->first[i] = out->n;
	out->count[i] = ready->n;
	if (out->n + ready->n > out->size)
	{
		out->size = Max(out->size * 2, out->n + ready->n);
		out->rows = repalloc(out->rows, sizeof(BatchRow) * out->size);
	}
	for (int j = 0; j < ready->n; j++)
	{
		BatchRow   *row = &out->rows[out->n++];

		row->seq = ready->events[j].seq;
		row->payload = ready->events[j].payload;
		row->isnull = ready->events[j].isnull;
	}
}

/*
 * Deliver the events of a batch in deciding order (README.md), each as
 * deliver() would, with the tables its call opened once.  With a handler (hc) it
 * runs on the ready events; without, "out" collects them.  Returns how
 * many events were ready (with a handler: ran).
 */
static int64
batch_deliver(ConsumerCall *call, Batch *batch, HandlerCache *hc,
			  bool dead_lettering, BatchOutput *out)
{
	MemoryContext call_cxt = CurrentMemoryContext;
	MemoryContext event_cxt;
	ErrorContextCallback callback;
	ReadyList	ready;
	int64		total = 0;

	/* what one event leaves behind goes with it; rows returned stay */
	event_cxt = batch_event_context(call_cxt);
	ready.events = NULL;
	ready.n = 0;
	ready.size = 0;
	ready.cxt = out != NULL ? call_cxt : event_cxt;

	batch_push_context(batch, &callback);
	for (int k = 0; k < batch->n; k++)
	{
		int			i = batch->order[k];
		BatchEvent *event = &batch->events[i];

		batch->current = i;
		MemoryContextSwitchTo(event_cxt);
		total += consumer_deliver_event(call, batch->name, batch->consumer,
										event->resource, event->seq,
										event->payload, event->isnull, &ready,
										hc, dead_lettering);
		MemoryContextSwitchTo(call_cxt);
		if (out != NULL)
			batch_output_add(out, i, &ready);
		else
		{
			/* the list lived in event_cxt */
			ready.events = NULL;
			ready.n = 0;
			ready.size = 0;
		}
		MemoryContextReset(event_cxt);
	}
	error_context_stack = callback.previous;
	MemoryContextDelete(event_cxt);
	return total;
}

/*
 * ordering.deliver_batch(consumer text, resource_ids text[], seqs bigint[],
 *						  payloads jsonb[])
 * returns table (ord integer, seq bigint, payload jsonb)
 *
 * For each event, in input order, the rows deliver() would return for it:
 * ord is the event's position in the arrays (1-based).
 */
Datum
ordering_deliver_batch(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ConsumerCall call;
	Batch		batch;
	BatchOutput out;
	Datum		routed;

	batch_read(fcinfo, true, &batch);
	if (!consumer_call_begin_batch(&call, fcinfo, CONSUMER_OP_DELIVER_BATCH,
								   "ordering.deliver_batch()", batch.consumer,
								   batch.events, batch.n,
								   CALL_PARKED | CALL_ROWS, &routed))
		return routed;
	batch.ords = call.ords;

	out.first = palloc(sizeof(int) * Max(batch.n, 1));
	out.count = palloc(sizeof(int) * Max(batch.n, 1));
	out.size = Max(batch.n, 8);
	out.rows = palloc(sizeof(BatchRow) * out.size);
	out.n = 0;
	(void) batch_deliver(&call, &batch, NULL, false, &out);
	consumer_call_end(&call);

	for (int i = 0; i < batch.n; i++)
	{
		for (int j = out.first[i]; j < out.first[i] + out.count[i]; j++)
		{
			Datum		values[3];
			bool		nulls[3] = {false, false, out.rows[j].isnull};

			values[0] = Int32GetDatum(batch_ord(&batch, i));
			values[1] = Int64GetDatum(out.rows[j].seq);
			values[2] = out.rows[j].payload;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values,
								 nulls);
		}
	}
	return (Datum) 0;
}

/*
 * ordering.deliver_batch(consumer text, resource_ids text[], seqs bigint[],
 *						  payloads jsonb[], handler regprocedure,
 *						  on_error text DEFAULT 'raise') returns integer
 *
 * Each event as deliver(..., handler, on_error) would take it; returns how
 * many events the handler ran for, in all.
 */
Datum
ordering_deliver_batch_handler(PG_FUNCTION_ARGS)
{
	ConsumerCall call;
	Batch		batch;
	HandlerCache *hc;
	bool		dead_lettering;
	int64		ran;
	Datum		routed;

	batch_read(fcinfo, true, &batch);
	hc = handler_lookup(fcinfo, 4);
	dead_lettering = handler_dead_lettering(fcinfo, 5);
	if (!consumer_call_begin_batch(&call, fcinfo,
								   CONSUMER_OP_DELIVER_BATCH_HANDLER,
								   "ordering.deliver_batch()", batch.consumer,
								   batch.events, batch.n, CALL_PARKED,
								   &routed))
		return routed;
	batch.ords = call.ords;
	ran = batch_deliver(&call, &batch, hc, dead_lettering, NULL);
	consumer_call_end(&call);
	if (ran > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("the handler ran for more events than an integer counts"),
				 errhint("Deliver fewer events per call.")));
	PG_RETURN_INT32((int32) ran);
}

/*
 * ordering.apply_batch(consumer text, resource_ids text[], seqs bigint[])
 * returns table (ord integer, applied boolean)
 *
 * For each event, in input order, what apply_if_newer() would return for
 * it; ord is its position in the arrays (1-based).
 */
Datum
ordering_apply_batch(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext call_cxt = CurrentMemoryContext;
	MemoryContext event_cxt;
	ErrorContextCallback callback;
	ConsumerCall call;
	Batch		batch;
	bool	   *applied;
	Datum		routed;

	batch_read(fcinfo, false, &batch);
	if (!consumer_call_begin_batch(&call, fcinfo, CONSUMER_OP_APPLY_BATCH,
								   "ordering.apply_batch()", batch.consumer,
								   batch.events, batch.n, CALL_ROWS, &routed))
		return routed;
	batch.ords = call.ords;
	applied = palloc(sizeof(bool) * Max(batch.n, 1));
	event_cxt = batch_event_context(call_cxt);

	batch_push_context(&batch, &callback);
	for (int k = 0; k < batch.n; k++)
	{
		int			i = batch.order[k];
		BatchEvent *event = &batch.events[i];

		batch.current = i;
		MemoryContextSwitchTo(event_cxt);
		applied[i] = consumer_apply_event(&call.positions, batch.name,
										  batch.consumer, event->resource,
										  event->seq);
		MemoryContextSwitchTo(call_cxt);
		MemoryContextReset(event_cxt);
	}
	error_context_stack = callback.previous;
	consumer_call_end(&call);
	MemoryContextDelete(event_cxt);

	for (int i = 0; i < batch.n; i++)
	{
		Datum		values[2] = {Int32GetDatum(batch_ord(&batch, i)), BoolGetDatum(applied[i])};
		bool		nulls[2] = {false, false};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
