"""The knowledge model: how a user can name each entity a planned conversation uses.

Built from real calendar tool declarations and hand-made steps (what a chain's run
leaves), so each rule is seen deciding on its own.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from prove_gym import get_registry
from prove_gym.synth.grounding import DoneStep
from prove_gym.synth.knowledge import Knowledge, Reference, lists
from prove_gym.synth.render import Renderer, creates

EXISTING = {f"evt_{n:04d}" for n in range(1, 100)}


def call(
    name: str,
    links: dict[str, int] | None = None,
    produced: Sequence[str] = (),
    segment: int = 0,
    listed: Sequence[str] | None = None,
    **args: Any,
) -> DoneStep:
    """A call of calendar's ``name`` whose result held ``produced`` (those of them in a
    list of it: ``listed``, by default all of them)."""
    tool = get_registry().get_tool(f"calendar.{name}")
    return DoneStep(
        tool,
        dict(args),
        dict(links or {}),
        produced={"event": list(produced)},
        segment=segment,
        listed={"event": list(produced if listed is None else listed)},
    )


def knowledge(done: list[DoneStep]) -> Knowledge:
    return Knowledge(
        done,
        {i: d.segment for i, d in enumerate(done)},
        lambda kind, value: kind != "event" or value in EXISTING,
        lambda d, kind: creates(d.tool, kind),
    )


def test_the_new_x_is_only_what_a_call_of_this_conversation_created() -> None:
    made = [
        call("create_event", produced=["evt_0301"], calendar_id="cal_01", title="Review"),
        call("add_invitee", {"event_id": 0}, event_id="evt_0301", email="ana@example.com"),
    ]
    assert knowledge(made).reference(1, "event_id") == Reference("new")
    # an event that existed, found by a search, is "that event", never "the new event"
    found = [
        call("search_events", produced=["evt_0007"], query="standup"),
        call("add_invitee", {"event_id": 0}, event_id="evt_0007", email="ana@example.com"),
    ]
    assert knowledge(found).reference(1, "event_id") == Reference("that")


def test_the_same_x_is_what_an_earlier_call_took() -> None:
    done = [
        call("get_event", produced=["evt_0007"], event_id="evt_0007"),
        call("add_invitee", {"event_id": 0}, event_id="evt_0007", email="ana@example.com"),
    ]
    assert knowledge(done).reference(1, "event_id") == Reference("same")


def test_two_events_in_play_leave_the_id_to_be_said() -> None:
    """ "that event" with evt_0007 named before and evt_0008 found after could mean either."""
    done = [
        call("get_event", produced=["evt_0007"], event_id="evt_0007"),
        call("search_events", produced=["evt_0008"], query="standup"),
        call("add_invitee", {"event_id": 1}, event_id="evt_0008", email="ana@example.com"),
    ]
    k = knowledge(done)
    assert k.in_play(2, "event_id") == {"evt_0007", "evt_0008"}
    assert k.reference(2, "event_id") is None
    assert k.knowable(2, "event_id")  # it existed: the user can say it


def test_a_place_in_a_list_only_from_the_one_list_right_before() -> None:
    listed = ["evt_0004", "evt_0005", "evt_0006"]
    one = [
        call("search_events", produced=listed, query="standup"),
        call("add_invitee", {"event_id": 0}, event_id="evt_0005", email="ana@example.com"),
    ]
    assert knowledge(one).reference(1, "event_id") == Reference("list", position=1)
    two = [
        call("list_events", produced=["evt_0009", "evt_0010"], calendar_id="cal_01"),
        *one,
    ]
    two[2] = call("add_invitee", {"event_id": 1}, event_id="evt_0005", email="ana@example.com")
    assert knowledge(two).reference(2, "event_id") is None  # "that list" could be either
    header = [
        call("search_events", produced=["evt_0004", "evt_0005"], listed=["evt_0004"], query="x"),
        one[1],
    ]  # evt_0005 stands outside the result's list (a header's own): no place in it
    assert knowledge(header).reference(1, "event_id") is None
    later = [one[0], call("list_calendars"), one[1]]
    later[2] = call("add_invitee", {"event_id": 0}, event_id="evt_0005", email="ana@example.com")
    assert knowledge(later).reference(2, "event_id") is None  # not "those results" any more


def test_a_created_id_is_knowable_only_once_an_earlier_turn_showed_it() -> None:
    done = [
        call("create_event", produced=["evt_0301"], calendar_id="cal_01", title="Review"),
        call("get_event", {"event_id": 0}, event_id="evt_0301"),
        call("add_invitee", {}, segment=1, event_id="evt_0301", email="ana@example.com"),
    ]
    k = knowledge(done)
    assert not k.knowable(1, "event_id")  # made in the same turn: the user has not seen it
    assert k.knowable(2, "event_id")  # the first turn's result showed it
    assert k.creator("event", "evt_0301", 2) == 0
    assert k.creator("event", "evt_0007", 2) is None


def test_the_renderer_records_an_id_said_before_the_user_could_know_it() -> None:
    done = [
        call("create_event", produced=["evt_0301"], calendar_id="cal_01", title="Review"),
        call("create_event", produced=["evt_0302"], calendar_id="cal_01", title="Retro"),
        call("search_events", produced=["evt_0002", "evt_0301"], query="review"),
        call("add_invitee", {"event_id": 2}, event_id="evt_0301", email="ana@example.com"),
    ]
    renderer = Renderer(random.Random(0), "complete")
    renderer.knowledge = knowledge(done)
    text, _ = renderer.phrase(3, done, planned=None)
    # three events in play, two of them new, three results about events: none of "that
    # event", "the new event" or "the second event in those results" is unambiguous...
    assert "evt_0301" in text
    assert renderer.unknowable == ["add_invitee.event_id"]  # ...but never shown: dropped


def test_lists_is_about_the_first_kind_a_tool_returns_without_taking_one() -> None:
    assert lists(call("search_events", query="x"), "event")
    assert not lists(call("get_event", event_id="evt_0001"), "event")  # one it was given
    assert not lists(call("list_calendars"), "event")


def test_a_listing_given_none_of_its_kind_lists_it_and_then_that_user_is_ambiguous() -> None:
    """social_media-2032-00048: unblock usr_003, then "show my blocked ... Then follow that
    user": the blocked list (usr_007) is about users although list_connections could be
    given one, so two users are in play and "that user" is not said."""
    tool = get_registry().get_tool
    unblock = DoneStep(tool("social_media.unblock_user"), {"user_id": "usr_003"}, {},
                       produced={"user": ["usr_003"]}, segment=0)  # fmt: skip
    blocked = DoneStep(tool("social_media.list_connections"), {"list_name": "blocked"}, {},
                       produced={"user": ["usr_007"]}, segment=1)  # fmt: skip
    follow = DoneStep(tool("social_media.follow_user"), {"user_id": "usr_003"}, {"user_id": 0},
                      produced={"user": ["usr_003"]}, segment=1)  # fmt: skip
    assert lists(blocked, "user") and not lists(follow, "user")
    k = Knowledge([unblock, blocked, follow], {0: 0, 1: 1, 2: 1}, lambda kind, v: True,
                  lambda d, kind: False)  # fmt: skip
    assert k.in_play(2, "user_id") == {"usr_003", "usr_007"}
    assert k.reference(2, "user_id") is None
    theirs = DoneStep(tool("social_media.list_connections"), {"user_id": "usr_009"}, {},
                      produced={"user": ["usr_009", "usr_012"]}, segment=1)  # fmt: skip
    assert not lists(theirs, "user")  # given a user: about usr_009, as a get is about its id


@given(
    taken=st.lists(st.sampled_from(sorted(EXISTING)[:6]), max_size=4),
    value=st.sampled_from(sorted(EXISTING)[:6]),
)
def test_a_single_reference_is_used_exactly_when_one_event_is_in_play(
    taken: list[str], value: str
) -> None:
    done = [call("get_event", produced=[e], event_id=e) for e in taken]
    done.append(call("search_events", produced=[value], query="x"))
    done.append(
        call("add_invitee", {"event_id": len(done) - 1}, event_id=value, email="a@example.com")
    )
    ref = knowledge(done).reference(len(done) - 1, "event_id")
    alone = set(taken) <= {value}
    assert (ref is not None) == alone
    if ref is not None:
        assert ref.how == ("same" if value in taken else "that")


def test_the_new_x_tells_the_one_made_from_others_in_play() -> None:
    done = [
        call("get_event", produced=["evt_0007"], event_id="evt_0007"),
        call("create_event", produced=["evt_0301"], calendar_id="cal_01", title="Review"),
        call("add_invitee", {"event_id": 1}, event_id="evt_0301", email="ana@example.com"),
    ]
    assert knowledge(done).reference(2, "event_id") == Reference("new")
    done.insert(2, call("create_event", produced=["evt_0302"], calendar_id="cal_01", title="x"))
    done[3] = call("add_invitee", {"event_id": 1}, event_id="evt_0301", email="ana@example.com")
    assert knowledge(done).reference(3, "event_id") is None  # two made: "the new" is either
