"""Marketplace state: users (every user may buy and sell), listings, bids, offers, sales, ratings.

Money is exact everywhere (:class:`~prove_gym.server.Money`, integer cents in SQLite). Times
are relative to the state's fixed "now". The rules every state obeys (the tests check them
after random call sequences):

- an auction's bids rise: each is at least the start price (the first) or the previous high
  bid plus the listing's minimum increment; ``high_bid``/``high_bidder_id``/``bid_count``
  are those of its bids;
- nobody bids on, offers on or buys their own listing;
- a listing has at most one sale; a sold auction's sale goes to its highest bidder at the
  high bid, a sold fixed-price listing's sale is at its price (buy now) or an accepted offer;
- an accepted offer has the sale of its listing; only an active listing has pending offers;
- a sale has at most one rating, by its buyer; a seller's ``rating`` is the mean of their
  ratings' stars (two decimals, half up) and ``rating_count`` how many there are.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal

from sqlalchemy import DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from prove_gym.server import Money

CENT = Decimal("0.01")
ZERO = Decimal("0.00")

CATEGORIES: tuple[str, ...] = (
    "electronics",
    "collectibles",
    "fashion",
    "home",
    "sports",
    "books",
    "music",
    "toys",
)
CONDITIONS: tuple[str, ...] = ("new", "like_new", "good", "fair", "for_parts")
DURATIONS: tuple[int, ...] = (1, 3, 5, 7, 10)
"""Auction lengths in days; a fixed-price listing runs 30 days."""
FIXED_PRICE_DAYS = 30


class Base(DeclarativeBase):
    pass


class User(Base):
    """A marketplace member: anyone can buy, and sell; ``rating`` is their seller rating."""

    __tablename__ = "users"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    username: Mapped[str] = mapped_column(String(40), unique=True)
    email: Mapped[str] = mapped_column(String(120))
    city: Mapped[str] = mapped_column(String(60))
    joined_at: Mapped[dt.datetime] = mapped_column(DateTime)
    rating: Mapped[Decimal | None] = mapped_column(Money(), nullable=True)
    """Mean stars of the ratings they received as a seller (None before the first)."""
    rating_count: Mapped[int] = mapped_column(Integer, default=0)


class Listing(Base):
    __tablename__ = "listings"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    seller_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    title: Mapped[str] = mapped_column(String(120))
    description: Mapped[str] = mapped_column(String(500))
    category: Mapped[str] = mapped_column(String(16))
    condition: Mapped[str] = mapped_column(String(12))
    format: Mapped[str] = mapped_column(String(12))
    """"auction" (bids until closes_at) or "fixed_price" (buy now at price, or make an offer)."""
    price: Mapped[Decimal] = mapped_column(Money())
    """An auction's start price (the lowest first bid) or the fixed price."""
    min_increment: Mapped[Decimal] = mapped_column(Money())
    high_bid: Mapped[Decimal | None] = mapped_column(Money(), nullable=True)
    high_bidder_id: Mapped[str | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    bid_count: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(10))
    """"active", "sold", "unsold" (closed without a sale) or "cancelled"."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    closes_at: Mapped[dt.datetime] = mapped_column(DateTime)
    closed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)

    seller: Mapped[User] = relationship(foreign_keys=[seller_id])
    bids: Mapped[list[Bid]] = relationship(order_by=lambda: (Bid.amount.desc(), Bid.id))
    offers: Mapped[list[Offer]] = relationship(order_by="Offer.id")


class Bid(Base):
    __tablename__ = "bids"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    listing_id: Mapped[str] = mapped_column(ForeignKey("listings.id"), index=True)
    buyer_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    amount: Mapped[Decimal] = mapped_column(Money())
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


class Offer(Base):
    """A buyer's offer below a fixed-price listing's price; the seller accepts or declines."""

    __tablename__ = "offers"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    listing_id: Mapped[str] = mapped_column(ForeignKey("listings.id"), index=True)
    buyer_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    amount: Mapped[Decimal] = mapped_column(Money())
    message: Mapped[str] = mapped_column(String(200), default="")
    status: Mapped[str] = mapped_column(String(10))
    """"pending", "accepted" or "declined"."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    responded_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class Sale(Base):
    __tablename__ = "sales"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    listing_id: Mapped[str] = mapped_column(ForeignKey("listings.id"), unique=True)
    seller_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    buyer_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    price: Mapped[Decimal] = mapped_column(Money())
    source: Mapped[str] = mapped_column(String(8))
    """"auction" (highest bid), "buy_now" (the fixed price) or "offer" (an accepted offer)."""
    offer_id: Mapped[str | None] = mapped_column(ForeignKey("offers.id"), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    listing: Mapped[Listing] = relationship()


class Rating(Base):
    """The buyer's stars (1-5) for the seller of one sale."""

    __tablename__ = "ratings"
    __table_args__ = (UniqueConstraint("sale_id"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    sale_id: Mapped[str] = mapped_column(ForeignKey("sales.id"))
    seller_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    buyer_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    stars: Mapped[int] = mapped_column(Integer)
    comment: Mapped[str] = mapped_column(String(300), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


# ------------------------------------------------------------ domain rules
# Shared by the sampler and the tools, so sampled history and live calls agree exactly.
def min_increment(price: Decimal) -> Decimal:
    """The smallest raise over the high bid, by the listing's start price.

    >>> min_increment(Decimal("18.00")), min_increment(Decimal("240.00"))
    (Decimal('0.50'), Decimal('5.00'))
    """
    for limit, step in ((25, "0.50"), (100, "1.00"), (500, "5.00"), (1000, "10.00")):
        if price < limit:
            return Decimal(step)
    return Decimal("25.00")


def minimum_bid(listing: Listing) -> Decimal:
    """The least the next bid may be: the start price, or the high bid plus the increment."""
    if listing.high_bid is None:
        return listing.price
    return listing.high_bid + listing.min_increment


def mean_rating(stars: list[int]) -> Decimal | None:
    """A seller's rating: the mean stars, two decimals, half up.

    >>> mean_rating([5, 4, 4]), mean_rating([])
    (Decimal('4.33'), None)
    """
    if not stars:
        return None
    return (Decimal(sum(stars)) / len(stars)).quantize(CENT, rounding=ROUND_HALF_UP)
