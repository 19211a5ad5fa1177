/*-------------------------------------------------------------------------
 *
 * citus_splits.c
 *	  Refuses a non-blocking split that would keep a child of the
 *	  extension's tables on the source node, which stalls (README.md,
 *	  "Non-blocking splits").
 *
 * Citus (13.2, NonBlockingShardSplit()) creates the children of a split,
 * then the publications on the source node, then the replication slots,
 * and only then the children's replica identities.  A child kept on the
 * source node is decoded as it was when the slot began, without a replica
 * identity, and its target cannot apply an UPDATE of it: the split retries
 * for ever.  The extension's tables (counters, a distributed consumer's
 * positions) take UPDATEs all the time, so such a split is refused when
 * its publication is created on the source node: a table of schema
 * ordering_internal in it that has no replica identity yet is such a
 * child.  Nothing has been copied then, and Citus cleans up what it made.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"

#include "citus.h"
#include "process_utility.h"

/* The prefix of the publications of Citus's shard splits */
#define SPLIT_PUBLICATION_PREFIX "citus_shard_split_publication_"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/*
 * Has relation relid, of schema ordering_internal, no replica identity
 * (neither a replica identity index nor FULL)?
 */
static bool
lacks_replica_identity(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	bool		lacks;

	lacks = rel->rd_rel->relreplident != REPLICA_IDENTITY_FULL &&
		!OidIsValid(RelationGetReplicaIndex(rel));
	table_close(rel, AccessShareLock);
	return lacks;
}

/*
 * Refuse the publication of a split that names a table of ours without a
 * replica identity.
 */
static void
check_split_publication(CreatePublicationStmt *stmt)
{
	Oid			nsp;
	ListCell   *lc;

	if (strncmp(stmt->pubname, SPLIT_PUBLICATION_PREFIX,
				strlen(SPLIT_PUBLICATION_PREFIX)) != 0)
		return;
	nsp = get_namespace_oid("ordering_internal", true);
	if (!OidIsValid(nsp))
		return;
	foreach(lc, stmt->pubobjects)
	{
		PublicationObjSpec *obj = lfirst_node(PublicationObjSpec, lc);
		Oid			relid;

		if (obj->pubobjtype != PUBLICATIONOBJ_TABLE || obj->pubtable == NULL)
			continue;
		relid = RangeVarGetRelid(obj->pubtable->relation, NoLock, true);
		if (!OidIsValid(relid) || get_rel_namespace(relid) != nsp ||
			!lacks_replica_identity(relid))
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a non-blocking split cannot keep a child of shard \"%s\" on its node",
						get_rel_name(relid)),
				 errdetail("Citus gives a child on the source node its replica identity only after replication starts, "
						   "and the updates of the extension's tables would then never apply: the split would never end."),
				 errhint("Split with shard_transfer_mode => 'block_writes', or place every child on another node.")));
	}
}

/*
 * Before a CREATE PUBLICATION of a shard split, check it.
 */
static void
splits_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
					  bool readOnlyTree, ProcessUtilityContext context,
					  ParamListInfo params, QueryEnvironment *queryEnv,
					  DestReceiver *dest, QueryCompletion *qc)
{
	if (IsA(pstmt->utilityStmt, CreatePublicationStmt))
		check_split_publication((CreatePublicationStmt *) pstmt->utilityStmt);
	ordering_process_utility(prev_ProcessUtility, pstmt, queryString,
							 readOnlyTree, context, params, queryEnv, dest, qc);
}

/*
 * Install the hook (from _PG_init, whether or not the library is
 * preloaded).
 */
void
citus_splits_init(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = splits_ProcessUtility;
}
