/*-------------------------------------------------------------------------
 *
 * standbys.c
 *	  Failover-safe publishing: ordering.wait_for_standbys() and its setting
 *	  (README.md, "Failover-safe publishing").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xlogdefs.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/pg_lsn.h"
#include "utils/timestamp.h"

#include "producer.h"

PG_FUNCTION_INFO_V1(ordering_wait_for_standbys);

int			ordering_min_standbys = 1;

/* how often the standbys' positions are read while waiting */
#define STANDBY_POLL_MS		1

/* What the standbys have confirmed, as counted by read_standbys() */
typedef struct StandbyProgress
{
	int			count;			/* standbys that count */
	XLogRecPtr	lowest_flush;	/* the lowest flush position among them */
} StandbyProgress;

/*
 * The WAL position every commit seen so far ends at or before: the insert
 * position, moved back to the page boundary when it points just past a page
 * header (see README.md).
 */
static XLogRecPtr
seen_wal_end(void)
{
	XLogRecPtr	pos = GetXLogInsertRecPtr();

	if (XLogSegmentOffset(pos, wal_segment_size) == SizeOfXLogLongPHD)
		pos -= SizeOfXLogLongPHD;
	else if (pos % XLOG_BLCKSZ == SizeOfXLogShortPHD)
		pos -= SizeOfXLogShortPHD;
	return pos;
}

/*
 * Whether the WAL sender with this pid streams to a database (logical
 * replication).  A process that has gone away counts as not physical.
 */
static bool
sender_is_physical(pid_t pid)
{
	PGPROC	   *proc = BackendPidGetProc(pid);

	return proc != NULL && !OidIsValid(proc->databaseId);
}

/*
 * Count the standbys that count (see README.md) and the lowest flush
 * position they have reported.
 */
static StandbyProgress
read_standbys(void)
{
	StandbyProgress progress = {0, InvalidXLogRecPtr};
	int			i;

	for (i = 0; i < max_wal_senders; i++)
	{
		WalSnd	   *walsnd = &WalSndCtl->walsnds[i];
		pid_t		pid;
		WalSndState state;
		XLogRecPtr	flush;
		XLogRecPtr	apply;

		SpinLockAcquire(&walsnd->mutex);
		pid = walsnd->pid;
		state = walsnd->state;
		flush = walsnd->flush;
		apply = walsnd->apply;
		SpinLockRelease(&walsnd->mutex);

		if (pid == 0 ||
			(state != WALSNDSTATE_CATCHUP && state != WALSNDSTATE_STREAMING))
			continue;
		if (XLogRecPtrIsInvalid(apply) || !sender_is_physical(pid))
			continue;
		if (progress.count == 0 || flush < progress.lowest_flush)
			progress.lowest_flush = flush;
		progress.count++;
	}
	return progress;
}

/*
 * Define ordering.min_standbys (called by _PG_init).
 */
void
ordering_standbys_define_settings(void)
{
	DefineCustomIntVariable("ordering.min_standbys",
							gettext_noop("Least number of connected standbys that must have flushed the WAL before ordering.wait_for_standbys() returns, as claim_unpublished(replicated => true) does."),
							gettext_noop("Every connected standby must have flushed it too; a standby that is not connected does not count."),
							&ordering_min_standbys,
							1, 1, 1000,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
}

/*
 * The timeout argument in milliseconds; refuses a negative one.
 */
static long
timeout_ms(Interval *timeout)
{
	int64		usecs;

	usecs = timeout->time +
		(int64) timeout->day * USECS_PER_DAY +
		(int64) timeout->month * DAYS_PER_MONTH * USECS_PER_DAY;
	if (usecs < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("timeout must not be negative")));
	/* a day is plenty; it also keeps the arithmetic far from overflowing */
	return (long) Min(usecs / 1000, (int64) 24 * 3600 * 1000);
}

/*
 * ordering.wait_for_standbys(timeout interval) returns pg_lsn
 *
 * Waits until every connected standby, and at least ordering.min_standbys
 * of them, has flushed the WAL of everything the caller has seen so far,
 * and returns that WAL position; raises SQLSTATE 55000 when that has not
 * happened within the timeout (see README.md).
 */
Datum
ordering_wait_for_standbys(PG_FUNCTION_ARGS)
{
	long		wait_ms;
	XLogRecPtr	target;
	TimestampTz deadline;
	StandbyProgress progress;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("timeout must not be null")));
	wait_ms = timeout_ms(PG_GETARG_INTERVAL_P(0));
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("recovery is in progress"),
				 errhint("Wait for standbys on the primary.")));

	target = seen_wal_end();
	XLogFlush(target);
	Assert(GetFlushRecPtr(NULL) >= target);
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms);
	for (;;)
	{
		long		left;

		progress = read_standbys();
		if (progress.count >= ordering_min_standbys &&
			progress.lowest_flush >= target)
			PG_RETURN_LSN(target);

		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (left <= 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(left, STANDBY_POLL_MS), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}

	if (progress.count == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the standbys have not confirmed within %ld ms that they have the WAL this transaction has seen",
						wait_ms),
				 errdetail("No standby is connected."),
				 errhint("Publish nothing this transaction has read: roll it back and try again later.")));
	if (progress.count < ordering_min_standbys)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the standbys have not confirmed within %ld ms that they have the WAL this transaction has seen",
						wait_ms),
				 errdetail_plural("%d standby is connected; ordering.min_standbys requires %d.",
								  "%d standbys are connected; ordering.min_standbys requires %d.",
								  progress.count, progress.count,
								  ordering_min_standbys),
				 errhint("Publish nothing this transaction has read: roll it back and try again later.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the standbys have not confirmed within %ld ms that they have the WAL this transaction has seen",
					wait_ms),
			 errdetail_plural("%d standby is connected; the one furthest behind has flushed up to %X/%X, before %X/%X.",
							  "%d standbys are connected; the one furthest behind has flushed up to %X/%X, before %X/%X.",
							  progress.count, progress.count,
							  LSN_FORMAT_ARGS(progress.lowest_flush),
							  LSN_FORMAT_ARGS(target)),
			 errhint("Publish nothing this transaction has read: roll it back and try again later.")));
	PG_RETURN_NULL();			/* not reached */
}
