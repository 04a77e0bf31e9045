"""CRM state: sales reps (owners), accounts, contacts, leads, deals with their stage history,
activities and notes.

The rules every state obeys (the tests check them after random call sequences):

- every contact belongs to exactly one existing account; contact emails are unique;
- a deal belongs to an account, and its primary contact belongs to that same account;
- a deal's stage is one of ``STAGES`` and its probability is ``PROBABILITY[stage]``; from
  "proposal" on (and when won) it has a positive amount; a closed deal has ``closed_at``
  and a close date, a lost one a reason; an open deal has neither ``closed_at`` nor a reason;
- every stage change is kept in ``deal_stage_changes`` (the first row of a deal records its
  creation, with ``from_stage`` NULL); each recorded move is allowed by ``STAGE_MOVES`` and
  the last one ends in the deal's stage, so nothing ever leaves a closed stage;
- a converted lead links the contact and account it became (and the deal, if one was
  opened), the contact belongs to that account, and the deal to both; a lead that is not
  converted links nothing;
- activities and notes are attached to exactly one existing account, contact, lead or deal;
  a completed activity has ``completed_at``, an open one has not.

Money is ``Money`` (exact decimals stored as integer cents). Times are naive UTC.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import Boolean, Date, DateTime, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from prove_gym.server import Money

STAGES: tuple[str, ...] = (
    "prospecting",
    "qualification",
    "proposal",
    "negotiation",
    "closed_won",
    "closed_lost",
)
"""The pipeline, in order; the last two are closed (final)."""

OPEN_STAGES: tuple[str, ...] = STAGES[:4]
CLOSED_STAGES: frozenset[str] = frozenset({"closed_won", "closed_lost"})

PROBABILITY: dict[str, int] = {
    "prospecting": 10,
    "qualification": 25,
    "proposal": 50,
    "negotiation": 75,
    "closed_won": 100,
    "closed_lost": 0,
}
"""The win probability (percent) of a deal in each stage: set by the stage, never by hand."""

NEEDS_AMOUNT: frozenset[str] = frozenset({"proposal", "negotiation", "closed_won"})
"""Stages a deal can only be in with a positive amount (a proposal quotes a price)."""

STAGE_MOVES: dict[str, tuple[str, ...]] = {
    "prospecting": ("qualification", "closed_lost"),
    "qualification": ("proposal", "prospecting", "closed_lost"),
    "proposal": ("negotiation", "qualification", "prospecting", "closed_lost"),
    "negotiation": ("closed_won", "proposal", "qualification", "prospecting", "closed_lost"),
    "closed_won": (),
    "closed_lost": (),
}
"""Where a deal may move from each stage: forward one stage at a time, back to any earlier
open stage, lost from any open stage, won only from negotiation; never out of a closed stage."""

LEAD_STATUSES: tuple[str, ...] = ("new", "working", "qualified", "unqualified", "converted")
LEAD_SOURCES: tuple[str, ...] = ("web", "referral", "event", "cold_call", "partner", "webinar")
INDUSTRIES: tuple[str, ...] = (
    "software",
    "manufacturing",
    "healthcare",
    "finance",
    "retail",
    "education",
    "logistics",
    "energy",
    "other",
)
ACTIVITY_KINDS: tuple[str, ...] = ("call", "meeting", "task")
RECORD_TYPES: dict[str, str] = {
    "acc": "account",
    "con": "contact",
    "lead": "lead",
    "deal": "deal",
}
"""Id prefix -> the kind of record an activity or a note can be attached to."""


class Base(DeclarativeBase):
    pass


class Settings(Base):
    """The sales rep the assistant acts for: a single row."""

    __tablename__ = "settings"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    company: Mapped[str] = mapped_column(String(80))
    acting_owner_id: Mapped[str] = mapped_column(ForeignKey("owners.id"))


class Owner(Base):
    """A sales rep who owns accounts, leads and deals."""

    __tablename__ = "owners"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120), unique=True)
    title: Mapped[str] = mapped_column(String(80))
    region: Mapped[str] = mapped_column(String(40))
    active: Mapped[bool] = mapped_column(Boolean, default=True)


class Account(Base):
    """A company: a customer or a prospect."""

    __tablename__ = "accounts"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    industry: Mapped[str] = mapped_column(String(30))
    website: Mapped[str] = mapped_column(String(120), default="")
    city: Mapped[str] = mapped_column(String(80), default="")
    employees: Mapped[int] = mapped_column(Integer, default=0)
    owner_id: Mapped[str] = mapped_column(ForeignKey("owners.id"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    owner: Mapped[Owner] = relationship()
    contacts: Mapped[list[Contact]] = relationship(back_populates="account", order_by="Contact.id")
    deals: Mapped[list[Deal]] = relationship(back_populates="account", order_by="Deal.id")


class Contact(Base):
    """A person at an account."""

    __tablename__ = "contacts"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    first_name: Mapped[str] = mapped_column(String(60))
    last_name: Mapped[str] = mapped_column(String(60))
    email: Mapped[str] = mapped_column(String(160), unique=True)
    phone: Mapped[str] = mapped_column(String(40), default="")
    title: Mapped[str] = mapped_column(String(80), default="")
    owner_id: Mapped[str] = mapped_column(ForeignKey("owners.id"))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    account: Mapped[Account] = relationship(back_populates="contacts")


class Lead(Base):
    """A prospective buyer not yet in the books; converting makes it a contact (and account)."""

    __tablename__ = "leads"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    first_name: Mapped[str] = mapped_column(String(60))
    last_name: Mapped[str] = mapped_column(String(60))
    email: Mapped[str] = mapped_column(String(160), index=True)
    company: Mapped[str] = mapped_column(String(120))
    title: Mapped[str] = mapped_column(String(80), default="")
    source: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(16))
    owner_id: Mapped[str] = mapped_column(ForeignKey("owners.id"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    converted_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    converted_account_id: Mapped[str | None] = mapped_column(
        ForeignKey("accounts.id"), nullable=True
    )
    converted_contact_id: Mapped[str | None] = mapped_column(
        ForeignKey("contacts.id"), nullable=True
    )
    converted_deal_id: Mapped[str | None] = mapped_column(ForeignKey("deals.id"), nullable=True)


class Deal(Base):
    """An opportunity to sell to an account, moving through the pipeline ``STAGES``."""

    __tablename__ = "deals"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(160))
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    contact_id: Mapped[str] = mapped_column(ForeignKey("contacts.id"))
    owner_id: Mapped[str] = mapped_column(ForeignKey("owners.id"), index=True)
    stage: Mapped[str] = mapped_column(String(16))
    probability: Mapped[int] = mapped_column(Integer)
    amount: Mapped[Decimal | None] = mapped_column(Money(), nullable=True)
    close_date: Mapped[dt.date] = mapped_column(Date)
    """The expected close date while open; the day it closed once closed."""
    lost_reason: Mapped[str | None] = mapped_column(String(300), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    closed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)

    account: Mapped[Account] = relationship(back_populates="deals")
    contact: Mapped[Contact] = relationship()
    owner: Mapped[Owner] = relationship()
    history: Mapped[list[DealStageChange]] = relationship(
        order_by="DealStageChange.id", viewonly=True
    )


class DealStageChange(Base):
    """One stage move of a deal; ``from_stage`` is NULL on the row that records its creation."""

    __tablename__ = "deal_stage_changes"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    deal_id: Mapped[str] = mapped_column(ForeignKey("deals.id"), index=True)
    from_stage: Mapped[str | None] = mapped_column(String(16), nullable=True)
    to_stage: Mapped[str] = mapped_column(String(16))
    owner_id: Mapped[str] = mapped_column(ForeignKey("owners.id"))
    at: Mapped[dt.datetime] = mapped_column(DateTime)


class Activity(Base):
    """A call, meeting or task attached to one record (``record_type`` + ``record_id``)."""

    __tablename__ = "activities"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    kind: Mapped[str] = mapped_column(String(10))
    subject: Mapped[str] = mapped_column(String(200))
    record_type: Mapped[str] = mapped_column(String(10))
    record_id: Mapped[str] = mapped_column(String(16))
    owner_id: Mapped[str] = mapped_column(ForeignKey("owners.id"))
    due_date: Mapped[dt.date] = mapped_column(Date)
    completed: Mapped[bool] = mapped_column(Boolean, default=False)
    completed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    outcome: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


# a record's activities read in get_deal's order (open first, then the latest due): no sort
Index(
    "ix_activities_record",
    Activity.record_id,
    Activity.record_type,
    Activity.completed,
    Activity.due_date.desc(),
    Activity.id,
)


class Note(Base):
    """A free-text note attached to one record."""

    __tablename__ = "notes"
    # a record's latest notes (read backwards: newest first), unsorted
    __table_args__ = (Index("ix_notes_record", "record_id", "record_type", "created_at", "id"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    record_type: Mapped[str] = mapped_column(String(10))
    record_id: Mapped[str] = mapped_column(String(16))
    author_id: Mapped[str] = mapped_column(ForeignKey("owners.id"))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
