"""Credit per user turn (beyond the paper): each turn scored against its own gold, when it closes.

The PROVE reward is paid once, at the end. A turn reward is paid when a user turn closes:
the calls of that turn are scored against the gold steps of that turn, with the same
components and weights as the episode (:func:`~prove_gym.reward.score`), where

- *state* compares the episode's state after the turn with the gold replay's state at the
  end of that same turn (every earlier turn's gold applied first), and
- *answers* compares the turn's reads with what the gold replay's reads of that turn
  answered on that state.

A turn whose right move is to ask or to abstain pays the abstention rule, as a task without
gold calls does. The episode's total is unchanged: turn rewards are reported beside it
(``StepOutcome.turn_breakdown``, ``info["turn_reward"]``), for trainers that take credit per
turn. The gold replay is run once per task and shared by every episode of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from prove_gym.registry import Registry, get_registry
from prove_gym.reward.common import prepare
from prove_gym.reward.config import RewardConfig
from prove_gym.reward.score import RewardBreakdown, score
from prove_gym.reward.state import prepared_gold_turns
from prove_gym.task import Task, Turn
from prove_gym.workspace import CallRecord

__all__ = ["gold_turns", "turn_reward", "turn_task"]


def gold_turns(task: Task, registry: Registry | None = None) -> tuple[tuple[str, tuple], ...]:
    """For each turn: the gold replay's state hash at its end, and what each scored gold step
    of the turn answered (``None`` for a write or a failed call). Replayed once per task, the
    same replay the episode's state and answers terms read."""
    registry = registry or get_registry()
    return prepared_gold_turns(prepare(task, registry), registry)


def turn_task(task: Task, index: int, gold_hash: str) -> Task:
    """Turn ``index`` of ``task`` as a task of its own: its gold steps (dependency edges to
    earlier turns dropped: those steps are behind it), its final state the gold's at the end
    of the turn. Built without re-validation (a turn that only gives up is a turn still)."""
    turn = task.turns[index]
    own = {step.id for step in turn.steps}
    steps = [
        step.model_copy(update={"depends_on": [d for d in step.depends_on if d in own]})
        for step in turn.steps
    ]
    only = Turn.model_construct(**{**dict(turn), "steps": steps})
    return task.model_copy(
        update={
            "id": f"{task.id}#turn{index}",
            "turns": [only],
            "final_state_hash": gold_hash,
        }
    )


def turn_reward(
    task: Task,
    index: int,
    calls: Sequence[CallRecord],
    state_hash: str,
    config: RewardConfig | None = None,
    registry: Registry | None = None,
) -> RewardBreakdown:
    """The reward of turn ``index``: its calls (``turn == index``) scored against its gold.

    Args:
        task: The whole task.
        index: The turn that closed.
        calls: The episode's calls; those of other turns are left out.
        state_hash: The episode's state hash when the turn closed.
        config: The episode's reward config (default: the validated default).
        registry: Where the task's servers are looked up.
    """
    registry = registry or get_registry()
    gold_hash, answers = gold_turns(task, registry)[index]
    single = turn_task(task, index, gold_hash)
    prepared = prepare(single, registry)
    prepared.memo.setdefault("gold_state_hash", gold_hash)
    prepared.memo.setdefault("gold_answers", answers)
    own = [CallRecord(c.name, c.arguments, c.result, 0, c.server) for c in calls if c.turn == index]
    return score(single, own, config=config, final_state_hash=state_hash, registry=registry)
