/*-------------------------------------------------------------------------
 *
 * counters.h
 *	  The producer's counters in ordering.sequences.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_COUNTERS_H
#define ORDERING_COUNTERS_H

/*
 * Which statement supplied an asserted number: a restore explains a refused
 * number only in a statement that a dump carries.
 */
typedef enum CounterSource
{
	COUNTER_SOURCE_OTHER,		/* a function (emit), a nested statement, ... */
	COUNTER_SOURCE_INSERT,		/* a top-level INSERT (--inserts dumps) */
	COUNTER_SOURCE_COPY			/* a top-level COPY (pg_restore, pg_dump's
								 * plain format) */
} CounterSource;

/*
 * "counters": the counter table, InvalidOid for ordering.sequences (see
 * counters.c); the forms without it use ordering.sequences.
 */
extern int64 counter_next_in(Oid counters, text *stream, text *resource);
extern int64 counter_take_row_in(Oid counters, text *stream, text *resource,
								 bool asserted, int64 seq,
								 CounterSource source, bool stored,
								 bool *counted);
extern void counter_raise(text *stream, text *resource, int64 seq);
extern bool counter_give_back_in(Oid counters, text *stream, text *resource,
								 int64 seq);
extern int64 counter_next_of_stream(text *stream, text *resource);
extern int64 counter_last_of_stream(text *stream, text *resource);
extern void counter_report_stored(text *stream, text *resource, int64 n);

extern void counter_statement_begin(bool bulk);
extern void counter_statement_end(void);
extern void counter_statement_abandon(void);
extern bool counter_any_held(void);
extern void counter_before_commit(void);

static inline bool
counter_give_back(text *stream, text *resource, int64 seq)
{
	return counter_give_back_in(InvalidOid, stream, resource, seq);
}

#endif							/* ORDERING_COUNTERS_H */
