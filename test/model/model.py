"""A reference model of the contract of `ordering`, independent of its C code.

The model knows what committed state the database must hold and what every
statement must return or fail with, from the contract alone (the SQL
contract and docs/reference.md).  It knows nothing of SQL text: the state
machine (machine.py) describes an operation once to the model (a Python
function over a View) and once to the driver (the SQL it sends).

State is a flat map from keys to immutable values:

    ("ctr", stream, resource)       the counter: last number handed out
    ("row", table, resource, seq)   a stored row of an attached table (Row)
    ("key", k)                      t_plain's unique event key -> row key
    ("con", consumer, resource)     position, parked events, dead letter,
                                    gap request and what was applied (Con)
    ("proj", id)                    a row of the newer_only projection

Each open transaction (a session's, or a prepared one) keeps what it wrote
in an overlay; the key is then locked by it, as a row written by an
UPDATE is: a statement of another transaction that must write that key
waits (Blocked), which is what the contract says ("producers of one
resource wait for each other", "calls for the same (consumer, resource)
serialize") and what the driver checks against pg_locks.  Reads see the
committed value, or the transaction's own (READ COMMITTED).  Commit copies
the overlay into the committed map: the model's commit order is the
database's.
"""

import json
from dataclasses import dataclass, field, replace
from typing import Optional


class SqlError(Exception):
    """The statement must fail with one of these SQLSTATEs."""

    def __init__(self, *states, why=""):
        super().__init__(f"{'/'.join(states)} {why}")
        self.states = frozenset(states)
        self.why = why


class Blocked(Exception):
    """The statement must wait for these holders (sessions or prepared
    transactions) to end."""

    def __init__(self, holders):
        super().__init__(f"blocked by {sorted(holders)}")
        self.holders = frozenset(holders)


@dataclass(frozen=True)
class Row:
    table: str
    resource: str
    seq: int
    part: int = 0
    v: int = 0
    note: str = ""
    k: Optional[str] = None
    published: bool = False


@dataclass(frozen=True)
class Dead:
    seq: int
    payload: str
    sqlstate: Optional[str]
    attempts: int = 1


@dataclass(frozen=True)
class Con:
    """One (consumer, resource): its position, parked events (seq ->
    payload, as canonical JSON text), dead letter, and the seqs applied, in
    the order they were applied.  Its gap request is the key ("req", c, r),
    written by sweeps, which never stay open."""

    pos: int = 0
    parked: tuple = ()          # sorted ((seq, payload), ...)
    dead: Optional[Dead] = None
    applied: tuple = ()

    def parked_dict(self):
        return dict(self.parked)


STREAMS = {"t_plain": "public.t_plain", "t_part": "public.t_part",
           "outbox": "ordering.outbox"}

MAX_PARKED = 4          # ordering.max_parked_per_resource on the test server

TRANSIENT = ("40", "53", "57")


def transient(state):
    return state[:2] in TRANSIENT or state == "55P03"


@dataclass
class Tx:
    holder: str
    overlay: dict = field(default_factory=dict)
    savepoints: list = field(default_factory=list)    # [(name, overlay copy)]
    aborted: bool = False
    # consumer calls that may close a gap take a lock that gap sweeps wait for
    gap_lock: bool = False
    con_writes: bool = False


class Model:
    def __init__(self):
        self.committed = {}
        self.txs = {}            # holder -> Tx (sessions and prepared gids)

    # ----------------------------------------------------------------- locks
    def holder_of(self, key, me):
        for holder, tx in self.txs.items():
            if holder != me and key in tx.overlay:
                return holder
        return None

    # ---------------------------------------------------------- transactions
    def begin(self, holder):
        assert holder not in self.txs
        self.txs[holder] = Tx(holder)

    def in_tx(self, holder):
        return holder in self.txs

    def commit(self, holder):
        """COMMIT: an aborted transaction rolls back."""
        tx = self.txs.pop(holder)
        if not tx.aborted:
            self.committed.update(tx.overlay)
            for key in [k for k, v in self.committed.items() if v is None]:
                del self.committed[key]
        return not tx.aborted

    def rollback(self, holder):
        self.txs.pop(holder, None)

    def prepare(self, holder, gid):
        tx = self.txs.pop(holder)
        if tx.aborted:
            return False
        tx.holder = gid
        tx.savepoints = []
        self.txs[gid] = tx
        return True

    def savepoint(self, holder, name):
        tx = self.txs[holder]
        tx.savepoints.append((name, dict(tx.overlay), tx.gap_lock, tx.con_writes))

    def rollback_to(self, holder, name):
        tx = self.txs[holder]
        while tx.savepoints[-1][0] != name:
            tx.savepoints.pop()
        _, overlay, gap_lock, con_writes = tx.savepoints[-1]
        tx.overlay = dict(overlay)
        tx.gap_lock, tx.con_writes = gap_lock, con_writes
        tx.aborted = False

    def release(self, holder, name):
        tx = self.txs[holder]
        while tx.savepoints[-1][0] != name:
            tx.savepoints.pop()
        tx.savepoints.pop()

    def savepoint_names(self, holder):
        tx = self.txs.get(holder)
        return [s[0] for s in tx.savepoints] if tx else []

    # ------------------------------------------------------------ statements
    def run(self, holder, fn, autocommit):
        """Runs one statement: fn(view) returns its result or raises
        SqlError or Blocked.  Returns (result, may_block_holders); raises
        what fn raised.  In a transaction a failure aborts it; in
        autocommit the statement is its own transaction."""
        if autocommit:
            self.begin(holder)
        tx = self.txs[holder]
        if tx.aborted:
            raise SqlError("25P02", why="transaction aborted")
        view = View(self, tx)
        try:
            result = fn(view)
        except Blocked:
            if autocommit:
                self.rollback(holder)
            raise
        except SqlError:
            self.last_touched = view.touched
            if autocommit:
                self.rollback(holder)
            else:
                # PostgreSQL aborts the (sub)transaction at the error, not at
                # the ROLLBACK typed after it: its work and locks since the
                # innermost savepoint (or all of them) are gone at once
                if tx.savepoints:
                    _, overlay, gap_lock, con_writes = tx.savepoints[-1]
                    tx.overlay = dict(overlay)
                    tx.gap_lock, tx.con_writes = gap_lock, con_writes
                else:
                    tx.overlay = {}
                    tx.gap_lock = tx.con_writes = False
                tx.aborted = True
            raise
        self.last_touched = view.touched
        tx.overlay = view.overlay
        tx.gap_lock |= view.gap_lock
        tx.con_writes |= view.con_writes
        if autocommit:
            self.commit(holder)
        return result, frozenset(view.may_block)

    def view(self, holder):
        """A read-only view as holder sees the data."""
        tx = self.txs.get(holder) or Tx(holder)
        return View(self, tx)

    # --------------------------------------------------------- observations
    def counters(self):
        return {(k[1], k[2]): v for k, v in self.committed.items()
                if k[0] == "ctr" and v}

    def rows(self, table):
        return sorted((v for k, v in self.committed.items()
                       if k[0] == "row" and k[1] == table),
                      key=lambda r: (r.resource, r.seq))

    def cons(self):
        return {(k[1], k[2]): v for k, v in self.committed.items()
                if k[0] == "con"}

    def requests(self):
        return sorted((k[1], k[2]) for k, v in self.committed.items()
                      if k[0] == "req" and v)

    def projection(self):
        return {k[1]: v for k, v in self.committed.items() if k[0] == "proj"}


class View:
    """What one statement of a transaction reads and writes."""

    def __init__(self, model, tx):
        self.model = model
        self.tx = tx
        self.overlay = dict(tx.overlay)
        self.may_block = set()
        self.touched = set()
        self.gap_lock = False
        self.con_writes = False

    def get(self, key, default=None):
        if key in self.overlay:
            v = self.overlay[key]
        else:
            v = self.model.committed.get(key)
        return default if v is None else v

    def committed(self, key, default=None):
        v = self.model.committed.get(key)
        return default if v is None else v

    def lock(self, key):
        """Writing a key another transaction wrote waits for it."""
        holder = self.model.holder_of(key, self.tx.holder)
        if holder is not None:
            e = Blocked({holder})
            e.partial = set(self.touched)
            raise e
        self.touched.add(key)

    def may_lock(self, key):
        """A call the contract lets wait or not (its result is the same)."""
        holder = self.model.holder_of(key, self.tx.holder)
        if holder is not None:
            self.may_block.add(holder)
        self.touched.add(key)

    def put(self, key, value):
        self.lock(key)
        self.overlay[key] = value

    def keys(self, kind):
        seen = set(k for k in self.model.committed if k[0] == kind)
        seen |= set(k for k in self.overlay if k[0] == kind)
        return sorted(k for k in seen if self.get(k) is not None)


# ===================================================================== producer

@dataclass
class NewRow:
    """A row an INSERT or COPY supplies."""
    resource: Optional[str]
    seq: Optional[int] = None        # None asks for the next number
    part: int = 0
    v: int = 0
    note: str = ""
    k: Optional[str] = None


def insert_rows(view, table, rows, on_conflict=None):
    """INSERT (or COPY) of rows into an attached table, in order.  Returns
    the numbers of the rows stored (RETURNING seq), in order.

    on_conflict: None, "nothing" or "update" (ON CONFLICT (k), t_plain)."""
    out = []
    updated_keys = set()
    failed = set()
    for r in rows:
        # The contract says that a statement with a bad row fails, not
        # which bad row it names first: the SQLSTATE of any row that
        # fails is accepted (a bulk statement may check a row late).
        try:
            _insert_row(view, table, r, on_conflict, out, updated_keys)
        except SqlError as e:
            failed |= e.states
        except Blocked:
            if not failed:
                raise
            break           # it fails on the earlier row before it waits
    if failed:
        raise SqlError(*sorted(failed), why="a row failed")
    return out


def _insert_row(view, table, r, on_conflict, out, updated_keys):
    stream = STREAMS[table]
    if True:
        resource = r.resource
        # tuple routing of the partitioned table comes first
        if table == "t_part" and r.part not in (1, 2):
            raise SqlError("23514", why="no partition for the row")
        if table == "t_plain" and r.note == "redirect" and resource is not None:
            resource = resource + "-r"
        if resource is None:
            raise SqlError("23502", why="NULL resource")
        ckey = ("ctr", stream, resource)
        view.lock(ckey)
        nxt = view.get(ckey, 0) + 1
        if r.seq is not None and r.seq != nxt:
            raise SqlError("40001", why=f"asserted {r.seq}, next is {nxt}")
        # later BEFORE triggers (t_plain)
        if table == "t_plain":
            if r.note == "skip":
                view.put(ckey, view.get(ckey, 0))     # locked, not advanced
                return
            if r.note == "raise":
                raise SqlError("P0001", why="later trigger raised")
            if rewrites(r, resource) and r.v < 0:
                raise SqlError("27000", "23514", why="later trigger changed the resource")
        if r.v < 0:
            raise SqlError("23514", why="CHECK (v >= 0)")
        if r.k is not None:
            kk = ("key", r.k)
            view.lock(kk)
            existing = view.get(kk)
            if existing is not None:
                if on_conflict == "nothing":
                    view.put(ckey, view.get(ckey, 0))
                    return
                if on_conflict == "update":
                    if existing in updated_keys:
                        raise SqlError("21000", why="DO UPDATE twice")
                    view.lock(existing)
                    old = view.get(existing)
                    view.put(existing, replace(old, v=r.v))
                    updated_keys.add(existing)
                    view.put(ckey, view.get(ckey, 0))
                    out.append(old.seq)
                    return
                raise SqlError("23505", why="duplicate event key")
        rkey = ("row", table, resource, nxt)
        if view.get(rkey) is not None:
            # the table's rows say nxt is taken: the contract's counters never
            # fall behind the numbers stored (only a bug reaches this)
            raise SqlError("XX000", why=f"model: row {rkey} exists")
        view.put(ckey, nxt)
        row = Row(table, resource, nxt, r.part, r.v, r.note, r.k)
        view.put(rkey, row)
        if r.k is not None:
            view.put(("key", r.k), rkey)
            updated_keys.add(rkey)
        out.append(nxt)
        if table == "t_plain" and rewrites(r, resource):
            # found once the row is stored (maybe at the statement's end):
            # the rows after it see its number taken
            raise SqlError("27000", why="later trigger changed the resource")


def rewrites(r, resource):
    """Does t_plain's later BEFORE trigger change the numbered row's
    resource ('rewrite', or 'to:X' of another resource X)?"""
    return r.note == "rewrite" or (r.note.startswith("to:") and r.note[3:] != resource)


def emit(view, resource, expected=None):
    if resource is None:
        raise SqlError("23502", why="NULL resource")
    return insert_rows(view, "outbox", [NewRow(resource, expected)])[0]


def insert_nested(view, pairs):
    """INSERT INTO t_plain ... SELECT r, model_inner(r, keep): each row's
    inner insert (kept, or rolled back to its savepoint) comes before the
    row itself.  Returns the outer rows' numbers."""
    out = []
    for r, keep in pairs:
        if keep:
            insert_rows(view, "t_plain", [NewRow(r, note="inner")])
        else:
            view.lock(("ctr", STREAMS["t_plain"], r))
        out += insert_rows(view, "t_plain", [NewRow(r, note="kept" if keep else "rolled back")])
    return out


def load_counter(view, stream, resource, value):
    """INSERT INTO ordering.sequences: an inserted counter row only ever
    raises the counter (docs/restore.md, "Restoring an older state")."""
    ckey = ("ctr", stream, resource)
    if ckey not in view.overlay and value <= view.committed(ckey, 0):
        view.may_lock(ckey)        # nothing to raise: it need not wait
        return 0
    view.lock(ckey)
    view.put(ckey, max(view.get(ckey, 0), value))
    return 0


def next_sequence(view, stream, resource):
    if resource is None:
        raise SqlError("23502", why="NULL resource")
    ckey = ("ctr", stream, resource)
    view.lock(ckey)
    n = view.get(ckey, 0) + 1
    view.put(ckey, n)
    return n


def last_sequence(view, stream, resource):
    return view.get(("ctr", stream, resource), 0)


def row_key(table, resource, seq):
    return ("row", table, resource, seq)


def delete_row(view, table, resource, seq):
    """DELETE of one row by (resource, seq); the number stays used."""
    key = row_key(table, resource, seq)
    if view.committed(key) is None and key not in view.overlay:
        return 0
    view.lock(key)
    row = view.get(key)
    if row is None:
        return 0
    if row.note == "nodelete":
        raise SqlError("P0001", why="BEFORE DELETE trigger raised")
    if row.note == "soft":
        view.put(key, row)  # the row was locked for its trigger
        return 0
    view.put(key, None)
    if row.k is not None:
        view.put(("key", row.k), None)
    return 1


def update_row(view, table, resource, seq, v=None, part=None, renumber=False):
    """UPDATE of one row: v, or part (a move between partitions), or its
    number (refused: a stored event keeps its number)."""
    key = row_key(table, resource, seq)
    if view.committed(key) is None and key not in view.overlay:
        return 0
    view.lock(key)
    row = view.get(key)
    if row is None:
        return 0
    if renumber:
        raise SqlError("0A000", why="the number of a sequenced row changed")
    new = row
    if v is not None:
        new = replace(new, v=v)
    if part is not None and part != row.part:
        # a move deletes from the old partition (its BEFORE DELETE
        # triggers run), then routes the row to the new one
        if row.note == "nodelete":
            raise SqlError("P0001", why="BEFORE DELETE trigger raised")
        if row.note == "soft":
            view.put(key, row)
            return 0
        if part not in (1, 2):
            raise SqlError("23514", why="no partition for the row")
        new = replace(new, part=part)
    if new.v < 0:
        raise SqlError("23514", why="CHECK (v >= 0)")
    view.put(key, new)
    return 1


def outbox_rows(view):
    return [view.get(k) for k in view.keys("row") if k[1] == "outbox"]


def publish_all(view):
    """mark_published(claim_unpublished(1000)): rows locked by others are
    skipped."""
    n = 0
    for key in view.keys("row"):
        if key[1] != "outbox":
            continue
        row = view.get(key)
        if row.published or view.model.holder_of(key, view.tx.holder):
            continue
        view.put(key, replace(row, published=True))
        n += 1
    return n


def republish(view, resource, from_seq, to_seq=None):
    if from_seq < 1 or (to_seq is not None and to_seq < from_seq):
        raise SqlError("22023", why="bad range")
    last = last_sequence(view, "ordering.outbox", resource)
    hi = last if to_seq is None else min(to_seq, last)
    n = 0
    for seq in range(from_seq, hi + 1):
        key = row_key("outbox", resource, seq)
        if view.get(key) is None and view.committed(key) is None:
            continue
        view.lock(key)
        row = view.get(key)
        if row is None:
            continue
        view.put(key, replace(row, published=False))
        n += 1
    return n


def purge_published(view):
    """purge_published('0s') in a transaction of its own: every published
    row committed before it is deleted; counters stay."""
    n = 0
    for key in view.keys("row"):
        if key[1] != "outbox":
            continue
        old = view.committed(key)
        if old is None or not old.published:
            continue
        view.lock(key)
        row = view.get(key)
        if row is None or not row.published:
            continue
        view.put(key, None)
        n += 1
    return n


# ===================================================================== consumer

def check_consumer_args(resource, seq):
    if resource is None or seq is None:
        raise SqlError("22004", why="NULL argument")
    if seq < 1:
        raise SqlError("22023", why="seq below 1")


class Handler:
    """What the fixture's model_handler does with a payload of a resource's
    event."""

    @staticmethod
    def failure(payload, resource):
        """The SQLSTATE the handler fails with, or None."""
        p = json.loads(payload)
        if "bad" in p:
            return "22P02"
        if "transient" in p:
            return "40001"
        if "reenter" in p and p.get("r", resource) == resource:
            # a handler may not deliver for its own (consumer, resource)
            return "55006"
        return None

    @staticmethod
    def reentry(payload, resource):
        """(resource, seq) of another resource that the handler delivers
        for (the table form), or None."""
        p = json.loads(payload)
        if "reenter" in p and p.get("r", resource) != resource:
            return p["r"], p["reenter"]
        return None


def handler_of(view, consumer, resource):
    """model_handler of consumer's events of resource, as _drain calls it:
    returns the SQLSTATE it fails with, or None; a payload that delivers for
    another resource does so from inside the handler (whose caller's call
    on that resource may then wait, or fail)."""
    def run(seq, payload):
        state = Handler.failure(payload, resource)
        target = Handler.reentry(payload, resource)
        if state is None and target is not None:
            try:
                deliver(view, consumer, target[0], target[1], "{}")
            except SqlError as e:
                return min(e.states)
        return state
    return run


def con_key(consumer, resource):
    return ("con", consumer, resource)


def _drain(con, upto=None, handler=None, on_error="raise", first=None):
    """Applies `first` (an event at position + 1, or None) and then every
    parked event that continues the run, below `upto` (a dead letter's seq),
    in order; handler (handler_of()) runs each.  Returns (con, events run)."""
    ran = []
    parked = dict(con.parked)
    pos = con.pos
    dead = con.dead
    queue = []
    if first is not None:
        queue.append(first)
    while True:
        if not queue:
            nxt = pos + 1
            if nxt in parked and (upto is None or nxt < upto):
                queue.append((nxt, parked[nxt], True))
            else:
                break
        seq, payload, was_parked = queue.pop(0)
        if handler:
            state = handler(seq, payload)
            if state is not None:
                if on_error == "raise" or transient(state):
                    raise SqlError(state, why=f"handler failed on {seq}")
                if was_parked:
                    del parked[seq]
                dead = Dead(seq, payload, state)
                break
        if was_parked:
            del parked[seq]
        pos = seq
        ran.append((seq, payload))
    con = replace(con, pos=pos, parked=tuple(sorted(parked.items())), dead=dead,
                  applied=con.applied + tuple(s for s, _ in ran))
    return con, ran


def _gap_closed(con):
    if con.dead is not None:
        below = [s for s, _ in con.parked if s < con.dead.seq]
        lowest = min(below) if below else None
    else:
        lowest = con.parked[0][0] if con.parked else None
    return lowest is None or lowest == con.pos + 1


def _settle(view, key, before, after):
    """Writes a consumer's new state; a request whose gap closed goes."""
    req = ("req",) + key[1:]
    if view.get(req) and _gap_closed(after):
        view.overlay[req] = None
    if after != before:
        view.put(key, after)
        view.con_writes = True
        if before.parked and after.pos != before.pos:
            view.gap_lock = True


def trivial(con, seq):
    """An event that the committed state says changes nothing (stale, the
    dead letter again, parked already) changes nothing whatever a running
    call of the same resource commits: the call may wait for it or not."""
    return seq <= con.pos or (con.dead is not None and seq == con.dead.seq) \
        or seq in con.parked_dict()


def deliver(view, consumer, resource, seq, payload, handler=False,
            on_error="raise"):
    """deliver() in every form: returns the events run, [(seq, payload)]."""
    check_consumer_args(resource, seq)
    key = con_key(consumer, resource)
    if key not in view.overlay and trivial(view.committed(key, Con()), seq):
        view.may_lock(key)
        return []
    view.lock(key)
    con = view.get(key, Con())
    if seq <= con.pos:
        return []
    dead = con.dead
    parked = con.parked_dict()
    if dead is not None and seq == dead.seq:
        return []
    behind_dead = dead is not None and seq > dead.seq
    if seq == con.pos + 1 and not behind_dead:
        upto = dead.seq if dead else None
        run = handler_of(view, consumer, resource) if handler else None
        new, ran = _drain(con, upto, run, on_error, first=(seq, payload, False))
        _settle(view, key, con, new)
        return ran
    # early (or behind the dead letter): parked
    if seq in parked:
        return []
    if len(parked) >= MAX_PARKED:
        raise SqlError("54000", why="parking cap")
    parked[seq] = payload
    new = replace(con, parked=tuple(sorted(parked.items())))
    _settle(view, key, con, new)
    return []


def apply_if_newer(view, consumer, resource, seq):
    check_consumer_args(resource, seq)
    key = con_key(consumer, resource)
    committed = view.committed(key, Con())
    if seq <= committed.pos and key not in view.overlay:
        return False          # "returns false at once"
    view.lock(key)
    con = view.get(key, Con())
    if seq <= con.pos:
        return False
    new = replace(con, pos=seq, applied=con.applied + (seq,))
    _settle(view, key, con, new)
    return True


def _nothing_to_do(view, key, busy):
    """An operator call that finds nothing to do in the committed state may
    return at once or wait for the (consumer, resource)'s other calls: the
    contract serializes the calls, and a call that does nothing decides
    nothing."""
    if key in view.overlay or busy(view.committed(key, Con())):
        return False
    view.may_lock(key)
    return True


def skip_gap(view, consumer, resource):
    key = con_key(consumer, resource)
    if _nothing_to_do(view, key, lambda c: c.parked or c.dead):
        return []
    view.lock(key)
    con = view.get(key, Con())
    parked = con.parked_dict()
    if not parked:
        return []
    lowest = min(parked)
    if con.dead is not None:
        # not said by the contract, chosen as the code does it: the events
        # missing below a dead letter are given up too, up to the block
        lowest = min(lowest, con.dead.seq)
    skipped = replace(con, pos=lowest - 1)
    new, ran = _drain(skipped, con.dead.seq if con.dead else None)
    _settle(view, key, con, new)
    view.gap_lock = True
    return ran


def dead_letter(view, consumer, resource, seq, payload):
    check_consumer_args(resource, seq)
    key = con_key(consumer, resource)
    view.lock(key)
    con = view.get(key, Con())
    if seq <= con.pos:
        raise SqlError("22023", why="at or below the position")
    parked = con.parked_dict()
    if con.dead is not None:
        # not promised by the contract, chosen as the code does it: the
        # same event again counts an attempt; an earlier one takes the
        # block and the old dead event parks behind it
        if seq > con.dead.seq:
            raise SqlError("55000", why="behind the current dead letter")
        if seq == con.dead.seq:
            new = replace(con, dead=replace(con.dead, attempts=con.dead.attempts + 1,
                                            sqlstate=None))
            _settle(view, key, con, new)
            return
        parked[con.dead.seq] = con.dead.payload
    parked.pop(seq, None)
    new = replace(con, dead=Dead(seq, payload, None),
                  parked=tuple(sorted(parked.items())))
    _settle(view, key, con, new)


def retry_dead_letter(view, consumer, resource, handler=False):
    key = con_key(consumer, resource)
    if _nothing_to_do(view, key, lambda c: c.dead):
        return 0 if handler else []
    view.lock(key)
    con = view.get(key, Con())
    dead = con.dead
    if dead is None:
        return 0 if handler else []
    lifted = replace(con, dead=None)
    if dead.seq != con.pos + 1:
        # its predecessors have not all come: it parks
        parked = lifted.parked_dict()
        parked[dead.seq] = dead.payload
        new = replace(lifted, parked=tuple(sorted(parked.items())))
        _settle(view, key, con, new)
        return 0 if handler else []
    if handler and Handler.failure(dead.payload, resource) is not None:
        state = Handler.failure(dead.payload, resource)
        if transient(state):
            raise SqlError(state, why="transient failure on retry")
        new = replace(con, dead=replace(dead, attempts=dead.attempts + 1,
                                        sqlstate=state))
        _settle(view, key, con, new)
        return 0
    run = handler_of(view, consumer, resource) if handler else None
    new, ran = _drain(lifted, None, run, "dead_letter",
                      first=(dead.seq, dead.payload, False))
    _settle(view, key, con, new)
    view.gap_lock = True
    return len(ran) if handler else ran


def discard_dead_letter(view, consumer, resource):
    key = con_key(consumer, resource)
    if _nothing_to_do(view, key, lambda c: c.dead):
        return []
    view.lock(key)
    con = view.get(key, Con())
    dead = con.dead
    if dead is None:
        return []
    parked = {s: p for s, p in con.parked if s > dead.seq}
    lifted = replace(con, dead=None, pos=max(con.pos, dead.seq),
                     parked=tuple(sorted(parked.items())))
    new, ran = _drain(lifted)
    _settle(view, key, con, new)
    view.gap_lock = True
    return ran


def open_gap(con):
    """(missing_from, missing_to) of a consumer's open gap, or None; the
    second value says whether the contract leaves it open to choice."""
    if con.dead is not None:
        below = [s for s, _ in con.parked if s < con.dead.seq]
        if below:
            lowest = min(below)
        else:
            return None       # a gap below the block with nothing parked
    elif con.parked:
        lowest = con.parked[0][0]
    else:
        return None
    if lowest > con.pos + 1:
        return (con.pos + 1, lowest - 1)
    return None


def sweep_gaps(view):
    """The open gaps a sweep may request: {(consumer, resource): (missing_from,
    missing_to)}.  Which of them it must request depends on the age of the
    parked events (ordering.gap_deadline), which the state machine knows."""
    out = {}
    for key in view.keys("con"):
        gap = open_gap(view.get(key))
        if gap is not None:
            out[(key[1], key[2])] = gap
    return out


def requested(model, pairs):
    """A committed sweep requested these (consumer, resource) pairs."""
    for c, r in pairs:
        model.committed[("req", c, r)] = True


def newer_only_upsert(view, ident, version):
    key = ("proj", ident)
    view.lock(key)
    old = view.get(key)
    if old is None:
        view.put(key, version)
        return 1
    if version > old:
        view.put(key, version)
        return 1
    view.put(key, old)      # DO UPDATE locks the row; newer_only skips it
    return 0
