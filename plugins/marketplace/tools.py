"""The marketplace server's 13 tools. Docstrings are what the model reads: keep examples concrete.

Every user can buy and sell, so tools that act for someone take the acting user's id
(``buyer_id`` or ``seller_id``). Business rules have names (``bid_too_low``, ``own_listing``,
...); a refused action raises ``PreconditionFailed`` (``PermissionDenied`` when the acting
user is not the listing's seller or the sale's buyer) with a message that starts with
``Rule '<name>' failed:`` and says what would be allowed instead. A refused call changes
nothing: the session rolls the whole call back.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import bindparam, func, select

from prove_gym.server import (
    Bound,
    Entity,
    EnvVersion,
    InvalidArgument,
    PermissionDenied,
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
    FIXED_PRICE_DAYS,
    Base,
    Bid,
    Listing,
    Offer,
    Rating,
    Sale,
    User,
    mean_rating,
    min_increment,
    minimum_bid,
)
from .sampler import sample_marketplace

OUT_OF_SCOPE = (
    "Print a shipping label for my last sale.",
    "Verify my identity so I can sell more.",
    "Report a counterfeit listing to the marketplace team.",
    "Save a search for cheap vintage cameras.",
    "Promote my listing on the front page.",
    "Pay with my gift card balance.",
    "Track the parcel for the book I bought.",
    "Leave feedback for the buyer.",
    "Change my username.",
    "Open a dispute, the item never arrived.",
    "Appraise my grandfather's watch before I list it.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

MEMBER = 1
"""The env version from which a session acts for one signed-in member: its buyer_id,
seller_id and user_id are the member's own (the core refuses another's); find_users matches
what a profile shows, and get_listing shows a listing's offers to its seller and each
buyer their own."""

server = Server(
    "marketplace",
    out_of_scope=OUT_OF_SCOPE,
    persona=("user",),
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.1.0",
    env_versions=[
        EnvVersion(
            MEMBER,
            "acts for one signed-in member (the task's principal): a call whose buyer_id, "
            "seller_id or user_id is another member is refused with permission_denied (rule "
            "not_your_user), so a member buys and bids on others' listings and sells, edits "
            "and answers offers on their own only; find_users matches names and usernames "
            "only (no email lookups) and get_listing shows offers only to the listing's "
            "seller and to their own buyer",
            tasks_file=Path(__file__).with_name("tasks_v1.jsonl"),
            principal=Principal(
                "user",
                "You are helping marketplace member {id}, who is signed in: you act for them "
                "only. Every buyer_id, seller_id and user_id you pass is {id}; a call acting "
                "as another member is refused (rule 'not_your_user'). They bid on, make "
                "offers on and buy other members' listings, and create, close, cancel and "
                "answer offers on their own. Other members' public profiles "
                "(get_seller_profile, find_users by name or username) and listings are open "
                "to them; the offers on a listing are shown only to its seller and to the "
                "member who made each.",
            ),
        )
    ],
    base=Base,
    sampler=sample_marketplace,
    description="An online marketplace where every member can buy and sell: auction listings "
    "take rising bids until their close time and are then sold to the highest bidder; "
    "fixed-price listings are bought at their price or sold to an offer the seller accepts. "
    "Buyers rate the seller of each purchase once; a seller's rating is the mean of those "
    "ratings.",
    instructions="Marketplace conventions: ids look like 'usr_007' (user), 'lst_0042' "
    "(listing), 'bid_00131' (bid), 'ofr_0012' (offer), 'sal_0031' (sale), 'rat_0020' "
    "(rating). Amounts are exact decimals in USD: pass a number or a string such as "
    '"125.40"; results show amounts as strings. Tools that act for someone take the acting '
    "user's id: buyer_id for bids, offers and purchases, seller_id for the seller's own "
    "listings and offers. Nobody can bid on, offer on or buy their own listing. A bid must "
    "reach the listing's minimum_bid (the start price, then the high bid plus the minimum "
    "increment). Times are UTC and auctions close at their closes_at. Refused calls name the "
    "rule that failed and change nothing.",
)

UserRow = Annotated[Record[User], Entity("user")]
AnyUserRow = Annotated[Record[User], Entity("user", shared=True)]
"""A member whose public profile anyone may see (not a member acted for)."""
ListingRow = Annotated[Record[Listing], Entity("listing")]
OfferRow = Annotated[Record[Offer], Entity("offer")]
SaleRow = Annotated[Record[Sale], Entity("sale")]
MAX_AMOUNT = Decimal("100000.00")
Amount = Annotated[Decimal, Field(gt=0, le=MAX_AMOUNT, decimal_places=2)]
SearchText = Annotated[str, Field(max_length=200)]
Category = Literal[
    "electronics", "collectibles", "fashion", "home", "sports", "books", "music", "toys"
]
Condition = Literal["new", "like_new", "good", "fair", "for_parts"]
Limit = Annotated[int, Field(ge=1, le=50)]
OFFER_FLOOR = Decimal("0.50")
"""An offer below half the price is refused (``offer_too_low``)."""

RULES: dict[str, str] = {
    "listing_not_active": "Only an active listing takes bids, offers, purchases or a "
    "cancellation; a sold, unsold or cancelled listing is history.",
    "not_an_auction": "Bids are for auction listings; a fixed-price listing is bought at its "
    "price or takes offers.",
    "not_fixed_price": "Buying now and offers are for fixed-price listings; an auction takes bids.",
    "auction_closed": "An auction takes no bids (and cannot be cancelled) once its closes_at "
    "has passed; it is settled by closing it.",
    "auction_still_running": "An auction can be closed only once its closes_at has passed.",
    "listing_expired": "A fixed-price listing cannot be bought or take offers after its closes_at.",
    "own_listing": "A seller never bids on, offers on or buys their own listing.",
    "bid_too_low": "A bid must be at least the start price (the first bid) or the high bid "
    "plus the listing's minimum increment.",
    "already_winning": "The current high bidder cannot outbid themselves.",
    "offer_not_below_price": "An offer must be below the price; at the price, buy it now.",
    "offer_too_low": "An offer must be at least half of the price.",
    "offer_pending": "A buyer has at most one pending offer per listing.",
    "offer_not_pending": "Only a pending offer can be accepted or declined.",
    "not_your_listing": "Only a listing's seller may close or cancel it or answer its offers.",
    "listing_has_bids": "An auction with bids cannot be cancelled.",
    "duplicate_listing": "A seller cannot have two active listings with the same title.",
    "not_your_purchase": "Only a sale's buyer may rate its seller.",
    "already_rated": "Each sale is rated once.",
}


# ----------------------------------------------------------------- results
class ListingSummary(TypedDict):
    listing_id: str
    title: str
    category: str
    condition: str
    format: str
    seller_id: str
    seller_name: str
    price: Decimal
    high_bid: Decimal | None
    bid_count: int
    minimum_bid: Decimal | None
    status: str
    closes_at: str
    time_left: str


class ListingList(TypedDict):
    total: int
    listings: list[ListingSummary]


class BidOut(TypedDict):
    bid_id: str
    buyer_id: str
    buyer_name: str
    amount: Decimal
    created_at: str


class OfferOut(TypedDict):
    offer_id: str
    listing_id: str
    buyer_id: str
    amount: Decimal
    message: str
    status: str
    created_at: str
    responded_at: str | None


class SaleOut(TypedDict):
    sale_id: str
    listing_id: str
    title: str
    seller_id: str
    buyer_id: str
    price: Decimal
    source: str
    offer_id: str | None
    created_at: str
    rating_stars: int | None


class ListingDetail(ListingSummary):
    description: str
    min_increment: Decimal
    seller_rating: Decimal | None
    seller_rating_count: int
    high_bidder_id: str | None
    created_at: str
    closed_at: str | None
    bids: list[BidOut]
    offers: list[OfferOut]
    sale: SaleOut | None


class UserOut(TypedDict):
    user_id: str
    name: str
    username: str
    city: str
    rating: Decimal | None
    rating_count: int
    active_listings: int


class RatingOut(TypedDict):
    rating_id: str
    sale_id: str
    buyer_id: str
    stars: int
    comment: str
    created_at: str


class SellerProfile(UserOut):
    joined_at: str
    sold_count: int
    listings: list[ListingSummary]
    recent_ratings: list[RatingOut]


class SaleList(TypedDict):
    user_id: str
    role: str
    total: int
    sales: list[SaleOut]


class BidResult(TypedDict):
    bid_id: str
    listing_id: str
    buyer_id: str
    amount: Decimal
    high_bid: Decimal
    high_bidder_id: str
    bid_count: int
    minimum_next_bid: Decimal
    outbid_user_id: str | None
    closes_at: str


class SaleResult(TypedDict):
    sale: SaleOut
    listing_status: str
    declined_offer_ids: list[str]


class OfferResponse(TypedDict):
    offer: OfferOut
    sale: SaleOut | None
    declined_offer_ids: list[str]


class CloseResult(TypedDict):
    listing_id: str
    status: str
    sale: SaleOut | None


class CancelResult(TypedDict):
    listing_id: str
    status: str
    declined_offer_ids: list[str]


class RatingResult(RatingOut):
    seller_id: str
    seller_rating: Decimal
    seller_rating_count: int


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
# Rows are named tuples typed as the ORM types them; a row a tool changes is written with
# ctx.sql.update, which (as the ORM did) writes only the columns whose value differs.
users, listings, bids = User.__table__, Listing.__table__, Bid.__table__
offers, sales, ratings = Offer.__table__, Sale.__table__, Rating.__table__
USER = Query(select(users).where(User.id == bindparam("id")))
USER_NAME = Query(select(User.name).where(User.id == bindparam("id")))
USERS = Query(select(User.id, User.name).order_by(User.id))
ACTIVE_COUNT = Query(
    select(func.count()).where(
        Listing.seller_id == bindparam("seller_id"),
        Listing.status == "active",
        Listing.closes_at > bindparam("now"),
    )
)
# a listing with its seller's name, rating and rating count
_LISTINGS = select(
    listings,
    User.name.label("seller_name"),
    User.rating.label("seller_rating"),
    User.rating_count.label("seller_rating_count"),
).join(users, User.id == Listing.seller_id)
LISTING = Query(_LISTINGS.where(Listing.id == bindparam("id")))
SELLER_LISTINGS = Query(
    _LISTINGS.where(
        Listing.seller_id == bindparam("seller_id"), Listing.status == "active"
    ).order_by(Listing.closes_at, Listing.id)
)
ACTIVE_LISTINGS = Query(select(listings).where(Listing.status == "active").order_by(Listing.id))
LISTING_TITLES = Query(select(Listing.title).distinct().order_by(Listing.title))
SAME_TITLE = Query(
    select(Listing.id).where(
        Listing.seller_id == bindparam("seller_id"),
        Listing.status == "active",
        func.lower(Listing.title) == bindparam("title"),  # the title, lowered by Python
    )
)
# a listing's bids, highest first (Listing.bids' order), with each buyer's name
BIDS = Query(
    select(Bid.id, Bid.buyer_id, User.name.label("buyer_name"), Bid.amount, Bid.created_at)
    .select_from(bids)
    .outerjoin(users, User.id == Bid.buyer_id)
    .where(Bid.listing_id == bindparam("listing_id"))
    .order_by(Bid.amount.desc(), Bid.id)
)
ALL_BIDS = Query(select(Bid.id, Bid.listing_id, Bid.buyer_id).order_by(Bid.id))
OFFER = Query(select(offers).where(Offer.id == bindparam("id")))
OFFERS = Query(select(offers).where(Offer.listing_id == bindparam("listing_id")).order_by(Offer.id))
PENDING_OFFERS = Query(
    select(offers)
    .where(Offer.listing_id == bindparam("listing_id"), Offer.status == "pending")
    .order_by(Offer.id)
)
# every pending offer, with the seller who may answer it
ALL_PENDING_OFFERS = Query(
    select(Offer.id, Offer.listing_id, Offer.buyer_id, Listing.seller_id)
    .join(listings, Listing.id == Offer.listing_id)
    .where(Offer.status == "pending")
    .order_by(Offer.id)
)
# a sale with its listing's title and its rating's stars (None until the buyer rates it)
_SALES = (
    select(sales, Listing.title, Rating.stars.label("rating_stars"))
    .select_from(sales)
    .join(listings, Listing.id == Sale.listing_id)
    .outerjoin(ratings, Rating.sale_id == Sale.id)
)
SALE = Query(_SALES.where(Sale.id == bindparam("id")))
LISTING_SALE = Query(_SALES.where(Sale.listing_id == bindparam("listing_id")))
SOLD_COUNT = Query(select(func.count()).where(Sale.seller_id == bindparam("seller_id")))
UNRATED_SALES = Query(
    select(Sale.id, Sale.buyer_id, Sale.seller_id)
    .where(Sale.id.not_in(select(Rating.sale_id)))
    .order_by(Sale.id)
)
SALE_RATING = Query(select(Rating.id, Rating.stars).where(Rating.sale_id == bindparam("sale_id")))
SELLER_STARS = Query(
    select(Rating.stars).where(Rating.seller_id == bindparam("seller_id")).order_by(Rating.id)
)
RECENT_RATINGS = Query(
    select(ratings)
    .where(Rating.seller_id == bindparam("seller_id"))
    .order_by(Rating.created_at.desc(), Rating.id.desc())
    .limit(10)
)


@functools.cache
def _listings_matching(
    by_text: bool, by_category: bool, by_format: bool, status: str | None, by_price: bool
) -> tuple[Query, Query]:
    """How many listings match search_listings' filters, and the first ``limit`` of them
    (rows of ``_LISTINGS``), soonest closing first."""
    where: list[Any] = []
    if by_text:
        where.append(contains(bindparam("pattern"), Listing.title, Listing.description, Listing.id))
    if by_category:
        where.append(Listing.category == bindparam("category"))
    if by_format:
        where.append(Listing.format == bindparam("format"))
    if status == "active":
        where += [Listing.status == "active", Listing.closes_at > bindparam("now")]
    elif status == "awaiting_close":
        where += [Listing.status == "active", Listing.closes_at <= bindparam("now")]
    elif status is not None:
        where.append(Listing.status == status)
    if by_price:
        where.append(func.coalesce(Listing.high_bid, Listing.price) <= bindparam("max_price"))
    count = Query(select(func.count()).select_from(listings).where(*where))
    rows = Query(
        _LISTINGS.where(*where).order_by(Listing.closes_at, Listing.id).limit(bindparam("limit"))
    )
    return count, rows


@functools.cache
def _users_matching(by_text: bool, by_email: bool = True) -> Query:
    """Users by name, at most ``limit``, optionally matching a text (in their email too,
    unless ``by_email`` is false: a member looks others up by what a profile shows):
    find_users'."""
    stmt = select(users)
    if by_text:
        fields = (User.name, User.username, User.email, User.id)
        stmt = stmt.where(
            contains(bindparam("pattern"), *(f for f in fields if by_email or f is not User.email))
        )
    return Query(stmt.order_by(User.name, User.id).limit(bindparam("limit")))


@functools.cache
def _sales_of(role: str) -> tuple[Query, Query]:
    """How many sales a user (``user_id``) made as ``role``, and the newest ``limit`` of them
    (rows of ``_SALES``): list_sales'."""
    column = Sale.buyer_id if role == "buyer" else Sale.seller_id
    count = Query(select(func.count()).where(column == bindparam("user_id")))
    rows = Query(
        _SALES.where(column == bindparam("user_id"))
        .order_by(Sale.created_at.desc(), Sale.id.desc())
        .limit(bindparam("limit"))
    )
    return count, rows


# ----------------------------------------------------------------- helpers
def _broken(rule: str, detail: str) -> PreconditionFailed:
    """The error for a failed business rule: it names the rule, then says what to do."""
    return PreconditionFailed(f"Rule '{rule}' failed: {detail}")


def _denied(rule: str, detail: str) -> PermissionDenied:
    return PermissionDenied(f"Rule '{rule}' failed: {detail}")


def _stamp(value: dt.datetime | None) -> str | None:
    return value.isoformat(timespec="minutes") if value is not None else None


def _now(ctx: ToolContext) -> dt.datetime:
    return ctx.now.replace(second=0, microsecond=0)


def _running(ctx: ToolContext, lst: Any) -> bool:
    return lst.status == "active" and lst.closes_at > _now(ctx)


def _status(ctx: ToolContext, lst: Any) -> str:
    """ "active", "awaiting_close" (past closes_at, not settled yet), or the stored status."""
    if lst.status == "active" and not _running(ctx, lst):
        return "awaiting_close"
    return lst.status


def _left(ctx: ToolContext, lst: Any) -> str:
    if not _running(ctx, lst):
        return "closed"
    minutes = int((lst.closes_at - _now(ctx)).total_seconds() // 60)
    days, rest = divmod(minutes, 24 * 60)
    return f"{days}d {rest // 60}h {rest % 60}m"


def _summary(ctx: ToolContext, lst: Any) -> ListingSummary:
    """A listing row of ``_LISTINGS`` (with its seller's name)."""
    live_auction = lst.format == "auction" and _running(ctx, lst)
    return {
        "listing_id": lst.id,
        "title": lst.title,
        "category": lst.category,
        "condition": lst.condition,
        "format": lst.format,
        "seller_id": lst.seller_id,
        "seller_name": lst.seller_name,
        "price": lst.price,
        "high_bid": lst.high_bid,
        "bid_count": lst.bid_count,
        "minimum_bid": minimum_bid(lst) if live_auction else None,
        "status": _status(ctx, lst),
        "closes_at": lst.closes_at.isoformat(timespec="minutes"),
        "time_left": _left(ctx, lst),
    }


def _offer_out(o: Any) -> OfferOut:
    return {
        "offer_id": o.id,
        "listing_id": o.listing_id,
        "buyer_id": o.buyer_id,
        "amount": o.amount,
        "message": o.message,
        "status": o.status,
        "created_at": o.created_at.isoformat(timespec="minutes"),
        "responded_at": _stamp(o.responded_at),
    }


def _sale_out(s: Any) -> SaleOut:
    """A sale row of ``_SALES`` (with its listing's title and its rating's stars)."""
    return {
        "sale_id": s.id,
        "listing_id": s.listing_id,
        "title": s.title,
        "seller_id": s.seller_id,
        "buyer_id": s.buyer_id,
        "price": s.price,
        "source": s.source,
        "offer_id": s.offer_id,
        "created_at": s.created_at.isoformat(timespec="minutes"),
        "rating_stars": s.rating_stars,
    }


def _detail(ctx: ToolContext, listing_id: str) -> ListingDetail:
    lst = ctx.sql.one(LISTING, id=listing_id)
    sale = ctx.sql.first(LISTING_SALE, listing_id=lst.id)
    return {
        **_summary(ctx, lst),
        "description": lst.description,
        "min_increment": lst.min_increment,
        "seller_rating": lst.seller_rating,
        "seller_rating_count": lst.seller_rating_count,
        "high_bidder_id": lst.high_bidder_id,
        "created_at": lst.created_at.isoformat(timespec="minutes"),
        "closed_at": _stamp(lst.closed_at),
        "bids": [
            {
                "bid_id": b.id,
                "buyer_id": b.buyer_id,
                "buyer_name": b.buyer_name or "",
                "amount": b.amount,
                "created_at": b.created_at.isoformat(timespec="minutes"),
            }
            for b in ctx.sql.all(BIDS, listing_id=lst.id)
        ],
        "offers": [
            _offer_out(o)
            for o in ctx.sql.all(OFFERS, listing_id=lst.id)
            # a signed-in member sees the offers on their own listing, elsewhere their own
            if ctx.principal is None or ctx.principal in (lst.seller_id, o.buyer_id)
        ],
        "sale": _sale_out(sale) if sale is not None else None,
    }


def _name(u: Any) -> str:
    return f"{u.name} ({u.id})"


def _active(ctx: ToolContext, lst: Any, doing: str) -> None:
    if lst.status != "active":
        raise _broken(
            "listing_not_active",
            f"listing {lst.id} ({lst.title!r}) is {lst.status}, so it cannot {doing}. Search "
            "for an active listing with search_listings.",
        )


def _not_own(lst: Any, buyer: Any, doing: str) -> None:
    if buyer.id == lst.seller_id:
        raise _broken(
            "own_listing",
            f"{_name(buyer)} is the seller of listing {lst.id}; a seller cannot {doing} their "
            "own listing. Nothing was done; act as another buyer (buyer_id) instead.",
        )


def _owner(ctx: ToolContext, lst: Any, seller: Any) -> None:
    if seller.id != lst.seller_id:
        raise _denied(
            "not_your_listing",
            f"listing {lst.id} belongs to {ctx.sql.scalar(USER_NAME, id=lst.seller_id)} "
            f"({lst.seller_id}), not to {_name(seller)}; only its seller can do this. Pass "
            f"seller_id={lst.seller_id!r} if you act for them.",
        )


def _fixed_open(ctx: ToolContext, lst: Any, doing: str) -> None:
    if lst.format != "fixed_price":
        raise _broken(
            "not_fixed_price",
            f"listing {lst.id} is an auction, so it cannot {doing}; only a 'fixed_price' "
            f"listing can. Bid at least {minimum_bid(lst)} on it instead.",
        )
    if not _running(ctx, lst):
        raise _broken(
            "listing_expired",
            f"listing {lst.id} stopped selling at {_stamp(lst.closes_at)}; it cannot {doing} "
            "any more. Nothing was done.",
        )


def _pending_offers(ctx: ToolContext, listing_id: str, keep: str | None = None) -> list[Any]:
    """The listing's pending offers by id, but the offer ``keep``."""
    return [o for o in ctx.sql.all(PENDING_OFFERS, listing_id=listing_id) if o.id != keep]


def _close(ctx: ToolContext, lst: Any, status: str, declining: list[Any] | None = None) -> None:
    """Settle ``lst`` now with ``status`` and decline the offers ``declining``.

    The listing's row is written before its offers' rows (the ORM's flush order).
    """
    now = _now(ctx)
    ctx.sql.update(Listing, lst, status=status, closed_at=now)
    for o in declining or []:
        ctx.sql.update(Offer, o, status="declined", responded_at=now)


def _sell(
    ctx: ToolContext,
    lst: Any,
    buyer_id: str,
    price: Decimal,
    source: str,
    offer_id: str | None = None,
    declining: list[Any] | None = None,
) -> Any:
    """Mark ``lst`` sold (declining the offers ``declining``) and record its sale; the sale's
    row of ``_SALES``."""
    _close(ctx, lst, "sold", declining)
    sale_id = next_id(ctx, Sale.id, "sal", 4)
    ctx.sql.insert(
        Sale,
        id=sale_id,
        listing_id=lst.id,
        seller_id=lst.seller_id,
        buyer_id=buyer_id,
        price=price,
        source=source,
        offer_id=offer_id,
        created_at=_now(ctx),
    )
    return ctx.sql.one(SALE, id=sale_id)


def _text(value: str, name: str) -> str:
    text = " ".join(value.split())
    if not text:
        raise InvalidArgument(f"{name} must not be empty or blank.")
    return text


# -------------------------------------------------------- example values
def _title_word(ctx: ToolContext, rng: random.Random) -> str:
    titles = ctx.sql.scalars(LISTING_TITLES)
    words = [w.strip(",.:;!?()\"'") for w in rng.choice(titles).split()]
    words = [w for w in words if len(w) > 3 and w[0].isalpha()]  # "Dune", not "Dune,"
    return words[0] if words else titles[0]


def _user_word(ctx: ToolContext, rng: random.Random) -> str:
    names = [u.name for u in ctx.sql.all(USERS)]
    return rng.choice(names).split()[-1]


NEW_TITLES: dict[str, tuple[str, ...]] = {
    "electronics": ("Apple AirPods Pro 2", "Nintendo Switch OLED", "Kindle Paperwhite"),
    "collectibles": ("Vintage Polaroid SX-70 camera", "1986 Topps baseball card set"),
    "fashion": ("Levi's 501 jeans, W32 L32", "Barbour waxed jacket, size M"),
    "home": ("Herman Miller Aeron chair", "Le Creuset Dutch oven, 5.5 qt"),
    "sports": ("Trek road bike, 56 cm", "Wilson Pro Staff tennis racket"),
    "books": ("Harry Potter box set, hardcover", "The Lord of the Rings, 1st edition"),
    "music": ("Signed Beatles Abbey Road vinyl", "Fender Stratocaster guitar"),
    "toys": ("LEGO Technic Porsche 911", "Hot Wheels 1968 Redline collection"),
}
"""Things to list, by the category they are listed in."""


def _title_for_category(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A title of a thing sold in the category the call names (not AirPods in books)."""
    titles = NEW_TITLES.get(str(bound.args.get("category", "")))
    return rng.choice(titles) if titles else None


TITLE_PRICES: dict[str, tuple[int, int]] = {
    "Apple AirPods Pro 2": (120, 190),
    "Nintendo Switch OLED": (180, 280),
    "Kindle Paperwhite": (60, 110),
    "Vintage Polaroid SX-70 camera": (150, 400),
    "1986 Topps baseball card set": (80, 250),
    "Levi's 501 jeans, W32 L32": (20, 50),
    "Barbour waxed jacket, size M": (120, 250),
    "Herman Miller Aeron chair": (300, 700),
    "Le Creuset Dutch oven, 5.5 qt": (150, 260),
    "Trek road bike, 56 cm": (600, 1500),
    "Wilson Pro Staff tennis racket": (80, 180),
    "Harry Potter box set, hardcover": (40, 90),
    "The Lord of the Rings, 1st edition": (800, 4000),
    "Signed Beatles Abbey Road vinyl": (1000, 5000),
    "Fender Stratocaster guitar": (500, 1200),
    "LEGO Technic Porsche 911": (120, 200),
    "Hot Wheels 1968 Redline collection": (150, 600),
}
"""What each thing of :data:`NEW_TITLES` sells for second-hand in good condition, whole units."""
CONDITION_SHARE = {"new": 1.15, "like_new": 1.0, "good": 0.85, "fair": 0.65, "for_parts": 0.3}


def _price_for_title(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """An asking price for the thing listed, as its condition has it: Levi's jeans for 35,
    a first edition of The Lord of the Rings for 2,400, never jeans for 349.00; a round
    sum (to 5 under 100, to 10 above); None for a title it does not know."""
    span = TITLE_PRICES.get(str(bound.args.get("title", "")))
    if span is None:
        return None
    share = CONDITION_SHARE.get(str(bound.args.get("condition", "good")), 0.85)
    price = rng.randint(*span) * share
    step = 5 if price < 100 else 10
    return f"{max(step, round(price / step) * step)}.00"


def _bid_for_listing(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A bid a buyer would place on the auction: its minimum bid, or one to three
    increments above it (None: no running auction to bid on)."""
    lst = ctx.sql.first(LISTING, id=str(bound.args.get("listing_id", "")))
    if lst is None or lst.format != "auction" or not _running(ctx, lst):
        return None
    return str(minimum_bid(lst) + lst.min_increment * rng.choice([0, 0, 1, 2, 3]))


def _offer_for_listing(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """An offer a buyer would make on the fixed-price listing: 70-90% of its price
    (None: not a fixed-price listing)."""
    lst = ctx.sql.first(LISTING, id=str(bound.args.get("listing_id", "")))
    if lst is None or lst.format == "auction":
        return None
    share = Decimal(rng.choice(["0.70", "0.75", "0.80", "0.85", "0.90"]))
    return str(max((lst.price * share).quantize(CENT), (lst.price * OFFER_FLOOR).quantize(CENT)))


COMMENTS = ["Fast shipping, exactly as described!", "Item as described.", "Arrived damaged."]


# ------------------------------------------------------------------- tools
@server.tool(
    returns="listing",
    phrasings=[
        "Find listings with '{query}' in the title",
        "Show me {category} listings under {max_price}",
        "Any {status} listings matching '{query}'?",
    ],
    examples={"query": _title_word, "max_price": [50, 100, 250, 500, 1000]},
)
def search_listings(
    ctx: ToolContext,
    query: SearchText | None = None,
    category: Category | None = None,
    format: Literal["auction", "fixed_price"] | None = None,
    status: Literal["active", "awaiting_close", "sold", "unsold", "cancelled"] | None = "active",
    max_price: Amount | None = None,
    limit: Limit = 20,
) -> ListingList:
    """Search listings by text, category, format, status and price; soonest closing first.

    Args:
        query: Case-insensitive text in the title, description or id, such as "LEGO",
            "headphones" or "lst_0042"; leave it out to list everything matching the filters.
        category: Only this category, such as "electronics" or "toys".
        format: Only "auction" (bids) or "fixed_price" (buy now or make an offer) listings.
        status: "active" (default: still taking bids, offers or purchases),
            "awaiting_close" (an auction past its close time, not settled yet), "sold",
            "unsold" or "cancelled"; null for every status.
        max_price: Only listings whose current price (high bid, else start or fixed price)
            is at most this, such as 100 or "250.00".
        limit: Maximum number of listings to return (1-50), such as 20.

    Returns:
        {"total": 12, "listings": [{"listing_id": "lst_0042", "title": "Sony WH-1000XM4
        headphones", "format": "auction", "price": "60.00", "high_bid": "95.00",
        "bid_count": 4, "minimum_bid": "96.00", "status": "active",
        "closes_at": "2026-03-04T18:30", "time_left": "1d 2h 5m", ...}]}; total counts every
        match.
    """
    params: dict[str, Any] = {}
    text = (query or "").strip()
    if text:
        params["pattern"] = search_pattern(text)
    if category is not None:
        params["category"] = category
    if format is not None:
        params["format"] = format
    if status in ("active", "awaiting_close"):
        params["now"] = _now(ctx)
    if max_price is not None:
        params["max_price"] = max_price
    count, matching = _listings_matching(
        bool(text), category is not None, format is not None, status, max_price is not None
    )
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(matching, **params, limit=limit)
    return {"total": total, "listings": [_summary(ctx, lst) for lst in rows]}


@server.tool(
    returns=("listing", "bid", "offer", "sale", "user"),
    phrasings=["Show me listing {listing_id}", "What are the bids and offers on {listing_id}?"],
)
def get_listing(ctx: ToolContext, listing_id: ListingRow) -> ListingDetail:
    """Get one listing with its seller's rating, all bids (highest first), offers and sale.

    Acting for a signed-in member, offers are shown to the listing's seller, and to each
    other member only their own.

    Args:
        listing_id: The listing, such as "lst_0042" (search_listings finds it by title).

    Returns:
        {"listing_id", "title", "status", "price", "high_bid": "95.00", "minimum_bid":
        "96.00", "min_increment": "1.00", "high_bidder_id": "usr_017", "seller_rating":
        "4.67", "bids": [{"bid_id": "bid_00131", "buyer_id": "usr_017", "amount": "95.00",
        ...}], "offers": [{"offer_id": "ofr_0012", "status": "pending", ...}],
        "sale": null, ...}.
    """
    return _detail(ctx, listing_id.id)


@server.tool(
    returns="user",
    phrasings=["Find the user {query}", "Look up the member named {query}"],
    examples={"query": _user_word},
)
def find_users(ctx: ToolContext, query: SearchText, limit: Limit = 10) -> list[UserOut]:
    """Find marketplace members by name, username, email or id, ordered by name.

    Acting for a signed-in member, the email is not searched: others are found by name,
    username or id.

    Args:
        query: Case-insensitive text, such as "Garcia", "jsmith" or "usr_007".
        limit: Maximum number of users to return (1-50), such as 10.

    Returns:
        [{"user_id": "usr_007", "name": "Jane Smith", "username": "jsmith", "city":
        "Portland", "rating": "4.67", "rating_count": 3, "active_listings": 2}].
    """
    text = query.strip()
    params = {"pattern": search_pattern(text)} if text else {}
    # a signed-in member finds others by what a profile shows, never by their email
    by_email = ctx.principal is None
    found = ctx.sql.all(_users_matching(bool(text), by_email), **params, limit=limit)
    return [_user_out(ctx, u) for u in found]


def _user_out(ctx: ToolContext, u: Any) -> UserOut:
    active = ctx.sql.scalar(ACTIVE_COUNT, seller_id=u.id, now=_now(ctx))
    return {
        "user_id": u.id,
        "name": u.name,
        "username": u.username,
        "city": u.city,
        "rating": u.rating,
        "rating_count": u.rating_count,
        "active_listings": active or 0,
    }


@server.tool(
    returns=("user", "listing"),
    phrasings=["How is seller {seller_id} rated?", "Show the seller profile of {seller_id}"],
)
def get_seller_profile(ctx: ToolContext, seller_id: AnyUserRow) -> SellerProfile:
    """A seller's rating, sales count, unsettled listings and ten most recent ratings.

    Args:
        seller_id: The seller, such as "usr_007" (find_users finds them by name).

    Returns:
        {"user_id": "usr_007", "rating": "4.67", "rating_count": 3, "sold_count": 5,
        "listings": [...active and awaiting_close listings, soonest closing first...],
        "recent_ratings": [{"rating_id": "rat_0020", "stars": 5, "comment": "...", ...}]}.
    """
    u = seller_id
    sold = ctx.sql.scalar(SOLD_COUNT, seller_id=u.id) or 0
    unsettled = ctx.sql.all(SELLER_LISTINGS, seller_id=u.id)
    recent = ctx.sql.all(RECENT_RATINGS, seller_id=u.id)
    return {
        **_user_out(ctx, u),
        "joined_at": u.joined_at.date().isoformat(),
        "sold_count": sold,
        "listings": [_summary(ctx, lst) for lst in unsettled],
        "recent_ratings": [
            {
                "rating_id": r.id,
                "sale_id": r.sale_id,
                "buyer_id": r.buyer_id,
                "stars": r.stars,
                "comment": r.comment,
                "created_at": r.created_at.isoformat(timespec="minutes"),
            }
            for r in recent
        ],
    }


@server.tool(
    returns=("sale", "listing"),
    phrasings=[
        "What has {user_id} bought?",
        "List the sales of {user_id} as {role}",
    ],
)
def list_sales(
    ctx: ToolContext,
    user_id: UserRow,
    role: Literal["buyer", "seller"],
    limit: Limit = 20,
) -> SaleList:
    """List a user's purchases (role "buyer") or sales (role "seller"), newest first.

    Args:
        user_id: The user, such as "usr_007".
        role: "buyer" for what they bought, "seller" for what they sold.
        limit: Maximum number of sales to return (1-50), such as 20.

    Returns:
        {"user_id", "role", "total": 4, "sales": [{"sale_id": "sal_0031", "listing_id":
        "lst_0042", "title": "...", "price": "95.00", "source": "auction",
        "rating_stars": null, ...}]}; rating_stars is null until the buyer rates it.
    """
    count, newest = _sales_of(role)
    total = ctx.sql.scalar(count, user_id=user_id.id) or 0
    rows = ctx.sql.all(newest, user_id=user_id.id, limit=limit)
    return {
        "user_id": user_id.id,
        "role": role,
        "total": total,
        "sales": [_sale_out(s) for s in rows],
    }


@server.tool(
    writes=True,
    returns="listing",
    normalise={"title": "strip"},
    phrasings=[
        "List my {title} ({condition}) as {format} at {price} in {category}; I am {seller_id}",
        "Sell {title} for {price} as user {seller_id}, {format}, {category}, {condition}",
    ],
    values={"title": _title_for_category, "price": _price_for_title},
)
def create_listing(
    ctx: ToolContext,
    seller_id: UserRow,
    title: Annotated[str, Field(min_length=3, max_length=120)],
    category: Category,
    condition: Condition,
    format: Literal["auction", "fixed_price"],
    price: Amount,
    duration_days: Literal[1, 3, 5, 7, 10] = 7,
    description: Annotated[str, Field(max_length=500)] = "",
) -> ListingDetail:
    """Put an item up for sale: an auction from a start price, or a fixed price.

    An auction takes bids for duration_days and the minimum increment follows from the start
    price (0.50 under 25, 1.00 under 100, 5.00 under 500, 10.00 under 1000, else 25.00). A
    fixed-price listing runs 30 days (duration_days is ignored) and takes offers.

    Args:
        seller_id: The seller listing the item, such as "usr_007".
        title: What is sold, such as "Apple AirPods Pro 2".
        category: One of "electronics", "collectibles", "fashion", "home", "sports",
            "books", "music", "toys".
        condition: "new", "like_new", "good", "fair" or "for_parts".
        format: "auction" or "fixed_price".
        price: The auction's start price or the fixed price, such as 60 or "24.99".
        duration_days: How long an auction runs: 1, 3, 5, 7 (default) or 10 days.
        description: Optional details, such as "Barely used, original box".

    Returns:
        The new listing: {"listing_id": "lst_0141", "status": "active", "minimum_bid":
        "60.00", "min_increment": "1.00", "closes_at": "2026-03-10T09:00", ...}.
    """
    what = _text(title, "title")
    money = price.quantize(CENT)
    same = ctx.sql.scalar(SAME_TITLE, seller_id=seller_id.id, title=what.lower())
    if same is not None:
        raise _broken(
            "duplicate_listing",
            f"{_name(seller_id)} already has the active listing {same} titled {what!r}. "
            "Nothing was listed; change that listing's price by cancelling it first, or use a "
            "different title.",
        )
    days = duration_days if format == "auction" else FIXED_PRICE_DAYS
    now = _now(ctx)
    listing_id = next_id(ctx, Listing.id, "lst", 4)
    ctx.sql.insert(
        Listing,
        id=listing_id,
        seller_id=seller_id.id,
        title=what,
        description=" ".join(description.split()),
        category=category,
        condition=condition,
        format=format,
        price=money,
        min_increment=min_increment(money),
        high_bid=None,
        high_bidder_id=None,
        bid_count=0,
        status="active",
        created_at=now,
        closes_at=now + dt.timedelta(days=days),
        closed_at=None,
    )
    return _detail(ctx, listing_id)


@server.tool(
    writes=True,
    returns=("bid", "listing"),
    phrasings=[
        "Bid {amount} on {listing_id} for buyer {buyer_id}",
        "I'm {buyer_id}; place a bid of {amount} on listing {listing_id}",
    ],
    values={"amount": _bid_for_listing},
)
def place_bid(
    ctx: ToolContext, listing_id: ListingRow, buyer_id: UserRow, amount: Amount
) -> BidResult:
    """Bid on a running auction for a buyer; the bid becomes the new high bid.

    The bid must reach the listing's minimum_bid: the start price for the first bid, then
    the high bid plus the minimum increment. The seller cannot bid, and the high bidder
    cannot outbid themselves.

    Args:
        listing_id: The auction, such as "lst_0042".
        buyer_id: The bidding user, such as "usr_017".
        amount: The bid, such as 96 or "96.00" (see minimum_bid in get_listing).

    Returns:
        {"bid_id": "bid_00412", "amount": "96.00", "high_bid": "96.00", "high_bidder_id":
        "usr_017", "bid_count": 5, "minimum_next_bid": "97.00", "outbid_user_id": "usr_003",
        ...}.
    """
    lst: Any = listing_id  # a row, which minimum_bid reads as it read a Listing
    buyer = buyer_id
    money = amount.quantize(CENT)
    _active(ctx, lst, "take bids")
    if lst.format != "auction":
        raise _broken(
            "not_an_auction",
            f"listing {lst.id} is fixed_price ({lst.price}); only an 'auction' listing takes "
            "bids. Buy it at that price or make an offer below it.",
        )
    if not _running(ctx, lst):
        raise _broken(
            "auction_closed",
            f"listing {lst.id} is awaiting_close since {_stamp(lst.closes_at)}; only an 'active' "
            "listing takes bids. Nothing was done.",
        )
    _not_own(lst, buyer, "bid on")
    if lst.high_bidder_id == buyer.id:
        raise _broken(
            "already_winning",
            f"{_name(buyer)} already holds the high bid of {lst.high_bid} on {lst.id}; no "
            "new bid is needed. Nothing was done.",
        )
    least = minimum_bid(lst)
    if money < least:
        raise _broken(
            "bid_too_low",
            f"the minimum bid on {lst.id} is {least} ("
            + (
                "the start price"
                if lst.high_bid is None
                else f"high bid {lst.high_bid} + increment {lst.min_increment}"
            )
            + f"); {money} is too low. Bid {least} or more.",
        )
    outbid = lst.high_bidder_id
    bid_id = next_id(ctx, Bid.id, "bid", 5)
    # the listing's row first, then the bid's (the ORM's flush order)
    lst = ctx.sql.update(
        Listing, lst, high_bid=money, high_bidder_id=buyer.id, bid_count=lst.bid_count + 1
    )
    ctx.sql.insert(
        Bid,
        id=bid_id,
        listing_id=lst.id,
        buyer_id=buyer.id,
        amount=money,
        created_at=_now(ctx),
    )
    return {
        "bid_id": bid_id,
        "listing_id": lst.id,
        "buyer_id": buyer.id,
        "amount": money,
        "high_bid": money,
        "high_bidder_id": buyer.id,
        "bid_count": lst.bid_count,
        "minimum_next_bid": minimum_bid(lst),
        "outbid_user_id": outbid,
        "closes_at": lst.closes_at.isoformat(timespec="minutes"),
    }


@server.tool(
    writes=True,
    returns=("sale", "listing"),
    phrasings=[
        "Buy {listing_id} now for {buyer_id}",
        "I'm {buyer_id} and I want to buy listing {listing_id} at its price",
    ],
)
def buy_now(ctx: ToolContext, listing_id: ListingRow, buyer_id: UserRow) -> SaleResult:
    """Buy a fixed-price listing at its price; its pending offers are declined.

    Args:
        listing_id: The fixed-price listing, such as "lst_0057".
        buyer_id: The buying user, such as "usr_017" (not the seller).

    Returns:
        {"sale": {"sale_id": "sal_0062", "price": "149.00", "source": "buy_now", ...},
        "listing_status": "sold", "declined_offer_ids": ["ofr_0012"]}.
    """
    lst, buyer = listing_id, buyer_id
    _active(ctx, lst, "be bought")
    _fixed_open(ctx, lst, "be bought now")
    _not_own(lst, buyer, "buy")
    pending = _pending_offers(ctx, lst.id)
    sale = _sell(ctx, lst, buyer.id, lst.price, "buy_now", declining=pending)
    return {
        "sale": _sale_out(sale),
        "listing_status": "sold",
        "declined_offer_ids": [o.id for o in pending],
    }


@server.tool(
    writes=True,
    returns=("offer", "listing"),
    phrasings=[
        "Offer {offer_amount} for {listing_id} as {buyer_id}",
        "I'm {buyer_id}; would the seller of {listing_id} take {offer_amount}?",
    ],
    examples={"message": ["Would you take this?", "Can pay today.", ""]},
    values={"offer_amount": _offer_for_listing},
)
def make_offer(
    ctx: ToolContext,
    listing_id: ListingRow,
    buyer_id: UserRow,
    offer_amount: Amount,
    message: Annotated[str, Field(max_length=200)] = "",
) -> OfferOut:
    """Offer less than the price of a fixed-price listing; the seller accepts or declines.

    The offer must be below the price and at least half of it; a buyer has at most one
    pending offer per listing.

    Args:
        listing_id: The fixed-price listing, such as "lst_0057".
        buyer_id: The user making the offer, such as "usr_017" (not the seller).
        offer_amount: The offered price, such as 120 or "120.00".
        message: Optional note to the seller, such as "Can pay today."

    Returns:
        {"offer_id": "ofr_0061", "status": "pending", "amount": "120.00", ...}.
    """
    lst, buyer = listing_id, buyer_id
    money = offer_amount.quantize(CENT)
    _active(ctx, lst, "take offers")
    _fixed_open(ctx, lst, "take offers")
    _not_own(lst, buyer, "make an offer on")
    if money >= lst.price:
        raise _broken(
            "offer_not_below_price",
            f"{money} is not below the price of {lst.id} ({lst.price}); offer less, or buy it "
            "at its price.",
        )
    floor = (lst.price * OFFER_FLOOR).quantize(CENT)
    if money < floor:
        raise _broken(
            "offer_too_low",
            f"offers on {lst.id} must be at least {floor} (half of its price {lst.price}); "
            f"{money} is too low. Offer {floor} or more.",
        )
    mine = [o for o in _pending_offers(ctx, lst.id) if o.buyer_id == buyer.id]
    if mine:
        raise _broken(
            "offer_pending",
            f"{_name(buyer)} already has the pending offer {mine[0].id} of {mine[0].amount} on "
            f"{lst.id}; wait for the seller's answer. Nothing was done.",
        )
    offer_id = next_id(ctx, Offer.id, "ofr", 4)
    ctx.sql.insert(
        Offer,
        id=offer_id,
        listing_id=lst.id,
        buyer_id=buyer.id,
        amount=money,
        message=" ".join(message.split()),
        status="pending",
        created_at=_now(ctx),
        responded_at=None,
    )
    return _offer_out(ctx.sql.one(OFFER, id=offer_id))


@server.tool(
    writes=True,
    returns=("offer", "sale", "listing"),
    phrasings=[
        "{decision} offer {offer_id} as seller {seller_id}",
        "I'm {seller_id}: please {decision} the offer {offer_id}",
    ],
)
def respond_to_offer(
    ctx: ToolContext,
    offer_id: OfferRow,
    seller_id: UserRow,
    decision: Literal["accept", "decline"],
) -> OfferResponse:
    """The seller accepts or declines a pending offer on their listing.

    Accepting sells the listing to the offer's buyer at the offered amount and declines the
    listing's other pending offers.

    Args:
        offer_id: The pending offer, such as "ofr_0012" (see get_listing's offers).
        seller_id: The listing's seller, such as "usr_007".
        decision: "accept" or "decline".

    Returns:
        {"offer": {"offer_id": "ofr_0012", "status": "accepted", ...}, "sale": {"sale_id":
        "sal_0062", "price": "120.00", "source": "offer", ...}, "declined_offer_ids": [...]}.
    """
    offer = offer_id
    lst = ctx.sql.one(LISTING, id=offer.listing_id)
    _owner(ctx, lst, seller_id)
    if offer.status != "pending":
        raise _broken(
            "offer_not_pending",
            f"offer {offer.id} was already {offer.status} at {_stamp(offer.responded_at)}; "
            "only a pending offer can be answered. Nothing was done.",
        )
    _active(ctx, lst, "sell to an offer")
    if decision == "decline":
        offer = ctx.sql.update(Offer, offer, status="declined", responded_at=_now(ctx))
        return {"offer": _offer_out(offer), "sale": None, "declined_offer_ids": [offer.id]}
    _fixed_open(ctx, lst, "sell to an offer")
    # the offer's row first, then the listing's and the other offers' (as the ORM flushed)
    offer = ctx.sql.update(Offer, offer, status="accepted", responded_at=_now(ctx))
    pending = _pending_offers(ctx, lst.id, keep=offer.id)
    sale = _sell(ctx, lst, offer.buyer_id, offer.amount, "offer", offer.id, declining=pending)
    return {
        "offer": _offer_out(offer),
        "sale": _sale_out(sale),
        "declined_offer_ids": [o.id for o in pending],
    }


@server.tool(
    writes=True,
    returns=("sale", "listing"),
    phrasings=[
        "Close my auction {listing_id}; I am {seller_id}",
        "Settle the finished auction {listing_id} for seller {seller_id}",
    ],
)
def close_auction(ctx: ToolContext, listing_id: ListingRow, seller_id: UserRow) -> CloseResult:
    """Settle an auction whose close time has passed: sold to the highest bidder, or unsold.

    Args:
        listing_id: The auction, such as "lst_0042" (search_listings with status
            "awaiting_close" finds them).
        seller_id: The listing's seller, such as "usr_007".

    Returns:
        {"listing_id": "lst_0042", "status": "sold", "sale": {"sale_id": "sal_0062",
        "buyer_id": "usr_017", "price": "95.00", "source": "auction", ...}}; with no bids
        the status is "unsold" and sale is null.
    """
    lst = listing_id
    _owner(ctx, lst, seller_id)
    if lst.format != "auction":
        raise _broken(
            "not_an_auction",
            f"listing {lst.id} is fixed_price; only an 'auction' listing is closed and settled. "
            "Nothing was done.",
        )
    _active(ctx, lst, "be closed")
    if _running(ctx, lst):
        raise _broken(
            "auction_still_running",
            f"listing {lst.id} is still active: bidding runs until {_stamp(lst.closes_at)} "
            f"({_left(ctx, lst)} left). Only an 'awaiting_close' listing (past its closes_at) "
            "can be closed. Nothing was done.",
        )
    if lst.high_bidder_id is None or lst.high_bid is None:
        _close(ctx, lst, "unsold")
        return {"listing_id": lst.id, "status": "unsold", "sale": None}
    sale = _sell(ctx, lst, lst.high_bidder_id, lst.high_bid, "auction")
    return {"listing_id": lst.id, "status": "sold", "sale": _sale_out(sale)}


@server.tool(
    writes=True,
    inverse_of="create_listing",
    destructive=True,
    returns=("listing", "offer"),
    phrasings=[
        "Cancel my listing {listing_id}; I'm {seller_id}",
        "Take listing {listing_id} down for seller {seller_id}",
    ],
)
def cancel_listing(ctx: ToolContext, listing_id: ListingRow, seller_id: UserRow) -> CancelResult:
    """The seller withdraws an active listing that has no bids; pending offers are declined.

    Args:
        listing_id: The listing, such as "lst_0057".
        seller_id: The listing's seller, such as "usr_007".

    Returns:
        {"listing_id": "lst_0057", "status": "cancelled", "declined_offer_ids": ["ofr_0012"]}.
    """
    lst = listing_id
    _owner(ctx, lst, seller_id)
    _active(ctx, lst, "be cancelled")
    if lst.bid_count:
        raise _broken(
            "listing_has_bids",
            f"the auction {lst.id} has {lst.bid_count} bid(s), high bid {lst.high_bid}; it "
            "cannot be cancelled and sells to the highest bidder when it closes.",
        )
    if lst.format == "auction" and not _running(ctx, lst):
        raise _broken(
            "auction_closed",
            f"listing {lst.id} is awaiting_close since {_stamp(lst.closes_at)}; only an "
            "'active' listing can be cancelled: settle this one by closing it. Nothing was done.",
        )
    pending = _pending_offers(ctx, lst.id)
    _close(ctx, lst, "cancelled", declining=pending)
    return {
        "listing_id": lst.id,
        "status": "cancelled",
        "declined_offer_ids": [o.id for o in pending],
    }


@server.tool(
    writes=True,
    returns=("sale", "user"),
    phrasings=[
        "Rate sale {sale_id} {stars} stars as buyer {buyer_id}",
        "I'm {buyer_id}: give the seller of {sale_id} {stars} stars, saying {comment}",
        "I'm {buyer_id}; rate the seller of {sale_id} {stars} stars",
    ],
    examples={"comment": COMMENTS, "stars": [5, 4, 3, 1]},
)
def rate_seller(
    ctx: ToolContext,
    sale_id: SaleRow,
    buyer_id: UserRow,
    stars: Annotated[int, Field(ge=1, le=5)],
    comment: Annotated[str, Field(max_length=300)] = "",
) -> RatingResult:
    """The buyer of a sale rates its seller 1-5 stars, once; the seller's rating is updated.

    Args:
        sale_id: The sale, such as "sal_0031" (list_sales with role "buyer" finds it).
        buyer_id: The sale's buyer, such as "usr_017".
        stars: 1 (worst) to 5 (best), such as 5.
        comment: Optional words, such as "Fast shipping, exactly as described!".

    Returns:
        {"rating_id": "rat_0041", "stars": 5, "seller_id": "usr_007", "seller_rating":
        "4.75", "seller_rating_count": 4, ...}.
    """
    sale, buyer = sale_id, buyer_id
    if sale.buyer_id != buyer.id:
        raise _denied(
            "not_your_purchase",
            f"sale {sale.id} was bought by {sale.buyer_id}, not {_name(buyer)}; only the buyer "
            f"can rate it. Pass buyer_id={sale.buyer_id!r} if you act for them.",
        )
    earlier = ctx.sql.first(SALE_RATING, sale_id=sale.id)
    if earlier is not None:
        raise _broken(
            "already_rated",
            f"sale {sale.id} was rated {earlier.stars} stars ({earlier.id}) already; each "
            "sale is rated once. Nothing was done.",
        )
    rating: dict[str, Any] = {
        "id": next_id(ctx, Rating.id, "rat", 4),
        "sale_id": sale.id,
        "seller_id": sale.seller_id,
        "buyer_id": buyer.id,
        "stars": stars,
        "comment": " ".join(comment.split()),
        "created_at": _now(ctx),
    }
    ctx.sql.insert(Rating, **rating)
    seller = ctx.sql.one(USER, id=sale.seller_id)
    all_stars = ctx.sql.scalars(SELLER_STARS, seller_id=seller.id)
    seller = ctx.sql.update(
        User, seller, rating=mean_rating(all_stars), rating_count=len(all_stars)
    )
    assert seller.rating is not None
    return {
        "rating_id": rating["id"],
        "sale_id": sale.id,
        "buyer_id": buyer.id,
        "stars": stars,
        "comment": rating["comment"],
        "created_at": rating["created_at"].isoformat(timespec="minutes"),
        "seller_id": seller.id,
        "seller_rating": seller.rating,
        "seller_rating_count": seller.rating_count,
    }


# --------------------------------------------------------------- entities
@server.entity(
    "user",
    key="user_id",
    model=User,
    not_found="Call find_users with the person's name to find their id (such as 'usr_007').",
)
def _users(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(USERS)
    return [{"user_id": u.id, "name": u.name, "search": u.name.split()[-1]} for u in rows]


# Listings, offers and sales are no one member's (shared=True): every member bids on others'
# listings, an offer is between its buyer and the listing's seller. The acting member is
# checked where a tool names them (buyer_id, seller_id, user_id), and the tools' own rules
# (own_listing, not_your_listing, not_your_purchase) say what each may do with the rest.
@server.entity(
    "listing",
    key="listing_id",
    model=Listing,
    shared=True,
    not_found="Call search_listings with words of the title to find the listing's id (such "
    "as 'lst_0042').",
)
def _listings(ctx: ToolContext) -> list[dict[str, Any]]:
    """Unsettled listings, with their seller. Who buys is the conversation's member
    (``persona``), never the seller: the grounding takes a listing that does not name the
    member as its seller for a call that passes them as ``buyer_id``."""
    out = []
    for lst in ctx.sql.all(ACTIVE_LISTINGS):
        record: dict[str, Any] = {
            "listing_id": lst.id,
            "title": lst.title,
            "search": lst.title.split()[0],
            "seller_id": lst.seller_id,
            "format": lst.format,
            "status": _status(ctx, lst),
        }
        out.append(record)
    return out


@server.entity(
    "offer",
    key="offer_id",
    model=Offer,
    shared=True,
    not_found="Call get_listing with the listing's id to see its offers (ids such as 'ofr_0012').",
)
def _offers(ctx: ToolContext) -> list[dict[str, Any]]:
    """Pending offers: what a seller can still answer."""
    return [
        {
            "offer_id": o.id,
            "listing_id": o.listing_id,
            "buyer_id": o.buyer_id,
            "seller_id": o.seller_id,
        }
        for o in ctx.sql.all(ALL_PENDING_OFFERS)
    ]


@server.entity(
    "sale",
    key="sale_id",
    model=Sale,
    shared=True,
    not_found="Call list_sales with the buyer's id and role 'buyer' to find the sale's id "
    "(such as 'sal_0031').",
)
def _sales(ctx: ToolContext) -> list[dict[str, Any]]:
    """Sales their buyer has not rated yet."""
    rows = ctx.sql.all(UNRATED_SALES)
    return [
        {"sale_id": s.id, "buyer_id": s.buyer_id, "seller_id": s.seller_id, "user_id": s.buyer_id}
        for s in rows
    ]


@server.entity("bid", key="bid_id")
def _bids(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(ALL_BIDS)
    return [{"bid_id": b.id, "listing_id": b.listing_id, "buyer_id": b.buyer_id} for b in rows]
