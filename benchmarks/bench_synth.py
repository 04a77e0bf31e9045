"""Synthesis throughput per server, each figure beside baselines measured in the same run.

- validated: ``synthesize`` in one process with warm caches (state templates and
  entity lists of the seed pool already built by a warm-up run with another
  master seed): validated tasks per second of wall time and of CPU time.
- baseline "execute": the same tasks' gold calls executed once on a reset session
  (no grounding, rendering, retries, replay or hashing): what the tools alone cost.
- baseline "sample": chain sampling alone (graph walk, no state): chains per second.
- calls/task: tool calls synthesis executed per kept task (attempts, repairs,
  dropped candidates and the replay included); the gold calls per task beside it.
- end to end: ``prove-gym synth --servers all --n N`` in a fresh process (imports,
  template sampling and entity listing included), per worker count, ``--repeat`` times:
  the median of its CPU-seconds (user + sys of the process and its workers), validated
  tasks per CPU-second and distinct initial states ``(server, seed, size)`` per 1,000
  tasks. Beside it, two baselines measured in this process: *start-up* (a fresh
  process that imports prove_gym and loads every plugin, nothing else) and *states*
  (sampling the run's own distinct states again, with the state hash and the entity
  listing synthesis takes of each): what the run would cost if its tasks were free.

Run: ``python benchmarks/bench_synth.py [--servers all] [--n-per-server 60] [--full-n 1000]
[--workers 1,2] [--repeat 3] [--skip-full] [--skip-servers]``. Targets (issue #43): at
``--full-n 1000``, >= 250 distinct states per 1,000 tasks and >= 70 validated tasks per
CPU-second. The machine's load average is printed: on a shared machine wall times
stretch, CPU times much less.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import prove_gym
from prove_gym.server.session import Session
from prove_gym.synth import SynthConfig, build_graph, synthesize
from prove_gym.synth.chains import ChainSampler
from prove_gym.synth.grounding import EntityIndex


def measure_server(server: str, n: int, state_seeds: int) -> dict[str, float]:
    warm = SynthConfig(servers=(server,), n=max(8, n // 4), seed=1000, state_seeds=state_seeds)
    synthesize(warm)
    cfg = SynthConfig(servers=(server,), n=n, seed=1, state_seeds=state_seeds)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    result = synthesize(cfg)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    tasks = result.tasks
    executed = sum(t.meta["calls"] for t in tasks)
    gold = sum(len(t.steps) for t in tasks)

    srv = prove_gym.get_server(server)
    sessions: dict[int, Session] = {}
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for task in tasks:
        session = sessions.get(task.seed)
        if session is None:
            session = sessions[task.seed] = srv.session(task.seed, task.size)
        session.reset()
        for step in task.steps:
            session.call(step.name, step.arguments)
    exec_wall, exec_cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    for session in sessions.values():
        session.close()

    sampler = ChainSampler(srv, build_graph(srv))
    rng = random.Random(0)
    names = list(sampler.specs)
    k = 2000
    cpu0 = time.process_time()
    for i in range(k):
        sampler.sample(rng, names[i % len(names)], 2 + i % 4, lambda t: 1.0)
    sample_cpu = time.process_time() - cpu0

    # calls made while synthesizing: the executed calls of kept tasks, the replay of
    # their gold calls, and the calls of dropped candidates (estimated from the kept mean)
    per_kept = executed / len(tasks)
    dropped = result.candidates - len(tasks)
    calls_per_task = (executed + gold + dropped * per_kept) / len(tasks)
    return {
        "tasks": len(tasks),
        "kept": len(tasks) / result.candidates,
        "wall_rate": len(tasks) / wall,
        "cpu_rate": len(tasks) / cpu,
        "exec_wall_rate": len(tasks) / exec_wall,
        "exec_cpu_rate": len(tasks) / exec_cpu,
        "sample_rate": k / sample_cpu,
        "calls_per_task": calls_per_task,
        "gold_per_task": gold / len(tasks),
    }


def end_to_end(n: int, workers: int, state_seeds: int) -> dict[str, Any]:
    """One fresh ``prove-gym synth --servers all --n n`` run: its CPU-seconds (user + sys of
    the process and its workers, from ``RUSAGE_CHILDREN``), wall time, tasks, distinct
    states and unused tools."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable,
            "-m",
            "prove_gym",
            "synth",
            "--servers",
            "all",
            "--n",
            str(n),
            "--out",
            tmp,
            "--workers",
            str(workers),
            "--state-seeds",
            str(state_seeds),
            "--no-progress",
        ]
        cpu0 = _children_cpu()
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        cpu = _children_cpu() - cpu0
        if proc.returncode not in (0, 1):
            raise RuntimeError(proc.stderr[-2000:])
        report = json.loads((Path(tmp) / "report.json").read_text())
        states = sorted(
            {
                (t["servers"][0], t["seed"], t["size"])
                for split in ("train", "test")
                for t in map(json.loads, (Path(tmp) / f"{split}.jsonl").read_text().splitlines())
            }
        )
        unused = [f"{s}.{t}" for s, ts in report["unused_tools"].items() for t in ts]
        return {
            "cpu": cpu,
            "wall": wall,
            "tasks": report["totals"]["tasks"],
            "test": report["totals"]["test"],
            "states": states,
            "unused": unused,
        }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def startup_cpu() -> float:
    """CPU-seconds of a fresh process that imports prove_gym and loads every plugin."""
    cpu0 = _children_cpu()
    code = "import prove_gym; prove_gym.get_registry().servers"
    subprocess.run([sys.executable, "-c", code], check=True)
    return _children_cpu() - cpu0


def states_cpu(states: list[tuple[str, int, int]]) -> float:
    """CPU-seconds of building ``states`` from scratch as synthesis does for each: the
    sampler, the state hash and the entity listing (the registry already loaded)."""
    registry = prove_gym.get_registry()
    cpu0 = time.process_time()
    for server, seed, size in states:
        srv = registry.get_server(server)
        template = srv.sample(seed, size)
        template.canonical_hash(srv.base.metadata)
        with Session(srv, template) as session:
            EntityIndex.of(session)
    return time.process_time() - cpu0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", default="all")
    ap.add_argument("--n-per-server", type=int, default=60)
    ap.add_argument("--state-seeds", type=int, default=10)
    ap.add_argument("--full-n", type=int, default=1000)
    ap.add_argument("--workers", default="1,2", help="worker counts for the end-to-end runs")
    ap.add_argument("--repeat", type=int, default=3, help="end-to-end runs per worker count")
    ap.add_argument("--skip-full", action="store_true", help="no end-to-end runs")
    ap.add_argument("--skip-servers", action="store_true", help="no per-server table")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    if not args.skip_servers:
        per_server(args)
    if not args.skip_full:
        full_runs(args)


def per_server(args: argparse.Namespace) -> None:
    servers = (
        list(prove_gym.get_registry().servers) if args.servers == "all" else args.servers.split(",")
    )
    head = (
        f"{'server':<14} {'tasks':>5} {'kept':>5} {'valid/s wall':>12} {'valid/s cpu':>11} "
        f"{'exec/s cpu':>10} {'sample/s':>9} {'calls/task':>10} {'gold/task':>9}"
    )
    print(head)
    print("-" * len(head))
    rows = []
    for server in servers:
        r = measure_server(server, args.n_per_server, args.state_seeds)
        rows.append(r)
        print(
            f"{server:<14} {r['tasks']:>5} {100 * r['kept']:>4.0f}% {r['wall_rate']:>12.1f} "
            f"{r['cpu_rate']:>11.1f} {r['exec_cpu_rate']:>10.1f} {r['sample_rate']:>9.0f} "
            f"{r['calls_per_task']:>10.1f} {r['gold_per_task']:>9.1f}",
            flush=True,
        )
    total = sum(r["tasks"] for r in rows)
    cpu = sum(r["tasks"] / r["cpu_rate"] for r in rows)
    wall = sum(r["tasks"] / r["wall_rate"] for r in rows)
    execute = sum(r["tasks"] / r["exec_cpu_rate"] for r in rows)
    print("-" * len(head))
    print(
        f"{'all':<14} {total:>5} {'':>5} {total / wall:>12.1f} {total / cpu:>11.1f} "
        f"{total / execute:>10.1f}"
    )
    print(
        f"\nvalidated tasks per CPU-second: {total / cpu:.1f} (target >= 100). Executing the "
        f"same gold chains once, with nothing else, runs at {total / execute:.1f}/s: the bare "
        f"tool calls of the kept tasks are {execute / cpu:.0%} of synthesis time."
    )


def full_runs(args: argparse.Namespace) -> None:
    n = args.full_n
    print(
        f"\nend to end: prove-gym synth --servers all --n {n} (fresh process; medians of "
        f"{args.repeat} runs)"
    )
    states: list[tuple[str, int, int]] = []
    for workers in [int(w) for w in args.workers.split(",")]:
        runs = [end_to_end(n, workers, args.state_seeds) for _ in range(args.repeat)]
        cpu = statistics.median(r["cpu"] for r in runs)
        wall = statistics.median(r["wall"] for r in runs)
        run = runs[0]  # every run writes the same bytes
        states = run["states"]
        per_1000 = 1000 * len(states) / run["tasks"]
        unused = run["unused"]
        more = f" and {len(unused) - 5} more" if len(unused) > 5 else ""
        note = f"unused tools: {', '.join(unused[:5])}{more}" if unused else "every tool used"
        print(
            f"  --workers {workers}: {cpu:6.1f} CPU-s ({wall:.1f} s wall), {run['tasks']} tasks "
            f"({run['test']} test): {run['tasks'] / cpu:.1f} validated tasks per CPU-second; "
            f"{len(states)} distinct states ({per_1000:.0f} per 1,000 tasks); {note}",
            flush=True,
        )
    startup = statistics.median(startup_cpu() for _ in range(args.repeat))
    built = states_cpu(states)
    print(
        f"  baselines: start-up (import, load the plugins) {startup:.1f} CPU-s; building the "
        f"run's {len(states)} states (sample, hash, list entities) {built:.1f} CPU-s, "
        f"{1000 * built / max(1, len(states)):.0f} ms each. With its tasks free, a run would "
        f"do {n / (startup + built):.0f} tasks per CPU-second."
    )
    print("  targets (issue #43): >= 250 states per 1,000 tasks, >= 70 tasks per CPU-second")


if __name__ == "__main__":
    main()
