/*-------------------------------------------------------------------------
 *
 * statement.c
 *	  The executor and utility hooks that tell the producer where a
 *	  statement's rows begin and end: they get a level of their own
 *	  (provisional.c), and the counters the statement holds are written when
 *	  it ends (counters.c).  README.md, "A statement".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "tcop/utility.h"

#include "compat.h"
#include "producer.h"
#include "process_utility.h"

static ExecutorRun_hook_type prev_ExecutorRun = NULL;
static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/*
 * Does a plan (the whole statement's, or one of its subplans) insert with
 * ON CONFLICT?  A data-modifying statement, and each of its data-modifying
 * WITH queries, is planned with its ModifyTable on top.
 */
static bool
plan_has_on_conflict(Plan *plan)
{
	return plan != NULL && IsA(plan, ModifyTable) &&
		((ModifyTable *) plan)->onConflictAction != ONCONFLICT_NONE;
}

/*
 * May a statement skip rows it numbered?  Only by ON CONFLICT; a statement
 * that modifies data without a ModifyTable on top, which the planner never
 * makes, is taken to skip.
 */
static bool
plan_may_skip(PlannedStmt *stmt)
{
	ListCell   *lc;

	if (stmt->commandType != CMD_SELECT && !IsA(stmt->planTree, ModifyTable))
		return true;
	if (plan_has_on_conflict(stmt->planTree))
		return true;
	foreach(lc, stmt->subplans)
	{
		if (plan_has_on_conflict(lfirst(lc)))
			return true;
	}
	return false;
}

/*
 * Does a plan (the whole statement's, or one of its subplans) insert rows?
 * MERGE may.
 */
static bool
plan_inserts(Plan *plan)
{
	return plan != NULL && IsA(plan, ModifyTable) &&
		(((ModifyTable *) plan)->operation == CMD_INSERT ||
		 ((ModifyTable *) plan)->operation == CMD_MERGE);
}

/*
 * Refuse a plan that inserts into a table attached incompletely
 * (attached.c).  The tables a ModifyTable writes are its result relations,
 * which ExecutorStart opened.
 */
static void
check_plan_targets(Plan *plan, EState *estate)
{
	ListCell   *lc;

	if (!plan_inserts(plan))
		return;
	foreach(lc, ((ModifyTable *) plan)->resultRelations)
	{
		ResultRelInfo *rri = estate->es_result_relations[lfirst_int(lc) - 1];

		if (rri != NULL)
			attached_check_insert(rri->ri_RelationDesc, rri->ri_TrigDesc);
	}
}

/*
 * Refuse a statement that inserts into a table attached incompletely: its
 * plan, or a data-modifying WITH query's.
 */
static void
check_insert_targets(PlannedStmt *stmt, EState *estate)
{
	ListCell   *lc;

	if (stmt->commandType == CMD_SELECT && !stmt->hasModifyingCTE)
		return;
	check_plan_targets(stmt->planTree, estate);
	foreach(lc, stmt->subplans)
		check_plan_targets(lfirst(lc), estate);
}

/*
 * May a statement insert more than one row?  All but an INSERT of a single
 * VALUES row (a ModifyTable over a Result that reads nothing), which is
 * what a producer that emits one event per statement runs.
 */
static bool
plan_is_bulk(PlannedStmt *stmt)
{
	Plan	   *source;

	if (stmt->commandType == CMD_SELECT && !stmt->hasModifyingCTE)
		return false;
	if (stmt->commandType != CMD_INSERT || !IsA(stmt->planTree, ModifyTable) ||
		stmt->subplans != NIL)
		return true;
	source = outerPlan(stmt->planTree);
	return source == NULL || !IsA(source, Result) || outerPlan(source) != NULL;
}

/*
 * Run a statement's rows (body) at a level of their own, knowing whether
 * the statement may skip them and whether it may insert more than one
 * (bulk: it may then hold counters, counters.c); once it has run, they are
 * decided, and the counters it held are written.
 */
static void
run_statement(bool may_skip, bool bulk, void (*body) (void *), void *arg)
{
	bool		outer_may_skip;

	counter_statement_begin(bulk);
	outer_may_skip = provisional_level_enter(may_skip);
	PG_TRY();
	{
		body(arg);
		provisional_level_settle();
		counter_statement_end();
	}
	PG_CATCH();
	{
		provisional_level_fail();
		counter_statement_abandon();
		provisional_level_leave(outer_may_skip);
		PG_RE_THROW();
	}
	PG_END_TRY();
	provisional_level_leave(outer_may_skip);
}

/* The arguments of an ExecutorRun hook, for run_statement() */
typedef struct ExecutorRunArgs
{
	QueryDesc  *queryDesc;
	ScanDirection direction;
	uint64		count;
#if PG_VERSION_NUM < 180000
	bool		execute_once;
#endif
} ExecutorRunArgs;

static void
executor_run(void *arg)
{
	ExecutorRunArgs *a = (ExecutorRunArgs *) arg;
	QueryDesc  *queryDesc = a->queryDesc;
	ScanDirection direction = a->direction;
	uint64		count = a->count;
#if PG_VERSION_NUM < 180000
	bool		execute_once = a->execute_once;
#endif

	check_insert_targets(queryDesc->plannedstmt, queryDesc->estate);

	/*
	 * Tables whose rows the statement cannot skip do without the companion (a
	 * saving only: left on, it would find nothing to do).
	 */
	if (!provisional_statement_may_skip())
		attached_skip_companions(queryDesc->estate);
	if (prev_ExecutorRun)
		prev_ExecutorRun(ORDERING_EXECUTOR_RUN_ARGS);
	else
		standard_ExecutorRun(ORDERING_EXECUTOR_RUN_ARGS);
}

/*
 * ExecutorRun hook: the rows of a statement get its level.
 */
static void
statement_ExecutorRun(ORDERING_EXECUTOR_RUN_PARAMS)
{
	ExecutorRunArgs a = {ORDERING_EXECUTOR_RUN_ARGS};

	run_statement(plan_may_skip(queryDesc->plannedstmt),
				  plan_is_bulk(queryDesc->plannedstmt), executor_run, &a);
}

static void
executor_finish(void *arg)
{
	if (prev_ExecutorFinish)
		prev_ExecutorFinish((QueryDesc *) arg);
	else
		standard_ExecutorFinish((QueryDesc *) arg);
}

/*
 * ExecutorFinish hook: data-modifying WITH queries that the statement did
 * not read to the end insert their remaining rows here, at the statement's
 * level.
 */
static void
statement_ExecutorFinish(QueryDesc *queryDesc)
{
	run_statement(plan_may_skip(queryDesc->plannedstmt),
				  plan_is_bulk(queryDesc->plannedstmt), executor_finish,
				  queryDesc);
}

/* The arguments of a ProcessUtility hook, for run_statement() */
typedef struct ProcessUtilityArgs
{
	PlannedStmt *pstmt;
	const char *queryString;
	bool		readOnlyTree;
	ProcessUtilityContext context;
	ParamListInfo params;
	QueryEnvironment *queryEnv;
	DestReceiver *dest;
	QueryCompletion *qc;
} ProcessUtilityArgs;

static void
process_utility(void *arg)
{
	ProcessUtilityArgs *a = (ProcessUtilityArgs *) arg;

	ordering_process_utility(prev_ProcessUtility, a->pstmt, a->queryString,
							 a->readOnlyTree, a->context, a->params,
							 a->queryEnv, a->dest, a->qc);
}

/*
 * A COPY FROM is about to run: refuse it if its table is attached
 * incompletely, and say whether it may hold its counters (attached.c).  It
 * opens the table with the lock COPY FROM takes, as COPY does, before
 * privileges are checked.
 */
static bool
copy_may_hold(CopyStmt *stmt)
{
	Relation	rel;
	bool		may_hold;

	if (!stmt->is_from || stmt->relation == NULL)
		return false;
	rel = relation_openrv_extended(stmt->relation, RowExclusiveLock, true);
	if (rel == NULL)
		return true;
	attached_check_insert(rel, rel->trigdesc);
	may_hold = attached_copy_may_hold(rel);
	relation_close(rel, NoLock);
	return may_hold;
}

/*
 * ProcessUtility hook: COPY FROM stores rows without an executor run, so it
 * gets a level of its own; COPY has no ON CONFLICT (it filters rows
 * before triggers run), so it skips none.  It fires its AFTER triggers
 * itself, before its level ends: where the user has some, it holds no
 * counters.
 */
static void
statement_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
						 bool readOnlyTree, ProcessUtilityContext context,
						 ParamListInfo params, QueryEnvironment *queryEnv,
						 DestReceiver *dest, QueryCompletion *qc)
{
	ProcessUtilityArgs a = {pstmt, queryString, readOnlyTree, context, params,
	queryEnv, dest, qc};

	if (IsA(pstmt->utilityStmt, CopyStmt))
		run_statement(false, copy_may_hold((CopyStmt *) pstmt->utilityStmt),
					  process_utility, &a);
	else
		process_utility(&a);
}

/*
 * Install the hooks (from _PG_init, whether or not the library is
 * preloaded).
 */
void
statement_init(void)
{
	prev_ExecutorRun = ExecutorRun_hook;
	ExecutorRun_hook = statement_ExecutorRun;
	prev_ExecutorFinish = ExecutorFinish_hook;
	ExecutorFinish_hook = statement_ExecutorFinish;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = statement_ProcessUtility;
}
