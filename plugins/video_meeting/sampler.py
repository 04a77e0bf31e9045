"""A realistic organisation's video meetings: size 1 gives 40 users and about 75 meetings
(about 36 ended in the last six weeks, 8 live right now, 30 scheduled in the next four
weeks) with about 600 participants, 20 recordings and 250 transcript lines; size n gives n
times as many users and meetings.

Ended meetings keep who came, who never showed up and who was removed, and, when they
allowed recording, often a cloud recording with a transcript ("processing" for meetings
that ended within the hour). Live meetings have their host in the room, attendees in and
out, people in the waiting room (one meeting is full, so admitting is refused there), and
some are being recorded. Scheduled meetings have only invitations. Every state obeys the
rules in ``models.py``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from random import Random

from faker import Faker

from prove_gym.server import SampleContext

from .models import (
    MAX_CO_HOSTS,
    Meeting,
    Participant,
    Recording,
    TranscriptLine,
    User,
    recording_size_mb,
)

DOMAIN = "northwind.io"
DEPARTMENTS: dict[str, list[str]] = {
    "Engineering": ["Software Engineer", "Senior Engineer", "Engineering Manager", "SRE"],
    "Product": ["Product Manager", "Product Lead"],
    "Design": ["Product Designer", "UX Researcher"],
    "Sales": ["Account Executive", "Sales Director"],
    "Marketing": ["Marketing Manager", "Content Strategist"],
    "Finance": ["Financial Analyst", "Controller"],
    "People": ["HR Partner", "Recruiter"],
    "Support": ["Support Engineer", "Support Lead"],
}
PROJECTS = ["Atlas", "Beacon", "Cobalt", "Ember", "Falcon", "Granite", "Helix", "Orbit", "Quartz"]
SERVICES = ["billing API", "search cluster", "checkout", "login service", "mobile sync"]
ROLES_HIRED = ["Backend Engineer", "Product Designer", "Data Analyst", "Account Executive"]


@dataclass(frozen=True)
class Kind:
    """A kind of meeting: its title pattern and how it is usually run."""

    title: str
    recordable: bool
    waiting_room: bool
    invitees: tuple[int, int]
    durations: tuple[int, ...]
    same_department: bool = False
    guests: tuple[int, int] = (0, 0)


KINDS: tuple[Kind, ...] = (
    Kind("Weekly {dept} sync", True, False, (4, 9), (30, 45), same_department=True),
    Kind("{project} design review", True, False, (3, 7), (60,)),
    Kind("1:1 {host} / {other}", False, False, (1, 1), (30,)),
    Kind("Sprint {n} retrospective", True, False, (5, 8), (60,), same_department=True),
    Kind("Interview: {role} candidate", False, True, (1, 2), (45, 60), guests=(1, 1)),
    Kind("Customer call: {company}", True, True, (1, 3), (30, 45), guests=(1, 3)),
    Kind("All-hands Q{q}", True, True, (14, 24), (60,)),
    Kind("Incident review: {service} outage", True, False, (4, 7), (45,)),
    Kind("Quarterly planning: {dept}", True, False, (5, 9), (90,), same_department=True),
    Kind("Vendor demo: {company}", True, True, (2, 4), (30,), guests=(1, 2)),
    Kind("Benefits Q&A", False, True, (8, 14), (45,)),
)

TALK: dict[str, list[str]] = {
    "generic": [
        "Thanks everyone for joining, let's get started.",
        "Can everyone see my screen?",
        "Quick update from my side: we are on track for the {date} deadline.",
        "I'll take the action item to follow up by {date}.",
        "Let's park that and come back to it next week.",
        "Does anyone have questions before we move on?",
        "I shared the notes in the channel, please add anything I missed.",
        "We need a decision on the budget, roughly {number} thousand.",
        "I think we should loop in {person} on this.",
        "Great, thanks all. I'll send the summary after the call.",
    ],
    "incident": [
        "The {service} started returning errors around {time}.",
        "Root cause was a config change that went out without a canary.",
        "We rolled back at {time} and error rates recovered.",
        "Action item: add an alert on the p99 latency of the {service}.",
    ],
    "customer": [
        "Our team at {company} is mostly interested in the reporting features.",
        "Pricing for {number} seats would be the next step.",
        "Can you send over the security questionnaire?",
    ],
    "planning": [
        "The {project} launch is the top priority for next quarter.",
        "We are hiring two more people to support {project}.",
        "Headcount is flat, so we need to drop one initiative.",
    ],
}


# Rows are built as plain objects (attributes named as the columns) and inserted with ctx.insert,
# a table at a time in the order the ORM used to flush them: a mapped object costs the ORM
# ~30 µs to build and a flush more to write. ``eq=False``: compared by identity, as mapped
# objects are.
@dataclass(slots=True, eq=False)
class _User:
    id: str
    name: str
    email: str
    department: str
    job_title: str


@dataclass(slots=True, eq=False)
class _Meeting:
    id: str
    title: str
    host_id: str
    status: str
    scheduled_start: dt.datetime
    duration_minutes: int
    waiting_room: bool
    allow_recording: bool
    capacity: int
    started_at: dt.datetime | None
    ended_at: dt.datetime | None
    recording_started_at: dt.datetime | None
    recorded_seconds: int
    created_at: dt.datetime
    host: _User  # not a column


@dataclass(slots=True, eq=False)
class _Participant:
    id: str
    meeting_id: str
    user_id: str | None
    name: str
    email: str
    role: str
    status: str
    joined_at: dt.datetime | None
    left_at: dt.datetime | None


@dataclass(slots=True, eq=False)
class _Recording:
    id: str
    meeting_id: str
    duration_seconds: int
    size_mb: int
    transcript_status: str
    created_at: dt.datetime


@dataclass(slots=True, eq=False)
class _Line:
    id: str
    recording_id: str
    seq: int
    offset_seconds: int
    speaker: str
    text: str


def sample_video_meeting(ctx: SampleContext) -> None:
    """Fill an empty video meeting database (see the module docstring for sizes)."""
    _Org(ctx).build()


class _Org:
    def __init__(self, ctx: SampleContext) -> None:
        self.ctx = ctx
        self.rng: Random = ctx.rng
        self.fake: Faker = ctx.fake
        self.now = ctx.now.replace(second=0, microsecond=0)
        self.users: list[_User] = []
        self.meetings: list[_Meeting] = []
        self.participants: list[_Participant] = []
        self.recordings: list[_Recording] = []
        self.lines: list[_Line] = []

    # ------------------------------------------------------------ people
    def build(self) -> None:
        size = self.ctx.size
        self._users(40 * size)
        plans: list[str] = ["ended"] * (36 * size) + ["live"] * (8 * size)
        plans += ["scheduled"] * (30 * size)
        live_hosts = self.rng.sample(self.users, 8 * size)
        full_live = 0
        for status in plans:
            kind = self.rng.choice(KINDS)
            if status == "live":
                host = live_hosts.pop()
                # a live meeting someone can be admitted to needs a waiting room
                if full_live == 0 or self.rng.random() < 0.5:
                    kind = self.rng.choice([k for k in KINDS if k.waiting_room])
            else:
                host = self.rng.choice(self.users)
            meeting = self._meeting(kind, host, status)
            if status == "live" and full_live == 0 and meeting.waiting_room:
                full_live = 1
                self._live_people(meeting, kind, full=True)
            elif status == "live":
                self._live_people(meeting, kind, full=False)
            elif status == "ended":
                self._ended_people(meeting, kind)
            else:
                self._invite(meeting, kind)
        self.meetings.sort(key=lambda m: (m.scheduled_start, m.title))
        new_ids: dict[str, str] = {}  # temporary id -> final id (the two never overlap)
        for i, m in enumerate(self.meetings, 1):
            new_ids[m.id] = f"mtg_{i:04d}"
            m.id = new_ids[m.id]
        for p in self.participants:
            p.meeting_id = new_ids[p.meeting_id]
        for r in self.recordings:
            r.meeting_id = new_ids[r.meeting_id]
        self.participants.sort(key=lambda p: (p.meeting_id, p.id))
        for i, p in enumerate(self.participants, 1):
            p.id = f"par_{i:05d}"
        self.recordings.sort(key=lambda r: (r.created_at, r.meeting_id))
        renamed = {}
        for i, r in enumerate(self.recordings, 1):
            renamed[r.id] = f"rec_{i:04d}"
            r.id = renamed[r.id]
        for line in self.lines:
            line.recording_id = renamed[line.recording_id]
        self.lines.sort(key=lambda t: (t.recording_id, t.seq))
        for i, line in enumerate(self.lines, 1):
            line.id = f"tl_{i:06d}"
        for model, group in (
            (User, self.users),
            (Meeting, self.meetings),
            (Participant, self.participants),
            (Recording, self.recordings),
            (TranscriptLine, self.lines),
        ):
            self.ctx.insert(group, into=model)

    def _users(self, n: int) -> None:
        emails: set[str] = set()
        depts = list(DEPARTMENTS)
        while len(self.users) < n:
            first, last = self.fake.first_name(), self.fake.last_name()
            email = f"{first}.{last}@{DOMAIN}".lower().replace(" ", "").replace("'", "")
            if email in emails:
                continue
            emails.add(email)
            dept = depts[len(self.users) % len(depts)]
            self.users.append(
                _User(
                    id=f"usr_{len(self.users) + 1:03d}",
                    name=f"{first} {last}",
                    email=email,
                    department=dept,
                    job_title=self.rng.choice(DEPARTMENTS[dept]),
                )
            )

    def _guest(self, company: str | None = None) -> tuple[str, str]:
        first, last = self.fake.first_name(), self.fake.last_name()
        company = company or self.fake.company()
        domain = "".join(ch for ch in company.split()[0].lower() if ch.isalnum()) or "mail"
        return f"{first} {last}", f"{first}.{last}@{domain}.com".lower().replace("'", "")

    # ------------------------------------------------------------ meetings
    def _title(self, kind: Kind, host: _User, other: _User | None, company: str) -> str:
        return kind.title.format(
            dept=host.department,
            project=self.rng.choice(PROJECTS),
            host=host.name.split()[0],
            other=(other or host).name.split()[0],
            n=self.rng.randint(20, 48),
            role=self.rng.choice(ROLES_HIRED),
            company=company,
            q=self.rng.randint(1, 4),
            service=self.rng.choice(SERVICES),
        )[:120]

    def _slot(self, day: dt.date) -> dt.datetime:
        hour = self.rng.randint(8, 16)
        return dt.datetime.combine(day, dt.time(hour, self.rng.choice([0, 0, 15, 30])))

    def _meeting(self, kind: Kind, host: _User, status: str) -> _Meeting:
        duration = self.rng.choice(kind.durations)
        started = ended = None
        if status == "ended":
            start = self._slot(self.now.date() - dt.timedelta(days=self.rng.randint(1, 42)))
            started = start + dt.timedelta(minutes=self.rng.randint(-3, 6))
            ended = started + dt.timedelta(minutes=max(5, duration + self.rng.randint(-12, 10)))
            if self.rng.random() < 0.08:  # ended within the last hour
                ended = self.now - dt.timedelta(minutes=self.rng.randint(5, 50))
                started = ended - dt.timedelta(minutes=duration)
                start = started.replace(minute=started.minute // 15 * 15)
        elif status == "live":
            started = self.now - dt.timedelta(minutes=self.rng.randint(4, min(duration, 50)))
            start = started.replace(minute=started.minute // 15 * 15)
        else:
            start = self._slot(self.now.date() + dt.timedelta(days=self.rng.randint(1, 28)))
        capacity = 300 if "All-hands" in kind.title else self.rng.choice([25, 50, 100, 100])
        meeting = _Meeting(
            id=f"tmp_{len(self.meetings):05d}",
            title="",
            host_id=host.id,
            status=status,
            scheduled_start=start,
            duration_minutes=duration,
            waiting_room=kind.waiting_room or self.rng.random() < 0.15,
            allow_recording=kind.recordable,
            capacity=capacity,
            started_at=started,
            ended_at=ended,
            recording_started_at=None,
            recorded_seconds=0,
            created_at=min(start, self.now) - dt.timedelta(days=self.rng.randint(1, 20)),
            host=host,
        )
        self.meetings.append(meeting)
        return meeting

    def _people(
        self, meeting: _Meeting, kind: Kind
    ) -> tuple[list[tuple[str, str, str | None]], str]:
        host = meeting.host
        pool = [u for u in self.users if u.id != host.id]
        if kind.same_department:
            same = [u for u in pool if u.department == host.department]
            pool = same + self.rng.sample([u for u in pool if u not in same], 3)
        count = min(len(pool), self.rng.randint(*kind.invitees))
        invitees = self.rng.sample(pool, count)
        company = self.fake.company()
        other = invitees[0] if invitees else None
        meeting.title = self._title(kind, host, other, company)
        people: list[tuple[str, str, str | None]] = [(u.name, u.email, u.id) for u in invitees]
        emails = {e for _, e, _ in people} | {host.email}
        for _ in range(self.rng.randint(*kind.guests)):
            name, email = self._guest(company if "{company}" in kind.title else None)
            if email not in emails:
                emails.add(email)
                people.append((name, email, None))
        return people, company

    def _add(
        self,
        meeting: _Meeting,
        name: str,
        email: str,
        user_id: str | None,
        role: str,
        status: str,
        joined: dt.datetime | None = None,
        left: dt.datetime | None = None,
    ) -> _Participant:
        p = _Participant(
            id=f"tmp_{len(self.participants):06d}",
            meeting_id=meeting.id,
            user_id=user_id,
            name=name,
            email=email,
            role=role,
            status=status,
            joined_at=joined,
            left_at=left,
        )
        self.participants.append(p)
        return p

    def _roles(self, people: list[tuple[str, str, str | None]]) -> list[str]:
        co_hosts = min(MAX_CO_HOSTS, self.rng.choice([0, 0, 0, 1, 1, 2]))
        members = [i for i, (_, _, uid) in enumerate(people) if uid is not None]
        chosen = set(self.rng.sample(members, min(co_hosts, len(members))))
        return ["co_host" if i in chosen else "attendee" for i in range(len(people))]

    def _invite(self, meeting: _Meeting, kind: Kind) -> None:
        people, _ = self._people(meeting, kind)
        host = meeting.host
        self._add(meeting, host.name, host.email, host.id, "host", "invited")
        for (name, email, uid), role in zip(people, self._roles(people), strict=True):
            self._add(meeting, name, email, uid, role, "invited")

    def _ended_people(self, meeting: _Meeting, kind: Kind) -> None:
        assert meeting.started_at is not None and meeting.ended_at is not None
        start, end = meeting.started_at, meeting.ended_at
        people, company = self._people(meeting, kind)
        host = meeting.host
        self._add(meeting, host.name, host.email, host.id, "host", "left", start, end)
        speakers = [host.name]
        span = max(1, int((end - start).total_seconds() // 60))
        for (name, email, uid), role in zip(people, self._roles(people), strict=True):
            draw = self.rng.random()
            if draw < 0.12:
                self._add(meeting, name, email, uid, role, "invited")  # never showed up
                continue
            joined = start + dt.timedelta(minutes=self.rng.randint(0, min(10, span - 1)))
            if draw < 0.16 and role == "attendee":
                left = joined + dt.timedelta(minutes=self.rng.randint(1, 5))
                self._add(meeting, name, email, uid, role, "removed", joined, min(left, end))
                continue
            left = end - dt.timedelta(minutes=self.rng.randint(0, 3) if draw < 0.8 else 0)
            self._add(meeting, name, email, uid, role, "left", joined, max(joined, left))
            speakers.append(name)
        if meeting.allow_recording and self.rng.random() < 0.7:
            self._record(meeting, kind, speakers, company)

    def _record(self, meeting: _Meeting, kind: Kind, speakers: list[str], company: str) -> None:
        assert meeting.started_at is not None and meeting.ended_at is not None
        total = int((meeting.ended_at - meeting.started_at).total_seconds())
        seconds = max(60, total - self.rng.randint(0, 4) * 60)
        fresh = self.now - meeting.ended_at < dt.timedelta(hours=1)
        status = "processing" if fresh else self.rng.choice(["ready", "ready", "ready", "none"])
        rec = _Recording(
            id=f"tmp_{len(self.recordings):04d}",
            meeting_id=meeting.id,
            duration_seconds=seconds,
            size_mb=recording_size_mb(seconds),
            transcript_status=status,
            created_at=meeting.ended_at,
        )
        self.recordings.append(rec)
        if status != "ready":
            return
        topic = "generic"
        if "Incident" in kind.title:
            topic = "incident"
        elif "Customer" in kind.title or "Vendor" in kind.title:
            topic = "customer"
        elif "planning" in kind.title or "design" in kind.title:
            topic = "planning"
        count = self.rng.randint(8, 14)
        offsets = sorted(self.rng.sample(range(5, max(seconds - 5, count + 6)), count))
        for seq, offset in enumerate(offsets, 1):
            pool = TALK[topic] + TALK["generic"] if topic != "generic" else TALK["generic"]
            template = pool[0] if seq == 1 else self.rng.choice(pool)
            moment = meeting.started_at + dt.timedelta(seconds=offset)
            text = template.format(
                date=(meeting.ended_at + dt.timedelta(days=self.rng.randint(3, 21))).strftime(
                    "%B %d"
                ),
                number=self.rng.choice([20, 35, 50, 120]),
                person=self.rng.choice(self.users).name.split()[0],
                service=self.rng.choice(SERVICES),
                time=moment.strftime("%H:%M"),
                company=company,
                project=self.rng.choice(PROJECTS),
            )
            self.lines.append(
                _Line(
                    id=f"tmp_{len(self.lines):06d}",
                    recording_id=rec.id,
                    seq=seq,
                    offset_seconds=offset,
                    speaker=speakers[0] if seq == 1 else self.rng.choice(speakers),
                    text=text[:400],
                )
            )

    def _live_people(self, meeting: _Meeting, kind: Kind, *, full: bool) -> None:
        assert meeting.started_at is not None
        start = meeting.started_at
        people, _ = self._people(meeting, kind)
        host = meeting.host
        self._add(meeting, host.name, host.email, host.id, "host", "in_meeting", start)
        present = 1
        elapsed = max(1, int((self.now - start).total_seconds() // 60))
        waiting_made = 0
        for (name, email, uid), role in zip(people, self._roles(people), strict=True):
            joined = start + dt.timedelta(minutes=self.rng.randint(0, elapsed - 1))
            draw = self.rng.random()
            lets_in = not meeting.waiting_room or role == "co_host"
            if draw < 0.15:
                self._add(meeting, name, email, uid, role, "invited")
            elif draw < 0.22 and role == "attendee":
                self._add(meeting, name, email, uid, role, "left", joined, self.now)
            elif meeting.waiting_room and not lets_in and (draw < 0.45 or uid is None):
                since = self.now - dt.timedelta(minutes=self.rng.randint(0, 3))
                self._add(meeting, name, email, uid, role, "waiting", since)
                waiting_made += 1
            else:
                self._add(meeting, name, email, uid, role, "in_meeting", joined)
                present += 1
        if meeting.waiting_room and waiting_made == 0:
            name, email = self._guest()
            self._add(meeting, name, email, None, "attendee", "waiting", self.now)
        meeting.capacity = max(meeting.capacity, present)
        if full:
            meeting.capacity = present
        if meeting.allow_recording and self.rng.random() < 0.6:
            since = start + dt.timedelta(minutes=self.rng.randint(0, 3))
            if elapsed > 12 and self.rng.random() < 0.3:  # paused once, then resumed
                meeting.recorded_seconds = self.rng.randint(2, 5) * 60
                since = self.now - dt.timedelta(minutes=self.rng.randint(1, 5))
            meeting.recording_started_at = min(since, self.now)
