"""The hot path of a rollout beside its floors, per server: the ratios to track (issue #16).

For each server, in one process and with the same data:

- ``step read`` / ``step write``: median ``env.step`` of one gold call (the first read and the
  first write of the shipped tasks, reached by playing the task's gold up to it, untimed)
  through ``gymnasium.make``: parse, validate, run, commit or
  roll back, format. Floor: raw ``sqlite3`` running exactly the SQL statements that call ran
  (recorded by SQLite's trace callback, values inlined), fetching every row, committing for
  a write, on its own copy of the same state.
- ``reset``: median ``env.reset(options={"task": ...})``, after an episode that changed no
  row (its database is taken back as it is) and after one that wrote (the template's bytes
  are copied in again). Floor: a fresh ``copy.deepcopy`` of the same state held as plain
  dicts (every row of every table).
- ``state hash after a write``: median ``Workspace.state_hash()`` once the write above ran
  (the canonical hash, computed: the same state restored, untimed, before each, so no
  earlier answer is remembered); ``state hash, state untouched``: the same on a
  state no row of which changed (answered from the template's cached hash). Floor: SHA-256
  of the serialized database bytes (no canonical form: the least a hash can cost).

Each timing is the median of ``--n`` samples, the state restored (untimed) before each.
Run: ``python benchmarks/bench_fast_path.py [--servers calendar,banking] [--n 300]
[--tools calendar.get_event,calendar.add_invitee]``.
Targets (#16): step read <= 200 us and write <= 400 us on calendar, every server within 2x;
reset <= 100 us on every server.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import sqlite3
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium
from bench_core import p50_ms  # this folder is on the path when a benchmark runs

import prove_gym
from prove_gym import Workspace
from prove_gym.task import GoldStep, Task


def median_us(fn: Callable[[], Any], n: int, setup: Callable[[], Any] | None = None) -> float:
    return p50_ms(fn, n, setup) * 1e3


@dataclass(frozen=True)
class Picked:
    """A gold step of a shipped task, and the messages that lead the env up to it."""

    task: Task
    step: GoldStep
    before: tuple[GoldStep, ...]  # the gold steps run before it
    script: tuple[str, ...]  # assistant messages that reach it: earlier calls, turn ends

    @property
    def text(self) -> str:
        return call_text(self.step)


def pick_steps(server: str, wanted: frozenset[str] = frozenset()) -> dict[str, Picked]:
    """The first succeeding read and write gold step among the server's shipped tasks (of
    the tools in ``wanted`` where it names one of that kind)."""
    registry = prove_gym.get_registry()
    tools = registry.get_server(server).tools
    out: dict[str, Picked] = {}
    only = {("write" if tools[t].writes else "read"): t for t in sorted(wanted) if t in tools}
    for task in registry.tasks(server):
        if task.servers != [server]:
            continue
        before: list[GoldStep] = []
        script: list[str] = []
        with Workspace(task) as ws:
            for turn in task.turns:
                for step in turn.steps:
                    kind = "write" if tools[step.name].writes else "read"
                    ok = ws.call(step.name, step.arguments).result.ok
                    if ok and kind not in out and only.get(kind, step.name) == step.name:
                        out[kind] = Picked(task, step, tuple(before), tuple(script))
                    before.append(step)
                    script.append(call_text(step))
                script.append("Done.")
        if len(out) == 2:
            break
    for kind, name in sorted(only.items()):
        if kind not in out:  # no gold step calls it: one call on the first task's state
            picked = _first_call(server, name)
            if picked is not None:
                out[kind] = picked
    return out


def _first_call(server: str, name: str) -> Picked | None:
    """A call of ``name`` on the first shipped task's initial state, its required arguments
    the first listed entity of their kind (None when one is not an entity)."""
    registry = prove_gym.get_registry()
    spec = registry.get_server(server).tools[name]
    task = next(t for t in registry.tasks(server) if t.servers == [server])
    args: dict[str, Any] = {}
    with Workspace(task) as ws:
        session = ws.sessions[server]
        for p in spec.params:
            if not p.required:
                continue
            if p.entity is None:
                return None
            listed = session.list_entities(p.entity.name)
            if not listed:
                return None
            key = registry.get_server(server).entities[p.entity.name].key
            args[p.name] = [listed[0][key]] if p.entity.many else listed[0][key]
        if not session.call(name, args).ok:
            return None
    return Picked(task, GoldStep(id="s1", name=name, arguments=args), (), ())


def call_text(step: GoldStep) -> str:
    """The step as the env's default (Hermes) format reads a call."""
    hermes = prove_gym.get_registry().get_format("hermes")
    return hermes.render_calls([{"name": step.name, "arguments": step.arguments}])


def recorded(picked: Picked) -> tuple[bytes, list[str]]:
    """The state just before the step, and the SQL statements it runs (values inlined).

    Recorded by SQLite itself (its trace callback), so the statements a tool runs
    through the ORM and those it runs through ``ctx.sql`` are seen alike; the
    transaction's own BEGIN/COMMIT/ROLLBACK and the trigger markers are left out
    (the floor adds its own transaction).
    """
    with Workspace(picked.task) as ws:
        for step in picked.before:
            ws.call(step.name, step.arguments)
        session = ws.sessions[picked.task.server]
        data = session.snapshot()
        seen: list[str] = []
        raw = session.raw_connection
        raw.set_trace_callback(seen.append)
        try:
            session.call(picked.step.name, picked.step.arguments)
        finally:
            raw.set_trace_callback(None)
    skip = ("BEGIN", "COMMIT", "ROLLBACK", "--")
    statements: list[str] = []
    for sql in seen:
        if sql.lstrip().upper().startswith(skip):
            continue
        # each trigger a write fires is reported as the write's own text again: once is what ran
        if statements and sql == statements[-1] and not sql.lstrip().upper().startswith("SELECT"):
            continue
        statements.append(sql)
    return data, statements


def raw_floor(picked: Picked, writes: bool, n: int) -> float:
    """Median time of the same statements on raw sqlite3 (plus commit for a write)."""
    data, statements = recorded(picked)
    conn = sqlite3.connect(":memory:", isolation_level=None)

    def restore() -> None:
        conn.deserialize(data)

    def run() -> None:
        conn.execute("BEGIN")
        for sql in statements:
            conn.execute(sql).fetchall()
        conn.execute("COMMIT" if writes else "ROLLBACK")

    return median_us(run, n, restore)


def state_as_dicts(data: bytes) -> dict[str, list[dict[str, Any]]]:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(data)
    conn.row_factory = sqlite3.Row
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
        ).fetchall()
    ]
    return {t: [dict(r) for r in conn.execute(f'SELECT * FROM "{t}"').fetchall()] for t in tables}


def bench(
    server: str, n: int, wanted: frozenset[str] = frozenset()
) -> list[tuple[str, float, float, str]]:
    rows: list[tuple[str, float, float, str]] = []
    env = gymnasium.make(f"prove/{server}-v0")
    picked = pick_steps(server, wanted)
    for kind in ("read", "write"):
        p = picked.get(kind)
        if p is None:
            continue

        def setup(p: Picked = p) -> None:
            env.reset(options={"task": p.task})
            for message in p.script:
                env.step(message)

        text = p.text  # rendered once: the model's message exists before the step
        through = median_us(lambda text=text: env.step(text), n, setup)
        floor = raw_floor(p, kind == "write", n)
        rows.append((f"step {kind} ({p.step.name})", through, floor, "raw sqlite3"))
    task = next(iter(picked.values())).task
    with Workspace(task) as ws:
        data = ws.sessions[task.server].snapshot()
        untouched = median_us(ws.state_hash, n)
    dicts = state_as_dicts(data)
    copied = median_us(lambda: copy.deepcopy(dicts), n)
    # after an episode that changed no row, the database is taken back as it is
    reset = median_us(lambda: env.reset(options={"task": task}), n)
    rows.append(("reset after a read-only episode", reset, copied, "deepcopy of dicts"))
    written = picked.get("write")
    if written is not None:  # after an episode that wrote: the template's bytes copied in

        def wrote(p: Picked = written) -> None:
            env.reset(options={"task": p.task})
            for message in (*p.script, p.text):
                env.step(message)

        again = median_us(lambda: env.reset(options={"task": written.task}), n, wrote)
        rows.append(("reset after a write", again, copied, "deepcopy of dicts"))
    if written is not None:  # the end of an episode that wrote: the canonical hash, computed
        with Workspace(written.task) as ws:
            for step in (*written.before, written.step):
                ws.call(step.name, step.arguments)
            session = ws.sessions[written.task.server]
            changed = session.snapshot()
            # A session remembers its last hash until a row changes: restoring the same
            # state (untimed) makes each timed hash computed, as at the end of an episode.
            hashed = median_us(ws.state_hash, n, lambda: session.restore(changed))
        floor = median_us(lambda: hashlib.sha256(changed).digest(), n)
        rows.append(("state hash after a write", hashed, floor, "sha256 of bytes"))
    floor = median_us(lambda: hashlib.sha256(data).digest(), n)
    rows.append(("state hash, state untouched", untouched, floor, "sha256 of bytes"))
    env.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="all", help="comma-separated, or all")
    parser.add_argument("--n", type=int, default=300, help="samples per median")
    parser.add_argument(
        "--tools",
        default="",
        help="comma-separated server.tool: the read and write to time there (the issue's "
        "figures: calendar.get_event,calendar.add_invitee); else each server's first",
    )
    args = parser.parse_args()
    wanted: dict[str, set[str]] = {}
    for qualified in filter(None, args.tools.split(",")):
        server, _, tool = qualified.partition(".")
        wanted.setdefault(server, set()).add(tool)
    registry = prove_gym.get_registry()
    names = registry.servers if args.servers == "all" else args.servers.split(",")
    print(
        f"{'server':15s} {'figure':36s} {'prove_gym':>11s} {'floor':>10s} {'ratio':>7s}  floor is"
    )
    summary: dict[str, list[float]] = {}
    for name in sorted(names):
        for figure, ours, floor, what in bench(name, args.n, frozenset(wanted.get(name, ()))):
            ratio = ours / floor if floor else float("inf")
            key = figure.split(" (")[0]
            summary.setdefault(key, []).append(ours)
            print(f"{name:15s} {figure:36s} {ours:9.1f}us {floor:8.1f}us {ratio:7.2f}x  {what}")
    print()
    for key, values in summary.items():
        print(
            f"{key:12s} median over servers {statistics.median(values):8.1f} us, "
            f"worst {max(values):8.1f} us"
        )


if __name__ == "__main__":
    main()
