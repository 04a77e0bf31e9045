"""Local models in evaluation and in `prove train`'s TRL loop (tiny random model, real code)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from prove_gym import get_registry
from prove_gym.adapters.models import load_causal_lm, supports_tools
from prove_gym.env.env import ProveEnv
from prove_gym.episode import Episode, EpisodeCaps
from prove_gym.eval import EpisodeResult
from prove_gym.formats import HERMES_CHAT_TEMPLATE
from prove_gym.reward import RewardBreakdown, RewardConfig
from prove_gym.task import Task
from prove_gym.training import (
    _model,
    evaluate_model,
    grpo_rows,
    restrict_tools,
    sft_rows,
    train_sft,
    train_trl,
)

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


def prove_eval(model_dir: str, out: Path, *args: str) -> list[dict[str, Any]]:
    """``prove eval --hf-model model_dir`` on calendar tasks; the rows of its results.jsonl."""
    from prove_gym.cli import main

    flags = ["--servers", "calendar", "--no-progress", "--out", str(out)]
    assert main(["eval", "--hf-model", model_dir, *flags, *args]) == 0
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def played_alike(rows: list[dict[str, Any]], results: list[EpisodeResult]) -> None:
    """Rows of results.jsonl and results of the same tasks agree on everything but the time."""
    assert len(rows) == len(results)
    for row, r in zip(rows, results, strict=True):
        theirs = {k: v for k, v in asdict(r).items() if k != "seconds"}
        assert {k: v for k, v in row.items() if k != "seconds"} == theirs


def unplayed_reward(task: Task, config: RewardConfig) -> RewardBreakdown:
    """What the env pays for ``task`` when nothing of the model's runs (its first message is cut)."""
    with Episode(task, reward=config) as episode:
        return episode.end(truncated=True)


def replayed(task: Task, caps: EpisodeCaps) -> RewardBreakdown:
    """What the env pays when every assistant message is empty (each user turn answered at once)."""
    with Episode(task, caps=caps) as episode:
        while not episode.done:
            episode.step("")
        assert episode.breakdown is not None
        return episode.breakdown


@pytest.fixture(scope="module")
def answering_model_dir(tiny_model_dir: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny Qwen2 saved with SmolLM2's tokenizer whose every greedy message is EOS at once.

    Hidden dimension 0 of every embedding is large, so the final norm keeps it positive, and
    the (untied) head reads only that dimension, into the EOS logit: each user turn is
    answered with an empty message, so an episode lasts as long as its caps let it.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir, local_files_only=True)
    config = AutoConfig.from_pretrained(tiny_model_dir, local_files_only=True)
    config.tie_word_embeddings = False
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        model.get_input_embeddings().weight[:, 0] = 100.0
        model.lm_head.weight.zero_()
        model.lm_head.weight[tok.eos_token_id, 0] = 1.0
    out = tmp_path_factory.mktemp("answering-qwen2")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def test_prove_eval_plays_a_local_model_and_reports_each_episode(
    tiny_model_dir: str, tmp_path: Path
) -> None:
    rows = prove_eval(tiny_model_dir, tmp_path, "--limit", "2", "--max-tokens", "8")
    assert [r["task_id"] for r in rows] == [t.id for t in CALENDAR[:2]]
    # A random model does not end a message in 8 tokens: nothing of it runs, and each
    # episode is paid what the env pays for it untouched.
    for task, row in zip(CALENDAR[:2], rows, strict=True):
        paid = unplayed_reward(task, RewardConfig.preset("default"))
        assert row["assistant_turns"] == 0 and not row["terminated"] and row["n_calls"] == 0
        assert row["total"] == pytest.approx(paid.total)
        assert row["components"] == dict(paid.components)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["policy"] == f"hf:{Path(tiny_model_dir).name}"
    assert summary["overall"]["tasks"] == 2
    assert summary["overall"]["total"] == pytest.approx(sum(r["total"] for r in rows) / 2)
    assert summary["policy"] in (tmp_path / "report.txt").read_text()


def test_prove_eval_and_evaluate_model_pay_the_same_rewards(
    tiny_model_dir: str, tmp_path: Path
) -> None:
    flags = ["--limit", "4", "--max-tokens", "12", "--max-total-tokens", "64"]
    rows = prove_eval(tiny_model_dir, tmp_path, *flags, "--reward", "paper", "--concurrency", "2")
    model, tok = load_causal_lm(tiny_model_dir)  # what the CLI loads
    report = evaluate_model(
        model,
        tok,
        CALENDAR[:4],
        max_total_tokens=64,
        max_turn_tokens=12,
        batch_size=2,
        reward_config=RewardConfig.preset("paper"),
    )
    played_alike(rows, report.results)
    assert max(r.max_total for r in report.results) == pytest.approx(1.3)  # the paper's reward


def test_prove_eval_keeps_a_local_model_within_its_caps(
    answering_model_dir: str, tmp_path: Path
) -> None:
    two_turns = [t for t in CALENDAR if len(t.turns) == 2]
    assert two_turns
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(t.to_json() + "\n" for t in two_turns), encoding="utf-8")
    rows = prove_eval(answering_model_dir, tmp_path / "free", "--tasks", str(tasks))
    assert all(r["assistant_turns"] == 2 and r["terminated"] for r in rows)
    for task, row in zip(two_turns, rows, strict=True):
        assert row["total"] == pytest.approx(replayed(task, EpisodeCaps()).total)
    for flag, caps in (
        ("--max-assistant-turns", EpisodeCaps(max_assistant_turns=1)),
        ("--max-user-turns", EpisodeCaps(max_user_turns=1)),
    ):
        rows = prove_eval(answering_model_dir, tmp_path / flag, "--tasks", str(tasks), flag, "1")
        assert all(r["assistant_turns"] == 1 and not r["terminated"] for r in rows)
        for task, row in zip(two_turns, rows, strict=True):
            assert row["total"] == pytest.approx(replayed(task, caps).total)
    # The second user turn does not fit in 20 tokens with room for an answer: cut after one.
    rows = prove_eval(
        answering_model_dir, tmp_path / "total", "--tasks", str(tasks), "--max-total-tokens", "20"
    )
    assert all(r["assistant_turns"] == 1 and not r["terminated"] for r in rows)


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


def test_train_trl_plays_every_user_turn_and_writes_the_reward_curve(
    tiny_model_dir: str, tmp_path: Path
) -> None:
    rows = grpo_rows(CALENDAR, "calendar", extra=1)
    multi = [r for r in rows if len(json.loads(r["task"])["turns"]) > 1][:2]
    result = train_trl(
        multi, tmp_path, model=tiny_model_dir, steps=2, group=2, max_completion_length=24
    )
    assert len(result.rewards) == 2
    log = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [h["reward"] for h in log] == result.rewards
    assert all("prove/validity" in h and "prove/user_turns" in h for h in log)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["servers"] == ["calendar"] and summary["reward_first"] == result.rewards[0]
    # a random 2-layer model writes no tool calls: every group is paid alike, and the run says so
    assert all(h["prove/n_calls"] == 0 for h in log)
    assert any(h.get("frac_reward_zero_std") == 1.0 for h in log)
    assert result.warnings and "no tool call was parsed" in result.warnings[0]
    assert summary["warnings"] == result.warnings
    png = (tmp_path / "reward_curve.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    # no CUDA here: the run says it trained on the CPU, and where each step's time went
    assert summary["device"].startswith("cpu") and result.device == summary["device"]
    assert [t["step"] for t in summary["step_times"]] == [1, 2]
    for t in result.step_times:
        assert t.generation > 0 and t.environment > 0 and t.optimisation > 0
        assert abs(t.generation + t.environment + t.optimisation - t.total) < 1e-9
    split = summary["step_time"]
    shares = [split[f"{p}_share"] for p in ("generation", "environment", "optimisation")]
    assert split["steps"] == 2 and abs(sum(shares) - 1.0) < 1e-3


def test_the_device_choice_sets_the_trl_configs_it_is_given_to() -> None:
    from trl import GRPOConfig, SFTConfig

    from prove_gym.training import choose_device, detect_device

    cpu = choose_device("auto", cuda_available=False, cuda_bf16=False, cpu_bf16=True, bf16=False)
    for config_class in (SFTConfig, GRPOConfig):
        config = config_class(output_dir="unused", report_to="none", **cpu.trainer_args())
        assert config.use_cpu is True and config.bf16 is False
        assert config.device.type == "cpu"
    gpu = choose_device("auto", cuda_available=True, cuda_bf16=True, cpu_bf16=False)
    assert gpu.trainer_args() == {"use_cpu": False, "bf16": True}
    import torch

    here = detect_device("auto")
    assert here.device == ("cuda" if torch.cuda.is_available() else "cpu")
    assert here.name.startswith(here.device)


def test_evaluate_model_plays_each_task_once_in_order_and_greedily(tiny_model_dir: str) -> None:
    model, tok = _model(tiny_model_dir, None)
    model.train()
    tasks = restrict_tools(CALENDAR[:5], "calendar", extra=1)
    report = evaluate_model(model, tok, tasks, max_total_tokens=40, batch_size=2)
    assert [r.task_id for r in report.results] == [t.id for t in tasks]
    again = evaluate_model(model, tok, tasks, max_total_tokens=40, batch_size=2)
    assert [r.total for r in again.results] == [r.total for r in report.results]
    for task, r in zip(tasks, report.results, strict=True):
        assert r.n_gold == sum(len(turn.steps) for turn in task.turns)
        assert set(r.components) >= {"validity", "coverage", "state"}
    assert model.training  # evaluation ran in eval mode and gave the mode back


def test_sft_lowers_the_loss_on_gold_conversations(tiny_model_dir: str, tmp_path: Path) -> None:
    model, tok = _model(tiny_model_dir, None)
    rows = sft_rows(restrict_tools(CALENDAR[:2], "calendar", extra=0))
    result = train_sft(
        rows, tmp_path, model=(model, tok), epochs=6, batch_size=2, learning_rate=3e-3
    )
    losses = [h["loss"] for h in result.steps]
    assert len(losses) == 6 and all(loss == loss for loss in losses)  # no NaN
    assert losses[-1] < losses[0] - 0.5  # from about ln(vocabulary) down
    logged = [json.loads(line) for line in (tmp_path / "sft_log.jsonl").read_text().splitlines()]
    assert [h["loss"] for h in logged] == losses


def test_prove_train_warm_starts_then_runs_grpo(tiny_model_dir: str, tmp_path: Path) -> None:
    from prove_gym.cli import main

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(t.to_json() + "\n" for t in CALENDAR[:6]), encoding="utf-8")
    code = main(
        [
            "train",
            "--tasks",
            str(tasks),
            "--model",
            tiny_model_dir,
            "--warm-start",
            "2",
            "--steps",
            "1",
            "--group",
            "2",
            "--max-completion-length",
            "24",
            "--out",
            str(tmp_path / "run"),
        ]
    )
    assert code == 0
    assert (tmp_path / "run" / "sft_log.jsonl").read_text().strip()
    assert len((tmp_path / "run" / "log.jsonl").read_text().splitlines()) == 1
