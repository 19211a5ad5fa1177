/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  Statistics: placeholder until the shared-memory statistics land.
 *
 * XXX: these hooks count nothing yet; the statistics issue replaces them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "stats.h"

void
ordering_stats_init(void)
{
}

void
ordering_stats_count(const char *consumer, OrderingEvent event, int64 n)
{
}

void
ordering_stats_reorder_distance(const char *consumer, int64 distance)
{
}

void
ordering_stats_sequence_assigned(const char *stream)
{
}
