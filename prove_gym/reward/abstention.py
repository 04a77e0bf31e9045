"""When the right move is *no call*: the abstention rule and the clarification rule.

**Abstention** (the paper's rule): a task with no gold calls at all (every turn
is ``abstain``/``clarify``, or asks for nothing a tool does) scores 1.0 if the
model makes no call and 0 otherwise; this replaces the weighted sum. Any call
counts, even an unparseable one.

**Clarification** (not in the paper; ours): in a task that *has* gold calls, a
turn of kind ``clarify`` (a required value is missing: ask for it) or
``abstain`` (no offered tool can help: say so) is answered correctly by a
message without a call. Calls made during such a turn (``CallRecord.turn``)

- cannot match gold steps (a guessed call never earns coverage or argument
  credit, even for a step of a later turn), but still count for validity,
  tool name and the efficiency budget, as every call does;
- make the penalty ``R_clarify = -|{no-call turns with a call}| / |{no-call turns}|``,
  in [-1, 0], the ``clarification`` component (weight 0.5). It is 0 when every
  such turn was answered without a call, or when the task has none.

Turns of kind ``normal`` without gold steps (a "thanks") are not judged.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from prove_gym.reward.common import NO_CALL_KINDS, Calls, as_records
from prove_gym.task import Task
from prove_gym.workspace import CallRecord


def abstention(task: Task, calls: Calls) -> float | None:
    """1.0 if a task without gold calls got no call, 0.0 if it got one; ``None`` for other tasks.

    >>> from prove_gym import Task
    >>> task = Task.from_json({"id": "fly", "servers": ["calendar"], "turns": [
    ...     {"user": "Book me a flight to Berlin.", "kind": "abstain"}]})
    >>> abstention(task, []), abstention(task, [{"name": "list_calendars", "arguments": {}}])
    (1.0, 0.0)
    """
    if task.scored_steps:
        return None
    return 0.0 if as_records(calls) else 1.0


def no_call_turns(task: Task) -> list[int]:
    """Indices of the turns whose right move is no call (kind ``clarify`` or ``abstain``)."""
    return [i for i, t in enumerate(task.turns) if t.kind in NO_CALL_KINDS]


def clarification_penalty(turns: Collection[int], calls: Sequence[CallRecord]) -> float:
    """``-(share of the no-call turns in which a call was made)``; 0.0 when there are none."""
    if not turns:
        return 0.0
    called = {c.turn for c in calls}
    return -sum(1 for t in turns if t in called) / len(turns) + 0.0


def clarification(task: Task, calls: Calls) -> float:
    """R_clarify in [-1, 0]: minus the share of clarify/abstain turns answered with a call.

    >>> from prove_gym import Task
    >>> task = Task.from_json({"id": "remind", "servers": ["calendar"], "turns": [
    ...     {"user": "Remind me before my dentist appointment.", "kind": "clarify",
    ...      "missing": ["minutes_before"]},
    ...     {"user": "One hour before.", "steps": [{"id": "s1", "name": "add_reminder",
    ...      "arguments": {"event_id": "evt_0102", "minutes_before": 60}}]}]})
    >>> guess = {"name": "add_reminder", "arguments": {"event_id": "evt_0102", "minutes_before": 15},
    ...          "turn": 0}
    >>> clarification(task, []), clarification(task, [guess])
    (0.0, -1.0)
    """
    return clarification_penalty(no_call_turns(task), as_records(calls))
