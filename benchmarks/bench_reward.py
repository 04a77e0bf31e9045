"""Trajectories scored per second, beside the cost of executing the same calls on a session.

The task has 5 gold calls on the calendar (a search, a write, two writes that
depend on it, a read that depends on both). The baseline executes those 5
calls on a session, after resetting it to the initial state (writes commit, so
each round must start fresh: that is the per-episode cost an env pays). The
scoring rows score the trajectory those calls produced, the way the env does
(live records plus the final state hash, gold hash cached), the way an offline
user does (plain dicts), for a messy trajectory (repeats and an out-of-order
call, so the alignment search branches), with a copy of the task each time
(what the env scores: found in the content-keyed cache) and with a task of
new content each time (the per-task preparation, paid once per task).

Every case runs in alternating blocks in one process and the best block is
reported. Time is this process's CPU time (``time.process_time``), so other
processes competing for the cores do not count against either side; the table
also shows the wall-clock rate of the same best block. One core: no threads, no
processes.

Run: ``python benchmarks/bench_reward.py`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import sys
import time
from collections.abc import Callable
from typing import Any

import prove_gym
from prove_gym import Task, Workspace
from prove_gym.reward import RewardConfig, score

TARGET = 20_000
PAPER = RewardConfig.preset("paper")
TASK = Task.from_json(
    {
        "id": "bench-5",
        "servers": ["calendar"],
        "seed": 7,
        "turns": [
            {
                "user": "Move my yoga class on 2026-03-30 to 19:30, repeat it weekly 8 times, "
                "invite ana.silva@acme.com, and show me the result.",
                "steps": [
                    {
                        "id": "s1",
                        "name": "search_events",
                        "arguments": {
                            "query": "yoga",
                            "start_date": "2026-03-30",
                            "end_date": "2026-03-30",
                        },
                    },
                    {
                        "id": "s2",
                        "name": "update_event",
                        "arguments": {"event_id": "evt_0247", "start": "2026-03-30T19:30"},
                        "depends_on": ["s1"],
                    },
                    {
                        "id": "s3",
                        "name": "set_recurrence",
                        "arguments": {"event_id": "evt_0247", "frequency": "weekly", "count": 8},
                        "depends_on": ["s2"],
                    },
                    {
                        "id": "s4",
                        "name": "add_invitee",
                        "arguments": {"event_id": "evt_0247", "email": "ana.silva@acme.com"},
                        "depends_on": ["s2"],
                    },
                    {
                        "id": "s5",
                        "name": "get_event",
                        "arguments": {"event_id": "evt_0247"},
                        "depends_on": ["s3", "s4"],
                    },
                ],
            }
        ],
    }
)


def best_rate(
    cases: dict[str, Callable[[], object]], number: int, blocks: int
) -> dict[str, tuple[float, float]]:
    """(CPU, wall) rate of each case: its best of ``blocks`` alternating blocks of ``number``."""
    best = dict.fromkeys(cases, (0.0, 0.0))
    for _ in range(blocks):
        for name, fn in cases.items():
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(number):
                fn()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            rate = (number / max(cpu, 1e-9), number / wall)
            best[name] = max(best[name], rate)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter blocks")
    args = parser.parse_args()
    number, blocks = (300, 3) if args.quick else (2000, 7)

    gold = [(s.name, s.arguments) for s in TASK.steps]
    workspace = Workspace(TASK)
    session = workspace.sessions["calendar"]
    records = workspace.replay(gold)
    assert all(r.result.ok for r in records), [r.result for r in records]
    final_hash = workspace.state_hash()
    dicts = [r.to_dict() for r in records]
    messy = [records[0], records[1], records[4], records[1], records[2], records[3], records[0]]
    check = score(TASK, records, final_state_hash=final_hash)
    assert check.total == check.max_total and check.components["state"] == 1.0

    def execute() -> None:
        session.reset()
        for name, arguments in gold:
            workspace.call(name, arguments)

    def copied_task() -> None:
        score(TASK.model_copy(), records, final_state_hash=final_hash)

    ids = (f"bench-5-{i}" for i in itertools.count())

    def new_task() -> None:
        task = TASK.model_copy(update={"id": next(ids), "final_state_hash": final_hash})
        score(task, records, final_state_hash=final_hash)

    cases: dict[str, Callable[[], object]] = {
        "execute 5 calls (reset + 5 Session.call)": execute,
        "score: env path (records + final hash)": lambda: score(
            TASK, records, final_state_hash=final_hash
        ),
        "score: offline dicts": lambda: score(TASK, dicts),
        "score: messy 7 calls (search branches)": lambda: score(
            TASK, messy, final_state_hash=final_hash
        ),
        "score: copy of the task (content cache)": copied_task,
        "score: new task content (prepare uncached)": new_task,
    }
    rates = best_rate(cases, number, blocks)
    workspace.close()

    base = rates["execute 5 calls (reset + 5 Session.call)"][0]
    width = max(len(k) for k in cases)
    print(f"prove_gym {prove_gym.__version__}: reward scoring vs execution, 5-call calendar task")
    header = f"{'case':<{width}}  {'per CPU s':>10}  {'us each':>8}  {'x execution':>11}  {'per wall s':>10}"
    print(header)
    for name, (rate, wall) in rates.items():
        print(
            f"{name:<{width}}  {rate:>10,.0f}  {1e6 / rate:>8.1f}  {rate / base:>11.1f}  {wall:>10,.0f}"
        )
    env_rate = rates["score: env path (records + final hash)"][0]
    verdict = "meets" if env_rate >= TARGET else "MISSES"
    print(f"target >= {TARGET:,} scorings/s on one core: {verdict} ({env_rate:,.0f}/s)")
    print()
    growth(quick=args.quick)


def repeated_tool_task(k: int, *, chain: bool) -> Task:
    """A search, then k add_invitee steps: each after the search, or each after the last."""
    steps: list[dict[str, object]] = [
        {"id": "s0", "name": "search_events", "arguments": {"query": "Sprint planning"}}
    ]
    for i in range(1, k + 1):
        steps.append(
            {
                "id": f"s{i}",
                "name": "add_invitee",
                "arguments": {"event_id": "evt_0082", "email": f"guest{i}@example.org"},
                "depends_on": [f"s{i - 1}" if chain else "s0"],
            }
        )
    kind = "chain" if chain else "fan"
    return Task.from_json(
        {
            "id": f"growth-{kind}-{k}",
            "servers": ["calendar"],
            "seed": 7,
            "turns": [{"user": "Invite them all.", "steps": steps}],
        }
    )


def growth(quick: bool) -> None:
    """Milliseconds per score() of k calls of one tool against k gold steps of it, k = 2 … 64.

    Live records (the gold calls executed, then reversed after the search) and the final
    hash, as the env scores; the task is prepared and its gold replayed before timing.
    Rows: the default config (entity ids must match, so each call fits one step); the
    paper's (keys only: every call fits every step, the alignment is a real assignment
    problem); a chain of steps under the paper's rules (the DP fallback, a bounded beam).
    Beside each, the same alignment forced through the exhaustive DP where that finishes.
    """
    coverage: Any = sys.modules["prove_gym.reward.coverage"]  # `reward.coverage` is a function
    ks = (2, 4, 8, 16, 32, 64)
    print("score() of k calls of one tool (ms per call, best of blocks; 'dp' = exhaustive DP)")
    print(f"{'k':>4}  {'default':>9}  {'paper':>9}  {'paper dp':>9}  {'chain':>9}")
    number = 3 if quick else 10
    for k in ks:
        row = []
        for chain, config in ((False, RewardConfig()), (False, PAPER), (True, PAPER)):
            task = repeated_tool_task(k, chain=chain)
            with Workspace(task) as ws:
                gold = [(s.name, s.arguments) for s in task.steps]
                records = [ws.call(n, a) for n, a in gold]
                final = ws.state_hash()
            calls = [records[0], *reversed(records[1:])]
            score(task, calls, config=config, final_state_hash=final)  # prepare, gold replay
            run = functools.partial(score, task, calls, config=config, final_state_hash=final)
            row.append(_best_ms(run, number))
            if not chain and config is PAPER:
                if k <= 12:
                    saved = coverage.MAX_ASSIGNMENTS
                    coverage.MAX_ASSIGNMENTS = 0
                    try:
                        row.append(_best_ms(run, number))
                    finally:
                        coverage.MAX_ASSIGNMENTS = saved
                else:
                    row.append(float("nan"))
        cells = "  ".join(f"{v:>9.2f}" if v == v else f"{'(2^k)':>9}" for v in row)
        print(f"{k:>4}  {cells}")
    print("target: score() on 64 calls of one tool under 10 ms")


def _best_ms(fn: Callable[[], object], number: int) -> float:
    best = float("inf")
    for _ in range(number):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best * 1000


if __name__ == "__main__":
    main()
