/*-------------------------------------------------------------------------
 *
 * transport.c
 *	  Messages and the in-process transport: a queue that reorders, and
 *	  the consumer loop over it.
 *
 * A message is one outbox row as the relay published it.  The in-process
 * queue hands out a random one of the first `window` waiting messages, so
 * later messages overtake earlier ones; duplicates are pushed as a second
 * copy; lost messages are never pushed.
 *
 * Locking: queue_mu protects queue_buf, queue_head, queue_len and
 * queue_cap; queue_cv is signalled on every push.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demo.h"

static Msg **queue_buf;
static size_t queue_head,
			queue_len,
			queue_cap;
static pthread_mutex_t queue_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cv = PTHREAD_COND_INITIALIZER;

/* Copy a message. */
Msg *
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
void
msg_free(Msg *m)
{
	free(m->resource);
	free(m->seq);
	free(m->type);
	free(m->payload);
	free(m);
}

/* Append to the in-process queue (caller holds no lock). */
void
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

/* Consumer thread over the in-process queue. */
void
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
