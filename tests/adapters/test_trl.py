"""The TRL adapter: tool methods TRL can read, per-rollout state, and real GRPOTrainer steps."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
trl = pytest.importorskip("trl")

from transformers.utils import get_json_schema  # noqa: E402

from prove_gym import GoldStep, Task, Turn, get_registry  # noqa: E402
from prove_gym.adapters.trl import (  # noqa: E402
    environment_class,
    environment_factories,
    first_turn,
    prove_reward,
    trl_rows,
)
from prove_gym.episode import Episode  # noqa: E402
from prove_gym.reward import score  # noqa: E402

pytestmark = pytest.mark.trainer

TASKS = {t.id: t for t in get_registry().tasks("calendar")}


def test_every_visible_tool_becomes_a_method_with_the_tools_own_schema() -> None:
    server = get_registry().get_server("calendar")
    cls = environment_class("calendar")
    env = cls()
    members = inspect.getmembers(cls, predicate=inspect.isfunction)
    public = {n for n, _ in members if not n.startswith("_")}  # what TRL turns into tools
    assert public - {"reset", "get_reward"} == {t.name for t in server.visible_tools()}
    for spec in server.visible_tools():
        schema = get_json_schema(getattr(env, spec.name))["function"]
        ours = spec.openai_schema()["function"]
        assert schema["name"] == ours["name"]
        assert schema["description"] == ours["description"]
        assert set(schema["parameters"]["properties"]) == set(ours["parameters"]["properties"])
        assert set(schema["parameters"].get("required", [])) == set(ours["parameters"]["required"])
        for name, prop in ours["parameters"]["properties"].items():
            assert schema["parameters"]["properties"][name]["description"] == prop.get(
                "description"
            )
            if "enum" in prop:
                assert schema["parameters"]["properties"][name]["enum"] == prop["enum"]


def test_reset_rebuilds_the_same_initial_state_for_every_rollout_of_a_group() -> None:
    task = TASKS["calendar-002"]
    row = trl_rows([task])[0]
    cls = environment_class("calendar")
    group = [cls() for _ in range(4)]
    for env in group:
        env.reset(**row)
    assert len({env.episode.state_hash() for env in group}) == 1
    step = task.turns[0].steps[1]
    assert json.loads(group[0].create_event(**step.arguments))["event_id"]
    assert group[0].episode.state_hash() != group[1].episode.state_hash()
    group[0].reset(**row)  # a pooled instance starts its next rollout from scratch
    assert group[0].trajectory == []
    assert len({env.episode.state_hash() for env in group}) == 1


def test_bad_calls_are_observations_and_count_in_the_reward() -> None:
    task = TASKS["calendar-001"]
    env = environment_class("calendar")()
    env.reset(**trl_rows([task])[0])
    text = env.add_invitee(event_id="evt_9999", email="x@y.z", colour="red")
    assert text.startswith("Error [bad_arguments]")
    text = env.add_invitee(event_id="evt_9999", email="x@y.z")
    assert text.startswith("Error [not_found]")
    assert len(env.trajectory) == 2
    final_state = env.episode.state_hash()
    reward = env.get_reward()
    expected = score(first_turn(task), env.trajectory, final_state_hash=final_state)
    assert reward == pytest.approx(expected.total)
    assert env.breakdown.n_calls == 2
    assert env.add_invitee(event_id="evt_0001", email="x@y.z").startswith("Error [episode_over]")


def test_the_gold_calls_earn_the_full_reward_and_multi_turn_tasks_play_their_first_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PROVE_REWARD_WEIGHT_STATE", "0.2")
    task = TASKS["calendar-003"]
    env = environment_class("calendar")()
    env.reset(**trl_rows([task])[0])
    assert env.task == first_turn(task) and len(env.task.turns) == 1
    for step in task.turns[0].steps:
        assert not getattr(env, step.name)(**step.arguments).startswith("Error")
    reward = env.get_reward()
    assert env.breakdown.components["state"] == 1.0
    assert reward == pytest.approx(env.breakdown.max_total)
    assert prove_reward([env]) == [pytest.approx(reward)]


def _list_task() -> Task:
    return Task(
        id="calendar-list",
        servers=["calendar"],
        seed=7,
        turns=[
            Turn(
                user="Which calendars do I have?",
                steps=[GoldStep(id="s1", name="list_calendars")],
            )
        ],
    )


def _steer_towards_gold(tokenizer: Any, env_cls: Any, row: dict) -> list[list[Any]]:
    """A ``sequence_bias`` that makes a random model write the gold conversation's assistant turns.

    Each assistant token gets a large bias after the 6 tokens that precede it in
    the gold conversation: the model then calls ``list_calendars`` and, after the
    tool result, answers. Generation still runs through TRL and the real model.
    """
    env = env_cls()
    env.reset(**row)
    result = env.list_calendars()
    tools = [getattr(env, n) for n in env_cls.tool_names]
    call = {"type": "function", "function": {"name": "list_calendars", "arguments": {}}}
    conversation = [
        *row["prompt"],
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "name": "list_calendars", "content": result},
        {"role": "assistant", "content": "You have these calendars."},
    ]

    def ids(messages: list, generation: bool) -> list[int]:
        out = tokenizer.apply_chat_template(
            messages, tools=tools, tokenize=True, return_dict=True, add_generation_prompt=generation
        )
        return list(out["input_ids"])

    prompt, full = ids(row["prompt"], True), ids(conversation, False)
    assert full[: len(prompt)] == prompt
    windows = {tuple(full[i - 6 : i + 1]) for i in range(len(prompt), len(full))}
    return [[list(w), 50.0] for w in sorted(windows)]


def _tiny_model(smol_tokenizer_dir: str) -> tuple[Any, Any]:
    """SmolLM2's tokenizer with Qwen2.5's tool template, and a random 2-layer Qwen2."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM
    from trl.chat_template_utils import qwen2_5_chat_template

    tokenizer = AutoTokenizer.from_pretrained(smol_tokenizer_dir, local_files_only=True)
    tokenizer.chat_template = qwen2_5_chat_template
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=4096,
            tie_word_embeddings=True,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
    )
    return tokenizer, model


def _grpo_config(tmp_path: Path, **overrides: Any) -> Any:
    from trl import GRPOConfig

    settings: dict[str, Any] = {
        "output_dir": str(tmp_path),
        "max_steps": 2,
        "per_device_train_batch_size": 4,
        "num_generations": 4,
        "max_completion_length": 48,
        "max_tool_calling_iterations": 1,
        "gradient_checkpointing": False,
        "learning_rate": 1e-5,
        "beta": 0.0,
        "logging_steps": 1,
        "report_to": "none",
        "save_strategy": "no",
        "use_cpu": True,
        "bf16": False,
        "seed": 0,
        "dataloader_num_workers": 0,
        **overrides,
    }
    return GRPOConfig(**settings)


def test_one_run_mixes_servers_each_row_played_by_its_own_environment(
    smol_tokenizer_dir: str, tmp_path: Path
) -> None:
    from datasets import Dataset
    from trl import GRPOTrainer

    tokenizer, model = _tiny_model(smol_tokenizer_dir)
    tools = {"calendar": ["list_calendars"], "banking": ["get_exchange_rate"]}
    played: list[tuple[str, str]] = []

    def recording(cls: Any) -> Any:
        class Recorded(cls):  # type: ignore[misc, valid-type]
            def get_reward(self) -> float:
                played.append((self.server_name, self.task.server))
                return float(super().get_reward())

        Recorded.__name__ = cls.__name__
        return Recorded

    factories = {
        name: recording(cls) for name, cls in environment_factories(tools, tools=tools).items()
    }
    banking = next(t for t in get_registry().tasks("banking") if t.steps)
    rows = trl_rows([_list_task(), banking])
    assert [r["environment"] for r in rows] == ["calendar", "banking"]
    trainer = GRPOTrainer(
        model=model,
        args=_grpo_config(tmp_path, max_steps=1, num_generations=2, max_completion_length=16),
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        environment_factory=factories,
    )
    trainer.train()
    assert sorted(set(played)) == [("banking", "banking"), ("calendar", "calendar")]
    assert len(played) == 4  # both rows, a group of 2 each, in the first (only) step


def test_two_grpo_steps_call_our_tools_and_pay_our_reward(
    smol_tokenizer_dir: str, tmp_path: Path
) -> None:
    from datasets import Dataset
    from trl import GRPOTrainer

    tokenizer, model = _tiny_model(smol_tokenizer_dir)
    base = environment_class("calendar", tools=["get_current_time", "list_calendars"])
    rollouts: list[tuple[float, list[str], Any]] = []

    class Recorded(base):  # type: ignore[misc, valid-type]
        def get_reward(self) -> float:
            reward = super().get_reward()
            rollouts.append((reward, [c.name for c in self.trajectory], self.breakdown))
            return reward

    task = _list_task()
    rows = trl_rows([task] * 4)

    config = _grpo_config(
        tmp_path,
        generation_kwargs={"sequence_bias": _steer_towards_gold(tokenizer, Recorded, rows[0])},
    )
    trainer = GRPOTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        environment_factory=Recorded,
    )
    trainer.train()

    assert len(rollouts) == 8  # 2 steps x 4 rollouts, each scored once by get_reward
    called = [r for r in rollouts if "list_calendars" in r[1]]
    assert called, "the model never called a tool"
    tool_calls = [h["tools/call_frequency"] for h in trainer.state.log_history if "reward" in h]
    assert all(f > 0 for f in tool_calls)
    for reward, names, breakdown in rollouts:
        assert reward == pytest.approx(breakdown.total)
        assert breakdown.n_calls == len(names)
    assert max(r[0] for r in called) > 1.0  # the gold call validates, covers and matches
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logged) == 2
    for i, entry in enumerate(logged):
        step_rewards = [r[0] for r in rollouts[4 * i : 4 * i + 4]]
        assert entry["reward"] == pytest.approx(sum(step_rewards) / 4, abs=1e-5)
        assert entry["rewards/Recorded/mean"] == pytest.approx(entry["reward"], abs=1e-5)


def test_a_trl_rollout_is_a_translation_of_the_episode() -> None:
    task = TASKS["calendar-003"]
    calls = [(s.name, dict(s.arguments)) for s in task.turns[0].steps]
    calls.append(("get_event", {"event_id": "evt_9999"}))
    env = environment_class("calendar")()
    env.reset(**trl_rows([task])[0])
    texts = [getattr(env, name)(**arguments) for name, arguments in calls]
    reward = env.get_reward()
    with Episode(first_turn(task)) as episode:
        out = episode.step([{"name": n, "arguments": a} for n, a in calls])
        last = episode.step("Done.")
    assert texts == [m["content"] for m in out.messages[1:]]
    assert last.terminated and reward == last.reward
    assert env.breakdown == last.breakdown
