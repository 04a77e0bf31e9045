"""The calendar server: the conformance suite and the calendar's own rules."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prove_plugins.calendar.sampler import TIMEZONES

import prove_gym
from prove_gym import ErrorKind, Server, Session
from prove_gym.server import zones
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import one

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
    "2026-03-08T02:30",
    "2026-11-01T01:30[America/New_York]",
    "2026-03-03T10:00+09:00",
    "2026-03-03T10:00-05:00[Asia/Tokyo]",
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


# ------------------------------------------------------------ prove/calendar-v1
def _home_of(seed: int) -> str:
    with CALENDAR.session(seed=seed) as s:
        return one(s, "SELECT timezone FROM settings")


def _seed_in(zone: str) -> int:
    """The first seed whose calendar owner lives in ``zone``."""
    return next(seed for seed in range(200) if _home_of(seed) == zone)


@pytest.fixture
def new_york() -> Iterator[Session]:
    with CALENDAR.session(seed=_seed_in("America/New_York"), env_version=1) as s:
        yield s


def _moment(shown: str) -> dt.datetime:
    """The instant a v1 time names, checked to agree with its zone."""
    text, name = zones.split_local(shown)
    assert name is not None, shown
    when = dt.datetime.fromisoformat(text)
    assert when.utcoffset() == when.astimezone(zones.zone(name)).utcoffset(), shown
    return when


def _create(session: Session, start: str, minutes: int = 60, **extra: Any) -> Any:
    return session.call(
        "create_event",
        {"calendar_id": "cal_01", "title": "Call", "start": start, "duration_minutes": minutes}
        | extra,
    )


def test_v1_shows_every_time_with_its_offset_and_zone(new_york: Session) -> None:
    now = new_york.call("get_current_time", {}).content
    assert now["now"].endswith("[America/New_York]") and _moment(now["now"])
    tokyo = new_york.call("get_current_time", {"timezone": "Asia/Tokyo"}).content
    assert _moment(tokyo["now"]) == _moment(now["now"]) and tokyo["timezone"] == "Asia/Tokyo"
    assert {c["timezone"] for c in new_york.call("list_calendars", {}).content} == {
        "America/New_York"
    }
    event = _create(new_york, "2026-03-09T09:00[Asia/Tokyo]").content
    assert event["start"] == "2026-03-08T20:00-04:00[America/New_York]"
    assert _moment(event["end"]) - _moment(event["start"]) == dt.timedelta(hours=1)
    found = new_york.call("list_events", {"start_date": "2026-03-08", "end_date": "2026-03-08"})
    assert event["start"] in [e["start"] for e in found.content]
    with CALENDAR.session(seed=_seed_in("America/New_York")) as v0:  # -v0 keeps its meaning
        assert "[" not in v0.call("get_current_time", {}).content["now"]
        assert "timezone" not in v0.call("list_calendars", {}).content[0]
        plain = _create(v0, "2026-03-09T09:00", timezone="Asia/Tokyo").content
        assert plain["start"] == "2026-03-08T20:00"


def test_v1_refuses_a_skipped_local_time_and_the_repeated_hour(new_york: Session) -> None:
    """-v0 stored 02:30 on the day New York's clocks skip it, and 01:30 on the day they
    repeat it, as if both were ordinary times."""
    with CALENDAR.session(seed=_seed_in("America/New_York")) as v0:
        assert _create(v0, "2026-03-08T02:30").ok and _create(v0, "2026-11-01T01:30").ok
    before = new_york.state_hash()
    for start, rule in [
        ("2026-03-08T02:30", "nonexistent_local_time"),
        ("2026-03-08T02:30[America/New_York]", "nonexistent_local_time"),
        ("2026-11-01T01:30", "ambiguous_local_time"),
        ("2026-11-01T05:30+00:00", "ambiguous_local_time"),  # 01:30 EDT, the first of two
        ("2026-11-01T00:30", "ambiguous_local_time"),  # its end, 01:30, is repeated
    ]:
        refused = _create(new_york, start)
        assert refused.error_kind == ErrorKind.PRECONDITION_FAILED, (start, refused.message)
        assert f"Rule '{rule}' failed" in (refused.message or ""), refused.message
        assert new_york.state_hash() == before
    # elsewhere the same wall time is an ordinary one: 02:30 in Tokyo that day is fine
    assert _create(new_york, "2026-03-08T02:30[Asia/Tokyo]").ok
    bad = _create(new_york, "2026-03-08T10:00+01:00[America/New_York]")
    assert bad.error_kind == ErrorKind.BAD_ARGUMENTS, bad.message


def test_v1_durations_are_elapsed_minutes_across_a_change_of_the_clocks(
    new_york: Session,
) -> None:
    event = _create(new_york, "2026-03-08T01:30", 60).content
    assert (event["start"], event["end"]) == (
        "2026-03-08T01:30-05:00[America/New_York]",
        "2026-03-08T03:30-04:00[America/New_York]",
    )
    # moving a 2-hour event over the change keeps 2 hours, not the same wall-clock span
    long = _create(new_york, "2026-03-07T00:30", 120).content
    moved = new_york.call(
        "update_event", {"event_id": long["event_id"], "start": "2026-03-08T00:30"}
    ).content
    assert moved["end"] == "2026-03-08T03:30-04:00[America/New_York]"
    assert _moment(moved["end"]) - _moment(moved["start"]) == dt.timedelta(hours=2)


def test_v1_a_repeating_event_keeps_its_local_time_and_shows_each_offset(
    new_york: Session,
) -> None:
    event = _create(new_york, "2026-03-05T09:00").content["event_id"]
    new_york.call("set_recurrence", {"event_id": event, "frequency": "daily", "count": 5})
    got = new_york.call(
        "list_occurrences",
        {"event_id": event, "start_date": "2026-03-05", "end_date": "2026-03-10"},
    ).content["occurrences"]
    assert [t[11:22] for t in got] == ["09:00-05:00"] * 3 + ["09:00-04:00"] * 2


def test_v1_a_contacts_free_busy_is_their_own_day_in_their_zone(new_york: Session) -> None:
    """An event at 20:00 in New York is 10:00 the next day in Tokyo: it is on the Tokyo
    contact's free/busy for that next day, not for the day it has in New York."""
    email = one(new_york, "SELECT email FROM contacts WHERE timezone = 'Asia/Tokyo' ORDER BY id")
    event = _create(new_york, "2026-03-10T20:00", 30).content["event_id"]
    assert new_york.call("add_invitee", {"event_id": event, "email": email}).ok
    assert new_york.call(
        "respond_to_invitation", {"event_id": event, "email": email, "response": "accepted"}
    ).ok
    theirs = new_york.call("get_free_busy", {"date": "2026-03-11", "email": email}).content
    assert {
        "start": "2026-03-11T09:00+09:00[Asia/Tokyo]",
        "end": "2026-03-11T09:30+09:00[Asia/Tokyo]",
    } in theirs["busy"]
    before = new_york.call("get_free_busy", {"date": "2026-03-10", "email": email}).content
    assert all(_moment(b["start"]) != _moment(theirs["busy"][0]["start"]) for b in before["busy"])
    mine = new_york.call("get_free_busy", {"date": "2026-03-10"}).content["busy"]
    assert "2026-03-10T20:00-04:00[America/New_York]" in [b["start"] for b in mine]


def test_v1_a_free_slot_on_the_day_the_clocks_go_forward_is_elapsed_time(
    new_york: Session,
) -> None:
    slot = new_york.call(
        "find_free_slot",
        {"date": "2026-03-08", "duration_minutes": 90, "earliest": "01:00", "latest": "03:30"},
    ).content
    # 01:00-03:30 on that day is 90 minutes long: the whole of it, if nothing is booked
    busy = new_york.call("get_free_busy", {"date": "2026-03-08"}).content["busy"]
    if not any(_moment(b["start"]) < _moment(slot["end"]) for b in busy):
        assert slot == {
            "start": "2026-03-08T01:00-05:00[America/New_York]",
            "end": "2026-03-08T03:30-04:00[America/New_York]",
        }
    refused = new_york.call(
        "find_free_slot",
        {"date": "2026-03-08", "duration_minutes": 91, "earliest": "01:00", "latest": "03:30"},
    )
    assert refused.error_kind == ErrorKind.PRECONDITION_FAILED


# the days each sampled zone's clocks change in 2026, and the days around them
CHANGE_DAYS = [
    dt.date(2026, 3, 8),
    dt.date(2026, 3, 29),
    dt.date(2026, 4, 5),
    dt.date(2026, 10, 4),
    dt.date(2026, 10, 25),
    dt.date(2026, 11, 1),
    dt.date(2026, 6, 15),
]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.sampled_from(
        [_seed_in(z) for z in ("America/New_York", "Europe/London", "Australia/Sydney")]
    ),
    day=st.sampled_from(CHANGE_DAYS),
    minute=st.integers(0, 24 * 60 - 1),
    length=st.integers(5, 240),
    given_in=st.sampled_from([None, *TIMEZONES]),
)
def test_v1_any_local_time_is_kept_as_its_moment_or_refused_by_its_rule(
    seed: int, day: dt.date, minute: int, length: int, given_in: str | None
) -> None:
    wall = dt.datetime.combine(day, dt.time()) + dt.timedelta(minutes=minute)
    with CALENDAR.session(seed=seed, env_version=1) as s:
        home = zones.zone(one(s, "SELECT timezone FROM settings"))
        tz = zones.zone(given_in) if given_in else home
        start = wall.isoformat(timespec="minutes") + (f"[{given_in}]" if given_in else "")
        before = s.state_hash()
        made = _create(s, start, length)
        moment = wall.replace(tzinfo=tz).astimezone(dt.UTC)
        kept = [
            moment.astimezone(home).replace(tzinfo=None)
            for moment in (moment, moment + dt.timedelta(minutes=length))
        ]
        if not zones.exists(wall, tz):
            assert "nonexistent_local_time" in (made.message or "")
        elif (zones.ambiguous(wall, tz) and given_in is None) or any(
            zones.ambiguous(k, home) for k in kept
        ):
            assert "ambiguous_local_time" in (made.message or "")
        else:
            assert made.ok, made.message
            assert _moment(made.content["start"]) == moment
            assert _moment(made.content["end"]) - moment == dt.timedelta(minutes=length)
            return
        assert made.error_kind == ErrorKind.PRECONDITION_FAILED and s.state_hash() == before


def test_zone_rules_come_from_the_pinned_package_not_the_machine() -> None:
    """With no system zone data at all, every zone the sampler draws still loads, with the
    tzdata package's rules."""
    zones.zone.cache_clear()
    zoneinfo.reset_tzpath(to=[])
    try:
        for name in TIMEZONES:
            tz = zones.zone(name)
            assert tz.key == name and dt.datetime(2026, 7, 1, tzinfo=tz).utcoffset() is not None
        assert (
            str(zones.zone("America/New_York").utcoffset(dt.datetime(2026, 7, 1)))
            == "-1 day, 20:00:00"
        )
    finally:
        zoneinfo.reset_tzpath()
        zones.zone.cache_clear()
    for bad in ["../../etc/passwd", "America", "Mars/Olympus", "x" * 500, "Europe/Berlin/.."]:
        with pytest.raises(zones.ZoneError):
            zones.zone(bad)


def test_v1_update_event_reads_the_offset_of_a_new_start(new_york: Session) -> None:
    """-v0's update_event dropped a start's offset: 10:30 in Tokyo was kept as 10:30 at home."""
    event = _create(new_york, "2026-03-03T09:00").content["event_id"]
    moved = new_york.call("update_event", {"event_id": event, "start": "2026-03-04T10:30+09:00"})
    assert moved.content["start"] == "2026-03-03T20:30-05:00[America/New_York]"
    with CALENDAR.session(seed=_seed_in("America/New_York")) as v0:
        old = _create(v0, "2026-03-03T09:00").content["event_id"]
        kept = v0.call("update_event", {"event_id": old, "start": "2026-03-04T10:30+09:00"})
        assert kept.content["start"] == "2026-03-04T10:30"  # -v0 keeps its meaning
