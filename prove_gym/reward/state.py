"""State verification R_state (beyond the paper): did the model leave the state the gold leaves?

The gold calls are replayed on a fresh workspace built from the task's seed
(:func:`prove_gym.workspace.gold_turn_replay`) and the canonical state hash (every
server the task touches, rows ordered by primary key, sha256) is compared with
the model's final state: ``R_state = 1[hash(model) = hash(gold)]``. As in
tau2-bench and BFCL, this judges *what happened* rather than which calls were
made: reads are free, a missed or wrong write is not.

``task.final_state_hash`` (set by synthesis) is used when present; otherwise
the gold calls are replayed once per prepared task (the preparation cache of
:func:`~prove_gym.reward.common.prepare` is keyed by the task's content, so
every episode of one task, copies included, shares that replay). R_state is
reported in every breakdown it can be computed for; its weight is 0 by
default, so the paper's total is unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from prove_gym.registry import Registry, get_registry
from prove_gym.reward.common import Calls, PreparedTask, as_records, prepare
from prove_gym.task import Task
from prove_gym.workspace import CallRecord, Workspace, gold_turn_replay


def gold_state_hash(task: Task, registry: Registry | None = None) -> str:
    """The state hash after the gold calls: ``task.final_state_hash``, or a cached replay."""
    if task.final_state_hash:
        return task.final_state_hash
    return prepared_gold_hash(prepare(task, registry), registry or get_registry())


def prepared_gold_hash(prepared: PreparedTask, registry: Registry) -> str:
    """:func:`gold_state_hash` for a prepared task: replayed once, then remembered on it."""
    task = prepared.task
    if task.final_state_hash:
        return task.final_state_hash
    if "gold_state_hash" not in prepared.memo:
        prepared_gold_answers(prepared, registry)  # the one gold replay fills both
    return str(prepared.memo["gold_state_hash"])


def prepared_gold_answers(prepared: PreparedTask, registry: Registry) -> tuple[Any, ...]:
    """What each scored gold call answered on the gold replay (``None`` for failed or writing
    calls), by the index of its step in ``prepared.steps`` (failed attempts are replayed, and
    fail, but answer nothing).

    Replayed once per prepared task, like the gold hash; the hash is remembered too.
    """
    if "gold_answers" not in prepared.memo:
        prepared_gold_turns(prepared, registry)
    return tuple(prepared.memo["gold_answers"])


def prepared_gold_turns(
    prepared: PreparedTask, registry: Registry
) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """The gold replay, turn by turn: for each user turn the state hash at its end and what
    each scored gold step of the turn answered (as :func:`prepared_gold_answers`).

    The one replay of a prepared task: it also remembers the gold state hash (the last
    turn's), the answers of every step and the replay's records, which
    :func:`prepared_gold_hash`, :func:`prepared_gold_answers` and
    :func:`prepared_gold_records` return.
    """
    memo = prepared.memo
    if "gold_turns" not in memo:
        with prepared.lock:
            if "gold_turns" not in memo:
                task = prepared.task
                records, hashes = gold_turn_replay(task, registry)
                answers: list[list[str | None]] = [[] for _ in task.turns]
                for r, step in zip(records, task.steps, strict=True):
                    if not step.attempt:
                        answers[r.turn].append(
                            canonical(r.result.content)
                            if r.result.ok and r.name not in prepared.writes
                            else None
                        )
                memo.setdefault("gold_state_hash", hashes[-1])
                memo["gold_records"] = tuple(records)
                memo["gold_answers"] = tuple(a for turn in answers for a in turn)
                memo["gold_turns"] = tuple(zip(hashes, map(tuple, answers), strict=True))
    return tuple(memo["gold_turns"])


def prepared_gold_records(prepared: PreparedTask, registry: Registry) -> tuple[CallRecord, ...]:
    """The gold replay's calls with their live results and user-turn indices (failed attempts
    included), from the one replay of :func:`prepared_gold_turns`."""
    if "gold_records" not in prepared.memo:
        prepared_gold_turns(prepared, registry)
    return tuple(prepared.memo["gold_records"])


def canonical(value: Any) -> str:
    """A JSON value as key-sorted compact text, for comparing answers."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def replay_calls(
    task: Task, calls: Sequence[CallRecord], registry: Registry | None = None
) -> tuple[tuple[CallRecord, ...], str]:
    """``calls`` run in order on a fresh workspace of the task: their live records and the
    final state hash.

    For trajectories scored offline without their final state or their results:
    tools are deterministic, so replaying the calls rebuilds both.
    """
    with Workspace(task, registry or get_registry()) as ws:
        records = tuple(ws.call(call.name, call.arguments, turn=call.turn) for call in calls)
        return records, ws.state_hash()


def state_match(
    task: Task,
    calls: Calls = (),
    *,
    final_state_hash: str | None = None,
    registry: Registry | None = None,
) -> float:
    """R_state in {0, 1}: 1.0 when the model's final state hash equals the gold one.

    Args:
        task: The task.
        calls: The model's calls, replayed when ``final_state_hash`` is not given.
        final_state_hash: The model's final state hash (the env passes it).
        registry: Where the task's servers are looked up.

    >>> from prove_gym import Task
    >>> task = Task.from_json({"id": "cancel", "servers": ["calendar"], "seed": 7, "turns": [
    ...     {"user": "Cancel evt_0001.", "steps": [
    ...         {"id": "s1", "name": "delete_event", "arguments": {"event_id": "evt_0001"}}]}]})
    >>> state_match(task, [{"name": "delete_event", "arguments": {"event_id": "evt_0001"}}])
    1.0
    >>> state_match(task, [{"name": "get_event", "arguments": {"event_id": "evt_0001"}}])
    0.0
    """
    if final_state_hash is None:
        final_state_hash = replay_calls(task, as_records(calls), registry)[1]
    return 1.0 if final_state_hash == gold_state_hash(task, registry) else 0.0
