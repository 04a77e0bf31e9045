"""What a reward component reads about one trajectory: :class:`ScoringContext`.

:func:`~prove_gym.reward.score` builds one per call and hands it to every component
(:mod:`prove_gym.reward.components`); whatever a component derives from it (the
alignment of calls to gold steps, a replay of the calls, the gold state) is computed on
first use, once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from prove_gym.registry import Registry, get_registry
from prove_gym.reward.common import Calls, PreparedTask, as_records, excused_calls, prepare
from prove_gym.reward.config import RewardConfig
from prove_gym.reward.coverage import Alignment, align_prepared
from prove_gym.reward.efficiency import budget
from prove_gym.reward.state import prepared_gold_hash, replay_calls
from prove_gym.reward.validity import call_level
from prove_gym.task import Task
from prove_gym.workspace import CallRecord

__all__ = ["ScoringContext"]


class _Lazy:
    """``cached_property`` without the per-instance lock of Python 3.11's, which costs more
    than most values here; a context is only ever read by the thread scoring it."""

    def __init__(self, compute: Callable[[Any], Any]) -> None:
        self.compute = compute
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.compute(obj)
        return value


_lazy = cached_property if TYPE_CHECKING else _Lazy


@dataclass(frozen=True, eq=False)
class ScoringContext:
    """What a component reads about one trajectory; everything derived is computed on first use, once.

    :func:`~prove_gym.reward.score` builds one per call and hands it to every
    component, so the alignment or a gold replay is paid at most once however
    many components read it, and not at all when none does.

    Attributes:
        task: The task.
        prepared: The task compiled for scoring (:class:`~prove_gym.reward.common.PreparedTask`:
            gold steps with key sets and prerequisite masks, offered schema checks, ``gold_names``,
            ``no_call_turns``).
        calls: The model's calls that are scored, in order across all turns: every call
            but those that repeat one of the gold's failed attempts (``excused``).
        config: The reward configuration being applied.
        registry: Where the task's servers are looked up.
        given_final_state_hash: The model's final state hash as the caller passed it (the
            env always does), or ``None``.
        given_state_match: The caller's own final-state comparison (offline scoring of
            another environment's rollouts): a bool, or a function computing it on demand.
        made: Every call the model made, excused ones included.
        positions: The index in ``made`` of each scored call.
        excused: Indices in ``made`` of the calls that repeat a failed attempt the gold
            shows before recovering (:func:`~prove_gym.reward.common.excused_calls`).

    >>> from prove_gym import Task
    >>> task = Task.from_json({"id": "demo", "servers": ["calendar"], "turns": [{"user": "...",
    ...     "steps": [{"id": "s1", "name": "get_event", "arguments": {"event_id": "evt_0001"}}]}]})
    >>> ctx = ScoringContext.of(task, [{"name": "get_event", "arguments": {"event_id": "evt_0002"}}])
    >>> ctx.n_calls, ctx.n_gold, ctx.budget, ctx.levels, ctx.alignment.matched  # the wrong event
    (1, 1, 2, (3,), {})
    """

    task: Task
    prepared: PreparedTask
    calls: tuple[CallRecord, ...]
    config: RewardConfig
    registry: Registry
    given_final_state_hash: str | None = None
    given_state_match: bool | Callable[[], bool] | None = None
    made: tuple[CallRecord, ...] = ()
    positions: tuple[int, ...] = ()
    excused: frozenset[int] = frozenset()

    @classmethod
    def of(
        cls,
        task: Task,
        calls: Calls,
        *,
        config: RewardConfig | None = None,
        final_state_hash: str | None = None,
        state_match: bool | Callable[[], bool] | None = None,
        registry: Registry | None = None,
    ) -> ScoringContext:
        """The context of one trajectory (what :func:`~prove_gym.reward.score` builds).

        Args:
            task: The task.
            calls: :class:`~prove_gym.workspace.CallRecord` objects or their dicts.
            config: The configuration (the paper's by default).
            final_state_hash: The model's final state hash, if known.
            state_match: The caller's own final-state comparison, if any.
            registry: Where the task's servers are looked up (the process-wide one by default).
        """
        if config is None:
            config = RewardConfig()
        registry = registry or get_registry()
        prepared = prepare(task, registry)
        made = tuple(as_records(calls))
        excused = excused_calls(prepared, made)
        positions = tuple(i for i in range(len(made)) if i not in excused)
        return cls(
            task=task,
            prepared=prepared,
            calls=tuple(made[i] for i in positions) if excused else made,
            config=config,
            registry=registry,
            given_final_state_hash=final_state_hash,
            given_state_match=state_match,
            made=made,
            positions=positions,
            excused=excused,
        )

    @_lazy
    def n_calls(self) -> int:
        """N: how many calls are scored (failed and unparseable ones included; excused ones not)."""
        return len(self.calls)

    @_lazy
    def n_gold(self) -> int:
        """n_gt: how many gold calls the task has (parallel ones included)."""
        return self.prepared.n_gt

    @_lazy
    def budget(self) -> int:
        """The call budget ``B = n_gt + ceil(beta·n_gt)`` (0 for a task without gold calls)."""
        return budget(self.n_gold, self.config.beta)

    @_lazy
    def levels(self) -> tuple[int, ...]:
        """The validity level (0-3) of every call (see :mod:`~prove_gym.reward.validity`)."""
        return tuple(call_level(self.prepared, c) for c in self.calls)

    @_lazy
    def alignment(self) -> Alignment:
        """The best matching of calls to gold steps (see :mod:`~prove_gym.reward.coverage`)."""
        return align_prepared(self.prepared, self.calls, self.config.rules)

    @_lazy
    def state_matches(self) -> bool | None:
        """Whether the model's final state equals the gold one; ``None`` when it cannot be known.

        The caller's ``state_match`` wins; else the hashes are compared (the final one
        given, or the calls replayed). An offline task (``task.tool_schemas``) has no
        server to replay on, so without ``state_match`` it is ``None``.
        """
        given = self.given_state_match
        if given is not None:
            return bool(given() if callable(given) else given)
        if self.prepared.offline and self.given_final_state_hash is None:
            return None
        if self.prepared.offline and not self.task.final_state_hash:
            return None
        return self.final_state_hash == self.gold_state_hash

    @_lazy
    def final_state_hash(self) -> str:
        """The model's final state hash: the given one, else the calls replayed on a fresh workspace."""
        if self.given_final_state_hash is not None:
            return self.given_final_state_hash
        return self.replayed[1]

    @_lazy
    def replayed(self) -> tuple[tuple[CallRecord, ...], str]:
        """The calls run again on a fresh workspace: their live records and the final hash.

        Only for what the caller did not give: the final state (no ``final_state_hash``)
        or the results' content (calls given as dicts without it).
        """
        return replay_calls(self.task, self.calls, self.registry)

    @_lazy
    def gold_state_hash(self) -> str:
        """The state hash after the gold calls: ``task.final_state_hash``, else one replay per task."""
        return prepared_gold_hash(self.prepared, self.registry)
