"""Payments state: merchants, their customers, invoices, charges, refunds, payouts, webhooks.

Money is exact everywhere (:class:`~prove_gym.server.Money`, integer cents in SQLite) and
each merchant has one currency. The rules every state obeys (the tests check them after
random call sequences):

- a charge's ``amount_refunded`` is the sum of its refunds and never more than was captured
  (a failed charge captured nothing);
- an invoice's ``amount_paid`` is the sum of its succeeded charges, at most ``amount_due``;
  it is ``paid`` exactly when the two are equal; a ``void`` invoice keeps no money
  (its payments, if any, were refunded in full);
- a merchant's ``balance`` is its succeeded charges minus its refunds minus its payouts,
  and never negative;
- every event is delivered once to every endpoint of its merchant that subscribes to its
  type and was enabled when it happened (``first_seq <= seq <= last_seq``);
- an idempotency key belongs to one merchant and names the object its request created.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from decimal import Decimal
from typing import Any, Protocol

from sqlalchemy import Date, DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from prove_gym.server import Money

CENT = Decimal("0.01")
ZERO = Decimal("0.00")

EVENT_TYPES: tuple[str, ...] = (
    "invoice.created",
    "invoice.paid",
    "invoice.voided",
    "charge.succeeded",
    "charge.failed",
    "refund.created",
    "payout.created",
    "payout.paid",
)
"""Every event type; a webhook endpoint subscribes to some of them, or to all with "*"."""

REFUND_WINDOW_DAYS = 180
"""A charge can be refunded for this many days after it was made."""

MAX_ENABLED_ENDPOINTS = 5
"""Most enabled webhook endpoints one merchant may have."""

DECLINE_MESSAGES = {
    "insufficient_funds": "The card has insufficient funds.",
    "do_not_honor": "The card issuer declined the charge without giving a reason.",
    "card_declined": "The card was declined.",
    "lost_card": "The card was reported lost.",
}
"""Why a card issuer declines a charge (the customer's card carries the code)."""


class Base(DeclarativeBase):
    pass


class Merchant(Base):
    """A business that bills its customers through the platform and is paid out to its bank."""

    __tablename__ = "merchants"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120))
    website: Mapped[str] = mapped_column(String(80))
    category: Mapped[str] = mapped_column(String(24))
    country: Mapped[str] = mapped_column(String(2))
    currency: Mapped[str] = mapped_column(String(3))
    invoice_prefix: Mapped[str] = mapped_column(String(8), unique=True)
    balance: Mapped[Decimal] = mapped_column(Money())
    payouts: Mapped[str] = mapped_column(String(8))
    """"enabled" or "paused" (then ``payout_pause_reason`` says why)."""
    payout_pause_reason: Mapped[str] = mapped_column(String(140), default="")
    bank_name: Mapped[str] = mapped_column(String(60))
    bank_last4: Mapped[str] = mapped_column(String(4))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    endpoints: Mapped[list[WebhookEndpoint]] = relationship(order_by="WebhookEndpoint.id")


class Customer(Base):
    """A merchant's customer and the card on file (none when ``card_brand`` is null)."""

    __tablename__ = "customers"
    __table_args__ = (UniqueConstraint("merchant_id", "email"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120))
    """Lower case: emails are compared without regard to case."""
    card_brand: Mapped[str | None] = mapped_column(String(16), nullable=True)
    card_last4: Mapped[str | None] = mapped_column(String(4), nullable=True)
    card_exp_month: Mapped[int | None] = mapped_column(Integer, nullable=True)
    card_exp_year: Mapped[int | None] = mapped_column(Integer, nullable=True)
    card_decline_code: Mapped[str | None] = mapped_column(String(24), nullable=True)
    """Set when the card's issuer declines every charge (a key of ``DECLINE_MESSAGES``)."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


class Invoice(Base):
    __tablename__ = "invoices"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    number: Mapped[str] = mapped_column(String(20), unique=True)
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"), index=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    description: Mapped[str] = mapped_column(String(200))
    currency: Mapped[str] = mapped_column(String(3))
    amount_due: Mapped[Decimal] = mapped_column(Money())
    amount_paid: Mapped[Decimal] = mapped_column(Money())
    status: Mapped[str] = mapped_column(String(8))
    """"open", "paid" or "void"."""
    due_date: Mapped[dt.date] = mapped_column(Date)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    paid_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    voided_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    idempotency_key: Mapped[str | None] = mapped_column(String(64), nullable=True)

    customer: Mapped[Customer] = relationship()
    charges: Mapped[list[Charge]] = relationship(back_populates="invoice", order_by="Charge.id")


class Charge(Base):
    """One attempt to take money from the customer's card for an invoice."""

    __tablename__ = "charges"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    invoice_id: Mapped[str] = mapped_column(ForeignKey("invoices.id"), index=True)
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"), index=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"))
    amount: Mapped[Decimal] = mapped_column(Money())
    amount_refunded: Mapped[Decimal] = mapped_column(Money())
    status: Mapped[str] = mapped_column(String(12))
    """"succeeded" (the amount was captured) or "failed" (declined: nothing captured)."""
    failure_code: Mapped[str | None] = mapped_column(String(24), nullable=True)
    card_brand: Mapped[str] = mapped_column(String(16))
    card_last4: Mapped[str] = mapped_column(String(4))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    idempotency_key: Mapped[str | None] = mapped_column(String(64), nullable=True)

    invoice: Mapped[Invoice] = relationship(back_populates="charges")
    refunds: Mapped[list[Refund]] = relationship(order_by="Refund.id")


class Refund(Base):
    __tablename__ = "refunds"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    charge_id: Mapped[str] = mapped_column(ForeignKey("charges.id"), index=True)
    invoice_id: Mapped[str] = mapped_column(ForeignKey("invoices.id"))
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"), index=True)
    amount: Mapped[Decimal] = mapped_column(Money())
    reason: Mapped[str] = mapped_column(String(24))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    idempotency_key: Mapped[str | None] = mapped_column(String(64), nullable=True)


class Payout(Base):
    """Money sent from a merchant's balance to its bank account."""

    __tablename__ = "payouts"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"), index=True)
    amount: Mapped[Decimal] = mapped_column(Money())
    status: Mapped[str] = mapped_column(String(12))
    """"in_transit" until its arrival date, then "paid"."""
    description: Mapped[str] = mapped_column(String(100))
    bank_last4: Mapped[str] = mapped_column(String(4))
    arrival_date: Mapped[dt.date] = mapped_column(Date)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    idempotency_key: Mapped[str | None] = mapped_column(String(64), nullable=True)


class WebhookEndpoint(Base):
    """A URL of the merchant's that receives events of the subscribed types.

    It receives the events numbered ``first_seq`` onwards, up to ``last_seq`` when it was
    disabled (``None`` while enabled).
    """

    __tablename__ = "webhook_endpoints"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"), index=True)
    url: Mapped[str] = mapped_column(String(300))
    description: Mapped[str] = mapped_column(String(140))
    events: Mapped[str] = mapped_column(String(400))
    """Space-separated event types in ``EVENT_TYPES`` order, or "*" for all of them."""
    status: Mapped[str] = mapped_column(String(8))
    response_code: Mapped[int] = mapped_column(Integer)
    """What the merchant's server answers (200 when healthy, 500 or 404 when broken)."""
    first_seq: Mapped[int] = mapped_column(Integer)
    last_seq: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


class Event(Base):
    """Something that happened to a merchant's objects; ``seq`` numbers all events in order."""

    __tablename__ = "events"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, unique=True)
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"), index=True)
    type: Mapped[str] = mapped_column(String(24))
    object_id: Mapped[str] = mapped_column(String(16))
    invoice_id: Mapped[str | None] = mapped_column(ForeignKey("invoices.id"), nullable=True)
    amount: Mapped[Decimal | None] = mapped_column(Money(), nullable=True)
    summary: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    deliveries: Mapped[list[WebhookDelivery]] = relationship(order_by="WebhookDelivery.id")


class WebhookDelivery(Base):
    """One event sent to one endpoint: the delivery log."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (UniqueConstraint("event_id", "endpoint_id"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    event_id: Mapped[str] = mapped_column(ForeignKey("events.id"), index=True)
    endpoint_id: Mapped[str] = mapped_column(ForeignKey("webhook_endpoints.id"), index=True)
    status: Mapped[str] = mapped_column(String(12))
    """"delivered" (the endpoint answered 2xx) or "failed"."""
    response_code: Mapped[int] = mapped_column(Integer)
    attempted_at: Mapped[dt.datetime] = mapped_column(DateTime)


class IdempotencyKey(Base):
    """A request made with an idempotency key: what it asked for and what it created."""

    __tablename__ = "idempotency_keys"
    merchant_id: Mapped[str] = mapped_column(ForeignKey("merchants.id"), primary_key=True)
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    tool: Mapped[str] = mapped_column(String(32))
    fingerprint: Mapped[str] = mapped_column(String(64))
    object_id: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


# ------------------------------------------------------------ domain rules
# Shared by the sampler and the tools, so sampled history and live calls agree exactly.
def fingerprint(tool: str, params: dict[str, Any]) -> str:
    """What identifies a request: the tool and its arguments as sent (normalised).

    >>> fingerprint("create_payout", {"merchant_id": "mer_001", "amount": Decimal("10.00")})[:12]
    'a086af2bef5d'
    """
    payload = json.dumps(
        [tool, {k: None if v is None else str(v) for k, v in sorted(params.items())}],
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def subscribes(events: str, event_type: str) -> bool:
    """Whether an endpoint's ``events`` column covers ``event_type``.

    >>> subscribes("*", "charge.failed"), subscribes("invoice.paid refund.created", "invoice.paid")
    (True, True)
    """
    return events == "*" or event_type in events.split()


class Subscription(Protocol):
    """What decides which events an endpoint receives (a ``WebhookEndpoint``, or a
    sampler's plain row of one)."""

    events: str
    first_seq: int
    last_seq: int | None


def receives(endpoint: Subscription, event_type: str, seq: int) -> bool:
    """Whether event number ``seq`` of type ``event_type`` is delivered to ``endpoint``."""
    in_window = endpoint.first_seq <= seq and (
        endpoint.last_seq is None or seq <= endpoint.last_seq
    )
    return in_window and subscribes(endpoint.events, event_type)


def delivery_status(response_code: int) -> str:
    return "delivered" if 200 <= response_code < 300 else "failed"


def card_expired(exp_month: int, exp_year: int, today: dt.date) -> bool:
    """A card is valid through the last day of its expiry month.

    >>> card_expired(2, 2026, dt.date(2026, 2, 28)), card_expired(2, 2026, dt.date(2026, 3, 1))
    (False, True)
    """
    return (exp_year, exp_month) < (today.year, today.month)


def arrival_date(created: dt.date) -> dt.date:
    """Payouts arrive two business days after they are made.

    >>> arrival_date(dt.date(2026, 3, 6))  # a Friday
    datetime.date(2026, 3, 10)
    """
    day, left = created, 2
    while left:
        day += dt.timedelta(days=1)
        if day.weekday() < 5:
            left -= 1
    return day
