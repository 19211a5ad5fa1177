/*-------------------------------------------------------------------------
 *
 * parked.h
 *	  The parked events of a (consumer, resource), and its gap request.
 *
 * Every change to these goes with a new version of the key's row in
 * ordering.positions, written first (decisions.c): that row serializes the
 * key, and says how many events are parked and the lowest and highest of
 * their seqs.  See README.md, "Parked events and gap requests".
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

/*
 * What the position row of a key says of its parked events: how many, the
 * lowest and highest seq (0 and 0 when none).  count -1: not known, count
 * them (decisions.c).
 */
typedef struct ParkedSummary
{
	int64		count;
	int64		lowest;
	int64		highest;
} ParkedSummary;

extern void parked_ready_add(ReadyList *list, int64 seq, Datum payload,
							 bool isnull);
extern bool parked_lowest(OwnedRel *parked, const Datum *key,
						  Snapshot snapshot, int64 *seq);
extern bool parked_exists(OwnedRel *parked, const Datum *key, int64 seq,
						  Snapshot snapshot);
extern void parked_summarize(OwnedRel *parked, const Datum *key,
							 Snapshot snapshot, ParkedSummary *summary);
extern int64 parked_read_run(OwnedRel *parked, const Datum *key, int64 from,
							 Snapshot snapshot, ReadyList *ready, int64 *next);
extern int64 parked_read_known_run(OwnedRel *parked, const Datum *key,
								   int64 from, const ParkedSummary *summary,
								   Snapshot snapshot, ReadyList *ready,
								   int64 *next);
extern void parked_insert(OwnedRel *parked, const Datum *key, int64 seq,
						  Datum payload, bool isnull);
extern void parked_settle_gap(Oid gap_requests, const Datum *key,
							  int64 position, bool nothing_left);

#endif							/* ORDERING_PARKED_H */
