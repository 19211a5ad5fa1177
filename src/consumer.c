/*-------------------------------------------------------------------------
 *
 * consumer.c
 *	  Consumer side: apply_if_newer() for state events, deliver() and
 *	  skip_gap() for step events, position().
 *
 * A consumer's position per resource lives in ordering.positions and is
 * read and advanced through keyed.c (no executor, no SPI).  Step events that
 * arrive ahead of a missing predecessor wait in ordering.parked, whose
 * storage (and the gap request of a key) is parked.c's.
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
 * in progress for this key, so the position read with keyed_read()
 * (SnapshotSelf: committed or ours) is the truth and stays so until we
 * commit, and so are the parked rows parked.c reads (see there).
 *
 * Gap requests: a call that moves the position of a key that has parked
 * rows (a deliver() that continues the run, a skip_gap()) may close its gap,
 * so it settles the key's request in ordering.gap_requests through
 * parked_drain_finish(), which first takes ROW EXCLUSIVE on that table and
 * so may wait for a running sweep to commit (see parked.c and gaps.c).  The
 * other calls never touch that table and never wait for a sweep: a stale or
 * duplicate event changes nothing, an early event only parks (it may open a
 * gap, which the next sweep finds, but closes none), and an in-order event
 * of a key with nothing parked moves a position no gap depends on: a gap
 * exists only above parked rows, and every call that removes parked rows
 * takes the lock, so no sweep can still be judging them by an older
 * snapshot.
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

#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "decision_log.h"
#include "keyed.h"
#include "ordering.h"
#include "parked.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(ordering_apply_if_newer);
PG_FUNCTION_INFO_V1(ordering_deliver);
PG_FUNCTION_INFO_V1(ordering_deliver_handler);
PG_FUNCTION_INFO_V1(ordering_position);
PG_FUNCTION_INFO_V1(ordering_skip_gap);

/* a resolved handler of deliver(..., handler), cached in fn_extra */
typedef struct HandlerCache
{
	Oid			handler;
	bool		strict;
	FmgrInfo	flinfo;
} HandlerCache;

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
	ordering_stats_hot_resource('c', name, text_to_cstring(resource), 1);
	ordering_log_decision(name, resource, previous + 1, seq, applied ? ORDERING_DECISION_APPLIED : previous == seq ? ORDERING_DECISION_DUPLICATE : ORDERING_DECISION_STALE, 0);
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
	ordering_stats_hot_resource('c', name, text_to_cstring(resource), 1);

	/*
	 * Stale or duplicate: nothing changes, so no gap closes and no lock of
	 * ordering.gap_requests is needed (file header).
	 */
	if (seq <= position)
	{
		ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
		ordering_stats_count(name, seq == position ? ORDERING_EVENT_DUPLICATE :
							 ORDERING_EVENT_STALE, 1);
		ordering_log_decision(name, resource, position + 1, seq, seq == position ? ORDERING_DECISION_DUPLICATE : ORDERING_DECISION_STALE, 0);
		return;
	}

	parked_open(&ps);
	has_parked = parked_lowest(&ps, consumer, resource, &lowest);

	if (seq == position + 1)
	{
		int64		end = seq;
		bool		beyond = true;

		parked_ready_add(ready, seq, payload, payload_isnull);
		/* nothing can be parked above the largest seq */
		has_parked = has_parked && seq < PG_INT64_MAX;
		if (has_parked && lowest == seq + 1)
			end = parked_read_run(&ps, consumer, resource, seq + 1, ready,
								  &beyond);
		parked_close(&ps);
		advance_position(consumer, resource, end);

		/*
		 * With parked rows this may close the gap: parked_drain_finish()
		 * locks ordering.gap_requests and settles the request.  Without, it
		 * is the hot path and needs no such lock: no gap is open for this
		 * key, nor can a running sweep believe one is (file header).
		 */
		if (has_parked)
			parked_drain_finish(consumer, resource, ready, 1, seq + 1, end,
								!beyond);

		ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
		ordering_stats_count(name, ORDERING_EVENT_APPLIED, ready->n);
		if (ready->n > 1)
			ordering_stats_count(name, ORDERING_EVENT_DRAINED, ready->n - 1);
		ordering_log_decision(name, resource, position + 1, seq, ORDERING_DECISION_APPLIED, ready->n - 1);
		return;
	}

	/*
	 * Early: park it, unless it is parked already or the cap is reached.
	 * The position does not move, so no gap closes and ordering.gap_requests
	 * is not locked.
	 */
	if (has_parked)
	{
		(void) parked_highest(&ps, consumer, resource, &highest);
		if (seq >= lowest && seq <= highest &&
			parked_exists(&ps, consumer, resource, seq))
		{
			parked_close(&ps);
			ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
			ordering_stats_count(name, ORDERING_EVENT_DUPLICATE, 1);
			ordering_log_decision(name, resource, position + 1, seq, ORDERING_DECISION_DUPLICATE, 0);
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

	parked_insert(consumer, resource, seq, payload, payload_isnull);
	ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
	ordering_stats_count(name, ORDERING_EVENT_PARKED, 1);
	ordering_stats_reorder_distance(name, seq - position);
	ordering_log_decision(name, resource, position + 1, seq, ORDERING_DECISION_PARKED, 0);
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
 * Set up the tuplestore of deliver() and skip_gap().  The executor passes
 * the row type it expects (our OUT parameters) in expectedDesc: using it
 * saves building the same descriptor from pg_proc at every call, which
 * get_call_result_type() would.
 */
static void
materialize_result(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		expected = rsinfo != NULL && IsA(rsinfo, ReturnSetInfo) &&
		rsinfo->expectedDesc != NULL;

	InitMaterializedSRF(fcinfo, expected ? MAT_SRF_USE_EXPECTED_DESC : 0);
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
	materialize_result(fcinfo);
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
	materialize_result(fcinfo);

	keyed_lock_key(&ordering_positions, consumer, resource);
	parked_open(&ps);
	has_parked = parked_lowest(&ps, consumer, resource, &lowest);
	if (has_parked)
		end = parked_read_run(&ps, consumer, resource, lowest, &ready, &beyond);
	parked_close(&ps);
	if (!has_parked)
		return (Datum) 0;		/* no gap: nothing to lock or settle */

	ordering_stats_count(text_to_cstring(consumer), ORDERING_EVENT_SKIPPED, lowest - 1 - keyed_read(&ordering_positions, consumer, resource));
	if (ordering_log_decisions) ordering_log_decision(text_to_cstring(consumer), resource, keyed_read(&ordering_positions, consumer, resource) + 1, lowest, ORDERING_DECISION_SKIPPED, 0);
	advance_position(consumer, resource, end);
	/* the gap closes: locks ordering.gap_requests, settles the request */
	parked_drain_finish(consumer, resource, &ready, 0, lowest, end, !beyond);

	if (ready.n > 0)
	{
		char	   *name = text_to_cstring(consumer);

		ordering_stats_count(name, ORDERING_EVENT_APPLIED, ready.n);
		ordering_stats_count(name, ORDERING_EVENT_DRAINED, ready.n);
	}
	ready_return(&ready, rsinfo);
	return (Datum) 0;
}
