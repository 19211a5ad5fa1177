/*-------------------------------------------------------------------------
 *
 * consumer.h
 *	  The decisions of the consumer side and the single-event consumer
 *	  functions (consumer.c), for the files above it: batch.c (the
 *	  set-based deliver_batch/apply_batch), dead_letters.c (dead_letter,
 *	  retry_dead_letter, discard_dead_letter) and consumer_call.c (a
 *	  distributed consumer's call on the node of its resource).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_CONSUMER_H
#define ORDERING_CONSUMER_H

#include "fmgr.h"

#include "batch.h"
#include "handlers.h"
#include "owned_rows.h"
#include "parked.h"

/*
 * The consumer functions, by the letter that names each to the call
 * functions of a distributed consumer (consumer_call.c), and to the
 * routing that calls them (consumer_citus.c).
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
	Oid			tables[OWNED_NUM_TABLES];	/* the table each table id
											 * stands for: InvalidOid for the
											 * extension's own */
	const int32 *ords;			/* a part of a distributed consumer's batch:
								 * the ords of its events in the whole
								 * batch, else NULL */
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
	const Oid  *tables;			/* the call's (ConsumerCall.tables) */
	Snapshot	snapshot;		/* the decision snapshot */
	/* out */
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

/* consumer.c */
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
 * The consumer functions of consumer.c: the call function of a
 * distributed consumer runs them on the node of the resource
 * (consumer_call.c).
 */
extern PGDLLEXPORT Datum ordering_deliver(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_deliver_handler(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_apply_if_newer(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_position(PG_FUNCTION_ARGS);
extern PGDLLEXPORT Datum ordering_skip_gap(PG_FUNCTION_ARGS);

#endif							/* ORDERING_CONSUMER_H */
