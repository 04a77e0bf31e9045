"""Write a synthesized dataset: task JSONL split by state seed, trainer layouts, a report.

Files written to ``--out DIR``:

- ``train.jsonl`` / ``test.jsonl``: one :class:`~prove_gym.task.Task` per line
  (``Task.to_json()``), split by state seed (no test state is seen in training).
  Every file's rows are interleaved across servers and shuffled with the seed
  (:func:`training_order`): any first N rows hold each server in proportion.
  Each line rebuilds its initial state from ``seed``/``size`` and carries the
  ``final_state_hash`` of its gold replay.
- ``openrlhf.jsonl`` / ``openrlhf.test.jsonl``: ``{"prompt": [system, user], "label":
  <task JSON>}``. The system message is exactly what ``ProveEnv.reset`` renders for
  the task (instructions and offered tools through the episode's tool-call format), the user
  message is the first user turn; the label rebuilds the episode.
- ``trl.jsonl`` / ``trl.test.jsonl``: ``{"prompt": [{"role": "user", ...}], "task":
  <task JSON>, "environment": <primary server>}``; ``environment`` selects the row's
  class when ``GRPOTrainer(environment_factory=environment_factories())`` mixes servers
  (TRL's convention), and TRL passes the columns to the environment's ``reset(**row)``.
- ``report.json``: counts by server, tool, chain length, kind, turns, information
  level, knob, result outcome, recovery, and validation drop reason.
- ``README.md``: the dataset card: the mix (levels, knobs, abstention, recovery turns,
  states), the settings, the files, and a YAML header naming three configurations
  (``tasks``, ``openrlhf``, ``trl``) with their train/test files, so
  ``datasets.load_dataset(DIR, "trl")`` loads the folder as it is (``trl``, the default,
  and ``openrlhf`` hold each task as one JSON string: one schema for both splits).

Every JSONL file also loads on its own with ``datasets.load_dataset("json",
data_files=...)``. The task files' nested records can differ between splits in which
optional fields ever hold a value (a split with no missing-tool turn has only nulls in
``meta.knobs.missing_tool``), so Arrow cannot always give ``train.jsonl`` and
``test.jsonl`` one schema together: load them one at a time, or read them with
:func:`prove_gym.load_tasks`.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from prove_gym.registry import Registry, get_registry
from prove_gym.synth.generate import GENERATOR
from prove_gym.synth.pipeline import SynthResult
from prove_gym.task import Task


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _write_lines(path: Path, lines: Iterable[str]) -> int:
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line + "\n")
            n += 1
    return n


class PromptRenderer:
    """Renders a task's opening messages exactly as an :class:`~prove_gym.episode.Episode` starts.

    The same code path as the episode (instructions, offered tools with schema
    overrides, the format's system message), without building any state.
    """

    def __init__(self, format: str = "hermes", registry: Registry | None = None) -> None:
        self.registry = registry or get_registry()
        self.format = self.registry.get_format(format)

    def messages(self, task: Task) -> list[dict[str, Any]]:
        """``[system, first user]`` as ``Episode.messages`` starts (the env's ``info["messages"]``)."""
        from prove_gym.episode import episode_instructions, opening_messages
        from prove_gym.workspace import offered_openai_tools

        tools = offered_openai_tools(task, self.registry)
        instructions = episode_instructions(task, self.registry)
        return opening_messages(task, self.format, tools, instructions)


def openrlhf_row(task: Task, renderer: PromptRenderer, text: str) -> dict[str, Any]:
    """``{"prompt": [system, user], "label": <task JSON>}`` for OpenRLHF's agent mode
    (``text``: ``task.to_json()``, made once for every file that carries it)."""
    return {"prompt": renderer.messages(task), "label": text}


def trl_row(task: Task, text: str) -> dict[str, Any]:
    """``{"prompt": [user], "task": <task JSON>, "environment": <primary>}`` for TRL environments
    (``text``: ``task.to_json()``)."""
    return {
        "prompt": [{"role": "user", "content": task.turns[0].user}],
        "task": text,
        "environment": task.server,
    }


def training_order(tasks: list[Task], seed: int) -> list[Task]:
    """The tasks interleaved across servers and shuffled with ``seed``, for trainers.

    Each server's tasks are shuffled, then spread evenly over the file: the i-th of
    a server's n tasks takes position ``i / n + u / n_max`` (u drawn once per server,
    n_max the largest server's count), and the file follows those positions. The
    first rows hold one task of every server, and every prefix holds each server
    in proportion, so a trainer capped at its first rows (``--max_samples``) sees
    every server. Deterministic: the same tasks and seed give the same order.
    """
    by_server: dict[str, list[Task]] = {}
    for task in tasks:
        by_server.setdefault(task.server, []).append(task)
    n_max = max((len(g) for g in by_server.values()), default=1)
    keyed: list[tuple[float, str, int, Task]] = []
    for server, group in sorted(by_server.items()):
        rng = random.Random(f"{seed}:order:{server}")
        group = sorted(group, key=lambda t: t.id)
        rng.shuffle(group)
        offset = rng.random() / n_max
        keyed.extend((i / len(group) + offset, server, i, t) for i, t in enumerate(group))
    keyed.sort(key=lambda k: (k[0], k[1], k[2]))
    return [k[3] for k in keyed]


def write_dataset(
    result: SynthResult,
    out: str | Path,
    *,
    format: str = "hermes",
    registry: Registry | None = None,
) -> dict[str, Any]:
    """Write every file of a dataset into ``out`` (created); returns the report.

    ``format`` is the tool-call format whose system message the OpenRLHF
    prompts carry (the one the trainer's episodes will be played in).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    renderer = PromptRenderer(format, registry)
    for split, suffix in (("train", ""), ("test", ".test")):
        tasks = training_order(result.split(split), result.config.seed)
        texts = [t.to_json() for t in tasks]
        _write_lines(out / f"{split}.jsonl", texts)
        _write_lines(
            out / f"openrlhf{suffix}.jsonl",
            (_dumps(openrlhf_row(t, renderer, x)) for t, x in zip(tasks, texts, strict=True)),
        )
        _write_lines(
            out / f"trl{suffix}.jsonl",
            (_dumps(trl_row(t, x)) for t, x in zip(tasks, texts, strict=True)),
        )
    report = build_report(result, registry)
    (out / "report.json").write_text(
        json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (out / "README.md").write_text(dataset_card(report), encoding="utf-8")
    return report


_CONFIGS = (("tasks", "train.jsonl", "test.jsonl"),
            ("openrlhf", "openrlhf.jsonl", "openrlhf.test.jsonl"),
            ("trl", "trl.jsonl", "trl.test.jsonl"))  # fmt: skip


def dataset_card(report: dict[str, Any]) -> str:
    """The dataset card (``README.md``): a Hugging Face YAML header, then the mix and settings.

    Written from the report alone, so it is as deterministic as the data.
    """
    tot = report["totals"]
    n = tot["tasks"] or 1
    calling = (tot["tasks"] - sum(report["abstention_tasks"].values())) or 1
    head = ["---", "configs:"]
    for name, train, test in _CONFIGS:
        head += [
            f"- config_name: {name}",
            *(["  default: true"] if name == "trl" else []),
            "  data_files:",
            "  - split: train",
            f"    path: {train}",
            "  - split: test",
            f"    path: {test}",
        ]
    head += ["tags:", "- tool-use", "- reinforcement-learning", "- prove_gym", "---", ""]

    def pct(v: int, total: int) -> str:
        return f"{v} ({100 * v / total:.1f}%)"

    config = report["config"]
    level_share = dict(zip(("complete", "missing", "minimal"), config["info_levels"], strict=True))
    mix = [
        "| what | count (share) | setting |",
        "|---|---|---|",
        *(
            f"| info level `{k}` | {pct(v, calling)} | {level_share.get(k, '')} |"
            for k, v in report["info_levels"].items()
        ),
        f"| distractor tools (3-8 of other servers) | {pct(report['knobs'].get('distractors', 0), calling)} | {config['distractor_rate']} |",
        f"| enum values stripped | {pct(report['knobs'].get('strip_enums', 0), calling)} | {config['strip_enum_rate']} |",
        f"| irrelevant request turn | {pct(report['knobs'].get('irrelevant', 0), calling)} | {config['irrelevant_rate']} |",
        f"| missing tool turn | {pct(report['knobs'].get('missing_tool', 0), calling)} | {config['missing_tool_rate']} |",
        f"| whole abstention tasks | {pct(sum(report['abstention_tasks'].values()), n)} | {config['abstention_rate']} |",
        f"| tasks showing a failed call and its recovery (retry, repair) or give-up | {pct(report['recovering_tasks'], n)} | recovery {config['recovery_rate']}, give-up {config.get('give_up_rate', 0)} |",
    ]  # fmt: skip
    outcomes = ", ".join(f"{k} {v}" for k, v in report["outcomes"].items())
    servers = ", ".join(f"{s} {c}" for s, c in report["servers"].items())
    files = [f"- `{name}`: `{train}` / `{test}`" for name, train, test in _CONFIGS]
    body = [
        "# prove_gym synthesized tool-use conversations",
        "",
        f"{tot['tasks']} tasks ({tot['train']} train / {tot['test']} test, split by initial "
        f"state) over {len(report['servers'])} servers, written by `{report['generator']}` "
        f"with master seed {config['seed']}; {tot['distinct_states']} distinct initial "
        "states. Every task replays its gold calls at the maximum reward on a fresh "
        "session and carries the state hash they reach.",
        "",
        "## Mix",
        "",
        "Levels and knobs are shares of the tool-calling tasks; abstention and recovery "
        "of all tasks.",
        "",
        *mix,
        "",
        f"Gold call results: {outcomes} (a failure is an attempt the gold recovers from or "
        "gives up, explained).",
        "",
        f"Tasks per server: {servers}.",
        "",
        "## Files",
        "",
        *files,
        "",
        "```python",
        "import datasets",
        'trl = datasets.load_dataset("path/to/this/folder", "trl")  # train and test splits',
        "```",
        "",
        "`report.json` has every count, the drop reasons and the full settings; "
        "`docs/synthesis.md` of prove_gym says what each means.",
        "",
    ]
    return "\n".join(head + body)


def _share(counter: Counter[str], total: int) -> dict[str, float]:
    return {k: round(v / total, 4) for k, v in sorted(counter.items())} if total else {}


def build_report(result: SynthResult, registry: Registry | None = None) -> dict[str, Any]:
    """Counts that describe a dataset (deterministic: no timings)."""
    registry = registry or get_registry()
    tasks = result.tasks
    n = len(tasks)
    per_server: Counter[str] = Counter(t.server for t in tasks)
    per_tool: dict[str, Counter[str]] = {s: Counter() for s in result.servers}
    chain_lengths: Counter[str] = Counter()
    gold_calls: Counter[str] = Counter()
    task_kinds: Counter[str] = Counter()
    turn_kinds: Counter[str] = Counter()
    turn_counts: Counter[str] = Counter()
    levels: Counter[str] = Counter()
    knobs: Counter[str] = Counter()
    abstentions: Counter[str] = Counter()
    splits: Counter[str] = Counter()
    states: set[tuple[str, int, int | None]] = set()
    outcomes: Counter[str] = Counter()
    recoveries: Counter[str] = Counter()
    recovering = 0
    calls = failed = 0
    for t in tasks:
        for step in t.scored_steps:
            per_tool[t.server][step.name] += 1
        meta = t.meta
        chain_lengths[str(len(meta.get("chain", [])))] += 1
        gold_calls[str(len(t.scored_steps))] += 1
        outcomes.update(meta.get("outcomes", []))
        recoveries.update(meta.get("recoveries", []))
        recovering += bool(meta.get("recoveries"))
        task_kinds[t.kind] += 1
        turn_kinds.update(turn.kind for turn in t.turns)
        turn_counts[str(len(t.turns))] += 1
        splits[meta.get("split", "?")] += 1
        states.add((t.server, t.seed, t.size))
        k = meta.get("knobs", {})
        if k.get("abstention"):
            abstentions[str(k["abstention"])] += 1
        else:  # the shares of levels and knobs are those of tool-calling tasks
            levels[meta.get("info_level", "?")] += 1
            knobs["distractors"] += bool(k.get("distractors"))
            knobs["strip_enums"] += bool(k.get("strip_enums"))
            knobs["irrelevant"] += bool(k.get("irrelevant"))
            knobs["missing_tool"] += bool(k.get("missing_tool"))
        calls += int(meta.get("calls", 0))
        failed += int(meta.get("failed_calls", 0))
    unused = {
        s: [t.name for t in registry.get_server(s).visible_tools() if not per_tool[s][t.name]]
        for s in result.servers
    }
    coarse: Counter[str] = Counter()
    for reason, count in result.drops.items():
        coarse[reason.split(":")[0]] += count
    calling = n - sum(abstentions.values())
    return {
        "generator": GENERATOR,
        "config": result.config.to_dict(),
        "totals": {
            "tasks": n,
            "train": splits["train"],
            "test": splits["test"],
            "candidates": result.candidates,
            "blocks": result.blocks,
            "kept_share": round(n / result.candidates, 4) if result.candidates else 0.0,
            "executed_calls": calls,
            "failed_calls": failed,
            "distinct_states": len(states),
            "text_gold_rejections": coarse["text_gold_mismatch"],
            "text_gold_rejection_share": (
                round(coarse["text_gold_mismatch"] / result.candidates, 4)
                if result.candidates
                else 0.0
            ),
        },
        "short_of_quota": dict(sorted(result.missing.items())),
        "servers": dict(sorted(per_server.items())),
        "tools": {s: dict(sorted(c.items())) for s, c in sorted(per_tool.items())},
        "unused_tools": {s: u for s, u in sorted(unused.items())},
        "chain_lengths": dict(sorted(chain_lengths.items())),
        "gold_calls": dict(sorted(gold_calls.items(), key=lambda kv: int(kv[0]))),
        "task_kinds": dict(sorted(task_kinds.items())),
        "turn_kinds": dict(sorted(turn_kinds.items())),
        "turns": dict(sorted(turn_counts.items())),
        "info_levels": dict(sorted(levels.items())),
        "info_level_shares": _share(levels, calling),
        "knobs": dict(sorted(knobs.items())),
        "knob_shares": _share(knobs, calling),
        "abstention_tasks": dict(sorted(abstentions.items())),
        "abstention_share": round(sum(abstentions.values()) / n, 4) if n else 0.0,
        "outcomes": {k: outcomes[k] for k in ("success", "partial", "failure")},
        "recoveries": dict(sorted(recoveries.items())),
        "recovering_tasks": recovering,
        "drops": dict(sorted(result.drops.items())),
        "drop_reasons": dict(sorted(coarse.items())),
        "writer": _writer_counts(result),
    }


def _writer_counts(result: SynthResult) -> dict[str, Any]:
    """What the writer did to the planned user turns of the kept tasks: rewrites accepted,
    rejected by reason (each fell back to the template text), and the share accepted."""
    counts = result.writer
    rejected = {k.split(":", 1)[1]: v for k, v in sorted(counts.items()) if k != "accepted"}
    asked = counts["accepted"] + sum(rejected.values())
    return {
        "writer": result.config.writer,
        "turns": asked,
        "accepted": counts["accepted"],
        "accepted_share": round(counts["accepted"] / asked, 4) if asked else 0.0,
        "rejected": rejected,
    }


def format_report(report: dict[str, Any], seconds: float | None = None) -> str:
    """The report as a printed table."""
    tot = report["totals"]
    head = (
        f"{tot['tasks']} tasks ({tot['train']} train / {tot['test']} test) "
        f"from {tot['candidates']} candidates ({100 * tot['kept_share']:.0f}% kept)"
    )
    if seconds:
        head += f" in {seconds:.1f} s ({tot['tasks'] / seconds:.0f} tasks/s)"
    lines = [head, ""]
    servers = report["servers"]
    width = max([len(s) for s in report["tools"]] + [6])
    lines.append(f"{'server':<{width}}  {'tasks':>5}  {'tools used':>10}  unused")
    for s, counts in report["tools"].items():
        total = len(counts) + len(report["unused_tools"][s])
        unused = ", ".join(report["unused_tools"][s]) or "-"
        lines.append(f"{s:<{width}}  {servers.get(s, 0):>5}  {len(counts):>4}/{total:<5}  {unused}")

    def row(title: str, counts: dict[str, int]) -> str:
        total = sum(counts.values()) or 1
        cells = "  ".join(f"{k}: {v} ({100 * v / total:.0f}%)" for k, v in counts.items())
        return f"{title:<15} {cells}"

    lines += [
        "",
        row("chain length", report["chain_lengths"]),
        row("gold calls", report["gold_calls"]),
        row("user turns", report["turns"]),
        row("task kind", report["task_kinds"]),
        row("turn kind", report["turn_kinds"]),
        row("info level", report["info_levels"]),
    ]
    n = tot["tasks"] or 1
    calling = (tot["tasks"] - sum(report["abstention_tasks"].values())) or 1
    knobs = "  ".join(f"{k}: {v} ({100 * v / calling:.1f}%)" for k, v in report["knobs"].items())
    lines.append(f"{'knobs':<15} {knobs}   (levels and knobs: shares of tool-calling tasks)")
    whole = sum(report["abstention_tasks"].values())
    kinds = ", ".join(f"{k} {v}" for k, v in report["abstention_tasks"].items()) or "-"
    lines.append(f"{'abstention':<15} {whole} tasks ({100 * whole / n:.1f}%): {kinds}")
    lines.append(
        row("gold results", report["outcomes"])
        + "   (partial: ran, found nothing; failure: an attempt the gold recovers from or gives up)"
    )
    kinds = ", ".join(f"{k} {v}" for k, v in report["recoveries"].items()) or "-"
    lines.append(
        f"{'recovery':<15} {report['recovering_tasks']} tasks "
        f"({100 * report['recovering_tasks'] / n:.1f}%) show a failed call and its recovery "
        "or give-up: "
        f"{kinds}"
    )
    lines.append(
        f"{'states':<15} {tot['distinct_states']} distinct initial states (server, seed, size)"
    )
    lines.append(
        f"{'text check':<15} {tot['text_gold_rejections']} candidates rejected "
        f"({100 * tot['text_gold_rejection_share']:.1f}%): text and gold calls disagreed"
    )
    writer = report["writer"]
    if writer["writer"] == "llm":
        reasons = ", ".join(f"{k} {v}" for k, v in writer["rejected"].items()) or "none"
        lines.append(
            f"{'llm writer':<15} {writer['accepted']} of {writer['turns']} planned turns "
            f"rewritten ({100 * writer['accepted_share']:.1f}%); rejected, template kept: "
            f"{reasons}"
        )
    drops = sorted(report["drop_reasons"].items(), key=lambda kv: -kv[1])
    lines.append(f"{'dropped':<15} " + ("  ".join(f"{k}: {v}" for k, v in drops) or "none"))
    lines.append("")
    lines.append("gold calls per tool:")
    for s, counts in report["tools"].items():
        cells = ", ".join(f"{t} {c}" for t, c in sorted(counts.items(), key=lambda kv: -kv[1]))
        lines.append(f"  {s}: {cells}")
    if report.get("short_of_quota"):
        short = ", ".join(f"{s} ({k} short)" for s, k in report["short_of_quota"].items())
        lines.append(f"\nWARNING: quota not reached for {short}")
    missing = {s: u for s, u in report["unused_tools"].items() if u}
    if missing:
        lines.append(
            "WARNING: tools never used: "
            + "; ".join(f"{s}: {', '.join(u)}" for s, u in missing.items())
        )
    return "\n".join(lines)
