#!/usr/bin/python3
"""Relay: publish the producer's outbox as JSON lines on stdout, and answer gap requests.

    relay.py PRODUCER_DSN CONSUMER_DSN

Each batch is claimed, written and marked published in one transaction: a
relay that dies before its commit leaves the rows unpublished, and they are
sent again (at least once; the consumer drops the duplicates).  A thread
LISTENs on ordering_gap in the consumer database and puts the missing events
back in the outbox with ordering.republish.  SIGTERM or SIGINT: finish the
batch and stop.
"""
import json
import os
import signal
import sys
import threading

import psycopg

BATCH = 100
stopping = threading.Event()


def publish(producer_dsn):
    """claim_unpublished -> write -> mark_published, until stopped."""
    with psycopg.connect(producer_dsn, autocommit=True) as conn:
        while not stopping.is_set():
            with conn.transaction():
                rows = conn.execute(
                    "SELECT id, resource_id, seq, event_type, payload"
                    "  FROM ordering.claim_unpublished(%s)", (BATCH,)).fetchall()
                for _, resource_id, seq, event_type, payload in rows:
                    print(json.dumps({"resource_id": resource_id, "seq": seq,
                                      "event_type": event_type, "payload": payload}))
                sys.stdout.flush()  # handed over before the commit says so
                if rows:
                    conn.execute("SELECT ordering.mark_published(%s::bigint[])",
                                 ([row[0] for row in rows],))
            if not rows:
                stopping.wait(0.05)


def answer_gaps(producer_dsn, consumer_dsn):
    """For each gap the consumer's sweeper reports, republish the missing events."""
    try:
        with psycopg.connect(consumer_dsn, autocommit=True) as listener, \
                psycopg.connect(producer_dsn, autocommit=True) as producer:
            listener.execute("LISTEN ordering_gap")
            for notify in listener.notifies():
                gap = json.loads(notify.payload)
                count = producer.execute(
                    "SELECT ordering.republish(%s, %s, %s)",
                    (gap["resource_id"], gap["missing_from"], gap["missing_to"])).fetchone()[0]
                print(f"relay: republished {count} event(s) of {gap['resource_id']}",
                      file=sys.stderr, flush=True)
    except Exception as e:  # a relay that no longer answers gaps must not go on
        print(f"relay: {e}", file=sys.stderr, flush=True)
        os._exit(1)


def main():
    producer_dsn, consumer_dsn = sys.argv[1:3]
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    threading.Thread(target=answer_gaps, args=(producer_dsn, consumer_dsn),
                     daemon=True).start()
    publish(producer_dsn)


if __name__ == "__main__":
    main()
