/*-------------------------------------------------------------------------
 *
 * text_equal.h
 *	  Byte-wise equality and order of two texts, for the names and resource
 *	  ids that the producer, the consumer and the Citus routing compare.
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

/*
 * The byte-wise order of two texts (a prefix first), as a comparator
 * returns it: the order of the resource ids in which a batch takes them
 * (batch.c, citus_route.c).
 */
static inline int
ordering_text_cmp(const text *a, const text *b)
{
	int			la = VARSIZE_ANY_EXHDR(a);
	int			lb = VARSIZE_ANY_EXHDR(b);
	int			c = memcmp(VARDATA_ANY(a), VARDATA_ANY(b), Min(la, lb));

	if (c != 0)
		return c;
	return la < lb ? -1 : (la > lb ? 1 : 0);
}

#endif							/* ORDERING_TEXT_EQUAL_H */
