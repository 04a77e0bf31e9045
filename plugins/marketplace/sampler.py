"""A realistic marketplace: size 1 gives 40 users, ~140 listings (about two thirds auctions),
~400 bids, ~60 offers, ~60 sales and ~40 ratings; size n gives n times as many.

History covers the 40 days before "now". Each listing is replayed with the live rules:
bids rise by at least the minimum increment and never come from the seller, an auction
that closed more than two days before "now" was settled (sold to its highest bidder, or unsold), a few have
closed but still await settlement, fixed-price listings sold at their price or to an
accepted offer, and buyers rated most sales older than two days.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from random import Random

from prove_gym.server import SampleContext

from .models import (
    CENT,
    DURATIONS,
    FIXED_PRICE_DAYS,
    Bid,
    Listing,
    Offer,
    Rating,
    Sale,
    User,
    mean_rating,
    min_increment,
)

# category -> [(title, low, high)]
ITEMS: dict[str, list[tuple[str, int, int]]] = {
    "electronics": [
        ("Apple iPhone 13 128GB", 280, 520),
        ("Sony WH-1000XM4 headphones", 120, 260),
        ("Nintendo Switch OLED console", 190, 330),
        ("Canon EOS R6 camera body", 1100, 1800),
        ("Kindle Paperwhite 11th gen", 60, 120),
        ("Raspberry Pi 4 kit", 45, 95),
    ],
    "collectibles": [
        ("1999 Pokemon Charizard holo card", 150, 900),
        ("Vintage Rolex Datejust 1601", 2500, 6000),
        ("Signed Michael Jordan rookie card", 800, 3000),
        ("Morgan silver dollar 1881", 40, 120),
        ("Star Wars Kenner figure, 1978", 25, 180),
    ],
    "fashion": [
        ("Levi's 501 jeans, W32", 20, 60),
        ("Patagonia Nano Puff jacket", 70, 160),
        ("Nike Air Jordan 1 Retro, size 10", 120, 400),
        ("Ray-Ban Wayfarer sunglasses", 45, 110),
        ("Coach leather tote", 90, 250),
    ],
    "home": [
        ("KitchenAid stand mixer", 150, 320),
        ("Dyson V11 vacuum", 220, 420),
        ("Le Creuset dutch oven 5.5qt", 120, 280),
        ("Mid-century teak side table", 80, 300),
        ("Vitamix 5200 blender", 180, 340),
    ],
    "sports": [
        ("Trek road bike, 56cm", 450, 1400),
        ("Garmin Forerunner 255", 150, 260),
        ("Callaway golf iron set", 250, 650),
        ("Peloton dumbbells set", 40, 120),
        ("Burton snowboard 156", 140, 380),
    ],
    "books": [
        ("Harry Potter first edition box set", 60, 400),
        ("The Lord of the Rings, 1965 Ace paperback", 30, 150),
        ("Calvin and Hobbes complete collection", 70, 160),
        ("Dune, signed hardcover", 200, 900),
    ],
    "music": [
        ("Fender Player Stratocaster", 450, 750),
        ("Pink Floyd The Wall vinyl, 1979", 25, 90),
        ("Yamaha P-45 digital piano", 250, 420),
        ("Shure SM7B microphone", 250, 380),
        ("Roland TR-8S drum machine", 450, 650),
    ],
    "toys": [
        ("LEGO Millennium Falcon 75192", 600, 900),
        ("LEGO Hogwarts Castle 71043", 300, 480),
        ("Hot Wheels redline lot of 20", 60, 250),
        ("American Girl doll Samantha", 60, 180),
    ],
}
CONDITION_WEIGHTS = [("new", 2), ("like_new", 4), ("good", 5), ("fair", 2), ("for_parts", 1)]
CONDITION_TEXT = {
    "new": "Brand new, still sealed in the original box.",
    "like_new": "Used a handful of times, no visible wear.",
    "good": "Normal signs of use, fully working.",
    "fair": "Visible scratches and wear, works fine.",
    "for_parts": "Not working; sold as is for parts or repair.",
}
COMMENTS = {
    5: ["Fast shipping, exactly as described!", "Great seller, would buy again.", ""],
    4: ["Item as described, shipping a bit slow.", "Good communication.", ""],
    3: ["OK, but packaging was poor.", "Took over a week to ship."],
    2: ["Item had more wear than described."],
    1: ["Never responded to messages.", "Arrived damaged."],
}
HISTORY_DAYS = 40


def _cents(value: float) -> Decimal:
    return Decimal(str(round(value, 2))).quantize(CENT)


def _nice(rng: Random, low: int, high: int) -> Decimal:
    raw = rng.uniform(low, high)
    if raw < 30:
        return _cents(round(raw * 2) / 2 - 0.01 if rng.random() < 0.4 else round(raw))
    step = 5 if raw < 300 else 10 if raw < 1000 else 50
    return Decimal(int(raw // step * step)).quantize(CENT) + (
        Decimal("-0.01") if rng.random() < 0.3 else Decimal(0)
    )


def _stars(rng: Random) -> int:
    return rng.choices([5, 4, 3, 2, 1], weights=[55, 25, 10, 6, 4])[0]


# Rows are built as plain objects (attributes named as the columns) and inserted a table at
# a time, in the order the ORM's flushes wrote them: a mapped object costs the ORM ~30 µs to
# build and a flush more to write. ``eq=False``: compared by identity, as mapped objects are.
@dataclass(slots=True, eq=False)
class _User:
    id: str
    name: str
    username: str
    email: str
    city: str
    joined_at: dt.datetime
    rating: Decimal | None
    rating_count: int


@dataclass(slots=True, eq=False)
class _Listing:
    id: str
    seller_id: str
    title: str
    description: str
    category: str
    condition: str
    format: str
    price: Decimal
    min_increment: Decimal
    high_bid: Decimal | None
    high_bidder_id: str | None
    bid_count: int
    status: str
    created_at: dt.datetime
    closes_at: dt.datetime
    closed_at: dt.datetime | None


@dataclass(slots=True, eq=False)
class _Bid:
    id: str
    listing_id: str
    buyer_id: str
    amount: Decimal
    created_at: dt.datetime


@dataclass(slots=True, eq=False)
class _Offer:
    id: str
    listing_id: str
    buyer_id: str
    amount: Decimal
    message: str
    status: str
    created_at: dt.datetime
    responded_at: dt.datetime | None = None


@dataclass(slots=True, eq=False)
class _Sale:
    id: str
    listing_id: str
    seller_id: str
    buyer_id: str
    price: Decimal
    source: str
    offer_id: str | None
    created_at: dt.datetime


@dataclass(slots=True, eq=False)
class _Rating:
    id: str
    sale_id: str
    seller_id: str
    buyer_id: str
    stars: int
    comment: str
    created_at: dt.datetime


def sample_marketplace(ctx: SampleContext) -> None:
    rng, fake, now = ctx.rng, ctx.fake, ctx.now.replace(second=0, microsecond=0)
    n_users = 40 * ctx.size
    users: list[_User] = []
    taken: set[str] = set()
    for i in range(1, n_users + 1):
        name = fake.name()
        base = (name.split()[0][0] + name.split()[-1]).lower()
        handle = base
        while handle in taken:
            handle = f"{base}{rng.randrange(10, 99)}"
        taken.add(handle)
        users.append(
            _User(
                id=f"usr_{i:03d}",
                name=name,
                username=handle,
                email=f"{handle}@{rng.choice(['gmail.com', 'yahoo.com', 'outlook.com'])}",
                city=fake.city(),
                joined_at=now - dt.timedelta(days=rng.randrange(60, 2000)),
                rating=None,
                rating_count=0,
            )
        )
    sellers = rng.sample(users, k=max(2, n_users // 2))
    listings: list[_Listing] = []
    bids: list[_Bid] = []
    offers: list[_Offer] = []
    sales: list[_Sale] = []
    ratings: list[_Rating] = []
    stars_of: dict[str, list[int]] = {}

    def sell(
        listing: _Listing,
        buyer: str,
        price: Decimal,
        source: str,
        at: dt.datetime,
        offer_id: str | None = None,
    ) -> None:
        listing.status, listing.closed_at = "sold", at
        sale = _Sale(
            id=f"sal_{len(sales) + 1:04d}",
            listing_id=listing.id,
            seller_id=listing.seller_id,
            buyer_id=buyer,
            price=price,
            source=source,
            offer_id=offer_id,
            created_at=at,
        )
        sales.append(sale)
        if at < now - dt.timedelta(days=2) and rng.random() < 0.7:
            stars = _stars(rng)
            stars_of.setdefault(listing.seller_id, []).append(stars)
            ratings.append(
                _Rating(
                    id=f"rat_{len(ratings) + 1:04d}",
                    sale_id=sale.id,
                    seller_id=listing.seller_id,
                    buyer_id=buyer,
                    stars=stars,
                    comment=rng.choice(COMMENTS[stars]),
                    created_at=min(now, at + dt.timedelta(hours=rng.randrange(12, 48))),
                )
            )

    for i in range(1, 140 * ctx.size + 1):
        seller = rng.choice(sellers)
        category = rng.choice(list(ITEMS))
        title, low, high = rng.choice(ITEMS[category])
        condition = rng.choices(
            [c for c, _ in CONDITION_WEIGHTS], weights=[w for _, w in CONDITION_WEIGHTS]
        )[0]
        auction = rng.random() < 0.65
        value = _nice(rng, low, high)
        if condition in ("fair", "for_parts"):
            value = max(Decimal("5.00"), (value * Decimal("0.6")).quantize(Decimal("1")))
        price = (
            max(
                Decimal("0.99"), (value * Decimal(rng.choice(["0.3", "0.5", "0.7"]))).quantize(CENT)
            )
            if auction
            else value
        )
        back = (14 if auction else HISTORY_DAYS) * 24 * 60
        created = now - dt.timedelta(minutes=rng.randrange(60, back))
        days = rng.choice(DURATIONS) if auction else FIXED_PRICE_DAYS
        closes = created + dt.timedelta(days=days)
        listing = _Listing(
            id=f"lst_{i:04d}",
            seller_id=seller.id,
            title=title,
            description=f"{title}. {CONDITION_TEXT[condition]} Ships from {seller.city}.",
            category=category,
            condition=condition,
            format="auction" if auction else "fixed_price",
            price=price,
            min_increment=min_increment(price),
            high_bid=None,
            high_bidder_id=None,
            bid_count=0,
            status="active",
            created_at=created,
            closes_at=closes,
            closed_at=None,
        )
        listings.append(listing)
        others = [u.id for u in users if u.id != seller.id]
        end = min(closes, now)
        if auction:
            n_bids = rng.choices(range(0, 9), weights=[3, 3, 3, 3, 2, 2, 1, 1, 1])[0]
            t = created
            span = (end - created).total_seconds()
            for _ in range(n_bids):
                t = t + dt.timedelta(seconds=rng.uniform(0, span / (n_bids + 1)))
                if t >= end:
                    break
                bidder = rng.choice([u for u in others if u != listing.high_bidder_id])
                floor = (
                    price if listing.high_bid is None else listing.high_bid + listing.min_increment
                )
                amount = floor + listing.min_increment * rng.choice([0, 0, 1, 2, 4])
                bids.append(
                    _Bid(
                        id=f"bid_{len(bids) + 1:05d}",
                        listing_id=listing.id,
                        buyer_id=bidder,
                        amount=amount,
                        created_at=t.replace(microsecond=0),
                    )
                )
                listing.high_bid, listing.high_bidder_id = amount, bidder
                listing.bid_count += 1
            # closed over two days ago: settled; closed recently: awaiting settlement.
            if closes < now - dt.timedelta(days=2):
                if listing.high_bidder_id is not None and listing.high_bid is not None:
                    sell(listing, listing.high_bidder_id, listing.high_bid, "auction", closes)
                else:
                    listing.status, listing.closed_at = "unsold", closes
            elif listing.bid_count == 0 and rng.random() < 0.05:
                listing.status, listing.closed_at = "cancelled", created + dt.timedelta(hours=5)
            continue
        # fixed price: offers, then maybe a sale
        pending: set[str] = set()
        first_offer = len(offers)  # this listing's offers are the ones added below
        for _ in range(rng.choices([0, 1, 2, 3], weights=[5, 3, 2, 1])[0]):
            buyer = rng.choice([u for u in others if u not in pending])
            at = created + dt.timedelta(minutes=rng.randrange(30, 60 * 24 * 5))
            if at >= now:
                continue
            pct = Decimal(rng.choice(["0.60", "0.70", "0.75", "0.80", "0.85", "0.90"]))
            offer = _Offer(
                id=f"ofr_{len(offers) + 1:04d}",
                listing_id=listing.id,
                buyer_id=buyer,
                amount=max(Decimal("1.00"), (price * pct).quantize(Decimal("1"))),
                message=rng.choice(
                    ["", "Would you take this?", "Can pick up today.", "Cash ready"]
                ),
                status="pending",
                created_at=at,
            )
            offers.append(offer)
            if offer.amount >= price:
                offers.pop()
                continue
            pending.add(buyer)
        mine = offers[first_offer:]
        roll = rng.random()
        if roll < 0.25 and mine:
            best = max(mine, key=lambda o: (o.amount, o.id))
            at = min(now - dt.timedelta(minutes=5), best.created_at + dt.timedelta(hours=6))
            for o in mine:
                o.status = "accepted" if o is best else "declined"
                o.responded_at = at
            sell(listing, best.buyer_id, best.amount, "offer", at, best.id)
        elif roll < 0.45:
            at = created + dt.timedelta(minutes=rng.randrange(60, 60 * 24 * 10))
            if at < now:
                for o in mine:
                    o.status, o.responded_at = "declined", at
                sell(listing, rng.choice(others), price, "buy_now", at)
        else:
            for o in mine:
                if rng.random() < 0.3:
                    o.status, o.responded_at = "declined", o.created_at + dt.timedelta(hours=3)
        if listing.status == "active" and closes <= now:
            listing.status, listing.closed_at = "unsold", closes
            for o in mine:
                if o.status == "pending":
                    o.status, o.responded_at = "declined", closes
    for u in users:
        stars = stars_of.get(u.id, [])
        u.rating, u.rating_count = mean_rating(stars), len(stars)
    for model, rows in (
        (User, users),
        (Listing, listings),
        (Bid, bids),
        (Offer, offers),
        (Sale, sales),
        (Rating, ratings),
    ):
        ctx.insert(rows, into=model)
