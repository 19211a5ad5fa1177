/*-------------------------------------------------------------------------
 *
 * dead_letters.c
 *	  Poison events and the operator's workflow: which events are poison,
 *	  the ledger's handler that rejects them, and at the end the look at
 *	  the dead letters, the fix of the handler and the retry.
 *
 * A few SeatsAdded events (--poison N) are bulk purchases of 20 to 50
 * seats.  The ledger consumer applies its events through the handler
 * demo_apply_seats with on_error => 'dead_letter', and the first version of
 * that handler was written for changes of at most 10 seats: it rejects a
 * bulk purchase (SQLSTATE 22003, not transient).  The extension sets the
 * event aside as the dead letter of its resource and the delivery returns
 * normally, so the message is acked; the subscription's later seat changes
 * park behind it, every other subscription keeps flowing.  Once the
 * pipeline has drained, the operator looks at ordering.dead_letters, "fixes"
 * the handler (CREATE OR REPLACE FUNCTION) and retries every dead letter:
 * each applies with everything parked behind it, in order.  The report
 * shows the dead letters; the verification checks that they were exactly
 * the poison events, that the other subscriptions were complete while they
 * waited, and (with the checks of verify.c) that after the retry every
 * seat change was applied once and in order.
 *
 * Threads: poison_pick() runs in the producer threads (an atomic counter);
 * everything else runs in the main thread once the producers are done and
 * the pipeline has drained.  The relays and consumers still run (the
 * reconciliation after the retry needs them); a retry and a delivery for
 * the same resource wait for each other.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "demo.h"

/* poison events handed out so far (producer threads) */
static int	next_poison = 0;

/* what the operator saw and did (main thread) */
#define SHOWN_MAX 10
static struct
{
	bool		done;
	long		dead;			/* dead letters at the fix */
	long		behind;			/* events parked behind them */
	long		retried;		/* events the retries applied */
	long		others;			/* subscriptions without a dead letter */
	long		others_complete;	/* of which complete at the fix */
	int			shown;
	char	   *rows[SHOWN_MAX];
} op;

/* The ledger's handler: version 1 rejects bulk purchases, version 2 not. */
static const char *SQL_HANDLER =
"CREATE OR REPLACE FUNCTION demo_apply_seats(resource_id text, seq bigint, payload jsonb) "
"RETURNS void LANGUAGE plpgsql AS $$ "
"BEGIN "
"    IF %s AND (payload->>'delta')::bigint > 10 THEN "
"        RAISE EXCEPTION 'seat delta %% is above 10', payload->>'delta' "
"            USING ERRCODE = 'numeric_value_out_of_range', "
"                  DETAIL = 'The handler was written for changes of at most 10 seats.'; "
"    END IF; "
"    INSERT INTO demo_ledger (subscription_id, seq, delta) "
"    VALUES (payload->>'subscription_id', seq, (payload->>'delta')::bigint); "
"END $$";

/* Install the ledger's handler, version fixed or not. */
static void
install_handler(PGconn *cc, bool fixed)
{
	char		sql[1024];

	snprintf(sql, sizeof(sql), SQL_HANDLER, fixed ? "false" : "true");
	must_exec(cc, sql);
}

/* Create the first version of the ledger's handler (main.c's setup). */
void
dead_letters_setup(PGconn *cc)
{
	install_handler(cc, false);
}

/*
 * Whether the SeatsAdded event number n (of --events) is poison: the k-th
 * of the --poison events is the first SeatsAdded at or after k / (poison +
 * 1) of the run, so they spread over it.  Called by the producers.
 */
bool
poison_pick(int n)
{
	int			k = __atomic_load_n(&next_poison, __ATOMIC_RELAXED);

	if (k >= opt.poison ||
		(long) n * (opt.poison + 1) < (long) (k + 1) * opt.events)
		return false;
	return __atomic_compare_exchange_n(&next_poison, &k, k + 1, false,
									   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/*
 * The operator at the end of the run: note the dead letters and how far
 * every subscription's ledger got (demo_dead_letters, demo_ledger_before,
 * for the verification), fix the handler, retry every dead letter.  The
 * notes are made in every mode, so the checks can tell.  Returns how many
 * dead letters there were.
 */
long
dead_letters_fix_and_retry(PGconn *cc)
{
	PGresult   *r;

	must_exec(cc, "DROP TABLE IF EXISTS demo_dead_letters, demo_ledger_before");
	must_exec(cc, "CREATE TABLE demo_dead_letters AS "
			  "SELECT resource_id, seq, sqlstate, message, attempts, parked_behind "
			  "FROM ordering.dead_letters WHERE consumer = 'ledger'");
	must_exec(cc, "CREATE TABLE demo_ledger_before AS "
			  "SELECT subscription_id, count(*) AS n FROM demo_ledger GROUP BY 1");
	r = must(cc, "SELECT count(*), coalesce(sum(parked_behind), 0) FROM demo_dead_letters");
	op.dead = atol(PQgetvalue(r, 0, 0));
	op.behind = atol(PQgetvalue(r, 0, 1));
	PQclear(r);
	r = must(cc, "SELECT count(*), count(*) FILTER (WHERE coalesce(b.n, 0) = t.seats_seq) "
			 "FROM demo_truth t LEFT JOIN demo_ledger_before b ON b.subscription_id = t.id "
			 "WHERE NOT EXISTS (SELECT FROM demo_dead_letters d "
			 "                   WHERE d.resource_id = 'seats:' || t.id)");
	op.others = atol(PQgetvalue(r, 0, 0));
	op.others_complete = atol(PQgetvalue(r, 0, 1));
	PQclear(r);
	r = must(cc, "SELECT format('%-20s %5s  %-8s %8s %14s  %s', resource_id, seq, sqlstate, "
			 "attempts, parked_behind, message) FROM demo_dead_letters "
			 "ORDER BY resource_id LIMIT 10");
	for (int i = 0; i < PQntuples(r) && i < SHOWN_MAX; i++)
		op.rows[op.shown++] = strdup(PQgetvalue(r, i, 0));
	PQclear(r);
	op.done = true;
	if (op.dead == 0)
		return 0;

	/* the fix, then every dead letter is retried through it */
	install_handler(cc, true);
	op.retried = query_long(cc,
							"SELECT sum(ordering.retry_dead_letter('ledger', resource_id, "
							"'demo_apply_seats(text, bigint, jsonb)')) "
							"FROM ordering.dead_letters WHERE consumer = 'ledger'");
	ADD(applied_seats, op.retried);
	__atomic_store_n(&cnt.parked_now,
					 query_long(cc, "SELECT count(*) FROM ordering.parked "
								"WHERE consumer IN ('billing', 'ledger')"),
					 __ATOMIC_RELAXED);
	return op.dead;
}

/*
 * Check what the operator's notes show; false if a check failed.  check()
 * is verify.c's: it prints one PASS or FAIL line.
 */
bool
dead_letters_verify(PGconn *cc, bool (*check) (PGconn *, const char *, const char *))
{
	bool		ok = true;

	ok &= check(cc, "poison events set aside: each subscription's first bulk purchase was its dead letter",
				"SELECT count(*) FROM demo_truth t "
				"LEFT JOIN (SELECT subscription_id, min(seq) AS seq FROM demo_ledger "
				"           WHERE delta > 10 GROUP BY 1) p ON p.subscription_id = t.id "
				"LEFT JOIN demo_dead_letters d ON d.resource_id = 'seats:' || t.id "
				"WHERE p.seq IS DISTINCT FROM d.seq");
	ok &= check(cc, "other subscriptions unaffected: complete while the dead letters waited",
				"SELECT count(*) FROM demo_truth t "
				"LEFT JOIN demo_ledger_before b ON b.subscription_id = t.id "
				"LEFT JOIN demo_dead_letters d ON d.resource_id = 'seats:' || t.id "
				"WHERE coalesce(b.n, 0) <> coalesce(d.seq - 1, t.seats_seq)");
	ok &= check(cc, "every dead letter retried once the handler was fixed: none left",
				"SELECT count(*) FROM ordering.dead_letters WHERE consumer IN ('billing', 'ledger')");
	return ok;
}

/* The report's section on the poison events. */
void
dead_letters_report(void)
{
	if (!op.done || opt.without_extension)
		return;
	printf("\nPoison events (bulk purchases the ledger's handler rejected until it was fixed)\n");
	printf("  injected %ld; %ld dead letters at the end of the run, %ld later events parked behind them\n",
		   GET(poisoned), op.dead, op.behind);
	if (op.shown > 0)
	{
		printf("    %-20s %5s  %-8s %8s %14s  %s\n", "resource", "seq", "sqlstate",
			   "attempts", "parked behind", "message");
		for (int i = 0; i < op.shown; i++)
			printf("    %s\n", op.rows[i]);
		if (op.dead > op.shown)
			printf("    ... (%ld more)\n", op.dead - op.shown);
	}
	printf("  meanwhile the other %ld subscriptions flowed: %ld of them complete before the fix\n",
		   op.others, op.others_complete);
	if (op.dead > 0)
		printf("  handler fixed, every dead letter retried: %ld events applied, in order\n",
			   op.retried);
}
