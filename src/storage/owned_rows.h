/*-------------------------------------------------------------------------
 *
 * owned_rows.h
 *	  The storage layer, part two: the rows of the extension's tables,
 *	  found, advanced, created, scanned and removed (owned_rows.c, whose
 *	  header says what isolation every caller gets).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_OWNED_ROWS_H
#define ORDERING_OWNED_ROWS_H

#include "owned.h"

/* A row of a table as a call found it */
typedef struct OwnedRow
{
	bool		found;
	ItemPointerData tid;		/* the version found */
	TransactionId xmin;			/* its inserter, and ... */
	CommandId	cmin;			/* ... when, if that was us */
	Datum		values[OWNED_MAX_NATTS];
	bool		nulls[OWNED_MAX_NATTS];
	HeapTuple	tuple;			/* the copy values point into */
} OwnedRow;

/*
 * What a decision does with the row it was shown: leave it as it is (no
 * write, no lock), or write the values it filled in (a new version, or a new
 * row; a version with the same values still counts as a write: it is how a
 * call tells concurrent ones that it changed what the row stands for).
 */
typedef enum OwnedVerdict
{
	OWNED_KEEP,
	OWNED_WRITE
} OwnedVerdict;

/*
 * Decides the new values of a row from the row as found (row->found false:
 * it does not exist; its key columns are filled in all the same).
 * owned_advance() calls it again, with the newer row, when a concurrent
 * transaction changed the row between the fetch and the write, so what it
 * does must be right to do again; only the last call's verdict is written.
 * What that allows, and why it is safe:
 *
 *	- It may read, other tables too: open them, take their locks, scan their
 *	  indexes (decide_deliver() counts the parked events of the key,
 *	  decide_retry() reads its dead letter).  It runs with no buffer pinned
 *	  or locked (the row it is shown is a copy) and outside any critical
 *	  section, so it may do whatever a statement may; a call made again reads
 *	  again, and the locks it took are held to the end of the transaction
 *	  either way, as a statement's are.
 *	- It may fill in state for its caller (arg), provided each call starts
 *	  that state afresh from the row it is shown (consumer_read_position()
 *	  empties the ready list), so that what survives is the last call's.
 *	- It may raise an error: nothing of this advance is written before it
 *	  returns, so the error aborts the statement like any other.
 *	- It must not write, count, log or notify anything: the caller does that
 *	  after owned_advance() returns, from what the last call decided.  Least
 *	  of all may it write the row's own table: the write that follows
 *	  replaces the version it was shown.
 */
typedef OwnedVerdict (*OwnedDecide) (const OwnedRow *row, Datum *values,
									 bool *nulls, void *arg);

/* A scan of a table's primary key over a key prefix */
typedef struct OwnedScan
{
	struct IndexScanDescData *scan;
	TupleTableSlot *slot;
} OwnedScan;

extern Snapshot owned_read_snapshot(SnapshotData *buf);
extern Snapshot owned_decision_snapshot(SnapshotData *buf);
extern bool owned_fetch(OwnedRel *orel, const Datum *key, Snapshot snapshot,
						OwnedRow *row);
extern bool owned_fetch_parked_cached(OwnedRel *orel, const Datum *key,
									  int64 seq, Snapshot snapshot,
									  OwnedRow *row);
extern void owned_advance(OwnedRel *orel, const Datum *key,
						  OwnedDecide decide, void *arg, OwnedRow *row);
extern void owned_insert(OwnedRel *orel, Datum *values, bool *nulls);
extern void owned_delete(OwnedRel *orel, ItemPointer tid);
extern void owned_update(OwnedRel *orel, const OwnedRow *row, Datum *values,
						 bool *nulls);
extern void owned_scan_begin(OwnedRel *orel, OwnedScan *scan,
							 const Datum *key, int nkeys,
							 StrategyNumber strategy, Datum bound,
							 Snapshot snapshot);
extern bool owned_scan_next(OwnedScan *scan, ScanDirection dir);
extern void owned_scan_end(OwnedScan *scan);

#endif							/* ORDERING_OWNED_ROWS_H */
