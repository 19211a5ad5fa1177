"""Runs the model-based tester for a time budget.

    python3 test/model/main.py --bindir DIR --workdir DIR [--minutes N] [--seed S]

Starts a server of its own in WORKDIR (the bindir of a PostgreSQL with the
extension installed), then runs examples until the budget is spent: Hypothesis
draws them from seed S, so a run with the same seed replays the same
examples in the same order.  On a failure Hypothesis shrinks the example to
a minimal one, and its statements are printed as a SQL script that replays
it (also kept as WORKDIR/failing.sql).
"""

import argparse
import os
import random
import sys
import time
import traceback

import hypothesis
import hypothesis.core
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import model  # noqa: E402
from driver import Driver, ReplayLog, Server  # noqa: E402
from machine import Env, OrderingMachine, TimeUp  # noqa: E402


def time_up_in(e):
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, TimeUp):
            return e
        seen.add(id(e))
        e = e.__context__ or e.__cause__
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bindir", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--minutes", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--steps", type=int, default=30, help="steps per example")
    p.add_argument("--sessions", type=int, default=3)
    a = p.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 10**9)
    print(f"model-based tester: seed {seed}, {a.minutes} minutes "
          f"(reproduce: bash test/model/run.sh --minutes {a.minutes:g} --seed {seed})", flush=True)

    failing = os.path.join(a.workdir, "failing.sql")
    if os.path.exists(failing):
        os.remove(failing)
    server = Server(os.path.join(a.workdir, "server"), a.bindir, model.MAX_PARKED)
    server.init()
    with server.connect() as c:
        c.execute("CREATE DATABASE model_template")
    with server.connect("model_template") as c:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema.sql")) as f:
            c.execute(f.read())
    Env.server = server
    Env.out_dir = a.workdir
    with server.connect() as c:
        c.execute("CREATE DATABASE model_0 TEMPLATE model_template")
    Env.dbname = "model_0"
    Env.driver = Driver(server, "model_0", a.sessions, None)

    started = time.monotonic()
    Env.deadline = started + a.minutes * 60
    Env.seed_note = f"seed {seed}"
    hypothesis.core.global_force_seed = seed
    failed = None
    try:
        run_state_machine_as_test(OrderingMachine, settings=settings(
            max_examples=10**6, stateful_step_count=a.steps, deadline=None,
            database=None, suppress_health_check=list(HealthCheck),
            phases=[Phase.generate, Phase.shrink], print_blob=False))
    except TimeUp as e:
        if Env.failed_at is not None:
            failed = f"the failure below; {e}"
    except Exception as e:
        # Hypothesis may wrap the end of the budget in an error of its own
        time_up = time_up_in(e)
        if time_up is None or Env.failed_at is not None:
            failed = traceback.format_exc() if time_up is None else f"the failure below; {time_up}"
    elapsed = time.monotonic() - started
    ops = ", ".join(f"{k} {v}" for k, v in sorted(Env.ops.items()))
    print(f"{Env.examples} examples, {Env.steps} steps, {elapsed:.0f}s; statements: {ops}")
    try:
        server.stop()
    except Exception:
        pass
    if failed:
        print(failed)
        path = os.path.join(a.workdir, "failing.sql")
        if os.path.exists(path):
            print(f"======== the shrunk example as a SQL script ({path}):")
            with open(path) as f:
                print(f.read())
        print(f"FAILED: found after {Env.failed_at - started:.0f}s, shrunk in "
              f"{elapsed - (Env.failed_at - started):.0f}s (seed {seed}); reproduce: "
              f"bash test/model/run.sh --minutes {a.minutes:g} --seed {seed}")
        return 1
    print("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
