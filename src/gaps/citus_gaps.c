/*-------------------------------------------------------------------------
 *
 * citus_gaps.c
 *	  The gaps of distributed consumers: each node's part, listed or swept
 *	  there, and the cluster's sweep from the coordinator (README.md,
 *	  "Distributed consumers' gaps").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
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

#include "citus.h"
#include "compat.h"
#include "gaps.h"
#include "owned.h"

PG_FUNCTION_INFO_V1(ordering_shard_gaps);

/*
 * The open gaps past the deadline ($1, seconds) of a shard group: %1$s its
 * positions shard, %2$s its parked shard.
 */
#define SHARD_OPEN_GAPS ORDERING_OPEN_GAPS_SQL("%1$s", "%2$s")

/* The list of a shard group's open gaps, as JSON rows */
static const char *const list_sql =
"SELECT pg_catalog.row_to_json(o)::pg_catalog.text FROM (" SHARD_OPEN_GAPS ") o"
" ORDER BY o.consumer, o.resource_id";

/*
 * One sweep of a shard group (gaps.h, sweep.c's statement on the
 * shards; %3$s its gap_requests shard; %4$s and %5$s its routing column
 * and value, or empty): the emitted requests as JSON rows.
 */
static const char *const sweep_sql =
ORDERING_SWEEP_SQL("(" SHARD_OPEN_GAPS ")", "%3$s",
				   "pg_catalog.row_to_json(u)::pg_catalog.text", "%4$s", "%5$s");

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
 * List or sweep one shard group of a distributed consumer (README.md),
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

	/* the group stays here while we work on it (README.md) */
	citus_lock_shard(table, shard, ShareLock);
	if (!citus_shard_here(shard->shardid))
		return false;
	for (int i = 0; i < lengthof(suffixes); i++)
	{
		CitusShard	sibling;
		Oid			rel = citus_consumer_relation(tag, suffixes[i]);

		if (!OidIsValid(rel) || !citus_colocated_shard(rel, shard->minvalue, &sibling))
			return false;
		shards[i] = citus_shard_relid(rel, sibling.shardid);
		if (!OidIsValid(shards[i]))
			return false;
	}

	if (sweep)
	{
		Oid			keytype = citus_consumer_key_type(table);

		/* as sweep.c: the lock, then the snapshot */
		LockRelationOid(shards[2], ShareRowExclusiveLock);
		ret = SPI_execute_snapshot(SPI_prepare(psprintf(sweep_sql,
														qualified_name(shards[0]),
														qualified_name(shards[1]),
														qualified_name(shards[2]),
														keytype == TEXTOID ? "" : ", resource_value",
														keytype == TEXTOID ? "" :
														psprintf(", CAST(gap.resource_id AS %s)",
																 format_type_be_qualified(keytype))),
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
 * shard_gaps() to list them (ordering_internal.distributed_open_gaps()), the sweep
 * is for those who may run ordering.sweep_gaps().
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
 * This node's part of the gaps of the distributed consumers (README.md):
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
	consumers = citus_consumer_tags();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	foreach(lc, consumers)
	{
		const char *tag = (const char *) lfirst(lc);
		Oid			positions = citus_consumer_relation(tag, "_positions");
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

/*
 * ordering.sweep_gaps() on the coordinator of a cluster with distributed
 * consumers: their part (README.md), one sweep on every node.  Returns
 * what each node's sweep emitted, a JSON array of rows of
 * ordering.gap_requests per node, in the order of the nodes, for the caller
 * to announce and count (sweep.c); NIL elsewhere.  The caller is connected
 * to SPI.
 */
List *
citus_gaps_sweep(double deadline)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	int			ret;
	List	   *requests = NIL;

	if (citus_consumer_tags() == NIL || !citus_is_coordinator())
		return NIL;
	args[0] = CStringGetTextDatum(psprintf("%.17g", deadline));
	ret = SPI_execute_with_args(cluster_sql, 1, argtypes, args, NULL, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "the sweep of the nodes failed: %s", SPI_result_code_string(ret));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	node = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		bool		success = DatumGetBool(SPI_getbinval(node, desc, 2, &isnull));
		char	   *result = SPI_getvalue(node, desc, 3);

		if (!success)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("the gap sweep failed on node %s",
							SPI_getvalue(node, desc, 1)),
					 errdetail("%s", result ? result : "no result")));
		requests = lappend(requests, result);
	}
	return requests;
}
