/*-------------------------------------------------------------------------
 *
 * owned.h
 *	  The storage layer: the only code that reads and writes the
 *	  extension's own tables below the executor.  Part one, its tables
 *	  (owned.c); the rows are owned_rows.h's.
 *
 * See owned.c for which tables, the policy for a table someone altered,
 * and why each PostgreSQL guarantee still holds; owned_rows.c for how rows
 * are found, advanced, created, scanned and removed, and the isolation
 * rules every caller gets.
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

/* The widest of the tables */
#define OWNED_MAX_NATTS			9

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
	TupleDesc	desc;			/* the columns rows are read and written with:
								 * the table's own (owned.c) */
	MemoryContext cxt;			/* where what lives as long as the call is */
	int			nindexes;		/* -1 until the first index entry is made */
	Relation   *indexes;		/* the indexes that get entries, ... */
	struct IndexInfo **infos;	/* ... and theirs, built once per call, at the
								 * first index entry the call makes, as
								 * ExecOpenIndices() builds them once per
								 * statement (owned.c, open_indexes) */
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

#endif							/* ORDERING_OWNED_H */
