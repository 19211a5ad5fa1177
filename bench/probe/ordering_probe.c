/*-------------------------------------------------------------------------
 *
 * ordering_probe.c
 *	  Two bench-only BEFORE INSERT triggers that bound what any per-resource
 *	  sequencer could cost.  Not part of the extension; bench/run.sh builds
 *	  them into its sandbox only.
 *
 * Both do the trigger's frame exactly as ordering.sequence_trigger() does
 * (find the two columns, read the resource as text, put a number into the
 * row) but keep no counter: the number is unique (backend pid, backend-local
 * count) and means nothing.
 *
 *	probe_no_counter()	nothing else: the cost of being a C trigger that
 *						fills in the column.
 *	probe_lock_only()	also takes a transaction-scoped lock on the row's
 *						resource, as any sequencer whose numbers follow
 *						commit order must hold until commit: the cost of the
 *						lock, and on one hot resource the cost of the wait.
 *
 * So ordering's distance to probe_lock_only() is what its counter costs (the
 * read and the versioned write), and probe_lock_only()'s distance to a bare
 * INSERT is what no design that hands out gapless numbers in commit order
 * without errors can avoid.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/rel.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(probe_no_counter);
PG_FUNCTION_INFO_V1(probe_lock_only);

/* advisory lock field4 of the probe: clear of users' (1, 2) and ordering's */
#define PROBE_LOCK_FIELD4 0x0bec

/*
 * Find the columns named by the trigger's two arguments, read the resource,
 * optionally lock it, and return the row with a unique number in the
 * sequence column.
 */
static Datum
probe_fill(FunctionCallInfo fcinfo, bool lock)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	static int64 count = 0;
	Relation	rel;
	TupleDesc	desc;
	char	  **args;
	int			resattno;
	int			seqattno;
	HeapTuple	tuple;
	Datum		resource;
	Datum		seq;
	bool		isnull;

	if (!CALLED_AS_TRIGGER(fcinfo) || trigdata->tg_trigger->tgnargs != 2 ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		elog(ERROR, "probe: BEFORE INSERT row trigger with (resource_column, sequence_column)");
	rel = trigdata->tg_relation;
	desc = RelationGetDescr(rel);
	args = trigdata->tg_trigger->tgargs;
	resattno = attnameAttNum(rel, args[0], false);
	seqattno = attnameAttNum(rel, args[1], false);
	if (resattno <= 0 || seqattno <= 0 ||
		TupleDescAttr(desc, resattno - 1)->atttypid != TEXTOID)
		elog(ERROR, "probe: a text resource column and a sequence column");

	tuple = trigdata->tg_trigtuple;
	resource = heap_getattr(tuple, resattno, desc, &isnull);
	if (isnull)
		elog(ERROR, "probe: null resource");
	if (lock)
	{
		text	   *r = DatumGetTextPP(resource);
		LOCKTAG		tag;

		SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, RelationGetRelid(rel),
							 hash_any((unsigned char *) VARDATA_ANY(r),
									  VARSIZE_ANY_EXHDR(r)),
							 PROBE_LOCK_FIELD4);
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
	}

	seq = Int64GetDatum(((int64) MyProcPid << 32) + ++count);
	isnull = false;
	return PointerGetDatum(heap_modify_tuple_by_cols(tuple, desc, 1, &seqattno,
													 &seq, &isnull));
}

Datum
probe_no_counter(PG_FUNCTION_ARGS)
{
	return probe_fill(fcinfo, false);
}

Datum
probe_lock_only(PG_FUNCTION_ARGS)
{
	return probe_fill(fcinfo, true);
}
