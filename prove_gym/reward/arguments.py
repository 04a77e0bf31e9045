"""Argument values R_arg: over the pairs aligned by coverage, how many values are right.

``R_arg = mean over (g, c) ∈ M of |{k : c.args[k] = g.args[k]}| / |g.args|``,
where M holds every matched pair of the alignment (``m(g) = 1``, also those whose
order check o(g) failed: the values are right or wrong whatever the order).
Values are compared by :func:`prove_gym.reward.values.values_equal` (numbers
numerically, strings exactly unless the tool declares a normalisation). A gold
step without arguments scores 1.0 for its pair. With no aligned pairs R_arg is 0
(no gold step was hit, so no value was right).
"""

from __future__ import annotations

from prove_gym.registry import Registry
from prove_gym.reward.common import Calls, prepare, scored_calls
from prove_gym.reward.coverage import Alignment, align_prepared
from prove_gym.task import Task


def arguments_from(alignment: Alignment) -> float:
    """The mean pair score of an alignment; 0.0 when nothing is aligned."""
    scores = alignment.pair_scores
    return sum(scores.values()) / len(scores) if scores else 0.0


def argument_values(task: Task, calls: Calls, *, registry: Registry | None = None) -> float:
    """R_arg in [0, 1].

    >>> from prove_gym import Task
    >>> task = Task.from_json({"id": "demo", "servers": ["calendar"], "turns": [{"user": "...",
    ...     "steps": [{"id": "s1", "name": "add_invitee",
    ...                "arguments": {"event_id": "evt_0012", "email": "ana@x.com"}}]}]})
    >>> argument_values(task, [{"name": "add_invitee",
    ...                         "arguments": {"event_id": "evt_0012", "email": "Ana@X.com"}}])
    1.0
    >>> argument_values(task, [{"name": "add_invitee",
    ...                         "arguments": {"event_id": "evt_0013", "email": "ana@x.com"}}])
    0.5
    """
    prepared = prepare(task, registry)
    return arguments_from(align_prepared(prepared, scored_calls(prepared, calls)))
