/*-------------------------------------------------------------------------
 *
 * citus_registry.c
 *	  The registry of distributed streams on every node: the tables
 *	  attach() attached, in a Citus reference table that only attach() and
 *	  detach() write, read by the sequencing trigger of a shard, and the
 *	  type that names those tables on every node alike (README.md,
 *	  "The registry on every node").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "fmgr.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "citus.h"

PG_FUNCTION_INFO_V1(ordering_table_ref_in);
PG_FUNCTION_INFO_V1(ordering_table_ref_out);

/* The registry's columns (sql/definitions/citus/citus_registry_sync.sql) */
#define REGISTRY_TBL		1
#define REGISTRY_STREAM		2

/*
 * ordering_internal.table_ref's input: a table's qualified name, resolved
 * on this node; "-", or a name that names nothing here, is InvalidOid (a
 * copy of the registry onto a new node must not fail for a row whose table
 * was dropped).  Like regclass, but always written qualified and without a
 * binary form: Citus copies a reference table onto a new node in binary
 * when every column has one, which would carry the OIDs of another node.
 */
Datum
ordering_table_ref_in(PG_FUNCTION_ARGS)
{
	char	   *name = PG_GETARG_CSTRING(0);
	List	   *names;

	if (strcmp(name, "-") == 0)
		PG_RETURN_OID(InvalidOid);
	names = textToQualifiedNameList(cstring_to_text(name));
	PG_RETURN_OID(RangeVarGetRelid(makeRangeVarFromNameList(names), NoLock,
								   true));
}

/*
 * ordering_internal.table_ref's output: the table's qualified name on this
 * node, whatever the search_path; "-" for a table that is gone.
 */
Datum
ordering_table_ref_out(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	char	   *result;

	if (!HeapTupleIsValid(tuple))
		PG_RETURN_CSTRING(pstrdup("-"));
	result = quote_qualified_identifier(
										get_namespace_name(((Form_pg_class) GETSTRUCT(tuple))->relnamespace),
										NameStr(((Form_pg_class) GETSTRUCT(tuple))->relname));
	ReleaseSysCache(tuple);
	PG_RETURN_CSTRING(result);
}

/*
 * The registry of distributed streams, ordering_internal.distributed_attachments,
 * or InvalidOid if the cluster has none yet.  Only a table of the schema's
 * owner (who installed the extension, and owns the function that creates
 * the registry) counts: one made by another role would be its own registry.
 */
Oid
citus_registry_relid(void)
{
	Oid			nspid = get_namespace_oid("ordering_internal", true);
	Oid			relid;
	HeapTuple	tuple;
	Oid			nspowner;
	Oid			relowner;

	if (!OidIsValid(nspid))
		return InvalidOid;
	relid = get_relname_relid("distributed_attachments", nspid);
	if (!OidIsValid(relid))
		return InvalidOid;
	tuple = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nspid));
	if (!HeapTupleIsValid(tuple))
		return InvalidOid;
	nspowner = ((Form_pg_namespace) GETSTRUCT(tuple))->nspowner;
	ReleaseSysCache(tuple);
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		return InvalidOid;
	relowner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return relowner == nspowner ? relid : InvalidOid;
}

/*
 * The stream the registry's placement on this node ("shard", a relation
 * here) has for one of "tables", or NULL.  Read below the executor, in the
 * newest snapshot (as the metadata is): whoever inserts into a shard needs
 * no privilege on the registry, and a registry of a few rows is scanned
 * whole, once per shard and invalidation (attached.c caches the verdict).
 */
static char *
registered_stream_of(Oid shard, List *tables)
{
	Relation	registry = table_open(shard, AccessShareLock);
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	TableScanDesc scan = table_beginscan(registry, snapshot, 0, NULL);
	TupleDesc	desc = RelationGetDescr(registry);
	HeapTuple	tuple;
	char	   *stream = NULL;

	while (stream == NULL &&
		   (tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		bool		isnull;
		Datum		tbl = heap_getattr(tuple, REGISTRY_TBL, desc, &isnull);

		if (!isnull && list_member_oid(tables, DatumGetObjectId(tbl)))
		{
			Datum		s = heap_getattr(tuple, REGISTRY_STREAM, desc, &isnull);

			if (!isnull)
				stream = TextDatumGetCString(s);
		}
	}
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(registry, AccessShareLock);
	return stream;
}

/*
 * Refuse to count the rows of "rel", a shard of "logical", in stream
 * "stream" unless the registry says that attach() attached "logical" (or a
 * partitioned table it is a partition of) to that stream.  "registry" is
 * the registry's placement on this node (InvalidOid: none here),
 * "registry_exists" whether the cluster has a registry at all: until the
 * first attach() of a distributed table (or the update from 1.2 of a
 * cluster that has some) makes it, the trigger keeps the rule of 1.2
 * (README.md).
 */
void
citus_registry_check(Relation rel, Oid logical, const char *stream,
					 bool registry_exists, Oid registry)
{
	List	   *tables;
	char	   *registered;

	if (!registry_exists)
		return;
	if (!OidIsValid(registry))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this node has no copy of the registry of distributed streams, ordering_internal.distributed_attachments"),
				 errdetail("The sequencing trigger of shard \"%s\" counts only for a table that the registry lists.",
						   RelationGetRelationName(rel)),
				 errhint("Copy the reference tables onto every node: SELECT replicate_reference_tables();")));
	tables = lcons_oid(logical, get_partition_ancestors(logical));
	registered = registered_stream_of(registry, tables);
	if (registered == NULL || strcmp(registered, stream) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("relation \"%s\" is not attached to stream \"%s\"",
						get_rel_name(logical), stream),
				 errdetail("Shard \"%s\" has a sequencing trigger of that stream, but only the shards of a table attached with ordering.attach() are sequenced; a copy of its trigger elsewhere would take numbers of the stream.",
						   RelationGetRelationName(rel)),
				 errhint("Call ordering.detach() and ordering.attach() on the table.")));
	list_free(tables);
	pfree(registered);
}
