/*-------------------------------------------------------------------------
 *
 * provisional.c
 *	  Numbers handed to rows that may not be stored: kept provisional until
 *	  the row is stored, given back if it is not; and the row an UPDATE
 *	  moves between partitions (README.md, "Provisional numbers").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "producer.h"
#include "text_equal.h"

/* The records, oldest first, in TopTransactionContext */
static List *provisionals = NIL;

/* Records of stored rows to check when their companion fires (README.md) */
static List *awaiting_check = NIL;

/* How deep in statements we are (README.md) */
static int	statement_level = 0;

/* May the statement at this level skip a row it numbered (README.md)? */
static bool statement_may_skip = true;

/* The row an UPDATE is moving between partitions, if any (README.md) */
static struct
{
	int			level;			/* -1: nothing seen */
	SubTransactionId subid;
	Oid			updating_rel;	/* BEFORE UPDATE of this tuple ... */
	ItemPointerData updating_tid;
	bool		armed;			/* ... then BEFORE DELETE of it */
	text	   *stream;			/* the moving row, in TopTransactionContext */
	text	   *resource;
	int64		seq;
}			move = {-1};


/*
 * Record a number handed to a row at the current level, from the counter
 * table "counters" (counters.c); with check_stored, the row is checked once
 * stored (README.md).
 */
void
provisional_record(Oid counters, text *stream, text *resource, int64 seq,
				   bool check_stored)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	Provisional *p = palloc(sizeof(Provisional));

	p->counters = counters;
	p->stream = (text *) PG_DETOAST_DATUM_COPY(PointerGetDatum(stream));
	p->resource = (text *) PG_DETOAST_DATUM_COPY(PointerGetDatum(resource));
	p->seq = seq;
	p->level = statement_level;
	p->subid = GetCurrentSubTransactionId();
	p->check_stored = check_stored;
	provisionals = lappend(provisionals, p);
	MemoryContextSwitchTo(old);
}

/*
 * The row whose BEFORE trigger ran last at the current level was stored:
 * forget its record, and return it (the caller frees it).  NULL if that row
 * made no record (it kept a number it carried: restored, or moved between
 * partitions).  The trigger settled the records of the rows before it at
 * this level first, so the only record left at this level is that row's;
 * rows of statements run from its other triggers are one level deeper.
 */
Provisional *
provisional_stored(void)
{
	for (int i = list_length(provisionals) - 1; i >= 0; i--)
	{
		Provisional *p = list_nth(provisionals, i);

		if (p->level == statement_level)
		{
			provisionals = list_delete_nth_cell(provisionals, i);
			return p;
		}
	}
	return NULL;
}

/*
 * Free a record provisional_stored() returned.
 */
void
provisional_free(Provisional *p)
{
	pfree(p->stream);
	pfree(p->resource);
	pfree(p);
}

/*
 * Keep a record that provisional_stored() returned until its row is checked
 * (README.md); it is no longer the caller's to free.
 */
void
provisional_await_check(Provisional *p)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	awaiting_check = lappend(awaiting_check, p);
	MemoryContextSwitchTo(old);
}

/*
 * A row checked by its companion was stored as (stream, resource, seq): is
 * that a number handed to that resource?  Forgets the record that says so
 * and returns true; else returns false, with *given_to the resource the
 * number of that stream was handed to, if a record says (else NULL).
 */
bool
provisional_check_stored(text *stream, text *resource, int64 seq,
						 text **given_to)
{
	ListCell   *lc;

	*given_to = NULL;
	foreach(lc, awaiting_check)
	{
		Provisional *p = lfirst(lc);

		if (p->seq != seq || !ordering_text_equal(p->stream, stream))
			continue;
		if (ordering_text_equal(p->resource, resource))
		{
			awaiting_check = foreach_delete_current(awaiting_check, lc);
			provisional_free(p);
			return true;
		}
		*given_to = p->resource;
	}
	return false;
}

/*
 * Forget the row seen moving at "level" or deeper (README.md).
 */
static void
move_forget(int level)
{
	if (move.level < level)
		return;
	move.level = -1;
	move.updating_rel = InvalidOid;
	move.armed = false;
	move.stream = NULL;			/* TopTransactionContext frees it */
	move.resource = NULL;
}

/*
 * BEFORE UPDATE of a sequenced tuple: if BEFORE DELETE of the same tuple
 * follows at this level, the UPDATE is moving it to another partition.
 */
void
provisional_move_update(Oid relid, ItemPointer tid)
{
	move_forget(0);
	move.level = statement_level;
	move.subid = GetCurrentSubTransactionId();
	move.updating_rel = relid;
	move.updating_tid = *tid;
}

/*
 * BEFORE DELETE of a sequenced tuple: is it the tuple whose BEFORE UPDATE
 * fired last at this level, that is, is the UPDATE moving it?
 */
bool
provisional_move_delete(Oid relid, ItemPointer tid)
{
	bool		moving = move.level == statement_level && !move.armed &&
	move.updating_rel == relid && ItemPointerEquals(&move.updating_tid, tid);

	move_forget(0);
	return moving;
}

/*
 * The row being moved carries (stream, resource, seq): the BEFORE INSERT
 * that follows at this level may keep that number.
 */
void
provisional_move_arm(text *stream, text *resource, int64 seq)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	move.level = statement_level;
	move.subid = GetCurrentSubTransactionId();
	move.stream = (text *) PG_DETOAST_DATUM_COPY(PointerGetDatum(stream));
	move.resource = (text *) PG_DETOAST_DATUM_COPY(PointerGetDatum(resource));
	MemoryContextSwitchTo(old);
	move.seq = seq;
	move.armed = true;
}

/*
 * BEFORE INSERT of a row that carries (stream, resource, seq): is it the
 * row being moved?  The first insert at the level of the move decides:
 * the move is forgotten either way.
 */
bool
provisional_move_take(text *stream, text *resource, int64 seq)
{
	bool		match;

	if (!move.armed || move.level != statement_level)
		return false;
	match = move.seq == seq && ordering_text_equal(move.stream, stream) &&
		ordering_text_equal(move.resource, resource);
	move_forget(0);
	return match;
}

/*
 * Give back the numbers recorded at "level" (or at any level, with level
 * -1), newest first, so that several numbers at the top of one resource go
 * back one after the other.
 */
static void
give_back(int level)
{
	for (int i = list_length(provisionals) - 1; i >= 0; i--)
	{
		Provisional *p = list_nth(provisionals, i);

		if (level >= 0 && p->level != level)
			continue;
		if (!counter_give_back_in(p->counters, p->stream, p->resource, p->seq))
			ereport(ERROR,
					(errcode(ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION),
					 errmsg("sequence number " INT64_FORMAT " of resource \"%s\" in stream \"%s\" went to a row that was not inserted, and a later row already has a higher number",
							p->seq, text_to_cstring(p->resource),
							text_to_cstring(p->stream)),
					 errdetail("A row may be skipped by ON CONFLICT or by a BEFORE trigger that returns NULL; its number is given back, which is impossible once a higher number of the same resource was handed out."),
					 errhint("Insert the rows that may be skipped in statements of their own.")));
		provisionals = list_delete_nth_cell(provisionals, i);
	}
}

/*
 * Called by the sequencing trigger before it hands out a number: the rows
 * handed numbers earlier at this level are decided (README.md).
 */
void
provisional_settle_level(void)
{
	if (provisionals != NIL)
		give_back(statement_level);
}

/*
 * A statement's rows begin (statement.c): they get a level of their own,
 * one deeper than the statement running them, and "may_skip" says whether
 * the statement may skip rows it numbered (README.md).  Returns what the
 * outer level said, for provisional_level_leave().
 */
bool
provisional_level_enter(bool may_skip)
{
	bool		outer_may_skip = statement_may_skip;

	statement_level++;
	statement_may_skip = may_skip;
	return outer_may_skip;
}

/*
 * The statement's rows are decided: forget a row seen moving at its level,
 * and give back the numbers whose rows were not stored.
 */
void
provisional_level_settle(void)
{
	move_forget(statement_level);
	if (provisionals != NIL)
		give_back(statement_level);
}

/*
 * The statement failed: forget a row seen moving at its level (its
 * numbers go with the rollback that follows).
 */
void
provisional_level_fail(void)
{
	move_forget(statement_level);
}

/*
 * The statement's level ends, settled or failed: back to the outer one.
 */
void
provisional_level_leave(bool outer_may_skip)
{
	statement_level--;
	statement_may_skip = outer_may_skip;
	Assert(statement_level >= 0);
}

/*
 * May the running statement skip rows it numbered (README.md)?
 */
bool
provisional_statement_may_skip(void)
{
	return statement_may_skip;
}

/*
 * May the sequencing trigger's row be skipped after it is numbered?  A
 * later BEFORE INSERT trigger of its table ("later_trigger") or the
 * statement may skip it (README.md).
 */
bool
provisional_row_may_be_skipped(bool later_trigger)
{
	return later_trigger || statement_may_skip;
}

/*
 * Before commit or prepare: give back whatever is left (README.md).  At
 * the end of a transaction: forget everything.
 */
static void
provisional_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			if (provisionals != NIL || counter_any_held())
			{
				PushActiveSnapshot(GetTransactionSnapshot());
				if (provisionals != NIL)
					give_back(-1);
				counter_before_commit();
				PopActiveSnapshot();
			}
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			provisionals = NIL; /* TopTransactionContext goes away */
			awaiting_check = NIL;
			move_forget(0);
			break;
		default:
			break;
	}
}

/*
 * A subtransaction that aborts takes its records, and those of the
 * subtransactions it contained (their IDs are higher), with it.
 */
static void
provisional_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							 SubTransactionId parentSubid, void *arg)
{
	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	if (move.level >= 0 && move.subid >= mySubid)
		move_forget(0);
	for (int i = list_length(provisionals) - 1; i >= 0; i--)
	{
		Provisional *p = list_nth(provisionals, i);

		if (p->subid >= mySubid)
			provisionals = list_delete_nth_cell(provisionals, i);
	}
	/* their companions' events went with the subtransaction too */
	for (int i = list_length(awaiting_check) - 1; i >= 0; i--)
	{
		Provisional *p = list_nth(awaiting_check, i);

		if (p->subid >= mySubid)
			awaiting_check = list_delete_nth_cell(awaiting_check, i);
	}
}

/*
 * Install the transaction callbacks (from _PG_init, whether or not the
 * library is preloaded).
 */
void
provisional_init(void)
{
	RegisterXactCallback(provisional_xact_callback, NULL);
	RegisterSubXactCallback(provisional_subxact_callback, NULL);
}
