"""Recovery turns: the gold shows a failed call, then what the error asked for, then the call again."""

from __future__ import annotations

from prove_gym import Workspace
from prove_gym.reward import score
from prove_gym.synth import SynthConfig, SynthResult, synthesize
from prove_gym.synth.export import build_report
from prove_gym.training import sft_rows


def recovering(dataset: SynthResult) -> list:
    return [t for t in dataset.tasks if any(s.attempt for s in t.steps)]


def test_recovery_turns_are_present_and_described(dataset: SynthResult) -> None:
    tasks = recovering(dataset)
    assert len(tasks) >= 10, len(tasks)
    report = build_report(dataset)
    assert report["recovering_tasks"] == len(tasks)
    attempts = sum(s.attempt for t in tasks for s in t.steps)
    assert sum(report["recoveries"].values()) == attempts
    assert report["outcomes"]["failure"] == attempts  # every other gold call succeeded
    for task in tasks:
        assert len(task.meta["outcomes"]) == len(task.steps)
        for turn in task.turns:
            for k, step in enumerate(turn.steps):
                if not step.attempt:
                    continue
                # the call is made again once the error is dealt with (with the values it
                # had, but for an entity a repair issued afresh or a parameter it lacked)
                assert any(s.name == step.name for s in turn.steps[k + 1 :]), task.id


def test_the_attempt_fails_as_recorded_and_going_straight_pays_the_same(
    dataset: SynthResult,
) -> None:
    for task in recovering(dataset)[:25]:
        results = {}
        for skip in (False, True):
            with Workspace(task) as ws:
                calls = [
                    ws.call(s.name, s.arguments, turn=i)
                    for i, turn in enumerate(task.turns)
                    for s in turn.steps
                    if not (skip and s.attempt)
                ]
                results[skip] = score(task, calls, final_state_hash=ws.state_hash())
            if not skip:
                failed = [c.result.error_kind for c in calls if not c.result.ok]
                assert failed == [s.expect_error for s in task.steps if s.attempt], task.id
        shown, direct = results[False], results[True]
        assert shown.total == direct.total == shown.max_total, task.id
        assert len(shown.excused) == sum(s.attempt for s in task.steps)


def test_sft_rows_show_the_error_and_the_recovery(dataset: SynthResult) -> None:
    task = recovering(dataset)[0]
    (row,) = sft_rows([task])
    messages = row["messages"]
    errors = [
        i for i, m in enumerate(messages) if m["role"] == "tool" and "Error [" in m["content"]
    ]
    assert errors, messages
    after = messages[errors[0] + 1]
    assert after["role"] == "assistant" and after.get("tool_calls")  # it acts on the error


def test_recovery_rate_zero_shows_no_attempt() -> None:
    cfg = SynthConfig(servers=("vehicle",), n=24, seed=3, state_seeds=2, recovery_rate=0.0)
    result = synthesize(cfg)
    assert not any(s.attempt for t in result.tasks for s in t.steps)
    assert build_report(result)["recovering_tasks"] == 0
    shown = synthesize(SynthConfig(servers=("vehicle",), n=24, seed=3, state_seeds=2))
    assert any(s.attempt for t in shown.tasks for s in t.steps)  # the same run shows some
