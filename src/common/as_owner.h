/*-------------------------------------------------------------------------
 *
 * as_owner.h
 *	  Running a statement as the owner of a relation, for a caller whom a
 *	  function of ours let in and who needs no rights on that relation.
 *
 * On one node the extension's own tables are written below the executor,
 * where no table privilege is checked: the right to execute the function is
 * the permission (docs/privileges.md).  On a Citus cluster some of those
 * writes are SQL that Citus routes to a shard's node, and that SQL runs as
 * the relation's owner, the caller's rights having been checked already.
 * The switch is SECURITY_LOCAL_USERID_CHANGE, as core's RI triggers make it:
 * an error before as_caller() leaves the restoring to the (sub)transaction's
 * abort, which puts back the user it began with.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_AS_OWNER_H
#define ORDERING_AS_OWNER_H

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "utils/syscache.h"

/* The caller's user, to go back to */
typedef struct AsOwner
{
	Oid			userid;
	int			sec_context;
} AsOwner;

/*
 * Become the owner of relation relid, keeping in *caller whom to go back to.
 */
static inline void
as_owner(Oid relid, AsOwner *caller)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	GetUserIdAndSecContext(&caller->userid, &caller->sec_context);
	SetUserIdAndSecContext(owner, caller->sec_context | SECURITY_LOCAL_USERID_CHANGE);
}

/* Go back to the caller as_owner() kept */
static inline void
as_caller(const AsOwner *caller)
{
	SetUserIdAndSecContext(caller->userid, caller->sec_context);
}

#endif							/* ORDERING_AS_OWNER_H */
