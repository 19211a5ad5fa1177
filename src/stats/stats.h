/*-------------------------------------------------------------------------
 *
 * stats.h
 *	  Statistics hooks called by the producer and consumer code.
 *
 * Callers report what happened as it happens; the statistics code keeps it
 * pending in backend memory and publishes it at commit only, so work that is
 * rolled back is never counted.  Without shared_preload_libraries the hooks
 * are cheap no-ops.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_STATS_H
#define ORDERING_STATS_H

#include "nodes/pg_list.h"

#include "stats_events.h"

/*
 * What the consumer functions count (decisions.c, newer_only.c), per consumer:
 *
 * apply_if_newer(c, r, seq), position p before the call:
 *	CONSUMED 1, and APPLIED 1 if seq > p, DUPLICATE 1 if seq = p, STALE 1 if
 *	seq < p.
 * deliver(c, r, seq, ...), position p before the call:
 *	CONSUMED 1, and then one of
 *	- seq < p: STALE 1; seq = p, or seq already parked: DUPLICATE 1;
 *	- seq = p + 1: APPLIED n, where n is the number of events returned (or
 *	  handed to the handler): this one plus the parked run it continues, and
 *	  DRAINED n - 1 for those parked ones;
 *	- seq > p + 1: PARKED 1, and reorder distance seq - p.
 *	So CONSUMED = APPLIED - DRAINED + STALE + DUPLICATE + PARKED.
 *	A delivery refused by the parking cap (SQLSTATE 54000) counts nothing.
 * skip_gap(c, r): APPLIED n and DRAINED n for the n parked events it returns
 *	(nothing is CONSUMED: no event is handed in).
 * newer_only('version', c), for each UPDATE that reaches the trigger:
 *	CONSUMED 1, and APPLIED 1 if the new version is greater (or the stored
 *	one NULL), DUPLICATE 1 if equal, STALE 1 if smaller.  The first INSERT
 *	of a row fires no UPDATE trigger and is not counted.
 * Errors count nothing: every count is made after the decision, and pending
 * counts of aborted work are never published.
 *
 * Dead letters and skipped events (1.1):
 * deliver(c, r, seq, payload, handler, on_error => 'dead_letter'), when the
 *	handler fails on the k-th of the events handed to it (k >= 1; the
 *	delivered one is the first, the k - 1 others were parked): CONSUMED 1
 *	as always, APPLIED k - 1 for those that ran, DRAINED k - 1 for the
 *	parked ones handed out, DEAD_LETTERED 1.  A delivered event that fails
 *	is thus CONSUMED and DEAD_LETTERED; a parked one that fails while
 *	draining was PARKED when it arrived and is now DRAINED (it left
 *	ordering.parked) and DEAD_LETTERED.
 * dead_letter(c, r, seq, ...), a table-form consumer giving up on the event
 *	it was handed (its deliver() was rolled back with the failed work):
 *	CONSUMED 1, DEAD_LETTERED 1.
 * While a resource is blocked at seq b: a redelivery of b is DUPLICATE 1,
 *	a later event PARKED 1 with its reorder distance, as early events are.
 * retry_dead_letter(c, r [, handler]): APPLIED n and DRAINED n for the n
 *	events handed out (the dead one and the parked run behind it; it was
 *	set aside, so it drains like a parked one).  If the handler fails on the
 *	dead event again, nothing is counted (it stays dead, attempts + 1).
 * discard_dead_letter(c, r): SKIPPED 1 for the dead event, then APPLIED n
 *	and DRAINED n for what drains behind it.
 * skip_gap(c, r): SKIPPED m for the m missing events it gives up on
 *	(lowest parked seq - position - 1), then APPLIED n and DRAINED n.
 *	So, over any interval in which no counts were lost:
 *	CONSUMED + DRAINED = APPLIED + STALE + DUPLICATE + PARKED + DEAD_LETTERED
 *	(without dead letters this is the identity above).  SKIPPED counts
 *	events that were never consumed (or were dead-lettered already) and is
 *	not part of it.
 *
 * Hot resources: ordering_stats_hot_resource() offers events of one resource
 * to the heavy-hitters sketch of a stream ('s') or consumer ('c'), counted at
 * commit like the counters.  The producer offers every sequence number it
 * assigns (with ordering_stats_sequence_assigned()), the consumer functions
 * every CONSUMED event (n = 1 per event handed in).
 *
 * Sequence conflicts: ordering_stats_sequence_conflict() counts a supplied
 * sequence number refused with SQLSTATE 40001.  The refusing transaction
 * rolls back, so this one count is published at once, into shared memory,
 * not at commit: it survives the abort (and a rolled-back savepoint).
 *
 * Reconciliation (1.1): each ordering.reconcile() call counts, per stream,
 * through the SQL function ordering_internal.count_reconciled() (stats.c):
 * the resources it returns with status 'behind', dry runs included (what
 * was found is an observation), the events it made unpublished again (none
 * in a dry run), and the missing events it found no longer in the outbox
 * (dry runs included).  A resource behind that a later call finds again is
 * counted again.  At commit, like the rest.
 */

/* Called from _PG_init: request shared memory when preloaded. */
extern void ordering_stats_init(void);

/* Count n events of one kind for a consumer. */
extern void ordering_stats_count(const char *consumer, OrderingEvent event, int64 n);

/* Record the reorder distance (seq - position) of an early arrival. */
extern void ordering_stats_reorder_distance(const char *consumer, int64 distance);

/* Count n sequence numbers assigned in a stream. */
extern void ordering_stats_sequence_assigned(const char *stream, int64 n);

/*
 * Count a supplied sequence number of a stream refused with SQLSTATE 40001;
 * published at once (see above).  Never raises; takes the statistics LWLock
 * briefly, so call it with none of our LWLocks or spinlocks held (it is
 * meant for the moment before the error is raised).
 */
extern void ordering_stats_sequence_conflict(const char *stream);

/*
 * Offer n events of a resource to the hot-resources sketch of a stream
 * (kind 's') or consumer (kind 'c'); counted at commit.
 */
extern void ordering_stats_hot_resource(char kind, const char *name,
										const char *resource, int64 n);

/*
 * Remove the files in which the counts of this database's transactions
 * prepared for two-phase commit waited, when their transaction is no longer
 * among "prepared" (a List of GIDs) at two calls in a row
 * (stats_prepared.c); the gap sweeper calls it once per sweep in which
 * stats_prepared_any_file() found a file of them in pg_stat/.
 */
extern bool stats_prepared_any_file(void);
extern void stats_prepared_forget_orphans(List *prepared);

#endif							/* ORDERING_STATS_H */
