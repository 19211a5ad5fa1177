/*-------------------------------------------------------------------------
 *
 * verify.c
 *	  Settling and verification: wait until everything sent has been
 *	  applied (republishing lost tails), then check the consumer database
 *	  against the producer's truth.
 *
 * Runs in the main thread after the producers have finished; the other
 * threads only change counters meanwhile.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "demo.h"

/* ---------------------------------------------------------------------
 * Settling: wait until everything sent has been applied
 * --------------------------------------------------------------------- */

/*
 * Republish the tails the consumers have not seen: resources whose consumer
 * progress is below the producer's last sequence number.  Progress is the
 * version billing holds, or for the ledger the events it holds: applied
 * (its position), parked, or its dead letter (what is missing behind a dead
 * letter then parks behind it).  Returns how many rows were put back.  Only
 * called when the pipeline is idle.
 */
static long
reconcile_tails(PGconn *pc, PGconn *cc)
{
	PGresult   *pr,
			   *cr;
	long		total = 0;
	char	   *res,
			   *last;
	int			n;
	const char *lp[1] = {resource_re};

	pr = must_params(pc,
					 "SELECT coalesce(array_agg(resource_id ORDER BY resource_id), '{}')::text, "
					 "       coalesce(array_agg(last_seq ORDER BY resource_id), '{}')::text "
					 "FROM ordering.sequences WHERE stream = 'ordering.outbox' "
					 "AND resource_id ~ $1", 1, lp);
	res = strdup(PQgetvalue(pr, 0, 0));
	last = strdup(PQgetvalue(pr, 0, 1));
	PQclear(pr);
	{
		const char *cp[2] = {res, last};

		cr = must_params(cc,
						 "SELECT t.r, t.done + 1, t.l FROM ("
						 "  SELECT t.r, t.l, coalesce(CASE WHEN t.r LIKE 'plan:%' "
						 "         THEN b.version ELSE p.position END, 0) AS done, "
						 "       coalesce(CASE WHEN t.r LIKE 'plan:%' THEN b.version ELSE p.position "
						 "         + (SELECT count(*) FROM ordering.parked k "
						 "             WHERE k.consumer = 'ledger' AND k.resource_id = t.r) "
						 "         + (SELECT count(*) FROM ordering.dead_letter_events d "
						 "             WHERE d.consumer = 'ledger' AND d.resource_id = t.r) END, 0) AS held "
						 "  FROM unnest($1::text[], $2::bigint[]) AS t(r, l) "
						 "  LEFT JOIN demo_billing b ON t.r LIKE 'plan:%' "
						 "    AND b.subscription_id = substr(t.r, 6) "
						 "  LEFT JOIN ordering.positions p ON t.r LIKE 'seats:%' "
						 "    AND p.consumer = 'ledger' AND p.resource_id = t.r) t "
						 "WHERE t.held < t.l", 2, cp);
	}
	n = PQntuples(cr);
	for (int i = 0; i < n; i++)
	{
		const char *rp[3] = {PQgetvalue(cr, i, 0), PQgetvalue(cr, i, 1), PQgetvalue(cr, i, 2)};
		PGresult   *r = must_params(pc, "SELECT ordering.republish($1, $2::bigint, $3::bigint)", 3, rp);

		total += atol(PQgetvalue(r, 0, 0));
		PQclear(r);
	}
	PQclear(cr);
	free(res);
	free(last);
	return total;
}

/*
 * Wait for the pipeline to drain: outbox published, no copy in flight,
 * nothing parked (but behind a dead letter, where events wait for the
 * operator), no open gap request.  A quiet pipeline that still lags the
 * producer gets its tails republished.  False on timeout.
 */
bool
settle(PGconn *pc, PGconn *cc)
{
	double		deadline = now() + opt.timeout;
	int			quiet_rounds = 0;

	while (now() < deadline && !failed)
	{
		long		unpublished = query_long(pc, "SELECT count(*) FROM ordering.outbox WHERE published_at IS NULL");
		long		in_flight = GET(in_flight);
		long		parked = query_long(cc,
										"SELECT count(*) FROM ordering.parked p "
										"LEFT JOIN ordering.positions o USING (consumer, resource_id) "
										"WHERE p.consumer IN ('billing', 'ledger') "
										"AND (o.blocked_at IS NULL OR p.seq < o.blocked_at)");
		long		gaps = query_long(cc, "SELECT count(*) FROM ordering.gap_requests WHERE consumer IN ('billing', 'ledger')");

		if (unpublished == 0 && in_flight == 0 && parked == 0 && gaps == 0)
		{
			long		tails;

			/* two idle looks in a row, then check against the producer */
			if (++quiet_rounds < 2)
			{
				sleep_ms(100);
				continue;
			}
			/* without the extension there are no positions to compare */
			if (opt.without_extension)
				return true;
			tails = reconcile_tails(pc, cc);
			if (tails == 0)
				return true;
			ADD(tail_republished, tails);
		}
		quiet_rounds = 0;
		sleep_ms(100);
	}
	return false;
}

/* ---------------------------------------------------------------------
 * Verification
 * --------------------------------------------------------------------- */

/* Copy the producer's truth into the consumer database (demo_truth). */
void
load_truth(PGconn *pc, PGconn *cc)
{
	PGresult   *r = must(pc,
						 "SELECT array_agg(s.id)::text, array_agg(s.plan)::text, array_agg(s.seats)::text, "
						 "       array_agg(ordering.last_sequence('ordering.outbox', 'plan:' || s.id))::text, "
						 "       array_agg(ordering.last_sequence('ordering.outbox', 'seats:' || s.id))::text "
						 "FROM demo_subscriptions s");
	const char *p[5];

	for (int i = 0; i < 5; i++)
		p[i] = PQgetvalue(r, 0, i);
	must_exec(cc, "CREATE TABLE demo_truth (id text PRIMARY KEY, plan text, seats bigint, "
			  "plan_seq bigint, seats_seq bigint)");
	PQclear(must_params(cc, "INSERT INTO demo_truth SELECT * FROM "
						"unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[])",
						5, p));
	PQclear(r);
}

/* Print one check; returns whether it passed. */
static bool
check(PGconn *cc, const char *what, const char *sql)
{
	long		bad = query_long(cc, sql);
	bool		ok = bad == 0;

	printf("  %s  %s%s\n", ok ? "PASS" : "FAIL", what,
		   bad < 0 ? " (query failed)" : "");
	if (!ok && bad > 0)
		printf("        %ld offending rows\n", bad);
	return ok;
}

/* Run every check; false if one failed. */
bool
verify(PGconn *cc)
{
	bool		ok = true;
	long		subs = query_long(cc, "SELECT count(*) FROM demo_truth");
	long		naive_plan = query_long(cc,
										"SELECT count(*) FROM demo_truth t LEFT JOIN demo_naive n ON n.subscription_id = t.id "
										"WHERE coalesce(n.plan, 'free') <> t.plan");
	long		naive_seats = query_long(cc,
										 "SELECT count(*) FROM demo_truth t LEFT JOIN demo_naive n ON n.subscription_id = t.id "
										 "WHERE coalesce(n.seats, 0) <> t.seats");
	long		naive_any = query_long(cc,
									   "SELECT count(*) FROM demo_truth t LEFT JOIN demo_naive n ON n.subscription_id = t.id "
									   "WHERE coalesce(n.plan, 'free') <> t.plan OR coalesce(n.seats, 0) <> t.seats");

	if (!opt.without_extension)
	{
		printf("\nWithout the extension (naive consumer: applies each delivery as it arrives)\n");
		printf("  %ld of %ld subscriptions ended wrong: %ld on a stale plan, %ld with a wrong seat count\n",
			   naive_any, subs, naive_plan, naive_seats);
	}

	if (opt.without_extension)
		printf("\nChecked consumers WITHOUT the extension (--without-extension: these checks must fail)\n");
	else
		printf("\nWith the extension (billing: %s, ledger: deliver through a handler, on_error => 'dead_letter')\n",
			   opt.newer_only ? "upsert guarded by newer_only" : "apply_if_newer");
	ok &= check(cc, "every subscription's plan is the producer's last committed plan",
				"SELECT count(*) FROM demo_truth t LEFT JOIN demo_billing b ON b.subscription_id = t.id "
				"WHERE coalesce(b.plan, 'free') <> t.plan OR coalesce(b.version, 0) <> t.plan_seq");
	ok &= check(cc, "every seat delta applied exactly once: ledger seqs are 1..n",
				"SELECT count(*) FROM demo_truth t LEFT JOIN "
				"(SELECT subscription_id, count(*) c, count(DISTINCT seq) d, min(seq) lo, max(seq) hi "
				"   FROM demo_ledger GROUP BY 1) l ON l.subscription_id = t.id "
				"WHERE coalesce(l.c, 0) <> t.seats_seq OR coalesce(l.d, 0) <> t.seats_seq "
				"   OR (t.seats_seq > 0 AND (l.lo <> 1 OR l.hi <> t.seats_seq))");
	ok &= check(cc, "and in order: the n-th row applied has seq n",
				"SELECT count(*) FROM (SELECT seq, row_number() OVER "
				"(PARTITION BY subscription_id ORDER BY applied_order) rn FROM demo_ledger) x "
				"WHERE seq <> rn");
	ok &= check(cc, "every subscription's seat sum equals the producer's seats",
				"SELECT count(*) FROM demo_truth t LEFT JOIN "
				"(SELECT subscription_id, sum(delta) s FROM demo_ledger GROUP BY 1) l "
				"ON l.subscription_id = t.id WHERE coalesce(l.s, 0) <> t.seats");
	ok &= check(cc, "nothing parked at the end",
				"SELECT count(*) FROM ordering.parked WHERE consumer IN ('billing', 'ledger')");
	ok &= check(cc, "no gap requested at the end",
				"SELECT count(*) FROM ordering.gap_requests WHERE consumer IN ('billing', 'ledger')");
	ok &= dead_letters_verify(cc, check);
	return ok;
}
