/*-------------------------------------------------------------------------
 *
 * citus_consumers.h
 *	  The tables of the consumers Citus distributes, on this node
 *	  (citus_consumers.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_CITUS_CONSUMERS_H
#define ORDERING_CITUS_CONSUMERS_H

#include "citus_meta.h"
#include "compat.h"
#include "owned.h"

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
extern void citus_consumer_lock_resource(Oid positions, text *resource,
										 CitusTable *table, CitusShard *shard);
ORDERING_NORETURN extern void citus_consumer_not_distributed(Oid positions);
ORDERING_NORETURN extern void citus_consumer_shards_keep_changing(Oid positions);

#endif							/* ORDERING_CITUS_CONSUMERS_H */
