/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  The writes of ordering.attachments, the registry of attached tables,
 *	  and who may make them (README.md, "The registry").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "citus.h"
#include "owned.h"
#include "producer.h"

PG_FUNCTION_INFO_V1(ordering_attachment_register);
PG_FUNCTION_INFO_V1(ordering_attachment_unregister);
PG_FUNCTION_INFO_V1(ordering_wake_relays);

/*
 * The sequencing trigger of "rel" (named ordering_sequence, calling
 * ordering.sequence_trigger()), or NULL.
 */
static Trigger *
sequencing_trigger(Relation rel)
{
	List	   *names = list_make1(makeString("ordering"));
	Oid			fn;

	names = lappend(names, makeString("sequence_trigger"));
	fn = LookupFuncName(names, 0, NULL, true);
	if (rel->trigdesc == NULL || !OidIsValid(fn))
		return NULL;
	for (int i = 0; i < rel->trigdesc->numtriggers; i++)
	{
		Trigger    *t = &rel->trigdesc->triggers[i];

		if (t->tgfoid == fn && strcmp(t->tgname, "ordering_sequence") == 0)
			return t;
	}
	return NULL;
}

/*
 * Open the caller's table the way CREATE and DROP TRIGGER lock it, with
 * the errors of a missing table.
 */
static Relation
open_table(Oid relid)
{
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	return table_open(relid, ShareRowExclusiveLock);
}

/*
 * Refuse unless the caller may use the stream: a member of the owner's
 * role of every other table the registry has for it (README.md).
 */
static void
check_stream_owner(OwnedRel *attachments, Oid relid, text *stream)
{
	Oid			other;
	Oid			owner = attached_foreign_owner(attachments, relid, stream,
											   SnapshotSelf, &other);

	if (OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to attach relation \"%s\" to stream \"%s\"",
						get_rel_name(relid), text_to_cstring(stream)),
				 errdetail("Stream \"%s\" numbers the rows of relation \"%s\", owned by role \"%s\": attaching another table to it takes numbers from it.",
						   text_to_cstring(stream), get_rel_name(other),
						   GetUserNameFromId(owner, false)),
				 errhint("Attach the table to a stream of its own, or have a member of role \"%s\" attach it.",
						 GetUserNameFromId(owner, false))));
}

/*
 * Forget the sequencing trigger's verdict on the table and its partitions
 * (attached.c caches it per relation).
 */
static void
invalidate_tables(Oid relid)
{
	ListCell   *lc;

	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
		CacheInvalidateRelcacheByRelid(lfirst_oid(lc));
}

/*
 * ordering_internal.attachment_register(tbl regclass, stream text,
 * resource_column name, sequence_column name) returns void
 *
 * Records "tbl" as attached to "stream" with these columns (README.md
 * for who may); a table attached before keeps its relay wake-up option.
 */
Datum
ordering_attachment_register(PG_FUNCTION_ARGS)
{
	Oid			relid;
	text	   *stream;
	Name		rescol;
	Name		seqcol;
	AclResult	aclresult;
	Relation	rel;
	Trigger    *trigger;
	OwnedRel	attachments;
	OwnedRow	row;
	Datum		key[1];
	Datum		values[OWNED_MAX_NATTS];
	bool		nulls[OWNED_MAX_NATTS];

	for (int i = 0; i < 4; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("table, stream, resource column and sequence column must not be null")));
	relid = PG_GETARG_OID(0);
	stream = PG_GETARG_TEXT_PP(1);
	rescol = PG_GETARG_NAME(2);
	seqcol = PG_GETARG_NAME(3);
	owned_prevent_write("ordering.attach()");

	rel = open_table(relid);
	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_TRIGGER);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));
	trigger = sequencing_trigger(rel);
	/* a fourth argument names the counter table of a Citus stream */
	if (trigger == NULL || trigger->tgnargs < 3 || trigger->tgnargs > 4 ||
		strcmp(trigger->tgargs[0], NameStr(*rescol)) != 0 ||
		strcmp(trigger->tgargs[1], NameStr(*seqcol)) != 0 ||
		strcmp(trigger->tgargs[2], text_to_cstring(stream)) != 0 ||
		(trigger->tgnargs == 4 &&
		 !citus_is_counter_argument(stream, trigger->tgargs[3])))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" has no sequencing trigger for stream \"%s\" on columns \"%s\" and \"%s\"",
						RelationGetRelationName(rel), text_to_cstring(stream),
						NameStr(*rescol), NameStr(*seqcol)),
				 errhint("Use ordering.attach().")));

	owned_open(OWNED_ATTACHMENTS, RowExclusiveLock, &attachments);
	LockRelationOid(RelationGetRelid(attachments.rel), ShareRowExclusiveLock);
	check_stream_owner(&attachments, relid, stream);

	key[0] = ObjectIdGetDatum(relid);
	if (owned_fetch(&attachments, key, SnapshotSelf, &row))
	{
		memcpy(values, row.values, sizeof(values));
		memcpy(nulls, row.nulls, sizeof(nulls));
	}
	else
	{
		memset(nulls, true, sizeof(nulls));
		values[ATTACHMENTS_TBL - 1] = ObjectIdGetDatum(relid);
		values[ATTACHMENTS_WAKE_RELAYS - 1] = BoolGetDatum(false);
		nulls[ATTACHMENTS_TBL - 1] = nulls[ATTACHMENTS_WAKE_RELAYS - 1] = false;
	}
	values[ATTACHMENTS_STREAM - 1] = PointerGetDatum(stream);
	values[ATTACHMENTS_RESOURCE_COLUMN - 1] = NameGetDatum(rescol);
	values[ATTACHMENTS_SEQUENCE_COLUMN - 1] = NameGetDatum(seqcol);
	values[ATTACHMENTS_ATTACHED - 1] = BoolGetDatum(true);
	values[ATTACHMENTS_ATTACHED_AT - 1] =
		TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	nulls[ATTACHMENTS_STREAM - 1] = nulls[ATTACHMENTS_RESOURCE_COLUMN - 1] =
		nulls[ATTACHMENTS_SEQUENCE_COLUMN - 1] =
		nulls[ATTACHMENTS_ATTACHED - 1] = nulls[ATTACHMENTS_ATTACHED_AT - 1] = false;
	/* the table's lock serializes every writer of its registry row */
	if (row.found)
		owned_update(&attachments, &row, values, nulls);
	else
		owned_insert(&attachments, values, nulls);
	owned_close(&attachments);

	invalidate_tables(relid);
	table_close(rel, NoLock);
	PG_RETURN_VOID();
}

/*
 * ordering_internal.attachment_unregister(tbl regclass) returns text
 *
 * Records "tbl", whose sequencing trigger is gone, as detached; returns
 * the stream it had, NULL if the registry has no row for it.
 */
Datum
ordering_attachment_unregister(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Relation	rel;
	OwnedRel	attachments;
	OwnedRow	row;
	Datum		key[1];
	Datum		values[OWNED_MAX_NATTS];
	bool		nulls[OWNED_MAX_NATTS];
	text	   *stream = NULL;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("table must not be null")));
	relid = PG_GETARG_OID(0);
	owned_prevent_write("ordering.detach()");

	rel = open_table(relid);
	if (sequencing_trigger(rel) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" still has its sequencing trigger",
						RelationGetRelationName(rel)),
				 errhint("Use ordering.detach().")));

	key[0] = ObjectIdGetDatum(relid);
	owned_open(OWNED_ATTACHMENTS, RowExclusiveLock, &attachments);
	if (owned_fetch(&attachments, key, SnapshotSelf, &row))
	{
		stream = DatumGetTextPCopy(row.values[ATTACHMENTS_STREAM - 1]);
		memcpy(values, row.values, sizeof(values));
		memcpy(nulls, row.nulls, sizeof(nulls));
		values[ATTACHMENTS_ATTACHED - 1] = BoolGetDatum(false);
		owned_update(&attachments, &row, values, nulls);
	}
	owned_close(&attachments);

	invalidate_tables(relid);
	table_close(rel, NoLock);
	if (stream == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(stream);
}

/*
 * ordering.wake_relays(tbl regclass, enabled boolean DEFAULT true)
 * returns void
 *
 * Turns the wake-up of an attached table on or off (README.md).  Needs
 * the TRIGGER privilege on the table, as attaching it does.
 */
Datum
ordering_wake_relays(PG_FUNCTION_ARGS)
{
	Oid			relid;
	bool		enabled;
	AclResult	aclresult;
	List	   *tables;
	ListCell   *lc;
	OwnedRel	attachments;
	OwnedRow	row;
	Datum		key[1];
	Datum		values[OWNED_MAX_NATTS];
	bool		nulls[OWNED_MAX_NATTS];

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("table must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("enabled must not be null")));
	relid = PG_GETARG_OID(0);
	enabled = PG_GETARG_BOOL(1);
	owned_prevent_write("ordering.wake_relays()");

	LockRelationOid(relid, ShareRowExclusiveLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_TRIGGER);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult,
					   get_relkind_objtype(get_rel_relkind(relid)),
					   get_rel_name(relid));
	/* its partitions too: rows inserted into one lock only the partition */
	tables = find_all_inheritors(relid, ShareRowExclusiveLock, NULL);

	key[0] = ObjectIdGetDatum(relid);
	owned_open(OWNED_ATTACHMENTS, RowExclusiveLock, &attachments);
	if (!owned_fetch(&attachments, key, SnapshotSelf, &row) ||
		!DatumGetBool(row.values[ATTACHMENTS_ATTACHED - 1]))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("relation \"%s\" is not attached", get_rel_name(relid)),
				 errhint("Call ordering.attach() on it first.")));
	if (OidIsValid(citus_stream_counter_table(DatumGetTextPP(row.values[ATTACHMENTS_STREAM - 1]))))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("relation \"%s\" is distributed by Citus: its rows are stored on the workers, in transactions that Citus may prepare for two-phase commit, which cannot send NOTIFY",
						get_rel_name(relid)),
				 errhint("Relays of a distributed outbox poll each node with ordering.claim_unpublished(NULL::my_outbox, n) (docs/citus.md).")));
	memcpy(values, row.values, sizeof(values));
	memcpy(nulls, row.nulls, sizeof(nulls));
	values[ATTACHMENTS_WAKE_RELAYS - 1] = BoolGetDatum(enabled);
	/* the table's lock serializes every writer of its registry row */
	owned_update(&attachments, &row, values, nulls);
	owned_close(&attachments);

	foreach(lc, tables)
		CacheInvalidateRelcacheByRelid(lfirst_oid(lc));
	PG_RETURN_VOID();
}
