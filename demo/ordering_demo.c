/*-------------------------------------------------------------------------
 *
 * ordering_demo.c
 *	  End-to-end demo of the seed scenario ("Handling Out-of-Order Events
 *	  with Sequence Numbers"): producers change plans and add seats for a
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
 *   ledger   SeatsAdded  -> ordering.deliver, whose returned rows are
 *            inserted into demo_ledger in the same statement (step
 *            consumer: early events park until the gap fills)
 * Every delivery is also applied, in the same transaction and in arrival
 * order, by a naive consumer (demo_naive: last arrival wins, deltas summed
 * as they come) so the run shows what the transport does without the
 * extension.
 *
 * Threads.  Each thread owns its database connections (libpq connections
 * are not shared) and, in broker mode, its own AMQP connection.  Shared
 * state: the in-process queue (one mutex + condition variable) and plain
 * counters updated with __atomic builtins.
 *
 * Losses are real: a lost message is never handed to a consumer.  A loss in
 * the middle of a ledger stream parks the later events; the extension's
 * worker escalates the gap after ordering.gap_deadline and NOTIFYs
 * ordering_gap; the gap thread calls ordering.republish in the producer
 * database and the relays send the rows again.  A lost *last* event leaves
 * nothing behind it to park, so no gap can be seen; at the end of the run
 * the demo reconciles the producer's last sequence numbers with the
 * consumer positions and republishes such tails (reported separately).
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <amqp.h>
#include <amqp_tcp_socket.h>

#define QUEUE_NAME "ordering_demo"
#define MAX_THREADS 64
#define NBUCKETS_MAX 16

/* ---------------------------------------------------------------------
 * Options
 * --------------------------------------------------------------------- */
typedef struct Options
{
	const char *producer_dsn;
	const char *consumer_dsn;
	const char *broker;			/* NULL: in-process transport */
	int			subscriptions;
	int			events;
	int			producers;
	int			relays;
	int			consumers;
	int			batch;
	double		plan_share;
	double		hot_share;
	double		rollback;
	double		flip;
	int			rate;
	double		loss;
	double		duplicate;
	int			window;
	double		requeue;
	int			prefetch;
	double		pause_from;
	double		pause_to;
	int			timeout;
	unsigned	seed;
	const char *samples;
	bool		quiet;
	bool		without_extension;
	bool		newer_only;		/* --state-consumer newer_only */
} Options;

static Options opt = {
	.producer_dsn = NULL,
	.consumer_dsn = NULL,
	.broker = NULL,
	.subscriptions = 2000,
	.events = 30000,
	.producers = 4,
	.relays = 3,
	.consumers = 12,
	.batch = 50,
	.plan_share = 0.5,
	.hot_share = 0.3,
	.rollback = 0.02,
	.flip = 0.5,
	.rate = 2000,
	.loss = 0.01,
	.duplicate = 0.05,
	.window = 200,
	.requeue = 0.05,
	.prefetch = 20,
	.pause_from = 0.3,
	.pause_to = 0.6,
	.timeout = 120,
	.seed = 0,
	.samples = NULL,
	.quiet = false,
};

/* ---------------------------------------------------------------------
 * Shared counters (atomic) and run state
 * --------------------------------------------------------------------- */
typedef struct Counters
{
	long		produced;		/* committed events */
	long		rolled_back;	/* events whose transaction rolled back */
	long		claimed;		/* outbox rows a relay sent (or lost) */
	long		published;		/* copies handed to the transport */
	long		in_flight;		/* copies handed over and not yet acked */
	long		lost;			/* messages the transport dropped */
	long		duplicated;		/* extra copies the transport made */
	long		delivered;		/* deliveries processed and committed */
	long		requeued;		/* deliveries sent back to the queue */
	long		refused;		/* deliveries refused with 54000 */
	long		retried;		/* serialization / deadlock retries */
	long		applied_plan;	/* plan changes written to demo_billing */
	long		applied_seats;	/* ledger rows written */
	long		gap_notifies;	/* ordering_gap notifications received */
	long		republished;	/* rows ordering.republish put back */
	long		tail_republished;	/* rows put back by the reconciliation */
	long		parked_now;		/* last sample */
	long		parked_peak;
	long		errors;
} Counters;

static Counters cnt;
static volatile int stop_producing = 0;
static volatile int stop_all = 0;
static volatile int failed = 0;
static int	next_event = 0;		/* events claimed by producer threads */
static char suffix[32] = "";	/* subscription id suffix for runs after the first */
static char resource_re[64];	/* regex matching this run's resource ids */
static double t_start;

#define ADD(field, n) __atomic_add_fetch(&cnt.field, (n), __ATOMIC_RELAXED)
#define GET(field) __atomic_load_n(&cnt.field, __ATOMIC_RELAXED)

static const char *plans[] = {"free", "basic", "pro", "team", "enterprise"};
#define NPLANS 5

/* ---------------------------------------------------------------------
 * Small helpers
 * --------------------------------------------------------------------- */

/* Seconds since an arbitrary epoch, monotonic. */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sleep for ms milliseconds. */
static void
sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* xorshift64*: a per-thread random generator. */
static uint64_t
rnd(uint64_t *s)
{
	uint64_t	x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 2685821657736338717ULL;
}

/* Uniform double in [0, 1). */
static double
rnd01(uint64_t *s)
{
	return (rnd(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* realloc or exit: the demo cannot go on without memory. */
static void *
xrealloc(void *p, size_t n)
{
	void	   *q = realloc(p, n);

	if (!q)
	{
		fprintf(stderr, "ordering_demo: out of memory\n");
		exit(1);
	}
	return q;
}

/* malloc or exit. */
static void *
xmalloc(size_t n)
{
	return xrealloc(NULL, n);
}

/* Print an error and flag the run as failed. */
static void
fail(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	fprintf(stderr, "\nordering_demo: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&stop_all, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&stop_producing, 1, __ATOMIC_RELAXED);
}

/* Connect or exit. */
static PGconn *
connect_db(const char *dsn)
{
	PGconn	   *c = PQconnectdb(dsn);

	if (PQstatus(c) != CONNECTION_OK)
	{
		fprintf(stderr, "ordering_demo: cannot connect to \"%s\": %s",
				dsn, PQerrorMessage(c));
		exit(1);
	}
	return c;
}

/* Run a command that must succeed; exit on error. */
static PGresult *
must(PGconn *c, const char *sql)
{
	PGresult   *r = PQexec(c, sql);
	ExecStatusType st = PQresultStatus(r);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
	{
		fprintf(stderr, "ordering_demo: query failed: %s\n%s\n",
				PQerrorMessage(c), sql);
		exit(1);
	}
	return r;
}

/* Run a command and discard its result. */
static void
must_exec(PGconn *c, const char *sql)
{
	PQclear(must(c, sql));
}

/* Run a parameterised query that must succeed. */
static PGresult *
must_params(PGconn *c, const char *sql, int n, const char *const *vals)
{
	PGresult   *r = PQexecParams(c, sql, n, NULL, vals, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
	{
		fprintf(stderr, "ordering_demo: query failed: %s\n%s\n",
				PQerrorMessage(c), sql);
		exit(1);
	}
	return r;
}

/* One bigint from a query, or -1 when the query fails. */
static long
query_long(PGconn *c, const char *sql)
{
	PGresult   *r = PQexec(c, sql);
	long		v = -1;

	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
		!PQgetisnull(r, 0, 0))
		v = atol(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

/* Prepare a statement or exit. */
static void
prepare(PGconn *c, const char *name, const char *sql, int nparams)
{
	PGresult   *r = PQprepare(c, name, sql, nparams, NULL);

	if (PQresultStatus(r) != PGRES_COMMAND_OK)
	{
		fprintf(stderr, "ordering_demo: cannot prepare %s: %s", name,
				PQerrorMessage(c));
		exit(1);
	}
	PQclear(r);
}

/* SQLSTATE of a failed result ("" if none). */
static const char *
sqlstate(const PGresult *r)
{
	const char *s = PQresultErrorField(r, PG_DIAG_SQLSTATE);

	return s ? s : "";
}

/* ---------------------------------------------------------------------
 * Messages and the in-process transport
 *
 * A message is one outbox row as the relay published it.  The in-process
 * queue hands out a random one of the first `window` waiting messages, so
 * later messages overtake earlier ones; duplicates are pushed as a second
 * copy; lost messages are never pushed.
 * --------------------------------------------------------------------- */
typedef struct Msg
{
	char	   *resource;
	char	   *seq;
	char	   *type;
	char	   *payload;
} Msg;

static Msg **queue_buf;
static size_t queue_head,
			queue_len,
			queue_cap;
static pthread_mutex_t queue_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cv = PTHREAD_COND_INITIALIZER;

/* Copy a message. */
static Msg *
msg_new(const char *resource, const char *seq, const char *type,
		const char *payload)
{
	Msg		   *m = xmalloc(sizeof(Msg));

	m->resource = strdup(resource);
	m->seq = strdup(seq);
	m->type = strdup(type);
	m->payload = strdup(payload);
	return m;
}

/* Free a message. */
static void
msg_free(Msg *m)
{
	free(m->resource);
	free(m->seq);
	free(m->type);
	free(m->payload);
	free(m);
}

/* Append to the in-process queue (caller holds no lock). */
static void
queue_push(Msg *m)
{
	pthread_mutex_lock(&queue_mu);
	if (queue_head + queue_len == queue_cap)
	{
		if (queue_head > 0)
		{
			memmove(queue_buf, queue_buf + queue_head, queue_len * sizeof(Msg *));
			queue_head = 0;
		}
		if (queue_len == queue_cap)
		{
			queue_cap = queue_cap ? queue_cap * 2 : 1024;
			queue_buf = xrealloc(queue_buf, queue_cap * sizeof(Msg *));
		}
	}
	queue_buf[queue_head + queue_len++] = m;
	pthread_cond_signal(&queue_cv);
	pthread_mutex_unlock(&queue_mu);
}

/*
 * Take a random one of the first `window` messages, waiting up to 200 ms;
 * NULL on timeout.
 */
static Msg *
queue_pop(uint64_t *rs)
{
	Msg		   *m = NULL;

	pthread_mutex_lock(&queue_mu);
	if (queue_len == 0)
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200 * 1000000L;
		if (ts.tv_nsec >= 1000000000L)
		{
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&queue_cv, &queue_mu, &ts);
	}
	if (queue_len > 0)
	{
		size_t		w = queue_len < (size_t) opt.window ? queue_len : (size_t) opt.window;
		size_t		i = w > 1 ? rnd(rs) % w : 0;

		m = queue_buf[queue_head + i];
		/* close the hole: shift the i messages before it one step back */
		memmove(queue_buf + queue_head + 1, queue_buf + queue_head, i * sizeof(Msg *));
		queue_head++;
		queue_len--;
	}
	pthread_mutex_unlock(&queue_mu);
	return m;
}

/* ---------------------------------------------------------------------
 * The broker transport (RabbitMQ through librabbitmq)
 * --------------------------------------------------------------------- */
typedef struct Broker
{
	amqp_connection_state_t conn;
} Broker;

/* Die with a message if an AMQP RPC reply is not normal. */
static bool
amqp_ok(amqp_rpc_reply_t r, const char *what)
{
	if (r.reply_type == AMQP_RESPONSE_NORMAL)
		return true;
	if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
		fail("amqp: %s: %s", what, amqp_error_string2(r.library_error));
	else
		fail("amqp: %s: broker refused (reply type %d)", what, (int) r.reply_type);
	return false;
}

/* Open a connection and channel 1 to the broker of --broker. */
static bool
broker_open(Broker *b)
{
	struct amqp_connection_info ci;
	char	   *url = strdup(opt.broker);
	amqp_socket_t *sock;
	int			rc;

	amqp_default_connection_info(&ci);
	if (amqp_parse_url(url, &ci) != AMQP_STATUS_OK)
	{
		fail("cannot parse broker URL \"%s\"", opt.broker);
		free(url);
		return false;
	}
	b->conn = amqp_new_connection();
	sock = amqp_tcp_socket_new(b->conn);
	rc = amqp_socket_open(sock, ci.host, ci.port);
	if (rc != AMQP_STATUS_OK)
	{
		fail("cannot connect to the broker at %s:%d: %s", ci.host, ci.port,
			 amqp_error_string2(rc));
		free(url);
		return false;
	}
	if (!amqp_ok(amqp_login(b->conn, ci.vhost, 0, 131072, 0,
							AMQP_SASL_METHOD_PLAIN, ci.user, ci.password),
				 "login"))
	{
		free(url);
		return false;
	}
	free(url);
	amqp_channel_open(b->conn, 1);
	return amqp_ok(amqp_get_rpc_reply(b->conn), "channel.open");
}

/* Close a broker connection. */
static void
broker_close(Broker *b)
{
	amqp_channel_close(b->conn, 1, AMQP_REPLY_SUCCESS);
	amqp_connection_close(b->conn, AMQP_REPLY_SUCCESS);
	amqp_destroy_connection(b->conn);
}

/* Declare and purge the demo queue. */
static void
broker_setup(void)
{
	Broker		b;

	if (!broker_open(&b))
		exit(1);
	amqp_queue_declare(b.conn, 1, amqp_cstring_bytes(QUEUE_NAME), 0, 0, 0, 0,
					   amqp_empty_table);
	if (!amqp_ok(amqp_get_rpc_reply(b.conn), "queue.declare"))
		exit(1);
	amqp_queue_purge(b.conn, 1, amqp_cstring_bytes(QUEUE_NAME));
	if (!amqp_ok(amqp_get_rpc_reply(b.conn), "queue.purge"))
		exit(1);
	broker_close(&b);
}

/* Serialise a message as four lines: type, resource, seq, payload. */
static char *
msg_encode(const Msg *m, size_t *len)
{
	char	   *s;
	size_t		n = strlen(m->type) + strlen(m->resource) + strlen(m->seq) +
		strlen(m->payload) + 4;

	s = xmalloc(n);
	*len = (size_t) snprintf(s, n, "%s\n%s\n%s\n%s", m->type, m->resource,
							 m->seq, m->payload);
	return s;
}

/* Parse what msg_encode wrote; NULL if malformed. */
static Msg *
msg_decode(const char *buf, size_t len)
{
	char	   *s = strndup(buf, len);
	char	   *f[4];
	char	   *p = s;
	Msg		   *m;

	for (int i = 0; i < 3; i++)
	{
		char	   *nl = strchr(p, '\n');

		if (!nl)
		{
			free(s);
			return NULL;
		}
		*nl = '\0';
		f[i] = p;
		p = nl + 1;
	}
	f[3] = p;
	m = msg_new(f[1], f[2], f[0], f[3]);
	free(s);
	return m;
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
 * probability --flip (the seed's "upgrades and then quickly downgrades"),
 * and a share of the transactions is rolled back before the real one.
 */
static void *
producer_main(void *arg)
{
	int			id = (int) (intptr_t) arg;
	uint64_t	rs = (opt.seed + 1) * 0x9E3779B97F4A7C15ULL + id * 7919 + 1;
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
	}
	PQfinish(c);
	return NULL;
}

/* ---------------------------------------------------------------------
 * Relays
 * --------------------------------------------------------------------- */

/* Relay thread: claim_unpublished -> publish -> mark_published, in one transaction. */
static void *
relay_main(void *arg)
{
	int			id = (int) (intptr_t) arg;
	uint64_t	rs = (opt.seed + 7) * 0x9E3779B97F4A7C15ULL + id * 104729 + 3;
	PGconn	   *c = connect_db(opt.producer_dsn);
	Broker		b;
	char		batch[16];
	const char *bp[1] = {batch};
	char	   *ids;

	if (opt.broker && !broker_open(&b))
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
				size_t		len;
				char	   *body = msg_encode(m, &len);
				amqp_bytes_t bytes = {len, body};

				for (int k = 0; k < copies; k++)
				{
					int			rc = amqp_basic_publish(b.conn, 1, amqp_empty_bytes,
														amqp_cstring_bytes(QUEUE_NAME),
														0, 0, NULL, bytes);

					if (rc != AMQP_STATUS_OK)
						fail("relay: publish failed: %s", amqp_error_string2(rc));
				}
				free(body);
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
		broker_close(&b);
	free(ids);
	PQfinish(c);
	return NULL;
}

/* ---------------------------------------------------------------------
 * Consumers
 * --------------------------------------------------------------------- */

/*
 * PlanChanged: the billing consumer applies the event only if it is newer
 * (apply_if_newer moves the position in this same statement's transaction);
 * the naive consumer overwrites the plan whatever the order.
 */
static const char *SQL_APPLY_PLAN =
"WITH p AS (SELECT $3::jsonb AS j), "
"a AS (SELECT ordering.apply_if_newer('billing', $1, $2::bigint) AS ok), "
"b AS (INSERT INTO demo_billing (subscription_id, plan, version) "
"      SELECT p.j->>'subscription_id', p.j->>'plan', $2::bigint FROM a, p WHERE a.ok "
"      ON CONFLICT (subscription_id) DO UPDATE "
"      SET plan = EXCLUDED.plan, version = EXCLUDED.version RETURNING 1), "
"n AS (INSERT INTO demo_naive (subscription_id, plan, seats) "
"      SELECT p.j->>'subscription_id', p.j->>'plan', 0 FROM p "
"      ON CONFLICT (subscription_id) DO UPDATE SET plan = EXCLUDED.plan RETURNING 1) "
"SELECT CASE WHEN a.ok THEN 1 ELSE 0 END FROM a";

/*
 * SeatsAdded: the ledger consumer applies what deliver() returns, in the
 * order it returns it (WITH ORDINALITY), in this same transaction; the
 * naive consumer adds the delta as it arrives.
 */
static const char *SQL_APPLY_SEATS =
"WITH p AS (SELECT $3::jsonb AS j), "
"d AS (SELECT r.seq, r.payload, r.ord "
"      FROM ordering.deliver('ledger', $1, $2::bigint, $3::jsonb) "
"           WITH ORDINALITY AS r(seq, payload, ord)), "
"l AS (INSERT INTO demo_ledger (subscription_id, seq, delta) "
"      SELECT d.payload->>'subscription_id', d.seq, (d.payload->>'delta')::bigint "
"      FROM d ORDER BY d.ord RETURNING 1), "
"n AS (INSERT INTO demo_naive (subscription_id, plan, seats) "
"      SELECT p.j->>'subscription_id', 'free', (p.j->>'delta')::bigint FROM p "
"      ON CONFLICT (subscription_id) DO UPDATE "
"      SET seats = demo_naive.seats + EXCLUDED.seats RETURNING 1) "
"SELECT count(*) FROM d";

/*
 * PlanChanged with --state-consumer newer_only: a plain upsert; the
 * ordering.newer_only trigger on demo_billing skips the update when the
 * version is not newer (RETURNING then gives no row).
 */
static const char *SQL_NEWER_ONLY_PLAN =
"WITH p AS (SELECT $3::jsonb AS j), "
"b AS (INSERT INTO demo_billing (subscription_id, plan, version) "
"      SELECT p.j->>'subscription_id', p.j->>'plan', $2::bigint FROM p "
"      WHERE $1::text IS NOT NULL "
"      ON CONFLICT (subscription_id) DO UPDATE "
"      SET plan = EXCLUDED.plan, version = EXCLUDED.version RETURNING 1), "
"n AS (INSERT INTO demo_naive (subscription_id, plan, seats) "
"      SELECT p.j->>'subscription_id', p.j->>'plan', 0 FROM p "
"      ON CONFLICT (subscription_id) DO UPDATE SET plan = EXCLUDED.plan RETURNING 1) "
"SELECT count(*) FROM b";

/*
 * --without-extension: the checked tables are written the naive way
 * (arrival order, no position, no parking), to show that the
 * verification catches what the extension prevents.
 */
static const char *SQL_NAIVE_PLAN =
"WITH p AS (SELECT $3::jsonb AS j) "
"INSERT INTO demo_billing (subscription_id, plan, version) "
"SELECT p.j->>'subscription_id', p.j->>'plan', $2::bigint FROM p WHERE $1::text IS NOT NULL "
"ON CONFLICT (subscription_id) DO UPDATE "
"SET plan = EXCLUDED.plan, version = EXCLUDED.version RETURNING 1";
static const char *SQL_NAIVE_SEATS =
"WITH p AS (SELECT $3::jsonb AS j) "
"INSERT INTO demo_ledger (subscription_id, seq, delta) "
"SELECT p.j->>'subscription_id', $2::bigint, (p.j->>'delta')::bigint FROM p "
"WHERE $1::text IS NOT NULL RETURNING 1";

typedef enum
{
	APPLY_DONE,					/* committed: ack */
	APPLY_REQUEUE				/* refused for now: requeue */
} ApplyResult;

/* Apply one delivery, retrying serialization failures and deadlocks. */
static ApplyResult
apply(PGconn *c, const Msg *m)
{
	const char *params[3] = {m->resource, m->seq, m->payload};
	bool		plan = strcmp(m->type, "PlanChanged") == 0;

	for (;;)
	{
		PGresult   *r = PQexecPrepared(c, plan ? "apply_plan" : "apply_seats",
									   3, params, NULL, NULL, 0);

		if (PQresultStatus(r) == PGRES_TUPLES_OK)
		{
			long		n = atol(PQgetvalue(r, 0, 0));

			if (plan)
				ADD(applied_plan, n);
			else
				ADD(applied_seats, n);
			ADD(delivered, 1);
			PQclear(r);
			return APPLY_DONE;
		}
		if (strcmp(sqlstate(r), "40001") == 0 || strcmp(sqlstate(r), "40P01") == 0)
		{
			ADD(retried, 1);
			PQclear(r);
			continue;
		}
		if (strcmp(sqlstate(r), "54000") == 0)
		{
			/* too many parked for this resource: nothing stored, redeliver later */
			ADD(refused, 1);
			PQclear(r);
			return APPLY_REQUEUE;
		}
		ADD(errors, 1);
		fail("consumer: %s %s seq %s: %s", m->type, m->resource, m->seq,
			 PQerrorMessage(c));
		PQclear(r);
		return APPLY_DONE;
	}
}

/* Consumer thread over the in-process queue. */
static void
consume_inprocess(PGconn *c, uint64_t *rs)
{
	while (!stop_all)
	{
		Msg		   *m = queue_pop(rs);

		if (!m)
			continue;
		if (apply(c, m) == APPLY_REQUEUE)
		{
			/* refused for now (too many parked): to the back of the queue */
			ADD(requeued, 1);
			queue_push(m);
			sleep_ms(5);
			continue;
		}
		msg_free(m);
		__atomic_sub_fetch(&cnt.in_flight, 1, __ATOMIC_RELAXED);
	}
}

/*
 * Consumer thread over RabbitMQ: prefetch > 1, manual acks, and a share of
 * deliveries sent back with a requeue before they are looked at.
 */
static void
consume_broker(PGconn *c, uint64_t *rs)
{
	Broker		b;

	if (!broker_open(&b))
		return;
	amqp_basic_qos(b.conn, 1, 0, (uint16_t) opt.prefetch, 0);
	if (!amqp_ok(amqp_get_rpc_reply(b.conn), "basic.qos"))
		return;
	amqp_basic_consume(b.conn, 1, amqp_cstring_bytes(QUEUE_NAME), amqp_empty_bytes,
					   0, 0, 0, amqp_empty_table);
	if (!amqp_ok(amqp_get_rpc_reply(b.conn), "basic.consume"))
		return;
	while (!stop_all)
	{
		amqp_envelope_t env;
		struct timeval tv = {0, 200000};
		amqp_rpc_reply_t res;
		Msg		   *m;

		amqp_maybe_release_buffers(b.conn);
		res = amqp_consume_message(b.conn, &env, &tv, 0);
		if (res.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
			res.library_error == AMQP_STATUS_TIMEOUT)
			continue;
		if (!amqp_ok(res, "consume"))
			break;
		m = msg_decode(env.message.body.bytes, env.message.body.len);
		if (!m)
		{
			fail("consumer: malformed message");
			amqp_destroy_envelope(&env);
			break;
		}
		if (rnd01(rs) < opt.requeue)
		{
			/* a worker gives the message back: it comes again later */
			ADD(requeued, 1);
			amqp_basic_nack(b.conn, 1, env.delivery_tag, 0, 1);
		}
		else if (apply(c, m) == APPLY_REQUEUE)
		{
			/*
			 * Refused for now (too many parked): send it to the back of the
			 * queue, then ack.  A nack with requeue would put it back at the
			 * head, and enough refused messages would fill every consumer's
			 * prefetch window and starve the very event that closes the gap.
			 */
			int			rc;

			ADD(requeued, 1);
			rc = amqp_basic_publish(b.conn, 1, amqp_empty_bytes,
									amqp_cstring_bytes(QUEUE_NAME), 0, 0, NULL,
									env.message.body);
			if (rc != AMQP_STATUS_OK)
				fail("consumer: republish to the queue failed: %s",
					 amqp_error_string2(rc));
			amqp_basic_ack(b.conn, 1, env.delivery_tag, 0);
			sleep_ms(5);
		}
		else
		{
			amqp_basic_ack(b.conn, 1, env.delivery_tag, 0);
			__atomic_sub_fetch(&cnt.in_flight, 1, __ATOMIC_RELAXED);
		}
		msg_free(m);
		amqp_destroy_envelope(&env);
	}
	broker_close(&b);
}

/* Consumer thread entry point. */
static void *
consumer_main(void *arg)
{
	int			id = (int) (intptr_t) arg;
	uint64_t	rs = (opt.seed + 13) * 0x9E3779B97F4A7C15ULL + id * 1299709 + 5;
	PGconn	   *c = connect_db(opt.consumer_dsn);

	prepare(c, "apply_plan", opt.without_extension ? SQL_NAIVE_PLAN :
			opt.newer_only ? SQL_NEWER_ONLY_PLAN : SQL_APPLY_PLAN, 3);
	prepare(c, "apply_seats", opt.without_extension ? SQL_NAIVE_SEATS : SQL_APPLY_SEATS, 3);
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
static volatile int gap_paused = 0;
static double pause_started = 0,
			pause_ended = 0;

/* Gap thread. */
static void *
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

/* ---------------------------------------------------------------------
 * Sampler: parked events every 100 ms (for the chart) and a progress line.
 * --------------------------------------------------------------------- */
static void *
sampler_main(void *arg)
{
	PGconn	   *c = connect_db(opt.consumer_dsn);
	FILE	   *f = NULL;
	double		last_progress = 0;
	bool		tty = isatty(2);

	(void) arg;
	if (opt.samples)
	{
		f = fopen(opt.samples, "w");
		if (!f)
		{
			fail("cannot write %s: %s", opt.samples, strerror(errno));
			return NULL;
		}
		fprintf(f, "# seconds parked produced delivered gap_loop_paused\n");
	}
	while (!stop_all)
	{
		double		t = now() - t_start;
		long		parked = query_long(c,
										"SELECT count(*) FROM ordering.parked "
										"WHERE consumer IN ('billing', 'ledger')");

		if (parked >= 0)
		{
			__atomic_store_n(&cnt.parked_now, parked, __ATOMIC_RELAXED);
			if (parked > GET(parked_peak))
				__atomic_store_n(&cnt.parked_peak, parked, __ATOMIC_RELAXED);
		}
		if (f)
			fprintf(f, "%.2f %ld %ld %ld %d\n", t, parked, GET(produced),
					GET(delivered), gap_paused ? 1 : 0);
		if (!opt.quiet && t - last_progress >= (tty ? 0.25 : 2.0))
		{
			fprintf(stderr, "%s[%5.1fs] produced %ld/%d  delivered %ld  lost %ld  dup %ld  "
					"parked %ld  gaps %ld  republished %ld%s%s",
					tty ? "\r" : "", t, GET(produced), opt.events, GET(delivered),
					GET(lost), GET(duplicated), parked, GET(gap_notifies),
					GET(republished), gap_paused ? "  (gap loop paused)" : "",
					tty ? "\033[K" : "\n");
			last_progress = t;
		}
		sleep_ms(100);
	}
	if (!opt.quiet && tty)
		fprintf(stderr, "\n");
	if (f)
		fclose(f);
	PQfinish(c);
	return NULL;
}

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

	must_exec(cc, "DROP TABLE IF EXISTS demo_billing, demo_ledger, demo_naive, demo_truth");
	must_exec(cc, "CREATE TABLE demo_billing (subscription_id text PRIMARY KEY, plan text NOT NULL, version bigint NOT NULL)");
	if (opt.newer_only && !opt.without_extension)
		must_exec(cc, "CREATE TRIGGER newer_only BEFORE UPDATE ON demo_billing FOR EACH ROW "
				  "EXECUTE FUNCTION ordering.newer_only('version', 'billing')");
	/* no unique key on (subscription_id, seq): verification must see a double apply */
	must_exec(cc, "CREATE TABLE demo_ledger (applied_order bigint GENERATED ALWAYS AS IDENTITY, "
			  "subscription_id text NOT NULL, seq bigint NOT NULL, delta bigint NOT NULL)");
	must_exec(cc, "CREATE INDEX ON demo_ledger (subscription_id, applied_order)");
	must_exec(cc, "CREATE TABLE demo_naive (subscription_id text PRIMARY KEY, plan text NOT NULL, seats bigint NOT NULL)");
	if (opt.broker)
		broker_setup();
}

/* ---------------------------------------------------------------------
 * Statistics from ordering.stats, as deltas over the run
 * --------------------------------------------------------------------- */
typedef struct Stats
{
	bool		ok;
	long		consumed,
				applied,
				stale,
				duplicate,
				parked,
				drained,
				escalated,
				parked_current;
	int			nbuckets;
	long		buckets[NBUCKETS_MAX];
	long		bounds[NBUCKETS_MAX];
} Stats;

/* Parse a '{1,2,3}' bigint array literal. */
static int
parse_array(const char *s, long *out, int max)
{
	int			n = 0;

	if (*s == '{')
		s++;
	while (*s && *s != '}' && n < max)
	{
		char	   *end;

		if (strncmp(s, "NULL", 4) == 0)
		{
			out[n++] = -1;
			s += 4;
		}
		else
		{
			out[n++] = strtol(s, &end, 10);
			s = end;
		}
		if (*s == ',')
			s++;
	}
	return n;
}

/* Read ordering.stats for one consumer. */
static Stats
read_stats(PGconn *c, const char *consumer)
{
	Stats		s;
	const char *p[1] = {consumer};
	PGresult   *r;

	memset(&s, 0, sizeof(s));
	r = PQexecParams(c,
					 "SELECT events_consumed, events_applied, events_stale, events_duplicate, "
					 "events_parked, events_drained, gaps_escalated, parked_current, "
					 "reorder_distance_buckets, reorder_distance_bounds "
					 "FROM ordering.stats WHERE consumer = $1", 1, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
	{
		PQclear(r);
		return s;
	}
	s.ok = true;
	if (PQntuples(r) == 1)
	{
		long	   *f[] = {&s.consumed, &s.applied, &s.stale, &s.duplicate,
		&s.parked, &s.drained, &s.escalated, &s.parked_current};

		for (int i = 0; i < 8; i++)
			*f[i] = atol(PQgetvalue(r, 0, i));
		s.nbuckets = parse_array(PQgetvalue(r, 0, 8), s.buckets, NBUCKETS_MAX);
		parse_array(PQgetvalue(r, 0, 9), s.bounds, NBUCKETS_MAX);
	}
	PQclear(r);
	return s;
}

/* after - before, field by field (parked_current is a gauge: kept). */
static Stats
stats_delta(Stats a, Stats b)
{
	Stats		d = a;

	d.consumed -= b.consumed;
	d.applied -= b.applied;
	d.stale -= b.stale;
	d.duplicate -= b.duplicate;
	d.parked -= b.parked;
	d.drained -= b.drained;
	d.escalated -= b.escalated;
	if (b.nbuckets == a.nbuckets)
		for (int i = 0; i < a.nbuckets; i++)
			d.buckets[i] -= b.buckets[i];
	return d;
}

/* ---------------------------------------------------------------------
 * Settling: wait until everything sent has been applied
 * --------------------------------------------------------------------- */

/*
 * Republish the tails the consumers have not seen: resources whose consumer
 * progress (the ledger's position; the version billing holds) is below the
 * producer's last sequence number.  Returns how many
 * rows were put back.  Only called when the pipeline is idle.
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
						 "         THEN b.version ELSE p.position END, 0) AS done "
						 "  FROM unnest($1::text[], $2::bigint[]) AS t(r, l) "
						 "  LEFT JOIN demo_billing b ON t.r LIKE 'plan:%' "
						 "    AND b.subscription_id = substr(t.r, 6) "
						 "  LEFT JOIN ordering.positions p ON t.r LIKE 'seats:%' "
						 "    AND p.consumer = 'ledger' AND p.resource_id = t.r) t "
						 "WHERE t.done < t.l", 2, cp);
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
 * nothing parked, no open gap request.  A quiet pipeline that still lags
 * the producer gets its tails republished.  False on timeout.
 */
static bool
settle(PGconn *pc, PGconn *cc)
{
	double		deadline = now() + opt.timeout;
	int			quiet_rounds = 0;

	while (now() < deadline && !failed)
	{
		long		unpublished = query_long(pc, "SELECT count(*) FROM ordering.outbox WHERE published_at IS NULL");
		long		in_flight = GET(in_flight);
		long		parked = query_long(cc, "SELECT count(*) FROM ordering.parked WHERE consumer IN ('billing', 'ledger')");
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
static void
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
static bool
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
		printf("\nWith the extension (billing: %s, ledger: deliver)\n",
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
	return ok;
}

/* Print the reorder-distance histogram of one consumer. */
static void
print_histogram(const Stats *s)
{
	long		max = 1;

	for (int i = 0; i < s->nbuckets; i++)
		if (s->buckets[i] > max)
			max = s->buckets[i];
	for (int i = 0; i < s->nbuckets; i++)
	{
		char		label[32];
		int			bar = (int) (s->buckets[i] * 40 / max);

		if (i == s->nbuckets - 1 && (s->bounds[i] < 0 || i > 0))
		{
			if (s->bounds[i] < 0)
				snprintf(label, sizeof(label), "> %ld", i > 0 ? s->bounds[i - 1] : 0);
			else
				snprintf(label, sizeof(label), "<= %ld", s->bounds[i]);
		}
		else
			snprintf(label, sizeof(label), "<= %ld", s->bounds[i]);
		printf("    %-8s %8ld  ", label, s->buckets[i]);
		for (int k = 0; k < bar; k++)
			fputs("#", stdout);
		fputs("\n", stdout);
	}
}

/* Print the numbers of the run. */
static void
report(Stats billing, Stats ledger, double t_produce, double t_total)
{
	long		applied = GET(applied_plan) + GET(applied_seats);

	printf("\nThroughput\n");
	printf("  produced   %8ld events in %5.1f s  %8.0f events/s  (%ld rolled back, numbers given back)\n",
		   GET(produced), t_produce, GET(produced) / t_produce, GET(rolled_back));
	printf("  delivered  %8ld messages in %5.1f s %8.0f msg/s\n",
		   GET(delivered), t_total, GET(delivered) / t_total);
	printf("  applied    %8ld events         %8.0f events/s  (%ld plan changes, %ld ledger rows)\n",
		   applied, applied / t_total, GET(applied_plan), GET(applied_seats));
	printf("\nTransport (%s)\n", opt.broker ? "RabbitMQ" : "in-process");
	printf("  lost %ld, duplicated %ld, requeued %ld, refused (54000) %ld, retried %ld\n",
		   GET(lost), GET(duplicated), GET(requeued), GET(refused), GET(retried));
	printf("\nGaps\n");
	printf("  gap requests received on ordering_gap %ld, events republished %ld\n",
		   GET(gap_notifies), GET(republished));
	printf("  lost last events found by the end-of-run reconciliation: %ld republished\n",
		   GET(tail_republished));
	if (pause_started > 0)
		printf("  gap loop paused from %.1f s to %.1f s (the climb in the chart)\n",
			   pause_started, pause_ended > pause_started ? pause_ended : t_total);
	printf("  parked peak %ld (sampled every 100 ms), parked at the end %ld\n",
		   GET(parked_peak), GET(parked_now));

	if (!billing.ok || !ledger.ok)
	{
		printf("\nordering.stats is not available (is the library preloaded?)\n");
		return;
	}
	printf("\nordering.stats over the run\n");
	printf("  %-8s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "consumer", "consumed",
		   "applied", "stale", "duplicate", "parked", "drained", "escalated",
		   "parked_now", "stale %", "dup %");
	{
		Stats	   *ss[2] = {&billing, &ledger};
		const char *names[2] = {"billing", "ledger"};

		for (int i = 0; i < 2; i++)
		{
			Stats	   *s = ss[i];
			double		c = s->consumed > 0 ? s->consumed : 1;

			printf("  %-8s %9ld %9ld %9ld %9ld %9ld %9ld %9ld %10ld %8.2f%% %8.2f%%\n",
				   names[i], s->consumed, s->applied, s->stale, s->duplicate,
				   s->parked, s->drained, s->escalated, s->parked_current,
				   100.0 * s->stale / c, 100.0 * s->duplicate / c);
		}
	}
	printf("\n  reorder distance of early arrivals (ledger: seq - position)\n");
	print_histogram(&ledger);
}

/* ---------------------------------------------------------------------
 * Options
 * --------------------------------------------------------------------- */

/* --help */
static void
usage(FILE *f)
{
	fprintf(f,
			"Usage: ordering_demo --producer-dsn CONNINFO --consumer-dsn CONNINFO [OPTION]...\n"
			"\n"
			"Runs the seed scenario end to end: producers change plans and add seats,\n"
			"relays publish the outbox, a transport reorders, duplicates and loses\n"
			"messages, twelve consumers apply them with and without the extension, and\n"
			"the gap loop heals what was lost.  Prints a verification and exits 1 if a\n"
			"check fails.\n"
			"\n"
			"Databases (both need the ordering extension; the consumer database needs\n"
			"the library preloaded and listed in ordering.sweep_databases):\n"
			"  --dsn CONNINFO            both databases (producer and consumer in one)\n"
			"  --producer-dsn CONNINFO   the producer database\n"
			"  --consumer-dsn CONNINFO   the consumer database\n"
			"\n"
			"Workload:\n"
			"  --subscriptions N         subscriptions (default %d)\n"
			"  --events N                events to produce (default %d)\n"
			"  --producers N             producer connections (default %d)\n"
			"  --relays N                relay threads (default %d)\n"
			"  --consumers N             consumer workers (default %d)\n"
			"  --batch N                 rows per claim_unpublished (default %d)\n"
			"  --plan-share F            share of PlanChanged events, the rest SeatsAdded (default %.2f)\n"
			"  --hot-share F             share of events for the hottest 1%% of subscriptions (default %.2f)\n"
			"  --rollback F              share of producer transactions rolled back (default %.2f)\n"
			"  --flip F                  share of plan changes followed at once by another one\n"
			"                            of the same subscription (default %.2f)\n"
			"  --rate N                  events per second, all producers together; 0 = as\n"
			"                            fast as they go (default %d)\n"
			"\n"
			"Transport:\n"
			"  --broker amqp://[USER:PASS@]HOST:PORT   RabbitMQ instead of the in-process queue\n"
			"  --loss F                  share of messages lost, never delivered (default %.3f)\n"
			"  --duplicate F             share of messages delivered twice (default %.3f)\n"
			"  --window N                in-process: a consumer takes a random one of the\n"
			"                            first N waiting messages (default %d)\n"
			"  --requeue F               broker: share of deliveries requeued unprocessed (default %.3f)\n"
			"  --prefetch N              broker: unacked messages per consumer (default %d)\n"
			"\n"
			"Gap loop:\n"
			"  --pause-gap-loop A:B      pause the gap listener while the share of events\n"
			"                            produced is in [A, B) (default %.1f:%.1f; 0:0 = never)\n"
			"\n"
			"Run:\n"
			"  --timeout S               seconds to wait for the pipeline to drain (default %d)\n"
			"  --seed N                  random seed (default 0)\n"
			"  --samples FILE            write parked-events samples (every 100 ms) for the chart\n"
			"  --quiet                   no progress line\n"
			"  --check-options           only check the options (exit 2 if one is bad)\n"
			"  --state-consumer KIND     how billing applies PlanChanged: apply_if_newer (default)\n"
			"                            or newer_only (a plain upsert guarded by the\n"
			"                            ordering.newer_only trigger on demo_billing)\n"
			"  --without-extension       the checked consumers apply in arrival order without\n"
			"                            the extension: the verification must then fail\n"
			"  --help                    this text\n",
			opt.subscriptions, opt.events, opt.producers, opt.relays, opt.consumers,
			opt.batch, opt.plan_share, opt.hot_share, opt.rollback, opt.flip, opt.rate, opt.loss,
			opt.duplicate, opt.window, opt.requeue, opt.prefetch, opt.pause_from,
			opt.pause_to, opt.timeout);
}

/* Bad usage: say why, exit 2. */
static void
bad(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	fprintf(stderr, "ordering_demo: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nTry \"ordering_demo --help\".\n");
	va_end(ap);
	exit(2);
}

/* Parse an integer option in [lo, hi]. */
static int
int_arg(const char *name, const char *v, int lo, int hi)
{
	char	   *end;
	long		x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || *end || end == v || x < lo || x > hi)
		bad("--%s must be an integer from %d to %d, not \"%s\"", name, lo, hi, v);
	return (int) x;
}

/* Parse a share option in [0, 1]. */
static double
share_arg(const char *name, const char *v)
{
	char	   *end;
	double		x;

	errno = 0;
	x = strtod(v, &end);
	if (errno || *end || end == v || !(x >= 0 && x <= 1))
		bad("--%s must be a number from 0 to 1, not \"%s\"", name, v);
	return x;
}

/* Parse the command line into opt. */
static void
parse_options(int argc, char **argv)
{
	static struct option longopts[] = {
		{"dsn", required_argument, NULL, 'd'},
		{"producer-dsn", required_argument, NULL, 'P'},
		{"consumer-dsn", required_argument, NULL, 'C'},
		{"broker", required_argument, NULL, 'b'},
		{"subscriptions", required_argument, NULL, 's'},
		{"events", required_argument, NULL, 'e'},
		{"producers", required_argument, NULL, 'p'},
		{"relays", required_argument, NULL, 'r'},
		{"consumers", required_argument, NULL, 'c'},
		{"batch", required_argument, NULL, 'B'},
		{"plan-share", required_argument, NULL, 1},
		{"hot-share", required_argument, NULL, 2},
		{"rollback", required_argument, NULL, 3},
		{"loss", required_argument, NULL, 4},
		{"duplicate", required_argument, NULL, 5},
		{"window", required_argument, NULL, 6},
		{"requeue", required_argument, NULL, 7},
		{"prefetch", required_argument, NULL, 8},
		{"pause-gap-loop", required_argument, NULL, 9},
		{"timeout", required_argument, NULL, 10},
		{"seed", required_argument, NULL, 11},
		{"samples", required_argument, NULL, 12},
		{"quiet", no_argument, NULL, 'q'},
		{"check-options", no_argument, NULL, 13},
		{"flip", required_argument, NULL, 14},
		{"rate", required_argument, NULL, 15},
		{"without-extension", no_argument, NULL, 16},
		{"state-consumer", required_argument, NULL, 17},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	int			ch;
	bool		check_only = false;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
	{
		switch (ch)
		{
			case 'd':
				opt.producer_dsn = opt.consumer_dsn = optarg;
				break;
			case 'P':
				opt.producer_dsn = optarg;
				break;
			case 'C':
				opt.consumer_dsn = optarg;
				break;
			case 'b':
				if (strncmp(optarg, "amqp://", 7) != 0)
					bad("--broker must be an amqp:// URL, not \"%s\"", optarg);
				opt.broker = optarg;
				break;
			case 's':
				opt.subscriptions = int_arg("subscriptions", optarg, 1, 10000000);
				break;
			case 'e':
				opt.events = int_arg("events", optarg, 1, 100000000);
				break;
			case 'p':
				opt.producers = int_arg("producers", optarg, 1, MAX_THREADS);
				break;
			case 'r':
				opt.relays = int_arg("relays", optarg, 1, MAX_THREADS);
				break;
			case 'c':
				opt.consumers = int_arg("consumers", optarg, 1, MAX_THREADS);
				break;
			case 'B':
				opt.batch = int_arg("batch", optarg, 1, 10000);
				break;
			case 1:
				opt.plan_share = share_arg("plan-share", optarg);
				break;
			case 2:
				opt.hot_share = share_arg("hot-share", optarg);
				break;
			case 3:
				opt.rollback = share_arg("rollback", optarg);
				if (opt.rollback > 0.9)
					bad("--rollback must be at most 0.9");
				break;
			case 4:
				opt.loss = share_arg("loss", optarg);
				if (opt.loss > 0.5)
					bad("--loss must be at most 0.5 (each resend may be lost again)");
				break;
			case 5:
				opt.duplicate = share_arg("duplicate", optarg);
				break;
			case 6:
				opt.window = int_arg("window", optarg, 1, 100000000);
				break;
			case 7:
				opt.requeue = share_arg("requeue", optarg);
				if (opt.requeue > 0.9)
					bad("--requeue must be at most 0.9");
				break;
			case 8:
				opt.prefetch = int_arg("prefetch", optarg, 1, 65535);
				break;
			case 9:
				{
					char	   *colon = strchr(optarg, ':');
					char	   *end;

					if (!colon)
						bad("--pause-gap-loop must be A:B (shares from 0 to 1), not \"%s\"", optarg);
					*colon = '\0';
					opt.pause_from = strtod(optarg, &end);
					if (*end || end == optarg)
						bad("--pause-gap-loop must be A:B (shares from 0 to 1)");
					opt.pause_to = strtod(colon + 1, &end);
					if (*end || end == colon + 1 || opt.pause_from < 0 ||
						opt.pause_to > 1 || opt.pause_from > opt.pause_to)
						bad("--pause-gap-loop must be A:B with 0 <= A <= B <= 1");
					break;
				}
			case 10:
				opt.timeout = int_arg("timeout", optarg, 1, 86400);
				break;
			case 11:
				opt.seed = (unsigned) int_arg("seed", optarg, 0, 2147483647);
				break;
			case 12:
				opt.samples = optarg;
				break;
			case 'q':
				opt.quiet = true;
				break;
			case 13:
				check_only = true;
				break;
			case 14:
				opt.flip = share_arg("flip", optarg);
				break;
			case 15:
				opt.rate = int_arg("rate", optarg, 0, 100000000);
				break;
			case 16:
				opt.without_extension = true;
				break;
			case 17:
				if (strcmp(optarg, "newer_only") == 0)
					opt.newer_only = true;
				else if (strcmp(optarg, "apply_if_newer") == 0)
					opt.newer_only = false;
				else
					bad("--state-consumer must be apply_if_newer or newer_only, not \"%s\"", optarg);
				break;
			case 'h':
				usage(stdout);
				exit(0);
			default:
				if (optopt)
					bad("option needs a value or is unknown: %s", argv[optind - 1]);
				bad("unknown option: %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		bad("unexpected argument: %s", argv[optind]);
	if (check_only)
		exit(0);
	if (!opt.producer_dsn || !opt.consumer_dsn)
		bad("say which databases to use: --dsn, or --producer-dsn and --consumer-dsn");
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

	settled = settle(pc, cc);
	t_total = now() - t_start;
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
	load_truth(pc, cc);
	ok = verify(cc);
	report(stats_delta(b1, b0), stats_delta(l1, l0), t_produce, t_total);
	printf("\n%s\n", ok ? "RESULT: all checks passed" : "RESULT: FAILED");
	PQfinish(pc);
	PQfinish(cc);
	return ok ? 0 : 1;
}
