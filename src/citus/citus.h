/*-------------------------------------------------------------------------
 *
 * citus.h
 *	  What the Citus files share, and what the producer, the consumers and
 *	  the gap sweep ask of them: a section per file (README.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_CITUS_H
#define ORDERING_CITUS_H

#include "commands/trigger.h"
#include "storage/lockdefs.h"
#include "utils/relcache.h"

#include "compat.h"
#include "owned.h"

/*
 * citus_meta.c: what Citus's metadata says
 */

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

/*
 * citus_counters.c: the counters of distributed streams
 */

extern Oid	citus_stream_counter_table(text *stream);
extern bool citus_is_counter_argument(text *stream, const char *arg);
extern Oid	citus_counter_shard(Relation rel, Trigger *trigger, Oid *logical,
								Oid *counters, int32 *hash_min,
								int32 *hash_max);
extern void citus_check_shard_range(Relation rel, int32 hash_min,
									int32 hash_max, AttrNumber resattno,
									Datum value, text *resource);
extern int64 citus_counter_next(Oid counters, text *stream, text *resource);
extern int64 citus_counter_last(Oid counters, text *stream, text *resource);
extern void citus_raise_counters(Relation rel, text *stream,
								 const char *resource_column,
								 const char *sequence_column, Oid counters);

/*
 * citus_registry.c: the registry of distributed streams on every node
 */

extern Oid	citus_registry_relid(void);
extern void citus_registry_check(Relation rel, Oid logical, const char *stream,
								 bool registry_exists, Oid registry);

/*
 * citus_grants.c: the privilege sets on every node
 */

extern void citus_grants_init(void);

/*
 * citus_splits.c: non-blocking splits that would stall, refused
 */

extern void citus_splits_init(void);

/*
 * citus_consumers.c: the tables of distributed consumers
 */

/* A consumer's tag: "consumer_" and 16 hex digits */
#define CITUS_CONSUMER_TAG_LEN	(9 + 16)

/* How often a call looks for its shards again after a split */
#define CITUS_CONSUMER_SHARD_TRIES	8

/* The storage layer's tables of a consumer, and the suffix of its own */
typedef struct CitusConsumerTable
{
	OwnedTableId id;
	const char *suffix;
} CitusConsumerTable;

#define CITUS_CONSUMER_NUM_TABLES	4

extern const CitusConsumerTable citus_consumer_tables[CITUS_CONSUMER_NUM_TABLES];

extern void citus_consumer_tag(text *consumer, char *buf);
extern List *citus_consumer_tags(void);
extern Oid	citus_consumer_relation(const char *tag, const char *suffix);
extern bool citus_consumers_possible(void);
extern Oid	citus_consumer_positions(text *consumer);
extern void citus_consumer_confirm(text *consumer);

/*
 * The routing key of a distributed consumer's tables: the type they are
 * distributed by and, for another type than text, its qualified name and
 * its equality operator's, for the statements that name a key.
 */
typedef struct CitusConsumerKey
{
	Oid			type;			/* TEXTOID, or the type of resource_value */
	int32		typmod;			/* of resource_value (varchar(n)), or -1 */
	const char *type_name;		/* qualified, with typmod; NULL for text */
	const char *eq_name;		/* "schema.name", quoted; NULL for text */
	bool		domain;			/* type is a domain */
} CitusConsumerKey;

extern Oid	citus_consumer_key_type(const CitusTable *table);
extern const CitusConsumerKey *citus_consumer_key_of(const CitusTable *table);
extern void citus_consumer_key_check(const CitusConsumerKey *key,
									 text *consumer);
extern Datum citus_consumer_key(const CitusTable *table, text *resource);
extern void citus_consumer_lock_resource(Oid positions, text *resource,
										 CitusTable *table, CitusShard *shard);
ORDERING_NORETURN extern void citus_consumer_not_distributed(Oid positions);
ORDERING_NORETURN extern void citus_consumer_shards_keep_changing(Oid positions);

#endif							/* ORDERING_CITUS_H */
