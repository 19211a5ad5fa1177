/*-------------------------------------------------------------------------
 *
 * producer.h
 *	  What the files of the producer side share with each other and with
 *	  _PG_init: a section per file (README.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_PRODUCER_H
#define ORDERING_PRODUCER_H

#include "access/xact.h"
#include "commands/trigger.h"
#include "nodes/execnodes.h"
#include "storage/itemptr.h"
#include "utils/snapshot.h"

/*
 * resource_key.c: the text a resource of any type is keyed by
 */

extern text *ordering_resource_key_of(Datum value, Oid typid);
extern bool ordering_resource_key_is_value(Oid typid);
extern void ordering_resource_column_check(Oid relid, const char *column);

/*
 * counters.c: the counters of the streams
 */

/*
 * Which statement supplied an asserted number: a restore explains a refused
 * number only in a statement that a dump carries.
 */
typedef enum CounterSource
{
	COUNTER_SOURCE_OTHER,		/* a function (emit), a nested statement, ... */
	COUNTER_SOURCE_INSERT,		/* a top-level INSERT (--inserts dumps) */
	COUNTER_SOURCE_COPY			/* a top-level COPY (pg_restore, pg_dump's
								 * plain format) */
} CounterSource;

/*
 * "counters": the counter table, InvalidOid for ordering.sequences (see
 * counters.c); the forms without it use ordering.sequences.
 */
extern int64 counter_next_in(Oid counters, text *stream, text *resource);
extern int64 counter_take_row_in(Oid counters, text *stream, text *resource,
								 bool asserted, int64 seq,
								 CounterSource source, bool stored,
								 bool *counted);
extern void counter_raise(text *stream, text *resource, int64 seq);
extern bool counter_give_back_in(Oid counters, text *stream, text *resource,
								 int64 seq);
extern int64 counter_next_of_stream(text *stream, text *resource);
extern int64 counter_last_of_stream(text *stream, text *resource);
extern void counter_report_stored(text *stream, text *resource, int64 n);

extern void counter_statement_begin(bool bulk);
extern void counter_statement_end(void);
extern void counter_statement_abandon(void);
extern bool counter_any_held(void);
extern void counter_before_commit(void);

/*
 * held_counters.c: the counters a running statement holds in memory
 */

/*
 * The counter of one (counter relation, stream, resource) while a statement
 * holds it in memory.  "written" is the value its row holds, written by
 * subtransaction created_subid (which holds the row's lock); "last" is the
 * counter's true value, the highest number handed out.
 */
typedef struct HeldCounter
{
	/* the key */
	Oid			relid;			/* the counter relation */
	uint32		hash;
	text	   *stream;			/* copies, in the cache's memory */
	text	   *resource;

	int64		last;
	int64		written;
	SubTransactionId created_subid;
	SubTransactionId changed_subid; /* the last one that changed "last" */
	CommandId	changed_cid;	/* the command it was in, marked used as the
								 * write it stands for would have */
	int64		stored;			/* rows known stored, not yet reported */

	int			owner;			/* depth of the statement that writes it, 0
								 * once orphaned */
} HeldCounter;

/* How many counters are held (a test before any lookup) */
extern int	held_count;

extern HeldCounter *held_find(Oid relid, text *stream, text *resource,
							  uint32 *hash);
extern HeldCounter *held_find_any(text *stream, text *resource);
extern HeldCounter *held_add(Oid relid, text *stream, text *resource,
							 uint32 hash, int64 value);
extern void held_set(HeldCounter *pc, int64 value);
extern void held_forget(HeldCounter *pc);

extern bool held_statement_is_bulk(void);
extern void held_statement_begin(bool bulk);
extern HeldCounter *held_statement_take(void);
extern void held_statement_end(void);
extern void held_statement_abandon(void);
extern HeldCounter *held_orphan_take(void);

extern void held_init(void);

/*
 * provisional.c: numbers handed to rows that may not be stored
 */

extern void provisional_init(void);
extern bool provisional_row_may_be_skipped(bool later_trigger);
extern void provisional_record(Oid counters, text *stream, text *resource,
							   int64 seq, bool check_stored);

/* A number handed out whose row is not known to be stored */
typedef struct Provisional
{
	Oid			counters;		/* the counter table (counters.c) */
	text	   *stream;
	text	   *resource;
	int64		seq;
	int			level;
	SubTransactionId subid;
	bool		check_stored;	/* a later BEFORE trigger may change the row */
} Provisional;

extern void provisional_move_update(Oid relid, ItemPointer tid);
extern bool provisional_move_delete(Oid relid, ItemPointer tid);
extern void provisional_move_arm(text *stream, text *resource, int64 seq);
extern bool provisional_move_take(text *stream, text *resource, int64 seq);

extern bool provisional_level_enter(bool may_skip);
extern void provisional_level_settle(void);
extern void provisional_level_fail(void);
extern void provisional_level_leave(bool outer_may_skip);
extern bool provisional_statement_may_skip(void);

extern Provisional *provisional_stored(void);
extern void provisional_free(Provisional *p);
extern void provisional_settle_level(void);
extern void provisional_await_check(Provisional *p);
extern bool provisional_check_stored(text *stream, text *resource, int64 seq,
									 text **given_to);

/*
 * statement.c: where a statement's rows begin and end
 */

extern void statement_init(void);

/*
 * attached.c: is the table a sequencing trigger fires on attached?
 */

/* What the sequencing trigger learns about its table */
typedef struct AttachedTable
{
	bool		wake_relays;	/* the relay wake-up is on (wakeup.c) */
	bool		later_trigger;	/* a BEFORE INSERT trigger fires after ours */
	Oid			counters;		/* the counter table: InvalidOid for
								 * ordering.sequences, or a counter shard
								 * (citus_counters.c) */
	int32		hash_min;		/* with a counter shard: the hash range of */
	int32		hash_max;		/* the shard's resources */
} AttachedTable;

extern void attached_check(Relation rel, Trigger *trigger, text *stream,
						   AttachedTable *table);
extern void attached_check_resource(Relation rel, const AttachedTable *table,
									AttrNumber resattno, Datum value,
									text *resource);
extern void attached_skip_companions(EState *estate);
extern void attached_check_insert(Relation rel, TriggerDesc *trigdesc);
extern bool attached_copy_may_hold(Relation rel);
extern Trigger *attached_sequencing_trigger(Relation rel);
extern bool attached_trigger_args(Relation rel, char **resource_column,
								  char **sequence_column, char **stream);
extern bool attached_registered_as(Relation rel, const char *stream,
								   const char *resource_column,
								   const char *sequence_column);

struct OwnedRel;
extern Oid	attached_foreign_owner(struct OwnedRel *attachments, Oid relid,
								   text *stream, Snapshot snapshot, Oid *other);

/*
 * wakeup.c: the relay wake-up
 */

/* The channel relays LISTEN on; the payload is the stream's name */
#define ORDERING_WAKEUP_CHANNEL "ordering_outbox"

/* True once this transaction sequenced a row of a table with the option */
extern bool ordering_wakeup_armed;

extern void ordering_wakeup_arm(text *stream);
extern void ordering_wakeup_stored_row(text *stream);

/*
 * standbys.c: failover-safe publishing
 */

/* ordering.min_standbys: how many standbys must have the WAL (standbys.c) */
extern int	ordering_min_standbys;

extern void ordering_standbys_define_settings(void);

#endif							/* ORDERING_PRODUCER_H */
