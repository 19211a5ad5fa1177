/*-------------------------------------------------------------------------
 *
 * restore.c
 *	  Loading counter rows: ordering.sequences_load(), the trigger through
 *	  which every row inserted into ordering.sequences by a statement goes.
 *
 * pg_dump dumps ordering.sequences, and pg_restore loads it with COPY, in a
 * database where producing may already have created counters (a data-only
 * restore into a database that produced; ordering.outbox loaded by another
 * connection of pg_restore -j at the same moment).  A loaded counter row
 * must then merge with the existing one, keeping the higher value, whatever
 * the order and parallelism of the loads.  So this BEFORE INSERT trigger
 * raises the counter through counters.c, which creates or advances the row
 * with the storage layer's protocol (race-free against any producer), and
 * returns NULL: the statement itself inserts nothing.  ordering.post_restore()
 * raises counters to the rows of the attached tables the same way.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "counters.h"
#include "owned.h"
#include "triggers.h"

PG_FUNCTION_INFO_V1(ordering_sequences_load);

static const TriggerProtocol sequences_load_protocol = {
	"ordering.sequences_load()", TRIGGER_EVENT_INSERT, false, 0, 0, "()",
	"It belongs on ordering.sequences, where the extension installs it."
};

/*
 * ordering.sequences_load(): BEFORE INSERT FOR EACH ROW on
 * ordering.sequences (file header).
 */
Datum
ordering_sequences_load(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	HeapTuple	tuple;
	bool		isnull[3];
	Datum		values[3];

	ordering_trigger_check(fcinfo, &sequences_load_protocol);
	desc = RelationGetDescr(trigdata->tg_relation);
	tuple = trigdata->tg_trigtuple;
	for (int i = 0; i < 3; i++)
		values[i] = heap_getattr(tuple, i + 1, desc, &isnull[i]);
	if (isnull[0] || isnull[1] || isnull[2])
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("a counter row needs a stream, a resource and a value")));
	if (DatumGetInt64(values[2]) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("a counter cannot be negative, got " INT64_FORMAT,
						DatumGetInt64(values[2]))));
	counter_raise(DatumGetTextPP(values[SEQUENCES_STREAM - 1]),
				  DatumGetTextPP(values[SEQUENCES_RESOURCE - 1]),
				  DatumGetInt64(values[SEQUENCES_LAST_SEQ - 1]));
	return PointerGetDatum(NULL);
}
