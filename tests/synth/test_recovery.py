"""Recovery turns: the gold shows a failed call, then what the error asked for, then the call again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prove_gym import Task, Workspace
from prove_gym.reward import score
from prove_gym.synth import SynthConfig, SynthResult, synthesize
from prove_gym.synth.export import build_report
from prove_gym.task import GoldStep
from prove_gym.training import sft_rows


def recovering(dataset: SynthResult) -> list:
    """Tasks whose gold shows a failed attempt and recovers from it in its turn."""
    return [
        t
        for t in dataset.tasks
        if any(s.attempt for turn in t.turns if not turn.given_up for s in turn.steps)
    ]


def giving_up(dataset: SynthResult) -> list:
    return [t for t in dataset.tasks if any(turn.given_up for turn in t.turns)]


def test_recovery_turns_are_present_and_described(dataset: SynthResult) -> None:
    tasks = recovering(dataset)
    # 9 of the 1,000 at this seed with synth/14, whose value sources draw ids that fit (fewer
    # calls fail to recover from); 10 and more before
    assert len(tasks) >= 5, len(tasks)
    report = build_report(dataset)
    shown = {t.id for t in tasks} | {t.id for t in giving_up(dataset)}
    assert report["recovering_tasks"] == len(shown)
    attempts = sum(s.attempt for t in dataset.tasks for s in t.steps)
    assert sum(report["recoveries"].values()) == attempts
    assert report["recoveries"].get("give_up", 0) == len(giving_up(dataset))
    assert report["outcomes"]["failure"] == attempts  # every other gold call succeeded
    for task in tasks:
        assert len(task.meta["outcomes"]) == len(task.steps)
        for turn in task.turns:
            for k, step in enumerate(turn.steps):
                if not step.attempt or turn.given_up:
                    continue
                # the call is made again once the error is dealt with (with the values it
                # had, but for an entity a repair issued afresh or a parameter it lacked)
                assert any(s.name == step.name for s in turn.steps[k + 1 :]), task.id


def played(task: Task, leave_out: Callable[[GoldStep], bool]) -> tuple[Any, Any, list[Any]]:
    """The gold played in full, and without the steps ``leave_out`` picks: both scores, and
    the calls of the full play."""
    scores: list[Any] = []
    made: list[Any] = []
    for skip in (False, True):
        with Workspace(task) as ws:
            calls = [
                ws.call(s.name, s.arguments, turn=i)
                for i, turn in enumerate(task.turns)
                for s in turn.steps
                if not (skip and leave_out(s))
            ]
            scores.append(score(task, calls, final_state_hash=ws.state_hash()))
        if not skip:
            made = calls
    return scores[0], scores[1], made


def test_the_attempt_fails_as_recorded_and_going_straight_pays_the_same(
    dataset: SynthResult,
) -> None:
    for task in recovering(dataset)[:25]:
        shown, direct, calls = played(task, lambda s: s.attempt)
        failed = [c.result.error_kind for c in calls if not c.result.ok]
        assert failed == [s.expect_error for s in task.steps if s.attempt], task.id
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


def test_recovery_and_give_up_rates_zero_show_no_attempt() -> None:
    cfg = SynthConfig(
        servers=("vehicle",), n=24, seed=3, state_seeds=2, recovery_rate=0.0, give_up_rate=0.0
    )
    result = synthesize(cfg)
    assert not any(s.attempt for t in result.tasks for s in t.steps)
    assert build_report(result)["recovering_tasks"] == 0
    shown = synthesize(SynthConfig(servers=("vehicle",), n=24, seed=3, state_seeds=2))
    assert any(s.attempt for t in shown.tasks for s in t.steps)  # the same run shows some


def test_given_up_calls_fail_on_the_state_end_the_conversation_and_are_explained(
    dataset: SynthResult,
) -> None:
    """A give-up: the call as asked fails on the state (no fix named), its turn ends the
    conversation's calls; playing it or stopping short of it both pay the maximum, and the
    supervised row explains the error instead of calling on."""
    tasks = giving_up(dataset)
    assert len(tasks) >= 3, len(tasks)
    for task in tasks:
        assert task.meta["recoveries"].count("give_up") == 1, task.id
        (at,) = [i for i, turn in enumerate(task.turns) if turn.given_up]
        assert all(not turn.steps for turn in task.turns[at + 1 :]), task.id
        last = task.turns[at].steps[-1]
        assert last.expect_error in ("precondition_failed", "conflict"), task.id
        assert task.scored_steps, task.id
        made, stopped, _ = played(task, lambda s, last=last: s is last)
        assert made.total == stopped.total == made.max_total, task.id
    (row,) = sft_rows([tasks[0]])
    messages = row["messages"]
    errors = [
        i for i, m in enumerate(messages) if m["role"] == "tool" and "Error [" in m["content"]
    ]
    after = messages[errors[-1] + 1]
    assert after["role"] == "assistant" and not after.get("tool_calls"), after
    assert after["content"].startswith("I could not do that:"), after


def test_a_call_is_given_up_only_where_the_state_said_no_before_the_conversation(
    dataset: SynthResult,
) -> None:
    """seed-2044 read: travel_booking "cancel itn_0031 ... then quote a change of bkg_0077"
    (on that itinerary), given up. A give-up teaches that the state refuses the request; a
    refusal the conversation itself brought about is not one a user would ask for, so the
    given-up call fails the same way on the initial state."""
    from prove_gym import get_registry

    tasks = giving_up(dataset)
    assert tasks
    for task in tasks:
        (at,) = [i for i, turn in enumerate(task.turns) if turn.given_up]
        last = task.turns[at].steps[-1]
        srv = get_registry().get_server(task.server)
        with srv.session(task.seed, task.size) as session:
            result = session.call(last.name, last.arguments)
        assert not result.ok and result.error_kind == last.expect_error, (task.id, last)


def test_give_up_rate_zero_gives_nothing_up() -> None:
    cfg = SynthConfig(servers=("issue_tracker",), n=60, seed=3, state_seeds=2, give_up_rate=0.0)
    assert not giving_up(synthesize(cfg))
    shown = synthesize(
        SynthConfig(servers=("issue_tracker",), n=60, seed=3, state_seeds=2, give_up_rate=1.0)
    )
    assert giving_up(shown)  # the same run gives some up


def test_a_repairing_write_takes_only_values_the_attempt_or_its_error_gave() -> None:
    """shopping-2038-00035: checkout failed on an empty cart ("Add items with add_to_cart
    first") and the gold repaired it by adding var_00032, an item the user never asked to
    buy: a model that told the user the cart was empty was scored wrong. A shown repair
    that writes takes every value from the failed call or its message (vehicle's "Slow to
    0 with set_speed (speed_kph=0)"); reads may look things up."""
    import re

    import prove_gym

    registry = prove_gym.get_registry()
    result = synthesize(SynthConfig(servers=("shopping", "vehicle", "calendar"), n=300, seed=11))
    repaired = 0
    for task in result.tasks:
        server = registry.get_server(task.server)
        with Workspace(task) as ws:
            for i, turn in enumerate(task.turns):
                message, given = "", set()
                for k, step in enumerate(turn.steps):
                    call = ws.call(step.name, step.arguments, turn=i)
                    if not step.attempt or turn.given_up:
                        continue
                    message = call.result.message or ""
                    given = {str(v) for v in step.arguments.values()}
                    named = set(re.findall(r"[\w.@+-]+", message)) | given
                    for fix in turn.steps[k + 1 :]:
                        if fix.name == step.name:
                            break
                        if not server.tools[fix.name].writes:
                            continue
                        repaired += 1
                        for value in fix.arguments.values():
                            assert str(value) in named, (task.id, fix.name, fix.arguments, message)
    assert repaired >= 5  # vehicle's stop-then-park repairs are still shown


def test_a_retry_never_first_tries_a_value_the_user_said_otherwise(dataset: SynthResult) -> None:
    """shopping-2042-00045: "take var_00141 out of the cart of cus_117" shown first failing
    with var_00004 (the line just removed): a model that did what it was told never makes
    that call. A retry's attempt differs from the call only in values the request does not
    state as they are."""
    for task in recovering(dataset):
        for turn in task.turns:
            for k, step in enumerate(turn.steps):
                if not step.attempt or turn.given_up:
                    continue
                then = next((s for s in turn.steps[k + 1 :] if s.name == step.name), None)
                between = turn.steps[k + 1 : turn.steps.index(then)] if then else []
                if then is None or between:
                    continue  # a repair: the calls between are what the error asked for
                for name, value in then.arguments.items():
                    if step.arguments.get(name) != value:
                        assert str(value) not in turn.user, (task.id, name, turn.user)
