"""The PROVE reward: programmatic, sequence level, no judge model.

``score(task, calls)`` returns a :class:`RewardBreakdown`; the env pays its
``total`` on the terminal step and puts ``to_dict()`` in
``info["reward_breakdown"]``. Each component is a pure function of (task,
trajectory) in its own module, with its formula in the docstring, and a
:class:`RewardComponent` object (:mod:`~prove_gym.reward.components`) that
carries its name and weight into the total:

- :mod:`~prove_gym.reward.validity` R_val: name offered / structure / executed, 1/3 each;
- :mod:`~prove_gym.reward.coverage` R_cov: gold steps matched after their prerequisites;
- :mod:`~prove_gym.reward.efficiency` R_eff: penalty beyond ``B = n_gt + ceil(beta·n_gt)``;
- :mod:`~prove_gym.reward.tool_name` R_name: share of calls using a gold tool name;
- :mod:`~prove_gym.reward.arguments` R_arg: right values over the aligned pairs;
- :mod:`~prove_gym.reward.abstention`: the abstention rule (no gold calls) and the
  clarification penalty (calls in clarify/abstain turns);
- :mod:`~prove_gym.reward.state` R_state: gold replay and final state hashes compared;
- :class:`Answers` R_answers: gold reads whose exact answer the model obtained;
- :class:`SurplusWrites` R_surplus: successful writes that match no gold step.

The default configuration is the one ``benchmarks/reward_validity.py`` validated;
``RewardConfig.preset("paper")`` (or ``config="paper"``) is the paper's reward, exactly.

The components (with their weights), alpha, beta and every choice the paper
leaves open live in one :class:`RewardConfig`; a component of your own is a
few lines (see :mod:`~prove_gym.reward.components`). ``docs/reward.md``
explains them all.

>>> from prove_gym import Task
>>> from prove_gym.reward import score
>>> task = Task.from_json({"id": "demo", "servers": ["calendar"], "turns": [{"user": "...",
...     "steps": [{"id": "s1", "name": "get_event", "arguments": {"event_id": "evt_0001"}}]}]})
>>> score(task, [{"name": "get_event", "arguments": {"event_id": "evt_0001"},
...               "result": {"status": "ok"}}]).total
3.3
"""

from __future__ import annotations

from prove_gym.reward.abstention import abstention, clarification
from prove_gym.reward.arguments import argument_values
from prove_gym.reward.components import (
    Answers,
    Arguments,
    Clarification,
    Coverage,
    Efficiency,
    RewardComponent,
    State,
    SurplusWrites,
    ToolName,
    Validity,
)
from prove_gym.reward.config import RewardConfig
from prove_gym.reward.context import ScoringContext
from prove_gym.reward.coverage import Alignment, MatchRules, align, coverage
from prove_gym.reward.efficiency import budget, efficiency
from prove_gym.reward.score import RewardBreakdown, score
from prove_gym.reward.state import gold_state_hash, state_match
from prove_gym.reward.tool_name import tool_name
from prove_gym.reward.validity import validity, validity_levels
from prove_gym.reward.values import values_equal

__all__ = [
    "Alignment",
    "Answers",
    "Arguments",
    "Clarification",
    "Coverage",
    "Efficiency",
    "MatchRules",
    "RewardBreakdown",
    "RewardComponent",
    "RewardConfig",
    "ScoringContext",
    "State",
    "SurplusWrites",
    "ToolName",
    "Validity",
    "abstention",
    "align",
    "argument_values",
    "budget",
    "clarification",
    "coverage",
    "efficiency",
    "gold_state_hash",
    "score",
    "state_match",
    "tool_name",
    "validity",
    "validity_levels",
    "values_equal",
]
