/*-------------------------------------------------------------------------
 *
 * citus_call.c
 *	  The call functions of a distributed consumer, run on the node of its
 *	  resource: <tag>_call() for one call, <tag>_batch() for a part of a
 *	  batch (README.md, "Distributed consumers: the call on the resource's
 *	  node").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/tuplestore.h"

#include "citus.h"
#include "compat.h"
#include "consumer.h"
#include "text_equal.h"

PG_FUNCTION_INFO_V1(ordering_consumer_call);
PG_FUNCTION_INFO_V1(ordering_consumer_batch);

/* Argument types of the consumer functions, as the forms below take them */
static const Oid deliver_types[] = {TEXTOID, TEXTOID, INT8OID, JSONBOID,
REGPROCEDUREOID, TEXTOID};
static const Oid key_types[] = {TEXTOID, TEXTOID, INT8OID};
static const Oid dead_types[] = {TEXTOID, TEXTOID, INT8OID, JSONBOID, TEXTOID};
static const Oid retry_types[] = {TEXTOID, TEXTOID, REGPROCEDUREOID};
static const Oid batch_types[] = {TEXTOID, TEXTARRAYOID, INT8ARRAYOID,
JSONBARRAYOID, REGPROCEDUREOID, TEXTOID};

/*
 * The consumer function an op stands for: its name and argument types, and
 * how many of them it takes (with an option given: the form of deliver()
 * with on_error).
 */
typedef struct CallForm
{
	char		op;
	const char *name;
	const Oid  *types;
	int			nargs;
	int			nargs_option;
} CallForm;

/* The ops of the call function */
static const CallForm call_forms[] = {
	{CONSUMER_OP_DELIVER, "deliver", deliver_types, 4, 4},
	{CONSUMER_OP_DELIVER_HANDLER, "deliver", deliver_types, 5, 6},
	{CONSUMER_OP_APPLY, "apply_if_newer", key_types, 3, 3},
	{CONSUMER_OP_POSITION, "position", key_types, 2, 2},
	{CONSUMER_OP_SKIP_GAP, "skip_gap", key_types, 2, 2},
	{CONSUMER_OP_DEAD_LETTER, "dead_letter", dead_types, 5, 5},
	{CONSUMER_OP_RETRY, "retry_dead_letter", retry_types, 2, 2},
	{CONSUMER_OP_RETRY_HANDLER, "retry_dead_letter", retry_types, 3, 3},
	{CONSUMER_OP_DISCARD, "discard_dead_letter", key_types, 2, 2},
};

/* The ops of the batch function */
static const CallForm batch_forms[] = {
	{CONSUMER_OP_DELIVER_BATCH, "deliver_batch", batch_types, 4, 4},
	{CONSUMER_OP_DELIVER_BATCH_HANDLER, "deliver_batch", batch_types, 6, 6},
	{CONSUMER_OP_APPLY_BATCH, "apply_batch", batch_types, 3, 3},
};

/*
 * A call function's run on this node's shards of its resource (README.md):
 * the consumer's tag, the resource's shard, and the call that
 * runs here (its group's shards of the storage layer's tables) while it
 * runs, in place of the one it replaced (call_enter, call_leave).
 */
typedef struct CallHere
{
	char		tag[CITUS_CONSUMER_TAG_LEN + 1];
	CitusTable	table;			/* the consumer's positions table */
	CitusShard	shard;			/* the resource's */
	CitusRouteHere call;
	const CitusRouteHere *outer;
} CallHere;

/*
 * The consumer function an op stands for among the nforms forms of the
 * function that runs it, for the privilege check; an error for an op of
 * none.
 */
static Oid
call_op_function(char op, const CallForm *forms, int nforms, bool option)
{
	for (int i = 0; i < nforms; i++)
	{
		List	   *qualified;

		if (forms[i].op != op)
			continue;
		qualified = list_make1(makeString("ordering"));
		qualified = lappend(qualified, makeString(pstrdup(forms[i].name)));
		return LookupFuncName(qualified,
							  option ? forms[i].nargs_option :
							  forms[i].nargs,
							  forms[i].types, false);
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown operation \"%c\"", op)));
}

/*
 * Check that the caller of a call or batch function (its forms) may
 * execute the consumer function its op stands for (for deliver() with a
 * handler, the form with on_error when an option is given): those
 * functions are executable by every role, and do nothing a role could not
 * do through the consumer functions.
 */
static void
call_check_privilege(char op, const CallForm *forms, int nforms, bool option)
{
	Oid			fn = call_op_function(op, forms, nforms, option);
	AclResult	aclresult = ordering_proc_aclcheck(fn, GetUserId(), ACL_EXECUTE);

	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, format_procedure(fn));
}

/*
 * The shards of a distributed consumer's tables that sit with the shard of
 * a resource, on this node, with their metadata lock (README.md), into
 * here (whose tag is set).
 */
static void
call_local_shards(CallHere *here, text *consumer, text *resource)
{
	const char *tag = here->tag;
	CitusShard *shard = &here->shard;
	Oid			positions = citus_consumer_relation(tag, "_positions");

	if (!OidIsValid(positions))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("consumer \"%s\" is not distributed on this node",
						text_to_cstring(consumer))));
	citus_consumer_lock_resource(positions, resource, &here->table, shard);
	if (!citus_shard_here(shard->shardid))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("the shard of resource \"%s\" of consumer \"%s\" is not on this node",
						text_to_cstring(resource), text_to_cstring(consumer)),
				 errdetail("Shard " INT64_FORMAT " moved while the call was routed.",
						   shard->shardid),
				 errhint("Retry the transaction.")));
	for (int i = 0; i < OWNED_NUM_TABLES; i++)
		here->call.tables[i] = InvalidOid;
	for (int i = 0; i < lengthof(citus_consumer_tables); i++)
	{
		const CitusConsumerTable *t = &citus_consumer_tables[i];
		Oid			rel = citus_consumer_relation(tag, t->suffix);
		CitusShard	sibling;

		if (!OidIsValid(rel) || !citus_colocated_shard(rel, shard->minvalue, &sibling))
			elog(ERROR, "no shard of %s%s co-located with shard " INT64_FORMAT,
				 tag, t->suffix, shard->shardid);
		here->call.tables[t->id] = citus_shard_relid(rel, sibling.shardid);
		if (!OidIsValid(here->call.tables[t->id]))
			elog(ERROR, "shard " INT64_FORMAT " of %s%s is not on this node",
				 sibling.shardid, tag, t->suffix);
	}
}

/*
 * Make the call the one running here (citus_route.c), on the shards
 * found, for its consumer and resource, with the ords of a part of a batch
 * (or NULL), until call_leave().
 */
static void
call_enter(CallHere *here, text *consumer, text *resource, const int32 *ords)
{
	here->call.consumer = consumer;
	here->call.resource = resource;
	here->call.ords = ords;
	here->outer = citus_route_enter(&here->call);
}

/*
 * Put back the call that call_enter() replaced, whether the call succeeded
 * or not.
 */
static void
call_leave(const CallHere *here)
{
	citus_route_leave(here->outer);
}

/*
 * Check that a call or batch function runs as the one of this consumer:
 * its own name is <tag of the consumer><suffix>.  Fills tag.
 */
static void
call_check_function(FunctionCallInfo fcinfo, text *consumer,
					const char *suffix, char *tag)
{
	char	   *own_name = get_func_name(fcinfo->flinfo->fn_oid);

	citus_consumer_tag(consumer, tag);
	if (own_name == NULL || strncmp(own_name, tag, CITUS_CONSUMER_TAG_LEN) != 0 ||
		strcmp(own_name + CITUS_CONSUMER_TAG_LEN, suffix) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("function %s is not the %s function of consumer \"%s\"",
						own_name ? own_name : "?", suffix + 1,
						text_to_cstring(consumer))));
}

/*
 * The resource id a call or batch function was given (its second
 * argument): text, or (a consumer whose tables are distributed by another
 * type) a value of that type, which Citus routed by, written as the type
 * writes it, as ordering.resource_key() writes the producer's value: the
 * routing accepted no other spelling (citus_consumer_key()).
 */
static text *
call_resource(FunctionCallInfo fcinfo)
{
	Oid		   *argtypes;
	int			nargs;
	Oid			output;
	bool		varlena;

	(void) get_func_signature(fcinfo->flinfo->fn_oid, &argtypes, &nargs);
	if (nargs < 2 || argtypes[1] == TEXTOID)
		return PG_GETARG_TEXT_PP(1);
	getTypeOutputInfo(argtypes[1], &output, &varlena);
	return cstring_to_text(OidOutputFunctionCall(output, PG_GETARG_DATUM(1)));
}

/*
 * ordering_internal.<tag>_call(op "char", resource_id text, consumer text,
 *								seq bigint, payload jsonb,
 *								handler regprocedure, option text)
 * (resource_id of the type the consumer's tables are distributed by)
 * returns table (seq bigint, payload jsonb)
 *
 * Runs one consumer function's call on this node's shards of the
 * resource (README.md).  Rows for the functions that return rows; one
 * row whose seq is the result for the others.
 */
Datum
ordering_consumer_call(PG_FUNCTION_ARGS)
{
	LOCAL_FCINFO(inner, 6);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char		op;
	text	   *consumer;
	text	   *resource;
	CallHere	here;
	int			nargs = 2;
	volatile Datum result = (Datum) 0;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("op, resource_id and consumer must not be null")));
	op = PG_GETARG_CHAR(0);
	resource = call_resource(fcinfo);
	consumer = PG_GETARG_TEXT_PP(2);

	/* the function of this consumer, and a consumer function it may run */
	call_check_function(fcinfo, consumer, "_call", here.tag);
	call_check_privilege(op, call_forms, lengthof(call_forms),
						 !PG_ARGISNULL(6));

	/* the resource's shards, here, and their metadata lock */
	call_local_shards(&here, consumer, resource);

	/* the consumer function's own arguments */
	InitFunctionCallInfoData(*inner, fcinfo->flinfo, 0, InvalidOid, NULL,
							 citus_route_op_returns_rows(op) ? (Node *) rsinfo : NULL);
	inner->args[0] = fcinfo->args[2];
	inner->args[1].value = PointerGetDatum(resource);
	inner->args[1].isnull = false;
	switch (op)
	{
		case CONSUMER_OP_DELIVER:
			inner->args[2] = fcinfo->args[3];
			inner->args[3] = fcinfo->args[4];
			nargs = 4;
			break;
		case CONSUMER_OP_DELIVER_HANDLER:
		case CONSUMER_OP_DEAD_LETTER:
			inner->args[2] = fcinfo->args[3];
			inner->args[3] = fcinfo->args[4];
			inner->args[4] = op == CONSUMER_OP_DEAD_LETTER ? fcinfo->args[6] :
				fcinfo->args[5];
			inner->args[5] = fcinfo->args[6];
			nargs = op == CONSUMER_OP_DEAD_LETTER || PG_ARGISNULL(6) ? 5 : 6;
			break;
		case CONSUMER_OP_APPLY:
			inner->args[2] = fcinfo->args[3];
			nargs = 3;
			break;
		case CONSUMER_OP_RETRY_HANDLER:
			inner->args[2] = fcinfo->args[5];
			nargs = 3;
			break;
	}
	inner->nargs = nargs;
	if (!citus_route_op_returns_rows(op))
		InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);

	call_enter(&here, consumer, resource, NULL);
	PG_TRY();
	{
		switch (op)
		{
			case CONSUMER_OP_DELIVER:
				(void) ordering_deliver(inner);
				break;
			case CONSUMER_OP_DELIVER_HANDLER:
				result = Int64GetDatum(DatumGetInt32(ordering_deliver_handler(inner)));
				break;
			case CONSUMER_OP_APPLY:
				result = Int64GetDatum(DatumGetBool(ordering_apply_if_newer(inner)) ? 1 : 0);
				break;
			case CONSUMER_OP_POSITION:
				result = ordering_position(inner);
				break;
			case CONSUMER_OP_SKIP_GAP:
				(void) ordering_skip_gap(inner);
				break;
			case CONSUMER_OP_DEAD_LETTER:
				(void) ordering_dead_letter(inner);
				break;
			case CONSUMER_OP_RETRY:
				(void) ordering_retry_dead_letter(inner);
				break;
			case CONSUMER_OP_RETRY_HANDLER:
				result = Int64GetDatum(DatumGetInt32(ordering_retry_dead_letter_handler(inner)));
				break;
			case CONSUMER_OP_DISCARD:
				(void) ordering_discard_dead_letter(inner);
				break;
		}
	}
	PG_FINALLY();
	{
		call_leave(&here);
	}
	PG_END_TRY();

	if (!citus_route_op_returns_rows(op))
	{
		Datum		values[2] = {result, (Datum) 0};
		bool		nulls[2] = {false, true};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * The elements of an array argument of the batch function (not NULL).
 */
static int
call_array(FunctionCallInfo fcinfo, int argno, Oid type, Datum **values,
		   bool **nulls)
{
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			n;

	get_typlenbyvalalign(type, &typlen, &typbyval, &typalign);
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(argno), type, typlen, typbyval,
					  typalign, values, nulls, &n);
	return n;
}

/*
 * The ords of a part's events in the whole batch (its arguments ords and
 * resource_ids, not NULL), checked: every event is of the part's shard,
 * and of its resource for the handler form.  *n gets how many.
 */
static int32 *
call_part_ords(FunctionCallInfo fcinfo, char op, const CallHere *here,
			   text *resource, int *n)
{
	Datum	   *ords;
	bool	   *ordnulls;
	Datum	   *ids;
	bool	   *idnulls;
	int32	   *ordvals;

	*n = call_array(fcinfo, 4, TEXTOID, &ids, &idnulls);
	if (call_array(fcinfo, 3, INT4OID, &ords, &ordnulls) != *n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ords and resource_ids must have the same length")));
	ordvals = palloc(sizeof(int32) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		int32		hash;

		if (ordnulls[i] || idnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("ords and resource_ids must not hold nulls")));
		ordvals[i] = DatumGetInt32(ords[i]);
		hash = citus_hash(&here->table,
						  citus_consumer_key(&here->table, DatumGetTextPP(ids[i])));
		if (hash < here->shard.minvalue || hash > here->shard.maxvalue ||
			(op == CONSUMER_OP_DELIVER_BATCH_HANDLER &&
			 !ordering_text_equal(DatumGetTextPP(ids[i]), resource)))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("event %d of the batch is not of the part's shard", ordvals[i]),
					 errhint("Retry the transaction.")));
	}
	return ordvals;
}

/*
 * apply_batch()'s rows (ord, applied), from part, as the batch function's
 * (ord, 1 or 0, NULL) into rsinfo.
 */
static void
call_put_applied(ReturnSetInfo *part, ReturnSetInfo *rsinfo)
{
	TupleTableSlot *slot = MakeSingleTupleTableSlot(part->setDesc,
													&TTSOpsMinimalTuple);

	while (tuplestore_gettupleslot(part->setResult, true, false, slot))
	{
		bool		isnull;
		Datum		values[3];
		bool		nulls[3] = {false, false, true};

		values[0] = slot_getattr(slot, 1, &isnull);
		values[1] = Int64GetDatum(DatumGetBool(slot_getattr(slot, 2, &isnull)) ? 1 : 0);
		values[2] = (Datum) 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	ExecDropSingleTupleTableSlot(slot);
}

/*
 * ordering_internal.<tag>_batch(op "char", resource_id text, consumer text,
 *								 ords integer[], resource_ids text[],
 *								 seqs bigint[], payloads jsonb[],
 *								 handler regprocedure, option text)
 * (resource_id of the type the consumer's tables are distributed by)
 * returns table (ord integer, seq bigint, payload jsonb)
 *
 * Runs a part of a batch on this node's shards of resource_id (every event
 * must be of that shard; of that resource for the handler form), through
 * the batch function it stands for, the events named by their ords in the
 * whole batch: deliver_batch()'s rows; apply_batch()'s (ord, 1 or 0 for
 * applied); for the handler form one row whose seq is the count.
 */
Datum
ordering_consumer_batch(PG_FUNCTION_ARGS)
{
	LOCAL_FCINFO(inner, 6);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char		op;
	text	   *consumer;
	text	   *resource;
	CallHere	here;
	int			n;
	int32	   *ordvals;
	ReturnSetInfo part = {0};
	volatile Datum ran = (Datum) 0;

	for (int i = 0; i < 5; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("op, resource_id, consumer, ords and resource_ids must not be null")));
	op = PG_GETARG_CHAR(0);
	resource = call_resource(fcinfo);
	consumer = PG_GETARG_TEXT_PP(2);
	call_check_function(fcinfo, consumer, "_batch", here.tag);
	call_check_privilege(op, batch_forms, lengthof(batch_forms), false);

	/* the part's shard, here; every event of the part is of it */
	call_local_shards(&here, consumer, resource);
	ordvals = call_part_ords(fcinfo, op, &here, resource, &n);

	/* the batch function's own arguments */
	InitFunctionCallInfoData(*inner, fcinfo->flinfo,
							 op == CONSUMER_OP_DELIVER_BATCH_HANDLER ? 6 :
							 op == CONSUMER_OP_DELIVER_BATCH ? 4 : 3,
							 InvalidOid, NULL, NULL);
	inner->args[0] = fcinfo->args[2];
	inner->args[1] = fcinfo->args[4];
	inner->args[2] = fcinfo->args[5];
	inner->args[3] = fcinfo->args[6];
	inner->args[4] = fcinfo->args[7];
	inner->args[5] = fcinfo->args[8];
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (op == CONSUMER_OP_DELIVER_BATCH)
		inner->resultinfo = (Node *) rsinfo;
	else if (op == CONSUMER_OP_APPLY_BATCH)
	{
		/* apply_batch()'s rows (ord, applied), copied below */
		part.type = T_ReturnSetInfo;
		part.econtext = rsinfo->econtext;
		part.allowedModes = SFRM_Materialize;
		part.expectedDesc = CreateTemplateTupleDesc(2);
		TupleDescInitEntry(part.expectedDesc, 1, "ord", INT4OID, -1, 0);
		TupleDescInitEntry(part.expectedDesc, 2, "applied", BOOLOID, -1, 0);
		inner->resultinfo = (Node *) &part;
	}

	call_enter(&here, consumer, resource, ordvals);
	PG_TRY();
	{
		if (op == CONSUMER_OP_DELIVER_BATCH)
			(void) ordering_deliver_batch(inner);
		else if (op == CONSUMER_OP_APPLY_BATCH)
			(void) ordering_apply_batch(inner);
		else
			ran = ordering_deliver_batch_handler(inner);
	}
	PG_FINALLY();
	{
		call_leave(&here);
	}
	PG_END_TRY();

	if (op == CONSUMER_OP_APPLY_BATCH)
		call_put_applied(&part, rsinfo);
	else if (op == CONSUMER_OP_DELIVER_BATCH_HANDLER)
	{
		Datum		values[3] = {Int32GetDatum(0), Int64GetDatum(DatumGetInt32(ran)), (Datum) 0};
		bool		nulls[3] = {false, false, true};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
