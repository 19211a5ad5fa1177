/*-------------------------------------------------------------------------
 *
 * triggers.c
 *	  The checks shared by the extension's C triggers (README.md, "Trigger
 *	  protocol").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/rel.h"

#include "triggers.h"

/*
 * Complain unless called by the trigger manager, BEFORE the protocol's event,
 * FOR EACH ROW, with an acceptable number of arguments.
 */
void
ordering_trigger_check(FunctionCallInfo fcinfo, const TriggerProtocol *protocol)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TriggerEvent op;
	const char *event_name = protocol->event == TRIGGER_EVENT_INSERT ?
	"INSERT" : protocol->or_delete ? "UPDATE OR DELETE" : "UPDATE";

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s was not called by the trigger manager",
						protocol->funcname)));
	op = trigdata->tg_event & TRIGGER_EVENT_OPMASK;
	if (!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		(op != protocol->event &&
		 !(protocol->or_delete && op == TRIGGER_EVENT_DELETE)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s must be fired BEFORE %s FOR EACH ROW",
						protocol->funcname, event_name),
				 protocol->hint ? errhint("%s", protocol->hint) : 0));
	if (trigdata->tg_trigger->tgnargs < protocol->minargs ||
		trigdata->tg_trigger->tgnargs > protocol->maxargs)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s takes the arguments %s",
						protocol->funcname, protocol->arglist),
				 protocol->hint ? errhint("%s", protocol->hint) : 0));
}

/*
 * The live column of the trigger's table with this name.
 */
Form_pg_attribute
ordering_trigger_column(Relation rel, const char *name,
						const TriggerProtocol *protocol)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return att;
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("column \"%s\" of relation \"%s\" does not exist",
					name, RelationGetRelationName(rel)),
			 errcontext("%s on relation \"%s\"", protocol->funcname,
						RelationGetRelationName(rel))));
	return NULL;				/* keep compiler quiet */
}
