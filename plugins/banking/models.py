"""Banking state: customers, accounts, the transaction ledger, transfers, payees, schedules, cards.

Money is exact everywhere (:class:`~prove_gym.server.Money`, integer cents in SQLite).
Every account obeys ``balance == opening_balance + sum(its transaction amounts)``:
``opening_balance`` is the balance when the recorded history starts, and each
transaction row is one signed ledger entry (negative for money leaving).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from decimal import ROUND_HALF_EVEN, Decimal

from sqlalchemy import Date, DateTime, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from prove_gym.server import Money


class Base(DeclarativeBase):
    pass


class ExchangeRate(Base):
    """A fixed rate: how many units of the base currency (USD) one unit of ``currency`` buys."""

    __tablename__ = "exchange_rates"
    currency: Mapped[str] = mapped_column(String(3), primary_key=True)
    base_per_unit: Mapped[Decimal] = mapped_column(Money(6))


class Customer(Base):
    __tablename__ = "customers"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120), unique=True)
    phone: Mapped[str] = mapped_column(String(32))
    city: Mapped[str] = mapped_column(String(60))
    segment: Mapped[str] = mapped_column(String(16))
    joined_on: Mapped[dt.date] = mapped_column(Date)
    passcode: Mapped[str] = mapped_column(String(8))
    """The customer's secret 6-digit passcode (only the customer knows it)."""
    auth_salt: Mapped[str] = mapped_column(String(32))
    """Per-customer salt from which the customer's auth token is derived."""

    accounts: Mapped[list[Account]] = relationship(back_populates="customer", order_by="Account.id")


class Account(Base):
    __tablename__ = "accounts"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"))
    kind: Mapped[str] = mapped_column(String(16))
    nickname: Mapped[str] = mapped_column(String(60))
    number: Mapped[str] = mapped_column(String(34), unique=True)
    currency: Mapped[str] = mapped_column(ForeignKey("exchange_rates.currency"))
    balance: Mapped[Decimal] = mapped_column(Money())
    opening_balance: Mapped[Decimal] = mapped_column(Money())
    overdraft_limit: Mapped[Decimal] = mapped_column(Money())
    status: Mapped[str] = mapped_column(String(16))
    opened_on: Mapped[dt.date] = mapped_column(Date)

    customer: Mapped[Customer] = relationship(back_populates="accounts")


class Beneficiary(Base):
    """A saved external payee of one customer."""

    __tablename__ = "beneficiaries"
    __table_args__ = (UniqueConstraint("customer_id", "account_number"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"))
    name: Mapped[str] = mapped_column(String(80))
    account_number: Mapped[str] = mapped_column(String(34))
    bank_name: Mapped[str] = mapped_column(String(80))
    currency: Mapped[str] = mapped_column(ForeignKey("exchange_rates.currency"))
    added_on: Mapped[dt.date] = mapped_column(Date)


class Transfer(Base):
    """One movement of money out of an account: to another own account or to a beneficiary."""

    __tablename__ = "transfers"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    from_account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    to_account_id: Mapped[str | None] = mapped_column(ForeignKey("accounts.id"), nullable=True)
    beneficiary_id: Mapped[str | None] = mapped_column(
        ForeignKey("beneficiaries.id"), nullable=True
    )
    amount: Mapped[Decimal] = mapped_column(Money())
    currency: Mapped[str] = mapped_column(String(3))
    credited_amount: Mapped[Decimal] = mapped_column(Money())
    credited_currency: Mapped[str] = mapped_column(String(3))
    rate: Mapped[Decimal] = mapped_column(Money(6))
    memo: Mapped[str] = mapped_column(String(140))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


class Card(Base):
    __tablename__ = "cards"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    network: Mapped[str] = mapped_column(String(16))
    kind: Mapped[str] = mapped_column(String(16))
    last4: Mapped[str] = mapped_column(String(4))
    expires: Mapped[str] = mapped_column(String(5))
    status: Mapped[str] = mapped_column(String(16))
    block_reason: Mapped[str] = mapped_column(String(32), default="")
    daily_limit: Mapped[Decimal] = mapped_column(Money())


class Transaction(Base):
    """One signed ledger entry of one account; ``amount`` < 0 when money leaves."""

    __tablename__ = "transactions"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    posted_at: Mapped[dt.datetime] = mapped_column(DateTime)
    kind: Mapped[str] = mapped_column(String(20))
    description: Mapped[str] = mapped_column(String(140))
    amount: Mapped[Decimal] = mapped_column(Money())
    balance_after: Mapped[Decimal] = mapped_column(Money())
    transfer_id: Mapped[str | None] = mapped_column(ForeignKey("transfers.id"), nullable=True)
    card_id: Mapped[str | None] = mapped_column(ForeignKey("cards.id"), nullable=True)


class ScheduledPayment(Base):
    """A future (possibly repeating) transfer to a beneficiary or to another own account."""

    __tablename__ = "scheduled_payments"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    from_account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    to_account_id: Mapped[str | None] = mapped_column(ForeignKey("accounts.id"), nullable=True)
    beneficiary_id: Mapped[str | None] = mapped_column(
        ForeignKey("beneficiaries.id"), nullable=True
    )
    amount: Mapped[Decimal] = mapped_column(Money())
    frequency: Mapped[str] = mapped_column(String(16))
    next_date: Mapped[dt.date] = mapped_column(Date)
    end_date: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    reference: Mapped[str] = mapped_column(String(140))
    status: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


# ------------------------------------------------------------ domain rules
# Shared by the sampler and the tools, so sampled history and live calls agree exactly.
CENT = Decimal("0.01")
RATE_QUANTUM = Decimal("0.000001")


def cross_rate(from_base_per_unit: Decimal, to_base_per_unit: Decimal) -> Decimal:
    """Units of the target currency one unit of the source buys, rounded to 6 places.

    >>> cross_rate(Decimal("1.085"), Decimal("1"))
    Decimal('1.085000')
    """
    return (from_base_per_unit / to_base_per_unit).quantize(RATE_QUANTUM, ROUND_HALF_EVEN)


def convert(amount: Decimal, rate: Decimal) -> Decimal:
    """``amount`` times ``rate``, rounded half-even to the cent.

    >>> convert(Decimal("100.00"), Decimal("1.085000"))
    Decimal('108.50')
    """
    return (amount * rate).quantize(CENT, ROUND_HALF_EVEN)


def auth_token_for(customer_id: str, salt: str) -> str:
    """The auth token ``authenticate`` hands out for a customer: fixed per state, unguessable."""
    return "tok_" + hashlib.sha256(f"{salt}:{customer_id}".encode()).hexdigest()[:16]
