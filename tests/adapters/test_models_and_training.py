"""Local models in evaluation and in `prove train`'s TRL loop (tiny random model, real code)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from prove_gym import get_registry
from prove_gym.adapters.common import HERMES_CHAT_TEMPLATE
from prove_gym.adapters.models import load_causal_lm, supports_tools
from prove_gym.env.env import ProveEnv
from prove_gym.episode import EpisodeCaps
from prove_gym.eval import TransformersPolicy, evaluate
from prove_gym.training import grpo_rows, train_trl

pytestmark = pytest.mark.trainer

CALENDAR = get_registry().tasks("calendar")


def test_a_model_whose_template_has_no_tools_gets_the_hermes_template(tiny_model_dir: str) -> None:
    _model, tok = load_causal_lm(tiny_model_dir)
    assert supports_tools(tok) and tok.chat_template == HERMES_CHAT_TEMPLATE
    env = ProveEnv("calendar")
    _obs, info = env.reset(options={"task": CALENDAR[0]})
    native = tok.apply_chat_template(
        [{"role": "system", "content": info["instructions"]}, info["messages"][1]],
        tools=info["tools"],
        tokenize=False,
    )
    # Rendered natively, the prompt reads exactly as the env's own Hermes system prompt.
    assert native.startswith(f"<|im_start|>system\n{info['messages'][0]['content']}<|im_end|>\n")


def test_a_local_model_is_evaluated_through_the_env(tiny_model_dir: str) -> None:
    model, tok = load_causal_lm(tiny_model_dir)
    policy = TransformersPolicy(model, tok, max_new_tokens=8, temperature=0.0)
    report = evaluate(
        policy, CALENDAR[:2], concurrency=2, progress=False, caps=EpisodeCaps(max_assistant_turns=2)
    )
    assert [r.task_id for r in report.results] == [t.id for t in CALENDAR[:2]]
    for r in report.results:
        assert r.error is None and 1 <= r.assistant_turns <= 2
        assert r.components  # scored by the env's reward
    again = evaluate(
        policy, CALENDAR[:2], concurrency=1, progress=False, caps=EpisodeCaps(max_assistant_turns=2)
    )
    assert [r.total for r in again.results] == [r.total for r in report.results]  # greedy


def test_a_step_that_cannot_learn_is_named_with_its_cause() -> None:
    from prove_gym.training import zero_variance_warning

    no_calls = {"step": 1, "reward": 0.4, "frac_reward_zero_std": 1.0, "tools/call_frequency": 0}
    message = zero_variance_warning(no_calls)
    assert message is not None and "no tool call was parsed" in message and "step 1" in message
    alike = {"step": 2, "reward": 1.1, "frac_reward_zero_std": 1.0, "tools/call_frequency": 1.5}
    assert "same reward (1.1)" in (zero_variance_warning(alike) or "")
    assert zero_variance_warning({"frac_reward_zero_std": 0.5, "reward_std": 0.3}) is None
    assert zero_variance_warning({"reward_std": 0.0, "step": 3}) is not None
    assert zero_variance_warning({"loss": 0.1}) is None


def test_train_trl_runs_grpo_steps_and_writes_the_reward_curve(
    tiny_model_dir: str, tmp_path: Path
) -> None:
    tools = ["search_events", "add_invitee"]
    rows = grpo_rows(CALENDAR, "calendar", tools=tools)
    result = train_trl(
        "calendar",
        rows,
        tmp_path,
        tools=tools,
        model=tiny_model_dir,
        steps=2,
        group=2,
        max_completion_length=12,
        max_tool_iterations=1,
    )
    assert len(result.rewards) == 2
    log = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [h["reward"] for h in log] == result.rewards
    assert all("prove/validity" in h or "prove/n_calls" in h for h in log)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["tools"] == tools and summary["reward_first"] == result.rewards[0]
    # a random 2-layer model writes no tool calls: every group is paid alike, and the run says so
    assert any(h.get("frac_reward_zero_std") == 1.0 for h in log)
    assert summary["warnings"] and "zero reward variance" in summary["warnings"][0]
    png = (tmp_path / "reward_curve.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
