"""The workspace's state hash: the task's own servers, plus any distractor server a call changed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from prove_gym import Workspace, get_registry
from prove_gym.server.state import combine_hashes
from prove_gym.task import Task
from prove_gym.workspace import gold_replay, replay_tasks

REGISTRY = get_registry()
CALENDAR_TASK = next(t for t in REGISTRY.tasks("calendar") if t.steps)
VEHICLE_TOOLS = ["vehicle.set_window", "vehicle.get_vehicle_status"]
WINDOWS = ["front_left", "front_right"]


def with_distractors(task: Task, generator: str | None) -> Task:
    """``task`` offering two vehicle tools besides its own, as written by ``generator``."""
    own = [f"calendar.{t.name}" for t in REGISTRY.get_server("calendar").visible_tools()]
    meta = {k: v for k, v in task.meta.items() if k != "generator"}
    if generator is not None:
        meta["generator"] = generator
    return task.model_copy(
        update={"tools": own + VEHICLE_TOOLS, "final_state_hash": None, "meta": meta}
    )


def fresh_hash(server: str, task: Task) -> str:
    with REGISTRY.get_server(server).session(task.seed, task.size) as session:
        return session.state_hash()


def test_a_distractor_server_is_opened_only_when_called_and_left_out_while_unchanged() -> None:
    task = with_distractors(CALENDAR_TASK, "prove_gym.synth/3")
    with Workspace(task) as ws:
        assert list(ws.sessions) == ["calendar"] and ws.servers == ("calendar", "vehicle")
        for turn in task.turns:
            for step in turn.steps:
                ws.call(step.name, step.arguments)
        gold = ws.state_hash()
        assert gold == ws.sessions["calendar"].state_hash()  # one server: its own hash
        assert ws.call("get_vehicle_status", {}).result.ok
        assert list(ws.sessions) == ["calendar", "vehicle"]
        assert ws.state_hash() == gold  # a read leaves the distractor out
    assert gold_replay(task)[1] == gold


def test_a_legacy_task_hashes_every_offered_server_as_its_generator_did() -> None:
    task = with_distractors(CALENDAR_TASK, "prove_gym.synth/2")
    records, final = gold_replay(task)
    with REGISTRY.get_server("calendar").session(task.seed, task.size) as calendar:
        for record in records:
            calendar.call(record.name, record.arguments)
        own = calendar.state_hash()
    assert final == combine_hashes({"calendar": own, "vehicle": fresh_hash("vehicle", task)})
    assert final != own


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.sampled_from(WINDOWS), st.sampled_from([0, 40])),
            st.just(None),  # a read
        ),
        max_size=6,
    )
)
def test_the_hash_holds_a_distractor_server_exactly_when_its_rows_changed(
    calls: list[tuple[str, int] | None],
) -> None:
    task = with_distractors(CALENDAR_TASK, None)
    initial_vehicle = fresh_hash("vehicle", task)
    with Workspace(task) as ws:
        own = ws.sessions["calendar"].state_hash()
        for call in calls:
            if call is None:
                assert ws.call("get_vehicle_status", {}).result.ok
            else:
                window, percent = call  # may set what it is, or set it back
                assert ws.call(
                    "set_window", {"position": window, "open_percent": percent}
                ).result.ok
        vehicle = ws.sessions.get("vehicle")
        now = vehicle.state_hash() if vehicle is not None else initial_vehicle
        expected = (
            own if now == initial_vehicle else combine_hashes({"calendar": own, "vehicle": now})
        )
        assert ws.state_hash() == expected


def test_a_write_to_a_distractor_server_changes_the_hash_and_undoing_it_restores_it() -> None:
    task = with_distractors(CALENDAR_TASK, None)
    with Workspace(task) as ws:
        own = ws.state_hash()
        with REGISTRY.get_server("vehicle").session(task.seed, task.size) as probe:
            rows = probe.db.execute(text("SELECT position, open_percent FROM windows")).all()
        position, percent = sorted(rows)[0]
        assert ws.call("set_window", {"position": position, "open_percent": 55}).result.ok
        assert ws.state_hash() != own
        assert ws.call("set_window", {"position": position, "open_percent": percent}).result.ok
        assert ws.state_hash() == own  # rows, not history, decide


def test_offered_tools_are_the_callers_own_and_follow_the_registry() -> None:
    """offered_tools caches its answer per registry and generation: a caller may edit
    what it gets, and a registry another plugin joined answers afresh."""
    from prove_gym import Registry, hookimpl
    from prove_gym.workspace import offered_tools

    registry = Registry()
    task = Task(id="t", servers=["calendar"], tools=["calendar.get_event"], turns=[{"user": "hi"}])
    first = offered_tools(task, registry)
    first.clear()
    assert list(offered_tools(task, registry)) == ["get_event"]
    everything = offered_tools(task.model_copy(update={"tools": None}), registry)
    assert list(everything) == [t.name for t in registry.get_server("calendar").visible_tools()]

    class Empty:
        @hookimpl
        def prove_gym_servers(self) -> list:
            return []

    before = registry.generation
    registry.register(Empty(), name="late")
    assert registry.generation == before + 1
    assert offered_tools(task, registry)["get_event"] is registry.get_tool("calendar.get_event")


def test_a_failed_attempt_the_gold_shows_replays_when_it_fails_as_shown() -> None:
    """``prove-gym tasks`` replays synthesized tasks whose gold shows a failed call and its
    recovery: the attempt failing with its ``expect_error`` is the task as written; failing
    otherwise, or succeeding, is a replay that went astray."""
    task = next(
        t
        for name in REGISTRY.server_names
        for t in REGISTRY.tasks(name)
        if any(s.attempt for s in t.steps)
    )
    assert replay_tasks([task])[0].failures == ()
    step = next(s for s in task.steps if s.attempt)
    other = "conflict" if step.expect_error != "conflict" else "not_found"
    turns = [t.model_copy(deep=True) for t in task.turns]
    for turn in turns:
        for j, s in enumerate(turn.steps):
            if s.id == step.id:
                turn.steps[j] = s.model_copy(update={"expect_error": other})
    astray = replay_tasks([task.model_copy(update={"turns": turns})])[0].failures
    assert len(astray) == 1 and f"the gold shows it failing with {other}" in astray[0]
