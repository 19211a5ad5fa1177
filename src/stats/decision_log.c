/*-------------------------------------------------------------------------
 *
 * decision_log.c
 *	  Consumer decisions written to the server log as JSON (decision_log.h
 *	  gives the format; README.md, "The decision log").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"

#include "decision_log.h"

static const char *const decision_names[] = {
	[ORDERING_DECISION_APPLIED] = "applied",
	[ORDERING_DECISION_STALE] = "stale",
	[ORDERING_DECISION_DUPLICATE] = "duplicate",
	[ORDERING_DECISION_PARKED] = "parked",
	[ORDERING_DECISION_GAP] = "gap",
	[ORDERING_DECISION_DEAD_LETTERED] = "dead-lettered",
	[ORDERING_DECISION_SKIPPED] = "skipped"
};

/*
 * Write one decision as a line of JSON to the server log.
 */
void
ordering_log_decision_write(const char *consumer, const text *resource,
							int64 expected, int64 received,
							OrderingDecision result, int64 drained)
{
	StringInfoData buf;

	Assert(result >= 0 && result < lengthof(decision_names));
	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"consumer\": ");
	escape_json(&buf, consumer);
	appendStringInfoString(&buf, ", \"resource\": ");
	escape_json(&buf, text_to_cstring(resource));
	appendStringInfo(&buf,
					 ", \"expected_seq\": " INT64_FORMAT
					 ", \"received_seq\": " INT64_FORMAT
					 ", \"result\": \"%s\"",
					 expected, received, decision_names[result]);
	if (result == ORDERING_DECISION_APPLIED && drained > 0)
		appendStringInfo(&buf, ", \"drained\": " INT64_FORMAT, drained);
	appendStringInfoChar(&buf, '}');

	ereport(LOG,
			(errmsg_internal("%s", buf.data),
			 errhidestmt(true),
			 errhidecontext(true)));
	pfree(buf.data);
}
