/*-------------------------------------------------------------------------
 *
 * wakeup.c
 *	  The relay wake-up: with ordering.wake_relays(tbl) on, every
 *	  transaction that stores rows in the table sends one
 *	  NOTIFY ordering_outbox, '<stream>' at its commit, so that a relay that
 *	  LISTENs claims them at once and polls only as a fallback.
 *
 * The option lives in the table's row of ordering.attachments (column
 * wake_relays; a partition follows the partitioned table it is attached
 * through), and the sequencing trigger reads it from the verdict it caches
 * per relation (attached.c): with the option off a row costs one boolean
 * test there and one here (ordering_wakeup_stored()).
 *
 * With the option on, the trigger arms the wake-up for the row's stream
 * (ordering_wakeup_arm()); once the row is known to be stored (producer.c:
 * at once, or when its companion AFTER INSERT trigger reports it), the
 * notification is queued with Async_Notify(), which is transactional: sent when the
 * transaction commits, dropped with a transaction or subtransaction that
 * rolls back, and sent once per transaction for each (channel, payload)
 * however often it was queued.  So a transaction that wrote the stream
 * sends exactly one wake-up for it at commit, one that rolled back sends
 * none, and a row that ON CONFLICT or a BEFORE trigger did not store sends
 * none.  To keep a million-row INSERT from queueing a million duplicates,
 * we skip the call when the same stream was queued last in the same
 * subtransaction: that notification is still pending (a subtransaction that
 * aborts takes its notifications with it, and its ID is never used again in
 * the transaction).
 *
 * The cost is PostgreSQL's: a transaction that sent a NOTIFY takes a
 * database-wide lock at commit while it writes the notification queue, so
 * the commits of such transactions follow one another (bench/RESULTS.md
 * measures it), and PREPARE TRANSACTION refuses a transaction that sent
 * one.  Hence off by default.
 *
 * A table distributed by Citus is refused: its rows are stored on the
 * workers, in transactions that Citus prepares for two-phase commit when
 * they span nodes, and PREPARE TRANSACTION refuses one that sent NOTIFY.
 *
 * Turning it on or off (ordering.wake_relays(), attachments.c, which
 * writes the registry) takes SHARE ROW EXCLUSIVE on the table and its
 * partitions, as CREATE TRIGGER does, so it waits for the transactions
 * writing them and takes effect for every one after it; their cached
 * verdicts are forgotten through a relcache invalidation.
 *
 * Layer: the ground of the producer side.  The counters (counters.c) call
 * it when a row is stored, the sequencing trigger (producer.c) arms it;
 * it calls nothing of the extension but text_equal.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/async.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "producer.h"
#include "text_equal.h"

bool		ordering_wakeup_armed = false;

/* The streams armed in this transaction, in TopTransactionContext */
static List *armed_streams = NIL;

/* The last notification queued: its stream (one of armed_streams) and
 * subtransaction */
static text *queued_stream = NULL;
static SubTransactionId queued_subid = InvalidSubTransactionId;

static bool callback_registered = false;

/*
 * At the end of a transaction: forget what it armed and queued.
 */
static void
wakeup_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			armed_streams = NIL;	/* TopTransactionContext goes away */
			queued_stream = NULL;
			queued_subid = InvalidSubTransactionId;
			ordering_wakeup_armed = false;
			break;
		default:
			break;
	}
}

/*
 * The sequencing trigger is about to number a row of a table whose option
 * is on: arm the wake-up of its stream (file header).
 */
void
ordering_wakeup_arm(text *stream)
{
	ListCell   *lc;
	MemoryContext old;

	if (!callback_registered)
	{
		RegisterXactCallback(wakeup_xact_callback, NULL);
		callback_registered = true;
	}
	foreach(lc, armed_streams)
	{
		if (ordering_text_equal((text *) lfirst(lc), stream))
			return;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	armed_streams = lappend(armed_streams,
							PG_DETOAST_DATUM_COPY(PointerGetDatum(stream)));
	MemoryContextSwitchTo(old);
	ordering_wakeup_armed = true;
}

/*
 * A row that got a number of "stream" was stored: queue the stream's
 * wake-up if it is armed (file header).
 */
void
ordering_wakeup_stored_row(text *stream)
{
	ListCell   *lc;
	SubTransactionId subid = GetCurrentSubTransactionId();

	if (queued_stream != NULL && queued_subid == subid &&
		ordering_text_equal(queued_stream, stream))
		return;
	foreach(lc, armed_streams)
	{
		text	   *armed = (text *) lfirst(lc);

		if (ordering_text_equal(armed, stream))
		{
			Async_Notify(ORDERING_WAKEUP_CHANNEL, text_to_cstring(armed));
			queued_stream = armed;
			queued_subid = subid;
			return;
		}
	}
}
