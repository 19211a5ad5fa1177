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
#include "handlers.h"
#include "owned_rows.h"
#include "parked.h"

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

/* The tables of deliver(), open for a whole call (a batch: all its events) */
typedef struct DeliverTables
{
	OwnedRel	positions;
	OwnedRel	parked;
} DeliverTables;

/* consumer.c */
extern void consumer_check_consumer(text *consumer);
extern void consumer_check_seq(int64 seq);
extern void consumer_key_args(FunctionCallInfo fcinfo, text **consumer,
							  text **resource, int64 *seq);
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
extern void consumer_open_deliver(DeliverTables *tables);
extern void consumer_close_deliver(DeliverTables *tables);
extern int	consumer_deliver_event(DeliverTables *tables, const char *name,
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
