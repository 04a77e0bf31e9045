"""The food delivery server's 17 tools. Docstrings are what the model reads: keep examples concrete.

Business rules have names (``one_restaurant_per_cart``, ``below_minimum_order``, ...); a tool
that refuses an action raises ``PreconditionFailed`` (``Conflict`` for a second rating,
``InvalidArgument`` for options that do not fit the item) with a message that starts with
``Rule '<name>' failed:`` and says what would be allowed instead. A refused call changes
nothing. Times come from the state's clock (``ctx.now``), never the wall clock.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import bindparam, delete, func, select

from prove_gym.server import (
    Conflict,
    Entity,
    InvalidArgument,
    PreconditionFailed,
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
    ACTIVE_STATUSES,
    CANCELLABLE,
    CENT,
    COURIER_STAGES,
    MAX_CART_LINES,
    MAX_LINE_QUANTITY,
    ORDER_FLOW,
    RATING_WINDOW_DAYS,
    TRAVEL_MINUTES,
    ZERO,
    Base,
    CartLine,
    Courier,
    Customer,
    DeliveryZone,
    MenuItem,
    Option,
    OptionGroup,
    Order,
    OrderLine,
    Rating,
    Restaurant,
    TrackingEvent,
    cancel_refund,
    is_open,
    next_opening,
    split_ids,
)
from .sampler import NOTES, sample_food_delivery, unit_price

server = Server(
    "food_delivery",
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.0.0",
    base=Base,
    sampler=sample_food_delivery,
    description="A city food delivery platform: restaurants with opening hours, delivery "
    "zones and a minimum order; menus whose items have option groups (sizes, sides, add-ons "
    "with price deltas); each customer's cart (one restaurant at a time); orders that move "
    "placed -> accepted -> preparing -> picked_up -> delivered or are cancelled with a "
    "refund that depends on how far they got; couriers, their assignment and availability; "
    "a tracking history per order and ratings after delivery.",
    instructions="Food delivery conventions: ids look like 'rst_004' (restaurant), "
    "'itm_0042' (menu item), 'opt_0107' (option), 'cus_0012' (customer), 'cl_0031' (cart "
    "line), 'ord_00287' (order), 'cou_007' (courier), 'rat_0040' (rating). Amounts are "
    'exact decimals: pass a number or a string such as "3.50"; results show amounts as '
    "strings. An order's total is its food subtotal plus the delivery fee of the customer's "
    "zone plus the tip. Refused calls name the rule that failed and change nothing.",
)

RestaurantRow = Annotated[Record[Restaurant], Entity("restaurant")]
ItemRow = Annotated[Record[MenuItem], Entity("menu_item")]
OptionRow = Annotated[Record[Option], Entity("option")]
CustomerRow = Annotated[Record[Customer], Entity("customer")]
CartLineRow = Annotated[Record[CartLine], Entity("cart_line")]
OrderRow = Annotated[Record[Order], Entity("order")]
CourierRow = Annotated[Record[Courier], Entity("courier")]
SearchText = Annotated[str, Field(max_length=200)]
Zone = Literal[
    "downtown",
    "old_town",
    "riverside",
    "harbor",
    "university",
    "northgate",
    "west_end",
    "east_side",
]
Cuisine = Literal[
    "pizza",
    "burgers",
    "sushi",
    "indian",
    "thai",
    "mexican",
    "chinese",
    "italian",
    "vegan",
    "breakfast",
]
OrderStatus = Literal["placed", "accepted", "preparing", "picked_up", "delivered", "cancelled"]
NextStatus = Literal["accepted", "preparing", "picked_up", "delivered"]
CancelReason = Literal[
    "customer_request", "duplicate_order", "restaurant_unavailable", "courier_unavailable"
]
Stars = Annotated[int, Field(ge=1, le=5)]
Tip = Annotated[Decimal, Field(ge=0, le=100, decimal_places=2)]
Quantity = Annotated[int, Field(ge=1, le=MAX_LINE_QUANTITY)]
Limit = Annotated[int, Field(ge=1, le=50)]

RULES: dict[str, str] = {
    "item_unavailable": "A sold-out menu item cannot be added to a cart or ordered.",
    "option_not_on_item": "Every chosen option must belong to the item, each at most once.",
    "required_option_missing": "Each required option group (such as Size) takes exactly one "
    "choice.",
    "too_many_options": "An option group takes at most its max_choices options.",
    "one_restaurant_per_cart": "A cart holds items of one restaurant only.",
    "outside_delivery_zone": "A restaurant only delivers to its delivery zones.",
    "cart_limit": f"A cart has at most {MAX_CART_LINES} lines and {MAX_LINE_QUANTITY} of one item.",
    "cart_empty": "An empty cart cannot be ordered.",
    "restaurant_closed": "Orders are taken only during the restaurant's opening hours.",
    "below_minimum_order": "The food subtotal must reach the restaurant's minimum order.",
    "invalid_transition": "An order moves placed -> accepted -> preparing -> picked_up -> "
    "delivered, one step at a time.",
    "courier_required": "An order is picked up by its assigned courier.",
    "order_not_assignable": "A courier is assigned to an accepted or preparing order.",
    "courier_unavailable": "Only an available courier (on shift, not on a delivery) can be "
    "assigned.",
    "courier_wrong_zone": "A courier works in one zone and picks up only from restaurants there.",
    "courier_already_assigned": "Assigning the order's own courier again changes nothing.",
    "order_not_cancellable": "Only placed, accepted or preparing orders can be cancelled; the "
    "refund is everything, except that a customer's cancellation while preparing keeps half "
    "the food subtotal.",
    "rating_not_allowed": "Only a delivered order can be rated.",
    "already_rated": "An order is rated once.",
    "rating_window": f"An order can be rated for {RATING_WINDOW_DAYS} days after delivery.",
    "courier_has_active_order": "A courier on a delivery stays on it until it is delivered, "
    "cancelled or reassigned.",
}


# ----------------------------------------------------------------- results
class ZoneFee(TypedDict):
    zone: str
    fee: Decimal


class RestaurantBrief(TypedDict):
    restaurant_id: str
    name: str
    cuisine: str
    zone: str
    address: str
    hours: str
    closed_days: list[str]
    open_now: bool
    minimum_order: Decimal
    delivery_zones: list[ZoneFee]
    rating: Decimal | None
    rating_count: int


class RestaurantList(TypedDict):
    total: int
    restaurants: list[RestaurantBrief]


class CategoryOut(TypedDict):
    category: str
    items: int
    available: int


class RestaurantDetail(RestaurantBrief):
    phone: str
    prep_minutes: int
    next_opening: str | None
    categories: list[CategoryOut]
    active_orders: int


class OptionOut(TypedDict):
    option_id: str
    name: str
    price_delta: Decimal


class GroupOut(TypedDict):
    group_id: str
    name: str
    required: bool
    max_choices: int
    options: list[OptionOut]


class ItemOut(TypedDict):
    item_id: str
    category: str
    name: str
    description: str
    price: Decimal
    available: bool
    option_groups: list[GroupOut]


class MenuOut(TypedDict):
    restaurant_id: str
    name: str
    open_now: bool
    total: int
    items: list[ItemOut]


class CustomerOut(TypedDict):
    customer_id: str
    name: str
    email: str
    phone: str
    address: str
    zone: str
    cart_lines: int
    active_order_ids: list[str]


class CartLineOut(TypedDict):
    cart_line_id: str
    item_id: str
    name: str
    options: list[str]
    option_ids: list[str]
    quantity: int
    unit_price: Decimal
    line_total: Decimal


class CartOut(TypedDict):
    customer_id: str
    restaurant_id: str | None
    restaurant_name: str | None
    lines: list[CartLineOut]
    item_count: int
    subtotal: Decimal
    minimum_order: Decimal | None
    amount_to_minimum: Decimal
    delivery_fee: Decimal | None
    open_now: bool | None
    estimated_total: Decimal | None
    ready_to_order: bool
    problems: list[str]


class CartAdded(CartOut):
    added_line_id: str


class CartRemoved(CartOut):
    removed_line_id: str


class CartCleared(CartOut):
    removed_lines: int


class OrderBrief(TypedDict):
    order_id: str
    customer_id: str
    customer_name: str
    restaurant_id: str
    restaurant_name: str
    status: str
    item_count: int
    total: Decimal
    placed_at: str


class OrderList(TypedDict):
    total: int
    orders: list[OrderBrief]


class OrderLineOut(TypedDict):
    item_id: str
    name: str
    options: str
    quantity: int
    unit_price: Decimal
    line_total: Decimal


class CourierBrief(TypedDict):
    courier_id: str
    name: str
    phone: str
    vehicle: str


class TrackOut(TypedDict):
    status: str
    at: str
    note: str


class RatingBrief(TypedDict):
    rating_id: str
    food_stars: int
    delivery_stars: int
    comment: str
    created_at: str


class OrderDetail(OrderBrief):
    lines: list[OrderLineOut]
    subtotal: Decimal
    delivery_fee: Decimal
    tip: Decimal
    refunded: Decimal
    cancel_reason: str | None
    delivery_address: str
    zone: str
    note: str
    courier: CourierBrief | None
    estimated_delivery_at: str | None
    history: list[TrackOut]
    next_status: str | None
    can_cancel: bool
    refund_if_cancelled_by_customer: Decimal | None
    rating: RatingBrief | None


class CourierOut(TypedDict):
    courier_id: str
    name: str
    phone: str
    vehicle: str
    zone: str
    status: str
    active_order_id: str | None


class CourierList(TypedDict):
    total: int
    couriers: list[CourierOut]


class RatingOut(RatingBrief):
    order_id: str
    restaurant_id: str
    courier_id: str
    restaurant_rating: Decimal
    restaurant_rating_count: int


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
# Rows are named tuples typed as the ORM types them; a row a tool changes is written with
# ctx.sql.update, which (as the ORM did) writes only the columns whose value differs.
restaurants, menu_items, options = Restaurant.__table__, MenuItem.__table__, Option.__table__
option_groups, customers, cart_lines = OptionGroup.__table__, Customer.__table__, CartLine.__table__
couriers, orders, ratings = Courier.__table__, Order.__table__, Rating.__table__

RESTAURANT = Query(select(restaurants).where(Restaurant.id == bindparam("id")))
RESTAURANTS = Query(select(restaurants).order_by(Restaurant.id))
RESTAURANT_NAMES = Query(select(Restaurant.name).order_by(Restaurant.id))
FEES = Query(
    select(DeliveryZone.zone, DeliveryZone.fee)
    .where(DeliveryZone.restaurant_id == bindparam("restaurant_id"))
    .order_by(DeliveryZone.zone)
)
RATING = Query(
    select(func.count(Rating.id).label("count"), func.sum(Rating.food_stars).label("stars")).where(
        Rating.restaurant_id == bindparam("restaurant_id")
    )
)
# the same for several restaurants at once (search_restaurants' page), by restaurant
FEES_OF = Query(
    select(DeliveryZone.restaurant_id, DeliveryZone.zone, DeliveryZone.fee)
    .where(DeliveryZone.restaurant_id.in_(bindparam("restaurant_ids", expanding=True)))
    .order_by(DeliveryZone.restaurant_id, DeliveryZone.zone)
)
RATINGS_OF = Query(  # a restaurant with no rating has no row
    select(
        Rating.restaurant_id,
        func.count(Rating.id).label("count"),
        func.sum(Rating.food_stars).label("stars"),
    )
    .where(Rating.restaurant_id.in_(bindparam("restaurant_ids", expanding=True)))
    .group_by(Rating.restaurant_id)
)
# a restaurant's menu items in menu order, for its categories
MENU_CATEGORIES = Query(
    select(MenuItem.category, MenuItem.available)
    .where(MenuItem.restaurant_id == bindparam("restaurant_id"))
    .order_by(MenuItem.position, MenuItem.id)
)
ACTIVE_ORDER_COUNT = Query(
    select(func.count(Order.id)).where(
        Order.restaurant_id == bindparam("restaurant_id"), Order.status.in_(ACTIVE_STATUSES)
    )
)
# option groups and their options in menu order: of one item, of a restaurant's items
_GROUPS = select(option_groups).order_by(OptionGroup.position, OptionGroup.id)
_OPTIONS = (
    select(options)
    .join(option_groups, OptionGroup.id == Option.group_id)
    .order_by(Option.position, Option.id)
)
ITEM_GROUPS = Query(_GROUPS.where(OptionGroup.item_id == bindparam("item_id")))
ITEM_OPTIONS = Query(_OPTIONS.where(OptionGroup.item_id == bindparam("item_id")))
MENU_GROUPS = Query(
    _GROUPS.join(menu_items, MenuItem.id == OptionGroup.item_id).where(
        MenuItem.restaurant_id == bindparam("restaurant_id")
    )
)
MENU_OPTIONS = Query(
    _OPTIONS.join(menu_items, MenuItem.id == OptionGroup.item_id).where(
        MenuItem.restaurant_id == bindparam("restaurant_id")
    )
)
# every option group's item, whether it is required and its first option (None when it has
# none), each item's in menu order: what the menu_item listing needs of all the groups (the
# options themselves, their prices included, are not read back)
GROUP_FIRST_OPTIONS = Query(
    select(
        OptionGroup.item_id,
        OptionGroup.required,
        select(Option.id)
        .where(Option.group_id == OptionGroup.id)
        .order_by(Option.position, Option.id)
        .limit(1)
        .scalar_subquery()
        .label("option_id"),
    ).order_by(OptionGroup.item_id, OptionGroup.position, OptionGroup.id)
)
OPTION_NAMES = Query(
    select(Option.id, Option.name)
    .where(Option.id.in_(bindparam("ids", expanding=True)))
    .order_by(Option.id)
)
AVAILABLE_ITEMS = Query(
    select(MenuItem.id, MenuItem.restaurant_id, MenuItem.name)
    .where(MenuItem.available.is_(True))
    .order_by(MenuItem.id)
)
OPTIONS = Query(select(Option.id, Option.item_id, Option.name).order_by(Option.id))
CUSTOMERS = Query(select(Customer.id, Customer.name, Customer.zone).order_by(Customer.id))
CUSTOMER_NAMES = Query(select(Customer.name).order_by(Customer.id))
CUSTOMERS_MATCHING = Query(
    select(customers)
    .where(
        contains(bindparam("pattern"), Customer.name, Customer.email, Customer.phone, Customer.id)
    )
    .order_by(Customer.name, Customer.id)
    .limit(bindparam("limit"))
)
ACTIVE_ORDER_IDS = Query(
    select(Order.id)
    .where(Order.customer_id == bindparam("customer_id"), Order.status.in_(ACTIVE_STATUSES))
    .order_by(Order.id)
)
# a customer's cart lines, each with its item's name and whether it is available
CART = Query(
    select(cart_lines, MenuItem.name.label("item_name"), MenuItem.available)
    .join(menu_items, MenuItem.id == CartLine.item_id)
    .where(CartLine.customer_id == bindparam("customer_id"))
    .order_by(CartLine.id)
)
CART_LINE_COUNT = Query(
    select(func.count(CartLine.id)).where(CartLine.customer_id == bindparam("customer_id"))
)
ALL_CART_LINES = Query(
    select(CartLine.id, CartLine.customer_id, CartLine.restaurant_id, CartLine.item_id).order_by(
        CartLine.id
    )
)
DELETE_CART_LINE = Query(delete(CartLine).where(CartLine.id == bindparam("id")))
# an order with its customer's and restaurant's names and how many items it holds
_ITEM_COUNT = (
    select(func.coalesce(func.sum(OrderLine.quantity), 0))
    .where(OrderLine.order_id == Order.id)
    .scalar_subquery()
)
_ORDERS = (
    select(
        orders,
        Customer.name.label("customer_name"),
        Restaurant.name.label("restaurant_name"),
        _ITEM_COUNT.label("item_count"),
    )
    .join(customers, Customer.id == Order.customer_id)
    .join(restaurants, Restaurant.id == Order.restaurant_id)
)
ORDER = Query(_ORDERS.where(Order.id == bindparam("id")))
ORDER_LINES = Query(
    select(
        OrderLine.item_id,
        OrderLine.name,
        OrderLine.options,
        OrderLine.quantity,
        OrderLine.unit_price,
        OrderLine.line_total,
    )
    .where(OrderLine.order_id == bindparam("order_id"))
    .order_by(OrderLine.id)
)
HISTORY = Query(
    select(TrackingEvent.status, TrackingEvent.at, TrackingEvent.note)
    .where(TrackingEvent.order_id == bindparam("order_id"))
    .order_by(TrackingEvent.at, TrackingEvent.id)
)
DELIVERED_AT = Query(
    select(TrackingEvent.at)
    .where(TrackingEvent.order_id == bindparam("order_id"), TrackingEvent.status == "delivered")
    .order_by(TrackingEvent.at.desc(), TrackingEvent.id.desc())
    .limit(1)
)
ORDER_RATING = Query(select(ratings).where(Rating.order_id == bindparam("order_id")))
# orders under way or placed since a time (the order entities)
RECENT_ORDERS = Query(
    select(Order.id, Order.customer_id, Order.restaurant_id, Order.status, Order.courier_id)
    .where(Order.status.in_(ACTIVE_STATUSES) | (Order.placed_at >= bindparam("since")))
    .order_by(Order.id)
)
COURIER = Query(select(couriers).where(Courier.id == bindparam("id")))
COURIERS = Query(
    select(Courier.id, Courier.name, Courier.zone, Courier.status).order_by(Courier.id)
)
ACTIVE_ORDER_OF = Query(
    select(Order.id)
    .where(Order.courier_id == bindparam("courier_id"), Order.status.in_(COURIER_STAGES))
    .order_by(Order.id)
    .limit(1)
)
ZONE_RESTAURANTS = Query(
    select(DeliveryZone.zone, DeliveryZone.restaurant_id).order_by(
        DeliveryZone.zone, DeliveryZone.restaurant_id
    )
)
RATINGS = Query(select(Rating.id, Rating.order_id).order_by(Rating.id))


@functools.cache
def _restaurants_matching(by_text: bool, by_cuisine: bool, by_zone: bool) -> Query:
    """Restaurants by name, optionally matching a text, a cuisine and a delivery zone."""
    stmt = select(restaurants)
    if by_text:
        stmt = stmt.where(contains(bindparam("pattern"), Restaurant.name, Restaurant.address))
    if by_cuisine:
        stmt = stmt.where(Restaurant.cuisine == bindparam("cuisine"))
    if by_zone:
        stmt = stmt.where(
            Restaurant.id.in_(
                select(DeliveryZone.restaurant_id).where(DeliveryZone.zone == bindparam("zone"))
            )
        )
    return Query(stmt.order_by(Restaurant.name, Restaurant.id))


@functools.cache
def _menu_matching(by_text: bool, available_only: bool) -> Query:
    """A restaurant's menu items in menu order, optionally matching a text, or available."""
    stmt = select(menu_items).where(MenuItem.restaurant_id == bindparam("restaurant_id"))
    if by_text:
        stmt = stmt.where(
            contains(bindparam("pattern"), MenuItem.name, MenuItem.description, MenuItem.category)
        )
    if available_only:
        stmt = stmt.where(MenuItem.available.is_(True))
    return Query(stmt.order_by(MenuItem.position, MenuItem.id))


@functools.cache
def _orders_matching(
    by_customer: bool, by_restaurant: bool, by_status: bool
) -> tuple[Query, Query]:
    """How many orders match, and the newest ``limit`` of them (list_orders')."""
    conditions = []
    if by_customer:
        conditions.append(Order.customer_id == bindparam("customer_id"))
    if by_restaurant:
        conditions.append(Order.restaurant_id == bindparam("restaurant_id"))
    if by_status:
        conditions.append(Order.status == bindparam("status"))
    count = Query(select(func.count(Order.id)).where(*conditions))
    rows = Query(
        _ORDERS.where(*conditions)
        .order_by(Order.placed_at.desc(), Order.id.desc())
        .limit(bindparam("limit"))
    )
    return count, rows


@functools.cache
def _couriers_matching(by_zone: bool, by_status: bool) -> tuple[Query, Query]:
    """How many couriers match, and the first ``limit`` of them by id (list_couriers')."""
    stmt = select(couriers)
    if by_zone:
        stmt = stmt.where(Courier.zone == bindparam("zone"))
    if by_status:
        stmt = stmt.where(Courier.status == bindparam("status"))
    count = Query(select(func.count()).select_from(stmt.subquery()))
    rows = Query(stmt.order_by(Courier.id).limit(bindparam("limit")))
    return count, rows


# ----------------------------------------------------------------- helpers
def _broken(rule: str, detail: str) -> PreconditionFailed:
    """The error for a failed business rule: it names the rule, then says what to do."""
    return PreconditionFailed(f"Rule '{rule}' failed: {detail}")


def _stamp(value: dt.datetime | None) -> str | None:
    return value.isoformat(timespec="minutes") if value is not None else None


def _at(value: dt.datetime) -> str:
    return value.isoformat(timespec="minutes")


def _fees(ctx: ToolContext, restaurant_id: str) -> dict[str, Decimal]:
    return {z.zone: z.fee for z in ctx.sql.all(FEES, restaurant_id=restaurant_id)}


def _rating(ctx: ToolContext, restaurant_id: str) -> tuple[Decimal | None, int]:
    count, total = ctx.sql.one(RATING, restaurant_id=restaurant_id)
    return _average(count, total)


def _average(count: int | None, total: int | None) -> tuple[Decimal | None, int]:
    """The average food stars of ``count`` ratings summing to ``total``, and the count."""
    if not count:
        return None, 0
    return (Decimal(int(total or 0)) / Decimal(int(count))).quantize(Decimal("0.1")), int(count)


def _briefs(ctx: ToolContext, rows: list[Any]) -> list[RestaurantBrief]:
    """``_brief`` of each restaurant, their fees and ratings read in one statement each."""
    if not rows:
        return []
    ids = [r.id for r in rows]
    fees: dict[str, dict[str, Decimal]] = {}
    for z in ctx.sql.all(FEES_OF, restaurant_ids=ids):
        fees.setdefault(z.restaurant_id, {})[z.zone] = z.fee
    ratings = {
        g.restaurant_id: _average(g.count, g.stars)
        for g in ctx.sql.all(RATINGS_OF, restaurant_ids=ids)
    }
    return [_brief_of(ctx, r, fees.get(r.id, {}), ratings.get(r.id, (None, 0))) for r in rows]


def _brief(ctx: ToolContext, r: Any) -> RestaurantBrief:
    return _brief_of(ctx, r, _fees(ctx, r.id), _rating(ctx, r.id))


def _brief_of(
    ctx: ToolContext, r: Any, fees: dict[str, Decimal], rated: tuple[Decimal | None, int]
) -> RestaurantBrief:
    rating, count = rated
    return {
        "restaurant_id": r.id,
        "name": r.name,
        "cuisine": r.cuisine,
        "zone": r.zone,
        "address": r.address,
        "hours": f"{r.opens_at}-{r.closes_at}",
        "closed_days": r.closed_days.split(),
        "open_now": is_open(r, ctx.now),
        "minimum_order": r.minimum_order,
        "delivery_zones": [{"zone": z, "fee": f} for z, f in fees.items()],
        "rating": rating,
        "rating_count": count,
    }


def _option_groups(
    ctx: ToolContext, groups: Query, options: Query, **params: Any
) -> dict[str, list[GroupOut]]:
    """The option groups ``groups`` reads, by item id, each with its options (those
    ``options`` reads), both in menu order: ``ITEM_GROUPS, ITEM_OPTIONS, item_id=...``."""
    choices: dict[str, list[OptionOut]] = {}
    for o in ctx.sql.all(options, **params):
        choices.setdefault(o.group_id, []).append(
            {"option_id": o.id, "name": o.name, "price_delta": o.price_delta}
        )
    out: dict[str, list[GroupOut]] = {}
    for g in ctx.sql.all(groups, **params):
        out.setdefault(g.item_id, []).append(
            {
                "group_id": g.id,
                "name": g.name,
                "required": g.required,
                "max_choices": g.max_choices,
                "options": choices.get(g.id, []),
            }
        )
    return out


def _item_out(item: Any, groups: list[GroupOut]) -> ItemOut:
    return {
        "item_id": item.id,
        "category": item.category,
        "name": item.name,
        "description": item.description,
        "price": item.price,
        "available": item.available,
        "option_groups": groups,
    }


def _option_names(ctx: ToolContext, lines: Iterable[Any]) -> dict[str, str]:
    """The names of the options chosen in cart ``lines``, by option id."""
    ids = sorted({i for line in lines for i in split_ids(line.option_ids)})
    return dict(ctx.sql.all(OPTION_NAMES, ids=ids))


def _cart(ctx: ToolContext, customer: Any) -> CartOut:
    lines = ctx.sql.all(CART, customer_id=customer.id)
    restaurant = ctx.sql.first(RESTAURANT, id=lines[0].restaurant_id) if lines else None
    names = _option_names(ctx, lines)
    out_lines: list[CartLineOut] = []
    for line in lines:
        ids = split_ids(line.option_ids)
        out_lines.append(
            {
                "cart_line_id": line.id,
                "item_id": line.item_id,
                "name": line.item_name,
                "options": [names[i] for i in ids],
                "option_ids": ids,
                "quantity": line.quantity,
                "unit_price": line.unit_price,
                "line_total": line.unit_price * line.quantity,
            }
        )
    subtotal = sum((line["line_total"] for line in out_lines), ZERO)
    problems: list[str] = []
    fee: Decimal | None = None
    open_now: bool | None = None
    minimum: Decimal | None = None
    short = ZERO
    if restaurant is None:
        problems.append("cart_empty: the cart is empty")
    else:
        minimum = restaurant.minimum_order
        short = max(ZERO, minimum - subtotal)
        fee = _fees(ctx, restaurant.id).get(customer.zone)
        open_now = is_open(restaurant, ctx.now)
        if not open_now:
            problems.append(
                f"restaurant_closed: {restaurant.name} is closed now (hours "
                f"{restaurant.opens_at}-{restaurant.closes_at}); it opens at "
                f"{_at(next_opening(restaurant, ctx.now))}"
            )
        if fee is None:
            problems.append(
                f"outside_delivery_zone: {restaurant.name} does not deliver to {customer.zone}"
            )
        if short > 0:
            problems.append(
                f"below_minimum_order: add {short} more to reach the minimum order of {minimum}"
            )
        for line in lines:
            if not line.available:
                problems.append(f"item_unavailable: {line.item_name} is sold out")
    return {
        "customer_id": customer.id,
        "restaurant_id": restaurant.id if restaurant else None,
        "restaurant_name": restaurant.name if restaurant else None,
        "lines": out_lines,
        "item_count": sum(line.quantity for line in lines),
        "subtotal": subtotal,
        "minimum_order": minimum,
        "amount_to_minimum": short,
        "delivery_fee": fee,
        "open_now": open_now,
        "estimated_total": subtotal + fee if fee is not None else None,
        "ready_to_order": not problems,
        "problems": problems,
    }


def _order_brief(o: Any) -> OrderBrief:
    """An order row of ``ORDER`` (with its customer's and restaurant's names, item count)."""
    return {
        "order_id": o.id,
        "customer_id": o.customer_id,
        "customer_name": o.customer_name,
        "restaurant_id": o.restaurant_id,
        "restaurant_name": o.restaurant_name,
        "status": o.status,
        "item_count": o.item_count,
        "total": o.total,
        "placed_at": _at(o.placed_at),
    }


def _next_status(o: Any) -> str | None:
    if o.status not in ORDER_FLOW or o.status == "delivered":
        return None
    return ORDER_FLOW[ORDER_FLOW.index(o.status) + 1]


def _order_detail(ctx: ToolContext, order_id: str) -> OrderDetail:
    """The order as it is in the tables now (a writing tool calls it after writing)."""
    o = ctx.sql.one(ORDER, id=order_id)
    courier = ctx.sql.first(COURIER, id=o.courier_id) if o.courier_id else None
    rating = ctx.sql.first(ORDER_RATING, order_id=o.id)
    cancellable = o.status in CANCELLABLE
    return {
        **_order_brief(o),
        "lines": [
            {
                "item_id": line.item_id,
                "name": line.name,
                "options": line.options,
                "quantity": line.quantity,
                "unit_price": line.unit_price,
                "line_total": line.line_total,
            }
            for line in ctx.sql.all(ORDER_LINES, order_id=o.id)
        ],
        "subtotal": o.subtotal,
        "delivery_fee": o.delivery_fee,
        "tip": o.tip,
        "refunded": o.refunded,
        "cancel_reason": o.cancel_reason,
        "delivery_address": o.delivery_address,
        "zone": o.zone,
        "note": o.note,
        "courier": (
            {
                "courier_id": courier.id,
                "name": courier.name,
                "phone": courier.phone,
                "vehicle": courier.vehicle,
            }
            if courier is not None
            else None
        ),
        "estimated_delivery_at": _at(o.estimated_delivery_at)
        if o.status in ACTIVE_STATUSES
        else None,
        "history": [
            {"status": e.status, "at": _at(e.at), "note": e.note}
            for e in ctx.sql.all(HISTORY, order_id=o.id)
        ],
        "next_status": _next_status(o),
        "can_cancel": cancellable,
        "refund_if_cancelled_by_customer": cancel_refund(o, "customer_request")
        if cancellable
        else None,
        "rating": (
            {
                "rating_id": rating.id,
                "food_stars": rating.food_stars,
                "delivery_stars": rating.delivery_stars,
                "comment": rating.comment,
                "created_at": _at(rating.created_at),
            }
            if rating is not None
            else None
        ),
    }


def _courier_out(ctx: ToolContext, c: Any) -> CourierOut:
    return {
        "courier_id": c.id,
        "name": c.name,
        "phone": c.phone,
        "vehicle": c.vehicle,
        "zone": c.zone,
        "status": c.status,
        "active_order_id": ctx.sql.scalar(ACTIVE_ORDER_OF, courier_id=c.id),
    }


def _track(ctx: ToolContext, order_id: str, status: str, note: str) -> None:
    """Add a step to an order's tracking history (the tool sets the order's status)."""
    ctx.sql.insert(
        TrackingEvent,
        id=next_id(ctx, TrackingEvent.id, "trk", 6),
        order_id=order_id,
        status=status,
        at=ctx.now,
        note=note[:200],
    )


def _release(ctx: ToolContext, courier_id: str | None) -> None:
    """The courier of a finished or reassigned order is free again."""
    if courier_id is None:
        return
    courier = ctx.sql.one(COURIER, id=courier_id)
    if courier.status == "on_delivery":
        ctx.sql.update(Courier, courier, status="available")


# -------------------------------------------------------- example values
COMMENTS = [
    "Hot and on time, thanks!",
    "The fries were cold.",
    "Friendly courier, great curry.",
    "Missing the extra sauce.",
    "",
]
NOTES_EXAMPLES = [
    "Ring the bell twice",
    "Leave at the door",
    "No cutlery please",
    "Call on arrival",
]


def _restaurant_word(ctx: ToolContext, rng: random.Random) -> str:
    names = ctx.sql.scalars(RESTAURANT_NAMES)
    words = [w for w in rng.choice(names).split() if len(w) > 3 and w[0].isupper()]
    return words[0] if words else names[0]


def _customer_word(ctx: ToolContext, rng: random.Random) -> str:
    names = ctx.sql.scalars(CUSTOMER_NAMES)
    return rng.choice(names).split()[-1]


# ------------------------------------------------------------------- tools
@server.tool(
    returns="restaurant",
    phrasings=[
        "Find {cuisine} restaurants that deliver to {zone}",
        "Which restaurants called {query} are open now?",
        "Show me restaurants delivering to {zone}",
    ],
    examples={"query": _restaurant_word},
)
def search_restaurants(
    ctx: ToolContext,
    query: SearchText | None = None,
    cuisine: Cuisine | None = None,
    zone: Zone | None = None,
    open_now: bool | None = None,
    limit: Limit = 20,
) -> RestaurantList:
    """Find restaurants by name, cuisine, delivery zone or whether they are open now.

    Args:
        query: Case-insensitive text in the name or address, such as "Pizzeria" or "Sushi".
        cuisine: Only this cuisine, such as "thai" or "pizza".
        zone: Only restaurants that deliver to this zone, such as "downtown".
        open_now: true for restaurants taking orders now, false for closed ones.
        limit: Maximum number of restaurants to return (1-50), such as 20.

    Returns:
        {"total": 4, "restaurants": [{"restaurant_id": "rst_004", "name": "Thai Orchid",
        "cuisine": "thai", "hours": "11:00-22:00", "closed_days": ["mon"], "open_now": true,
        "minimum_order": "15.00", "delivery_zones": [{"zone": "downtown", "fee": "1.99"}],
        "rating": "4.3", ...}]}, by name.
    """
    text = (query or "").strip()
    params: dict[str, Any] = {}
    if text:
        params["pattern"] = search_pattern(text)
    if cuisine is not None:
        params["cuisine"] = cuisine
    if zone is not None:
        params["zone"] = zone
    matching = _restaurants_matching(bool(text), cuisine is not None, zone is not None)
    found = ctx.sql.all(matching, **params)
    ctx.spend(len(found), "restaurants", hint="filter by cuisine or zone")
    if open_now is not None:
        found = [r for r in found if is_open(r, ctx.now) == open_now]
    return {"total": len(found), "restaurants": _briefs(ctx, found[:limit])}


@server.tool(
    returns="restaurant",
    phrasings=[
        "Is {restaurant_id} open right now?",
        "What is the minimum order at {restaurant_id}?",
    ],
)
def get_restaurant(ctx: ToolContext, restaurant_id: RestaurantRow) -> RestaurantDetail:
    """Get one restaurant: hours, whether it is open, delivery zones and fees, menu sections.

    Args:
        restaurant_id: The restaurant, such as "rst_004" (search_restaurants finds it).

    Returns:
        {"restaurant_id": "rst_004", "open_now": false, "next_opening": "2026-03-03T11:00",
        "minimum_order": "15.00", "delivery_zones": [{"zone": "harbor", "fee": "3.49"}],
        "prep_minutes": 20, "categories": [{"category": "Curries", "items": 5,
        "available": 4}], ...}.
    """
    r: Any = restaurant_id
    cats: dict[str, CategoryOut] = {}
    for item in ctx.sql.all(MENU_CATEGORIES, restaurant_id=r.id):
        cat = cats.setdefault(
            item.category, {"category": item.category, "items": 0, "available": 0}
        )
        cat["items"] += 1
        cat["available"] += int(item.available)
    active = ctx.sql.scalar(ACTIVE_ORDER_COUNT, restaurant_id=r.id)
    open_now = is_open(r, ctx.now)
    return {
        **_brief(ctx, r),
        "phone": r.phone,
        "prep_minutes": r.prep_minutes,
        "next_opening": None if open_now else _at(next_opening(r, ctx.now)),
        "categories": list(cats.values()),
        "active_orders": active or 0,
    }


@server.tool(
    returns=("menu_item", "option", "restaurant"),
    phrasings=[
        "Show me the menu of {restaurant_id}",
        "What {search} dishes does {restaurant_id} have?",
    ],
    examples={"search": ["pizza", "chicken", "roll", "curry", "burger", "vegan", "tacos"]},
)
def get_menu(
    ctx: ToolContext,
    restaurant_id: RestaurantRow,
    search: SearchText | None = None,
    available_only: bool = False,
) -> MenuOut:
    """A restaurant's menu in menu order, each item with its option groups and price deltas.

    An item's price in a cart is its price plus the price_delta of each chosen option;
    every required group (such as "Size") needs exactly one choice.

    Args:
        restaurant_id: The restaurant, such as "rst_004".
        search: Case-insensitive text in an item's name, description or category, such as
            "curry" or "Drinks".
        available_only: true to leave out sold-out items.

    Returns:
        {"restaurant_id": "rst_004", "open_now": true, "total": 14, "items": [{"item_id":
        "itm_0042", "name": "Margherita", "price": "10.50", "available": true,
        "option_groups": [{"group_id": "grp_0051", "name": "Size", "required": true,
        "max_choices": 1, "options": [{"option_id": "opt_0107", "name": "Large 14in",
        "price_delta": "5.50"}, ...]}]}]}.
    """
    r: Any = restaurant_id
    text = (search or "").strip()
    params: dict[str, Any] = {"restaurant_id": r.id}
    if text:
        params["pattern"] = search_pattern(text)
    items = ctx.sql.all(_menu_matching(bool(text), available_only), **params)
    groups = _option_groups(ctx, MENU_GROUPS, MENU_OPTIONS, restaurant_id=r.id)
    return {
        "restaurant_id": r.id,
        "name": r.name,
        "open_now": is_open(r, ctx.now),
        "total": len(items),
        "items": [_item_out(i, groups.get(i.id, [])) for i in items],
    }


@server.tool(
    returns=("customer", "order"),
    phrasings=["Find the customer {query}", "Look up the account of {query}"],
    examples={"query": _customer_word},
)
def find_customer(
    ctx: ToolContext, query: Annotated[str, Field(min_length=1, max_length=200)], limit: Limit = 10
) -> list[CustomerOut]:
    """Find customers by name, email, phone or id, with their zone, cart and active orders.

    Args:
        query: Case-insensitive text, such as "Garcia", "ana.garcia@gmail.com" or "cus_0012".
        limit: Maximum number of customers to return (1-50), such as 10.

    Returns:
        [{"customer_id": "cus_0012", "name": "Ana Garcia", "zone": "riverside",
        "address": "12 Elm Street, Apt 4", "cart_lines": 2, "active_order_ids":
        ["ord_00321"], ...}], by name.
    """
    text = query.strip()
    if not text:
        raise InvalidArgument("query must not be blank: give part of a name, email or phone.")
    rows = ctx.sql.all(CUSTOMERS_MATCHING, pattern=search_pattern(text), limit=limit)
    out: list[CustomerOut] = []
    for c in rows:
        active = ctx.sql.scalars(ACTIVE_ORDER_IDS, customer_id=c.id)
        out.append(
            {
                "customer_id": c.id,
                "name": c.name,
                "email": c.email,
                "phone": c.phone,
                "address": c.address,
                "zone": c.zone,
                "cart_lines": ctx.sql.scalar(CART_LINE_COUNT, customer_id=c.id),
                "active_order_ids": active,
            }
        )
    return out


@server.tool(
    returns=("cart_line", "menu_item", "option", "restaurant"),
    phrasings=["What is in the cart of {customer_id}?", "Can {customer_id} check out their cart?"],
)
def view_cart(ctx: ToolContext, customer_id: CustomerRow) -> CartOut:
    """Show a customer's cart: lines, subtotal, delivery fee and what would block ordering.

    Args:
        customer_id: The customer, such as "cus_0012" (find_customer finds them).

    Returns:
        {"customer_id": "cus_0012", "restaurant_id": "rst_004", "lines": [{"cart_line_id":
        "cl_0031", "name": "Margherita", "options": ["Large 14in"], "quantity": 2,
        "unit_price": "16.00", "line_total": "32.00"}], "subtotal": "32.00",
        "minimum_order": "15.00", "amount_to_minimum": "0.00", "delivery_fee": "1.99",
        "ready_to_order": true, "problems": []}; problems name the rule that would refuse
        the order, such as "below_minimum_order: add 3.50 more ...".
    """
    return _cart(ctx, customer_id)


@server.tool(
    returns="order",
    phrasings=[
        "Show the {status} orders of {customer_id}",
        "List the recent orders of restaurant {restaurant_id}",
        "What orders has {customer_id} placed?",
    ],
)
def list_orders(
    ctx: ToolContext,
    customer_id: CustomerRow | None = None,
    restaurant_id: RestaurantRow | None = None,
    status: OrderStatus | None = None,
    limit: Limit = 20,
) -> OrderList:
    """List orders, newest first, by customer, restaurant and/or status.

    Args:
        customer_id: Only this customer's orders, such as "cus_0012".
        restaurant_id: Only this restaurant's orders, such as "rst_004".
        status: Only orders in this status, such as "preparing" or "delivered".
        limit: Maximum number of orders to return (1-50), such as 20.

    Returns:
        {"total": 7, "orders": [{"order_id": "ord_00321", "restaurant_name": "Thai Orchid",
        "status": "preparing", "total": "31.49", "placed_at": "2026-03-02T12:10", ...}]};
        total counts every match.
    """
    params: dict[str, Any] = {}
    if customer_id is not None:
        params["customer_id"] = customer_id.id
    if restaurant_id is not None:
        params["restaurant_id"] = restaurant_id.id
    if status is not None:
        params["status"] = status
    count, matching = _orders_matching(
        customer_id is not None, restaurant_id is not None, status is not None
    )
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(matching, limit=limit, **params)
    return {"total": total, "orders": [_order_brief(o) for o in rows]}


@server.tool(
    returns=("order", "courier", "menu_item", "rating"),
    phrasings=["Where is my order {order_id}?", "Show me order {order_id} and its tracking"],
)
def get_order(ctx: ToolContext, order_id: OrderRow) -> OrderDetail:
    """Get one order: its lines and totals, courier, tracking history, refund and rating.

    Args:
        order_id: The order, such as "ord_00321" (list_orders finds it).

    Returns:
        {"order_id": "ord_00321", "status": "preparing", "subtotal": "26.00",
        "delivery_fee": "1.99", "tip": "2.00", "total": "29.99", "refunded": "0.00",
        "courier": {"courier_id": "cou_007", "name": "...", ...}, "history": [{"status":
        "placed", "at": "2026-03-02T12:10", "note": "Order placed"}, ...], "next_status":
        "picked_up", "can_cancel": true, "refund_if_cancelled_by_customer": "16.99",
        "rating": null, ...}.
    """
    return _order_detail(ctx, order_id.id)


@server.tool(
    returns=("courier", "order"),
    phrasings=["Which couriers are {status} in {zone}?", "List the couriers working in {zone}"],
)
def list_couriers(
    ctx: ToolContext,
    zone: Zone | None = None,
    status: Literal["available", "on_delivery", "off_shift"] | None = None,
    limit: Limit = 30,
) -> CourierList:
    """List couriers by zone and status, with the order each one is busy with.

    A courier picks up only from restaurants in their own zone.

    Args:
        zone: Only couriers working in this zone, such as "harbor".
        status: "available", "on_delivery" or "off_shift".
        limit: Maximum number of couriers to return (1-50), such as 30.

    Returns:
        {"total": 3, "couriers": [{"courier_id": "cou_007", "name": "Sam Lee", "vehicle":
        "bike", "zone": "harbor", "status": "available", "active_order_id": null}]}, by id.
    """
    params: dict[str, Any] = {}
    if zone is not None:
        params["zone"] = zone
    if status is not None:
        params["status"] = status
    count, matching = _couriers_matching(zone is not None, status is not None)
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(matching, limit=limit, **params)
    return {"total": total, "couriers": [_courier_out(ctx, c) for c in rows]}


@server.tool(
    writes=True,
    returns=("cart_line", "menu_item", "option", "restaurant"),
    phrasings=[
        "Add {item_id} with options {option_ids} to the cart of {customer_id}",
        "Put {quantity} x {item_id} ({option_ids}) in {customer_id}'s cart",
        "{customer_id} wants {item_id} with {option_ids}",
    ],
    examples={"quantity": [1, 1, 2, 3]},
)
def add_to_cart(
    ctx: ToolContext,
    customer_id: CustomerRow,
    item_id: ItemRow,
    option_ids: Annotated[list[OptionRow], Field(max_length=10)],
    quantity: Quantity = 1,
) -> CartAdded:
    """Add a menu item with its chosen options to a customer's cart.

    Choose exactly one option of every required group (such as a size) and at most
    max_choices of an optional group (see get_menu). A cart holds one restaurant's items,
    from a restaurant that delivers to the customer's zone. Adding the same item with the
    same options again raises that line's quantity.

    Args:
        customer_id: The customer, such as "cus_0012".
        item_id: The menu item, such as "itm_0042".
        option_ids: The chosen options, such as ["opt_0107", "opt_0110"]; [] when the item
            has no required group and no add-ons are wanted.
        quantity: How many (1-20), such as 2.

    Returns:
        The cart with "added_line_id": "cl_0032", its lines, "subtotal" and "problems".
    """
    c = customer_id
    item: Any = item_id  # a row, as unit_price reads it
    if not item.available:
        raise _broken(
            "item_unavailable",
            f"{item.name} ({item.id}) is sold out right now and cannot be added. Pick another "
            "item from the restaurant's menu.",
        )
    chosen: dict[str, list[Any]] = {}
    seen: set[str] = set()
    for opt in option_ids:
        if opt.item_id != item.id:
            raise InvalidArgument(
                f"Rule 'option_not_on_item' failed: option {opt.id} ({opt.name}) belongs to "
                f"item {opt.item_id}, not to {item.name} ({item.id}); choose options from this "
                "item's option groups on the menu."
            )
        if opt.id in seen:
            raise InvalidArgument(
                f"Rule 'option_not_on_item' failed: option {opt.id} ({opt.name}) is listed "
                "twice; list each option once and use quantity for more of the item."
            )
        seen.add(opt.id)
        chosen.setdefault(opt.group_id, []).append(opt)
    groups = _option_groups(ctx, ITEM_GROUPS, ITEM_OPTIONS, item_id=item.id)
    for g in groups.get(item.id, []):
        picked = chosen.get(g["group_id"], [])
        if g["required"] and len(picked) != 1:
            names = ", ".join(f"{o['option_id']} ({o['name']})" for o in g["options"])
            raise _broken(
                "required_option_missing",
                f"{item.name} needs exactly one '{g['name']}' choice, got {len(picked)}; choose "
                f"one of {names}.",
            )
        if len(picked) > g["max_choices"]:
            raise _broken(
                "too_many_options",
                f"'{g['name']}' of {item.name} takes at most {g['max_choices']} options, got "
                f"{len(picked)}; leave some out.",
            )
    restaurant = ctx.sql.one(RESTAURANT, id=item.restaurant_id)
    lines = ctx.sql.all(CART, customer_id=c.id)
    if lines and lines[0].restaurant_id != restaurant.id:
        other = ctx.sql.one(RESTAURANT, id=lines[0].restaurant_id)
        raise _broken(
            "one_restaurant_per_cart",
            f"the cart of {c.name} ({c.id}) holds items from {other.name} ({other.id}); a cart "
            f"holds one restaurant's items, so {item.name} from {restaurant.name} cannot be "
            "added. Order or clear the current cart first.",
        )
    if c.zone not in _fees(ctx, restaurant.id):
        raise _broken(
            "outside_delivery_zone",
            f"{restaurant.name} ({restaurant.id}) does not deliver to {c.zone}, where "
            f"{c.name} lives; search for restaurants that deliver to {c.zone}.",
        )
    ids = " ".join(sorted(o.id for o in option_ids))
    same = next((ln for ln in lines if ln.item_id == item.id and ln.option_ids == ids), None)
    if same is not None:
        if same.quantity + quantity > MAX_LINE_QUANTITY:
            raise _broken(
                "cart_limit",
                f"the cart already has {same.quantity} of {item.name} with these options; at "
                f"most {MAX_LINE_QUANTITY} of one item fit in a cart.",
            )
        ctx.sql.update(CartLine, same, quantity=same.quantity + quantity)
        line_id = same.id
    else:
        if len(lines) >= MAX_CART_LINES:
            raise _broken(
                "cart_limit",
                f"the cart already has {len(lines)} lines, the most allowed; order or remove "
                "some lines first.",
            )
        line_id = next_id(ctx, CartLine.id, "cl", 4)
        ctx.sql.insert(
            CartLine,
            id=line_id,
            customer_id=c.id,
            restaurant_id=restaurant.id,
            item_id=item.id,
            option_ids=ids,
            quantity=quantity,
            unit_price=unit_price(item, list[Any](option_ids)),
            added_at=ctx.now,
        )
    return {**_cart(ctx, c), "added_line_id": line_id}


@server.tool(
    writes=True,
    destructive=True,
    returns=("cart_line", "customer"),
    phrasings=[
        "Remove line {cart_line_id} from the cart of {customer_id}",
        "Take {cart_line_id} out of {customer_id}'s cart",
    ],
)
def remove_from_cart(
    ctx: ToolContext, customer_id: CustomerRow, cart_line_id: CartLineRow
) -> CartRemoved:
    """Remove one line (an item with its options, all of its quantity) from a cart.

    Args:
        customer_id: The customer, such as "cus_0012".
        cart_line_id: The line, such as "cl_0031" (view_cart lists them).

    Returns:
        The cart without the line, with "removed_line_id": "cl_0031".
    """
    line = cart_line_id
    if line.customer_id != customer_id.id:
        raise InvalidArgument(
            f"cart line {line.id} is in the cart of customer {line.customer_id}, not "
            f"{customer_id.id}; view this customer's cart to find their lines."
        )
    ctx.sql.run(DELETE_CART_LINE, id=line.id)
    return {**_cart(ctx, customer_id), "removed_line_id": line.id}


@server.tool(
    writes=True,
    destructive=True,
    idempotent=True,
    returns="customer",
    phrasings=["Empty the cart of {customer_id}", "Clear {customer_id}'s cart, start over"],
)
def clear_cart(ctx: ToolContext, customer_id: CustomerRow) -> CartCleared:
    """Remove every line from a customer's cart (needed to order from another restaurant).

    Args:
        customer_id: The customer, such as "cus_0012".

    Returns:
        The empty cart with "removed_lines": 3.
    """
    lines = ctx.sql.all(CART, customer_id=customer_id.id)
    for line in lines:
        ctx.sql.run(DELETE_CART_LINE, id=line.id)
    return {**_cart(ctx, customer_id), "removed_lines": len(lines)}


@server.tool(
    writes=True,
    returns=("order", "restaurant"),
    phrasings=[
        "Check out the cart of {customer_id}",
        "Place the order in {customer_id}'s cart with a tip of {tip}",
        "Order what is in the cart of {customer_id}; note for the courier: {note}",
    ],
    examples={"tip": [0, 1, 2, "2.50", 3, 5], "note": NOTES_EXAMPLES},
)
def place_order(
    ctx: ToolContext,
    customer_id: CustomerRow,
    tip: Tip | None = None,
    note: Annotated[str, Field(max_length=200)] = "",
) -> OrderDetail:
    """Order everything in a customer's cart, delivered to the customer's address.

    The restaurant must be open now, deliver to the customer's zone, and the food subtotal
    must reach its minimum order. The total is subtotal + delivery fee + tip; the cart is
    emptied and the order starts as "placed".

    Args:
        customer_id: The customer, such as "cus_0012".
        tip: For the courier, 0 to 100, such as 2 or "2.50"; default 0.
        note: For the restaurant and courier, such as "Leave at the door".

    Returns:
        The order: {"order_id": "ord_00341", "status": "placed", "subtotal": "26.00",
        "delivery_fee": "1.99", "tip": "2.00", "total": "29.99", "history": [...], ...}.
    """
    c = customer_id
    lines = ctx.sql.all(CART, customer_id=c.id)
    if not lines:
        raise _broken(
            "cart_empty",
            f"the cart of {c.name} ({c.id}) is empty, so there is nothing to order. Add items "
            "to the cart first.",
        )
    r = ctx.sql.one(RESTAURANT, id=lines[0].restaurant_id)
    gone = [line for line in lines if not line.available]
    if gone:
        raise _broken(
            "item_unavailable",
            f"{', '.join(f'{i.item_name} ({i.item_id})' for i in gone)} sold out since it was "
            "added; "
            "remove it from the cart, then order again.",
        )
    if not is_open(r, ctx.now):
        raise _broken(
            "restaurant_closed",
            f"{r.name} ({r.id}) is closed now (hours {r.opens_at}-{r.closes_at}"
            + (f", closed on {r.closed_days}" if r.closed_days else "")
            + f"); it next opens at {_at(next_opening(r, ctx.now))}. Nothing was ordered; "
            "order then, or choose a restaurant that is open now.",
        )
    fees = _fees(ctx, r.id)
    if c.zone not in fees:
        raise _broken(
            "outside_delivery_zone",
            f"{r.name} ({r.id}) delivers to {', '.join(fees)}, not to {c.zone}. Nothing was "
            "ordered; clear the cart and choose a restaurant that delivers there.",
        )
    subtotal = sum((line.unit_price * line.quantity for line in lines), ZERO)
    if subtotal < r.minimum_order:
        raise _broken(
            "below_minimum_order",
            f"the food subtotal is {subtotal}, below the minimum order of {r.minimum_order} at "
            f"{r.name}; add at least {r.minimum_order - subtotal} more food, then order again.",
        )
    money_tip = (tip or ZERO).quantize(CENT)
    fee = fees[c.zone]
    order_id = next_id(ctx, Order.id, "ord", 5)
    ctx.sql.insert(
        Order,
        id=order_id,
        customer_id=c.id,
        restaurant_id=r.id,
        courier_id=None,
        status="placed",
        delivery_address=c.address,
        zone=c.zone,
        note=" ".join(note.split()),
        subtotal=subtotal,
        delivery_fee=fee,
        tip=money_tip,
        total=subtotal + fee + money_tip,
        refunded=ZERO,
        cancel_reason=None,
        placed_at=ctx.now,
        estimated_delivery_at=ctx.now + dt.timedelta(minutes=r.prep_minutes + TRAVEL_MINUTES),
    )
    option_names = _option_names(ctx, lines)
    for line in lines:  # each cart line becomes an order line
        names = [option_names[i] for i in split_ids(line.option_ids)]
        ctx.sql.insert(
            OrderLine,
            id=next_id(ctx, OrderLine.id, "ol", 5),
            order_id=order_id,
            item_id=line.item_id,
            name=line.item_name,
            options=", ".join(names)[:300],
            quantity=line.quantity,
            unit_price=line.unit_price,
            line_total=line.unit_price * line.quantity,
        )
        ctx.sql.run(DELETE_CART_LINE, id=line.id)
    _track(ctx, order_id, "placed", NOTES["placed"])
    return _order_detail(ctx, order_id)


@server.tool(
    writes=True,
    returns=("order", "courier"),
    phrasings=[
        "Mark order {order_id} as {new_status}",
        "The restaurant has {new_status} order {order_id}",
        "Move {order_id} to {new_status}",
    ],
)
def update_order_status(
    ctx: ToolContext, order_id: OrderRow, new_status: NextStatus
) -> OrderDetail:
    """Move an order one step along placed -> accepted -> preparing -> picked_up -> delivered.

    Each step is allowed only from the one before it; picked_up needs an assigned courier
    (assign_courier), and delivery frees the courier. Each step is added to the tracking
    history with the current time.

    Args:
        order_id: The order, such as "ord_00321".
        new_status: The next status: "accepted", "preparing", "picked_up" or "delivered".

    Returns:
        The order with its new "status" and "history".
    """
    o = order_id
    if o.status == "cancelled":
        raise _broken(
            "invalid_transition",
            f"order {o.id} was cancelled ({o.cancel_reason}); a cancelled order stays "
            "cancelled. The customer can place a new order.",
        )
    if o.status == "delivered":
        raise _broken(
            "invalid_transition",
            f"order {o.id} is already delivered, the last step; nothing follows it.",
        )
    expected = ORDER_FLOW[ORDER_FLOW.index(o.status) + 1]
    if new_status != expected:
        raise _broken(
            "invalid_transition",
            f"order {o.id} is '{o.status}', so its next status is '{expected}', not "
            f"'{new_status}'. Statuses go placed, accepted, preparing, picked_up, delivered, "
            "one step at a time.",
        )
    r = ctx.sql.one(RESTAURANT, id=o.restaurant_id)
    if new_status == "picked_up" and o.courier_id is None:
        raise _broken(
            "courier_required",
            f"order {o.id} has no courier yet, so nobody can pick it up. Assign an available "
            f"courier of the {r.zone} zone first, then mark it picked up.",
        )
    eta = o.estimated_delivery_at
    if new_status == "accepted":
        eta = ctx.now + dt.timedelta(minutes=r.prep_minutes + TRAVEL_MINUTES)
    elif new_status == "picked_up":
        eta = ctx.now + dt.timedelta(minutes=TRAVEL_MINUTES)
    elif new_status == "delivered":
        eta = ctx.now
        _release(ctx, o.courier_id)
    ctx.sql.update(Order, o, status=new_status, estimated_delivery_at=eta)
    _track(ctx, o.id, new_status, NOTES[new_status])
    return _order_detail(ctx, o.id)


@server.tool(
    writes=True,
    returns=("order", "courier"),
    phrasings=[
        "Assign courier {courier_id} to order {order_id}",
        "Have {courier_id} deliver {order_id}",
    ],
)
def assign_courier(ctx: ToolContext, order_id: OrderRow, courier_id: CourierRow) -> OrderDetail:
    """Assign an available courier to an accepted or preparing order (or replace its courier).

    The courier must work in the restaurant's zone and be "available"; they become
    "on_delivery" until the order is delivered or cancelled. A replaced courier becomes
    available again.

    Args:
        order_id: The order, such as "ord_00321".
        courier_id: The courier, such as "cou_007" (list_couriers with the restaurant's
            zone and status "available" finds one).

    Returns:
        The order with its "courier".
    """
    o, c = order_id, courier_id
    r = ctx.sql.one(RESTAURANT, id=o.restaurant_id)
    if o.status not in ("accepted", "preparing"):
        why = {
            "placed": "the restaurant has not accepted it yet; accept it first",
            "picked_up": "it is already on its way with its courier",
            "delivered": "it was already delivered",
            "cancelled": "it was cancelled",
        }[o.status]
        raise _broken(
            "order_not_assignable",
            f"order {o.id} is '{o.status}': {why}. A courier is assigned to an accepted or "
            "preparing order.",
        )
    if o.courier_id == c.id:
        raise Conflict(
            f"Rule 'courier_already_assigned' failed: {c.name} ({c.id}) already delivers order "
            f"{o.id}; nothing changed."
        )
    if c.zone != r.zone:
        raise _broken(
            "courier_wrong_zone",
            f"{c.name} ({c.id}) works in {c.zone}, but {r.name} is in {r.zone}; choose an "
            f"available courier of the {r.zone} zone.",
        )
    if c.status != "available":
        busy = ctx.sql.scalar(ACTIVE_ORDER_OF, courier_id=c.id)
        why = (
            f"on a delivery (order {busy})"
            if c.status == "on_delivery" and busy is not None
            else "off shift"
        )
        raise _broken(
            "courier_unavailable",
            f"{c.name} ({c.id}) is {why}; choose an available courier of the {r.zone} zone.",
        )
    _release(ctx, o.courier_id)
    ctx.sql.update(Courier, c, status="on_delivery")
    ctx.sql.update(Order, o, courier_id=c.id)
    return _order_detail(ctx, o.id)


@server.tool(
    writes=True,
    returns="order",
    phrasings=[
        "Cancel order {order_id}, reason: {reason}",
        "The customer wants to cancel {order_id}",
        "Cancel {order_id} because of {reason}",
    ],
)
def cancel_order(ctx: ToolContext, order_id: OrderRow, reason: CancelReason) -> OrderDetail:
    """Cancel an order that has not been picked up, and refund it.

    Placed or accepted orders are refunded in full. Once the kitchen is preparing, a
    customer's cancellation ("customer_request" or "duplicate_order") keeps half of the
    food subtotal; "restaurant_unavailable" and "courier_unavailable" always refund in
    full. A picked up or delivered order cannot be cancelled. Its courier becomes free.

    Args:
        order_id: The order, such as "ord_00321".
        reason: "customer_request", "duplicate_order", "restaurant_unavailable" or
            "courier_unavailable".

    Returns:
        The order with "status": "cancelled", "refunded": "29.99" and "cancel_reason".
    """
    o: Any = order_id
    if o.status not in CANCELLABLE:
        why = {
            "picked_up": "the courier has already picked it up and is on the way",
            "delivered": "it was already delivered",
            "cancelled": f"it is already cancelled (refunded {o.refunded})",
        }[o.status]
        raise _broken(
            "order_not_cancellable",
            f"order {o.id} cannot be cancelled: {why}. Only placed, accepted or preparing "
            "orders can be cancelled.",
        )
    refund = cancel_refund(o, reason)
    _release(ctx, o.courier_id)
    ctx.sql.update(Order, o, status="cancelled", refunded=refund, cancel_reason=reason)
    _track(ctx, o.id, "cancelled", f"Cancelled while {o.status} ({reason}); refunded {refund}")
    return _order_detail(ctx, o.id)


@server.tool(
    writes=True,
    returns=("rating", "order", "restaurant"),
    phrasings=[
        "Rate order {order_id}: food {food_stars} stars, delivery {delivery_stars} stars",
        "Give {order_id} {food_stars} stars for the food and {delivery_stars} for delivery, "
        "comment: {comment}",
    ],
    examples={
        "food_stars": [5, 4, 4, 3, 2, 1],
        "delivery_stars": [5, 5, 4, 3, 2],
        "comment": COMMENTS,
    },
)
def rate_order(
    ctx: ToolContext,
    order_id: OrderRow,
    food_stars: Stars,
    delivery_stars: Stars,
    comment: Annotated[str, Field(max_length=500)] = "",
) -> RatingOut:
    """Rate a delivered order once: food and delivery, 1 to 5 stars each, within 14 days.

    Args:
        order_id: The delivered order, such as "ord_00287".
        food_stars: 1 (poor) to 5 (great) for the food, such as 4.
        delivery_stars: 1 to 5 for the delivery, such as 5.
        comment: Optional words, such as "Hot and on time, thanks!".

    Returns:
        {"rating_id": "rat_0151", "order_id": "ord_00287", "food_stars": 4,
        "delivery_stars": 5, "restaurant_rating": "4.2", "restaurant_rating_count": 31, ...}.
    """
    o = order_id
    if o.status != "delivered":
        raise _broken(
            "rating_not_allowed",
            f"order {o.id} is '{o.status}'; only a delivered order can be rated."
            + (" Rate it once it has been delivered." if o.status in ACTIVE_STATUSES else ""),
        )
    earlier = ctx.sql.first(ORDER_RATING, order_id=o.id)
    if earlier is not None:
        raise Conflict(
            f"Rule 'already_rated' failed: order {o.id} was rated on "
            f"{_at(earlier.created_at)} ({earlier.food_stars} stars for food, "
            f"{earlier.delivery_stars} for delivery, rating {earlier.id}); an order is rated "
            "once."
        )
    delivered = ctx.sql.scalar(DELIVERED_AT, order_id=o.id) or o.placed_at
    if ctx.now - delivered > dt.timedelta(days=RATING_WINDOW_DAYS):
        raise _broken(
            "rating_window",
            f"order {o.id} was delivered on {delivered.date().isoformat()}, more than "
            f"{RATING_WINDOW_DAYS} days ago; it can no longer be rated.",
        )
    assert o.courier_id is not None  # a delivered order always had a courier
    rating: dict[str, Any] = {
        "id": next_id(ctx, Rating.id, "rat", 4),
        "order_id": o.id,
        "customer_id": o.customer_id,
        "restaurant_id": o.restaurant_id,
        "courier_id": o.courier_id,
        "food_stars": food_stars,
        "delivery_stars": delivery_stars,
        "comment": " ".join(comment.split()),
        "created_at": ctx.now,
    }
    ctx.sql.insert(Rating, **rating)
    average, count = _rating(ctx, o.restaurant_id)
    return {
        "rating_id": rating["id"],
        "order_id": o.id,
        "restaurant_id": o.restaurant_id,
        "courier_id": rating["courier_id"],
        "food_stars": food_stars,
        "delivery_stars": delivery_stars,
        "comment": rating["comment"],
        "created_at": _at(rating["created_at"]),
        "restaurant_rating": average or ZERO,
        "restaurant_rating_count": count,
    }


@server.tool(
    writes=True,
    idempotent=True,
    returns=("courier", "order"),
    phrasings=[
        "Set courier {courier_id} to {status}",
        "Courier {courier_id} is going {status}",
    ],
)
def set_courier_availability(
    ctx: ToolContext, courier_id: CourierRow, status: Literal["available", "off_shift"]
) -> CourierOut:
    """Start or end a courier's shift: "available" to take orders, "off_shift" to stop.

    A courier on a delivery keeps it until it is delivered, cancelled or given to another
    courier.

    Args:
        courier_id: The courier, such as "cou_007".
        status: "available" or "off_shift".

    Returns:
        {"courier_id": "cou_007", "status": "off_shift", "active_order_id": null, ...}.
    """
    c = courier_id
    if c.status == "on_delivery":
        busy = ctx.sql.scalar(ACTIVE_ORDER_OF, courier_id=c.id)
        raise _broken(
            "courier_has_active_order",
            f"{c.name} ({c.id}) is delivering order {busy if busy else '?'}; their "
            "availability changes once it is delivered, cancelled or given to another courier.",
        )
    c = ctx.sql.update(Courier, c, status=status)
    return _courier_out(ctx, c)


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests.
def _valid_choice(groups: list[Any]) -> list[str]:
    """Option ids that make a valid order of an item with these option ``groups`` (its rows
    of GROUP_FIRST_OPTIONS): the first of each required group, or one add-on when nothing
    is required."""
    required = [g.option_id for g in groups if g.required and g.option_id is not None]
    if required:
        return required
    optional = [g.option_id for g in groups if g.option_id is not None]
    return optional[:1]


@server.entity(
    "restaurant",
    key="restaurant_id",
    model=Restaurant,
    not_found="Call search_restaurants with the restaurant's name to find its id "
    "(such as 'rst_004').",
)
def _restaurants(ctx: ToolContext) -> list[dict[str, Any]]:
    out = []
    for r in ctx.sql.all(RESTAURANTS):
        out.append(
            {
                "restaurant_id": r.id,
                "name": r.name,
                "query": r.name,
                "cuisine": r.cuisine,
                "zone": r.zone,
                "open_now": is_open(r, ctx.now),
            }
        )
    return out


@server.entity(
    "menu_item",
    key="item_id",
    model=MenuItem,
    not_found="Call get_menu with the restaurant's id to find the item's id (such as 'itm_0042').",
)
def _items(ctx: ToolContext) -> list[dict[str, Any]]:
    """Available menu items, each with a valid choice of options."""
    rows = ctx.sql.all(AVAILABLE_ITEMS)
    groups: dict[str, list[Any]] = {}
    for g in ctx.sql.all(GROUP_FIRST_OPTIONS):
        groups.setdefault(g.item_id, []).append(g)
    return [
        {
            "item_id": i.id,
            "restaurant_id": i.restaurant_id,
            "name": i.name,
            "search": i.name,
            "option_ids": _valid_choice(groups.get(i.id, [])),
        }
        for i in rows
    ]


@server.entity(
    "option",
    key="option_id",
    model=Option,
    not_found="Call get_menu with the restaurant's id: each item lists its option groups "
    "and option ids (such as 'opt_0107').",
)
def _options(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(OPTIONS)
    return [{"option_id": o.id, "item_id": o.item_id, "name": o.name} for o in rows]


@server.entity(
    "customer",
    key="customer_id",
    model=Customer,
    not_found="Call find_customer with the customer's name or email to find their id "
    "(such as 'cus_0012').",
)
def _customers(ctx: ToolContext) -> list[dict[str, Any]]:
    """Customers, with items they can add (from their cart's restaurant, or from restaurants
    open now that deliver to them) and their cart lines."""
    zones: dict[str, list[str]] = {}
    for z in ctx.sql.all(ZONE_RESTAURANTS):
        zones.setdefault(z.zone, []).append(z.restaurant_id)
    open_ids = {r.id for r in ctx.sql.all(RESTAURANTS) if is_open(r, ctx.now)}
    menu: dict[str, list[str]] = {}
    for i in ctx.sql.all(AVAILABLE_ITEMS):
        menu.setdefault(i.restaurant_id, []).append(i.id)
    carts: dict[str, list[Any]] = {}
    for line in ctx.sql.all(ALL_CART_LINES):
        carts.setdefault(line.customer_id, []).append(line)
    out = []
    for c in ctx.sql.all(CUSTOMERS):
        lines = carts.get(c.id, [])
        if lines:
            pool = menu.get(lines[0].restaurant_id, [])
        else:
            near = zones.get(c.zone, [])
            chosen = [r for r in near if r in open_ids] or near
            pool = [i for r in chosen for i in menu.get(r, [])]
        out.append(
            {
                "customer_id": c.id,
                "name": c.name,
                "query": c.name,
                "zone": c.zone,
                "item_ids": pool[:12],
                "cart_line_ids": [line.id for line in lines],
            }
        )
    return out


@server.entity(
    "cart_line",
    key="cart_line_id",
    model=CartLine,
    not_found="Call view_cart with the customer's id to see their cart lines (such as 'cl_0031').",
)
def _cart_line_records(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(ALL_CART_LINES)
    return [
        {"cart_line_id": line.id, "customer_id": line.customer_id, "item_id": line.item_id}
        for line in rows
    ]


@server.entity(
    "order",
    key="order_id",
    model=Order,
    not_found="Call list_orders with the customer's or restaurant's id to find the order's id "
    "(such as 'ord_00321').",
)
def _orders(ctx: ToolContext) -> list[dict[str, Any]]:
    """Orders under way and those delivered within the rating window (the rest is history),
    with the next status each can take and an available courier of its restaurant's zone."""
    since = ctx.now - dt.timedelta(days=RATING_WINDOW_DAYS)
    free: dict[str, list[str]] = {}
    for c in ctx.sql.all(COURIERS):
        if c.status == "available":
            free.setdefault(c.zone, []).append(c.id)
    zone_of = {r.id: r.zone for r in ctx.sql.all(RESTAURANTS)}
    out = []
    for o in ctx.sql.all(RECENT_ORDERS, since=since):
        record: dict[str, Any] = {
            "order_id": o.id,
            "customer_id": o.customer_id,
            "restaurant_id": o.restaurant_id,
            "status": o.status,
        }
        step = _next_status(o)
        if step is not None and not (step == "picked_up" and o.courier_id is None):
            record["new_status"] = step
        if o.status in ("accepted", "preparing"):
            others = [c for c in free.get(zone_of[o.restaurant_id], []) if c != o.courier_id]
            if others:
                record["courier_id"] = others[0]
        out.append(record)
    return out


@server.entity(
    "courier",
    key="courier_id",
    model=Courier,
    not_found="Call list_couriers (by zone and status) to find the courier's id (such as "
    "'cou_007').",
)
def _couriers(ctx: ToolContext) -> list[dict[str, Any]]:
    return [
        {
            "courier_id": c.id,
            "name": c.name,
            "zone": c.zone,
            "status": "off_shift" if c.status == "available" else "available",
        }
        for c in ctx.sql.all(COURIERS)
    ]


@server.entity("rating", key="rating_id")
def _ratings(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(RATINGS)
    return [{"rating_id": r.id, "order_id": r.order_id} for r in rows]


__all__ = ["RULES", "OptionGroup", "server"]
