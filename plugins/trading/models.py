"""Trading state: instruments and their daily bars, portfolios, positions, orders and trades.

Money is exact everywhere (:class:`~prove_gym.server.Money`, integer cents in SQLite) and
share quantities are whole numbers. A portfolio's cash and positions are derived from its
trades only, by :func:`apply_fill`, shared by the sampler and the tools:

- ``cash == opening_cash + sum(sell values) - sum(buy values)`` over its trades;
- each position's ``quantity == sum(bought) - sum(sold)`` shares of that instrument;
- ``cash + sum(cost_basis) - sum(realized_pnl) == opening_cash`` (the average-cost books).

Orders rest in one book per instrument and match by price-time priority: the best price
first, then the lowest ``seq`` (arrival order). A trade always executes at the resting
(maker) order's limit price.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Protocol

from sqlalchemy import Boolean, Date, DateTime, ForeignKey, Index, Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from prove_gym.server import Money, added_later

CENT = Decimal("0.01")
OPEN_STATUSES: tuple[str, ...] = ("open", "partially_filled")
"""Statuses of an order that rests in the book (and can be changed or cancelled)."""
ORDER_STATUSES: tuple[str, ...] = ("open", "partially_filled", "filled", "cancelled")
MARGIN_MULTIPLIER = 2
"""A margin portfolio may hold positions worth up to twice its equity (Reg T style)."""
PRICE_BAND = Decimal("0.20")
"""Limit prices must lie within 20% of the previous close (the day's price band)."""
OPENING_BELL, CLOSING_BELL = dt.time(9, 30), dt.time(16, 0)
"""The regular session, Monday to Friday, in exchange time (a state's ``now`` is exchange
time). The sampler models no holidays (every weekday of its history has a bar, the same in
every env version); the trading hours keep the venue's full-day holidays from
``prove/trading-v3`` (``holidays=True``: :func:`holiday`)."""


def easter(year: int) -> dt.date:
    """Easter Sunday of ``year`` in the Gregorian calendar (the anonymous algorithm).

    >>> easter(2026), easter(2027)
    (datetime.date(2026, 4, 5), datetime.date(2027, 3, 28))
    """
    a, b, c = year % 19, year // 100, year % 100
    d, e = divmod(b, 4)
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    ell = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 19 * ell) // 433
    month = (h + ell - 7 * m + 90) // 25
    return dt.date(year, month, (h + ell - 7 * m + 33 * month + 19) % 32)


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> dt.date:
    """The ``n``-th ``weekday`` (0 Monday) of a month; ``n`` -1 for the last."""
    if n > 0:
        first = dt.date(year, month, 1)
        return first + dt.timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
    last = dt.date(year + month // 12, month % 12 + 1, 1) - dt.timedelta(days=1)
    return last - dt.timedelta(days=(last.weekday() - weekday) % 7)


def _observed(day: dt.date) -> dt.date:
    """A fixed-date holiday on a weekend is observed on the Friday before (Saturday) or the
    Monday after (Sunday)."""
    if day.weekday() == 5:
        return day - dt.timedelta(days=1)
    if day.weekday() == 6:
        return day + dt.timedelta(days=1)
    return day


def holidays_of(year: int) -> dict[dt.date, str]:
    """The venue's full-day holidays observed in ``year``, by date (NYSE's rule set).

    New Year's Day (January 1; on a Sunday the Monday after, on a Saturday not observed:
    the exchange does not close the last Friday of a year), Martin Luther King Jr. Day (the
    third Monday of January), Washington's Birthday (the third Monday of February), Good
    Friday (two days before Easter), Memorial Day (the last Monday of May), Juneteenth
    (June 19, from 2022), Independence Day (July 4), Labor Day (the first Monday of
    September), Thanksgiving (the fourth Thursday of November) and Christmas (December 25);
    a fixed date on a Saturday is observed the Friday before, on a Sunday the Monday after.
    Early closes and unscheduled closures (a national day of mourning) are not modelled.

    >>> [f"{day:%m-%d}" for day in holidays_of(2027)]
    ['01-01', '01-18', '02-15', '03-26', '05-31', '06-18', '07-05', '09-06', '11-25', '12-24']
    """
    found = {
        _nth_weekday(year, 1, 0, 3): "Martin Luther King Jr. Day",
        _nth_weekday(year, 2, 0, 3): "Washington's Birthday (Presidents' Day)",
        easter(year) - dt.timedelta(days=2): "Good Friday",
        _nth_weekday(year, 5, 0, -1): "Memorial Day",
        _observed(dt.date(year, 7, 4)): "Independence Day",
        _nth_weekday(year, 9, 0, 1): "Labor Day",
        _nth_weekday(year, 11, 3, 4): "Thanksgiving Day",
        _observed(dt.date(year, 12, 25)): "Christmas Day",
    }
    new_year = dt.date(year, 1, 1)
    if new_year.weekday() != 5:
        found[_observed(new_year)] = "New Year's Day"
    if year >= 2022:
        found[_observed(dt.date(year, 6, 19))] = "Juneteenth National Independence Day"
    return dict(sorted(found.items()))


def holiday(day: dt.date) -> str | None:
    """The name of the full-day holiday the venue observes on ``day``, or ``None``.

    >>> holiday(dt.date(2026, 7, 3)), holiday(dt.date(2026, 7, 6))
    ('Independence Day', None)
    """
    return holidays_of(day.year).get(day)


def is_trading_day(day: dt.date, *, holidays: bool = False) -> bool:
    """A weekday, and with ``holidays`` not one of the venue's holidays."""
    return day.weekday() < 5 and not (holidays and holiday(day) is not None)


def in_session(at: dt.datetime, *, holidays: bool = False) -> bool:
    """Whether ``at`` falls in a regular session: a trading day (:func:`is_trading_day`),
    09:30 up to (not at) 16:00."""
    return OPENING_BELL <= at.time() < CLOSING_BELL and is_trading_day(at.date(), holidays=holidays)


def next_open(at: dt.datetime, *, holidays: bool = False) -> dt.datetime:
    """The start of the first regular session after ``at`` (``at`` itself is not in one).

    >>> next_open(dt.datetime(2026, 3, 14, 10, 30))  # a Saturday
    datetime.datetime(2026, 3, 16, 9, 30)
    >>> next_open(dt.datetime(2026, 4, 2, 17, 0), holidays=True)  # Good Friday is next
    datetime.datetime(2026, 4, 6, 9, 30)
    """
    day = at.date() if at.time() < OPENING_BELL else at.date() + dt.timedelta(days=1)
    while not is_trading_day(day, holidays=holidays):
        day += dt.timedelta(days=1)
    return dt.datetime.combine(day, OPENING_BELL)


CLIENT_ORDER_ID = r"^[A-Za-z0-9._:-]{1,48}$"
"""What a ``client_order_id`` (an order's idempotency key, from ``prove/trading-v3``) may be."""


class Base(DeclarativeBase):
    pass


class Instrument(Base):
    """A listed stock or ETF and today's session so far (the last trade moves with fills)."""

    __tablename__ = "instruments"
    symbol: Mapped[str] = mapped_column(String(8), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    kind: Mapped[str] = mapped_column(String(8))
    sector: Mapped[str] = mapped_column(String(40))
    exchange: Mapped[str] = mapped_column(String(12))
    shortable: Mapped[bool] = mapped_column(Boolean)
    """False for hard-to-borrow names: they cannot be sold short."""
    halted: Mapped[bool] = mapped_column(Boolean)
    halt_reason: Mapped[str] = mapped_column(String(60), default="")
    prev_close: Mapped[Decimal] = mapped_column(Money())
    open_price: Mapped[Decimal] = mapped_column(Money())
    high: Mapped[Decimal] = mapped_column(Money())
    low: Mapped[Decimal] = mapped_column(Money())
    last_price: Mapped[Decimal] = mapped_column(Money())
    volume: Mapped[int] = mapped_column(Integer)

    bars: Mapped[list[Bar]] = relationship(order_by="Bar.day")


class Bar(Base):
    """One past trading day of one instrument (fixed per seed)."""

    __tablename__ = "bars"
    symbol: Mapped[str] = mapped_column(ForeignKey("instruments.symbol"), primary_key=True)
    day: Mapped[dt.date] = mapped_column(Date, primary_key=True)
    open: Mapped[Decimal] = mapped_column(Money())
    high: Mapped[Decimal] = mapped_column(Money())
    low: Mapped[Decimal] = mapped_column(Money())
    close: Mapped[Decimal] = mapped_column(Money())
    volume: Mapped[int] = mapped_column(Integer)


class Portfolio(Base):
    """A brokerage account: cash portfolios never borrow, margin ones may (and may short)."""

    __tablename__ = "portfolios"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    owner: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120))
    name: Mapped[str] = mapped_column(String(60))
    kind: Mapped[str] = mapped_column(String(8))
    """"cash" or "margin"."""
    status: Mapped[str] = mapped_column(String(12))
    """"active", "restricted" (closing trades only) or "closed" (no new orders)."""
    status_reason: Mapped[str] = mapped_column(String(80), default="")
    opened_on: Mapped[dt.date] = mapped_column(Date)
    opening_cash: Mapped[Decimal] = mapped_column(Money())
    """The deposit the recorded trading history starts from."""
    cash: Mapped[Decimal] = mapped_column(Money())

    positions: Mapped[list[Position]] = relationship(order_by="Position.symbol")


class Position(Base):
    """Shares of one instrument in one portfolio (negative when short), at average cost.

    ``cost_basis`` is the signed cost of the shares held (negative for a short: the
    proceeds); closing shares realises ``realized_pnl`` against their share of the basis.
    """

    __tablename__ = "positions"
    portfolio_id: Mapped[str] = mapped_column(ForeignKey("portfolios.id"), primary_key=True)
    symbol: Mapped[str] = mapped_column(ForeignKey("instruments.symbol"), primary_key=True)
    quantity: Mapped[int] = mapped_column(Integer)
    cost_basis: Mapped[Decimal] = mapped_column(Money())
    realized_pnl: Mapped[Decimal] = mapped_column(Money())


class Order(Base):
    """An order of a portfolio, or of another market participant (``portfolio_id`` is None)."""

    __tablename__ = "orders"
    # one side of an instrument's book: its open orders found without reading the others
    __table_args__ = (Index("ix_orders_book", "symbol", "side", "status", "limit_price", "seq"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    portfolio_id: Mapped[str | None] = mapped_column(
        ForeignKey("portfolios.id"), nullable=True, index=True
    )
    participant: Mapped[str] = mapped_column(String(60))
    """Who placed it: the portfolio's owner, or a market maker / other investor."""
    symbol: Mapped[str] = mapped_column(ForeignKey("instruments.symbol"), index=True)
    side: Mapped[str] = mapped_column(String(4))
    order_type: Mapped[str] = mapped_column(String(8))
    quantity: Mapped[int] = mapped_column(Integer)
    filled_quantity: Mapped[int] = mapped_column(Integer)
    filled_value: Mapped[Decimal] = mapped_column(Money())
    """Sum of quantity x price over the order's trades."""
    limit_price: Mapped[Decimal | None] = mapped_column(Money(), nullable=True)
    status: Mapped[str] = mapped_column(String(20))
    cancel_reason: Mapped[str] = mapped_column(String(60), default="")
    seq: Mapped[int] = mapped_column(Integer, unique=True)
    """Arrival order in the book: time priority among orders at one price."""
    reserve_quantity: Mapped[int] = mapped_column(Integer, default=0)
    """Shares of the order that open or extend a position and so hold buying power while it
    rests (the others close a position and are executed first)."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime)

    @property
    def remaining(self) -> int:
        return self.quantity - self.filled_quantity

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    @property
    def held(self) -> Decimal:
        """Buying power this order holds while it rests."""
        if not self.is_open or self.limit_price is None:
            return Decimal("0.00")
        return min(self.remaining, self.reserve_quantity) * self.limit_price


class OrderKey(Base):
    """The idempotency key an order was placed with (from ``prove/trading-v3``): placing the
    same order again with it returns that order instead of placing another. Keys are the
    portfolio's own (two portfolios may use the same text). No sampled state has one: the
    table counts in the state hash only once a key is written
    (:func:`~prove_gym.server.added_later`), so every state of ``-v0`` to ``-v2``, which never
    write it, keeps its hash."""

    __tablename__ = "client_order_ids"
    __table_args__ = added_later()
    portfolio_id: Mapped[str] = mapped_column(ForeignKey("portfolios.id"), primary_key=True)
    client_order_id: Mapped[str] = mapped_column(String(48), primary_key=True)
    order_id: Mapped[str] = mapped_column(ForeignKey("orders.id"), unique=True)


class Trade(Base):
    """One execution between a buy order and a sell order, at the resting order's price."""

    __tablename__ = "trades"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    symbol: Mapped[str] = mapped_column(ForeignKey("instruments.symbol"), index=True)
    buy_order_id: Mapped[str] = mapped_column(ForeignKey("orders.id"), index=True)
    sell_order_id: Mapped[str] = mapped_column(ForeignKey("orders.id"), index=True)
    price: Mapped[Decimal] = mapped_column(Money())
    quantity: Mapped[int] = mapped_column(Integer)
    aggressor: Mapped[str] = mapped_column(String(4))
    """The side of the incoming (taker) order: "buy" or "sell"."""
    executed_at: Mapped[dt.datetime] = mapped_column(DateTime)


# ------------------------------------------------------------ domain rules
# Shared by the sampler and the tools, so sampled history and live calls agree exactly.
def money(value: Decimal) -> Decimal:
    """Rounded half-even to the cent.

    >>> money(Decimal("10.005")), money(Decimal("10.015"))
    (Decimal('10.00'), Decimal('10.02'))
    """
    return value.quantize(CENT, ROUND_HALF_EVEN)


def price_band(prev_close: Decimal) -> tuple[Decimal, Decimal]:
    """The lowest and highest limit price allowed today: 20% either side of the close.

    >>> price_band(Decimal("100.00"))
    (Decimal('80.00'), Decimal('120.00'))
    """
    low = (prev_close * (1 - PRICE_BAND)).quantize(CENT, "ROUND_CEILING")
    high = (prev_close * (1 + PRICE_BAND)).quantize(CENT, "ROUND_FLOOR")
    return max(low, CENT), high


def buying_power(
    kind: str, cash: Decimal, holdings: list[tuple[int, Decimal]], held: Decimal
) -> Decimal:
    """What a portfolio may still spend on new (opening) shares, never below zero.

    A cash portfolio spends its cash less what open buy orders hold. A margin portfolio
    may hold positions worth twice its equity (cash plus the value of its positions at
    their last prices): twice the equity, less the gross value of its positions (longs
    and shorts alike), less what open orders hold. ``holdings`` is (quantity, last price).

    >>> buying_power("cash", Decimal("1000.00"), [], Decimal("250.00"))
    Decimal('750.00')
    >>> buying_power("margin", Decimal("1000.00"), [(10, Decimal("50.00"))], Decimal("0.00"))
    Decimal('2500.00')
    """
    if kind != "margin":
        return max(cash - held, Decimal("0.00"))
    equity = cash + sum((q * p for q, p in holdings), Decimal("0.00"))
    gross = sum((abs(q) * p for q, p in holdings), Decimal("0.00"))
    return max(MARGIN_MULTIPLIER * equity - gross - held, Decimal("0.00"))


class Cash(Protocol):
    """What :func:`apply_fill` books a fill's value into: a :class:`Portfolio`, or any object
    with its ``cash`` (the tools book into plain objects holding a row's values)."""

    cash: Decimal


class Holding(Protocol):
    """What :func:`apply_fill` books a fill's shares into: a :class:`Position`, or alike."""

    quantity: int
    cost_basis: Decimal
    realized_pnl: Decimal


def apply_fill(portfolio: Cash, position: Holding, side: str, qty: int, price: Decimal) -> None:
    """Book one execution of ``qty`` shares at ``price`` into cash and the position.

    Average cost: shares that close a position release their proportional share of the
    cost basis (rounded half-even to the cent) and realise the difference; shares beyond
    a flat position open one in the other direction at ``price``.

    >>> p, pos = Portfolio(cash=Decimal("1000.00")), Position(
    ...     quantity=0, cost_basis=Decimal("0.00"), realized_pnl=Decimal("0.00"))
    >>> apply_fill(p, pos, "buy", 3, Decimal("100.00"))
    >>> apply_fill(p, pos, "sell", 2, Decimal("110.00"))
    >>> p.cash, pos.quantity, pos.cost_basis, pos.realized_pnl
    (Decimal('920.00'), 1, Decimal('100.00'), Decimal('20.00'))
    """
    sign = 1 if side == "buy" else -1
    portfolio.cash = portfolio.cash - sign * qty * price
    held = position.quantity
    left = qty
    if held != 0 and (held > 0) != (sign > 0):
        closing = min(qty, abs(held))
        released = money(position.cost_basis * closing / abs(held))
        direction = 1 if held > 0 else -1
        position.realized_pnl = position.realized_pnl + direction * closing * price - released
        position.cost_basis = position.cost_basis - released
        position.quantity = held - direction * closing
        left -= closing
    if left:
        position.quantity = position.quantity + sign * left
        position.cost_basis = position.cost_basis + sign * left * price
