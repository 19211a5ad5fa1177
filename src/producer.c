/*-------------------------------------------------------------------------
 *
 * producer.c
 *	  Producer side: per-(stream, resource) gapless sequence numbers.
 *
 * Numbers come from the counter rows of ordering.sequences, advanced in the
 * producer's own transaction (see keyed.c for the locking protocol): a
 * rollback gives the number back, a concurrent producer of the same resource
 * waits for the commit and continues after it, different resources never
 * meet.  Deleting outbox rows never touches the counters, so a sequence never
 * restarts.
 *
 * Restore: pg_restore loads the rows of ordering.outbox (whose trigger exists
 * by then) with their seqs, and the counters, in an order of its choosing.
 * Rows loaded by COPY with a seq are therefore taken as history: the counter
 * is raised to at least that seq instead of asserting it, and the restored
 * counter rows are merged in by ordering.sequences_merge().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "tcop/pquery.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/portal.h"
#include "utils/rel.h"

#include "keyed.h"
#include "stats.h"
#include "triggers.h"

PG_FUNCTION_INFO_V1(ordering_sequence_trigger);
PG_FUNCTION_INFO_V1(ordering_next_sequence);

/* What the trigger asks of the counter */
typedef enum AllocMode
{
	ALLOC_NEXT,					/* the next number */
	ALLOC_EXPECT,				/* the next number, which must be "seq" */
	ALLOC_HISTORY				/* "seq" is restored history: raise to it */
} AllocMode;

typedef struct AllocRequest
{
	AllocMode	mode;
	int64		seq;
	bool		overflow;		/* out: the counter is at its maximum */
} AllocRequest;

/*
 * The counter's new value.  Never raises (see KeyedDecide): an overflow is
 * reported through the request and raised by the caller.
 */
static int64
decide_next(int64 current, bool exists, void *arg)
{
	AllocRequest *req = (AllocRequest *) arg;

	if (req->mode == ALLOC_HISTORY)
		return Max(current, req->seq);
	if (current == PG_INT64_MAX)
	{
		req->overflow = true;
		return current;
	}
	req->overflow = false;
	return current + 1;
}

/*
 * Allocate a number of (stream, resource) as the request says; returns it.
 */
static int64
allocate(text *stream, text *resource, AllocRequest *req)
{
	int64		previous;
	int64		seq;

	keyed_check_key_length(stream, "stream");
	keyed_check_key_length(resource, "resource_id");
	seq = keyed_advance(&ordering_sequences, stream, resource,
						decide_next, req, &previous);
	if (req->mode == ALLOC_HISTORY)
		return req->seq;

	if (req->overflow)
		ereport(ERROR,
				(errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
				 errmsg("sequence of resource \"%s\" in stream \"%s\" reached its maximum value",
						text_to_cstring(resource), text_to_cstring(stream))));

	/* checked after the row is ours: only now is "previous" the truth */
	if (req->mode == ALLOC_EXPECT && req->seq != seq) ordering_stats_sequence_conflict(text_to_cstring(stream));
	if (req->mode == ALLOC_EXPECT && req->seq != seq)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("expected sequence number " INT64_FORMAT " for resource \"%s\" in stream \"%s\", but the next is " INT64_FORMAT,
						req->seq, text_to_cstring(resource),
						text_to_cstring(stream), seq),
				 errdetail("The last sequence number allocated is " INT64_FORMAT ".",
						   previous),
				 errhint("Another producer wrote to this resource first; reload it and retry.")));

	ordering_stats_sequence_assigned(text_to_cstring(stream));
	ordering_stats_hot_resource('s', text_to_cstring(stream), text_to_cstring(resource), 1);
	return seq;
}

/*
 * ordering.next_sequence(stream text, resource_id text) returns bigint
 */
Datum
ordering_next_sequence(PG_FUNCTION_ARGS)
{
	AllocRequest req = {ALLOC_NEXT, 0, false};

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("stream must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("resource_id must not be null"),
				 errdetail("Every sequenced event needs a resource.")));
	PG_RETURN_INT64(allocate(PG_GETARG_TEXT_PP(0), PG_GETARG_TEXT_PP(1), &req));
}

static const TriggerProtocol sequence_trigger_protocol = {
	"ordering.sequence_trigger()", TRIGGER_EVENT_INSERT, 2, 3,
	"(resource_column, sequence_column [, stream])",
	"Use ordering.attach() to install it."
};

/*
 * The resource of a row as text: text and varchar as they are, any other
 * type through its output function.
 */
static text *
resource_as_text(Datum value, Oid typid)
{
	Oid			outfunc;
	bool		isvarlena;

	if (typid == TEXTOID || typid == VARCHAROID)
		return DatumGetTextPP(value);
	getTypeOutputInfo(typid, &outfunc, &isvarlena);
	return cstring_to_text(OidOutputFunctionCall(outfunc, value));
}

/*
 * The stream of a trigger created without one: the table's qualified name
 * (ordering.attach() always freezes it into the trigger's arguments).
 */
static char *
default_stream(Relation rel)
{
	return psprintf("%s.%s", get_namespace_name(RelationGetNamespace(rel)),
					RelationGetRelationName(rel));
}

/*
 * Rows loaded by COPY with a seq are restored history (see file header).
 */
static bool
loading_history(void)
{
	return ActivePortal != NULL && ActivePortal->commandTag == CMDTAG_COPY;
}

/*
 * ordering.sequence_trigger(): BEFORE INSERT FOR EACH ROW.
 *
 * A NULL sequence column asks for the next number; a supplied one asserts it.
 */
Datum
ordering_sequence_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	TupleDesc	desc;
	char	  **args;
	AttrNumber	resattno;
	AttrNumber	seqattno;
	HeapTuple	tuple;
	Datum		resource;
	Datum		seq;
	bool		isnull;
	int			column;
	text	   *stream;
	AllocRequest req = {ALLOC_NEXT, 0, false};

	ordering_trigger_check(fcinfo, &sequence_trigger_protocol);
	rel = trigdata->tg_relation;
	desc = RelationGetDescr(rel);
	args = trigdata->tg_trigger->tgargs;
	resattno = ordering_trigger_column(rel, args[0], &sequence_trigger_protocol)->attnum;
	seqattno = ordering_trigger_column(rel, args[1], &sequence_trigger_protocol)->attnum;
	if (TupleDescAttr(desc, seqattno - 1)->atttypid != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("sequence column \"%s\" of relation \"%s\" must be of type bigint",
						args[1], RelationGetRelationName(rel))));
	stream = cstring_to_text(trigdata->tg_trigger->tgnargs == 3 ? args[2] :
							 default_stream(rel));

	tuple = trigdata->tg_trigtuple;
	resource = heap_getattr(tuple, resattno, desc, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("null value in column \"%s\" of relation \"%s\" violates the ordering of its events",
						args[0], RelationGetRelationName(rel)),
				 errdetail("Every sequenced event needs a resource.")));

	seq = heap_getattr(tuple, seqattno, desc, &isnull);
	if (!isnull)
	{
		req.mode = loading_history() ? ALLOC_HISTORY : ALLOC_EXPECT;
		req.seq = DatumGetInt64(seq);
		if (req.mode == ALLOC_HISTORY && req.seq < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("sequence number must be positive, got " INT64_FORMAT,
							req.seq)));
	}
	seq = Int64GetDatum(allocate(stream,
								 resource_as_text(resource,
												  TupleDescAttr(desc, resattno - 1)->atttypid),
								 &req));
	if (req.mode != ALLOC_NEXT)
		return PointerGetDatum(tuple);

	isnull = false;
	column = seqattno;
	return PointerGetDatum(heap_modify_tuple_by_cols(tuple, desc, 1, &column,
													 &seq, &isnull));
}
