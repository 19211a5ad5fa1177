/*-------------------------------------------------------------------------
 *
 * apply.c
 *	  Applying one delivery in the consumer database: the statements each
 *	  consumer runs (with the extension, with the newer_only trigger, or
 *	  naively) and the retry of serialization failures.
 *
 * The transports (transport.c, broker.c) hand each message here; the
 * consumer threads (workers.c) prepare the statements on their connection
 * first.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "demo.h"

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
 * SeatsAdded: deliver() calls the ledger consumer's handler
 * demo_apply_seats on each event ready to apply, in order, in this same
 * transaction; with on_error => 'dead_letter' an event the handler rejects
 * becomes the dead letter of its subscription and the call returns
 * normally (dead_letters.c).  The naive consumer adds the delta as it
 * arrives.
 */
static const char *SQL_APPLY_SEATS =
"WITH p AS (SELECT $3::jsonb AS j), "
"d AS (SELECT ordering.deliver('ledger', $1, $2::bigint, $3::jsonb, "
"             'demo_apply_seats(text, bigint, jsonb)', on_error => 'dead_letter') AS ran), "
"n AS (INSERT INTO demo_naive (subscription_id, plan, seats) "
"      SELECT p.j->>'subscription_id', 'free', (p.j->>'delta')::bigint FROM p "
"      ON CONFLICT (subscription_id) DO UPDATE "
"      SET seats = demo_naive.seats + EXCLUDED.seats RETURNING 1) "
"SELECT ran FROM d";

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

/* Apply one delivery, retrying serialization failures and deadlocks. */
ApplyResult
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

/* Prepare the statements apply() runs on a consumer's connection. */
void
apply_prepare(PGconn *c)
{
	prepare(c, "apply_plan", opt.without_extension ? SQL_NAIVE_PLAN :
			opt.newer_only ? SQL_NEWER_ONLY_PLAN : SQL_APPLY_PLAN, 3);
	prepare(c, "apply_seats", opt.without_extension ? SQL_NAIVE_SEATS : SQL_APPLY_SEATS, 3);
}
