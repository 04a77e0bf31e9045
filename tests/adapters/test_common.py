"""What the adapters share: labels to tasks, PROVE_* settings, and the text between turns."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prove_gym import Registry, get_registry, hookimpl
from prove_gym.adapters.common import (
    AdapterSettings,
    TurnRenderer,
    resolve_task,
    reward_config_from_env,
)
from prove_gym.reward import RewardComponent, RewardConfig, ScoringContext

TASK = get_registry().tasks("calendar")[0]

NO_TEMPLATES = 'rendering ChatML needs transformers: pip install "prove-gym[trl]"'


def test_a_label_may_be_the_task_its_json_a_row_holding_it_or_an_id(tmp_path: Path) -> None:
    rows = tmp_path / "trl.jsonl"
    rows.write_text(json.dumps({"prompt": [], "task": TASK.to_json(), "server": "calendar"}) + "\n")
    tasks = tmp_path / "train.jsonl"
    tasks.write_text(TASK.to_json() + "\n")
    for label in (
        TASK,
        TASK.to_json(),
        json.loads(TASK.to_json()),
        {"prompt": "p", "label": TASK.to_json()},
        json.dumps({"task_id": TASK.id, "dataset": str(rows)}),
    ):
        assert resolve_task(label) == TASK
    assert resolve_task(TASK.id, [tasks]) == TASK
    assert resolve_task(f"  {TASK.id}\n", [rows]) == TASK
    with pytest.raises(KeyError, match="PROVE_TASKS"):
        resolve_task(TASK.id)
    with pytest.raises(KeyError, match="none of"):
        resolve_task("calendar-404", [tasks])


def test_reward_settings_come_from_prove_reward_variables() -> None:
    cfg = reward_config_from_env(
        {
            "PROVE_REWARD": '{"weights": {"validity": 0.4}, "eff_floor": null}',
            "PROVE_REWARD_BETA": "0",
        }
    )
    assert cfg == RewardConfig(eff_floor=None, beta=0.0).with_weights(validity=0.4)
    with pytest.raises(ValueError, match=r"\['betta'\]; known: \['alpha', 'beta'"):
        reward_config_from_env({"PROVE_REWARD_BETTA": "1"})
    s = AdapterSettings.from_env(
        {"PROVE_MAX_USER_TURNS": "3", "PROVE_TASKS": "a.jsonl:b.jsonl", "PROVE_FORMAT": "json"}
    )
    assert (s.max_user_turns, s.max_assistant_turns, s.tasks, s.format) == (
        3,
        10,
        ("a.jsonl", "b.jsonl"),
        "json",
    )
    assert AdapterSettings.from_env({}).reward_config == RewardConfig()


@dataclass(frozen=True)
class Terse(RewardComponent):
    """1.0 when the model made at most one call."""

    name: str = "terse"
    weight: float = 0.05

    def compute(self, ctx: ScoringContext) -> float:
        return 1.0 if ctx.n_calls <= 1 else 0.0


class TersePlugin:
    @hookimpl
    def prove_gym_reward_components(self) -> list[RewardComponent]:
        return [Terse()]


def test_reward_weights_come_from_weight_variables_and_win_over_the_json() -> None:
    cfg = reward_config_from_env(
        {
            "PROVE_REWARD": '{"weights": {"arguments": 0.3, "state": 0.2}, "normalise": true}',
            "PROVE_REWARD_WEIGHT_ARGUMENTS": "0.2",
            "PROVE_REWARD_WEIGHT_TOOL_NAME": "0",
        }
    )
    assert cfg == RewardConfig(normalise=True).with_weights(arguments=0.2, state=0.2, tool_name=0)
    with pytest.raises(ValueError, match=r"\['argument'\]; known: validity, coverage"):
        reward_config_from_env({"PROVE_REWARD_WEIGHT_ARGUMENT": "0.2"})
    with pytest.raises(ValueError, match="finite number >= 0"):
        reward_config_from_env({"PROVE_REWARD_WEIGHT_STATE": "-1"})


def test_prove_reward_components_adds_a_plugins_component_by_name() -> None:
    registry = Registry(load_entrypoints=False)
    registry.register(TersePlugin(), name="terse")
    cfg = reward_config_from_env(
        {"PROVE_REWARD_COMPONENTS": "terse", "PROVE_REWARD_WEIGHT_TERSE": "0.1"}, registry=registry
    )
    assert cfg.components == (*RewardConfig().components, Terse(weight=0.1))
    assert reward_config_from_env({}, registry=registry) == RewardConfig()
    with pytest.raises(ValueError, match="no reward component named 'polite'; available: terse"):
        reward_config_from_env({"PROVE_REWARD_COMPONENTS": "terse, polite"}, registry=registry)


@pytest.mark.trainer
@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=3))
def test_without_a_tokenizer_tool_results_read_as_chatml_hermes(contents: list[str]) -> None:
    pytest.importorskip("transformers", reason=NO_TEMPLATES)
    messages = [{"role": "tool", "name": "t", "content": c} for c in contents]
    text = TurnRenderer(None).after_assistant(messages, done=False)
    blocks = "".join(f"\n<tool_response>\n{c}\n</tool_response>" for c in contents)
    assert text == f"<|im_end|>\n<|im_start|>user{blocks}<|im_end|>\n<|im_start|>assistant\n"


@pytest.mark.trainer
def test_without_a_tokenizer_a_user_turn_and_the_end_read_as_chatml() -> None:
    pytest.importorskip("transformers", reason=NO_TEMPLATES)
    r = TurnRenderer(None)
    assert r.after_assistant([{"role": "user", "content": "And then?"}], done=False) == (
        "<|im_end|>\n<|im_start|>user\nAnd then?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert r.after_assistant([{"role": "user", "content": "ignored"}], done=True) == "<|im_end|>\n"
    assert r.strip_end_of_turn("<|im_end|>\n", [1, 2]) == "<|im_end|>\n"
