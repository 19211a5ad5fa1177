/*-------------------------------------------------------------------------
 *
 * broker.c
 *	  The broker transport: RabbitMQ through librabbitmq.  Relays publish
 *	  to one queue; consumers take deliveries with prefetch and manual acks.
 *
 * Each thread opens its own Broker (connection + channel 1); none is
 * shared.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <amqp.h>
#include <amqp_tcp_socket.h>

#include "demo.h"

#define QUEUE_NAME "ordering_demo"

struct Broker
{
	amqp_connection_state_t conn;
};

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

/*
 * Open a connection and channel 1 to the broker of --broker; NULL (and the
 * run failed) if that fails.
 */
Broker *
broker_open(void)
{
	struct amqp_connection_info ci;
	char	   *url = strdup(opt.broker);
	amqp_socket_t *sock;
	int			rc;
	Broker	   *b;

	amqp_default_connection_info(&ci);
	if (amqp_parse_url(url, &ci) != AMQP_STATUS_OK)
	{
		fail("cannot parse broker URL \"%s\"", opt.broker);
		free(url);
		return NULL;
	}
	b = xmalloc(sizeof(Broker));
	b->conn = amqp_new_connection();
	sock = amqp_tcp_socket_new(b->conn);
	rc = amqp_socket_open(sock, ci.host, ci.port);
	if (rc != AMQP_STATUS_OK)
	{
		fail("cannot connect to the broker at %s:%d: %s", ci.host, ci.port,
			 amqp_error_string2(rc));
		free(url);
		return NULL;
	}
	if (!amqp_ok(amqp_login(b->conn, ci.vhost, 0, 131072, 0,
							AMQP_SASL_METHOD_PLAIN, ci.user, ci.password),
				 "login"))
	{
		free(url);
		return NULL;
	}
	free(url);
	amqp_channel_open(b->conn, 1);
	if (!amqp_ok(amqp_get_rpc_reply(b->conn), "channel.open"))
		return NULL;
	return b;
}

/* Close a broker connection. */
void
broker_close(Broker *b)
{
	amqp_channel_close(b->conn, 1, AMQP_REPLY_SUCCESS);
	amqp_connection_close(b->conn, AMQP_REPLY_SUCCESS);
	amqp_destroy_connection(b->conn);
	free(b);
}

/* Declare and purge the demo queue. */
void
broker_setup(void)
{
	Broker	   *b = broker_open();

	if (!b)
		exit(1);
	amqp_queue_declare(b->conn, 1, amqp_cstring_bytes(QUEUE_NAME), 0, 0, 0, 0,
					   amqp_empty_table);
	if (!amqp_ok(amqp_get_rpc_reply(b->conn), "queue.declare"))
		exit(1);
	amqp_queue_purge(b->conn, 1, amqp_cstring_bytes(QUEUE_NAME));
	if (!amqp_ok(amqp_get_rpc_reply(b->conn), "queue.purge"))
		exit(1);
	broker_close(b);
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

/*
 * Publish copies (1 or 2) of a message to the demo queue; a refused
 * publish fails the run.
 */
void
broker_publish(Broker *b, const Msg *m, int copies)
{
	size_t		len;
	char	   *body = msg_encode(m, &len);
	amqp_bytes_t bytes = {len, body};

	for (int k = 0; k < copies; k++)
	{
		int			rc = amqp_basic_publish(b->conn, 1, amqp_empty_bytes,
											amqp_cstring_bytes(QUEUE_NAME),
											0, 0, NULL, bytes);

		if (rc != AMQP_STATUS_OK)
			fail("relay: publish failed: %s", amqp_error_string2(rc));
	}
	free(body);
}

/*
 * Consumer thread over RabbitMQ: prefetch > 1, manual acks, and a share of
 * deliveries sent back with a requeue before they are looked at.
 */
void
consume_broker(PGconn *c, uint64_t *rs)
{
	Broker	   *b = broker_open();

	if (!b)
		return;
	amqp_basic_qos(b->conn, 1, 0, (uint16_t) opt.prefetch, 0);
	if (!amqp_ok(amqp_get_rpc_reply(b->conn), "basic.qos"))
		return;
	amqp_basic_consume(b->conn, 1, amqp_cstring_bytes(QUEUE_NAME), amqp_empty_bytes,
					   0, 0, 0, amqp_empty_table);
	if (!amqp_ok(amqp_get_rpc_reply(b->conn), "basic.consume"))
		return;
	while (!stop_all)
	{
		amqp_envelope_t env;
		struct timeval tv = {0, 200000};
		amqp_rpc_reply_t res;
		Msg		   *m;

		amqp_maybe_release_buffers(b->conn);
		res = amqp_consume_message(b->conn, &env, &tv, 0);
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
			amqp_basic_nack(b->conn, 1, env.delivery_tag, 0, 1);
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
			rc = amqp_basic_publish(b->conn, 1, amqp_empty_bytes,
									amqp_cstring_bytes(QUEUE_NAME), 0, 0, NULL,
									env.message.body);
			if (rc != AMQP_STATUS_OK)
				fail("consumer: republish to the queue failed: %s",
					 amqp_error_string2(rc));
			amqp_basic_ack(b->conn, 1, env.delivery_tag, 0);
			sleep_ms(5);
		}
		else
		{
			amqp_basic_ack(b->conn, 1, env.delivery_tag, 0);
			__atomic_sub_fetch(&cnt.in_flight, 1, __ATOMIC_RELAXED);
		}
		msg_free(m);
		amqp_destroy_envelope(&env);
	}
	broker_close(b);
}
