/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The gap sweeper's background workers: the launcher, and a sweeper per
 *	  listed database (README.md, "The background workers").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"
#include "utils/wait_event.h"

#include "gaps.h"
#include "plans.h"
#include "settings.h"
#include "stats.h"

PGDLLEXPORT void ordering_launcher_main(Datum main_arg);
PGDLLEXPORT void ordering_sweeper_main(Datum main_arg);

#define LAUNCHER_TYPE			"ordering launcher"
#define SWEEPER_TYPE			"ordering gap sweeper"
#define LAUNCHER_RESTART_SECS	5

/* What the launcher hands a sweeper, in bgw_extra */
typedef struct SweeperArgs
{
	char		dbname[NAMEDATALEN];
	char		role[NAMEDATALEN];
} SweeperArgs;

StaticAssertDecl(sizeof(SweeperArgs) <= BGW_EXTRALEN, "sweeper arguments too long");

/* The launcher's record of one listed database */
typedef struct SweeperSlot
{
	SweeperArgs args;
	BackgroundWorkerHandle *handle; /* NULL while none runs */
	TimestampTz next_start;		/* earliest (re)start */
	bool		seen;			/* still listed (reconcile scratch) */
	bool		warned;			/* problem logged since the last start */
} SweeperSlot;

static List *slots = NIL;		/* of SweeperSlot *, in TopMemoryContext */

/*
 * Fill in a worker of this library: its entry point, type and restart
 * policy; the caller names it and adds what else it needs.
 */
static void
worker_init(BackgroundWorker *worker, const char *function, const char *type,
			int restart_time)
{
	memset(worker, 0, sizeof(*worker));
	worker->bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker->bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker->bgw_restart_time = restart_time;
	snprintf(worker->bgw_library_name, BGW_MAXLEN, "ordering");
	snprintf(worker->bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(worker->bgw_type, BGW_MAXLEN, "%s", type);
}

/*
 * Register the launcher; called from _PG_init when preloaded.
 */
void
ordering_worker_register(void)
{
	BackgroundWorker worker;

	worker_init(&worker, "ordering_launcher_main", LAUNCHER_TYPE,
				LAUNCHER_RESTART_SECS);
	snprintf(worker.bgw_name, BGW_MAXLEN, LAUNCHER_TYPE);
	RegisterBackgroundWorker(&worker);
}

/*
 * Milliseconds from now until "when" (0 if past), at most "cap".
 */
static long
ms_until(TimestampTz when, long cap)
{
	long		ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), when);

	return Min(ms, cap);
}

/*
 * Does the database exist?  The launcher, connected to no database, can
 * only scan the shared catalog pg_database sequentially (as the autovacuum
 * launcher does): the syscache and its indexes need a database.
 */
static bool
database_exists(const char *dbname)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (!found && (tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);

		found = (strcmp(NameStr(db->datname), dbname) == 0);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return found;
}

/*
 * Start the sweeper of one slot; false if no worker slot was free.
 */
static bool
start_sweeper(SweeperSlot *slot)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	MemoryContext old;

	worker_init(&worker, "ordering_sweeper_main", SWEEPER_TYPE,
				BGW_NEVER_RESTART);
	snprintf(worker.bgw_name, BGW_MAXLEN, SWEEPER_TYPE " for database %s",
			 slot->args.dbname);
	memcpy(worker.bgw_extra, &slot->args, sizeof(SweeperArgs));
	worker.bgw_notify_pid = MyProcPid;

	old = MemoryContextSwitchTo(TopMemoryContext);
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		handle = NULL;
	MemoryContextSwitchTo(old);
	slot->handle = handle;
	return handle != NULL;
}

/*
 * Stop the sweeper of a slot, if one runs.
 */
static void
stop_sweeper(SweeperSlot *slot)
{
	if (slot->handle != NULL)
	{
		TerminateBackgroundWorker(slot->handle);
		pfree(slot->handle);
		slot->handle = NULL;
	}
}

/*
 * before_shmem_exit callback of the launcher: stop all sweepers.
 */
static void
launcher_exit(int code, Datum arg)
{
	ListCell   *lc;

	foreach(lc, slots)
		stop_sweeper((SweeperSlot *) lfirst(lc));
}

/*
 * Bring the running sweepers in line with the settings.  Returns how long
 * the launcher may sleep before something is due, in milliseconds.
 */
static long
reconcile(bool reloaded)
{
	long		interval_ms = (long) ordering_sweep_interval * 1000L;
	long		sleep_ms = interval_ms;
	char	   *raw;
	const char *role = ordering_sweep_role ? ordering_sweep_role : "";
	List	   *names = NIL;
	ListCell   *lc;
	List	   *kept = NIL;

	/* the slot list lives there; transactions below switch back to it too */
	MemoryContextSwitchTo(TopMemoryContext);
	raw = pstrdup(ordering_sweep_databases ? ordering_sweep_databases : "");

	if (!SplitGUCList(raw, ',', &names))
	{
		ereport(WARNING,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid list syntax in parameter \"ordering.sweep_databases\"")));
		names = NIL;
	}

	foreach(lc, slots)
		((SweeperSlot *) lfirst(lc))->seen = false;

	foreach(lc, names)
	{
		const char *name = (const char *) lfirst(lc);
		SweeperSlot *slot = NULL;
		ListCell   *lc2;

		if (strlen(name) >= NAMEDATALEN || strlen(role) >= NAMEDATALEN)
			continue;			/* no such database or role can exist */
		foreach(lc2, slots)
		{
			SweeperSlot *s = (SweeperSlot *) lfirst(lc2);

			if (strcmp(s->args.dbname, name) == 0)
				slot = s;
		}
		if (slot != NULL && strcmp(slot->args.role, role) != 0)
		{
			/* the role changed: start over as the new one */
			stop_sweeper(slot);
			strlcpy(slot->args.role, role, NAMEDATALEN);
			slot->next_start = 0;
		}
		if (slot == NULL)
		{
			slot = MemoryContextAllocZero(TopMemoryContext, sizeof(SweeperSlot));
			strlcpy(slot->args.dbname, name, NAMEDATALEN);
			strlcpy(slot->args.role, role, NAMEDATALEN);
			slots = lappend(slots, slot);
		}
		slot->seen = true;
	}

	foreach(lc, slots)
	{
		SweeperSlot *slot = (SweeperSlot *) lfirst(lc);
		pid_t		pid;

		if (!slot->seen)
		{
			stop_sweeper(slot);
			pfree(slot);
			continue;
		}
		kept = lappend(kept, slot);

		if (slot->handle != NULL &&
			GetBackgroundWorkerPid(slot->handle, &pid) == BGWH_STOPPED)
		{
			/* it exited: restart after the interval (set at its start) */
			pfree(slot->handle);
			slot->handle = NULL;
		}
		if (slot->handle != NULL)
			continue;

		/* a changed configuration may have fixed what kept it from running */
		if (reloaded)
			slot->next_start = 0;
		if (GetCurrentTimestamp() >= slot->next_start)
		{
			slot->next_start = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														   interval_ms);
			if (!database_exists(slot->args.dbname))
			{
				if (!slot->warned)
					ereport(WARNING,
							(errcode(ERRCODE_UNDEFINED_DATABASE),
							 errmsg("database \"%s\" listed in ordering.sweep_databases does not exist",
									slot->args.dbname)));
				slot->warned = true;
			}
			else if (!start_sweeper(slot))
			{
				if (!slot->warned)
					ereport(WARNING,
							(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
							 errmsg("could not start the gap sweeper for database \"%s\"",
									slot->args.dbname),
							 errhint("Raise max_worker_processes; the launcher retries every ordering.sweep_interval.")));
				slot->warned = true;
			}
			else
				slot->warned = false;
		}
		if (slot->handle == NULL)
			sleep_ms = Min(sleep_ms, ms_until(slot->next_start, interval_ms));
	}
	list_free(slots);
	slots = kept;
	pfree(raw);
	list_free(names);
	return Max(sleep_ms, 10);
}

/*
 * Entry point of the launcher.
 */
void
ordering_launcher_main(Datum main_arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname(LAUNCHER_TYPE);
	before_shmem_exit(launcher_exit, (Datum) 0);

	ereport(LOG, (errmsg("ordering launcher started")));

	for (;;)
	{
		long		sleep_ms;
		bool		reloaded = false;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			reloaded = true;
		}

		sleep_ms = reconcile(reloaded);
		pgstat_report_activity(STATE_IDLE, NULL);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 sleep_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * Remove the statistics files of this database's prepared transactions
 * that ended without taking them back (stats.h).  Runs whether or not the
 * extension is installed: it may have been dropped since.  Reads
 * pg_prepared_xacts only when pg_stat/ holds such a file: most sweeps find
 * none.
 */
static void
forget_prepared_orphans(void)
{
	static SPIPlanPtr plan = NULL;
	List	   *gids = NIL;
	int			ret;

	if (!stats_prepared_any_file())
		return;
	ret = SPI_execute_plan(ordering_prepare_once(&plan,
												 "SELECT gid FROM pg_catalog.pg_prepared_xacts",
												 0, NULL, 0),
						   NULL, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "reading pg_prepared_xacts failed: %s",
			 SPI_result_code_string(ret));
	for (uint64 i = 0; i < SPI_processed; i++)
		gids = lappend(gids, SPI_getvalue(SPI_tuptable->vals[i],
										  SPI_tuptable->tupdesc, 1));
	stats_prepared_forget_orphans(gids);
}

/*
 * One sweep of the connected database, in its own transaction.  Returns
 * whether the extension is installed.
 */
static bool
sweep_once(void)
{
	static SPIPlanPtr plan = NULL;
	static bool logged_restoring = false;
	bool		installed;
	const char *sql = "SELECT pg_catalog.count(*) FROM ordering.sweep_gaps()";

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());

	installed = OidIsValid(get_extension_oid("ordering", true));
	if (installed && ordering_database_restoring())
	{
		/* sweep_gaps() would refuse: wait for ordering.post_restore() */
		if (!logged_restoring)
			ereport(LOG,
					(errmsg("database \"%s\" is being restored, the ordering gap sweeper waits for ordering.post_restore()",
							get_database_name(MyDatabaseId))));
		logged_restoring = true;
	}
	else if (installed)
	{
		int			ret;
		bool		isnull;
		int64		emitted;

		logged_restoring = false;

		pgstat_report_activity(STATE_RUNNING, sql);
		ret = SPI_execute_plan(ordering_prepare_once(&plan, sql, 0, NULL, 0),
							   NULL, NULL, false, 0);
		if (ret != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "gap sweep failed: %s", SPI_result_code_string(ret));
		emitted = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 1, &isnull));
		ereport(DEBUG1,
				(errmsg("ordering gap sweeper swept database \"%s\"",
						get_database_name(MyDatabaseId))));
		if (emitted > 0)
			ereport(LOG,
					(errmsg("ordering gap sweeper emitted " INT64_FORMAT " gap requests in database \"%s\"",
							emitted, get_database_name(MyDatabaseId))));
	}

	forget_prepared_orphans();

	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(true);
	pgstat_report_activity(STATE_IDLE, NULL);
	return installed;
}

/*
 * Entry point of a sweeper: bgw_extra holds the database and role.
 */
void
ordering_sweeper_main(Datum main_arg)
{
	SweeperArgs args;
	bool		logged_missing = false;

	memcpy(&args, MyBgworkerEntry->bgw_extra, sizeof(SweeperArgs));

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	BackgroundWorkerInitializeConnection(args.dbname,
										 args.role[0] ? args.role : NULL, 0);
	pgstat_report_appname(SWEEPER_TYPE);

	for (;;)
	{
		TimestampTz last = GetCurrentTimestamp();

		if (sweep_once())
			logged_missing = false;
		else if (!logged_missing)
		{
			ereport(LOG,
					(errmsg("extension \"ordering\" is not installed in database \"%s\", not sweeping it",
							args.dbname),
					 errdetail("The gap sweeper checks again every ordering.sweep_interval.")));
			logged_missing = true;
		}

		/* wait for the interval, measured from the start of the sweep */
		for (;;)
		{
			long		wait_ms;

			CHECK_FOR_INTERRUPTS();
			if (ConfigReloadPending)
			{
				ConfigReloadPending = false;
				ProcessConfigFile(PGC_SIGHUP);
			}
			wait_ms = ms_until(TimestampTzPlusMilliseconds(last,
														   (int64) ordering_sweep_interval * 1000),
							   (long) ordering_sweep_interval * 1000L);
			if (wait_ms <= 0)
				break;
			(void) WaitLatch(MyLatch,
							 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 wait_ms, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
	}
}
