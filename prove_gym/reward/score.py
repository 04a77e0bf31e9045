"""The total: every component of one trajectory, weighted by a :class:`RewardConfig`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prove_gym.registry import Registry, get_registry
from prove_gym.reward.abstention import clarification_penalty
from prove_gym.reward.arguments import arguments_from
from prove_gym.reward.common import Calls, as_records, prepare
from prove_gym.reward.config import RewardConfig
from prove_gym.reward.coverage import align_prepared, coverage_from
from prove_gym.reward.efficiency import budget, efficiency_penalty
from prove_gym.reward.state import prepared_gold_hash, replay_state_hash
from prove_gym.reward.tool_name import name_share
from prove_gym.reward.validity import call_level, validity_from_levels
from prove_gym.task import Task

COMPONENTS = (
    "validity",
    "coverage",
    "efficiency",
    "tool_name",
    "arguments",
    "abstention",
    "clarification",
    "state",
)
"""Component names, in the order a breakdown lists them."""

_DEFAULT = RewardConfig()


@dataclass(frozen=True)
class RewardBreakdown:
    """One trajectory's reward, explained.

    Attributes:
        total: The reward paid (raw, or in [0, 1] when the config normalises).
        components: Every component by name (see :data:`COMPONENTS`); ``None``
            where it is undefined for this task (coverage, efficiency, tool name
            and arguments of a task without gold calls, abstention of a task with
            them, state when no final state was given and ``w_state`` is 0).
        weights: The weight of each weighted component.
        max_total: The highest total this task can pay under this config.
        budget: The call budget B (0 for a task without gold calls).
        n_calls: Number of calls the model made.
        n_gold: Number of gold calls.
        matched: Call index (0-based, global) of each matched gold step, by step id.
        counted: Ids of the steps that count for coverage (matched after all prerequisites).
        call_validity: Validity level (0-3) of each call.
        gold_state_hash: State hash after the gold calls (when state was verified).
        final_state_hash: The model's final state hash (when known).
        normalised: Whether ``total`` is normalised to [0, 1].
    """

    total: float
    components: dict[str, float | None]
    weights: dict[str, float]
    max_total: float
    budget: int
    n_calls: int
    n_gold: int
    matched: dict[str, int] = field(default_factory=dict)
    counted: tuple[str, ...] = ()
    call_validity: tuple[int, ...] = ()
    gold_state_hash: str | None = None
    final_state_hash: str | None = None
    normalised: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what the env puts in ``info["reward_breakdown"]``)."""
        return {
            "total": self.total,
            "max_total": self.max_total,
            "normalised": self.normalised,
            "components": dict(self.components),
            "weights": dict(self.weights),
            "budget": self.budget,
            "n_calls": self.n_calls,
            "n_gold": self.n_gold,
            "matched": dict(self.matched),
            "counted": list(self.counted),
            "call_validity": list(self.call_validity),
            "gold_state_hash": self.gold_state_hash,
            "final_state_hash": self.final_state_hash,
        }


def score(
    task: Task | Mapping[str, Any] | str,
    calls: Calls,
    *,
    config: RewardConfig | None = None,
    final_state_hash: str | None = None,
    registry: Registry | None = None,
) -> RewardBreakdown:
    """Score one trajectory: every component, the weighted total, and how calls matched steps.

    Works on the env's own trajectories and on offline ones from any harness:
    ``calls`` may be :class:`~prove_gym.workspace.CallRecord` objects or dicts
    ``{"name", "arguments", "result": {"status": "ok"|"error", ...}, "turn"}``
    (a missing result counts as ok; ``turn`` defaults to 0; arguments given as
    JSON text are decoded).

    Args:
        task: The task (a :class:`~prove_gym.task.Task`, its dict or JSON text).
        calls: The model's calls in order, across all turns.
        config: Weights and knobs (the paper's by default).
        final_state_hash: The model's final state hash, for state verification. When
            absent, R_state is ``None`` unless ``config.w_state > 0``, in which
            case the calls are replayed on a fresh workspace to rebuild the state.
        registry: Where the task's servers and tools are looked up.

    >>> from prove_gym import Task
    >>> task = Task.from_json({"id": "demo", "servers": ["calendar"], "turns": [{"user": "...",
    ...     "steps": [{"id": "s1", "name": "search_events", "arguments": {"query": "review"}},
    ...               {"id": "s2", "name": "get_event", "arguments": {"event_id": "evt_0012"},
    ...                "depends_on": ["s1"]}]}]})
    >>> gold = [{"name": s.name, "arguments": s.arguments} for s in task.steps]
    >>> score(task, gold).total
    1.3
    >>> r = score(task, gold[::-1])
    >>> r.components["coverage"], r.matched, r.counted
    (0.5, {'s1': 1, 's2': 0}, ('s1',))
    """
    if not isinstance(task, Task):
        task = Task.coerce(task)  # type: ignore[arg-type]
    cfg = config or _DEFAULT
    prepared = prepare(task, registry)
    records = as_records(calls)
    n_calls = len(records)
    n_gold = prepared.n_gt

    levels = tuple(call_level(prepared, c) for c in records)
    alignment = align_prepared(prepared, records)
    no_call = prepared.no_call_turns
    clar = clarification_penalty(no_call, records) if no_call else 0.0

    gold_hash: str | None = None
    state: float | None = None
    if final_state_hash is None and cfg.w_state > 0:
        final_state_hash = replay_state_hash(task, records, registry)
    if final_state_hash is not None:
        gold_hash = prepared_gold_hash(prepared, registry or get_registry())
        state = 1.0 if final_state_hash == gold_hash else 0.0

    steps = prepared.steps
    matched = {steps[j].id: i for j, i in alignment.matched.items()}
    counted = tuple(steps[j].id for j in sorted(alignment.counted))

    b = budget(n_gold, cfg.beta)
    if n_gold:
        if cfg.credit_within_budget and n_calls > b:
            val = sum(levels[:b]) / (3 * n_calls)
            name = name_share(records[:b], prepared.gold_names) * b / n_calls
        else:
            val = validity_from_levels(list(levels))
            name = name_share(records, prepared.gold_names)
        components: dict[str, float | None] = {
            "validity": val,
            "coverage": coverage_from(prepared, alignment),
            "efficiency": efficiency_penalty(
                n_calls, n_gold, alpha=cfg.alpha, beta=cfg.beta, floor=cfg.eff_floor
            ),
            "tool_name": name,
            "arguments": arguments_from(alignment),
            "abstention": None,
            "clarification": clar,
            "state": state,
        }
        raw = (
            cfg.w_val * val
            + cfg.w_cov * components["coverage"]  # type: ignore[operator]
            + cfg.w_eff * components["efficiency"]  # type: ignore[operator]
            + cfg.w_name * name
            + cfg.w_arg * components["arguments"]  # type: ignore[operator]
            + cfg.w_clarify * clar
            + (cfg.w_state * state if state is not None else 0.0)
        )
        if cfg.normalise:
            lo, hi = cfg.min_raw, cfg.max_raw
            total = min(1.0, max(0.0, (raw - lo) / (hi - lo))) if hi > lo else 0.0
            max_total = 1.0
        else:
            total, max_total = raw, cfg.max_raw
    else:
        abstained = 0.0 if n_calls else 1.0
        components = {
            "validity": validity_from_levels(list(levels)) if n_calls else None,
            "coverage": None,
            "efficiency": None,
            "tool_name": None,
            "arguments": None,
            "abstention": abstained,
            "clarification": clar,
            "state": state,
        }
        if cfg.normalise:
            total, max_total = abstained, 1.0
        else:
            total, max_total = cfg.abstain_reward * abstained, cfg.abstain_reward

    return RewardBreakdown(
        total=_tidy(total),
        components={k: None if v is None else _tidy(v) for k, v in components.items()},
        weights=dict(cfg.weights),
        max_total=_tidy(max_total),
        budget=b,
        n_calls=n_calls,
        n_gold=n_gold,
        matched=matched,
        counted=counted,
        call_validity=levels,
        gold_state_hash=gold_hash,
        final_state_hash=final_state_hash,
        normalised=cfg.normalise,
    )


def _tidy(value: float) -> float:
    """Round away float noise (0.30000000000000004) so equal scores compare equal."""
    return round(value, 12) + 0.0
