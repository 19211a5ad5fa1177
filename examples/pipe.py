#!/usr/bin/python3
"""A bad transport between a relay and a consumer: reorders, duplicates, drops.

    relay ... | pipe.py [--window N] [--duplicate P] [--drop P] [--seed S] | consumer ...

Reads the relay's JSON lines and writes them on in another order: it holds
up to N messages and sends a random one of them, and sends everything it
holds once its input has been quiet for 0.2 s.  A share P of the messages
is sent twice (the second copy later).  A share P is dropped, never sent:
only the first copy of an event, and only when a later event of the same
resource has been seen, so the consumer parks that later event and its gap
sweeper asks for the dropped one again (which then gets through).  At the
end it prints what it did on stderr.
"""
import argparse
import json
import os
import random
import select
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--window", type=int, default=50)
    ap.add_argument("--duplicate", type=float, default=0.05)
    ap.add_argument("--drop", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    held = []                   # (key, line) waiting to be sent
    highest = {}                # resource -> highest seq seen
    sent_max = {}               # resource -> highest seq sent
    handled = set()          # events sent or dropped before
    counts = dict.fromkeys(("in", "out", "dropped", "duplicated", "reordered"), 0)
    out = sys.stdout.buffer

    def send(i):
        (resource, seq), line = held.pop(i)
        if (resource, seq) not in handled and highest[resource] > seq \
                and rng.random() < args.drop:
            handled.add((resource, seq))
            counts["dropped"] += 1
            return
        handled.add((resource, seq))
        if seq < sent_max.get(resource, 0):
            counts["reordered"] += 1
        sent_max[resource] = max(seq, sent_max.get(resource, 0))
        out.write(line + b"\n")
        counts["out"] += 1
        if rng.random() < args.duplicate:
            counts["duplicated"] += 1
            held.insert(rng.randrange(len(held) + 1), ((resource, seq), line))

    def send_all():
        while held:
            send(rng.randrange(len(held)))
        out.flush()

    fd = sys.stdin.fileno()
    pending = b""
    while True:
        if not select.select([fd], [], [], 0.2)[0]:
            send_all()                  # quiet input: nothing is held back
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            msg = json.loads(line)
            key = (msg["resource_id"], msg["seq"])
            highest[key[0]] = max(key[1], highest.get(key[0], 0))
            held.append((key, line))
            counts["in"] += 1
            while len(held) > args.window:
                send(rng.randrange(len(held)))
        out.flush()
    send_all()
    print("pipe: " + ", ".join(f"{v} {k}" for k, v in counts.items()), file=sys.stderr)


if __name__ == "__main__":
    main()
