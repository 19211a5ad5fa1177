/*-------------------------------------------------------------------------
 *
 * consumer.h
 *	  What the files of the consumer side share: a section per file
 *	  (README.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_CONSUMER_H
#define ORDERING_CONSUMER_H

#include "fmgr.h"
#include "funcapi.h"

#include "owned.h"
#include "parked.h"

/*
 * The result set of a consumer function that returns rows
 */

/*
 * Set up the tuplestore of the calls that return (seq, payload) rows.  The
 * executor passes the row type it expects (our OUT parameters) in
 * expectedDesc: using it saves building the same descriptor from pg_proc at
 * every call, which get_call_result_type() would.
 */
static inline void
consumer_materialize(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		expected = rsinfo != NULL && IsA(rsinfo, ReturnSetInfo) &&
	rsinfo->expectedDesc != NULL;

	InitMaterializedSRF(fcinfo, expected ? MAT_SRF_USE_EXPECTED_DESC : 0);
}

/*
 * batch.c: deliver_batch() and apply_batch()
 */

/*
 * One event of a batch call, as batch.c read it from the call's arrays and
 * checked it.  The routing of a distributed consumer's batch
 * (citus_route.c) splits these same events into parts.
 */
typedef struct BatchEvent
{
	text	   *resource;
	int64		seq;
	Datum		payload;
	bool		isnull;			/* the payload's */
} BatchEvent;

extern PGDLLEXPORT Datum ordering_deliver_batch(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_deliver_batch_handler(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_apply_batch(PG_FUNCTION_ARGS);

/*
 * handlers.c: the handler of the calls that take one
 */

/* A resolved handler of deliver(..., handler), cached in fn_extra */
typedef struct HandlerCache
{
	Oid			handler;
	bool		strict;
	FmgrInfo	flinfo;
} HandlerCache;

extern HandlerCache *handler_lookup(FunctionCallInfo fcinfo, int argno);
extern bool handler_dead_lettering(FunctionCallInfo fcinfo, int argno);
extern int	handler_run(HandlerCache *hc, const Datum *key, ReadyList *ready,
						bool guarded, ErrorData **failure);
extern void handler_check_reentry(const Datum *key);

/*
 * call.c and decisions.c: a call, and the decisions
 */

/*
 * The consumer functions, by the letter that names each to the call
 * functions of a distributed consumer (citus_call.c), and to the
 * routing that calls them (citus_route.c).
 */
#define CONSUMER_OP_DELIVER				'd'
#define CONSUMER_OP_DELIVER_HANDLER		'h'
#define CONSUMER_OP_APPLY				'a'
#define CONSUMER_OP_POSITION			'p'
#define CONSUMER_OP_SKIP_GAP			's'
#define CONSUMER_OP_DEAD_LETTER			'l'
#define CONSUMER_OP_RETRY				'r'
#define CONSUMER_OP_RETRY_HANDLER		'R'
#define CONSUMER_OP_DISCARD				'x'
#define CONSUMER_OP_DELIVER_BATCH		'b'
#define CONSUMER_OP_DELIVER_BATCH_HANDLER	'B'
#define CONSUMER_OP_APPLY_BATCH			'A'

/* What a call of a consumer function does (ConsumerCall.flags) */
#define CALL_SEQ		0x01	/* its arguments are (consumer, resource_id,
								 * seq, ...) */
#define CALL_READ		0x02	/* it only reads ordering.positions */
#define CALL_PARKED		0x04	/* it opens ordering.parked too */
#define CALL_ROWS		0x08	/* it returns rows: its tuplestore is set up */

/*
 * The frame of a call of a consumer function (call.c): its arguments,
 * where it runs, and the tables it works on, opened by
 * consumer_call_begin() and closed by consumer_call_end().  Where it runs
 * is decided once, there: on another node (a distributed consumer's call,
 * which then ran there), or here, on the extension's own tables or on the
 * shards of a distributed consumer's call running on this node; the code
 * below gets the tables from the frame.
 */
typedef struct ConsumerCall
{
	int			flags;
	text	   *consumer;
	text	   *resource;		/* NULL in a batch */
	int64		seq;			/* with CALL_SEQ */
	Datum		key[2];			/* (consumer, resource) */
	Oid			tables[OWNED_NUM_TABLES];	/* the table each table id stands
											 * for: InvalidOid for the
											 * extension's own */
	const int32 *ords;			/* a part of a distributed consumer's batch:
								 * the ords of its events in the whole batch,
								 * else NULL */
	OwnedRel	positions;
	OwnedRel	parked;			/* with CALL_PARKED */
} ConsumerCall;

/* What a decision about a key of ordering.positions decided */
typedef enum KeyPlan
{
	PLAN_NOTHING,				/* stale, duplicate, no gap, no dead letter */
	PLAN_STALE,
	PLAN_DUPLICATE,
	PLAN_APPLY,					/* ready events apply now */
	PLAN_PARK,
	PLAN_CAP_REACHED,
	PLAN_BAD_SEQ,				/* dead_letter(): at or below the position */
	PLAN_BLOCKED_BELOW,			/* dead_letter(): behind another dead letter */
	PLAN_BLOCK					/* dead_letter(): the block starts */
} KeyPlan;

/* A decision about one key of ordering.positions, and what it saw */
typedef struct KeyDecision
{
	/* in */
	const Datum *key;			/* (consumer, resource) */
	int64		seq;			/* the event handed in, if any */
	Datum		payload;
	bool		payload_isnull;
	OwnedRel   *parked;
	OwnedRel   *positions;		/* set by consumer_decide() */
	const Oid  *tables;			/* the call's (ConsumerCall.tables) */
	Snapshot	snapshot;		/* the decision snapshot */
	/* out */
	ItemPointerData row_tid;	/* the position row's version read, if any */
	KeyPlan		plan;
	int64		position;		/* before */
	int64		blocked_at;		/* before; 0 if not blocked */
	int64		end;			/* after, when it moves */
	int64		skipped;		/* events given up */
	bool		had_parked;
	bool		beyond;			/* events remain parked after the run */
	ParkedSummary summary;		/* the parked events: before, then after */
	ReadyList  *ready;
} KeyDecision;

/* call.c */
extern void consumer_check_consumer(text *consumer);
extern void consumer_check_seq(int64 seq);
extern void consumer_call_args(ConsumerCall *call, FunctionCallInfo fcinfo,
							   int flags);
extern bool consumer_call_begin(ConsumerCall *call, FunctionCallInfo fcinfo,
								char op, const char *what, Datum *result);
extern bool consumer_call_begin_batch(ConsumerCall *call,
									  FunctionCallInfo fcinfo, char op,
									  const char *what, text *consumer,
									  const BatchEvent *events, int n,
									  int flags, Datum *result);
extern void consumer_call_decide(ConsumerCall *call, OwnedDecide decide,
								 KeyDecision *kd);
extern void consumer_call_end(ConsumerCall *call);

/* decisions.c */
extern void consumer_return_ready(FunctionCallInfo fcinfo, ReadyList *ready);
extern void consumer_continue_run(KeyDecision *kd, int64 to);
extern void consumer_read_position(const OwnedRow *row, Datum *values,
								   bool *nulls, KeyDecision *kd);
extern void consumer_know_parked(KeyDecision *kd);
extern void consumer_set_summary(Datum *values, const ParkedSummary *summary);
extern void consumer_decide(OwnedDecide decide, KeyDecision *kd,
							OwnedRel *positions);
extern int	consumer_finish_run(KeyDecision *kd, OwnedRel *positions,
								HandlerCache *hc, bool dead_lettering,
								bool retrying);
extern Datum consumer_give_up(FunctionCallInfo fcinfo, const char *caller,
							  OwnedDecide decide, bool dead_letter);
extern int	consumer_deliver_event(ConsumerCall *call, const char *name,
								   text *consumer, text *resource, int64 seq,
								   Datum payload, bool payload_isnull,
								   ReadyList *ready, HandlerCache *hc,
								   bool dead_lettering);
extern bool consumer_apply_event(OwnedRel *positions, const char *name,
								 text *consumer, text *resource, int64 seq);

/*
 * The consumer functions of decisions.c: the call function of a
 * distributed consumer runs them on the node of the resource
 * (citus_call.c).
 */
extern PGDLLEXPORT Datum ordering_deliver(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_deliver_handler(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_apply_if_newer(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_position(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_skip_gap(PG_FUNCTION_ARGS);

/*
 * dead_letters.c: the consumer functions of dead letters
 */

extern PGDLLEXPORT Datum ordering_dead_letter(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_retry_dead_letter(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_retry_dead_letter_handler(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_discard_dead_letter(PG_FUNCTION_ARGS);

/*
 * citus_route.c: where the call of a distributed consumer runs
 */

/*
 * The call of a distributed consumer running on this node for its resource
 * (citus_call.c): the calls made while it runs for the same consumer and
 * resource run on these shards.
 */
typedef struct CitusRouteHere
{
	text	   *consumer;
	text	   *resource;
	Oid			tables[OWNED_NUM_TABLES];	/* the shards of the group, by the
											 * table they stand for */
	const int32 *ords;			/* a part of a batch: the ords of its events
								 * in the whole batch, else NULL */
} CitusRouteHere;

extern bool citus_route_call(FunctionCallInfo fcinfo, char op,
							 ConsumerCall *call, Datum *result);
extern bool citus_route_batch(FunctionCallInfo fcinfo, char op,
							  const BatchEvent *events, int n,
							  ConsumerCall *call, Datum *result);
extern void citus_route_confirm(const ConsumerCall *call);
extern const CitusRouteHere *citus_route_enter(const CitusRouteHere *call);
extern void citus_route_leave(const CitusRouteHere *outer);
extern bool citus_route_op_returns_rows(char op);

#endif							/* ORDERING_CONSUMER_H */
