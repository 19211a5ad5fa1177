/*-------------------------------------------------------------------------
 *
 * counters.h
 *	  The producer's counters in ordering.sequences.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_COUNTERS_H
#define ORDERING_COUNTERS_H

extern int64 counter_next(text *stream, text *resource);
extern void counter_expect(text *stream, text *resource, int64 seq,
						   bool restore_hint);
extern void counter_raise(text *stream, text *resource, int64 seq);
extern bool counter_give_back(text *stream, text *resource, int64 seq);

#endif							/* ORDERING_COUNTERS_H */
