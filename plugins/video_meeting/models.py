"""Video meeting state: the organisation's users, meetings, participants, recordings, transcripts.

A meeting moves one way through its lifecycle, ``scheduled -> live -> ended``, and its
status gates every action. The rules every state obeys (the tests check them after random
call sequences):

- a meeting has exactly one participant with the role ``host``, the user in ``host_id``;
  while it is live that host is in the meeting; at most ``MAX_CO_HOSTS`` co-hosts;
- a scheduled meeting has only invited participants and no start or end time; a live one
  has a start time and no end time; an ended one has both, in order, and nobody is still
  in it or waiting;
- a person (an email) has one participant row per meeting, so nobody is both admitted and
  waiting; nobody waits in a meeting without a waiting room, and no more than
  ``capacity`` people are in a meeting at once;
- recordings (and their transcripts) exist only for ended meetings that allowed recording;
  cloud recording runs (``recording_started_at`` set) only while a meeting is live;
- a host runs at most one live meeting at a time.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

STATUSES: tuple[str, ...] = ("scheduled", "live", "ended")
"""The lifecycle, in the only order a meeting may move through it."""

ROLES: tuple[str, ...] = ("host", "co_host", "attendee")

PARTICIPANT_STATUSES: tuple[str, ...] = ("invited", "waiting", "in_meeting", "left", "removed")
"""invited: asked to come, not arrived; waiting: in the waiting room; in_meeting: admitted and
present; left: was there (or waited) and is gone; removed: sent out by the host, cannot return."""

MAX_CO_HOSTS = 4
"""Most co-hosts one meeting may have."""

MAX_DURATION_MINUTES = 480
MIN_RECORDING_SECONDS = 60
"""A recording shorter than a minute is kept as one minute (the cloud's smallest unit)."""

MB_PER_MINUTE = 9
"""Roughly how large a minute of cloud recording (720p with audio) is."""


class Base(DeclarativeBase):
    pass


class User(Base):
    """A member of the organisation: can host meetings and be invited by email."""

    __tablename__ = "users"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120), unique=True)
    department: Mapped[str] = mapped_column(String(40))
    job_title: Mapped[str] = mapped_column(String(80))


class Meeting(Base):
    __tablename__ = "meetings"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    title: Mapped[str] = mapped_column(String(120))
    host_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    status: Mapped[str] = mapped_column(String(12))
    """"scheduled", "live" or "ended" (see ``STATUSES``)."""
    scheduled_start: Mapped[dt.datetime] = mapped_column(DateTime)
    duration_minutes: Mapped[int] = mapped_column(Integer)
    waiting_room: Mapped[bool] = mapped_column(Boolean)
    """Whether people other than the host and co-hosts wait to be admitted."""
    allow_recording: Mapped[bool] = mapped_column(Boolean)
    """False for confidential meetings (interviews, HR, 1:1s): nobody may record them."""
    capacity: Mapped[int] = mapped_column(Integer)
    """Most people in the meeting at once (the host's licence)."""
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    ended_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    recording_started_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    """When cloud recording was (re)started; set only while the meeting is live and recording."""
    recorded_seconds: Mapped[int] = mapped_column(Integer, default=0)
    """Seconds recorded in earlier, stopped stretches of this meeting."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    host: Mapped[User] = relationship()
    participants: Mapped[list[Participant]] = relationship(
        back_populates="meeting", order_by="Participant.id"
    )
    recordings: Mapped[list[Recording]] = relationship(order_by="Recording.id")


class Participant(Base):
    """One person's place in one meeting: an organisation user or a guest (``user_id`` null)."""

    __tablename__ = "participants"
    __table_args__ = (UniqueConstraint("meeting_id", "email"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    meeting_id: Mapped[str] = mapped_column(ForeignKey("meetings.id"), index=True)
    user_id: Mapped[str | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    name: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120))
    role: Mapped[str] = mapped_column(String(12))
    status: Mapped[str] = mapped_column(String(12))
    joined_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    """When they arrived (in the meeting, or in its waiting room)."""
    left_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)

    meeting: Mapped[Meeting] = relationship(back_populates="participants")


class Recording(Base):
    """A cloud recording, made when a recorded meeting ends."""

    __tablename__ = "recordings"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    meeting_id: Mapped[str] = mapped_column(ForeignKey("meetings.id"), index=True)
    duration_seconds: Mapped[int] = mapped_column(Integer)
    size_mb: Mapped[int] = mapped_column(Integer)
    transcript_status: Mapped[str] = mapped_column(String(12))
    """"ready" (lines below), "processing" (the meeting ended minutes ago) or "none"."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    lines: Mapped[list[TranscriptLine]] = relationship(order_by="TranscriptLine.seq")


class TranscriptLine(Base):
    """One spoken line of a recording's transcript."""

    __tablename__ = "transcript_lines"
    __table_args__ = (UniqueConstraint("recording_id", "seq"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    recording_id: Mapped[str] = mapped_column(ForeignKey("recordings.id"), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    offset_seconds: Mapped[int] = mapped_column(Integer)
    speaker: Mapped[str] = mapped_column(String(80))
    text: Mapped[str] = mapped_column(String(400))


# ------------------------------------------------------------ domain rules
# Shared by the sampler and the tools, so sampled history and live calls agree exactly.
def recording_seconds(meeting: Meeting, now: dt.datetime) -> int:
    """Seconds recorded so far: earlier stretches plus the one running now, if any."""
    running = 0
    if meeting.recording_started_at is not None:
        running = max(0, int((now - meeting.recording_started_at).total_seconds()))
    return meeting.recorded_seconds + running


def recording_size_mb(seconds: int) -> int:
    """How large a recording of ``seconds`` is, in whole megabytes (at least 1).

    >>> recording_size_mb(60), recording_size_mb(3600)
    (9, 540)
    """
    return max(1, seconds * MB_PER_MINUTE // 60)
