/*-------------------------------------------------------------------------
 *
 * util.c
 *	  Small utilities: time, random numbers, memory, failing the run, and
 *	  libpq calls that must succeed.
 *
 * No shared state but the flags fail() sets (atomic stores).
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demo.h"

/* Seconds since an arbitrary epoch, monotonic. */
double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sleep for ms milliseconds. */
void
sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* xorshift64*: a per-thread random generator. */
uint64_t
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
double
rnd01(uint64_t *s)
{
	return (rnd(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* realloc or exit: the demo cannot go on without memory. */
void *
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
void *
xmalloc(size_t n)
{
	return xrealloc(NULL, n);
}

/* Print "ordering_demo: " and a message to stderr, between before and after. */
void
vcomplain(const char *before, const char *fmt, va_list ap, const char *after)
{
	fprintf(stderr, "%sordering_demo: ", before);
	vfprintf(stderr, fmt, ap);
	fputs(after, stderr);
}

/* Print an error and flag the run as failed. */
void
fail(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vcomplain("\n", fmt, ap, "\n");
	va_end(ap);
	__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&stop_all, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&stop_producing, 1, __ATOMIC_RELAXED);
}

/* Connect or exit. */
PGconn *
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

/* The result of sql on c if it succeeded; otherwise say why and exit. */
static PGresult *
succeeded(PGconn *c, PGresult *r, const char *sql)
{
	ExecStatusType st = PQresultStatus(r);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
	{
		fprintf(stderr, "ordering_demo: query failed: %s\n%s\n",
				PQerrorMessage(c), sql);
		exit(1);
	}
	return r;
}

/* Run a command that must succeed; exit on error. */
PGresult *
must(PGconn *c, const char *sql)
{
	return succeeded(c, PQexec(c, sql), sql);
}

/* Run a command and discard its result. */
void
must_exec(PGconn *c, const char *sql)
{
	PQclear(must(c, sql));
}

/* Run a parameterised query that must succeed. */
PGresult *
must_params(PGconn *c, const char *sql, int n, const char *const *vals)
{
	return succeeded(c, PQexecParams(c, sql, n, NULL, vals, NULL, NULL, 0), sql);
}

/* One bigint from a query, or -1 when the query fails. */
long
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
void
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
const char *
sqlstate(const PGresult *r)
{
	const char *s = PQresultErrorField(r, PG_DIAG_SQLSTATE);

	return s ? s : "";
}
