/*-------------------------------------------------------------------------
 *
 * decision_log.h
 *	  The optional structured log of consumer decisions.
 *
 * With ordering.log_decisions on (superuser setting, off by default), every
 * decision of a consumer function is written to the server log as one line
 * of JSON, the "structured ordering event":
 *
 *	{"consumer": "ledger", "resource": "acct-9", "expected_seq": 47,
 *	 "received_seq": 49, "result": "parked"}
 *
 * expected_seq is the next number in order (position + 1); received_seq the
 * number handed in.  Results:
 *	applied			handed back to be applied now (deliver: with "drained",
 *					how many parked events follow it)
 *	stale			below the position
 *	duplicate		equal to the position, parked already, or the dead letter
 *	parked			early: parked to wait for its predecessors
 *	gap				a gap sweep requested the missing events: expected_seq is
 *					the first missing, received_seq the lowest parked
 *	dead-lettered	became the dead letter of its resource
 *	skipped			skip_gap or discard_dead_letter gave up on expected_seq ..
 *					received_seq - 1
 * The payload is never written.
 *
 * Callers use ordering_log_decision(), whose test of the setting is inline:
 * with the log off, a decision costs one load and a branch.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_DECISION_LOG_H
#define ORDERING_DECISION_LOG_H

typedef enum OrderingDecision
{
	ORDERING_DECISION_APPLIED,
	ORDERING_DECISION_STALE,
	ORDERING_DECISION_DUPLICATE,
	ORDERING_DECISION_PARKED,
	ORDERING_DECISION_GAP,
	ORDERING_DECISION_DEAD_LETTERED,
	ORDERING_DECISION_SKIPPED
} OrderingDecision;

#include "settings.h"			/* ordering.log_decisions */

extern void ordering_log_decision_write(const char *consumer,
										const text *resource, int64 expected,
										int64 received,
										OrderingDecision result,
										int64 drained);

/*
 * Log one decision if ordering.log_decisions is on.  "drained" is written
 * for APPLIED only (0: not written).  Pass values that cost nothing to
 * compute: they are evaluated even when the log is off.
 */
static inline void
ordering_log_decision(const char *consumer, const text *resource,
					  int64 expected, int64 received,
					  OrderingDecision result, int64 drained)
{
	if (unlikely(ordering_log_decisions))
		ordering_log_decision_write(consumer, resource, expected, received,
									result, drained);
}

#endif							/* ORDERING_DECISION_LOG_H */
