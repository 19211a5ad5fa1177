/*-------------------------------------------------------------------------
 *
 * parked.h
 *	  The parked events of a (consumer, resource), and its gap request.
 *
 * Every change to these goes with a new version of the key's row in
 * ordering.positions, written first (consumer.c): that row serializes the
 * key.  See parked.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_PARKED_H
#define ORDERING_PARKED_H

#include "owned.h"

/* An event to apply now: the one delivered, or a drained one */
typedef struct ReadyEvent
{
	int64		seq;
	Datum		payload;
	bool		isnull;
	ItemPointerData tid;		/* its row in ordering.parked, if drained */
} ReadyEvent;

/* The events a call hands back, in order, allocated in "cxt" */
typedef struct ReadyList
{
	ReadyEvent *events;
	int			n;
	int			size;
	MemoryContext cxt;
} ReadyList;

extern void parked_ready_add(ReadyList *list, int64 seq, Datum payload,
							 bool isnull);
extern bool parked_lowest(OwnedRel *parked, const Datum *key,
						  Snapshot snapshot, int64 *seq);
extern bool parked_highest(OwnedRel *parked, const Datum *key, int64 seq,
						   Snapshot snapshot, int64 *highest,
						   bool *seq_parked);
extern bool parked_exists(OwnedRel *parked, const Datum *key, int64 seq,
						  Snapshot snapshot);
extern int64 parked_count(OwnedRel *parked, const Datum *key, int64 limit,
						  Snapshot snapshot);
extern int64 parked_read_run(OwnedRel *parked, const Datum *key, int64 from,
							 Snapshot snapshot, ReadyList *ready, bool *beyond);
extern void parked_insert(OwnedRel *parked, const Datum *key, int64 seq,
						  Datum payload, bool isnull);
extern void parked_settle_gap(const Datum *key, int64 position,
							  bool nothing_left);

#endif							/* ORDERING_PARKED_H */
