"""Credit per user turn (beyond the paper): potential-based, so the turn rewards of an episode
sum to its reward.

The PROVE reward is paid once, at the end. A turn reward is paid when a user turn closes, as
the change of a *potential*: turn ``k`` of a ``K``-turn task pays ``Φ(k) - Φ(k-1)``
(``Φ(-1) = 0``), and on the step that ends the episode ``Φ`` is the episode's reward. So the
turn rewards telescope: they sum to the episode's reward exactly, whatever the model did and
wherever a cap ended the episode. A return summed over turns is the episode's return, and
this is potential-based shaping (Ng et al. 1999), which keeps the optimal policies; what it
adds is *when* the credit comes, and for which turn.

``Φ(k)`` reads the conversation as it stands when turn ``k`` closes, in two parts:

- every component but ``state``: the *completion*, the conversation's calls so far followed
  by the gold replay's calls of the later turns, scored as an episode (so a turn pays what
  its own calls add or take from the episode's total, and a read it leaves out costs it that
  read's weight in the episode), less the later turns' equal shares of what the gold scores;
- ``state``: ``(k + 1) / K`` of its weight when the state at the end of turn ``k`` is the gold
  replay's at the end of that turn, none otherwise.

So a turn done right after turns done right is paid an equal share of the gold's total (``1 /
K`` of it); a turn that leaves a mistake costs what the mistake costs the episode, and one
that breaks a state the earlier turns were paid for pays that back; every later turn that
leaves the mistake in the state is paid its share without the state's; a turn that repairs it
is paid the state credit back. A single-turn task's turn reward is the episode's reward.

With a normalising config the same is computed on the raw scale and mapped to [0, 1] as the
total is; a task without gold calls (only ask or abstain turns) has no state term to split
and takes its whole completion. The gold replay is run once per task and shared by every
episode of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from prove_gym.registry import Registry, get_registry
from prove_gym.reward.common import PreparedTask, prepare
from prove_gym.reward.config import RewardConfig
from prove_gym.reward.score import RewardBreakdown, score
from prove_gym.reward.state import prepared_gold_records, prepared_gold_turns
from prove_gym.task import Task
from prove_gym.workspace import CallRecord

__all__ = ["TurnCredit", "gold_turns", "turn_credit", "turn_rewards"]

STATE = "state"


@dataclass(frozen=True)
class TurnCredit:
    """What a closed user turn is paid, and why.

    Attributes:
        turn: Index of the user turn that closed.
        reward: What it pays: ``potential`` less the previous turn's.
        potential: ``Φ(turn)``, in the episode's units (the episode's reward for the turn
            that ended the episode).
        state_hash: The state hash when the turn closed.
        state_matches: Whether it was the gold replay's at the end of that turn.
        completion: The score behind the potential: the calls so far, then the gold's calls
            of the later turns, scored without the state term (the episode's own breakdown
            for the turn that ended the episode).
    """

    turn: int
    reward: float
    potential: float
    state_hash: str
    state_matches: bool
    completion: RewardBreakdown

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "turn": self.turn,
            "reward": self.reward,
            "potential": self.potential,
            "state_hash": self.state_hash,
            "state_matches": self.state_matches,
            "completion": self.completion.to_dict(),
        }


def gold_turns(task: Task, registry: Registry | None = None) -> tuple[tuple[str, tuple], ...]:
    """For each turn: the gold replay's state hash at its end, and what each scored gold step
    of the turn answered (``None`` for a write or a failed call). Replayed once per task, the
    same replay the episode's state and answers terms read."""
    registry = registry or get_registry()
    return prepared_gold_turns(prepare(task, registry), registry)


def turn_credit(
    task: Task,
    index: int,
    calls: Sequence[CallRecord],
    state_hash: str,
    previous: float = 0.0,
    config: RewardConfig | None = None,
    registry: Registry | None = None,
    *,
    episode: RewardBreakdown | None = None,
) -> TurnCredit:
    """Pay turn ``index`` as it closes: ``Φ(index) - previous``.

    Args:
        task: The whole task.
        index: The turn that closed.
        calls: The episode's calls so far; those of later turns are left out.
        state_hash: The episode's state hash when the turn closed.
        previous: ``Φ(index - 1)``, the potential of the turn closed before (0.0 for the first).
        config: The episode's reward config (default: the validated default).
        registry: Where the task's servers are looked up.
        episode: The episode's reward, when the episode ended as this turn closed: it is the
            potential then, so the turn rewards sum to it.
    """
    registry = registry or get_registry()
    cfg = config or RewardConfig()
    gold = gold_turns(task, registry)
    matches = state_hash == gold[index][0]
    if episode is not None:
        potential, completion = episode.total, episode
    else:
        potential, completion = _potential(task, index, calls, state_hash, matches, cfg, registry)
    return TurnCredit(
        index, _tidy(potential - previous), potential, state_hash, matches, completion
    )


def turn_rewards(
    task: Task,
    calls: Sequence[CallRecord],
    hashes: Sequence[str],
    config: RewardConfig | None = None,
    registry: Registry | None = None,
    *,
    episode: RewardBreakdown | None = None,
) -> list[TurnCredit]:
    """Every closed turn of a trajectory scored offline, as an episode pays them.

    Args:
        task: The whole task.
        calls: The trajectory's calls, each with its turn.
        hashes: The state hash at the close of each turn closed, in order (turns
            ``0..len(hashes)-1``).
        config: The episode's reward config.
        registry: Where the task's servers are looked up.
        episode: The episode's reward, when the episode ended as the last of them closed
            (scored when the last one is the task's last turn, as it always ends there).
    """
    registry = registry or get_registry()
    if episode is None and len(hashes) == len(task.turns):
        episode = score(
            task, list(calls), config=config, final_state_hash=hashes[-1], registry=registry
        )
    out: list[TurnCredit] = []
    for k, state in enumerate(hashes):
        last = episode if k == len(hashes) - 1 else None
        before = out[-1].potential if out else 0.0
        out.append(turn_credit(task, k, calls, state, before, config, registry, episode=last))
    return out


def _potential(
    task: Task,
    index: int,
    calls: Sequence[CallRecord],
    state_hash: str,
    matches: bool,
    config: RewardConfig,
    registry: Registry,
) -> tuple[float, RewardBreakdown]:
    """``Φ(index)`` for a turn that did not end the episode, and its completion's score."""
    turns = len(task.turns)
    share = (index + 1) / turns
    gold = gold_turns(task, registry)
    prepared = prepare(task, registry)
    replay = prepared_gold_records(prepared, registry)
    completion = [c for c in calls if c.turn <= index] + [r for r in replay if r.turn > index]
    weight = config.weights.get(STATE, 0.0)
    if not prepared.steps or not weight:
        # nothing to split: the whole completion, the state as it stands
        final = gold[-1][0] if matches else state_hash
        whole = score(task, completion, config=config, final_state_hash=final, registry=registry)
        top = _gold_total(task, prepared, replay, gold[-1][0], config, registry)
        return _tidy(whole.total - (1 - share) * top), whole
    raw = dataclasses.replace(config, normalise=False).with_weights(**{STATE: 0.0})
    rest = score(task, completion, config=raw, final_state_hash=gold[-1][0], registry=registry)
    top = _gold_total(task, prepared, replay, gold[-1][0], raw, registry)
    potential = rest.total - (1 - share) * top + (share * weight if matches else 0.0)
    if config.normalise:
        low, high = _raw_bounds(config, rest)
        potential = (potential - share * low) / (high - low) if high > low else 0.0
    return _tidy(potential), rest


def _gold_total(
    task: Task,
    prepared: PreparedTask,
    replay: Sequence[CallRecord],
    final: str,
    config: RewardConfig,
    registry: Registry,
) -> float:
    """What the gold replay itself scores under ``config``: the same for every turn of every
    episode of the task, so computed once per config and kept with the prepared task."""
    totals: dict[RewardConfig, float] = prepared.memo.setdefault("gold_totals", {})
    if config not in totals:
        totals[config] = score(
            task, replay, config=config, final_state_hash=final, registry=registry
        ).total
    return totals[config]


def _raw_bounds(config: RewardConfig, breakdown: RewardBreakdown) -> tuple[float, float]:
    """The raw total's lowest and highest values under ``config`` for the task ``breakdown``
    scored (the components defined for it), as ``score`` normalises them."""
    low = high = 0.0
    for c in config.components:
        defined = c.name == STATE or breakdown.components.get(c.name) is not None
        if defined:
            lo, hi = c.bounds(config)
            low, high = low + c.weight * lo, high + c.weight * hi
    return low, high


def _tidy(value: float) -> float:
    """Round away float noise, as the episode's total is."""
    return round(value, 12) + 0.0
