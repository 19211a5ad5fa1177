"""The driver of the model-based tester: a throwaway server, the sessions
that talk to it one statement at a time, and the log that replays them.

A statement is sent to its session's thread; the driver then waits until
it has finished or its backend waits for a lock (an ungranted row of
pg_locks): that is how the tester tells "blocked" from "done" without
sleeping for a guessed time.  Everything sent is written to the log, with
the outcome the model expected and the one the server gave, so that a
failing example prints as a SQL script that replays it.
"""

import os
import queue
import shutil
import subprocess
import threading
import time

import psycopg

HERE = os.path.dirname(os.path.abspath(__file__))

SERVER_CONF = """
shared_preload_libraries = 'ordering'
max_prepared_transactions = 10
listen_addresses = ''
unix_socket_directories = '{sock}'
fsync = off
full_page_writes = off
ordering.max_parked_per_resource = {max_parked}
ordering.max_consumers = 100000
ordering.max_streams = 100000
ordering.gap_deadline = '1s'
deadlock_timeout = '100ms'
log_min_messages = warning
"""


class Server:
    """A server of its own in `root`, on a Unix socket there."""

    def __init__(self, root, bindir, max_parked):
        self.root = root
        self.bindir = bindir
        self.data = os.path.join(root, "data")
        self.sock = os.path.join(root, "sock")
        self.logfile = os.path.join(root, "server.log")
        self.max_parked = max_parked

    def bin(self, name):
        return os.path.join(self.bindir, name)

    def run(self, *args, **kw):
        return subprocess.run([self.bin(args[0])] + list(args[1:]), check=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, **kw)

    def init(self):
        shutil.rmtree(self.root, ignore_errors=True)
        os.makedirs(self.sock)
        self.run("initdb", "-D", self.data, "-A", "trust", "-U", "postgres",
                 "--no-sync")
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write(SERVER_CONF.format(sock=self.sock, max_parked=self.max_parked))
        self.start()

    def start(self):
        self.run("pg_ctl", "-D", self.data, "-l", self.logfile, "-w", "start")

    def stop(self, mode="fast"):
        self.run("pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def restart_immediate(self):
        self.stop("immediate")
        self.start()

    def dsn(self, dbname):
        return f"host={self.sock} dbname={dbname} user=postgres"

    def connect(self, dbname="postgres"):
        return psycopg.connect(self.dsn(dbname), autocommit=True)

    def dump_restore(self, src, dst):
        """The documented steps of docs/restore.md for a custom dump."""
        dump = os.path.join(self.root, "model.dump")
        self.run("pg_dump", "-h", self.sock, "-U", "postgres", "-Fc", "-f", dump, src)
        with self.connect() as c:
            c.execute(f'CREATE DATABASE "{dst}"')
            c.execute(f'ALTER DATABASE "{dst}" SET ordering.restoring = on')
        self.run("pg_restore", "-h", self.sock, "-U", "postgres", "--exit-on-error",
                 "-d", dst, dump)
        with self.connect(dst) as c:
            c.execute("SELECT ordering.post_restore()")


class Result:
    """What a statement gave: rows, or an error's SQLSTATE."""

    def __init__(self, rows=None, sqlstate=None, message=None, status=None):
        self.rows = rows
        self.sqlstate = sqlstate
        self.message = message
        self.status = status

    def __repr__(self):
        if self.sqlstate:
            return f"error {self.sqlstate}: {self.message}"
        return f"{self.status} {self.rows!r}"


class Session:
    """One connection, driven from a thread of its own so that a statement
    that waits for a lock does not stop the tester."""

    def __init__(self, name, server, dbname):
        self.name = name
        self.server = server
        self.dbname = dbname
        self.conn = None
        self.pid = None
        self.jobs = queue.Queue()
        self.done = queue.Queue()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        self.pending = None

    def connect(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except psycopg.Error:
                pass
        self.conn = self.server.connect(self.dbname)
        self.conn.add_notice_handler(lambda d: None)
        self.pid = self.conn.info.backend_pid

    def _loop(self):
        while True:
            sql, copy_rows = self.jobs.get()
            self.done.put(self._execute(sql, copy_rows))

    def _execute(self, sql, copy_rows):
        try:
            with self.conn.cursor() as cur:
                if copy_rows is not None:
                    with cur.copy(sql) as copy:
                        for row in copy_rows:
                            copy.write_row(row)
                    return Result(rows=None, status=cur.statusmessage)
                cur.execute(sql)
                rows = cur.fetchall() if cur.description else None
                return Result(rows=rows, status=cur.statusmessage)
        except psycopg.Error as e:
            state = e.sqlstate or ("08006" if self.conn.closed else "XX000")
            return Result(sqlstate=state, message=str(e).splitlines()[0] if str(e) else "")

    def send(self, sql, copy_rows=None):
        assert self.pending is None
        self.pending = sql
        self.jobs.put((sql, copy_rows))

    def poll(self):
        try:
            res = self.done.get_nowait()
        except queue.Empty:
            return None
        self.pending = None
        return res

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except psycopg.Error:
                pass


class Hang(Exception):
    pass


class Driver:
    """Sends statements and tells when they are done or blocked."""

    def __init__(self, server, dbname, nsessions, log):
        self.server = server
        self.dbname = dbname
        self.log = log
        self.checker = server.connect(dbname)
        self.sessions = {f"s{i + 1}": Session(f"s{i + 1}", server, dbname)
                         for i in range(nsessions)}
        for s in self.sessions.values():
            s.connect()

    def waiting_for_lock(self, session):
        row = self.checker.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_locks"
            " WHERE pid = %s AND NOT granted)", (session.pid,)).fetchone()
        return row[0]

    def wait(self, name, timeout=60.0):
        """Waits until the session's statement is done (its Result) or
        waits for a lock (None)."""
        s = self.sessions[name]
        start = time.monotonic()
        delay = 0.0005
        while True:
            res = s.poll()
            if res is not None:
                return res
            if self.waiting_for_lock(s):
                res = s.poll()
                return res
            if time.monotonic() - start > timeout:
                raise Hang(f"{name}: neither done nor waiting for a lock after {timeout}s: {s.pending}")
            time.sleep(delay)
            delay = min(delay * 2, 0.02)

    def wait_done(self, name, timeout=20.0):
        """Waits for the session's statement to finish, lock waits or not."""
        s = self.sessions[name]
        start = time.monotonic()
        while True:
            res = s.poll()
            if res is not None:
                return res
            if time.monotonic() - start > timeout:
                raise Hang(f"{name}: not done after {timeout}s: {s.pending}")
            time.sleep(0.002)

    def execute(self, name, sql, copy_rows=None):
        self.sessions[name].send(sql, copy_rows)
        return self.wait(name)

    def reconnect(self, name=None, dbname=None):
        if dbname:
            self.dbname = dbname
            self.checker.close()
            self.checker = self.server.connect(dbname)
        for s in self.sessions.values():
            if name is None or s.name == name:
                if dbname:
                    s.dbname = dbname
                s.pending = None
                s.connect()

    def close(self):
        for s in self.sessions.values():
            s.close()
        self.checker.close()


def copy_text(value):
    """A value as COPY's text format writes it."""
    if value is None:
        return "\\N"
    return str(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


class ReplayLog:
    """The statements of one example, as a SQL script that replays it:
    psql runs it as it is when it has one session; replay.py runs one with
    several (each statement is marked with the session that sends it)."""

    def __init__(self, seed_note):
        self.lines = []
        self.seed_note = seed_note
        self.sessions = set()

    def statement(self, session, sql, expected, got, copy_rows=None):
        self.sessions.add(session)
        self.lines.append(f"--@ {session}  expected: {expected}; got: {got}")
        text = sql.strip()
        if not text.endswith(";"):
            text += ";"
        self.lines.append(text)
        if copy_rows is not None:
            for row in copy_rows:
                self.lines.append("\t".join(copy_text(v) for v in row))
            self.lines.append("\\.")

    def operation(self, what, note=""):
        self.lines.append(f"--@ operation {what}{('  ' + note) if note else ''}")

    def text(self):
        with open(os.path.join(HERE, "schema.sql")) as f:
            schema = f.read()
        head = [
            "-- A failing example of the model-based tester (test/model), " + self.seed_note,
            "-- Run it in an empty database of a server with shared_preload_libraries",
            "-- = 'ordering', max_prepared_transactions > 0 and",
            "-- ordering.max_parked_per_resource = 4, ordering.gap_deadline = '1s':",
            "--   psql -X -d DB -f THIS.sql                       (one session)",
            "--   python3 test/model/replay.py 'dbname=DB' THIS.sql (any number of sessions)",
            "-- Each statement is marked with its session, what the model expected",
            "-- and what the server did.",
            "\\set VERBOSITY terse",
            "",
            schema,
            "-- the example",
        ]
        return "\n".join(head + self.lines) + "\n"
