/*-------------------------------------------------------------------------
 *
 * text_equal.h
 *	  Byte-wise equality of two texts, for the names and resource ids that
 *	  the producer, the consumer and the Citus routing compare.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_TEXT_EQUAL_H
#define ORDERING_TEXT_EQUAL_H

#include "compat.h"				/* the varlena macros */

/*
 * Do two texts hold the same bytes (whatever the form of their headers)?
 */
static inline bool
ordering_text_equal(const text *a, const text *b)
{
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

#endif							/* ORDERING_TEXT_EQUAL_H */
