/*-------------------------------------------------------------------------
 *
 * citus_route.c
 *	  Where the call of a distributed consumer runs: on the node of its
 *	  resource, through Citus, or here, on the shards of the call running
 *	  here (README.md, "Distributed consumers: the routing").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "as_owner.h"
#include "citus.h"
#include "compat.h"
#include "consumer.h"
#include "plans.h"
#include "text_equal.h"

/*
 * The call of a distributed consumer running on this node for its resource
 * (citus_call.c), while it runs: the calls it makes, and those its
 * handler makes for the same consumer and resource, run on its shards.
 */
static const CitusRouteHere *here = NULL;

/* What the calls made on the node of a resource are refused */
ORDERING_NORETURN static void refuse_other_key(text *resource);

/*
 * A SQL literal of a value, or NULL.
 */
static const char *
route_literal(const char *value)
{
	return value == NULL ? "NULL" : quote_literal_cstr(value);
}

/*
 * The argument i of a consumer function as text for the call, or NULL.
 */
static const char *
route_arg(FunctionCallInfo fcinfo, int i, Oid type)
{
	if (i >= PG_NARGS() || PG_ARGISNULL(i))
		return NULL;
	switch (type)
	{
		case TEXTOID:
			return text_to_cstring(PG_GETARG_TEXT_PP(i));
		case INT8OID:
			return psprintf(INT64_FORMAT, PG_GETARG_INT64(i));
		case JSONBOID:
			return DatumGetCString(DirectFunctionCall1(jsonb_out,
													   PG_GETARG_DATUM(i)));
		case REGPROCEDUREOID:
			/* by name: OIDs differ between nodes */
			return format_procedure_qualified(PG_GETARG_OID(i));
	}
	elog(ERROR, "unexpected argument type %u", type);
	return NULL;
}

/*
 * The arguments of the call function for op, from the consumer function's
 * own: seq, payload, handler and the last text argument (on_error or
 * reason), as SQL literals; the resource id as a literal of keytype, the
 * type the consumer's tables are distributed by, which Citus hashes.
 */
static char *
route_call_sql(FunctionCallInfo fcinfo, char op, const char *tag,
			   const char *keytype)
{
	const char *seq = NULL;
	const char *payload = NULL;
	const char *handler = NULL;
	const char *option = NULL;

	switch (op)
	{
		case CONSUMER_OP_DELIVER:
			seq = route_arg(fcinfo, 2, INT8OID);
			payload = route_arg(fcinfo, 3, JSONBOID);
			break;
		case CONSUMER_OP_DELIVER_HANDLER:
			seq = route_arg(fcinfo, 2, INT8OID);
			payload = route_arg(fcinfo, 3, JSONBOID);
			handler = route_arg(fcinfo, 4, REGPROCEDUREOID);
			/* NULL: the five-argument form (a NULL on_error is refused) */
			option = PG_NARGS() > 5 ? route_arg(fcinfo, 5, TEXTOID) : NULL;
			break;
		case CONSUMER_OP_APPLY:
			seq = route_arg(fcinfo, 2, INT8OID);
			break;
		case CONSUMER_OP_DEAD_LETTER:
			seq = route_arg(fcinfo, 2, INT8OID);
			payload = route_arg(fcinfo, 3, JSONBOID);
			option = route_arg(fcinfo, 4, TEXTOID);
			break;
		case CONSUMER_OP_RETRY_HANDLER:
			handler = route_arg(fcinfo, 2, REGPROCEDUREOID);
			break;
	}
	return psprintf("SELECT seq, payload FROM ordering_internal.%s_call("
					"%s::pg_catalog.\"char\", %s::%s, "
					"%s::pg_catalog.text, %s::pg_catalog.int8, "
					"%s::pg_catalog.jsonb, %s::pg_catalog.regprocedure, "
					"%s::pg_catalog.text)",
					tag, quote_literal_cstr(psprintf("%c", op)),
					route_literal(route_arg(fcinfo, 1, TEXTOID)), keytype,
					route_literal(route_arg(fcinfo, 0, TEXTOID)),
					route_literal(seq), route_literal(payload),
					route_literal(handler), route_literal(option));
}

/*
 * Is op one whose consumer function returns rows (seq, payload)?
 */
bool
citus_route_op_returns_rows(char op)
{
	return op == CONSUMER_OP_DELIVER || op == CONSUMER_OP_SKIP_GAP || op == CONSUMER_OP_RETRY ||
		op == CONSUMER_OP_DISCARD;
}

/*
 * The condition on the routing column of the gap requests of a consumer
 * distributed by another type than text, for a statement on the
 * resource's rows: Citus runs a statement that names the distribution
 * column's value on that value's shard only, and every other on every
 * shard.  Empty for text, whose resource_id is that column.
 */
static const char *
route_key_filter(const CitusTable *table, text *resource)
{
	const CitusConsumerKey *key = citus_consumer_key_of(table);

	if (key->type == TEXTOID)
		return "";
	return psprintf(" AND g.resource_value OPERATOR(%s) %s::%s",
					key->eq_name,
					quote_literal_cstr(text_to_cstring(resource)),
					key->type_name);
}

/*
 * The call is about to write, below Citus's executor, a shard placed on
 * this node (Citus runs a delegated call here, in this backend, when the
 * shard is here: README.md).  Tell Citus, as its local executor does for
 * its own writes: a modification of that shard group through Citus,
 * executed locally and matching no row, makes the transaction commit with
 * two-phase commit if it also writes on other nodes (else a crash between
 * the other nodes' commit and ours could keep only theirs), and binds the
 * transaction's later queries of this node's shards to local execution,
 * which sees our writes.  That needs Citus's local execution.  The
 * statement runs as the owner of the table it names: the consumer set has
 * no DELETE on the consumer's tables (they are written by the consumer
 * functions only, docs/privileges.md), and the caller was allowed to run
 * the consumer function that routes here.  table is the consumer's
 * positions table as Citus distributes it.  The caller is connected to
 * SPI.
 */
static void
route_local_write(const char *tag, text *consumer, text *resource,
				  const CitusTable *table)
{
	const char *local = GetConfigOption("citus.enable_local_execution", true,
										false);
	Oid			gap_requests = citus_consumer_relation(tag, "_gap_requests");
	AsOwner		caller;
	int			ret;
	char	   *sql;

	if (local == NULL || strcmp(local, "on") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("resource \"%s\" of distributed consumer \"%s\" is on this node, and citus.enable_local_execution is off",
						text_to_cstring(resource), text_to_cstring(consumer)),
				 errhint("Turn citus.enable_local_execution on, or call from another node.")));
	sql = psprintf("DELETE FROM ordering_internal.%s_gap_requests g"
				   " WHERE g.consumer OPERATOR(pg_catalog.=) %s"
				   "   AND g.resource_id OPERATOR(pg_catalog.=) %s"
				   "   AND g.attempts OPERATOR(pg_catalog.<) 0%s",
				   tag, quote_literal_cstr(text_to_cstring(consumer)),
				   quote_literal_cstr(text_to_cstring(resource)),
				   route_key_filter(table, resource));
	if (!OidIsValid(gap_requests))
		elog(ERROR, "the gap requests of consumer \"%s\" are not on this node",
			 text_to_cstring(consumer));
	as_owner(gap_requests, &caller);
	ret = SPI_execute(sql, false, 0);
	as_caller(&caller);
	if (ret != SPI_OK_DELETE)
		elog(ERROR, "marking the local write of consumer \"%s\" failed",
			 text_to_cstring(consumer));
}

/*
 * Refuse a call that Citus would not delegate: one made inside a query
 * that Citus runs on a worker (a router query that carries the consumer
 * function to the node of its table's shard), for a resource whose shard
 * is on another node.  Citus runs no distributed query from there.
 */
static void
route_check_reachable(text *consumer, int64 shardid)
{
	if (citus_internal_backend() && !citus_shard_here(shardid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a call of distributed consumer \"%s\" cannot be made from a query that Citus runs on another node",
						text_to_cstring(consumer)),
				 errhint("Call the consumer functions in a statement that reads no distributed table.")));
}

/*
 * A call of a consumer that is not distributed runs here, on the
 * extension's own tables of this node, unless a query that Citus runs on
 * behalf of another node carried it here (a consumer function called in a
 * query over a distributed table runs on the nodes of its shards): the
 * consumer's state is on the node the application called it on, and
 * writing this node's copy would apply the event a second time there.
 * Refused as route_check_reachable() refuses a distributed consumer's call
 * that Citus would not delegate.  Costs a comparison of the session's
 * application_name, which Citus sets for its own connections.
 */
static bool
route_local(text *consumer)
{
	if (unlikely(citus_internal_backend()))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a call of consumer \"%s\" cannot be made from a query that Citus runs on another node",
						text_to_cstring(consumer)),
				 errdetail("The consumer is not distributed: its state is in the tables of the node where it is called, not of the node Citus ran this query on."),
				 errhint("Call the consumer functions in a statement that reads no distributed table, or distribute the consumer with ordering.distribute_consumer().")));
	return false;
}

/*
 * Refuse a call made on the node of a resource, by the call running there
 * or its handler, for another consumer or resource (README.md).
 */
static void
refuse_other_key(text *resource)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("a handler of distributed consumer \"%s\" cannot call the consumer functions for another consumer or resource",
					text_to_cstring(here->consumer)),
			 resource != NULL ?
			 errdetail("The call for resource \"%s\" runs on the node of that resource, on its shards only.",
					   text_to_cstring(here->resource)) : 0,
			 resource != NULL ?
			 errhint("Deliver events of other resources in their own calls.") : 0));
	pg_unreachable();
}

/*
 * Decide where a consumer function's call runs (README.md): true when
 * its consumer is distributed and it ran on the node of its resource, its
 * rows in the function's tuplestore and a scalar result in *result; false
 * when it runs here, on the tables the call now names (the shards of the
 * call running here for the same consumer and resource, else the
 * extension's own).
 */
bool
citus_route_call(FunctionCallInfo fcinfo, char op, ConsumerCall *call,
				 Datum *result)
{
	text	   *consumer = call->consumer;
	text	   *resource = call->resource;
	Oid			positions;
	CitusTable	table;
	CitusShard	shard;
	char		tag[CITUS_CONSUMER_TAG_LEN + 1];
	const CitusConsumerKey *key;
	const char *keytype;
	char	   *sql;
	int			save_nestlevel;
	int			ret;

	if (!citus_consumers_possible())
		return route_local(consumer);
	if (here != NULL)
	{
		/* we are the call on the resource's node, or a handler of it */
		if (!ordering_text_equal(consumer, here->consumer) ||
			!ordering_text_equal(resource, here->resource))
			refuse_other_key(here->resource);
		memcpy(call->tables, here->tables, sizeof(call->tables));
		return false;
	}
	positions = citus_consumer_positions(consumer);
	if (!OidIsValid(positions))
		return route_local(consumer);

	citus_consumer_lock_resource(positions, resource, &table, &shard);
	route_check_reachable(consumer, shard.shardid);
	citus_consumer_tag(consumer, tag);
	key = citus_consumer_key_of(&table);
	citus_consumer_key_check(key, consumer);
	keytype = key->type_name;
	sql = route_call_sql(fcinfo, op, tag,
						 keytype != NULL ? keytype : "pg_catalog.text");
	if (citus_route_op_returns_rows(op))
		consumer_materialize(fcinfo);

	/*
	 * A function call opens a transaction block on the workers only with
	 * citus.function_opens_transaction_block on (the default): make sure of
	 * it for our query, so that the call's work is the caller's.
	 */
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("citus.function_opens_transaction_block", "on",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (op != CONSUMER_OP_POSITION && citus_shard_here(shard.shardid))
		route_local_write(tag, consumer, resource, &table);
	ret = SPI_execute(sql, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "routing a call of consumer \"%s\" failed: %s",
			 text_to_cstring(consumer), SPI_result_code_string(ret));
	*result = (Datum) 0;
	if (citus_route_op_returns_rows(op))
		ordering_spi_put_rows((ReturnSetInfo *) fcinfo->resultinfo);
	else if (op != CONSUMER_OP_DEAD_LETTER)
	{
		bool		isnull;
		int64		value;

		if (SPI_processed != 1)
			elog(ERROR, "the call of consumer \"%s\" returned " UINT64_FORMAT " rows",
				 text_to_cstring(consumer), SPI_processed);
		value = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 1, &isnull));
		*result = op == CONSUMER_OP_APPLY ? BoolGetDatum(value != 0) :
			op == CONSUMER_OP_POSITION ? Int64GetDatum(value) :
			Int32GetDatum((int32) value);
	}
	SPI_finish();
	AtEOXact_GUC(true, save_nestlevel);
	return true;
}

/* One event of a distributed consumer's batch, on the caller's node */
typedef struct RouteEvent
{
	int32		ord;			/* in the batch, 1-based */
	const BatchEvent *event;	/* as batch.c read it */
	int64		shardid;		/* of its resource */
	int			shard;			/* the shard's index */
} RouteEvent;

/* A row a part of a batch returned: (ord, seq, payload) */
typedef struct RouteRow
{
	int32		ord;
	int			arrival;		/* keeps the rows of one ord in order */
	int64		seq;
	Datum		payload;
	bool		isnull;
} RouteRow;

static char route_cmp_op;		/* the op of the events being sorted */

/*
 * qsort comparator of a batch's events into parts: by shard, then (for the
 * handler form, which runs one resource per part) by resource, then in
 * input order.  That is also the order in which the parts take their
 * locks, the same for every batch (batch.c's rule, across nodes).
 */
static int
route_event_cmp(const void *a, const void *b)
{
	const RouteEvent *ea = (const RouteEvent *) a;
	const RouteEvent *eb = (const RouteEvent *) b;

	if (ea->shard != eb->shard)
		return ea->shard < eb->shard ? -1 : 1;
	if (route_cmp_op == CONSUMER_OP_DELIVER_BATCH_HANDLER)
	{
		int			c = ordering_text_cmp(ea->event->resource,
										  eb->event->resource);

		if (c != 0)
			return c;
	}
	return ea->ord < eb->ord ? -1 : (ea->ord > eb->ord ? 1 : 0);
}

/*
 * qsort comparator of the rows returned: by ord, then as they came.
 */
static int
route_row_cmp(const void *a, const void *b)
{
	const RouteRow *ra = (const RouteRow *) a;
	const RouteRow *rb = (const RouteRow *) b;

	if (ra->ord != rb->ord)
		return ra->ord < rb->ord ? -1 : 1;
	return ra->arrival < rb->arrival ? -1 : (ra->arrival > rb->arrival ? 1 : 0);
}

/*
 * An array of a part's events as a SQL literal: field is 0 for the ords,
 * 1 the resources, 2 the seqs, 3 the payloads.
 */
static char *
route_part_array(RouteEvent *events, int n, int field)
{
	static const Oid types[] = {INT4OID, TEXTOID, INT8OID, JSONBOID};
	Datum	   *values = palloc(sizeof(Datum) * n);
	bool	   *nulls = palloc0(sizeof(bool) * n);
	int			dims[1] = {n};
	int			lbs[1] = {1};
	int16		typlen;
	bool		typbyval;
	char		typalign;
	ArrayType  *array;

	for (int i = 0; i < n; i++)
	{
		switch (field)
		{
			case 0:
				values[i] = Int32GetDatum(events[i].ord);
				break;
			case 1:
				values[i] = PointerGetDatum(events[i].event->resource);
				break;
			case 2:
				values[i] = Int64GetDatum(events[i].event->seq);
				break;
			default:
				values[i] = events[i].event->payload;
				nulls[i] = events[i].event->isnull;
		}
	}
	get_typlenbyvalalign(types[field], &typlen, &typbyval, &typalign);
	array = construct_md_array(values, nulls, 1, dims, lbs, types[field],
							   typlen, typbyval, typalign);
	return quote_literal_cstr(OidOutputFunctionCall(F_ARRAY_OUT,
													PointerGetDatum(array)));
}

/*
 * The n events of a batch (batch.c's, in input order) with the shard of
 * each, holding the metadata lock of every shard group they touch (taken
 * in the groups' order; see citus_consumer_lock_resource() for why the shards are
 * looked up again), sorted into parts (route_event_cmp); *tablep gets the
 * positions table as Citus distributes it.
 */
static RouteEvent *
route_batch_events(const BatchEvent *batch, int n, char op, Oid positions,
				   CitusTable *tablep)
{
	RouteEvent *events = palloc(sizeof(RouteEvent) * Max(n, 1));
	CitusTable	table;

	for (int i = 0; i < n; i++)
	{
		events[i].ord = i + 1;
		events[i].event = &batch[i];
	}
	if (!citus_table(positions, &table))
		citus_consumer_not_distributed(positions);
	for (int tries = 0;; tries++)
	{
		int			nshards;
		CitusShard *shards = citus_shards(positions, &nshards);
		bool		same = true;

		for (int i = 0; i < n; i++)
		{
			text	   *resource = events[i].event->resource;
			int32		hash = citus_hash(&table, citus_consumer_key(&table, resource));
			const CitusShard *shard = citus_shard_holding(shards, nshards, hash);

			if (shard == NULL)
				elog(ERROR, "no shard of relation \"%s\" holds resource \"%s\"",
					 get_rel_name(positions), text_to_cstring(resource));
			same = same && tries > 0 && events[i].shardid == shard->shardid &&
				events[i].shard == shard->index;
			events[i].shardid = shard->shardid;
			events[i].shard = shard->index;
		}
		if (same)
		{
			/* and Citus's own view of them is ours (citus_meta.c) */
			for (int i = 0; i < n; i++)
				if (i == 0 || events[i].shardid != events[i - 1].shardid)
					citus_shard_settle(events[i].shardid);
			break;
		}
		if (tries == CITUS_CONSUMER_SHARD_TRIES)
			citus_consumer_shards_keep_changing(positions);
		route_cmp_op = op;
		qsort(events, n, sizeof(RouteEvent), route_event_cmp);
		for (int i = 0; i < n; i++)
			if (i == 0 || events[i].shard != events[i - 1].shard)
				citus_lock_shard(&table, &shards[events[i].shard], ShareLock);
		pfree(shards);
	}
	*tablep = table;
	return events;
}

/*
 * Decide where a batch function's call runs, as citus_route_call() does:
 * for a distributed consumer (README.md), its n events (batch.c's, in
 * input order) run in parts, one per shard (per resource for the handler
 * form, whose handler may touch only its call's resource), each on the
 * node of its shard; then the rows go to the tuplestore in input order, or
 * the total to *result, and it returns true.  A part runs here, on the
 * shards of the call running here for it, with the ords of its events in
 * the whole batch.
 */
bool
citus_route_batch(FunctionCallInfo fcinfo, char op, const BatchEvent *batch,
				  int n, ConsumerCall *call, Datum *result)
{
	text	   *consumer = call->consumer;
	Oid			positions;
	RouteEvent *events;
	CitusTable	table;
	const CitusConsumerKey *key;
	const char *keytype;
	char		tag[CITUS_CONSUMER_TAG_LEN + 1];
	const char *handler = NULL;
	const char *option = NULL;
	MemoryContext call_cxt = CurrentMemoryContext;
	RouteRow   *rows = NULL;
	int			nrows = 0;
	int			size = 0;
	int64		total = 0;
	int			save_nestlevel;

	if (!citus_consumers_possible())
		return route_local(consumer);
	if (here != NULL)
	{
		/* a part, on its node */
		if (!ordering_text_equal(consumer, here->consumer))
			refuse_other_key(NULL);
		memcpy(call->tables, here->tables, sizeof(call->tables));
		call->ords = here->ords;
		return false;
	}
	positions = citus_consumer_positions(consumer);
	if (!OidIsValid(positions))
		return route_local(consumer);

	events = route_batch_events(batch, n, op, positions, &table);
	key = citus_consumer_key_of(&table);
	citus_consumer_key_check(key, consumer);
	keytype = key->type_name;
	citus_consumer_tag(consumer, tag);
	if (op == CONSUMER_OP_DELIVER_BATCH_HANDLER)
	{
		handler = route_arg(fcinfo, 4, REGPROCEDUREOID);
		option = route_arg(fcinfo, 5, TEXTOID);
	}

	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("citus.function_opens_transaction_block", "on",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	for (int first = 0; first < n;)
	{
		int			last = first;
		char	   *sql;
		int			ret;

		while (last + 1 < n && events[last + 1].shard == events[first].shard &&
			   (op != CONSUMER_OP_DELIVER_BATCH_HANDLER ||
				ordering_text_equal(events[last + 1].event->resource,
									events[first].event->resource)))
			last++;
		if (first == 0 || events[first].shard != events[first - 1].shard)
		{
			route_check_reachable(consumer, events[first].shardid);
			if (citus_shard_here(events[first].shardid))
				route_local_write(tag, consumer, events[first].event->resource,
								  &table);
		}
		sql = psprintf("SELECT ord, seq, payload FROM ordering_internal.%s_batch("
					   "%s::pg_catalog.\"char\", %s::%s, "
					   "%s::pg_catalog.text, %s::pg_catalog.int4[], "
					   "%s::pg_catalog.text[], %s::pg_catalog.int8[], "
					   "%s::pg_catalog.jsonb[], %s::pg_catalog.regprocedure, "
					   "%s::pg_catalog.text)",
					   tag, quote_literal_cstr(psprintf("%c", op)),
					   quote_literal_cstr(text_to_cstring(events[first].event->resource)),
					   keytype != NULL ? keytype : "pg_catalog.text",
					   quote_literal_cstr(text_to_cstring(consumer)),
					   route_part_array(&events[first], last - first + 1, 0),
					   route_part_array(&events[first], last - first + 1, 1),
					   route_part_array(&events[first], last - first + 1, 2),
					   op == CONSUMER_OP_APPLY_BATCH ? "NULL" :
					   route_part_array(&events[first], last - first + 1, 3),
					   route_literal(handler), route_literal(option));
		ret = SPI_execute(sql, false, 0);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "routing a batch of consumer \"%s\" failed: %s",
				 text_to_cstring(consumer), SPI_result_code_string(ret));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tuple = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			MemoryContext old = MemoryContextSwitchTo(call_cxt);
			bool		isnull;
			RouteRow   *row;

			if (nrows == size)
			{
				size = Max(size * 2, 64);
				rows = rows == NULL ? palloc(sizeof(RouteRow) * size) :
					repalloc(rows, sizeof(RouteRow) * size);
			}
			row = &rows[nrows];
			row->ord = DatumGetInt32(SPI_getbinval(tuple, desc, 1, &isnull));
			row->seq = DatumGetInt64(SPI_getbinval(tuple, desc, 2, &isnull));
			row->payload = SPI_getbinval(tuple, desc, 3, &row->isnull);
			if (!row->isnull)
				row->payload = PointerGetDatum(PG_DETOAST_DATUM_COPY(row->payload));
			row->arrival = nrows++;
			total += row->seq;
			MemoryContextSwitchTo(old);
		}
		first = last + 1;
	}
	SPI_finish();
	AtEOXact_GUC(true, save_nestlevel);

	*result = (Datum) 0;
	if (op == CONSUMER_OP_DELIVER_BATCH_HANDLER)
	{
		if (total > PG_INT32_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("the handler ran for more events than an integer counts"),
					 errhint("Deliver fewer events per call.")));
		*result = Int32GetDatum((int32) total);
		return true;
	}
	consumer_materialize(fcinfo);
	if (nrows > 1)
		qsort(rows, nrows, sizeof(RouteRow), route_row_cmp);
	for (int i = 0; i < nrows; i++)
	{
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
		Datum		values[3] = {Int32GetDatum(rows[i].ord), Int64GetDatum(rows[i].seq),
		rows[i].payload};
		bool		nulls[3] = {false, false, rows[i].isnull};

		if (op == CONSUMER_OP_APPLY_BATCH)
			values[1] = BoolGetDatum(rows[i].seq != 0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return true;
}

/*
 * The call of a distributed consumer for its resource runs here from now
 * on (README.md), until citus_route_leave() with the call it returns.
 */
const CitusRouteHere *
citus_route_enter(const CitusRouteHere *call)
{
	const CitusRouteHere *outer = here;

	here = call;
	return outer;
}

/*
 * The call citus_route_enter() made the one running here ended, whether it
 * succeeded or not: the one it replaced runs here again.
 */
void
citus_route_leave(const CitusRouteHere *outer)
{
	here = outer;
}

/*
 * A call routed to the extension's own tables has opened ordering.positions:
 * confirm that its consumer was not distributed meanwhile (citus_consumers.c).
 */
void
citus_route_confirm(const ConsumerCall *call)
{
	if (!OidIsValid(call->tables[OWNED_POSITIONS]))
		citus_consumer_confirm(call->consumer);
}
