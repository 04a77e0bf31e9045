"""Budget state: accounts, envelope categories with monthly limits, transactions, envelope
transfers, recurring expenses, and the stored totals they accumulate into.

Envelope budgeting: income lands in the "Ready to Assign" category (``cat_000``) or straight
in a category; money is then moved between categories (envelopes) with envelope transfers;
an expense is paid from an account and spends from one category.

Stored totals, kept for speed and always equal to the sum of their rows:

- ``accounts.balance`` = ``opening_balance`` + income - expenses - transfers out + transfers in
  (``account_transfer`` transactions move money between accounts: card payments, ATM cash);
- ``categories.balance`` = ``opening_balance`` + income into it + envelope transfers in
  - envelope transfers out - expenses from it;
- ``category_months`` (one row per category and month with any activity): ``spent`` (its
  expenses dated that month) and ``assigned`` (income into it plus transfers in minus
  transfers out that month);
- ``months`` (one row per month with income or expenses): ``income`` and ``spent``.

Every dollar has a job: the accounts together hold exactly what the categories hold.
Money is exact everywhere (:class:`~prove_gym.server.Money`, integer cents in SQLite).
"""

from __future__ import annotations

import calendar
import datetime as dt
from decimal import Decimal

from sqlalchemy import Boolean, Date, ForeignKey, Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from prove_gym.server import Money

READY_TO_ASSIGN = "cat_000"
"""The inflow category: income waits here until it is moved into a spending category."""

ACCOUNT_KINDS: tuple[str, ...] = ("checking", "savings", "credit_card", "cash")
DEPOSIT_KINDS: frozenset[str] = frozenset({"checking", "savings", "cash"})
"""Accounts that hold money (never below zero) and may receive income."""

GROUPS: tuple[str, ...] = ("Inflow", "Bills", "Everyday", "Lifestyle", "Savings goals")
ENFORCEMENTS: tuple[str, ...] = ("warn", "block")
TRANSACTION_KINDS: tuple[str, ...] = ("expense", "income", "account_transfer")
FREQUENCIES: tuple[str, ...] = ("weekly", "monthly", "yearly")
RECURRING_STATUSES: tuple[str, ...] = ("active", "cancelled", "ended")

CENT = Decimal("0.01")
ZERO = Decimal("0.00")


class Base(DeclarativeBase):
    pass


class Settings(Base):
    """The budget itself: a single row (owner, currency, which months are still open)."""

    __tablename__ = "settings"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner: Mapped[str] = mapped_column(String(80))
    currency: Mapped[str] = mapped_column(String(3))
    history_start: Mapped[dt.date] = mapped_column(Date)
    """The first day of the recorded history."""
    closed_through: Mapped[dt.date] = mapped_column(Date)
    """Months up to this day are reconciled and closed: nothing dated in them may change."""


class Account(Base):
    __tablename__ = "accounts"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    institution: Mapped[str] = mapped_column(String(60))
    opening_balance: Mapped[Decimal] = mapped_column(Money())
    balance: Mapped[Decimal] = mapped_column(Money())
    credit_limit: Mapped[Decimal | None] = mapped_column(Money(), nullable=True)
    """Credit cards only: the balance may not fall below minus this."""
    closed: Mapped[bool] = mapped_column(Boolean, default=False)


class Category(Base):
    """An envelope. ``monthly_limit`` caps spending per calendar month (``None``: no cap);
    ``enforcement`` says whether an expense over the cap is refused ("block") or recorded
    with a warning ("warn")."""

    __tablename__ = "categories"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(60), unique=True)
    group_name: Mapped[str] = mapped_column(String(20))
    monthly_limit: Mapped[Decimal | None] = mapped_column(Money(), nullable=True)
    enforcement: Mapped[str] = mapped_column(String(8))
    opening_balance: Mapped[Decimal] = mapped_column(Money())
    balance: Mapped[Decimal] = mapped_column(Money())
    archived: Mapped[bool] = mapped_column(Boolean, default=False)


class Transaction(Base):
    """One expense, income or account transfer; ``amount`` is always positive.

    expense: ``account_id`` pays, ``category_id`` spends. income: ``account_id`` receives,
    ``category_id`` (Ready to Assign or a category) is funded. account_transfer:
    ``account_id`` -> ``to_account_id``, no category (a card payment, cash from an ATM).
    """

    __tablename__ = "transactions"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    date: Mapped[dt.date] = mapped_column(Date, index=True)
    kind: Mapped[str] = mapped_column(String(20))
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    to_account_id: Mapped[str | None] = mapped_column(ForeignKey("accounts.id"), nullable=True)
    category_id: Mapped[str | None] = mapped_column(ForeignKey("categories.id"), nullable=True)
    amount: Mapped[Decimal] = mapped_column(Money())
    payee: Mapped[str] = mapped_column(String(80))
    memo: Mapped[str] = mapped_column(String(140), default="")
    recurring_id: Mapped[str | None] = mapped_column(
        ForeignKey("recurring_expenses.id"), nullable=True
    )


class EnvelopeTransfer(Base):
    """Money moved from one category to another (no account changes)."""

    __tablename__ = "envelope_transfers"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    date: Mapped[dt.date] = mapped_column(Date)
    from_category_id: Mapped[str] = mapped_column(ForeignKey("categories.id"))
    to_category_id: Mapped[str] = mapped_column(ForeignKey("categories.id"))
    amount: Mapped[Decimal] = mapped_column(Money())
    memo: Mapped[str] = mapped_column(String(140), default="")


class RecurringExpense(Base):
    """A bill that comes back every week, month or year; each occurrence is posted as an
    expense once it is due. Monthly and yearly ones keep the day of ``start_date``
    (``anchor_day``), moved to the month's last day when the month is shorter."""

    __tablename__ = "recurring_expenses"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    payee: Mapped[str] = mapped_column(String(80))
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    category_id: Mapped[str] = mapped_column(ForeignKey("categories.id"))
    amount: Mapped[Decimal] = mapped_column(Money())
    frequency: Mapped[str] = mapped_column(String(8))
    anchor_day: Mapped[int] = mapped_column(Integer)
    start_date: Mapped[dt.date] = mapped_column(Date)
    next_date: Mapped[dt.date] = mapped_column(Date)
    end_date: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    status: Mapped[str] = mapped_column(String(12))
    created_on: Mapped[dt.date] = mapped_column(Date)


class CategoryMonth(Base):
    """Stored totals of one category in one month ("YYYY-MM")."""

    __tablename__ = "category_months"
    category_id: Mapped[str] = mapped_column(ForeignKey("categories.id"), primary_key=True)
    month: Mapped[str] = mapped_column(String(7), primary_key=True)
    spent: Mapped[Decimal] = mapped_column(Money())
    assigned: Mapped[Decimal] = mapped_column(Money())


class Month(Base):
    """Stored totals of one month ("YYYY-MM") over the whole budget."""

    __tablename__ = "months"
    month: Mapped[str] = mapped_column(String(7), primary_key=True)
    income: Mapped[Decimal] = mapped_column(Money())
    spent: Mapped[Decimal] = mapped_column(Money())


# ------------------------------------------------------------ domain rules
# Shared by the sampler and the tools, so sampled history and live calls agree exactly.
def month_key(day: dt.date) -> str:
    """The month a day belongs to, as stored: ``"YYYY-MM"``.

    >>> month_key(dt.date(2026, 3, 14))
    '2026-03'
    """
    return f"{day.year:04d}-{day.month:02d}"


def first_of_month(day: dt.date, months: int = 0) -> dt.date:
    """The first day of the month ``months`` after (or before, when negative) ``day``'s.

    >>> first_of_month(dt.date(2026, 1, 20), -2)
    datetime.date(2025, 11, 1)
    """
    index = day.year * 12 + day.month - 1 + months
    return dt.date(index // 12, index % 12 + 1, 1)


def on_day(first: dt.date, anchor_day: int) -> dt.date:
    """Day ``anchor_day`` of ``first``'s month, or the month's last day if it is shorter.

    >>> on_day(dt.date(2026, 2, 1), 31)
    datetime.date(2026, 2, 28)
    """
    last = calendar.monthrange(first.year, first.month)[1]
    return first.replace(day=min(anchor_day, last))


def next_occurrence(day: dt.date, frequency: str, anchor_day: int) -> dt.date:
    """The occurrence after ``day`` of a recurring expense.

    >>> next_occurrence(dt.date(2026, 1, 31), "monthly", 31)
    datetime.date(2026, 2, 28)
    >>> next_occurrence(dt.date(2026, 2, 28), "monthly", 31)
    datetime.date(2026, 3, 31)
    >>> next_occurrence(dt.date(2026, 3, 3), "weekly", 3)
    datetime.date(2026, 3, 10)
    """
    if frequency == "weekly":
        return day + dt.timedelta(days=7)
    months = 1 if frequency == "monthly" else 12
    return on_day(first_of_month(day, months), anchor_day)


def open_from(closed_through: dt.date) -> dt.date:
    """The first day that may still be changed (the day after the closed months)."""
    return closed_through + dt.timedelta(days=1)
