"""The state machine of the model-based tester: Hypothesis chooses the
operations (and the sessions and interleavings), the model (model.py) says
what each must do, the driver (driver.py) does it on the server, and after
every step the committed state of the database must be the model's.

One step is one statement of one session (or one operation on the server:
a backend killed, an immediate restart, a dump and restore, REINDEX
CONCURRENTLY).  A statement that must wait for another transaction is left
waiting; the tester then goes on with the other sessions, and the waiting
statement's outcome is checked when the transaction it waits for ends, at
that point of the commit order.  At most one statement waits at a time,
and no statement is sent that would wait for the waiting one or its
partial locks: the tester never builds a deadlock.
"""

import copy
import json
import os
import time

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import model as M
from driver import Hang, ReplayLog

RESOURCES = ["a", "b", "c"]
RESET_SQL = """
BEGIN; SET LOCAL session_replication_role = replica;
DELETE FROM ordering.sequences; DELETE FROM ordering.positions; DELETE FROM ordering.parked;
DELETE FROM ordering.gap_requests; DELETE FROM ordering.dead_letter_events; DELETE FROM ordering.outbox;
DELETE FROM t_plain; DELETE FROM t_part; DELETE FROM applied; DELETE FROM proj;
COMMIT
"""
TABLES = ["t_plain", "t_part"]
STREAM_OF = {"t_plain": "public.t_plain", "t_part": "public.t_part"}


class TimeUp(BaseException):
    """The run's budget is spent: ends Hypothesis's search (not a failure;
    a BaseException, so that Hypothesis does not take it for one)."""


class Env:
    """What lives across examples: the server, the driver, the run's notes."""
    server = None
    driver = None
    out_dir = None
    seed_note = ""
    examples = 0
    steps = 0
    counter = 0
    ops = {}          # operation name -> times run
    dbname = None
    deadline = None          # time.monotonic() when the budget ends
    failed_at = None         # when the first failure was seen
    shrink_budget = 120.0    # seconds to shrink a failure, at most

    @classmethod
    def reset(cls):
        """Every example starts from the fixture with no data: what a
        previous example left (a waiting statement, open and prepared
        transactions, rows) is ended and deleted."""
        d = cls.driver
        for s in d.sessions.values():
            if s.pending is not None:
                d.checker.execute("SELECT pg_terminate_backend(%s, 10000)", (s.pid,))
                d.wait_done(s.name)
        d.reconnect(dbname=cls.dbname)
        c = d.checker
        for (gid,) in c.execute("SELECT gid FROM pg_prepared_xacts WHERE database = current_database()").fetchall():
            c.execute(f"ROLLBACK PREPARED '{gid}'")
        c.execute(RESET_SQL)



def q(value):
    """A SQL literal."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def canon(payload):
    """A JSON text in one spelling, whatever the key order."""
    return json.dumps(json.loads(payload), sort_keys=True)


def arr(values, typ):
    return f"ARRAY[{', '.join(q(v) for v in values)}]::{typ}[]"


def payload_text(seq, kind):
    """A payload as jsonb prints it."""
    if kind == "bad":
        return '{"bad": true, "s": %d}' % seq
    if kind == "transient":
        return '{"s": %d, "transient": true}' % seq
    if kind == "reenter":
        return '{"s": %d, "reenter": %d}' % (seq, seq + 1)
    return '{"s": %d}' % seq


class Op:
    """One statement: its SQL, what the model does with it, and how the
    server's answer is read for comparison."""

    def __init__(self, name, sql, fn, read=None, copy_rows=None):
        self.name = name
        self.sql = sql
        self.fn = fn
        self.read = read or (lambda res: None)
        self.copy_rows = copy_rows
        self.compare = None      # compare(session, op, prediction, got)
        self.after = None        # after(got): what the model learns from it


def read_rows(res):
    return [tuple(r) for r in (res.rows or [])]


def read_scalar(res):
    return res.rows[0][0]


def read_count(res):
    return int(res.status.split()[-1])


class Failure(AssertionError):
    pass


class OrderingMachine(RuleBasedStateMachine):

    def __init__(self):
        super().__init__()
        Env.examples += 1
        Env.counter += 1
        self.model = M.Model()
        self.log = ReplayLog(Env.seed_note)
        self.autocommit = {s: True for s in Env.driver.sessions}
        self.waiting = None        # (session, op, partial keys)
        self.prepared = []
        self.gids = 0
        self.savepoints = 0
        self.restarts = 0
        self.restores = 0
        self.steps = 0
        self.handed_out = {}       # (stream, resource) -> numbers ever seen
        self.parked_since = {}     # (consumer, resource, seq) -> when first seen committed
        self.last_row = {}         # session -> (table, resource, seq, part) it last updated or deleted
        now = time.monotonic()
        if Env.failed_at is None and now > Env.deadline:
            raise TimeUp("budget spent")
        if Env.failed_at is not None and now > Env.failed_at + Env.shrink_budget:
            raise TimeUp("shrinking took too long: the example printed is not the smallest")
        self.dbname = Env.dbname
        Env.reset()

    # ------------------------------------------------------------ failures
    def fail(self, why):
        if Env.failed_at is None:
            Env.failed_at = time.monotonic()
        self.log.lines.append("-- FAILED: " + why.replace("\n", "\n-- "))
        path = os.path.join(Env.out_dir, "failing.sql")
        with open(path, "w") as f:
            f.write(self.log.text())
        raise Failure(why)

    # ------------------------------------------------------------- running
    def sessions_free(self):
        return [s for s in sorted(Env.driver.sessions)
                if self.waiting is None or self.waiting[0] != s]

    def predict(self, session, op):
        """Runs op on a copy of the model: ("ok", result, may, touched),
        ("error", states, touched) or ("blocked", holders, partial)."""
        trial = copy.deepcopy(self.model)
        try:
            result, may = trial.run(session, op.fn, self.autocommit[session])
            return ("ok", result, may, set(trial.last_touched), trial)
        except M.SqlError as e:
            return ("error", e.states, e.why, set(trial.last_touched), trial)
        except M.Blocked as e:
            return ("blocked", e.holders, getattr(e, "partial", set()), None, None)

    def allowed(self, session, prediction):
        """No second waiter, and nothing that waits for the waiting one."""
        kind = prediction[0]
        would_wait = kind == "blocked" or (kind == "ok" and prediction[2])
        if would_wait and self.waiting is not None:
            return False
        if self.waiting is not None:
            wsession, _, partial = self.waiting
            if kind == "blocked" and wsession in prediction[1]:
                return False
            if kind in ("ok", "error") and prediction[3] & partial:
                return False
        return True

    def send(self, session, op):
        """Sends a statement whose prediction allows it; checks it or leaves
        it waiting.  Returns False when the tester chose not to send it."""
        prediction = self.predict(session, op)
        if not self.allowed(session, prediction):
            return False
        Env.ops[op.name] = Env.ops.get(op.name, 0) + 1
        d = Env.driver
        res = d.execute(session, op.sql, op.copy_rows)
        expected = self.describe(prediction)
        if res is None:
            self.log.statement(session, op.sql, expected, "waits for a lock", op.copy_rows)
            kind = prediction[0]
            if kind == "blocked" or (kind == "ok" and prediction[2]):
                partial = prediction[2] if kind == "blocked" else prediction[3]
                self.waiting = (session, op, set(partial))
                return True
            self.fail(f"{session}: {op.name} waits for a lock; the model says it must not wait\n{op.sql}")
        self.log.statement(session, op.sql, expected, repr(res), op.copy_rows)
        if prediction[0] == "blocked":
            self.fail(f"{session}: {op.name} did not wait for {sorted(prediction[1])}; "
                      f"the model says it must (got {res!r})\n{op.sql}")
        self.settle(session, op, prediction, res)
        # a statement that failed in a transaction ended it (its locks are
        # gone): what waited for it goes on
        self.resume()
        return True

    def describe(self, prediction):
        kind = prediction[0]
        if kind == "ok":
            return f"ok {prediction[1]!r}" + (f" (may wait for {sorted(prediction[2])})" if prediction[2] else "")
        if kind == "error":
            return f"error {'/'.join(sorted(prediction[1]))} ({prediction[2]})"
        return f"waits for {sorted(prediction[1])}"

    def settle(self, session, op, prediction, res):
        """Compares a finished statement with the model and applies it."""
        kind = prediction[0]
        if kind == "error":
            states = prediction[1]
            if res.sqlstate not in states:
                self.fail(f"{session}: {op.name}: expected SQLSTATE {'/'.join(sorted(states))} "
                          f"({prediction[2]}), got {res!r}\n{op.sql}")
            self.model = prediction[4]
            return
        if res.sqlstate:
            self.fail(f"{session}: {op.name}: expected {prediction[1]!r}, got {res!r}\n{op.sql}")
        got = op.read(res)
        if op.compare is not None:
            op.compare(session, op, prediction, got)
        elif got is not None and got != prediction[1]:
            self.fail(f"{session}: {op.name}: expected {prediction[1]!r}, got {got!r}\n{op.sql}")
        self.model = prediction[4]
        if op.after is not None:
            op.after(got)
        keys = set(self.model.committed)
        for tx in self.model.txs.values():
            keys |= set(tx.overlay)
        for key in keys:
            if key[0] == "row":
                self.handed_out.setdefault((M.STREAMS[key[1]], key[2]), set()).add(key[3])

    def compare_sweep(self, session, op, prediction, got):
        """A sweep requests every open gap whose oldest parked event is past
        the deadline (1s on the test server), and nothing else: the gaps
        whose events parked less than 2s ago may or may not be in it."""
        gaps = prediction[1]
        now = time.monotonic()
        must = set()
        for (c, r), gap in gaps.items():
            con = self.model.committed.get(M.con_key(c, r))
            seen = [self.parked_since.get((c, r, s), now) for s, _ in con.parked]
            if seen and now - min(seen) > 2.0:
                must.add((c, r))
        returned = {(c, r): (lo, hi) for c, r, lo, hi in got}
        for pair, gap in returned.items():
            if gaps.get(pair) != gap:
                self.fail(f"{session}: sweep_gaps requested {pair} {gap}; the open gaps are {gaps}")
        if not must <= set(returned):
            self.fail(f"{session}: sweep_gaps did not request {sorted(must - set(returned))}, "
                      f"parked for over 2s with ordering.gap_deadline 1s (got {got})")
        op.after = lambda got: M.requested(self.model, set(returned))

    def resume(self):
        """After a transaction ended: the waiting statement, if it may go
        on now, must go on and give what the model gives at this point."""
        if self.waiting is None:
            return
        session, op, partial = self.waiting
        prediction = self.predict(session, op)
        d = Env.driver
        if prediction[0] == "blocked":
            res = d.wait(session)
            if res is not None:
                self.log.statement(session, "-- (the waiting statement above finished)", self.describe(prediction), repr(res))
                self.fail(f"{session}: {op.name} finished; the model says it still waits for {sorted(prediction[1])}: {res!r}")
            return
        res = d.wait(session)
        if res is None and prediction[0] == "ok" and prediction[2]:
            return      # still waits for a holder it may wait for
        if res is None:
            try:
                res = d.wait_done(session)
            except Hang as e:
                self.fail(f"{session}: {op.name} still waits; the model says it can go on: {e}")
        self.waiting = None
        self.log.lines.append(f"--@ {session}  the waiting statement finished: expected: "
                              f"{self.describe(prediction)}; got: {res!r}")
        self.settle(session, op, prediction, res)

    def control(self, session, sql, apply, expect_state=None):
        """A transaction control statement."""
        d = Env.driver
        res = d.execute(session, sql)
        self.log.statement(session, sql, expect_state or "ok", repr(res) if res else "waits")
        if res is None:
            self.fail(f"{session}: {sql} waits for a lock")
        if expect_state is not None and res.sqlstate not in (expect_state,):
            self.fail(f"{session}: {sql}: expected {expect_state}, got {res!r}")
        if expect_state is None and res.sqlstate:
            self.fail(f"{session}: {sql}: expected success, got {res!r}")
        apply()
        self.resume()
        return res

    # ------------------------------------------------------------- drawing
    def draw_session(self, data, autocommit=None):
        choices = [s for s in self.sessions_free()
                   if autocommit is None or self.autocommit[s] == autocommit]
        if not choices:
            return None
        return data.draw(st.sampled_from(choices), label="session")

    def draw_seq_for(self, data, session, stream, resource, offset=0):
        """None (ask for the next number), or an asserted one: right, stale
        (one handed out before, the usual mistake), or ahead."""
        mode = data.draw(st.sampled_from(["next", "next", "next", "right", "stale", "ahead"]), label="seq")
        view = self.model.view(session)
        nxt = M.last_sequence(view, stream, resource) + 1 + offset
        if mode == "next":
            return None
        if mode == "right":
            return nxt
        if mode == "ahead":
            return nxt + data.draw(st.integers(1, 2), label="ahead")
        old = sorted(self.handed_out.get((stream, resource), set()) | {max(nxt - 1, 1)})
        return data.draw(st.sampled_from(old), label="stale")

    def draw_row(self, data, session, table, counts):
        resource = data.draw(st.sampled_from(RESOURCES + RESOURCES + [None]), label="resource")
        offset = counts.get(resource, 0)
        seq = self.draw_seq_for(data, session, STREAM_OF[table], resource, offset)
        counts[resource] = offset + 1
        if table == "t_plain":
            note = data.draw(st.sampled_from(["", "", "", "", "skip", "raise", "rewrite",
                                              "redirect", "nodelete", "soft"]), label="note")
            k = data.draw(st.sampled_from([None, None, "k1", "k2", "k3"]), label="k")
            if note == "rewrite":
                k = None        # a rewritten row's key conflict: not modelled
            part = 0
        else:
            note = data.draw(st.sampled_from(["", "", "nodelete", "soft"]), label="note")
            k = None
            part = data.draw(st.sampled_from([1, 1, 2, 2, 3]), label="part")
        v = data.draw(st.sampled_from([0, 0, 0, 0, 0, -1]), label="v")
        return M.NewRow(resource, seq, part, v, note, k)

    # ------------------------------------------------------ producer rules
    @rule(data=st.data())
    def insert(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        table = data.draw(st.sampled_from(TABLES), label="table")
        form = data.draw(st.sampled_from(["values", "values", "select", "copy"]), label="form")
        n = data.draw(st.integers(1, 4), label="rows")
        counts = {}
        rows = [self.draw_row(data, session, table, counts) for _ in range(n)]
        again = self.last_row.get(session)
        if again and again[0] == table and data.draw(st.booleans(), label="again"):
            # the row this session last updated or deleted, inserted again
            # with its number: an application retrying its own work
            _, resource, seq, part = again
            rows[0] = M.NewRow(resource, seq, part if table == "t_part" else 0)
        on_conflict = None
        if table == "t_plain" and form != "copy":
            on_conflict = data.draw(st.sampled_from([None, None, "nothing", "update"]), label="on_conflict")
        self.send(session, self.insert_op(table, form, rows, on_conflict))

    @rule(data=st.data())
    def insert_rewritten(self, data):
        """A row whose later BEFORE trigger sets its resource after it was
        numbered: to another of the resources, whose own numbers the row's
        may repeat, or to its own (which changes nothing), among rows of
        its statement that it must not disturb."""
        session = self.draw_session(data)
        if session is None:
            return
        form = data.draw(st.sampled_from(["values", "select", "copy"]), label="form")
        n = data.draw(st.integers(1, 3), label="rows")
        counts = {}
        rows = [self.draw_row(data, session, "t_plain", counts) for _ in range(n)]
        i = data.draw(st.integers(0, n - 1), label="rewritten")
        target = data.draw(st.sampled_from(RESOURCES), label="to")
        rows[i].note, rows[i].k = "to:" + target, None
        self.send(session, self.insert_op("t_plain", form, rows, None))

    def insert_op(self, table, form, rows, on_conflict):
        """The INSERT (or COPY) of rows into table, as an Op."""
        if table == "t_plain":
            cols = ["resource_id", "seq", "k", "v", "note"]
            vals = [(r.resource, r.seq, r.k, r.v, r.note) for r in rows]
        else:
            cols = ["resource_id", "seq", "part", "v", "note"]
            vals = [(r.resource, r.seq, r.part, r.v, r.note) for r in rows]
        conflict = {None: "", "nothing": " ON CONFLICT (k) DO NOTHING",
                    "update": " ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"}[on_conflict]
        fn = lambda view: M.insert_rows(view, table, rows, on_conflict)
        if form == "copy":
            sql = f"COPY {table} ({', '.join(cols)}) FROM stdin"
            op = Op("copy", sql, fn, read=lambda res: None, copy_rows=vals)
            # COPY returns no numbers: its count is compared
            op.read = read_count
            op.fn = lambda view: len(M.insert_rows(view, table, rows, on_conflict))
        else:
            if form == "values":
                body = "VALUES " + ", ".join("(" + ", ".join(q(x) for x in v) + ")" for v in vals)
            else:
                types = ["text", "bigint", "text" if table == "t_plain" else "integer", "integer", "text"]
                first = "(" + ", ".join(f"{q(x)}::{t}" for x, t in zip(vals[0], types)) + ")"
                rest = ["(" + ", ".join(q(x) for x in v) + ")" for v in vals[1:]]
                body = (f"SELECT * FROM (VALUES {', '.join([first] + rest)}) AS x({', '.join(cols)})")
            sql = f"INSERT INTO {table} ({', '.join(cols)}) {body}{conflict} RETURNING seq"
            op = Op("insert_" + form, sql, fn, read=lambda res: [r[0] for r in res.rows])
        return op

    @rule(data=st.data())
    def insert_nested(self, data):
        """A bulk statement whose rows insert events of their own in
        subtransactions, some rolled back."""
        session = self.draw_session(data)
        if session is None:
            return
        n = data.draw(st.integers(1, 4), label="rows")
        pairs = [(data.draw(st.sampled_from(RESOURCES), label="resource"),
                  data.draw(st.booleans(), label="keep")) for _ in range(n)]
        values = ", ".join(f"({q(r)}, {q(k)})" for r, k in pairs)
        sql = (f"INSERT INTO t_plain (resource_id, note) SELECT r, model_inner(r, keep)"
               f" FROM (VALUES {values}) AS v(r, keep) RETURNING seq")
        self.send(session, Op("insert_nested", sql, lambda view: M.insert_nested(view, pairs),
                              lambda res: [r[0] for r in res.rows]))

    @rule(data=st.data())
    def load_counter(self, data):
        """A counter row inserted by hand, as docs/restore.md says to raise
        counters past what was published: it never lowers one."""
        session = self.draw_session(data)
        if session is None:
            return
        stream = data.draw(st.sampled_from(["public.t_plain", "ordering.outbox", "free"]), label="stream")
        resource = data.draw(st.sampled_from(RESOURCES), label="resource")
        now = M.last_sequence(self.model.view(session), stream, resource)
        value = data.draw(st.sampled_from(sorted({0, max(now - 1, 0), now, now + 2})), label="value")
        sql = (f"INSERT INTO ordering.sequences (stream, resource_id, last_seq)"
               f" VALUES ({q(stream)}, {q(resource)}, {value})")
        self.send(session, Op("load_counter", sql,
                              lambda view: M.load_counter(view, stream, resource, value), read_count))

    @rule(data=st.data())
    def emit(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        resource = data.draw(st.sampled_from(RESOURCES + [None]), label="resource")
        seq = self.draw_seq_for(data, session, "ordering.outbox", resource)
        extra = f", expected_seq => {seq}" if seq is not None else ""
        sql = f"SELECT ordering.emit({q(resource)}, 'e', '{{}}'{extra})"
        self.send(session, Op("emit", sql, lambda view: M.emit(view, resource, seq), read_scalar))

    @rule(data=st.data())
    def next_sequence(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        stream = data.draw(st.sampled_from(["public.t_plain", "ordering.outbox", "free"]), label="stream")
        resource = data.draw(st.sampled_from(RESOURCES), label="resource")
        sql = f"SELECT ordering.next_sequence({q(stream)}, {q(resource)})"
        self.send(session, Op("next_sequence", sql,
                              lambda view: M.next_sequence(view, stream, resource), read_scalar))

    @rule(data=st.data())
    def last_sequence(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        stream = data.draw(st.sampled_from(["public.t_plain", "public.t_part", "ordering.outbox", "free"]), label="stream")
        resource = data.draw(st.sampled_from(RESOURCES + ["a-r"]), label="resource")
        sql = f"SELECT ordering.last_sequence({q(stream)}, {q(resource)})"
        self.send(session, Op("last_sequence", sql,
                              lambda view: M.last_sequence(view, stream, resource), read_scalar))

    def draw_row_key(self, data, session, table):
        again = self.last_row.get(session)
        if again and again[0] == table and data.draw(st.booleans(), label="same row"):
            return again[1], again[2]
        keys = [k for k in self.model.view(session).keys("row") if k[1] == table]
        stream = STREAM_OF.get(table, "ordering.outbox")
        if keys and data.draw(st.booleans(), label="existing"):
            _, _, resource, seq = data.draw(st.sampled_from(keys), label="row")
        else:
            resource = data.draw(st.sampled_from(RESOURCES), label="resource")
            seen = sorted(self.handed_out.get((stream, resource), set()) | {1})
            seq = data.draw(st.sampled_from(seen), label="seq")
        return resource, seq

    @rule(data=st.data())
    def update(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        table = data.draw(st.sampled_from(TABLES), label="table")
        resource, seq = self.draw_row_key(data, session, table)
        kinds = ["v", "v_bad", "renumber"] + (["move", "move", "move_nowhere"] if table == "t_part" else [])
        kind = data.draw(st.sampled_from(kinds), label="kind")
        where = f"WHERE resource_id = {q(resource)} AND seq = {seq}"
        if kind == "v":
            sql, kw = f"UPDATE {table} SET v = v + 1 {where}", None
            fn = lambda view: M.update_row(view, table, resource, seq,
                                           v=(view.get(M.row_key(table, resource, seq)).v + 1
                                              if view.get(M.row_key(table, resource, seq)) else 0))
        elif kind == "v_bad":
            sql = f"UPDATE {table} SET v = -1 {where}"
            fn = lambda view: M.update_row(view, table, resource, seq, v=-1)
        elif kind == "renumber":
            sql = f"UPDATE {table} SET seq = seq + 100 {where}"
            fn = lambda view: M.update_row(view, table, resource, seq, renumber=True)
        else:
            to = 3 if kind == "move_nowhere" else None
            sql = f"UPDATE {table} SET part = {'3' if to else '3 - part'} {where}"

            def fn(view, to=to):
                row = view.get(M.row_key(table, resource, seq))
                dest = to if to else (3 - row.part if row else 1)
                return M.update_row(view, table, resource, seq, part=dest)
        row = self.model.view(session).get(M.row_key(table, resource, seq))
        self.last_row[session] = (table, resource, seq, row.part if row else 1)
        self.send(session, Op("update_" + kind, sql, fn, read_count))

    @rule(data=st.data())
    def move_then_redo(self, data):
        """An application that moves a row between partitions and, after
        the move, inserts the row again with its number, in the same
        session: the insert must be refused (40001) whatever the move did
        (a BEFORE DELETE trigger that raised or kept the row, no partition
        for it, or a move that succeeded).  Mostly in autocommit, where
        the two statements are each the first command of a transaction:
        state that outlives the move's statement is easiest to mistake
        for the insert's there."""
        prefer = data.draw(st.sampled_from([True, True, None]), label="autocommit")
        session = self.draw_session(data, autocommit=prefer)
        if session is None and prefer:
            session = self.draw_session(data)
        if session is None:
            return
        view = self.model.view(session)
        keys = [k for k in view.keys("row") if k[1] == "t_part"]
        if not keys:
            return
        key = data.draw(st.sampled_from(keys), label="row")
        _, table, resource, seq = key
        part = view.get(key).part
        to = data.draw(st.sampled_from([3 - part, 3]), label="to")
        self.last_row[session] = (table, resource, seq, part)
        sql = f"UPDATE t_part SET part = {to} WHERE resource_id = {q(resource)} AND seq = {seq}"
        if not self.send(session, Op("update_move", sql,
                                     lambda view: M.update_row(view, table, resource, seq, part=to),
                                     read_count)):
            return
        if self.waiting is not None and self.waiting[0] == session:
            return
        row = M.NewRow(resource, seq, part)
        sql = (f"INSERT INTO t_part (resource_id, seq, part) VALUES ({q(resource)}, {seq}, {part})"
               f" RETURNING seq")
        self.send(session, Op("insert_again", sql, lambda view: M.insert_rows(view, table, [row]),
                              lambda res: [r[0] for r in res.rows]))

    @rule(data=st.data())
    def redo_row(self, data):
        """The row a session last updated or deleted, deleted or inserted
        again with its number: what an application that retries its own
        work does after a statement failed."""
        session = self.draw_session(data)
        if session is None or session not in self.last_row:
            return
        table, resource, seq, part = self.last_row[session]
        if table == "outbox" or data.draw(st.booleans(), label="delete"):
            name = "ordering.outbox" if table == "outbox" else table
            sql = f"DELETE FROM {name} WHERE resource_id = {q(resource)} AND seq = {seq}"
            self.send(session, Op("delete", sql, lambda view: M.delete_row(view, table, resource, seq), read_count))
            return
        row = M.NewRow(resource, seq, part if table == "t_part" else 0)
        cols = "resource_id, seq" + (", part" if table == "t_part" else "")
        vals = f"{q(resource)}, {seq}" + (f", {part}" if table == "t_part" else "")
        sql = f"INSERT INTO {table} ({cols}) VALUES ({vals}) RETURNING seq"
        self.send(session, Op("insert_again", sql, lambda view: M.insert_rows(view, table, [row]),
                              lambda res: [r[0] for r in res.rows]))

    @rule(data=st.data())
    def delete(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        table = data.draw(st.sampled_from(TABLES + ["outbox"]), label="table")
        resource, seq = self.draw_row_key(data, session, table)
        name = "ordering.outbox" if table == "outbox" else table
        sql = f"DELETE FROM {name} WHERE resource_id = {q(resource)} AND seq = {seq}"
        row = self.model.view(session).get(M.row_key(table, resource, seq))
        self.last_row[session] = (table, resource, seq, row.part if row else 1)
        self.send(session, Op("delete", sql, lambda view: M.delete_row(view, table, resource, seq), read_count))

    @rule(data=st.data())
    def relay(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        kind = data.draw(st.sampled_from(["publish", "publish", "republish", "purge"]), label="kind")
        if kind == "publish":
            sql = "SELECT ordering.mark_published(ARRAY(SELECT id FROM ordering.claim_unpublished(1000)))"
            self.send(session, Op("publish", sql, M.publish_all, read_scalar))
        elif kind == "republish":
            resource = data.draw(st.sampled_from(RESOURCES), label="resource")
            lo = data.draw(st.integers(0, 4), label="from")
            hi = data.draw(st.sampled_from([None, lo, lo + 2]), label="to")
            sql = f"SELECT ordering.republish({q(resource)}, {lo}{', ' + str(hi) if hi is not None else ''})"
            self.send(session, Op("republish", sql, lambda view: M.republish(view, resource, lo, hi), read_scalar))
        else:
            if not self.autocommit[session]:
                return
            sql = "SELECT ordering.purge_published('0 seconds')"
            self.send(session, Op("purge", sql, M.purge_published, read_scalar))

    # ------------------------------------------------------ consumer rules
    def draw_event(self, data, session, consumer, resource, poison=True):
        con = self.model.view(session).get(M.con_key(consumer, resource), M.Con())
        seq = data.draw(st.one_of(st.just(con.pos + 1), st.integers(max(1, con.pos - 1), con.pos + 4)),
                        label="seq")
        kinds = ["", "", "", ""]
        if poison and consumer == "step":
            # one dead letter per resource: no poison where one waits
            if con.dead is None:
                kinds += ["bad", "reenter"]
            kinds += ["transient"]
        kind = data.draw(st.sampled_from(kinds), label="payload")
        if con.dead is not None and kind == "bad":
            kind = ""
        return seq, payload_text(seq, kind)

    def poison_parked(self, session, resource):
        con = self.model.view(session).get(M.con_key("step", resource), M.Con())
        return any(M.Handler.failure(p, resource) for _, p in con.parked)

    @rule(data=st.data())
    def deliver(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        resource = data.draw(st.sampled_from(RESOURCES), label="resource")
        form = data.draw(st.sampled_from(["table", "raise", "dead_letter"]), label="form")
        seq, payload = self.draw_event(data, session, "step", resource)
        self.send_deliver(session, resource, form, seq, payload)

    @rule(data=st.data())
    def deliver_reentrant(self, data):
        """A handler that delivers from inside: for its own resource (which
        the contract refuses, 55006), or with the table form for another
        resource an event that is next or stale there, so that the call
        inside never parks (it may wait for that resource's calls)."""
        session = self.draw_session(data)
        if session is None:
            return
        resource = data.draw(st.sampled_from(RESOURCES), label="resource")
        view = self.model.view(session)
        con = view.get(M.con_key("step", resource), M.Con())
        seq = data.draw(st.sampled_from([con.pos + 1, con.pos + 1, con.pos + 2]), label="seq")
        others = [r for r in RESOURCES if r != resource]
        target = data.draw(st.sampled_from([resource] + others), label="to")
        if target == resource:
            if con.dead is not None:
                return          # one dead letter per resource
            payload = '{"s": %d, "reenter": %d}' % (seq, seq + 1)
        else:
            tpos = view.get(M.con_key("step", target), M.Con()).pos
            tseq = data.draw(st.sampled_from([tpos + 1, tpos + 1, max(tpos, 1)]), label="target seq")
            payload = '{"r": "%s", "s": %d, "reenter": %d}' % (target, seq, tseq)
        form = data.draw(st.sampled_from(["raise", "dead_letter"]), label="form")
        self.send_deliver(session, resource, form, seq, payload)

    @rule(data=st.data())
    def fill_gap(self, data):
        """Events that come early park; the one missing below them drains
        the run in order: parks the event after the highest parked one (or
        after a gap of one), or delivers the first missing one."""
        session = self.draw_session(data)
        if session is None:
            return
        resource = data.draw(st.sampled_from(RESOURCES), label="resource")
        con = self.model.view(session).get(M.con_key("step", resource), M.Con())
        parked = [s for s, _ in con.parked]
        fill = len(parked) >= M.MAX_PARKED or (parked and data.draw(st.booleans(), label="fill"))
        if fill:
            seq = con.pos + 1
        else:
            seq = max(parked + [con.pos + 1]) + 1
        form = data.draw(st.sampled_from(["table", "raise"]), label="form")
        self.send_deliver(session, resource, form, seq, payload_text(seq, ""))

    def send_deliver(self, session, resource, form, seq, payload):
        """deliver() of one event of consumer 'step': the table form
        ("table"), or with the handler, raising its error ("raise") or
        dead-lettering the event ("dead_letter")."""
        con = self.model.view(session).get(M.con_key("step", resource), M.Con())
        if form == "table":
            sql = (f"INSERT INTO applied (consumer, resource_id, seq) SELECT 'step', {q(resource)}, d.seq"
                   f" FROM ordering.deliver('step', {q(resource)}, {seq}, {q(payload)}) d RETURNING seq")
            fn = lambda view: [s for s, _ in M.deliver(view, "step", resource, seq, payload)]
            self.send(session, Op("deliver", sql, fn, lambda res: [r[0] for r in res.rows]))
            return
        if con.dead is not None and self.poison_parked(session, resource):
            return
        extra = ", on_error => 'dead_letter'" if form == "dead_letter" else ""
        sql = (f"SELECT ordering.deliver('step', {q(resource)}, {seq}, {q(payload)},"
               f" 'model_handler(text,bigint,jsonb)'{extra})")
        fn = lambda view: len(M.deliver(view, "step", resource, seq, payload, True, form))
        self.send(session, Op("deliver_handler", sql, fn, read_scalar))

    @rule(data=st.data())
    def deliver_batch(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        n = data.draw(st.integers(1, 4), label="events")
        events = []
        for _ in range(n):
            resource = data.draw(st.sampled_from(RESOURCES), label="resource")
            seq, payload = self.draw_event(data, session, "step", resource, poison=False)
            events.append((resource, seq, payload))
        rs, ss, ps = zip(*events)

        def fn(view):
            # a batch takes its resources in byte order (docs/batch.md)
            for r in sorted(set(rs), key=lambda x: x.encode()):
                key = M.con_key("step", r)
                con = view.committed(key, M.Con())
                if key in view.overlay or not all(M.trivial(con, s) for x, s, _ in events if x == r):
                    view.lock(key)
            out = []
            for r, s, p in events:
                out += [(r, seq) for seq, _ in M.deliver(view, "step", r, s, p)]
            return out
        sql = (f"INSERT INTO applied (consumer, resource_id, seq) SELECT 'step', ({arr(rs, 'text')})[d.ord], d.seq"
               f" FROM ordering.deliver_batch('step', {arr(rs, 'text')}, {arr(ss, 'bigint')}, {arr(ps, 'jsonb')}) d"
               f" RETURNING resource_id, seq")
        self.send(session, Op("deliver_batch", sql, fn, read_rows))

    @rule(data=st.data())
    def apply_if_newer(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        resource = data.draw(st.sampled_from(RESOURCES), label="resource")
        seq, _ = self.draw_event(data, session, "state", resource, poison=False)
        sql = (f"INSERT INTO applied (consumer, resource_id, seq) SELECT 'state', {q(resource)}, {seq}"
               f" WHERE ordering.apply_if_newer('state', {q(resource)}, {seq}) RETURNING seq")
        fn = lambda view: [seq] if M.apply_if_newer(view, "state", resource, seq) else []
        self.send(session, Op("apply_if_newer", sql, fn, lambda res: [r[0] for r in res.rows]))

    @rule(data=st.data())
    def apply_batch(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        n = data.draw(st.integers(1, 4), label="events")
        events = []
        for _ in range(n):
            resource = data.draw(st.sampled_from(RESOURCES), label="resource")
            seq, _ = self.draw_event(data, session, "state", resource, poison=False)
            events.append((resource, seq))
        rs, ss = zip(*events)

        def fn(view):
            # resources in byte order, as deliver_batch (docs/batch.md)
            for r in sorted(set(rs), key=lambda x: x.encode()):
                key = M.con_key("state", r)
                pos = view.committed(key, M.Con()).pos
                if key in view.overlay or any(s > pos for x, s in events if x == r):
                    view.lock(key)
            out = []
            for r, s in events:
                if M.apply_if_newer(view, "state", r, s):
                    out.append((r, s))
            return out
        sql = (f"INSERT INTO applied (consumer, resource_id, seq) SELECT 'state', e.r, e.s"
               f" FROM unnest({arr(rs, 'text')}, {arr(ss, 'bigint')}) WITH ORDINALITY e(r, s, ord)"
               f" JOIN ordering.apply_batch('state', {arr(rs, 'text')}, {arr(ss, 'bigint')}) a ON a.ord = e.ord"
               f" WHERE a.applied ORDER BY e.ord RETURNING resource_id, seq")
        self.send(session, Op("apply_batch", sql, fn, read_rows))

    @rule(data=st.data())
    def newer_only(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        resource = data.draw(st.sampled_from(RESOURCES), label="resource")
        version = data.draw(st.integers(1, 5), label="version")
        sql = (f"INSERT INTO proj VALUES ({q(resource)}, {version}, 'v{version}')"
               f" ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, val = EXCLUDED.val")
        self.send(session, Op("newer_only", sql, lambda view: M.newer_only_upsert(view, resource, version), read_count))

    @rule(data=st.data())
    def operator(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        resource = data.draw(st.sampled_from(RESOURCES), label="resource")
        kind = data.draw(st.sampled_from(["skip_gap", "dead_letter", "retry", "retry_handler", "discard", "sweep"]),
                         label="kind")
        r = q(resource)
        ins = "INSERT INTO applied (consumer, resource_id, seq) SELECT 'step', " + r + ", x.seq FROM "
        seqs = lambda res: [row[0] for row in res.rows]
        if kind == "skip_gap":
            op = Op("skip_gap", ins + f"ordering.skip_gap('step', {r}) x RETURNING seq",
                    lambda view: [s for s, _ in M.skip_gap(view, "step", resource)], seqs)
        elif kind == "dead_letter":
            if self.poison_parked(session, resource):
                return
            seq, payload = self.draw_event(data, session, "step", resource, poison=False)
            op = Op("dead_letter", f"SELECT ordering.dead_letter('step', {r}, {seq}, {q(payload)}, 'given up')",
                    lambda view: M.dead_letter(view, "step", resource, seq, payload))
        elif kind == "retry":
            op = Op("retry_dead_letter", ins + f"ordering.retry_dead_letter('step', {r}) x RETURNING seq",
                    lambda view: [s for s, _ in M.retry_dead_letter(view, "step", resource)], seqs)
        elif kind == "retry_handler":
            op = Op("retry_dead_letter_handler",
                    f"SELECT ordering.retry_dead_letter('step', {r}, 'model_handler(text,bigint,jsonb)')",
                    lambda view: M.retry_dead_letter(view, "step", resource, True), read_scalar)
        elif kind == "discard":
            op = Op("discard_dead_letter", ins + f"ordering.discard_dead_letter('step', {r}) x RETURNING seq",
                    lambda view: [s for s, _ in M.discard_dead_letter(view, "step", resource)], seqs)
        else:
            if not self.autocommit[session]:
                return
            holders = [h for h, tx in self.model.txs.items() if tx.gap_lock]
            maybe = [h for h, tx in self.model.txs.items() if tx.con_writes and not tx.gap_lock]

            def fn(view):
                if holders:
                    raise M.Blocked(holders)
                view.may_block |= set(maybe)
                return M.sweep_gaps(view)
            op = Op("sweep_gaps", "SELECT consumer, resource_id, missing_from, missing_to"
                    " FROM ordering.sweep_gaps() ORDER BY 1, 2", fn, read_rows)
            op.compare = self.compare_sweep
        self.send(session, op)

    @rule(data=st.data())
    def observe_position(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        consumer = data.draw(st.sampled_from(["step", "state"]), label="consumer")
        resource = data.draw(st.sampled_from(RESOURCES), label="resource")
        sql = f"SELECT ordering.position({q(consumer)}, {q(resource)})"
        self.send(session, Op("position", sql,
                              lambda view: view.get(M.con_key(consumer, resource), M.Con()).pos, read_scalar))

    # --------------------------------------------------- transaction rules
    @rule(data=st.data())
    def begin(self, data):
        session = self.draw_session(data, autocommit=True)
        if session is None:
            return
        def apply():
            self.model.begin(session)
            self.autocommit[session] = False
        self.control(session, "BEGIN", apply)

    @rule(data=st.data())
    def commit(self, data):
        session = self.draw_session(data, autocommit=False)
        if session is None:
            return
        def apply():
            self.model.commit(session)
            self.autocommit[session] = True
        self.control(session, "COMMIT", apply)

    @rule(data=st.data())
    def rollback(self, data):
        session = self.draw_session(data, autocommit=False)
        if session is None:
            return
        def apply():
            self.model.rollback(session)
            self.autocommit[session] = True
        self.control(session, "ROLLBACK", apply)

    @rule(data=st.data())
    def savepoint(self, data):
        session = self.draw_session(data, autocommit=False)
        if session is None:
            return
        names = self.model.savepoint_names(session)
        aborted = self.model.txs[session].aborted
        action = data.draw(st.sampled_from(["savepoint", "rollback_to", "release"]), label="action")
        if action == "savepoint" or not names:
            self.savepoints += 1
            name = f"sp{self.savepoints}"
            if aborted:
                self.control(session, f"SAVEPOINT {name}", lambda: None, "25P02")
            else:
                self.control(session, f"SAVEPOINT {name}", lambda: self.model.savepoint(session, name))
            return
        name = data.draw(st.sampled_from(names), label="name")
        if action == "rollback_to":
            self.control(session, f"ROLLBACK TO SAVEPOINT {name}", lambda: self.model.rollback_to(session, name))
        elif aborted:
            self.control(session, f"RELEASE SAVEPOINT {name}", lambda: None, "25P02")
        else:
            self.control(session, f"RELEASE SAVEPOINT {name}", lambda: self.model.release(session, name))

    @rule(data=st.data())
    def prepare(self, data):
        session = self.draw_session(data, autocommit=False)
        if session is None or len(self.prepared) >= 3:
            return
        self.gids += 1
        gid = f"{self.dbname}_g{self.gids}"

        def apply():
            if self.model.prepare(session, gid):
                self.prepared.append(gid)
            self.autocommit[session] = True
        self.control(session, f"PREPARE TRANSACTION '{gid}'", apply)

    @rule(data=st.data())
    def finish_prepared(self, data):
        if not self.prepared:
            return
        session = self.draw_session(data, autocommit=True)
        if session is None:
            return
        gid = data.draw(st.sampled_from(self.prepared), label="gid")
        commit = data.draw(st.booleans(), label="commit")

        def apply():
            self.prepared.remove(gid)
            if commit:
                self.model.commit(gid)
            else:
                self.model.rollback(gid)
        self.control(session, f"{'COMMIT' if commit else 'ROLLBACK'} PREPARED '{gid}'", apply)

    # ---------------------------------------------------- operation rules
    @rule(data=st.data())
    def kill_backend(self, data):
        session = self.draw_session(data)
        if session is None:
            return
        d = Env.driver
        self.log.operation(f"terminate {session}",
                           "SELECT pg_terminate_backend(<the backend of " + session + ">, 10000)")
        Env.ops["terminate"] = Env.ops.get("terminate", 0) + 1
        d.checker.execute("SELECT pg_terminate_backend(%s, 10000)", (d.sessions[session].pid,))
        d.reconnect(session)
        self.model.rollback(session)
        self.autocommit[session] = True
        self.resume()

    @precondition(lambda self: self.waiting is None and self.restarts < 1)
    @rule(data=st.data())
    def restart(self, data):
        # a few seconds each: rare
        if data.draw(st.integers(0, 7), label="rare") != 0:
            return
        self.restarts += 1
        Env.ops["restart"] = Env.ops.get("restart", 0) + 1
        self.log.operation("restart", "pg_ctl restart -m immediate")
        d = Env.driver
        d.checker.close()
        Env.server.restart_immediate()
        d.reconnect(dbname=self.dbname)
        for s in d.sessions:
            self.model.rollback(s)
            self.autocommit[s] = True

    @precondition(lambda self: self.waiting is None and self.restores < 1)
    @rule(data=st.data())
    def dump_restore(self, data):
        if self.model.txs or data.draw(st.integers(0, 7), label="rare") != 0:
            return
        self.restores += 1
        Env.ops["dump_restore"] = Env.ops.get("dump_restore", 0) + 1
        Env.counter += 1
        new = f"model_{Env.counter}"
        self.log.operation("dump_restore", "pg_dump -Fc, then the steps of docs/restore.md into a new database")
        d = Env.driver
        Env.server.dump_restore(self.dbname, new)
        old = self.dbname
        self.dbname = Env.dbname = new
        d.reconnect(dbname=new)
        d.checker.execute(f'DROP DATABASE "{old}" WITH (FORCE)')

    @precondition(lambda self: self.waiting is None)
    @rule(data=st.data())
    def reindex(self, data):
        if self.model.txs:
            return
        session = self.draw_session(data, autocommit=True)
        table = data.draw(st.sampled_from(["ordering.sequences", "ordering.positions", "ordering.parked",
                                           "ordering.outbox", "t_plain"]), label="table")
        # it waits for every transaction that might see the table: done,
        # not blocked, is what is checked
        sql = f"REINDEX TABLE CONCURRENTLY {table}"
        Env.ops["reindex"] = Env.ops.get("reindex", 0) + 1
        d = Env.driver
        d.sessions[session].send(sql)
        res = d.wait_done(session)
        self.log.statement(session, sql, "ok", repr(res))
        if res.sqlstate:
            self.fail(f"{session}: {sql}: {res!r}")

    # --------------------------------------------------------- invariants
    @invariant()
    def committed_state_is_the_models(self):
        self.steps += 1
        d = Env.driver
        c = d.checker
        m = self.model
        got = {(s, r): n for s, r, n in c.execute(
            "SELECT stream, resource_id, last_seq FROM ordering.sequences WHERE last_seq > 0")}
        if got != m.counters():
            self.fail(f"counters: database {sorted(got.items())}, model {sorted(m.counters().items())}")
        for table in TABLES:
            cols = "resource_id, seq, v, note, k, 0" if table == "t_plain" else "resource_id, seq, v, note, NULL, part"
            got = sorted(tuple(r) for r in c.execute(f"SELECT {cols} FROM {table}"))
            want = sorted((r.resource, r.seq, r.v, r.note, r.k, r.part) for r in m.rows(table))
            if got != want:
                self.fail(f"rows of {table}: database {got}, model {want}")
        got = sorted(tuple(r) for r in c.execute(
            "SELECT resource_id, seq, published_at IS NOT NULL FROM ordering.outbox"))
        want = sorted((r.resource, r.seq, r.published) for r in m.rows("outbox"))
        if got != want:
            self.fail(f"rows of ordering.outbox: database {got}, model {want}")
        cons = m.cons()
        got = {(a, b): (p, bl) for a, b, p, bl in c.execute(
            "SELECT consumer, resource_id, position, blocked_at FROM ordering.positions"
            " WHERE position > 0 OR blocked_at IS NOT NULL")}
        want = {k: (v.pos, v.dead.seq if v.dead else None) for k, v in cons.items()
                if v.pos > 0 or v.dead}
        if got != want:
            self.fail(f"positions: database {sorted(got.items())}, model {sorted(want.items())}")
        got = sorted((a, b, s, canon(p)) for a, b, s, p in c.execute(
            "SELECT consumer, resource_id, seq, payload::text FROM ordering.parked"))
        now = time.monotonic()
        self.parked_since = {(a, b, s): self.parked_since.get((a, b, s), now) for a, b, s, _ in got}
        want = sorted((k[0], k[1], s, canon(p)) for k, v in cons.items() for s, p in v.parked)
        if got != want:
            self.fail(f"parked: database {got}, model {want}")
        got = sorted((a, b, s, canon(p), st, n) for a, b, s, p, st, n in c.execute(
            "SELECT consumer, resource_id, seq, payload::text, sqlstate, attempts FROM ordering.dead_letter_events"))
        want = sorted((k[0], k[1], v.dead.seq, canon(v.dead.payload), v.dead.sqlstate, v.dead.attempts)
                      for k, v in cons.items() if v.dead)
        if got != want:
            self.fail(f"dead letters: database {got}, model {want}")
        got = {(a, b): tuple(s) for a, b, s in c.execute(
            "SELECT consumer, resource_id, array_agg(seq ORDER BY n) FROM applied GROUP BY 1, 2")}
        want = {k: v.applied for k, v in cons.items() if v.applied}
        if got != want:
            self.fail(f"applied (in order): database {sorted(got.items())}, model {sorted(want.items())}")
        got = sorted(tuple(r) for r in c.execute("SELECT consumer, resource_id FROM ordering.gap_requests"))
        if got != m.requests():
            self.fail(f"gap requests: database {got}, model {m.requests()}")
        got = dict(c.execute("SELECT id, version FROM proj").fetchall())
        if got != m.projection():
            self.fail(f"newer_only projection: database {got}, model {m.projection()}")
        problems = c.execute("SELECT kind, detail FROM ordering.check()").fetchall()
        if problems:
            self.fail(f"ordering.check(): {problems}")

    def teardown(self):
        Env.steps += self.steps
        self.steps = 0
