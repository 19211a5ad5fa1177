/*-------------------------------------------------------------------------
 *
 * handlers.h
 *	  Calling the handler of deliver(..., handler) and of the other
 *	  consumer functions that take one (handlers.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_HANDLERS_H
#define ORDERING_HANDLERS_H

#include "fmgr.h"
#include "parked.h"

/* A resolved handler of deliver(..., handler), cached in fn_extra */
typedef struct HandlerCache
{
	Oid			handler;
	bool		strict;
	FmgrInfo	flinfo;
} HandlerCache;

extern HandlerCache *handler_lookup(FunctionCallInfo fcinfo, int argno);
extern bool handler_dead_lettering(FunctionCallInfo fcinfo, int argno);
extern int	handler_run(HandlerCache *hc, const Datum *key, ReadyList *ready,
						bool guarded, ErrorData **failure);
extern void handler_check_reentry(const Datum *key);

#endif							/* ORDERING_HANDLERS_H */
