"""Playing policies over tasks: one :class:`~prove_gym.episode.Episode` per task."""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed

from prove_gym.episode import Episode, EpisodeCaps
from prove_gym.eval.metrics import EpisodeResult, mean
from prove_gym.eval.policies import Policy
from prove_gym.eval.report import EvalReport
from prove_gym.formats import ToolCallFormat
from prove_gym.registry import Registry, get_registry
from prove_gym.reward import RewardConfig
from prove_gym.task import Task

__all__ = ["evaluate", "run_episode"]


def run_episode(
    policy: Policy,
    task: Task,
    *,
    caps: EpisodeCaps | None = None,
    format: ToolCallFormat | str = "hermes",
    reward_config: RewardConfig | None = None,
    registry: Registry | None = None,
) -> EpisodeResult:
    """Play ``task`` with ``policy`` in a fresh episode and collect its score.

    A policy that raises (an endpoint down, say) ends the episode where it
    stands, scored as truncated, with the error in the result.
    """
    started = time.perf_counter()
    error = None
    with Episode(
        task, format=format, caps=caps, reward=reward_config, registry=registry
    ) as episode:
        agent = policy.start(episode)
        while not episode.done:
            try:
                action = agent.act(episode)
            except Exception as exc:  # the policy failed: score what was done so far
                error = f"{type(exc).__name__}: {exc}"
                episode.end(truncated=True)
                break
            episode.step(action)
    return EpisodeResult.of(episode, seconds=time.perf_counter() - started, error=error)


def evaluate(
    policy: Policy,
    tasks: Iterable[Task],
    *,
    concurrency: int = 4,
    progress: bool = True,
    caps: EpisodeCaps | None = None,
    format: ToolCallFormat | str = "hermes",
    reward_config: RewardConfig | None = None,
    registry: Registry | None = None,
) -> EvalReport:
    """Play every task with ``policy``, at most ``concurrency`` episodes at a time.

    Results keep the order of ``tasks`` whatever order episodes finish in.
    """
    task_list = list(tasks)
    registry = registry or get_registry()
    results: list[EpisodeResult | None] = [None] * len(task_list)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(task_list), desc=f"eval {policy.name}", unit="task")
    try:
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            futures = {
                pool.submit(
                    run_episode,
                    policy,
                    t,
                    caps=caps,
                    format=format,
                    reward_config=reward_config,
                    registry=registry,
                ): i
                for i, t in enumerate(task_list)
            }
            for fut in as_completed(futures):
                results[futures[fut]] = fut.result()
                if bar is not None:
                    bar.set_postfix(reward=f"{mean(r.total for r in results if r):.3f}")
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return EvalReport(policy=policy.name, results=[r for r in results if r is not None])
