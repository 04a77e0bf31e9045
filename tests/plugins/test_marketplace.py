"""The marketplace server: bid, offer, sale and rating rules under random call sequences, one
test per domain rule, its tasks, and the conformance suite."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from pydantic import TypeAdapter

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import one, rows

MARKET = prove_gym.get_server("marketplace")


def now_sql(session: Session) -> str:
    return session.now.replace(second=0, microsecond=0).isoformat(sep=" ")


# ------------------------------------------------------------ the invariants
def rule_violations(session: Session) -> list[str]:
    """Every broken marketplace rule, read straight from SQLite (see models.py)."""
    broken: list[str] = []

    def check(what: str, sql: str, *params: Any) -> None:
        found = rows(session, sql, *params)
        if found:
            broken.append(f"{what}: {found[:5]}")

    check(
        "a bid does not beat the previous high bid by the minimum increment",
        """SELECT b.id, b.amount, l.price, l.min_increment FROM bids b
           JOIN listings l ON l.id = b.listing_id
           WHERE b.amount < COALESCE(
               (SELECT MAX(p.amount) + l.min_increment FROM bids p
                WHERE p.listing_id = b.listing_id AND p.id < b.id), l.price)
              OR l.format != 'auction'""",
    )
    check(
        "high_bid / high_bidder_id / bid_count disagree with the bids",
        """SELECT l.id FROM listings l
           WHERE l.bid_count != (SELECT COUNT(*) FROM bids b WHERE b.listing_id = l.id)
              OR l.high_bid IS NOT (SELECT MAX(amount) FROM bids b WHERE b.listing_id = l.id)
              OR l.high_bidder_id IS NOT (SELECT buyer_id FROM bids b WHERE b.listing_id = l.id
                                          ORDER BY amount DESC, id LIMIT 1)""",
    )
    check(
        "a seller bid on, offered on or bought their own listing",
        """SELECT b.id FROM bids b JOIN listings l ON l.id = b.listing_id
           WHERE b.buyer_id = l.seller_id
           UNION ALL SELECT o.id FROM offers o JOIN listings l ON l.id = o.listing_id
           WHERE o.buyer_id = l.seller_id
           UNION ALL SELECT s.id FROM sales s JOIN listings l ON l.id = s.listing_id
           WHERE s.buyer_id = l.seller_id OR s.seller_id != l.seller_id""",
    )
    check(
        "a listing's status disagrees with its sale",
        """SELECT l.id, l.status, COUNT(s.id) FROM listings l
           LEFT JOIN sales s ON s.listing_id = l.id GROUP BY l.id
           HAVING (l.status = 'sold') != (COUNT(s.id) = 1) OR COUNT(s.id) > 1
              OR (l.status = 'active') != (l.closed_at IS NULL)""",
    )
    check(
        "an auction's sale is not to its highest bidder at the high bid",
        """SELECT s.id FROM sales s JOIN listings l ON l.id = s.listing_id
           WHERE (l.format = 'auction') != (s.source = 'auction')
              OR (s.source = 'auction' AND (s.buyer_id IS NOT l.high_bidder_id
                                            OR s.price != l.high_bid))
              OR (s.source = 'buy_now' AND s.price != l.price)""",
    )
    check(
        "an offer-sale disagrees with its accepted offer, or an offer is out of place",
        """SELECT s.id FROM sales s LEFT JOIN offers o ON o.id = s.offer_id
           WHERE (s.source = 'offer') != (o.id IS NOT NULL)
              OR (o.id IS NOT NULL AND (o.status != 'accepted' OR o.buyer_id != s.buyer_id
                  OR o.amount != s.price OR o.listing_id != s.listing_id))
           UNION ALL SELECT o.id FROM offers o JOIN listings l ON l.id = o.listing_id
           WHERE l.format != 'fixed_price' OR o.amount >= l.price
              OR (o.status = 'pending' AND l.status != 'active')
              OR (o.status = 'accepted' AND NOT EXISTS
                  (SELECT 1 FROM sales s WHERE s.offer_id = o.id))
              OR o.status NOT IN ('pending', 'accepted', 'declined')""",
    )
    check(
        "a buyer has two pending offers on one listing",
        """SELECT listing_id, buyer_id FROM offers WHERE status = 'pending'
           GROUP BY listing_id, buyer_id HAVING COUNT(*) > 1""",
    )
    check(
        "a rating is not by its sale's buyer about its seller, or out of range",
        """SELECT r.id FROM ratings r JOIN sales s ON s.id = r.sale_id
           WHERE r.buyer_id != s.buyer_id OR r.seller_id != s.seller_id
              OR r.stars NOT BETWEEN 1 AND 5""",
    )
    stars: dict[str, list[int]] = {}
    for seller, star in rows(session, "SELECT seller_id, stars FROM ratings ORDER BY id"):
        stars.setdefault(seller, []).append(star)
    for uid, rating, count in rows(session, "SELECT id, rating, rating_count FROM users"):
        got = stars.get(uid, [])
        want = (
            None
            if not got
            else int(
                (Decimal(sum(got)) / len(got) * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP)
            )
        )
        if rating != want or count != len(got):
            broken.append(f"seller {uid}'s rating {rating}/{count} is not the mean of {got}")
    return broken


# ------------------------------------------------------------ fixtures
@pytest.fixture
def market() -> Iterator[Session]:
    session = MARKET.session(seed=0)
    yield session
    session.close()


def call_ok(session: Session, name: str, args: dict[str, Any]) -> Any:
    result = session.call(name, args)
    assert result.ok, f"{name}({args}): {result.message}"
    return result.content


def refused(session: Session, name: str, args: dict[str, Any], kind: ErrorKind, rule: str) -> str:
    """Call, expect a refusal naming ``rule`` that changes nothing; returns the message."""
    before = session.state_hash()
    result = session.call(name, args)
    assert result.error_kind == kind, (name, args, result.error_kind, result.message)
    assert f"Rule '{rule}' failed" in (result.message or ""), result.message
    assert session.state_hash() == before, f"refused {name} changed the state"
    return result.message or ""


def live_auction(session: Session, *, with_bids: bool) -> tuple[str, str, Decimal | None, str]:
    """(listing, seller, high bid, min increment) of a running auction."""
    found = rows(
        session,
        f"""SELECT id, seller_id, high_bid, min_increment FROM listings
            WHERE format = 'auction' AND status = 'active' AND closes_at > ?
              AND bid_count {">" if with_bids else "="} 0 ORDER BY id""",
        now_sql(session),
    )
    assert found
    lid, seller, high, inc = found[0]
    return (
        lid,
        seller,
        None if high is None else Decimal(high).scaleb(-2),
        str(Decimal(inc).scaleb(-2)),
    )


def fixed_listing(session: Session) -> tuple[str, str, Decimal]:
    lid, seller, price = rows(
        session,
        """SELECT id, seller_id, price FROM listings WHERE format = 'fixed_price'
           AND status = 'active' AND closes_at > ? ORDER BY id""",
        now_sql(session),
    )[0]
    return lid, seller, Decimal(price).scaleb(-2)


def stranger(session: Session, *not_: str | None) -> str:
    return next(u for (u,) in rows(session, "SELECT id FROM users ORDER BY id") if u not in not_)


# ------------------------------------------------------------ sampled states
@pytest.mark.parametrize("seed", [0, 7, 11])
def test_a_sampled_marketplace_is_big_enough_and_keeps_every_rule(seed: int) -> None:
    session = MARKET.session(seed=seed)
    assert rule_violations(session) == []
    for table, least in [("users", 30), ("listings", 100), ("bids", 150), ("sales", 30)]:
        assert one(session, f"SELECT COUNT(*) FROM {table}") >= least, table
    statuses = {s for (s,) in rows(session, "SELECT DISTINCT status FROM listings")}
    assert {"active", "sold", "unsold"} <= statuses
    assert one(session, "SELECT COUNT(*) FROM offers WHERE status = 'pending'") > 0
    assert (
        one(
            session,
            "SELECT COUNT(*) FROM listings WHERE status = 'active' AND closes_at <= ?",
            now_sql(session),
        )
        > 0
    ), "no auction awaits settlement"
    session.close()


def test_larger_sizes_scale_and_stay_consistent() -> None:
    session = MARKET.session(seed=3, size=2)
    assert one(session, "SELECT COUNT(*) FROM listings") == 280
    assert rule_violations(session) == []
    session.close()


# ------------------------------------------------------------ one test per rule
def test_bid_too_low_and_the_increment_rule(market: Session) -> None:
    lid, seller, high, inc = live_auction(market, with_bids=True)
    assert high is not None
    buyer = stranger(
        market, seller, one(market, "SELECT high_bidder_id FROM listings WHERE id = ?", lid)
    )
    least = high + Decimal(inc)
    low = str(least - Decimal("0.01"))
    message = refused(
        market,
        "place_bid",
        {"listing_id": lid, "buyer_id": buyer, "amount": low},
        ErrorKind.PRECONDITION_FAILED,
        "bid_too_low",
    )
    assert str(least) in message
    out = call_ok(market, "place_bid", {"listing_id": lid, "buyer_id": buyer, "amount": str(least)})
    assert out["high_bidder_id"] == buyer and Decimal(out["minimum_next_bid"]) == least + Decimal(
        inc
    )
    assert rule_violations(market) == []


def test_the_first_bid_needs_the_start_price(market: Session) -> None:
    lid, seller, high, _ = live_auction(market, with_bids=False)
    assert high is None
    price = Decimal(one(market, "SELECT price FROM listings WHERE id = ?", lid)).scaleb(-2)
    buyer = stranger(market, seller)
    refused(
        market,
        "place_bid",
        {"listing_id": lid, "buyer_id": buyer, "amount": str(price - Decimal("0.01"))},
        ErrorKind.PRECONDITION_FAILED,
        "bid_too_low",
    )
    call_ok(market, "place_bid", {"listing_id": lid, "buyer_id": buyer, "amount": str(price)})


def test_sellers_never_bid_offer_or_buy_on_their_own_listings(market: Session) -> None:
    lid, seller, high, _inc = live_auction(market, with_bids=True)
    assert high is not None
    refused(
        market,
        "place_bid",
        {"listing_id": lid, "buyer_id": seller, "amount": str(high + 100)},
        ErrorKind.PRECONDITION_FAILED,
        "own_listing",
    )
    fid, fseller, price = fixed_listing(market)
    refused(
        market,
        "buy_now",
        {"listing_id": fid, "buyer_id": fseller},
        ErrorKind.PRECONDITION_FAILED,
        "own_listing",
    )
    refused(
        market,
        "make_offer",
        {"listing_id": fid, "buyer_id": fseller, "offer_amount": str(price * Decimal("0.8"))},
        ErrorKind.PRECONDITION_FAILED,
        "own_listing",
    )


def test_the_high_bidder_cannot_outbid_themselves(market: Session) -> None:
    lid, _seller, high, _ = live_auction(market, with_bids=True)
    assert high is not None
    winner = one(market, "SELECT high_bidder_id FROM listings WHERE id = ?", lid)
    refused(
        market,
        "place_bid",
        {"listing_id": lid, "buyer_id": winner, "amount": str(high + 50)},
        ErrorKind.PRECONDITION_FAILED,
        "already_winning",
    )


def test_bids_only_on_running_auctions(market: Session) -> None:
    fid, fseller, price = fixed_listing(market)
    buyer = stranger(market, fseller)
    refused(
        market,
        "place_bid",
        {"listing_id": fid, "buyer_id": buyer, "amount": str(price)},
        ErrorKind.PRECONDITION_FAILED,
        "not_an_auction",
    )
    due = one(
        market,
        "SELECT id FROM listings WHERE status = 'active' AND closes_at <= ? AND format = 'auction' ORDER BY id",
        now_sql(market),
    )
    seller = one(market, "SELECT seller_id FROM listings WHERE id = ?", due)
    refused(
        market,
        "place_bid",
        {"listing_id": due, "buyer_id": stranger(market, seller), "amount": "99999"},
        ErrorKind.PRECONDITION_FAILED,
        "auction_closed",
    )
    sold = one(market, "SELECT id FROM listings WHERE status = 'sold' ORDER BY id")
    refused(
        market,
        "place_bid",
        {"listing_id": sold, "buyer_id": buyer, "amount": "99999"},
        ErrorKind.PRECONDITION_FAILED,
        "listing_not_active",
    )


def test_closing_sells_to_the_highest_bidder_once(market: Session) -> None:
    due = rows(
        market,
        """SELECT id, seller_id, high_bidder_id, high_bid FROM listings WHERE status = 'active'
           AND format = 'auction' AND closes_at <= ? AND bid_count > 0 ORDER BY id""",
        now_sql(market),
    )[0]
    lid, seller, winner, high = due
    refused(
        market,
        "close_auction",
        {"listing_id": lid, "seller_id": stranger(market, seller)},
        ErrorKind.PERMISSION_DENIED,
        "not_your_listing",
    )
    out = call_ok(market, "close_auction", {"listing_id": lid, "seller_id": seller})
    assert out["status"] == "sold" and out["sale"]["buyer_id"] == winner
    assert Decimal(out["sale"]["price"]) == Decimal(high).scaleb(-2)
    refused(
        market,
        "close_auction",
        {"listing_id": lid, "seller_id": seller},
        ErrorKind.PRECONDITION_FAILED,
        "listing_not_active",
    )
    running, rseller, _, _ = live_auction(market, with_bids=True)
    refused(
        market,
        "close_auction",
        {"listing_id": running, "seller_id": rseller},
        ErrorKind.PRECONDITION_FAILED,
        "auction_still_running",
    )
    assert rule_violations(market) == []


def test_offers_below_price_above_half_one_pending_per_buyer(market: Session) -> None:
    fid, seller, price = fixed_listing(market)
    pending = {
        b
        for (b,) in rows(
            market, "SELECT buyer_id FROM offers WHERE listing_id = ? AND status = 'pending'", fid
        )
    }
    buyer = stranger(market, seller, *pending)
    args = {"listing_id": fid, "buyer_id": buyer}
    refused(
        market,
        "make_offer",
        {**args, "offer_amount": str(price)},
        ErrorKind.PRECONDITION_FAILED,
        "offer_not_below_price",
    )
    half = (price / 2).quantize(Decimal("0.01"))
    refused(
        market,
        "make_offer",
        {**args, "offer_amount": str(half - Decimal("0.01"))},
        ErrorKind.PRECONDITION_FAILED,
        "offer_too_low",
    )
    call_ok(market, "make_offer", {**args, "offer_amount": str(half)})
    refused(
        market,
        "make_offer",
        {**args, "offer_amount": str(half + 1)},
        ErrorKind.PRECONDITION_FAILED,
        "offer_pending",
    )
    refused(
        market,
        "buy_now",
        {"listing_id": live_auction(market, with_bids=False)[0], "buyer_id": buyer},
        ErrorKind.PRECONDITION_FAILED,
        "not_fixed_price",
    )


def test_accepting_an_offer_sells_and_declines_the_others(market: Session) -> None:
    offer, lid, seller = rows(
        market,
        """SELECT o.id, o.listing_id, l.seller_id FROM offers o JOIN listings l ON l.id = o.listing_id
           WHERE o.status = 'pending' ORDER BY o.id""",
    )[0]
    refused(
        market,
        "respond_to_offer",
        {"offer_id": offer, "seller_id": stranger(market, seller), "decision": "accept"},
        ErrorKind.PERMISSION_DENIED,
        "not_your_listing",
    )
    others = {
        o
        for (o,) in rows(
            market,
            "SELECT id FROM offers WHERE listing_id = ? AND status = 'pending' AND id != ?",
            lid,
            offer,
        )
    }
    out = call_ok(
        market, "respond_to_offer", {"offer_id": offer, "seller_id": seller, "decision": "accept"}
    )
    assert out["offer"]["status"] == "accepted" and out["sale"]["source"] == "offer"
    assert set(out["declined_offer_ids"]) == others
    refused(
        market,
        "respond_to_offer",
        {"offer_id": offer, "seller_id": seller, "decision": "decline"},
        ErrorKind.PRECONDITION_FAILED,
        "offer_not_pending",
    )
    assert rule_violations(market) == []


def test_only_bidless_running_listings_can_be_cancelled(market: Session) -> None:
    lid, seller, _, _ = live_auction(market, with_bids=True)
    refused(
        market,
        "cancel_listing",
        {"listing_id": lid, "seller_id": seller},
        ErrorKind.PRECONDITION_FAILED,
        "listing_has_bids",
    )
    fid, fseller, _ = fixed_listing(market)
    out = call_ok(market, "cancel_listing", {"listing_id": fid, "seller_id": fseller})
    assert out["status"] == "cancelled"
    assert (
        one(market, "SELECT COUNT(*) FROM offers WHERE listing_id = ? AND status = 'pending'", fid)
        == 0
    )
    refused(
        market,
        "buy_now",
        {"listing_id": fid, "buyer_id": stranger(market, fseller)},
        ErrorKind.PRECONDITION_FAILED,
        "listing_not_active",
    )


def test_a_seller_cannot_list_the_same_title_twice(market: Session) -> None:
    lid, seller, _, _ = live_auction(market, with_bids=False)
    title = one(market, "SELECT title FROM listings WHERE id = ?", lid)
    args = {
        "seller_id": seller,
        "title": f"  {title.upper()} ",
        "category": "toys",
        "condition": "good",
        "format": "fixed_price",
        "price": "10",
    }
    refused(market, "create_listing", args, ErrorKind.PRECONDITION_FAILED, "duplicate_listing")
    out = call_ok(market, "create_listing", {**args, "title": "Brand new thing"})
    assert out["status"] == "active" and out["format"] == "fixed_price"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=4))
def test_a_sellers_rating_is_the_mean_of_their_ratings(new_stars: list[int]) -> None:
    session = MARKET.session(seed=0)
    try:
        unrated = rows(
            session,
            """SELECT s.id, s.buyer_id, s.seller_id FROM sales s WHERE s.id NOT IN
               (SELECT sale_id FROM ratings) ORDER BY s.seller_id, s.id""",
        )
        seller = unrated[0][2]
        mine = [r for r in unrated if r[2] == seller][: len(new_stars)]
        old = [s for (s,) in rows(session, "SELECT stars FROM ratings WHERE seller_id = ?", seller)]
        for (sale, buyer, _), stars in zip(mine, new_stars, strict=False):
            out = call_ok(
                session, "rate_seller", {"sale_id": sale, "buyer_id": buyer, "stars": stars}
            )
            old.append(stars)
            want = (Decimal(sum(old)) / len(old)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
            assert Decimal(out["seller_rating"]) == want and out["seller_rating_count"] == len(old)
        sale, buyer, _ = mine[0]
        refused(
            session,
            "rate_seller",
            {"sale_id": sale, "buyer_id": buyer, "stars": 5},
            ErrorKind.PRECONDITION_FAILED,
            "already_rated",
        )
        assert rule_violations(session) == []
    finally:
        session.close()


def test_only_the_buyer_rates_a_sale(market: Session) -> None:
    sale, _buyer, seller = rows(
        market,
        "SELECT id, buyer_id, seller_id FROM sales WHERE id NOT IN (SELECT sale_id FROM ratings) ORDER BY id",
    )[0]
    refused(
        market,
        "rate_seller",
        {"sale_id": sale, "buyer_id": seller, "stars": 5},
        ErrorKind.PERMISSION_DENIED,
        "not_your_purchase",
    )


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(min_value=-3, max_value=6), min_size=1, max_size=6))
def test_random_bid_sequences_keep_the_increment_rule(raises: list[int]) -> None:
    session = MARKET.session(seed=0)
    try:
        lid, seller, _, inc = live_auction(session, with_bids=True)
        users = [u for (u,) in rows(session, "SELECT id FROM users ORDER BY id") if u != seller]
        for i, k in enumerate(raises):
            high_cents, leader = rows(
                session, "SELECT high_bid, high_bidder_id FROM listings WHERE id = ?", lid
            )[0]
            amount = Decimal(high_cents).scaleb(-2) + Decimal(inc) * k
            buyer = users[i % 5]
            result = session.call(
                "place_bid", {"listing_id": lid, "buyer_id": buyer, "amount": str(amount)}
            )
            assert result.ok == (k >= 1 and buyer != leader), result.message
        assert rule_violations(session) == []
    finally:
        session.close()


# ------------------------------------------------------------ conformance
FUZZ_SAMPLES = [
    "usr_001",
    "usr_999",
    "lst_0001",
    "lst_9999",
    "ofr_0001",
    "ofr_9999",
    "sal_0001",
    "sal_9999",
    "auction",
    "fixed_price",
    "accept",
    "decline",
    "0.01",
    "99999.99",
    "LEGO",
]

TestConformance = conformance_suite("marketplace", samples=FUZZ_SAMPLES, invariants=rule_violations)


def test_the_server_offers_thirteen_tools_and_names_its_rules() -> None:
    from prove_plugins.marketplace import tools

    assert len(MARKET.visible_tools()) == 13
    writes = {t.name for t in MARKET.visible_tools() if t.writes}
    assert writes == {
        "create_listing",
        "place_bid",
        "buy_now",
        "make_offer",
        "respond_to_offer",
        "close_auction",
        "cancel_listing",
        "rate_seller",
    }
    source = Path(tools.__file__).read_text()
    body = source.split(
        "# ----------------------------------------------------------------- helpers"
    )[1]
    for name in tools.RULES:
        assert re.search(rf"_(broken|denied)\(\s*\"{name}\"", body), f"rule {name} is never raised"


def test_entity_sources_list_entities_that_exist(market: Session) -> None:
    tables = {
        "user": "users",
        "listing": "listings",
        "offer": "offers",
        "sale": "sales",
        "bid": "bids",
    }
    assert set(MARKET.entities) == set(tables)
    for kind, source in MARKET.entities.items():
        records = market.list_entities(kind)
        assert records, kind
        ids = {i for (i,) in rows(market, f"SELECT id FROM {tables[kind]}")}
        assert {r[source.key] for r in records} <= ids, kind
    for record in market.list_entities("listing"):
        # who buys is the conversation's member (persona=), never a listing's designated
        # buyer: a buyer_id field would make grounding take the listing only for that one
        assert "buyer_id" not in record and record["seller_id"]
    for record in market.list_entities("offer"):
        assert (
            one(market, "SELECT status FROM offers WHERE id = ?", record["offer_id"]) == "pending"
        )


def test_example_values_fit_their_parameters(market: Session) -> None:
    ctx = market.context()
    rng = random.Random(0)
    for tool in MARKET.visible_tools():
        fields = tool.args_model.model_fields
        for name, source in tool.examples.items():
            drawn = [source(ctx, rng) for _ in range(5)] if callable(source) else list(source)
            annotation = fields[name].annotation
            assert annotation is not None, (tool.name, name)
            for value in drawn:
                TypeAdapter(annotation).validate_python(value)


def test_hand_written_tasks_cover_chains_turns_clarify_and_abstain() -> None:
    tasks = [
        t
        for t in prove_gym.get_registry().tasks("marketplace")
        if re.fullmatch(r"marketplace-\d{3}", t.id)
    ]
    assert 3 <= len(tasks) <= 8
    kinds = {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "clarify", "abstain"} <= kinds
    assert any(len(t.turns) > 1 and t.steps for t in tasks)
    assert any(any(s.depends_on for s in t.steps) for t in tasks)


# ------------------------------------------------------------ random plausible calls
class MarketMachine(RuleBasedStateMachine):
    """Plausible buyers and sellers acting at random; every rule holds after every call."""

    @initialize(seed=st.sampled_from([0, 7]))
    def start(self, seed: int) -> None:
        self.session = MARKET.session(seed=seed)
        self.users = [u for (u,) in rows(self.session, "SELECT id FROM users ORDER BY id")]

    def teardown(self) -> None:
        if hasattr(self, "session"):
            self.session.close()

    def _pick(self, data: st.DataObject, sql: str, *params: Any) -> tuple | None:
        found = rows(self.session, sql, *params)
        return data.draw(st.sampled_from(found)) if found else None

    def _call(self, name: str, args: dict[str, Any]) -> None:
        before = self.session.state_hash()
        result = self.session.call(name, args)
        assert result.error_kind != ErrorKind.INTERNAL, result.message
        if not result.ok:
            assert (result.message or "").startswith("Rule '"), result.message
            assert self.session.state_hash() == before, f"refused {name} changed the state"

    @rule(data=st.data(), raise_by=st.integers(min_value=-1, max_value=3))
    def bid(self, data: st.DataObject, raise_by: int) -> None:
        picked = self._pick(
            data,
            "SELECT id, price, high_bid, min_increment FROM listings WHERE format = 'auction' "
            "AND status = 'active' ORDER BY id",
        )
        if picked is None:
            return
        lid, price, high, inc = picked
        amount = Decimal((high or price) + inc * raise_by).scaleb(-2)
        buyer = data.draw(st.sampled_from(self.users))
        if amount > 0:
            self._call("place_bid", {"listing_id": lid, "buyer_id": buyer, "amount": str(amount)})

    @rule(data=st.data(), pct=st.sampled_from(["0.4", "0.6", "0.9", "1.0"]))
    def offer_or_buy(self, data: st.DataObject, pct: str) -> None:
        picked = self._pick(
            data, "SELECT id, price FROM listings WHERE status = 'active' ORDER BY id"
        )
        if picked is None:
            return
        lid, price = picked
        buyer = data.draw(st.sampled_from(self.users))
        if pct == "1.0":
            self._call("buy_now", {"listing_id": lid, "buyer_id": buyer})
        else:
            amount = (Decimal(price).scaleb(-2) * Decimal(pct)).quantize(Decimal("0.01"))
            self._call(
                "make_offer", {"listing_id": lid, "buyer_id": buyer, "offer_amount": str(amount)}
            )

    @rule(data=st.data(), decision=st.sampled_from(["accept", "decline"]), as_seller=st.booleans())
    def answer(self, data: st.DataObject, decision: str, as_seller: bool) -> None:
        picked = self._pick(
            data,
            "SELECT o.id, l.seller_id FROM offers o JOIN listings l ON l.id = o.listing_id "
            "ORDER BY o.id",
        )
        if picked is None:
            return
        oid, seller = picked
        actor = seller if as_seller else data.draw(st.sampled_from(self.users))
        self._call("respond_to_offer", {"offer_id": oid, "seller_id": actor, "decision": decision})

    @rule(data=st.data(), cancel=st.booleans())
    def close_or_cancel(self, data: st.DataObject, cancel: bool) -> None:
        picked = self._pick(
            data, "SELECT id, seller_id FROM listings WHERE status = 'active' ORDER BY id"
        )
        if picked is None:
            return
        lid, seller = picked
        name = "cancel_listing" if cancel else "close_auction"
        self._call(name, {"listing_id": lid, "seller_id": seller})

    @rule(data=st.data(), stars=st.integers(min_value=1, max_value=5), as_buyer=st.booleans())
    def rate(self, data: st.DataObject, stars: int, as_buyer: bool) -> None:
        picked = self._pick(data, "SELECT id, buyer_id FROM sales ORDER BY id")
        if picked is None:
            return
        sid, buyer = picked
        actor = buyer if as_buyer else data.draw(st.sampled_from(self.users))
        self._call("rate_seller", {"sale_id": sid, "buyer_id": actor, "stars": stars})

    @invariant()
    def rules_hold(self) -> None:
        if hasattr(self, "session"):
            assert rule_violations(self.session) == []


MarketMachine.TestCase.settings = settings(
    max_examples=12,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestMarketMachine = MarketMachine.TestCase


def test_shipped_tasks_are_sorted_unique_and_many() -> None:
    tasks = prove_gym.get_registry().tasks("marketplace")
    ids = [t.id for t in tasks]
    assert len(ids) == len(set(ids)) >= 200
    lines = MARKET.tasks_file.read_text().splitlines() if MARKET.tasks_file else []
    assert [json.loads(line)["id"] for line in lines] == sorted(ids)
    assert sum(1 for i in ids if re.fullmatch(r"marketplace-\d{3}", i)) >= 3


# ------------------------------------------------------------ -v1: a signed-in member
def test_v1_a_member_buys_others_listings_and_sells_only_their_own() -> None:
    """prove/marketplace-v1 (issue #50: the assistant bid, bought and sold as any member)."""
    with MARKET.session(seed=0) as v0:
        offer = v0.list_entities("offer")[0]
        seller, buyer = offer["seller_id"], offer["buyer_id"]
        listing = offer["listing_id"]
        other = one(v0, "SELECT id FROM users WHERE id NOT IN (?, ?) ORDER BY id", seller, buyer)
        as_seller = {"offer_id": offer["offer_id"], "seller_id": seller, "decision": "decline"}
        assert v0.call("respond_to_offer", as_seller).ok  # -v0: acts for whoever it names
    with MARKET.session(seed=0, env_version=1, principal=other) as s:
        before = s.state_hash()
        for name, args in [
            ("respond_to_offer", as_seller),
            ("cancel_listing", {"listing_id": listing, "seller_id": seller}),
            ("buy_now", {"listing_id": listing, "buyer_id": buyer}),
            ("list_sales", {"user_id": buyer, "role": "buyer"}),
        ]:
            refused = s.call(name, args)
            assert refused.error_kind == ErrorKind.PERMISSION_DENIED, (name, refused)
            assert (refused.message or "").startswith("Rule 'not_your_user' failed"), refused
        # as themself on another's listing: the tool's own rule, as in -v0
        mine = s.call("cancel_listing", {"listing_id": listing, "seller_id": other})
        assert mine.error_kind == ErrorKind.PERMISSION_DENIED
        assert (mine.message or "").startswith("Rule 'not_your_listing' failed"), mine
        assert s.state_hash() == before
        # others' public profiles and listings stay open to them
        assert s.call("get_seller_profile", {"seller_id": seller}).ok
        assert s.call("buy_now", {"listing_id": listing, "buyer_id": other}).ok
    with MARKET.session(seed=0, env_version=1, principal=seller) as s:
        assert s.call("respond_to_offer", as_seller).ok


def test_v1_listings_show_a_member_what_a_member_sees() -> None:
    """find_users matches no email for a member; a listing's offers are its seller's and each
    buyer's own to see; -v0 shows everything as before."""
    with MARKET.session(seed=0) as v0:
        offer = v0.list_entities("offer")[0]
        seller, buyer, listing = offer["seller_id"], offer["buyer_id"], offer["listing_id"]
        other = one(v0, "SELECT id FROM users WHERE id NOT IN (?, ?) ORDER BY id", seller, buyer)
        email, username = rows(v0, "SELECT email, username FROM users WHERE id = ?", seller)[0]
        assert [u["user_id"] for u in v0.call("find_users", {"query": email}).content] == [seller]
        every = v0.call("get_listing", {"listing_id": listing}).content["offers"]
        assert offer["offer_id"] in {o["offer_id"] for o in every}
    with MARKET.session(seed=0, env_version=1, principal=other) as s:
        assert s.call("find_users", {"query": email}).content == []
        by_name = s.call("find_users", {"query": username}).content
        assert [u["user_id"] for u in by_name] == [seller]
        assert s.call("get_listing", {"listing_id": listing}).content["offers"] == []
    with MARKET.session(seed=0, env_version=1, principal=buyer) as s:
        own = s.call("get_listing", {"listing_id": listing}).content["offers"]
        assert own and {o["buyer_id"] for o in own} == {buyer}
    with MARKET.session(seed=0, env_version=1, principal=seller) as s:
        assert s.call("get_listing", {"listing_id": listing}).content["offers"] == every
