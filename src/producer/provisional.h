/*-------------------------------------------------------------------------
 *
 * provisional.h
 *	  Numbers handed to rows that may not be stored.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_PROVISIONAL_H
#define ORDERING_PROVISIONAL_H

#include "storage/itemptr.h"

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

extern Provisional *provisional_stored(void);
extern void provisional_free(Provisional *p);
extern void provisional_settle_level(void);
extern void provisional_await_check(Provisional *p);
extern bool provisional_check_stored(text *stream, text *resource, int64 seq,
									 text **given_to);

#endif							/* ORDERING_PROVISIONAL_H */
