/*-------------------------------------------------------------------------
 *
 * sketch.h
 *	  A fixed-size heavy-hitters sketch (Space-Saving) of resource ids.
 *
 * The sketch keeps at most "size" counters.  An id that has a counter adds
 * to it; a new id takes a free counter, or else the smallest one, whose
 * count it inherits as its possible overcount (Metwally, Agrawal and El
 * Abbadi, "Efficient Computation of Frequent and Top-k Elements in Data
 * Streams", 2005; weighted updates as in its later analyses).  With N the
 * events offered since the sketch was cleared, for every id it reports:
 *
 *	count - error <= true count <= count,  error <= N / size,
 *
 * and every id with more than N / size events has a counter.  A count never
 * decreases while the id is kept, and an id that lost its counter and comes
 * back starts above what it had, so each id's reported count only grows.
 *
 * The functions here neither lock nor allocate: the caller holds whatever
 * protects the memory the sketch lives in (stats.c: the sketch's spinlock).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_SKETCH_H
#define ORDERING_SKETCH_H

#include "common/int.h"

/*
 * Resource ids are kept in the hot-resources sketches up to this many bytes
 * (including the terminating zero), cut at a character boundary; resources
 * are told apart by a 64-bit hash of the whole id.
 */
#define ORDERING_HOT_ID_LEN			64

/*
 * a + n for a counter, n >= 0: every counter of the statistics (pending,
 * shared, the sketches' counts) saturates at PG_INT64_MAX instead of
 * wrapping to a negative number.  Event counts never get there; sums of
 * sequence numbers (events skipped, the reorder distance) can, in one call
 * near seq 2^63 - 1.
 */
static inline int64
ordering_counter_add(int64 a, int64 n)
{
	int64		sum;

	Assert(a >= 0 && n >= 0);
	if (pg_add_s64_overflow(a, n, &sum))
		return PG_INT64_MAX;
	return sum;
}

typedef struct SketchCounter
{
	uint64		hash;			/* of the whole id */
	int64		count;			/* events, overcounting by at most error */
	int64		error;
	char		id[ORDERING_HOT_ID_LEN];	/* zero-terminated, maybe cut */
} SketchCounter;

typedef struct Sketch
{
	int			size;			/* counters */
	int			used;			/* counters taken, the first "used" */
	int64		total;			/* events offered since cleared */
	SketchCounter counters[FLEXIBLE_ARRAY_MEMBER];
} Sketch;

/* Bytes of a sketch of "size" counters */
#define SKETCH_BYTES(size) \
	(offsetof(Sketch, counters) + (Size) (size) * sizeof(SketchCounter))

extern void ordering_sketch_clear(Sketch *sketch, int size);
extern void ordering_sketch_add(Sketch *sketch, uint64 hash, const char *id,
								int64 n);
extern int	ordering_sketch_sort(Sketch *sketch);

#endif							/* ORDERING_SKETCH_H */
