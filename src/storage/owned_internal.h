/*-------------------------------------------------------------------------
 *
 * owned_internal.h
 *	  What the two files of the storage layer share, and nobody else uses.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_OWNED_INTERNAL_H
#define ORDERING_OWNED_INTERNAL_H

#include "owned.h"

/* owned.c: the type of a column of one of the tables */
extern Oid	owned_column_type(OwnedTableId id, AttrNumber attno);

/*
 * owned.c: have a function called with each relation whose relcache entry
 * the layer forgets (InvalidOid: all); owned_rows.c forgets its cached TIDs
 */
typedef void (*OwnedForgetHook) (Oid relid);
extern void owned_set_forget_hook(OwnedForgetHook hook);

#endif							/* ORDERING_OWNED_INTERNAL_H */
