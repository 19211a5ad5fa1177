/*-------------------------------------------------------------------------
 *
 * citus_meta.c
 *	  Citus's metadata, read without linking against Citus: the shard of a
 *	  hash-distributed table that holds a value, its placement, and the lock
 *	  that keeps it there (README.md, "Citus's metadata").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/primnodes.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "citus.h"

/* field4 of Citus's co-located shards metadata lock (resource_lock.h) */
#define CITUS_COLOCATED_SHARDS_METADATA_LOCK	8

/* shardstate of an active placement (Citus's SHARD_STATE_ACTIVE) */
#define CITUS_SHARD_STATE_ACTIVE	1

/* pg_dist_partition.partmethod of a hash-distributed table */
#define CITUS_HASH_DISTRIBUTED	'h'

/* A catalog of Citus, open for one scan */
typedef struct CitusCatalog
{
	Relation	rel;
	Oid			index;
} CitusCatalog;

/*
 * The OID of a relation of Citus's in pg_catalog; an error if there is
 * none (Citus is not installed in this database).
 */
static Oid
citus_catalog_oid(const char *name)
{
	Oid			relid = get_relname_relid(name, PG_CATALOG_NAMESPACE);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("Citus is not installed in this database"),
				 errdetail("The catalog pg_catalog.%s does not exist.", name)));
	return relid;
}

/*
 * Open a catalog of Citus and find its index by name.
 */
static void
citus_catalog_open(const char *name, const char *index, CitusCatalog *cat)
{
	cat->rel = table_open(citus_catalog_oid(name), AccessShareLock);
	cat->index = index != NULL ? citus_catalog_oid(index) : InvalidOid;
}

/*
 * A column of a catalog row, by name (the columns are looked up by name so
 * that a Citus that reorders them is read right, and one that renames
 * them fails loudly).
 */
static Datum
citus_column(CitusCatalog *cat, HeapTuple tuple, const char *column,
			 bool *isnull)
{
	TupleDesc	desc = RelationGetDescr(cat->rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), column) == 0)
			return heap_getattr(tuple, i + 1, desc, isnull);
	}
	elog(ERROR, "column \"%s\" of %s not found: unsupported Citus version",
		 column, RelationGetRelationName(cat->rel));
	return (Datum) 0;
}

/*
 * The attribute number of a catalog's column, by name (see citus_column).
 */
static AttrNumber
citus_attnum(CitusCatalog *cat, const char *column)
{
	TupleDesc	desc = RelationGetDescr(cat->rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), column) == 0)
			return i + 1;
	}
	elog(ERROR, "column \"%s\" of %s not found: unsupported Citus version",
		 column, RelationGetRelationName(cat->rel));
	return InvalidAttrNumber;
}

/*
 * A non-null column of a catalog row.
 */
static Datum
citus_column_notnull(CitusCatalog *cat, HeapTuple tuple, const char *column)
{
	bool		isnull;
	Datum		value = citus_column(cat, tuple, column, &isnull);

	if (isnull)
		elog(ERROR, "column \"%s\" of %s is null",
			 column, RelationGetRelationName(cat->rel));
	return value;
}

/*
 * Is relid a hash-distributed table of Citus?  If so, fill *table.
 */
bool
citus_table(Oid relid, CitusTable *table)
{
	CitusCatalog cat;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		found = false;

	citus_catalog_open("pg_dist_partition", "pg_dist_partition_logical_relid_index",
					   &cat);
	ScanKeyInit(&key, citus_attnum(&cat, "logicalrelid"), BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(cat.rel, cat.index, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple) &&
		DatumGetChar(citus_column_notnull(&cat, tuple, "partmethod")) ==
		CITUS_HASH_DISTRIBUTED)
	{
		char	   *partkey = TextDatumGetCString(citus_column_notnull(&cat, tuple, "partkey"));
		Var		   *var = (Var *) stringToNode(partkey);

		if (!IsA(var, Var))
			elog(ERROR, "unexpected distribution key of relation %u", relid);
		table->relid = relid;
		table->distcol = var->varattno;
		table->distcoll = var->varcollid;
		table->colocationid =
			DatumGetUInt32(citus_column_notnull(&cat, tuple, "colocationid"));
		found = true;
	}
	systable_endscan(scan);
	table_close(cat.rel, AccessShareLock);
	return found;
}

/*
 * qsort comparator of shards by the start of their ranges.
 */
static int
shard_cmp(const void *a, const void *b)
{
	int32		ma = ((const CitusShard *) a)->minvalue;
	int32		mb = ((const CitusShard *) b)->minvalue;

	return ma < mb ? -1 : (ma > mb ? 1 : 0);
}

/*
 * The shards of a table, sorted by the start of their hash ranges: a
 * shard's index is its rank there, as in Citus's sortedShardIntervalArray
 * (README.md).  *n gets their number.
 */
CitusShard *
citus_shards(Oid relid, int *n)
{
	CitusCatalog cat;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	int			size = 32;
	CitusShard *shards = palloc(sizeof(CitusShard) * size);

	*n = 0;
	citus_catalog_open("pg_dist_shard", "pg_dist_shard_logical_relid_index",
					   &cat);
	ScanKeyInit(&key, citus_attnum(&cat, "logicalrelid"), BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(cat.rel, cat.index, true, NULL, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		CitusShard *shard;

		if (*n == size)
		{
			size *= 2;
			shards = repalloc(shards, sizeof(CitusShard) * size);
		}
		shard = &shards[(*n)++];
		shard->shardid = DatumGetInt64(citus_column_notnull(&cat, tuple, "shardid"));
		shard->minvalue = pg_strtoint32(TextDatumGetCString(citus_column_notnull(&cat, tuple, "shardminvalue")));
		shard->maxvalue = pg_strtoint32(TextDatumGetCString(citus_column_notnull(&cat, tuple, "shardmaxvalue")));
		shard->relid = InvalidOid;
	}
	systable_endscan(scan);
	table_close(cat.rel, AccessShareLock);
	qsort(shards, *n, sizeof(CitusShard), shard_cmp);
	for (int i = 0; i < *n; i++)
		shards[i].index = i;
	return shards;
}

/*
 * The hash Citus routes a value of the distribution column by (README.md).
 */
int32
citus_hash(const CitusTable *table, Datum value)
{
	TypeCacheEntry *type;

	type = lookup_type_cache(get_atttype(table->relid, table->distcol),
							 TYPECACHE_HASH_PROC_FINFO);
	if (!OidIsValid(type->hash_proc_finfo.fn_oid))
		elog(ERROR, "no hash function for the distribution column of relation %u",
			 table->relid);
	return DatumGetInt32(FunctionCall1Coll(&type->hash_proc_finfo,
										   table->distcoll, value));
}

/*
 * The shard of sorted shards whose range holds hash, or NULL.
 */
const CitusShard *
citus_shard_holding(const CitusShard *shards, int n, int32 hash)
{
	int			low = 0;
	int			high = n - 1;

	while (low <= high)
	{
		int			mid = low + (high - low) / 2;

		if (hash < shards[mid].minvalue)
			high = mid - 1;
		else if (hash > shards[mid].maxvalue)
			low = mid + 1;
		else
			return &shards[mid];
	}
	return NULL;
}

/*
 * The shard of a hash-distributed table that holds value (of the
 * distribution column's type), as Citus routes it (README.md).
 */
void
citus_shard_for(const CitusTable *table, Datum value, CitusShard *shard)
{
	int32		hash = citus_hash(table, value);
	int			n;
	CitusShard *shards = citus_shards(table->relid, &n);
	const CitusShard *found = citus_shard_holding(shards, n, hash);

	if (found == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("no shard of relation \"%s\" holds hash value %d",
						get_rel_name(table->relid), hash)));
	*shard = *found;
	pfree(shards);
}

/*
 * The shard of relid whose range starts at minvalue: in a co-location
 * group, the shard that sits with another table's shard of that range.
 * False if there is none (the group is being split).
 */
bool
citus_colocated_shard(Oid relid, int32 minvalue, CitusShard *shard)
{
	int			n;
	CitusShard *shards = citus_shards(relid, &n);
	bool		found = false;

	for (int i = 0; i < n && !found; i++)
	{
		if (shards[i].minvalue == minvalue)
		{
			*shard = shards[i];
			found = true;
		}
	}
	pfree(shards);
	return found;
}

/*
 * Take the shard group's metadata lock in "mode" (ShareLock to write it),
 * for the rest of the transaction, and let in the invalidations of what
 * committed meanwhile: the caller looks up the shard again after this
 * (README.md).
 */
void
citus_lock_shard(const CitusTable *table, const CitusShard *shard,
				 LOCKMODE mode)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) shard->index,
						 table->colocationid,
						 CITUS_COLOCATED_SHARDS_METADATA_LOCK);
	(void) LockAcquire(&tag, mode, false, false);
	AcceptInvalidationMessages();
}

/*
 * Wait for the transaction that wrote a catalog row to have ended
 * entirely (README.md), unless it is ours or long frozen.
 */
static void
wait_for_writer(Relation rel, HeapTuple tuple)
{
	TransactionId xmin;

	if (HeapTupleHeaderXminFrozen(tuple->t_data))
		return;
	xmin = HeapTupleHeaderGetRawXmin(tuple->t_data);
	if (TransactionIdIsNormal(xmin) && !TransactionIdIsCurrentTransactionId(xmin))
		XactLockTableWait(xmin, rel, &tuple->t_self, XLTW_None);
}

/*
 * Wait until the transactions that wrote the catalog rows of a shard (its
 * pg_dist_shard row and its placements) have sent their invalidations,
 * and take those in (README.md).
 */
void
citus_shard_settle(int64 shardid)
{
	static const char *const catalogs[2][2] = {
		{"pg_dist_shard", "pg_dist_shard_shardid_index"},
		{"pg_dist_placement", "pg_dist_placement_shardid_index"},
	};

	for (int i = 0; i < lengthof(catalogs); i++)
	{
		CitusCatalog cat;
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tuple;

		citus_catalog_open(catalogs[i][0], catalogs[i][1], &cat);
		ScanKeyInit(&key, citus_attnum(&cat, "shardid"), BTEqualStrategyNumber,
					F_INT8EQ, Int64GetDatum(shardid));
		scan = systable_beginscan(cat.rel, cat.index, true, NULL, 1, &key);
		while (HeapTupleIsValid(tuple = systable_getnext(scan)))
			wait_for_writer(cat.rel, tuple);
		systable_endscan(scan);
		table_close(cat.rel, AccessShareLock);
	}
	AcceptInvalidationMessages();
}

/*
 * This node's group (pg_dist_local_group).
 */
static int32
citus_local_group(void)
{
	CitusCatalog cat;
	SysScanDesc scan;
	HeapTuple	tuple;
	int32		group;

	citus_catalog_open("pg_dist_local_group", NULL, &cat);
	scan = systable_beginscan(cat.rel, InvalidOid, false, NULL, 0, NULL);
	tuple = systable_getnext(scan);
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "pg_dist_local_group is empty");
	group = DatumGetInt32(citus_column_notnull(&cat, tuple, "groupid"));
	systable_endscan(scan);
	table_close(cat.rel, AccessShareLock);
	return group;
}

/*
 * Is this a backend Citus opened to run its tasks (its connections carry
 * application_name "citus_internal gpid=...", connection_management.h)?
 * Citus delegates no function call from such a backend.
 */
bool
citus_internal_backend(void)
{
	return application_name != NULL &&
		strncmp(application_name, "citus_internal gpid=", 20) == 0;
}

/*
 * Is this node the coordinator (group 0)?  False without Citus.
 */
bool
citus_is_coordinator(void)
{
	if (!OidIsValid(get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE)))
		return false;
	return citus_local_group() == 0;
}

/*
 * Has the shard an active placement on this node?
 */
bool
citus_shard_here(int64 shardid)
{
	CitusCatalog cat;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	int32		group = citus_local_group();
	bool		here = false;

	citus_catalog_open("pg_dist_placement", "pg_dist_placement_shardid_index",
					   &cat);
	ScanKeyInit(&key, citus_attnum(&cat, "shardid"), BTEqualStrategyNumber,
				F_INT8EQ, Int64GetDatum(shardid));
	scan = systable_beginscan(cat.rel, cat.index, true, NULL, 1, &key);
	while (!here && HeapTupleIsValid(tuple = systable_getnext(scan)))
		here = DatumGetInt32(citus_column_notnull(&cat, tuple, "groupid")) == group &&
			DatumGetInt32(citus_column_notnull(&cat, tuple, "shardstate")) ==
			CITUS_SHARD_STATE_ACTIVE;
	systable_endscan(scan);
	table_close(cat.rel, AccessShareLock);
	return here;
}

/*
 * The relation of a shard on this node (Citus names it after its table,
 * "<table>_<shardid>", in the table's schema); InvalidOid if there is none.
 */
Oid
citus_shard_relid(Oid relid, int64 shardid)
{
	char	   *name = psprintf("%s_" INT64_FORMAT, get_rel_name(relid), shardid);

	if (strlen(name) >= NAMEDATALEN)
		elog(ERROR, "shard name \"%s\" is too long", name);
	return get_relname_relid(name, get_rel_namespace(relid));
}
