"""The reward-validity benchmark's judge and perturbations, on one shipped calendar task.

``benchmarks/`` is not a package, so the module is loaded from its path.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from prove_gym import Task
from prove_gym.reward import RewardConfig, score

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "reward_validity.py"


@pytest.fixture(scope="module")
def rv() -> ModuleType:
    """The benchmark module (registered in ``sys.modules`` so its dataclasses resolve)."""
    spec = importlib.util.spec_from_file_location("reward_validity_benchmark", _PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def facts(rv: ModuleType, calendar_tasks: dict[str, Task]) -> Any:
    """calendar-002: find_free_slot -> create_event (not idempotent) -> add_reminder on it."""
    return rv.task_facts(calendar_tasks["calendar-002"])


def _run(rv: ModuleType, facts: Any, variant: Any) -> tuple[Any, float, float]:
    """Execute a variant: the judge's verdict, the default reward and its maximum."""
    records, final = rv.execute(facts.task, variant.calls)
    b = score(facts.task, records, config=RewardConfig(), final_state_hash=final)
    return rv.judge(facts, records, final), b.total, b.max_total


def test_oracle_is_correct_and_scores_the_maximum(rv: ModuleType, facts: Any) -> None:
    [oracle] = rv.perturb(facts, "oracle", 5)
    verdict, total, best = _run(rv, facts, oracle)
    assert verdict.correct, verdict.reasons
    assert total == best


def test_a_repeated_create_event_is_judged_wrong(rv: ModuleType, facts: Any) -> None:
    variants = rv.perturb(facts, "duplicate_write", 5)
    [dup] = [v for v in variants if "create_event" in v.label]
    assert not facts.offered["create_event"].idempotent
    assert [c.name for c in dup.calls].count("create_event") == 2
    verdict, _, _ = _run(rv, facts, dup)
    assert not verdict.correct
    assert "final state differs from the gold replay's" in verdict.reasons


def test_swapping_dependent_calls_changes_the_reward(rv: ModuleType, facts: Any) -> None:
    [oracle] = rv.perturb(facts, "oracle", 5)
    _, best, _ = _run(rv, facts, oracle)
    swaps = rv.perturb(facts, "swap_dependent", 5)
    assert swaps
    for variant in swaps:
        assert [c.name for c in variant.calls] != [c.name for c in oracle.calls]
        _, total, _ = _run(rv, facts, variant)
        assert total != best, variant.label


def test_the_judge_rejects_a_call_on_a_clarify_turn(
    rv: ModuleType, calendar_tasks: dict[str, Task]
) -> None:
    facts = rv.task_facts(calendar_tasks["calendar-004"])  # a clarify turn, then two gold calls
    for variant in rv.perturb(facts, "ask_first_violation", 3):
        records, final = rv.execute(facts.task, variant.calls)
        verdict = rv.judge(facts, records, final)
        assert not verdict.correct and "call on clarify turn 0" in verdict.reasons


def test_perturbations_are_deterministic(rv: ModuleType, facts: Any) -> None:
    for family in rv.FAMILIES:
        assert rv.perturb(facts, family, 3) == rv.perturb(facts, family, 3)


def test_roc_auc_counts_ties_as_half(rv: ModuleType) -> None:
    assert rv.roc_auc([0.5, 0.5], [True, False]) == 0.5
    assert rv.roc_auc([0.9, 0.2, 0.4], [True, False, False]) == 1.0
    assert rv.roc_auc([0.1, 0.2], [False, False]) is None
