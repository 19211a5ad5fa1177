/*-------------------------------------------------------------------------
 *
 * provisional.c
 *	  Numbers handed to rows that may not be stored: kept provisional until
 *	  the row is stored, given back if it is not.
 *
 * The sequencing trigger runs BEFORE INSERT, so it hands out a number
 * before anyone knows whether the row will be stored: INSERT ... ON CONFLICT
 * DO NOTHING skips a row whose key exists, ON CONFLICT DO UPDATE updates the
 * existing row instead, and a later BEFORE trigger may return NULL.  A
 * number handed to such a row must be given back like a rollback gives it
 * back, or the sequence has a gap no republish can fill.
 *
 * So a number handed to a row that may be skipped is recorded here as
 * provisional, with the statement nesting level it was handed out at, and
 * the row's
 * companion AFTER INSERT trigger tells us when the row is stored: its WHEN
 * clause, ordering_internal.sequence_stored(), is evaluated right after the
 * row is stored and only for rows that are stored, and it removes the record
 * of the row whose BEFORE trigger ran last at that level (it returns false, so
 * the trigger itself never fires and no event is queued).  The clause takes
 * no arguments because it is prepared once per statement: the less it has
 * to parse, the less a single-row INSERT pays.  What remains recorded at a
 * level once that level's rows are decided is a number whose row was not
 * stored, and is given back:
 *
 *	- when the trigger fires again at the same level: the rows before it in
 *	  that statement are decided by then (ON CONFLICT and BEFORE triggers
 *	  decide a row before the next row is looked at), so the next row gets
 *	  the number back and no gap ever forms;
 *	- when the statement ends (our ExecutorRun and COPY hooks);
 *	- before the transaction commits or is prepared, for anything a
 *	  statement whose start we did not see left behind (the library loaded
 *	  in the middle of it, or rows inserted by logical replication).
 *
 * A number can be given back only while it is the last one handed out for
 * its resource.  When a later row already holds a higher number (a BEFORE
 * trigger that inserted another event of the same resource and then
 * suppressed its own row, say), the statement fails instead: never a silent
 * gap.
 *
 * Which rows may be skipped: those of a statement with ON CONFLICT (in any
 * of its data-modifying parts), those of a table where a BEFORE INSERT
 * trigger fires after ours, and those of a statement whose start we did not
 * see.  Every other row that got a number is stored, or the statement fails
 * and its rollback gives the number back, so it is not recorded, and the
 * statement's copy of the companion is turned off (attached.c): a plain
 * INSERT pays nothing for this file.  (COPY and partition routing open
 * their tables where we cannot reach them: there the companion stays on
 * and finds nothing to settle.)
 *
 * A later BEFORE trigger may also change the row it lets through: a
 * trigger that normalizes the resource (lower()) would store the number of
 * one resource in a row of another, which then repeats it.  So a number
 * recorded because such a trigger follows ours is checked once its row is
 * stored: the companion's WHEN clause moves the record to a second list and
 * returns true, the companion fires at the end of the statement with the
 * row as stored, and ordering_internal.sequence_stored_trigger() looks for
 * the record of that row's (stream, resource, number) there; if there is none,
 * the statement fails (producer.c).  Rows of tables without such a trigger
 * never get there, and their companion's clause stays false.
 *
 * Levels: a statement's rows get the level of its ExecutorRun (or COPY), and
 * so do the rows that its data-modifying WITH queries insert in its
 * ExecutorFinish; statements run from inside a trigger or function are one
 * level deeper, so the rows of an outer statement that are still being
 * decided are never taken for decided ones.  Aborted subtransactions take
 * their records with them: their numbers were given back by the rollback
 * itself.
 *
 * A row that an UPDATE moves between partitions keeps its number
 * (producer.c's guard): PostgreSQL fires BEFORE UPDATE on the tuple, then
 * BEFORE DELETE on the same tuple, then BEFORE INSERT of the new row, all at
 * the UPDATE's level.  What the guard saw of that is kept here, with the
 * level and subtransaction it was seen at, and only the BEFORE INSERT that
 * follows at that level may take it.  It is forgotten when its statement
 * ends, fails or is rolled back to a savepoint, so a move that did not
 * finish (a later trigger that raised or skipped the DELETE, a failed CHECK,
 * no partition for the new row) cannot let a later statement's row keep a
 * number it did not earn.
 *
 * Layer: executor hooks of the producer, below producer.c; it calls
 * attached.c and counters.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "attached.h"
#include "compat.h"
#include "counters.h"
#include "provisional.h"
#include "text_equal.h"

/* The records, oldest first, in TopTransactionContext */
static List *provisionals = NIL;

/* Records of stored rows to check when their companion fires (file header) */
static List *awaiting_check = NIL;

/* How deep in statements we are (file header) */
static int	statement_level = 0;

/* May the statement at this level skip a row it numbered (file header)? */
static bool statement_may_skip = true;

/* The row an UPDATE is moving between partitions, if any (file header) */
static struct
{
	int			level;			/* -1: nothing seen */
	SubTransactionId subid;
	Oid			updating_rel;	/* BEFORE UPDATE of this tuple ... */
	ItemPointerData updating_tid;
	bool		armed;			/* ... then BEFORE DELETE of it */
	text	   *stream;			/* the moving row, in TopTransactionContext */
	text	   *resource;
	int64		seq;
}			move = {-1};

static ExecutorRun_hook_type prev_ExecutorRun = NULL;
static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/*
 * Record a number handed to a row at the current level, from the counter
 * table "counters" (counters.c); with check_stored, the row is checked once
 * stored (file header).
 */
void
provisional_record(Oid counters, text *stream, text *resource, int64 seq,
				   bool check_stored)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	Provisional *p = palloc(sizeof(Provisional));

	p->counters = counters;
	p->stream = (text *) PG_DETOAST_DATUM_COPY(PointerGetDatum(stream));
	p->resource = (text *) PG_DETOAST_DATUM_COPY(PointerGetDatum(resource));
	p->seq = seq;
	p->level = statement_level;
	p->subid = GetCurrentSubTransactionId();
	p->check_stored = check_stored;
	provisionals = lappend(provisionals, p);
	MemoryContextSwitchTo(old);
}

/*
 * The row whose BEFORE trigger ran last at the current level was stored:
 * forget its record, and return it (the caller frees it).  NULL if that row
 * made no record (it kept a number it carried: restored, or moved between
 * partitions).  The trigger settled the records of the rows before it at
 * this level first, so the only record left at this level is that row's;
 * rows of statements run from its other triggers are one level deeper.
 */
Provisional *
provisional_stored(void)
{
	for (int i = list_length(provisionals) - 1; i >= 0; i--)
	{
		Provisional *p = list_nth(provisionals, i);

		if (p->level == statement_level)
		{
			provisionals = list_delete_nth_cell(provisionals, i);
			return p;
		}
	}
	return NULL;
}

/*
 * Free a record provisional_stored() returned.
 */
void
provisional_free(Provisional *p)
{
	pfree(p->stream);
	pfree(p->resource);
	pfree(p);
}

/*
 * Keep a record that provisional_stored() returned until its row is checked
 * (file header); it is no longer the caller's to free.
 */
void
provisional_await_check(Provisional *p)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	awaiting_check = lappend(awaiting_check, p);
	MemoryContextSwitchTo(old);
}

/*
 * A row checked by its companion was stored as (stream, resource, seq): is
 * that a number handed to that resource?  Forgets the record that says so
 * and returns true; else returns false, with *given_to the resource the
 * number of that stream was handed to, if a record says (else NULL).
 */
bool
provisional_check_stored(text *stream, text *resource, int64 seq,
						 text **given_to)
{
	ListCell   *lc;

	*given_to = NULL;
	foreach(lc, awaiting_check)
	{
		Provisional *p = lfirst(lc);

		if (p->seq != seq || !ordering_text_equal(p->stream, stream))
			continue;
		if (ordering_text_equal(p->resource, resource))
		{
			awaiting_check = foreach_delete_current(awaiting_check, lc);
			provisional_free(p);
			return true;
		}
		*given_to = p->resource;
	}
	return false;
}

/*
 * Forget the row seen moving at "level" or deeper (file header).
 */
static void
move_forget(int level)
{
	if (move.level < level)
		return;
	move.level = -1;
	move.updating_rel = InvalidOid;
	move.armed = false;
	move.stream = NULL;			/* TopTransactionContext frees it */
	move.resource = NULL;
}

/*
 * BEFORE UPDATE of a sequenced tuple: if BEFORE DELETE of the same tuple
 * follows at this level, the UPDATE is moving it to another partition.
 */
void
provisional_move_update(Oid relid, ItemPointer tid)
{
	move_forget(0);
	move.level = statement_level;
	move.subid = GetCurrentSubTransactionId();
	move.updating_rel = relid;
	move.updating_tid = *tid;
}

/*
 * BEFORE DELETE of a sequenced tuple: is it the tuple whose BEFORE UPDATE
 * fired last at this level, that is, is the UPDATE moving it?
 */
bool
provisional_move_delete(Oid relid, ItemPointer tid)
{
	bool		moving = move.level == statement_level && !move.armed &&
		move.updating_rel == relid && ItemPointerEquals(&move.updating_tid, tid);

	move_forget(0);
	return moving;
}

/*
 * The row being moved carries (stream, resource, seq): the BEFORE INSERT
 * that follows at this level may keep that number.
 */
void
provisional_move_arm(text *stream, text *resource, int64 seq)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	move.level = statement_level;
	move.subid = GetCurrentSubTransactionId();
	move.stream = (text *) PG_DETOAST_DATUM_COPY(PointerGetDatum(stream));
	move.resource = (text *) PG_DETOAST_DATUM_COPY(PointerGetDatum(resource));
	MemoryContextSwitchTo(old);
	move.seq = seq;
	move.armed = true;
}

/*
 * BEFORE INSERT of a row that carries (stream, resource, seq): is it the
 * row being moved?  The first insert at the level of the move decides:
 * the move is forgotten either way.
 */
bool
provisional_move_take(text *stream, text *resource, int64 seq)
{
	bool		match;

	if (!move.armed || move.level != statement_level)
		return false;
	match = move.seq == seq && ordering_text_equal(move.stream, stream) &&
		ordering_text_equal(move.resource, resource);
	move_forget(0);
	return match;
}

/*
 * Give back the numbers recorded at "level" (or at any level, with level
 * -1), newest first, so that several numbers at the top of one resource go
 * back one after the other.
 */
static void
give_back(int level)
{
	for (int i = list_length(provisionals) - 1; i >= 0; i--)
	{
		Provisional *p = list_nth(provisionals, i);

		if (level >= 0 && p->level != level)
			continue;
		if (!counter_give_back_in(p->counters, p->stream, p->resource, p->seq))
			ereport(ERROR,
					(errcode(ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION),
					 errmsg("sequence number " INT64_FORMAT " of resource \"%s\" in stream \"%s\" went to a row that was not inserted, and a later row already has a higher number",
							p->seq, text_to_cstring(p->resource),
							text_to_cstring(p->stream)),
					 errdetail("A row may be skipped by ON CONFLICT or by a BEFORE trigger that returns NULL; its number is given back, which is impossible once a higher number of the same resource was handed out."),
					 errhint("Insert the rows that may be skipped in statements of their own.")));
		provisionals = list_delete_nth_cell(provisionals, i);
	}
}

/*
 * Called by the sequencing trigger before it hands out a number: the rows
 * handed numbers earlier at this level are decided (file header).
 */
void
provisional_settle_level(void)
{
	if (provisionals != NIL)
		give_back(statement_level);
}

/*
 * May the sequencing trigger's row be skipped after it is numbered?  A
 * later BEFORE INSERT trigger of its table ("later_trigger") or the
 * statement may skip it (file header).
 */
bool
provisional_row_may_be_skipped(bool later_trigger)
{
	return later_trigger || statement_may_skip;
}

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
	bool		outer_may_skip = statement_may_skip;

	counter_statement_begin(bulk);
	statement_level++;
	statement_may_skip = may_skip;
	PG_TRY();
	{
		body(arg);
		move_forget(statement_level);
		if (provisionals != NIL)
			give_back(statement_level);
		counter_statement_end();
	}
	PG_CATCH();
	{
		move_forget(statement_level);
		counter_statement_abandon();
		statement_level--;
		statement_may_skip = outer_may_skip;
		PG_RE_THROW();
	}
	PG_END_TRY();
	statement_level--;
	statement_may_skip = outer_may_skip;
	Assert(statement_level >= 0);
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

	/*
	 * Tables whose rows the statement cannot skip do without the companion (a
	 * saving only: left on, it would find nothing to do).
	 */
	if (!statement_may_skip)
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
provisional_ExecutorRun(ORDERING_EXECUTOR_RUN_PARAMS)
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
provisional_ExecutorFinish(QueryDesc *queryDesc)
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

	if (prev_ProcessUtility)
		prev_ProcessUtility(a->pstmt, a->queryString, a->readOnlyTree,
							a->context, a->params, a->queryEnv, a->dest, a->qc);
	else
		standard_ProcessUtility(a->pstmt, a->queryString, a->readOnlyTree,
								a->context, a->params, a->queryEnv, a->dest,
								a->qc);
}

/*
 * ProcessUtility hook: COPY FROM stores rows without an executor run, so it
 * gets a level of its own; COPY has no ON CONFLICT (it filters rows
 * before triggers run), so it skips none.
 */
static void
provisional_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
						   bool readOnlyTree, ProcessUtilityContext context,
						   ParamListInfo params, QueryEnvironment *queryEnv,
						   DestReceiver *dest, QueryCompletion *qc)
{
	ProcessUtilityArgs a = {pstmt, queryString, readOnlyTree, context, params,
	queryEnv, dest, qc};

	if (IsA(pstmt->utilityStmt, CopyStmt))
		run_statement(false, ((CopyStmt *) pstmt->utilityStmt)->is_from,
					  process_utility, &a);
	else
		process_utility(&a);
}

/*
 * Before commit or prepare: give back whatever is left (file header).  At
 * the end of a transaction: forget everything.
 */
static void
provisional_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			if (provisionals != NIL || counter_any_held())
			{
				PushActiveSnapshot(GetTransactionSnapshot());
				if (provisionals != NIL)
					give_back(-1);
				counter_before_commit();
				PopActiveSnapshot();
			}
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			provisionals = NIL; /* TopTransactionContext goes away */
			awaiting_check = NIL;
			move_forget(0);
			break;
		default:
			break;
	}
}

/*
 * A subtransaction that aborts takes its records, and those of the
 * subtransactions it contained (their IDs are higher), with it.
 */
static void
provisional_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							 SubTransactionId parentSubid, void *arg)
{
	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	if (move.level >= 0 && move.subid >= mySubid)
		move_forget(0);
	for (int i = list_length(provisionals) - 1; i >= 0; i--)
	{
		Provisional *p = list_nth(provisionals, i);

		if (p->subid >= mySubid)
			provisionals = list_delete_nth_cell(provisionals, i);
	}
	/* their companions' events went with the subtransaction too */
	for (int i = list_length(awaiting_check) - 1; i >= 0; i--)
	{
		Provisional *p = list_nth(awaiting_check, i);

		if (p->subid >= mySubid)
			awaiting_check = list_delete_nth_cell(awaiting_check, i);
	}
}

/*
 * Install the hooks and callbacks (from _PG_init, whether or not the library
 * is preloaded).
 */
void
provisional_init(void)
{
	prev_ExecutorRun = ExecutorRun_hook;
	ExecutorRun_hook = provisional_ExecutorRun;
	prev_ExecutorFinish = ExecutorFinish_hook;
	ExecutorFinish_hook = provisional_ExecutorFinish;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = provisional_ProcessUtility;
	RegisterXactCallback(provisional_xact_callback, NULL);
	RegisterSubXactCallback(provisional_subxact_callback, NULL);
}
