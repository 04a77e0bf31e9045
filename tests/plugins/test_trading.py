"""The trading server: the book's and the books' rules under random orders, each rule on its
own, its tasks, and the conformance suite."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from pydantic import TypeAdapter

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.server import Bound, ToolResult
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import rows

TRADING = prove_gym.get_server("trading")
SEEDS = [0, 3, 11]
WRITES = {"place_limit_order", "place_market_order", "replace_order", "cancel_order"}


def column(session: Session, sql: str, *params: Any) -> list[Any]:
    return [r[0] for r in rows(session, sql, *params)]


def cents(value: str | Decimal) -> int:
    return int(Decimal(value) * 100)


def rule_violations(session: Session) -> list[str]:
    """Every broken trading rule, read straight from SQLite (money in cents)."""
    broken: list[str] = []

    def check(what: str, sql: str) -> None:
        found = rows(session, sql)
        if found:
            broken.append(f"{what}: {found[:5]}")

    # Cash and positions are the sum of fills (plus the opening deposit). A fill is one leg
    # of a trade: the buy order's (+shares, -cash) and the sell order's (-shares, +cash).
    fills = """WITH legs AS (
                   SELECT buy_order_id AS order_id, quantity AS shares,
                          -price * quantity AS cash FROM trades
                   UNION ALL
                   SELECT sell_order_id, -quantity, price * quantity FROM trades),
               fills AS (
                   SELECT o.portfolio_id, o.symbol, SUM(l.shares) AS shares,
                          SUM(l.cash) AS cash
                   FROM legs l JOIN orders o ON o.id = l.order_id
                   WHERE o.portfolio_id IS NOT NULL GROUP BY o.portfolio_id, o.symbol)"""
    check(
        "cash differs from the opening deposit plus the value of its trades",
        fills
        + """ SELECT p.id, p.cash, p.opening_cash + COALESCE(SUM(f.cash), 0)
              FROM portfolios p LEFT JOIN fills f ON f.portfolio_id = p.id
              GROUP BY p.id HAVING p.cash != p.opening_cash + COALESCE(SUM(f.cash), 0)""",
    )
    check(
        "a position differs from the shares its trades bought less those they sold",
        fills
        + """ SELECT f.portfolio_id, f.symbol, COALESCE(pos.quantity, 0), f.shares FROM fills f
              LEFT JOIN positions pos
                ON pos.portfolio_id = f.portfolio_id AND pos.symbol = f.symbol
              WHERE COALESCE(pos.quantity, 0) != f.shares
              UNION ALL
              SELECT pos.portfolio_id, pos.symbol, pos.quantity, 0 FROM positions pos
              LEFT JOIN fills f ON f.portfolio_id = pos.portfolio_id AND f.symbol = pos.symbol
              WHERE pos.quantity != 0 AND f.symbol IS NULL""",
    )
    check(
        "cash + cost basis - realized P&L differs from the opening deposit",
        """SELECT p.id FROM portfolios p LEFT JOIN positions pos ON pos.portfolio_id = p.id
           GROUP BY p.id HAVING p.cash + COALESCE(SUM(pos.cost_basis), 0)
                  - COALESCE(SUM(pos.realized_pnl), 0) != p.opening_cash""",
    )
    check(
        "a flat position keeps a cost basis",
        "SELECT portfolio_id, symbol FROM positions WHERE quantity = 0 AND cost_basis != 0",
    )
    check(
        "a position's cost basis has the wrong sign",
        """SELECT portfolio_id, symbol FROM positions
           WHERE (quantity > 0 AND cost_basis <= 0) OR (quantity < 0 AND cost_basis >= 0)""",
    )
    # Orders agree with their trades and their status.
    check(
        "filled quantity or value differs from the order's trades",
        """WITH legs AS (
               SELECT buy_order_id AS order_id, quantity, price FROM trades
               UNION ALL SELECT sell_order_id, quantity, price FROM trades),
           done AS (SELECT order_id, SUM(quantity) AS shares, SUM(quantity * price) AS value
                    FROM legs GROUP BY order_id)
           SELECT o.id, o.filled_quantity, d.shares FROM orders o
           LEFT JOIN done d ON d.order_id = o.id
           WHERE o.filled_quantity != COALESCE(d.shares, 0)
              OR o.filled_value != COALESCE(d.value, 0)""",
    )
    check(
        "filled is negative or more than the quantity",
        "SELECT id FROM orders WHERE filled_quantity < 0 OR filled_quantity > quantity",
    )
    check(
        "status disagrees with the fills",
        """SELECT id, status, filled_quantity, quantity FROM orders WHERE
              (status = 'filled' AND filled_quantity != quantity)
           OR (status = 'open' AND filled_quantity != 0)
           OR (status = 'partially_filled' AND NOT (0 < filled_quantity
                                                    AND filled_quantity < quantity))
           OR (status = 'cancelled' AND filled_quantity = quantity)
           OR status NOT IN ('open', 'partially_filled', 'filled', 'cancelled')""",
    )
    check(
        "a market order rests, or a limit order has no price",
        """SELECT id FROM orders WHERE
              (order_type = 'market' AND (status IN ('open', 'partially_filled')
                                          OR limit_price IS NOT NULL))
           OR (order_type = 'limit' AND limit_price IS NULL)""",
    )
    check(
        "a resting order holds buying power for more shares than it has left",
        "SELECT id FROM orders WHERE reserve_quantity < 0 OR reserve_quantity > quantity",
    )
    # Trades respect sides, symbols and the limits of orders that were never changed (other
    # participants' orders; a portfolio's order may have traded before replace_order moved
    # its price); the maker's price is the trade's price; no portfolio trades with itself.
    check(
        "a trade breaks an order's limit, side or symbol, or is a self-trade",
        """SELECT t.id FROM trades t
           JOIN orders b ON b.id = t.buy_order_id JOIN orders s ON s.id = t.sell_order_id
           WHERE b.side != 'buy' OR s.side != 'sell' OR b.symbol != t.symbol
              OR s.symbol != t.symbol OR t.quantity <= 0
              OR (b.portfolio_id IS NULL AND b.limit_price IS NOT NULL
                  AND t.price > b.limit_price)
              OR (s.portfolio_id IS NULL AND s.limit_price IS NOT NULL
                  AND t.price < s.limit_price)
              OR (t.aggressor = 'buy' AND s.portfolio_id IS NULL AND t.price != s.limit_price)
              OR (t.aggressor = 'sell' AND b.portfolio_id IS NULL AND t.price != b.limit_price)
              OR (b.portfolio_id IS NOT NULL AND b.portfolio_id = s.portfolio_id)""",
    )
    # Short selling only where allowed; cash portfolios never borrow.
    check(
        "a cash portfolio is short",
        """SELECT pos.portfolio_id, pos.symbol FROM positions pos
           JOIN portfolios p ON p.id = pos.portfolio_id
           WHERE p.kind = 'cash' AND pos.quantity < 0""",
    )
    check(
        "a hard-to-borrow instrument is held short",
        """SELECT pos.portfolio_id, pos.symbol FROM positions pos
           JOIN instruments i ON i.symbol = pos.symbol
           WHERE i.shortable = 0 AND pos.quantity < 0""",
    )
    check(
        "a cash portfolio's open orders hold more than its cash",
        """SELECT p.id, p.cash, COALESCE(SUM(MIN(o.quantity - o.filled_quantity,
                  o.reserve_quantity) * o.limit_price), 0)
           FROM portfolios p LEFT JOIN orders o ON o.portfolio_id = p.id
             AND o.status IN ('open', 'partially_filled')
           WHERE p.kind = 'cash' GROUP BY p.id
           HAVING p.cash < COALESCE(SUM(MIN(o.quantity - o.filled_quantity,
                  o.reserve_quantity) * o.limit_price), 0)""",
    )
    check(
        "a portfolio offers more shares for sale than a cash portfolio holds",
        """SELECT o.portfolio_id, o.symbol FROM orders o
           JOIN portfolios p ON p.id = o.portfolio_id
           LEFT JOIN positions pos ON pos.portfolio_id = o.portfolio_id AND pos.symbol = o.symbol
           WHERE p.kind = 'cash' AND o.side = 'sell' AND o.status IN ('open', 'partially_filled')
           GROUP BY o.portfolio_id, o.symbol
           HAVING SUM(o.quantity - o.filled_quantity) > COALESCE(MAX(pos.quantity), 0)""",
    )
    # An idempotency key (from prove/trading-v3) names one order, of its own portfolio; an
    # order's participant is its portfolio's owner (the key is never kept in it).
    check(
        "a client_order_id names no order of its portfolio",
        """SELECT k.portfolio_id, k.client_order_id FROM client_order_ids k
           LEFT JOIN orders o ON o.id = k.order_id
           WHERE o.id IS NULL OR o.portfolio_id IS NOT k.portfolio_id""",
    )
    check(
        "a portfolio's order names another participant than the portfolio's owner",
        """SELECT o.id, o.participant FROM orders o JOIN portfolios p ON p.id = o.portfolio_id
           WHERE o.participant != p.owner""",
    )
    # The book is never crossed.
    check(
        "the book is crossed (best bid >= best ask)",
        """SELECT symbol FROM orders WHERE status IN ('open', 'partially_filled')
           GROUP BY symbol HAVING MAX(CASE WHEN side = 'buy' THEN limit_price END)
                               >= MIN(CASE WHEN side = 'sell' THEN limit_price END)""",
    )
    return broken


# ----------------------------------------------------------------- helpers
def ok(session: Session, name: str, args: dict[str, Any]) -> Any:
    result = session.call(name, args)
    assert result.ok, f"{name}({args}): {result.message}"
    return result.content


def refused(session: Session, name: str, args: dict[str, Any], rule: str) -> str:
    """The call fails naming ``rule`` and changes nothing; returns the message."""
    before = session.state_hash()
    result = session.call(name, args)
    assert result.error_kind == ErrorKind.PRECONDITION_FAILED, (name, args, result)
    assert result.message and result.message.startswith(f"Rule '{rule}' failed:"), result.message
    assert session.state_hash() == before
    return result.message


def price(session: Session, sql: str, *params: Any) -> Decimal:
    return Decimal(rows(session, sql, *params)[0][0]).scaleb(-2).quantize(Decimal("0.01"))


def book(session: Session, symbol: str, side: str) -> list[tuple[str, int, Decimal]]:
    """Resting orders of one side in matching order: (id, remaining, limit price)."""
    order = "DESC" if side == "buy" else "ASC"
    return [
        (oid, rest, Decimal(lp).scaleb(-2))
        for oid, rest, lp in rows(
            session,
            f"""SELECT id, quantity - filled_quantity, limit_price FROM orders
                WHERE symbol = ? AND side = ? AND status IN ('open', 'partially_filled')
                ORDER BY limit_price {order}, seq""",
            symbol,
            side,
        )
    ]


def poke(session: Session, sql: str, *params: Any) -> None:
    """Change the state behind the tools' back (test setup only), committed and seen by the ORM."""
    session.raw_connection.execute(sql, params)
    session.raw_connection.commit()
    session.db.expire_all()


def fund(session: Session, portfolio: str, amount: int) -> None:
    """A deposit before the recorded history (keeps every invariant): test setup only."""
    poke(
        session,
        "UPDATE portfolios SET cash = cash + ?, opening_cash = opening_cash + ? WHERE id = ?",
        amount * 100,
        amount * 100,
        portfolio,
    )


def tradable(session: Session, *, shortable: bool | None = None, spread: str = "0.01") -> list[str]:
    """Open symbols with resting orders on both sides at least ``spread`` apart, cheapest first."""
    extra = "" if shortable is None else f" AND shortable = {int(shortable)}"
    symbols = column(
        session,
        f"""SELECT symbol FROM instruments WHERE halted = 0{extra} AND symbol IN (
               SELECT symbol FROM orders WHERE status IN ('open', 'partially_filled')
               GROUP BY symbol HAVING COUNT(DISTINCT side) = 2) ORDER BY last_price, symbol""",
    )
    return [
        s
        for s in symbols
        if book(session, s, "sell")[0][2] - book(session, s, "buy")[0][2] >= Decimal(spread)
    ]


def portfolio_of(session: Session, kind: str, status: str = "active") -> str:
    """A portfolio of that kind and status without open orders (so nothing self-trades)."""
    return column(
        session,
        """SELECT id FROM portfolios WHERE kind = ? AND status = ? AND id NOT IN (
               SELECT portfolio_id FROM orders WHERE portfolio_id IS NOT NULL
               AND status IN ('open', 'partially_filled')) ORDER BY id""",
        kind,
        status,
    )[0]


def holding(session: Session, kind: str, status: str = "active") -> tuple[str, str, int]:
    """(portfolio, symbol, shares) of a long position in a tradable symbol, none offered."""
    found = rows(
        session,
        """SELECT pos.portfolio_id, pos.symbol, pos.quantity FROM positions pos
           JOIN portfolios p ON p.id = pos.portfolio_id
           JOIN instruments i ON i.symbol = pos.symbol
           WHERE p.kind = ? AND p.status = ? AND pos.quantity > 1 AND i.halted = 0
             AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.portfolio_id = p.id
                 AND o.status IN ('open', 'partially_filled'))
           ORDER BY pos.portfolio_id, pos.symbol""",
        kind,
        status,
    )
    return found[0]


@pytest.fixture
def market() -> Any:
    with TRADING.session(seed=0) as session:
        yield session


# ------------------------------------------------------------ the book
def test_a_crossing_limit_order_fills_by_price_then_time_and_rests_the_rest(
    market: Session,
) -> None:
    symbol = tradable(market)[0]
    asks = book(market, symbol, "sell")
    through = asks[2][2]  # reach the third resting order's price
    reachable = [a for a in asks if a[2] <= through]
    want = sum(r for _, r, _ in reachable) + 7
    pf = portfolio_of(market, "cash")
    fund(market, pf, int(want * through) + 1000)
    before = ok(market, "get_portfolio", {"portfolio_id": pf})
    done = ok(
        market,
        "place_limit_order",
        {
            "portfolio_id": pf,
            "symbol": symbol,
            "side": "buy",
            "quantity": want,
            "limit_price": str(through),
        },
    )
    got = [(t["quantity"], Decimal(t["price"])) for t in done["trades"]]
    assert got == [(r, p) for _, r, p in reachable]  # best price first, then arrival order
    assert all(t["liquidity"] == "taker" for t in done["trades"])
    assert done["status"] == "partially_filled" and done["remaining_quantity"] == 7
    assert Decimal(done["held_buying_power"]) == 7 * through
    paid = sum(q * p for q, p in got)
    assert Decimal(done["cash"]) == Decimal(before["cash"]) - paid
    quote = ok(market, "get_quote", {"symbol": symbol.lower()})
    assert (Decimal(quote["bid"]), quote["bid_size"]) == (through, 7)
    assert Decimal(quote["ask"]) > through and Decimal(quote["last_price"]) == through
    for oid, _, _ in reachable:
        assert column(market, "SELECT status FROM orders WHERE id = ?", oid) == ["filled"]
    assert not rule_violations(market)


def test_a_partial_fill_takes_the_oldest_order_at_the_best_price(market: Session) -> None:
    for symbol in tradable(market):
        asks = book(market, symbol, "sell")
        if asks[0][2] == asks[1][2]:
            break
    else:
        pytest.skip("no best ask with two orders in this state")
    first, second = asks[0], asks[1]
    pf = portfolio_of(market, "margin")
    done = ok(
        market,
        "place_market_order",
        {"portfolio_id": pf, "symbol": symbol, "side": "buy", "quantity": first[1] + 1},
    )
    assert [t["quantity"] for t in done["trades"]] == [first[1], 1]
    left = rows(market, "SELECT status, filled_quantity FROM orders WHERE id = ?", second[0])
    assert left == [("partially_filled", 1)]
    assert book(market, symbol, "sell")[0] == (second[0], second[1] - 1, second[2])


def test_market_orders_never_rest_and_need_liquidity(market: Session) -> None:
    symbol = tradable(market)[0]
    asks = book(market, symbol, "sell")
    for oid, _, _ in asks[2:]:  # a thin book: two resting asks left
        poke(
            market,
            "UPDATE orders SET status = 'cancelled' WHERE id = ? AND filled_quantity = 0",
            oid,
        )
    asks = book(market, symbol, "sell")
    available = sum(r for _, r, _ in asks)
    pf = portfolio_of(market, "cash")
    fund(market, pf, int(available * asks[-1][2]) * 2)
    done = ok(
        market,
        "place_market_order",
        {"portfolio_id": pf, "symbol": symbol, "side": "buy", "quantity": available + 50},
    )
    assert done["status"] == "cancelled" and done["filled_quantity"] == available
    assert done["remaining_quantity"] == 0 and "remainder" in done["cancel_reason"]
    assert done["held_buying_power"] == "0.00" and book(market, symbol, "sell") == []
    message = refused(
        market,
        "place_market_order",
        {"portfolio_id": pf, "symbol": symbol, "side": "buy", "quantity": 1},
        "no_liquidity",
    )
    assert "place_limit_order" in message
    assert not rule_violations(market)


def test_a_resting_order_fills_when_another_portfolio_trades_into_it(market: Session) -> None:
    symbol = tradable(market, spread="0.03")[0]
    bid = book(market, symbol, "buy")[0][2]
    ask = book(market, symbol, "sell")[0][2]
    better = bid + Decimal("0.01")
    assert better < ask
    buyer = portfolio_of(market, "cash")
    fund(market, buyer, 10_000)
    resting = ok(
        market,
        "place_limit_order",
        {
            "portfolio_id": buyer,
            "symbol": symbol,
            "side": "buy",
            "quantity": 10,
            "limit_price": str(better),
        },
    )
    assert resting["status"] == "open" and resting["trades"] == []
    seller = portfolio_of(market, "margin")
    sold = ok(
        market,
        "place_market_order",
        {"portfolio_id": seller, "symbol": symbol, "side": "sell", "quantity": 4},
    )
    assert [(t["quantity"], t["price"]) for t in sold["trades"]] == [(4, str(better))]
    mine = ok(market, "get_order", {"order_id": resting["order_id"]})
    assert mine["status"] == "partially_filled" and mine["filled_quantity"] == 4
    assert mine["trades"][0]["liquidity"] == "maker"
    assert Decimal(mine["held_buying_power"]) == 6 * better
    trades = ok(market, "list_trades", {"portfolio_id": buyer, "symbol": symbol})["trades"]
    assert trades[0]["trade_id"] == sold["trades"][0]["trade_id"] and trades[0]["side"] == "buy"
    assert not rule_violations(market)


def test_quote_and_book_show_the_same_best_prices(market: Session) -> None:
    for symbol in tradable(market)[:5]:
        quote = ok(market, "get_quote", {"symbol": symbol})
        depth = ok(market, "get_order_book", {"symbol": symbol, "depth": 3})
        assert (quote["bid"], quote["bid_size"]) == (
            depth["bids"][0]["price"],
            depth["bids"][0]["quantity"],
        )
        assert quote["ask"] == depth["asks"][0]["price"] and len(depth["asks"]) <= 3
        bids = [Decimal(level["price"]) for level in depth["bids"]]
        asks = [Decimal(level["price"]) for level in depth["asks"]]
        assert bids == sorted(bids, reverse=True) and asks == sorted(asks) and bids[0] < asks[0]
        assert Decimal(depth["spread"]) == asks[0] - bids[0]


def test_daily_bars_are_past_weekdays_oldest_first(market: Session) -> None:
    bars = ok(market, "get_daily_bars", {"symbol": tradable(market)[0], "days": 30})
    days = [b["date"] for b in bars["bars"]]
    assert len(days) == 30 and days == sorted(days) and days[-1] < market.now.date().isoformat()
    for b in bars["bars"]:
        high, low = Decimal(b["high"]), Decimal(b["low"])
        assert low <= min(Decimal(b["open"]), Decimal(b["close"])) <= high
    assert Decimal(bars["period_high"]) == max(Decimal(b["high"]) for b in bars["bars"])


def test_prices_come_back_to_the_cent_and_symbols_match_in_any_case(market: Session) -> None:
    symbol = tradable(market)[0]
    low = book(market, symbol, "buy")[-1][2]
    placed = ok(
        market,
        "place_limit_order",
        {
            "portfolio_id": portfolio_of(market, "margin"),
            "symbol": f" {symbol.lower()} ",
            "side": "buy",
            "quantity": 2,
            "limit_price": float(low),
        },
    )
    assert (placed["symbol"], placed["limit_price"]) == (symbol, str(low))
    assert placed["held_buying_power"] == str(2 * low)
    empty = market.call("find_portfolios", {"query": "  "})
    assert empty.error_kind == ErrorKind.BAD_ARGUMENTS
    missing = market.call("get_quote", {"symbol": "ZZZZ"})
    assert missing.error_kind == ErrorKind.NOT_FOUND and "search_instruments" in missing.message


# ------------------------------------------------------------ buying power
def test_buying_power_is_checked_named_and_held_by_resting_orders(market: Session) -> None:
    pf = portfolio_of(market, "cash")
    symbol = tradable(market)[-1]
    limit = book(market, symbol, "buy")[-1][2]  # rests: below the best ask
    power = Decimal(ok(market, "get_portfolio", {"portfolio_id": pf})["buying_power"])
    most = int(power // limit)
    assert most >= 1
    args = {"portfolio_id": pf, "symbol": symbol, "side": "buy", "limit_price": str(limit)}
    message = refused(market, "place_limit_order", {**args, "quantity": most + 1}, "buying_power")
    assert f"at most {most} shares" in message and str(power) in message
    placed = ok(market, "place_limit_order", {**args, "quantity": most})
    assert placed["status"] == "open"
    after = ok(market, "get_portfolio", {"portfolio_id": pf})
    assert Decimal(after["held_for_orders"]) == most * limit
    assert Decimal(after["buying_power"]) == power - most * limit
    refused(market, "place_limit_order", {**args, "quantity": most + 1}, "buying_power")
    cancelled = ok(market, "cancel_order", {"order_id": placed["order_id"]})
    assert Decimal(cancelled["released_buying_power"]) == most * limit
    assert Decimal(ok(market, "get_portfolio", {"portfolio_id": pf})["buying_power"]) == power


def test_margin_buying_power_is_twice_equity_less_positions(market: Session) -> None:
    pf = portfolio_of(market, "margin")
    view = ok(market, "get_portfolio", {"portfolio_id": pf})
    gross = Decimal(view["long_value"]) + Decimal(view["short_value"])
    expected = 2 * Decimal(view["equity"]) - gross - Decimal(view["held_for_orders"])
    assert Decimal(view["buying_power"]) == max(expected, Decimal("0.00"))


# ------------------------------------------------------------ selling and shorting
def test_cash_portfolios_sell_only_shares_they_hold_and_have_not_offered(
    market: Session,
) -> None:
    pf, symbol, shares = holding(market, "cash")
    high = price(market, "SELECT prev_close FROM instruments WHERE symbol = ?", symbol)
    args = {"portfolio_id": pf, "symbol": symbol, "side": "sell"}
    message = refused(
        market, "place_market_order", {**args, "quantity": shares + 1}, "sellable_shares"
    )
    assert f"at most {shares}" in message
    resting = ok(
        market,
        "place_limit_order",
        {
            **args,
            "quantity": shares - 1,
            "limit_price": str((high * Decimal("1.19")).quantize(Decimal("0.01"))),
        },
    )
    assert resting["status"] == "open" and resting["held_buying_power"] == "0.00"
    view = ok(market, "get_portfolio", {"portfolio_id": pf})
    assert [p["available_to_sell"] for p in view["positions"] if p["symbol"] == symbol] == [1]
    message = refused(market, "place_market_order", {**args, "quantity": 2}, "sellable_shares")
    assert "already offered" in message and "cancel" in message
    ok(market, "place_market_order", {**args, "quantity": 1})
    ok(market, "cancel_order", {"order_id": resting["order_id"]})
    ok(market, "place_market_order", {**args, "quantity": shares - 1})
    assert rows(
        market,
        "SELECT quantity, cost_basis FROM positions WHERE portfolio_id = ? AND symbol = ?",
        pf,
        symbol,
    ) == [(0, 0)]
    assert not rule_violations(market)


def test_only_margin_portfolios_short_and_only_borrowable_names(market: Session) -> None:
    easy = tradable(market, shortable=True)[0]
    hard = tradable(market, shortable=False)[0]
    margin, cash = portfolio_of(market, "margin"), portfolio_of(market, "cash")
    refused(
        market,
        "place_market_order",
        {"portfolio_id": cash, "symbol": easy, "side": "sell", "quantity": 1},
        "sellable_shares",
    )
    refused(
        market,
        "place_market_order",
        {"portfolio_id": margin, "symbol": hard, "side": "sell", "quantity": 1},
        "not_shortable",
    )
    before = Decimal(ok(market, "get_portfolio", {"portfolio_id": margin})["cash"])
    held = column(
        market, "SELECT quantity FROM positions WHERE portfolio_id = ? AND symbol = ?", margin, easy
    )
    sold = ok(
        market,
        "place_market_order",
        {"portfolio_id": margin, "symbol": easy, "side": "sell", "quantity": 3},
    )
    assert sold["position_quantity"] == (held[0] if held else 0) - 3
    assert Decimal(sold["cash"]) == before + sum(Decimal(t["value"]) for t in sold["trades"])
    assert not rule_violations(market)


def test_a_short_sale_needs_buying_power_but_buying_it_back_does_not(market: Session) -> None:
    symbol = tradable(market, shortable=True)[0]
    pf = portfolio_of(market, "margin")
    ok(
        market,
        "place_market_order",
        {"portfolio_id": pf, "symbol": symbol, "side": "sell", "quantity": 5},
    )
    short = column(
        market, "SELECT quantity FROM positions WHERE portfolio_id = ? AND symbol = ?", pf, symbol
    )[0]
    assert short == -5
    # a huge short is refused by buying power, and the message says how much would fit
    message = refused(
        market,
        "place_market_order",
        {"portfolio_id": pf, "symbol": symbol, "side": "sell", "quantity": 100_000},
        "buying_power",
    )
    assert "sell short" in message
    # with no buying power left at all, buying back the short is still allowed
    fund(market, pf, -10_000_000)
    assert ok(market, "get_portfolio", {"portfolio_id": pf})["buying_power"] == "0.00"
    args = {"portfolio_id": pf, "symbol": symbol, "side": "buy"}
    refused(market, "place_market_order", {**args, "quantity": -short + 1}, "buying_power")
    back = ok(market, "place_market_order", {**args, "quantity": -short})
    assert back["position_quantity"] == 0
    assert not rule_violations(market)


# ------------------------------------------------------------ account and market states
def test_restricted_portfolios_may_only_close_positions(market: Session) -> None:
    pf = column(market, "SELECT id FROM portfolios WHERE status = 'restricted' ORDER BY id")[0]
    symbol = tradable(market)[0]
    message = refused(
        market,
        "place_market_order",
        {"portfolio_id": pf, "symbol": symbol, "side": "buy", "quantity": 1},
        "closing_only",
    )
    assert "restricted" in message
    if not column(
        market,
        "SELECT symbol FROM positions WHERE portfolio_id = ? AND symbol = ? AND quantity < 0",
        pf,
        symbol,
    ):  # nothing to buy back: no "at most 0"
        assert "at most 0" not in message and f"cannot buy {symbol} now" in message
    longs = rows(
        market,
        """SELECT pos.symbol, pos.quantity FROM positions pos
                            JOIN instruments i ON i.symbol = pos.symbol
                            WHERE portfolio_id = ? AND quantity > 0 AND i.halted = 0
                            ORDER BY pos.symbol""",
        pf,
    )
    if longs:
        sym, shares = longs[0]
        refused(
            market,
            "place_market_order",
            {"portfolio_id": pf, "symbol": sym, "side": "sell", "quantity": shares + 1},
            "closing_only",
        )
        ok(
            market,
            "place_market_order",
            {"portfolio_id": pf, "symbol": sym, "side": "sell", "quantity": shares},
        )


def test_closed_portfolios_and_halted_instruments_take_no_orders(market: Session) -> None:
    closed = column(market, "SELECT id FROM portfolios WHERE status = 'closed' ORDER BY id")[0]
    halted = column(market, "SELECT symbol FROM instruments WHERE halted = 1 ORDER BY symbol")[0]
    symbol = tradable(market)[0]
    refused(
        market,
        "place_market_order",
        {"portfolio_id": closed, "symbol": symbol, "side": "buy", "quantity": 1},
        "portfolio_closed",
    )
    pf = portfolio_of(market, "margin")
    message = refused(
        market,
        "place_market_order",
        {"portfolio_id": pf, "symbol": halted, "side": "buy", "quantity": 1},
        "trading_halted",
    )
    assert "cancel" in message
    # an order resting when the halt began can still be cancelled, but not changed
    bid = book(market, symbol, "buy")[-1][2]
    placed = ok(
        market,
        "place_limit_order",
        {
            "portfolio_id": pf,
            "symbol": symbol,
            "side": "buy",
            "quantity": 1,
            "limit_price": str(bid),
        },
    )
    poke(market, "UPDATE instruments SET halted = 1 WHERE symbol = ?", symbol)
    refused(
        market,
        "replace_order",
        {"order_id": placed["order_id"], "quantity": 2, "limit_price": str(bid)},
        "trading_halted",
    )
    assert ok(market, "cancel_order", {"order_id": placed["order_id"]})["status"] == "cancelled"


def test_limit_prices_stay_in_the_daily_band(market: Session) -> None:
    symbol = tradable(market)[0]
    quote = ok(market, "get_quote", {"symbol": symbol})
    low, high = Decimal(quote["price_band_low"]), Decimal(quote["price_band_high"])
    pf = portfolio_of(market, "margin")
    args = {"portfolio_id": pf, "symbol": symbol, "side": "buy", "quantity": 1}
    message = refused(
        market,
        "place_limit_order",
        {**args, "limit_price": str(low - Decimal("0.01"))},
        "price_band",
    )
    assert str(low) in message and str(high) in message
    assert ok(market, "place_limit_order", {**args, "limit_price": str(low)})["status"] == "open"
    bad = market.call("place_limit_order", {**args, "limit_price": "12.345"})
    assert bad.error_kind == ErrorKind.BAD_ARGUMENTS


def test_an_order_never_trades_against_its_own_portfolio(market: Session) -> None:
    symbol = tradable(market, shortable=True, spread="0.03")[0]
    pf = portfolio_of(market, "margin")
    ask = book(market, symbol, "sell")[0][2]
    bid = book(market, symbol, "buy")[0][2]
    mine = ok(
        market,
        "place_limit_order",
        {
            "portfolio_id": pf,
            "symbol": symbol,
            "side": "sell",
            "quantity": 2,
            "limit_price": str(ask - Decimal("0.01")),
        },
    )
    assert mine["status"] == "open" and ask - Decimal("0.01") > bid
    message = refused(
        market,
        "place_market_order",
        {"portfolio_id": pf, "symbol": symbol, "side": "buy", "quantity": 1},
        "no_self_trade",
    )
    assert mine["order_id"] in message
    other = portfolio_of(market, "cash")
    fund(market, other, 5_000)
    took = ok(
        market,
        "place_market_order",
        {"portfolio_id": other, "symbol": symbol, "side": "buy", "quantity": 1},
    )
    assert took["trades"][0]["price"] == str(ask - Decimal("0.01"))


# ------------------------------------------------------------ changing and cancelling
def test_replace_keeps_time_priority_only_when_reducing_at_the_same_price(
    market: Session,
) -> None:
    symbol = tradable(market, spread="0.03")[0]
    better = book(market, symbol, "buy")[0][2] + Decimal("0.01")
    a, b = column(
        market,
        """SELECT id FROM portfolios WHERE status = 'active' AND id NOT IN (
                                 SELECT portfolio_id FROM orders WHERE portfolio_id IS NOT NULL
                                 AND status IN ('open', 'partially_filled')) ORDER BY id""",
    )[:2]
    fund(market, a, 10_000)
    fund(market, b, 10_000)
    args = {"symbol": symbol, "side": "buy", "limit_price": str(better)}
    first = ok(market, "place_limit_order", {**args, "portfolio_id": a, "quantity": 10})
    second = ok(market, "place_limit_order", {**args, "portfolio_id": b, "quantity": 10})
    seq = column(market, "SELECT seq FROM orders WHERE id = ?", first["order_id"])
    reduced = ok(
        market,
        "replace_order",
        {"order_id": first["order_id"], "quantity": 6, "limit_price": str(better)},
    )
    assert reduced["quantity"] == 6 and reduced["held_buying_power"] == str(6 * better)
    assert column(market, "SELECT seq FROM orders WHERE id = ?", first["order_id"]) == seq
    assert book(market, symbol, "buy")[0][0] == first["order_id"]
    grown = ok(
        market,
        "replace_order",
        {"order_id": first["order_id"], "quantity": 7, "limit_price": str(better)},
    )
    assert grown["quantity"] == 7
    assert [o for o, _, _ in book(market, symbol, "buy")[:2]] == [
        second["order_id"],
        first["order_id"],
    ]
    seller = portfolio_of(market, "margin")
    ok(
        market,
        "place_market_order",
        {"portfolio_id": seller, "symbol": symbol, "side": "sell", "quantity": 12},
    )
    assert ok(market, "get_order", {"order_id": second["order_id"]})["status"] == "filled"
    assert ok(market, "get_order", {"order_id": first["order_id"]})["filled_quantity"] == 2
    assert not rule_violations(market)


def test_a_replaced_price_that_crosses_trades_at_once(market: Session) -> None:
    symbol = tradable(market)[0]
    ask = book(market, symbol, "sell")[0]
    pf = portfolio_of(market, "margin")
    low = book(market, symbol, "buy")[-1][2]
    placed = ok(
        market,
        "place_limit_order",
        {
            "portfolio_id": pf,
            "symbol": symbol,
            "side": "buy",
            "quantity": 1,
            "limit_price": str(low),
        },
    )
    moved = ok(
        market,
        "replace_order",
        {"order_id": placed["order_id"], "quantity": 1, "limit_price": str(ask[2])},
    )
    assert moved["status"] == "filled" and moved["trades"][0]["price"] == str(ask[2])


def test_changes_and_cancels_need_an_open_order_of_a_portfolio(market: Session) -> None:
    pf = portfolio_of(market, "margin")
    symbol = tradable(market)[0]
    filled = ok(
        market,
        "place_market_order",
        {"portfolio_id": pf, "symbol": symbol, "side": "buy", "quantity": 1},
    )
    refused(market, "cancel_order", {"order_id": filled["order_id"]}, "order_not_open")
    refused(
        market,
        "replace_order",
        {
            "order_id": filled["order_id"],
            "quantity": 5,
            "limit_price": filled["trades"][0]["price"],
        },
        "order_not_open",
    )
    partial = column(
        market,
        """SELECT o.id FROM orders o JOIN portfolios p
                                ON p.id = o.portfolio_id WHERE o.status = 'partially_filled'
                                AND p.status = 'active' ORDER BY o.id""",
    )
    if partial:
        order = ok(market, "get_order", {"order_id": partial[0]})
        message = refused(
            market,
            "replace_order",
            {
                "order_id": partial[0],
                "quantity": order["filled_quantity"],
                "limit_price": order["limit_price"],
            },
            "quantity_above_filled",
        )
        assert "cancel_order" in message
        same = market.call(
            "replace_order",
            {
                "order_id": partial[0],
                "quantity": order["quantity"],
                "limit_price": order["limit_price"],
            },
        )
        assert same.error_kind == ErrorKind.BAD_ARGUMENTS
        done = ok(market, "cancel_order", {"order_id": partial[0]})
        assert done["filled_quantity"] == order["filled_quantity"] and done["status"] == "cancelled"
    theirs = column(market, "SELECT id FROM orders WHERE portfolio_id IS NULL ORDER BY id")[0]
    for name, args in [
        ("get_order", {}),
        ("cancel_order", {}),
        ("replace_order", {"quantity": 5, "limit_price": "10.00"}),
    ]:
        result = market.call(name, {"order_id": theirs, **args})
        # as for an id that does not exist: the answer does not tell that the order exists
        assert result.error_kind == ErrorKind.NOT_FOUND and "list_orders" in result.message
        missing = market.call(name, {"order_id": "ord_99999", **args})
        assert missing.error_kind == ErrorKind.NOT_FOUND


def test_list_orders_filters_by_status_and_symbol_newest_first(market: Session) -> None:
    pf = column(
        market,
        """SELECT portfolio_id FROM orders WHERE portfolio_id IS NOT NULL
                           GROUP BY portfolio_id ORDER BY COUNT(*) DESC, portfolio_id""",
    )[0]
    listed = ok(market, "list_orders", {"portfolio_id": pf, "status": "all", "limit": 100})
    orders = listed["orders"]
    stamps = [(o["created_at"], o["order_id"]) for o in orders]
    assert stamps == sorted(stamps, reverse=True)
    for status in ("open", "filled", "cancelled"):
        some = ok(market, "list_orders", {"portfolio_id": pf, "status": status})["orders"]
        expect = {"open": {"open", "partially_filled"}}.get(status, {status})
        assert all(o["status"] in expect for o in some)
    symbol = orders[0]["symbol"]
    only = ok(
        market, "list_orders", {"portfolio_id": pf, "status": "all", "symbol": symbol.lower()}
    )["orders"]
    assert only and {o["symbol"] for o in only} == {symbol}


# ------------------------------------------------------------ the books
@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["buy", "sell"]), st.integers(1, 500), st.integers(100, 99_999)),
        min_size=1,
        max_size=25,
    )
)
def test_average_cost_books_balance_after_any_fills(fills: list[tuple[str, int, int]]) -> None:
    from prove_plugins.trading.models import Portfolio, Position, apply_fill

    p = Portfolio(cash=Decimal("1000.00"))
    pos = Position(quantity=0, cost_basis=Decimal("0.00"), realized_pnl=Decimal("0.00"))
    shares = 0
    for side, qty, px in fills:
        apply_fill(p, pos, side, qty, Decimal(px).scaleb(-2))
        shares += qty if side == "buy" else -qty
        assert pos.quantity == shares
        assert p.cash + pos.cost_basis - pos.realized_pnl == Decimal("1000.00")
        assert (pos.quantity == 0) == (pos.cost_basis == 0)
        assert pos.quantity * pos.cost_basis >= 0


def test_buying_then_selling_realises_exact_profit(market: Session) -> None:
    symbol = tradable(market)[0]
    pf = portfolio_of(market, "margin")
    start = {p["symbol"]: p for p in ok(market, "get_portfolio", {"portfolio_id": pf})["positions"]}
    assert symbol not in start
    bought = ok(
        market,
        "place_market_order",
        {"portfolio_id": pf, "symbol": symbol, "side": "buy", "quantity": 30},
    )
    sold = ok(
        market,
        "place_market_order",
        {"portfolio_id": pf, "symbol": symbol, "side": "sell", "quantity": 30},
    )
    cost = sum(Decimal(t["value"]) for t in bought["trades"])
    proceeds = sum(Decimal(t["value"]) for t in sold["trades"])
    realized = rows(
        market,
        "SELECT realized_pnl, quantity FROM positions WHERE portfolio_id = ? AND symbol = ?",
        pf,
        symbol,
    )
    assert realized == [(cents(proceeds - cost), 0)]


# ------------------------------------------------------------ random sequences
class TradingRules(RuleBasedStateMachine):
    """Plausible orders, changes and cancels (valid and not); the rules hold after each."""

    session: Session

    @initialize(seed=st.sampled_from(SEEDS))
    def open_session(self, seed: int) -> None:
        self.session = TRADING.session(seed=seed)
        self.portfolios = column(self.session, "SELECT id FROM portfolios ORDER BY id")
        self.symbols = column(self.session, "SELECT symbol FROM instruments ORDER BY symbol")
        self.hash = self.session.state_hash()

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        result = self.session.call(name, args)
        assert result.error_kind != ErrorKind.INTERNAL, result.message
        after = self.session.state_hash()
        if not result.ok:
            assert result.message, f"{name} failed without a message"
            assert after == self.hash, f"failed {name}({args}) changed the state"
        elif name not in WRITES:
            assert after == self.hash, f"read {name} changed the state"
        self.hash = after
        return result

    def near(self, symbol: str, offset: float) -> str:
        last = price(self.session, "SELECT last_price FROM instruments WHERE symbol = ?", symbol)
        return str((last * Decimal(str(1 + offset))).quantize(Decimal("0.01")))

    @rule(
        data=st.data(),
        side=st.sampled_from(["buy", "sell"]),
        quantity=st.sampled_from([1, 3, 10, 40, 150, 700, 5000]),
        offset=st.floats(-0.03, 0.03),
    )
    def limit_order(self, data: st.DataObject, side: str, quantity: int, offset: float) -> None:
        symbol = data.draw(st.sampled_from(self.symbols))
        result = self.call(
            "place_limit_order",
            {
                "portfolio_id": data.draw(st.sampled_from(self.portfolios)),
                "symbol": symbol,
                "side": side,
                "quantity": quantity,
                "limit_price": self.near(symbol, offset),
            },
        )
        if result.ok:
            done = result.content
            assert done["filled_quantity"] + done["remaining_quantity"] == quantity
            assert done["status"] in ("open", "partially_filled", "filled")

    @rule(
        data=st.data(),
        side=st.sampled_from(["buy", "sell"]),
        quantity=st.sampled_from([1, 3, 10, 40, 150, 700, 5000]),
    )
    def market_order(self, data: st.DataObject, side: str, quantity: int) -> None:
        result = self.call(
            "place_market_order",
            {
                "portfolio_id": data.draw(st.sampled_from(self.portfolios)),
                "symbol": data.draw(st.sampled_from(self.symbols)),
                "side": side,
                "quantity": quantity,
            },
        )
        if result.ok:
            assert result.content["status"] in ("filled", "cancelled")
            assert result.content["remaining_quantity"] == 0

    def open_order(self, data: st.DataObject) -> str:
        live = column(
            self.session,
            """SELECT id FROM orders WHERE portfolio_id IS NOT NULL
                                       AND status IN ('open', 'partially_filled') ORDER BY id""",
        )
        other = column(self.session, "SELECT MIN(id) FROM orders WHERE status = 'filled'")
        return data.draw(st.sampled_from(live + other + ["ord_99999"]))

    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        order = self.open_order(data)
        was = rows(self.session, "SELECT status, portfolio_id FROM orders WHERE id = ?", order)
        result = self.call("cancel_order", {"order_id": order})
        cancellable = bool(was) and was[0][0] in ("open", "partially_filled")
        assert result.ok == (cancellable and was[0][1] is not None)

    @rule(data=st.data(), grow=st.integers(-30, 30), offset=st.floats(-0.02, 0.02))
    def replace(self, data: st.DataObject, grow: int, offset: float) -> None:
        order = self.open_order(data)
        found = rows(self.session, "SELECT symbol, quantity FROM orders WHERE id = ?", order)
        symbol, quantity = found[0] if found else (self.symbols[0], 10)
        self.call(
            "replace_order",
            {
                "order_id": order,
                "quantity": max(1, quantity + grow),
                "limit_price": self.near(symbol, offset),
            },
        )

    @rule(data=st.data())
    def read(self, data: st.DataObject) -> None:
        pf = data.draw(st.sampled_from(self.portfolios))
        symbol = data.draw(st.sampled_from(self.symbols))
        view = self.call("get_portfolio", {"portfolio_id": pf}).content
        assert Decimal(view["buying_power"]) >= 0
        self.call("get_order_book", {"symbol": symbol, "depth": 20})
        self.call("list_orders", {"portfolio_id": pf, "status": "all"})

    @invariant()
    def the_rules_hold(self) -> None:
        if hasattr(self, "session"):
            problems = rule_violations(self.session)
            assert not problems, problems

    def teardown(self) -> None:
        if hasattr(self, "session"):
            self.session.close()


TestTradingRules = TradingRules.TestCase
TestTradingRules.settings = settings(
    max_examples=12,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# ------------------------------------------------------------ sampler and grounding
@pytest.mark.parametrize("size", [1, 2, 3])
def test_sizes_give_dozens_to_hundreds_of_entities(size: int) -> None:
    with TRADING.session(seed=1, size=size) as session:
        count = {
            t: rows(session, f"SELECT COUNT(*) FROM {t}")[0][0]
            for t in ("instruments", "portfolios", "orders", "trades", "bars")
        }
        assert 20 <= count["instruments"] <= 40 and 25 * size <= count["portfolios"] <= 40 * size
        assert count["orders"] >= 500 * size and count["trades"] >= 200 * size
        assert not rule_violations(session)
        statuses = set(column(session, "SELECT DISTINCT status FROM portfolios"))
        assert statuses == {"active", "restricted", "closed"}
        assert column(session, "SELECT COUNT(*) FROM instruments WHERE halted = 1")[0] >= 1


def test_entity_records_give_orders_the_rules_allow() -> None:
    for seed in SEEDS:
        with TRADING.session(seed=seed) as session:
            limits = {r["symbol"]: r["limit_price"] for r in session.list_entities("instrument")}
            assert limits
            records = session.list_entities("portfolio")
            assert len(records) >= 10
            for record in records:
                for side in ("buy", "sell"):
                    args = {
                        "portfolio_id": record["portfolio_id"],
                        "symbol": record["symbol"],
                        "side": side,
                        "quantity": record["quantity"],
                    }
                    ok(
                        session,
                        "place_limit_order",
                        {**args, "limit_price": limits[record["symbol"]]},
                    )
                    session.reset()
            for record in session.list_entities("order"):
                ok(
                    session,
                    "replace_order",
                    {k: record[k] for k in ("order_id", "quantity", "limit_price")},
                )
                ok(session, "cancel_order", {"order_id": record["order_id"]})
                session.reset()
            trades = session.list_entities("trade")
            assert trades and all(t["trade_id"].startswith("trd_") for t in trades)


def test_example_values_fit_their_parameters(market: Session) -> None:
    ctx = market.context()
    rng = random.Random(0)
    for tool in TRADING.visible_tools():
        fields = tool.args_model.model_fields
        for name, source in tool.examples.items():
            drawn = [source(ctx, rng) for _ in range(5)] if callable(source) else list(source)
            for value in drawn:
                TypeAdapter(fields[name].annotation).validate_python(value)
        free = [p.name for p in tool.params if p.required and p.entity is None]
        literal = {n for n in free if "enum" in tool.input_schema()["properties"][n]}
        assert set(free) - literal <= set(tool.examples) | set(tool.values), tool.name
    # replace_order's values are drawn for the order the call changes: an open limit order
    orders = [r["order_id"] for r in market.list_entities("order")]
    tool = TRADING.tools["replace_order"]
    fields = tool.args_model.model_fields
    drawn = 0
    for order_id in orders:
        bound = Bound({"order_id": order_id})
        if tool.values["order_id"](ctx, rng, bound) is None:
            continue  # not an open limit order
        for name in ("quantity", "limit_price"):
            value = tool.values[name](ctx, rng, bound)
            TypeAdapter(fields[name].annotation).validate_python(value)
            drawn += 1
    assert drawn, "the market has an open limit order to change"
    market.rollback()


def test_every_rule_is_enforced_somewhere_and_documented() -> None:
    import inspect
    import re

    import prove_plugins.trading.tools as tools

    raised = set(re.findall(r'RuleBroken\(\s*"(\w+)"', inspect.getsource(tools)))
    assert raised == set(tools.RULES)


# ------------------------------------------------------------ market hours (-v1)
def _seed_at(when: Any) -> int:
    """The first state seed whose "now" satisfies ``when`` (a predicate on the datetime)."""
    return next(seed for seed in range(1000) if when(TRADING.now_for(seed)))


CLOSED_SEEDS = {
    "saturday": _seed_at(lambda now: now.weekday() == 5),
    "sunday": _seed_at(lambda now: now.weekday() == 6),
    "weekday before 09:30": _seed_at(lambda now: now.weekday() < 5 and now.hour == 9 > now.minute),
    "weekday at 16:00": _seed_at(
        lambda now: now.weekday() < 5 and (now.hour, now.minute) == (16, 0)
    ),
    "weekday evening": _seed_at(lambda now: now.weekday() < 5 and now.hour == 17),
}
OPEN_SEEDS = {
    "weekday at 09:30": _seed_at(
        lambda now: now.weekday() < 5 and (now.hour, now.minute) == (9, 30) and now.day != 1
    ),
    "weekday at 15:30": _seed_at(
        lambda now: now.weekday() < 5 and (now.hour, now.minute) == (15, 30)
    ),
}


def _crossing_buy(session: Session) -> dict[str, Any]:
    """A limit buy of 3 shares at the best ask (it would trade at once while the market is
    open), from a funded cash portfolio with no open orders."""
    symbol = tradable(session)[0]
    pf = portfolio_of(session, "cash")
    fund(session, pf, 100_000)
    ask = book(session, symbol, "sell")[0][2]
    return {"portfolio_id": pf, "symbol": symbol, "side": "buy", "quantity": 3, "limit_price": ask}


@pytest.mark.parametrize("when", CLOSED_SEEDS)
def test_v1_refuses_market_orders_and_rests_limit_orders_while_closed(when: str) -> None:
    from prove_plugins.trading.models import in_session

    seed = CLOSED_SEEDS[when]
    assert not in_session(TRADING.now_for(seed))
    with TRADING.session(seed=seed) as v0, TRADING.session(seed=seed, env_version=1) as v1:
        limit = _crossing_buy(v1)
        market = {k: limit[k] for k in ("portfolio_id", "symbol", "side", "quantity")}
        message = refused(v1, "place_market_order", market, "market_closed")
        assert "09:30-16:00" in message and "place_limit_order" in message
        assert f"{TRADING.now_for(seed):%A}" in message
        rested = ok(v1, "place_limit_order", {**limit, "limit_price": str(limit["limit_price"])})
        assert rested["trades"] == [] and rested["status"] == "open"
        assert rested["remaining_quantity"] == 3
        assert Decimal(rested["held_buying_power"]) == 3 * limit["limit_price"]
        higher = str(limit["limit_price"] + Decimal("0.05"))
        moved = ok(
            v1,
            "replace_order",
            {"order_id": rested["order_id"], "quantity": 4, "limit_price": higher},
        )
        assert moved["trades"] == [] and moved["status"] == "open"  # a change trades no more
        ok(v1, "cancel_order", {"order_id": rested["order_id"]})  # cancels are taken any time
        # -v0 keeps its meaning: the same orders trade at any hour
        _crossing_buy(v0)
        assert ok(v0, "place_market_order", market)["trades"]
        assert ok(v0, "place_limit_order", {**limit, "limit_price": str(limit["limit_price"])})[
            "trades"
        ]


@pytest.mark.parametrize("when", OPEN_SEEDS)
def test_v1_trades_as_v0_during_the_session(when: str) -> None:
    from prove_plugins.trading.models import in_session

    seed = OPEN_SEEDS[when]
    assert in_session(TRADING.now_for(seed))
    results = []
    for version in (0, 1):
        with TRADING.session(seed=seed, env_version=version) as session:
            limit = _crossing_buy(session)
            market = {k: limit[k] for k in ("portfolio_id", "symbol", "side", "quantity")}
            done = [
                ok(
                    session,
                    "place_limit_order",
                    {**limit, "limit_price": str(limit["limit_price"])},
                ),
                ok(session, "place_market_order", market),
            ]
            assert all(d["trades"] for d in done)
            results.append((done, session.state_hash()))
    assert results[0] == results[1]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_v1_refuses_a_market_order_exactly_when_the_market_is_closed(seed: int) -> None:
    from prove_plugins.trading.models import in_session

    def play(session: Session) -> tuple[Any, str]:
        limit = _crossing_buy(session)
        market = {k: limit[k] for k in ("portfolio_id", "symbol", "side", "quantity")}
        if session.env_version == 1 and not in_session(session.now):
            refused(session, "place_market_order", market, "market_closed")  # nothing changes
            return None, session.state_hash()
        return ok(session, "place_market_order", market), session.state_hash()

    with TRADING.session(seed=seed) as v0, TRADING.session(seed=seed, env_version=1) as v1:
        done0, done1 = play(v0), play(v1)
    assert done0[0]["trades"]  # -v0 trades at any hour
    if in_session(TRADING.now_for(seed)):
        assert done1 == done0  # in the session -v1 is -v0
    else:
        assert done1[0] is None


def test_a_weekend_task_cannot_fill_a_market_order() -> None:
    import gymnasium
    from prove_plugins.trading.models import in_session

    from prove_gym.eval import OraclePolicy

    registry = prove_gym.get_registry()
    weekend = [
        t
        for t in registry.tasks("trading")
        if TRADING.now_for(t.seed).weekday() >= 5
        and any(s.name == "place_market_order" for s in t.steps)
    ]
    assert weekend
    task = weekend[0]
    for env_id in ("prove/trading-v0", "prove/trading-v1"):
        env = gymnasium.make(env_id).unwrapped
        env.reset(options={"task": task})
        episode = env.episode
        agent = OraclePolicy().start(episode)
        while not episode.done:
            episode.step(agent.act(episode))
        market = next(r for r in episode.trajectory if r.name == "place_market_order")
        if env_id.endswith("v0"):  # as published: it fills on a Saturday
            assert market.result.ok and market.result.content["trades"]
        else:
            assert market.result.error_kind == ErrorKind.PRECONDITION_FAILED
            assert (market.result.message or "").startswith("Rule 'market_closed' failed:")
        env.close()
    # -v1's own tasks: none set while the market is closed places a market order
    v1_tasks = registry.tasks("trading", 1)
    assert task.id not in {t.id for t in v1_tasks}
    assert not [
        t.id
        for t in v1_tasks
        if not in_session(TRADING.now_for(t.seed))
        and any(s.name == "place_market_order" for s in t.steps)
    ]


def test_market_hours_are_weekdays_from_the_opening_to_the_closing_bell() -> None:
    from prove_plugins.trading.models import in_session, next_open

    friday = dt.date(2026, 3, 13)
    at = lambda day, h, m: dt.datetime.combine(day, dt.time(h, m))  # noqa: E731
    assert [in_session(at(friday, h, m)) for h, m in [(9, 29), (9, 30), (15, 59), (16, 0)]] == [
        False,
        True,
        True,
        False,
    ]
    monday_open = at(friday + dt.timedelta(days=3), 9, 30)
    for closed in [at(friday, 16, 0), at(friday, 23, 59), at(friday + dt.timedelta(days=1), 10, 0)]:
        assert not in_session(closed) and next_open(closed) == monday_open
    assert next_open(at(friday, 8, 0)) == at(friday, 9, 30)


@given(at=st.datetimes(min_value=dt.datetime(2026, 1, 1), max_value=dt.datetime(2027, 12, 31)))
def test_the_next_open_is_the_first_session_minute_after_a_closed_time(at: dt.datetime) -> None:
    from prove_plugins.trading.models import in_session, next_open

    if in_session(at):
        assert at.weekday() < 5 and dt.time(9, 30) <= at.time() < dt.time(16, 0)
        return
    opens = next_open(at)
    assert opens > at and in_session(opens) and opens.time() == dt.time(9, 30)
    assert opens - at <= dt.timedelta(days=2, hours=17, minutes=30)  # Friday 16:00 to Monday
    assert not in_session(opens - dt.timedelta(minutes=1))
    between = dt.datetime.combine(at.date(), dt.time(12, 0))
    while between < opens:  # no session day is skipped
        assert not (at < between and in_session(between)), between
        between += dt.timedelta(days=1)


# ------------------------------------------------------------------- tasks
def test_hand_written_tasks_cover_rules_turns_clarify_and_abstain() -> None:
    tasks = [t for t in prove_gym.get_registry().tasks("trading") if not t.meta]
    assert 3 <= len(tasks) <= 8
    kinds = {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "clarify", "abstain"} <= kinds
    assert any(len(t.turns) > 1 and t.steps for t in tasks)
    assert any(any(s.depends_on for s in t.steps) for t in tasks)
    synthesized = [t for t in prove_gym.get_registry().tasks("trading") if t.meta]
    assert len(synthesized) >= 200


TestConformance = conformance_suite(
    "trading",
    samples=["pf_9999", "ord_99999", "ZZZZ", "aapl", "0.001", "-5", "1e9", "market", "all"],
    invariants=rule_violations,
)


@pytest.mark.parametrize("when", CLOSED_SEEDS)
def test_v2_trades_only_for_the_account_holder_and_keeps_market_hours(when: str) -> None:
    """prove/trading-v2 acts for one portfolio's holder (issue #50: any portfolio by id)."""
    seed = CLOSED_SEEDS[when]
    with TRADING.session(seed=seed) as v0:
        mine = portfolio_of(v0, "cash")
        theirs = column(v0, "SELECT id FROM portfolios WHERE id != ? ORDER BY id", mine)[0]
        market_order = column(
            v0, "SELECT id FROM orders WHERE portfolio_id IS NULL AND status = 'open' ORDER BY id"
        )[0]
    with TRADING.session(seed=seed, env_version=2, principal=mine) as v2:
        limit = _crossing_buy(v2)
        assert limit["portfolio_id"] == mine
        market = {k: limit[k] for k in ("portfolio_id", "symbol", "side", "quantity")}
        refused(v2, "place_market_order", market, "market_closed")  # v1's rule stays
        before = v2.state_hash()
        for name, args in (
            ("place_market_order", {**market, "portfolio_id": theirs}),
            ("get_portfolio", {"portfolio_id": theirs}),
            ("cancel_order", {"order_id": market_order}),
        ):
            result = v2.call(name, args)
            assert result.error_kind == ErrorKind.PERMISSION_DENIED, (name, result)
            assert (result.message or "").startswith("Rule 'not_your_portfolio' failed:")
        assert v2.state_hash() == before
        assert ok(v2, "get_portfolio", {"portfolio_id": mine})["portfolio_id"] == mine


# ------------------------------------------------- prove/trading-v3: holidays
NYSE_HOLIDAYS = {  # the exchange's published full-day closures (nyse.com, markets/hours-calendars)
    2025: "01-01 01-20 02-17 04-18 05-26 06-19 07-04 09-01 11-27 12-25",
    2026: "01-01 01-19 02-16 04-03 05-25 06-19 07-03 09-07 11-26 12-25",
    2027: "01-01 01-18 02-15 03-26 05-31 06-18 07-05 09-06 11-25 12-24",
}


def test_the_holiday_calendar_is_the_venues_for_the_sampled_years() -> None:
    """The sampler's states fall in 2026 and early 2027 (its history reaches into 2025)."""
    from prove_plugins.trading.models import holidays_of

    for year, days in NYSE_HOLIDAYS.items():
        assert [f"{day:%m-%d}" for day in holidays_of(year)] == days.split()
    assert dt.date(2028, 1, 1).weekday() == 5 and dt.date(2027, 12, 31) not in holidays_of(2027)
    assert "Juneteenth" not in " ".join(holidays_of(2021).values())  # a holiday from 2022


@given(day=st.dates(min_value=dt.date(2000, 1, 1), max_value=dt.date(2100, 12, 31)))
def test_every_holiday_is_a_weekday_the_exchange_is_closed_all_day(day: dt.date) -> None:
    from prove_plugins.trading.models import holiday, holidays_of, in_session, next_open

    name = holiday(day)
    year = holidays_of(day.year)
    unobserved = (dt.date(day.year, 1, 1).weekday() == 5) + (day.year < 2022)  # Juneteenth
    assert len(year) == 10 - unobserved
    assert all(d.weekday() < 5 and d.year == day.year for d in year)
    noon = dt.datetime.combine(day, dt.time(12, 0))
    assert in_session(noon, holidays=True) == (in_session(noon) and name is None)
    opens = next_open(noon, holidays=True) if not in_session(noon, holidays=True) else noon
    assert holiday(opens.date()) is None and opens.weekday() < 5
    skipped = noon.date() + dt.timedelta(days=1)
    while skipped < opens.date():  # every day it skips is a weekend or a holiday
        assert skipped.weekday() >= 5 or holiday(skipped) is not None
        skipped += dt.timedelta(days=1)


def _holiday_seed(open_hours: bool) -> int:
    from prove_plugins.trading.models import holiday, in_session

    return _seed_at(lambda now: holiday(now.date()) is not None and in_session(now) == open_hours)


def test_v3_is_closed_on_a_holiday_where_v2_trades() -> None:
    from prove_plugins.trading.models import holiday

    seed = _holiday_seed(open_hours=True)
    now = TRADING.now_for(seed)
    name = holiday(now.date())
    with TRADING.session(seed=seed) as v0:
        mine = portfolio_of(v0, "cash")
    for version in (2, 3):
        with TRADING.session(seed=seed, env_version=version, principal=mine) as session:
            limit = _crossing_buy(session)
            market = {k: limit[k] for k in ("portfolio_id", "symbol", "side", "quantity")}
            if version == 2:  # v2 knows no holidays: a weekday session trades
                assert ok(session, "place_market_order", market)["trades"]
                continue
            message = refused(session, "place_market_order", market, "market_closed")
            assert f"for {name}, an exchange holiday" in message
            assert "place_limit_order" in message and f"{now:%Y-%m-%d}" in message
            rested = ok(
                session, "place_limit_order", {**limit, "limit_price": str(limit["limit_price"])}
            )
            assert rested["trades"] == [] and rested["status"] == "open"


def test_v3_names_the_next_open_after_a_holiday() -> None:
    from prove_plugins.trading.models import holiday, next_open

    seed = _holiday_seed(open_hours=False)
    now = TRADING.now_for(seed)
    with TRADING.session(seed=seed) as v0:
        mine = portfolio_of(v0, "cash")
    with TRADING.session(seed=seed, env_version=3, principal=mine) as v3:
        limit = _crossing_buy(v3)
        market = {k: limit[k] for k in ("portfolio_id", "symbol", "side", "quantity")}
        message = refused(v3, "place_market_order", market, "market_closed")
    opens = next_open(now, holidays=True)
    assert holiday(opens.date()) is None and f"({opens:%A %Y-%m-%d %H:%M})" in message
    assert opens != next_open(now) or now.weekday() >= 5 or now.hour >= 16


# -------------------------------------- prove/trading-v3: an idempotency key
def _v3_session(seed: int, version: int = 3) -> tuple[Session, dict[str, Any], dict[str, Any]]:
    """A session of ``version`` acting for a funded cash portfolio, a crossing limit buy of 3
    shares from it (the market order of the same shares trades too, in session hours) and the
    same buy at the best bid (it rests)."""
    with TRADING.session(seed=seed) as v0:
        mine = portfolio_of(v0, "cash")
    session = TRADING.session(seed=seed, env_version=version, principal=mine)
    limit = _crossing_buy(session)
    assert limit["portfolio_id"] == mine
    bid = book(session, limit["symbol"], "buy")[0][2]
    return (
        session,
        {**limit, "limit_price": str(limit["limit_price"])},
        {**limit, "limit_price": str(bid)},
    )


def _order_count(session: Session) -> int:
    return int(rows(session, "SELECT COUNT(*) FROM orders")[0][0])


def test_v3_a_retried_order_with_its_client_order_id_is_placed_once() -> None:
    session, limit, resting = _v3_session(OPEN_SEEDS["weekday at 15:30"])
    market = {k: limit[k] for k in ("portfolio_id", "symbol", "side", "quantity")}
    with session:
        first = ok(session, "place_market_order", {**market, "client_order_id": "buy-1"})
        assert first["trades"] and first["replayed"] is False
        assert first["client_order_id"] == "buy-1"
        before, orders = session.state_hash(), _order_count(session)
        again = ok(session, "place_market_order", {**market, "client_order_id": "buy-1"})
        assert again["replayed"] is True and session.state_hash() == before
        assert _order_count(session) == orders
        same = ("order_id", "status", "filled_quantity", "trades", "cash", "position_quantity")
        assert {k: again[k] for k in same} == {k: first[k] for k in same}
        # a limit order under its own key rests once, and a retry finds it as it stands
        placed = ok(session, "place_limit_order", {**resting, "client_order_id": "rest-1"})
        retried = ok(session, "place_limit_order", {**resting, "client_order_id": "rest-1"})
        assert retried["order_id"] == placed["order_id"] and retried["replayed"] is True
        # without a key every call is a new order, as before
        plain = [ok(session, "place_limit_order", resting)["order_id"] for _ in range(2)]
        assert len(set(plain)) == 2 and placed["order_id"] not in plain


def test_v3_a_client_order_id_is_kept_beside_the_order_not_in_it() -> None:
    """The key lives in client_order_ids (a table added later), the order's participant is
    the owner as for any order: an order placed with a key and one placed without differ in
    nothing but their id, seq and times."""
    session, _, resting = _v3_session(OPEN_SEEDS["weekday at 15:30"])
    with session:
        empty = session.state_hash()
        keyed = ok(session, "place_limit_order", {**resting, "client_order_id": "rest-1"})
        plain = ok(session, "place_limit_order", resting)
        owner = column(
            session, "SELECT owner FROM portfolios WHERE id = ?", resting["portfolio_id"]
        )
        fields = "participant, symbol, side, order_type, quantity, limit_price, status"
        of = [
            rows(session, f"SELECT {fields} FROM orders WHERE id = ?", o["order_id"])
            for o in (keyed, plain)
        ]
        assert of[0] == of[1] and of[0][0][0] == owner[0]
        assert rows(session, "SELECT * FROM client_order_ids") == [
            (resting["portfolio_id"], "rest-1", keyed["order_id"])
        ]
        assert empty != session.state_hash() and not rule_violations(session)


@pytest.mark.parametrize(
    "change",
    [
        {"quantity": 4},
        {"side": "sell"},
        {"limit_price": "0.01"},  # another price (out of the band, but the key speaks first)
        {"limit_price": None},  # a market order
    ],
    ids=["quantity", "side", "price", "type"],
)
def test_v3_the_same_key_with_another_order_is_refused(change: dict[str, Any]) -> None:
    session, _, resting = _v3_session(OPEN_SEEDS["weekday at 15:30"])
    with session:
        placed = ok(session, "place_limit_order", {**resting, "client_order_id": "k-1"})
        other = {**resting, **change, "client_order_id": "k-1"}
        tool = "place_limit_order"
        if other["limit_price"] is None:
            tool = "place_market_order"
            del other["limit_price"]
        message = refused(session, tool, other, "client_order_id_reused")
        assert placed["order_id"] in message and "'k-1'" in message


def test_client_order_id_and_preview_id_are_v3_parameters_only() -> None:
    for name in ("place_limit_order", "place_market_order"):
        props = [set(TRADING.tools_for(v)[name].input_schema()["properties"]) for v in range(4)]
        assert props[0] == props[1] == props[2] and "client_order_id" not in props[2]
        assert props[3] == props[2] | {"client_order_id", "preview_id"}
        assert TRADING.tools[name].input_schema() == TRADING.tools_for(2)[name].input_schema()
    seed = OPEN_SEEDS["weekday at 15:30"]
    with TRADING.session(seed=seed) as v0:
        mine = portfolio_of(v0, "cash")
    with TRADING.session(seed=seed, env_version=2, principal=mine) as v2:
        limit = _crossing_buy(v2)
        before = v2.state_hash()
        args = {**limit, "limit_price": str(limit["limit_price"]), "client_order_id": "k-1"}
        result = v2.call("place_limit_order", args)
        assert result.error_kind == ErrorKind.BAD_ARGUMENTS and v2.state_hash() == before


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.text(max_size=80) | st.from_regex(r"[A-Za-z0-9._:-]{1,48}", fullmatch=True))
def test_v3_any_key_is_refused_or_places_one_order(key: str) -> None:
    import re

    session, _, resting = _v3_session(OPEN_SEEDS["weekday at 15:30"])
    with session:
        before, orders = session.state_hash(), _order_count(session)
        first = session.call("place_limit_order", {**resting, "client_order_id": key})
        if not re.fullmatch(r"[A-Za-z0-9._:-]{1,48}", key):
            assert first.error_kind == ErrorKind.BAD_ARGUMENTS and session.state_hash() == before
            return
        assert first.ok and _order_count(session) == orders + 1
        again = session.call("place_limit_order", {**resting, "client_order_id": key})
        assert again.ok and again.content["order_id"] == first.content["order_id"]
        assert _order_count(session) == orders + 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(1, 3)), max_size=8))
def test_v3_each_key_places_one_order_whatever_the_retries(calls: list[tuple[str, int]]) -> None:
    """A model of the rule: a key's first call places; the same order again replays, another
    order is refused; the book holds one order per key used."""
    session, _, resting = _v3_session(OPEN_SEEDS["weekday at 15:30"])
    placed: dict[str, tuple[int, str]] = {}
    with session:
        orders = _order_count(session)
        for key, quantity in calls:
            args = {**resting, "quantity": quantity, "client_order_id": key}
            if key not in placed:
                placed[key] = (quantity, ok(session, "place_limit_order", args)["order_id"])
            elif placed[key][0] == quantity:
                assert ok(session, "place_limit_order", args)["order_id"] == placed[key][1]
            else:
                refused(session, "place_limit_order", args, "client_order_id_reused")
        assert _order_count(session) == orders + len(placed)


# ------------------------------------------- prove/trading-v3: T+1 settlement
def _seller(session: Session, kind: str) -> tuple[str, str, int]:
    """(portfolio, symbol, shares) of a long position of 2 or more shares of a ``kind``
    portfolio without open orders, in a symbol with resting bids to sell into."""
    found = rows(
        session,
        """SELECT pos.portfolio_id, pos.symbol, pos.quantity FROM positions pos
           JOIN portfolios p ON p.id = pos.portfolio_id
           JOIN instruments i ON i.symbol = pos.symbol
           WHERE p.kind = ? AND p.status = 'active' AND pos.quantity > 1 AND i.halted = 0
             AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.portfolio_id = p.id
                 AND o.status IN ('open', 'partially_filled'))
             AND EXISTS (SELECT 1 FROM orders o WHERE o.symbol = pos.symbol AND o.side = 'buy'
                 AND o.status IN ('open', 'partially_filled'))
             AND EXISTS (SELECT 1 FROM orders o WHERE o.symbol = pos.symbol AND o.side = 'sell'
                 AND o.status IN ('open', 'partially_filled'))
           ORDER BY pos.portfolio_id, pos.symbol""",
        kind,
    )
    return found[0]


def _sell_then_buy(seed: int, version: int, kind: str = "cash") -> tuple[Session, dict[str, Any]]:
    """In a session of ``version`` acting for a ``kind`` portfolio holding shares, with its
    cash set to 1,000: sell 2 shares at market, and a limit buy at the best ask of the least
    number of shares the 1,000 cannot pay for (the sale's proceeds can)."""
    with TRADING.session(seed=seed) as v0:
        pf, symbol, _ = _seller(v0, kind)
    session = TRADING.session(seed=seed, env_version=version, principal=pf)
    poke(session, "UPDATE portfolios SET cash = 100000 WHERE id = ?", pf)
    sale = {"portfolio_id": pf, "symbol": symbol, "side": "sell", "quantity": 2}
    sold = ok(session, "place_market_order", sale)
    assert sold["filled_quantity"] == 2
    ask = book(session, symbol, "sell")[0][2]
    quantity = int(Decimal(1000) / ask) + 1
    proceeds = sum(Decimal(t["value"]) for t in sold["trades"])
    assert quantity * ask <= Decimal(1000) + proceeds
    buy = {**sale, "side": "buy", "quantity": quantity, "limit_price": str(ask)}
    return session, {"buy": buy, "proceeds": proceeds, "sold": sold}


def test_v3_a_cash_portfolio_buys_only_with_settled_cash() -> None:
    from prove_plugins.trading.models import next_open

    seed = OPEN_SEEDS["weekday at 15:30"]
    now = TRADING.now_for(seed)
    settles = next_open(dt.datetime.combine(now.date(), dt.time(16, 0)), holidays=True).date()
    v2, two = _sell_then_buy(seed, 2)
    with v2:  # before v3 the proceeds pay for the purchase at once
        assert ok(v2, "place_limit_order", two["buy"])["filled_quantity"]
        assert "settled_cash" not in ok(
            v2, "get_portfolio", {"portfolio_id": two["buy"]["portfolio_id"]}
        )
    v3, three = _sell_then_buy(seed, 3)
    with v3:
        pf = three["buy"]["portfolio_id"]
        shown = ok(v3, "get_portfolio", {"portfolio_id": pf})
        assert Decimal(shown["unsettled_cash"]) == three["proceeds"] > 0
        assert Decimal(shown["settled_cash"]) == Decimal(shown["cash"]) - three["proceeds"]
        assert (
            Decimal(shown["buying_power"]) == Decimal("1000.00") == Decimal(shown["settled_cash"])
        )
        assert shown["settles_on"] == settles.isoformat()
        assert Decimal(three["sold"]["buying_power"]) == Decimal("1000.00")
        message = refused(v3, "place_limit_order", three["buy"], "unsettled_funds")
        assert f"settle on {settles}" in message and "T+1" in message
        fit = {**three["buy"], "quantity": three["buy"]["quantity"] - 1}
        assert ok(v3, "place_limit_order", fit)["filled_quantity"]  # settled cash still buys
        # more than all its cash, settled or not, is still the buying_power rule
        refused(v3, "place_limit_order", {**fit, "quantity": 100_000}, "buying_power")


def test_v3_margin_buying_power_does_not_wait_for_settlement() -> None:
    seed = OPEN_SEEDS["weekday at 15:30"]
    done = {}
    for version in (2, 3):
        session, made = _sell_then_buy(seed, version, kind="margin")
        with session:
            pf = made["buy"]["portfolio_id"]
            shown = ok(session, "get_portfolio", {"portfolio_id": pf})
            bought = ok(session, "place_limit_order", made["buy"])
            done[version] = (shown["buying_power"], bought["buying_power"], session.state_hash())
            if version == 3:
                assert Decimal(shown["unsettled_cash"]) == made["proceeds"]
    assert done[2] == done[3]


def test_get_portfolio_shows_settlement_from_v3_only() -> None:
    schemas = [TRADING.tools_for(v)["get_portfolio"].output_schema for v in range(4)]
    assert schemas[0] == schemas[1] == schemas[2] != schemas[3]
    assert schemas[0] is not None and schemas[3] is not None
    added = set(schemas[3]["properties"]) - set(schemas[0]["properties"])
    assert added == {"settled_cash", "unsettled_cash", "settles_on"}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_v3_unsettled_cash_is_the_sales_not_yet_settled(seed: int) -> None:
    """Against the rule computed from every trade directly: a sale settles on the first
    trading day after its own, and is unsettled while that day is after today."""
    from prove_plugins.trading.models import next_open

    now = TRADING.now_for(seed)

    def settles_on(day: dt.date) -> dt.date:
        return next_open(dt.datetime.combine(day, dt.time(23, 59)), holidays=True).date()

    with TRADING.session(seed=seed) as v0:
        portfolios = column(v0, "SELECT id FROM portfolios ORDER BY id")
        sales = rows(
            v0,
            """SELECT o.portfolio_id, t.executed_at, t.quantity * t.price FROM trades t
               JOIN orders o ON o.id = t.sell_order_id WHERE o.portfolio_id IS NOT NULL
               ORDER BY t.id""",
        )
    expected = dict.fromkeys(portfolios, Decimal("0.00"))
    for pf, at, value in sales:
        if settles_on(dt.datetime.fromisoformat(at).date()) > now.date():
            expected[pf] += Decimal(value).scaleb(-2)
    for pf in portfolios:
        with TRADING.session(seed=seed, env_version=3, principal=pf) as v3:
            shown = ok(v3, "get_portfolio", {"portfolio_id": pf})
        assert Decimal(shown["unsettled_cash"]) == expected[pf], pf
        assert (shown["settles_on"] is None) == (expected[pf] == 0)


# ---------------------------------- prove/trading-v3: a preview for large orders
def _large_buy(seed: int) -> tuple[Session, dict[str, Any], dict[str, Any]]:
    """A v3 session acting for a cash portfolio funded with 1,000,000, a resting limit buy at
    the best bid worth just over 25,000 and one worth just under."""
    session, _, resting = _v3_session(seed)
    poke(session, "UPDATE portfolios SET cash = 100000000 WHERE id = ?", resting["portfolio_id"])
    bid = Decimal(resting["limit_price"])
    over = int(Decimal(25_000) / bid) + 1
    return session, {**resting, "quantity": over}, {**resting, "quantity": over - 1}


def test_v3_an_order_above_the_threshold_needs_its_preview() -> None:
    from prove_plugins.trading.tools import PREVIEW_ABOVE

    seed = OPEN_SEEDS["weekday at 15:30"]
    session, large, small = _large_buy(seed)
    with session:
        assert Decimal(large["limit_price"]) * large["quantity"] > PREVIEW_ABOVE
        assert Decimal(small["limit_price"]) * small["quantity"] <= PREVIEW_ABOVE
        message = refused(session, "place_limit_order", large, "preview_required")
        assert "preview_order" in message and "no preview_id" in message
        before = session.state_hash()
        preview = ok(session, "preview_order", large)
        assert session.state_hash() == before  # a preview writes nothing
        assert (
            preview["preview_required"] is True and preview["estimated_rest"] == large["quantity"]
        )
        assert (
            Decimal(preview["estimated_notional"])
            == Decimal(large["limit_price"]) * large["quantity"]
        )
        assert Decimal(preview["buying_power_needed"]) == Decimal(preview["estimated_notional"])
        other = ok(session, "preview_order", small)["preview_id"]
        wrong = refused(
            session, "place_limit_order", {**large, "preview_id": other}, "preview_required"
        )
        assert "does not preview this order" in wrong
        placed = ok(session, "place_limit_order", {**large, "preview_id": preview["preview_id"]})
        assert placed["status"] == "open" and placed["quantity"] == large["quantity"]
        assert ok(session, "place_limit_order", small)["status"] == "open"  # no preview needed


def test_v3_a_preview_runs_the_placement_rules() -> None:
    seed = OPEN_SEEDS["weekday at 15:30"]
    session, large, _ = _large_buy(seed)
    with session:
        market = {k: large[k] for k in ("portfolio_id", "symbol", "side")}
        shown = ok(session, "preview_order", {**market, "quantity": 1})
        assert shown["order_type"] == "market" and shown["estimated_rest"] == 0
        assert [f["quantity"] for f in shown["estimated_fills"]] == [1]
        assert shown["preview_required"] is False
        poke(session, "UPDATE portfolios SET cash = 100 WHERE id = ?", large["portfolio_id"])
        refused(session, "preview_order", large, "buying_power")  # what placing would say


def test_preview_order_is_a_v3_tool_only() -> None:
    assert all("preview_order" not in TRADING.tools_for(v) for v in range(3))
    assert "preview_order" in TRADING.tools_for(3) and "preview_order" not in TRADING.tools
    seed = OPEN_SEEDS["weekday at 15:30"]
    with TRADING.session(seed=seed) as v0:
        mine = portfolio_of(v0, "cash")
        args = {"portfolio_id": mine, "symbol": "AAPL", "side": "buy", "quantity": 1}
        assert v0.call("preview_order", args).error_kind == ErrorKind.UNKNOWN_TOOL
    with TRADING.session(seed=seed, env_version=2, principal=mine) as v2:
        assert v2.call("preview_order", args).error_kind == ErrorKind.UNKNOWN_TOOL


# ------------------------------ prove/trading-v4: a preview for large order changes
def _resting(version: int) -> tuple[Session, dict[str, Any], int]:
    """A session of ``version`` acting for a cash portfolio funded with 1,000,000 more, the
    record of a resting limit buy of 3 shares at the best bid it placed, and the least total
    quantity at that price worth more than 25,000."""
    session, _, resting = _v3_session(OPEN_SEEDS["weekday at 15:30"], version)
    fund(session, resting["portfolio_id"], 1_000_000)
    placed = ok(session, "place_limit_order", resting)
    assert placed["status"] == "open"
    return session, placed, int(Decimal(25_000) / Decimal(resting["limit_price"])) + 1


def test_v4_a_replacement_above_the_threshold_needs_its_preview() -> None:
    session, placed, over = _resting(4)
    with session:
        price = placed["limit_price"]
        large = {"order_id": placed["order_id"], "quantity": over, "limit_price": price}
        message = refused(session, "replace_order", large, "preview_required")
        assert "preview_replace_order" in message and "no preview_id" in message
        assert f"replacement of {placed['order_id']}" in message
        # a placement's preview of the same shares does not preview the replacement
        placement = {k: placed[k] for k in ("portfolio_id", "symbol", "side")}
        other = ok(session, "preview_order", {**placement, "quantity": over, "limit_price": price})
        wrong = refused(
            session,
            "replace_order",
            {**large, "preview_id": other["preview_id"]},
            "preview_required",
        )
        assert "does not preview this replacement" in wrong
        before = session.state_hash()
        preview = ok(session, "preview_replace_order", large)
        assert session.state_hash() == before  # a preview writes nothing
        assert preview["preview_required"] is True and preview["order_id"] == placed["order_id"]
        assert preview["estimated_rest"] == over and preview["estimated_fills"] == []
        assert Decimal(preview["estimated_notional"]) == over * Decimal(price)
        assert Decimal(preview["buying_power_needed"]) == over * Decimal(price)
        # the order's own hold is free for its replacement, as replace_order counts it
        shown = ok(session, "get_portfolio", {"portfolio_id": placed["portfolio_id"]})
        assert Decimal(preview["buying_power"]) == Decimal(shown["buying_power"]) + Decimal(
            placed["held_buying_power"]
        )
        for stale in (
            {"quantity": over + 1},
            {"limit_price": str(Decimal(price) - Decimal("0.01"))},
        ):
            refused(
                session,
                "replace_order",
                {**large, **stale, "preview_id": preview["preview_id"]},
                "preview_required",
            )
        done = ok(session, "replace_order", {**large, "preview_id": preview["preview_id"]})
        assert done["quantity"] == over and done["status"] == "open"
        smaller = {**large, "quantity": over - 1}  # worth 25,000 or less: no preview needed
        assert ok(session, "replace_order", smaller)["quantity"] == over - 1
        assert not rule_violations(session)


def test_v3_replaces_above_the_threshold_without_a_preview() -> None:
    """What v4 refuses, v3 (published) still does: the rule starts in v4."""
    for version in (3, 4):
        session, placed, over = _resting(version)
        with session:
            args = {"order_id": placed["order_id"], "quantity": over}
            result = session.call("replace_order", {**args, "limit_price": placed["limit_price"]})
            assert result.ok == (version == 3), result.message


def test_v4_a_replacement_that_changes_nothing_is_refused_before_the_preview() -> None:
    """A no-op change of an order above the threshold is refused as a no-op (bad_arguments,
    as in every version), not asked a preview: there is nothing to confirm."""
    session, placed, over = _resting(4)
    with session:
        large = {
            "order_id": placed["order_id"],
            "quantity": over,
            "limit_price": placed["limit_price"],
        }
        preview = ok(session, "preview_replace_order", large)
        ok(session, "replace_order", {**large, "preview_id": preview["preview_id"]})
        before = session.state_hash()
        for extra in ({}, {"preview_id": preview["preview_id"]}):
            again = session.call("replace_order", {**large, **extra})
            assert again.error_kind == ErrorKind.BAD_ARGUMENTS and "already has" in (
                again.message or ""
            )
            assert session.state_hash() == before
        assert session.call("preview_replace_order", large).error_kind == ErrorKind.BAD_ARGUMENTS


def test_preview_id_and_preview_replace_order_are_v4_only() -> None:
    props = [
        set(TRADING.tools_for(v)["replace_order"].input_schema()["properties"]) for v in range(5)
    ]
    assert props[0] == props[1] == props[2] == props[3] and "preview_id" not in props[3]
    assert props[4] == props[3] | {"preview_id"}
    assert (
        TRADING.tools["replace_order"].input_schema()
        == TRADING.tools_for(3)["replace_order"].input_schema()
    )
    assert all("preview_replace_order" not in TRADING.tools_for(v) for v in range(4))
    assert "preview_replace_order" in TRADING.tools_for(4)
    assert "preview_replace_order" not in TRADING.tools
    session, placed, over = _resting(3)
    with session:
        args = {"order_id": placed["order_id"], "quantity": over, "limit_price": "1.00"}
        before = session.state_hash()
        assert session.call("preview_replace_order", args).error_kind == ErrorKind.UNKNOWN_TOOL
        with_id = session.call("replace_order", {**args, "preview_id": "pv_000000000000"})
        assert with_id.error_kind == ErrorKind.BAD_ARGUMENTS and session.state_hash() == before


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(per_mille=st.integers(0, 2000), cents_off=st.integers(-30, 30))
def test_v4_a_replacement_needs_a_preview_exactly_above_the_threshold(
    per_mille: int, cents_off: int
) -> None:
    """Against the rule computed from the result (new quantities from none to twice the
    threshold's, prices a few cents either way): a replacement without a preview is made
    (and ends as v3 makes it) when what it leaves to fill is worth 25,000 or less, and
    refused with preview_required, changing nothing, when worth more; with the preview of
    preview_replace_order it is always made, and ends as v3 makes it without one."""
    from prove_plugins.trading.tools import PREVIEW_ABOVE

    ends: dict[int, Any] = {}
    for version in (3, 4):
        session, placed, over = _resting(version)
        with session:
            args = {
                "order_id": placed["order_id"],
                "quantity": max(1, over * per_mille // 1000),
                "limit_price": str(Decimal(placed["limit_price"]) + Decimal(cents_off) / 100),
            }
            before = session.state_hash()
            made = session.call("replace_order", args)
            if version == 3:
                ends[3] = (made.ok, made.content if made.ok else None, session.state_hash())
                continue
            if not ends[3][0]:  # another rule refuses it: v4 refuses it the same way
                assert not made.ok and made.error_kind != ErrorKind.INTERNAL
                assert session.call("preview_replace_order", args).error_kind == made.error_kind
                continue
            shown = ends[3][1]
            worth = sum(Decimal(t["value"]) for t in shown["trades"]) + shown[
                "remaining_quantity"
            ] * Decimal(shown["limit_price"])
            if worth > PREVIEW_ABOVE:
                assert made.error_kind == ErrorKind.PRECONDITION_FAILED
                assert (made.message or "").startswith("Rule 'preview_required' failed:")
                assert session.state_hash() == before
                preview = ok(session, "preview_replace_order", args)
                assert Decimal(preview["estimated_notional"]) == worth
                assert preview["preview_required"] is True
                made = session.call("replace_order", {**args, "preview_id": preview["preview_id"]})
            assert made.ok, made.message
            assert made.content == shown and session.state_hash() == ends[3][2]
