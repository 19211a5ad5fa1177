/*-------------------------------------------------------------------------
 *
 * gaps_citus.h
 *	  The gaps of distributed consumers on a Citus cluster: each node's part,
 *	  and the sweep of the cluster from the coordinator.  See gaps_citus.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_GAPS_CITUS_H
#define ORDERING_GAPS_CITUS_H

#include "nodes/execnodes.h"

extern void gaps_citus_sweep(ReturnSetInfo *rsinfo, double deadline);

#endif							/* ORDERING_GAPS_CITUS_H */
