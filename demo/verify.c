/*-------------------------------------------------------------------------
 *
 * verify.c
 *	  Settling and verification: wait until everything sent has been
 *	  applied (reconciling the consumers with the producer to find lost
 *	  last events), then check the consumer database against the
 *	  producer's truth.
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
 * A consumer as the end-of-run reconciliation sees it: its name, the
 * resource prefix it reads, and, when its progress is not in
 * ordering.positions, the SQL of its count of resources, of its per-bucket
 * summary ($2: buckets) and of its state in some buckets ($1: buckets, $2:
 * bucket list).
 */
typedef struct ReconcileSide
{
	const char *consumer;
	const char *prefix;
	const char *count_sql;		/* NULL: ordering.positions */
	const char *summary_sql;
	const char *state_sql;
} ReconcileSide;

/*
 * billing with --state-consumer newer_only keeps no position: its progress
 * is the version column of demo_billing, which the newer_only trigger only
 * lets grow.  So the consumer side is computed from that table with the
 * extension's own hashes, in the shape of ordering.consumer_summary() and
 * ordering.consumer_state() (no parked events, no dead letters: a state
 * consumer has neither), and ordering.reconcile() takes it as it takes
 * theirs.
 */
#define BILLING_VERSIONS \
	"(SELECT 'plan:' || b.subscription_id AS resource_id, b.version " \
	"   FROM demo_billing b WHERE b.version > 0) v"
static const ReconcileSide BILLING_NEWER_ONLY = {
	"billing", "plan:",
	"SELECT count(*) FROM " BILLING_VERSIONS,
	"SELECT ordering_internal.resource_bucket(v.resource_id, $2::integer) AS bucket, count(*) AS resources, "
	"       sum(v.version) AS seq_sum, "
	"       bit_xor(ordering_internal.resource_fingerprint(v.resource_id, v.version)) AS fingerprint "
	"FROM " BILLING_VERSIONS " GROUP BY 1",
	"SELECT v.resource_id, v.version AS position FROM " BILLING_VERSIONS " "
	"WHERE ordering_internal.resource_bucket(v.resource_id, $1::integer) = ANY ($2::integer[])",
};
static const ReconcileSide BILLING = {"billing", "plan:", NULL, NULL, NULL};
static const ReconcileSide LEDGER = {"ledger", "seats:", NULL, NULL, NULL};

/*
 * What each round of the end-of-run reconciliation did, over both
 * consumers, for the report: the work follows the buckets that differ.
 */
typedef struct ReconcileRound
{
	const char *when;			/* NULL, or why this settle() ran */
	long		buckets;		/* buckets compared */
	long		differing;		/* of which differed */
	long		drilled;		/* resources looked at one by one */
	long		behind;			/* of which behind */
	long		blocked;		/* of which blocked by a dead letter */
	long		republished;	/* events republished */
} ReconcileRound;

static ReconcileRound *rounds;
static int	nrounds;

/*
 * The bucket count of ordering-reconcile: a power of two near one bucket
 * per 8 resources, from 16 to 2^20.
 */
static int
reconcile_buckets(long resources)
{
	int			b = 16;

	while (b < resources / 8.0 && b < (1 << 20))
		b *= 2;
	return b;
}

/*
 * Reconcile one consumer with the producer's outbox, as
 * tools/ordering-reconcile does (docs/anti-entropy.md): both sides
 * summarise their resources under the consumer's prefix per bucket, the
 * producer's summaries travel to the consumer database, which names the
 * buckets that differ; the consumer describes its resources in those
 * buckets (position, parked run, dead letter) and the producer's
 * ordering.reconcile() republishes what is missing.  A resource blocked by
 * a dead letter is left alone until the operator has retried it (main.c
 * reconciles again then).  grace is 0: settle() calls this only when the
 * pipeline is idle, so nothing published is still in the transport.
 * Adds to the round's numbers; returns how many rows were put back.
 */
static long
reconcile_consumer(PGconn *pc, PGconn *cc, const ReconcileSide *side,
				   ReconcileRound *round)
{
	PGresult   *r;
	char		sql[2048];
	char		nbuf[16];
	char	   *summary,
			   *differing,
			   *state;
	long		n_prod,
				n_cons,
				republished;
	int			buckets;

	/* size the buckets by the larger side, as the command does */
	{
		const char *p[1] = {side->prefix};

		r = must_params(pc, "SELECT count(*) FROM ordering.sequences "
						"WHERE stream = 'ordering.outbox' AND last_seq > 0 "
						"AND starts_with(resource_id, $1)", 1, p);
		n_prod = atol(PQgetvalue(r, 0, 0));
		PQclear(r);
	}
	if (side->count_sql)
	{
		r = must(cc, side->count_sql);
		n_cons = atol(PQgetvalue(r, 0, 0));
		PQclear(r);
	}
	else
	{
		const char *p[2] = {side->consumer, side->prefix};

		r = must_params(cc, "SELECT count(*) FROM ordering.positions "
						"WHERE consumer = $1 AND position > 0 "
						"AND starts_with(resource_id, $2)", 2, p);
		n_cons = atol(PQgetvalue(r, 0, 0));
		PQclear(r);
	}
	buckets = reconcile_buckets(n_prod > n_cons ? n_prod : n_cons);
	snprintf(nbuf, sizeof(nbuf), "%d", buckets);

	/* 1. the producer's summaries, compared with the consumer's */
	{
		const char *p[2] = {nbuf, side->prefix};

		r = must_params(pc, "SELECT coalesce(jsonb_agg(s), '[]')::text FROM "
						"ordering.stream_summary('ordering.outbox', $1::integer, $2) s", 2, p);
		summary = strdup(PQgetvalue(r, 0, 0));
		PQclear(r);
	}
	snprintf(sql, sizeof(sql),
			 "WITH p AS (SELECT * FROM jsonb_to_recordset($1::jsonb) "
			 "           AS p(bucket integer, resources bigint, seq_sum numeric, fingerprint bigint)), "
			 "c AS (%s) "
			 "SELECT count(*), coalesce(array_agg(bucket ORDER BY bucket), '{}')::text "
			 "FROM p FULL JOIN c USING (bucket) "
			 "WHERE (p.resources, p.seq_sum, p.fingerprint) "
			 "      IS DISTINCT FROM (c.resources, c.seq_sum, c.fingerprint)",
			 side->summary_sql ? side->summary_sql :
			 "SELECT * FROM ordering.consumer_summary($3, $2::integer, $4)");
	{
		const char *p[4] = {summary, nbuf, side->consumer, side->prefix};

		r = must_params(cc, sql, side->summary_sql ? 2 : 4, p);
	}
	round->buckets += buckets;
	round->differing += atol(PQgetvalue(r, 0, 0));
	differing = strdup(PQgetvalue(r, 0, 1));
	PQclear(r);
	free(summary);
	if (strcmp(differing, "{}") == 0)
	{
		free(differing);
		return 0;
	}

	/* 2. what the consumer has of the resources in those buckets */
	if (side->state_sql)
	{
		const char *p[2] = {nbuf, differing};

		snprintf(sql, sizeof(sql),
				 "SELECT coalesce(jsonb_agg(s), '[]')::text FROM (%s) s", side->state_sql);
		r = must_params(cc, sql, 2, p);
	}
	else
	{
		const char *p[4] = {side->consumer, nbuf, differing, side->prefix};

		r = must_params(cc, "SELECT coalesce(jsonb_agg(s), '[]')::text FROM "
						"ordering.consumer_state($1, $2::integer, $3::integer[], $4) s", 4, p);
	}
	state = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);

	/* 3. the producer compares and republishes */
	{
		const char *p[4] = {state, nbuf, differing, side->prefix};

		r = must_params(pc, "SELECT count(*), count(*) FILTER (WHERE status = 'behind'), "
						"count(*) FILTER (WHERE status = 'blocked'), "
						"coalesce(sum(republished), 0) "
						"FROM ordering.reconcile($1::jsonb, $2::integer, $3::integer[], "
						"resource_prefix => $4, grace => '0', dry_run => false)", 4, p);
	}
	round->drilled += atol(PQgetvalue(r, 0, 0));
	round->behind += atol(PQgetvalue(r, 0, 1));
	round->blocked += atol(PQgetvalue(r, 0, 2));
	republished = atol(PQgetvalue(r, 0, 3));
	round->republished += republished;
	PQclear(r);
	free(state);
	free(differing);
	return republished;
}

/*
 * One round of the end-of-run reconciliation, over both consumers, noted
 * for the report.  Returns how many rows were put back.
 */
static long
reconcile_round(PGconn *pc, PGconn *cc, const char *when)
{
	ReconcileRound *round;

	rounds = xrealloc(rounds, (nrounds + 1) * sizeof(ReconcileRound));
	round = &rounds[nrounds++];
	memset(round, 0, sizeof(*round));
	round->when = when;
	reconcile_consumer(pc, cc, opt.newer_only ? &BILLING_NEWER_ONLY : &BILLING, round);
	reconcile_consumer(pc, cc, &LEDGER, round);
	return round->republished;
}

/*
 * The report's lines on the reconciliation: one per round, or with many
 * rounds the first few and the last.
 */
void
reconcile_report(void)
{
	const int	shown = 5;

	if (nrounds == 0)
		return;
	printf("  lost last events, found by reconciling both consumers with the producer "
		   "(%ld events republished):\n", GET(tail_republished));
	for (int i = 0; i < nrounds; i++)
	{
		ReconcileRound *r = &rounds[i];

		if (nrounds > shown + 1 && i >= shown && i < nrounds - 1)
		{
			if (i == shown)
				printf("    ... %d more rounds\n", nrounds - shown - 1);
			continue;
		}
		printf("    round %d%s%s: %ld buckets compared, %ld differed", i + 1,
			   r->when ? ", " : "", r->when ? r->when : "", r->buckets, r->differing);
		if (r->drilled > 0)
			printf("; %ld resources looked at one by one, %ld behind: %ld event%s republished",
				   r->drilled, r->behind, r->republished, r->republished == 1 ? "" : "s");
		if (r->blocked > 0)
			printf(" (%ld blocked by a dead letter)", r->blocked);
		printf("\n");
	}
}

/*
 * Wait for the pipeline to drain: outbox published, no copy in flight,
 * nothing parked (but behind a dead letter, where events wait for the
 * operator), no open gap request.  A quiet pipeline is reconciled with the
 * producer (above); while that republishes something, wait again.  when
 * labels the rounds in the report (NULL: none).  False on timeout.
 */
bool
settle(PGconn *pc, PGconn *cc, const char *when)
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
			tails = reconcile_round(pc, cc, when);
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
