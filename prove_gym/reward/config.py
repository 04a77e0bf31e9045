"""The one configuration object of the reward: weights, alpha, beta and every open-case choice."""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property


@dataclass(frozen=True)
class RewardConfig:
    """Weights and knobs of the PROVE reward; the defaults are the paper's.

    ``total = w_val·R_val + w_cov·R_cov + w_eff·R_eff + w_name·R_name + w_arg·R_arg
    + w_state·R_state + w_clarify·R_clarify`` for tasks with gold calls
    (maximum ``w_val + w_cov + w_name + w_arg + w_state`` = 1.3 by default, since
    R_eff and R_clarify are penalties in [-1, 0]). Tasks without gold calls pay
    ``abstain_reward`` for making no call and 0 otherwise.

    Attributes:
        w_val: Weight of validity (paper: 0.5).
        w_cov: Weight of dependency-aware coverage (paper: 0.5).
        w_eff: Weight of the adaptive efficiency penalty (paper: 0.15).
        w_name: Weight of the tool-name signal (paper: 0.2).
        w_arg: Weight of argument-value matching (paper: 0.1).
        w_state: Weight of final-state verification (not in the paper: 0.0, so the
            paper's total is unchanged; the component is still reported).
        w_clarify: Weight of the clarification penalty: the share of clarify/abstain
            turns of a task with gold calls in which the model called a tool
            (not in the paper; 0.5, as much as coverage, so guessing a missing
            value never pays). 0 switches the rule off.
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
        normalise: Map the total affinely to [0, 1]: ``(raw - lo) / (hi - lo)`` with
            ``hi`` the maximum above and ``lo = w_eff·floor - w_clarify`` (floor -1
            when ``eff_floor`` is None, then clipped); tasks without gold calls
            pay 1 or 0.
    """

    w_val: float = 0.5
    w_cov: float = 0.5
    w_eff: float = 0.15
    w_name: float = 0.2
    w_arg: float = 0.1
    w_state: float = 0.0
    w_clarify: float = 0.5
    alpha: float = 0.5
    beta: float = 0.5
    eff_floor: float | None = -1.0
    abstain_reward: float = 1.0
    credit_within_budget: bool = False
    normalise: bool = False

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            nonnegative = f.name.startswith("w_") or f.name in ("alpha", "beta", "abstain_reward")
            if nonnegative and (not isinstance(value, int | float) or value < 0):
                raise ValueError(f"RewardConfig.{f.name} must be a number >= 0, got {value!r}")
        if self.eff_floor is not None and self.eff_floor > 0:
            raise ValueError(f"RewardConfig.eff_floor must be <= 0 or None, got {self.eff_floor}")

    @cached_property
    def weights(self) -> dict[str, float]:
        """Weights by component name, as they appear in a breakdown."""
        return {
            "validity": self.w_val,
            "coverage": self.w_cov,
            "efficiency": self.w_eff,
            "tool_name": self.w_name,
            "arguments": self.w_arg,
            "state": self.w_state,
            "clarification": self.w_clarify,
        }

    @cached_property
    def max_raw(self) -> float:
        """The highest raw total of a task with gold calls (1.3 with the paper's weights)."""
        return self.w_val + self.w_cov + self.w_name + self.w_arg + self.w_state

    @cached_property
    def min_raw(self) -> float:
        """The lowest raw total of a task with gold calls, used by ``normalise``."""
        floor = -1.0 if self.eff_floor is None else self.eff_floor
        return self.w_eff * floor - self.w_clarify
