"""Credit per user turn: each turn scored against its own gold when it closes, off by default."""

from __future__ import annotations

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import prove_gym
from prove_gym.episode import Episode
from prove_gym.eval import OraclePolicy
from prove_gym.formats import HermesFormat

TASKS = {t.id: t for t in prove_gym.get_registry().tasks("calendar")}


HERMES = HermesFormat()


def call(name: str, **arguments: object) -> str:
    """One call as the Hermes format writes it (what a model sends)."""
    return HERMES.render_calls([{"name": name, "arguments": arguments}])


def play_oracle(episode: Episode) -> list[float | None]:
    agent = OraclePolicy().start(episode)
    closed = []
    while not episode.done:
        closed.append(episode.step(agent.act(episode)).turn_reward)
    return closed


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_the_gold_earns_each_turns_maximum_and_the_same_total(task_id: str) -> None:
    task = TASKS[task_id]
    with Episode(task, turn_rewards=True) as episode:
        closed = play_oracle(episode)
        turns = episode.turn_breakdowns
        assert len(turns) == len(task.turns)
        assert [r for r in closed if r is not None] == [b.total for b in turns]
        assert all(b.total == b.max_total for b in turns)
        assert episode.breakdown is not None
    with Episode(task) as plain:
        play_oracle(plain)
        assert plain.breakdown is not None
        assert plain.breakdown.total == episode.breakdown.total
        assert plain.turn_breakdowns == []


def test_a_wrong_first_turn_costs_that_turn_and_the_next_turns_state() -> None:
    """calendar-003: move the yoga class, then make it weekly. Moving it to the wrong hour
    loses turn 0's state and arguments; turn 1, done right, still ends off the gold's state."""
    task = TASKS["calendar-003"]
    [move] = task.turns[0].steps[-1:]
    [repeat] = task.turns[1].steps
    wrong = {**move.arguments, "start": "2026-03-30T06:30"}
    with Episode(task, turn_rewards=True) as episode:
        for step in task.turns[0].steps[:-1]:
            episode.step(call(step.name, **step.arguments))
        episode.step(call(move.name, **wrong))
        first = episode.step("Moved.").turn_breakdown
        episode.step(call(repeat.name, **repeat.arguments))
        second = episode.step("Done.").turn_breakdown
    assert first is not None and second is not None
    assert first.components["state"] == 0.0 and first.total < first.max_total
    assert second.components["coverage"] == 1.0 and second.components["arguments"] == 1.0
    assert second.components["state"] == 0.0  # the earlier mistake is still in the state


def test_a_clarify_turn_pays_for_asking_and_a_guess_is_not_paid() -> None:
    task = TASKS["calendar-004"]  # turn 0 misses a value: the right move is to ask
    assert task.turns[0].kind == "clarify"
    with Episode(task, turn_rewards=True) as asked:
        assert asked.step("How long before it should I remind you?").turn_reward == 1.0
    guess = task.turns[1].steps
    with Episode(task, turn_rewards=True) as guessed:
        for step in guess:
            guessed.step(call(step.name, **step.arguments))
        assert guessed.step("Done.").turn_reward == 0.0


def test_the_env_reports_turn_rewards_only_when_asked() -> None:
    task = TASKS["calendar-003"]
    quiet = gymnasium.make("prove/calendar-v0")
    quiet.reset(options={"task": task})
    *_, info = quiet.step("Nothing.")
    assert "turn_reward" not in info
    env = gymnasium.make("prove/calendar-v0", turn_rewards=True)
    env.reset(options={"task": task})
    step = task.turns[0].steps[0]
    *_, info = env.step(call(step.name, **step.arguments))
    assert info["turn_reward"] is None  # a message with calls closes no turn
    _obs, reward, _term, _trunc, info = env.step("Done.")
    assert info["turn_reward"] == info["turn_breakdown"].total and reward == 0.0


@settings(max_examples=30, deadline=None)
@given(
    task_id=st.sampled_from(sorted(TASKS)),
    moves=st.lists(
        st.sampled_from(
            [
                call("list_calendars"),
                call("search_events", query="yoga"),
                call("delete_event", event_id="evt_0001"),
                call("add_reminder", event_id="evt_0005", minutes_before=60),
                "Done.",
            ]
        ),
        max_size=8,
    ),
)
def test_turn_rewards_never_change_the_episodes_reward(task_id: str, moves: list[str]) -> None:
    task = TASKS[task_id]
    totals = []
    for turn_rewards in (False, True):
        with Episode(task, turn_rewards=turn_rewards) as episode:
            for move in moves:
                if episode.done:
                    break
                episode.step(move)
            totals.append(episode.end().total)
            if turn_rewards:  # every turn reached is scored, once, in order
                assert len(episode.turn_breakdowns) == min(episode.user_turn + 1, len(task.turns))
    assert totals[0] == totals[1]
