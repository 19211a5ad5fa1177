/*-------------------------------------------------------------------------
 *
 * dead_letters.h
 *	  The consumer functions of dead letters: dead_letter(),
 *	  retry_dead_letter(), discard_dead_letter() (dead_letters.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_DEAD_LETTERS_H
#define ORDERING_DEAD_LETTERS_H

#include "fmgr.h"

extern PGDLLEXPORT Datum ordering_dead_letter(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_retry_dead_letter(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_retry_dead_letter_handler(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_discard_dead_letter(PG_FUNCTION_ARGS);

#endif							/* ORDERING_DEAD_LETTERS_H */
