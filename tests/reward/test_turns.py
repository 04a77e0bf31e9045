"""Credit per user turn: potential-based turn rewards that sum to the episode's reward, off by
default."""

from __future__ import annotations

import dataclasses

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import prove_gym
from prove_gym.episode import Episode, EpisodeCaps
from prove_gym.eval import OraclePolicy
from prove_gym.formats import HermesFormat
from prove_gym.reward import RewardConfig
from prove_gym.reward.turns import turn_rewards
from prove_gym.task import Task

REGISTRY = prove_gym.get_registry()
TASKS = {t.id: t for t in REGISTRY.tasks("calendar")}
# multi-turn tasks of three servers, for the random trajectories
MIXED = [
    t
    for server in ("calendar", "banking", "crm")
    for t in REGISTRY.tasks(server)[:12]
    if len(t.turns) > 1
]

HERMES = HermesFormat()
CONFIGS = {
    "default": RewardConfig(),
    "normalised": dataclasses.replace(RewardConfig(), normalise=True),
    "paper": RewardConfig.preset("paper"),  # no state term: the whole completion
}


def call(tool: str, /, **arguments: object) -> str:
    """One call as the Hermes format writes it (what a model sends)."""
    return HERMES.render_calls([{"name": tool, "arguments": arguments}])


def share(task: Task) -> float:
    """A turn's equal share of what the gold scores."""
    with Episode(task) as episode:
        play_oracle(episode)
        assert episode.breakdown is not None
        return episode.breakdown.total / len(task.turns)


def play_oracle(episode: Episode) -> list[float | None]:
    agent = OraclePolicy().start(episode)
    closed = []
    while not episode.done:
        closed.append(episode.step(agent.act(episode)).turn_reward)
    return closed


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_the_gold_earns_each_turns_share_and_the_same_total(task_id: str) -> None:
    task = TASKS[task_id]
    with Episode(task, turn_rewards=True) as episode:
        closed = play_oracle(episode)
        credits = episode.turn_credits
        assert [r for r in closed if r is not None] == [c.reward for c in credits]
        assert episode.breakdown is not None
        assert episode.breakdown.total == episode.breakdown.max_total
        each = episode.breakdown.total / len(task.turns)
        assert [c.reward for c in credits] == pytest.approx([each] * len(task.turns))
        assert all(c.state_matches for c in credits)
        assert credits[-1].completion is episode.breakdown
    with Episode(task) as plain:
        play_oracle(plain)
        assert plain.breakdown is not None
        assert plain.breakdown.total == episode.breakdown.total
        assert plain.turn_credits == []


def test_a_wrong_first_turn_is_paid_less_and_its_mistake_stays_in_the_total() -> None:
    """calendar-003: move the yoga class, then make it weekly. Moving it to the wrong hour
    costs turn 0 its state; turn 1, done right, cannot repair it, and the two turns' rewards
    still add up to the episode's."""
    task = TASKS["calendar-003"]
    each = share(task)
    [move] = task.turns[0].steps[-1:]
    [repeat] = task.turns[1].steps
    wrong = {**move.arguments, "start": "2026-03-30T06:30"}
    with Episode(task, turn_rewards=True) as episode:
        for step in task.turns[0].steps[:-1]:
            episode.step(call(step.name, **step.arguments))
        episode.step(call(move.name, **wrong))
        first = episode.step("Moved.")
        episode.step(call(repeat.name, **repeat.arguments))
        second = episode.step("Done.")
    assert first.turn_credit is not None and second.turn_credit is not None
    assert not first.turn_credit.state_matches
    assert first.turn_credit.reward < each
    assert second.turn_credit.completion is second.breakdown  # the last potential: the episode's
    assert not second.turn_credit.state_matches  # the mistake is still there
    assert first.turn_credit.reward + second.turn_credit.reward == pytest.approx(second.reward)
    assert second.reward < 2 * each


def test_a_turn_that_repairs_an_earlier_mistake_is_paid_back_what_it_cost() -> None:
    """calendar-003 again: a first turn that deletes the wrong event can't be undone by the
    tools, but one that moves the class to the wrong hour can be moved again: the second turn
    repairs it and is paid more than its share, so the sum is the gold's."""
    task = TASKS["calendar-003"]
    each = share(task)
    [move] = task.turns[0].steps[-1:]
    wrong = {**move.arguments, "start": "2026-03-30T06:30"}
    with Episode(task, turn_rewards=True) as episode:
        for step in task.turns[0].steps[:-1]:
            episode.step(call(step.name, **step.arguments))
        episode.step(call(move.name, **wrong))
        first = episode.step("Moved.")
        episode.step(call(move.name, **move.arguments))
        for step in task.turns[1].steps:
            episode.step(call(step.name, **step.arguments))
        second = episode.step("Done.")
    assert second.breakdown is not None and second.breakdown.components["state"] == 1.0
    assert first.turn_reward is not None and first.turn_reward < each
    assert second.turn_reward is not None and second.turn_reward > each
    assert first.turn_reward + second.turn_reward == pytest.approx(second.reward)


def test_a_clarify_turn_pays_for_asking_and_much_less_for_acting_on_a_guess() -> None:
    task = TASKS["calendar-004"]  # turn 0 misses a value: the right move is to ask
    assert task.turns[0].kind == "clarify"
    each = share(task)
    with Episode(task, turn_rewards=True) as asked:
        first = asked.step("How long before it should I remind you?").turn_credit
        assert first is not None and first.reward == pytest.approx(each)
        assert first.completion.components["clarification"] == 0.0
    guess = task.turns[1].steps
    with Episode(task, turn_rewards=True) as guessed:
        for step in guess:
            guessed.step(call(step.name, **step.arguments))
        acted = guessed.step("Done.").turn_credit
        assert acted is not None and not acted.state_matches  # it wrote before being told
        assert acted.completion.components["clarification"] == -1.0
        assert acted.reward < each / 2


def test_a_single_turn_tasks_turn_reward_is_its_episode_reward() -> None:
    task = TASKS["calendar-002"]
    assert len(task.turns) == 1
    with Episode(task, turn_rewards=True) as episode:
        step = task.turns[0].steps[0]
        episode.step(call(step.name, **step.arguments))
        out = episode.step("Done.")
    assert out.turn_credit is not None and out.turn_credit.completion is out.breakdown
    assert out.turn_reward == out.reward


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
    assert info["turn_reward"] is None and info["turn_credit"] is None  # no turn closed
    _obs, reward, _term, _trunc, info = env.step("Done.")
    first = info["turn_credit"]
    assert info["turn_reward"] == first.reward == first.potential and reward == 0.0
    _obs, reward, term, _trunc, info = env.step("Bye.")
    assert term and info["turn_credit"].completion is info["reward_breakdown"]
    assert first.reward + info["turn_reward"] == pytest.approx(reward)


@st.composite
def trajectories(draw: st.DrawFn) -> tuple[Task, list[str], int, str]:
    """A multi-turn task, messages built from its gold calls (right, on the wrong turn,
    with a wrong value, or left out), other calls and plain answers, a user-turn cap and a
    reward config."""
    task = draw(st.sampled_from(MIXED))
    moves: list[str] = []
    pool = [step for turn in task.turns for step in turn.steps]
    for _ in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(["gold", "gold", "spoilt", "other", "answer", "answer"]))
        if kind in ("gold", "spoilt") and pool:
            step = draw(st.sampled_from(pool))
            arguments = dict(step.arguments)
            if kind == "spoilt" and arguments:
                key = draw(st.sampled_from(sorted(arguments)))
                arguments[key] = draw(st.sampled_from(["x_0001", 7, "2026-01-01"]))
            moves.append(call(step.name, **arguments))
        elif kind == "other":
            moves.append(call(draw(st.sampled_from(["list_calendars", "no_such_tool"]))))
        else:
            moves.append("Done.")
    return task, moves, draw(st.integers(1, 5)), draw(st.sampled_from(sorted(CONFIGS)))


@settings(max_examples=60, deadline=None)
@given(case=trajectories())
def test_turn_rewards_sum_to_the_episode_reward_which_they_never_change(
    case: tuple[Task, list[str], int, str],
) -> None:
    task, moves, user_turns, name = case
    caps, config = EpisodeCaps(max_user_turns=user_turns), CONFIGS[name]
    totals = []
    for on in (False, True):
        with Episode(task, turn_rewards=on, caps=caps, reward=config) as episode:
            for move in moves:
                if episode.done:
                    break
                answering = episode.user_turn
                out = episode.step(move)
                # a message closes its turn when it has no call, or when the episode ends
                closes = on and (not out.records or out.done)
                assert (out.turn_reward is not None) == closes
                assert (out.turn_credit is not None) == closes
            if not episode.done:
                answering = episode.user_turn
            breakdown = episode.end()
            totals.append(breakdown.total)
            if on:  # every turn reached is paid, once, in order; together, the episode's reward
                credits = episode.turn_credits
                assert [c.turn for c in credits] == list(range(answering + 1))
                rewards = [c.reward for c in credits]
                assert sum(rewards) == pytest.approx(breakdown.total, abs=1e-9)
                assert credits[-1].completion is breakdown
                # the offline computation (reward-check's) pays the same
                hashes = [c.state_hash for c in credits]
                offline = turn_rewards(task, episode.trajectory, hashes, config, episode=breakdown)
                assert offline == credits
    assert totals[0] == totals[1]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_gold_earns_equal_shares_under_every_config(name: str) -> None:
    task = TASKS["calendar-003"]
    with Episode(task, turn_rewards=True, reward=CONFIGS[name]) as episode:
        play_oracle(episode)
        assert episode.breakdown is not None
        each = episode.breakdown.total / 2
        assert [c.reward for c in episode.turn_credits] == pytest.approx([each, each])
