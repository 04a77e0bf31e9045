"""Courier tools: couriers of a zone, assigning one to an order, their availability."""

from __future__ import annotations

from typing import Any, Literal

from prove_gym.server import Conflict, ToolContext
from prove_gym.server.tool import tool

from ..models import Courier, Order
from ._common import _broken, _order_detail, _release
from .args import CourierRow, Limit, OrderRow, Zone
from .fitting import assignable_order, free_courier
from .queries import ACTIVE_ORDER_OF, RESTAURANT, _couriers_matching
from .results import CourierList, CourierOut, OrderDetail


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


@tool(
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


@tool(
    writes=True,
    returns=("order", "courier"),
    phrasings=[
        "Assign courier {courier_id} to order {order_id}",
        "Have {courier_id} deliver {order_id}",
    ],
    values={"order_id": assignable_order, "courier_id": free_courier},
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


@tool(
    writes=True,
    idempotent=True,
    returns=("courier", "order"),
    phrasings=[
        "Set courier {courier_id} to {status}",
        "Courier {courier_id} is now {status}",
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
