"""The one configuration object of the reward: its components (with their weights) and knobs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from prove_gym.reward.components import (
    DEFAULT_COMPONENTS,
    PAPER_COMPONENTS,
    RewardComponent,
)
from prove_gym.reward.coverage import MatchRules
from prove_gym.reward.efficiency import ALPHA, BETA, EFF_FLOOR

ABSTENTION = "abstention"
"""The breakdown key of the abstention rule (not a component: it replaces the weighted sum)."""

_BEFORE_ABSTENTION = ("validity", "coverage", "efficiency", "tool_name", "arguments")


@dataclass(frozen=True, kw_only=True)
class RewardConfig:
    """Components, weights and knobs of the PROVE reward (the validated default; see :meth:`preset`).

    For a task with gold calls ``total = Σ weight·value`` over ``components``
    (a component whose value is ``None`` adds nothing). With the defaults::

        total = 0.5·R_val + 0.5·R_cov + 0.15·R_eff + 0.2·R_name + 0.1·R_arg
                + 0.5·R_clarify + 1.0·R_state + 1.0·R_answers + 0.3·R_surplus

    whose maximum is 3.3 (R_eff, R_clarify and R_surplus are penalties in [-1, 0];
    a component undefined for a task, such as R_answers without gold reads, is left
    out of that task's maximum). The outcome terms (state, answers) and their weights,
    the surplus-write penalty and the two matching rules (entity ids must be right;
    default-valued keys may be left out) were chosen with
    ``benchmarks/reward_validity.py``: the reward that ranks perturbed trajectories
    the way their outcome does. The paper's reward, exactly, is
    ``RewardConfig.preset("paper")``.
    A task without gold calls pays ``abstain_reward`` for making no call and 0
    otherwise (the abstention rule replaces the sum; components are still
    reported). The config is frozen and hashable; the ``with_*`` helpers and
    :meth:`without` return new configs.

    Attributes:
        components: The terms of the total, in breakdown order (default
            :data:`~prove_gym.reward.components.DEFAULT_COMPONENTS`: validity 0.5,
            coverage 0.5, efficiency 0.15, tool_name 0.2, arguments 0.1 from the paper;
            clarification 0.5 and state 0.0 of ours). Names are unique.
        alpha: Scale of the efficiency penalty (paper: 0.5).
        beta: Budget slack, ``B = n_gt + ceil(beta·n_gt)`` (paper: 0.5; 0 is the flat budget).
        eff_floor: Lower bound of R_eff (the paper sets none). -1.0 keeps one runaway
            rollout from dominating a GRPO group: the floor is reached at
            ``n_calls = B·(1 + 1/alpha)`` (3B by default). ``None`` removes it.
        abstain_reward: Total for a task with no gold calls answered without a call (paper: 1.0).
        credit_within_budget: Only the first B calls earn validity and tool-name credit
            (later ones still count in the averages' denominators and for
            efficiency). Off by default (the paper averages over every call),
            which lets padding pay: after an invalid call, appending cheap valid
            calls of a gold tool raises the averaged R_val and R_name by more than
            R_eff takes away. On, a call past the budget can never raise R_val,
            R_name or R_eff.
        normalise: Map the total affinely to [0, 1]: ``(raw - min_raw) / (max_raw - min_raw)``,
            clipped; tasks without gold calls pay 1 or 0.
        match_entity_ids: A call matches a gold step only if its entity-id arguments (declared
            id parameters, such as ``account_id``) carry the gold values (paper: off, keys only).
        default_keys_optional: A gold key whose value is the tool's declared default may be
            left out by a matching call, which then means the same (paper: off).

    >>> cfg = RewardConfig.preset("paper").with_weights(arguments=0.2)
    >>> cfg.weights, cfg.max_raw
    ({'validity': 0.5, 'coverage': 0.5, 'efficiency': 0.15, 'tool_name': 0.2, 'arguments': 0.2}, 1.4)
    >>> RewardConfig().without("clarification", "state", "answers", "surplus_writes").breakdown_keys
    ('validity', 'coverage', 'efficiency', 'tool_name', 'arguments', 'abstention')
    """

    components: tuple[RewardComponent, ...] = DEFAULT_COMPONENTS
    alpha: float = ALPHA
    beta: float = BETA
    eff_floor: float | None = EFF_FLOOR
    abstain_reward: float = 1.0
    credit_within_budget: bool = False
    normalise: bool = False
    match_entity_ids: bool = True
    default_keys_optional: bool = True

    @classmethod
    def preset(cls, name: str) -> RewardConfig:
        """A named configuration: ``"default"`` (validated) or ``"paper"`` (the paper's, exactly).

        ``"paper"``: ``0.5·R_val + 0.5·R_cov + 0.15·R_eff + 0.2·R_name + 0.1·R_arg``
        (maximum 1.3), no floor on R_eff, a step matched by name and keys alone, and
        nothing of ours (no clarification, state or surplus-write term). Where the
        paper is silent the choices are documented in docs/reward.md.

        >>> RewardConfig.preset("paper").max_raw, RewardConfig.preset("paper").eff_floor
        (1.3, None)
        >>> RewardConfig.preset("papper")
        Traceback (most recent call last):
        ...
        ValueError: no reward preset 'papper'; known: default, paper
        """
        if name == "default":
            return cls()
        if name == "paper":
            return cls(
                components=PAPER_COMPONENTS,
                eff_floor=None,
                match_entity_ids=False,
                default_keys_optional=False,
            )
        raise ValueError(f"no reward preset {name!r}; known: {', '.join(PRESETS)}")

    @classmethod
    def resolve(cls, value: RewardConfig | str | None) -> RewardConfig:
        """A config from a config, a preset name, or ``None`` (the default)."""
        if value is None:
            return cls()
        if isinstance(value, str):
            return cls.preset(value)
        if not isinstance(value, RewardConfig):
            raise TypeError(
                f"a reward is a RewardConfig or a preset name ({', '.join(PRESETS)}), "
                f"got {type(value).__name__}"
            )
        return value

    @cached_property
    def rules(self) -> MatchRules:
        """When a call matches a gold step (see :mod:`prove_gym.reward.coverage`)."""
        return MatchRules(
            defaults_optional=self.default_keys_optional, match_ids=self.match_entity_ids
        )

    def __post_init__(self) -> None:
        object.__setattr__(self, "components", tuple(self.components))
        seen: set[str] = set()
        for c in self.components:
            if not isinstance(c, RewardComponent):
                raise TypeError(f"RewardConfig.components holds RewardComponent objects, got {c!r}")
            if c.name in seen or c.name == ABSTENTION:
                why = "is the abstention rule's" if c.name == ABSTENTION else "appears twice"
                raise ValueError(f"reward component name {c.name!r} {why}; names must be unique")
            seen.add(c.name)
        for name in ("alpha", "beta", "abstain_reward"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or value < 0:
                raise ValueError(f"RewardConfig.{name} must be a number >= 0, got {value!r}")
        if self.eff_floor is not None and self.eff_floor > 0:
            raise ValueError(f"RewardConfig.eff_floor must be <= 0 or None, got {self.eff_floor}")

    # ------------------------------------------------------------- lookups
    @cached_property
    def weights(self) -> dict[str, float]:
        """Weights by component name, in the config's order."""
        return {c.name: c.weight for c in self.components}

    def component(self, name: str) -> RewardComponent:
        """The component called ``name``; a ``KeyError`` lists the config's names."""
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(f"no reward component {name!r} in this config; it has: {self._names()}")

    @cached_property
    def breakdown_keys(self) -> tuple[str, ...]:
        """Component names in the order a breakdown lists them.

        The config's order, with ``"abstention"`` right after the last of the
        paper's five components present (where it has always been).
        """
        names = [c.name for c in self.components]
        at = max((i + 1 for i, n in enumerate(names) if n in _BEFORE_ABSTENTION), default=0)
        return (*names[:at], ABSTENTION, *names[at:])

    @cached_property
    def max_raw(self) -> float:
        """The highest raw total of a task with gold calls: ``Σ weight·high`` (1.3 by default)."""
        return sum((c.weight * c.bounds(self)[1] for c in self.components), 0.0)

    @cached_property
    def min_raw(self) -> float:
        """The lowest raw total of a task with gold calls: ``Σ weight·low`` (-0.65 by default).

        ``normalise`` maps [min_raw, max_raw] onto [0, 1]. With the defaults it
        is ``0.15·eff_floor - 0.5`` (the floor counting as -1 when it is None).
        """
        return sum((c.weight * c.bounds(self)[0] for c in self.components), 0.0)

    # ------------------------------------------------------- new configs
    def with_weights(self, **weights: float) -> RewardConfig:
        """A copy with these components reweighted, by name.

        >>> RewardConfig().with_weights(arguments=0.2).weights["arguments"]
        0.2
        >>> RewardConfig().with_weights(argument=0.2)
        Traceback (most recent call last):
        ...
        ValueError: no reward component named ['argument']; known: validity, coverage, ...
        """
        self._check_known(weights)
        return dataclasses.replace(
            self,
            components=tuple(
                dataclasses.replace(c, weight=weights[c.name]) if c.name in weights else c
                for c in self.components
            ),
        )

    def with_components(self, *components: RewardComponent) -> RewardConfig:
        """A copy with ``components`` added at the end, or replacing the one of the same name."""
        new = {c.name: c for c in components}
        kept = [new.pop(c.name, c) for c in self.components]
        return dataclasses.replace(self, components=(*kept, *new.values()))

    def without(self, *names: str) -> RewardConfig:
        """A copy without the components called ``names`` (an unknown name is a ``ValueError``)."""
        self._check_known(names)
        return dataclasses.replace(
            self, components=tuple(c for c in self.components if c.name not in names)
        )

    def _names(self) -> str:
        return ", ".join(c.name for c in self.components) or "(none)"

    def _check_known(self, names: Iterable[str]) -> None:
        unknown = [n for n in names if n not in self.weights]
        if unknown:
            raise ValueError(f"no reward component named {unknown}; known: {self._names()}")


PRESETS = ("default", "paper")
"""Names :meth:`RewardConfig.preset` knows."""
