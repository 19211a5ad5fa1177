/*-------------------------------------------------------------------------
 *
 * demo.h
 *	  What the files of the demo program share: the options, the run's
 *	  counters and flags, the message, and what each file offers the others.
 *
 *	  main.c       setup of the demo tables, the threads, the outcome
 *	  options.c    the command line
 *	  util.c       time, random numbers, memory, libpq calls that must work
 *	  transport.c  the in-process queue (reorders) and its consumer loop
 *	  broker.c     RabbitMQ: publish, and the consumer loop over it
 *	  workers.c    producers, relays, consumers, the gap listener
 *	  dead_letters.c  poison events, the ledger's handler, the operator's
 *	               fix and retry of the dead letters at the end
 *	  verify.c     settling, and the checks against the producer's truth
 *	  report.c     the sampler (chart data, progress), statistics, report
 *
 * Threads and locking.  Each thread owns its database connections (libpq
 * connections are not shared) and, in broker mode, its own AMQP connection.
 * Shared state: the in-process queue (one mutex + condition variable, in
 * transport.c), the counters in cnt, changed and read only through ADD and
 * GET (__atomic builtins), and a few volatile flags, each written by one
 * thread and polled by the others.  opt is written once, before any thread
 * starts.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ORDERING_DEMO_H
#define ORDERING_DEMO_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <libpq-fe.h>

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
	int			poison;			/* poison SeatsAdded events to inject */
} Options;

extern Options opt;

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
	long		dead_now;		/* dead letters, last sample */
	long		poisoned;		/* poison events committed */
	long		errors;
} Counters;

extern Counters cnt;
extern volatile int stop_producing;
extern volatile int stop_all;
extern volatile int failed;
extern char suffix[32];		/* subscription id suffix for runs after the first */
extern char resource_re[64];	/* regex matching this run's resource ids */
extern double t_start;

#define ADD(field, n) __atomic_add_fetch(&cnt.field, (n), __ATOMIC_RELAXED)
#define GET(field) __atomic_load_n(&cnt.field, __ATOMIC_RELAXED)

/* the gap listener's pause (workers.c), shown by the sampler and the report */
extern volatile int gap_paused;
extern double pause_started,
			pause_ended;

/* A message: one outbox row as the relay published it. */
typedef struct Msg
{
	char	   *resource;
	char	   *seq;
	char	   *type;
	char	   *payload;
} Msg;

typedef enum
{
	APPLY_DONE,					/* committed: ack */
	APPLY_REQUEUE				/* refused for now: requeue */
} ApplyResult;

/* A connection and channel to the broker (broker.c). */
typedef struct Broker Broker;

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
				dead_lettered,
				parked_current;
	int			nbuckets;
	long		buckets[NBUCKETS_MAX];
	long		bounds[NBUCKETS_MAX];
} Stats;

/* options.c */
extern void parse_options(int argc, char **argv);

/* util.c */
extern double now(void);
extern void sleep_ms(int ms);
extern uint64_t rnd(uint64_t *s);
extern double rnd01(uint64_t *s);
extern void *xrealloc(void *p, size_t n);
extern void *xmalloc(size_t n);
extern void vcomplain(const char *before, const char *fmt, va_list ap,
					  const char *after);
extern void fail(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern PGconn *connect_db(const char *dsn);
extern PGresult *must(PGconn *c, const char *sql);
extern void must_exec(PGconn *c, const char *sql);
extern PGresult *must_params(PGconn *c, const char *sql, int n, const char *const *vals);
extern long query_long(PGconn *c, const char *sql);
extern void prepare(PGconn *c, const char *name, const char *sql, int nparams);
extern const char *sqlstate(const PGresult *r);

/* transport.c */
extern Msg *msg_new(const char *resource, const char *seq, const char *type,
					const char *payload);
extern void msg_free(Msg *m);
extern void queue_push(Msg *m);
extern void consume_inprocess(PGconn *c, uint64_t *rs);

/* broker.c */
extern Broker *broker_open(void);
extern void broker_close(Broker *b);
extern void broker_setup(void);
extern void broker_publish(Broker *b, const Msg *m, int copies);
extern void consume_broker(PGconn *c, uint64_t *rs);

/* workers.c */
extern void *producer_main(void *arg);
extern void *relay_main(void *arg);
extern void *consumer_main(void *arg);
extern void *gap_main(void *arg);

/* apply.c */
extern void apply_prepare(PGconn *c);
extern ApplyResult apply(PGconn *c, const Msg *m);

/* dead_letters.c */
extern void dead_letters_setup(PGconn *cc);
extern bool poison_pick(int n);
extern long dead_letters_fix_and_retry(PGconn *cc);
extern bool dead_letters_verify(PGconn *cc,
								bool (*check) (PGconn *, const char *, const char *));
extern void dead_letters_report(void);

/* verify.c */
extern bool settle(PGconn *pc, PGconn *cc, const char *when);
extern void load_truth(PGconn *pc, PGconn *cc);
extern bool verify(PGconn *cc);
extern void reconcile_report(void);

/* report.c */
extern void *sampler_main(void *arg);
extern Stats read_stats(PGconn *c, const char *consumer);
extern Stats stats_delta(Stats a, Stats b);
extern void report(Stats billing, Stats ledger, double t_produce, double t_total);

#endif							/* ORDERING_DEMO_H */
