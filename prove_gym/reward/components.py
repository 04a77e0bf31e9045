"""Reward components as data: each term of the total is an object with a name and a weight.

A :class:`RewardComponent` is a frozen dataclass. Its ``compute(ctx)`` returns
the component's value for one trajectory (``None`` where it is undefined for
the task), and its ``bounds(config)`` returns the lowest and highest value
``compute`` can return. :func:`~prove_gym.reward.score` pays
``Σ weight · value`` over ``RewardConfig.components``, in order, skipping
``None``. ``bounds`` gives the maximum total (``Σ weight · high``) and the
range that ``normalise`` maps onto [0, 1].

The built-in components wrap the per-component functions of this package and
keep their formulas; with the paper's weights they are
:data:`DEFAULT_COMPONENTS`. A new component takes a few lines in any file,
and switching it on touches nothing in ``prove_gym``:

>>> import json
>>> from dataclasses import dataclass
>>> from prove_gym import Task
>>> from prove_gym.reward import RewardComponent, RewardConfig, score
>>> @dataclass(frozen=True)
... class LongCalls(RewardComponent):
...     '''Minus the share of calls whose JSON arguments exceed ``limit`` characters.'''
...     name: str = "long_calls"
...     weight: float = 0.2
...     limit: int = 30
...     def compute(self, ctx):
...         long = sum(len(json.dumps(c.arguments)) > self.limit for c in ctx.calls)
...         return -long / ctx.n_calls if ctx.calls else 0.0
...     def bounds(self, config):
...         return (-1.0, 0.0)
>>> task = Task.from_json({"id": "demo", "servers": ["calendar"], "turns": [{"user": "...",
...     "steps": [{"id": "s1", "name": "get_event", "arguments": {"event_id": "evt_0001"}}]}]})
>>> chatty = [{"name": "get_event", "arguments": {"event_id": "evt_0001", "note": "x" * 40}}]
>>> config = RewardConfig().with_components(LongCalls())
>>> r = score(task, chatty, config=config)
>>> r.components["long_calls"], r.weights["long_calls"], config.max_raw
(-1.0, 0.2, 3.3)

A plugin makes a component available by name through the
``prove_gym_reward_components`` hook; it is only paid once a config includes
it (:meth:`RewardConfig.with_components
<prove_gym.reward.config.RewardConfig.with_components>`).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prove_gym.reward.abstention import clarification_penalty
from prove_gym.reward.arguments import arguments_from
from prove_gym.reward.coverage import coverage_from
from prove_gym.reward.efficiency import efficiency_penalty
from prove_gym.reward.state import (
    canonical,
    prepared_gold_answers,
)
from prove_gym.reward.tool_name import name_share
from prove_gym.reward.validity import validity_from_levels
from prove_gym.workspace import CallRecord

if TYPE_CHECKING:
    from prove_gym.reward.config import RewardConfig
    from prove_gym.reward.context import ScoringContext

__all__ = [
    "DEFAULT_COMPONENTS",
    "Answers",
    "Arguments",
    "Clarification",
    "Coverage",
    "Efficiency",
    "RewardComponent",
    "State",
    "SurplusWrites",
    "ToolName",
    "Validity",
]


@dataclass(frozen=True, kw_only=True)
class RewardComponent:
    """One term of the reward total: a name, a weight, and how to compute it for a trajectory.

    Subclass it as a ``@dataclass(frozen=True)``, give ``name`` and ``weight``
    defaults, override :meth:`compute` and, unless the values lie in [0, 1],
    :meth:`bounds`. Extra fields are the component's own parameters. A
    component is a value: ``dataclasses.replace(component, weight=0.3)``
    gives a reweighted copy, and two equal components compare equal.

    Attributes:
        name: Its key in a breakdown and in ``RewardConfig.weights`` (an identifier, unique
            within a config; ``"abstention"`` is taken by the abstention rule).
        weight: Its weight in the total, a finite number >= 0. A penalty is a component
            whose values are <= 0, not a negative weight.
    """

    name: str = ""
    weight: float = 1.0

    def __post_init__(self) -> None:
        cls = type(self)
        declared = list(inspect.get_annotations(cls))
        if declared and "__dataclass_fields__" not in cls.__dict__:
            raise TypeError(
                f"{cls.__name__} declares fields {declared} but is not a dataclass: "
                "decorate it with @dataclass(frozen=True)"
            )
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(
                f"{cls.__name__}.name must be an identifier such as 'long_calls' (a field "
                f"default of a @dataclass(frozen=True) subclass), got {self.name!r}"
            )
        w = self.weight
        if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) or w < 0:
            raise ValueError(
                f"the weight of reward component {self.name!r} must be a finite number >= 0, "
                f"got {w!r}"
            )

    @property
    def description(self) -> str:
        """The first line of the class docstring."""
        doc = (type(self).__doc__ or "").strip()
        return doc.splitlines()[0] if doc else self.name

    def compute(self, ctx: ScoringContext) -> float | None:
        """The component's value for one trajectory, or ``None`` where it is undefined for the task."""
        raise NotImplementedError(f"{type(self).__name__} must override compute(ctx)")

    def bounds(self, config: RewardConfig) -> tuple[float, float]:
        """The lowest and highest value :meth:`compute` returns under ``config`` (default [0, 1])."""
        return (0.0, 1.0)


@dataclass(frozen=True)
class Validity(RewardComponent):
    """R_val in [0, 1]: the mean over calls of (validity levels reached)/3 (paper weight 0.5).

    ``R_val = Σ_c level(c) / (3N)``, levels being name offered / structure /
    executed (:mod:`~prove_gym.reward.validity`); 0 with no calls. With
    ``credit_within_budget`` only the first B calls earn levels, over the same
    denominator 3N. For a task without gold calls it is reported (no cap)
    when a call was made, ``None`` otherwise; the abstention rule pays.
    """

    name: str = "validity"
    weight: float = 0.5

    def compute(self, ctx: ScoringContext) -> float | None:
        levels = ctx.levels
        if not ctx.n_gold:
            return validity_from_levels(list(levels)) if levels else None
        if ctx.config.credit_within_budget and ctx.n_calls > ctx.budget:
            return sum(levels[: ctx.budget]) / (3 * ctx.n_calls)
        return validity_from_levels(list(levels))


@dataclass(frozen=True)
class Coverage(RewardComponent):
    """R_cov in [0, 1]: the share of gold steps matched after their prerequisites (paper weight 0.5).

    ``R_cov = (1/|G|) Σ_g m(g)·o(g)`` over the best alignment
    (:mod:`~prove_gym.reward.coverage`); ``None`` for a task without gold calls.
    """

    name: str = "coverage"
    weight: float = 0.5

    def compute(self, ctx: ScoringContext) -> float | None:
        return coverage_from(ctx.prepared, ctx.alignment)


@dataclass(frozen=True)
class Efficiency(RewardComponent):
    """R_eff in [eff_floor, 0]: a penalty for calls beyond the budget (paper weight 0.15).

    ``R_eff = max(eff_floor, -alpha·max(0, N - B)/B)`` with
    ``B = n_gt + ceil(beta·n_gt)`` (:mod:`~prove_gym.reward.efficiency`);
    ``None`` for a task without gold calls. Its lower bound is ``eff_floor``,
    or -1 when there is no floor (``normalise`` then clips).
    """

    name: str = "efficiency"
    weight: float = 0.15

    def compute(self, ctx: ScoringContext) -> float | None:
        cfg = ctx.config
        return efficiency_penalty(
            ctx.n_calls, ctx.n_gold, alpha=cfg.alpha, beta=cfg.beta, floor=cfg.eff_floor
        )

    def bounds(self, config: RewardConfig) -> tuple[float, float]:
        return (-1.0 if config.eff_floor is None else config.eff_floor, 0.0)


@dataclass(frozen=True)
class ToolName(RewardComponent):
    """R_name in [0, 1]: the share of calls that use a gold tool name (paper weight 0.2).

    ``R_name = |{c : c.name ∈ names(G)}| / N`` (:mod:`~prove_gym.reward.tool_name`);
    0 with no calls. With ``credit_within_budget`` only the first B calls earn
    credit, over the same denominator N. ``None`` for a task without gold calls.
    """

    name: str = "tool_name"
    weight: float = 0.2

    def compute(self, ctx: ScoringContext) -> float | None:
        if not ctx.n_gold:
            return None
        gold, b, n = ctx.prepared.gold_names, ctx.budget, ctx.n_calls
        if ctx.config.credit_within_budget and n > b:
            return name_share(ctx.calls[:b], gold) * b / n
        return name_share(ctx.calls, gold)


@dataclass(frozen=True)
class Arguments(RewardComponent):
    """R_arg in [0, 1]: right argument values over the aligned pairs (paper weight 0.1).

    ``R_arg = mean over (g, c) ∈ M of |{k : c.args[k] = g.args[k]}| / |g.args|``
    (:mod:`~prove_gym.reward.arguments`); 0 with no aligned pair, ``None`` for a
    task without gold calls.
    """

    name: str = "arguments"
    weight: float = 0.1

    def compute(self, ctx: ScoringContext) -> float | None:
        return arguments_from(ctx.alignment) if ctx.n_gold else None


@dataclass(frozen=True)
class Clarification(RewardComponent):
    """R_clarify in [-1, 0]: minus the share of clarify/abstain turns answered with a call (ours, 0.5).

    ``R_clarify = -|{no-call turns with a call}| / |{no-call turns}|``, 0 when
    the task has none (:mod:`~prove_gym.reward.abstention`). Weighted 0.5, as
    much as coverage, so guessing a missing value never pays; weight 0
    switches the rule off (guessed calls still match no gold step).
    """

    name: str = "clarification"
    weight: float = 0.5

    def compute(self, ctx: ScoringContext) -> float | None:
        return clarification_penalty(ctx.prepared.no_call_turns, ctx.calls)

    def bounds(self, config: RewardConfig) -> tuple[float, float]:
        return (-1.0, 0.0)


@dataclass(frozen=True)
class State(RewardComponent):
    """R_state in {0, 1}: 1 when the model's final state hash equals the gold replay's (ours, 0).

    ``R_state = 1[hash(model) = hash(gold)]`` (:mod:`~prove_gym.reward.state`).
    Computed when the caller gives the model's final state hash (the env
    always does) or when the weight is > 0 (the calls are then replayed);
    otherwise ``None``, and nothing is replayed. Weight 0 by default, so the
    paper's total is unchanged.
    """

    name: str = "state"
    weight: float = 1.0

    def compute(self, ctx: ScoringContext) -> float | None:
        if (
            ctx.given_final_state_hash is None
            and ctx.given_state_match is None
            and not self.weight > 0
        ):
            return None
        matches = ctx.state_matches
        if matches is None:
            if not self.weight > 0:
                return None
            raise ValueError(
                f"task {ctx.task.id!r} has no server to replay its calls on (tool_schemas): "
                "pass state_match= (your environment's own final-state comparison) to score(), "
                "or score without the state component (RewardConfig().without('state'))"
            )
        return 1.0 if matches else 0.0


@dataclass(frozen=True)
class Answers(RewardComponent):
    """R_answers in [0, 1]: the share of gold reads whose answer the model obtained (ours, 1.0).

    The state hash judges writes; this judges reads the same way, by outcome. A gold
    step of a read-only tool is *answered* when some call of the same tool, outside
    a clarify/abstain turn, succeeded with exactly the result the gold replay got
    (key-sorted JSON). A read with a wrong date or the wrong query finds other
    rows, so it answers nothing, whatever its keys. ``None`` for a task without
    gold reads. Calls given as dicts without their results' content are run again
    on a fresh workspace to get it.
    """

    name: str = "answers"
    weight: float = 1.0

    def compute(self, ctx: ScoringContext) -> float | None:
        prepared = ctx.prepared
        reads = [s for s in prepared.steps if s.name not in prepared.writes]
        if not reads:
            return None
        if prepared.offline:
            if not self.weight > 0:
                return None
            raise ValueError(
                f"task {ctx.task.id!r} has no server to replay its gold reads on (tool_schemas): "
                "score it without the answers component (RewardConfig().without('answers'))"
            )
        gold = prepared_gold_answers(prepared, ctx.registry)
        asked = [s for s in reads if gold[s.index] is not None]  # a failed gold read asks nothing
        if not asked:
            return None
        calls: Sequence[CallRecord] = ctx.calls
        if any(c.result.ok and c.result.content is None for c in calls):
            calls = ctx.replayed[0]  # dicts without their results' content: run them again
        got: dict[str, set[str]] = {}
        for c in calls:
            if (
                c.result.ok
                and c.turn not in prepared.no_call_turns
                and c.result.content is not None
            ):
                got.setdefault(c.name, set()).add(canonical(c.result.content))
        answered = sum(1 for s in asked if gold[s.index] in got.get(s.name, ()))
        return answered / len(asked)


@dataclass(frozen=True)
class SurplusWrites(RewardComponent):
    """R_surplus in [-1, 0]: minus the share of successful writes that match no gold step (ours).

    ``R_surplus = -|{c ∈ W : c matches no gold step}| / |W|`` over the calls ``W``
    that ran a writing tool successfully; 0 without such calls, ``None`` for a task
    without gold calls. A repeated transfer or a second ``create_issue`` stays within
    the efficiency budget and may even leave the state hash equal (an idempotent
    write); this term is what keeps it from being free. Failed writes changed
    nothing: validity already pays for them.
    """

    name: str = "surplus_writes"
    weight: float = 0.3

    def compute(self, ctx: ScoringContext) -> float | None:
        if not ctx.n_gold:
            return None
        writes = ctx.prepared.writes
        matched = set(ctx.alignment.matched.values())
        done = [i for i, c in enumerate(ctx.calls) if c.name in writes and c.result.ok]
        if not done:
            return 0.0
        return -sum(1 for i in done if i not in matched) / len(done)

    def bounds(self, config: RewardConfig) -> tuple[float, float]:
        return (-1.0, 0.0)


PAPER_COMPONENTS: tuple[RewardComponent, ...] = (
    Validity(),
    Coverage(),
    Efficiency(),
    ToolName(),
    Arguments(),
)
"""The paper's five components with its weights (``RewardConfig.preset("paper")``)."""

DEFAULT_COMPONENTS: tuple[RewardComponent, ...] = (
    *PAPER_COMPONENTS,
    Clarification(),
    State(),
    Answers(),
    SurplusWrites(),
)
"""The paper's five, then ours: clarification, state, answers and surplus writes."""
