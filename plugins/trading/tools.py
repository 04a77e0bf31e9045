"""The trading server's 13 tools. Docstrings are what the model reads: keep examples concrete.

Trading rules have names (``buying_power``, ``sellable_shares``, ``not_shortable``, ...); a
tool that refuses an order raises ``PreconditionFailed`` with a message that starts with
``Rule '<name>' failed:`` and says what would be allowed instead (``RULES`` lists them all).
Every order is checked completely before anything changes: matching is planned against the
book first (:func:`_plan`), then executed (:func:`_execute`).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import random
from collections import namedtuple
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints
from sqlalchemy import bindparam, func, or_, select, type_coerce, update

from prove_gym.server import (
    Bound,
    Entity,
    EnvVersion,
    InvalidArgument,
    Money,
    NotFound,
    PreconditionFailed,
    Principal,
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
    CENT,
    CLIENT_ORDER_ID,
    MARGIN_MULTIPLIER,
    OPEN_STATUSES,
    Bar,
    Base,
    Instrument,
    Order,
    OrderKey,
    Portfolio,
    Position,
    Trade,
    apply_fill,
    buying_power,
    holiday,
    in_session,
    is_trading_day,
    money,
    next_open,
    price_band,
)
from .sampler import HISTORY_DAYS, sample_trading

MARKET_HOURS = 1
"""The env version (``prove/trading-v1``) from which the venue keeps regular trading hours
(:func:`_session_rule`); ``-v0`` trades at any hour, as first released."""
HOLDER = 2
"""The env version (``prove/trading-v2``) from which a session acts for one account
holder (a portfolio), keeping v1's market hours."""
BROKER = 3
"""The env version (``prove/trading-v3``) from which the venue keeps its full-day holidays
(:func:`~.models.holiday`: closed all day, as on a weekend), an order placement takes an
idempotency key (``client_order_id``: the tools' v3 definitions), a sale's proceeds settle
on the next trading day (T+1: a cash portfolio buys only with settled cash, :func:`_unsettled`)
and an order above :data:`PREVIEW_ABOVE` needs a preview (``preview_order``), keeping v2's
principal."""
REPLACE_PREVIEW = 4
"""The env version (``prove/trading-v4``) from which ``replace_order`` asks a preview as
placing does: a replacement worth more than :data:`PREVIEW_ABOVE` must carry the
``preview_id`` of ``preview_replace_order`` for that replacement (rule ``preview_required``),
keeping everything of v3."""
PREVIEW_ABOVE = Decimal("25000.00")
"""From ``prove/trading-v3``, an order placement whose notional (quantity x limit price, or a
market order's fill value) is above this must carry the ``preview_id`` that ``preview_order``
gave for the same order (rule ``preview_required``), as IBKR's order preview (what-if) and
Tradier's ``preview=true`` confirm a costly order before it is sent."""

V3_INSTRUCTIONS = (
    "Exchange holidays: the exchange is also closed all day on its full-day holidays (New "
    "Year's Day, Martin Luther King Jr. Day, Presidents' Day, Good Friday, Memorial Day, "
    "Juneteenth, Independence Day, Labor Day, Thanksgiving and Christmas; a holiday on a "
    "Saturday is observed the Friday before, on a Sunday the Monday after), with the same "
    "closed-market rules as at night or on a weekend. Retrying an order safely: give "
    "place_limit_order or place_market_order a client_order_id of your own; the same order "
    "sent again with it returns the order it placed (replayed: true) instead of placing "
    "another, and a different order with a used client_order_id is refused (rule "
    "'client_order_id_reused'). Settlement: the proceeds of a sale settle on the next trading "
    "day (T+1). Until then they are in the portfolio's cash but not settled, and a cash "
    "portfolio buys only with settled cash (its buying power is settled cash less what open "
    "orders hold), so a purchase paid for by today's sales is refused (rule "
    "'unsettled_funds'); get_portfolio shows settled_cash, unsettled_cash and settles_on. A "
    "margin portfolio's buying power is unchanged. Large orders: an order whose notional "
    "(quantity x limit price, or a market order's fill value) is above 25,000.00 must be "
    "previewed first: call preview_order with the same order, show the user the estimate, "
    "and pass its preview_id to place_limit_order or place_market_order (rule "
    "'preview_required')."
)

V4_INSTRUCTIONS = (
    "Large order changes: a replace_order whose replacement is worth more than 25,000.00 "
    "(the shares still to fill: what they would trade at now, and the limit price for what "
    "would rest) must be previewed first, as a placement is: call preview_replace_order with "
    "the same order_id, quantity and limit_price, show the user the estimate, and pass its "
    "preview_id to replace_order (rule 'preview_required'). A replacement that keeps both the "
    "quantity and the limit price is refused (bad arguments) and changes nothing."
)

V1_INSTRUCTIONS = (
    "Trading hours: the exchange trades Monday to Friday, 09:30-16:00 exchange time (ET), "
    "with no extended hours; get_quote's as_of is the current exchange time. While the "
    "market is closed a market order is refused, and a limit order is accepted but rests in "
    "the book without trading until the session opens."
)


OUT_OF_SCOPE = (
    "Deposit 5,000 into my portfolio from my bank.",
    "Set a trailing stop at 8% below the price.",
    "Buy some Bitcoin.",
    "Trade options on Apple.",
    "Open a margin account.",
    "What will this stock be worth next year?",
    "Show me analysts' ratings for Microsoft.",
    "Send me an alert when it drops below 100.",
    "Reinvest my dividends automatically.",
    "Download my tax documents for the year.",
    "Short-sell a thousand shares.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

server = Server(
    "trading",
    out_of_scope=OUT_OF_SCOPE,
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.4.0",
    env_versions=[
        EnvVersion(
            MARKET_HOURS,
            "keeps market hours: outside Monday-Friday 09:30-16:00 exchange time a market "
            "order is refused (rule market_closed) and a limit order rests without trading",
            tasks_file=Path(__file__).with_name("tasks_v1.jsonl"),
            instructions=V1_INSTRUCTIONS,
        ),
        EnvVersion(
            HOLDER,
            "acts for one account holder (the task's principal, a portfolio) and keeps v1's "
            "market hours: a call on another portfolio or its orders is refused with "
            "permission_denied (rule not_your_portfolio) and changes nothing",
            tasks_file=Path(__file__).with_name("tasks_v2.jsonl"),
            principal=Principal(
                "portfolio",
                "You are signed in as the holder of brokerage account (portfolio) {id}: "
                "you see and place orders only for it. A call naming another portfolio, or "
                "an order of another portfolio or of the market, is refused (rule "
                "'not_your_portfolio').",
            ),
        ),
        EnvVersion(
            BROKER,
            "trades like a broker: the exchange is closed on its full-day holidays (New "
            "Year's Day, MLK Day, Presidents' Day, Good Friday, Memorial Day, Juneteenth, "
            "Independence Day, Labor Day, Thanksgiving, Christmas, with weekend observance), "
            "where a market order is refused (rule market_closed, naming the holiday) and a "
            "limit order rests; place_limit_order and place_market_order take an optional "
            "client_order_id (an idempotency key: the same order again returns the first and "
            "places nothing, another order with it is refused, rule client_order_id_reused); "
            "a sale's proceeds settle on the next trading day (T+1) and a cash portfolio buys "
            "only with settled cash (rule unsettled_funds; get_portfolio shows settled_cash, "
            "unsettled_cash and settles_on); an order placement above 25,000.00 of notional "
            "must carry the preview_id of preview_order (a new tool) for the same order (rule "
            "preview_required); it keeps v2's account holder",
            tasks_file=Path(__file__).with_name("tasks_v3.jsonl"),
            instructions=V3_INSTRUCTIONS,
        ),
        EnvVersion(
            REPLACE_PREVIEW,
            "asks a preview for large order changes as for placements: a replace_order whose "
            "replacement is worth more than 25,000.00 must carry the preview_id of "
            "preview_replace_order (a new tool) for the same order, quantity and limit price "
            "(rule preview_required); a replacement that changes nothing is still refused; it "
            "keeps everything of v3",
            tasks_file=Path(__file__).with_name("tasks_v4.jsonl"),
            instructions=V4_INSTRUCTIONS,
        ),
    ],
    base=Base,
    sampler=sample_trading,
    description="A stock broker and exchange: portfolios with cash and positions, one order "
    "book per instrument where limit and market orders match other participants' resting "
    "orders by price-time priority (with partial fills), order changes and cancels, quotes, "
    "order-book depth and daily price bars.",
    instructions="Trading conventions: portfolios have ids like 'pf_0003', orders 'ord_01234', "
    "trades 'trd_00417'; instruments are named by ticker symbol ('AAPL', 'SPY'). Prices are "
    'exact decimals in USD with at most two decimal places (pass 187.25 or "187.25"); '
    "quantities are whole shares. A limit order buys at its limit price or lower (sells at it "
    "or higher) and the unfilled rest waits in the book; a market order fills at once against "
    "the best resting orders and any remainder is cancelled, it never rests. Buying needs "
    "buying power: a cash portfolio spends only its cash, a margin portfolio up to twice its "
    "equity. Only margin portfolios may sell short, and only borrowable (shortable) "
    "instruments. A refused order changes nothing; its message names the rule and what "
    "would be allowed.",
)

# Rows: the core looks the id up before the tool runs (not_found hints: see the entities below).
PortfolioRow = Annotated[Record[Portfolio], Entity("portfolio")]
OrderRow = Annotated[Record[Order], Entity("order")]
# Symbols are matched in upper case, so "aapl" finds AAPL.
SymbolRow = Annotated[
    Record[Instrument],
    Entity("instrument"),
    StringConstraints(strip_whitespace=True, to_upper=True, max_length=12),
]
Side = Literal["buy", "sell"]
# An idempotency key (Alpaca's client_order_id): bounded, and matched exactly as given.
ClientOrderId = Annotated[str, Field(min_length=1, max_length=48, pattern=CLIENT_ORDER_ID)]
PreviewId = Annotated[str, Field(max_length=40)]
Quantity = Annotated[int, Field(ge=1, le=100_000)]
Price = Annotated[Decimal, Field(gt=0, le=100_000, decimal_places=2)]
Limit = Annotated[int, Field(ge=1, le=100)]
# Longer than any name, email or symbol it is matched against; bounded for SQL LIKE.
SearchText = Annotated[str, Field(max_length=100)]

RULES: dict[str, str] = {
    "buying_power": "Shares that open or add to a position need buying power for their full "
    "value (limit price, or the fill prices of a market order). A cash portfolio's buying "
    "power is its cash less what its open orders hold; a margin portfolio's is twice its "
    "equity less the value of its positions and what its open orders hold. Shares that "
    "close a position (selling a long, buying back a short) need none.",
    "sellable_shares": "A cash portfolio sells only shares it holds and has not already "
    "offered in another open sell order; it can never sell short.",
    "not_shortable": "Hard-to-borrow instruments (shortable=false) cannot be sold short, "
    "even in a margin portfolio.",
    "closing_only": "A restricted portfolio may only close positions: sell shares it holds or "
    "buy back shares it is short.",
    "portfolio_closed": "A closed portfolio takes no new or changed orders.",
    "market_closed": "From prove/trading-v1: outside regular trading hours (Monday to Friday, "
    "09:30-16:00 exchange time; from prove/trading-v3 also all day on the exchange's "
    "holidays) market orders are refused; limit orders are accepted and rest without trading "
    "until the session opens.",
    "trading_halted": "No new or changed orders while an instrument is halted (cancels are "
    "still accepted).",
    "price_band": "A limit price must lie within 20% of the previous close.",
    "no_liquidity": "A market order needs resting orders on the other side of the book.",
    "no_self_trade": "An order may not trade against a resting order of the same portfolio.",
    "order_not_open": "Only open or partially filled orders can be changed or cancelled.",
    "quantity_above_filled": "A changed order's quantity (the new total) must exceed what has "
    "already filled.",
    "unsettled_funds": "From prove/trading-v3: a sale's proceeds settle on the next trading "
    "day (T+1). A cash portfolio buys only with settled cash: its buying power is its cash "
    "less the proceeds of sales not yet settled, less what its open orders hold (a margin "
    "portfolio's is unchanged). An order that only today's unsettled proceeds would pay for "
    "is refused under this rule rather than buying_power.",
    "preview_required": "From prove/trading-v3: an order placement whose notional (quantity x "
    "limit price, or a market order's fill value) is above 25,000.00 must carry the "
    "preview_id that preview_order gave for the same order; a preview_id given for another "
    "order is refused too. From prove/trading-v4 the same holds for replace_order: a "
    "replacement whose shares still to fill are worth more than 25,000.00 must carry the "
    "preview_id that preview_replace_order gave for the same order, quantity and limit price.",
    "client_order_id_reused": "From prove/trading-v3: a client_order_id names one order of a "
    "portfolio. Sending the same order (symbol, side, type, quantity and limit price, as the "
    "order stands) with it again returns that order and places nothing; a different order "
    "with it is refused.",
}


class RuleBroken(PreconditionFailed):
    """A named trading rule refused the request."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(f"Rule '{rule}' failed: {detail}")
        self.rule = rule


# ----------------------------------------------------------------- results
class InstrumentOut(TypedDict):
    symbol: str
    name: str
    kind: str
    sector: str
    exchange: str
    last_price: Decimal
    change_pct: Decimal
    shortable: bool
    halted: bool


class QuoteOut(TypedDict):
    symbol: str
    name: str
    bid: Decimal | None
    bid_size: int
    ask: Decimal | None
    ask_size: int
    last_price: Decimal
    open: Decimal
    high: Decimal
    low: Decimal
    prev_close: Decimal
    change: Decimal
    change_pct: Decimal
    volume: int
    price_band_low: Decimal
    price_band_high: Decimal
    shortable: bool
    halted: bool
    halt_reason: str | None
    as_of: str


class LevelOut(TypedDict):
    price: Decimal
    quantity: int
    orders: int


class BookOut(TypedDict):
    symbol: str
    halted: bool
    last_price: Decimal
    spread: Decimal | None
    bids: list[LevelOut]
    asks: list[LevelOut]


class BarOut(TypedDict):
    date: str
    open: Decimal
    high: Decimal
    low: Decimal
    close: Decimal
    volume: int


class BarsOut(TypedDict):
    symbol: str
    bars: list[BarOut]
    period_high: Decimal
    period_low: Decimal
    change_pct: Decimal
    average_volume: int


class PortfolioSummary(TypedDict):
    portfolio_id: str
    name: str
    owner: str
    email: str
    kind: str
    status: str
    cash: Decimal


class PositionOut(TypedDict):
    symbol: str
    quantity: int
    direction: str
    average_price: Decimal
    cost_basis: Decimal
    last_price: Decimal
    market_value: Decimal
    unrealized_pnl: Decimal
    realized_pnl: Decimal
    available_to_sell: int


class PortfolioOut(TypedDict):
    portfolio_id: str
    name: str
    owner: str
    kind: str
    status: str
    status_reason: str | None
    cash: Decimal
    long_value: Decimal
    short_value: Decimal
    equity: Decimal
    held_for_orders: Decimal
    buying_power: Decimal
    realized_pnl: Decimal
    unrealized_pnl: Decimal
    positions: list[PositionOut]
    open_order_ids: list[str]


class TradeOut(TypedDict):
    trade_id: str
    order_id: str
    symbol: str
    side: str
    quantity: int
    price: Decimal
    value: Decimal
    liquidity: str
    executed_at: str


class OrderOut(TypedDict):
    order_id: str
    portfolio_id: str
    symbol: str
    side: str
    order_type: str
    quantity: int
    filled_quantity: int
    remaining_quantity: int
    limit_price: Decimal | None
    average_fill_price: Decimal | None
    status: str
    cancel_reason: str | None
    held_buying_power: Decimal
    created_at: str
    updated_at: str


class OrderDetail(OrderOut):
    trades: list[TradeOut]


class OrdersOut(TypedDict):
    portfolio_id: str
    status: str
    orders: list[OrderOut]


class TradesOut(TypedDict):
    portfolio_id: str
    trades: list[TradeOut]


class ExecutionOut(OrderOut):
    trades: list[TradeOut]
    position_quantity: int
    cash: Decimal
    buying_power: Decimal


class CancelOut(OrderOut):
    released_buying_power: Decimal


class PortfolioV3Out(PortfolioOut):
    """get_portfolio's answer from prove/trading-v3: its cash split by settlement."""

    settled_cash: Decimal
    unsettled_cash: Decimal
    settles_on: str | None


class FillEstimate(TypedDict):
    price: Decimal
    quantity: int


class PreviewOut(TypedDict):
    preview_id: str
    portfolio_id: str
    symbol: str
    side: str
    order_type: str
    quantity: int
    limit_price: Decimal | None
    estimated_fills: list[FillEstimate]
    estimated_rest: int
    estimated_notional: Decimal
    preview_required: bool
    buying_power: Decimal
    buying_power_needed: Decimal


class ReplacePreviewOut(PreviewOut):
    """What preview_replace_order answers (from prove/trading-v4): a preview of the order
    as the replacement would leave it."""

    order_id: str


class ExecutionV3Out(ExecutionOut):
    """What an order placement answers from prove/trading-v3: with its idempotency key."""

    client_order_id: str | None
    replayed: bool


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
instruments_t, portfolios_t, positions_t = (
    Instrument.__table__,
    Portfolio.__table__,
    Position.__table__,
)
orders_t, trades_t = Order.__table__, Trade.__table__
INSTRUMENT = Query(select(instruments_t).where(Instrument.symbol == bindparam("symbol")))
PORTFOLIO = Query(select(portfolios_t).where(Portfolio.id == bindparam("id")))
POSITION = Query(
    select(positions_t).where(
        Position.portfolio_id == bindparam("portfolio_id"), Position.symbol == bindparam("symbol")
    )
)
SET_POSITION = Query(  # a fill always moves the quantity: the row always changes
    update(Position)
    .where(
        Position.portfolio_id == bindparam("portfolio_id"), Position.symbol == bindparam("symbol")
    )
    .values(
        quantity=bindparam("quantity"),
        cost_basis=bindparam("cost_basis"),
        realized_pnl=bindparam("realized_pnl"),
    )
)
# a fill's value booked into the cash of a resting order's portfolio, without reading it
ADD_CASH = Query(
    update(Portfolio)
    .where(Portfolio.id == bindparam("id"))
    .values(cash=Portfolio.cash + bindparam("amount"))
)
# a portfolio's non-zero positions with their instrument's prices
HOLDINGS = Query(
    select(positions_t, Instrument.last_price, Instrument.prev_close, Instrument.halted)
    .select_from(positions_t.join(instruments_t, Instrument.symbol == Position.symbol))
    .where(Position.portfolio_id == bindparam("portfolio_id"), Position.quantity != 0)
    .order_by(Position.symbol)
)
REALIZED = Query(
    select(Position.realized_pnl)
    .where(Position.portfolio_id == bindparam("portfolio_id"))
    .order_by(Position.symbol)
)
OPEN_ORDERS = Query(
    select(orders_t)
    .where(Order.portfolio_id == bindparam("portfolio_id"), Order.status.in_(OPEN_STATUSES))
    .order_by(Order.seq)
)
# what buying_power needs of the positions: (quantity, last price), non-zero ones
POSITION_VALUES = Query(
    select(Position.quantity, Instrument.last_price)
    .select_from(positions_t.join(instruments_t, Instrument.symbol == Position.symbol))
    .where(Position.portfolio_id == bindparam("portfolio_id"), Position.quantity != 0)
    .order_by(Position.symbol)
)
_remaining_shares = Order.quantity - Order.filled_quantity
# A portfolio's open orders but the one being changed (``skip``; "" when none, no id is
# empty), summed in SQL: the shares offered of one symbol on one side, and the buying
# power held (Order.held: the reserved part of the rest at the limit price, none without).
OFFERED = Query(
    select(func.coalesce(func.sum(_remaining_shares), 0)).where(
        Order.portfolio_id == bindparam("portfolio_id"),
        Order.status.in_(OPEN_STATUSES),
        Order.id != bindparam("skip"),
        Order.symbol == bindparam("symbol"),
        Order.side == bindparam("side"),
    )
)
_HELD_SUM = type_coerce(
    func.coalesce(
        func.sum(func.min(_remaining_shares, Order.reserve_quantity) * Order.limit_price), 0
    ),
    Money(),
)
HELD = Query(
    select(_HELD_SUM).where(
        Order.portfolio_id == bindparam("portfolio_id"),
        Order.status.in_(OPEN_STATUSES),
        Order.id != bindparam("skip"),
    )
)
# one side of an instrument's book in matching order: best price first, then arrival
BOOK = {
    side: Query(
        select(orders_t)
        .where(
            Order.symbol == bindparam("symbol"),
            Order.side == side,
            Order.status.in_(OPEN_STATUSES),
        )
        .order_by(best, Order.seq)
    )
    for side, best in (("buy", Order.limit_price.desc()), ("sell", Order.limit_price.asc()))
}
LAST_SEQ = Query(select(func.max(Order.seq)))
# an orders row as the statements above read it (the fields of select(orders_t))
_OrderRow = namedtuple("_OrderRow", [c.key for c in orders_t.columns])  # type: ignore[misc]
TRADES_OF_ORDER = Query(
    select(trades_t)
    .where(
        or_(
            Trade.buy_order_id == bindparam("order_id"),
            Trade.sell_order_id == bindparam("order_id"),
        )
    )
    .order_by(Trade.executed_at, Trade.id)
)
# trades with the portfolio and side of their buy and sell orders
buy_t, sell_t = orders_t.alias("buy"), orders_t.alias("sell")
_TRADES_WITH_ORDERS = select(
    trades_t,
    buy_t.c.portfolio_id.label("buy_portfolio_id"),
    buy_t.c.side.label("buy_side"),
    sell_t.c.portfolio_id.label("sell_portfolio_id"),
    sell_t.c.side.label("sell_side"),
).select_from(
    trades_t.join(buy_t, buy_t.c.id == Trade.buy_order_id).join(
        sell_t, sell_t.c.id == Trade.sell_order_id
    )
)
BARS = Query(
    select(Bar.__table__)
    .where(Bar.symbol == bindparam("symbol"))
    .order_by(Bar.day.desc())
    .limit(bindparam("days"))
)
PORTFOLIOS_MATCHING = Query(
    select(portfolios_t)
    .where(
        contains(
            bindparam("pattern"), Portfolio.owner, Portfolio.email, Portfolio.name, Portfolio.id
        )
    )
    .order_by(Portfolio.owner, Portfolio.id)
    .limit(bindparam("limit"))
)
# The portfolio listing's reads: what it uses of every portfolio at once (not per portfolio)
ACTIVE_PORTFOLIOS = Query(  # each with what its open orders hold (_held's, none skipped)
    select(
        portfolios_t,
        select(_HELD_SUM)
        .where(Order.portfolio_id == Portfolio.id, Order.status.in_(OPEN_STATUSES))
        .scalar_subquery()
        .label("held"),
    )
    .where(Portfolio.status == "active")
    .order_by(Portfolio.id)
)
ALL_HOLDINGS = Query(  # every portfolio's HOLDINGS, one portfolio after another
    select(positions_t, Instrument.last_price, Instrument.prev_close, Instrument.halted)
    .select_from(positions_t.join(instruments_t, Instrument.symbol == Position.symbol))
    .where(Position.quantity != 0)
    .order_by(Position.portfolio_id, Position.symbol)
)
ALL_OFFERED = Query(  # the OFFERED shares of each portfolio, symbol and side (none skipped)
    select(Order.portfolio_id, Order.symbol, Order.side, func.sum(_remaining_shares))
    .where(Order.status.in_(OPEN_STATUSES))
    .group_by(Order.portfolio_id, Order.symbol, Order.side)
    .order_by(Order.portfolio_id, Order.symbol, Order.side)
)
TRADABLE_INSTRUMENTS = Query(
    select(instruments_t).where(Instrument.halted.is_(False)).order_by(Instrument.symbol)
)
# open orders of active portfolios, with what the entity listing needs of the others
OPEN_PORTFOLIO_ORDERS = Query(
    select(orders_t, Instrument.halted, Instrument.prev_close, Portfolio.owner)
    .select_from(
        orders_t.join(instruments_t, Instrument.symbol == Order.symbol).join(
            portfolios_t, Portfolio.id == Order.portfolio_id
        )
    )
    .where(Order.status.in_(OPEN_STATUSES), Portfolio.status == "active")
    .order_by(Order.id)
)
RECENT_TRADES = Query(
    _TRADES_WITH_ORDERS.where(Trade.executed_at >= bindparam("since")).order_by(Trade.id)
)
INSTRUMENT_NAMES = Query(select(Instrument.name).order_by(Instrument.symbol))
OWNERS = Query(select(Portfolio.owner).order_by(Portfolio.id))
LAST_PRICES = Query(select(Instrument.last_price).order_by(Instrument.symbol))
PREV_CLOSE = Query(select(Instrument.prev_close).where(Instrument.symbol == bindparam("symbol")))
ORDER_NAMED = Query(select(orders_t).where(Order.id == bindparam("id")))
# the proceeds of a portfolio's sales executed since a time (its unsettled cash: _unsettled)
SOLD_SINCE = Query(
    select(type_coerce(func.coalesce(func.sum(Trade.quantity * Trade.price), 0), Money()))
    .select_from(trades_t.join(orders_t, Order.id == Trade.sell_order_id))
    .where(
        Order.portfolio_id == bindparam("portfolio_id"),
        Trade.executed_at >= bindparam("since"),
    )
)
# the order a client_order_id placed in a portfolio (from prove/trading-v3)
BY_CLIENT_ORDER_ID = Query(
    select(orders_t)
    .join(OrderKey.__table__, OrderKey.order_id == Order.id)
    .where(
        OrderKey.portfolio_id == bindparam("portfolio_id"),
        OrderKey.client_order_id == bindparam("key"),
    )
    .order_by(Order.id)
)


@functools.cache
def _instruments_query(matching: bool, by_kind: bool) -> Query:
    """Instruments by symbol, with the filters asked for: search_instruments' statement."""
    stmt = select(instruments_t)
    if matching:
        stmt = stmt.where(
            contains(bindparam("pattern"), Instrument.symbol, Instrument.name, Instrument.sector)
        )
    if by_kind:
        stmt = stmt.where(Instrument.kind == bindparam("kind"))
    return Query(stmt.order_by(Instrument.symbol).limit(bindparam("limit")))


@functools.cache
def _orders_query(status: str, by_symbol: bool) -> Query:
    """A portfolio's orders, newest first: list_orders' statement. ``status`` is "open" (open
    or partially filled), "all", or "one" (the status given as a parameter)."""
    stmt = select(orders_t).where(Order.portfolio_id == bindparam("portfolio_id"))
    if status == "open":
        stmt = stmt.where(Order.status.in_(OPEN_STATUSES))
    elif status == "one":
        stmt = stmt.where(Order.status == bindparam("status"))
    if by_symbol:
        stmt = stmt.where(Order.symbol == bindparam("symbol"))
    stmt = stmt.order_by(Order.created_at.desc(), Order.id.desc())
    return Query(stmt.limit(bindparam("limit")))


@functools.cache
def _reachable_query(side: str, priced: bool) -> Query:
    """The resting orders on ``side`` an incoming order of ``quantity`` shares trades against,
    in matching order (as BOOK): those within its ``limit_price`` when ``priced``, and of
    those only while shares are left, i.e. the ones with fewer than ``quantity`` shares
    resting ahead of them. With the columns a fill reads and writes."""
    best = Order.limit_price.desc() if side == "buy" else Order.limit_price.asc()
    # shares resting ahead of each order: a running sum over the orders before it
    ahead = func.sum(_remaining_shares).over(order_by=(best, Order.seq), rows=(None, -1))
    stmt = select(
        Order.id,
        Order.portfolio_id,
        Order.side,
        Order.quantity,
        Order.filled_quantity,
        Order.filled_value,
        Order.limit_price,
        Order.status,
        Order.updated_at,
        Order.seq,
        func.coalesce(ahead, 0).label("ahead"),
    ).where(
        Order.symbol == bindparam("symbol"),
        Order.side == side,
        Order.status.in_(OPEN_STATUSES),
    )
    if priced:  # resting buys at the limit or higher, resting sells at it or lower
        reach = bindparam("limit_price", type_=Money())
        stmt = stmt.where(
            Order.limit_price >= reach if side == "buy" else Order.limit_price <= reach
        )
    book = stmt.subquery()
    first = book.c.limit_price.desc() if side == "buy" else book.c.limit_price.asc()
    return Query(
        select(*(c for c in book.c if c.key != "ahead"))
        .where(book.c.ahead < bindparam("quantity"))
        .order_by(first, book.c.seq)
    )


@functools.cache
def _trades_query(by_symbol: bool) -> Query:
    """A portfolio's trades, newest first: list_trades' statement."""
    stmt = _TRADES_WITH_ORDERS.where(
        or_(
            buy_t.c.portfolio_id == bindparam("portfolio_id"),
            sell_t.c.portfolio_id == bindparam("portfolio_id"),
        )
    )
    if by_symbol:
        stmt = stmt.where(Trade.symbol == bindparam("symbol"))
    stmt = stmt.order_by(Trade.executed_at.desc(), Trade.id.desc())
    return Query(stmt.limit(bindparam("limit")))


# ----------------------------------------------------------------- helpers
def _pct(new: Decimal, old: Decimal) -> Decimal:
    return (Decimal(100) * (new - old) / old).quantize(CENT) if old else Decimal("0.00")


# An order row's remaining shares, whether it rests, and what it holds: Order's properties.
def _remaining(order: Any) -> int:
    return order.quantity - order.filled_quantity


def _is_open(order: Any) -> bool:
    return order.status in OPEN_STATUSES


def _holds(order: Any) -> Decimal:
    """Buying power the order holds while it rests (``Order.held``)."""
    if not _is_open(order) or order.limit_price is None:
        return Decimal("0.00")
    return min(_remaining(order), order.reserve_quantity) * order.limit_price


def _open_orders(ctx: ToolContext, portfolio_id: str) -> list[Any]:
    return ctx.sql.all(OPEN_ORDERS, portfolio_id=portfolio_id)


def _skip(exclude: Any | None) -> str:
    """The ``skip`` parameter of OFFERED and HELD: the order being changed, or none."""
    return exclude.id if exclude is not None else ""


def _committed(
    ctx: ToolContext, portfolio_id: str, symbol: str, side: str, exclude: Any | None = None
) -> int:
    """Shares of ``symbol`` the portfolio already offers on ``side`` in other open orders."""
    return int(
        ctx.sql.scalar(
            OFFERED, portfolio_id=portfolio_id, symbol=symbol, side=side, skip=_skip(exclude)
        )
    )


def _held(ctx: ToolContext, portfolio_id: str, exclude: Any | None = None) -> Decimal:
    """Buying power the portfolio's other open orders hold (``Order.held`` summed)."""
    held: Decimal = ctx.sql.scalar(HELD, portfolio_id=portfolio_id, skip=_skip(exclude))
    return held


def _holdings(ctx: ToolContext, portfolio_id: str) -> list[Any]:
    """Non-zero positions by symbol, each with its instrument's last_price, prev_close, halted."""
    return ctx.sql.all(HOLDINGS, portfolio_id=portfolio_id)


def _power(
    ctx: ToolContext, portfolio: Any, exclude: Any | None = None, *, settled: bool = True
) -> Decimal:
    """What ``portfolio`` may still spend on opening shares (``exclude``: an order being
    changed, whose holds do not count). From prove/trading-v3 a cash portfolio spends only
    settled cash (``settled`` False: as if today's sales had settled, to tell the two rules
    apart)."""
    # only a margin portfolio's buying power depends on its positions
    holdings: list[tuple[int, Decimal]] = (
        [
            (h.quantity, h.last_price)
            for h in ctx.sql.all(POSITION_VALUES, portfolio_id=portfolio.id)
        ]
        if portfolio.kind == "margin"
        else []
    )
    cash = portfolio.cash
    if settled and portfolio.kind == "cash":
        cash -= _unsettled(ctx, portfolio.id)[0]
    return buying_power(portfolio.kind, cash, holdings, _held(ctx, portfolio.id, exclude))


def _settlement_day(ctx: ToolContext) -> dt.date:
    """The last trading day on or before today: trades of that day or later have not settled
    (T+1: a trade settles on the first trading day after its own)."""
    day = ctx.now.date()
    while not is_trading_day(day, holidays=True):
        day -= dt.timedelta(days=1)
    return day


def _unsettled(ctx: ToolContext, portfolio_id: str) -> tuple[Decimal, dt.date | None]:
    """From prove/trading-v3: the proceeds of the portfolio's sales that have not settled yet,
    and the day they settle (the next trading day after :func:`_settlement_day`); ``(0,
    None)`` when there are none, and always before v3 (everything settles at once there)."""
    if ctx.env_version < BROKER:
        return Decimal("0.00"), None
    day = _settlement_day(ctx)
    since = dt.datetime.combine(day, dt.time(0, 0))
    amount: Decimal = ctx.sql.scalar(SOLD_SINCE, portfolio_id=portfolio_id, since=since)
    if not amount:
        return Decimal("0.00"), None
    return amount, next_open(since + dt.timedelta(days=1), holidays=True).date()


def _power_text(ctx: ToolContext, portfolio: Any, exclude: Any | None = None) -> str:
    held = _held(ctx, portfolio.id, exclude)
    if portfolio.kind == "cash":
        unsettled, settles = _unsettled(ctx, portfolio.id)
        if unsettled:
            return (
                f"settled cash {portfolio.cash - unsettled} (cash {portfolio.cash} less "
                f"{unsettled} of sale proceeds settling on {settles}) less {held} held for "
                "open orders"
            )
        return f"cash {portfolio.cash} less {held} held for open orders"
    holdings = _holdings(ctx, portfolio.id)
    equity = portfolio.cash + sum((h.quantity * h.last_price for h in holdings), Decimal(0))
    gross = sum((abs(h.quantity) * h.last_price for h in holdings), Decimal(0))
    return (
        f"{MARGIN_MULTIPLIER} x equity {money(equity)} less positions worth {money(gross)} "
        f"less {held} held for open orders"
    )


def _writable(portfolio: Any) -> None:
    if portfolio.status == "closed":
        raise RuleBroken(
            "portfolio_closed",
            f"portfolio {portfolio.id} is closed ({portfolio.status_reason}); it takes no new "
            "or changed orders. Use another portfolio of the owner (find_portfolios).",
        )


def _tradable(ins: Any) -> None:
    if ins.halted:
        raise RuleBroken(
            "trading_halted",
            f"trading in {ins.symbol} is halted ({ins.halt_reason}); no orders can be placed or "
            "changed until it resumes. Open orders can still be cancelled.",
        )


def _in_band(ins: Any, limit_price: Decimal) -> None:
    low, high = price_band(ins.prev_close)
    if not low <= limit_price <= high:
        raise RuleBroken(
            "price_band",
            f"limit price {limit_price} is outside today's band for {ins.symbol}: between {low} "
            f"and {high} (20% either side of the previous close {ins.prev_close}). Pick a price "
            "in the band; get_quote shows the current bid and ask.",
        )


def _session_rule(ctx: ToolContext, market: bool) -> bool:
    """Whether an order may trade now: True during a regular session (and at any hour in
    ``-v0``). Outside one, from ``prove/trading-v1``, a market order is refused and a limit
    order is accepted but does not trade (False): it rests until the session opens. From
    ``prove/trading-v3`` the venue's full-day holidays have no session (the refusal names
    the holiday), and the next open skips them.

    This is what a broker without extended-hours trading does by default. Alpaca and
    Interactive Brokers accept a regular-hours limit order while the market is closed and
    send it to the exchange at the next open, where it fills only at its price or better, so
    resting it here loses nothing a real account would have. A market order is refused rather
    than queued: it would fill at an opening price no one knows yet, so the buying power it
    needs cannot be checked when it is placed, and with no extended hours the venue has
    nowhere to fill it now (as Alpaca refuses a market order marked for extended hours). The
    refusal names the rule and the next open, and says a limit order can wait for it.
    """
    holidays = ctx.env_version >= BROKER  # the venue's holidays, from prove/trading-v3
    if ctx.env_version < MARKET_HOURS or in_session(ctx.now, holidays=holidays):
        return True
    if market:
        opens = next_open(ctx.now, holidays=holidays)
        today = holiday(ctx.now.date()) if holidays and ctx.now.weekday() < 5 else None
        why = (
            f"the market is closed all day today ({ctx.now:%A %Y-%m-%d}) for {today}, an "
            "exchange holiday"
            if today is not None
            else f"the market is closed now ({ctx.now:%A %Y-%m-%d %H:%M} exchange time); "
            "regular trading hours are Monday to Friday 09:30-16:00"
            + (" except exchange holidays" if holidays else "")
        )
        raise RuleBroken(
            "market_closed",
            f"{why}, with no extended hours, so a market order cannot execute. Place a limit "
            "order instead (place_limit_order): it is accepted now and rests in the book until "
            f"the session opens ({opens:%A %Y-%m-%d %H:%M}).",
        )
    return False


def _own(order: Any) -> str:
    if order.portfolio_id is None:  # another participant's: as a real venue does, say not found
        raise NotFound(  # (permission_denied would tell that the order exists)
            f"No order with id {order.id!r} in your portfolios. Call list_orders with a "
            "portfolio id to see that portfolio's orders."
        )
    return order.portfolio_id


@dataclass
class _Plan:
    """How an order would execute: all rules already checked, nothing changed yet."""

    fills: list[tuple[Any, int, Decimal]]  # (resting order row, shares, price)
    rest: int
    reserve: int
    position: Any | None  # the portfolio's position row in the symbol, if it has one
    needed: Decimal = Decimal("0.00")  # the buying power the opening shares need


@dataclass(slots=True)
class _Books:
    """Cash and one position's books, as :func:`apply_fill` books fills into them (the
    values of a portfolio's and a position's rows, or a cash change from zero)."""

    cash: Decimal
    quantity: int
    cost_basis: Decimal
    realized_pnl: Decimal

    @classmethod
    def of(cls, cash: Decimal, position: Any | None) -> _Books:
        if position is None:
            return cls(cash, 0, Decimal("0.00"), Decimal("0.00"))
        return cls(cash, position.quantity, position.cost_basis, position.realized_pnl)

    def position_values(self) -> dict[str, Any]:
        return {
            "quantity": self.quantity,
            "cost_basis": self.cost_basis,
            "realized_pnl": self.realized_pnl,
        }


def _segments(
    plan_fills: list[tuple[Any, int, Decimal]], rest: int, limit: Decimal | None
) -> list[tuple[int, Decimal]]:
    out = [(q, p) for _, q, p in plan_fills]
    if rest and limit is not None:
        out.append((rest, limit))
    return out


def _opening_value(segments: list[tuple[int, Decimal]], closing: int) -> Decimal:
    """Value of the shares after the first ``closing`` ones (closing shares execute first)."""
    total = Decimal("0.00")
    skip = closing
    for qty, price in segments:
        used = min(skip, qty)
        skip -= used
        total += (qty - used) * price
    return total


def _affordable(segments: list[tuple[int, Decimal]], closing: int, power: Decimal) -> int:
    """How many shares of the order fit: the closing ones plus what ``power`` pays for."""
    shares, skip, left = 0, closing, power
    for qty, price in segments:
        used = min(skip, qty)
        skip -= used
        shares += used
        fit = min(qty - used, int(left // price))
        shares += fit
        left -= fit * price
        if fit < qty - used:
            break
    return shares


def _plan(
    ctx: ToolContext,
    portfolio: Any,
    ins: Any,
    side: str,
    quantity: int,
    limit_price: Decimal | None,
    exclude: Any | None = None,
    *,
    trading: bool = True,
) -> _Plan:
    """Match against the book and check every rule; raises ``RuleBroken``, changes nothing.

    ``limit_price`` None is a market order. ``exclude`` is an order being changed: its own
    holds and offered shares do not count against it. ``trading`` False (the market is
    closed, :func:`_session_rule`): nothing trades, the whole order rests (an order it would
    reach of its own portfolio is still refused: it would trade against it at the open).
    """
    buying = side == "buy"
    other = "sell" if buying else "buy"
    # only the orders it reaches: within its limit, while shares are left (walking the book)
    params: dict[str, Any] = {"symbol": ins.symbol, "quantity": quantity}
    if limit_price is not None:
        params["limit_price"] = limit_price
    book = ctx.sql.all(_reachable_query(other, limit_price is not None), **params)
    fills: list[tuple[Any, int, Decimal]] = []
    left = quantity
    for resting in book:
        assert resting.limit_price is not None
        if resting.portfolio_id == portfolio.id:
            raise RuleBroken(
                "no_self_trade",
                f"this order would trade against {resting.id}, a resting {resting.side} order of "
                f"the same portfolio at {resting.limit_price}. Cancel {resting.id} first "
                "(cancel_order), or choose a limit price that does not reach it.",
            )
        take = min(left, _remaining(resting))
        fills.append((resting, take, resting.limit_price))
        left -= take
    if not trading:
        fills, left = [], quantity
    if limit_price is None and not fills:
        raise RuleBroken(
            "no_liquidity",
            f"no {other} orders rest in the {ins.symbol} book, so a market order cannot fill. "
            "Place a limit order instead (place_limit_order); it waits in the book.",
        )
    rest = left if limit_price is not None else 0
    total = quantity - left + rest
    position = ctx.sql.first(POSITION, portfolio_id=portfolio.id, symbol=ins.symbol)
    held = position.quantity if position is not None else 0
    # shares offered in other orders only count against shares that close a position
    closes = held < 0 if buying else held > 0
    offered = _committed(ctx, portfolio.id, ins.symbol, side, exclude) if closes else 0
    coverable = max(0, held - offered) if not buying else max(0, -held - offered)
    closing = min(total, coverable)
    opening = total - closing
    if opening and portfolio.status == "restricted":
        if coverable == 0:
            what = (
                f"it holds no {ins.symbol} shares it has not already offered, so it cannot "
                f"sell {ins.symbol} now"
                if not buying
                else f"it is not short {ins.symbol} (or has bid for every share it is short), "
                f"so it cannot buy {ins.symbol} now"
            )
            fix = "Only a trade that closes a position can go through (get_portfolio lists them)."
        else:
            what = (
                f"it may only sell at most {coverable} {ins.symbol} (shares it holds and has "
                "not offered)"
                if not buying
                else f"it may only buy back at most {coverable} {ins.symbol} (shares it is short "
                "and has not already bid for)"
            )
            fix = "Reduce the quantity."
        raise RuleBroken(
            "closing_only",
            f"portfolio {portfolio.id} is restricted to closing trades "
            f"({portfolio.status_reason}); {what}. {fix}",
        )
    if opening and not buying:
        if held <= 0:
            why = f"{portfolio.id} holds no {ins.symbol} shares"
            instead = "Buy first, or sell a symbol it holds (get_portfolio lists them)."
        else:
            why = (
                f"{portfolio.id} holds {held} {ins.symbol}"
                + (f", {offered} of them already offered in open sell orders" if offered else "")
                + f", so it can sell at most {coverable}"
            )
            instead = f"Sell at most {coverable}" + (
                f", or cancel an open sell order of {ins.symbol} (list_orders) to free its shares."
                if offered
                else "."
            )
        if portfolio.kind == "cash":
            raise RuleBroken(
                "sellable_shares",
                f"{portfolio.id} is a cash portfolio and cannot sell short: {why}. {instead}",
            )
        if not ins.shortable:
            raise RuleBroken(
                "not_shortable",
                f"{ins.symbol} is hard to borrow and cannot be sold short: {why}. {instead}",
            )
    segments = _segments(fills, rest, limit_price)
    needed = _opening_value(segments, closing)
    if needed:
        power = _power(ctx, portfolio, exclude)
        if needed > power:
            fit = _affordable(segments, closing, power)
            unsettled, settles = _unsettled(ctx, portfolio.id)
            if (
                unsettled
                and portfolio.kind == "cash"
                and needed <= _power(ctx, portfolio, exclude, settled=False)
            ):
                raise RuleBroken(
                    "unsettled_funds",
                    f"this order needs {needed} of buying power, but {portfolio.id} (cash "
                    f"portfolio) has {power} of settled cash to buy with "
                    f"({_power_text(ctx, portfolio, exclude)}): {unsettled} of its cash is the "
                    f"proceeds of sales that settle on {settles} (T+1), and a cash portfolio "
                    f"buys only with settled cash. At these prices it can buy at most {fit} "
                    f"shares now; the rest can be bought once the proceeds settle.",
                )
            kind = "buy" if buying else "sell short"
            raise RuleBroken(
                "buying_power",
                f"this order needs {needed} of buying power for the shares it would {kind}, "
                f"but {portfolio.id} ({portfolio.kind} portfolio) has {power} "
                f"({_power_text(ctx, portfolio, exclude)}). At these prices it can "
                f"{side} at most {fit} shares; lower the quantity, or cancel an open order to "
                "release what it holds.",
            )
    return _Plan(
        fills=fills, rest=rest, reserve=min(rest, opening), position=position, needed=needed
    )


def _fill_order(ctx: ToolContext, order: Any, qty: int, price: Decimal) -> Any:
    """The resting order row with a fill of ``qty`` shares at ``price`` counted (and written)."""
    filled = order.filled_quantity + qty
    return ctx.sql.update(
        Order,
        order,
        filled_quantity=filled,
        filled_value=order.filled_value + qty * price,
        status="filled" if filled == order.quantity else "partially_filled",
        updated_at=ctx.now,
    )


def _book_resting(
    ctx: ToolContext, portfolio_id: str, symbol: str, side: str, qty: int, price: Decimal
) -> None:
    """Book one execution of a resting order into its portfolio's cash and position."""
    pos = ctx.sql.first(POSITION, portfolio_id=portfolio_id, symbol=symbol)
    books = _Books.of(Decimal("0.00"), pos)  # cash from zero: the change to add
    apply_fill(books, books, side, qty, price)
    ctx.sql.run(ADD_CASH, id=portfolio_id, amount=books.cash)
    _write_position(ctx, portfolio_id, symbol, pos, books)


def _write_position(
    ctx: ToolContext, portfolio_id: str, symbol: str, pos: Any | None, books: _Books
) -> None:
    """Write a position's books after fills (a fill always moves the quantity)."""
    if pos is None:
        ctx.sql.insert(
            Position, portfolio_id=portfolio_id, symbol=symbol, **books.position_values()
        )
    else:
        ctx.sql.run(
            SET_POSITION, portfolio_id=portfolio_id, symbol=symbol, **books.position_values()
        )


def _execute(
    ctx: ToolContext,
    order: Any,
    plan: _Plan,
    ins: Any,
    portfolio: Any,
    change: dict[str, Any] | None = None,
) -> tuple[Any, list[Any], Any, int]:
    """Apply a checked plan: trades at the resting prices, then rest or cancel the remainder.

    ``order`` is the incoming order's row (of ``portfolio``), ``change`` what a replace sets
    in it. The order's row as it ends, the trades made (in the order made), the portfolio's
    row and its position's quantity after them.
    """
    change = dict(change or {})
    books = _Books.of(portfolio.cash, plan.position)
    trades = []
    filled, value = order.filled_quantity, order.filled_value
    # Per fill: the resting order, the trade, the resting order's portfolio books. What
    # belongs to the incoming order (its row, the instrument, its portfolio's books) is
    # written once after the last fill, with what all of them made.
    for resting, qty, price in plan.fills:
        buy, sell = (order, resting) if order.side == "buy" else (resting, order)
        trade = SimpleNamespace(
            id=next_id(ctx, Trade.id, "trd", 5),
            symbol=ins.symbol,
            buy_order_id=buy.id,
            sell_order_id=sell.id,
            price=price,
            quantity=qty,
            aggressor=order.side,
            executed_at=ctx.now,
        )
        resting = _fill_order(ctx, resting, qty, price)
        ctx.sql.insert(Trade, **vars(trade))
        if resting.portfolio_id is not None:
            _book_resting(ctx, resting.portfolio_id, ins.symbol, resting.side, qty, price)
        apply_fill(books, books, order.side, qty, price)
        filled += qty
        value += qty * price
        trades.append(trade)
    if plan.fills:
        change.update(filled_quantity=filled, filled_value=value)
    if filled == change.get("quantity", order.quantity):
        change["status"] = "filled"
    elif order.order_type == "market":
        change["status"] = "cancelled"
        change["cancel_reason"] = "market order remainder cancelled: no more resting orders"
    else:
        change["status"] = "partially_filled" if filled else "open"
    order = ctx.sql.update(
        Order, order, reserve_quantity=plan.reserve, updated_at=ctx.now, **change
    )
    if plan.fills:
        prices = [price for _, _, price in plan.fills]
        ctx.sql.update(
            Instrument,
            ins,
            last_price=prices[-1],
            high=max(ins.high, *prices),
            low=min(ins.low, *prices),
            volume=ins.volume + sum(qty for _, qty, _ in plan.fills),
        )
        portfolio = ctx.sql.update(Portfolio, portfolio, cash=books.cash)
        _write_position(ctx, portfolio.id, ins.symbol, plan.position, books)
    return order, trades, portfolio, books.quantity


def _next_seq(ctx: ToolContext) -> int:
    return (ctx.sql.scalar(LAST_SEQ) or 0) + 1


def _order_record(order: Any) -> OrderOut:
    assert order.portfolio_id is not None
    avg = (
        (order.filled_value / order.filled_quantity).quantize(Decimal("0.0001"))
        if order.filled_quantity
        else None
    )
    return {
        "order_id": order.id,
        "portfolio_id": order.portfolio_id,
        "symbol": order.symbol,
        "side": order.side,
        "order_type": order.order_type,
        "quantity": order.quantity,
        "filled_quantity": order.filled_quantity,
        "remaining_quantity": _remaining(order) if _is_open(order) else 0,
        "limit_price": order.limit_price,
        "average_fill_price": avg,
        "status": order.status,
        "cancel_reason": order.cancel_reason or None,
        "held_buying_power": money(_holds(order)),
        "created_at": order.created_at.isoformat(timespec="minutes"),
        "updated_at": order.updated_at.isoformat(timespec="minutes"),
    }


def _trade_record(trade: Any, order_id: str, side: str) -> TradeOut:
    """A trade as the order ``order_id`` (on ``side``) took part in it."""
    maker = trade.aggressor != side
    return {
        "trade_id": trade.id,
        "order_id": order_id,
        "symbol": trade.symbol,
        "side": side,
        "quantity": trade.quantity,
        "price": trade.price,
        "value": trade.quantity * trade.price,
        "liquidity": "maker" if maker else "taker",
        "executed_at": trade.executed_at.isoformat(timespec="minutes"),
    }


def _trades_of(ctx: ToolContext, order: Any) -> list[TradeOut]:
    return [
        _trade_record(t, order.id, order.side)
        for t in ctx.sql.all(TRADES_OF_ORDER, order_id=order.id)
    ]


def _execution(
    ctx: ToolContext, order: Any, trades: list[Any], portfolio: Any, position_quantity: int
) -> ExecutionOut:
    """What an order did: ``portfolio`` (its row) and ``position_quantity`` as they are now."""
    return {
        **_order_record(order),
        "trades": [_trade_record(t, order.id, order.side) for t in trades],
        "position_quantity": position_quantity,
        "cash": portfolio.cash,
        "buying_power": _power(ctx, portfolio),
    }


def _preview_id(
    ctx: ToolContext, portfolio: Any, symbol: str, side: str, quantity: int, price: Decimal | None
) -> str:
    """The preview_id of an order: a digest of the order and the session's time, so a preview
    confirms exactly that order (and a model cannot make one up without previewing)."""
    kind = "market" if price is None else f"limit {price}"
    text = f"{portfolio.id}|{symbol}|{side}|{quantity}|{kind}|{ctx.now.isoformat()}"
    return "pv_" + hashlib.sha256(text.encode()).hexdigest()[:12]


def _replacement_preview_id(ctx: ToolContext, order: Any, quantity: int, price: Decimal) -> str:
    """The preview_id of a replacement (from prove/trading-v4): a digest of the order it
    changes, the new quantity and price and the session's time, never one of a placement."""
    text = f"replace|{order.id}|{quantity}|limit {price}|{ctx.now.isoformat()}"
    return "pv_" + hashlib.sha256(text.encode()).hexdigest()[:12]


def _notional(plan: _Plan, limit_price: Decimal | None) -> Decimal:
    """What an order is worth: its fills at their prices, and what rests at its limit."""
    filled = sum((qty * price for _, qty, price in plan.fills), Decimal("0.00"))
    return money(filled + plan.rest * (limit_price or 0))


def _confirmed(
    ctx: ToolContext,
    portfolio: Any,
    ins: Any,
    side: str,
    quantity: int,
    limit_price: Decimal | None,
    plan: _Plan,
    preview_id: str | None,
) -> None:
    """From prove/trading-v3: refuse (``preview_required``) an order above
    :data:`PREVIEW_ABOVE` without its preview, or any order with another order's."""
    order = _describe(
        ins.symbol, side, "market" if limit_price is None else "limit", quantity, limit_price
    )
    _previewed(
        _notional(plan, limit_price),
        preview_id,
        _preview_id(ctx, portfolio, ins.symbol, side, quantity, limit_price),
        f"order ({order})",
        "Call preview_order with the same portfolio, symbol, side, quantity and limit price, "
        "confirm the estimate with the user, then place the order with its preview_id.",
    )


def _previewed(
    notional: Decimal, preview_id: str | None, expected: str, what: str, instead: str
) -> None:
    """Refuse (``preview_required``) a write of ``what`` worth above :data:`PREVIEW_ABOVE`
    without the ``expected`` preview_id, or one with another preview_id."""
    if preview_id is None and notional <= PREVIEW_ABOVE:
        return
    if preview_id == expected:
        return
    why = (
        f"preview_id {preview_id!r} does not preview this {what}"
        if preview_id is not None
        else f"this {what} is worth {notional}, above {PREVIEW_ABOVE}, and carries no preview_id"
    )
    raise RuleBroken("preview_required", f"{why}. {instead}")


def _checked_plan(
    ctx: ToolContext,
    portfolio: Any,
    ins: Any,
    side: str,
    quantity: int,
    limit_price: Decimal | None,
) -> _Plan:
    """Every rule of a new order checked, and how it would execute: nothing written."""
    _writable(portfolio)
    trading = _session_rule(ctx, market=limit_price is None)
    _tradable(ins)
    if limit_price is not None:
        _in_band(ins, limit_price)
    return _plan(ctx, portfolio, ins, side, quantity, limit_price, trading=trading)


def _submit_once(
    ctx: ToolContext,
    portfolio: Any,
    ins: Any,
    side: str,
    quantity: int,
    limit_price: Decimal | None,
    client_order_id: str | None,
    preview_id: str | None = None,
) -> ExecutionV3Out:
    """:func:`_submit` from prove/trading-v3, with an idempotency key: an order the key
    already placed in the portfolio is answered again (``replayed``) if this is the same
    order, refused (``client_order_id_reused``) if not; a new key places the order."""
    if client_order_id is not None:
        placed = ctx.sql.first(BY_CLIENT_ORDER_ID, portfolio_id=portfolio.id, key=client_order_id)
        if placed is not None:
            asked = (ins.symbol, side, "market" if limit_price is None else "limit", quantity)
            has = (placed.symbol, placed.side, placed.order_type, placed.quantity)
            if asked != has or limit_price != placed.limit_price:
                raise RuleBroken(
                    "client_order_id_reused",
                    f"client_order_id {client_order_id!r} already placed order {placed.id} in "
                    f"{portfolio.id} ({_describe(*has, placed.limit_price)}), not "
                    f"{_describe(*asked, limit_price)}: a retry must repeat the same order. "
                    "Use a new client_order_id for a new order (get_order shows the first).",
                )
            position = ctx.sql.first(POSITION, portfolio_id=portfolio.id, symbol=ins.symbol)
            return {
                **_order_record(placed),
                "trades": _trades_of(ctx, placed),
                "position_quantity": position.quantity if position is not None else 0,
                "cash": portfolio.cash,
                "buying_power": _power(ctx, portfolio),
                "client_order_id": client_order_id,
                "replayed": True,
            }
    done = _submit(ctx, portfolio, ins, side, quantity, limit_price, preview_id, True)
    if client_order_id is not None:
        ctx.sql.insert(
            OrderKey,
            portfolio_id=portfolio.id,
            client_order_id=client_order_id,
            order_id=done["order_id"],
        )
    return {**done, "client_order_id": client_order_id, "replayed": False}


def _describe(symbol: str, side: str, kind: str, quantity: int, price: Decimal | None) -> str:
    """An order in a few words: "buy 10 AAPL limit 187.25", "sell 5 MSFT market"."""
    return f"{side} {quantity} {symbol} " + (f"limit {price}" if kind == "limit" else "market")


def _submit(
    ctx: ToolContext,
    portfolio: Any,
    ins: Any,
    side: str,
    quantity: int,
    limit_price: Decimal | None,
    preview_id: str | None = None,
    confirm: bool = False,
) -> ExecutionOut:
    """Check and place an order (``confirm``: from prove/trading-v3, refuse one above
    :data:`PREVIEW_ABOVE` without its ``preview_id``: :func:`_confirmed`)."""
    plan = _checked_plan(ctx, portfolio, ins, side, quantity, limit_price)
    if confirm:
        _confirmed(ctx, portfolio, ins, side, quantity, limit_price, plan, preview_id)
    new = {
        "id": next_id(ctx, Order.id, "ord", 5),
        "portfolio_id": portfolio.id,
        "participant": portfolio.owner,
        "symbol": ins.symbol,
        "side": side,
        "order_type": "market" if limit_price is None else "limit",
        "quantity": quantity,
        "filled_quantity": 0,
        "filled_value": Decimal("0.00"),
        "limit_price": limit_price,  # None, or already whole cents: it reads back the same
        "status": "open",
        "cancel_reason": "",
        "seq": _next_seq(ctx),
        "reserve_quantity": 0,
        "created_at": ctx.now,
        "updated_at": ctx.now,
    }
    ctx.sql.insert(Order, **new)
    order = _OrderRow(**new)  # the row as it reads back: not read again
    order, trades, portfolio, quantity = _execute(ctx, order, plan, ins, portfolio)
    return _execution(ctx, order, trades, portfolio, quantity)


# -------------------------------------------------------- example values
def _some_query(ctx: ToolContext, rng: random.Random) -> str:
    names = ctx.sql.scalars(INSTRUMENT_NAMES)
    return rng.choice(names).split()[0]


def _some_owner(ctx: ToolContext, rng: random.Random) -> str:
    owners = ctx.sql.scalars(OWNERS)
    return rng.choice(owners).split()[-1]


def _some_price(ctx: ToolContext, rng: random.Random) -> Decimal:
    prices = ctx.sql.scalars(LAST_PRICES)
    return rng.choice(prices)


def _replaceable(ctx: ToolContext, bound: Bound) -> Any | None:
    """The order in ``order_id`` if a person would change it: a portfolio's limit order
    still open or partly filled, as the live state has it (not the market order the
    conversation just placed, filled at once)."""
    order = ctx.sql.first(ORDER_NAMED, id=str(bound.args.get("order_id", "")))
    if order is None or order.portfolio_id is None or order.limit_price is None:
        return None
    return order if order.status in OPEN_STATUSES else None


def open_order(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The order in ``order_id`` if it can be changed (:func:`_replaceable`); None
    otherwise, so synthesis draws another ("change the new order to 3 shares at 311.76"
    after a market order filled at 221.55 can only fail)."""
    order = _replaceable(ctx, bound)
    return None if order is None else str(order.id)


def new_limit_for(ctx: ToolContext, rng: random.Random, bound: Bound) -> Decimal | None:
    """A new price for the order in ``order_id``: one cent further from the market."""
    order = _replaceable(ctx, bound)
    if order is None:
        return None
    return _changed_price(ctx.sql.scalar(PREV_CLOSE, symbol=order.symbol), order)


def new_quantity_for(ctx: ToolContext, rng: random.Random, bound: Bound) -> int | None:
    """A smaller total quantity for the order in ``order_id``."""
    order = _replaceable(ctx, bound)
    return None if order is None else _smaller(order)


def _changed_price(prev_close: Decimal, order: Any) -> Decimal:
    """A price one cent further from the market than ``order``'s, within the band."""
    assert order.limit_price is not None
    low, high = price_band(prev_close)
    step = -CENT if order.side == "buy" else CENT
    return min(max(order.limit_price + step, low), high)


def _smaller(order: Any) -> int:
    return order.filled_quantity + max(1, _remaining(order) // 2)


QUANTITIES = [1, 5, 10, 20, 25, 50, 100]


# ------------------------------------------------------------------- tools
@server.tool(
    returns="instrument",
    phrasings=["Find the ticker for {query}", "Which stocks or ETFs match {query}?"],
    examples={"query": _some_query},
)
def search_instruments(
    ctx: ToolContext,
    query: SearchText = "",
    kind: Literal["stock", "etf"] | None = None,
    limit: Limit = 20,
) -> list[InstrumentOut]:
    """Find tradable instruments by ticker symbol, company or fund name, or sector.

    Args:
        query: Case-insensitive fragment, such as "apple", "AAPL", "S&P 500" or "Energy";
            empty lists every instrument.
        kind: Only "stock" or only "etf"; leave out for both.
        limit: Maximum number of instruments to return (1-100).

    Returns:
        Instruments by symbol, e.g. [{"symbol": "AAPL", "name": "Apple Inc.",
        "last_price": "187.25", "change_pct": "-0.42", "shortable": true, "halted": false, ...}].
    """
    params: dict[str, Any] = {"limit": limit}
    text = query.strip()
    if text:
        params["pattern"] = search_pattern(text)
    if kind is not None:
        params["kind"] = kind
    rows = ctx.sql.all(_instruments_query("pattern" in params, "kind" in params), **params)
    return [
        {
            "symbol": i.symbol,
            "name": i.name,
            "kind": i.kind,
            "sector": i.sector,
            "exchange": i.exchange,
            "last_price": i.last_price,
            "change_pct": _pct(i.last_price, i.prev_close),
            "shortable": i.shortable,
            "halted": i.halted,
        }
        for i in rows
    ]


def _touch(ctx: ToolContext, symbol: str, side: str) -> tuple[Decimal | None, int]:
    """Best price on one side of the book and the shares resting at it."""
    price: Decimal | None = None
    size = 0
    for o in ctx.sql.all(BOOK[side], symbol=symbol):
        if price is not None and o.limit_price != price:
            break
        price = o.limit_price
        size += _remaining(o)
    return price, size


@server.tool(
    returns="instrument",
    phrasings=["What's the price of {symbol}?", "Get me a quote for {symbol}"],
    normalise={"symbol": "casefold"},
)
def get_quote(ctx: ToolContext, symbol: SymbolRow) -> QuoteOut:
    """Get an instrument's live quote: best bid and ask with their sizes, last trade, today's
    open/high/low/volume, the change from the previous close, and today's price band.

    Args:
        symbol: The ticker symbol, such as "AAPL" or "SPY" (see search_instruments).

    Returns:
        {"symbol": "AAPL", "bid": "187.20", "bid_size": 300, "ask": "187.26", "ask_size": 500,
        "last_price": "187.25", "change_pct": "-0.42", "price_band_low": "150.37", ...}.
    """
    ins = symbol
    bid, bid_size = _touch(ctx, ins.symbol, "buy")
    ask, ask_size = _touch(ctx, ins.symbol, "sell")
    low, high = price_band(ins.prev_close)
    return {
        "symbol": ins.symbol,
        "name": ins.name,
        "bid": bid,
        "bid_size": bid_size,
        "ask": ask,
        "ask_size": ask_size,
        "last_price": ins.last_price,
        "open": ins.open_price,
        "high": ins.high,
        "low": ins.low,
        "prev_close": ins.prev_close,
        "change": ins.last_price - ins.prev_close,
        "change_pct": _pct(ins.last_price, ins.prev_close),
        "volume": ins.volume,
        "price_band_low": low,
        "price_band_high": high,
        "shortable": ins.shortable,
        "halted": ins.halted,
        "halt_reason": ins.halt_reason or None,
        "as_of": ctx.now.isoformat(timespec="minutes"),
    }


@server.tool(
    phrasings=[
        "Show me the order book for {symbol}",
        "Show {depth} price levels a side of the order book for {symbol}",
    ],
    normalise={"symbol": "casefold"},
    examples={"depth": [3, 5, 10]},
)
def get_order_book(
    ctx: ToolContext, symbol: SymbolRow, depth: Annotated[int, Field(ge=1, le=20)] = 5
) -> BookOut:
    """Show the resting limit orders of an instrument, summed by price level: bids from the
    highest price down, asks from the lowest up. The first level of each side is the best.

    Args:
        symbol: The ticker symbol, such as "AAPL".
        depth: Price levels to show on each side (1-20).

    Returns:
        {"symbol": "AAPL", "bids": [{"price": "187.20", "quantity": 300, "orders": 2}, ...],
        "asks": [{"price": "187.26", "quantity": 500, "orders": 1}, ...], "spread": "0.06"}.
    """
    ins = symbol
    sides: dict[str, list[LevelOut]] = {}
    for side in ("buy", "sell"):
        levels: list[LevelOut] = []
        for o in ctx.sql.all(BOOK[side], symbol=ins.symbol):
            assert o.limit_price is not None
            if levels and levels[-1]["price"] == o.limit_price:
                levels[-1]["quantity"] += _remaining(o)
                levels[-1]["orders"] += 1
            elif len(levels) < depth:
                levels.append({"price": o.limit_price, "quantity": _remaining(o), "orders": 1})
            else:
                break
        sides[side] = levels
    bids, asks = sides["buy"], sides["sell"]
    return {
        "symbol": ins.symbol,
        "halted": ins.halted,
        "last_price": ins.last_price,
        "spread": asks[0]["price"] - bids[0]["price"] if bids and asks else None,
        "bids": bids,
        "asks": asks,
    }


@server.tool(
    phrasings=[
        "Show me the last {days} daily bars of {symbol}",
        "How has {symbol} traded recently?",
    ],
    normalise={"symbol": "casefold"},
    examples={"days": [5, 10, 20, 60]},
)
def get_daily_bars(
    ctx: ToolContext,
    symbol: SymbolRow,
    days: Annotated[int, Field(ge=1, le=HISTORY_DAYS)] = 20,
) -> BarsOut:
    """Get an instrument's daily price bars (open, high, low, close, volume) for the most
    recent trading days before today, oldest first, with the period's range and change.

    Args:
        symbol: The ticker symbol, such as "MSFT".
        days: How many trading days to return, 1-90 (weekends have no bars).

    Returns:
        {"symbol": "MSFT", "bars": [{"date": "2026-03-02", "open": "402.10", "high": "405.80",
        "low": "399.55", "close": "404.12", "volume": 18234411}, ...], "change_pct": "3.18", ...}.
    """
    bars = list(reversed(ctx.sql.all(BARS, symbol=symbol.symbol, days=days)))
    if not bars:
        raise PreconditionFailed(f"{symbol.symbol} has no daily bars yet.")
    return {
        "symbol": symbol.symbol,
        "bars": [
            {
                "date": b.day.isoformat(),
                "open": b.open,
                "high": b.high,
                "low": b.low,
                "close": b.close,
                "volume": b.volume,
            }
            for b in bars
        ],
        "period_high": max(b.high for b in bars),
        "period_low": min(b.low for b in bars),
        "change_pct": _pct(bars[-1].close, bars[0].open),
        "average_volume": sum(b.volume for b in bars) // len(bars),
    }


@server.tool(
    returns="portfolio",
    phrasings=["Find the portfolios of {query}", "Which brokerage accounts does {query} have?"],
    examples={"query": _some_owner},
)
def find_portfolios(
    ctx: ToolContext, query: SearchText, limit: Limit = 20
) -> list[PortfolioSummary]:
    """Find portfolios by owner name, owner email, portfolio name or portfolio id; the first
    step to act for a client.

    Args:
        query: Case-insensitive fragment, such as "Garcia", "maria.garcia@" or "pf_0003".
        limit: Maximum number of portfolios to return (1-100).

    Returns:
        [{"portfolio_id": "pf_0003", "name": "Roth IRA", "owner": "Maria Garcia",
        "kind": "cash", "status": "active", "cash": "12840.55", ...}].
    """
    text = query.strip()
    if not text:
        raise InvalidArgument("query must not be empty: give an owner's name, email or an id.")
    rows = ctx.sql.all(PORTFOLIOS_MATCHING, pattern=search_pattern(text), limit=limit)
    return [
        {
            "portfolio_id": p.id,
            "name": p.name,
            "owner": p.owner,
            "email": p.email,
            "kind": p.kind,
            "status": p.status,
            "cash": p.cash,
        }
        for p in rows
    ]


PORTFOLIO_TOOL: dict[str, Any] = {
    "returns": ("portfolio", "instrument", "order"),
    "phrasings": ["How is {portfolio_id} doing?", "What's the buying power in {portfolio_id}?"],
}
"""get_portfolio's declaration, the same for its first definition and v3's."""


@server.tool(**PORTFOLIO_TOOL)
def get_portfolio(ctx: ToolContext, portfolio_id: PortfolioRow) -> PortfolioOut:
    """Get a portfolio's cash, positions valued at their last prices, profit and loss, what
    open orders hold, and its buying power (what it may still spend on new shares).

    Args:
        portfolio_id: The portfolio, such as "pf_0003" (see find_portfolios).

    Returns:
        {"portfolio_id": "pf_0003", "kind": "margin", "cash": "12840.55", "equity": "40210.10",
        "buying_power": "51230.40", "positions": [{"symbol": "AAPL", "quantity": 40,
        "average_price": "171.2250", "available_to_sell": 40, ...}], "open_order_ids": [...]}.
    """
    p = portfolio_id
    held = _held(ctx, p.id)
    open_orders = _open_orders(ctx, p.id)
    positions: list[PositionOut] = []
    long_value = short_value = unrealized = Decimal("0.00")
    for pos in _holdings(ctx, p.id):
        value = pos.quantity * pos.last_price
        offered = sum(
            _remaining(o) for o in open_orders if o.symbol == pos.symbol and o.side == "sell"
        )
        if pos.quantity > 0:
            long_value += value
        else:
            short_value -= value
        unrealized += value - pos.cost_basis
        positions.append(
            {
                "symbol": pos.symbol,
                "quantity": pos.quantity,
                "direction": "long" if pos.quantity > 0 else "short",
                "average_price": (pos.cost_basis / pos.quantity).quantize(Decimal("0.0001")),
                "cost_basis": pos.cost_basis,
                "last_price": pos.last_price,
                "market_value": value,
                "unrealized_pnl": value - pos.cost_basis,
                "realized_pnl": pos.realized_pnl,
                "available_to_sell": max(0, pos.quantity - offered),
            }
        )
    realized = sum(ctx.sql.scalars(REALIZED, portfolio_id=p.id), Decimal("0.00"))
    return {
        "portfolio_id": p.id,
        "name": p.name,
        "owner": p.owner,
        "kind": p.kind,
        "status": p.status,
        "status_reason": p.status_reason or None,
        "cash": p.cash,
        "long_value": long_value,
        "short_value": short_value,
        "equity": p.cash + long_value - short_value,
        "held_for_orders": held,
        "buying_power": _power(ctx, p),
        "realized_pnl": realized,
        "unrealized_pnl": unrealized,
        "positions": positions,
        "open_order_ids": [o.id for o in open_orders],
    }


@server.tool(name="get_portfolio", since=BROKER, **PORTFOLIO_TOOL)
def get_portfolio_v3(ctx: ToolContext, portfolio_id: PortfolioRow) -> PortfolioV3Out:
    """Get a portfolio's cash, positions valued at their last prices, profit and loss, what
    open orders hold, and its buying power (what it may still spend on new shares).

    A sale's proceeds settle on the next trading day (T+1): until then they are in cash but
    not in settled_cash, and a cash portfolio's buying power counts only settled cash
    (settled_cash less held_for_orders).

    Args:
        portfolio_id: The portfolio, such as "pf_0003" (see find_portfolios).

    Returns:
        {"portfolio_id": "pf_0003", "kind": "cash", "cash": "12840.55", "settled_cash":
        "9840.55", "unsettled_cash": "3000.00", "settles_on": "2026-03-05", "buying_power":
        "9840.55", "positions": [{"symbol": "AAPL", "quantity": 40, "available_to_sell": 40,
        ...}], "open_order_ids": [...], ...}.
    """
    unsettled, settles = _unsettled(ctx, portfolio_id.id)
    shown: PortfolioOut = get_portfolio(ctx, portfolio_id)
    return {
        **shown,
        "settled_cash": portfolio_id.cash - unsettled,
        "unsettled_cash": unsettled,
        "settles_on": settles.isoformat() if settles is not None else None,
    }


@server.tool(
    returns="order",
    phrasings=[
        "List {status} orders in {portfolio_id}",
        "Which orders are still working in {portfolio_id}?",
    ],
    normalise={"symbol": "casefold"},
)
def list_orders(
    ctx: ToolContext,
    portfolio_id: PortfolioRow,
    status: Literal["open", "filled", "cancelled", "all"] = "open",
    symbol: SymbolRow | None = None,
    limit: Limit = 50,
) -> OrdersOut:
    """List a portfolio's orders, newest first. "open" means still working in the book
    (open or partially filled).

    Args:
        portfolio_id: The portfolio, such as "pf_0003".
        status: "open" (the default), "filled", "cancelled" or "all".
        symbol: Only orders of this ticker symbol, such as "AAPL".
        limit: Maximum number of orders to return (1-100).

    Returns:
        {"portfolio_id": "pf_0003", "status": "open", "orders": [{"order_id": "ord_01234",
        "symbol": "AAPL", "side": "buy", "order_type": "limit", "quantity": 50,
        "filled_quantity": 20, "limit_price": "185.00", "status": "partially_filled", ...}]}.
    """
    params: dict[str, Any] = {"portfolio_id": portfolio_id.id, "limit": limit}
    if status not in ("open", "all"):
        params["status"] = status
    if symbol is not None:
        params["symbol"] = symbol.symbol
    stmt = _orders_query(status if status in ("open", "all") else "one", "symbol" in params)
    return {
        "portfolio_id": portfolio_id.id,
        "status": status,
        "orders": [_order_record(o) for o in ctx.sql.all(stmt, **params)],
    }


@server.tool(
    returns=("order", "trade"),
    phrasings=["What's the status of order {order_id}?", "Did {order_id} fill?"],
)
def get_order(ctx: ToolContext, order_id: OrderRow) -> OrderDetail:
    """Get one order of a portfolio with its status, fills so far and each trade.

    Args:
        order_id: The order, such as "ord_01234" (see list_orders).

    Returns:
        {"order_id": "ord_01234", "status": "partially_filled", "quantity": 50,
        "filled_quantity": 20, "average_fill_price": "184.9500", "trades": [{"trade_id":
        "trd_00417", "quantity": 20, "price": "184.95", "liquidity": "maker", ...}], ...}.
    """
    _own(order_id)
    return {**_order_record(order_id), "trades": _trades_of(ctx, order_id)}


@server.tool(
    returns=("trade", "order"),
    phrasings=[
        "Show the recent trades in {portfolio_id}",
        "What did {portfolio_id} trade in {symbol}?",
    ],
    normalise={"symbol": "casefold"},
)
def list_trades(
    ctx: ToolContext,
    portfolio_id: PortfolioRow,
    symbol: SymbolRow | None = None,
    limit: Limit = 20,
) -> TradesOut:
    """List a portfolio's executions (fills), newest first, from the portfolio's side.

    Args:
        portfolio_id: The portfolio, such as "pf_0003".
        symbol: Only trades of this ticker symbol, such as "AAPL".
        limit: Maximum number of trades to return (1-100).

    Returns:
        {"portfolio_id": "pf_0003", "trades": [{"trade_id": "trd_00417", "order_id":
        "ord_01234", "symbol": "AAPL", "side": "buy", "quantity": 20, "price": "184.95",
        "value": "3699.00", "liquidity": "taker", "executed_at": "2026-03-04T10:15"}]}.
    """
    params: dict[str, Any] = {"portfolio_id": portfolio_id.id, "limit": limit}
    if symbol is not None:
        params["symbol"] = symbol.symbol
    out = []
    for t in ctx.sql.all(_trades_query("symbol" in params), **params):
        if t.buy_portfolio_id == portfolio_id.id:  # the portfolio's order is the buy
            out.append(_trade_record(t, t.buy_order_id, t.buy_side))
        else:
            out.append(_trade_record(t, t.sell_order_id, t.sell_side))
    return {"portfolio_id": portfolio_id.id, "trades": out}


LIMIT_ORDER: dict[str, Any] = {
    "stands_in_for": ("place_market_order",),
    "writes": True,
    "returns": ("order", "trade"),
    "phrasings": [
        "In {portfolio_id}, {side} {quantity} shares of {symbol} at {limit_price} or better",
        "Put in a limit order in {portfolio_id}: {side} {quantity} {symbol} at {limit_price}",
    ],
    "normalise": {"symbol": "casefold"},
    "examples": {"quantity": QUANTITIES, "limit_price": _some_price},
}
"""place_limit_order's declaration, the same for its first definition and v3's."""
MARKET_ORDER: dict[str, Any] = {
    "writes": True,
    "returns": ("order", "trade"),
    "phrasings": [
        "In {portfolio_id}, {side} {quantity} shares of {symbol} at market",
        "Market order in {portfolio_id}: {side} {quantity} {symbol} right now",
    ],
    "normalise": {"symbol": "casefold"},
    "examples": {"quantity": QUANTITIES},
}
"""place_market_order's declaration, the same for its first definition and v3's."""


@server.tool(**LIMIT_ORDER)
def place_limit_order(
    ctx: ToolContext,
    portfolio_id: PortfolioRow,
    symbol: SymbolRow,
    side: Side,
    quantity: Quantity,
    limit_price: Price,
) -> ExecutionOut:
    """Place a limit order: buy at limit_price or lower, or sell at limit_price or higher.

    It first trades against resting orders on the other side that meet the limit, best price
    first and, at one price, oldest first (each trade at the resting order's price); whatever
    is left rests in the book as an open order until it fills or is cancelled. Shares that
    open or add to a position need buying power for quantity x limit_price; only margin
    portfolios may sell short, and only shortable instruments.

    Args:
        portfolio_id: The portfolio to trade in, such as "pf_0003".
        symbol: The ticker symbol, such as "AAPL".
        side: "buy" or "sell".
        quantity: Whole shares, 1-100000, such as 25.
        limit_price: Worst acceptable price per share, such as 187.25 or "187.25" (within 20%
            of the previous close; see get_quote).

    Returns:
        The order and what it did now: {"order_id": "ord_01240", "status": "partially_filled",
        "filled_quantity": 10, "remaining_quantity": 15, "trades": [{"trade_id": "trd_00420",
        "quantity": 10, "price": "187.20", ...}], "cash": "10968.00", "buying_power": ...}.
    """
    return _submit(ctx, portfolio_id, symbol, side, quantity, limit_price.quantize(CENT))


@server.tool(**MARKET_ORDER)
def place_market_order(
    ctx: ToolContext,
    portfolio_id: PortfolioRow,
    symbol: SymbolRow,
    side: Side,
    quantity: Quantity,
) -> ExecutionOut:
    """Place a market order: trade now against the best resting orders on the other side,
    walking the book price level by price level. Any quantity the book cannot fill is
    cancelled; a market order never rests. Buying power is checked against the actual fill
    prices; only margin portfolios may sell short, and only shortable instruments.

    Args:
        portfolio_id: The portfolio to trade in, such as "pf_0003".
        symbol: The ticker symbol, such as "AAPL".
        side: "buy" or "sell".
        quantity: Whole shares, 1-100000, such as 25.

    Returns:
        {"order_id": "ord_01241", "status": "filled", "filled_quantity": 25,
        "average_fill_price": "187.2680", "trades": [...], "position_quantity": 65, ...}.
    """
    return _submit(ctx, portfolio_id, symbol, side, quantity, None)


@server.tool(name="place_limit_order", since=BROKER, **LIMIT_ORDER)
def place_limit_order_v3(
    ctx: ToolContext,
    portfolio_id: PortfolioRow,
    symbol: SymbolRow,
    side: Side,
    quantity: Quantity,
    limit_price: Price,
    client_order_id: ClientOrderId | None = None,
    preview_id: PreviewId | None = None,
) -> ExecutionV3Out:
    """Place a limit order: buy at limit_price or lower, or sell at limit_price or higher.

    It first trades against resting orders on the other side that meet the limit, best price
    first and, at one price, oldest first (each trade at the resting order's price); whatever
    is left rests in the book as an open order until it fills or is cancelled. Shares that
    open or add to a position need buying power for quantity x limit_price; only margin
    portfolios may sell short, and only shortable instruments. A cash portfolio buys only with
    settled cash: a sale's proceeds settle on the next trading day (rule 'unsettled_funds';
    get_portfolio shows settled_cash). While the market is closed (nights, weekends, exchange
    holidays) the order is accepted but rests without trading.

    Give a client_order_id of your own to make the request safe to retry: sending the same
    order with the same client_order_id again returns the order it placed the first time
    (replayed: true) and places nothing; the same client_order_id with a different order is
    refused (rule 'client_order_id_reused'). An order worth more than 25,000.00 (quantity x
    limit_price) must carry the preview_id of a preview_order of the same order (rule
    'preview_required').

    Args:
        portfolio_id: The portfolio to trade in, such as "pf_0003".
        symbol: The ticker symbol, such as "AAPL".
        side: "buy" or "sell".
        quantity: Whole shares, 1-100000, such as 25.
        limit_price: Worst acceptable price per share, such as 187.25 or "187.25" (within 20%
            of the previous close; see get_quote).
        client_order_id: Optional idempotency key, unique per portfolio: 1-48 letters, digits,
            ".", "_", ":" or "-", such as "rebalance-2026-03-04-aapl".
        preview_id: The preview_id preview_order gave for this same order, such as
            "pv_3f2a9c1d0b7e"; required when the order is worth more than 25,000.00.

    Returns:
        The order and what it did now: {"order_id": "ord_01240", "status": "partially_filled",
        "filled_quantity": 10, "remaining_quantity": 15, "trades": [{"trade_id": "trd_00420",
        "quantity": 10, "price": "187.20", ...}], "cash": "10968.00", "buying_power": ...,
        "client_order_id": "rebalance-2026-03-04-aapl", "replayed": false}.
    """
    price = limit_price.quantize(CENT)
    return _submit_once(
        ctx, portfolio_id, symbol, side, quantity, price, client_order_id, preview_id
    )


@server.tool(name="place_market_order", since=BROKER, **MARKET_ORDER)
def place_market_order_v3(
    ctx: ToolContext,
    portfolio_id: PortfolioRow,
    symbol: SymbolRow,
    side: Side,
    quantity: Quantity,
    client_order_id: ClientOrderId | None = None,
    preview_id: PreviewId | None = None,
) -> ExecutionV3Out:
    """Place a market order: trade now against the best resting orders on the other side,
    walking the book price level by price level. Any quantity the book cannot fill is
    cancelled; a market order never rests, so it is refused while the market is closed
    (nights, weekends, exchange holidays). Buying power is checked against the actual fill
    prices, and a cash portfolio buys only with settled cash: a sale's proceeds settle on the
    next trading day (rule 'unsettled_funds'); only margin portfolios may sell short, and only
    shortable instruments.

    Give a client_order_id of your own to make the request safe to retry: sending the same
    order with the same client_order_id again returns the order it placed the first time
    (replayed: true) and places nothing; the same client_order_id with a different order is
    refused (rule 'client_order_id_reused'). An order whose fills are worth more than
    25,000.00 must carry the preview_id of a preview_order of the same order (rule
    'preview_required').

    Args:
        portfolio_id: The portfolio to trade in, such as "pf_0003".
        symbol: The ticker symbol, such as "AAPL".
        side: "buy" or "sell".
        quantity: Whole shares, 1-100000, such as 25.
        client_order_id: Optional idempotency key, unique per portfolio: 1-48 letters, digits,
            ".", "_", ":" or "-", such as "sell-msft-1".
        preview_id: The preview_id preview_order gave for this same order, such as
            "pv_3f2a9c1d0b7e"; required when the fills are worth more than 25,000.00.

    Returns:
        {"order_id": "ord_01241", "status": "filled", "filled_quantity": 25,
        "average_fill_price": "187.2680", "trades": [...], "position_quantity": 65, ...,
        "client_order_id": "sell-msft-1", "replayed": false}.
    """
    return _submit_once(
        ctx, portfolio_id, symbol, side, quantity, None, client_order_id, preview_id
    )


REPLACE_ORDER: dict[str, Any] = {
    "writes": True,
    "returns": ("order", "trade"),
    "phrasings": [
        "Change order {order_id} to {quantity} shares at {limit_price}",
        "Move order {order_id} to {limit_price}, quantity {quantity}",
    ],
    "values": {
        "order_id": open_order,
        "quantity": new_quantity_for,
        "limit_price": new_limit_for,
    },
}


@server.tool(**REPLACE_ORDER)
def replace_order(
    ctx: ToolContext, order_id: OrderRow, quantity: Quantity, limit_price: Price
) -> ExecutionOut:
    """Change an open limit order's total quantity and limit price (cancel/replace).

    The order keeps its place in the queue only when the price stays the same and the
    quantity does not grow; otherwise it goes to the back of the queue at its price. A new
    price that reaches the other side trades at once, as a new order would. The same rules
    as for a new order apply to the shares still to fill.

    Args:
        order_id: The open order, such as "ord_01234" (see list_orders).
        quantity: The new total quantity including shares already filled, such as 40; it must
            be more than the filled quantity.
        limit_price: The new limit price, such as 186.50 (or the current one to keep it).

    Returns:
        The changed order and any trades it made: {"order_id": "ord_01234", "quantity": 40,
        "limit_price": "186.50", "status": "open", "trades": [], ...}.
    """
    order, portfolio, ins, plan = _replacement(ctx, order_id, quantity, limit_price)
    return _replace(ctx, order, portfolio, ins, plan, quantity, limit_price.quantize(CENT))


@server.tool(name="replace_order", since=REPLACE_PREVIEW, **REPLACE_ORDER)
def replace_order_v4(
    ctx: ToolContext,
    order_id: OrderRow,
    quantity: Quantity,
    limit_price: Price,
    preview_id: PreviewId | None = None,
) -> ExecutionOut:
    """Change an open limit order's total quantity and limit price (cancel/replace).

    The order keeps its place in the queue only when the price stays the same and the
    quantity does not grow; otherwise it goes to the back of the queue at its price. A new
    price that reaches the other side trades at once, as a new order would. The same rules
    as for a new order apply to the shares still to fill. A replacement worth more than
    25,000.00 (the shares still to fill: what they would trade at, and limit_price for what
    would rest) must carry the preview_id of a preview_replace_order of the same order_id,
    quantity and limit_price (rule 'preview_required'). A replacement that keeps both the
    quantity and the limit price is refused and changes nothing.

    Args:
        order_id: The open order, such as "ord_01234" (see list_orders).
        quantity: The new total quantity including shares already filled, such as 40; it must
            be more than the filled quantity.
        limit_price: The new limit price, such as 186.50 (or the current one to keep it).
        preview_id: The preview_id preview_replace_order gave for this same replacement, such
            as "pv_3f2a9c1d0b7e"; needed above 25,000.00.

    Returns:
        The changed order and any trades it made: {"order_id": "ord_01234", "quantity": 40,
        "limit_price": "186.50", "status": "open", "trades": [], ...}.
    """
    price = limit_price.quantize(CENT)
    order, portfolio, ins, plan = _replacement(ctx, order_id, quantity, limit_price)
    _previewed(
        _notional(plan, price),
        preview_id,
        _replacement_preview_id(ctx, order, quantity, price),
        f"replacement of {order.id} ({_describe(ins.symbol, order.side, 'limit', quantity, price)})",
        "Call preview_replace_order with the same order_id, quantity and limit_price, confirm "
        "the estimate with the user, then replace the order with its preview_id.",
    )
    return _replace(ctx, order, portfolio, ins, plan, quantity, price)


def _replacement(
    ctx: ToolContext, order: Any, quantity: int, limit_price: Decimal
) -> tuple[Any, Any, Any, _Plan]:
    """Every rule of replacing ``order`` with ``quantity`` shares in all at ``limit_price``
    checked, and how the shares still to fill would execute: the order, its portfolio, its
    instrument and the plan. Nothing written."""
    limit_price = limit_price.quantize(CENT)
    portfolio = ctx.sql.one(PORTFOLIO, id=_own(order))
    if not _is_open(order):
        raise RuleBroken(
            "order_not_open",
            f"order {order.id} is {order.status}; only open or partially filled orders can be "
            "changed. Place a new limit order instead.",
        )
    _writable(portfolio)
    ins = ctx.sql.one(INSTRUMENT, symbol=order.symbol)
    _tradable(ins)
    if quantity <= order.filled_quantity:
        raise RuleBroken(
            "quantity_above_filled",
            f"order {order.id} has already filled {order.filled_quantity} of {order.quantity} "
            f"shares; the new total quantity must be more than {order.filled_quantity}. To stop "
            "the rest from filling, cancel the order (cancel_order).",
        )
    if quantity == order.quantity and limit_price == order.limit_price:
        raise InvalidArgument(
            f"order {order.id} already has quantity {quantity} and limit_price {limit_price}; "
            "give a new quantity or limit_price."
        )
    _in_band(ins, limit_price)
    plan = _plan(
        ctx,
        portfolio,
        ins,
        order.side,
        quantity - order.filled_quantity,
        limit_price,
        order,
        trading=_session_rule(ctx, market=False),
    )
    return order, portfolio, ins, plan


def _replace(
    ctx: ToolContext,
    order: Any,
    portfolio: Any,
    ins: Any,
    plan: _Plan,
    quantity: int,
    limit_price: Decimal,
) -> ExecutionOut:
    """Apply a checked replacement (:func:`_replacement`): the order as it ends, its trades."""
    change: dict[str, Any] = {"quantity": quantity, "limit_price": limit_price}
    if limit_price != order.limit_price or quantity > order.quantity:
        change["seq"] = _next_seq(ctx)  # to the back of the queue
    order, trades, portfolio, position_quantity = _execute(ctx, order, plan, ins, portfolio, change)
    return _execution(ctx, order, trades, portfolio, position_quantity)


@server.tool(
    since=BROKER,
    returns=("portfolio", "instrument"),
    phrasings=[
        "Preview this order in {portfolio_id}: {side} {quantity} {symbol} at {limit_price}",
        "What would it cost to {side} {quantity} shares of {symbol} in {portfolio_id}?",
    ],
    normalise={"symbol": "casefold"},
    examples={"quantity": QUANTITIES, "limit_price": _some_price},
)
def preview_order(
    ctx: ToolContext,
    portfolio_id: PortfolioRow,
    symbol: SymbolRow,
    side: Side,
    quantity: Quantity,
    limit_price: Price | None = None,
) -> PreviewOut:
    """Preview an order without placing it: every rule placement checks, how it would fill
    against the book now, what it is worth and the buying power it needs. Nothing changes.

    An order worth more than 25,000.00 (quantity x limit price, or a market order's fills)
    must be placed with the preview_id this returns, for the same portfolio, symbol, side,
    quantity and limit price (rule 'preview_required'). A preview of an order that would be
    refused fails with the same rule the placement would.

    Args:
        portfolio_id: The portfolio to trade in, such as "pf_0003".
        symbol: The ticker symbol, such as "AAPL".
        side: "buy" or "sell".
        quantity: Whole shares, 1-100000, such as 250.
        limit_price: The limit price for a limit order, such as 187.25; leave it out to
            preview a market order.

    Returns:
        {"preview_id": "pv_3f2a9c1d0b7e", "order_type": "limit", "quantity": 250,
        "estimated_fills": [{"price": "187.20", "quantity": 100}], "estimated_rest": 150,
        "estimated_notional": "46800.00", "preview_required": true, "buying_power":
        "51230.40", "buying_power_needed": "46800.00", ...}.
    """
    price = limit_price.quantize(CENT) if limit_price is not None else None
    portfolio, ins = portfolio_id, symbol
    plan = _checked_plan(ctx, portfolio, ins, side, quantity, price)
    notional = _notional(plan, price)
    return {
        "preview_id": _preview_id(ctx, portfolio, ins.symbol, side, quantity, price),
        "portfolio_id": portfolio.id,
        "symbol": ins.symbol,
        "side": side,
        "order_type": "market" if price is None else "limit",
        "quantity": quantity,
        "limit_price": price,
        "estimated_fills": [{"price": p, "quantity": q} for _, q, p in plan.fills],
        "estimated_rest": plan.rest,
        "estimated_notional": notional,
        "preview_required": notional > PREVIEW_ABOVE,
        "buying_power": _power(ctx, portfolio),
        "buying_power_needed": plan.needed,
    }


@server.tool(
    since=REPLACE_PREVIEW,
    returns=("order", "portfolio", "instrument"),
    phrasings=[
        "Preview changing order {order_id} to {quantity} shares at {limit_price}",
        "What would order {order_id} be worth at {quantity} shares and {limit_price}?",
    ],
    values={"order_id": open_order, "quantity": new_quantity_for, "limit_price": new_limit_for},
)
def preview_replace_order(
    ctx: ToolContext, order_id: OrderRow, quantity: Quantity, limit_price: Price
) -> ReplacePreviewOut:
    """Preview a change to an open limit order without making it: every rule replace_order
    checks, how the shares still to fill would trade against the book now, what the
    replacement is worth and the buying power it needs. Nothing changes.

    A replacement worth more than 25,000.00 must be made with the preview_id this returns,
    for the same order_id, quantity and limit_price (rule 'preview_required'). A preview of a
    replacement that would be refused fails with the same rule replace_order would.

    Args:
        order_id: The open order, such as "ord_01234" (see list_orders).
        quantity: The new total quantity including shares already filled, such as 300.
        limit_price: The new limit price, such as 186.50 (or the current one to keep it).

    Returns:
        {"preview_id": "pv_9c1d0b7e3f2a", "order_id": "ord_01234", "quantity": 300,
        "limit_price": "186.50", "estimated_fills": [], "estimated_rest": 300,
        "estimated_notional": "55950.00", "preview_required": true, "buying_power":
        "61230.40", "buying_power_needed": "55950.00", ...}.
    """
    price = limit_price.quantize(CENT)
    order, portfolio, ins, plan = _replacement(ctx, order_id, quantity, price)
    notional = _notional(plan, price)
    return {
        "preview_id": _replacement_preview_id(ctx, order, quantity, price),
        "order_id": order.id,
        "portfolio_id": portfolio.id,
        "symbol": ins.symbol,
        "side": order.side,
        "order_type": "limit",
        "quantity": quantity,
        "limit_price": price,
        "estimated_fills": [{"price": p, "quantity": q} for _, q, p in plan.fills],
        "estimated_rest": plan.rest,
        "estimated_notional": notional,
        "preview_required": notional > PREVIEW_ABOVE,
        "buying_power": _power(ctx, portfolio, order),
        "buying_power_needed": plan.needed,
    }


@server.tool(
    writes=True,
    inverse_of="place_limit_order",
    destructive=True,
    idempotent=True,
    returns="order",
    phrasings=["Cancel order {order_id}", "Pull order {order_id} from the book"],
)
def cancel_order(ctx: ToolContext, order_id: OrderRow) -> CancelOut:
    """Cancel an open or partially filled order: its unfilled shares leave the book and the
    buying power it held is released. Fills that already happened stay.

    Args:
        order_id: The order, such as "ord_01234" (see list_orders).

    Returns:
        {"order_id": "ord_01234", "status": "cancelled", "filled_quantity": 20,
        "released_buying_power": "5550.00", ...}.
    """
    order = order_id
    _own(order)
    if not _is_open(order):
        raise RuleBroken(
            "order_not_open",
            f"order {order.id} is already {order.status}; only open or partially filled orders "
            "can be cancelled (list_orders shows the open ones).",
        )
    released = money(_holds(order))
    order = ctx.sql.update(
        Order, order, status="cancelled", cancel_reason="cancelled by owner", updated_at=ctx.now
    )
    return {**_order_record(order), "released_buying_power": released}


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests. Fields named
# like tool parameters (quantity, limit_price, symbol) give values that the rules allow.
def _quote_price(ctx: ToolContext, ins: Any) -> Decimal:
    """A limit price near the market that the price band allows (``ins``: a row with the
    instrument's prev_close and last_price)."""
    low, high = price_band(ins.prev_close)
    return min(max(ins.last_price, low), high)


@server.entity(
    "portfolio",
    key="portfolio_id",
    model=Portfolio,
    not_found="Call find_portfolios with the owner's name to find the portfolio's id "
    "(such as 'pf_0003').",
)
def _portfolios(ctx: ToolContext) -> list[dict]:
    """Active portfolios, each with a tradable symbol it holds and a quantity it can afford."""
    holdings_of: dict[str, list[Any]] = {}
    for h in ctx.sql.all(ALL_HOLDINGS):
        holdings_of.setdefault(h.portfolio_id, []).append(h)
    offered = {(p, symbol, side): int(n) for p, symbol, side, n in ctx.sql.all(ALL_OFFERED)}
    out = []
    for p in ctx.sql.all(ACTIVE_PORTFOLIOS):
        mine = holdings_of.get(p.id, [])
        # _power(ctx, p): only a margin portfolio's depends on its positions
        values = [(h.quantity, h.last_price) for h in mine] if p.kind == "margin" else []
        power = buying_power(p.kind, p.cash, values, p.held)
        holdings = [
            h
            for h in mine
            if h.quantity > offered.get((p.id, h.symbol, "sell"), 0) and not h.halted
        ]
        if not holdings:
            continue
        pos = max(holdings, key=lambda h: (h.quantity * h.last_price, h.symbol))
        price = _quote_price(ctx, pos) * Decimal("1.05")
        available = pos.quantity - offered.get((p.id, pos.symbol, "sell"), 0)
        quantity = min(available, int(power / 2 / price), 10)
        if quantity < 1:
            continue
        out.append(
            {
                "portfolio_id": p.id,
                "owner": p.owner,
                "query": p.owner,
                "name": p.name,
                "kind": p.kind,
                "symbol": pos.symbol,
                "quantity": quantity,
            }
        )
    return out


@server.entity(
    "instrument",
    key="symbol",
    model=Instrument,
    not_found="Call search_instruments with the company or fund name to find its ticker "
    "symbol (such as 'AAPL').",
)
def _instruments(ctx: ToolContext) -> list[dict]:
    """Instruments open for trading, with a limit price near the market."""
    return [
        {
            "symbol": i.symbol,
            "name": i.name,
            "query": i.name.split()[0],
            "limit_price": _quote_price(ctx, i),
        }
        for i in ctx.sql.all(TRADABLE_INSTRUMENTS)
    ]


@server.entity(
    "order",
    key="order_id",
    model=Order,
    owner="portfolio_id",
    not_found="Call list_orders with the portfolio's id to see its orders "
    "(ids such as 'ord_01234').",
)
def _orders(ctx: ToolContext) -> list[dict]:
    """Open orders of portfolios, with a change that keeps them resting (fewer shares, a
    price one cent further from the market)."""
    out = []
    for o in ctx.sql.all(OPEN_PORTFOLIO_ORDERS):
        if o.halted or o.limit_price is None:
            continue
        out.append(
            {
                "order_id": o.id,
                "portfolio_id": o.portfolio_id,
                "owner": o.owner,
                "symbol": o.symbol,
                "side": o.side,
                "quantity": _smaller(o),
                "limit_price": _changed_price(o.prev_close, o),
            }
        )
    return out


@server.entity("trade", key="trade_id")
def _trades(ctx: ToolContext) -> list[dict]:
    """Trades of portfolios in the last 30 days."""
    out = []
    for t in ctx.sql.all(RECENT_TRADES, since=ctx.now - dt.timedelta(days=30)):
        if t.buy_portfolio_id is not None:  # the portfolio's order is the buy
            order_id, portfolio_id = t.buy_order_id, t.buy_portfolio_id
        elif t.sell_portfolio_id is not None:
            order_id, portfolio_id = t.sell_order_id, t.sell_portfolio_id
        else:
            continue
        out.append(
            {
                "trade_id": t.id,
                "order_id": order_id,
                "portfolio_id": portfolio_id,
                "symbol": t.symbol,
            }
        )
    return out
