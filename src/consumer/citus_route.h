/*-------------------------------------------------------------------------
 *
 * consumer_citus.h
 *	  Where the call of a consumer function runs when Citus distributes its
 *	  consumer: the routing of consumer_citus.c, which the call frame
 *	  (call.c) asks, and the call on the resource's node (consumer_call.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_CONSUMER_CITUS_H
#define ORDERING_CONSUMER_CITUS_H

#include "consumer.h"

/*
 * The call of a distributed consumer running on this node for its resource
 * (consumer_call.c): the calls made while it runs for the same consumer and
 * resource run on these shards.
 */
typedef struct CitusRouteHere
{
	text	   *consumer;
	text	   *resource;
	Oid			tables[OWNED_NUM_TABLES];	/* the shards of the group, by
											 * the table they stand for */
	const int32 *ords;			/* a part of a batch: the ords of its events
								 * in the whole batch, else NULL */
} CitusRouteHere;

extern bool citus_route_call(FunctionCallInfo fcinfo, char op,
							 ConsumerCall *call, Datum *result);
extern bool citus_route_batch(FunctionCallInfo fcinfo, char op,
							  const BatchEvent *events, int n,
							  ConsumerCall *call, Datum *result);
extern void citus_route_confirm(const ConsumerCall *call);
extern const CitusRouteHere *citus_route_enter(const CitusRouteHere *call);
extern void citus_route_leave(const CitusRouteHere *outer);
extern bool citus_route_op_returns_rows(char op);

#endif							/* ORDERING_CONSUMER_CITUS_H */
