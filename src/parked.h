/*-------------------------------------------------------------------------
 *
 * parked.h
 *	  Storage of ordering.parked and the gap requests of a key.
 *
 * Every function here expects the caller to hold the key lock of the
 * (consumer, resource) it touches (keyed_lock_key on ordering.positions);
 * see parked.c for why that makes its reads the truth.
 * parked_drain_finish() also takes ROW EXCLUSIVE on ordering.gap_requests
 * and may wait there for a running gap sweep (gaps.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_PARKED_H
#define ORDERING_PARKED_H

#include "access/skey.h"
#include "executor/tuptable.h"
#include "storage/itemptr.h"
#include "utils/relcache.h"

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

/* ordering.parked and its primary key, open for probing */
typedef struct ParkedScan
{
	Relation	rel;
	Relation	idx;
	TupleTableSlot *slot;
} ParkedScan;

extern void parked_ready_add(ReadyList *list, int64 seq, Datum payload,
							 bool isnull);

extern void parked_open(ParkedScan *ps);
extern void parked_close(ParkedScan *ps);
extern bool parked_lowest(ParkedScan *ps, text *consumer, text *resource,
						  int64 *seq);
extern bool parked_highest(ParkedScan *ps, text *consumer, text *resource,
						   int64 *seq);
extern bool parked_exists(ParkedScan *ps, text *consumer, text *resource,
						  int64 seq);
extern int64 parked_count(ParkedScan *ps, text *consumer, text *resource,
						  int64 limit);
extern int64 parked_read_run(ParkedScan *ps, text *consumer, text *resource,
							 int64 from, ReadyList *ready, bool *beyond);

extern void parked_insert(text *consumer, text *resource, int64 seq,
						  Datum payload, bool isnull);
extern void parked_drain_finish(text *consumer, text *resource,
								ReadyList *ready, int first, int64 from,
								int64 position, bool nothing_left);

#endif							/* ORDERING_PARKED_H */
