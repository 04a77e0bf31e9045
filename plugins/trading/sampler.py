"""A realistic broker and exchange: size 1 gives 24 instruments, ~30 portfolios, ~1,500 orders.

Each instrument gets 90 trading days of daily bars (a random walk with its own volatility)
and today's session so far. Each portfolio starts from a deposit and replays its own
trading history in time order against those bars, under the same rules the tools enforce
(cash portfolios never spend more than their cash nor sell shares they do not hold; margin
portfolios stay within twice their equity and short only borrowable names), so cash and
positions are exactly what :func:`~.models.apply_fill` makes of the trades. Today's book
holds other participants' resting limit orders, several price levels a side, and some
portfolios' own resting (sometimes partly filled) limit orders; it is never crossed.
Orders and trades are numbered in time order, and ``seq`` (time priority) follows it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from operator import attrgetter
from random import Random

from prove_gym.server import SampleContext

from .models import (
    CENT,
    CLOSING_BELL,
    OPENING_BELL,
    Bar,
    Instrument,
    Order,
    Portfolio,
    Position,
    Trade,
    apply_fill,
    buying_power,
    price_band,
)

HISTORY_DAYS = 90
"""Trading days of daily bars before today."""

# symbol, name, kind, sector, exchange, price range, daily volatility, chance of hard to borrow
UNIVERSE: tuple[tuple[str, str, str, str, str, int, int, float, float], ...] = (
    ("AAPL", "Apple Inc.", "stock", "Technology", "NASDAQ", 160, 230, 0.015, 0.0),
    ("MSFT", "Microsoft Corp.", "stock", "Technology", "NASDAQ", 320, 450, 0.014, 0.0),
    ("NVDA", "NVIDIA Corp.", "stock", "Technology", "NASDAQ", 90, 150, 0.03, 0.0),
    ("AMZN", "Amazon.com Inc.", "stock", "Consumer Discretionary", "NASDAQ", 140, 200, 0.018, 0.0),
    (
        "GOOGL",
        "Alphabet Inc. Class A",
        "stock",
        "Communication Services",
        "NASDAQ",
        130,
        190,
        0.017,
        0.0,
    ),
    (
        "META",
        "Meta Platforms Inc.",
        "stock",
        "Communication Services",
        "NASDAQ",
        320,
        560,
        0.022,
        0.0,
    ),
    ("TSLA", "Tesla Inc.", "stock", "Consumer Discretionary", "NASDAQ", 180, 300, 0.035, 0.05),
    ("JPM", "JPMorgan Chase & Co.", "stock", "Financials", "NYSE", 150, 220, 0.012, 0.0),
    ("V", "Visa Inc.", "stock", "Financials", "NYSE", 240, 300, 0.011, 0.0),
    ("JNJ", "Johnson & Johnson", "stock", "Health Care", "NYSE", 145, 170, 0.009, 0.0),
    ("PG", "Procter & Gamble Co.", "stock", "Consumer Staples", "NYSE", 150, 175, 0.008, 0.0),
    ("XOM", "Exxon Mobil Corp.", "stock", "Energy", "NYSE", 100, 125, 0.014, 0.0),
    ("KO", "Coca-Cola Co.", "stock", "Consumer Staples", "NYSE", 58, 72, 0.008, 0.0),
    ("PEP", "PepsiCo Inc.", "stock", "Consumer Staples", "NASDAQ", 150, 180, 0.009, 0.0),
    ("DIS", "Walt Disney Co.", "stock", "Communication Services", "NYSE", 85, 120, 0.016, 0.0),
    ("NFLX", "Netflix Inc.", "stock", "Communication Services", "NASDAQ", 450, 700, 0.022, 0.0),
    ("INTC", "Intel Corp.", "stock", "Technology", "NASDAQ", 20, 45, 0.025, 0.05),
    ("AMD", "Advanced Micro Devices Inc.", "stock", "Technology", "NASDAQ", 100, 180, 0.03, 0.0),
    ("BA", "Boeing Co.", "stock", "Industrials", "NYSE", 160, 220, 0.02, 0.05),
    ("CAT", "Caterpillar Inc.", "stock", "Industrials", "NYSE", 280, 360, 0.015, 0.0),
    ("WMT", "Walmart Inc.", "stock", "Consumer Staples", "NYSE", 60, 90, 0.009, 0.0),
    ("COST", "Costco Wholesale Corp.", "stock", "Consumer Staples", "NASDAQ", 700, 900, 0.011, 0.0),
    ("NKE", "Nike Inc.", "stock", "Consumer Discretionary", "NYSE", 70, 110, 0.017, 0.0),
    ("PFE", "Pfizer Inc.", "stock", "Health Care", "NYSE", 25, 32, 0.012, 0.0),
    ("MRNA", "Moderna Inc.", "stock", "Health Care", "NASDAQ", 40, 120, 0.04, 0.5),
    ("GME", "GameStop Corp.", "stock", "Consumer Discretionary", "NYSE", 12, 30, 0.06, 0.8),
    (
        "AMC",
        "AMC Entertainment Holdings",
        "stock",
        "Communication Services",
        "NYSE",
        3,
        8,
        0.06,
        0.8,
    ),
    ("PLTR", "Palantir Technologies Inc.", "stock", "Technology", "NASDAQ", 20, 80, 0.04, 0.2),
    ("SOFI", "SoFi Technologies Inc.", "stock", "Financials", "NASDAQ", 7, 15, 0.04, 0.4),
    (
        "RIVN",
        "Rivian Automotive Inc.",
        "stock",
        "Consumer Discretionary",
        "NASDAQ",
        10,
        20,
        0.045,
        0.6,
    ),
    ("F", "Ford Motor Co.", "stock", "Consumer Discretionary", "NYSE", 10, 14, 0.018, 0.0),
    ("T", "AT&T Inc.", "stock", "Communication Services", "NYSE", 16, 22, 0.01, 0.0),
    ("SPY", "SPDR S&P 500 ETF Trust", "etf", "Broad Market ETF", "NYSE Arca", 480, 580, 0.009, 0.0),
    ("QQQ", "Invesco QQQ Trust", "etf", "Broad Market ETF", "NASDAQ", 400, 500, 0.012, 0.0),
    (
        "IWM",
        "iShares Russell 2000 ETF",
        "etf",
        "Broad Market ETF",
        "NYSE Arca",
        190,
        230,
        0.013,
        0.0,
    ),
    (
        "VTI",
        "Vanguard Total Stock Market ETF",
        "etf",
        "Broad Market ETF",
        "NYSE Arca",
        230,
        280,
        0.009,
        0.0,
    ),
    ("TLT", "iShares 20+ Year Treasury Bond ETF", "etf", "Bond ETF", "NASDAQ", 85, 100, 0.008, 0.0),
    ("GLD", "SPDR Gold Shares", "etf", "Commodity ETF", "NYSE Arca", 190, 240, 0.009, 0.0),
    ("ARKK", "ARK Innovation ETF", "etf", "Thematic ETF", "NYSE Arca", 40, 55, 0.028, 0.1),
    ("XLE", "Energy Select Sector SPDR Fund", "etf", "Sector ETF", "NYSE Arca", 85, 95, 0.013, 0.0),
)
PARTICIPANTS = (
    "Citadel Securities",
    "Virtu Americas",
    "Jane Street Capital",
    "Susquehanna International",
    "Hudson River Trading",
    "Two Sigma Securities",
    "IMC Chicago",
    "Flow Traders",
    "G1 Execution Services",
    "Optiver US",
)
HALT_REASONS = ("news pending", "volatility pause (limit up-limit down)", "regulatory halt")
RESTRICT_REASONS = (
    "margin call: equity below the maintenance requirement",
    "compliance review of recent activity",
    "pattern day trader flag",
)
PORTFOLIO_NAMES = {
    "cash": ("Individual brokerage", "Roth IRA", "Traditional IRA", "Long-term savings"),
    "margin": ("Trading account", "Active trading", "Joint margin account", "Swing trading"),
}
LOT_SIZES = (100, 100, 100, 200, 200, 300, 400, 500, 800, 1000, 1500, 2500)


ZERO = Decimal("0.00")
ONE = Decimal("1.00")
UNIT = Decimal(1)
"""``1`` as a ``Decimal``: the same sums as the int ``1``, without its conversion each time."""
MINUTE = dt.timedelta(minutes=1)
"""``MINUTE * n`` is ``timedelta(minutes=n)`` at a third of the cost (no keyword parsing)."""


# Plain rows, their attributes named as the columns: a state has thousands of them, and
# ``ctx.insert(rows, into=Model)`` writes each table at a tenth of a mapped object's cost.
@dataclass(slots=True)
class _Instrument:
    symbol: str
    name: str
    kind: str
    sector: str
    exchange: str
    shortable: bool
    halted: bool
    halt_reason: str
    prev_close: Decimal
    open_price: Decimal
    high: Decimal
    low: Decimal
    last_price: Decimal
    volume: int


@dataclass(slots=True)
class _Portfolio:
    id: str
    owner: str
    email: str
    name: str
    kind: str
    status: str
    status_reason: str
    opened_on: dt.date
    opening_cash: Decimal
    cash: Decimal


@dataclass(slots=True)
class _Position:
    portfolio_id: str
    symbol: str
    quantity: int = 0
    cost_basis: Decimal = ZERO
    realized_pnl: Decimal = ZERO


@dataclass(slots=True)
class _Bar:
    symbol: str
    day: dt.date
    open: Decimal
    high: Decimal
    low: Decimal
    close: Decimal
    volume: int


@dataclass(slots=True)
class _Draft:
    """An order before it is numbered (``id`` and ``seq`` follow ``created_at``); the
    attributes are named as :class:`Order`'s columns."""

    portfolio: _Portfolio | None
    participant: str
    symbol: str
    side: str
    order_type: str
    quantity: int
    limit_price: Decimal | None
    created_at: dt.datetime
    filled_quantity: int = 0
    filled_value: Decimal = ZERO
    status: str = "open"
    cancel_reason: str = ""
    reserve_quantity: int = 0
    updated_at: dt.datetime | None = None
    id: str = ""
    seq: int = 0

    @property
    def portfolio_id(self) -> str | None:
        return self.portfolio.id if self.portfolio is not None else None


@dataclass(slots=True)
class _TradeDraft:
    buy: _Draft
    sell: _Draft
    price: Decimal
    quantity: int
    aggressor: str
    at: dt.datetime


@dataclass
class _Market:
    """Everything sampled so far, in the order it is numbered at the end."""

    ctx: SampleContext
    instruments: dict[str, _Instrument] = field(default_factory=dict)
    bars: dict[str, list[_Bar]] = field(default_factory=dict)
    days: list[dt.date] = field(default_factory=list)
    portfolios: list[_Portfolio] = field(default_factory=list)
    positions: dict[tuple[str, str], _Position] = field(default_factory=dict)
    orders: list[_Draft] = field(default_factory=list)
    trades: list[_TradeDraft] = field(default_factory=list)
    # per portfolio id: its positions by symbol and its own orders (in ``orders`` order)
    positions_of: dict[str, dict[str, _Position]] = field(default_factory=dict)
    orders_of: dict[str, list[_Draft]] = field(default_factory=dict)
    # fixed once the instruments are drawn
    symbols: list[str] = field(default_factory=list)
    etfs: list[str] = field(default_factory=list)
    tradable: list[str] = field(default_factory=list)

    def add(self, order: _Draft) -> None:
        self.orders.append(order)
        if order.portfolio is not None:
            self.orders_of.setdefault(order.portfolio.id, []).append(order)

    def position(self, portfolio: _Portfolio, symbol: str) -> _Position:
        key = (portfolio.id, symbol)
        pos = self.positions.get(key)
        if pos is None:
            pos = self.positions[key] = _Position(portfolio.id, symbol)
            self.positions_of.setdefault(portfolio.id, {})[symbol] = pos
        return pos

    def holdings(
        self, portfolio: _Portfolio, marks: dict[str, Decimal]
    ) -> list[tuple[int, Decimal]]:
        own = self.positions_of.get(portfolio.id, {})
        return [(pos.quantity, marks[sym]) for sym, pos in sorted(own.items()) if pos.quantity]

    def holdings_on(self, portfolio: _Portfolio, di: int) -> list[tuple[int, Decimal]]:
        """:meth:`holdings` marked at the close of history day ``di``."""
        own = self.positions_of.get(portfolio.id, {})
        bars = self.bars
        return [
            (pos.quantity, bars[sym][di].close) for sym, pos in sorted(own.items()) if pos.quantity
        ]

    def held(self, portfolio: _Portfolio) -> Decimal:
        total = ZERO
        for d in self.orders_of.get(portfolio.id, []):
            if d.status in ("open", "partially_filled"):
                assert d.limit_price is not None
                total += min(d.quantity - d.filled_quantity, d.reserve_quantity) * d.limit_price
        return total

    def power(self, portfolio: _Portfolio, marks: dict[str, Decimal]) -> Decimal:
        return buying_power(
            portfolio.kind, portfolio.cash, self.holdings(portfolio, marks), self.held(portfolio)
        )

    def trade(
        self,
        ours: _Draft,
        qty: int,
        price: Decimal,
        at: dt.datetime,
        *,
        we_are_maker: bool,
        counterparty: str,
    ) -> None:
        """Execute ``qty`` of our order against a new participant order, booking the fill."""
        assert ours.portfolio is not None
        other_side = "sell" if ours.side == "buy" else "buy"
        value = qty * price
        theirs = _Draft(
            portfolio=None,
            participant=counterparty,
            symbol=ours.symbol,
            side=other_side,
            order_type="market" if we_are_maker else "limit",
            quantity=qty,
            limit_price=None if we_are_maker else price,
            created_at=at,
            filled_quantity=qty,
            filled_value=value,
            status="filled",
            updated_at=at,
        )
        self.add(theirs)
        ours.filled_quantity += qty
        ours.filled_value += value
        ours.updated_at = at
        ours.status = "filled" if ours.filled_quantity == ours.quantity else "partially_filled"
        buy, sell = (ours, theirs) if ours.side == "buy" else (theirs, ours)
        aggressor = other_side if we_are_maker else ours.side
        self.trades.append(_TradeDraft(buy, sell, price, qty, aggressor, at))
        apply_fill(
            ours.portfolio, self.position(ours.portfolio, ours.symbol), ours.side, qty, price
        )


def sample_trading(ctx: SampleContext) -> None:
    """Fill an empty trading database (see the module docstring for sizes)."""
    market = _Market(ctx)
    _instruments(market)
    for owner in range(20 * ctx.size):
        _owner(market, owner)
    _statuses(market)
    _book(market)
    _number(market)


# ------------------------------------------------------------ market data
def _instruments(m: _Market) -> None:
    rng, now = m.ctx.rng, m.ctx.now
    gauss, uniform = rng.gauss, rng.uniform
    day = now.date()
    while len(m.days) < HISTORY_DAYS:
        day -= dt.timedelta(days=1)
        if day.weekday() < 5:
            m.days.append(day)
    m.days.reverse()
    count = min(len(UNIVERSE), 16 + 8 * m.ctx.size)
    chosen = sorted(rng.sample(UNIVERSE, count))
    halted = {rng.choice(chosen)[0]} | ({rng.choice(chosen)[0]} if rng.random() < 0.3 else set())
    for sym, name, kind, sector, exchange, lo, hi, vol, htb in chosen:
        price = Decimal(rng.randint(lo * 100, hi * 100)).scaleb(-2)
        base_volume = int(rng.uniform(2e6, 4e7) * (100 / (float(price) + 50)) ** 0.5)
        drift = rng.gauss(0.0004, 0.001)
        third, half = vol / 3, vol / 2
        bars = []
        close = price
        for d in m.days:
            # _factor and _px, inlined: this loop draws most of a state's numbers (``top`` and
            # ``bottom`` are max() and min() of open and close, in one comparison)
            open_ = max((close * Decimal(f"{1 + gauss(0.0, third):.6f}")).quantize(CENT), ONE)
            close = max((open_ * Decimal(f"{1 + gauss(drift, vol):.6f}")).quantize(CENT), ONE)
            top, bottom = (open_, close) if open_ >= close else (close, open_)
            high = max((top * (UNIT + abs(Decimal(str(gauss(0, half)))))).quantize(CENT), ONE)
            low = max((bottom * (UNIT - abs(Decimal(str(gauss(0, half)))))).quantize(CENT), ONE)
            volume = int(base_volume * uniform(0.5, 1.8))
            bars.append(_Bar(sym, d, open_, high, low, close, volume))
        today_open = _px(close * _factor(rng, vol / 3))
        last = _px(today_open * _factor(rng, vol / 2))
        band_low, band_high = price_band(close)
        last = min(max(last, band_low), band_high)
        m.instruments[sym] = _Instrument(
            symbol=sym,
            name=name,
            kind=kind,
            sector=sector,
            exchange=exchange,
            shortable=rng.random() >= htb,
            halted=sym in halted,
            halt_reason=rng.choice(HALT_REASONS) if sym in halted else "",
            prev_close=close,
            open_price=today_open,
            high=_px(max(today_open, last) * (1 + abs(Decimal(str(rng.gauss(0, vol / 4)))))),
            low=_px(min(today_open, last) * (1 - abs(Decimal(str(rng.gauss(0, vol / 4)))))),
            last_price=last,
            volume=int(base_volume * rng.uniform(0.1, 0.9)),
        )
        m.bars[sym] = bars
    m.symbols = sorted(m.instruments)
    m.etfs = [s for s in m.symbols if m.instruments[s].kind == "etf"]
    m.tradable = [s for s in m.symbols if not m.instruments[s].halted]


def _factor(rng: Random, vol: float, drift: float = 0.0) -> Decimal:
    """A random factor near 1, to 6 decimal places, for a price to be multiplied by.

    ``Decimal(f"{x:.6f}")`` has the value of ``Decimal(str(round(x, 6)))`` (both round
    ``x`` correctly to 6 places) in a third of the time; only its exponent can differ
    (``1.012300`` for ``1.0123``), and the product is quantized to the cent (:func:`_px`).
    """
    return Decimal(f"{1 + rng.gauss(drift, vol):.6f}")


def _px(value: Decimal) -> Decimal:
    """A price to the cent, never below one dollar."""
    return max(value.quantize(CENT), ONE)


def _minute(rng: Random, day: dt.date) -> dt.datetime:
    """A time during regular trading hours (09:30-16:00) of ``day``."""
    return dt.datetime.combine(day, OPENING_BELL) + MINUTE * rng.randrange(390)


def _close(at: dt.datetime) -> dt.datetime:
    """The end of the trading session ``at`` falls in."""
    return dt.datetime.combine(at.date(), CLOSING_BELL)


def _sessions(m: _Market) -> list[tuple[dt.datetime, int]]:
    """Recent trading sessions (the last three days, and today's so far if it has begun), as
    (start, minutes) for :func:`_during`."""
    now = m.ctx.now
    out = [(_minute_of(d, 9, 30), _minute_of(d, 16, 0)) for d in m.days[-3:]]
    opened = _minute_of(now.date(), 9, 30)
    if now.weekday() < 5 and now > opened + dt.timedelta(minutes=2):
        out.append((opened, min(now - dt.timedelta(minutes=1), _close(now))))
    return [(start, int((end - start).total_seconds() // 60)) for start, end in out]


def _minute_of(day: dt.date, hour: int, minute: int) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(hour, minute))


def _during(rng: Random, windows: list[tuple[dt.datetime, int]]) -> dt.datetime:
    """A minute drawn uniformly from the time the (start, minutes) windows cover."""
    pick = rng.randrange(sum(length for _, length in windows))
    for start, length in windows:
        if pick < length:
            return start + MINUTE * pick
        pick -= length
    raise AssertionError("unreachable")


# -------------------------------------------------------------- portfolios
def _owner(m: _Market, index: int) -> None:
    rng, fake = m.ctx.rng, m.ctx.fake
    name = fake.unique.name()
    local = name.lower().replace(" ", ".").replace("'", "")
    email = f"{local}@{fake.free_email_domain()}"
    kinds = ["cash"] if rng.random() < 0.5 else ["margin"]
    if rng.random() < 0.45:
        kinds.append("cash" if kinds[0] == "margin" else rng.choice(["cash", "margin"]))
    used: set[str] = set()  # names are unique, so the owner's portfolios are these
    for kind in kinds:
        options = [n for n in PORTFOLIO_NAMES[kind] if n not in used]
        pid = f"pf_{len(m.portfolios) + 1:04d}"
        start = rng.randrange(0, 40)
        deposit = Decimal(int(rng.lognormvariate(10.3, 0.8)) // 100 * 100 + 2000).quantize(CENT)
        portfolio = _Portfolio(
            id=pid,
            owner=name,
            email=email,
            name=rng.choice(options),
            kind=kind,
            status="active",
            status_reason="",
            opened_on=m.days[start] - dt.timedelta(days=rng.randint(0, 900)),
            opening_cash=deposit,
            cash=deposit,
        )
        used.add(portfolio.name)
        m.portfolios.append(portfolio)
        _history(m, portfolio, start)


def _statuses(m: _Market) -> None:
    """About one margin portfolio in eight restricted, one portfolio in twenty closed (at
    least one of each, so every rule has a portfolio it applies to)."""
    rng = m.ctx.rng
    margin = [p for p in m.portfolios if p.kind == "margin"]
    for p in rng.sample(margin, k=max(1, len(margin) // 8)) if margin else []:
        p.status = "restricted"
        p.status_reason = rng.choice(RESTRICT_REASONS)
    active = [p for p in m.portfolios if p.status == "active"]
    for p in rng.sample(active, k=max(1, len(m.portfolios) // 20)):
        _close_out(m, p)


def _history(m: _Market, p: _Portfolio, start: int) -> None:
    """The portfolio's own trades since it was funded, replayed under the live rules."""
    rng = m.ctx.rng
    ira = "IRA" in p.name
    pool = m.etfs if ira and len(m.etfs) >= 3 else m.symbols
    watch = rng.sample(pool, k=min(len(pool), rng.randint(3, 7)))
    n = rng.randint(6, 22)
    days = sorted(rng.sample(range(start, len(m.days)), k=min(n, len(m.days) - start)))
    for di in days:
        day = m.days[di]
        sym = rng.choice(watch)
        bar = m.bars[sym][di]
        price = Decimal(rng.randint(int(bar.low * 100), int(bar.high * 100))).scaleb(-2)
        held = _quantity(m, p, sym)
        # a cash portfolio's buying power is its cash alone: no need to mark its holdings
        holdings = m.holdings_on(p, di) if p.kind == "margin" else []
        bp = buying_power(p.kind, p.cash, holdings, ZERO)
        shortable = m.instruments[sym].shortable
        if held > 0 and rng.random() < 0.4:
            side, qty = "sell", rng.choice([held, rng.randint(1, held)])
        elif held < 0 and rng.random() < 0.5:
            side, qty = "buy", rng.choice([-held, rng.randint(1, -held)])
        elif p.kind == "margin" and shortable and held <= 0 and rng.random() < 0.25:
            side, qty = "sell", int(bp * Decimal(str(rng.uniform(0.03, 0.15))) / price)
        else:
            side, qty = "buy", int(bp * Decimal(str(rng.uniform(0.04, 0.3))) / price)
        if qty < 1:
            continue
        _trade_once(m, p, sym, side, qty, price, _minute(rng, day))


def _trade_once(
    m: _Market, p: _Portfolio, sym: str, side: str, qty: int, price: Decimal, at: dt.datetime
) -> None:
    """One order of the portfolio: filled (taker or maker), partly filled, or never filled."""
    rng = m.ctx.rng
    roll = rng.random()
    maker = rng.random() < 0.4
    limit = price if (maker or rng.random() < 0.3 or roll >= 0.8) else None
    order = _Draft(
        portfolio=p,
        participant=p.owner,
        symbol=sym,
        side=side,
        order_type="market" if limit is None else "limit",
        quantity=qty,
        limit_price=limit,
        created_at=at,
        updated_at=at,
    )
    m.add(order)
    who = rng.choice(PARTICIPANTS)
    if roll < 0.8 or limit is None:
        fill_at = min(at + MINUTE * rng.randint(1, 90), _close(at)) if maker else at
        m.trade(order, qty, price, fill_at, we_are_maker=maker, counterparty=who)
        return
    if roll < 0.9 and qty > 1:
        part = rng.randint(1, qty - 1)
        m.trade(
            order,
            part,
            price,
            at + MINUTE * rng.randint(1, 60),
            we_are_maker=True,
            counterparty=who,
        )
    order.status = "cancelled"
    order.cancel_reason = rng.choice(["cancelled by owner", "expired at end of day"])
    order.updated_at = at + MINUTE * rng.randint(61, 300)


def _close_out(m: _Market, p: _Portfolio) -> None:
    """Sell every long and buy back every short on the last history day; no more orders."""
    rng, di = m.ctx.rng, len(m.days) - 1
    for sym, pos in sorted(m.positions_of.get(p.id, {}).items()):
        if pos.quantity == 0:
            continue
        bar = m.bars[sym][di]
        side = "sell" if pos.quantity > 0 else "buy"
        order = _Draft(
            portfolio=p,
            participant=p.owner,
            symbol=sym,
            side=side,
            order_type="market",
            quantity=abs(pos.quantity),
            limit_price=None,
            created_at=dt.datetime.combine(m.days[di], CLOSING_BELL),
        )
        m.add(order)
        m.trade(
            order,
            order.quantity,
            bar.close,
            order.created_at,
            we_are_maker=False,
            counterparty=rng.choice(PARTICIPANTS),
        )
    p.status = "closed"
    p.status_reason = rng.choice(["closed at the owner's request", "account transferred out"])


# ------------------------------------------------------------------ the book
def _book(m: _Market) -> None:
    """Today's resting orders: participants' ladders, then some portfolios' own orders."""
    rng = m.ctx.rng
    sessions = _sessions(m)
    today, today_minutes = sessions[-1]
    ladders: dict[str, tuple[Decimal, Decimal, Decimal]] = {}
    for sym, ins in sorted(m.instruments.items()):
        last = ins.last_price
        tick = max(CENT, (last * Decimal(str(rng.uniform(0.0004, 0.0015)))).quantize(CENT))
        spread = max(CENT, (last * Decimal(str(rng.uniform(0.0002, 0.0012)))).quantize(CENT))
        best_bid = max(CENT, last - (spread * Decimal(str(rng.uniform(0.2, 0.8)))).quantize(CENT))
        best_ask = max(best_bid + spread, last)
        if best_ask == best_bid:
            best_ask += CENT
        ladders[sym] = (best_bid, best_ask, tick)
        low, high = price_band(ins.prev_close)
        small = last < 20
        for side, start, step in (("buy", best_bid, -tick), ("sell", best_ask, tick)):
            for level in range(rng.randint(6, 10)):
                price = start + level * step
                if not low <= price <= high:
                    break
                for _ in range(rng.choice([1, 1, 2, 2, 3])):
                    qty = rng.choice(LOT_SIZES) * (5 if small else 1)
                    if rng.random() < 0.15:
                        qty = rng.randint(5, 99)
                    m.add(
                        _Draft(
                            portfolio=None,
                            participant=rng.choice(PARTICIPANTS),
                            symbol=sym,
                            side=side,
                            order_type="limit",
                            quantity=qty,
                            limit_price=price,
                            # _during over the last session alone, inlined
                            created_at=today + MINUTE * rng.randrange(today_minutes),
                        )
                    )
    marks = {s: i.last_price for s, i in m.instruments.items()}
    for p in m.portfolios:
        if p.status != "active" or rng.random() < 0.55:
            continue
        for _ in range(rng.choice([1, 1, 2])):
            _resting(m, p, marks, ladders, sessions)


def _resting(
    m: _Market,
    p: _Portfolio,
    marks: dict[str, Decimal],
    ladders: dict[str, tuple[Decimal, Decimal, Decimal]],
    sessions: list[tuple[dt.datetime, int]],
) -> None:
    """One good-till-cancelled limit order of ``p`` resting away from (or at) the touch."""
    rng, now = m.ctx.rng, m.ctx.now
    tradable = m.tradable
    # committed shares are never negative: only a long position can have shares to offer
    held = [
        s for s in tradable if (q := _quantity(m, p, s)) > 0 and q - _committed(m, p, s, "sell") > 0
    ]
    created = _during(rng, sessions)
    if held and rng.random() < 0.45:
        sym = rng.choice(held)
        bid, ask, tick = ladders[sym]
        available = _quantity(m, p, sym) - _committed(m, p, sym, "sell")
        price = ask + tick * rng.randint(0, 5)
        if price > price_band(m.instruments[sym].prev_close)[1]:
            return
        qty = rng.choice([available, max(1, available // 2)])
        m.add(_Draft(p, p.owner, sym, "sell", "limit", qty, price, created, updated_at=created))
        return
    sym = rng.choice(tradable)
    bid, ask, tick = ladders[sym]
    price = bid - tick * rng.choice([0, 0, 1, 2, 3, 5])
    if price < price_band(m.instruments[sym].prev_close)[0]:
        return
    closing = max(0, -_quantity(m, p, sym) - _committed(m, p, sym, "buy"))
    budget = m.power(p, marks) * Decimal(str(rng.uniform(0.05, 0.25)))
    qty = closing + int(budget / price)
    if qty < 1:
        return
    order = _Draft(p, p.owner, sym, "buy", "limit", qty, price, created, updated_at=created)
    order.reserve_quantity = qty - min(qty, closing)
    m.add(order)
    if price >= bid - tick and qty > 1 and rng.random() < 0.6:
        # partly filled earlier: a participant's market sell reached it at the best bid
        end = min(_close(created), now)
        waited = int((end - created).total_seconds() // 60)
        fill_at = created + dt.timedelta(minutes=rng.randint(0, max(0, waited - 1)))
        part = rng.randint(1, qty - 1)
        m.trade(
            order, part, price, fill_at, we_are_maker=True, counterparty=rng.choice(PARTICIPANTS)
        )


def _quantity(m: _Market, p: _Portfolio, sym: str) -> int:
    pos = m.positions.get((p.id, sym))
    return pos.quantity if pos is not None else 0


def _committed(m: _Market, p: _Portfolio, sym: str, side: str) -> int:
    """Shares of ``sym`` that ``p`` already offers in open orders on ``side``."""
    return sum(
        d.quantity - d.filled_quantity
        for d in m.orders_of.get(p.id, [])
        if d.symbol == sym and d.side == side and d.status in ("open", "partially_filled")
    )


# ------------------------------------------------------------------ numbering
def _number(m: _Market) -> None:
    """Ids and time priority in the order things happened; then every row is inserted."""
    # a stable sort: orders created at the same time keep the order they were drawn in
    orders = sorted(m.orders, key=attrgetter("created_at"))
    for seq, d in enumerate(orders, start=1):
        d.id = f"ord_{seq:05d}"
        d.seq = seq
        if d.filled_quantity == d.quantity:
            d.status = "filled"
        if d.updated_at is None:
            d.updated_at = d.created_at
    trades = sorted(m.trades, key=attrgetter("at"))
    # the tables in the order ctx.insert writes mapped objects (parents first)
    m.ctx.insert(m.instruments.values(), into=Instrument)
    m.ctx.insert(m.portfolios, into=Portfolio)
    m.ctx.insert([b for sym in sorted(m.bars) for b in m.bars[sym]], into=Bar)
    m.ctx.insert(orders, into=Order)
    m.ctx.insert([pos for _, pos in sorted(m.positions.items())], into=Position)
    m.ctx.insert(
        [
            {
                "id": f"trd_{n:05d}",
                "symbol": t.buy.symbol,
                "buy_order_id": t.buy.id,
                "sell_order_id": t.sell.id,
                "price": t.price,
                "quantity": t.quantity,
                "aggressor": t.aggressor,
                "executed_at": t.at,
            }
            for n, t in enumerate(trades, start=1)
        ],
        into=Trade,
    )
