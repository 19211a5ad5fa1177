/*-------------------------------------------------------------------------
 *
 * sweep.c
 *	  Gap escalation: ordering.sweep_gaps(), and
 *	  ordering_internal.gap_deadline() (README.md, "The sweep").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "decision_log.h"
#include "gaps.h"
#include "owned.h"
#include "plans.h"
#include "settings.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(ordering_sweep_gaps);
PG_FUNCTION_INFO_V1(ordering_gap_deadline_interval);

static const char *const lock_sql =
"LOCK TABLE ordering.gap_requests IN SHARE ROW EXCLUSIVE MODE";

/*
 * $1: the deadline in seconds (gaps.h).  Returns the emitted requests
 * with their JSON.  The open gaps of the extension's own tables: the view
 * ordering.open_gaps lists a Citus coordinator's distributed consumers
 * too, whose requests their nodes write (citus_gaps.c).
 */
static const char *const sweep_sql =
ORDERING_SWEEP_SQL("(" ORDERING_OPEN_GAPS_SQL("ordering.positions", "ordering.parked") ")",
				   "ordering.gap_requests",
				   "u.consumer, u.resource_id, u.missing_from, u.missing_to,"
				   " u.parked_count, u.first_parked_at, u.detected_at,"
				   " u.last_requested_at, u.attempts,"
				   " pg_catalog.row_to_json(u)::pg_catalog.text", "", "");

/* $1: the database; the value of its own ordering.restoring, if it has one */
static const char *const restoring_sql =
"SELECT pg_catalog.substr(c, pg_catalog.strpos(c, '=') OPERATOR(pg_catalog.+) 1)"
"  FROM pg_catalog.pg_db_role_setting s, pg_catalog.unnest(s.setconfig) c"
" WHERE s.setdatabase OPERATOR(pg_catalog.=) $1"
"   AND s.setrole OPERATOR(pg_catalog.=) 0::pg_catalog.oid"
"   AND pg_catalog.starts_with(c, 'ordering.restoring=')";

/*
 * $1: the requests a node of a cluster swept (citus_gaps.c), a JSON array:
 * the rows, as sweep_sql returns them.
 */
static const char *const node_requests_sql =
"SELECT g.consumer, g.resource_id, g.missing_from, g.missing_to, g.parked_count,"
"       g.first_parked_at, g.detected_at, g.last_requested_at, g.attempts,"
"       e::pg_catalog.text"
"  FROM pg_catalog.json_array_elements($1::pg_catalog.json) e,"
"       pg_catalog.json_populate_record(NULL::ordering.gap_requests, e) g";

static SPIPlanPtr lock_plan = NULL;
static SPIPlanPtr sweep_plan = NULL;
static SPIPlanPtr restoring_plan = NULL;

/*
 * Is this database being restored: this backend's ordering.restoring, or
 * the database's setting (README.md)?  The caller is connected to SPI.
 */
bool
ordering_database_restoring(void)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	bool		restoring = false;
	int			ret;

	if (ordering_restoring)
		return true;
	args[0] = ObjectIdGetDatum(MyDatabaseId);
	ret = SPI_execute_plan(ordering_prepare_once(&restoring_plan, restoring_sql,
												 1, argtypes, 0),
						   args, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "reading the database's ordering.restoring failed: %s",
			 SPI_result_code_string(ret));
	if (SPI_processed > 0)
	{
		char	   *value = SPI_getvalue(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1);

		/* the server reads a value it cannot parse as off, and so do we */
		if (value == NULL || !parse_bool(value, &restoring))
			restoring = false;
	}
	return restoring;
}

/*
 * Emit the requests a sweep returned (in SPI_tuptable, the columns of
 * ordering.gap_requests and the row as JSON): each is a row of the result,
 * sent as NOTIFY ordering_gap with its JSON, counted as GAP_ESCALATED for
 * its consumer and logged (README.md).
 */
static void
emit_requests(ReturnSetInfo *rsinfo)
{
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		Datum	   *values = palloc0(sizeof(Datum) * rsinfo->setDesc->natts);
		bool	   *nulls = palloc(sizeof(bool) * rsinfo->setDesc->natts);
		bool		isnull;
		char	   *consumer;
		char	   *payload;
		int			col;

		for (col = 0; col < rsinfo->setDesc->natts; col++)
			nulls[col] = true;
		for (col = 0; col < GAP_REQUEST_NATTS; col++)
			values[col] = SPI_getbinval(tuple, desc, col + 1, &nulls[col]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);

		consumer = TextDatumGetCString(values[0]);
		payload = TextDatumGetCString(SPI_getbinval(tuple, desc,
													GAP_REQUEST_NATTS + 1,
													&isnull));
		Async_Notify("ordering_gap", payload);
		ordering_stats_count(consumer, ORDERING_EVENT_GAP_ESCALATED, 1);
		ordering_log_decision(consumer, DatumGetTextPP(values[1]),
							  DatumGetInt64(values[2]),
							  DatumGetInt64(values[3]) + 1,
							  ORDERING_DECISION_GAP, 0);
	}
}

/*
 * ordering.sweep_gaps() returns setof ordering.gap_requests
 */
Datum
ordering_sweep_gaps(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			argtypes[1] = {FLOAT8OID};
	Datum		args[1];
	int			ret;
	ListCell   *lc;

	/* before the lock: a read-only caller must not block deliver() */
	owned_prevent_write("ordering.sweep_gaps()");
	InitMaterializedSRF(fcinfo, 0);
	/* columns dropped after the table's own are tolerated (owned.c) */
	for (int col = 0; col < rsinfo->setDesc->natts; col++)
		if (col >= GAP_REQUEST_NATTS ?
			!TupleDescAttr(rsinfo->setDesc, col)->attisdropped :
			TupleDescAttr(rsinfo->setDesc, col)->attisdropped)
			elog(ERROR, "ordering.gap_requests has %d columns, expected %d",
				 rsinfo->setDesc->natts, GAP_REQUEST_NATTS);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	if (ordering_database_restoring())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot sweep gaps while the database is being restored"),
				 errdetail("ordering.restoring is on for the database: positions, parked events and gap requests may be loaded only in part."),
				 errhint("Call ordering.post_restore() once the restore is complete.")));

	ret = SPI_execute_plan(ordering_prepare_once(&lock_plan, lock_sql,
												 0, NULL, 0),
						   NULL, NULL, false, 0);
	if (ret != SPI_OK_UTILITY)
		elog(ERROR, "locking ordering.gap_requests failed: %s",
			 SPI_result_code_string(ret));

	/*
	 * A snapshot taken now that we hold the lock: it includes every
	 * gap-closing call that committed before we got it (README.md).
	 */
	args[0] = Float8GetDatum((double) ordering_gap_deadline);
	ret = SPI_execute_snapshot(ordering_prepare_once(&sweep_plan, sweep_sql,
													 1, argtypes, 0),
							   args, NULL, GetLatestSnapshot(),
							   InvalidSnapshot, false, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "gap sweep failed: %s", SPI_result_code_string(ret));

	emit_requests(rsinfo);

	/* the distributed consumers' gaps, on a Citus coordinator */
	foreach(lc, citus_gaps_sweep((double) ordering_gap_deadline))
	{
		Oid			textoid[1] = {TEXTOID};
		Datum		json[1] = {CStringGetTextDatum(lfirst(lc))};

		ret = SPI_execute_with_args(node_requests_sql, 1, textoid, json, NULL,
									true, 0);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "reading the requests of a node failed: %s",
				 SPI_result_code_string(ret));
		emit_requests(rsinfo);
	}

	SPI_finish();
	return (Datum) 0;
}

/*
 * ordering_internal.gap_deadline() returns interval: the current
 * ordering.gap_deadline (the setting).
 */
Datum
ordering_gap_deadline_interval(PG_FUNCTION_ARGS)
{
	Interval   *result = palloc0(sizeof(Interval));

	result->time = (int64) ordering_gap_deadline * USECS_PER_SEC;
	PG_RETURN_INTERVAL_P(result);
}
