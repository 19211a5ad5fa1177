/*-------------------------------------------------------------------------
 *
 * newer_only.c
 *	  ordering.newer_only(): a BEFORE UPDATE trigger that makes a user's
 *	  projection table stale-safe (README.md, "Projections").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "stats.h"
#include "triggers.h"

PG_FUNCTION_INFO_V1(ordering_newer_only);

static const TriggerProtocol newer_only_protocol = {
	"ordering.newer_only()", TRIGGER_EVENT_UPDATE, false, 1, 2,
	"(version_column [, consumer])", NULL
};

/*
 * Complain unless we are a BEFORE UPDATE FOR EACH ROW trigger with the
 * arguments (version_column [, consumer]).
 */
static void
check_trigger_protocol(FunctionCallInfo fcinfo)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	ordering_trigger_check(fcinfo, &newer_only_protocol);
	if (trigdata->tg_trigger->tgnargs == 2 &&
		trigdata->tg_trigger->tgargs[1][0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("consumer name of ordering.newer_only() must not be empty")));
}

/*
 * The attribute number of the version column; it must be an integer type.
 */
static AttrNumber
version_column(Relation rel, const char *name, Oid *typid)
{
	Form_pg_attribute att = ordering_trigger_column(rel, name, &newer_only_protocol);

	if (att->atttypid != INT2OID && att->atttypid != INT4OID &&
		att->atttypid != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("version column \"%s\" of relation \"%s\" must be of type smallint, integer or bigint, not %s",
						name, RelationGetRelationName(rel),
						format_type_be(att->atttypid))));
	*typid = att->atttypid;
	return att->attnum;
}

/*
 * A version datum of one of the integer types as int64.
 */
static int64
version_value(Datum value, Oid typid)
{
	switch (typid)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		default:
			return DatumGetInt64(value);
	}
}

/*
 * ordering.newer_only(): BEFORE UPDATE FOR EACH ROW.
 *
 * Returns the new row when its version is greater than the stored one, else
 * NULL (the update of this row is skipped).
 */
Datum
ordering_newer_only(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	TupleDesc	desc;
	const char *column;
	const char *consumer;
	AttrNumber	attnum;
	Oid			typid;
	Datum		value;
	bool		isnull;
	int64		newversion;
	int64		oldversion;
	bool		newer;

	check_trigger_protocol(fcinfo);
	rel = trigdata->tg_relation;
	desc = RelationGetDescr(rel);
	column = trigdata->tg_trigger->tgargs[0];
	consumer = trigdata->tg_trigger->tgnargs == 2 ?
		trigdata->tg_trigger->tgargs[1] : NULL;
	attnum = version_column(rel, column, &typid);

	value = heap_getattr(trigdata->tg_newtuple, attnum, desc, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("null value in version column \"%s\" of relation \"%s\"",
						column, RelationGetRelationName(rel)),
				 errdetail("ordering.newer_only() needs a version to compare.")));
	newversion = version_value(value, typid);

	value = heap_getattr(trigdata->tg_trigtuple, attnum, desc, &isnull);
	oldversion = isnull ? 0 : version_value(value, typid);
	newer = isnull || newversion > oldversion;

	if (consumer != NULL)
	{
		ordering_stats_count(consumer, ORDERING_EVENT_CONSUMED, 1);
		ordering_stats_count(consumer,
							 newer ? ORDERING_EVENT_APPLIED :
							 newversion == oldversion ? ORDERING_EVENT_DUPLICATE :
							 ORDERING_EVENT_STALE, 1);
	}
	if (!newer)
		return PointerGetDatum(NULL);
	return PointerGetDatum(trigdata->tg_newtuple);
}
