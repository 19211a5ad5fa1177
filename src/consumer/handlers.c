/*-------------------------------------------------------------------------
 *
 * handlers.c
 *	  Calling the handler of deliver(..., handler [, on_error]) and
 *	  retry_dead_letter(..., handler) on the events that are ready
 *	  (README.md, "Handlers").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/resowner.h"
#include "utils/syscache.h"

#include "compat.h"
#include "consumer.h"
#include "text_equal.h"

/* A key whose handler runs, on the stack of handler_run() (README.md) */
typedef struct RunningKey
{
	const Datum *key;			/* (consumer, resource) */
	struct RunningKey *outer;
} RunningKey;

static RunningKey *running = NULL;

/*
 * Resolve and check the handler in argument argno: a plain function taking
 * (text, bigint, jsonb) that the caller may execute.  Cached in fn_extra.
 */
HandlerCache *
handler_lookup(FunctionCallInfo fcinfo, int argno)
{
	HandlerCache *hc = (HandlerCache *) fcinfo->flinfo->fn_extra;
	Oid			handler;
	HeapTuple	proctup;
	Form_pg_proc proc;
	AclResult	aclresult;
	bool		ok;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("handler must not be null")));
	handler = PG_GETARG_OID(argno);
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
	aclresult = ordering_proc_aclcheck(handler, GetUserId(), ACL_EXECUTE);
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
 * The on_error argument in argno: true for 'dead_letter', false for
 * 'raise'; anything else is refused.  Absent ('raise') in the 5-argument
 * deliver() of a database not yet updated to 1.2.
 */
bool
handler_dead_lettering(FunctionCallInfo fcinfo, int argno)
{
	char	   *mode;

	if (PG_NARGS() <= argno)
		return false;
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("on_error must not be null")));
	mode = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (strcmp(mode, "dead_letter") == 0)
		return true;
	if (strcmp(mode, "raise") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("on_error must be 'raise' or 'dead_letter', got \"%s\"", mode)));
	return false;
}

/*
 * Call the handler on events [0, limit) in order.
 */
static void
call_range(HandlerCache *hc, text *resource, ReadyList *ready, int limit,
		   volatile int *current)
{
	for (int i = 0; i < limit; i++)
	{
		LOCAL_FCINFO(hcinfo, 3);
		ReadyEvent *event = &ready->events[i];

		*current = i;
		if (hc->strict && event->isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("strict handler %s cannot take the null payload of event " INT64_FORMAT,
							format_procedure(hc->handler), event->seq)));
		InitFunctionCallInfoData(*hcinfo, &hc->flinfo, 3, InvalidOid, NULL, NULL);
		hcinfo->args[0].value = PointerGetDatum(resource);
		hcinfo->args[0].isnull = false;
		hcinfo->args[1].value = Int64GetDatum(event->seq);
		hcinfo->args[1].isnull = false;
		hcinfo->args[2].value = event->payload;
		hcinfo->args[2].isnull = event->isnull;
		(void) FunctionCallInvoke(hcinfo);
	}
}

/*
 * Is this an error that retrying may fix (README.md)?
 */
static bool
transient(int sqlerrcode)
{
	int			category = ERRCODE_TO_CATEGORY(sqlerrcode);

	return category == ERRCODE_TRANSACTION_ROLLBACK ||
		category == ERRCODE_INSUFFICIENT_RESOURCES ||
		category == ERRCODE_OPERATOR_INTERVENTION ||
		sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE;
}

/*
 * Call the handler on events [0, limit) in one subtransaction.  Returns
 * limit if every call succeeded (the subtransaction's work stays), or the
 * index of the event that failed, its error in *failure (all the work of
 * the subtransaction is rolled back).  Raises transient errors.
 */
static int
call_guarded(HandlerCache *hc, text *resource, ReadyList *ready, int limit,
			 ErrorData **failure)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile int current = 0;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		call_range(hc, resource, ready, limit, &current);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (transient(edata->sqlerrcode))
			ReThrowError(edata);
		*failure = edata;
		return current;
	}
	PG_END_TRY();
	return limit;
}

/*
 * Refuse a decision on a key whose handler is running (README.md).
 */
void
handler_check_reentry(const Datum *key)
{
	for (RunningKey *r = running; r != NULL; r = r->outer)
	{
		if (ordering_text_equal(DatumGetTextPP(r->key[0]), DatumGetTextPP(key[0])) &&
			ordering_text_equal(DatumGetTextPP(r->key[1]), DatumGetTextPP(key[1])))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("a handler of consumer \"%s\" and resource \"%s\" cannot deliver or change the position of its own resource",
							text_to_cstring(DatumGetTextPP(key[0])),
							text_to_cstring(DatumGetTextPP(key[1]))),
					 errdetail("The position already stands at the end of the events being handled, so an event decided now would run ahead of those still waiting for the handler."),
					 errhint("Deliver further events of the same resource after the handler returns, or for another resource.")));
	}
}

/*
 * Call the handler on events [0, limit), as handler_run() says, with the
 * key on the stack of running handlers.
 */
static int
run_events(HandlerCache *hc, const Datum *key, ReadyList *ready, bool guarded,
		   ErrorData **failure)
{
	text	   *resource = DatumGetTextPP(key[1]);
	int			limit = ready->n;

	if (!guarded)
	{
		volatile int current;

		call_range(hc, resource, ready, limit, &current);
		return limit;
	}
	while (limit > 0)
	{
		ErrorData  *error = NULL;
		int			ran = call_guarded(hc, resource, ready, limit, &error);

		if (ran == limit)
			break;
		/* the calls before the failed one run again, without it */
		*failure = error;
		limit = ran;
	}
	return limit;
}

/*
 * Call the handler on the ready events of key (consumer, resource) in
 * order; returns how many ran.  Unguarded, an error goes up.  Guarded
 * (dead-lettering, README.md), the first event that fails stops the run:
 * the events before it ran, and its index is returned with its error in
 * *failure.  While the handler runs, decisions on the key are refused.
 */
int
handler_run(HandlerCache *hc, const Datum *key, ReadyList *ready,
			bool guarded, ErrorData **failure)
{
	RunningKey	self = {key, running};
	volatile int ran = 0;

	*failure = NULL;
	running = &self;
	PG_TRY();
	{
		ran = run_events(hc, key, ready, guarded, failure);
	}
	PG_FINALLY();
	{
		running = self.outer;
	}
	PG_END_TRY();
	return ran;
}
