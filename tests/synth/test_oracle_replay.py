"""Every synthesized task, played by the oracle through the real env, earns the maximum reward."""

from __future__ import annotations

import pytest

import prove_gym
from prove_gym.env.env import ProveEnv
from prove_gym.policies import OraclePolicy
from prove_gym.reward import RewardConfig
from prove_gym.synth import SynthResult


def test_the_dataset_is_as_large_as_asked_and_covers_every_server(dataset: SynthResult) -> None:
    assert len(dataset.tasks) == dataset.config.n
    assert {t.server for t in dataset.tasks} == set(prove_gym.get_registry().servers)
    assert not dataset.missing


def test_the_oracle_scores_the_maximum_and_reaches_the_recorded_state_on_every_task(
    dataset: SynthResult,
) -> None:
    config = RewardConfig()
    envs: dict[str, ProveEnv] = {}
    failures = []
    for task in dataset.tasks:
        env = envs.setdefault(task.server, ProveEnv(task.server, tasks=[task]))
        env.reset(options={"task": task})
        policy = OraclePolicy(task)
        done = False
        reward = 0.0
        info: dict = {}
        while not done:
            _, reward, terminated, truncated, info = env.step(policy.act(env.user_turn))
            done = terminated or truncated
        breakdown = info["reward_breakdown"]
        if not terminated:
            failures.append((task.id, "truncated"))
        if reward != pytest.approx(config.max_raw) or reward != pytest.approx(
            breakdown["max_total"]
        ):
            failures.append((task.id, reward, breakdown["components"]))
        if breakdown["final_state_hash"] != task.final_state_hash:  # the env's own state hash
            failures.append((task.id, "final state differs"))
    for env in envs.values():
        env.close()
    assert not failures, failures[:5]
