"""The reward as the env pays it: scripted policies on the calendar's hand-written tasks."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import gymnasium
import pytest

from prove_gym import Task
from prove_gym.episode import Episode
from prove_gym.eval import OraclePolicy, RandomPolicy
from prove_gym.reward import RewardConfig

Calls = list[dict[str, Any]]


class ScriptedPolicy:
    """Plays each normal turn's gold calls after ``transform``, in one message, then answers."""

    name = "scripted"

    def __init__(self, task: Task, transform: Callable[[Calls], Calls]) -> None:
        self.task, self.transform, self.called = task, transform, set()

    def start(self, episode: Episode) -> ScriptedPolicy:
        return self

    def act(self, episode: Episode) -> str:
        turn = episode.user_turn
        spec = self.task.turns[turn]
        if spec.kind != "normal" or not spec.steps or turn in self.called:
            return "Done."
        self.called.add(turn)
        calls = self.transform(
            [{"name": s.name, "arguments": dict(s.arguments)} for s in spec.steps]
        )
        return episode.format.render_calls(calls) if calls else "Done."


def repeat_first_call() -> Callable[[Calls], Calls]:
    """A transform that makes the episode's first gold call 10 times (once per episode)."""
    done = False

    def transform(calls: Calls) -> Calls:
        nonlocal done
        first, done = not done, True
        return [calls[0]] * 10 + calls[1:] if first else calls

    return transform


def wrong_ids(calls: Calls) -> Calls:
    def wrong(v: Any) -> Any:
        return re.sub(r"^(evt|cal)_\d+$", r"\1_9999", v) if isinstance(v, str) else v

    return [
        {"name": c["name"], "arguments": {k: wrong(v) for k, v in c["arguments"].items()}}
        for c in calls
    ]


def play(
    env: gymnasium.Env, task: Task, policy: Any, **options: Any
) -> tuple[float, dict[str, Any]]:
    env.reset(options={"task": task, **options})
    agent = policy.start(env.unwrapped.episode)
    done = False
    while not done:
        _, reward, term, trunc, info = env.step(agent.act(env.unwrapped.episode))
        done = term or trunc
    return reward, info["reward_breakdown"].to_dict()


@pytest.fixture(scope="module")
def env() -> gymnasium.Env:
    env = gymnasium.make("prove/calendar-v0")
    yield env
    env.close()


@pytest.fixture(scope="module")
def paper_env() -> gymnasium.Env:
    env = gymnasium.make("prove/calendar-v0", reward="paper")
    yield env
    env.close()


MAX = RewardConfig().max_raw


def normal_tasks(tasks: dict[str, Task]) -> list[Task]:
    return [t for t in tasks.values() if t.steps]


def test_the_oracle_scores_the_maximum_on_every_calendar_task(env, calendar_tasks) -> None:
    assert len(calendar_tasks) >= 5
    for task in calendar_tasks.values():
        reward, b = play(env, task, OraclePolicy())
        assert reward == b["total"] == b["max_total"] == (MAX if task.steps else 1.0), task.id
        assert b["components"]["state"] == 1.0


def test_the_breakdown_in_info_explains_the_reward(env, calendar_tasks) -> None:
    task = calendar_tasks["calendar-002"]
    _, b = play(env, task, OraclePolicy())
    assert list(b["components"]) == list(RewardConfig().breakdown_keys)
    assert (b["budget"], b["n_calls"], b["n_gold"]) == (5, 3, 3)
    assert b["matched"] == {"s1": 0, "s2": 1, "s3": 2} and b["counted"] == ["s1", "s2", "s3"]
    assert b["weights"]["coverage"] == 0.5 and b["final_state_hash"] == task.final_state_hash


def test_repeating_a_call_ten_times_is_penalised(env, calendar_tasks) -> None:
    for task in normal_tasks(calendar_tasks):
        reward, b = play(env, task, ScriptedPolicy(task, repeat_first_call()))
        assert b["n_calls"] == len(task.steps) + 9
        assert b["components"]["efficiency"] < 0 and reward < MAX, task.id
    # calendar-001: 11 calls against a budget of 3 hit the floor, R_eff = -1
    reward, b = play(
        env,
        calendar_tasks["calendar-001"],
        ScriptedPolicy(calendar_tasks["calendar-001"], repeat_first_call()),
    )
    assert b["components"]["efficiency"] == -1.0
    assert reward == pytest.approx(MAX - 0.15)  # a repeated read: nothing else is lost


def test_under_the_paper_right_names_with_wrong_ids_score_between_the_oracle_and_a_repeater(
    paper_env, calendar_tasks
) -> None:
    env = paper_env
    task = calendar_tasks["calendar-001"]
    wrong_reward, b = play(env, task, ScriptedPolicy(task, wrong_ids))
    repeat_reward, _ = play(env, task, ScriptedPolicy(task, repeat_first_call()))
    oracle_reward, _ = play(env, task, OraclePolicy())
    # search runs (3 levels), add_invitee to evt_9999 is not found (2); its event_id is wrong
    assert b["call_validity"] == [3, 2]
    expected = 0.5 * 5 / 6 + 0.5 * 1.0 + 0.2 * 1.0 + 0.1 * (1 + 0.5) / 2
    assert wrong_reward == pytest.approx(expected)
    assert repeat_reward < wrong_reward < oracle_reward
    for task in normal_tasks(calendar_tasks):
        wrong, b = play(env, task, ScriptedPolicy(task, wrong_ids))
        floor, _ = play(env, task, RandomPolicy(seed=1))
        assert floor < wrong < 1.3, task.id
        assert b["components"]["coverage"] == 1.0 and b["components"]["arguments"] < 1.0


def test_by_default_a_wrong_id_matches_no_gold_step_and_costs_the_state(
    env, calendar_tasks
) -> None:
    for task in normal_tasks(calendar_tasks):
        wrong, b = play(env, task, ScriptedPolicy(task, wrong_ids))
        oracle, _ = play(env, task, OraclePolicy())
        assert b["components"]["coverage"] < 1.0 and wrong < oracle - 0.5 * 0.5, task.id


def test_state_verification_is_one_for_the_oracle_and_zero_when_a_write_is_skipped(
    env, calendar_tasks
) -> None:
    registry_server = env.unwrapped.server
    for task in normal_tasks(calendar_tasks):
        writes = [i for i, s in enumerate(task.steps) if registry_server.tools[s.name].writes]
        last_write = task.steps[writes[-1]]

        def skip(calls: Calls, name: str = last_write.name) -> Calls:
            return [c for c in calls if c["name"] != name]

        _, oracle = play(env, task, OraclePolicy())
        _, skipped = play(env, task, ScriptedPolicy(task, skip))
        assert oracle["components"]["state"] == 1.0, task.id
        assert skipped["components"]["state"] == 0.0, task.id


def test_a_reseeded_episode_is_verified_against_its_own_gold_replay(env, calendar_tasks) -> None:
    task = calendar_tasks["calendar-001"]
    _, b = play(env, task, OraclePolicy(), state_seed=8)
    assert env.unwrapped.task.seed == 8 and env.unwrapped.task.final_state_hash is None
    assert b["gold_state_hash"] != task.final_state_hash
    assert b["components"]["state"] == 1.0


def test_the_env_pays_the_configured_reward() -> None:
    env = gymnasium.make(
        "prove/calendar-v0",
        reward=RewardConfig(normalise=True).with_weights(state=0.5),
    )
    task = next(t for t in env.unwrapped.tasks if t.steps)
    reward, b = play(env, task, OraclePolicy())
    assert reward == 1.0 and b["normalised"] and b["max_total"] == 1.0
    reward, b = play(env, task, ScriptedPolicy(task, wrong_ids))
    assert b["components"]["state"] == 0.0 and 0.0 < reward < 1.0
    env.close()
