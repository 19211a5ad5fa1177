/*-------------------------------------------------------------------------
 *
 * restore.c
 *	  Loading counter rows: ordering_internal.sequences_load(), the trigger
 *	  through which every row inserted into ordering.sequences by a statement
 *	  goes.
 *
 * pg_dump dumps ordering.sequences, and pg_restore loads it with COPY, in a
 * database where producing may already have created counters (a data-only
 * restore into a database that produced; ordering.outbox loaded by another
 * connection of pg_restore -j at the same moment).  A loaded counter row
 * must then merge with the existing one, keeping the higher value, whatever
 * the order and parallelism of the loads.  So this BEFORE INSERT trigger
 * raises the counter through counters.c, which creates or advances the row
 * with the storage layer's protocol (race-free against any producer), and
 * returns NULL: the statement itself inserts nothing.
 *
 * ordering_internal.seed_counters() raises the counters of a table's stream
 * to the highest number each resource has in the table, the same way:
 * ordering.post_restore() calls it for every attached table, and
 * ordering.attach() for the table it attaches, which may hold numbers
 * already (attached before, its counters dropped with the extension or not
 * restored).  It reads the table as the caller, who needs what attach()
 * needs (the TRIGGER privilege on it), and writes the counters through
 * counters.c, so a producer needs no write privilege on ordering.sequences;
 * the stream is the one the table's sequencing trigger names, so a caller
 * can raise no other stream's counters.  A counter is never lowered.
 *
 * Layer: SQL entry points of a restore; they call attached.c, counters.c,
 * triggers.c and the storage layer.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "attached.h"
#include "counters.h"
#include "owned.h"
#include "triggers.h"

PG_FUNCTION_INFO_V1(ordering_sequences_load);
PG_FUNCTION_INFO_V1(ordering_seed_counters);

/* Rows of the seeding query fetched at a time */
#define SEED_FETCH			1000

static const TriggerProtocol sequences_load_protocol = {
	"ordering_internal.sequences_load()", TRIGGER_EVENT_INSERT, false, 0, 0, "()",
	"It belongs on ordering.sequences, where the extension installs it."
};

/*
 * ordering_internal.sequences_load(): BEFORE INSERT FOR EACH ROW on
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

/*
 * The query that seeds the counters of a table: per resource key, the
 * highest number.
 */
static char *
seed_query(Relation rel, const char *resource_column,
		   const char *sequence_column)
{
	const char *res = quote_identifier(resource_column);
	const char *seq = quote_identifier(sequence_column);

	return psprintf("SELECT ordering.resource_key(t.%s), pg_catalog.max(t.%s)"
					"  FROM %s t"
					" WHERE t.%s IS NOT NULL AND t.%s IS NOT NULL"
					" GROUP BY 1",
					res, seq,
					quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
											   RelationGetRelationName(rel)),
					res, seq);
}

/*
 * ordering_internal.seed_counters(tbl regclass) returns bigint: raises the
 * counter of every resource of the table to its highest number there (file
 * header); returns how many resources the table has.
 */
Datum
ordering_seed_counters(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Relation	rel = relation_open(relid, AccessShareLock);
	char	   *resource_column;
	char	   *sequence_column;
	char	   *stream;
	char	   *query;
	text	   *stream_text;
	Portal		portal;
	AclResult	aclresult;
	int64		resources = 0;

	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_TRIGGER);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));
	if (!attached_trigger_args(rel, &resource_column, &sequence_column, &stream))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" has no sequencing trigger",
						RelationGetRelationName(rel)),
				 errhint("Call ordering.attach() on it.")));
	owned_prevent_write("ordering_internal.seed_counters()");
	query = seed_query(rel, resource_column, sequence_column);
	stream_text = cstring_to_text(stream);
	relation_close(rel, NoLock);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	portal = SPI_cursor_open_with_args(NULL, query, 0, NULL, NULL, NULL, true, 0);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, SEED_FETCH);
		if (SPI_processed == 0)
			break;
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tuple = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			bool		isnull;
			Datum		key = SPI_getbinval(tuple, desc, 1, &isnull);
			int64		highest = DatumGetInt64(SPI_getbinval(tuple, desc, 2, &isnull));

			resources++;
			if (highest > 0)
				counter_raise(stream_text, DatumGetTextPP(key), highest);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_finish();
	PG_RETURN_INT64(resources);
}
