/*-------------------------------------------------------------------------
 *
 * stats_views.c
 *	  The SQL functions that read the statistics and reset them (README.md,
 *	  "Views").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "settings.h"
#include "sketch.h"
#include "stats_shmem.h"

PG_FUNCTION_INFO_V1(ordering_consumer_counters);
PG_FUNCTION_INFO_V1(ordering_stream_counters);
PG_FUNCTION_INFO_V1(ordering_hot_resources);
PG_FUNCTION_INFO_V1(ordering_stats_reset);
PG_FUNCTION_INFO_V1(ordering_stats_reset_time);

/*
 * Raise 55000 unless the shared statistics exist.
 */
static void
check_preloaded(void)
{
	if (stats_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("ordering statistics are not available"),
				 errdetail("The library \"ordering\" was not loaded through shared_preload_libraries."),
				 errhint("Add ordering to shared_preload_libraries and restart the server.")));
}

/*
 * Columns of ordering_internal.consumer_statistics(): the name, the events
 * up to GAP_ESCALATED, the buckets, their sum, then the events added in 1.1.
 * ordering.consumer_counters() of 1.0 and 1.1 (dropped by 1.2, and still
 * called by a database not yet updated) is the same function with the first
 * CONSUMER_COLUMNS_1_0 of them.
 */
#define CONSUMER_COLUMNS_1_0	(ORDERING_EVENT_GAP_ESCALATED + 4)
#define CONSUMER_COLUMNS		(ORDERING_NUM_EVENTS + 3)

/*
 * ordering_internal.consumer_statistics() and ordering.consumer_counters():
 * the counters of the consumers of the current database, one row each,
 * buckets not cumulative.  Fills as many columns as the caller's row type
 * has (the 1.0 function has fewer), in the order above.
 */
Datum
ordering_consumer_counters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS hs;
	ConsumerEntry *entry;

	check_preloaded();
	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts < CONSUMER_COLUMNS_1_0 ||
		rsinfo->setDesc->natts > CONSUMER_COLUMNS)
		elog(ERROR, "unexpected row type of %d columns for consumer statistics",
			 rsinfo->setDesc->natts);

	LWLockAcquire(stats_shared->lock, LW_SHARED);
	hash_seq_init(&hs, consumer_hash);
	while ((entry = hash_seq_search(&hs)) != NULL)
	{
		Datum		values[CONSUMER_COLUMNS];
		bool		nulls[CONSUMER_COLUMNS] = {0};
		Datum		buckets[ORDERING_NUM_BUCKETS];
		Counters	c;
		int			i;
		int			col;

		if (entry->key.dbid != MyDatabaseId)
			continue;
		SpinLockAcquire(&entry->mutex);
		c = entry->c;
		SpinLockRelease(&entry->mutex);

		col = 0;
		values[col++] = CStringGetTextDatum(entry->key.name);
		for (i = 0; i <= ORDERING_EVENT_GAP_ESCALATED; i++)
			values[col++] = Int64GetDatum(c.events[i]);
		for (i = 0; i < ORDERING_NUM_BUCKETS; i++)
			buckets[i] = Int64GetDatum(c.buckets[i]);
		values[col++] =
			PointerGetDatum(construct_array(buckets, ORDERING_NUM_BUCKETS,
											INT8OID, sizeof(int64),
											FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		values[col++] = Int64GetDatum(c.distance_sum);
		for (i = ORDERING_EVENT_GAP_ESCALATED + 1; i < ORDERING_NUM_EVENTS; i++)
			values[col++] = Int64GetDatum(c.events[i]);
		Assert(col == CONSUMER_COLUMNS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(stats_shared->lock);
	return (Datum) 0;
}

/*
 * Columns of ordering_internal.stream_statistics(): the name, sequence
 * numbers assigned, then those added in 1.1: supplied numbers refused, and
 * what reconciliation found and did.  ordering.stream_counters() of 1.0 and
 * 1.1 (dropped by 1.2, and still called by a database not yet updated) is
 * the same function with the first STREAM_COLUMNS_1_0 of them.
 */
#define STREAM_COLUMNS_1_0		2
#define STREAM_COLUMNS			6

/*
 * ordering_internal.stream_statistics() and ordering.stream_counters(): the
 * counters of the streams of the current database, one row each.  Fills as
 * many columns as the caller's row type has, in the order above.
 */
Datum
ordering_stream_counters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS hs;
	StreamEntry *entry;
	int			natts;

	check_preloaded();
	InitMaterializedSRF(fcinfo, 0);
	natts = rsinfo->setDesc->natts;
	if (natts < STREAM_COLUMNS_1_0 || natts > STREAM_COLUMNS)
		elog(ERROR, "unexpected row type of %d columns for stream statistics",
			 natts);

	LWLockAcquire(stats_shared->lock, LW_SHARED);
	hash_seq_init(&hs, stream_hash);
	while ((entry = hash_seq_search(&hs)) != NULL)
	{
		Datum		values[STREAM_COLUMNS];
		bool		nulls[STREAM_COLUMNS] = {0};
		int64		counts[STREAM_COLUMNS - 1];

		if (entry->key.dbid != MyDatabaseId)
			continue;
		SpinLockAcquire(&entry->mutex);
		counts[0] = entry->assigned;
		counts[1] = entry->conflicts;
		counts[2] = entry->reconcile_behind;
		counts[3] = entry->reconcile_republished;
		counts[4] = entry->reconcile_purged;
		SpinLockRelease(&entry->mutex);

		values[0] = CStringGetTextDatum(entry->key.name);
		for (int i = 1; i < STREAM_COLUMNS; i++)
			values[i] = Int64GetDatum(counts[i - 1]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(stats_shared->lock);
	return (Datum) 0;
}

/*
 * ordering_internal.stats_reset_time(): since when the counters count.
 */
Datum
ordering_stats_reset_time(PG_FUNCTION_ARGS)
{
	TimestampTz result;

	check_preloaded();
	LWLockAcquire(stats_shared->lock, LW_SHARED);
	result = stats_shared->stats_reset;
	LWLockRelease(stats_shared->lock);
	PG_RETURN_TIMESTAMPTZ(result);
}

/*
 * ordering.stats_reset(): forget all counters, of every database.
 */
Datum
ordering_stats_reset(PG_FUNCTION_ARGS)
{
	HASH_SEQ_STATUS hs;
	StatsKey   *key;

	check_preloaded();
	LWLockAcquire(stats_shared->lock, LW_EXCLUSIVE);
	hash_seq_init(&hs, consumer_hash);
	while ((key = hash_seq_search(&hs)) != NULL)
		hash_search(consumer_hash, key, HASH_REMOVE, NULL);
	hash_seq_init(&hs, stream_hash);
	while ((key = hash_seq_search(&hs)) != NULL)
		hash_search(stream_hash, key, HASH_REMOVE, NULL);
	stats_shared->stats_reset = GetCurrentTimestamp();
	/* the entries that held the sketches are gone */
	stats_shared->sketches_used = 0;
	LWLockRelease(stats_shared->lock);
	PG_RETURN_VOID();
}

/*
 * ordering.hot_resources(kind text, name text, n integer)
 * returns table (resource_id text, events bigint, max_error bigint)
 *
 * The n busiest resources of a stream or consumer of the current database
 * from its sketch, busiest first: "events" overcounts by at most max_error,
 * which is at most the events of that stream or consumer since the last
 * reset divided by ordering.hot_resources_size (sketch.h).  Nothing for a
 * name without a sketch.
 */
Datum
ordering_hot_resources(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *kind;
	HTAB	   *hash = NULL;
	int32		n;
	StatsKey	key;
	void	   *entry;
	Sketch	   *copy = NULL;
	int			used;

	check_preloaded();
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null",
						PG_ARGISNULL(0) ? "kind" : PG_ARGISNULL(1) ? "name" : "n")));
	kind = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (strcmp(kind, "stream") == 0)
		hash = stream_hash;
	else if (strcmp(kind, "consumer") == 0)
		hash = consumer_hash;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kind must be \"stream\" or \"consumer\", not \"%s\"", kind)));
	n = PG_GETARG_INT32(2);
	if (n < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n must not be negative, got %d", n)));
	InitMaterializedSRF(fcinfo, 0);

	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	copy_name(key.name, text_to_cstring(PG_GETARG_TEXT_PP(1)));

	LWLockAcquire(stats_shared->lock, LW_SHARED);
	entry = hash_search(hash, &key, HASH_FIND, NULL);
	if (entry != NULL && ENTRY_SKETCH(entry) != 0)
	{
		int			s = ENTRY_SKETCH(entry) - 1;

		copy = palloc(hot_stride);
		SpinLockAcquire(&hot_locks[s]);
		memcpy(copy, HOT_SKETCH(s), SKETCH_BYTES(ordering_hot_size));
		SpinLockRelease(&hot_locks[s]);
	}
	LWLockRelease(stats_shared->lock);
	if (copy == NULL)
		return (Datum) 0;

	used = ordering_sketch_sort(copy);
	for (int i = 0; i < Min(used, n); i++)
	{
		Datum		values[3];
		bool		nulls[3] = {0};

		values[0] = CStringGetTextDatum(copy->counters[i].id);
		values[1] = Int64GetDatum(copy->counters[i].count);
		values[2] = Int64GetDatum(copy->counters[i].error);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
