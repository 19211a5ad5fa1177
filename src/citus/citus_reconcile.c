/*-------------------------------------------------------------------------
 *
 * citus_reconcile.c
 *	  The producer side of reconciliation for a stream Citus distributes:
 *	  every resource's last number, read from the stream's counter table
 *	  on every node (README.md, "Reconciliation of distributed streams").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "as_owner.h"
#include "citus.h"
#include "owned.h"
#include "plans.h"

/* Rows taken from the cursor at a time */
#define FETCH_ROWS	1000

static void copy_counters(Portal portal, ReturnSetInfo *rsinfo);

/*
 * ordering_internal.distributed_stream_resources(stream text,
 * resource_prefix text) returns table (resource_id text, last_seq bigint)
 *
 * The counters above 0 of a stream distributed by Citus (under a resource
 * prefix, if given), as ordering.sequences holds them for one node; no row
 * for a stream that is not distributed.  The caller needs what a
 * reconciliation of a stream of one node needs, SELECT on
 * ordering.sequences; the counter table, granted to nobody, is read as its
 * owner, as last_sequence() reads it.  Citus runs the read on every shard
 * of the counter table, on its node, in the caller's snapshot of each.
 */
PG_FUNCTION_INFO_V1(ordering_distributed_stream_resources);

Datum
ordering_distributed_stream_resources(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			counters;
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	AclResult	aclresult;
	AsOwner		caller;
	Portal		portal;
	char	   *sql;
	bool		prefixed = !PG_ARGISNULL(1);

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0))
		return (Datum) 0;
	counters = citus_stream_counter_table(PG_GETARG_TEXT_PP(0));
	if (!OidIsValid(counters))
		return (Datum) 0;
	aclresult = pg_class_aclcheck(owned_relid(OWNED_SEQUENCES), GetUserId(),
								  ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, "sequences");

	args[0] = PG_GETARG_DATUM(0);
	args[1] = prefixed ? PG_GETARG_DATUM(1) : (Datum) 0;
	as_owner(counters, &caller);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* the prefix as a clause of its own: Citus pushes it down to each shard */
	sql = psprintf("SELECT c.resource_id::pg_catalog.text, c.last_seq FROM %s c"
				   " WHERE c.stream OPERATOR(pg_catalog.=) $1"
				   "   AND c.last_seq OPERATOR(pg_catalog.>) 0%s",
				   quote_qualified_identifier("ordering_internal",
											  get_rel_name(counters)),
				   prefixed ? "   AND pg_catalog.starts_with("
				   "c.resource_id::pg_catalog.text, $2)" : "");
	portal = SPI_cursor_open_with_args(NULL, sql, prefixed ? 2 : 1, argtypes,
									   args, NULL, true, 0);
	if (portal == NULL)
		elog(ERROR, "could not read the counters of a distributed stream: %s",
			 SPI_result_code_string(SPI_result));
	copy_counters(portal, rsinfo);
	SPI_cursor_close(portal);
	SPI_finish();
	as_caller(&caller);
	return (Datum) 0;
}

/*
 * Copy the rows of the cursor into the function's result, a batch at a
 * time, so that a stream of millions of resources is never held twice.
 */
static void
copy_counters(Portal portal, ReturnSetInfo *rsinfo)
{
	for (;;)
	{
		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		ordering_spi_put_rows(rsinfo);
		SPI_freetuptable(SPI_tuptable);
	}
}
