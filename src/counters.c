/*-------------------------------------------------------------------------
 *
 * counters.c
 *	  The producer's counters in ordering.sequences: take the next number,
 *	  take an asserted one, raise one to restored history, give one back.
 *
 * Each counter is one row (stream, resource_id, last_seq), advanced in the
 * producer's own transaction through the storage layer (owned_rows.c has
 * the locking and isolation rules): a rollback gives the number back, a
 * concurrent producer of the same resource waits for the commit and
 * continues after it, different resources never meet.  Deleting outbox rows
 * never touches the counters, so a sequence never restarts.
 *
 * Every wait a counter causes is on a row or on a transaction ID, so
 * pg_locks shows it as a "transactionid" or "tuple" wait, like an UPDATE's;
 * an error context names the stream and the resource, so a deadlock or
 * lock_timeout report says which counter was wanted.
 *
 * Each function takes the counter table to advance ("counters"): InvalidOid
 * for ordering.sequences, or the OID of a counter shard of a stream that
 * Citus distributes (citus.c), a table of the same shape that the storage
 * layer opens by OID.  The rules above are the same in both.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"

#include "counters.h"
#include "owned.h"
#include "stats.h"

/* What a call asks of a counter */
typedef enum CounterMode
{
	COUNTER_NEXT,				/* the next number */
	COUNTER_RAISE,				/* at least "seq" (restored history) */
	COUNTER_GIVE_BACK			/* from "seq" down to seq - 1 */
} CounterMode;

typedef struct CounterRequest
{
	CounterMode mode;
	int64		seq;
	int64		previous;		/* out: the value before */
	int64		result;			/* out: the value after */
	bool		overflow;		/* out: NEXT found the counter at its maximum */
	bool		not_last;		/* out: GIVE_BACK found another number above */
} CounterRequest;

/* An error context naming the counter a call wants */
typedef struct CounterContext
{
	text	   *stream;
	text	   *resource;
} CounterContext;

/*
 * errcontext for everything that happens while a counter is wanted.
 */
static void
counter_error_context(void *arg)
{
	CounterContext *cc = (CounterContext *) arg;

	errcontext("sequence number of resource \"%s\" in stream \"%s\"",
			   text_to_cstring(cc->resource), text_to_cstring(cc->stream));
}

/*
 * OwnedDecide for ordering.sequences: the counter's new value.  Never
 * raises: what goes wrong is reported through the request.
 */
static OwnedVerdict
decide_counter(const OwnedRow *row, Datum *values, bool *nulls, void *arg)
{
	CounterRequest *req = (CounterRequest *) arg;
	int64		current = row->found ?
	DatumGetInt64(row->values[SEQUENCES_LAST_SEQ - 1]) : 0;
	int64		next = current;

	req->previous = current;
	req->overflow = req->not_last = false;
	switch (req->mode)
	{
		case COUNTER_NEXT:
			if (current == PG_INT64_MAX)
				req->overflow = true;
			else
				next = current + 1;
			break;
		case COUNTER_RAISE:
			next = Max(current, req->seq);
			break;
		case COUNTER_GIVE_BACK:
			if (current == req->seq)
				next = current - 1;
			else
				req->not_last = true;
			break;
	}
	req->result = next;
	if (next == current)
		return OWNED_KEEP;
	values[SEQUENCES_LAST_SEQ - 1] = Int64GetDatum(next);
	nulls[SEQUENCES_LAST_SEQ - 1] = false;
	return OWNED_WRITE;
}

/*
 * Run one request on the counter of (stream, resource) in "counters" (file
 * header).
 */
static void
counter_request(Oid counters, text *stream, text *resource,
				CounterRequest *req)
{
	ErrorContextCallback callback;
	CounterContext cc = {stream, resource};
	OwnedRel	orel;
	OwnedRow	row;
	Datum		key[2];

	owned_check_key_length(stream, "stream");
	owned_check_key_length(resource, "resource_id");
	callback.callback = counter_error_context;
	callback.arg = &cc;
	callback.previous = error_context_stack;
	error_context_stack = &callback;

	key[0] = PointerGetDatum(stream);
	key[1] = PointerGetDatum(resource);
	if (OidIsValid(counters))
		owned_open_relid(OWNED_SEQUENCES, counters, RowExclusiveLock, &orel);
	else
		owned_open(OWNED_SEQUENCES, RowExclusiveLock, &orel);
	owned_advance(&orel, key, decide_counter, req, &row);
	owned_close(&orel);

	error_context_stack = callback.previous;
}

/*
 * The next number of (stream, resource), in the caller's transaction.
 */
int64
counter_next_in(Oid counters, text *stream, text *resource)
{
	CounterRequest req = {COUNTER_NEXT};

	counter_request(counters, stream, resource, &req);
	if (req.overflow)
		ereport(ERROR,
				(errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
				 errmsg("sequence of resource \"%s\" in stream \"%s\" reached its maximum value",
						text_to_cstring(resource), text_to_cstring(stream))));
	return req.result;
}

/*
 * Take "seq" as the next number of (stream, resource): the caller asserted
 * it.  The counter is advanced first and checked after, once the row is
 * ours: only then is its value the truth (a concurrent producer may have
 * been about to roll back).  A mismatch raises 40001, and the statement's
 * rollback takes the advance back.
 *
 * The hint says what explains the mismatch.  A number behind the next one
 * is a concurrent producer's doing.  A number beyond it is not: no
 * concurrent producer makes a number appear before its predecessors.  A
 * restore without its steps explains either, but only in a statement that a
 * dump carries: a top-level COPY (any mismatch: the counters may have been
 * loaded first) or a top-level INSERT of an --inserts dump (a number beyond
 * the next one).  A function such as emit(), or a statement run inside one,
 * is never a restore.  A number below 1 is no sequence number at all.
 */
void
counter_expect_in(Oid counters, text *stream, text *resource, int64 seq,
				  CounterSource source)
{
	CounterRequest req = {COUNTER_NEXT};
	bool		beyond;
	bool		restore;

	counter_request(counters, stream, resource, &req);
	if (!req.overflow && req.result == seq)
		return;
	beyond = !req.overflow && seq > req.result;
	restore = source == COUNTER_SOURCE_COPY ||
		(source == COUNTER_SOURCE_INSERT && beyond);
	ordering_stats_sequence_conflict(text_to_cstring(stream));
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("expected sequence number " INT64_FORMAT " for resource \"%s\" in stream \"%s\", but the next is " INT64_FORMAT,
					seq, text_to_cstring(resource), text_to_cstring(stream),
					req.overflow ? req.previous : req.result),
			 errdetail("The last sequence number allocated is " INT64_FORMAT ".",
					   req.previous),
			 seq < 1 ?
			 errhint("Sequence numbers start at 1: assert the next one, or assert none (NULL) to be given it.") :
			 restore ?
			 errhint("If this is a restore, set ordering.restoring = on for the database before it (ALTER DATABASE, or ordering.pre_restore() where the extension exists) and call ordering.post_restore() after it.") :
			 beyond ?
			 errhint("The number asserted is beyond the next one, which no concurrent producer causes: assert the next number, the last one allocated plus one.") :
			 errhint("Another producer wrote to this resource first; reload it and retry.")));
}

/*
 * Raise the counter of (stream, resource) to at least "seq": restored
 * history, a counter row loaded from a dump.  Never lowers it.
 */
void
counter_raise(text *stream, text *resource, int64 seq)
{
	CounterRequest req = {COUNTER_RAISE, seq};

	counter_request(InvalidOid, stream, resource, &req);
}

/*
 * Give "seq" back: it was handed to a row that was not stored (see
 * provisional.c).  Possible only while it is the last number handed out;
 * false otherwise, having changed nothing.
 */
bool
counter_give_back_in(Oid counters, text *stream, text *resource, int64 seq)
{
	CounterRequest req = {COUNTER_GIVE_BACK, seq};

	counter_request(counters, stream, resource, &req);
	return !req.not_last;
}
