"""Components as data: one written here, in a test file, changes the reward with no edit to prove_gym."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import pytest

from prove_gym import Registry, Task, hookimpl
from prove_gym.registry import PluginError
from prove_gym.reward import (
    RewardComponent,
    RewardConfig,
    ScoringContext,
    Validity,
    context,
    score,
    state,
)


@dataclass(frozen=True)
class LongArguments(RewardComponent):
    """Minus the share of calls whose JSON arguments are longer than ``limit`` characters."""

    name: str = "long_arguments"
    weight: float = 0.3
    limit: int = 40

    def compute(self, ctx: ScoringContext) -> float:
        if not ctx.calls:
            return 0.0
        long = sum(len(json.dumps(c.arguments)) > self.limit for c in ctx.calls)
        return -long / ctx.n_calls

    def bounds(self, config: RewardConfig) -> tuple[float, float]:
        return (-1.0, 0.0)


class LongArgumentsPlugin:
    @hookimpl
    def prove_gym_reward_components(self) -> list[RewardComponent]:
        return [LongArguments()]


TASK = Task.from_json(
    {
        "id": "custom-components",
        "servers": ["calendar"],
        "seed": 7,
        "turns": [
            {
                "user": "Show me evt_0001, then search for yoga.",
                "steps": [
                    {"id": "s1", "name": "get_event", "arguments": {"event_id": "evt_0001"}},
                    {"id": "s2", "name": "search_events", "arguments": {"query": "yoga"}},
                ],
            }
        ],
    }
)
GOLD = [{"name": s.name, "arguments": dict(s.arguments)} for s in TASK.steps]
CHATTY = [
    GOLD[0],
    {"name": "search_events", "arguments": {"query": "yoga", "start_date": "2026-03-01T00:00"}},
]


def test_a_custom_component_changes_the_breakdown_and_the_total() -> None:
    paper = score(TASK, CHATTY)
    config = RewardConfig().with_components(LongArguments())
    custom = score(TASK, CHATTY, config=config)
    assert custom.components["long_arguments"] == -0.5
    assert custom.weights["long_arguments"] == 0.3
    assert list(custom.components) == [*paper.components, "long_arguments"]
    assert {k: v for k, v in custom.components.items() if k != "long_arguments"} == (
        paper.components
    )
    assert custom.total == pytest.approx(paper.total - 0.3 * 0.5)
    assert custom.max_total == paper.max_total == RewardConfig().max_raw
    assert config.min_raw == pytest.approx(RewardConfig().min_raw - 0.3)
    assert score(TASK, GOLD, config=config).total == pytest.approx(config.max_raw)
    normalised = dataclasses.replace(config, normalise=True)
    expected = (custom.total - config.min_raw) / (config.max_raw - config.min_raw)
    assert score(TASK, CHATTY, config=normalised).total == pytest.approx(expected)


def test_a_custom_components_parameters_and_weight_are_fields() -> None:
    strict = LongArguments(limit=20, weight=0.6)
    r = score(TASK, GOLD, config=RewardConfig().with_components(strict))
    assert r.components["long_arguments"] == -0.5  # 25 characters of {"event_id": ...}, 17 of query
    assert r.total == pytest.approx(RewardConfig().max_raw - 0.6 * 0.5)
    assert dataclasses.replace(strict, weight=0.0) == LongArguments(limit=20, weight=0.0)


def test_on_a_task_without_gold_calls_a_custom_component_is_reported_not_paid() -> None:
    abstain = Task.from_json(
        {"id": "fly", "servers": ["calendar"], "turns": [{"user": "Fly me.", "kind": "abstain"}]}
    )
    config = RewardConfig().with_components(LongArguments(limit=1))
    r = score(abstain, [{"name": "list_calendars", "arguments": {"x": 1}}], config=config)
    assert r.components["long_arguments"] == -1.0 and r.components["abstention"] == 0.0
    assert r.total == 0.0
    assert score(abstain, [], config=config).total == 1.0


def test_a_plugins_component_is_available_by_name_but_not_active_by_default() -> None:
    registry = Registry(load_entrypoints=False)
    assert registry.reward_components == {}
    registry.register(LongArgumentsPlugin(), name="long-arguments")
    assert registry.reward_component("long_arguments") == LongArguments()
    assert "long_arguments" not in RewardConfig().weights
    assert "long_arguments" not in score(TASK, CHATTY).components
    config = RewardConfig().with_components(registry.reward_component("long_arguments"))
    assert score(TASK, CHATTY, config=config).components["long_arguments"] == -0.5
    with pytest.raises(KeyError, match="available: long_arguments"):
        registry.reward_component("polite")


def test_two_plugins_cannot_provide_the_same_component_name() -> None:
    class Again(LongArgumentsPlugin):
        pass

    registry = Registry(load_entrypoints=False)
    registry.register(LongArgumentsPlugin(), name="a")
    registry.register(Again(), name="b")
    with pytest.raises(PluginError, match="'long_arguments'"):
        _ = registry.reward_components


def test_a_component_may_replace_a_built_in_of_the_same_name() -> None:
    @dataclass(frozen=True)
    class Lenient(Validity):
        """Validity that pays a call with the right structure as if it had run."""

        def compute(self, ctx: ScoringContext) -> float | None:
            levels = [3 if level == 2 else level for level in ctx.levels]
            return sum(levels) / (3 * len(levels)) if levels else 0.0

    failed = [{**c, "result": {"status": "error"}} for c in GOLD]
    config = RewardConfig().with_components(Lenient())
    assert [c.name for c in config.components] == [c.name for c in RewardConfig().components]
    assert score(TASK, failed).components["validity"] == pytest.approx(2 / 3)
    assert score(TASK, failed, config=config).components["validity"] == 1.0


def test_components_read_one_lazily_computed_context(monkeypatch: pytest.MonkeyPatch) -> None:
    aligned: list[int] = []
    real_align = context.align_prepared

    def counting_align(*args: object) -> object:
        aligned.append(1)
        return real_align(*args)  # type: ignore[arg-type]

    def no_replay(*args: object) -> object:
        raise AssertionError("a state hash was replayed although no component needed it")

    monkeypatch.setattr(context, "align_prepared", counting_align)
    monkeypatch.setattr(context, "replay_calls", no_replay)
    monkeypatch.setattr(state, "gold_turn_replay", no_replay)
    task = TASK.model_copy(update={"id": "custom-components-lazy"})  # no gold hash memoised yet
    unweighted_state = RewardConfig().with_weights(state=0.0).without("answers")
    r = score(task, CHATTY, config=unweighted_state)
    assert len(aligned) == 1  # coverage, arguments, surplus writes and the breakdown share one
    assert r.components["state"] is None and r.gold_state_hash is r.final_state_hash is None

    @dataclass(frozen=True)
    class NeedsGold(RewardComponent):
        """Reads the gold state hash."""

        name: str = "needs_gold"

        def compute(self, ctx: ScoringContext) -> float:
            return float(len(ctx.gold_state_hash) > 0)

    with pytest.raises(AssertionError, match="no component needed it"):
        score(task, CHATTY, config=unweighted_state.with_components(NeedsGold()))


def test_a_component_class_must_be_a_frozen_dataclass_with_a_name_and_a_weight() -> None:
    class Undecorated(RewardComponent):
        name: str = "undecorated"

    with pytest.raises(TypeError, match="@dataclass"):
        Undecorated()

    @dataclass(frozen=True)
    class Nameless(RewardComponent):
        """No name."""

    with pytest.raises(ValueError, match="identifier"):
        Nameless()
    with pytest.raises(ValueError, match="finite number >= 0"):
        LongArguments(weight=-0.1)
    with pytest.raises(ValueError, match="finite number >= 0"):
        LongArguments(weight=float("nan"))
    with pytest.raises(NotImplementedError, match="Nameless must override compute"):
        Nameless(name="nameless").compute(ScoringContext.of(TASK, []))
    with pytest.raises(dataclasses.FrozenInstanceError):
        LongArguments().weight = 1.0  # type: ignore[misc]
    assert LongArguments().description == LongArguments.__doc__
