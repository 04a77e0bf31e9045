"""Evaluation: play a policy over tasks and report every reward component.

Each task is one :class:`~prove_gym.episode.Episode`, scored by its own reward
(the engine training uses). The report gives, overall, per server and per
tool: the mean total and every component, the success rate (full coverage,
final state equal to the gold replay's *and* every gold read's answer obtained;
for a task without gold calls, no call), calls per task, and per tool how often
it was called, how often those calls executed, and how many gold steps it
matched. The same figures per task stratum (1, 2, 3+ gold calls, no call,
clarify, abstain) keep tool use from hiding behind tasks that need no call.

- :mod:`~prove_gym.eval.policies`: the oracle, random and OpenAI-compatible policies
  (a local model plays through the training engine:
  :func:`prove_gym.training.evaluate_model`, the same report);
- :mod:`~prove_gym.eval.runner`: :func:`run_episode` and :func:`evaluate`;
- :mod:`~prove_gym.eval.metrics`: :class:`EpisodeResult` and the aggregates;
- :mod:`~prove_gym.eval.report`: :class:`EvalReport` (tables, JSON, plot).

>>> from prove_gym import get_registry
>>> report = evaluate(OraclePolicy(), get_registry().tasks("calendar"), progress=False)
>>> report.summary()["overall"]["success"]
1.0
"""

from __future__ import annotations

from prove_gym.eval.metrics import EpisodeResult
from prove_gym.eval.policies import (
    Agent,
    OpenAIChatPolicy,
    OraclePolicy,
    Policy,
    RandomPolicy,
)
from prove_gym.eval.report import EvalReport
from prove_gym.eval.runner import evaluate, run_episode

__all__ = [
    "Agent",
    "EpisodeResult",
    "EvalReport",
    "OpenAIChatPolicy",
    "OraclePolicy",
    "Policy",
    "RandomPolicy",
    "evaluate",
    "run_episode",
]
