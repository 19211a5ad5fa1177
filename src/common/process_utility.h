/*-------------------------------------------------------------------------
 *
 * process_utility.h
 *	  Passing a utility statement on from one of our ProcessUtility hooks:
 *	  to the hook installed before it, or to PostgreSQL's own
 *	  standard_ProcessUtility() where there was none.
 *
 * Each hook of ours (stats.c, statement.c, citus_grants.c, citus_splits.c)
 * keeps the hook it found at _PG_init and calls this where the statement
 * runs.  The hook's parameters are the same on every version the extension
 * builds on (15 to 18); were they to differ, the difference would go to
 * compat.h and this would follow it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_PROCESS_UTILITY_H
#define ORDERING_PROCESS_UTILITY_H

#include "tcop/utility.h"

/*
 * Run a utility statement through "prev", the hook installed before ours,
 * or standard_ProcessUtility() if there was none.
 */
static inline void
ordering_process_utility(ProcessUtility_hook_type prev, PlannedStmt *pstmt,
						 const char *queryString, bool readOnlyTree,
						 ProcessUtilityContext context, ParamListInfo params,
						 QueryEnvironment *queryEnv, DestReceiver *dest,
						 QueryCompletion *qc)
{
	if (prev)
		prev(pstmt, queryString, readOnlyTree, context, params, queryEnv,
			 dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

#endif							/* ORDERING_PROCESS_UTILITY_H */
