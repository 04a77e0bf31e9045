"""RewardConfig: components with their weights, knobs, and helpers that return new configs."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prove_gym import Task
from prove_gym.reward import (
    Answers,
    Arguments,
    Clarification,
    Coverage,
    Efficiency,
    RewardConfig,
    State,
    SurplusWrites,
    ToolName,
    Validity,
    score,
)
from prove_gym.reward.components import DEFAULT_COMPONENTS

NAMES = [c.name for c in DEFAULT_COMPONENTS]
TASK = Task.from_json(
    {
        "id": "config",
        "servers": ["calendar"],
        "seed": 7,
        "turns": [
            {"user": "Remind me of my yoga class.", "kind": "clarify", "missing": ["when"]},
            {
                "user": "Find it and show it.",
                "steps": [
                    {"id": "s1", "name": "search_events", "arguments": {"query": "yoga"}},
                    {
                        "id": "s2",
                        "name": "get_event",
                        "arguments": {"event_id": "evt_0247"},
                        "depends_on": ["s1"],
                    },
                ],
            },
        ],
    }
)
GOLD = [{"name": s.name, "arguments": dict(s.arguments), "turn": 1} for s in TASK.steps]
weight = st.floats(0, 2, allow_nan=False).map(lambda w: round(w, 3))


def test_the_default_config_is_the_papers_components_then_ours_in_breakdown_order() -> None:
    cfg = RewardConfig()
    paper = (
        Validity(weight=0.5),
        Coverage(weight=0.5),
        Efficiency(weight=0.15),
        ToolName(weight=0.2),
        Arguments(weight=0.1),
    )
    assert RewardConfig.preset("paper").components == paper
    assert cfg.components == (
        *paper,
        Clarification(weight=0.5),
        State(weight=1.0),
        Answers(weight=1.0),
        SurplusWrites(weight=0.3),
    )
    assert cfg.breakdown_keys == (
        "validity",
        "coverage",
        "efficiency",
        "tool_name",
        "arguments",
        "abstention",
        "clarification",
        "state",
        "answers",
        "surplus_writes",
    )
    assert list(score(TASK, GOLD).components) == list(cfg.breakdown_keys)
    assert cfg == RewardConfig() and hash(cfg) == hash(RewardConfig())
    assert {cfg: "usable as a key"}[RewardConfig()] == "usable as a key"


def test_the_maximum_and_minimum_follow_the_components_bounds() -> None:
    cfg = RewardConfig()
    assert (cfg.max_raw, cfg.min_raw) == (3.3, pytest.approx(-0.95))
    assert cfg.min_raw == pytest.approx(0.15 * -1.0 - 0.5 - 0.3)
    assert RewardConfig(eff_floor=-0.5).min_raw == pytest.approx(0.15 * -0.5 - 0.5 - 0.3)
    assert RewardConfig(eff_floor=None).min_raw == cfg.min_raw
    assert cfg.with_weights(state=0.3).max_raw == pytest.approx(2.6)
    assert cfg.without("efficiency", "clarification", "surplus_writes").min_raw == 0.0
    assert RewardConfig.preset("paper").max_raw == 1.3


def test_with_weights_reweighs_by_name_and_leaves_the_original_alone() -> None:
    cfg = RewardConfig()
    heavier = cfg.with_weights(arguments=0.3, state=0.2)
    assert heavier.weights == {**cfg.weights, "arguments": 0.3, "state": 0.2}
    assert heavier.component("arguments") == Arguments(weight=0.3)
    assert cfg.weights["arguments"] == 0.1 and heavier != cfg
    assert dataclasses.replace(Arguments(), weight=0.3) == heavier.component("arguments")
    with pytest.raises(ValueError, match=r"\['args'\]; known: validity, coverage, efficiency"):
        cfg.with_weights(args=0.3)
    with pytest.raises(ValueError, match="'coverage' must be a finite number >= 0"):
        cfg.with_weights(coverage=-1)


def test_without_drops_components_and_the_total_follows() -> None:
    cfg = RewardConfig().without("tool_name", "arguments")
    assert (
        "tool_name" not in cfg.weights
        and "tool_name" not in score(TASK, GOLD, config=cfg).components
    )
    assert cfg.max_raw == pytest.approx(3.0)
    assert score(TASK, GOLD, config=cfg).total == pytest.approx(3.0)
    assert cfg.breakdown_keys == (
        "validity",
        "coverage",
        "efficiency",
        "abstention",
        "clarification",
        "state",
        "answers",
        "surplus_writes",
    )
    with pytest.raises(ValueError, match="known: validity"):
        RewardConfig().without("validty")
    with pytest.raises(KeyError, match="no reward component 'tool_name'"):
        cfg.component("tool_name")
    empty = RewardConfig(components=())
    assert empty.breakdown_keys == ("abstention",) and score(TASK, GOLD, config=empty).total == 0


def test_with_components_replaces_in_place_or_appends() -> None:
    cfg = RewardConfig().with_components(Coverage(weight=1.0), State(weight=0.2))
    assert [c.name for c in cfg.components] == NAMES
    assert cfg.weights["coverage"] == 1.0 and cfg.weights["state"] == 0.2
    back = RewardConfig().without("validity").with_components(Validity())
    assert [c.name for c in back.components] == [*NAMES[1:], "validity"]
    assert back.breakdown_keys[-2:] == ("validity", "abstention")  # after the paper's five


def test_component_names_are_unique_and_abstention_is_reserved() -> None:
    with pytest.raises(ValueError, match="'coverage' appears twice"):
        RewardConfig(components=(Coverage(), Coverage(weight=1.0)))

    @dataclasses.dataclass(frozen=True)
    class Abstention(Validity):
        name: str = "abstention"

    with pytest.raises(ValueError, match="abstention rule"):
        RewardConfig().with_components(Abstention())
    with pytest.raises(TypeError, match="RewardComponent objects"):
        RewardConfig(components=("validity",))  # type: ignore[arg-type]


def test_the_knobs_are_still_validated() -> None:
    with pytest.raises(ValueError, match="alpha"):
        RewardConfig(alpha=-1)
    with pytest.raises(ValueError, match="eff_floor"):
        RewardConfig(eff_floor=0.5)
    assert RewardConfig(components=[Validity()]).components == (Validity(),)  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(st.fixed_dictionaries({name: weight for name in NAMES}))
def test_any_weights_make_the_gold_trajectory_score_the_maximum(weights: dict[str, float]) -> None:
    cfg = RewardConfig().with_weights(**weights)
    paid = ("validity", "coverage", "tool_name", "arguments", "state", "answers")
    expected = sum(weights[n] for n in paid)
    assert math.isclose(cfg.max_raw, expected, abs_tol=1e-12)
    assert math.isclose(
        cfg.min_raw,
        -weights["efficiency"] - weights["clarification"] - weights["surplus_writes"],
        abs_tol=1e-12,
    )
    r = score(TASK, GOLD, config=cfg)
    assert r.total == pytest.approx(cfg.max_raw) and r.max_total == pytest.approx(cfg.max_raw)
    assert r.weights == weights


@settings(max_examples=40, deadline=None)
@given(st.fixed_dictionaries({name: weight for name in NAMES}), st.integers(0, 12))
def test_the_total_is_the_weighted_sum_of_the_reported_components(
    weights: dict[str, float], extra: int
) -> None:
    guessed = {"name": "search_events", "arguments": {"query": "yoga"}, "turn": 0}
    calls = [guessed, *GOLD, *[GOLD[0]] * extra]
    cfg = RewardConfig().with_weights(**weights)
    r = score(TASK, calls, config=cfg)
    expected = sum(
        weights[n] * v for n, v in r.components.items() if n in weights and v is not None
    )
    assert r.total == pytest.approx(expected, abs=1e-9)
    assert cfg.min_raw - 1e-9 <= r.total <= cfg.max_raw + 1e-9
    normalised = score(TASK, calls, config=dataclasses.replace(cfg, normalise=True)).total
    assert 0.0 <= normalised <= 1.0
