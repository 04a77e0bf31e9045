"""``Episode.fork()`` mid-task, beside its floor, and the memory a live fork holds.

- fork: the median time of ``episode.fork()`` on an episode two calls into calendar-002
  (one read, one write: its state is no longer the template's, so the fork copies it);
- floor: the median time of a new session cloned from the cached template
  (``server.session(seed)``), the cheapest way to get a state at all;
- a fresh ``Episode`` of the same task, and replaying the two calls on it (what a fork
  saves);
- memory: RSS growth per live fork over ``--forks`` forks, measured in this process.

Run: ``python benchmarks/bench_fork.py [--n 2000] [--forks 500]``. Target (issue #51): fork
median <= 100 us on calendar.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import prove_gym
from prove_gym.episode import Episode
from prove_gym.formats import HermesFormat

HERMES = HermesFormat()


def call(name: str, **arguments: object) -> str:
    """One call as the Hermes format writes it (what a model sends)."""
    return HERMES.render_calls([{"name": name, "arguments": arguments}])


PREFIX = [
    call("find_free_slot", date="2026-03-24", duration_minutes=60),
    call(
        "create_event",
        calendar_id="cal_01",
        duration_minutes=60,
        start="2026-03-24T09:00",
        title="Budget sync",
    ),
]


def median_us(make: Callable[[], Any], n: int) -> float:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        made = make()
        samples.append(time.perf_counter() - start)
        made.close()
    return statistics.median(samples) * 1e6


def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--forks", type=int, default=500)
    args = parser.parse_args()
    task = next(t for t in prove_gym.get_registry().tasks("calendar") if t.id == "calendar-002")
    server = prove_gym.get_server("calendar")
    episode = Episode(task)
    for action in PREFIX:
        episode.step(action)
    episode.state_hash()

    def replayed() -> Episode:
        fresh = Episode(task)
        for action in PREFIX:
            fresh.step(action)
        return fresh

    fork = median_us(episode.fork, args.n)
    floor = median_us(lambda: server.session(task.seed), args.n)
    fresh = median_us(lambda: Episode(task), args.n)
    replay = median_us(replayed, max(50, args.n // 20))
    size = len(episode.workspace.sessions["calendar"].snapshot())

    gc.collect()
    before = rss()
    live = [episode.fork() for _ in range(args.forks)]
    gc.collect()
    per_fork = (rss() - before) / args.forks
    for twin in live:
        twin.close()

    print(f"calendar-002 after {len(PREFIX)} calls; its database is {size / 1024:.0f} KiB")
    print(f"{'episode.fork()':<36} {fork:>9.1f} us  ({fork / floor:.1f}x the floor)")
    print(f"{'floor: server.session(seed)':<36} {floor:>9.1f} us")
    print(f"{'Episode(task), fresh':<36} {fresh:>9.1f} us")
    print(
        f"{'Episode(task) + the 2 calls again':<36} {replay:>9.1f} us  ({replay / fork:.0f}x a fork)"
    )
    print(f"memory per live fork: {per_fork / 1024:.0f} KiB over {args.forks} forks")


if __name__ == "__main__":
    main()
