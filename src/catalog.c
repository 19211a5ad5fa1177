/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Finding the extension's own relations.
 *
 * The C code that reads and writes the extension's tables below the
 * executor (keyed.c, parked.c) caches their OIDs per backend, checks once
 * that they still have the shape it relies on, and forgets them on relcache
 * invalidation.  The lookup, the check of the primary key's columns and the
 * complaint are shared here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "catalog/namespace.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "ordering.h"

/*
 * The OID of relation "ordering.relname"; an error if there is none.
 */
Oid
ordering_relation_oid(const char *relname)
{
	Oid			nspid = get_namespace_oid("ordering", false);
	Oid			relid = get_relname_relid(relname, nspid);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"ordering.%s\" does not exist", relname)));
	return relid;
}

/*
 * The primary key of an open table of the extension, if it is on exactly the
 * table's first nkeys columns in order (the scan keys of keyed.c and parked.c
 * are built that way); InvalidOid otherwise.
 */
Oid
ordering_primary_key_on_leading(Relation rel, int nkeys)
{
	Oid			indexid = RelationGetPrimaryKeyIndex(rel);
	Relation	idx;
	bool		ok;

	if (!OidIsValid(indexid))
		return InvalidOid;
	idx = index_open(indexid, AccessShareLock);
	ok = idx->rd_index->indnkeyatts == nkeys;
	for (int i = 0; ok && i < nkeys; i++)
		ok = idx->rd_index->indkey.values[i] == i + 1;
	index_close(idx, AccessShareLock);
	return ok ? indexid : InvalidOid;
}

/*
 * Complain that "ordering.relname" no longer has the shape the C code needs.
 */
void
ordering_relation_altered(const char *relname)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("relation \"ordering.%s\" has been altered", relname),
			 errhint("Reinstall the extension ordering.")));
}
