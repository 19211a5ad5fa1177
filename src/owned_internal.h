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

/* owned_rows.c: forget cached TIDs of a table (InvalidOid: of all) */
extern void owned_tid_cache_forget(Oid relid);

#endif							/* ORDERING_OWNED_INTERNAL_H */
