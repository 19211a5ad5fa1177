/*-------------------------------------------------------------------------
 *
 * gaps_citus.c
 *	  The gaps of distributed consumers (consumer_citus.c): each node's part,
 *	  found and swept on the node, and the cluster's sweep run from the
 *	  coordinator.
 *
 * A distributed consumer's parked events, positions and gap requests live
 * in the shards of its tables, co-located shard by shard: every gap is
 * wholly on one node.  ordering_internal.shard_gaps() runs on a node and
 * works on the shard groups placed there, one after the other: it lists
 * their open gaps past the deadline, or sweeps them as gaps.c sweeps the
 * extension's own tables (the same rules: a request per gap, repeated with
 * exponential backoff, requests of closed gaps deleted).  It answers with
 * the rows as a JSON array.  ordering.sweep_gaps() on the coordinator then
 * runs it on every node (run_command_on_all_nodes(), one connection and
 * one transaction per node) and emits each request as gaps.c does:
 * NOTIFY ordering_gap on the coordinator, counted there.  A sweep on a
 * worker leaves the distributed consumers alone, so that every request is
 * announced where the listeners are.
 *
 * Locking, per shard group, the rules of one node (gaps.c, parked.c): the
 * shard group's metadata lock in ShareLock first (citus_meta.c: no move or
 * split changes the group's placement while we write its shard, and one
 * that ran meanwhile is seen: the group is skipped if it left), then SHARE
 * ROW EXCLUSIVE on the shard of <tag>_gap_requests, which a call settling
 * a gap of that shard (parked_settle_gap, redirected to the shard) excludes
 * with its ROW EXCLUSIVE, then the snapshot of the sweep, taken after the
 * lock.  A node's sweep and a move of one of its groups are ordered by the
 * metadata lock; a request swept on the old node before a move moves with
 * the shard.  The nodes' sweeps are separate transactions: a request that
 * a node recorded as emitted is announced only once the coordinator's
 * transaction commits; if it does not, the request is announced again
 * after its backoff, like one whose notification nobody heard.
 *
 * Privileges: shard_gaps() is for the monitoring set (listing) and the
 * operator set; a sweep needs EXECUTE on ordering.sweep_gaps() too.  It
 * runs on every node as its caller, so the sets must be granted there.
 *
 * Layer: the sweep of distributed consumers, below gaps.c; it calls
 * consumer_citus.c (their tables), citus_meta.c, the storage layer,
 * decision_log.c and the statistics.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "lib/stringinfo.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/regproc.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "citus_meta.h"
#include "compat.h"
#include "consumer_citus.h"
#include "decision_log.h"
#include "gaps_citus.h"
#include "gaps_sql.h"
#include "owned.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(ordering_shard_gaps);

/*
 * The open gaps past the deadline ($1, seconds) of a shard group: %1$s its
 * positions shard, %2$s its parked shard.  The definition of the view
 * ordering.open_gaps (sql/ordering--1.1--1.2.sql), on the shards.
 */
#define SHARD_OPEN_GAPS \
"SELECT agg.consumer, agg.resource_id," \
"       COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1 AS missing_from," \
"       agg.lowest OPERATOR(pg_catalog.-) 1 AS missing_to," \
"       agg.parked_count, agg.first_parked_at" \
"  FROM (SELECT p.consumer, p.resource_id," \
"               pg_catalog.min(p.seq) AS lowest," \
"               pg_catalog.count(*) AS parked_count," \
"               pg_catalog.min(p.parked_at) AS first_parked_at" \
"          FROM %2$s p" \
"         GROUP BY p.consumer, p.resource_id" \
"        HAVING pg_catalog.min(p.parked_at) OPERATOR(pg_catalog.<)" \
"               (pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $1))) agg" \
"  LEFT JOIN LATERAL (" \
"       SELECT ps.position, ps.blocked_at" \
"         FROM %1$s ps" \
"        WHERE ps.consumer OPERATOR(pg_catalog.=) agg.consumer" \
"          AND ps.resource_id OPERATOR(pg_catalog.=) agg.resource_id" \
"        LIMIT 1) pos ON true" \
" WHERE agg.lowest OPERATOR(pg_catalog.>)" \
"       (COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1)" \
"   AND (pos.blocked_at IS NULL" \
"        OR agg.lowest OPERATOR(pg_catalog.<) pos.blocked_at)"

/* The list of a shard group's open gaps, as JSON rows */
static const char *const list_sql =
"SELECT pg_catalog.row_to_json(o)::pg_catalog.text FROM (" SHARD_OPEN_GAPS ") o"
" ORDER BY o.consumer, o.resource_id";

/*
 * One sweep of a shard group (gaps_sql.h, gaps.c's statement on the
 * shards; %3$s its gap_requests shard): the emitted requests as JSON rows.
 */
static const char *const sweep_sql =
ORDERING_SWEEP_SQL("(" SHARD_OPEN_GAPS ")", "%3$s",
				   "pg_catalog.row_to_json(u)::pg_catalog.text");

/*
 * The qualified name of a relation, for the SQL above.
 */
static char *
qualified_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/*
 * List or sweep one shard group of a distributed consumer (file header),
 * appending its JSON rows to out.  False if the group is no longer here.
 * The caller is connected to SPI.
 */
static bool
shard_group_gaps(const char *tag, const CitusTable *table,
				 const CitusShard *shard, double deadline, bool sweep,
				 StringInfo out)
{
	static const char *const suffixes[] = {"_positions", "_parked", "_gap_requests"};
	Oid			shards[lengthof(suffixes)];
	Oid			argtypes[1] = {FLOAT8OID};
	Datum		args[1] = {Float8GetDatum(deadline)};
	int			ret;

	/* the group stays here while we work on it (file header) */
	citus_lock_shard(table, shard, ShareLock);
	if (!citus_shard_here(shard->shardid))
		return false;
	for (int i = 0; i < lengthof(suffixes); i++)
	{
		CitusShard	sibling;
		Oid			rel = consumer_dist_relation(tag, suffixes[i]);

		if (!OidIsValid(rel) || !citus_colocated_shard(rel, shard->minvalue, &sibling))
			return false;
		shards[i] = citus_shard_relid(rel, sibling.shardid);
		if (!OidIsValid(shards[i]))
			return false;
	}

	if (sweep)
	{
		/* as gaps.c: the lock, then the snapshot */
		LockRelationOid(shards[2], ShareRowExclusiveLock);
		ret = SPI_execute_snapshot(SPI_prepare(psprintf(sweep_sql,
														qualified_name(shards[0]),
														qualified_name(shards[1]),
														qualified_name(shards[2])),
											   1, argtypes),
								   args, NULL, GetLatestSnapshot(),
								   InvalidSnapshot, false, true, 0);
	}
	else
		ret = SPI_execute_with_args(psprintf(list_sql,
											 qualified_name(shards[0]),
											 qualified_name(shards[1])),
									1, argtypes, args, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "gaps of shard " INT64_FORMAT " failed: %s",
			 shard->shardid, SPI_result_code_string(ret));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		if (out->len > 1)
			appendStringInfoChar(out, ',');
		appendStringInfoString(out, SPI_getvalue(SPI_tuptable->vals[i],
												 SPI_tuptable->tupdesc, 1));
	}
	return true;
}

/*
 * Check that the caller may sweep gaps: the monitoring set runs
 * shard_gaps() to list them (ordering_internal.distributed_open_gaps()),
 * the sweep is for those who may run ordering.sweep_gaps().
 */
static void
shard_gaps_check_sweeper(void)
{
	List	   *name = list_make1(makeString("ordering"));
	Oid			fn;
	AclResult	aclresult;

	name = lappend(name, makeString("sweep_gaps"));
	fn = LookupFuncName(name, 0, NULL, false);
	aclresult = ordering_proc_aclcheck(fn, GetUserId(), ACL_EXECUTE);

	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, format_procedure(fn));
}

/*
 * ordering_internal.shard_gaps(deadline double precision, sweep boolean)
 * returns text
 *
 * This node's part of the gaps of the distributed consumers (file header):
 * the open gaps older than deadline seconds of every shard group placed
 * here, or with sweep, one sweep of them and the requests it emitted
 * (rows of ordering.gap_requests); a JSON array.
 */
Datum
ordering_shard_gaps(PG_FUNCTION_ARGS)
{
	double		deadline;
	bool		sweep;
	List	   *consumers;
	ListCell   *lc;
	StringInfoData out;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("deadline and sweep must not be null")));
	deadline = PG_GETARG_FLOAT8(0);
	sweep = PG_GETARG_BOOL(1);
	if (sweep)
	{
		owned_prevent_write("ordering_internal.shard_gaps()");
		shard_gaps_check_sweeper();
	}

	initStringInfo(&out);
	appendStringInfoChar(&out, '[');
	consumers = consumer_dist_tags();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	foreach(lc, consumers)
	{
		const char *tag = (const char *) lfirst(lc);
		Oid			positions = consumer_dist_relation(tag, "_positions");
		CitusTable	table;
		CitusShard *shards;
		int			n;

		if (!OidIsValid(positions) || !citus_table(positions, &table))
			continue;
		shards = citus_shards(positions, &n);
		for (int i = 0; i < n; i++)
			if (citus_shard_here(shards[i].shardid))
				(void) shard_group_gaps(tag, &table, &shards[i], deadline,
										sweep, &out);
	}
	SPI_finish();
	appendStringInfoChar(&out, ']');
	PG_RETURN_TEXT_P(cstring_to_text(out.data));
}

/*
 * The cluster's requests: run ordering_internal.shard_gaps() on every node
 * through Citus, and emit each request it returns.
 */
static const char *const cluster_sql =
"SELECT r.nodeid, r.success, r.result"
"  FROM pg_catalog.run_command_on_all_nodes("
"         pg_catalog.format('SELECT ordering_internal.shard_gaps(%s, true)', $1)) r"
" ORDER BY r.nodeid";

/* The rows of the requests in the JSON of one node, and their JSON */
static const char *const rows_sql =
"SELECT g.consumer, g.resource_id, g.missing_from, g.missing_to, g.parked_count,"
"       g.first_parked_at, g.detected_at, g.last_requested_at, g.attempts,"
"       e::pg_catalog.text"
"  FROM pg_catalog.json_array_elements($1::pg_catalog.json) e,"
"       pg_catalog.json_populate_record(NULL::ordering.gap_requests, e) g";

/*
 * ordering.sweep_gaps() on the coordinator of a cluster with distributed
 * consumers: their part (file header), after the sweep of the extension's
 * own tables; the requests go to rsinfo, and are announced and counted as
 * gaps.c does.  Nothing elsewhere.  The caller is connected to SPI.
 */
void
gaps_citus_sweep(ReturnSetInfo *rsinfo, double deadline)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	int			ret;
	SPITupleTable *nodes;
	uint64		nnodes;

	if (consumer_dist_tags() == NIL || !citus_is_coordinator())
		return;
	args[0] = CStringGetTextDatum(psprintf("%.17g", deadline));
	ret = SPI_execute_with_args(cluster_sql, 1, argtypes, args, NULL, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "the sweep of the nodes failed: %s", SPI_result_code_string(ret));
	nodes = SPI_tuptable;
	nnodes = SPI_processed;
	for (uint64 i = 0; i < nnodes; i++)
	{
		bool		isnull;
		bool		success = DatumGetBool(SPI_getbinval(nodes->vals[i], nodes->tupdesc, 2, &isnull));
		char	   *result = SPI_getvalue(nodes->vals[i], nodes->tupdesc, 3);

		if (!success)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("the gap sweep failed on node %s",
							SPI_getvalue(nodes->vals[i], nodes->tupdesc, 1)),
					 errdetail("%s", result ? result : "no result")));
		args[0] = CStringGetTextDatum(result);
		ret = SPI_execute_with_args(rows_sql, 1, argtypes, args, NULL, true, 0);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "reading the requests of a node failed: %s",
				 SPI_result_code_string(ret));
		for (uint64 j = 0; j < SPI_processed; j++)
		{
			HeapTuple	tuple = SPI_tuptable->vals[j];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			Datum		values[9];
			bool		nulls[9];
			char	   *consumer;

			for (int col = 0; col < 9; col++)
				values[col] = SPI_getbinval(tuple, desc, col + 1, &nulls[col]);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			consumer = TextDatumGetCString(values[0]);
			Async_Notify("ordering_gap", SPI_getvalue(tuple, desc, 10));
			ordering_stats_count(consumer, ORDERING_EVENT_GAP_ESCALATED, 1);
			ordering_log_decision(consumer, DatumGetTextPP(values[1]),
								  DatumGetInt64(values[2]),
								  DatumGetInt64(values[3]) + 1,
								  ORDERING_DECISION_GAP, 0);
		}
	}
}
