/*-------------------------------------------------------------------------
 *
 * triggers.h
 *	  Checks shared by the extension's C triggers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_TRIGGERS_H
#define ORDERING_TRIGGERS_H

#include "commands/trigger.h"

/* How a trigger function must be fired and what arguments it takes */
typedef struct TriggerProtocol
{
	const char *funcname;		/* "ordering.x()" */
	TriggerEvent event;			/* TRIGGER_EVENT_INSERT or _UPDATE ... */
	bool		or_delete;		/* ... or also TRIGGER_EVENT_DELETE */
	int			minargs;
	int			maxargs;
	const char *arglist;		/* "(a, b [, c])" */
	const char *hint;			/* or NULL */
} TriggerProtocol;

extern void ordering_trigger_check(FunctionCallInfo fcinfo,
								   const TriggerProtocol *protocol);
extern Form_pg_attribute ordering_trigger_column(Relation rel, const char *name,
												 const TriggerProtocol *protocol);

#endif							/* ORDERING_TRIGGERS_H */
