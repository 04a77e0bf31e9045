"""Core speed and memory, per server, each figure beside a baseline measured in the same run.

- reset: a session cloned from the cached template vs. sampling the state from scratch;
  also an in-place ``Session.reset()``.
- tool calls: p50 of a read and a write call through ``Session.call`` (validation,
  transaction, JSON conversion) vs. the bare tool function on the same state.
- memory: RSS growth per live session over N sessions vs. the template's size.

Run: ``python benchmarks/bench_core.py [--servers calendar,banking] [--sessions 1000]``.
Targets (issue #2): reset p50 <= 0.5 ms and >= 50x faster than from scratch;
read call p50 <= 0.3 ms; write call p50 <= 0.6 ms.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import prove_gym
from prove_gym import Server, Session
from prove_gym.server.tool import ToolSpec


def p50_ms(fn: Callable[[], Any], n: int, setup: Callable[[], Any] | None = None) -> float:
    samples = []
    for _ in range(n):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e3


MEMORY_PROBE = """
import gc, os, sys
import prove_gym
server = prove_gym.get_server(sys.argv[1])
seed, n = int(sys.argv[2]), int(sys.argv[3])
server.session(seed).close()  # template sampled and cached before measuring

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

gc.collect()
before = rss()
live = [server.session(seed) for _ in range(n)]
gc.collect()
print((rss() - before) / n)
"""


def memory_per_session(name: str, seed: int, n: int) -> float:
    """RSS growth per live session, measured in a fresh process (no freed memory to reuse)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, name, str(seed), str(n)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip())


def pick_calls(server: Server) -> dict[str, tuple[ToolSpec, dict, bytes, int]]:
    """A read and a write gold step from the server's tasks, with the state just before it."""
    picked: dict[str, tuple[ToolSpec, dict, bytes, int]] = {}
    for task in prove_gym.get_registry().tasks(server.name):
        session = server.session(task.seed, task.size)
        for step in task.steps:
            spec = server.tools.get(step.name)
            snap = session.snapshot()
            result = session.call(step.name, step.arguments)
            if spec is None or not result.ok:
                continue
            kind = "write" if spec.writes else "read"
            picked.setdefault(kind, (spec, step.arguments, snap, task.seed))
        session.close()
        if len(picked) == 2:
            break
    return picked


def bench_server(server: Server, n_sessions: int) -> list[tuple[str, str, str, str]]:
    rows: list[tuple[str, str, str, str]] = []
    seed = 7
    template = server.template(seed)
    scratch = p50_ms(lambda: server.sample(seed), 5)
    clone = p50_ms(lambda: server.session(seed).close(), 300)
    s = server.session(seed)
    in_place = p50_ms(s.reset, 300)
    rows.append(
        (
            "reset (new session from template)",
            f"{clone:.3f} ms",
            f"{scratch:.1f} ms from scratch",
            f"{scratch / clone:,.0f}x faster",
        )
    )
    rows.append(
        ("reset (Session.reset in place)", f"{in_place:.3f} ms", "", f"{scratch / in_place:,.0f}x")
    )

    for kind, (spec, args, snap, call_seed) in sorted(pick_calls(server).items()):
        sess = server.session(call_seed)
        # Every timed call starts from the state the task had just before it (untimed restore).
        restore = lambda ss=sess, sn=snap: ss.restore(sn)  # noqa: E731
        restore()
        through = p50_ms(lambda ss=sess, sp=spec, a=args: ss.call(sp.name, a), 300, restore)
        kwargs = spec.validate(args)

        def bare(ss: Session = sess, sp: ToolSpec = spec, kw: dict = kwargs) -> None:
            sp.fn(ss._ctx, **kw)
            ss.rollback()

        base = p50_ms(bare, 300, restore)
        rows.append(
            (
                f"{kind} call: {spec.name}",
                f"{through:.3f} ms",
                f"{base:.3f} ms bare function",
                f"{through / base:.2f}x of bare",
            )
        )
        sess.close()

    per = memory_per_session(server.name, seed, n_sessions)
    rows.append(
        (
            f"memory per live session ({n_sessions})",
            f"{per / 1024:.0f} KiB",
            f"{len(template.data) / 1024:.0f} KiB template",
            f"{per / len(template.data):.2f}x template",
        )
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="all", help="comma-separated names, or 'all'")
    parser.add_argument("--sessions", type=int, default=1000, help="live sessions for memory")
    args = parser.parse_args()
    servers = prove_gym.get_registry().servers
    names = list(servers) if args.servers == "all" else args.servers.split(",")
    print(f"{'server':<14} {'measure':<40} {'ours':>11}   {'baseline':<26} ratio")
    for name in names:
        for measure, ours, base, ratio in bench_server(servers[name], args.sessions):
            print(f"{name:<14} {measure:<40} {ours:>11}   {base:<26} {ratio}")


if __name__ == "__main__":
    main()
