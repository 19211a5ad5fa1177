/*-------------------------------------------------------------------------
 *
 * report.c
 *	  What the run shows: the sampler (parked events every 100 ms for the
 *	  chart, and the progress line), ordering.stats over the run, and the
 *	  report.
 *
 * The sampler is a thread of its own; the rest runs in the main thread at
 * the end of the run.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demo.h"

/* ---------------------------------------------------------------------
 * Sampler: parked events every 100 ms (for the chart) and a progress line.
 * --------------------------------------------------------------------- */

/*
 * Parked events, of which behind a dead letter, and dead letters; all -1
 * when the query fails.
 */
static void
sample(PGconn *c, long *parked, long *behind, long *dead)
{
	PGresult   *r = PQexec(c,
						   "SELECT count(*), count(*) FILTER (WHERE p.seq > o.blocked_at), "
						   "       (SELECT count(*) FROM ordering.dead_letter_events "
						   "         WHERE consumer = 'ledger') "
						   "FROM ordering.parked p "
						   "LEFT JOIN ordering.positions o USING (consumer, resource_id) "
						   "WHERE p.consumer IN ('billing', 'ledger')");
	bool		ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;

	*parked = ok ? atol(PQgetvalue(r, 0, 0)) : -1;
	*behind = ok ? atol(PQgetvalue(r, 0, 1)) : -1;
	*dead = ok ? atol(PQgetvalue(r, 0, 2)) : -1;
	PQclear(r);
}

/* Sampler thread. */
void *
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
		fprintf(f, "# seconds parked produced delivered gap_loop_paused behind_dead_letters\n");
	}
	while (!stop_all)
	{
		double		t = now() - t_start;
		long		parked,
					behind,
					dead;

		sample(c, &parked, &behind, &dead);

		if (parked >= 0)
		{
			__atomic_store_n(&cnt.parked_now, parked, __ATOMIC_RELAXED);
			if (parked > GET(parked_peak))
				__atomic_store_n(&cnt.parked_peak, parked, __ATOMIC_RELAXED);
		}
		if (dead >= 0)
			__atomic_store_n(&cnt.dead_now, dead, __ATOMIC_RELAXED);
		if (f)
			fprintf(f, "%.2f %ld %ld %ld %d %ld\n", t, parked, GET(produced),
					GET(delivered), gap_paused ? 1 : 0, behind);
		if (!opt.quiet && t - last_progress >= (tty ? 0.25 : 2.0))
		{
			fprintf(stderr, "%s[%5.1fs] produced %ld/%d  delivered %ld  lost %ld  dup %ld  "
					"parked %ld  dead %ld  gaps %ld  republished %ld%s%s",
					tty ? "\r" : "", t, GET(produced), opt.events, GET(delivered),
					GET(lost), GET(duplicated), parked, dead, GET(gap_notifies),
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
 * Statistics from ordering.stats, as deltas over the run
 * --------------------------------------------------------------------- */

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
Stats
read_stats(PGconn *c, const char *consumer)
{
	Stats		s;
	const char *p[1] = {consumer};
	PGresult   *r;

	memset(&s, 0, sizeof(s));
	r = PQexecParams(c,
					 "SELECT events_consumed, events_applied, events_stale, events_duplicate, "
					 "events_parked, events_drained, gaps_escalated, parked_current, "
					 "reorder_distance_buckets, reorder_distance_bounds, events_dead_lettered "
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
		s.dead_lettered = atol(PQgetvalue(r, 0, 10));
	}
	PQclear(r);
	return s;
}

/* after - before, field by field (parked_current is a gauge: kept). */
Stats
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
	d.dead_lettered -= b.dead_lettered;
	if (b.nbuckets == a.nbuckets)
		for (int i = 0; i < a.nbuckets; i++)
			d.buckets[i] -= b.buckets[i];
	return d;
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
void
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
	reconcile_report();
	if (pause_started > 0)
		printf("  gap loop paused from %.1f s to %.1f s (the climb in the chart)\n",
			   pause_started, pause_ended > pause_started ? pause_ended : t_total);
	printf("  parked peak %ld (sampled every 100 ms), parked at the end %ld\n",
		   GET(parked_peak), GET(parked_now));
	dead_letters_report();

	if (!billing.ok || !ledger.ok)
	{
		printf("\nordering.stats is not available (is the library preloaded?)\n");
		return;
	}
	printf("\nordering.stats over the run\n");
	printf("  %-8s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "consumer", "consumed",
		   "applied", "stale", "duplicate", "parked", "drained", "escalated",
		   "parked_now", "dead", "stale %", "dup %");
	{
		Stats	   *ss[2] = {&billing, &ledger};
		const char *names[2] = {"billing", "ledger"};

		for (int i = 0; i < 2; i++)
		{
			Stats	   *s = ss[i];
			double		c = s->consumed > 0 ? s->consumed : 1;

			printf("  %-8s %9ld %9ld %9ld %9ld %9ld %9ld %9ld %10ld %9ld %8.2f%% %8.2f%%\n",
				   names[i], s->consumed, s->applied, s->stale, s->duplicate,
				   s->parked, s->drained, s->escalated, s->parked_current,
				   s->dead_lettered, 100.0 * s->stale / c, 100.0 * s->duplicate / c);
		}
	}
	printf("\n  reorder distance of early arrivals (ledger: seq - position)\n");
	print_histogram(&ledger);
}
