"""Validity R_val: is each call well-formed and did it run?

Each call scores three equal levels, cumulatively (a level counts only when the
ones before it pass):

1. its name is one of the tools the task offered (``task.tools``, or every
   visible tool of ``task.servers``; schema overrides applied, exactly what the
   model was shown);
2. its arguments are an object in which every required parameter is present,
   no undeclared key appears (the offered schemas forbid extra keys) and every
   value has a compatible JSON type (see :mod:`prove_gym.reward.schema_check`);
3. live execution succeeded: ``CallRecord.result.ok``, the session's actual
   result, never re-derived here.

``R_val = (1/N) Σ_c level(c)/3``: a right name with wrong parameters scores
1/3, a right structure whose execution failed 2/3, a successful call 1. With no
calls (N = 0) R_val is 0: no call earns no validity credit.

The levels are cumulative so that a call which only ran because the server
coerced a wrong type (``"5"`` for an integer) is not paid as well-formed.
"""

from __future__ import annotations

from prove_gym.registry import Registry
from prove_gym.reward.common import Calls, PreparedTask, as_records, prepare, scored_calls
from prove_gym.task import Task
from prove_gym.workspace import CallRecord


def call_level(prepared: PreparedTask, call: CallRecord) -> int:
    """How many validity levels (0-3) one call reaches."""
    check = prepared.offered.get(call.name)
    if check is None:
        return 0
    if not check.ok(call.arguments):
        return 1
    return 3 if call.result.ok else 2


def validity_levels(task: Task, calls: Calls, *, registry: Registry | None = None) -> list[int]:
    """The validity level (0-3) of every call, in order.

    >>> from prove_gym import Task
    >>> task = Task.from_json({"id": "demo", "servers": ["calendar"], "turns": [
    ...     {"user": "Show me event evt_0001.", "steps": [
    ...         {"id": "s1", "name": "get_event", "arguments": {"event_id": "evt_0001"}}]}]})
    >>> validity_levels(task, [
    ...     {"name": "get_event", "arguments": {"event_id": "evt_0001"}, "result": {"status": "ok"}},
    ...     {"name": "get_event", "arguments": {"event_id": "evt_9999"},
    ...      "result": {"status": "error", "error": {"kind": "not_found", "message": "No event"}}},
    ...     {"name": "get_event", "arguments": {"id": 1}, "result": {"status": "error"}},
    ...     {"name": "fly_to_mars", "arguments": {}, "result": {"status": "error"}}])
    [3, 2, 1, 0]
    """
    prepared = prepare(task, registry)
    return [call_level(prepared, c) for c in as_records(calls)]


def validity_from_levels(levels: list[int]) -> float:
    """``R_val = Σ level / (3·N)``, 0 for no calls."""
    return sum(levels) / (3 * len(levels)) if levels else 0.0


def validity(task: Task, calls: Calls, *, registry: Registry | None = None) -> float:
    """R_val: the mean over calls of (levels reached)/3, in [0, 1]; 0 when there are no calls.

    A call that repeats one of the gold's failed attempts is not scored
    (:func:`~prove_gym.reward.common.excused_calls`).

    >>> from prove_gym import Task
    >>> task = Task.from_json({"id": "demo", "servers": ["calendar"], "turns": [
    ...     {"user": "Show me event evt_0001.", "steps": [
    ...         {"id": "s1", "name": "get_event", "arguments": {"event_id": "evt_0001"}}]}]})
    >>> round(validity(task, [{"name": "get_event", "arguments": {}, "result": {"status": "error"}}]), 2)
    0.33
    >>> round(validity(task, [{"name": "get_event", "arguments": {"event_id": "evt_9"},
    ...                        "result": {"status": "error"}}]), 2)
    0.67
    """
    prepared = prepare(task, registry)
    return validity_from_levels([call_level(prepared, c) for c in scored_calls(prepared, calls)])
