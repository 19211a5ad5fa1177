/*-------------------------------------------------------------------------
 *
 * wakeup.h
 *	  The relay wake-up: one NOTIFY per committing transaction that wrote a
 *	  stream whose table has the option on (see wakeup.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_WAKEUP_H
#define ORDERING_WAKEUP_H

/* The channel relays LISTEN on; the payload is the stream's name */
#define ORDERING_WAKEUP_CHANNEL "ordering_outbox"

/* True once this transaction sequenced a row of a table with the option */
extern bool ordering_wakeup_armed;

extern void ordering_wakeup_arm(text *stream);
extern void ordering_wakeup_stored_row(text *stream);

/*
 * A row that got a number of "stream" was stored (producer.c): queue the
 * wake-up if the stream asked for one.  With the option off everywhere,
 * one load and a branch.
 */
static inline void
ordering_wakeup_stored(text *stream)
{
	if (unlikely(ordering_wakeup_armed))
		ordering_wakeup_stored_row(stream);
}

#endif							/* ORDERING_WAKEUP_H */
