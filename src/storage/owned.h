/*-------------------------------------------------------------------------
 *
 * owned.h
 *	  The storage layer: the only code that reads and writes the
 *	  extension's own tables below the executor.  Its tables (owned.c), and
 *	  their rows (owned_rows.c).
 *
 * README.md says which tables, the policy for a table someone altered, why
 * each PostgreSQL guarantee still holds, how rows are found, advanced,
 * created, scanned and removed, and the isolation every caller gets.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_OWNED_H
#define ORDERING_OWNED_H

#include "access/sdir.h"
#include "access/skey.h"
#include "executor/tuptable.h"
#include "storage/itemptr.h"
#include "storage/lockdefs.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

#include "compat.h"

/* The extension's tables this layer accesses, and the shapes of the tables
 * it opens by OID */
typedef enum OwnedTableId
{
	OWNED_SEQUENCES,			/* (stream, resource_id) -> last_seq */
	OWNED_POSITIONS,			/* (consumer, resource_id) -> position,
								 * blocked_at, parked summary */
	OWNED_PARKED,				/* (consumer, resource_id, seq) -> payload,
								 * parked_at */
	OWNED_GAP_REQUESTS,			/* (consumer, resource_id) -> the open gap */
	OWNED_DEAD_LETTERS,			/* (consumer, resource_id) -> the dead letter */
	OWNED_ATTACHMENTS,			/* tbl -> its stream */
	OWNED_NUM_TABLES
} OwnedTableId;

/* Columns, by attribute number */
#define SEQUENCES_STREAM		1
#define SEQUENCES_RESOURCE		2
#define SEQUENCES_LAST_SEQ		3

#define POSITIONS_CONSUMER		1
#define POSITIONS_RESOURCE		2
#define POSITIONS_POSITION		3
#define POSITIONS_BLOCKED_AT	4
#define POSITIONS_PARKED_COUNT	5
#define POSITIONS_PARKED_LOWEST	6
#define POSITIONS_PARKED_HIGHEST	7

#define PARKED_CONSUMER			1
#define PARKED_RESOURCE			2
#define PARKED_SEQ				3
#define PARKED_PAYLOAD			4
#define PARKED_PARKED_AT		5

#define GAP_REQUESTS_CONSUMER	1
#define GAP_REQUESTS_RESOURCE	2
#define GAP_REQUESTS_MISSING_TO	4

#define DEAD_CONSUMER			1
#define DEAD_RESOURCE			2
#define DEAD_SEQ				3
#define DEAD_PAYLOAD			4
#define DEAD_SQLSTATE			5
#define DEAD_MESSAGE			6
#define DEAD_DETAIL				7
#define DEAD_FAILED_AT			8
#define DEAD_ATTEMPTS			9

#define ATTACHMENTS_TBL			1
#define ATTACHMENTS_STREAM		2
#define ATTACHMENTS_RESOURCE_COLUMN	3
#define ATTACHMENTS_SEQUENCE_COLUMN	4
#define ATTACHMENTS_ATTACHED	5
#define ATTACHMENTS_ATTACHED_AT	6
#define ATTACHMENTS_WAKE_RELAYS	7

/*
 * The resource id of every table that may have a routing column (README.md):
 * the counters and the consumer's tables, where Citus distributes them
 */
#define OWNED_RESOURCE_COLUMN	2

/* The widest of the tables, with a routing column */
#define OWNED_MAX_NATTS			10

/*
 * The longest key, in bytes, we accept.  Two of them and a bigint always fit
 * a btree entry of our tables (at most about 2.7 kB), and an over-long key
 * is refused as a bad value instead of by the btree with SQLSTATE 54000,
 * which the contract gives to "parked cap reached, redeliver later".
 */
#define OWNED_MAX_KEY_BYTES		1024

/* One of the tables, open for one call */
typedef struct OwnedRel
{
	OwnedTableId id;			/* the table, or the shape of one opened by
								 * OID */
	Relation	rel;
	Relation	pk;				/* its primary key: NULL until owned_pk() */
	LOCKMODE	mode;
	int			nkeys;			/* its key columns: those of its definition (a
								 * routing column aside) */
	AttrNumber	routing_att;	/* a table found by OID: its routing column
								 * (owned.c), or 0 */
	TupleDesc	desc;			/* the columns rows are read and written with:
								 * the table's own (owned.c) */
	MemoryContext cxt;			/* where what lives as long as the call is */
	int			nindexes;		/* -1 until the first index entry is made */
	Relation   *indexes;		/* the indexes that get entries, ... */
	struct IndexInfo **infos;	/* ... and theirs, built once per call, at the
								 * first index entry the call makes, as
								 * ExecOpenIndices() builds them once per
								 * statement (owned.c, open_indexes) */
	bool		indexed_known;	/* false until the first in-place check, ... */
	Bitmapset  *indexed;		/* ... which reads the columns its indexes
								 * cover once per call (owned.c) */
} OwnedRel;

/*
 * owned.c: the tables.  owned_open() opens one of the extension's tables,
 * owned_open_relid() a table of the same shape that the caller found by
 * OID (a counter table of a stream distributed by Citus: see owned.c).
 */
extern void owned_open(OwnedTableId id, LOCKMODE mode, OwnedRel *orel);
extern void owned_open_relid(OwnedTableId shape, Oid relid, LOCKMODE mode,
							 OwnedRel *orel);
extern Oid	owned_relid(OwnedTableId id);
extern Relation owned_pk(OwnedRel *orel);
extern void owned_close(OwnedRel *orel);
extern void owned_prevent_write(const char *what);
extern void owned_check_version(void);
extern void owned_check_key_length(text *key, const char *what);
extern void owned_index_insert(OwnedRel *orel, HeapTuple tuple,
							   Bitmapset *changed, OrderingIndexUpdate which);
extern bool owned_columns_indexed(OwnedRel *orel, Bitmapset *columns);
extern void owned_fill_routing(OwnedRel *orel, Datum *values, bool *nulls);

/*
 * Open table id, or, if relid is valid, the table relid of its shape (as
 * owned_open_relid()): the caller found it, a Citus shard say.
 */
static inline void
owned_open_as(OwnedTableId id, Oid relid, LOCKMODE mode, OwnedRel *orel)
{
	if (OidIsValid(relid))
		owned_open_relid(id, relid, mode, orel);
	else
		owned_open(id, mode, orel);
}

/*
 * owned_rows.c: the rows
 */

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

#endif							/* ORDERING_OWNED_H */
