"""The verl agent loop against verl's own classes on CPU; only the LLM is a stand-in.

verl's (>= 0.9.1) ``AgentLoopBase``, ``AgentLoopOutput``, its registry and its
continuous-token builders are the real ones; the rollout server is a token-in/token-out
fake that answers with a scripted policy's text, encoded by the same tokenizer the loop
decodes with and ended by the end-of-turn token, as vLLM's token output is.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.trainer
agent_loop = pytest.importorskip("verl.experimental.agent_loop.agent_loop")
if not hasattr(agent_loop.AgentLoopBase, "ct_merge_context_msg"):
    pytest.skip("the verl adapter needs verl>=0.9.1", allow_module_level=True)

from omegaconf import OmegaConf  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from prove_gym import get_registry  # noqa: E402
from prove_gym.adapters.common import resolve_task  # noqa: E402
from prove_gym.adapters.verl import AGENT_NAME, ProveAgentLoop, verl_rows  # noqa: E402
from prove_gym.formats import ChatTemplateFormat  # noqa: E402
from prove_gym.task import Task  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TASKS = {t.id: t for t in get_registry().tasks("calendar")}


class ScriptedServer:
    """The LLM, token in / token out: each call returns the next scripted message's tokens."""

    def __init__(self, tokenizer: Any, messages: list[str]) -> None:
        self.tokenizer = tokenizer
        self.messages = list(messages)
        self.prompts: list[list[int]] = []
        self.outputs: list[list[int]] = []

    async def generate(self, *, request_id: str, prompt_ids: list[int], **_: Any) -> TokenOutput:
        self.prompts.append(list(prompt_ids))
        text = self.messages.pop(0) if self.messages else "Done."
        ids = [*self.tokenizer.encode(text, add_special_tokens=False), self.tokenizer.eos_token_id]
        self.outputs.append(ids)
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids))


def oracle_messages(task: Task, fmt: ChatTemplateFormat) -> list[str]:
    out = []
    for turn in task.turns:
        if turn.steps:
            out.append(
                fmt.render_calls([{"name": s.name, "arguments": s.arguments} for s in turn.steps])
            )
        out.append("Done, anything else?")
    return out


def make_loop(
    tokenizer: Any,
    messages: list[str] | None,
    task: Task,
    *,
    response_length: int = 8192,
    model_type: str | None = "qwen2",
) -> tuple[ProveAgentLoop, ScriptedServer]:
    """The loop as verl's worker builds it; ``model_type`` picks verl's continuous-token
    builder (``qwen2``: ChatML boundaries, the tiny test model's family; ``None``: generic)."""
    fmt = ChatTemplateFormat(tokenizer)
    server = ScriptedServer(
        tokenizer, messages if messages is not None else oracle_messages(task, fmt)
    )
    config = OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {"prompt_length": 16384, "response_length": response_length}
            }
        }
    )
    data = OmegaConf.create({"apply_chat_template_kwargs": {}})
    loop = ProveAgentLoop(
        trainer_config=agent_loop.DictConfigWrap(config),
        server_manager=server,
        tokenizer=tokenizer,
        processor=None,
        dataset_cls=None,
        data_config=agent_loop.DictConfigWrap(data),
        hf_model_type=model_type,
    )
    return loop, server


def play(loop: ProveAgentLoop, task: Task) -> Any:
    row = verl_rows([task])[0]
    # verl's loop runs on the event loop it was built on (run_in_executor for templates)
    return loop.loop.run_until_complete(loop.run({"temperature": 1.0}, **row))


def test_the_loop_is_registered_under_its_name_and_by_the_example_config() -> None:
    assert agent_loop._agent_loop_registry[AGENT_NAME]["_target_"] == (
        "prove_gym.adapters.verl.ProveAgentLoop"
    )
    entries = OmegaConf.load(ROOT / "examples/verl/agent_loop.yaml")
    assert [(e.name, e._target_) for e in entries] == [
        (AGENT_NAME, "prove_gym.adapters.verl.ProveAgentLoop")
    ]


def test_the_oracle_plays_every_user_turn_and_earns_the_maximum(hermes_tokenizer: Any) -> None:
    task = TASKS["calendar-003"]  # two user turns
    assert len(task.turns) == 2
    loop, server = make_loop(hermes_tokenizer, None, task)
    out = play(loop, task)
    assert isinstance(out, agent_loop.AgentLoopOutput)  # verl's own model validated it
    info = out.extra_fields["reward_extra_info"]
    assert out.reward_score == pytest.approx(info["prove/max_total"])
    assert info["prove/state"] == 1.0 and info["prove/coverage"] == 1.0
    assert len(out.response_ids) == len(out.response_mask)
    # model tokens are trained on, observation tokens (tool results, the 2nd user turn) are not
    assert 0 in out.response_mask and 1 in out.response_mask
    observed = [t for t, m in zip(out.response_ids, out.response_mask, strict=True) if m == 0]
    assert task.turns[1].user in loop.tokenizer.decode(observed)
    # each generation saw the whole conversation so far, and the model's tokens are exactly
    # what it generated, in order, with their log-probabilities
    assert all(a == b[: len(a)] for a, b in zip(server.prompts, server.prompts[1:], strict=False))
    assert len(server.prompts) == len(oracle_messages(task, loop.format))
    trained = [t for t, m in zip(out.response_ids, out.response_mask, strict=True) if m == 1]
    assert trained == [t for ids in server.outputs for t in ids]
    assert out.response_logprobs is not None
    assert len(out.response_logprobs) == len(out.response_ids)
    assert {lp for lp, m in zip(out.response_logprobs, out.response_mask, strict=True) if m} == {
        -0.5
    }


def test_the_tokens_are_what_the_chat_template_renders_for_the_whole_conversation(
    hermes_tokenizer: Any,
) -> None:
    """verl's Qwen builder restores the newline after each ``<|im_end|>`` the model stopped at,
    so prompt + response decode to the template's rendering of the episode's transcript."""
    from prove_gym.episode import Episode

    task = TASKS["calendar-003"]
    fmt = ChatTemplateFormat(hermes_tokenizer)
    actions = oracle_messages(task, fmt)
    loop, _ = make_loop(hermes_tokenizer, list(actions), task)
    out = play(loop, task)
    with Episode(task, format=fmt) as episode:
        for action in actions:
            episode.step(action)
    rendered = hermes_tokenizer.apply_chat_template(
        episode.messages, tools=episode.tools, tokenize=False
    )
    assert hermes_tokenizer.decode(out.prompt_ids + out.response_ids) == rendered.rstrip("\n")
    assert hermes_tokenizer.decode(out.prompt_ids) == hermes_tokenizer.apply_chat_template(
        episode.messages[:2], tools=episode.tools, tokenize=False, add_generation_prompt=True
    )


def test_a_wrong_policy_is_paid_less_and_every_sample_logs_the_same_keys(
    hermes_tokenizer: Any,
) -> None:
    task = TASKS["calendar-001"]
    good, _ = make_loop(hermes_tokenizer, None, task)
    bad, _ = make_loop(hermes_tokenizer, ["I cannot help with that."], task)
    out_good, out_bad = play(good, task), play(bad, task)
    assert out_bad.reward_score < out_good.reward_score
    keys_good = out_good.extra_fields["reward_extra_info"].keys()
    assert keys_good == out_bad.extra_fields["reward_extra_info"].keys()
    assert math.isnan(out_bad.extra_fields["reward_extra_info"]["prove/abstention"])


def test_running_out_of_response_budget_ends_the_episode_truncated_and_scored(
    hermes_tokenizer: Any,
) -> None:
    task = TASKS["calendar-001"]
    loop, _ = make_loop(hermes_tokenizer, None, task, response_length=40)
    out = play(loop, task)
    assert len(out.response_ids) <= 40
    assert out.reward_score < out.extra_fields["reward_extra_info"]["prove/max_total"]


def test_rows_carry_the_task_the_loop_plays() -> None:
    task = TASKS["calendar-002"]
    (row,) = verl_rows([task])
    assert row["agent_name"] == AGENT_NAME and row["data_source"] == "prove/calendar"
    assert resolve_task(row["extra_info"]["task"]) == task


@pytest.mark.parametrize("model_type", ["qwen2", None])
def test_through_verl_the_reward_equals_the_episodes_on_the_same_actions(
    hermes_tokenizer: Any, model_type: str | None
) -> None:
    from prove_gym.episode import Episode

    task = TASKS["calendar-003"]  # two user turns
    fmt = ChatTemplateFormat(hermes_tokenizer)
    first = task.turns[0].steps
    actions = [  # half right: the first turn's calls, then a wrong id, then done
        fmt.render_calls([{"name": s.name, "arguments": s.arguments} for s in first]),
        "Done.",
        fmt.render_calls([{"name": "get_event", "arguments": {"event_id": "evt_0001"}}]),
        "That is all.",
    ]
    loop, _ = make_loop(hermes_tokenizer, list(actions), task, model_type=model_type)
    out = play(loop, task)
    with Episode(task, format=fmt) as episode:
        for action in actions:
            if not episode.done:
                episode.step(action)
    assert episode.breakdown is not None
    assert out.reward_score == pytest.approx(episode.breakdown.total)
    assert 0 < out.reward_score < episode.breakdown.max_total


@pytest.mark.parametrize("turn_rewards", ["0", "1"])
def test_turn_scores_carry_each_turns_credit_only_when_asked(
    hermes_tokenizer: Any, monkeypatch: pytest.MonkeyPatch, turn_rewards: str
) -> None:
    monkeypatch.setenv("PROVE_TURN_REWARDS", turn_rewards)
    task = TASKS["calendar-003"]  # two user turns
    loop, _server = make_loop(hermes_tokenizer, None, task)
    out = play(loop, task)
    scores = out.extra_fields["turn_scores"]
    if turn_rewards == "0":
        assert scores == []
    else:  # the gold earns each turn an equal share; they sum to the episode's reward
        assert scores == pytest.approx([1.65, 1.65])
        assert out.reward_score == pytest.approx(3.3)
