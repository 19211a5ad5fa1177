/*-------------------------------------------------------------------------
 *
 * citus.h
 *	  Streams distributed by Citus: the counter shard of each shard, and
 *	  next_sequence() routed to it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_CITUS_H
#define ORDERING_CITUS_H

#include "commands/trigger.h"
#include "utils/relcache.h"

extern Oid	citus_stream_counter_table(text *stream);
extern bool citus_is_counter_argument(text *stream, const char *arg);
extern Oid	citus_counter_shard(Relation rel, Trigger *trigger, Oid *logical,
								Oid *counters, int32 *hash_min,
								int32 *hash_max);
extern void citus_check_shard_range(Relation rel, int32 hash_min,
									int32 hash_max, AttrNumber resattno,
									text *resource);
extern int64 citus_counter_next(Oid counters, text *stream, text *resource);
extern int64 citus_counter_last(Oid counters, text *stream, text *resource);
extern void citus_raise_counters(Relation rel, text *stream,
								 const char *resource_column,
								 const char *sequence_column, Oid counters);

#endif							/* ORDERING_CITUS_H */
