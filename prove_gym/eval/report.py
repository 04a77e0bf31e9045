"""The evaluation report: text tables, a JSON summary, per-episode results and a plot."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from prove_gym.eval.metrics import EpisodeResult, component_names, summarise

__all__ = ["EvalReport"]


@dataclass
class EvalReport:
    """Results of one policy over a task set, with summaries, a text table and a plot."""

    policy: str
    results: list[EpisodeResult]

    @property
    def component_names(self) -> list[str]:
        return component_names(self.results)

    def summary(self) -> dict[str, Any]:
        """Overall, per-server and per-tool figures (JSON-ready)."""
        return summarise(self.policy, self.results)

    def table(self) -> str:
        """The summary as aligned text tables: servers, task strata, components, tools."""
        s = self.summary()
        comps = self.component_names
        lines = [f"policy: {self.policy}    tasks: {s['overall']['tasks']}", ""]
        head = [
            "server",
            "tasks",
            "total",
            "success",
            "coverage=1",
            "state",
            "calls/task",
            "errors",
        ]
        rows = []
        for name, g in [*s["servers"].items(), ("ALL", s["overall"])]:
            rows.append(
                [
                    name,
                    str(g["tasks"]),
                    _fmt(g["total"]),
                    _pct(g["success"]),
                    _pct(g["full_coverage"]),
                    _pct(g["state_match"]),
                    _fmt(g["calls_per_task"], 2),
                    str(g["errors"]),
                ]
            )
        lines += [*_grid(head, rows), ""]
        head = ["task stratum", "tasks", "total", "success", "coverage=1", "state", "answers"]
        head += ["calls/task", "gold calls"]
        strata = [*s["strata"].items(), ("tool-calling (1, 2, 3+)", s["tool_calling"])]
        rows = [
            [
                name,
                str(g["tasks"]),
                _fmt(g["total"]),
                _pct(g["success"]),
                _pct(g["full_coverage"]),
                _pct(g["state_match"]),
                _pct(g["answers"]),
                _fmt(g["calls_per_task"], 2),
                _fmt(g["gold_calls_per_task"], 2),
            ]
            for name, g in strata
        ]
        lines += [*_grid(head, rows), ""]
        head = ["server", *comps]
        rows = [
            [name, *(_fmt(g["components"].get(c)) for c in comps)]
            for name, g in [*s["servers"].items(), ("ALL", s["overall"])]
        ]
        lines += [*_grid(head, rows), ""]
        head = ["tool", "calls", "ok", "gold steps", "matched"]
        rows = [
            [k, str(v["calls"]), _pct(v["ok_rate"]), str(v["gold"]), _pct(v["matched_rate"])]
            for k, v in s["tools"].items()
        ]
        lines += _grid(head, rows)
        return "\n".join(lines)

    def plot(self, path: str | Path) -> Path:
        """A PNG: mean components and total per server, and success rates per server.

        Needs matplotlib (``pip install prove-gym[plot]``).
        """
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        s = self.summary()
        groups = [*s["servers"].items(), ("ALL", s["overall"])]
        names = [n for n, _ in groups]
        comps = [*self.component_names, "total"]
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.8))
        width = 0.8 / max(len(groups), 1)
        for i, (name, g) in enumerate(groups):
            vals = [(g["components"].get(c) if c != "total" else g["total"]) or 0.0 for c in comps]
            xs = [j + i * width for j in range(len(comps))]
            ax1.bar(xs, vals, width=width, label=name)
        ax1.set_xticks([j + width * (len(groups) - 1) / 2 for j in range(len(comps))])
        ax1.set_xticklabels(comps, rotation=30, ha="right")
        ax1.axhline(0, color="black", linewidth=0.6)
        ax1.set_title("mean reward components")
        ax1.legend(fontsize=8)
        metrics = ["success", "full_coverage", "state_match"]
        width2 = 0.8 / len(metrics)
        for k, m in enumerate(metrics):
            vals = [(g[m] or 0.0) * 100 for _, g in groups]
            ax2.bar([j + k * width2 for j in range(len(groups))], vals, width=width2, label=m)
        ax2.set_xticks([j + width2 for j in range(len(groups))])
        ax2.set_xticklabels(names, rotation=30, ha="right")
        ax2.set_ylim(0, 100)
        ax2.set_ylabel("% of tasks")
        ax2.set_title("success rates")
        ax2.legend(fontsize=8)
        fig.suptitle(f"prove eval: {self.policy} ({len(self.results)} tasks)")
        fig.tight_layout()
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=110)
        plt.close(fig)
        return out

    def write(self, directory: str | Path) -> dict[str, Path]:
        """Write ``results.jsonl``, ``summary.json`` and ``report.txt`` under ``directory``."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "results": out / "results.jsonl",
            "summary": out / "summary.json",
            "report": out / "report.txt",
        }
        with open(paths["results"], "w", encoding="utf-8") as fh:
            for r in self.results:
                fh.write(json.dumps(asdict(r), ensure_ascii=False) + "\n")
        paths["summary"].write_text(json.dumps(self.summary(), indent=2) + "\n", encoding="utf-8")
        paths["report"].write_text(self.table() + "\n", encoding="utf-8")
        return paths


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _grid(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=False)]
    fmt = [f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths)]
    line = lambda cells: "  ".join(f.format(c) for f, c in zip(fmt, cells, strict=False))  # noqa: E731
    return [line(head), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]
