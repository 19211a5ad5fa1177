/*-------------------------------------------------------------------------
 *
 * statement_counters.h
 *	  Counters a running statement holds in backend memory (see
 *	  statement_counters.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_STATEMENT_COUNTERS_H
#define ORDERING_STATEMENT_COUNTERS_H

#include "access/xact.h"

/*
 * The counter of one (counter relation, stream, resource) while a statement
 * holds it in memory.  "written" is the value its row holds, written by
 * subtransaction created_subid (which holds the row's lock); "last" is the
 * counter's true value, the highest number handed out.
 */
typedef struct PendingCounter
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
} PendingCounter;

/* How many counters are held (a test before any lookup) */
extern int	pending_count;

extern uint32 pending_key_hash(Oid relid, text *stream, text *resource);
extern PendingCounter *pending_find(Oid relid, text *stream, text *resource,
									uint32 hash);
extern PendingCounter *pending_find_any(text *stream, text *resource);
extern PendingCounter *pending_add(Oid relid, text *stream, text *resource,
								   uint32 hash, int64 value);
extern void pending_set(PendingCounter *pc, int64 value);
extern void pending_forget(PendingCounter *pc);

extern bool pending_statement_is_bulk(void);
extern void pending_statement_begin(bool bulk);
extern PendingCounter *pending_statement_take(void);
extern void pending_statement_end(void);
extern void pending_statement_abandon(void);
extern PendingCounter *pending_orphan_take(void);

extern void pending_init(void);

#endif							/* ORDERING_STATEMENT_COUNTERS_H */
