#!/usr/bin/env python3
"""A relay for bench/wakeup.sh: claims, marks published, and records for
every claimed event the time from its producer's commit to the moment the
claim returned it, measured on the server's clock (commit timestamps need
track_commit_timestamp = on).

    wakeup_relay.py DSN MODE SECONDS POLL_MS REPLICATED

MODE poll: claim every POLL_MS milliseconds.  MODE notify: LISTEN on
ordering_outbox, claim when woken, and every POLL_MS as the fallback.  Each
wake-up claims until a claim comes back short of a full batch.
REPLICATED: true to claim with replicated => true.  Prints one latency in
milliseconds per line.
"""
import select
import sys
import time

import psycopg2

BATCH = 100
CHANNEL = "ordering_outbox"
CLAIM = """
SELECT c.id, 1000 * extract(epoch FROM clock_timestamp() - pg_xact_commit_timestamp(o.xmin))
  FROM ordering.claim_unpublished(%s, replicated => %s) c
  JOIN ordering.outbox o ON o.id = c.id
"""


def main():
    dsn, mode, seconds, poll_ms, replicated = sys.argv[1:6]
    seconds, poll_s = float(seconds), int(poll_ms) / 1000.0
    replicated = replicated == "true"
    relay = psycopg2.connect(dsn)
    listener = None
    if mode == "notify":
        listener = psycopg2.connect(dsn)
        listener.autocommit = True
        listener.cursor().execute("LISTEN " + CHANNEL)
    latencies = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if listener is None:
            time.sleep(poll_s)
        else:
            if select.select([listener], [], [], poll_s) != ([], [], []):
                listener.poll()
                listener.notifies.clear()
        while True:
            with relay.cursor() as cur:
                cur.execute(CLAIM, (BATCH, replicated))
                rows = cur.fetchall()
                if rows:
                    cur.execute("SELECT ordering.mark_published(%s)", ([r[0] for r in rows],))
            relay.commit()
            latencies.extend(float(r[1]) for r in rows)
            if len(rows) < BATCH:
                break
    print("\n".join("%.3f" % x for x in latencies))


if __name__ == "__main__":
    main()
