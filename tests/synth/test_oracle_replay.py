"""Every synthesized task, played by the oracle through the real env, earns the maximum reward."""

from __future__ import annotations

import pytest

import prove_gym
from prove_gym.episode import Episode
from prove_gym.eval import OraclePolicy
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
    failures = []
    for task in dataset.tasks:
        with Episode(task) as episode:
            agent = OraclePolicy().start(episode)
            while not episode.done:
                episode.step(agent.act(episode))
        breakdown = episode.breakdown
        assert breakdown is not None
        if not episode.terminated:
            failures.append((task.id, "truncated"))
        c = breakdown.components
        if not task.steps:  # an abstention task: no call is the whole answer
            if breakdown.total != pytest.approx(config.abstain_reward) or c["abstention"] != 1.0:
                failures.append((task.id, breakdown.total, breakdown.components))
            if breakdown.final_state_hash != task.final_state_hash:
                failures.append((task.id, "final state differs"))
            continue
        perfect = c["state"] == 1.0 and c["answers"] in (None, 1.0)  # answers: None without reads
        unpaid = 0.0 if c["answers"] is not None else config.weights["answers"]
        if (
            not perfect
            or breakdown.total != pytest.approx(breakdown.max_total)
            or breakdown.max_total != pytest.approx(config.max_raw - unpaid)
        ):
            failures.append((task.id, breakdown.total, breakdown.components))
        if breakdown.final_state_hash != task.final_state_hash:  # the episode's own state hash
            failures.append((task.id, "final state differs"))
    assert not failures, failures[:5]
