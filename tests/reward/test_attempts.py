"""A failed attempt the gold shows before recovering (``expect_error``) is played but not scored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prove_gym import Task, TaskError
from prove_gym.reward import RewardConfig, score

# A real vehicle state (seed, size) in which the car moves at 60 km/h: shifting to park
# fails until the speed is 0, and the error message says so.
ATTEMPT = {"id": "s1", "name": "shift_gear", "arguments": {"gear": "park"},
           "expect_error": "precondition_failed"}  # fmt: skip
SLOW = {"id": "s2", "name": "set_speed", "arguments": {"speed_kph": 0}}
PARK = {"id": "s3", "name": "shift_gear", "arguments": {"gear": "park"}, "depends_on": ["s2"]}


def vehicle_task(steps: list[dict[str, Any]]) -> Task:
    return Task.from_json(
        {
            "id": "park",
            "servers": ["vehicle"],
            "seed": 381677778,
            "size": 1,
            "turns": [{"user": "Put the car in park.", "steps": steps}],
        }
    )


RECOVERING = vehicle_task([ATTEMPT, SLOW, PARK])
Run = Callable[..., tuple[list[Any], str]]


def test_the_attempt_fails_as_the_task_says(run_calls: Run) -> None:
    records, _ = run_calls(RECOVERING, [("shift_gear", {"gear": "park"})])
    assert records[0].result.error_kind == "precondition_failed"
    assert "set_speed" in (records[0].result.message or "")


def test_recovering_and_going_straight_both_pay_the_maximum(run_calls: Run) -> None:
    shift, slow = ("shift_gear", {"gear": "park"}), ("set_speed", {"speed_kph": 0})
    recovered, recovered_hash = run_calls(RECOVERING, [shift, slow, shift])
    direct, direct_hash = run_calls(RECOVERING, [slow, shift])
    assert recovered_hash == direct_hash
    a = score(RECOVERING, recovered, final_state_hash=recovered_hash)
    b = score(RECOVERING, direct, final_state_hash=direct_hash)
    assert a.total == b.total == a.max_total
    assert a.components == b.components
    assert a.excused == (0,) and b.excused == ()
    assert a.n_calls == 3 and a.call_validity == (2, 3, 3)
    assert a.matched == {"s2": 1, "s3": 2}  # indices among the calls made, the attempt included
    assert a.n_gold == 2 and a.budget == b.budget


def test_without_the_attempt_in_the_gold_the_failed_call_costs(run_calls: Run) -> None:
    """What pays the recovered trajectory in full is the task's attempt, nothing else."""
    plain = vehicle_task([{**SLOW, "id": "s2"}, PARK])
    shift, slow = ("shift_gear", {"gear": "park"}), ("set_speed", {"speed_kph": 0})
    calls, final = run_calls(plain, [shift, slow, shift])
    b = score(plain, calls, final_state_hash=final)
    assert b.excused == () and b.total < b.max_total
    assert b.components["validity"] < 1.0


def test_only_a_call_that_repeats_the_attempt_is_excused_and_only_once(run_calls: Run) -> None:
    shift, slow = ("shift_gear", {"gear": "park"}), ("set_speed", {"speed_kph": 0})
    twice, final = run_calls(RECOVERING, [shift, shift, slow, shift])
    b = score(RECOVERING, twice, final_state_hash=final)
    assert b.excused == (0,) and b.total < b.max_total
    other, final = run_calls(RECOVERING, [("shift_gear", {"gear": "reverse"}), slow, shift])
    c = score(RECOVERING, other, final_state_hash=final)
    assert not other[0].result.ok and c.excused == () and c.total < c.max_total
    # the same call succeeding (once slowed down) is a surplus write, not an attempt
    late, final = run_calls(RECOVERING, [slow, shift, shift])
    assert late[2].result.ok and score(RECOVERING, late, final_state_hash=final).excused == ()


FAILED = {"status": "error", "error": {"kind": "precondition_failed", "message": "Slow down."}}
POOL = [
    {"name": "set_speed", "arguments": {"speed_kph": 0}},
    {"name": "shift_gear", "arguments": {"gear": "park"}},
    {"name": "shift_gear", "arguments": {"gear": "drive"}},
    {"name": "get_vehicle_status", "arguments": {}},
    {"name": "shift_gear", "arguments": {"gear": "park"}, "result": FAILED, "turn": 1},
    {"name": "shift_gear", "arguments": {"gear": "park"},
     "result": {"status": "error", "error": {"kind": "not_found", "message": "?"}}},
]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(range(len(POOL))), max_size=6),
    st.integers(0, 6),
    st.sampled_from(["paper", "default"]),
)
def test_a_repeated_attempt_anywhere_in_its_turn_changes_nothing(
    picks: list[int], at: int, preset: str
) -> None:
    config = RewardConfig.preset(preset)
    if preset == "default":  # offline dicts: no final state, no results' content to compare
        config = config.without("state", "answers")
    calls = [POOL[i] for i in picks]
    attempt = {"name": "shift_gear", "arguments": {"gear": "park"}, "result": FAILED}
    with_attempt = [*calls[:at], attempt, *calls[at:]]
    a, b = score(RECOVERING, calls, config=config), score(RECOVERING, with_attempt, config=config)
    # the attempt excuses the first call that repeats it: ours, or an earlier identical one
    first = next(i for i, c in enumerate(with_attempt) if c == attempt)
    assert b.excused == (first,)
    if not a.excused:  # no call of `calls` repeated the attempt: it scored them all
        assert (b.total, b.components, b.counted) == (a.total, a.components, a.counted)


GIVEN_UP = vehicle_task([SLOW, {**ATTEMPT, "id": "s9"}])  # last in its turn: explained


def test_an_attempt_last_in_its_turn_is_given_up_and_pays_like_stopping(run_calls: Run) -> None:
    """Given up: making the call and stopping, or stopping at once, pay the same; calling
    on (the same call again, another write) costs."""
    assert GIVEN_UP.turns[0].given_up and not RECOVERING.turns[0].given_up
    assert [s.id for s in GIVEN_UP.scored_steps] == ["s2"]
    slow, shift = ("set_speed", {"speed_kph": 0}), ("shift_gear", {"gear": "park"})
    # the state where the attempt fails: still moving (the step before it is the set_speed)
    task = vehicle_task([{**SLOW, "arguments": {"speed_kph": 30}}, {**ATTEMPT, "id": "s9"}])
    on = ("set_speed", {"speed_kph": 30})
    made, made_hash = run_calls(task, [on, shift])
    stopped, stopped_hash = run_calls(task, [on])
    assert made[1].result.error_kind == "precondition_failed" and made_hash == stopped_hash
    a = score(task, made, final_state_hash=made_hash)
    b = score(task, stopped, final_state_hash=stopped_hash)
    assert a.total == b.total == a.max_total and a.excused == (1,)
    again, again_hash = run_calls(task, [on, shift, shift])
    assert score(task, again, final_state_hash=again_hash).total < a.max_total
    forced, forced_hash = run_calls(task, [on, shift, slow, shift])  # worked around it
    assert forced_hash != made_hash
    assert score(task, forced, final_state_hash=forced_hash).total < a.max_total


def test_attempts_are_checked() -> None:
    with pytest.raises(TaskError, match="every gold step is a failed attempt"):
        vehicle_task([ATTEMPT])
    with pytest.raises(TaskError, match="no dependency edge"):
        vehicle_task([ATTEMPT, {**SLOW, "depends_on": ["s1"]}])
    with pytest.raises(TaskError, match="expect_error must be one of"):
        vehicle_task([{**ATTEMPT, "expect_error": "oops"}, SLOW])


def test_a_step_without_attempt_is_written_as_before() -> None:
    plain = vehicle_task([SLOW])
    assert "expect_error" not in plain.to_json()
    assert '"expect_error":"precondition_failed"' in RECOVERING.to_json()
    assert Task.from_json(RECOVERING.to_json()) == RECOVERING
    assert [s.id for s in RECOVERING.scored_steps] == ["s2", "s3"]
