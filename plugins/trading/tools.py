"""The trading server's 13 tools. Docstrings are what the model reads: keep examples concrete.

Trading rules have names (``buying_power``, ``sellable_shares``, ``not_shortable``, ...); a
tool that refuses an order raises ``PreconditionFailed`` with a message that starts with
``Rule '<name>' failed:`` and says what would be allowed instead (``RULES`` lists them all).
Every order is checked completely before anything changes: matching is planned against the
book first (:func:`_plan`), then executed (:func:`_execute`).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, StringConstraints
from sqlalchemy import func, or_, select
from sqlalchemy.orm import aliased

from prove_gym.server import (
    Entity,
    InvalidArgument,
    PermissionDenied,
    PreconditionFailed,
    Server,
    ToolContext,
    TypedDict,
    contains,
    next_id,
)

from .models import (
    CENT,
    MARGIN_MULTIPLIER,
    OPEN_STATUSES,
    Bar,
    Base,
    Instrument,
    Order,
    Portfolio,
    Position,
    Trade,
    apply_fill,
    buying_power,
    money,
    price_band,
)
from .sampler import HISTORY_DAYS, sample_trading

server = Server(
    "trading",
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.0.0",
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
PortfolioRow = Annotated[Portfolio, Entity("portfolio")]
OrderRow = Annotated[Order, Entity("order")]
# Symbols are matched in upper case, so "aapl" finds AAPL.
SymbolRow = Annotated[
    Instrument,
    Entity("instrument"),
    StringConstraints(strip_whitespace=True, to_upper=True, max_length=12),
]
Side = Literal["buy", "sell"]
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
    "trading_halted": "No new or changed orders while an instrument is halted (cancels are "
    "still accepted).",
    "price_band": "A limit price must lie within 20% of the previous close.",
    "no_liquidity": "A market order needs resting orders on the other side of the book.",
    "no_self_trade": "An order may not trade against a resting order of the same portfolio.",
    "order_not_open": "Only open or partially filled orders can be changed or cancelled.",
    "quantity_above_filled": "A changed order's quantity (the new total) must exceed what has "
    "already filled.",
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


# ----------------------------------------------------------------- helpers
def _pct(new: Decimal, old: Decimal) -> Decimal:
    return (Decimal(100) * (new - old) / old).quantize(CENT) if old else Decimal("0.00")


def _quantity(ctx: ToolContext, portfolio_id: str, symbol: str) -> int:
    pos = ctx.db.get(Position, (portfolio_id, symbol))
    return pos.quantity if pos is not None else 0


def _open_orders(ctx: ToolContext, portfolio_id: str) -> list[Order]:
    stmt = (
        select(Order)
        .where(Order.portfolio_id == portfolio_id, Order.status.in_(OPEN_STATUSES))
        .order_by(Order.seq)
    )
    return list(ctx.db.scalars(stmt))


def _committed(
    ctx: ToolContext, portfolio_id: str, symbol: str, side: str, exclude: Order | None = None
) -> int:
    """Shares of ``symbol`` the portfolio already offers on ``side`` in other open orders."""
    return sum(
        o.remaining
        for o in _open_orders(ctx, portfolio_id)
        if o.symbol == symbol and o.side == side and o is not exclude
    )


def _held(ctx: ToolContext, portfolio_id: str, exclude: Order | None = None) -> Decimal:
    return sum(
        (o.held for o in _open_orders(ctx, portfolio_id) if o is not exclude), Decimal("0.00")
    )


def _holdings(ctx: ToolContext, portfolio_id: str) -> list[tuple[Position, Instrument]]:
    stmt = (
        select(Position, Instrument)
        .join(Instrument, Instrument.symbol == Position.symbol)
        .where(Position.portfolio_id == portfolio_id, Position.quantity != 0)
        .order_by(Position.symbol)
    )
    return [(pos, ins) for pos, ins in ctx.db.execute(stmt).all()]


def _power(ctx: ToolContext, portfolio: Portfolio, exclude: Order | None = None) -> Decimal:
    holdings = [(pos.quantity, ins.last_price) for pos, ins in _holdings(ctx, portfolio.id)]
    return buying_power(portfolio.kind, portfolio.cash, holdings, _held(ctx, portfolio.id, exclude))


def _power_text(ctx: ToolContext, portfolio: Portfolio, exclude: Order | None = None) -> str:
    held = _held(ctx, portfolio.id, exclude)
    if portfolio.kind == "cash":
        return f"cash {portfolio.cash} less {held} held for open orders"
    holdings = _holdings(ctx, portfolio.id)
    equity = portfolio.cash + sum((p.quantity * i.last_price for p, i in holdings), Decimal(0))
    gross = sum((abs(p.quantity) * i.last_price for p, i in holdings), Decimal(0))
    return (
        f"{MARGIN_MULTIPLIER} x equity {money(equity)} less positions worth {money(gross)} "
        f"less {held} held for open orders"
    )


def _writable(portfolio: Portfolio) -> None:
    if portfolio.status == "closed":
        raise RuleBroken(
            "portfolio_closed",
            f"portfolio {portfolio.id} is closed ({portfolio.status_reason}); it takes no new "
            "or changed orders. Use another portfolio of the owner (find_portfolios).",
        )


def _tradable(ins: Instrument) -> None:
    if ins.halted:
        raise RuleBroken(
            "trading_halted",
            f"trading in {ins.symbol} is halted ({ins.halt_reason}); no orders can be placed or "
            "changed until it resumes. Open orders can still be cancelled.",
        )


def _in_band(ins: Instrument, limit_price: Decimal) -> None:
    low, high = price_band(ins.prev_close)
    if not low <= limit_price <= high:
        raise RuleBroken(
            "price_band",
            f"limit price {limit_price} is outside today's band for {ins.symbol}: between {low} "
            f"and {high} (20% either side of the previous close {ins.prev_close}). Pick a price "
            "in the band; get_quote shows the current bid and ask.",
        )


def _own(order: Order) -> str:
    if order.portfolio_id is None:
        raise PermissionDenied(
            f"Order {order.id} belongs to another market participant, not to one of your "
            "portfolios: it can be seen only as part of the book (get_order_book). Call "
            "list_orders with a portfolio id to see that portfolio's orders."
        )
    return order.portfolio_id


@dataclass
class _Plan:
    """How an order would execute: all rules already checked, nothing changed yet."""

    fills: list[tuple[Order, int, Decimal]]
    rest: int
    reserve: int


def _segments(
    plan_fills: list[tuple[Order, int, Decimal]], rest: int, limit: Decimal | None
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
    portfolio: Portfolio,
    ins: Instrument,
    side: str,
    quantity: int,
    limit_price: Decimal | None,
    exclude: Order | None = None,
) -> _Plan:
    """Match against the book and check every rule; raises ``RuleBroken``, changes nothing.

    ``limit_price`` None is a market order. ``exclude`` is an order being changed: its own
    holds and offered shares do not count against it.
    """
    buying = side == "buy"
    other = "sell" if buying else "buy"
    price_order = Order.limit_price.asc() if buying else Order.limit_price.desc()
    book = ctx.db.scalars(
        select(Order)
        .where(Order.symbol == ins.symbol, Order.side == other, Order.status.in_(OPEN_STATUSES))
        .order_by(price_order, Order.seq)
    )
    fills: list[tuple[Order, int, Decimal]] = []
    left = quantity
    for resting in book:
        if left == 0:
            break
        assert resting.limit_price is not None
        if limit_price is not None and (
            resting.limit_price > limit_price if buying else resting.limit_price < limit_price
        ):
            break
        if resting.portfolio_id == portfolio.id:
            raise RuleBroken(
                "no_self_trade",
                f"this order would trade against {resting.id}, a resting {resting.side} order of "
                f"the same portfolio at {resting.limit_price}. Cancel {resting.id} first "
                "(cancel_order), or choose a limit price that does not reach it.",
            )
        take = min(left, resting.remaining)
        fills.append((resting, take, resting.limit_price))
        left -= take
    if limit_price is None and not fills:
        raise RuleBroken(
            "no_liquidity",
            f"no {other} orders rest in the {ins.symbol} book, so a market order cannot fill. "
            "Place a limit order instead (place_limit_order); it waits in the book.",
        )
    rest = left if limit_price is not None else 0
    total = quantity - left + rest
    held = _quantity(ctx, portfolio.id, ins.symbol)
    offered = _committed(ctx, portfolio.id, ins.symbol, side, exclude)
    coverable = max(0, held - offered) if not buying else max(0, -held - offered)
    closing = min(total, coverable)
    opening = total - closing
    if opening and portfolio.status == "restricted":
        what = (
            f"sell at most {coverable} {ins.symbol} (shares it holds and has not offered)"
            if not buying
            else f"buy back at most {coverable} {ins.symbol} (shares it is short and has not "
            "already bid for)"
        )
        raise RuleBroken(
            "closing_only",
            f"portfolio {portfolio.id} is restricted to closing trades "
            f"({portfolio.status_reason}); it may only {what}. Reduce the quantity.",
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
            kind = "buy" if buying else "sell short"
            raise RuleBroken(
                "buying_power",
                f"this order needs {needed} of buying power for the shares it would {kind}, "
                f"but {portfolio.id} ({portfolio.kind} portfolio) has {power} "
                f"({_power_text(ctx, portfolio, exclude)}). At these prices it can "
                f"{side} at most {fit} shares; lower the quantity, or cancel an open order to "
                "release what it holds.",
            )
    return _Plan(fills=fills, rest=rest, reserve=min(rest, opening))


def _position(ctx: ToolContext, portfolio_id: str, symbol: str) -> Position:
    pos = ctx.db.get(Position, (portfolio_id, symbol))
    if pos is None:
        pos = Position(
            portfolio_id=portfolio_id,
            symbol=symbol,
            quantity=0,
            cost_basis=Decimal("0.00"),
            realized_pnl=Decimal("0.00"),
        )
        ctx.db.add(pos)
    return pos


def _book_fill(ctx: ToolContext, order: Order, qty: int, price: Decimal) -> None:
    order.filled_quantity += qty
    order.filled_value = order.filled_value + qty * price
    order.status = "filled" if order.filled_quantity == order.quantity else "partially_filled"
    order.updated_at = ctx.now
    if order.portfolio_id is not None:
        portfolio = ctx.db.get_one(Portfolio, order.portfolio_id)
        apply_fill(portfolio, _position(ctx, portfolio.id, order.symbol), order.side, qty, price)


def _execute(ctx: ToolContext, order: Order, plan: _Plan, ins: Instrument) -> list[Trade]:
    """Apply a checked plan: trades at the resting prices, then rest or cancel the remainder."""
    trades = []
    for resting, qty, price in plan.fills:
        buy, sell = (order, resting) if order.side == "buy" else (resting, order)
        trade = Trade(
            id=next_id(ctx, Trade.id, "trd", 5),
            symbol=ins.symbol,
            buy_order_id=buy.id,
            sell_order_id=sell.id,
            price=price,
            quantity=qty,
            aggressor=order.side,
            executed_at=ctx.now,
        )
        ctx.db.add(trade)
        _book_fill(ctx, resting, qty, price)
        _book_fill(ctx, order, qty, price)
        ins.last_price = price
        ins.high = max(ins.high, price)
        ins.low = min(ins.low, price)
        ins.volume += qty
        ctx.db.flush()
        trades.append(trade)
    order.reserve_quantity = plan.reserve
    order.updated_at = ctx.now
    if order.filled_quantity == order.quantity:
        order.status = "filled"
    elif order.order_type == "market":
        order.status = "cancelled"
        order.cancel_reason = "market order remainder cancelled: no more resting orders"
    else:
        order.status = "partially_filled" if order.filled_quantity else "open"
    ctx.db.flush()
    return trades


def _next_seq(ctx: ToolContext) -> int:
    return (ctx.db.scalar(select(func.max(Order.seq))) or 0) + 1


def _order_record(order: Order) -> OrderOut:
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
        "remaining_quantity": order.remaining if order.is_open else 0,
        "limit_price": order.limit_price,
        "average_fill_price": avg,
        "status": order.status,
        "cancel_reason": order.cancel_reason or None,
        "held_buying_power": money(order.held),
        "created_at": order.created_at.isoformat(timespec="minutes"),
        "updated_at": order.updated_at.isoformat(timespec="minutes"),
    }


def _trade_record(trade: Trade, order: Order) -> TradeOut:
    maker = trade.aggressor != order.side
    return {
        "trade_id": trade.id,
        "order_id": order.id,
        "symbol": trade.symbol,
        "side": order.side,
        "quantity": trade.quantity,
        "price": trade.price,
        "value": trade.quantity * trade.price,
        "liquidity": "maker" if maker else "taker",
        "executed_at": trade.executed_at.isoformat(timespec="minutes"),
    }


def _trades_of(ctx: ToolContext, order: Order) -> list[TradeOut]:
    stmt = (
        select(Trade)
        .where(or_(Trade.buy_order_id == order.id, Trade.sell_order_id == order.id))
        .order_by(Trade.executed_at, Trade.id)
    )
    return [_trade_record(t, order) for t in ctx.db.scalars(stmt)]


def _execution(ctx: ToolContext, order: Order, trades: list[Trade]) -> ExecutionOut:
    assert order.portfolio_id is not None
    portfolio = ctx.db.get_one(Portfolio, order.portfolio_id)
    return {
        **_order_record(order),
        "trades": [_trade_record(t, order) for t in trades],
        "position_quantity": _quantity(ctx, portfolio.id, order.symbol),
        "cash": portfolio.cash,
        "buying_power": _power(ctx, portfolio),
    }


def _submit(
    ctx: ToolContext,
    portfolio: Portfolio,
    ins: Instrument,
    side: str,
    quantity: int,
    limit_price: Decimal | None,
) -> ExecutionOut:
    _writable(portfolio)
    _tradable(ins)
    if limit_price is not None:
        _in_band(ins, limit_price)
    plan = _plan(ctx, portfolio, ins, side, quantity, limit_price)
    order = Order(
        id=next_id(ctx, Order.id, "ord", 5),
        portfolio_id=portfolio.id,
        participant=portfolio.owner,
        symbol=ins.symbol,
        side=side,
        order_type="market" if limit_price is None else "limit",
        quantity=quantity,
        filled_quantity=0,
        filled_value=Decimal("0.00"),
        limit_price=limit_price,
        status="open",
        cancel_reason="",
        seq=_next_seq(ctx),
        reserve_quantity=0,
        created_at=ctx.now,
        updated_at=ctx.now,
    )
    ctx.db.add(order)
    ctx.db.flush()
    return _execution(ctx, order, _execute(ctx, order, plan, ins))


# -------------------------------------------------------- example values
def _some_query(ctx: ToolContext, rng: random.Random) -> str:
    names = list(ctx.db.scalars(select(Instrument.name).order_by(Instrument.symbol)))
    return rng.choice(names).split()[0]


def _some_owner(ctx: ToolContext, rng: random.Random) -> str:
    owners = list(ctx.db.scalars(select(Portfolio.owner).order_by(Portfolio.id)))
    return rng.choice(owners).split()[-1]


def _some_price(ctx: ToolContext, rng: random.Random) -> Decimal:
    prices = list(ctx.db.scalars(select(Instrument.last_price).order_by(Instrument.symbol)))
    return rng.choice(prices)


def _newest_open(ctx: ToolContext) -> Order | None:
    """The open portfolio order placed or changed last (the one a conversation just made)."""
    stmt = (
        select(Order)
        .where(Order.portfolio_id.is_not(None), Order.status.in_(OPEN_STATUSES))
        .order_by(Order.seq.desc())
        .limit(1)
    )
    return ctx.db.scalar(stmt)


def _new_limit(ctx: ToolContext, rng: random.Random) -> Decimal:
    """A new price for the newest open order: one cent further from the market."""
    order = _newest_open(ctx)
    if order is None or order.limit_price is None:
        return _some_price(ctx, rng)
    return _changed_price(ctx.db.get_one(Instrument, order.symbol), order)


def _new_quantity(ctx: ToolContext, rng: random.Random) -> int:
    """A smaller total quantity for the newest open order."""
    order = _newest_open(ctx)
    return rng.choice(QUANTITIES) if order is None else _smaller(order)


def _changed_price(ins: Instrument, order: Order) -> Decimal:
    assert order.limit_price is not None
    low, high = price_band(ins.prev_close)
    step = -CENT if order.side == "buy" else CENT
    return min(max(order.limit_price + step, low), high)


def _smaller(order: Order) -> int:
    return order.filled_quantity + max(1, order.remaining // 2)


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
    stmt = select(Instrument)
    text = query.strip()
    if text:
        stmt = stmt.where(contains(text, Instrument.symbol, Instrument.name, Instrument.sector))
    if kind is not None:
        stmt = stmt.where(Instrument.kind == kind)
    rows = ctx.db.scalars(stmt.order_by(Instrument.symbol).limit(limit))
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
    best = Order.limit_price.desc() if side == "buy" else Order.limit_price.asc()
    stmt = (
        select(Order)
        .where(Order.symbol == symbol, Order.side == side, Order.status.in_(OPEN_STATUSES))
        .order_by(best, Order.seq)
    )
    price: Decimal | None = None
    size = 0
    for o in ctx.db.scalars(stmt):
        if price is not None and o.limit_price != price:
            break
        price = o.limit_price
        size += o.remaining
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
    for side, order in (("buy", Order.limit_price.desc()), ("sell", Order.limit_price.asc())):
        levels: list[LevelOut] = []
        stmt = (
            select(Order)
            .where(Order.symbol == ins.symbol, Order.side == side, Order.status.in_(OPEN_STATUSES))
            .order_by(order, Order.seq)
        )
        for o in ctx.db.scalars(stmt):
            assert o.limit_price is not None
            if levels and levels[-1]["price"] == o.limit_price:
                levels[-1]["quantity"] += o.remaining
                levels[-1]["orders"] += 1
            elif len(levels) < depth:
                levels.append({"price": o.limit_price, "quantity": o.remaining, "orders": 1})
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
    stmt = select(Bar).where(Bar.symbol == symbol.symbol).order_by(Bar.day.desc()).limit(days)
    bars = list(reversed(list(ctx.db.scalars(stmt))))
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
    stmt = (
        select(Portfolio)
        .where(contains(text, Portfolio.owner, Portfolio.email, Portfolio.name, Portfolio.id))
        .order_by(Portfolio.owner, Portfolio.id)
        .limit(limit)
    )
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
        for p in ctx.db.scalars(stmt)
    ]


@server.tool(
    returns=("portfolio", "instrument", "order"),
    phrasings=[
        "How is {portfolio_id} doing?",
        "What's my buying power in {portfolio_id}?",
    ],
)
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
    for pos, ins in _holdings(ctx, p.id):
        value = pos.quantity * ins.last_price
        offered = sum(
            o.remaining for o in open_orders if o.symbol == pos.symbol and o.side == "sell"
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
                "last_price": ins.last_price,
                "market_value": value,
                "unrealized_pnl": value - pos.cost_basis,
                "realized_pnl": pos.realized_pnl,
                "available_to_sell": max(0, pos.quantity - offered),
            }
        )
    realized = sum(
        ctx.db.scalars(
            select(Position.realized_pnl)
            .where(Position.portfolio_id == p.id)
            .order_by(Position.symbol)
        ),
        Decimal("0.00"),
    )
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
    stmt = select(Order).where(Order.portfolio_id == portfolio_id.id)
    if status == "open":
        stmt = stmt.where(Order.status.in_(OPEN_STATUSES))
    elif status != "all":
        stmt = stmt.where(Order.status == status)
    if symbol is not None:
        stmt = stmt.where(Order.symbol == symbol.symbol)
    stmt = stmt.order_by(Order.created_at.desc(), Order.id.desc()).limit(limit)
    return {
        "portfolio_id": portfolio_id.id,
        "status": status,
        "orders": [_order_record(o) for o in ctx.db.scalars(stmt)],
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
    buy, sell = aliased(Order), aliased(Order)
    stmt = (
        select(Trade, buy, sell)
        .join(buy, buy.id == Trade.buy_order_id)
        .join(sell, sell.id == Trade.sell_order_id)
        .where(or_(buy.portfolio_id == portfolio_id.id, sell.portfolio_id == portfolio_id.id))
    )
    if symbol is not None:
        stmt = stmt.where(Trade.symbol == symbol.symbol)
    stmt = stmt.order_by(Trade.executed_at.desc(), Trade.id.desc()).limit(limit)
    out = []
    for trade, b, s in ctx.db.execute(stmt).all():
        mine = b if b.portfolio_id == portfolio_id.id else s
        out.append(_trade_record(trade, mine))
    return {"portfolio_id": portfolio_id.id, "trades": out}


@server.tool(
    writes=True,
    returns=("order", "trade"),
    phrasings=[
        "In {portfolio_id}, {side} {quantity} shares of {symbol} at {limit_price} or better",
        "Put in a limit order in {portfolio_id}: {side} {quantity} {symbol} at {limit_price}",
    ],
    normalise={"symbol": "casefold"},
    examples={"quantity": QUANTITIES, "limit_price": _some_price},
)
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


@server.tool(
    writes=True,
    returns=("order", "trade"),
    phrasings=[
        "In {portfolio_id}, {side} {quantity} shares of {symbol} at market",
        "Market order in {portfolio_id}: {side} {quantity} {symbol} right now",
    ],
    normalise={"symbol": "casefold"},
    examples={"quantity": QUANTITIES},
)
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


@server.tool(
    writes=True,
    returns=("order", "trade"),
    phrasings=[
        "Change order {order_id} to {quantity} shares at {limit_price}",
        "Move order {order_id} to {limit_price}, quantity {quantity}",
    ],
    examples={"quantity": _new_quantity, "limit_price": _new_limit},
)
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
    order = order_id
    limit_price = limit_price.quantize(CENT)
    portfolio = ctx.db.get_one(Portfolio, _own(order))
    if not order.is_open:
        raise RuleBroken(
            "order_not_open",
            f"order {order.id} is {order.status}; only open or partially filled orders can be "
            "changed. Place a new limit order instead.",
        )
    _writable(portfolio)
    ins = ctx.db.get_one(Instrument, order.symbol)
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
        ctx, portfolio, ins, order.side, quantity - order.filled_quantity, limit_price, order
    )
    if limit_price != order.limit_price or quantity > order.quantity:
        order.seq = _next_seq(ctx)
    order.quantity = quantity
    order.limit_price = limit_price
    ctx.db.flush()
    return _execution(ctx, order, _execute(ctx, order, plan, ins))


@server.tool(
    writes=True,
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
    if not order.is_open:
        raise RuleBroken(
            "order_not_open",
            f"order {order.id} is already {order.status}; only open or partially filled orders "
            "can be cancelled (list_orders shows the open ones).",
        )
    released = money(order.held)
    order.status = "cancelled"
    order.cancel_reason = "cancelled by owner"
    order.updated_at = ctx.now
    ctx.db.flush()
    return {**_order_record(order), "released_buying_power": released}


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests. Fields named
# like tool parameters (quantity, limit_price, symbol) give values that the rules allow.
def _quote_price(ctx: ToolContext, ins: Instrument) -> Decimal:
    """A limit price near the market that the price band allows."""
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
    out = []
    stmt = select(Portfolio).where(Portfolio.status == "active").order_by(Portfolio.id)
    for p in ctx.db.scalars(stmt):
        power = _power(ctx, p)
        holdings = [
            (pos, ins)
            for pos, ins in _holdings(ctx, p.id)
            if pos.quantity > _committed(ctx, p.id, pos.symbol, "sell") and not ins.halted
        ]
        if not holdings:
            continue
        pos, ins = max(holdings, key=lambda h: (h[0].quantity * h[1].last_price, h[0].symbol))
        price = _quote_price(ctx, ins) * Decimal("1.05")
        available = pos.quantity - _committed(ctx, p.id, pos.symbol, "sell")
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
    stmt = select(Instrument).where(Instrument.halted.is_(False)).order_by(Instrument.symbol)
    return [
        {
            "symbol": i.symbol,
            "name": i.name,
            "query": i.name.split()[0],
            "limit_price": _quote_price(ctx, i),
        }
        for i in ctx.db.scalars(stmt)
    ]


@server.entity(
    "order",
    key="order_id",
    model=Order,
    not_found="Call list_orders with the portfolio's id to see its orders "
    "(ids such as 'ord_01234').",
)
def _orders(ctx: ToolContext) -> list[dict]:
    """Open orders of portfolios, with a change that keeps them resting (fewer shares, a
    price one cent further from the market)."""
    stmt = (
        select(Order, Instrument, Portfolio)
        .join(Instrument, Instrument.symbol == Order.symbol)
        .join(Portfolio, Portfolio.id == Order.portfolio_id)
        .where(Order.status.in_(OPEN_STATUSES), Portfolio.status == "active")
        .order_by(Order.id)
    )
    out = []
    for o, ins, p in ctx.db.execute(stmt).all():
        if ins.halted or o.limit_price is None:
            continue
        out.append(
            {
                "order_id": o.id,
                "portfolio_id": p.id,
                "owner": p.owner,
                "symbol": o.symbol,
                "side": o.side,
                "quantity": _smaller(o),
                "limit_price": _changed_price(ins, o),
            }
        )
    return out


@server.entity("trade", key="trade_id")
def _trades(ctx: ToolContext) -> list[dict]:
    """Trades of portfolios in the last 30 days."""
    buy, sell = aliased(Order), aliased(Order)
    stmt = (
        select(Trade, buy, sell)
        .join(buy, buy.id == Trade.buy_order_id)
        .join(sell, sell.id == Trade.sell_order_id)
        .where(Trade.executed_at >= ctx.now - dt.timedelta(days=30))
        .order_by(Trade.id)
    )
    out = []
    for t, b, s in ctx.db.execute(stmt).all():
        mine = b if b.portfolio_id is not None else s
        if mine.portfolio_id is None:
            continue
        out.append(
            {
                "trade_id": t.id,
                "order_id": mine.id,
                "portfolio_id": mine.portfolio_id,
                "symbol": t.symbol,
            }
        )
    return out
