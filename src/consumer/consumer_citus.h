/*-------------------------------------------------------------------------
 *
 * consumer_citus.h
 *	  Consumers whose state Citus distributes (ordering.distribute_consumer):
 *	  each call of the consumer functions for such a consumer is routed to
 *	  the node that holds its resource.  See consumer_citus.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_CONSUMER_CITUS_H
#define ORDERING_CONSUMER_CITUS_H

#include "fmgr.h"
#include "nodes/pg_list.h"

#include "batch.h"

/*
 * The calls a distributed consumer's call function runs (its argument op):
 * one per consumer function.
 */
#define DIST_DELIVER			'd'
#define DIST_DELIVER_HANDLER	'h'
#define DIST_APPLY				'a'
#define DIST_POSITION			'p'
#define DIST_SKIP_GAP			's'
#define DIST_DEAD_LETTER		'l'
#define DIST_RETRY				'r'
#define DIST_RETRY_HANDLER		'R'
#define DIST_DISCARD			'x'
#define DIST_DELIVER_BATCH		'b'
#define DIST_DELIVER_BATCH_HANDLER 'B'
#define DIST_APPLY_BATCH		'A'

/* What this backend knows of the distributed consumers of its database */
typedef enum DistKnown
{
	DIST_UNKNOWN,				/* to be looked up (the catalog changed) */
	DIST_NONE,					/* no consumer is distributed */
	DIST_SOME
} DistKnown;

extern DistKnown consumer_dist_known;
extern uint32 consumer_dist_epoch;
extern uint32 consumer_dist_epoch_routed;

extern bool consumer_route(FunctionCallInfo fcinfo, char op, Datum *result);
extern bool consumer_batch_route(FunctionCallInfo fcinfo, char op,
								 const BatchEvent *events, int n,
								 Datum *result);
extern void consumer_route_recheck(text *consumer);
extern List *consumer_dist_tags(void);
extern Oid	consumer_dist_relation(const char *tag, const char *suffix);

/*
 * The routing's first question: may the call's consumer be distributed?
 * Not while no consumer of the database is: one comparison.  Remembers the
 * catalog's epoch the routing decided in, for consumer_route_confirm().
 */
static inline bool
consumer_dist_possible(void)
{
	consumer_dist_epoch_routed = consumer_dist_epoch;
	return unlikely(consumer_dist_known != DIST_NONE);
}

/*
 * Called first by each consumer function, with its op: if its consumer is
 * distributed, run the call on the node of its resource (the result, for
 * a function that returns one, in *result; rows, in the function's
 * tuplestore) and return true; else false, and the caller goes on here.
 */
static inline bool
consumer_routed(FunctionCallInfo fcinfo, char op, Datum *result)
{
	return consumer_dist_possible() && consumer_route(fcinfo, op, result);
}

/*
 * The same for the batch functions, with their op and the events batch.c
 * read: the batch runs in parts on the nodes of its resources.
 */
static inline bool
consumer_batch_routed(FunctionCallInfo fcinfo, char op,
					  const BatchEvent *events, int n, Datum *result)
{
	return consumer_dist_possible() &&
		consumer_batch_route(fcinfo, op, events, n, result);
}

/*
 * Called once the call has opened ordering.positions here: if the lock
 * let in a change of the catalog, make sure its consumer was not
 * distributed meanwhile (consumer_citus.c).
 */
static inline void
consumer_route_confirm(text *consumer)
{
	if (unlikely(consumer_dist_epoch != consumer_dist_epoch_routed))
		consumer_route_recheck(consumer);
}

#endif							/* ORDERING_CONSUMER_CITUS_H */
