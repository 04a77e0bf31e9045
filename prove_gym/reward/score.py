"""The total: the components of one trajectory, weighted as a :class:`RewardConfig` says."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prove_gym.registry import Registry
from prove_gym.reward.abstention import abstention
from prove_gym.reward.common import Calls
from prove_gym.reward.config import ABSTENTION, RewardConfig
from prove_gym.reward.context import ScoringContext
from prove_gym.reward.validity import call_level
from prove_gym.task import Task

_DEFAULT = RewardConfig()


@dataclass(frozen=True)
class RewardBreakdown:
    """One trajectory's reward, explained.

    Attributes:
        total: The reward paid (raw, or in [0, 1] when the config normalises).
        components: Every component by name, in ``config.breakdown_keys`` order
            (by default validity, coverage, efficiency, tool_name, arguments,
            abstention, clarification, state); ``None`` where it is undefined for
            this task (coverage, efficiency, tool name and arguments of a task
            without gold calls, abstention of a task with them, state when no
            final state was given and its weight is 0).
        weights: The weight of each component, by name (abstention has none).
        max_total: The highest total this task can pay under this config: the components
            defined for it (not ``None``) at their highest, weighted.
        budget: The call budget B (0 for a task without gold calls).
        n_calls: Number of calls the model made (excused ones included).
        n_gold: Number of gold calls.
        matched: Call index (0-based, global) of each matched gold step, by step id.
        counted: Ids of the steps that count for coverage (matched after all prerequisites).
        call_validity: Validity level (0-3) of each call.
        excused: Indices of the calls left out of scoring: each repeats a failed attempt
            the gold itself shows before recovering (a step with ``expect_error``: same
            turn, tool and arguments, failing the same way). Every other component is
            computed on the other calls, so making the attempt and recovering pays
            exactly what going straight to the recovery pays.
        gold_state_hash: State hash after the gold calls (when state was verified).
        final_state_hash: The model's final state hash (when known).
        normalised: Whether ``total`` is normalised to [0, 1].
        caps_hit: The call caps the episode ran into (``"max_calls_per_message"``,
            ``"max_calls_per_episode"``); set by the episode, empty offline.
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
    excused: tuple[int, ...] = ()
    gold_state_hash: str | None = None
    final_state_hash: str | None = None
    normalised: bool = False
    caps_hit: tuple[str, ...] = ()

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
            "excused": list(self.excused),
            "gold_state_hash": self.gold_state_hash,
            "final_state_hash": self.final_state_hash,
            "caps_hit": list(self.caps_hit),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RewardBreakdown:
        """The breakdown :meth:`to_dict` (or its JSON) describes.

        >>> from prove_gym import Task
        >>> task = Task.from_json({"id": "demo", "servers": ["calendar"], "turns": [{"user": "...",
        ...     "steps": [{"id": "s1", "name": "get_event", "arguments": {"event_id": "evt_1"}}]}]})
        >>> b = score(task, [{"name": "get_event", "arguments": {"event_id": "evt_1"}}])
        >>> RewardBreakdown.from_dict(b.to_dict()) == b
        True
        """
        return cls(
            total=data["total"],
            components=dict(data["components"]),
            weights=dict(data["weights"]),
            max_total=data["max_total"],
            budget=data["budget"],
            n_calls=data["n_calls"],
            n_gold=data["n_gold"],
            matched=dict(data.get("matched", {})),
            counted=tuple(data.get("counted", ())),
            call_validity=tuple(data.get("call_validity", ())),
            excused=tuple(data.get("excused", ())),
            gold_state_hash=data.get("gold_state_hash"),
            final_state_hash=data.get("final_state_hash"),
            normalised=data.get("normalised", False),
            caps_hit=tuple(data.get("caps_hit", ())),
        )


def score(
    task: Task | Mapping[str, Any] | str,
    calls: Calls,
    *,
    config: RewardConfig | str | None = None,
    final_state_hash: str | None = None,
    state_match: bool | Callable[[], bool] | None = None,
    registry: Registry | None = None,
) -> RewardBreakdown:
    """Score one trajectory: every component, the weighted total, and how calls matched steps.

    Works on the env's own trajectories and on offline ones from any harness:
    ``calls`` may be :class:`~prove_gym.workspace.CallRecord` objects or dicts
    ``{"name", "arguments", "result": {"status": "ok"|"error", ...}, "turn"}``
    (a missing result counts as ok; ``turn`` defaults to 0; arguments given as
    JSON text are decoded).

    Logged rollouts of another environment score the same way: build the task
    with ``tool_schemas`` (the OpenAI function schemas the model was offered) and
    the gold steps, and pass ``state_match`` from that environment's own
    final-state comparison (or score with ``config=RewardConfig().without("state")``).
    No server needs to be registered.

    For a task with gold calls the total is ``Σ weight·value`` over
    ``config.components`` (``None`` values add nothing), normalised to [0, 1]
    when the config says so. A task without gold calls pays the abstention
    rule instead; its components are still computed and reported.

    Args:
        task: The task (a :class:`~prove_gym.task.Task`, its dict or JSON text).
        calls: The model's calls in order, across all turns.
        config: Components, weights and knobs, or a preset name (``"default"``, ``"paper"``).
        final_state_hash: The model's final state hash, for state verification. When
            absent, R_state is ``None`` unless the ``state`` component's weight is
            > 0, in which case the calls are replayed on a fresh workspace.
        state_match: Your own comparison of the final state with the gold one (a bool, or
            a function returning it, called only if a component needs it); it wins over
            the hashes. For tasks of environments prove_gym cannot replay.
        registry: Where the task's servers and tools are looked up.

    >>> from prove_gym import Task
    >>> task = Task.from_json({"id": "demo", "servers": ["calendar"], "turns": [{"user": "...",
    ...     "steps": [{"id": "s1", "name": "search_events", "arguments": {"query": "review"}},
    ...               {"id": "s2", "name": "get_event", "arguments": {"event_id": "evt_0012"},
    ...                "depends_on": ["s1"]}]}]})
    >>> gold = [{"name": s.name, "arguments": s.arguments} for s in task.steps]
    >>> score(task, gold, config="paper").total
    1.3
    >>> r = score(task, gold[::-1], config="paper")
    >>> r.components["coverage"], r.matched, r.counted
    (0.5, {'s1': 1, 's2': 0}, ('s1',))
    >>> r.total, score(task, gold[::-1], config=RewardConfig.preset("paper").without("coverage")).total
    (1.05, 0.8)
    """
    if not isinstance(task, Task):
        task = Task.coerce(task)  # type: ignore[arg-type]
    cfg = _DEFAULT if config is None else RewardConfig.resolve(config)
    ctx = ScoringContext.of(
        task,
        calls,
        config=cfg,
        final_state_hash=final_state_hash,
        state_match=state_match,
        registry=registry,
    )
    values = {c.name: c.compute(ctx) for c in cfg.components}
    values[ABSTENTION] = abstention(task, ctx.calls)

    if ctx.n_gold:
        raw = lo = hi = 0.0
        for c in cfg.components:
            value = values[c.name]
            if value is not None:  # undefined for this task (no gold reads, say): not payable
                raw += c.weight * value
                low, high = c.bounds(cfg)
                lo += c.weight * low
                hi += c.weight * high
        if cfg.normalise:
            total = min(1.0, max(0.0, (raw - lo) / (hi - lo))) if hi > lo else 0.0
            max_total = 1.0
        else:
            total, max_total = raw, hi
    else:
        abstained = values[ABSTENTION] or 0.0
        if cfg.normalise:
            total, max_total = abstained, 1.0
        else:
            total, max_total = cfg.abstain_reward * abstained, cfg.abstain_reward

    steps = ctx.prepared.steps
    alignment = ctx.alignment
    at = ctx.positions  # scored call -> index among the calls made
    levels = ctx.levels
    if ctx.excused:
        scored = dict(zip(at, levels, strict=True))
        levels = tuple(
            scored[i] if i in scored else call_level(ctx.prepared, c)
            for i, c in enumerate(ctx.made)
        )
    lazy = vars(ctx)  # the state hashes, only where some component needed them
    return RewardBreakdown(
        total=_tidy(total),
        components={k: None if (v := values[k]) is None else _tidy(v) for k in cfg.breakdown_keys},
        weights=dict(cfg.weights),
        max_total=_tidy(max_total),
        budget=ctx.budget,
        n_calls=len(ctx.made),
        n_gold=ctx.n_gold,
        matched={steps[j].id: at[i] for j, i in alignment.matched.items()},
        counted=tuple(steps[j].id for j in sorted(alignment.counted)),
        call_validity=levels,
        excused=tuple(sorted(ctx.excused)),
        gold_state_hash=lazy.get("gold_state_hash"),
        final_state_hash=lazy.get("final_state_hash", final_state_hash),
        normalised=cfg.normalise,
    )


def _tidy(value: float) -> float:
    """Round away float noise (0.30000000000000004) so equal scores compare equal."""
    return round(value, 12) + 0.0
