"""The video_meeting server: lifecycle, host, waiting-room and recording rules under random call
sequences, one test per domain rule, its tasks, and the conformance suite."""

from __future__ import annotations

import datetime as dt
import json
import random
import re
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from pydantic import TypeAdapter

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import count, one, rows

VM = prove_gym.get_server("video_meeting")
SEEDS = [0, 5, 13]
RANK = {"scheduled": 0, "live": 1, "ended": 2}


# ------------------------------------------------------------ the invariants
_seen: weakref.WeakKeyDictionary[Session, dict[str, str]] = weakref.WeakKeyDictionary()


def rule_violations(session: Session) -> list[str]:
    """Every broken video_meeting rule, read straight from SQLite (see models.py)."""
    broken: list[str] = []

    def check(what: str, sql: str, *params: Any) -> None:
        found = rows(session, sql, *params)
        if found:
            broken.append(f"{what}: {found[:5]}")

    check(
        "a meeting's status and times disagree",
        """SELECT id, status, started_at, ended_at FROM meetings
           WHERE status NOT IN ('scheduled', 'live', 'ended')
              OR (status = 'scheduled' AND (started_at IS NOT NULL OR ended_at IS NOT NULL))
              OR (status = 'live' AND (started_at IS NULL OR ended_at IS NOT NULL))
              OR (status = 'ended' AND (started_at IS NULL OR ended_at IS NULL
                                        OR ended_at < started_at))""",
    )
    check(
        "a meeting does not have exactly one host, or it is not the meeting's host_id",
        """SELECT m.id, COUNT(p.id) FROM meetings m
           LEFT JOIN participants p ON p.meeting_id = m.id AND p.role = 'host'
           GROUP BY m.id
           HAVING COUNT(p.id) != 1 OR MAX(p.user_id) IS NOT m.host_id""",
    )
    check(
        "a live meeting's host is not present",
        """SELECT m.id, p.status FROM meetings m JOIN participants p
             ON p.meeting_id = m.id AND p.role = 'host'
           WHERE m.status = 'live' AND p.status != 'in_meeting'""",
    )
    check(
        "a scheduled meeting has someone other than an invitee or a removed invitee",
        """SELECT p.id, p.status FROM participants p JOIN meetings m ON m.id = p.meeting_id
           WHERE m.status = 'scheduled' AND p.status NOT IN ('invited', 'removed')""",
    )
    check(
        "someone is still in, or waiting for, an ended meeting",
        """SELECT p.id, p.status FROM participants p JOIN meetings m ON m.id = p.meeting_id
           WHERE m.status = 'ended' AND p.status IN ('in_meeting', 'waiting')""",
    )
    check(
        "someone is both admitted and waiting (two rows for one person in one meeting)",
        """SELECT meeting_id, email, COUNT(*) FROM participants
           GROUP BY meeting_id, email HAVING COUNT(*) > 1""",
    )
    check(
        "someone waits in a meeting without a waiting room, or a host/removed role is odd",
        """SELECT p.id FROM participants p JOIN meetings m ON m.id = p.meeting_id
           WHERE (p.status = 'waiting' AND (m.waiting_room = 0 OR m.status != 'live'))
              OR p.status NOT IN ('invited', 'waiting', 'in_meeting', 'left', 'removed')
              OR p.role NOT IN ('host', 'co_host', 'attendee')
              OR (p.role = 'host' AND (p.user_id IS NULL OR p.status = 'removed'))
              OR (p.status = 'removed' AND p.role != 'attendee')""",
    )
    check(
        "more people in a meeting than its capacity, or more than 4 co-hosts",
        """SELECT m.id, m.capacity,
                  SUM(p.status = 'in_meeting'), SUM(p.role = 'co_host')
           FROM meetings m JOIN participants p ON p.meeting_id = m.id GROUP BY m.id
           HAVING SUM(p.status = 'in_meeting') > m.capacity OR SUM(p.role = 'co_host') > 4""",
    )
    check(
        "a recording exists for a meeting that has not ended or does not allow recording",
        """SELECT r.id, m.id, m.status FROM recordings r JOIN meetings m ON m.id = r.meeting_id
           WHERE m.status != 'ended' OR m.allow_recording = 0 OR r.duration_seconds < 60
              OR r.transcript_status NOT IN ('ready', 'processing', 'none')""",
    )
    check(
        "a transcript exists for a recording that is not ready",
        """SELECT t.id, r.id FROM transcript_lines t JOIN recordings r ON r.id = t.recording_id
           WHERE r.transcript_status != 'ready'""",
    )
    check(
        "cloud recording runs in a meeting that is not live or does not allow it",
        """SELECT id, status FROM meetings WHERE recording_started_at IS NOT NULL
           AND (status != 'live' OR allow_recording = 0)""",
    )
    check(
        "a host runs two live meetings",
        """SELECT host_id, COUNT(*) FROM meetings WHERE status = 'live'
           GROUP BY host_id HAVING COUNT(*) > 1""",
    )
    # the lifecycle never goes backwards (compared with this session's last check)
    now = dict(rows(session, "SELECT id, status FROM meetings"))
    before = _seen.get(session, {})
    back = sorted(
        (m, before[m], s) for m, s in now.items() if m in before and RANK[s] < RANK[before[m]]
    )
    if back:
        broken.append(f"a meeting's lifecycle went backwards: {back[:5]}")
    gone = sorted(set(before) - set(now))
    if gone:
        broken.append(f"meetings disappeared: {gone[:5]}")
    _seen[session] = now
    return broken


# ------------------------------------------------------------ fixtures
@pytest.fixture
def vm() -> Iterator[Session]:
    session = VM.session(seed=0)
    yield session
    session.close()


def call_ok(session: Session, name: str, args: dict[str, Any]) -> Any:
    result = session.call(name, args)
    assert result.ok, f"{name}({args}): {result.message}"
    return result.content


def refused(session: Session, name: str, args: dict[str, Any], kind: ErrorKind, rule: str) -> str:
    """Call, expect a refusal naming ``rule`` that changes nothing; returns the message."""
    before = session.state_hash()
    result = session.call(name, args)
    assert result.error_kind == kind, (name, args, result.error_kind, result.message)
    assert f"Rule '{rule}'" in (result.message or ""), result.message
    assert session.state_hash() == before, f"refused {name} changed the state"
    return result.message or ""


def meeting_with(session: Session, status: str, extra: str = "1") -> str:
    return one(session, f"SELECT id FROM meetings WHERE status = ? AND {extra} ORDER BY id", status)


def startable(session: Session) -> str:
    """A scheduled meeting whose host is not running another meeting."""
    return meeting_with(
        session,
        "scheduled",
        "host_id NOT IN (SELECT host_id FROM meetings WHERE status = 'live')",
    )


def waiting_in_room_with_space(session: Session) -> str:
    return one(
        session,
        """SELECT p.id FROM participants p JOIN meetings m ON m.id = p.meeting_id
           WHERE p.status = 'waiting' AND m.capacity >
             (SELECT COUNT(*) FROM participants q WHERE q.meeting_id = m.id
              AND q.status = 'in_meeting') ORDER BY p.id""",
    )


# ------------------------------------------------------------ sampled states
@pytest.mark.parametrize("seed", SEEDS)
def test_a_sampled_organisation_is_big_enough_and_keeps_every_rule(seed: int) -> None:
    with VM.session(seed=seed) as session:
        assert count(session, "SELECT COUNT(*) FROM users") == 40
        statuses = dict(rows(session, "SELECT status, COUNT(*) FROM meetings GROUP BY status"))
        assert statuses["ended"] >= 30 and statuses["live"] == 8 and statuses["scheduled"] >= 25
        assert count(session, "SELECT COUNT(*) FROM participants") >= 400
        assert count(session, "SELECT COUNT(*) FROM participants WHERE status = 'waiting'") >= 3
        assert count(session, "SELECT COUNT(*) FROM recordings") >= 8
        assert count(session, "SELECT COUNT(*) FROM transcript_lines") >= 60
        assert count(session, "SELECT COUNT(*) FROM meetings WHERE recording_started_at") >= 1
        full = """SELECT COUNT(*) FROM meetings m WHERE m.status = 'live' AND m.capacity =
                  (SELECT COUNT(*) FROM participants p WHERE p.meeting_id = m.id
                   AND p.status = 'in_meeting')
                  AND EXISTS (SELECT 1 FROM participants p WHERE p.meeting_id = m.id
                   AND p.status = 'waiting')"""
        assert count(session, full) == 1
        assert rule_violations(session) == []


def test_larger_sizes_scale_and_stay_consistent() -> None:
    with VM.session(seed=3, size=2) as session:
        assert count(session, "SELECT COUNT(*) FROM users") == 80
        assert count(session, "SELECT COUNT(*) FROM meetings") == 148
        assert rule_violations(session) == []


# ------------------------------------------------------------ lifecycle
def test_a_meeting_goes_scheduled_live_ended_and_never_back(vm: Session) -> None:
    meeting = startable(vm)
    host = one(vm, "SELECT id FROM participants WHERE meeting_id = ? AND role = 'host'", meeting)
    live = call_ok(vm, "start_meeting", {"meeting_id": meeting})
    assert live["status"] == "live" and live["started_at"] == vm.now.isoformat(timespec="minutes")
    assert [p["participant_id"] for p in live["participants"] if p["status"] == "in_meeting"] == [
        host
    ]
    refused(vm, "start_meeting", {"meeting_id": meeting}, ErrorKind.PRECONDITION_FAILED,
            "meeting_not_scheduled")  # fmt: skip
    ended = call_ok(vm, "end_meeting", {"meeting_id": meeting})
    assert ended["meeting"]["status"] == "ended" and ended["people_disconnected"] == 1
    assert ended["recording"] is None  # nothing was recorded
    message = refused(
        vm, "start_meeting", {"meeting_id": meeting}, ErrorKind.PRECONDITION_FAILED,
        "meeting_not_scheduled",
    )  # fmt: skip
    assert "schedule a new meeting" in message
    refused(vm, "end_meeting", {"meeting_id": meeting}, ErrorKind.PRECONDITION_FAILED,
            "meeting_not_live")  # fmt: skip
    assert rule_violations(vm) == []


def test_a_host_runs_one_live_meeting_at_a_time(vm: Session) -> None:
    meeting = meeting_with(
        vm, "scheduled", "host_id IN (SELECT host_id FROM meetings WHERE status = 'live')"
    )
    other = one(
        vm,
        """SELECT l.id FROM meetings l JOIN meetings s ON s.host_id = l.host_id
           WHERE l.status = 'live' AND s.id = ?""",
        meeting,
    )
    message = refused(
        vm, "start_meeting", {"meeting_id": meeting}, ErrorKind.PRECONDITION_FAILED,
        "host_already_live",
    )  # fmt: skip
    assert other in message and "end that meeting first" in message
    call_ok(vm, "end_meeting", {"meeting_id": other})
    assert call_ok(vm, "start_meeting", {"meeting_id": meeting})["status"] == "live"


def test_ending_disconnects_everyone_and_clears_the_waiting_room(vm: Session) -> None:
    meeting = meeting_with(
        vm, "live", "id IN (SELECT meeting_id FROM participants WHERE status = 'waiting')"
    )
    present = count(
        vm,
        "SELECT COUNT(*) FROM participants WHERE meeting_id = ? AND status = 'in_meeting'",
        meeting,
    )
    waiting = count(
        vm, "SELECT COUNT(*) FROM participants WHERE meeting_id = ? AND status = 'waiting'", meeting
    )
    done = call_ok(vm, "end_meeting", {"meeting_id": meeting})
    assert (done["people_disconnected"], done["waiting_room_cleared"]) == (present, waiting)
    assert done["meeting"]["in_meeting"] == done["meeting"]["waiting"] == 0
    assert rule_violations(vm) == []


# ------------------------------------------------------------ waiting room
def test_admitting_needs_a_waiting_person_in_a_live_meeting(vm: Session) -> None:
    person = waiting_in_room_with_space(vm)
    done = call_ok(vm, "admit_participant", {"participant_id": person})
    assert done["participant"]["status"] == "in_meeting" and done["previous_status"] == "waiting"
    message = refused(
        vm, "admit_participant", {"participant_id": person}, ErrorKind.PRECONDITION_FAILED,
        "not_waiting",
    )  # fmt: skip
    assert "'in_meeting'" in message and "already in the meeting" in message
    invited = one(
        vm,
        """SELECT p.id FROM participants p JOIN meetings m ON m.id = p.meeting_id
           WHERE m.status = 'scheduled' AND p.status = 'invited' ORDER BY p.id""",
    )
    message = refused(
        vm, "admit_participant", {"participant_id": invited}, ErrorKind.PRECONDITION_FAILED,
        "meeting_not_live",
    )  # fmt: skip
    assert "start the meeting first" in message


def test_a_full_meeting_admits_nobody_until_someone_leaves(vm: Session) -> None:
    person, meeting = rows(
        vm,
        """SELECT p.id, m.id FROM participants p JOIN meetings m ON m.id = p.meeting_id
           WHERE p.status = 'waiting' AND m.capacity =
             (SELECT COUNT(*) FROM participants q WHERE q.meeting_id = m.id
              AND q.status = 'in_meeting') ORDER BY p.id""",
    )[0]
    refused(vm, "admit_participant", {"participant_id": person}, ErrorKind.PRECONDITION_FAILED,
            "meeting_full")  # fmt: skip
    attendee = one(
        vm,
        """SELECT id FROM participants WHERE meeting_id = ? AND status = 'in_meeting'
           AND role != 'host' ORDER BY id""",
        meeting,
    )
    call_ok(vm, "remove_participant", {"participant_id": attendee})
    assert call_ok(vm, "admit_participant", {"participant_id": person})["in_meeting"] == count(
        vm, "SELECT capacity FROM meetings WHERE id = ?", meeting
    )


def test_removed_people_cannot_come_back_or_get_a_role(vm: Session) -> None:
    person = waiting_in_room_with_space(vm)
    done = call_ok(vm, "remove_participant", {"participant_id": person})
    assert (done["previous_status"], done["participant"]["status"]) == ("waiting", "removed")
    refused(vm, "admit_participant", {"participant_id": person}, ErrorKind.PRECONDITION_FAILED,
            "not_waiting")  # fmt: skip
    refused(vm, "remove_participant", {"participant_id": person}, ErrorKind.CONFLICT,
            "participant_removed")  # fmt: skip
    refused(
        vm, "set_participant_role", {"participant_id": person, "role": "co_host"},
        ErrorKind.PRECONDITION_FAILED, "participant_removed",
    )  # fmt: skip


# ------------------------------------------------------------ roles
def test_the_host_cannot_be_removed_or_demoted_only_replaced(vm: Session) -> None:
    meeting = meeting_with(vm, "live")
    host = one(vm, "SELECT id FROM participants WHERE meeting_id = ? AND role = 'host'", meeting)
    refused(vm, "remove_participant", {"participant_id": host}, ErrorKind.PRECONDITION_FAILED,
            "meeting_needs_host")  # fmt: skip
    refused(
        vm, "set_participant_role", {"participant_id": host, "role": "attendee"},
        ErrorKind.PRECONDITION_FAILED, "meeting_needs_host",
    )  # fmt: skip
    member = one(
        vm,
        """SELECT id FROM participants WHERE meeting_id = ? AND status = 'in_meeting'
           AND role = 'attendee' AND user_id IS NOT NULL ORDER BY id""",
        meeting,
    )
    done = call_ok(vm, "set_participant_role", {"participant_id": member, "role": "host"})
    assert done["host_participant_id"] == member and done["previous_role"] == "attendee"
    assert one(vm, "SELECT role FROM participants WHERE id = ?", host) == "co_host"
    new_host = one(vm, "SELECT user_id FROM participants WHERE id = ?", member)
    assert one(vm, "SELECT host_id FROM meetings WHERE id = ?", meeting) == new_host
    assert rule_violations(vm) == []


def test_the_host_role_of_a_live_meeting_goes_to_a_present_member(vm: Session) -> None:
    absent = one(
        vm,
        """SELECT p.id FROM participants p JOIN meetings m ON m.id = p.meeting_id
           WHERE m.status = 'live' AND p.status IN ('invited', 'left') AND p.user_id IS NOT NULL
           ORDER BY p.id""",
    )
    refused(
        vm, "set_participant_role", {"participant_id": absent, "role": "host"},
        ErrorKind.PRECONDITION_FAILED, "host_must_be_present",
    )  # fmt: skip
    guest = one(
        vm,
        """SELECT p.id FROM participants p JOIN meetings m ON m.id = p.meeting_id
           WHERE m.status != 'ended' AND p.user_id IS NULL AND p.status IN
           ('in_meeting', 'invited') ORDER BY p.id""",
    )
    refused(
        vm, "set_participant_role", {"participant_id": guest, "role": "host"},
        ErrorKind.PRECONDITION_FAILED, "guests_cannot_host",
    )  # fmt: skip
    waiting = waiting_in_room_with_space(vm)
    refused(
        vm, "set_participant_role", {"participant_id": waiting, "role": "co_host"},
        ErrorKind.PRECONDITION_FAILED, "still_waiting",
    )  # fmt: skip


def test_a_meeting_has_at_most_four_co_hosts(vm: Session) -> None:
    meeting = one(
        vm,
        """SELECT meeting_id FROM participants p JOIN meetings m ON m.id = p.meeting_id
           WHERE m.status = 'scheduled' AND p.role = 'attendee' GROUP BY meeting_id
           HAVING COUNT(*) >= 6 ORDER BY meeting_id""",
    )
    people = [
        p
        for (p,) in rows(
            vm,
            "SELECT id FROM participants WHERE meeting_id = ? AND role = 'attendee' ORDER BY id",
            meeting,
        )
    ]
    have = count(
        vm, "SELECT COUNT(*) FROM participants WHERE meeting_id = ? AND role = 'co_host'", meeting
    )
    for p in people[: 4 - have]:
        call_ok(vm, "set_participant_role", {"participant_id": p, "role": "co_host"})
    refused(
        vm, "set_participant_role", {"participant_id": people[4 - have], "role": "co_host"},
        ErrorKind.PRECONDITION_FAILED, "co_host_limit",
    )  # fmt: skip
    refused(
        vm, "set_participant_role", {"participant_id": people[0], "role": "co_host"},
        ErrorKind.CONFLICT, "role_unchanged",
    )  # fmt: skip
    assert rule_violations(vm) == []


def test_an_ended_meeting_cannot_change(vm: Session) -> None:
    person = one(
        vm,
        """SELECT p.id FROM participants p JOIN meetings m ON m.id = p.meeting_id
           WHERE m.status = 'ended' AND p.role = 'attendee' ORDER BY p.id""",
    )
    refused(vm, "remove_participant", {"participant_id": person}, ErrorKind.PRECONDITION_FAILED,
            "meeting_ended")  # fmt: skip
    refused(
        vm, "set_participant_role", {"participant_id": person, "role": "co_host"},
        ErrorKind.PRECONDITION_FAILED, "meeting_ended",
    )  # fmt: skip
    refused(vm, "admit_participant", {"participant_id": person}, ErrorKind.PRECONDITION_FAILED,
            "meeting_not_live")  # fmt: skip


# ------------------------------------------------------------ recordings
def test_recordings_appear_only_after_the_meeting_ends(vm: Session) -> None:
    meeting = meeting_with(vm, "live", "allow_recording = 1 AND recording_started_at IS NOT NULL")
    message = refused(
        vm, "set_recording", {"meeting_id": meeting, "action": "start"}, ErrorKind.CONFLICT,
        "already_recording",
    )  # fmt: skip
    assert "since" in message
    stopped = call_ok(vm, "set_recording", {"meeting_id": meeting, "action": "stop"})
    assert stopped["recording_now"] is False and stopped["recorded_minutes"] >= 1
    refused(vm, "set_recording", {"meeting_id": meeting, "action": "stop"},
            ErrorKind.PRECONDITION_FAILED, "not_recording")  # fmt: skip
    assert call_ok(vm, "get_meeting", {"meeting_id": meeting})["recording_files"] == []
    ended = call_ok(vm, "end_meeting", {"meeting_id": meeting})
    rec = ended["recording"]
    assert rec is not None and rec["duration_minutes"] == stopped["recorded_minutes"]
    assert rec["transcript_status"] == "processing"
    message = refused(vm, "get_transcript", {"recording_id": rec["recording_id"]},
                      ErrorKind.PRECONDITION_FAILED, "transcript_not_ready")  # fmt: skip
    assert "'processing'" in message
    files = call_ok(vm, "get_meeting", {"meeting_id": meeting})["recording_files"]
    assert [f["recording_id"] for f in files] == [rec["recording_id"]]
    refused(vm, "set_recording", {"meeting_id": meeting, "action": "start"},
            ErrorKind.PRECONDITION_FAILED, "meeting_not_live")  # fmt: skip
    assert rule_violations(vm) == []


def test_a_meeting_started_and_ended_at_once_keeps_a_one_minute_recording(vm: Session) -> None:
    meeting = startable(vm)
    if not count(vm, "SELECT allow_recording FROM meetings WHERE id = ?", meeting):
        meeting = one(
            vm,
            """SELECT id FROM meetings WHERE status = 'scheduled' AND allow_recording = 1
               AND host_id NOT IN (SELECT host_id FROM meetings WHERE status = 'live')
               ORDER BY id""",
        )
    call_ok(vm, "start_meeting", {"meeting_id": meeting})
    call_ok(vm, "set_recording", {"meeting_id": meeting, "action": "start"})
    rec = call_ok(vm, "end_meeting", {"meeting_id": meeting})["recording"]
    assert rec["duration_minutes"] == 1 and rec["size_mb"] == 9


def test_confidential_meetings_are_never_recorded(vm: Session) -> None:
    meeting = meeting_with(vm, "live", "allow_recording = 0")
    refused(vm, "set_recording", {"meeting_id": meeting, "action": "start"},
            ErrorKind.PRECONDITION_FAILED, "recording_not_allowed")  # fmt: skip
    done = call_ok(vm, "end_meeting", {"meeting_id": meeting})
    assert done["recording"] is None


def test_transcripts_read_in_order_and_filter_by_words_and_speaker(vm: Session) -> None:
    rec = one(vm, "SELECT id FROM recordings WHERE transcript_status = 'ready' ORDER BY id")
    whole = call_ok(vm, "get_transcript", {"recording_id": rec, "limit": 200})
    assert whole["total"] == len(whole["lines"]) >= 8
    assert [line["seq"] for line in whole["lines"]] == sorted(
        line["seq"] for line in whole["lines"]
    )
    assert whole["lines"][0]["text"] == "Thanks everyone for joining, let's get started."
    speaker = whole["lines"][0]["speaker"].split()[0]
    mine = call_ok(vm, "get_transcript", {"recording_id": rec, "speaker": speaker.upper()})
    assert mine["lines"] and all(speaker in line["speaker"] for line in mine["lines"])
    found = call_ok(vm, "get_transcript", {"recording_id": rec, "search": "EVERYONE"})
    assert all("everyone" in line["text"].lower() for line in found["lines"])
    none = one(vm, "SELECT id FROM recordings WHERE transcript_status = 'none' ORDER BY id")
    refused(vm, "get_transcript", {"recording_id": none}, ErrorKind.PRECONDITION_FAILED,
            "no_transcript")  # fmt: skip


# ------------------------------------------------------------ scheduling
def users(session: Session, n: int) -> list[str]:
    return [e for (e,) in rows(session, "SELECT email FROM users ORDER BY id LIMIT ?", n)]


def test_scheduling_invites_the_host_and_the_invitees(vm: Session) -> None:
    host, *guests = users(vm, 3)
    made = call_ok(
        vm,
        "schedule_meeting",
        {
            "host_email": host.upper(),
            "title": "  Roadmap   review ",
            "start_time": "2026-05-04T10:30",
            "duration_minutes": 45,
            "invitees": [*guests, guests[0]],
            "waiting_room": True,
        },
    )
    assert made["title"] == "Roadmap review" and made["status"] == "scheduled"
    assert made["scheduled_start"] == "2026-05-04T10:30" and made["waiting_room"] is True
    assert sorted((p["email"], p["role"], p["status"]) for p in made["participants"]) == sorted(
        [(host, "host", "invited")] + [(g, "attendee", "invited") for g in guests]
    )
    assert rule_violations(vm) == []


@settings(max_examples=15, deadline=None)
@given(
    offset_hours=st.integers(min_value=-48, max_value=24 * 400),
    minutes=st.sampled_from([15, 30, 60, 90]),
)
def test_a_meeting_starts_in_the_future_and_never_overlaps_its_host(
    offset_hours: int, minutes: int
) -> None:
    with VM.session(seed=0) as session:
        host, guest = users(session, 2)
        start = session.now.replace(second=0, microsecond=0) + dt.timedelta(hours=offset_hours)
        args = {
            "host_email": host,
            "title": "Planning",
            "start_time": start.isoformat(timespec="minutes"),
            "duration_minutes": minutes,
            "invitees": [guest],
        }
        before = session.state_hash()
        first = session.call("schedule_meeting", args)
        if not 0 < offset_hours <= 24 * 365:
            assert first.error_kind == ErrorKind.PRECONDITION_FAILED
            assert "Rule 'start_in_future'" in (first.message or "")
            assert session.state_hash() == before
            return
        if not first.ok:  # the host's own sampled meeting overlaps
            assert "Rule 'host_double_booked'" in (first.message or ""), first.message
            return
        refused(session, "schedule_meeting", args, ErrorKind.PRECONDITION_FAILED,
                "host_double_booked")  # fmt: skip
        assert rule_violations(session) == []


@pytest.mark.parametrize(
    "change, error",
    [
        ({"host_email": "nobody@elsewhere.com"}, ErrorKind.BAD_ARGUMENTS),
        ({"invitees": ["stranger@elsewhere.com"]}, ErrorKind.BAD_ARGUMENTS),
        ({"start_time": "next tuesday"}, ErrorKind.BAD_ARGUMENTS),
        ({"start_time": "2026-05-04T10:30+02:00"}, ErrorKind.BAD_ARGUMENTS),
        ({"title": "   "}, ErrorKind.BAD_ARGUMENTS),
        ({"duration_minutes": 5}, ErrorKind.BAD_ARGUMENTS),
        ({"invitees": []}, ErrorKind.BAD_ARGUMENTS),
    ],
)
def test_bad_schedules_are_refused_before_anything_happens(
    vm: Session, change: dict[str, Any], error: ErrorKind
) -> None:
    host, guest = users(vm, 2)
    args = {
        "host_email": host,
        "title": "Sync",
        "start_time": "2026-05-04T10:30",
        "duration_minutes": 30,
        "invitees": [guest],
        **change,
    }
    before = vm.state_hash()
    result = vm.call("schedule_meeting", args)
    assert result.error_kind == error, (change, result.message)
    assert vm.state_hash() == before
    host_only = {**args, "invitees": [host]}
    assert vm.call("schedule_meeting", host_only).error_kind == ErrorKind.BAD_ARGUMENTS


def test_find_meetings_orders_live_then_upcoming_then_recent(vm: Session) -> None:
    found = call_ok(vm, "find_meetings", {"limit": 50})
    statuses = [m["status"] for m in found["meetings"]]
    assert statuses == sorted(statuses, key=["live", "scheduled", "ended"].index)
    upcoming = [m["scheduled_start"] for m in found["meetings"] if m["status"] == "scheduled"]
    assert upcoming == sorted(upcoming)
    email = users(vm, 1)[0]
    mine = call_ok(vm, "find_meetings", {"participant_email": email, "limit": 50})
    expected = count(
        vm, "SELECT COUNT(DISTINCT meeting_id) FROM participants WHERE email = ?", email
    )
    assert mine["total"] == expected


# ------------------------------------------------------------ stateful
class MeetingRules(RuleBasedStateMachine):
    """Plausible meeting calls; the rules hold after every one, and a refused call changes
    nothing."""

    session: Session

    @initialize(seed=st.sampled_from(SEEDS))
    def start(self, seed: int) -> None:
        self.session = VM.session(seed=seed)
        self.hash = self.session.state_hash()

    def _call(self, name: str, args: dict[str, Any]) -> None:
        result = self.session.call(name, args)
        assert result.error_kind != ErrorKind.INTERNAL, result.message
        after = self.session.state_hash()
        if not result.ok or not VM.tools[name].writes:
            assert after == self.hash, f"{name}({args}) changed state: {result.message}"
        self.hash = after

    def _ids(self, sql: str) -> list[str]:
        return [i for (i,) in rows(self.session, sql)]

    @rule(data=st.data(), name=st.sampled_from(["start_meeting", "end_meeting", "get_meeting"]))
    def lifecycle(self, data: st.DataObject, name: str) -> None:
        meetings = self._ids("SELECT id FROM meetings WHERE status != 'ended' ORDER BY id")
        everything = self._ids("SELECT id FROM meetings ORDER BY id")
        meeting = data.draw(st.sampled_from(meetings) | st.sampled_from(everything))
        self._call(name, {"meeting_id": meeting})

    @rule(data=st.data(), action=st.sampled_from(["start", "stop"]))
    def record(self, data: st.DataObject, action: str) -> None:
        meetings = self._ids("SELECT id FROM meetings WHERE status = 'live' ORDER BY id")
        if meetings:
            meeting = data.draw(st.sampled_from(meetings))
            self._call("set_recording", {"meeting_id": meeting, "action": action})

    @rule(
        data=st.data(),
        name=st.sampled_from(["admit_participant", "remove_participant", "set_participant_role"]),
        role=st.sampled_from(["host", "co_host", "attendee"]),
    )
    def people(self, data: st.DataObject, name: str, role: str) -> None:
        people = self._ids(
            """SELECT p.id FROM participants p JOIN meetings m ON m.id = p.meeting_id
               WHERE m.status = 'live' ORDER BY p.id"""
        )
        anyone = self._ids("SELECT id FROM participants ORDER BY id DESC LIMIT 40")
        person = data.draw(st.sampled_from(people) | st.sampled_from(anyone))
        args: dict[str, Any] = {"participant_id": person}
        if name == "set_participant_role":
            args["role"] = role
        self._call(name, args)

    @rule(data=st.data(), hours=st.integers(min_value=-2, max_value=72))
    def schedule(self, data: st.DataObject, hours: int) -> None:
        emails = self._ids("SELECT email FROM users ORDER BY id")
        host = data.draw(st.sampled_from(emails))
        guests = data.draw(st.lists(st.sampled_from(emails), min_size=1, max_size=3))
        start = self.session.now + dt.timedelta(hours=hours)
        self._call(
            "schedule_meeting",
            {
                "host_email": host,
                "title": "Check-in",
                "start_time": start.isoformat(timespec="minutes"),
                "duration_minutes": 30,
                "invitees": guests,
                "waiting_room": data.draw(st.booleans()),
            },
        )

    @invariant()
    def the_meeting_rules_hold(self) -> None:
        if hasattr(self, "session"):
            assert rule_violations(self.session) == []

    def teardown(self) -> None:
        if hasattr(self, "session"):
            self.session.close()


TestMeetingRules = MeetingRules.TestCase
TestMeetingRules.settings = settings(
    max_examples=10,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# ------------------------------------------------------------ conformance
FUZZ_SAMPLES = [
    "mtg_0001",
    "mtg_9999",
    "par_00001",
    "par_99999",
    "rec_0001",
    "rec_9999",
    "ana.silva@northwind.io",
    "stranger@elsewhere.com",
    "scheduled",
    "live",
    "ended",
    "host",
    "co_host",
    "start",
    "stop",
    "2026-05-04T10:30",
    "2020-01-01T09:00",
    "9999-12-31T23:59",
    "next tuesday",
    "Atlas",
]

TestConformance = conformance_suite(
    "video_meeting", samples=FUZZ_SAMPLES, invariants=rule_violations
)


# ------------------------------------------------------------ declarations
def test_entity_sources_list_entities_that_exist(vm: Session) -> None:
    tables = {
        "user": ("users", "email"),
        "meeting": ("meetings", "id"),
        "participant": ("participants", "id"),
        "recording": ("recordings", "id"),
    }
    assert set(VM.entities) == set(tables)
    for kind, source in VM.entities.items():
        records = vm.list_entities(kind)
        table, column = tables[kind]
        assert records, kind
        ids = {i for (i,) in rows(vm, f"SELECT {column} FROM {table}")}
        assert {r[source.key] for r in records} <= ids, kind
    for record in vm.list_entities("participant"):
        assert record["role"] != record["current_role"] != "host"


def test_example_values_fit_their_parameters(vm: Session) -> None:
    ctx = vm.context()
    rng = random.Random(0)
    for tool in VM.visible_tools():
        fields = tool.args_model.model_fields
        for name, source in tool.examples.items():
            drawn = [source(ctx, rng) for _ in range(5)] if callable(source) else list(source)
            annotation = fields[name].annotation
            assert annotation is not None, (tool.name, name)
            for value in drawn:
                TypeAdapter(annotation).validate_python(value)
        free = [p.name for p in tool.params if p.required and p.entity is None]
        literal = {n for n in free if "enum" in tool.input_schema()["properties"][n]}
        assert set(free) - literal <= set(tool.examples) | set(tool.values), tool.name


def test_the_server_offers_ten_tools() -> None:
    assert len(VM.visible_tools()) == 10
    writes = {t.name for t in VM.visible_tools() if t.writes}
    assert writes == {
        "schedule_meeting",
        "start_meeting",
        "admit_participant",
        "set_participant_role",
        "remove_participant",
        "set_recording",
        "end_meeting",
    }


# ------------------------------------------------------------------- tasks
def test_hand_written_tasks_cover_rules_turns_and_clarify() -> None:
    tasks = [
        t
        for t in prove_gym.get_registry().tasks("video_meeting")
        if re.fullmatch(r"video_meeting-\d{3}", t.id)
    ]
    assert 3 <= len(tasks) <= 8
    assert any(len(t.turns) > 1 for t in tasks)
    assert any(any(s.depends_on for s in t.steps) for t in tasks)


def test_shipped_tasks_are_sorted_unique_and_many() -> None:
    tasks = prove_gym.get_registry().tasks("video_meeting")
    ids = [t.id for t in tasks]
    assert len(ids) == len(set(ids)) >= 200
    lines = VM.tasks_file.read_text().splitlines() if VM.tasks_file else []
    assert [json.loads(line)["id"] for line in lines] == sorted(ids)
