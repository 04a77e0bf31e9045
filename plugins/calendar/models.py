"""Calendar state: calendars, contacts, events, invitees, recurrence rules, reminders.

All times are naive datetimes in the user's home time zone (``Settings.timezone``): its
wall-clock times. From ``prove/calendar-v1`` the tools read each as the moment it names in
that zone (:mod:`prove_gym.server.zones`), and refuse to store a time that zone skips or repeats.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import (
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class Settings(Base):
    """The calendar owner: a single row."""

    __tablename__ = "settings"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_name: Mapped[str] = mapped_column(String(80))
    owner_email: Mapped[str] = mapped_column(String(120))
    timezone: Mapped[str] = mapped_column(String(40))


class Calendar(Base):
    __tablename__ = "calendars"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(60), unique=True)
    color: Mapped[str] = mapped_column(String(16))
    description: Mapped[str] = mapped_column(Text, default="")


class Contact(Base):
    __tablename__ = "contacts"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120), unique=True)
    company: Mapped[str] = mapped_column(String(80), default="")
    timezone: Mapped[str] = mapped_column(String(40))


class Event(Base):
    __tablename__ = "events"
    __table_args__ = (
        # events by start (ties by id), the order every list and search of events returns:
        # a range of days reads only its events, unsorted, and a search stops at its limit
        Index("ix_events_start_id", "start", "id"),
    )
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    calendar_id: Mapped[str] = mapped_column(ForeignKey("calendars.id"))
    title: Mapped[str] = mapped_column(String(120))
    description: Mapped[str] = mapped_column(Text, default="")
    location: Mapped[str] = mapped_column(String(120), default="")
    start: Mapped[dt.datetime] = mapped_column(DateTime)
    end: Mapped[dt.datetime] = mapped_column(DateTime)
    status: Mapped[str] = mapped_column(String(16), default="confirmed")

    # Eager strategies: a list of events costs three queries, not one per event.
    invitees: Mapped[list[Invitee]] = relationship(
        back_populates="event",
        cascade="all, delete-orphan",
        order_by="Invitee.email",
        lazy="select",
    )
    reminders: Mapped[list[Reminder]] = relationship(
        back_populates="event",
        cascade="all, delete-orphan",
        order_by="Reminder.id",
        lazy="select",
    )
    recurrence: Mapped[Recurrence | None] = relationship(
        back_populates="event", cascade="all, delete-orphan", uselist=False, lazy="joined"
    )


class Invitee(Base):
    __tablename__ = "invitees"
    __table_args__ = (UniqueConstraint("event_id", "email"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event_id: Mapped[str] = mapped_column(ForeignKey("events.id"))
    email: Mapped[str] = mapped_column(String(120))
    name: Mapped[str] = mapped_column(String(80), default="")
    response: Mapped[str] = mapped_column(String(16), default="needs_action")
    event: Mapped[Event] = relationship(back_populates="invitees")


class Recurrence(Base):
    __tablename__ = "recurrences"
    event_id: Mapped[str] = mapped_column(ForeignKey("events.id"), primary_key=True)
    frequency: Mapped[str] = mapped_column(String(10))
    interval: Mapped[int] = mapped_column(Integer, default=1)
    count: Mapped[int | None] = mapped_column(Integer, nullable=True)
    until: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    event: Mapped[Event] = relationship(back_populates="recurrence")


class Reminder(Base):
    __tablename__ = "reminders"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    event_id: Mapped[str] = mapped_column(ForeignKey("events.id"))
    minutes_before: Mapped[int] = mapped_column(Integer)
    method: Mapped[str] = mapped_column(String(10))
    event: Mapped[Event] = relationship(back_populates="reminders")
