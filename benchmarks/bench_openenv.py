"""Episodes over the network: the OpenEnv server's sessions, steps/s and step latency.

One ``prove-gym serve --openenv calendar`` process (a subprocess, as users run it) holds
every session; a client process drives 1, 64 and 1,000 concurrent sessions with OpenEnv's
own client (:class:`~prove_gym.adapters.openenv.ProveEnvClient`, one WebSocket session
each, all on one asyncio loop). Each session resets to calendar's first shipped task and
plays ``--steps`` steps, each one read call (``call_tool list_calendars``, then
``get_event``, alternating; a fresh episode every 30 calls, its reset untimed, as one
assistant message runs at most 32), timing every step from send to answer; sessions open and
reset before the clock starts and stay open until every session has finished, so the
server holds all of them at once. Reported per concurrency: aggregate steps/s (wall
clock), p50 and p99 step latency, and the server process's resident memory per open
session (RSS with the sessions open minus RSS before, divided by their number).

Beside them, the same steps in this process with no network: ``Episode.call`` on one
:class:`~prove_gym.episode.Episode` per session, the engine the server runs; the ratio is
the server's steps/s over that. In-process memory per episode is measured the same way
(RSS with the episodes open minus before).

Isolation under load: after the timed steps, every open session creates an event titled
``bench-w<k>`` at once and then searches ``bench-w``; a session that does not find exactly its
own event counts as a lost or crossed write (the table's column; it must be 0).

Needs OpenEnv (``pip install 'prove-gym[openenv]'``). Run:
``python benchmarks/bench_openenv.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import statistics
import sys
import time

import prove_gym
from prove_gym.adapters.openenv import ProveAction, ProveEnvClient
from prove_gym.episode import Episode
from prove_gym.testing.served import ServedHTTP

CALLS = [("list_calendars", {}), ("get_event", {"event_id": "evt_0001"})]
PER_EPISODE = 30
"""``call_tool`` steps per episode before a fresh one: they all belong to one assistant
message, which runs at most 32 calls (``EpisodeCaps.max_calls_per_message``)."""


def rss_mib(pid: int) -> float:
    """Resident memory of process ``pid`` in MiB (Linux ``/proc``)."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def action(i: int) -> ProveAction:
    name, arguments = CALLS[i % len(CALLS)]
    return ProveAction(type="call_tool", tool_name=name, arguments=arguments)


async def over_the_wire(base: str, pid: int, sessions: int, steps: int) -> dict[str, float]:
    """``sessions`` concurrent sessions of ``steps`` steps each on the server at ``base``."""
    before = rss_mib(pid)
    clients = [ProveEnvClient(base_url=base, message_timeout_s=600) for _ in range(sessions)]
    opening = asyncio.Semaphore(64)  # open and reset 64 at a time: the handshake is not timed

    async def open_one(env: ProveEnvClient) -> None:
        async with opening:
            await env.connect()
            await env.reset(split="calendar", index=0)

    await asyncio.gather(*(open_one(env) for env in clients))
    held = rss_mib(pid)
    latencies: list[float] = []

    async def play(env: ProveEnvClient) -> None:
        for i in range(steps):
            if i and i % PER_EPISODE == 0:  # a fresh episode before the call cap (not timed)
                await env.reset(split="calendar", index=0)
            t = time.perf_counter()
            result = await env.step(action(i))
            latencies.append(time.perf_counter() - t)
            assert result.observation.calls[0]["result"]["status"] == "ok"

    start = time.perf_counter()
    await asyncio.gather(*(play(env) for env in clients))
    wall = time.perf_counter() - start

    async def write_and_check(k: int, env: ProveEnvClient) -> bool:
        """Session ``k`` creates event ``bench-w<k>`` (every session at once), then searches
        for ``bench-w``: it must find its own event and no other session's."""
        await env.reset(split="calendar", index=0)
        title = f"bench-w{k}"
        made = await env.step(
            ProveAction(
                type="call_tool",
                tool_name="create_event",
                arguments={"calendar_id": "cal_01", "title": title, "start": "2026-09-01T10:00"},
            )
        )
        seen = await env.step(
            ProveAction(
                type="call_tool",
                tool_name="search_events",
                arguments={"query": "bench-w", "limit": 50},
            )
        )
        found = set(re.findall(r"bench-w\d+", json.dumps(seen.observation.calls[0]["result"])))
        return made.observation.calls[0]["result"]["status"] == "ok" and found == {title}

    checked = await asyncio.gather(*(write_and_check(k, env) for k, env in enumerate(clients)))
    await asyncio.gather(*(env.close() for env in clients))
    return {
        "steps_per_s": sessions * steps / wall,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * percentile(latencies, 0.99),
        "mib_per_session": (held - before) / sessions,
        "writes_wrong": float(checked.count(False)),
    }


def in_process(sessions: int, steps: int) -> dict[str, float]:
    """The same steps on ``sessions`` Episodes held at once in this process."""
    task = prove_gym.get_registry().tasks("calendar")[0]
    Episode(task).close()  # the state template, cached before the measurement
    gc.collect()
    before = rss_mib(os.getpid())
    episodes = [Episode(task) for _ in range(sessions)]
    held = rss_mib(os.getpid())
    latencies = []
    start = time.perf_counter()
    for i in range(steps):  # round robin, as the server interleaves its sessions
        name, arguments = CALLS[i % len(CALLS)]
        if i and i % PER_EPISODE == 0:
            for episode in episodes:
                episode.close()
            episodes = [Episode(task) for _ in range(sessions)]
        for episode in episodes:
            t = time.perf_counter()
            record = episode.call(name, arguments)
            latencies.append(time.perf_counter() - t)
            assert record.result.ok
    wall = time.perf_counter() - start
    for episode in episodes:
        episode.close()
    return {
        "steps_per_s": sessions * steps / wall,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * percentile(latencies, 0.99),
        "mib_per_session": (held - before) / sessions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    parser.add_argument(
        "--sessions", type=int, nargs="+", default=[1, 64, 1000], help="concurrencies"
    )
    parser.add_argument("--steps", type=int, default=None, help="steps per session")
    args = parser.parse_args()
    steps_for = {
        n: args.steps or (8 if args.quick else max(10, min(400, 4000 // n))) for n in args.sessions
    }
    most = max(args.sessions)
    served = ServedHTTP(["--openenv", "calendar", "--max-sessions", str(most + 16)], timeout=120)
    rows: list[tuple[int, int, dict[str, float], dict[str, float]]] = []
    try:
        pid = served.proc.pid
        asyncio.run(over_the_wire(served.base, pid, 4, 4))  # warm up: template, code paths
        for n in args.sessions:
            wire = asyncio.run(over_the_wire(served.base, pid, n, steps_for[n]))
            local = in_process(n, steps_for[n])
            rows.append((n, steps_for[n], wire, local))
            print(f"measured {n} sessions", file=sys.stderr, flush=True)
        server_rss = rss_mib(pid)
    finally:
        served.stop()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"{os.cpu_count()} cores, load average {load}; server RSS at the end {server_rss:,.0f} MiB"
    )
    print()
    print("| sessions | steps each | steps/s | p50 ms | p99 ms | MiB/session | writes lost or crossed "
          "| in process steps/s | p50 ms | p99 ms | MiB/episode | ratio |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, steps, wire, local in rows:
        print(
            f"| {n:,} | {steps} | {wire['steps_per_s']:,.0f} | {wire['p50_ms']:.2f} "
            f"| {wire['p99_ms']:.2f} | {wire['mib_per_session']:.3f} "
            f"| {wire['writes_wrong']:.0f} of {n:,} "
            f"| {local['steps_per_s']:,.0f} | {local['p50_ms']:.3f} | {local['p99_ms']:.3f} "
            f"| {local['mib_per_session']:.3f} "
            f"| {wire['steps_per_s'] / local['steps_per_s']:.0%} |"
        )
    print()
    print("ratio = the server's steps/s over the same steps in process (Episode.call).")
    print(
        "writes lost or crossed: after the timed steps every session creates an event of its own"
        " at once, then searches; a session that misses its event or sees another's counts."
    )


if __name__ == "__main__":
    main()
