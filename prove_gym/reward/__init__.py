"""Programmatic, sequence-level reward (PLACEHOLDER until the reward issue lands).

``score(task, calls)`` returns a :class:`RewardBreakdown`; the env pays its
``total`` on the terminal step and puts ``to_dict()`` in ``info["reward_breakdown"]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from prove_gym.task import Task
from prove_gym.workspace import CallRecord


@dataclass(frozen=True)
class RewardConfig:
    """Weights and knobs of the reward (placeholder: only the total's scale)."""

    normalise: bool = False


@dataclass
class RewardBreakdown:
    total: float
    components: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def score(
    task: Task,
    calls: Iterable[CallRecord | Mapping[str, Any]],
    *,
    config: RewardConfig | None = None,
    final_state_hash: str | None = None,
) -> RewardBreakdown:
    """Placeholder: the share of successful calls (1.0 for no calls on a no-call task)."""
    records = [c if isinstance(c, CallRecord) else CallRecord.from_dict(c) for c in calls]
    if not records:
        total = 1.0 if not task.steps else 0.0
    else:
        total = sum(r.result.ok for r in records) / len(records)
    return RewardBreakdown(
        total=total, components={"placeholder": total}, details={"n_calls": len(records)}
    )
