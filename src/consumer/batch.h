/*-------------------------------------------------------------------------
 *
 * batch.h
 *	  Set-based consumer calls, deliver_batch() and apply_batch()
 *	  (batch.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_BATCH_H
#define ORDERING_BATCH_H

#include "fmgr.h"

/*
 * One event of a batch call, as batch.c read it from the call's arrays and
 * checked it.  The routing of a distributed consumer's batch
 * (consumer_citus.c) splits these same events into parts.
 */
typedef struct BatchEvent
{
	text	   *resource;
	int64		seq;
	Datum		payload;
	bool		isnull;			/* the payload's */
} BatchEvent;

extern PGDLLEXPORT Datum ordering_deliver_batch(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_deliver_batch_handler(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_apply_batch(PG_FUNCTION_ARGS);

#endif							/* ORDERING_BATCH_H */
