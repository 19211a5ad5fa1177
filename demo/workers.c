/*-------------------------------------------------------------------------
 *
 * workers.c
 *	  The threads of the pipeline: producers, relays, consumers and the gap
 *	  listener.
 *
 * Each thread connects on its own.  next_event is taken with an atomic
 * fetch-and-add; the counters go through ADD (demo.h).
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>

#include "demo.h"

static int	next_event = 0;		/* events claimed by producer threads */

static const char *plans[] = {"free", "basic", "pro", "team", "enterprise"};
#define NPLANS 5

/*
 * The random state of a thread: the --seed, the thread's number (arg) and
 * constants of its kind (salt, prime, add) make each thread's sequence
 * distinct and a run repeatable.
 */
static uint64_t
thread_rng(void *arg, int salt, int prime, int add)
{
	int			id = (int) (intptr_t) arg;

	return (opt.seed + salt) * 0x9E3779B97F4A7C15ULL + id * prime + add;
}

/* ---------------------------------------------------------------------
 * Producers
 * --------------------------------------------------------------------- */

/*
 * Change a plan or add seats, and emit the event, in one statement: the
 * UPDATE locks the subscription row before emit() takes the resource's
 * counter, so two producers of one subscription queue on the row and their
 * seqs follow their commit order.
 */
static const char *SQL_PLAN =
"WITH u AS (UPDATE demo_subscriptions SET plan = $2 WHERE id = $1 RETURNING id) "
"SELECT ordering.emit('plan:' || u.id, 'PlanChanged', "
"       jsonb_build_object('subscription_id', u.id, 'plan', $2::text)) FROM u";
static const char *SQL_SEATS =
"WITH u AS (UPDATE demo_subscriptions SET seats = seats + $2::bigint WHERE id = $1 RETURNING id) "
"SELECT ordering.emit('seats:' || u.id, 'SeatsAdded', "
"       jsonb_build_object('subscription_id', u.id, 'delta', $2::bigint)) FROM u";

/* Run one producer statement; false (and the run failed) on error. */
static bool
produce(PGconn *c, bool plan, const char *const *params)
{
	PGresult   *r = PQexecPrepared(c, plan ? "plan" : "seats", 2, params, NULL, NULL, 0);
	bool		ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;

	if (!ok)
		fail("producer: %s", PQerrorMessage(c));
	PQclear(r);
	return ok;
}

/*
 * Producer thread: emits events until --events have been committed, at
 * most --rate events per second over all producers.  A plan change is
 * followed at once by another one of the same subscription with
 * probability --flip (the article's "upgrades and then quickly downgrades"),
 * and a share of the transactions is rolled back before the real one.
 */
void *
producer_main(void *arg)
{
	uint64_t	rs = thread_rng(arg, 1, 7919, 1);
	PGconn	   *c = connect_db(opt.producer_dsn);
	int			hot = opt.subscriptions / 100 > 0 ? opt.subscriptions / 100 : 1;
	int			flip_sub = -1;

	prepare(c, "plan", SQL_PLAN, 2);
	prepare(c, "seats", SQL_SEATS, 2);
	while (!stop_producing)
	{
		int			n = __atomic_fetch_add(&next_event, 1, __ATOMIC_RELAXED);
		char		sub[64],
					val[32];
		const char *params[2] = {sub, val};
		bool		plan;
		bool		poison = false;
		int			s;

		if (n >= opt.events)
			break;
		if (opt.rate > 0)
		{
			double		due = t_start + (double) n / opt.rate;
			double		wait = due - now();

			if (wait > 0)
				sleep_ms((int) (wait * 1000) + 1);
		}
		if (flip_sub >= 0)
		{
			/* the quick second change of the same subscription */
			plan = true;
			s = flip_sub;
			flip_sub = -1;
		}
		else
		{
			plan = rnd01(&rs) < opt.plan_share;
			/* a hot set of subscriptions makes producers race on them */
			s = rnd01(&rs) < opt.hot_share ? (int) (rnd(&rs) % hot)
				: (int) (rnd(&rs) % opt.subscriptions);
			if (plan && rnd01(&rs) < opt.flip)
				flip_sub = s;
		}
		snprintf(sub, sizeof(sub), "sub-%d%s", s + 1, suffix);
		if (plan)
			snprintf(val, sizeof(val), "%s", plans[rnd(&rs) % NPLANS]);
		else if ((poison = poison_pick(n)))
			/* a bulk purchase: the ledger's handler rejects it (dead_letters.c) */
			snprintf(val, sizeof(val), "%d", (int) (rnd(&rs) % 31) + 20);
		else
			snprintf(val, sizeof(val), "%d", (int) (rnd(&rs) % 5) + 1);

		if (rnd01(&rs) < opt.rollback)
		{
			/* a transaction that rolls back gives its number back */
			PQclear(must(c, "BEGIN"));
			if (!produce(c, plan, params))
				break;
			PQclear(must(c, "ROLLBACK"));
			ADD(rolled_back, 1);
		}
		if (!produce(c, plan, params))
			break;
		ADD(produced, 1);
		if (poison)
			ADD(poisoned, 1);
	}
	PQfinish(c);
	return NULL;
}

/* ---------------------------------------------------------------------
 * Relays
 * --------------------------------------------------------------------- */

/* Relay thread: claim_unpublished -> publish -> mark_published, in one transaction. */
void *
relay_main(void *arg)
{
	uint64_t	rs = thread_rng(arg, 7, 104729, 3);
	PGconn	   *c = connect_db(opt.producer_dsn);
	Broker	   *b = NULL;
	char		batch[16];
	const char *bp[1] = {batch};
	char	   *ids;

	if (opt.broker && !(b = broker_open()))
	{
		PQfinish(c);
		return NULL;
	}
	ids = xmalloc((size_t) opt.batch * 24 + 8);
	snprintf(batch, sizeof(batch), "%d", opt.batch);
	prepare(c, "claim",
			"SELECT id, resource_id, seq, event_type, payload::text "
			"FROM ordering.claim_unpublished($1::int)", 1);
	prepare(c, "mark", "SELECT ordering.mark_published($1::bigint[])", 1);

	while (!stop_all)
	{
		PGresult   *r;
		int			n;
		size_t		off = 0;
		const char *mp[1] = {ids};

		PQclear(must(c, "BEGIN"));
		r = PQexecPrepared(c, "claim", 1, bp, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_TUPLES_OK)
		{
			fail("relay: %s", PQerrorMessage(c));
			PQclear(r);
			break;
		}
		n = PQntuples(r);
		if (n == 0)
		{
			PQclear(r);
			PQclear(must(c, "COMMIT"));
			sleep_ms(10);
			continue;
		}
		ids[off++] = '{';
		for (int i = 0; i < n; i++)
		{
			Msg		   *m = msg_new(PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
									PQgetvalue(r, i, 3), PQgetvalue(r, i, 4));
			int			copies = 1;

			off += (size_t) sprintf(ids + off, "%s%s", i ? "," : "", PQgetvalue(r, i, 0));
			ADD(claimed, 1);
			if (rnd01(&rs) < opt.loss)
			{
				/* lost in transit: no consumer will ever see this copy */
				ADD(lost, 1);
				msg_free(m);
				continue;
			}
			if (rnd01(&rs) < opt.duplicate)
			{
				copies = 2;
				ADD(duplicated, 1);
			}
			ADD(published, copies);
			ADD(in_flight, copies);
			if (opt.broker)
			{
				broker_publish(b, m, copies);
				msg_free(m);
			}
			else
			{
				if (copies == 2)
					queue_push(msg_new(m->resource, m->seq, m->type, m->payload));
				queue_push(m);
			}
		}
		ids[off++] = '}';
		ids[off] = '\0';
		PQclear(r);
		r = PQexecPrepared(c, "mark", 1, mp, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_TUPLES_OK)
			fail("relay: mark_published: %s", PQerrorMessage(c));
		PQclear(r);
		PQclear(must(c, "COMMIT"));
	}
	if (opt.broker)
		broker_close(b);
	free(ids);
	PQfinish(c);
	return NULL;
}

/* ---------------------------------------------------------------------
 * Consumers
 * --------------------------------------------------------------------- */

/* Consumer thread entry point. */
void *
consumer_main(void *arg)
{
	uint64_t	rs = thread_rng(arg, 13, 1299709, 5);
	PGconn	   *c = connect_db(opt.consumer_dsn);

	apply_prepare(c);
	if (opt.broker)
		consume_broker(c, &rs);
	else
		consume_inprocess(c, &rs);
	PQfinish(c);
	return NULL;
}

/* ---------------------------------------------------------------------
 * The gap loop: LISTEN ordering_gap in the consumer database, republish
 * in the producer database.  Paused between --pause-from and --pause-to
 * (shares of the events produced) so the chart shows a gap that is not
 * closing: notifications wait in the connection until it resumes.
 * --------------------------------------------------------------------- */
volatile int gap_paused = 0;
double		pause_started = 0,
			pause_ended = 0;

/* Gap thread. */
void *
gap_main(void *arg)
{
	PGconn	   *cc = connect_db(opt.consumer_dsn);
	PGconn	   *pc = connect_db(opt.producer_dsn);

	(void) arg;
	must_exec(cc, "LISTEN ordering_gap");
	prepare(pc, "republish",
			"SELECT ordering.republish(g.resource_id, g.missing_from, g.missing_to) "
			"FROM jsonb_populate_record(NULL::ordering.gap_requests, $1::jsonb) g", 1);
	while (!stop_all)
	{
		int			sock = PQsocket(cc);
		fd_set		fds;
		struct timeval tv = {0, 100000};
		PGnotify   *n;
		double		share = (double) GET(produced) / opt.events;
		bool		paused = opt.pause_to > opt.pause_from &&
			share >= opt.pause_from && share < opt.pause_to;

		if (paused != gap_paused)
		{
			gap_paused = paused;
			if (paused)
				pause_started = now() - t_start;
			else
				pause_ended = now() - t_start;
		}
		if (paused)
		{
			sleep_ms(50);
			continue;
		}
		FD_ZERO(&fds);
		FD_SET(sock, &fds);
		if (select(sock + 1, &fds, NULL, NULL, &tv) < 0 && errno != EINTR)
			break;
		if (!PQconsumeInput(cc))
		{
			fail("gap loop: %s", PQerrorMessage(cc));
			break;
		}
		while ((n = PQnotifies(cc)) != NULL)
		{
			const char *p[1] = {n->extra};
			PGresult   *r = PQexecPrepared(pc, "republish", 1, p, NULL, NULL, 0);

			ADD(gap_notifies, 1);
			if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
				ADD(republished, atol(PQgetvalue(r, 0, 0)));
			else
				fail("gap loop: republish %s: %s", n->extra, PQerrorMessage(pc));
			PQclear(r);
			PQfreemem(n);
		}
	}
	PQfinish(cc);
	PQfinish(pc);
	return NULL;
}
