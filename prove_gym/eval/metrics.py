"""What one evaluated episode yields, and the aggregate figures of many."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from prove_gym.episode import Episode

__all__ = ["EpisodeResult", "group_summary", "summarise"]


@dataclass
class EpisodeResult:
    """One task played by one policy.

    Attributes:
        task_id: The task.
        servers: Its servers (the first is the primary one).
        kind: ``normal``, ``clarify`` or ``abstain``.
        total: The reward paid.
        max_total: The most this task could pay under the config (``total / max_total`` is
            comparable across tasks and configs).
        components: Every reward component (``None`` where undefined for the task).
        n_calls: Calls the policy made.
        n_gold: Gold calls of the task.
        calls: Per call: ``tool``, ``server`` (``None`` if it reached none) and ``ok``.
        gold_tools: Name of each gold step, and whether a call matched it.
        full_coverage: Every gold step matched after its prerequisites (for a
            task without gold calls: no call was made).
        state_match: The final state equals the gold replay's.
        success: Full coverage and state match.
        terminated: The episode ended by answering the last user turn.
        assistant_turns: Assistant messages sent.
        seconds: Wall time of the episode.
        error: Why the policy failed (an HTTP error, say); the episode is then
            ended where it stood and scored as truncated.
    """

    task_id: str
    servers: list[str]
    kind: str
    total: float
    components: dict[str, float | None]
    n_calls: int
    n_gold: int
    max_total: float = 0.0
    calls: list[dict[str, Any]] = field(default_factory=list)
    gold_tools: list[dict[str, Any]] = field(default_factory=list)
    full_coverage: bool | None = None
    state_match: bool | None = None
    success: bool = False
    terminated: bool = False
    assistant_turns: int = 0
    seconds: float = 0.0
    error: str | None = None

    @property
    def server(self) -> str:
        return self.servers[0]

    @classmethod
    def of(cls, episode: Episode, *, seconds: float, error: str | None = None) -> EpisodeResult:
        """The result of a finished episode, read off its reward breakdown."""
        breakdown = episode.breakdown
        if breakdown is None:
            raise ValueError("the episode is not over: it has no reward yet")
        task = episode.task
        comps = dict(breakdown.components)
        steps = task.scored_steps
        if steps:
            full = _flag(comps.get("coverage"))
        else:
            full = _flag(comps["abstention"]) if "abstention" in comps else not episode.trajectory
        state = _flag(comps.get("state"))
        if state is None and breakdown.gold_state_hash and breakdown.final_state_hash:
            state = breakdown.gold_state_hash == breakdown.final_state_hash
        return cls(
            task_id=task.id,
            servers=list(task.servers),
            kind=task.kind,
            total=float(breakdown.total),
            max_total=float(breakdown.max_total),
            components=comps,
            n_calls=len(episode.trajectory),
            n_gold=len(steps),
            calls=[
                {"tool": r.name, "server": r.server, "ok": r.result.ok} for r in episode.trajectory
            ],
            gold_tools=[
                {
                    "tool": s.name,
                    "server": task.step_server(s),
                    "matched": s.id in breakdown.matched,
                }
                for s in steps
            ],
            full_coverage=full,
            state_match=state,
            success=bool(full) and state is not False,
            terminated=episode.terminated,
            assistant_turns=episode.assistant_turns,
            seconds=seconds,
            error=error,
        )


def _flag(value: Any) -> bool | None:
    return None if value is None else float(value) >= 1.0 - 1e-9


def mean(values: Iterable[float | None]) -> float | None:
    """The mean of the defined values (``None`` when there are none)."""
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def rate(values: Iterable[bool | None]) -> float | None:
    """The share of true values among the defined ones (``None`` when there are none)."""
    vals = [bool(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def component_names(results: Sequence[EpisodeResult]) -> list[str]:
    """Every component name, in the order the breakdowns list them."""
    names: dict[str, None] = {}
    for r in results:
        for k in r.components:
            names.setdefault(k, None)
    return list(names)


def group_summary(results: Sequence[EpisodeResult], components: Sequence[str]) -> dict[str, Any]:
    """Mean total and components, success rates and call counts of a group of results."""
    return {
        "tasks": len(results),
        "total": mean(r.total for r in results),
        "success": rate(r.success for r in results),
        "full_coverage": rate(r.full_coverage for r in results),
        "state_match": rate(r.state_match for r in results),
        "calls_per_task": mean(r.n_calls for r in results),
        "gold_calls_per_task": mean(r.n_gold for r in results),
        "errors": sum(r.error is not None for r in results),
        "components": {k: mean(r.components.get(k) for r in results) for k in components},
    }


def summarise(policy: str, results: Sequence[EpisodeResult]) -> dict[str, Any]:
    """Overall, per-server and per-tool figures (JSON-ready)."""
    names = component_names(results)
    by_server: dict[str, list[EpisodeResult]] = defaultdict(list)
    for r in results:
        by_server[r.server].append(r)
    tools: dict[str, dict[str, int]] = defaultdict(
        lambda: {"calls": 0, "ok": 0, "gold": 0, "matched": 0}
    )
    for r in results:
        for c in r.calls:
            key = f"{c['server']}.{c['tool']}" if c["server"] else f"?.{c['tool']}"
            tools[key]["calls"] += 1
            tools[key]["ok"] += int(bool(c["ok"]))
        for g in r.gold_tools:
            key = f"{g['server']}.{g['tool']}"
            tools[key]["gold"] += 1
            tools[key]["matched"] += int(bool(g["matched"]))
    return {
        "policy": policy,
        "overall": group_summary(results, names),
        "servers": {s: group_summary(rs, names) for s, rs in sorted(by_server.items())},
        "tools": {
            k: {
                **v,
                "ok_rate": v["ok"] / v["calls"] if v["calls"] else None,
                "matched_rate": v["matched"] / v["gold"] if v["gold"] else None,
            }
            for k, v in sorted(tools.items())
        },
    }
