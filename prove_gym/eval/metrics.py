"""What one evaluated episode yields, and the aggregate figures of many."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from prove_gym.episode import Episode
from prove_gym.task import Task

__all__ = [
    "CALL_STRATA",
    "STRATA",
    "EpisodeResult",
    "group_summary",
    "paired_bootstrap",
    "stratum",
    "summarise",
]

#: The strata of :func:`stratum`, in report order.
STRATA = ("1 call", "2 calls", "3+ calls", "no call", "clarify", "abstain")
#: The strata of tasks that are done by calling tools (the tool-calling success rate).
CALL_STRATA = ("1 call", "2 calls", "3+ calls")


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
        answers: Every gold read's answer obtained (``None`` for a task without gold
            reads): the ``answers`` component at its maximum.
        success: Full coverage, state match, and every gold read's answer obtained.
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
    answers: bool | None = None
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
        answers = _flag(comps.get("answers"))
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
            answers=answers,
            success=bool(full) and state is not False and answers is not False,
            terminated=episode.terminated,
            assistant_turns=episode.assistant_turns,
            seconds=seconds,
            error=error,
        )


def stratum(item: EpisodeResult | Task) -> str:
    """The stratum of a result or a task: its kind, or for a plain task its gold chain's length.

    ``clarify`` and ``abstain`` tasks are their own strata whatever their calls; a plain task
    is ``1 call``, ``2 calls`` or ``3+ calls`` by its gold calls, or ``no call`` (an answer
    from the prompt alone). A report that mixes them hides tool use behind the tasks a
    policy passes by making no call at all.
    """
    n_gold = len(item.scored_steps) if isinstance(item, Task) else item.n_gold
    if item.kind in ("clarify", "abstain"):
        return item.kind
    if n_gold <= 0:
        return "no call"
    return {1: "1 call", 2: "2 calls"}.get(n_gold, "3+ calls")


def paired_bootstrap(
    before: Sequence[float],
    after: Sequence[float],
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, float]:
    """The change ``mean(after) - mean(before)`` over paired items, with a bootstrap interval.

    Items (held-out tasks) are resampled with replacement, each keeping its pair, from a
    generator seeded with ``seed``: the same inputs give the same interval on any machine.
    The interval is the percentile one (``confidence``, two-sided).

    Returns:
        ``{"n", "before", "after", "change", "low", "high", "confidence", "resamples"}``.

    Raises:
        ValueError: The sequences differ in length or are empty, or ``confidence`` is not
            in (0, 1), or ``resamples`` is below 1.
    """
    import random

    if len(before) != len(after):
        raise ValueError(f"paired samples differ in length: {len(before)} and {len(after)}")
    if not before:
        raise ValueError("no paired samples")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    n = len(before)
    diffs = [float(a) - float(b) for b, a in zip(before, after, strict=True)]
    rng = random.Random(seed)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    tail = (1.0 - confidence) / 2.0
    low = means[min(resamples - 1, max(0, int(tail * resamples)))]
    high = means[min(resamples - 1, max(0, int((1.0 - tail) * resamples) - 1))]
    return {
        "n": n,
        "before": sum(float(b) for b in before) / n,
        "after": sum(float(a) for a in after) / n,
        "change": sum(diffs) / n,
        "low": low,
        "high": high,
        "confidence": confidence,
        "resamples": resamples,
    }


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
        "answers": rate(r.answers for r in results),
        "calls_per_task": mean(r.n_calls for r in results),
        "gold_calls_per_task": mean(r.n_gold for r in results),
        "errors": sum(r.error is not None for r in results),
        "components": {k: mean(r.components.get(k) for r in results) for k in components},
    }


def summarise(policy: str, results: Sequence[EpisodeResult]) -> dict[str, Any]:
    """Overall, per-stratum (:func:`stratum`), per-server and per-tool figures (JSON-ready).

    ``tool_calling`` is the group of every result in a :data:`CALL_STRATA` stratum: the
    tasks done by calling tools, without the clarify, abstain and no-call tasks.
    """
    names = component_names(results)
    by_server: dict[str, list[EpisodeResult]] = defaultdict(list)
    by_stratum: dict[str, list[EpisodeResult]] = defaultdict(list)
    for r in results:
        by_server[r.server].append(r)
        by_stratum[stratum(r)].append(r)
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
        "tool_calling": group_summary([r for r in results if stratum(r) in CALL_STRATA], names),
        "strata": {s: group_summary(by_stratum[s], names) for s in STRATA if s in by_stratum},
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
