/*-------------------------------------------------------------------------
 *
 * stats_prepared.h
 *	  The record of a prepared transaction's counts that stats.c writes at
 *	  PREPARE TRANSACTION and reads at COMMIT PREPARED, and where
 *	  stats_prepared.c keeps it meanwhile (README.md, "Prepared
 *	  transactions").
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_STATS_PREPARED_H
#define ORDERING_STATS_PREPARED_H

#include "access/xact.h"

#include "sketch.h"
#include "stats_shmem.h"

/*
 * The pending counts of a prepared transaction: this header, "entries"
 * PreparedCountsEntry, then "hot" PreparedCountsHot.  Read back only by the
 * same build of the library on the same server (a file of another layout
 * is refused by its magic or its size), so it is written as laid out in
 * memory.
 */
#define PREPARED_COUNTS_MAGIC	0x4f50433a	/* changes with the layout */

typedef struct PreparedCountsHeader
{
	uint32		magic;
	Oid			dbid;			/* the prepared transaction's database */
	int32		entries;
	int32		hot;
} PreparedCountsHeader;

typedef struct PreparedCountsEntry
{
	char		kind;			/* 'c' consumer, 's' stream */
	char		name[ORDERING_STATS_NAME_LEN];
	Counters	c;				/* its frames added up */
} PreparedCountsEntry;

typedef struct PreparedCountsHot
{
	int32		owner;			/* rank of its entry */
	uint64		hash;			/* of the whole resource id */
	int64		n;
	char		id[ORDERING_HOT_ID_LEN];
} PreparedCountsHot;

#define PREPARED_COUNTS_SIZE(entries, hot) \
	(sizeof(PreparedCountsHeader) + \
	 (Size) (entries) * sizeof(PreparedCountsEntry) + \
	 (Size) (hot) * sizeof(PreparedCountsHot))

extern void stats_prepared_keep(const char *gid, const char *record, Size len);
extern char *stats_prepared_take(const char *gid, Size *len);

#endif							/* ORDERING_STATS_PREPARED_H */
