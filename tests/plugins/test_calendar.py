"""The calendar server: the conformance suite and the calendar's own rules."""

from __future__ import annotations

import pytest

import prove_gym
from prove_gym import ErrorKind, Server
from prove_gym.testing.conformance import conformance_suite

CALENDAR = prove_gym.get_server("calendar")

FUZZ_SAMPLES = [
    "evt_0001",
    "evt_9999",
    "cal_01",
    "cal_07",
    "2026-03-03",
    "2026-03-03T10:00",
    "weekly",
    "accepted",
    "popup",
    "x@y.com",
    "Europe/Berlin",
    "Mars/Olympus",
]

TestConformance = conformance_suite("calendar", samples=FUZZ_SAMPLES)


@pytest.fixture
def session(calendar: Server):
    return calendar.session(seed=7)


def test_times_are_fixed_per_seed_not_the_wall_clock(session) -> None:
    first = session.call("get_current_time", {}).content
    assert first == CALENDAR.session(seed=7).call("get_current_time", {}).content
    assert first["now"].startswith("2026-")


def test_create_event_numbers_ids_deterministically_and_lists_it(session) -> None:
    now = session.call("get_current_time", {}).content["now"]
    day = now[:10]
    made = session.call(
        "create_event",
        {
            "calendar_id": "cal_02",
            "title": "Piano recital",
            "start": f"{day}T19:00",
            "duration_minutes": 90,
        },
    ).content
    assert made["event_id"] == "evt_0301" and made["end"] == f"{day}T20:30"
    listed = session.call(
        "list_events", {"start_date": day, "end_date": day, "calendar_id": "cal_02"}
    )
    assert made["event_id"] in [e["event_id"] for e in listed.content]


def test_timezone_argument_converts_to_home_time(session) -> None:
    home = session.call("get_current_time", {}).content["home_timezone"]
    assert home == "America/Chicago"
    made = session.call(
        "create_event",
        {
            "calendar_id": "cal_01",
            "title": "Call Tokyo",
            "start": "2026-06-02T09:00",
            "timezone": "Asia/Tokyo",
        },
    ).content
    assert made["start"] == "2026-06-01T19:00"  # 09:00 JST is 19:00 CDT the day before


def test_invitations_follow_their_rules(session) -> None:
    email = "someone.new@example.org"
    assert (
        session.call(
            "respond_to_invitation",
            {"event_id": "evt_0001", "email": email, "response": "accepted"},
        ).error_kind
        == ErrorKind.NOT_FOUND
    )
    assert session.call("add_invitee", {"event_id": "evt_0001", "email": email.upper()}).ok
    again = session.call("add_invitee", {"event_id": "evt_0001", "email": email})
    assert again.error_kind == ErrorKind.CONFLICT
    assert session.call(
        "respond_to_invitation", {"event_id": "evt_0001", "email": email, "response": "tentative"}
    ).ok
    detail = session.call("get_event", {"event_id": "evt_0001"}).content
    assert {"email": email, "name": "", "response": "tentative"} in detail["invitees"]


def test_cancelled_events_refuse_changes(session) -> None:
    assert session.call("delete_event", {"event_id": "evt_0005"}).ok
    for name, args in [
        ("update_event", {"event_id": "evt_0005", "title": "Back"}),
        ("delete_event", {"event_id": "evt_0005"}),
        ("set_recurrence", {"event_id": "evt_0005", "frequency": "daily"}),
    ]:
        assert session.call(name, args).error_kind == ErrorKind.PRECONDITION_FAILED


def test_recurrence_expands_into_occurrences(session) -> None:
    event = next(
        e
        for e in session.list_entities("event")
        if not session.call("get_event", {"event_id": e["event_id"]}).content["recurring"]
    )
    eid, start = event["event_id"], event["date"]
    assert session.call("set_recurrence", {"event_id": eid, "frequency": "weekly", "count": 3}).ok
    occ = session.call(
        "list_occurrences", {"event_id": eid, "start_date": start, "end_date": "2026-12-31"}
    ).content
    assert len(occ["occurrences"]) == 3
    assert (
        session.call(
            "set_recurrence",
            {"event_id": eid, "frequency": "weekly", "count": 3, "until": "2026-12-01"},
        ).error_kind
        == ErrorKind.BAD_ARGUMENTS
    )


def test_find_free_slot_returns_a_slot_that_really_is_free(session) -> None:
    slot = session.call("find_free_slot", {"date": "2026-03-24", "duration_minutes": 45}).content
    busy = session.call("get_free_busy", {"date": "2026-03-24"}).content["busy"]
    for b in busy:
        assert not (b["start"] < slot["end"] and b["end"] > slot["start"])
