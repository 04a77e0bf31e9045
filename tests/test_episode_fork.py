"""``Episode.fork()``: independent copies of a live episode that never see each other's writes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import prove_gym
from prove_gym.episode import Episode
from prove_gym.formats import HermesFormat

TASK = next(t for t in prove_gym.get_registry().tasks("calendar") if t.id == "calendar-002")


HERMES = HermesFormat()


def call(name: str, **arguments: object) -> str:
    """One call as the Hermes format writes it (what a model sends)."""
    return HERMES.render_calls([{"name": name, "arguments": arguments}])


# Reads and writes that succeed or fail on calendar's seed-7 state, in any order.
ACTIONS = [
    call("find_free_slot", date="2026-03-24", duration_minutes=60),
    call(
        "create_event",
        calendar_id="cal_01",
        duration_minutes=60,
        start="2026-03-24T09:00",
        title="Budget sync",
    ),
    call("add_reminder", event_id="evt_0301", minutes_before=15),
    call("delete_event", event_id="evt_0001"),
    call("add_invitee", event_id="evt_0002", email="ana@example.com"),
    call("list_calendars"),
    "I have done what you asked.",
]


def replay(actions: list[str]) -> Episode:
    episode = Episode(TASK)
    for action in actions:
        if not episode.done:
            episode.step(action)
    return episode


def test_a_fork_starts_where_its_parent_is_and_goes_its_own_way() -> None:
    parent = replay(ACTIONS[:2])
    child = parent.fork()
    assert child.state_hash() == parent.state_hash()
    assert child.messages == parent.messages and child.trajectory == parent.trajectory
    child.step(ACTIONS[2])
    assert child.state_hash() != parent.state_hash()
    assert len(child.trajectory) == len(parent.trajectory) + 1
    assert parent.state_hash() == replay(ACTIONS[:2]).state_hash()  # the parent saw nothing
    done = child.step("Done.")
    assert (
        done.breakdown is not None
        and done.breakdown.total == replay([*ACTIONS[:3], "Done."]).breakdown.total
    )  # type: ignore[union-attr]
    assert parent.breakdown is None and not parent.done


def test_a_fork_of_an_untouched_episode_and_a_fork_of_a_fork() -> None:
    root = Episode(TASK)
    first = root.fork()
    second = first.fork()
    first.step(ACTIONS[1])
    second.step(ACTIONS[3])
    hashes = {root.state_hash(), first.state_hash(), second.state_hash()}
    assert len(hashes) == 3
    assert second.state_hash() == replay([ACTIONS[3]]).state_hash()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("fork"), st.integers(0, 7)),
            st.tuples(st.just("step"), st.integers(0, 7), st.integers(0, len(ACTIONS) - 1)),
        ),
        max_size=14,
    )
)
def test_interleaved_steps_on_forks_never_cross(ops: list[tuple[int | str, ...]]) -> None:
    """Each episode of a random tree of forks holds exactly the state, transcript and
    reward of a fresh episode that made only its own path's moves."""
    episodes = [Episode(TASK)]
    paths: list[list[str]] = [[]]
    try:
        for op in ops:
            index = int(op[1]) % len(episodes)
            if op[0] == "fork":
                episodes.append(episodes[index].fork())
                paths.append(list(paths[index]))
            elif not episodes[index].done:
                action = ACTIONS[int(op[2])]
                episodes[index].step(action)
                paths[index].append(action)
        for episode, path in zip(episodes, paths, strict=True):
            alone = replay(path)
            assert episode.state_hash() == alone.state_hash()
            assert episode.messages == alone.messages
            assert [r.to_dict() for r in episode.trajectory] == [
                r.to_dict() for r in alone.trajectory
            ]
            assert episode.end().total == alone.end().total
            alone.close()
    finally:
        for episode in episodes:
            episode.close()
