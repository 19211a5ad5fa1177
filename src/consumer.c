/*-------------------------------------------------------------------------
 *
 * consumer.c
 *	  Consumer side: apply_if_newer() for state events, deliver() and
 *	  skip_gap() for step events, position().
 *
 * A consumer's position per resource is one row of ordering.positions,
 * (consumer, resource_id, position, blocked_at), read and written through
 * the storage layer (owned_rows.c has the locking and isolation rules).
 * Step events that arrive ahead of a missing predecessor wait in
 * ordering.parked (parked.c).
 *
 * The position row serializes its key.  Every call that changes anything of
 * a (consumer, resource) -- its position, its parked events, its block --
 * first writes a new version of that row (with the same values when only
 * the parked events change) through owned_advance(), deciding on the newest
 * committed version, and only then changes the rest.  So a concurrent call
 * of the same key waits on the row like an UPDATE would, and decides again
 * on what we committed; calls for different resources never wait for each
 * other; and a transaction may touch any number of resources while holding
 * no heavyweight lock per resource.  A stale or duplicate event changes
 * nothing, writes nothing and never waits.
 *
 * State events: apply_if_newer() is one owned_advance() whose decision is
 * "seq if seq > position, else no change": the check and the write are one
 * atomic step, so a read-compare-write race cannot happen.
 *
 * Step events: deliver() decides from the position, the block and the
 * parked events, read with the same decision snapshot:
 *	- seq <= position, or seq = blocked_at, or seq parked already: a
 *	  duplicate or stale event, nothing changes;
 *	- seq = position + 1: it applies, with the parked run it continues; the
 *	  position moves to the run's end and the run's rows are removed;
 *	- seq > position + 1: it parks (unless the parking cap is reached:
 *	  SQLSTATE 54000, nothing stored).
 *
 * Gap requests: a call that moves the position of a key that has parked
 * events (a deliver() that continues the run, a skip_gap()) may close its
 * gap, so it settles the key's request through parked_settle_gap(), which
 * first takes ROW EXCLUSIVE on ordering.gap_requests and so may wait for a
 * running sweep to commit (see parked.c and gaps.c).  The other calls never
 * touch that table and never wait for a sweep: a gap exists only above
 * parked rows, and every call that removes parked rows takes that lock.
 *
 * Invariants kept by deliver()/skip_gap(): every parked seq of a key is
 * greater than position + 1 (an event that continues the run is never
 * parked, and every move of the position drains what continues it); a
 * blocked key's parked seqs are above blocked_at, which is above the
 * position.  Hence the parked seqs are distinct values in [position + 2,
 * highest parked], and their number is at most highest - position - 1: the
 * parking cap only needs counting when that bound exceeds it.
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
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "ordering.h"
#include "owned.h"
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

/* What a deliver() decided */
typedef enum DeliverPlan
{
	PLAN_STALE,
	PLAN_DUPLICATE,
	PLAN_APPLY,					/* this event and the run it continues */
	PLAN_PARK,
	PLAN_CAP_REACHED,
	PLAN_SKIP,					/* skip_gap(): past the missing events */
	PLAN_NOTHING				/* skip_gap(): no gap */
} DeliverPlan;

/* A decision about one key of ordering.positions, and what it saw */
typedef struct KeyDecision
{
	/* in */
	const Datum *key;			/* (consumer, resource) */
	int64		seq;			/* the event delivered */
	Datum		payload;
	bool		payload_isnull;
	OwnedRel   *parked;
	Snapshot	snapshot;		/* the decision snapshot */
	/* out */
	DeliverPlan plan;
	int64		position;		/* before */
	int64		end;			/* after, when it moves */
	bool		had_parked;
	bool		beyond;			/* events remain parked after the run */
	int64		parked_now;		/* PLAN_CAP_REACHED: how many are parked */
	ReadyList  *ready;
} KeyDecision;

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
	owned_check_key_length(*consumer, "consumer");
	owned_check_key_length(*resource, "resource_id");
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
 * The position and the block of a position row as found (0 and 0 for a row
 * that does not exist yet); a new row starts at position 0, unblocked.
 */
static void
read_position(const OwnedRow *row, Datum *values, bool *nulls,
			  int64 *position, int64 *blocked_at)
{
	if (!row->found)
	{
		values[POSITIONS_POSITION - 1] = Int64GetDatum(0);
		nulls[POSITIONS_POSITION - 1] = false;
		nulls[POSITIONS_BLOCKED_AT - 1] = true;
	}
	*position = DatumGetInt64(values[POSITIONS_POSITION - 1]);
	*blocked_at = nulls[POSITIONS_BLOCKED_AT - 1] ? 0 :
		DatumGetInt64(values[POSITIONS_BLOCKED_AT - 1]);
}

/*
 * OwnedDecide of apply_if_newer(): seq if it is newer, else no change.
 */
static OwnedVerdict
decide_newer(const OwnedRow *row, Datum *values, bool *nulls, void *arg)
{
	KeyDecision *kd = (KeyDecision *) arg;
	int64		blocked_at;

	read_position(row, values, nulls, &kd->position, &blocked_at);
	if (kd->seq <= kd->position)
		return OWNED_KEEP;
	values[POSITIONS_POSITION - 1] = Int64GetDatum(kd->seq);
	return OWNED_WRITE;
}

/*
 * OwnedDecide of deliver() (file header).  Reads the parked events with the
 * same snapshot the row was found with; has no side effects but filling
 * kd->ready, which it empties first.
 */
static OwnedVerdict
decide_deliver(const OwnedRow *row, Datum *values, bool *nulls, void *arg)
{
	KeyDecision *kd = (KeyDecision *) arg;
	int64		blocked_at;
	int64		lowest = 0;
	int64		highest = 0;

	read_position(row, values, nulls, &kd->position, &blocked_at);
	kd->ready->n = 0;
	if (kd->seq <= kd->position || kd->seq == blocked_at)
	{
		kd->plan = kd->seq < kd->position ? PLAN_STALE : PLAN_DUPLICATE;
		return OWNED_KEEP;
	}
	kd->had_parked = parked_lowest(kd->parked, kd->key, kd->snapshot, &lowest);

	if (kd->seq == kd->position + 1)
	{
		kd->plan = PLAN_APPLY;
		kd->end = kd->seq;
		kd->beyond = kd->had_parked;
		parked_ready_add(kd->ready, kd->seq, kd->payload, kd->payload_isnull);
		if (kd->had_parked && kd->seq < PG_INT64_MAX && lowest == kd->seq + 1)
			kd->end = parked_read_run(kd->parked, kd->key, kd->seq + 1,
									  kd->snapshot, kd->ready, &kd->beyond);
		values[POSITIONS_POSITION - 1] = Int64GetDatum(kd->end);
		return OWNED_WRITE;
	}

	/* early: a duplicate of a parked event, or to park */
	if (kd->had_parked)
	{
		(void) parked_highest(kd->parked, kd->key, kd->snapshot, &highest);
		if (kd->seq >= lowest && kd->seq <= highest &&
			parked_exists(kd->parked, kd->key, kd->seq, kd->snapshot))
		{
			kd->plan = PLAN_DUPLICATE;
			return OWNED_KEEP;
		}
	}

	/*
	 * After parking, the parked seqs are distinct values in [position + 2,
	 * Max(highest, seq)] (file header), so their number cannot exceed the
	 * cap unless that range is longer than the cap; only then count.
	 */
	if (Max(highest, kd->seq) - kd->position - 1 > ordering_max_parked_per_resource)
	{
		kd->parked_now = parked_count(kd->parked, kd->key,
									  ordering_max_parked_per_resource,
									  kd->snapshot);
		if (kd->parked_now >= ordering_max_parked_per_resource)
		{
			kd->plan = PLAN_CAP_REACHED;
			return OWNED_KEEP;
		}
	}
	kd->plan = PLAN_PARK;
	return OWNED_WRITE;			/* the same values: a new version */
}

/*
 * OwnedDecide of skip_gap(): past the events missing before the lowest
 * parked one (before the dead letter, on a blocked key), then the run that
 * drains.
 */
static OwnedVerdict
decide_skip(const OwnedRow *row, Datum *values, bool *nulls, void *arg)
{
	KeyDecision *kd = (KeyDecision *) arg;
	int64		blocked_at;
	int64		lowest;

	read_position(row, values, nulls, &kd->position, &blocked_at);
	kd->ready->n = 0;
	kd->plan = PLAN_NOTHING;
	kd->had_parked = parked_lowest(kd->parked, kd->key, kd->snapshot, &lowest);
	if (!kd->had_parked)
		return OWNED_KEEP;
	if (blocked_at != 0)
	{
		/* the dead letter stays: skip only what is missing before it */
		if (blocked_at - 1 <= kd->position)
			return OWNED_KEEP;
		kd->end = blocked_at - 1;
		kd->beyond = true;
	}
	else
		kd->end = parked_read_run(kd->parked, kd->key, lowest, kd->snapshot,
								  kd->ready, &kd->beyond);
	kd->seq = lowest;
	kd->plan = PLAN_SKIP;
	values[POSITIONS_POSITION - 1] = Int64GetDatum(kd->end);
	return OWNED_WRITE;
}

/*
 * Decide for one key of ordering.positions with decide(), which sees the
 * key's parked events through kd->parked, and write what it decided.
 */
static void
decide_key(OwnedDecide decide, KeyDecision *kd, OwnedRel *positions)
{
	SnapshotData buf;
	OwnedRow	row;

	kd->snapshot = owned_decision_snapshot(&buf);
	owned_advance(positions, kd->key, decide, kd, &row);
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
	Datum		key[2] = {PointerGetDatum(consumer), PointerGetDatum(resource)};
	OwnedRel	positions;
	OwnedRel	parked;
	KeyDecision kd = {0};

	kd.key = key;
	kd.seq = seq;
	kd.payload = payload;
	kd.payload_isnull = payload_isnull;
	kd.parked = &parked;
	kd.ready = ready;
	owned_open(OWNED_POSITIONS, RowExclusiveLock, &positions);
	owned_open(OWNED_PARKED, RowExclusiveLock, &parked);
	decide_key(decide_deliver, &kd, &positions);

	switch (kd.plan)
	{
		case PLAN_STALE:
		case PLAN_DUPLICATE:
			ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
			ordering_stats_count(name, kd.plan == PLAN_STALE ?
								 ORDERING_EVENT_STALE : ORDERING_EVENT_DUPLICATE, 1);
			break;
		case PLAN_CAP_REACHED:
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many events parked for consumer \"%s\" and resource \"%s\"",
							name, text_to_cstring(resource)),
					 errdetail("Event " INT64_FORMAT " arrived at position " INT64_FORMAT ", and " INT64_FORMAT " events are parked already, the limit set by ordering.max_parked_per_resource.",
							   seq, kd.position, kd.parked_now),
					 errhint("Redeliver the event later, or give up on the missing events with ordering.skip_gap().")));
			break;
		case PLAN_PARK:
			parked_insert(&parked, key, seq, payload, payload_isnull);
			ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
			ordering_stats_count(name, ORDERING_EVENT_PARKED, 1);
			ordering_stats_reorder_distance(name, seq - kd.position);
			break;
		case PLAN_APPLY:
			parked_remove(&parked, ready, 1);
			/* with events parked the gap may close; without, no gap is open */
			if (kd.had_parked)
				parked_settle_gap(key, kd.end, !kd.beyond);
			ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
			ordering_stats_count(name, ORDERING_EVENT_APPLIED, ready->n);
			if (ready->n > 1)
				ordering_stats_count(name, ORDERING_EVENT_DRAINED, ready->n - 1);
			break;
		default:
			elog(ERROR, "unexpected deliver plan %d", (int) kd.plan);
	}
	owned_close(&parked);
	owned_close(&positions);
}

/*
 * ordering.apply_if_newer(consumer text, resource_id text, seq bigint)
 * returns boolean
 *
 * True when seq is above the position: the position is now seq and the
 * caller owns the event.  One atomic check-and-advance (file header).
 */
Datum
ordering_apply_if_newer(PG_FUNCTION_ARGS)
{
	text	   *consumer;
	text	   *resource;
	Datum		key[2];
	KeyDecision kd = {0};
	OwnedRel	positions;
	OwnedRow	row;
	SnapshotData buf;
	char	   *name;
	bool		applied;

	get_key_args(fcinfo, &consumer, &resource, &kd.seq);
	owned_prevent_write("ordering.apply_if_newer()");
	key[0] = PointerGetDatum(consumer);
	key[1] = PointerGetDatum(resource);
	kd.key = key;
	kd.snapshot = owned_decision_snapshot(&buf);
	owned_open(OWNED_POSITIONS, RowExclusiveLock, &positions);
	owned_advance(&positions, key, decide_newer, &kd, &row);
	owned_close(&positions);
	applied = kd.position < kd.seq;

	name = text_to_cstring(consumer);
	ordering_stats_count(name, ORDERING_EVENT_CONSUMED, 1);
	if (applied)
		ordering_stats_count(name, ORDERING_EVENT_APPLIED, 1);
	else
		ordering_stats_count(name, kd.position == kd.seq ?
							 ORDERING_EVENT_DUPLICATE : ORDERING_EVENT_STALE, 1);
	PG_RETURN_BOOL(applied);
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
	owned_prevent_write("ordering.deliver()");
	materialize_result(fcinfo);
	deliver_event(consumer, resource, seq, payload_arg(fcinfo), PG_ARGISNULL(3),
				  &ready);

	ready_return(&ready, rsinfo);
	return (Datum) 0;
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
	owned_prevent_write("ordering.deliver()");
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
 * ordering.position(consumer text, resource_id text) returns bigint: a read
 * with the snapshot a SQL read of ordering.positions would use, extended to
 * this transaction's own changes (owned_rows.c).
 */
Datum
ordering_position(PG_FUNCTION_ARGS)
{
	text	   *consumer;
	text	   *resource;
	Datum		key[2];
	SnapshotData buf;
	OwnedRel	positions;
	OwnedRow	row;
	int64		position = 0;

	get_key_args(fcinfo, &consumer, &resource, NULL);
	key[0] = PointerGetDatum(consumer);
	key[1] = PointerGetDatum(resource);
	owned_open(OWNED_POSITIONS, AccessShareLock, &positions);
	if (owned_fetch(&positions, key, owned_read_snapshot(&buf), &row))
		position = DatumGetInt64(row.values[POSITIONS_POSITION - 1]);
	owned_close(&positions);
	PG_RETURN_INT64(position);
}

/*
 * ordering.skip_gap(consumer text, resource_id text)
 * returns table (seq bigint, payload jsonb)
 *
 * Gives up on the events missing before the lowest parked one: the position
 * moves to just before it, and the run that then drains is returned (and
 * its rows removed).  On a blocked key only the events missing before the
 * dead letter are given up.  Nothing parked: nothing changes.
 */
Datum
ordering_skip_gap(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	text	   *consumer;
	text	   *resource;
	Datum		key[2];
	OwnedRel	positions;
	OwnedRel	parked;
	KeyDecision kd = {0};
	ReadyList	ready = {NULL, 0, 0, CurrentMemoryContext};

	get_key_args(fcinfo, &consumer, &resource, NULL);
	owned_prevent_write("ordering.skip_gap()");
	materialize_result(fcinfo);
	key[0] = PointerGetDatum(consumer);
	key[1] = PointerGetDatum(resource);
	kd.key = key;
	kd.parked = &parked;
	kd.ready = &ready;
	owned_open(OWNED_POSITIONS, RowExclusiveLock, &positions);
	owned_open(OWNED_PARKED, RowExclusiveLock, &parked);
	decide_key(decide_skip, &kd, &positions);
	if (kd.plan == PLAN_SKIP)
	{
		parked_remove(&parked, &ready, 0);
		/* the gap closes: locks ordering.gap_requests, settles the request */
		parked_settle_gap(key, kd.end, !kd.beyond);
		if (ready.n > 0)
		{
			char	   *name = text_to_cstring(consumer);

			ordering_stats_count(name, ORDERING_EVENT_APPLIED, ready.n);
			ordering_stats_count(name, ORDERING_EVENT_DRAINED, ready.n);
		}
	}
	owned_close(&parked);
	owned_close(&positions);
	ready_return(&ready, rsinfo);
	return (Datum) 0;
}
