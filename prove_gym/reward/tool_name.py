"""Tool-name signal R_name: how many of the calls use a tool the gold answer uses.

``R_name = |{c ∈ Ĉ : c.name ∈ names(G)}| / |Ĉ|``, over every call the model made
(in every turn). With no calls R_name is 0 (no call earns no name credit), and
with no gold steps every call misses (the abstention rule scores those tasks).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from prove_gym.reward.common import Calls, prepare, scored_calls
from prove_gym.task import Task
from prove_gym.workspace import CallRecord


def name_share(calls: Sequence[CallRecord], gold_names: Collection[str]) -> float:
    """The share of calls whose name is in ``gold_names``; 0.0 for no calls."""
    if not calls:
        return 0.0
    return sum(1 for c in calls if c.name in gold_names) / len(calls)


def tool_name(task: Task, calls: Calls) -> float:
    """R_name in [0, 1].

    >>> from prove_gym import Task
    >>> task = Task.from_json({"id": "demo", "servers": ["calendar"], "turns": [
    ...     {"user": "Show me event evt_0001.", "steps": [
    ...         {"id": "s1", "name": "get_event", "arguments": {"event_id": "evt_0001"}}]}]})
    >>> tool_name(task, [{"name": "list_calendars", "arguments": {}},
    ...                  {"name": "get_event", "arguments": {"event_id": "evt_0001"}}])
    0.5
    """
    prepared = prepare(task)
    return name_share(scored_calls(prepared, calls), prepared.gold_names)
