/*-------------------------------------------------------------------------
 *
 * counters.c
 *	  The counters of the streams: the next number, an asserted one, a
 *	  raised one, one given back, the last one, each in the caller's
 *	  transaction (README.md, "Counters").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

#include "citus.h"
#include "owned.h"
#include "producer.h"
#include "stats.h"

/* What a call asks of a counter */
typedef enum CounterMode
{
	COUNTER_NEXT,				/* the next number */
	COUNTER_RAISE,				/* at least "seq" (restored history) */
	COUNTER_GIVE_BACK,			/* from "seq" down to seq - 1 */
	COUNTER_SET					/* from "expected" to "seq" (a held counter) */
} CounterMode;

typedef struct CounterRequest
{
	CounterMode mode;
	int64		seq;
	int64		expected;		/* SET: the value the row must hold */
	int64		previous;		/* out: the value before */
	int64		result;			/* out: the value after */
	bool		overflow;		/* out: NEXT found the counter at its maximum */
	bool		not_last;		/* out: GIVE_BACK found another number above,
								 * SET another value than expected */
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
		case COUNTER_SET:
			if (current == req->expected)
				next = req->seq;
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
 * Run one request on the counter of (stream, resource).
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
 * The counter of (stream, resource) in "counters" held by a statement, or
 * NULL.  *relid (the cache's key: the counter table's OID) and *hash are
 * set for held_add().
 */
static HeldCounter *
held_counter(Oid counters, text *stream, text *resource, Oid *relid,
			 uint32 *hash)
{
	*relid = OidIsValid(counters) ? counters :
		owned_relid(OWNED_SEQUENCES);
	return held_find(*relid, stream, resource, hash);
}

/*
 * Refuse a number the caller asserted, "previous" being the last number
 * allocated (see counter_take_row()).
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
static void
refuse_asserted(text *stream, text *resource, int64 seq, int64 previous,
				bool overflow, CounterSource source)
{
	int64		next = overflow ? previous : previous + 1;
	bool		beyond = !overflow && seq > next;
	bool		restore;

	restore = source == COUNTER_SOURCE_COPY ||
		(source == COUNTER_SOURCE_INSERT && beyond);
	ordering_stats_sequence_conflict(text_to_cstring(stream));
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("expected sequence number " INT64_FORMAT " for resource \"%s\" in stream \"%s\", but the next is " INT64_FORMAT,
					seq, text_to_cstring(resource), text_to_cstring(stream),
					next),
			 errdetail("The last sequence number allocated is " INT64_FORMAT ".",
					   previous),
			 seq < 1 ?
			 errhint("Sequence numbers start at 1: assert the next one, or assert none (NULL) to be given it.") :
			 restore ?
			 errhint("If this is a restore, set ordering.restoring = on for the database before it (ALTER DATABASE, or ordering.pre_restore() where the extension exists) and call ordering.post_restore() after it.") :
			 beyond ?
			 errhint("The number asserted is beyond the next one, which no concurrent producer causes: assert the next number, the last one allocated plus one.") :
			 errhint("Another producer wrote to this resource first; reload it and retry.")));
}

/*
 * Refuse the number after the largest.
 */
static void
refuse_overflow(text *stream, text *resource)
{
	ereport(ERROR,
			(errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
			 errmsg("sequence of resource \"%s\" in stream \"%s\" reached its maximum value",
					text_to_cstring(resource), text_to_cstring(stream))));
}

/*
 * The next number of a held counter.
 */
static int64
held_next(HeldCounter *pc)
{
	if (pc->last == PG_INT64_MAX)
		refuse_overflow(pc->stream, pc->resource);
	held_set(pc, pc->last + 1);
	return pc->last;
}

/*
 * The next number of (stream, resource), in the caller's transaction.
 */
int64
counter_next_in(Oid counters, text *stream, text *resource)
{
	CounterRequest req = {COUNTER_NEXT};
	HeldCounter *pc;
	Oid			relid;
	uint32		hash;

	if (held_count > 0 &&
		(pc = held_counter(counters, stream, resource, &relid, &hash)) != NULL)
		return held_next(pc);
	counter_request(counters, stream, resource, &req);
	if (req.overflow)
		refuse_overflow(stream, resource);
	return req.result;
}

/*
 * The number of a row the sequencing trigger is numbering: the next one,
 * or, if "asserted", "seq", which must be the next.  The counter is advanced
 * first and checked after, once the row is ours: only then is its value
 * the truth (a concurrent producer may have been about to roll back).  A
 * mismatch raises 40001, and the statement's rollback takes the advance
 * back; "source" says which statement supplied the number, for the hint
 * (refuse_asserted()).
 *
 * A statement that holds counters holds this one from its first row on
 * (README.md).  A row known to be stored ("stored": nothing can skip it
 * any more) is then counted with its counter and reported when the counter
 * is written (*counted); the caller reports the others.
 */
int64
counter_take_row_in(Oid counters, text *stream, text *resource,
					bool asserted, int64 seq, CounterSource source,
					bool stored, bool *counted)
{
	HeldCounter *pc = NULL;
	bool		bulk = held_statement_is_bulk();
	Oid			relid = InvalidOid;
	uint32		hash = 0;

	if (held_count > 0 || bulk)
		pc = held_counter(counters, stream, resource, &relid, &hash);
	if (pc == NULL)
	{
		CounterRequest req = {COUNTER_NEXT};

		counter_request(counters, stream, resource, &req);
		if (asserted && (req.overflow || req.result != seq))
			refuse_asserted(stream, resource, seq, req.previous,
							req.overflow, source);
		if (req.overflow)
			refuse_overflow(stream, resource);
		if (bulk)
			pc = held_add(relid, stream, resource, hash, req.result);
		if (pc == NULL)
		{
			*counted = false;
			return req.result;
		}
	}
	else
	{
		if (asserted && (pc->last == PG_INT64_MAX || pc->last + 1 != seq))
			refuse_asserted(stream, resource, seq, pc->last,
							pc->last == PG_INT64_MAX, source);
		(void) held_next(pc);
	}

	/* its row lives as long as the counter's: report them together */
	*counted = stored && pc->created_subid == GetCurrentSubTransactionId();
	if (*counted)
		pc->stored++;
	return pc->last;
}

/*
 * Raise the counter of (stream, resource) to at least "seq": restored
 * history, a counter row loaded from a dump.  Never lowers it.
 */
void
counter_raise(text *stream, text *resource, int64 seq)
{
	CounterRequest req = {COUNTER_RAISE, seq};
	HeldCounter *pc;
	Oid			relid;
	uint32		hash;

	if (held_count > 0 &&
		(pc = held_counter(InvalidOid, stream, resource, &relid, &hash)) != NULL)
	{
		if (seq > pc->last)
			held_set(pc, seq);
		return;
	}
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
	HeldCounter *pc;
	Oid			relid;
	uint32		hash;

	if (held_count > 0 &&
		(pc = held_counter(counters, stream, resource, &relid, &hash)) != NULL)
	{
		if (pc->last != seq)
			return false;
		held_set(pc, seq - 1);
		return true;
	}
	counter_request(counters, stream, resource, &req);
	return !req.not_last;
}

/*
 * The last number of (stream, resource) that the caller's snapshot sees: a
 * SQL read of the row, as ordering.last_sequence() always was (the
 * snapshot of the calling statement, the caller's privilege on
 * ordering.sequences, predicate locks under SERIALIZABLE), except that a
 * counter held by a statement is read from memory by every snapshot that
 * would have seen its writes: those taken after the command that last
 * changed it.
 */
static int64
counter_last(text *stream, text *resource)
{
	Snapshot	snapshot;
	HeldCounter *pc;
	Oid			relid;
	uint32		hash;
	OwnedRel	orel;
	OwnedRow	row;
	Datum		key[2];
	AclResult	aclresult;
	int64		last = 0;

	snapshot = ActiveSnapshotSet() ? GetActiveSnapshot() :
		GetTransactionSnapshot();
	owned_open(OWNED_SEQUENCES, AccessShareLock, &orel);
	/* the privilege the SQL read needed, wherever the answer comes from */
	aclresult = pg_class_aclcheck(RelationGetRelid(orel.rel), GetUserId(),
								  ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE,
					   RelationGetRelationName(orel.rel));
	if (held_count > 0 &&
		(pc = held_counter(InvalidOid, stream, resource, &relid, &hash)) != NULL &&
		snapshot->curcid > pc->changed_cid)
	{
		owned_close(&orel);
		return pc->last;
	}

	key[0] = PointerGetDatum(stream);
	key[1] = PointerGetDatum(resource);
	if (owned_fetch(&orel, key, snapshot, &row))
		last = DatumGetInt64(row.values[SEQUENCES_LAST_SEQ - 1]);
	owned_close(&orel);
	return last;
}

/*
 * next_sequence() or last_sequence() of a stream distributed by Citus,
 * whose counter table the caller can name only as the distributed table
 * (the trigger holds the counter of a shard of it): true, with the next
 * number taken or the last one, if a statement of this backend holds the
 * counter of (stream, resource), else false.  The held counter is the
 * truth (its row is behind it until the statement ends, and locked by us):
 * an upsert or a read of the row would hand out a number again or miss
 * some.  The last one follows counter_last()'s rule on snapshots.
 */
static bool
counter_next_held(text *stream, text *resource, int64 *seq)
{
	HeldCounter *pc;

	if (held_count == 0 ||
		(pc = held_find_any(stream, resource)) == NULL)
		return false;
	*seq = held_next(pc);
	return true;
}

/*
 * last_sequence()'s half of counter_next_held().
 */
static bool
counter_last_held(text *stream, text *resource, int64 *seq)
{
	HeldCounter *pc;
	Snapshot	snapshot;

	if (held_count == 0 ||
		(pc = held_find_any(stream, resource)) == NULL)
		return false;
	snapshot = ActiveSnapshotSet() ? GetActiveSnapshot() :
		GetTransactionSnapshot();
	if (snapshot->curcid <= pc->changed_cid)
		return false;
	*seq = pc->last;
	return true;
}

/*
 * ordering.next_sequence() of (stream, resource): the next number from the
 * stream's counters, in ordering.sequences, or, for a stream Citus
 * distributes, in its counter table through Citus (citus_counters.c), unless a
 * statement of ours holds the counter.
 */
int64
counter_next_of_stream(text *stream, text *resource)
{
	Oid			counters = citus_stream_counter_table(stream);
	int64		seq;

	if (!OidIsValid(counters))
		return counter_next_in(InvalidOid, stream, resource);
	/* the keys one node refuses, refused before the counter row is made */
	owned_check_key_length(stream, "stream");
	owned_check_key_length(resource, "resource_id");
	if (counter_next_held(stream, resource, &seq))
		return seq;
	return citus_counter_next(counters, stream, resource);
}

/*
 * ordering.last_sequence() of (stream, resource): the highest number
 * allocated that the caller's snapshot sees, in the stream's counters
 * wherever they are (see counter_next_of_stream()).  A distributed
 * stream's counters are read as their owner: the executor checked EXECUTE
 * on last_sequence(), as the function wants.
 */
int64
counter_last_of_stream(text *stream, text *resource)
{
	Oid			counters = citus_stream_counter_table(stream);
	int64		seq;

	if (!OidIsValid(counters))
		return counter_last(stream, resource);
	if (counter_last_held(stream, resource, &seq))
		return seq;
	return citus_counter_last(counters, stream, resource);
}

/*
 * Rows that got numbers of (stream, resource) were stored: they count as
 * assigned, and the stream's relay wake-up is queued if armed.
 */
void
counter_report_stored(text *stream, text *resource, int64 n)
{
	char	   *name = text_to_cstring(stream);
	char	   *key = text_to_cstring(resource);

	ordering_stats_sequence_assigned(name, n);
	ordering_stats_hot_resource('s', name, key, n);
	/* with the option off everywhere, one load and a branch (wakeup.c) */
	if (unlikely(ordering_wakeup_armed))
		ordering_wakeup_stored_row(stream);
	pfree(name);
	pfree(key);
}

/*
 * Write a held counter with its final value, and report its stored rows.
 */
static void
write_held(HeldCounter *pc)
{
	if (pc->last != pc->written)
	{
		CounterRequest req = {COUNTER_SET, pc->last, pc->written};

		Oid			counters = pc->relid == owned_relid(OWNED_SEQUENCES) ?
		InvalidOid : pc->relid;

		counter_request(counters, pc->stream, pc->resource, &req);
		if (req.not_last)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the counter of resource \"%s\" in stream \"%s\" was changed while a statement held it",
							text_to_cstring(pc->resource),
							text_to_cstring(pc->stream)),
					 errdetail("It holds " INT64_FORMAT " where the statement wrote " INT64_FORMAT ".",
							   req.previous, pc->written),
					 errhint("Do not write ordering.sequences with SQL while rows are being inserted.")));
		pc->written = pc->last;
	}
	if (pc->stored > 0)
	{
		counter_report_stored(pc->stream, pc->resource, pc->stored);
		pc->stored = 0;
	}
}

/*
 * A statement begins (provisional.c's hooks); "bulk" if it may insert more
 * than one row, and so hold counters.
 */
void
counter_statement_begin(bool bulk)
{
	held_statement_begin(bulk);
}

/*
 * The statement ended: write the counters it held, and the orphans of a
 * failed statement whose error was caught without a rollback
 * (held_counters.c).
 */
void
counter_statement_end(void)
{
	HeldCounter *pc;

	while ((pc = held_statement_take()) != NULL)
	{
		write_held(pc);
		held_forget(pc);
	}
	while ((pc = held_orphan_take()) != NULL)
	{
		write_held(pc);
		held_forget(pc);
	}
	held_statement_end();
}

/*
 * The statement failed: the rollback that follows takes its counters back.
 */
void
counter_statement_abandon(void)
{
	held_statement_abandon();
}

/*
 * Does a statement hold counters (or did a failed one leave some)?
 */
bool
counter_any_held(void)
{
	return held_count > 0;
}

/*
 * Before commit or prepare: write what failed statements left held, if
 * their error was caught without a rollback.
 */
void
counter_before_commit(void)
{
	HeldCounter *pc;

	while ((pc = held_orphan_take()) != NULL)
	{
		write_held(pc);
		held_forget(pc);
	}
}
