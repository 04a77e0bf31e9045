"""Adaptive efficiency R_eff: a penalty for calls beyond a budget that grows with the task.

``B = n_gt + ceil(beta·n_gt)`` and ``R_eff = -alpha·max(0, n_calls - B)/B``,
floored at ``eff_floor`` (-1 by default; the paper sets no floor). It only
punishes extra calls: within the budget it is 0. ``n_calls`` counts every call
the model made, failed and unparseable ones included. Tasks with no gold calls
have no budget (B = 0); the abstention rule scores them and R_eff is ``None``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from prove_gym.reward.common import Calls, prepare, scored_calls
from prove_gym.task import Task

if TYPE_CHECKING:
    from prove_gym.reward.config import RewardConfig

ALPHA = 0.5
"""The default scale of the efficiency penalty (the paper's; ``RewardConfig.alpha``)."""
BETA = 0.5
"""The default budget slack (the paper's; ``RewardConfig.beta``)."""
EFF_FLOOR = -1.0
"""The default lower bound of R_eff (ours; ``RewardConfig.eff_floor``)."""


def budget(n_gt: int, beta: float = BETA) -> int:
    """The call budget ``B = n_gt + ceil(beta·n_gt)``.

    >>> budget(4, 0.5), budget(3, 0.5), budget(4, 0.0)
    (6, 5, 4)
    """
    # round() first so that 0.7·10 = 7.000000000000001 does not become 8
    return n_gt + math.ceil(round(beta * n_gt, 9))


def efficiency_penalty(
    n_calls: int,
    n_gt: int,
    *,
    alpha: float = ALPHA,
    beta: float = BETA,
    floor: float | None = EFF_FLOOR,
) -> float | None:
    """``-alpha·max(0, n_calls - B)/B`` with its floor; ``None`` when there is no budget.

    >>> efficiency_penalty(6, 4), efficiency_penalty(9, 4), efficiency_penalty(100, 4)
    (0.0, -0.25, -1.0)
    """
    b = budget(n_gt, beta)
    if b == 0:
        return None
    value = -alpha * max(0, n_calls - b) / b
    if floor is not None:
        value = max(value, floor)
    return value + 0.0  # no -0.0


def efficiency(task: Task, calls: Calls, *, config: RewardConfig | None = None) -> float | None:
    """R_eff in [eff_floor, 0] for a task and its calls (``None`` for a task without gold calls).

    >>> from prove_gym import Task
    >>> task = Task.from_json({"id": "demo", "servers": ["calendar"], "turns": [
    ...     {"user": "Show me event evt_0001.", "steps": [
    ...         {"id": "s1", "name": "get_event", "arguments": {"event_id": "evt_0001"}}]}]})
    >>> efficiency(task, [{"name": "get_event", "arguments": {"event_id": "evt_0001"}}] * 4)
    -0.5
    """
    knobs = (
        (ALPHA, BETA, EFF_FLOOR)
        if config is None
        else (config.alpha, config.beta, config.eff_floor)
    )
    return efficiency_penalty(
        len(scored_calls(prepare(task), calls)),
        len(task.scored_steps),
        alpha=knobs[0],
        beta=knobs[1],
        floor=knobs[2],
    )
