/*-------------------------------------------------------------------------
 *
 * dead_letter_store.h
 *	  The rows of ordering.dead_letter_events (dead_letter_store.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_DEAD_LETTER_STORE_H
#define ORDERING_DEAD_LETTER_STORE_H

#include "owned.h"
#include "parked.h"

/* A dead letter as stored */
typedef struct DeadLetter
{
	int64		seq;
	Datum		payload;
	bool		isnull;
} DeadLetter;

extern bool dead_letter_fetch(Oid dead_letters, const Datum *key,
							  Snapshot snapshot, DeadLetter *dead,
							  OwnedRow *row);
extern void dead_letter_put(Oid dead_letters, OwnedRel *parked,
							const Datum *key, const ReadyEvent *event,
							const char *sqlstate, const char *message,
							const char *detail);
extern void dead_letter_remove(Oid dead_letters, const Datum *key);

#endif							/* ORDERING_DEAD_LETTER_STORE_H */
