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

#include "nodes/pg_list.h"

extern List *gaps_citus_sweep(double deadline);

#endif							/* ORDERING_GAPS_CITUS_H */
