/*-------------------------------------------------------------------------
 *
 * sequencing.c
 *	  The sequencing trigger, its companion and its guard, and
 *	  next_sequence() and last_sequence() (README.md, "The sequencing
 *	  trigger").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "tcop/pquery.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/rel.h"

#include "owned.h"
#include "producer.h"
#include "settings.h"
#include "stats.h"
#include "text_equal.h"
#include "triggers.h"

PG_FUNCTION_INFO_V1(ordering_sequence_trigger);
PG_FUNCTION_INFO_V1(ordering_sequence_stored);
PG_FUNCTION_INFO_V1(ordering_sequence_stored_trigger);
PG_FUNCTION_INFO_V1(ordering_sequence_guard);
PG_FUNCTION_INFO_V1(ordering_next_sequence);
PG_FUNCTION_INFO_V1(ordering_last_sequence);

static const TriggerProtocol sequence_trigger_protocol = {
	"ordering.sequence_trigger()", TRIGGER_EVENT_INSERT, false, 2, 4,
	"(resource_column, sequence_column [, stream [, counter_table]])",
	"Use ordering.attach() to install it."
};

static const TriggerProtocol sequence_guard_protocol = {
	"ordering_internal.sequence_guard()", TRIGGER_EVENT_UPDATE, true, 2, 3,
	"(resource_column, sequence_column [, stream])",
	"Use ordering.attach() to install it."
};

/*
 * What a sequencing trigger needs of its row: the stream, and the columns.
 */
typedef struct SequencedRow
{
	text	   *stream;
	AttrNumber	resattno;
	AttrNumber	seqattno;
	Datum		value;			/* the resource, ... */
	text	   *resource;		/* ... and its key (resource_key.c) */
	bool		seq_isnull;
	int64		seq;
} SequencedRow;

/*
 * The stream of a trigger: its third argument (ordering.attach() always
 * freezes it there), or the table's qualified name.
 */
static text *
trigger_stream(TriggerData *trigdata)
{
	Relation	rel = trigdata->tg_relation;

	if (trigdata->tg_trigger->tgnargs >= 3)
		return cstring_to_text(trigdata->tg_trigger->tgargs[2]);
	return cstring_to_text(psprintf("%s.%s",
									get_namespace_name(RelationGetNamespace(rel)),
									RelationGetRelationName(rel)));
}

/*
 * What read_row() learns of a trigger and its relation, once per statement:
 * kept in the trigger function's fn_extra, since the executor keeps one
 * FmgrInfo per trigger of each result relation for the statement, whose
 * lock keeps the columns and the triggers as they are.
 */
typedef struct TriggerShape
{
	Oid			tgoid;			/* the trigger and relation it is for */
	Oid			relid;
	AttrNumber	resattno;
	AttrNumber	seqattno;
	Oid			restype;
	bool		key_is_value;	/* the resource's value is its key */
	text	   *stream;
	bool		checked;		/* attached_check() passed, and said: */
	AttachedTable table;
} TriggerShape;

/*
 * The shape of the trigger being called (see TriggerShape).
 */
static TriggerShape *
trigger_shape(FmgrInfo *flinfo, TriggerData *trigdata,
			  const TriggerProtocol *protocol)
{
	Relation	rel = trigdata->tg_relation;
	char	  **args = trigdata->tg_trigger->tgargs;
	TriggerShape *shape = (TriggerShape *) flinfo->fn_extra;
	Form_pg_attribute resatt;
	Form_pg_attribute seqatt;
	MemoryContext old;

	if (shape != NULL && shape->tgoid == trigdata->tg_trigger->tgoid &&
		shape->relid == RelationGetRelid(rel))
		return shape;

	resatt = ordering_trigger_column(rel, args[0], protocol);
	seqatt = ordering_trigger_column(rel, args[1], protocol);
	if (seqatt->atttypid != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("sequence column \"%s\" of relation \"%s\" must be of type bigint",
						args[1], RelationGetRelationName(rel))));
	if (resatt->attgenerated != '\0' || seqatt->attgenerated != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("column \"%s\" of relation \"%s\" is a generated column",
						resatt->attgenerated != '\0' ? args[0] : args[1],
						RelationGetRelationName(rel)),
				 errdetail("A generated column has no value yet when a BEFORE trigger runs.")));

	old = MemoryContextSwitchTo(flinfo->fn_mcxt);
	shape = palloc(sizeof(TriggerShape));
	shape->tgoid = trigdata->tg_trigger->tgoid;
	shape->relid = RelationGetRelid(rel);
	shape->resattno = resatt->attnum;
	shape->seqattno = seqatt->attnum;
	shape->restype = resatt->atttypid;
	shape->key_is_value = ordering_resource_key_is_value(resatt->atttypid);
	shape->stream = trigger_stream(trigdata);
	shape->checked = false;
	MemoryContextSwitchTo(old);
	flinfo->fn_extra = shape;
	return shape;
}

/*
 * A row of the trigger's relation deformed once, when the trigger will
 * form it again with its number: its values (in buf when they fit).
 */
typedef struct DeformedRow
{
	Datum	   *values;
	bool	   *nulls;
	Datum		values_buf[32];
	bool		nulls_buf[32];
} DeformedRow;

/*
 * Read what a sequencing trigger needs from a row (tuple) of the trigger's
 * relation; from its deformed values if "deformed" is given.
 */
static void
read_row(TriggerShape *shape, TriggerData *trigdata, HeapTuple tuple,
		 DeformedRow *deformed, SequencedRow *row)
{
	Relation	rel = trigdata->tg_relation;
	TupleDesc	desc = RelationGetDescr(rel);
	Datum		resource;
	bool		isnull;

	row->stream = shape->stream;
	row->resattno = shape->resattno;
	row->seqattno = shape->seqattno;

	if (deformed != NULL)
	{
		resource = deformed->values[row->resattno - 1];
		isnull = deformed->nulls[row->resattno - 1];
	}
	else
		resource = heap_getattr(tuple, row->resattno, desc, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("cannot sequence a row of relation \"%s\" whose resource column \"%s\" is null",
						RelationGetRelationName(rel),
						trigdata->tg_trigger->tgargs[0]),
				 errdetail("Sequence numbers are counted per resource: a row without a resource has none to take a number from.")));
	row->value = resource;
	row->resource = shape->key_is_value ? DatumGetTextPP(resource) :
		ordering_resource_key_of(resource, shape->restype);
	if (deformed != NULL)
	{
		row->seq = DatumGetInt64(deformed->values[row->seqattno - 1]);
		row->seq_isnull = deformed->nulls[row->seqattno - 1];
	}
	else
		row->seq = DatumGetInt64(heap_getattr(tuple, row->seqattno, desc,
											  &row->seq_isnull));
}

/*
 * Deform a row that will be formed again with its number (see DeformedRow).
 */
static void
deform_row(HeapTuple tuple, TupleDesc desc, DeformedRow *deformed)
{
	if (desc->natts <= lengthof(deformed->values_buf))
	{
		deformed->values = deformed->values_buf;
		deformed->nulls = deformed->nulls_buf;
	}
	else
	{
		deformed->values = palloc(desc->natts * sizeof(Datum));
		deformed->nulls = palloc(desc->natts * sizeof(bool));
	}
	heap_deform_tuple(tuple, desc, deformed->values, deformed->nulls);
}

/*
 * The row with its number: heap_modify_tuple_by_cols() on values deformed
 * already.
 */
static HeapTuple
numbered_row(HeapTuple tuple, TupleDesc desc, DeformedRow *deformed,
			 AttrNumber seqattno, int64 seq)
{
	HeapTuple	newtuple;

	deformed->values[seqattno - 1] = Int64GetDatum(seq);
	deformed->nulls[seqattno - 1] = false;
	newtuple = heap_form_tuple(desc, deformed->values, deformed->nulls);
	newtuple->t_data->t_ctid = tuple->t_data->t_ctid;
	newtuple->t_self = tuple->t_self;
	newtuple->t_tableOid = tuple->t_tableOid;
	return newtuple;
}

/*
 * Which statement supplied a row's number (counters.h): the top-level
 * statement of the portal running, when the row is its own (a COPY, or an
 * INSERT of a dump) rather than one a function inserts.  Only for the hint
 * of an error.
 */
static CounterSource
counter_source(void)
{
	if (ActivePortal == NULL)
		return COUNTER_SOURCE_OTHER;
	if (ActivePortal->commandTag == CMDTAG_COPY)
		return COUNTER_SOURCE_COPY;
	if (ActivePortal->commandTag == CMDTAG_INSERT)
		return COUNTER_SOURCE_INSERT;
	return COUNTER_SOURCE_OTHER;
}

/*
 * Refuse a row that asks for a new number during a restore.
 */
static void
refuse_while_restoring(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot assign %s while the database is being restored",
					what),
			 errdetail("ordering.restoring is on: only rows that carry their sequence number are accepted."),
			 errhint("Call ordering.post_restore() once the restore is complete.")));
}

/*
 * Give the row a number: the one it carries (asserted) or the next.  It stays
 * provisional while the row may still be skipped (provisional.c), else it
 * is as good as stored (were the statement to fail, its rollback would give
 * the number back and forget the report), and reported now or, when the
 * statement holds the counter, with it (counters.c).
 */
static int64
number_row(const SequencedRow *row, const AttachedTable *table, bool asserted)
{
	bool		may_skip = provisional_row_may_be_skipped(table->later_trigger);
	bool		counted;
	int64		seq;

	seq = counter_take_row_in(table->counters, row->stream, row->resource,
							  asserted, row->seq, counter_source(), !may_skip,
							  &counted);
	if (may_skip)
		provisional_record(table->counters, row->stream, row->resource, seq,
						   table->later_trigger);
	else if (!counted)
		counter_report_stored(row->stream, row->resource, 1);
	return seq;
}

/*
 * A row that logical replication applies (session_replication_role is
 * replica in its apply worker; our triggers fire there when enabled ALWAYS)
 * keeps the publisher's number, and its counter follows it up, never down,
 * as a restore's counters do: local producers continue after the highest
 * number applied (docs/replicas.md).  True for such a row, whose counter
 * is then raised.  A stream Citus distributes is numbered on its shards and
 * is left to the assertion as before.
 */
static bool
applied_by_subscription(const SequencedRow *row, const AttachedTable *table)
{
	if (SessionReplicationRole != SESSION_REPLICATION_ROLE_REPLICA ||
		OidIsValid(table->counters))
		return false;
	if (row->seq < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sequence number must be positive, got " INT64_FORMAT,
						row->seq)));
	counter_raise(row->stream, row->resource, row->seq);
	return true;
}

/*
 * ordering.sequence_trigger(): BEFORE INSERT FOR EACH ROW: gives the row
 * the next number of its (stream, resource), or checks the one it carries
 * (README.md).
 */
Datum
ordering_sequence_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	TriggerShape *shape;
	HeapTuple	tuple;
	DeformedRow deformed;
	bool		asks;
	SequencedRow row;
	AttachedTable table;
	int64		seq;

	ordering_trigger_check(fcinfo, &sequence_trigger_protocol);
	tuple = trigdata->tg_trigtuple;
	desc = RelationGetDescr(trigdata->tg_relation);
	shape = trigger_shape(fcinfo->flinfo, trigdata, &sequence_trigger_protocol);
	/* a row that asks for a number is formed again: deform it once */
	asks = heap_attisnull(tuple, shape->seqattno, desc);
	if (asks)
		deform_row(tuple, desc, &deformed);
	read_row(shape, trigdata, tuple, asks ? &deformed : NULL, &row);

	/*
	 * A restore loads rows that carry their numbers and touches no counter,
	 * so the registry of attached tables is not needed here; it may not even
	 * be loaded yet (pg_restore -j loads big tables first).
	 * ordering.post_restore() checks that every table with a sequencing
	 * trigger is registered with the trigger's stream before it raises the
	 * counters and ends restore mode.
	 */
	if (ordering_restoring)
	{
		if (row.seq_isnull)
			refuse_while_restoring("sequence numbers");
		if (row.seq < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("sequence number must be positive, got " INT64_FORMAT,
							row.seq)));
		return PointerGetDatum(tuple);
	}

	/* the statement's lock keeps the verdict (attached.c): once is enough */
	if (!shape->checked)
	{
		attached_check(trigdata->tg_relation, trigdata->tg_trigger,
					   row.stream, &shape->table);
		shape->checked = true;
	}
	table = shape->table;
	attached_check_resource(trigdata->tg_relation, &table, row.resattno,
							row.value, row.resource);
	if (table.wake_relays)
		ordering_wakeup_arm(row.stream);

	/* the rows before this one at this level are decided: settle them */
	provisional_settle_level();
	if (!asks)
	{
		/* the row an UPDATE moves keeps its number (README.md) */
		if (provisional_move_take(row.stream, row.resource, row.seq))
			return PointerGetDatum(tuple);
		if (applied_by_subscription(&row, &table))
			return PointerGetDatum(tuple);
		(void) number_row(&row, &table, true);
		return PointerGetDatum(tuple);
	}

	seq = number_row(&row, &table, false);
	return PointerGetDatum(numbered_row(tuple, desc, &deformed, row.seqattno,
										seq));
}

/*
 * ordering_internal.sequence_stored() returns boolean: the WHEN clause of the
 * companion AFTER INSERT trigger.  Evaluated right after a row is stored:
 * its number is no longer provisional, and counts as assigned.  False, so
 * that no trigger event is queued, except for a row that a later BEFORE
 * trigger may have changed: the companion then fires to check it
 * (README.md).
 */
Datum
ordering_sequence_stored(PG_FUNCTION_ARGS)
{
	Provisional *p = provisional_stored();

	if (p != NULL)
	{
		counter_report_stored(p->stream, p->resource, 1);
		if (p->check_stored)
		{
			provisional_await_check(p);
			PG_RETURN_BOOL(true);
		}
		provisional_free(p);
	}
	PG_RETURN_BOOL(false);
}

/*
 * Refuse a use of the companion's function other than the one its WHEN
 * clause lets fire: AFTER INSERT FOR EACH ROW.
 */
static void
check_companion_protocol(FunctionCallInfo fcinfo)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("ordering_internal.sequence_stored_trigger() must be fired AFTER INSERT FOR EACH ROW"),
				 errdetail("It is created by ordering.attach() with the WHEN clause ordering_internal.sequence_stored()."),
				 errhint("Use ordering.attach() to install it.")));
}

/*
 * ordering_internal.sequence_stored_trigger(): the function of the companion
 * trigger, fired only for a stored row that a later BEFORE trigger may have
 * changed (its WHEN clause says which): the row must carry the resource and
 * number our trigger handed out (README.md).
 */
Datum
ordering_sequence_stored_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TriggerData sequencing;
	SequencedRow row;
	text	   *given_to = NULL;

	check_companion_protocol(fcinfo);
	sequencing = *trigdata;
	sequencing.tg_trigger = attached_sequencing_trigger(trigdata->tg_relation);
	read_row(trigger_shape(fcinfo->flinfo, &sequencing,
						   &sequence_trigger_protocol),
			 &sequencing, trigdata->tg_trigtuple, NULL, &row);
	if (!row.seq_isnull &&
		provisional_check_stored(row.stream, row.resource, row.seq, &given_to))
		return PointerGetDatum(NULL);
	ereport(ERROR,
			(errcode(ERRCODE_TRIGGERED_DATA_CHANGE_VIOLATION),
			 errmsg("a BEFORE INSERT trigger that fires after ordering's changed the resource or the sequence number of a row of \"%s\"",
					RelationGetRelationName(trigdata->tg_relation)),
			 given_to != NULL ?
			 errdetail("Sequence number " INT64_FORMAT " of stream \"%s\" was handed to resource \"%s\", but the row was stored with resource \"%s\".",
					   row.seq, text_to_cstring(row.stream),
					   text_to_cstring(given_to), text_to_cstring(row.resource)) :
			 errdetail("The row was stored with resource \"%s\" and a sequence number that ordering did not hand to that resource.",
					   text_to_cstring(row.resource)),
			 errhint("Change the resource in a trigger that fires before \"%s\" (BEFORE triggers fire in the order of their names), or in the INSERT itself.",
					 sequencing.tg_trigger->tgname)));
	PG_RETURN_NULL();
}

/*
 * Do two rows of the same relation hold the same value in a column?
 */
static bool
same_column(HeapTuple a, HeapTuple b, TupleDesc desc, AttrNumber attno)
{
	Form_pg_attribute att = TupleDescAttr(desc, attno - 1);
	bool		anull;
	bool		bnull;
	Datum		ad = heap_getattr(a, attno, desc, &anull);
	Datum		bd = heap_getattr(b, attno, desc, &bnull);

	if (anull || bnull)
		return anull == bnull;
	return datumIsEqual(ad, bd, att->attbyval, att->attlen);
}

/*
 * Arm the guard for the row being deleted right after its BEFORE UPDATE: it
 * is moving to another partition (README.md).
 */
static void
arm_moving(FmgrInfo *flinfo, TriggerData *trigdata)
{
	SequencedRow row;

	read_row(trigger_shape(flinfo, trigdata, &sequence_guard_protocol),
			 trigdata, trigdata->tg_trigtuple, NULL, &row);
	if (!row.seq_isnull)
		provisional_move_arm(row.stream, row.resource, row.seq);
}

/*
 * ordering_internal.sequence_guard(): BEFORE UPDATE OR DELETE FOR EACH ROW:
 * keeps a sequenced row's resource and number, and lets a row that an UPDATE
 * moves to another partition keep its number (README.md).
 */
Datum
ordering_sequence_guard(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	char	  **args;

	ordering_trigger_check(fcinfo, &sequence_guard_protocol);
	rel = trigdata->tg_relation;
	args = trigdata->tg_trigger->tgargs;

	if (TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
	{
		if (provisional_move_delete(RelationGetRelid(rel),
									&trigdata->tg_trigtuple->t_self))
			arm_moving(fcinfo->flinfo, trigdata);
		return PointerGetDatum(trigdata->tg_trigtuple);
	}

	{
		TupleDesc	desc = RelationGetDescr(rel);
		AttrNumber	resattno = ordering_trigger_column(rel, args[0], &sequence_guard_protocol)->attnum;
		AttrNumber	seqattno = ordering_trigger_column(rel, args[1], &sequence_guard_protocol)->attnum;

		if (!same_column(trigdata->tg_trigtuple, trigdata->tg_newtuple, desc, resattno) ||
			!same_column(trigdata->tg_trigtuple, trigdata->tg_newtuple, desc, seqattno))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot change the resource or the sequence number of a row of \"%s\"",
							RelationGetRelationName(rel)),
					 errdetail("A sequenced row is an event with its place in its resource's sequence: columns \"%s\" and \"%s\" keep their values.",
							   args[0], args[1]),
					 errhint("Insert a new event instead.")));
	}
	provisional_move_update(RelationGetRelid(rel),
							&trigdata->tg_trigtuple->t_self);
	return PointerGetDatum(trigdata->tg_newtuple);
}

/*
 * ordering.next_sequence(stream text, resource_id text) returns bigint: the
 * next number of (stream, resource), for a producer that numbers its events
 * itself, in its transaction (counters.c).
 */
Datum
ordering_next_sequence(PG_FUNCTION_ARGS)
{
	int64		seq;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("stream must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("resource_id must not be null"),
				 errdetail("Every sequenced event needs a resource.")));
	owned_prevent_write("ordering.next_sequence()");
	if (ordering_restoring)
		refuse_while_restoring("sequence numbers");
	seq = counter_next_of_stream(PG_GETARG_TEXT_PP(0), PG_GETARG_TEXT_PP(1));
	ordering_stats_sequence_assigned(text_to_cstring(PG_GETARG_TEXT_PP(0)), 1);
	ordering_stats_hot_resource('s', text_to_cstring(PG_GETARG_TEXT_PP(0)),
								text_to_cstring(PG_GETARG_TEXT_PP(1)), 1);
	PG_RETURN_INT64(seq);
}

/*
 * ordering.last_sequence(stream text, resource_id text) returns bigint: the
 * highest number allocated that the caller's snapshot sees (counters.c).
 */
Datum
ordering_last_sequence(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("stream must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("resource_id must not be null")));
	PG_RETURN_INT64(counter_last_of_stream(PG_GETARG_TEXT_PP(0),
										   PG_GETARG_TEXT_PP(1)));
}
