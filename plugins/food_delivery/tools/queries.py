"""The statements the food_delivery tools read and write through (``ctx.sql``):
compiled once, run on SQLite directly."""

from __future__ import annotations

import functools

from sqlalchemy import bindparam, delete, func, select

from prove_gym.server import Query, contains

from ..models import (
    ACTIVE_STATUSES,
    COURIER_STAGES,
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
)

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
# find_customer acting for a signed-in customer: their own account, if it matches
OWN_CUSTOMER_MATCHING = Query(
    select(customers)
    .where(
        Customer.id == bindparam("me"),
        contains(bindparam("pattern"), Customer.name, Customer.email, Customer.phone, Customer.id),
    )
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


# every order's dispatch state, and every courier's (value sources: who can take whom)
ORDER_DISPATCH = Query(
    select(Order.id, Order.restaurant_id, Order.status, Order.courier_id).order_by(Order.id)
)
CART_OWNERS = Query(select(CartLine.customer_id).distinct().order_by(CartLine.customer_id))
