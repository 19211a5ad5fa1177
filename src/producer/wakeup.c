/*-------------------------------------------------------------------------
 *
 * wakeup.c
 *	  The relay wake-up: one NOTIFY ordering_outbox per committing
 *	  transaction that stored rows of a stream that asked for it (README.md,
 *	  "The relay wake-up").
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
 * is on: arm the wake-up of its stream (README.md).
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
 * wake-up if it is armed (README.md).
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
