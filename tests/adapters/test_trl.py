"""The TRL adapter: tool methods TRL can read, per-rollout state, the multi-turn rollout_func
(every user turn, token masks, logprobs, reward), and real GRPOTrainer steps on both paths."""

from __future__ import annotations

import inspect
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
trl = pytest.importorskip("trl")

from transformers.utils import get_json_schema  # noqa: E402

from prove_gym import GoldStep, Task, Turn, get_registry  # noqa: E402
from prove_gym.adapters.trl import (  # noqa: E402
    Generation,
    MultiTurnRollout,
    environment_class,
    environment_factories,
    first_turn,
    prove_reward,
    trl_rows,
)
from prove_gym.episode import Episode  # noqa: E402
from prove_gym.formats import ChatTemplateFormat, chat_message  # noqa: E402
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


# ------------------------------------------------ multi-turn: the rollout_func path
def _three_turn_task() -> Task:
    """Ask for a missing title first (clarify), then two turns of one call each."""
    return Task(
        id="calendar-three-turns",
        servers=["calendar"],
        seed=7,
        tools=["calendar.list_calendars", "calendar.get_current_time"],
        turns=[
            Turn(user="Put something in my calendar.", kind="clarify", missing=["title"]),
            Turn(
                user="Actually, first: which calendars do I have?",
                steps=[GoldStep(id="s1", name="list_calendars")],
            ),
            Turn(
                user="And what time is it now?", steps=[GoldStep(id="s2", name="get_current_time")]
            ),
        ],
    )


def _banking_task() -> Task:
    """Two user turns, one exchange-rate lookup each."""

    def rate(step: str, to: str) -> GoldStep:
        arguments = {"from_currency": "USD", "to_currency": to}
        return GoldStep(id=step, name="get_exchange_rate", arguments=arguments)

    return Task(
        id="banking-two-turns",
        servers=["banking"],
        seed=7,
        tools=["banking.get_exchange_rate"],
        turns=[
            Turn(user="What is the USD to EUR rate?", steps=[rate("s1", "EUR")]),
            Turn(user="And USD to GBP?", steps=[rate("s2", "GBP")]),
        ],
    )


EOS_BIAS = 9.0
"""Added to the end-of-turn logit, so that the random model ends its messages after a few
tokens (about 1 in 7 per token) and plays every user turn quickly."""


@pytest.fixture(scope="module")
def rollout_trainer(
    smol_tokenizer_dir: str, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Any, Any]:
    """A real GRPOTrainer (tiny random model, SmolLM2's tokenizer with the Hermes template)."""
    from datasets import Dataset
    from trl import GRPOTrainer

    from prove_gym.formats import HERMES_CHAT_TEMPLATE

    tokenizer, model = _tiny_model(smol_tokenizer_dir)
    tokenizer.chat_template = HERMES_CHAT_TEMPLATE
    rows = trl_rows([_three_turn_task(), _banking_task()])
    config = _grpo_config(
        tmp_path_factory.mktemp("rollout"),
        max_completion_length=256,
        temperature=0.8,
        generation_kwargs={"sequence_bias": [[[tokenizer.eos_token_id], EOS_BIAS]]},
    )
    trainer = GRPOTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        reward_funcs=[prove_reward],
        rollout_func=MultiTurnRollout(rows),
    )
    return trainer, tokenizer


def _spans(mask: list[int]) -> list[tuple[int, int, int]]:
    """Maximal runs of equal mask values as ``(value, start, end)``."""
    runs: list[tuple[int, int, int]] = []
    for i, m in enumerate(mask):
        if runs and runs[-1][0] == m:
            runs[-1] = (m, runs[-1][1], i + 1)
        else:
            runs.append((m, i, i + 1))
    return runs


def test_a_rollout_plays_every_user_turn_and_masks_exactly_what_the_environment_wrote(
    rollout_trainer: tuple[Any, Any],
) -> None:
    import torch

    trainer, tokenizer = rollout_trainer
    task = _three_turn_task()
    row = trl_rows([task])[0]
    rollout = MultiTurnRollout([row])
    out = rollout([row["prompt"]] * 2, trainer)

    assert set(out) >= {"prompt_ids", "completion_ids", "logprobs", "env_mask", "prove_total"}
    for i, r in enumerate(rollout.last):
        ids, mask, logprobs = out["completion_ids"][i], out["env_mask"][i], out["logprobs"][i]
        assert len(ids) == len(mask) == len(logprobs) <= 256
        assert r.episode.terminated and r.user_turns == 3 and r.episode.assistant_turns == 3
        completion = tokenizer.decode(ids)
        assert task.turns[0].user in tokenizer.decode(out["prompt_ids"][i])
        for turn in task.turns[1:]:
            assert f"<|im_start|>user\n{turn.user}<|im_end|>" in completion
        spans = _spans(mask)
        inserted = [tokenizer.decode(ids[a:b]) for m, a, b in spans if m == 0]
        written = [tokenizer.decode(ids[a:b]) for m, a, b in spans if m == 1]
        assert inserted == [
            f"\n<|im_start|>user\n{t.user}<|im_end|>\n<|im_start|>assistant\n"
            for t in task.turns[1:]
        ]
        assert len(written) == 3 and all(w.endswith("<|im_end|>") for w in written)
        assert ids[-1] == tokenizer.eos_token_id and mask[-1] == 1
        assert all(lp == 0.0 for lp, m in zip(logprobs, mask, strict=True) if m == 0)
        # the whole conversation is what the chat template renders for the episode's messages
        conversation = tokenizer.decode(out["prompt_ids"][i] + ids)
        rendered = tokenizer.apply_chat_template(
            [chat_message(m) for m in r.messages], tools=r.episode.tools, tokenize=False
        )
        assert r.exact and rendered == conversation + "\n"
        # the logprobs are those of the sampling distribution (bias, then temperature)
        full = torch.tensor([out["prompt_ids"][i] + ids])
        with torch.no_grad():
            logits = trainer.model(full).logits[0, len(out["prompt_ids"][i]) - 1 : -1].float()
        logits[:, tokenizer.eos_token_id] += EOS_BIAS
        expected = torch.log_softmax(logits / 0.8, dim=-1).gather(1, torch.tensor(ids)[:, None])
        model_rows = torch.tensor(mask).bool()
        assert torch.allclose(
            torch.tensor(logprobs)[model_rows], expected[:, 0][model_rows], atol=1e-4
        )
    assert out["completion_ids"][0] != out["completion_ids"][1]  # two rollouts of one group


def _scripted(tokenizer: Any, script: list[str]) -> Any:
    """A stand-in for the LLM only: the n-th assistant turn of a context writes ``script[n]``."""

    def generate(contexts: Any, max_new_tokens: Any, seeds: Any) -> list[Generation]:
        outs = []
        for context in contexts:
            turn = tokenizer.decode(context).count("<|im_start|>assistant") - 1
            ids = tokenizer(script[turn], add_special_tokens=False)["input_ids"]
            ids = [*ids, tokenizer.eos_token_id]
            outs.append(Generation(ids, [-0.5] * len(ids)))
        return outs

    return generate


@pytest.mark.parametrize("clarify", ["asks", "calls_instead_of_asking"])
def test_the_reward_paid_is_what_the_episode_pays_for_the_same_messages(
    rollout_trainer: tuple[Any, Any], clarify: str
) -> None:
    trainer, tokenizer = rollout_trainer
    fmt = ChatTemplateFormat(tokenizer)
    task = _three_turn_task()
    row = trl_rows([task])[0]
    listing = fmt.render_calls([{"name": "list_calendars", "arguments": {}}])
    script = [
        "Which title should the event have?" if clarify == "asks" else listing,
        *([] if clarify == "asks" else ["Here they are."]),
        listing,
        "You have these calendars.",
        fmt.render_calls([{"name": "get_current_time", "arguments": {}}]),
        "It is the time shown above.",
    ]
    rollout = MultiTurnRollout([row], generate=_scripted(tokenizer, script), max_total_tokens=2048)
    out = rollout([row["prompt"]], trainer)
    (r,) = rollout.last

    with Episode(task, format=fmt) as episode:
        for text in script:
            last = episode.step(text)
    assert last.terminated and r.episode.terminated and out["prove_user_turns"] == [3]
    assert r.breakdown == last.breakdown
    assert out["prove_total"] == [last.breakdown.total]
    assert out["prove_clarification"] == [0.0 if clarify == "asks" else -1.0]
    assert out["prove_coverage"] == [1.0]
    assert r.episode.messages == episode.messages
    columns = {k: v for k, v in out.items() if k.startswith("prove_")}
    logged: dict[str, float] = {}
    paid = prove_reward(task=[row["task"]], log_metric=logged.__setitem__, **columns)
    assert paid == [pytest.approx(last.reward)]
    assert logged["prove/total"] == pytest.approx(last.reward)
    assert logged["prove/clarification"] == out["prove_clarification"][0]

    # the model wrote canonical calls, so even the structured messages render to the tokens
    conversation = tokenizer.decode(out["prompt_ids"][0] + out["completion_ids"][0])
    rendered = tokenizer.apply_chat_template(
        [chat_message(m) for m in episode.messages], tools=episode.tools, tokenize=False
    )
    assert rendered == conversation + "\n"
    ids, mask = out["completion_ids"][0], out["env_mask"][0]
    inserted = [tokenizer.decode(ids[a:b]) for m, a, b in _spans(mask) if m == 0]
    written = [tokenizer.decode(ids[a:b]) for m, a, b in _spans(mask) if m == 1]
    assert written == [f"{text}<|im_end|>" for text in script]
    assert sum("<tool_response>" in t for t in inserted) == len(script) // 2
    assert all("<tool_response>" not in t and "<|im_start|>" not in t for t in written)
    assert {lp for lp, m in zip(out["logprobs"][0], mask, strict=True) if m == 1} == {-0.5}


def test_the_same_seed_replays_the_same_rollouts(rollout_trainer: tuple[Any, Any]) -> None:
    trainer, _ = rollout_trainer
    rows = trl_rows([_three_turn_task(), _banking_task()])
    prompts = [rows[0]["prompt"], rows[1]["prompt"]]
    first = MultiTurnRollout(rows, seed=1)(prompts, trainer)
    again = MultiTurnRollout(rows, seed=1)(prompts, trainer)
    one_by_one = MultiTurnRollout(rows, seed=1, batch_size=1)(prompts, trainer)
    other = MultiTurnRollout(rows, seed=2)(prompts, trainer)
    assert first["completion_ids"] == again["completion_ids"] == one_by_one["completion_ids"]
    assert first["logprobs"] == again["logprobs"]
    assert first["completion_ids"] != other["completion_ids"]


def test_a_rollout_ends_within_its_token_budget_and_is_scored_as_truncated(
    rollout_trainer: tuple[Any, Any],
) -> None:
    trainer, tokenizer = rollout_trainer
    task = _three_turn_task()
    row = trl_rows([task])[0]
    asks = _scripted(tokenizer, ["Which title?", "Fine.", "Done."])

    # the next user turn and a minimal answer no longer fit: the episode ends after turn 1
    rollout = MultiTurnRollout([row], generate=asks, max_total_tokens=24)
    out = rollout([row["prompt"]], trainer)
    (r,) = rollout.last
    assert r.episode.truncated and r.user_turns == 1 and r.episode.assistant_turns == 1
    assert out["completion_ids"][0][-1] == tokenizer.eos_token_id
    assert set(out["env_mask"][0]) == {1} and out["prove_truncated"] == [True]

    # a message longer than its budget is cut and not run
    long = _scripted(tokenizer, ["A long answer that does not fit in four tokens."])
    rollout = MultiTurnRollout([row], generate=long, max_turn_tokens=4)
    out = rollout([row["prompt"]], trainer)
    (r,) = rollout.last
    assert len(out["completion_ids"][0]) == 4 and r.episode.truncated
    assert out["completion_ids"][0][-1] != tokenizer.eos_token_id


def test_a_template_that_rewrites_earlier_turns_gets_the_text_between_turns_instead(
    smol_tokenizer_dir: str, tmp_path: Path
) -> None:
    from datasets import Dataset
    from trl import GRPOTrainer

    from prove_gym.formats import HERMES_CHAT_TEMPLATE

    tokenizer, model = _tiny_model(smol_tokenizer_dir)
    # trims assistant messages: the model's own "  Which title?  " is rendered differently
    tokenizer.chat_template = HERMES_CHAT_TEMPLATE.replace(
        "(message.content or '')", "(message.content or '') | trim"
    )
    task = _three_turn_task()
    row = trl_rows([task])[0]
    trainer = GRPOTrainer(
        model=model,
        args=_grpo_config(tmp_path, max_completion_length=2048),
        train_dataset=Dataset.from_list([row]),
        processing_class=tokenizer,
        reward_funcs=[prove_reward],
        rollout_func=MultiTurnRollout([row]),
    )
    script = ["  Which title?  ", "Fine.", "Done."]
    rollout = MultiTurnRollout([row], generate=_scripted(tokenizer, script))
    with pytest.warns(UserWarning, match="renders an earlier turn differently"):
        out = rollout([row["prompt"]], trainer)
    (r,) = rollout.last
    assert not r.exact and r.episode.terminated and r.user_turns == 3
    ids, mask = out["completion_ids"][0], out["env_mask"][0]
    inserted = [tokenizer.decode(ids[a:b]) for m, a, b in _spans(mask) if m == 0]
    assert inserted == [
        f"\n<|im_start|>user\n{t.user}<|im_end|>\n<|im_start|>assistant\n" for t in task.turns[1:]
    ]
    written = [tokenizer.decode(ids[a:b]) for m, a, b in _spans(mask) if m == 1]
    assert written == [f"{text}<|im_end|>" for text in script]


def test_each_prompt_leads_back_to_its_own_task() -> None:
    calendar, banking = _three_turn_task(), _banking_task()
    rows = trl_rows([calendar, banking, calendar])  # a task twice is one task
    rollout = MultiTurnRollout(rows)
    assert len(rollout.index) == 2 and rollout.index.shared == 0
    assert rollout.tasks_for(rows[0]["prompt"]) == [calendar]
    assert [t.id for t in rollout.tasks_for(rows[1]["prompt"])] == [banking.id]
    as_a_dataset_gives_it = [{**m, "tool_calls": None} for m in rows[1]["prompt"]]
    assert [t.id for t in rollout.tasks_for(as_a_dataset_gives_it)] == [banking.id]
    assert MultiTurnRollout([calendar]).tasks_for(rows[0]["prompt"]) == [calendar]
    with pytest.raises(KeyError, match="no row has this prompt"):
        rollout.tasks_for([{"role": "user", "content": "Something else."}])
    with pytest.raises(ValueError, match="its row holds task"):
        prove_reward(prove_total=[1.0], prove_task_id=[banking.id], task=[rows[0]["task"]])
    with pytest.raises(ValueError, match="neither environments"):
        prove_reward(completions=[])


def test_a_prompt_two_tasks_share_plays_one_of_them_for_the_whole_group(
    rollout_trainer: tuple[Any, Any],
) -> None:
    trainer, tokenizer = rollout_trainer
    calendar = _three_turn_task()
    other_state = calendar.model_copy(update={"id": "calendar-other-state", "seed": 8})
    rows = trl_rows([calendar, other_state])
    assert rows[0]["prompt"] == rows[1]["prompt"]
    answers = _scripted(tokenizer, ["Which title?", "Fine.", "Done."])
    played = []
    for seed in range(6):
        with pytest.warns(UserWarning, match="1 of 1 prompts stand for more than one task"):
            rollout = MultiTurnRollout(rows, seed=seed, generate=answers)
        out = rollout([rows[0]["prompt"]] * 3, trainer)
        assert len(set(out["prove_task_id"])) == 1  # one task for the whole group
        assert out["prove_prompt_tasks"] == [(calendar.id, other_state.id)] * 3
        played.append(out["prove_task_id"][0])
        # either row may have been drawn: both are this prompt's tasks
        for row in rows:
            prove_reward(task=[row["task"]] * 3, **{k: v for k, v in out.items() if "prove" in k})
    assert set(played) == {calendar.id, other_state.id}


def test_two_grpo_steps_play_every_user_turn_of_tasks_from_two_servers(
    smol_tokenizer_dir: str, tmp_path: Path
) -> None:
    from datasets import Dataset
    from trl import GRPOTrainer

    tokenizer, model = _tiny_model(smol_tokenizer_dir)  # Qwen2.5's template, TRL's copy
    tasks = {t.id: t for t in (_three_turn_task(), _banking_task())}
    rows = trl_rows(tasks.values())
    played: list[list[Any]] = []

    class Recorded(MultiTurnRollout):
        def play(self, prompts: Any, trainer: Any) -> Any:
            rollouts = super().play(prompts, trainer)
            played.append(rollouts)
            return rollouts

    trainer = GRPOTrainer(
        model=model,
        args=_grpo_config(
            tmp_path,
            num_generations=2,
            max_completion_length=160,
            generation_kwargs={"sequence_bias": [[[tokenizer.eos_token_id], EOS_BIAS]]},
        ),
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        reward_funcs=[prove_reward],
        rollout_func=Recorded(rows),
    )
    trainer.train()

    # TRL 1.16 hands rollout_func each prompt num_generations times (not once, as its
    # docstring says): one rollout per prompt received makes the group
    assert len(played) == 2
    for batch in played:
        assert Counter(r.task.id for r in batch) == dict.fromkeys(tasks, 2)
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logged) == 2
    for batch, entry in zip(played, logged, strict=True):
        assert {r.task.server for r in batch} == {"calendar", "banking"}
        assert all(r.user_turns == len(tasks[r.task.id].turns) for r in batch)
        totals = [r.breakdown.total for r in batch]
        assert entry["reward"] == pytest.approx(sum(totals) / 4, abs=1e-5)
        assert entry["rewards/prove_reward/mean"] == pytest.approx(entry["reward"], abs=1e-5)
        assert entry["prove/user_turns"] == pytest.approx(sum(r.user_turns for r in batch) / 4)
        # TRL counts only the model's tokens: our env_mask is its tool mask
        model_tokens = [sum(r.env_mask) for r in batch]
        assert entry["completions/mean_length"] == pytest.approx(sum(model_tokens) / 4)


def test_with_turn_rewards_each_rollout_reports_its_weakest_turn(
    rollout_trainer: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer, _tokenizer = rollout_trainer
    task = _three_turn_task()
    row = trl_rows([task])[0]
    plain = MultiTurnRollout([row])([row["prompt"]], trainer)
    assert "prove_worst_turn" not in plain  # off by default
    monkeypatch.setenv("PROVE_TURN_REWARDS", "1")
    rollout = MultiTurnRollout([row])
    out = rollout([row["prompt"]] * 2, trainer)
    for i, r in enumerate(rollout.last):
        turns = [c.reward for c in r.episode.turn_credits]
        assert len(turns) == r.user_turns == 3
        assert sum(turns) == pytest.approx(out["prove_total"][i])  # they add up to the total
        assert out["prove_worst_turn"][i] == pytest.approx(min(turns) * 3)
    assert prove_reward(**{k: v for k, v in out.items() if k.startswith("prove_")}) == [
        float(t) for t in out["prove_total"]
    ]  # the reward paid is the episode's; the turns' credit is a logged column
