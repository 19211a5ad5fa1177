/*-------------------------------------------------------------------------
 *
 * attached.h
 *	  Is the relation a sequencing trigger fires on really attached?
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_ATTACHED_H
#define ORDERING_ATTACHED_H

#include "commands/trigger.h"

extern bool attached_check(Relation rel, Trigger *trigger, text *stream);

#endif							/* ORDERING_ATTACHED_H */
