"""The video_meeting server's 10 tools. Docstrings are what the model reads: keep examples concrete.

A meeting's status gates every action: ``scheduled -> live -> ended``, never backwards.
Business rules have names (``meeting_not_live``, ``meeting_full``, ...); a tool that refuses
an action raises ``PreconditionFailed`` (``Conflict`` when the action is already done) with
a message that starts with ``Rule '<name>' failed:``, quotes the status that stood in the
way and says what to do instead. A refused call changes nothing.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import bindparam, case, func, select

from prove_gym.server import (
    Bound,
    Conflict,
    Entity,
    InvalidArgument,
    PreconditionFailed,
    Query,
    Record,
    Server,
    ToolContext,
    TypedDict,
    contains,
    next_id,
    search_pattern,
)

from .models import (
    MAX_CO_HOSTS,
    MAX_DURATION_MINUTES,
    MIN_RECORDING_SECONDS,
    Base,
    Meeting,
    Participant,
    Recording,
    TranscriptLine,
    User,
    recording_seconds,
    recording_size_mb,
)
from .sampler import sample_video_meeting

OUT_OF_SCOPE = (
    "Turn on background blur for me.",
    "Share my screen with the participants.",
    "Split everyone into breakout rooms.",
    "Translate the meeting live into Spanish.",
    "Mute everyone in the meeting.",
    "Enable live captions.",
    "Change the meeting's virtual background.",
    "Write the minutes of the meeting.",
    "Raise my hand in the meeting.",
    "Start a poll in the meeting.",
    "Buy a bigger meeting plan.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

server = Server(
    "video_meeting",
    out_of_scope=OUT_OF_SCOPE,
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.0.0",
    base=Base,
    sampler=sample_video_meeting,
    description="An organisation's video meetings: scheduling, starting and ending meetings, "
    "their participants and roles (host, co-hosts, attendees), the waiting room, cloud "
    "recording, and recordings with transcripts once a meeting has ended.",
    instructions="Video meeting conventions: ids look like 'mtg_0042' (meeting), 'par_00317' "
    "(a person's place in one meeting), 'rec_0012' (recording); people are named by email "
    "such as 'ana.silva@northwind.io'. A meeting is 'scheduled', then 'live', then 'ended', "
    "never backwards, and its status decides what can be done: only a scheduled meeting can "
    "be started; admitting from the waiting room, cloud recording and ending need a live "
    "meeting; an ended meeting cannot change, and its recordings and transcripts appear only "
    "after it ends. Every meeting has exactly one host, who cannot be removed or demoted: "
    "transfer the host role to someone present instead. Times are local, such as "
    "'2026-03-12T14:30'. Refused calls name the rule that failed and change nothing.",
)

MeetingRow = Annotated[Record[Meeting], Entity("meeting")]
ParticipantRow = Annotated[Record[Participant], Entity("participant")]
RecordingRow = Annotated[Record[Recording], Entity("recording")]
UserEmail = Annotated[
    str, Entity("user"), Field(max_length=120, pattern=r"^\s*[^@\s]+@[^@\s]+\.[^@\s]+\s*$")
]
SearchText = Annotated[str, Field(max_length=200)]
Role = Literal["host", "co_host", "attendee"]

RULES: dict[str, str] = {
    "meeting_not_scheduled": "Only a 'scheduled' meeting can be started; a live one is running "
    "and an ended one cannot be restarted (schedule a new meeting instead).",
    "meeting_not_live": "Admitting people, cloud recording and ending need a 'live' meeting: "
    "start a scheduled one first; an ended one cannot change.",
    "meeting_ended": "An 'ended' meeting is history: its participants and roles cannot change.",
    "host_already_live": "A host runs one live meeting at a time: end the other one first.",
    "host_double_booked": "A host cannot host two scheduled meetings whose times overlap.",
    "start_in_future": "A meeting is scheduled from now up to a year ahead.",
    "not_waiting": "Only someone in the waiting room ('waiting') can be admitted.",
    "meeting_full": "No more people can be in a meeting at once than its capacity.",
    "still_waiting": "Someone in the waiting room gets a role only after being admitted.",
    "participant_removed": "Someone removed from a meeting cannot return or get a role.",
    "host_must_be_present": "The host role of a live meeting goes only to someone in it "
    "('in_meeting').",
    "guests_cannot_host": "Only members of the organisation can host; a guest can be co-host.",
    "meeting_needs_host": "The host cannot be demoted or removed: transfer the host role to "
    "someone else first (the previous host becomes a co-host).",
    "co_host_limit": f"A meeting has at most {MAX_CO_HOSTS} co-hosts.",
    "role_unchanged": "Someone already in the requested role is left as they are.",
    "recording_not_allowed": "Confidential meetings (recording not allowed) are never recorded.",
    "already_recording": "Cloud recording is already running.",
    "not_recording": "Cloud recording is not running, so it cannot be stopped.",
    "transcript_not_ready": "A transcript is ready some minutes after the meeting ends.",
    "no_transcript": "Recordings made without transcription have no transcript.",
}

ROLE_RANK = {"host": 0, "co_host": 1, "attendee": 2}
STATUS_RANK = {"in_meeting": 0, "waiting": 1, "invited": 2, "left": 3, "removed": 4}


# ----------------------------------------------------------------- results
class ParticipantOut(TypedDict):
    participant_id: str
    name: str
    email: str
    member: bool
    role: str
    status: str
    joined_at: str | None
    left_at: str | None


class RecordingOut(TypedDict):
    recording_id: str
    duration_minutes: int
    size_mb: int
    transcript_status: str
    transcript_lines: int
    created_at: str


class MeetingSummary(TypedDict):
    meeting_id: str
    title: str
    status: str
    host_name: str
    host_email: str
    scheduled_start: str
    duration_minutes: int
    started_at: str | None
    ended_at: str | None
    waiting_room: bool
    allow_recording: bool
    recording_now: bool
    capacity: int
    in_meeting: int
    waiting: int
    invited: int
    recordings: int


class MeetingList(TypedDict):
    total: int
    meetings: list[MeetingSummary]


class MeetingDetail(MeetingSummary):
    recorded_minutes: int
    waiting_room_queue: list[ParticipantOut]
    participants: list[ParticipantOut]
    recording_files: list[RecordingOut]


class TranscriptLineOut(TypedDict):
    seq: int
    at: str
    speaker: str
    text: str


class TranscriptOut(TypedDict):
    recording_id: str
    meeting_id: str
    meeting_title: str
    duration_minutes: int
    total: int
    lines: list[TranscriptLineOut]


class ParticipantChange(TypedDict):
    meeting_id: str
    meeting_status: str
    participant: ParticipantOut
    previous_role: str
    previous_status: str
    host_participant_id: str
    co_hosts: int
    in_meeting: int
    waiting: int
    capacity: int


class RecordingState(TypedDict):
    meeting_id: str
    recording_now: bool
    recorded_minutes: int
    note: str


class EndedMeeting(TypedDict):
    meeting: MeetingSummary
    people_disconnected: int
    waiting_room_cleared: int
    recording: RecordingOut | None


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
# Writes go through _write, which (as the ORM did) writes only the columns whose value differs.
meetings, participants = Meeting.__table__, Participant.__table__
recordings, users = Recording.__table__, User.__table__


def _people_count(status: str) -> Any:
    """How many of the meeting's participants have ``status`` (a summary column)."""
    return (
        select(func.count())
        .select_from(participants)
        .where(Participant.meeting_id == Meeting.id, Participant.status == status)
        .correlate(meetings)
        .scalar_subquery()
        .label(status)
    )


# a meeting with its host's name and email and the counts a summary shows
_SUMMARIES = select(
    meetings,
    User.name.label("host_name"),
    User.email.label("host_email"),
    _people_count("in_meeting"),
    _people_count("waiting"),
    _people_count("invited"),
    select(func.count())
    .select_from(recordings)
    .where(Recording.meeting_id == Meeting.id)
    .correlate(meetings)
    .scalar_subquery()
    .label("recordings"),
).select_from(meetings.join(users, User.id == Meeting.host_id))
SUMMARY = Query(_SUMMARIES.where(Meeting.id == bindparam("id")))
# a meeting with its host's name and email, without the counts: _detail counts the
# participants and recordings it reads anyway instead of a correlated subquery per count
MEETING_WITH_HOST = Query(
    select(meetings, User.name.label("host_name"), User.email.label("host_email"))
    .select_from(meetings.join(users, User.id == Meeting.host_id))
    .where(Meeting.id == bindparam("id"))
)
MEETING = Query(select(meetings).where(Meeting.id == bindparam("id")))
MEETING_TITLES = Query(select(Meeting.title).order_by(Meeting.id))
MEETINGS = Query(
    select(Meeting.id, Meeting.title, Meeting.status, Meeting.recording_started_at).order_by(
        Meeting.id
    )
)
USER = Query(select(users).where(User.id == bindparam("id")))
USER_BY_EMAIL = Query(select(users).where(User.email == bindparam("email")))
USERS_BY_EMAIL = Query(select(users).where(User.email.in_(bindparam("emails", expanding=True))))
USERS = Query(select(User.email, User.name, User.department).order_by(User.id))
PEOPLE = Query(
    select(participants)
    .where(Participant.meeting_id == bindparam("meeting_id"))
    .order_by(Participant.id)
)
# a recording with how many transcript lines it has
RECORDINGS = Query(
    select(
        recordings,
        select(func.count())
        .select_from(TranscriptLine.__table__)
        .where(TranscriptLine.recording_id == Recording.id)
        .correlate(recordings)
        .scalar_subquery()
        .label("line_count"),
    )
    .where(Recording.meeting_id == bindparam("meeting_id"))
    .order_by(Recording.id)
)
LIVE_HOSTED = Query(
    select(Meeting.id, Meeting.title)
    .where(Meeting.host_id == bindparam("host_id"), Meeting.status == "live")
    .where(Meeting.id != bindparam("exclude"))
    .order_by(Meeting.id)
    .limit(1)
)
SCHEDULED_BEFORE = Query(
    select(Meeting.id, Meeting.title, Meeting.scheduled_start, Meeting.duration_minutes)
    .where(
        Meeting.host_id == bindparam("host_id"),
        Meeting.status == "scheduled",
        Meeting.id != bindparam("exclude"),
        Meeting.scheduled_start < bindparam("end"),
    )
    .order_by(Meeting.scheduled_start, Meeting.id)
)
SCHEDULED_SOON = Query(
    select(Meeting.id)
    .where(Meeting.status == "scheduled", Meeting.scheduled_start < bindparam("end"))
    .order_by(Meeting.scheduled_start, Meeting.id)
)
SOON_HOURS = 36
"""How far ahead a meeting a user starts early may be scheduled (today's or tomorrow's)."""


def meeting_starting_soon(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A scheduled meeting of the next :data:`SOON_HOURS` hours for ``start_meeting``: the
    one drawn if it is, else one that is (None if none is). People start today's meeting a
    little early, not one set for three weeks from now."""
    soon = [
        str(m)
        for m in ctx.sql.scalars(SCHEDULED_SOON, end=ctx.now + dt.timedelta(hours=SOON_HOURS))
    ]
    drawn = str(bound.args.get("meeting_id", ""))
    if drawn in soon:
        return drawn
    return rng.choice(soon) if soon else None


PARTICIPANT = Query(
    select(Participant.role, Participant.status, Meeting.status.label("meeting_status"))
    .join(Meeting, Meeting.id == Participant.meeting_id)
    .where(Participant.id == bindparam("id"))
)


def participant_not_hosting(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The participant in ``participant_id`` if someone would remove them or change their
    role: not the host (who can be neither: a request nobody makes), still in or waiting
    for a meeting that has not ended; None otherwise, so synthesis draws another."""
    drawn = str(bound.args.get("participant_id", ""))
    row = ctx.sql.first(PARTICIPANT, id=drawn)
    if row is None or row.role == "host" or row.meeting_status == "ended":
        return None
    return drawn if row.status not in ("removed", "left") else None


OPEN_PEOPLE = Query(
    select(
        Participant.id,
        Participant.meeting_id,
        Participant.name,
        Participant.status,
        Participant.role,
    )
    .join(Meeting.__table__, Meeting.id == Participant.meeting_id)
    .where(
        Meeting.status != "ended",
        Participant.role != "host",
        Participant.status != "removed",
    )
    .order_by(Participant.id)
)
# recordings whose transcript is ready, with the speaker of their first line (None: no lines)
READY_RECORDINGS = Query(
    select(
        Recording.id,
        Recording.meeting_id,
        Recording.transcript_status,
        select(TranscriptLine.speaker)
        .where(TranscriptLine.recording_id == Recording.id)
        .order_by(TranscriptLine.seq)
        .limit(1)
        .correlate(recordings)
        .scalar_subquery()
        .label("first_speaker"),
    )
    .where(Recording.transcript_status == "ready")
    .order_by(Recording.id)
)


@functools.cache
def _meetings_matching(by_text: bool, by_status: bool, by_email: bool) -> tuple[Query, Query]:
    """find_meetings' statements: how many meetings match, and the page of their summaries."""
    joined = meetings.join(users, User.id == Meeting.host_id)
    where = []
    if by_text:
        where.append(
            contains(bindparam("pattern"), Meeting.title, User.name, User.email, Meeting.id)
        )
    if by_status:
        where.append(Meeting.status == bindparam("status"))
    if by_email:
        where.append(
            Meeting.id.in_(
                select(Participant.meeting_id).where(Participant.email == bindparam("email"))
            )
        )
    total = select(func.count()).select_from(joined).where(*where)
    rank = case((Meeting.status == "live", 0), (Meeting.status == "scheduled", 1), else_=2)
    # scheduled: soonest first; ended: latest first (julianday negated)
    when = case(
        (Meeting.status == "ended", -func.julianday(Meeting.scheduled_start)),
        else_=func.julianday(Meeting.scheduled_start),
    )
    page = _SUMMARIES.where(*where).order_by(rank, when, Meeting.id).limit(bindparam("limit"))
    return Query(total), Query(page)


@functools.cache
def _lines_matching(by_text: bool, by_speaker: bool) -> tuple[Query, Query]:
    """get_transcript's statements: how many lines match, and the first ``limit`` by seq."""
    where = [TranscriptLine.recording_id == bindparam("recording_id")]
    if by_text:
        where.append(contains(bindparam("pattern"), TranscriptLine.text))
    if by_speaker:
        where.append(contains(bindparam("speaker"), TranscriptLine.speaker))
    lines = TranscriptLine.__table__
    total = select(func.count()).select_from(lines).where(*where)
    page = select(lines).where(*where).order_by(TranscriptLine.seq).limit(bindparam("limit"))
    return Query(total), Query(page)


# ----------------------------------------------------------------- helpers
def _broken(rule: str, detail: str) -> PreconditionFailed:
    """The error for a failed business rule: it names the rule, then says what to do."""
    return PreconditionFailed(f"Rule '{rule}' failed: {detail}")


def _done(rule: str, detail: str) -> Conflict:
    return Conflict(f"Rule '{rule}' failed: {detail}")


def _stamp(value: dt.datetime | None) -> str | None:
    return value.isoformat(timespec="minutes") if value is not None else None


def _clock(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _text(value: str, name: str) -> str:
    text = " ".join(value.split())
    if not text:
        raise InvalidArgument(f"{name} must not be empty or blank.")
    return text


def _parse_time(value: str, name: str) -> dt.datetime:
    try:
        parsed = dt.datetime.fromisoformat(value.strip().replace(" ", "T", 1))
    except ValueError:
        raise InvalidArgument(
            f"{name} must be a local date and time such as '2026-03-12T14:30', got {value!r}."
        ) from None
    if parsed.tzinfo is not None:
        raise InvalidArgument(
            f"{name} is a local time without a UTC offset, such as '2026-03-12T14:30'."
        )
    return parsed.replace(second=0, microsecond=0)


def _participant(p: Any) -> ParticipantOut:
    return {
        "participant_id": p.id,
        "name": p.name,
        "email": p.email,
        "member": p.user_id is not None,
        "role": p.role,
        "status": p.status,
        "joined_at": _stamp(p.joined_at),
        "left_at": _stamp(p.left_at),
    }


def _recording(r: Any, lines: int) -> RecordingOut:
    return {
        "recording_id": r.id,
        "duration_minutes": (r.duration_seconds + 59) // 60,
        "size_mb": r.size_mb,
        "transcript_status": r.transcript_status,
        "transcript_lines": lines,
        "created_at": r.created_at.isoformat(timespec="minutes"),
    }


def _count(people: list[Any], status: str) -> int:
    return sum(1 for p in people if p.status == status)


def _host(people: list[Any]) -> Any:
    return next(p for p in people if p.role == "host")


def _summary(m: Any) -> MeetingSummary:
    """A meeting's summary from its ``_SUMMARIES`` row (host and counts included)."""
    return _summary_counted(m, m.in_meeting, m.waiting, m.invited, m.recordings)


def _summary_counted(
    m: Any, in_meeting: int, waiting: int, invited: int, recordings: int
) -> MeetingSummary:
    """A meeting's summary from a row with its host's name and email, and its counts."""
    return {
        "meeting_id": m.id,
        "title": m.title,
        "status": m.status,
        "host_name": m.host_name,
        "host_email": m.host_email,
        "scheduled_start": m.scheduled_start.isoformat(timespec="minutes"),
        "duration_minutes": m.duration_minutes,
        "started_at": _stamp(m.started_at),
        "ended_at": _stamp(m.ended_at),
        "waiting_room": m.waiting_room,
        "allow_recording": m.allow_recording,
        "recording_now": m.recording_started_at is not None,
        "capacity": m.capacity,
        "in_meeting": in_meeting,
        "waiting": waiting,
        "invited": invited,
        "recordings": recordings,
    }


def _people_order(p: Any) -> tuple[int, int, str, str]:
    return (STATUS_RANK[p.status], ROLE_RANK[p.role], p.name.casefold(), p.id)


def _detail(ctx: ToolContext, meeting_id: str) -> MeetingDetail:
    m = ctx.sql.one(MEETING_WITH_HOST, id=meeting_id)
    people = ctx.sql.all(PEOPLE, meeting_id=meeting_id)
    files = ctx.sql.all(RECORDINGS, meeting_id=meeting_id)
    waiting = sorted((p for p in people if p.status == "waiting"), key=_people_order)
    others = sorted((p for p in people if p.status != "waiting"), key=_people_order)
    counts = (_count(people, "in_meeting"), len(waiting), _count(people, "invited"), len(files))
    return {
        **_summary_counted(m, *counts),
        "recorded_minutes": recording_seconds(m, ctx.now) // 60,
        "waiting_room_queue": [_participant(p) for p in waiting],
        "participants": [_participant(p) for p in others],
        "recording_files": [_recording(r, r.line_count) for r in files],
    }


def _why_not_live(m: Any, doing: str) -> PreconditionFailed:
    if m.status == "scheduled":
        advice = "it has not started yet; start the meeting first (only its host can)."
    else:
        advice = (
            f"it ended at {_stamp(m.ended_at)} and cannot change; its recordings and "
            "transcripts are listed with the meeting's details."
        )
    return _broken(
        "meeting_not_live",
        f"cannot {doing}: meeting {m.id} ({m.title!r}) is '{m.status}', not 'live'; {advice}",
    )


def _not_ended(m: Any, doing: str) -> None:
    if m.status == "ended":
        raise _broken(
            "meeting_ended",
            f"cannot {doing}: meeting {m.id} ({m.title!r}) is 'ended' (at "
            f"{_stamp(m.ended_at)}); its participants can no longer change. Schedule a new "
            "meeting if they should meet again.",
        )


def _check_host_free(ctx: ToolContext, user: Any, meeting: Any | None) -> None:
    """A user hosts at most one live meeting at a time."""
    other = ctx.sql.first(
        LIVE_HOSTED, host_id=user.id, exclude=meeting.id if meeting is not None else ""
    )
    if other is not None:
        raise _broken(
            "host_already_live",
            f"{user.name} ({user.email}) is already hosting meeting {other.id} "
            f"({other.title!r}), which is 'live'; end that meeting first, or choose another "
            "host.",
        )


def _check_no_overlap(
    ctx: ToolContext, user: Any, start: dt.datetime, minutes: int, meeting: Any | None
) -> None:
    end = start + dt.timedelta(minutes=minutes)
    rows = ctx.sql.all(
        SCHEDULED_BEFORE,
        host_id=user.id,
        exclude=meeting.id if meeting is not None else "",
        end=end,
    )
    for other in rows:
        if other.scheduled_start + dt.timedelta(minutes=other.duration_minutes) > start:
            raise _broken(
                "host_double_booked",
                f"{user.name} already hosts meeting {other.id} ({other.title!r}) from "
                f"{_stamp(other.scheduled_start)} for {other.duration_minutes} minutes, which "
                "overlaps; pick a time outside it or another host.",
            )


def _change(m: Any, people: list[Any], p: Any, role: str, status: str) -> ParticipantChange:
    """The result of changing ``p``; ``people`` are the meeting's participants as they are now."""
    return {
        "meeting_id": m.id,
        "meeting_status": m.status,
        "participant": _participant(p),
        "previous_role": role,
        "previous_status": status,
        "host_participant_id": _host(people).id,
        "co_hosts": sum(1 for q in people if q.role == "co_host"),
        "in_meeting": _count(people, "in_meeting"),
        "waiting": _count(people, "waiting"),
        "capacity": m.capacity,
    }


def _replaced(people: list[Any], *rows: Any) -> list[Any]:
    """``people`` with each of ``rows`` in the place of the row with its id."""
    new = {r.id: r for r in rows}
    return [new.get(q.id, q) for q in people]


# -------------------------------------------------------- example values
def _future_start(ctx: ToolContext, rng: random.Random) -> str:
    day = ctx.now.date() + dt.timedelta(days=rng.choice([1, 2, 3, 5, 7, 9, 14]))
    hour = rng.choice([9, 10, 11, 13, 14, 15, 16])
    return dt.datetime.combine(day, dt.time(hour, rng.choice([0, 30]))).isoformat(
        timespec="minutes"
    )


def _title_word(ctx: ToolContext, rng: random.Random) -> str:
    titles = ctx.sql.scalars(MEETING_TITLES)
    words = [w for w in rng.choice(titles).split() if len(w) > 3 and w[0].isupper()]
    return words[0] if words else titles[0]


TITLES = [
    "Roadmap review",
    "Onboarding check-in",
    "Budget planning",
    "Launch readiness",
    "Design critique",
    "Customer escalation sync",
]
DURATIONS = [15, 30, 30, 45, 60, 90]
TRANSCRIPT_WORDS = ["deadline", "budget", "action item", "rolled back", "pricing", "launch"]


# ------------------------------------------------------------------- tools
@server.tool(
    returns=("meeting", "user"),
    phrasings=[
        "Find the meetings with '{query}' in the title",
        "Which meetings have '{query}' in their title?",
        "Show the {status} meetings",
        "Show the meetings {participant_email} is part of",
    ],
    examples={"query": _title_word},
)
def find_meetings(
    ctx: ToolContext,
    query: SearchText | None = None,
    status: Literal["scheduled", "live", "ended"] | None = None,
    participant_email: UserEmail | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 20,
) -> MeetingList:
    """Find meetings by title, host, status or participant.

    Live meetings come first, then scheduled ones soonest first, then ended ones latest
    first.

    Args:
        query: Case-insensitive text in the title or the host's name or email, such as
            "design review", "Atlas" or "maria.lopez@northwind.io".
        status: Only "scheduled", "live" or "ended" meetings.
        participant_email: Only meetings this person is part of (invited, present or
            past), such as "ana.silva@northwind.io".
        limit: Maximum number of meetings to return (1-50), such as 20.

    Returns:
        {"total": 7, "meetings": [{"meeting_id": "mtg_0042", "title": "Atlas design review",
        "status": "live", "host_name": "Maria Lopez", "scheduled_start": "2026-03-12T14:30",
        "in_meeting": 5, "waiting": 2, "recording_now": true, "recordings": 0, ...}]};
        total counts every match.
    """
    params: dict[str, Any] = {}
    text = (query or "").strip()
    if text:
        params["pattern"] = search_pattern(text)
    if status is not None:
        params["status"] = status
    if participant_email is not None:
        params["email"] = participant_email.strip().casefold()
    count, page = _meetings_matching(bool(text), status is not None, participant_email is not None)
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(page, limit=limit, **params)
    return {"total": total, "meetings": [_summary(m) for m in rows]}


@server.tool(
    returns=("meeting", "participant", "recording"),
    phrasings=["Show me meeting {meeting_id}", "Who was invited to meeting {meeting_id}?"],
)
def get_meeting(ctx: ToolContext, meeting_id: MeetingRow) -> MeetingDetail:
    """Get one meeting: its status, the waiting room, every participant and its recordings.

    Participants are listed with their role ("host", "co_host", "attendee") and status:
    "in_meeting" (present), "waiting" (in the waiting room), "invited" (not arrived),
    "left" or "removed". Recordings appear only once the meeting has ended.

    Args:
        meeting_id: The meeting, such as "mtg_0042" (find_meetings finds it by title).

    Returns:
        {"meeting_id": "mtg_0042", "status": "live", "capacity": 50, "recording_now": true,
        "recorded_minutes": 23, "waiting_room_queue": [{"participant_id": "par_00317",
        "name": "Tom Becker", "email": "tom.becker@acme.com", "member": false,
        "role": "attendee", "status": "waiting", ...}], "participants": [...],
        "recording_files": [{"recording_id": "rec_0012", "duration_minutes": 58,
        "transcript_status": "ready", ...}], ...}.
    """
    return _detail(ctx, meeting_id.id)


@server.tool(
    returns=("recording", "meeting"),
    phrasings=[
        "Show the transcript of recording {recording_id}",
        "What did they say about {search} in recording {recording_id}?",
        "What did {speaker} say in recording {recording_id}?",
    ],
    examples={"search": TRANSCRIPT_WORDS},
)
def get_transcript(
    ctx: ToolContext,
    recording_id: RecordingRow,
    search: SearchText | None = None,
    speaker: Annotated[str, Field(max_length=80)] | None = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 50,
) -> TranscriptOut:
    """Read the transcript of an ended meeting's recording, in the order it was spoken.

    Args:
        recording_id: The recording, such as "rec_0012" (get_meeting lists a meeting's
            recordings once it has ended).
        search: Only lines containing this text, case-insensitive, such as "budget".
        speaker: Only lines spoken by someone whose name contains this, such as "Maria".
        limit: Maximum number of lines to return (1-200), such as 50.

    Returns:
        {"recording_id": "rec_0012", "meeting_id": "mtg_0007", "meeting_title": "Weekly
        Sales sync", "total": 12, "lines": [{"seq": 1, "at": "00:00:41", "speaker":
        "Maria Lopez", "text": "Thanks everyone for joining, let's get started."}, ...]};
        total counts every matching line.
    """
    rec = recording_id
    meeting = ctx.sql.one(MEETING, id=rec.meeting_id)
    if rec.transcript_status == "processing":
        raise _broken(
            "transcript_not_ready",
            f"recording {rec.id} of meeting {meeting.id} is 'processing': the meeting ended "
            f"at {_stamp(meeting.ended_at)} and its transcript is not ready yet. Tell the user "
            "it will be available shortly; the recording itself is listed with the meeting.",
        )
    if rec.transcript_status == "none":
        raise _broken(
            "no_transcript",
            f"recording {rec.id} of meeting {meeting.id} was made without transcription "
            "(transcript 'none'), so there is nothing to read; only the recording exists.",
        )
    params: dict[str, Any] = {"recording_id": rec.id}
    if (search or "").strip():
        params["pattern"] = search_pattern((search or "").strip())
    if (speaker or "").strip():
        params["speaker"] = search_pattern((speaker or "").strip())
    count, page = _lines_matching("pattern" in params, "speaker" in params)
    total = ctx.sql.scalar(count, **params) or 0
    lines = ctx.sql.all(page, limit=limit, **params)
    return {
        "recording_id": rec.id,
        "meeting_id": meeting.id,
        "meeting_title": meeting.title,
        "duration_minutes": (rec.duration_seconds + 59) // 60,
        "total": total,
        "lines": [
            {"seq": t.seq, "at": _clock(t.offset_seconds), "speaker": t.speaker, "text": t.text}
            for t in lines
        ],
    }


@server.tool(
    writes=True,
    returns=("meeting", "participant", "user"),
    normalise={"host_email": "casefold", "title": "strip"},
    phrasings=[
        "Schedule '{title}' hosted by {host_email} at {start_time} for {duration_minutes} "
        "minutes with {invitees}",
        "Set up a {duration_minutes}-minute meeting called {title} on {start_time} for "
        "{host_email} and invite {invitees}",
        "Book '{title}' for {host_email} at {start_time} ({duration_minutes} min) and invite "
        "{invitees}",
    ],
    examples={"title": TITLES, "start_time": _future_start, "duration_minutes": DURATIONS},
)
def schedule_meeting(
    ctx: ToolContext,
    host_email: UserEmail,
    title: Annotated[str, Field(min_length=1, max_length=120)],
    start_time: Annotated[str, Field(min_length=10, max_length=32)],
    duration_minutes: Annotated[int, Field(ge=15, le=MAX_DURATION_MINUTES)],
    invitees: Annotated[list[UserEmail], Field(min_length=1, max_length=50)],
    waiting_room: bool = False,
    allow_recording: bool = True,
) -> MeetingDetail:
    """Schedule a meeting hosted by a member of the organisation and invite other members.

    The host and the invitees are invited; nobody joins until the meeting is started.

    Args:
        host_email: The host's email, such as "maria.lopez@northwind.io".
        title: What the meeting is about, such as "Roadmap review".
        start_time: Local start, in the future and within a year, such as "2026-03-12T14:30".
        duration_minutes: Planned length in minutes (15-480), such as 45.
        invitees: Emails of the members to invite (1-50, not the host), such as
            ["ana.silva@northwind.io", "tom.becker@northwind.io"].
        waiting_room: Whether attendees wait to be admitted by the host, such as true;
            default false.
        allow_recording: Whether the meeting may be recorded; false for confidential
            meetings, such as interviews. Default true.

    Returns:
        The meeting: {"meeting_id": "mtg_0081", "status": "scheduled", "participants":
        [{"participant_id": "par_00612", "role": "host", "status": "invited", ...}, ...], ...}.
    """
    email = host_email.strip().casefold()
    host = ctx.sql.first(USER_BY_EMAIL, email=email)
    if host is None:
        raise InvalidArgument(
            f"{email} is not a member of the organisation, and only members can host. "
            "Ask the user for the host's work email."
        )
    what = _text(title, "title")
    start = _parse_time(start_time, "start_time")
    now = ctx.now.replace(second=0, microsecond=0)
    if not now < start <= now + dt.timedelta(days=365):
        raise _broken(
            "start_in_future",
            f"start_time {start.isoformat(timespec='minutes')} is not between now "
            f"({now.isoformat(timespec='minutes')}) and a year from now; ask the user for a "
            "future time.",
        )
    wanted: list[str] = []
    for raw in invitees:
        address = raw.strip().casefold()
        if address not in wanted:
            wanted.append(address)
    if email in wanted:
        raise InvalidArgument(
            f"the host {email} is invited as host already: leave them out of invitees."
        )
    users = {u.email: u for u in ctx.sql.all(USERS_BY_EMAIL, emails=wanted)}
    unknown = [a for a in wanted if a not in users]
    if unknown:
        raise InvalidArgument(
            f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not a member of the "
            "organisation; only members can be invited here. Check the spelling with the user."
        )
    _check_no_overlap(ctx, host, start, duration_minutes, None)
    meeting_id = next_id(ctx, Meeting.id, "mtg", 4)
    ctx.sql.insert(
        Meeting,
        id=meeting_id,
        title=what,
        host_id=host.id,
        status="scheduled",
        scheduled_start=start,
        duration_minutes=duration_minutes,
        waiting_room=waiting_room,
        allow_recording=allow_recording,
        capacity=100,
        started_at=None,
        ended_at=None,
        recording_started_at=None,
        recorded_seconds=0,
        created_at=ctx.now,
    )
    for user, role in [(host, "host"), *((users[a], "attendee") for a in wanted)]:
        ctx.sql.insert(
            Participant,
            id=next_id(ctx, Participant.id, "par", 5),
            meeting_id=meeting_id,
            user_id=user.id,
            name=user.name,
            email=user.email,
            role=role,
            status="invited",
        )
    return _detail(ctx, meeting_id)


@server.tool(
    writes=True,
    returns=("meeting", "participant"),
    phrasings=[
        "Start meeting {meeting_id} now, ahead of schedule",
        "Open {meeting_id} early, the host is ready",
    ],
    values={"meeting_id": meeting_starting_soon},
)
def start_meeting(ctx: ToolContext, meeting_id: MeetingRow) -> MeetingDetail:
    """Start a scheduled meeting now: it goes live and its host joins it.

    Invited people are not in it until they join; with a waiting room, they wait to be
    admitted.

    Args:
        meeting_id: The scheduled meeting, such as "mtg_0042".

    Returns:
        The meeting, now {"status": "live", "started_at": "2026-03-10T09:02",
        "in_meeting": 1, ...}.
    """
    m: Any = meeting_id
    if m.status != "scheduled":
        detail = (
            "it is already running, so there is nothing to start"
            if m.status == "live"
            else f"it ended at {_stamp(m.ended_at)} and cannot be restarted; schedule a new "
            "meeting instead"
        )
        raise _broken(
            "meeting_not_scheduled",
            f"meeting {m.id} ({m.title!r}) is '{m.status}', and only a 'scheduled' meeting "
            f"can be started: {detail}.",
        )
    _check_host_free(ctx, ctx.sql.one(USER, id=m.host_id), m)
    host = _host(ctx.sql.all(PEOPLE, meeting_id=m.id))
    ctx.sql.update(Meeting, m, status="live", started_at=ctx.now)
    ctx.sql.update(Participant, host, status="in_meeting", joined_at=ctx.now)
    return _detail(ctx, m.id)


@server.tool(
    writes=True,
    returns=("participant", "meeting"),
    phrasings=[
        "Admit {participant_id} from the waiting room",
        "Let participant {participant_id} into the meeting",
    ],
)
def admit_participant(ctx: ToolContext, participant_id: ParticipantRow) -> ParticipantChange:
    """Admit someone from a live meeting's waiting room into the meeting.

    Args:
        participant_id: The person waiting, such as "par_00317" (get_meeting lists the
            waiting room).

    Returns:
        {"meeting_id": "mtg_0042", "participant": {"participant_id": "par_00317",
        "status": "in_meeting", ...}, "previous_status": "waiting", "in_meeting": 6,
        "waiting": 1, "capacity": 50, ...}.
    """
    p = participant_id
    m = ctx.sql.one(MEETING, id=p.meeting_id)
    if m.status != "live":
        raise _why_not_live(m, f"admit {p.name}")
    if p.status != "waiting":
        advice = {
            "in_meeting": "they are already in the meeting",
            "invited": "they have not arrived yet; they must join first",
            "left": "they left; they must join again",
            "removed": "they were removed and cannot return",
        }[p.status]
        raise _broken(
            "not_waiting",
            f"{p.name} ({p.id}) is '{p.status}', not 'waiting', in meeting {m.id}: {advice}. "
            "Look at the meeting's waiting room for who can be admitted.",
        )
    people = ctx.sql.all(PEOPLE, meeting_id=m.id)
    present = _count(people, "in_meeting")
    if present >= m.capacity:
        raise _broken(
            "meeting_full",
            f"meeting {m.id} already has {present} people in it, its capacity of "
            f"{m.capacity}; remove someone from the meeting first, or ask {p.name} to wait.",
        )
    p = ctx.sql.update(Participant, p, status="in_meeting", joined_at=ctx.now)
    return _change(m, _replaced(people, p), p, p.role, "waiting")


@server.tool(
    writes=True,
    returns=("participant", "meeting"),
    phrasings=[
        "Make {participant_id} a {role} of the meeting",
        "Change the role of {participant_id} to {role}",
        "Give {participant_id} the {role} role in their meeting",
    ],
    values={"participant_id": participant_not_hosting},
)
def set_participant_role(
    ctx: ToolContext, participant_id: ParticipantRow, role: Role
) -> ParticipantChange:
    """Change someone's role in a scheduled or live meeting.

    "host": the meeting gets a new host (in a live meeting, someone present; always a member
    of the organisation) and the previous host becomes a co-host. "co_host": helps run the
    meeting (at most 4). "attendee": an ordinary participant. The host cannot be demoted
    directly: make someone else host instead.

    Args:
        participant_id: The person, such as "par_00318" (see get_meeting).
        role: "host", "co_host" or "attendee".

    Returns:
        {"meeting_id": "mtg_0042", "participant": {"participant_id": "par_00318",
        "role": "co_host", ...}, "previous_role": "attendee", "host_participant_id":
        "par_00301", "co_hosts": 2, ...}.
    """
    p = participant_id
    m = ctx.sql.one(MEETING, id=p.meeting_id)
    _not_ended(m, f"change the role of {p.name}")
    if p.status == "removed":
        raise _broken(
            "participant_removed",
            f"{p.name} ({p.id}) was 'removed' from meeting {m.id} and cannot get a role.",
        )
    if p.status == "waiting":
        raise _broken(
            "still_waiting",
            f"{p.name} ({p.id}) is 'waiting' in the waiting room of meeting {m.id}; admit "
            "them into the meeting first, then change their role.",
        )
    if p.role == role:
        raise _done(
            "role_unchanged",
            f"{p.name} ({p.id}) is already the {role} of meeting {m.id}; nothing was changed.",
        )
    if p.role == "host":
        raise _broken(
            "meeting_needs_host",
            f"{p.name} ({p.id}) is the 'host' of meeting {m.id} and a meeting always has one "
            "host; make another participant host instead, and the previous host becomes a "
            "co-host.",
        )
    people = ctx.sql.all(PEOPLE, meeting_id=m.id)
    co_hosts = sum(1 for q in people if q.role == "co_host")
    old_host = _host(people)
    previous = p.role
    if role == "host":
        if p.user_id is None:
            raise _broken(
                "guests_cannot_host",
                f"{p.name} ({p.email}) is a guest, not a member of the organisation; only a "
                "member can host. Make them a co-host, or choose a member as host.",
            )
        if m.status == "live" and p.status != "in_meeting":
            raise _broken(
                "host_must_be_present",
                f"{p.name} ({p.id}) is '{p.status}', not 'in_meeting', in live meeting "
                f"{m.id}; the host role goes to someone in the meeting. Choose someone present.",
            )
        user = ctx.sql.one(USER, id=p.user_id)
        if m.status == "live":
            _check_host_free(ctx, user, m)
        else:
            _check_no_overlap(ctx, user, m.scheduled_start, m.duration_minutes, m)
        if previous == "attendee" and co_hosts >= MAX_CO_HOSTS:
            raise _broken(
                "co_host_limit",
                f"meeting {m.id} has {co_hosts} co-hosts, the most allowed, and the previous "
                "host would become one more; make one co-host an attendee first.",
            )
        # one flush, as the ORM wrote it: the meeting, then its people by id
        m = ctx.sql.update(Meeting, m, host_id=user.id)
        roles = sorted([(old_host, "co_host"), (p, "host")], key=lambda change: change[0].id)
        changed = [ctx.sql.update(Participant, q, role=new_role) for q, new_role in roles]
        people = _replaced(people, *changed)
        p = p._replace(role="host")
    else:
        if role == "co_host" and co_hosts >= MAX_CO_HOSTS:
            raise _broken(
                "co_host_limit",
                f"meeting {m.id} already has {co_hosts} co-hosts, the most allowed; make one "
                "of them an attendee first.",
            )
        p = ctx.sql.update(Participant, p, role=role)
        people = _replaced(people, p)
    return _change(m, people, p, previous, p.status)


@server.tool(
    writes=True,
    inverse_of="admit_participant",
    destructive=True,
    returns=("participant", "meeting"),
    phrasings=[
        "Remove {participant_id} from the meeting",
        "Take {participant_id} off their meeting for good",
    ],
    values={"participant_id": participant_not_hosting},
)
def remove_participant(ctx: ToolContext, participant_id: ParticipantRow) -> ParticipantChange:
    """Remove someone from a scheduled or live meeting; they cannot come back.

    Works on anyone but the host: someone present is sent out, someone in the waiting room
    is turned away, an invitation is withdrawn. A removed co-host becomes an attendee.

    Args:
        participant_id: The person, such as "par_00317" (see get_meeting).

    Returns:
        {"meeting_id": "mtg_0042", "participant": {"participant_id": "par_00317",
        "status": "removed", ...}, "previous_status": "in_meeting", "in_meeting": 4, ...}.
    """
    p = participant_id
    m = ctx.sql.one(MEETING, id=p.meeting_id)
    _not_ended(m, f"remove {p.name}")
    if p.status == "removed":
        raise _done(
            "participant_removed",
            f"{p.name} ({p.id}) was already 'removed' from meeting {m.id}; nothing changed.",
        )
    if p.role == "host":
        raise _broken(
            "meeting_needs_host",
            f"{p.name} ({p.id}) is the 'host' of meeting {m.id} and cannot be removed; make "
            "another participant host first.",
        )
    previous_role, previous_status = p.role, p.status
    left_at = ctx.now if p.status in ("in_meeting", "waiting") else p.left_at
    p = ctx.sql.update(Participant, p, left_at=left_at, status="removed", role="attendee")
    people = ctx.sql.all(PEOPLE, meeting_id=m.id)
    return _change(m, people, p, previous_role, previous_status)


@server.tool(
    writes=True,
    returns=("meeting",),
    phrasings=[
        "{action} the cloud recording of {meeting_id}",
        "Please {action} recording meeting {meeting_id}",
    ],
)
def set_recording(
    ctx: ToolContext, meeting_id: MeetingRow, action: Literal["start", "stop"]
) -> RecordingState:
    """Start or stop cloud recording of a live meeting.

    The recording (and later its transcript) is made when the meeting ends; stopping and
    starting again adds to the same recording.

    Args:
        meeting_id: The live meeting, such as "mtg_0042".
        action: "start" or "stop".

    Returns:
        {"meeting_id": "mtg_0042", "recording_now": true, "recorded_minutes": 23,
        "note": "..."}.
    """
    m: Any = meeting_id
    if m.status != "live":
        raise _why_not_live(m, f"{action} recording")
    if not m.allow_recording:
        raise _broken(
            "recording_not_allowed",
            f"meeting {m.id} ({m.title!r}) does not allow recording (it is confidential); "
            "tell the user it cannot be recorded.",
        )
    if action == "start":
        if m.recording_started_at is not None:
            raise _done(
                "already_recording",
                f"meeting {m.id} has been recording since {_stamp(m.recording_started_at)}; "
                "nothing changed.",
            )
        m = ctx.sql.update(Meeting, m, recording_started_at=ctx.now)
        note = "Recording; the file and its transcript appear after the meeting ends."
    else:
        if m.recording_started_at is None:
            raise _broken(
                "not_recording",
                f"meeting {m.id} is not being recorded, so there is nothing to stop.",
            )
        seconds = recording_seconds(m, ctx.now)
        m = ctx.sql.update(Meeting, m, recorded_seconds=seconds, recording_started_at=None)
        note = "Recording stopped; what was recorded is kept and saved when the meeting ends."
    return {
        "meeting_id": m.id,
        "recording_now": m.recording_started_at is not None,
        "recorded_minutes": recording_seconds(m, ctx.now) // 60,
        "note": note,
    }


@server.tool(
    writes=True,
    returns=("meeting", "recording"),
    phrasings=["End meeting {meeting_id} for everyone", "Close {meeting_id}, we are done"],
)
def end_meeting(ctx: ToolContext, meeting_id: MeetingRow) -> EndedMeeting:
    """End a live meeting for everyone.

    Everyone still in it is disconnected, the waiting room is cleared, and if anything was
    recorded a recording is saved (its transcript is "processing" for a few minutes).

    Args:
        meeting_id: The live meeting, such as "mtg_0042".

    Returns:
        {"meeting": {"meeting_id": "mtg_0042", "status": "ended", "ended_at":
        "2026-03-10T10:01", ...}, "people_disconnected": 5, "waiting_room_cleared": 1,
        "recording": {"recording_id": "rec_0031", "duration_minutes": 58, "transcript_status":
        "processing", ...} or null}.
    """
    m: Any = meeting_id
    if m.status != "live":
        raise _why_not_live(m, "end it")
    seconds = recording_seconds(m, ctx.now)
    recorded = seconds > 0 or m.recording_started_at is not None
    disconnected = cleared = 0
    leaving = []
    for p in ctx.sql.all(PEOPLE, meeting_id=m.id):
        if p.status in ("in_meeting", "waiting"):
            disconnected += p.status == "in_meeting"
            cleared += p.status == "waiting"
            leaving.append(p)
    # one flush, as the ORM wrote it: the meeting, then its people by id, then the recording
    ctx.sql.update(
        Meeting,
        m,
        status="ended",
        ended_at=ctx.now,
        recording_started_at=None,
        recorded_seconds=seconds,
    )
    for p in leaving:
        ctx.sql.update(Participant, p, status="left", left_at=ctx.now)
    rec: RecordingOut | None = None
    if recorded:
        seconds = max(seconds, MIN_RECORDING_SECONDS)
        values: dict[str, Any] = {
            "id": next_id(ctx, Recording.id, "rec", 4),
            "meeting_id": m.id,
            "duration_seconds": seconds,
            "size_mb": recording_size_mb(seconds),
            "transcript_status": "processing",
            "created_at": ctx.now,
        }
        ctx.sql.insert(Recording, **values)
        rec = _recording(SimpleNamespace(**values), 0)
    return {
        "meeting": _summary(ctx.sql.one(SUMMARY, id=m.id)),
        "people_disconnected": disconnected,
        "waiting_room_cleared": cleared,
        "recording": rec,
    }


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests.
@server.entity("user", key="email")
def _users(ctx: ToolContext) -> list[dict[str, Any]]:
    """Members of the organisation, by email."""
    rows = ctx.sql.all(USERS)
    return [{"email": u.email, "name": u.name, "department": u.department} for u in rows]


@server.entity(
    "meeting",
    key="meeting_id",
    model=Meeting,
    not_found="Call find_meetings with words of the title, the host or a status to find the "
    "meeting's id (such as 'mtg_0042').",
)
def _meetings(ctx: ToolContext) -> list[dict[str, Any]]:
    """Every meeting, with its status and the recording action that would succeed."""
    rows = ctx.sql.all(MEETINGS)
    return [
        {
            "meeting_id": m.id,
            "title": m.title,
            "query": m.title,
            "status": m.status,
            "action": "stop" if m.recording_started_at is not None else "start",
        }
        for m in rows
    ]


@server.entity(
    "participant",
    key="participant_id",
    model=Participant,
    not_found="Call get_meeting with the meeting's id to see its participants and waiting "
    "room (ids such as 'par_00317').",
)
def _participants(ctx: ToolContext) -> list[dict[str, Any]]:
    """People other than the host in scheduled and live meetings, not removed."""
    rows = ctx.sql.all(OPEN_PEOPLE)
    return [
        {
            "participant_id": p.id,
            "meeting_id": p.meeting_id,
            "name": p.name,
            "status": p.status,
            "current_role": p.role,
            # the role change that would make sense for them
            "role": "co_host" if p.role == "attendee" else "attendee",
        }
        for p in rows
    ]


@server.entity(
    "recording",
    key="recording_id",
    model=Recording,
    not_found="Call get_meeting with an ended meeting's id to see its recordings (ids such as "
    "'rec_0012').",
)
def _recordings(ctx: ToolContext) -> list[dict[str, Any]]:
    """Recordings whose transcript is ready to read."""
    out = []
    for r in ctx.sql.all(READY_RECORDINGS):
        first = r.first_speaker  # the first line's speaker; None: no lines
        out.append(
            {
                "recording_id": r.id,
                "meeting_id": r.meeting_id,
                "transcript_status": r.transcript_status,
                "speaker": first.split()[0] if first is not None else None,
            }
        )
    return out
