/*-------------------------------------------------------------------------
 *
 * restore.c
 *	  Restored counters: the trigger that loads counter rows, and the seeding
 *	  of a table's stream from its rows (README.md, "Restore").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "citus.h"
#include "owned.h"
#include "producer.h"
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
 * ordering.sequences: raises the counter of the row a statement inserts,
 * and inserts nothing itself (README.md).
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
 * Refuse to raise the counters of "stream" from "rel" unless attach() would
 * (README.md).
 */
static void
check_may_seed(Relation rel, const char *stream, const char *resource_column,
			   const char *sequence_column)
{
	OwnedRel	attachments;
	text	   *stream_text = cstring_to_text(stream);
	Oid			other;
	Oid			owner;
	AttrNumber	seqattno;

	owned_open(OWNED_ATTACHMENTS, AccessShareLock, &attachments);
	owner = attached_foreign_owner(&attachments, RelationGetRelid(rel),
								   stream_text, SnapshotSelf, &other);
	owned_close(&attachments);
	if (OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to raise the counters of stream \"%s\"",
						stream),
				 errdetail("Stream \"%s\" numbers the rows of relation \"%s\", owned by role \"%s\".",
						   stream, get_rel_name(other),
						   GetUserNameFromId(owner, false))));
	if (!attached_registered_as(rel, stream, resource_column, sequence_column))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" is not attached to stream \"%s\" on columns \"%s\" and \"%s\"",
						RelationGetRelationName(rel), stream, resource_column,
						sequence_column),
				 errdetail("Its sequencing trigger names them, but ordering.attachments does not register it so."),
				 errhint("Use ordering.attach().")));
	seqattno = get_attnum(RelationGetRelid(rel), sequence_column);
	if (seqattno == InvalidAttrNumber ||
		get_atttype(RelationGetRelid(rel), seqattno) != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("sequence column \"%s\" of relation \"%s\" must be of type bigint",
						sequence_column, RelationGetRelationName(rel))));
	ordering_resource_column_check(RelationGetRelid(rel), resource_column);
}

/*
 * ordering_internal.seed_counters(tbl regclass) returns bigint: raises the
 * counter of every resource of the table to its highest number there (README.md);
 * returns how many resources the table has (NULL for a stream
 * distributed by Citus, whose resources are counted on its nodes).
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
	Oid			counters;
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
	check_may_seed(rel, stream, resource_column, sequence_column);
	stream_text = cstring_to_text(stream);
	counters = citus_stream_counter_table(stream_text);
	if (OidIsValid(counters))
	{
		citus_raise_counters(rel, stream_text, resource_column,
							 sequence_column, counters);
		relation_close(rel, NoLock);
		PG_RETURN_NULL();
	}
	query = seed_query(rel, resource_column, sequence_column);
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
