/*-------------------------------------------------------------------------
 *
 * producer.c
 *	  Producer side: the sequencing trigger and its companions, and
 *	  next_sequence().
 *
 * ordering.attach() puts three triggers on a table (see attached.c):
 *
 *	- ordering.sequence_trigger(), BEFORE INSERT FOR EACH ROW: a row whose
 *	  sequence column is NULL gets the next number of its (stream,
 *	  resource); a row that supplies one asserts it (it must be the next,
 *	  else SQLSTATE 40001), whatever the command: INSERT, INSERT ... SELECT,
 *	  COPY, a function called from COPY TO.  When ON CONFLICT or a later
 *	  BEFORE trigger may still skip the row, the number stays provisional
 *	  until the row is stored (provisional.c).
 *	- a companion AFTER INSERT trigger whose WHEN clause,
 *	  ordering.sequence_stored(), reports each stored row whose number was
 *	  provisional.  A stored row is counted, and queues the relay wake-up
 *	  of a table that asked for one (wakeup.c).  Where a later BEFORE
 *	  trigger may have changed the row, the clause is true and the
 *	  companion fires with the row as stored: if its resource or number is
 *	  not what our trigger handed out, the statement fails with SQLSTATE
 *	  27000 (provisional.c), so a number never goes to another resource.
 *	- ordering.sequence_guard(), BEFORE UPDATE OR DELETE FOR EACH ROW: a
 *	  sequenced row keeps its number and its resource; and a row that an
 *	  UPDATE moves to another partition (PostgreSQL deletes it from the old
 *	  partition, firing BEFORE UPDATE then BEFORE DELETE there, and inserts
 *	  it into the new one) keeps its number: the same event, not a new one.
 *	  The guard recognizes the UPDATE-then-DELETE of one tuple and lets the
 *	  insert that follows in the same command through without a new number.
 *
 * On a table that Citus distributes, attach() adds a fourth argument to
 * the sequencing trigger, the stream's counter table, and the trigger
 * counts in its shard next to the row's shard instead of in
 * ordering.sequences (citus.c); everything else here is the same.
 *
 * The resource is keyed by resource_key.c's text, which no session setting
 * changes.  During a restore (ordering.restoring, set by
 * ordering.pre_restore()) supplied numbers are restored history: the rows
 * keep them and the counters are left to ordering.post_restore(); a row
 * that asks for a new number is refused.  The registry of attached tables
 * is not consulted then (pg_restore -j may load it after the tables):
 * ordering.post_restore() checks it against the triggers instead.
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

#include "attached.h"
#include "citus.h"
#include "counters.h"
#include "ordering.h"
#include "owned.h"
#include "provisional.h"
#include "resource_key.h"
#include "stats.h"
#include "triggers.h"
#include "wakeup.h"

PG_FUNCTION_INFO_V1(ordering_sequence_trigger);
PG_FUNCTION_INFO_V1(ordering_sequence_stored);
PG_FUNCTION_INFO_V1(ordering_sequence_stored_trigger);
PG_FUNCTION_INFO_V1(ordering_sequence_guard);
PG_FUNCTION_INFO_V1(ordering_next_sequence);

static const TriggerProtocol sequence_trigger_protocol = {
	"ordering.sequence_trigger()", TRIGGER_EVENT_INSERT, false, 2, 4,
	"(resource_column, sequence_column [, stream [, counter_table]])",
	"Use ordering.attach() to install it."
};

static const TriggerProtocol sequence_guard_protocol = {
	"ordering.sequence_guard()", TRIGGER_EVENT_UPDATE, true, 2, 3,
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
	text	   *resource;		/* its key (resource_key.c) */
	bool		seq_isnull;
	int64		seq;
} SequencedRow;

/*
 * A row that an UPDATE is moving between partitions, recognized by the
 * guard (file header): armed by BEFORE DELETE right after BEFORE UPDATE of
 * the same tuple, consumed by the BEFORE INSERT that follows in the same
 * command.
 */
static struct
{
	Oid			updating_rel;	/* BEFORE UPDATE of this tuple ... */
	ItemPointerData updating_tid;
	bool		armed;			/* ... then BEFORE DELETE of it */
	CommandId	cid;
	text	   *stream;			/* the moving row, in TopMemoryContext */
	text	   *resource;
	int64		seq;
}			moving;

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
 * Read what a sequencing trigger needs from a row (tuple) of the trigger's
 * relation.
 */
static void
read_row(TriggerData *trigdata, const TriggerProtocol *protocol,
		 HeapTuple tuple, SequencedRow *row)
{
	Relation	rel = trigdata->tg_relation;
	TupleDesc	desc = RelationGetDescr(rel);
	char	  **args = trigdata->tg_trigger->tgargs;
	Form_pg_attribute resatt = ordering_trigger_column(rel, args[0], protocol);
	Form_pg_attribute seqatt = ordering_trigger_column(rel, args[1], protocol);
	Datum		resource;
	bool		isnull;

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
	row->stream = trigger_stream(trigdata);
	row->resattno = resatt->attnum;
	row->seqattno = seqatt->attnum;

	resource = heap_getattr(tuple, row->resattno, desc, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("cannot sequence a row of relation \"%s\" whose resource column \"%s\" is null",
						RelationGetRelationName(rel), args[0]),
				 errdetail("Sequence numbers are counted per resource: a row without a resource has none to take a number from.")));
	row->resource = ordering_resource_key_of(resource, resatt->atttypid);
	row->seq = DatumGetInt64(heap_getattr(tuple, row->seqattno, desc,
										  &row->seq_isnull));
}

/*
 * Is this the insert of the row the guard saw moving (file header)?  Then
 * it keeps its number.
 */
static bool
take_moving_row(const SequencedRow *row)
{
	bool		match;

	if (!moving.armed)
		return false;
	match = moving.cid == GetCurrentCommandId(false) && moving.seq == row->seq &&
		ordering_text_equal(moving.stream, row->stream) &&
		ordering_text_equal(moving.resource, row->resource);
	if (match)
		moving.armed = false;
	return match;
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
 * A row that got a number is stored: the number counts as assigned, and
 * the stream's relay wake-up is queued if armed.
 */
static void
report_stored(text *stream, text *resource)
{
	char	   *name = text_to_cstring(stream);
	char	   *key = text_to_cstring(resource);

	ordering_stats_sequence_assigned(name);
	ordering_stats_hot_resource('s', name, key, 1);
	ordering_wakeup_stored(stream);
	pfree(name);
	pfree(key);
}

/*
 * The row got number "seq": provisional while the row may still be skipped
 * (provisional.c), else as good as stored (were the statement to fail, its
 * rollback would give the number back and forget the report).
 */
static void
numbered(const SequencedRow *row, const AttachedTable *table, int64 seq)
{
	if (provisional_row_may_be_skipped(table->later_trigger))
		provisional_record(table->counters, row->stream, row->resource, seq,
						   table->later_trigger);
	else
		report_stored(row->stream, row->resource);
}

/*
 * ordering.sequence_trigger(): BEFORE INSERT FOR EACH ROW (file header).
 */
Datum
ordering_sequence_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	HeapTuple	tuple;
	SequencedRow row;
	AttachedTable table;
	Datum		seq;
	bool		isnull = false;
	int			column;

	ordering_trigger_check(fcinfo, &sequence_trigger_protocol);
	tuple = trigdata->tg_trigtuple;
	read_row(trigdata, &sequence_trigger_protocol, tuple, &row);

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

	attached_check(trigdata->tg_relation, trigdata->tg_trigger, row.stream,
				   &table);
	if (OidIsValid(table.counters))
		citus_check_shard_range(trigdata->tg_relation, &table, row.resattno,
								row.resource);
	if (table.wake_relays)
		ordering_wakeup_arm(row.stream);

	/* the rows before this one at this level are decided: settle them */
	provisional_settle_level();
	if (!row.seq_isnull)
	{
		if (take_moving_row(&row))
			return PointerGetDatum(tuple);
		counter_expect_in(table.counters, row.stream, row.resource, row.seq,
						  counter_source());
		numbered(&row, &table, row.seq);
		return PointerGetDatum(tuple);
	}

	seq = Int64GetDatum(counter_next_in(table.counters, row.stream,
										row.resource));
	numbered(&row, &table, DatumGetInt64(seq));
	column = row.seqattno;
	return PointerGetDatum(heap_modify_tuple_by_cols(tuple,
													 RelationGetDescr(trigdata->tg_relation),
													 1, &column, &seq, &isnull));
}

/*
 * ordering.sequence_stored() returns boolean: the WHEN clause of the
 * companion AFTER INSERT trigger.  Evaluated right after a row is stored:
 * its number is no longer provisional, and counts as assigned.  False, so
 * that no trigger event is queued, except for a row that a later BEFORE
 * trigger may have changed: the companion then fires to check it (file
 * header).
 */
Datum
ordering_sequence_stored(PG_FUNCTION_ARGS)
{
	Provisional *p = provisional_stored();

	if (p != NULL)
	{
		report_stored(p->stream, p->resource);
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
				 errmsg("ordering.sequence_stored_trigger() must be fired AFTER INSERT FOR EACH ROW"),
				 errdetail("It is created by ordering.attach() with the WHEN clause ordering.sequence_stored()."),
				 errhint("Use ordering.attach() to install it.")));
}

/*
 * ordering.sequence_stored_trigger(): the function of the companion
 * trigger, fired only for a stored row that a later BEFORE trigger may have
 * changed (its WHEN clause says which): the row must carry the resource and
 * number our trigger handed out (file header).
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
	read_row(&sequencing, &sequence_trigger_protocol, trigdata->tg_trigtuple,
			 &row);
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
 * is moving to another partition (file header).
 */
static void
arm_moving(TriggerData *trigdata)
{
	SequencedRow row;
	MemoryContext old;

	read_row(trigdata, &sequence_guard_protocol, trigdata->tg_trigtuple, &row);
	if (row.seq_isnull)
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	if (moving.stream != NULL)
		pfree(moving.stream);
	if (moving.resource != NULL)
		pfree(moving.resource);
	moving.stream = (text *) PG_DETOAST_DATUM_COPY(PointerGetDatum(row.stream));
	moving.resource = (text *) PG_DETOAST_DATUM_COPY(PointerGetDatum(row.resource));
	MemoryContextSwitchTo(old);
	moving.seq = row.seq;
	moving.cid = GetCurrentCommandId(false);
	moving.armed = true;
}

/*
 * ordering.sequence_guard(): BEFORE UPDATE OR DELETE FOR EACH ROW (file
 * header).
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
		if (moving.updating_rel == RelationGetRelid(rel) &&
			ItemPointerEquals(&moving.updating_tid, &trigdata->tg_trigtuple->t_self))
			arm_moving(trigdata);
		moving.updating_rel = InvalidOid;
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
	moving.updating_rel = RelationGetRelid(rel);
	moving.updating_tid = trigdata->tg_trigtuple->t_self;
	return PointerGetDatum(trigdata->tg_newtuple);
}

/*
 * ordering.next_sequence(stream text, resource_id text) returns bigint
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
	/* a distributed stream's counter is on the node of its shard */
	if (!citus_next_sequence(PG_GETARG_TEXT_PP(0), PG_GETARG_TEXT_PP(1), &seq))
		seq = counter_next(PG_GETARG_TEXT_PP(0), PG_GETARG_TEXT_PP(1));
	ordering_stats_sequence_assigned(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	ordering_stats_hot_resource('s', text_to_cstring(PG_GETARG_TEXT_PP(0)),
								text_to_cstring(PG_GETARG_TEXT_PP(1)), 1);
	PG_RETURN_INT64(seq);
}
