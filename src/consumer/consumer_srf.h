/*-------------------------------------------------------------------------
 *
 * consumer_srf.h
 *	  The result set of a consumer function that returns rows: set up by
 *	  the function itself, or by the routing of a distributed consumer's
 *	  call (consumer_citus.c), which fills it with the rows the call on the
 *	  resource's node returned.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_CONSUMER_SRF_H
#define ORDERING_CONSUMER_SRF_H

#include "fmgr.h"
#include "funcapi.h"

/*
 * Set up the tuplestore of the calls that return (seq, payload) rows.  The
 * executor passes the row type it expects (our OUT parameters) in
 * expectedDesc: using it saves building the same descriptor from pg_proc at
 * every call, which get_call_result_type() would.
 */
static inline void
consumer_materialize(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		expected = rsinfo != NULL && IsA(rsinfo, ReturnSetInfo) &&
	rsinfo->expectedDesc != NULL;

	InitMaterializedSRF(fcinfo, expected ? MAT_SRF_USE_EXPECTED_DESC : 0);
}

#endif							/* ORDERING_CONSUMER_SRF_H */
