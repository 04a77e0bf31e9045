"""Order tools: placing an order, its status from accepted to delivered, cancelling, rating."""

from __future__ import annotations

import datetime as dt
import random
from typing import Annotated, Any

from pydantic import Field

from prove_gym.server import Bound, Conflict, PermissionDenied, ToolContext, next_id
from prove_gym.server.tool import tool

from ..models import (
    ACTIVE_STATUSES,
    CANCELLABLE,
    CENT,
    ORDER_FLOW,
    RATING_WINDOW_DAYS,
    TRAVEL_MINUTES,
    ZERO,
    Order,
    OrderLine,
    Rating,
    TrackingEvent,
    cancel_refund,
    is_open,
    next_opening,
    split_ids,
)
from ..sampler import NOTES
from ._common import (
    _at,
    _broken,
    _fees,
    _option_names,
    _order_brief,
    _order_detail,
    _rating,
    _release,
)
from .args import (
    CUSTOMER_CANCEL_REASONS,
    CancelReason,
    CustomerRow,
    Limit,
    NextStatus,
    OrderRow,
    OrderStatus,
    RestaurantRow,
    Stars,
    Tip,
)
from .fitting import customer_with_cart
from .queries import (
    CART,
    DELETE_CART_LINE,
    DELIVERED_AT,
    ORDER_RATING,
    RESTAURANT,
    _orders_matching,
)
from .results import OrderDetail, OrderList, RatingOut


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


PRAISE = ["Hot and on time, thanks!", "Friendly courier, great food.", ""]
FOOD_COMPLAINTS = ["The fries were cold.", "Missing the extra sauce."]
DELIVERY_COMPLAINTS = ["Took over an hour to arrive.", "The courier left it at the wrong door."]


def _rating_comment(ctx: ToolContext, rng: random.Random, bound: Bound) -> str:
    """A comment that says what the stars say: praise for four and five stars, the food's
    fault under a low food rating, the delivery's under a low delivery rating (never five
    stars for the food and "Missing the extra sauce.")."""
    food, delivery = (int(bound.args.get(k, 5)) for k in ("food_stars", "delivery_stars"))
    said = (FOOD_COMPLAINTS if food <= 3 else []) + (DELIVERY_COMPLAINTS if delivery <= 3 else [])
    return rng.choice(said or PRAISE)


NOTES_EXAMPLES = [
    "Ring the bell twice",
    "Leave at the door",
    "No cutlery please",
    "Call on arrival",
]


@tool(
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

    Acting for a signed-in customer, only that customer's own orders are listed.

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
    elif ctx.principal is not None:  # a signed-in customer sees their own orders only
        params["customer_id"] = ctx.principal
    if restaurant_id is not None:
        params["restaurant_id"] = restaurant_id.id
    if status is not None:
        params["status"] = status
    count, matching = _orders_matching(
        "customer_id" in params, restaurant_id is not None, status is not None
    )
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(matching, limit=limit, **params)
    return {"total": total, "orders": [_order_brief(o) for o in rows]}


@tool(
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


@tool(
    writes=True,
    returns=("order", "restaurant"),
    phrasings=[
        "Check out the cart of {customer_id}",
        "Place the order in {customer_id}'s cart with a tip of {tip}",
        "Order what is in the cart of {customer_id}; note for the courier: {note}",
    ],
    examples={"tip": [0, 1, 2, "2.50", 3, 5], "note": NOTES_EXAMPLES},
    values={"customer_id": customer_with_cart},
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


@tool(
    writes=True,
    returns=("order", "courier"),
    phrasings=[
        "Mark order {order_id} as {new_status}",
        "The restaurant says order {order_id} is now {new_status}",
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


@tool(
    writes=True,
    inverse_of="place_order",
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
    Acting for a signed-in customer, the reason is "customer_request" or "duplicate_order".

    Args:
        order_id: The order, such as "ord_00321".
        reason: "customer_request", "duplicate_order", "restaurant_unavailable" or
            "courier_unavailable".

    Returns:
        The order with "status": "cancelled", "refunded": "29.99" and "cancel_reason".
    """
    o: Any = order_id
    if ctx.principal is not None and reason not in CUSTOMER_CANCEL_REASONS:
        raise PermissionDenied(
            f"Rule 'customer_cancel_reason' failed: a customer cancels with reason "
            f"'customer_request' or 'duplicate_order', not {reason!r}, which is the "
            "restaurant's or dispatch's to give. Nothing was changed."
        )
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


@tool(
    writes=True,
    returns=("rating", "order", "restaurant"),
    phrasings=[
        "Rate order {order_id}: food {food_stars} stars, delivery {delivery_stars} stars",
        "Give {order_id} {food_stars} stars for the food and {delivery_stars} for delivery, "
        "comment: {comment}",
    ],
    examples={"food_stars": [5, 4, 4, 3, 2, 1], "delivery_stars": [5, 5, 4, 3, 2]},
    values={"comment": _rating_comment},
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
