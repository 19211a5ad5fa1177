/*-------------------------------------------------------------------------
 *
 * main.c
 *	  End-to-end demo of the scenario of "Handling Out-of-Order Events
 *	  with Sequence Numbers": producers change plans and add seats for a
 *	  few thousand subscriptions, relays publish the outbox in parallel, a
 *	  transport reorders, duplicates and loses messages, twelve consumers
 *	  apply them, and a gap loop asks the producer to send lost events again.
 *
 * Resources and consumers.  The outbox numbers events per resource_id, so
 * each event kind gets its own resource: 'plan:sub-42' carries PlanChanged
 * (state events, full plan in the payload) and 'seats:sub-42' carries
 * SeatsAdded (step events, a delta).  Each kind is then a gapless sequence
 * 1, 2, 3, ... per subscription, read by its own consumer name:
 *   billing  PlanChanged -> ordering.apply_if_newer, then an upsert into
 *            demo_billing (state consumer: stale events are no-ops); or,
 *            with --state-consumer newer_only, a plain upsert that the
 *            ordering.newer_only trigger on demo_billing makes stale-safe
 *   ledger   SeatsAdded  -> ordering.deliver with the handler
 *            demo_apply_seats, which inserts into demo_ledger in the same
 *            transaction (step consumer: early events park until the gap
 *            fills); with on_error => 'dead_letter', a poison event the
 *            handler rejects is set aside with its subscription's later
 *            events, until the operator fixes the handler at the end
 *            (dead_letters.c)
 * Every delivery is also applied, in the same transaction and in arrival
 * order, by a naive consumer (demo_naive: last arrival wins, deltas summed
 * as they come) so the run shows what the transport does without the
 * extension.
 *
 * Threads: see demo.h.  This file creates the demo tables, starts the
 * threads, waits for the pipeline to drain and prints the outcome.
 *
 * Losses are real: a lost message is never handed to a consumer.  A loss in
 * the middle of a ledger stream parks the later events; the extension's
 * worker escalates the gap after ordering.gap_deadline and NOTIFYs
 * ordering_gap; the gap thread calls ordering.republish in the producer
 * database and the relays send the rows again.  A lost *last* event leaves
 * nothing behind it to park, so no gap can be seen; once the pipeline is
 * idle, the demo reconciles each consumer with the producer as
 * tools/ordering-reconcile does (verify.c; docs/anti-entropy.md): per-bucket
 * summaries on both sides, the resources of the buckets that differ, and
 * ordering.reconcile() republishes what is missing (reported separately,
 * with the buckets compared and the resources looked at).  It runs again
 * after the operator has retried the dead letters, which it leaves alone
 * while they block.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <string.h>

#include "demo.h"

/* ---------------------------------------------------------------------
 * Shared counters (atomic) and run state (see demo.h)
 * --------------------------------------------------------------------- */
Counters	cnt;
volatile int stop_producing = 0;
volatile int stop_all = 0;
volatile int failed = 0;
char		suffix[32] = "";
char		resource_re[64];
double		t_start;

/* ---------------------------------------------------------------------
 * Setup
 * --------------------------------------------------------------------- */

/* Create the demo tables; pick the subscription id suffix of this run. */
static void
setup(PGconn *pc, PGconn *cc)
{
	char		sql[512];
	long		run;

	must_exec(pc, "SET client_min_messages = warning");
	must_exec(cc, "SET client_min_messages = warning");
	must_exec(pc, "CREATE EXTENSION IF NOT EXISTS ordering");
	must_exec(cc, "CREATE EXTENSION IF NOT EXISTS ordering");

	/*
	 * Counters are never reset, so a second run on the same databases uses
	 * new subscription ids (sub-42.r2) instead of continuing old sequences.
	 */
	must_exec(pc, "CREATE TABLE IF NOT EXISTS demo_runs (run int PRIMARY KEY, started timestamptz DEFAULT now())");
	run = query_long(pc, "SELECT coalesce(max(run), 0) + 1 FROM demo_runs");
	for (;; run++)
	{
		char	   *re = resource_re;
		const char *p[1] = {re};
		PGresult   *r1,
				   *r2;
		bool		used;

		if (run > 1)
			snprintf(suffix, sizeof(suffix), ".r%ld", run);
		/* ids of this run must be new to the producer and the consumer */
		if (run > 1)
			snprintf(re, sizeof(resource_re), "^(plan|seats):sub-[0-9]+\\.r%ld$", run);
		else
			snprintf(re, sizeof(resource_re), "^(plan|seats):sub-[0-9]+$");
		r1 = must_params(pc, "SELECT EXISTS (SELECT FROM ordering.sequences WHERE resource_id ~ $1)", 1, p);
		r2 = must_params(cc, "SELECT EXISTS (SELECT FROM ordering.positions WHERE resource_id ~ $1) "
						 "OR EXISTS (SELECT FROM ordering.parked WHERE resource_id ~ $1)", 1, p);
		used = strcmp(PQgetvalue(r1, 0, 0), "t") == 0 || strcmp(PQgetvalue(r2, 0, 0), "t") == 0;
		PQclear(r1);
		PQclear(r2);
		if (!used)
			break;
	}
	snprintf(sql, sizeof(sql), "INSERT INTO demo_runs (run) VALUES (%ld)", run);
	must_exec(pc, sql);

	must_exec(pc, "DROP TABLE IF EXISTS demo_subscriptions");
	must_exec(pc, "CREATE TABLE demo_subscriptions (id text PRIMARY KEY, plan text NOT NULL, seats bigint NOT NULL)");
	snprintf(sql, sizeof(sql),
			 "INSERT INTO demo_subscriptions SELECT 'sub-' || i || '%s', 'free', 0 "
			 "FROM generate_series(1, %d) i", suffix, opt.subscriptions);
	must_exec(pc, sql);

	/*
	 * demo_billing is kept from run to run: with --state-consumer newer_only
	 * its versions are billing's only record of what it applied, which the
	 * end-of-run reconciliation compares with every plan resource of the
	 * producer, those of earlier runs included.
	 */
	must_exec(cc, "DROP TABLE IF EXISTS demo_ledger, demo_naive, demo_truth");
	must_exec(cc, "CREATE TABLE IF NOT EXISTS demo_billing (subscription_id text PRIMARY KEY, "
			  "plan text NOT NULL, version bigint NOT NULL)");
	must_exec(cc, "DROP TRIGGER IF EXISTS newer_only ON demo_billing");
	if (opt.newer_only && !opt.without_extension)
		must_exec(cc, "CREATE TRIGGER newer_only BEFORE UPDATE ON demo_billing FOR EACH ROW "
				  "EXECUTE FUNCTION ordering.newer_only('version', 'billing')");
	/* no unique key on (subscription_id, seq): verification must see a double apply */
	must_exec(cc, "CREATE TABLE demo_ledger (applied_order bigint GENERATED ALWAYS AS IDENTITY, "
			  "subscription_id text NOT NULL, seq bigint NOT NULL, delta bigint NOT NULL)");
	must_exec(cc, "CREATE INDEX ON demo_ledger (subscription_id, applied_order)");
	must_exec(cc, "CREATE TABLE demo_naive (subscription_id text PRIMARY KEY, plan text NOT NULL, seats bigint NOT NULL)");
	dead_letters_setup(cc);
	if (opt.broker)
		broker_setup();
}

/* ---------------------------------------------------------------------
 * main
 * --------------------------------------------------------------------- */
int
main(int argc, char **argv)
{
	PGconn	   *pc,
			   *cc;
	pthread_t	prod[MAX_THREADS],
				rel[MAX_THREADS],
				cons[MAX_THREADS],
				gap,
				sampler;
	Stats		b0,
				l0,
				b1,
				l1;
	double		t_produce,
				t_total;
	bool		settled,
				ok;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_options(argc, argv);
	pc = connect_db(opt.producer_dsn);
	cc = connect_db(opt.consumer_dsn);
	setup(pc, cc);
	b0 = read_stats(cc, "billing");
	l0 = read_stats(cc, "ledger");

	printf("ordering demo: %d events for %d subscriptions; %d producers, %d relays, "
		   "%d consumers; transport %s (loss %.1f%%, duplicates %.1f%%%s)\n",
		   opt.events, opt.subscriptions, opt.producers, opt.relays, opt.consumers,
		   opt.broker ? opt.broker : "in-process", opt.loss * 100, opt.duplicate * 100,
		   opt.broker ? ", requeues, prefetch" : ", reordering window");

	t_start = now();
	pthread_create(&sampler, NULL, sampler_main, NULL);
	pthread_create(&gap, NULL, gap_main, NULL);
	for (int i = 0; i < opt.consumers; i++)
		pthread_create(&cons[i], NULL, consumer_main, (void *) (intptr_t) i);
	for (int i = 0; i < opt.relays; i++)
		pthread_create(&rel[i], NULL, relay_main, (void *) (intptr_t) i);
	for (int i = 0; i < opt.producers; i++)
		pthread_create(&prod[i], NULL, producer_main, (void *) (intptr_t) i);
	for (int i = 0; i < opt.producers; i++)
		pthread_join(prod[i], NULL);
	t_produce = now() - t_start;

	settled = settle(pc, cc, NULL);
	t_total = now() - t_start;
	if (!failed)
	{
		load_truth(pc, cc);

		/*
		 * The operator looks at the dead letters, fixes the handler, retries;
		 * the pipeline still runs, so the events missing behind a dead letter
		 * (which the reconciliation leaves alone while it blocks) are found
		 * and sent by the next reconciliation.
		 */
		if (dead_letters_fix_and_retry(cc) > 0 && settled)
			settled = settle(pc, cc, "after the retry of the dead letters");
	}
	__atomic_store_n(&stop_all, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < opt.relays; i++)
		pthread_join(rel[i], NULL);
	for (int i = 0; i < opt.consumers; i++)
		pthread_join(cons[i], NULL);
	pthread_join(gap, NULL);
	pthread_join(sampler, NULL);

	if (!settled && !failed)
		printf("\nThe pipeline did not drain within %d s: %ld messages in flight, "
			   "%ld parked (checks below show what is missing)\n",
			   opt.timeout, GET(in_flight), GET(parked_now));
	if (failed)
	{
		printf("\nThe run stopped on an error (see above).\n");
		return 1;
	}
	b1 = read_stats(cc, "billing");
	l1 = read_stats(cc, "ledger");
	ok = verify(cc);
	report(stats_delta(b1, b0), stats_delta(l1, l0), t_produce, t_total);
	printf("\n%s\n", ok ? "RESULT: all checks passed" : "RESULT: FAILED");
	PQfinish(pc);
	PQfinish(cc);
	return ok ? 0 : 1;
}
