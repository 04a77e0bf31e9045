"""What one whole episode costs, beside the bare tool calls it makes, and what the reward cache saves.

An episode here is what a GRPO rollout of one task costs outside the model:
build the initial state, render the prompt, parse and run the oracle's calls
(the hand-written tasks of one server, played in turn), hash the final state
and score it. Rows:

- ``bare calls``: the floor. The same gold calls on a fresh
  :class:`~prove_gym.workspace.Workspace` plus the final state hash, with no
  episode around them.
- ``episode, cache hit``: :class:`~prove_gym.episode.Episode` on a fresh
  ``model_copy()`` of the task each time, as an env's ``reset`` or a trainer's
  dataset row makes one. The scoring preparation and the gold replay are
  cached by the task's *content*, so they are paid once per task.
- ``episode, cache miss``: the same with a task whose content is new every
  time (its id changes), so every episode prepares the task and replays gold
  again: what every episode paid when the cache was keyed by ``id(task)``.
- ``gymnasium env, cache hit``: the same episode through ``gymnasium.make``
  (reset + step), the translation's own overhead.

Every case runs in alternating blocks in one process and the best block
counts; times are this process's CPU time (``time.process_time``), so other
jobs on the machine do not count. Run: ``python benchmarks/bench_episode.py``
(``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable

import gymnasium

import prove_gym
from prove_gym import Workspace
from prove_gym.episode import Episode
from prove_gym.eval import OraclePolicy
from prove_gym.task import Task

SERVER = "calendar"


def best_time(cases: dict[str, Callable[[], object]], number: int, blocks: int) -> dict[str, float]:
    """CPU seconds per call of each case: its best of ``blocks`` alternating blocks of ``number``."""
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(blocks):
        for name, fn in cases.items():
            cpu = time.process_time()
            for _ in range(number):
                fn()
            best[name] = min(best[name], (time.process_time() - cpu) / number)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter blocks")
    parser.add_argument("--server", default=SERVER, help=f"server whose tasks to play ({SERVER})")
    args = parser.parse_args()
    number, blocks = (20, 3) if args.quick else (100, 7)

    tasks = [
        t.model_copy(update={"final_state_hash": None})  # state verified by a gold replay
        for t in prove_gym.get_registry().tasks(args.server)
        if t.steps
    ]
    cycle = itertools.cycle(tasks)
    fresh = itertools.count()

    def bare() -> None:
        task = next(cycle)
        with Workspace(task) as ws:
            for step in task.steps:
                ws.call(step.name, step.arguments)
            ws.state_hash()

    def play(task: Task) -> float:
        with Episode(task) as episode:
            agent = OraclePolicy().start(episode)
            while not episode.done:
                episode.step(agent.act(episode))
        assert episode.breakdown is not None
        return episode.breakdown.total

    env = gymnasium.make(prove_gym.env_id(args.server))
    base = env.unwrapped

    def through_env() -> None:
        env.reset(options={"task": next(cycle).model_copy()})
        agent = OraclePolicy().start(base.episode)
        done = False
        while not done:
            *_, term, trunc, _info = env.step(agent.act(base.episode))
            done = term or trunc

    def hit() -> None:
        play(next(cycle).model_copy())

    def miss() -> None:
        play(next(cycle).model_copy(update={"id": f"bench-{next(fresh)}"}))

    for task in tasks:  # warm the templates and the cache
        assert play(task) == 1.3, task.id
    cases: dict[str, Callable[[], object]] = {
        "bare calls (workspace + state hash)": bare,
        "episode, cache hit": hit,
        "episode, cache miss": miss,
        "gymnasium env, cache hit": through_env,
    }
    times = best_time(cases, number, blocks)
    env.close()

    floor = times["bare calls (workspace + state hash)"]
    width = max(len(k) for k in cases)
    n_calls = sum(len(t.steps) for t in tasks) / len(tasks)
    print(
        f"prove_gym {prove_gym.__version__}: one oracle episode of {args.server} "
        f"({len(tasks)} tasks, {n_calls:.1f} calls each), CPU time per episode"
    )
    print(f"{'case':<{width}}  {'us each':>9}  {'x bare calls':>12}")
    for name, seconds in times.items():
        print(f"{name:<{width}}  {seconds * 1e6:>9.0f}  {seconds / floor:>12.2f}")
    saved = times["episode, cache miss"] / times["episode, cache hit"]
    print(f"content-keyed reward cache: a miss costs {saved:.2f}x a hit")


if __name__ == "__main__":
    main()
