/*-------------------------------------------------------------------------
 *
 * citus_meta.h
 *	  What Citus's metadata says about a hash-distributed table: its shard
 *	  for a value, whether that shard is placed on this node, and the lock
 *	  that keeps its placement from changing.  See citus_meta.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_CITUS_META_H
#define ORDERING_CITUS_META_H

#include "storage/lockdefs.h"

/* A hash-distributed table as pg_dist_partition describes it */
typedef struct CitusTable
{
	Oid			relid;
	AttrNumber	distcol;		/* its distribution column */
	Oid			distcoll;		/* that column's collation */
	uint32		colocationid;
} CitusTable;

/* A shard of such a table: the one whose hash range holds a value */
typedef struct CitusShard
{
	int64		shardid;
	int32		minvalue;		/* its hash range */
	int32		maxvalue;
	int			index;			/* its rank among the table's shards */
	Oid			relid;			/* its relation here, if placed here */
} CitusShard;

extern bool citus_table(Oid relid, CitusTable *table);
extern CitusShard *citus_shards(Oid relid, int *n);
extern int32 citus_hash(const CitusTable *table, Datum value);
extern const CitusShard *citus_shard_holding(const CitusShard *shards, int n,
											 int32 hash);
extern void citus_shard_for(const CitusTable *table, Datum value,
							CitusShard *shard);
extern bool citus_colocated_shard(Oid relid, int32 minvalue,
								  CitusShard *shard);
extern void citus_lock_shard(const CitusTable *table,
							 const CitusShard *shard, LOCKMODE mode);
extern void citus_shard_settle(int64 shardid);
extern bool citus_is_coordinator(void);
extern bool citus_internal_backend(void);
extern bool citus_shard_here(int64 shardid);
extern Oid	citus_shard_relid(Oid relid, int64 shardid);

#endif							/* ORDERING_CITUS_META_H */
