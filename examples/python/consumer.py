#!/usr/bin/python3
"""Step consumer: apply the events read as JSON lines from stdin once and in order.

    consumer.py CONSUMER_DSN [--dead-letter]

Each message goes through ordering.deliver in its own transaction, and the
rows deliver returns (the event, then the parked events it lets through) are
applied in that transaction: duplicates and stale events return nothing,
early events park until their predecessors arrive.

With --dead-letter (ordering 1.1), deliver calls the handler
example_apply_step itself; when it fails for a reason retrying will not fix,
the event becomes its resource's dead letter and only that resource waits.
"""
import json
import sys

import psycopg
from psycopg import errors
from psycopg.types.json import Jsonb

CONSUMER = "ledger"
HANDLER = "example_apply_step(text,bigint,jsonb)"


def apply_step(conn, resource_id, seq, payload):
    """The application's work for one event, in the caller's transaction."""
    conn.execute("INSERT INTO example_ledger (resource_id, seq, payload)"
                 " VALUES (%s, %s, %s)", (resource_id, seq, Jsonb(payload)))


def deliver(conn, msg):
    """Runs today: deliver returns the rows to apply, the client applies them."""
    with conn.transaction():
        rows = conn.execute(
            "SELECT seq, payload FROM ordering.deliver(%s, %s, %s, %s)",
            (CONSUMER, msg["resource_id"], msg["seq"], Jsonb(msg["payload"]))).fetchall()
        for seq, payload in rows:
            apply_step(conn, msg["resource_id"], seq, payload)


def deliver_or_dead_letter(conn, msg):
    """Needs ordering 1.1: deliver calls the handler, a poison event is set aside."""
    with conn.transaction():
        conn.execute(
            "SELECT ordering.deliver(%s, %s, %s, %s, %s::regprocedure,"
            "                        on_error => 'dead_letter')",
            (CONSUMER, msg["resource_id"], msg["seq"], Jsonb(msg["payload"]), HANDLER))


def main():
    consumer_dsn = sys.argv[1]
    handle = deliver_or_dead_letter if "--dead-letter" in sys.argv[2:] else deliver
    refused = []  # a pipe cannot nack: keep refused messages for later
    with psycopg.connect(consumer_dsn, autocommit=True) as conn:
        for line in sys.stdin:
            pending, refused = refused + [json.loads(line)], []
            for msg in pending:
                while True:
                    try:
                        handle(conn, msg)
                    except errors.TransactionRollback:
                        continue  # serialization failure or deadlock: try again
                    except errors.ProgramLimitExceeded:
                        refused.append(msg)  # too many parked: later
                    break
    if refused:
        sys.exit(f"consumer: {len(refused)} message(s) still refused at the end")


if __name__ == "__main__":
    main()
