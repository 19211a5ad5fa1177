/*-------------------------------------------------------------------------
 *
 * standbys.c
 *	  Failover-safe publishing: ordering.wait_for_standbys(), which waits
 *	  until the streaming standbys have flushed everything the caller has
 *	  seen, so that a relay publishes nothing a failover could lose.
 *
 * With asynchronous replication a committed transaction may not have
 * reached any standby yet.  If the primary fails then, a promoted standby
 * never had that transaction, gives its sequence numbers to other events,
 * and consumers that already applied the lost events (because a relay
 * published them) drop the new ones as duplicates.  A relay that calls this
 * after reading the rows it is about to publish, and before publishing
 * them, only ever publishes what every connected standby has on disk.
 *
 * Which WAL position.  A transaction becomes visible to others (in a
 * snapshot, or as a committed update a row lock follows) only after its
 * commit record has been inserted into the WAL.  So every commit whose
 * effects the caller has seen so far ends at or before the WAL insert
 * position read now, and that position is the target.  It is flushed
 * locally first: a WAL sender streams only flushed WAL, and an idle server
 * may leave a partly filled page unflushed indefinitely when nothing
 * commits (the caller's own row locks, say), so without the flush the wait
 * could outlast any timeout.  At the start of a page the insert position
 * points past the page header, where no record has been written; the
 * target is then the page boundary, which is what a standby reports once
 * it has the page before.
 *
 * Which standbys.  A standby counts while a WAL sender of this server
 * streams to it (state catchup or streaming), it is physical (the sender is
 * not connected to a database, as a logical one is) and it replays WAL (it
 * has reported a replay position).  Synchronous or not makes no difference
 * (synchronous_standby_names is not read).  Every standby that counts must
 * have reported a flush position at or past the target, and at least
 * ordering.min_standbys of them (default 1) must count.  So pg_receivewal
 * and pg_basebackup, which report no replay position, and logical
 * replication never count; a standby that has not reported its positions
 * yet (it connected a moment ago) is not counted until it has; and a
 * standby that is not connected does not count at all: its WAL sender exits
 * when the connection closes (at once when the standby stops cleanly, after
 * wal_sender_timeout when it vanished), and from then on a primary with two
 * standbys, one stopped, waits for the other one only, unless
 * ordering.min_standbys = 2 says that both must have the WAL.  The primary
 * cannot know standbys that are not connected, so a number is the only
 * thing it can require of them.  Standbys that replicate from another
 * standby (cascading) are not seen.
 *
 * Why a setting and not an argument: how many standbys a failover may
 * promote from is a property of the cluster, the same for every relay and
 * for every call, and a relay of its own outbox table calls
 * wait_for_standbys() where claim_unpublished() calls it for the ready
 * outbox: one setting (ALTER ROLE relay SET, or for the whole server)
 * covers both without changing a call.  It can be set by any role, as a
 * relay may only make its own publishing safer or less safe.
 *
 * Waiting.  The positions are polled every millisecond (WAL senders wake
 * only synchronous-replication waiters), until the timeout; then an error
 * (SQLSTATE 55000) tells the caller to publish nothing.  Interrupts
 * (statement_timeout, cancel) are served while waiting.
 *
 * Locking: each WalSnd is read under its spinlock, as
 * pg_stat_get_wal_senders() does; BackendPidGetProc() takes ProcArrayLock
 * shared for the lookup.  Nothing is held across a sleep.
 *
 * Layer: the ground: it calls nothing of the extension.
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
 * header (see the file header).
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
 * Count the standbys that count (see the file header) and the lowest flush
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
 * happened within the timeout (see the file header).
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
