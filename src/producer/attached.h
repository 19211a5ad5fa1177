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
#include "nodes/execnodes.h"
#include "utils/snapshot.h"

/* What the sequencing trigger learns about its table */
typedef struct AttachedTable
{
	bool		wake_relays;	/* the relay wake-up is on (wakeup.c) */
	bool		later_trigger;	/* a BEFORE INSERT trigger fires after ours */
	Oid			counters;		/* the counter table: InvalidOid for
								 * ordering.sequences, or a counter shard
								 * (citus.c) */
	int32		hash_min;		/* with a counter shard: the hash range of */
	int32		hash_max;		/* the shard's resources */
} AttachedTable;

extern void attached_check(Relation rel, Trigger *trigger, text *stream,
						   AttachedTable *table);
extern void attached_check_resource(Relation rel, const AttachedTable *table,
									AttrNumber resattno, text *resource);
extern void attached_skip_companions(EState *estate);
extern Trigger *attached_sequencing_trigger(Relation rel);
extern bool attached_trigger_args(Relation rel, char **resource_column,
								  char **sequence_column, char **stream);
extern bool attached_registered_as(Relation rel, const char *stream,
								   const char *resource_column,
								   const char *sequence_column);

struct OwnedRel;
extern Oid	attached_foreign_owner(struct OwnedRel *attachments, Oid relid,
								   text *stream, Snapshot snapshot, Oid *other);

#endif							/* ORDERING_ATTACHED_H */
