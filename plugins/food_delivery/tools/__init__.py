"""The food_delivery server: restaurants with menus and options, customers' carts,
orders from placing to delivery, couriers, and ratings.

Business rules have names (``one_restaurant_per_cart``, ``below_minimum_order``, ...); a tool
that refuses an action raises ``PreconditionFailed`` (``Conflict`` for a second rating,
``InvalidArgument`` for options that do not fit the item) with a message that starts with
``Rule '<name>' failed:`` and says what would be allowed instead. A refused call changes
nothing. Times come from the state's clock (``ctx.now``), never the wall clock.

This module declares the server, the entity kinds it grounds requests on, and its 17 tools
in the order the model reads them (``TOOLS``). The tools live by resource:
:mod:`.restaurants` (and their menus), :mod:`.cart` (a customer and their cart),
:mod:`.orders` (and their ratings), :mod:`.couriers`; what they take (and the named rules)
is in :mod:`.args`, what they return in :mod:`.results`, the statements they run in
:mod:`.queries`, and the checks and result builders several of them share in
:mod:`._common`. Docstrings are what the model reads: keep examples concrete.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from prove_gym.server import EnvVersion, Principal, Server, ToolContext

from ..models import (
    RATING_WINDOW_DAYS,
    Base,
    CartLine,
    Courier,
    Customer,
    MenuItem,
    Option,
    Order,
    Restaurant,
    is_open,
)
from ..sampler import sample_food_delivery
from . import cart, couriers, orders, restaurants
from ._common import _next_status
from .args import RULES
from .queries import (
    ALL_CART_LINES,
    AVAILABLE_ITEMS,
    COURIERS,
    CUSTOMERS,
    GROUP_FIRST_OPTIONS,
    OPTIONS,
    RATINGS,
    RECENT_ORDERS,
    RESTAURANTS,
    ZONE_RESTAURANTS,
)

OUT_OF_SCOPE = (
    "Track the courier's location on a map.",
    "Call the restaurant and ask whether the curry has nuts.",
    "Pay for the order with PayPal.",
    "Apply my student discount.",
    "Add a new restaurant to the app.",
    "Change the restaurant's opening hours.",
    "Give the courier a bonus for the rain.",
    "Subscribe me to free delivery for a year.",
    "Recommend a wine to go with my order.",
    "Schedule an order for next Friday at noon.",
    "Show me the calories of everything on the menu.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

CUSTOMER = 1
"""The env version from which a session acts for one signed-in customer: the core refuses
another customer's rows and the ``admin_only`` tools; find_customer and list_orders show the
customer's own; cancel_order takes only :data:`.args.CUSTOMER_CANCEL_REASONS`."""

server = Server(
    "food_delivery",
    out_of_scope=OUT_OF_SCOPE,
    persona=("customer",),
    tasks_file=Path(__file__).parents[1] / "tasks.jsonl",
    version="1.1.0",
    env_versions=[
        EnvVersion(
            CUSTOMER,
            "acts for one customer (the task's principal): a call on another customer or "
            "their cart lines or orders is refused with permission_denied (rule "
            "not_your_customer); find_customer and list_orders show only the customer's own; "
            "moving an order through the kitchen, dispatching couriers and the courier fleet "
            "are the platform's own operations (rule admin_only); a customer cancels only for "
            "their own reasons (rule customer_cancel_reason)",
            tasks_file=Path(__file__).parents[1] / "tasks_v1.jsonl",
            principal=Principal(
                "customer",
                "You are helping customer {id}, who is signed in to the app: you act for "
                "them only. find_customer and list_orders show only their own account and "
                "orders; a call on another customer, or their cart or orders, is refused "
                "(rule 'not_your_customer'). Moving an order to accepted, preparing, picked "
                "up or delivered, assigning couriers, listing couriers and setting their "
                "availability are done by the restaurants and the platform's dispatch, not by "
                "you (rule 'admin_only'). A customer cancels with reason customer_request or "
                "duplicate_order (rule 'customer_cancel_reason').",
                admin_only=(
                    "update_order_status",
                    "assign_courier",
                    "list_couriers",
                    "set_courier_availability",
                ),
            ),
        )
    ],
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

TOOLS = (
    restaurants.search_restaurants,
    restaurants.get_restaurant,
    restaurants.get_menu,
    cart.find_customer,
    cart.view_cart,
    orders.list_orders,
    orders.get_order,
    couriers.list_couriers,
    cart.add_to_cart,
    cart.remove_from_cart,
    cart.clear_cart,
    orders.place_order,
    orders.update_order_status,
    couriers.assign_courier,
    orders.cancel_order,
    orders.rate_order,
    couriers.set_courier_availability,
)
"""The server's tools in the order the model reads them: this list decides it, not the modules'."""
RESOURCES = (cart, couriers, orders, restaurants)
server.add_tools(TOOLS, declared_in=RESOURCES)


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
    owner="customer_id",
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
    owner="customer_id",
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


__all__ = ["RULES", "TOOLS", "server"]
