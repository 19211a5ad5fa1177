"""Replays a script the model-based tester printed, with one connection per
session, and prints what each statement gives next to what the tester saw.

    python3 test/model/replay.py 'host=/tmp/sock dbname=empty' failing.sql

The database must be empty (the script creates the extension and the
tables).  Statements are sent in the script's order; one whose backend
waits for a lock is left waiting while the next ones run, as the tester
did.  "--@ operation" lines (a killed backend, a restart, a dump and
restore) are printed, not done: do them by hand where the script says so.
"""

import sys
import time

import psycopg

sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from driver import Session  # noqa: E402


class Target:
    def __init__(self, dsn):
        self.dsn = dsn

    def connect(self, dbname=None):
        return psycopg.connect(self.dsn, autocommit=True)


def statements(text):
    """(session, sql, copy rows, note) in script order; the head of the
    script (the schema) is session "setup"."""
    out = []
    session, note, buf, copy_rows = "setup", "", [], None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("--@ "):
            if buf:
                out.append((session, "\n".join(buf), copy_rows, note))
                buf, copy_rows = [], None
            head = line[4:].split("  ", 1)
            session = head[0]
            note = head[1] if len(head) > 1 else ""
            if session.startswith("operation"):
                out.append(("operation", session, None, note))
                session = "setup"
            continue
        if line.startswith("\\") or (not buf and (line.startswith("--") or not line.strip())):
            continue
        buf.append(line)
        if line.rstrip().endswith(";") and session != "setup":
            sql = "\n".join(buf)
            if sql.upper().startswith("COPY ") and sql.rstrip(";").endswith("stdin"):
                copy_rows = []
                while lines[i] != "\\.":
                    copy_rows.append([None if v == "\\N" else v for v in lines[i].split("\t")])
                    i += 1
                i += 1
            out.append((session, sql, copy_rows, note))
            buf, copy_rows = [], None
    if buf:
        out.append((session, "\n".join(buf), copy_rows, note))
    return out


def main():
    dsn, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        steps = statements(f.read())
    target = Target(dsn)
    setup = "\n".join(sql for s, sql, _, _ in steps if s == "setup")
    with target.connect() as c:
        c.execute(setup)
    sessions = {}
    checker = target.connect()
    for session, sql, copy_rows, note in steps:
        if session == "setup":
            continue
        if session == "operation":
            print(f"-- {sql} (not done here)  {note}")
            continue
        s = sessions.get(session)
        if s is None:
            s = sessions[session] = Session(session, target, None)
            s.connect()
        s.send(sql, copy_rows)
        while True:
            res = s.poll()
            if res is not None:
                break
            waits = checker.execute("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted)",
                                    (s.pid,)).fetchone()[0]
            if waits:
                break
            time.sleep(0.002)
        print(f"{session}: {sql.splitlines()[0][:100]}")
        print(f"    tester: {note}")
        print(f"    now:    {res!r}" if res is not None else "    now:    waits for a lock")
        for other in sessions.values():
            if other is not s and other.pending is not None:
                done = other.poll()
                if done is not None:
                    print(f"    {other.name}'s waiting statement finished: {done!r}")


if __name__ == "__main__":
    main()
