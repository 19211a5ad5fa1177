/*-------------------------------------------------------------------------
 *
 * consumer_citus_internal.h
 *	  What the routing of a distributed consumer's calls (consumer_citus.c)
 *	  shares with the call on the resource's node (consumer_call.c), and
 *	  nobody else uses.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_CONSUMER_CITUS_INTERNAL_H
#define ORDERING_CONSUMER_CITUS_INTERNAL_H

#include "fmgr.h"

#include "citus_meta.h"
#include "owned.h"

/* A consumer's tag: "consumer_" and 16 hex digits */
#define TAG_LEN		(9 + 16)

/* The call running on this node for its resource, while it runs */
typedef struct DistCurrent
{
	text	   *consumer;
	text	   *resource;
} DistCurrent;

extern DistCurrent dist_current;

/* The storage layer's tables, and the suffix of a consumer's own */
typedef struct DistTable
{
	OwnedTableId id;
	const char *suffix;
} DistTable;

#define DIST_NUM_TABLES		4

extern const DistTable dist_tables[DIST_NUM_TABLES];

extern void consumer_tag(text *consumer, char *buf);
extern void dist_lock_resource(Oid positions, text *resource,
							   CitusTable *table, CitusShard *shard);
extern bool dist_op_returns_rows(char op);

#endif							/* ORDERING_CONSUMER_CITUS_INTERNAL_H */
