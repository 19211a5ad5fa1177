/*-------------------------------------------------------------------------
 *
 * sketch.c
 *	  A fixed-size heavy-hitters sketch of resource ids (sketch.h says what
 *	  it guarantees).  The caller protects the sketch's memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "sketch.h"

/*
 * Empty a sketch of "size" counters.
 */
void
ordering_sketch_clear(Sketch *sketch, int size)
{
	sketch->size = size;
	sketch->used = 0;
	sketch->total = 0;
}

/*
 * Offer n events of one id (its hash, and the id as kept).  O(size): a
 * linear search for the id and, when it has no counter and none is free, a
 * linear search for the smallest counter, which it takes over.
 */
void
ordering_sketch_add(Sketch *sketch, uint64 hash, const char *id, int64 n)
{
	SketchCounter *c = sketch->counters;
	SketchCounter *victim;
	int			i;

	Assert(n > 0);
	sketch->total = ordering_counter_add(sketch->total, n);
	for (i = 0; i < sketch->used; i++)
	{
		if (c[i].hash == hash && strcmp(c[i].id, id) == 0)
		{
			c[i].count = ordering_counter_add(c[i].count, n);
			return;
		}
	}
	if (sketch->used < sketch->size)
	{
		victim = &c[sketch->used++];
		victim->error = 0;
		victim->count = n;
	}
	else
	{
		victim = &c[0];
		for (i = 1; i < sketch->used; i++)
			if (c[i].count < victim->count)
				victim = &c[i];
		/* the new id may have had up to the victim's count already */
		victim->error = victim->count;
		victim->count = ordering_counter_add(victim->count, n);
	}
	victim->hash = hash;
	strlcpy(victim->id, id, ORDERING_HOT_ID_LEN);
}

/*
 * qsort comparator: higher count first, then id.
 */
static int
counter_cmp(const void *a, const void *b)
{
	const SketchCounter *ca = (const SketchCounter *) a;
	const SketchCounter *cb = (const SketchCounter *) b;

	if (ca->count != cb->count)
		return ca->count > cb->count ? -1 : 1;
	return strcmp(ca->id, cb->id);
}

/*
 * Sort the counters of a sketch (a private copy: readers copy the shared
 * one under its lock first) by count, highest first; returns how many are
 * in use.
 */
int
ordering_sketch_sort(Sketch *sketch)
{
	qsort(sketch->counters, sketch->used, sizeof(SketchCounter), counter_cmp);
	return sketch->used;
}
