"""Value sources (``values=``) for synthesis: orders, couriers and customers that fit the
call, read from the live state.

A courier is assigned to an accepted or preparing order, from the available couriers of
its restaurant's zone; an order is placed from a cart that holds something. Where the
conversation's own customer has no such order or cart, the call that makes one comes
first (:class:`~prove_gym.server.Prepared`): the restaurant accepts the order, the customer
adds an item to the cart.
"""

from __future__ import annotations

import random
from typing import Any

from prove_gym.server import Bound, Prepared, ToolContext

from .queries import CART_OWNERS, COURIERS, ORDER, ORDER_DISPATCH, RESTAURANT, RESTAURANTS

ASSIGNABLE = ("accepted", "preparing")
"""The statuses of an order a courier can be assigned to."""


def _free_couriers(ctx: ToolContext) -> dict[str, list[str]]:
    """Available couriers by zone, by id."""
    free: dict[str, list[str]] = {}
    for c in ctx.sql.all(COURIERS):
        if c.status == "available":
            free.setdefault(c.zone, []).append(c.id)
    return free


def assignable_order(ctx: ToolContext, rng: random.Random, bound: Bound) -> Any:
    """An order ``assign_courier`` can act on: accepted or preparing, with an available
    courier of its restaurant's zone other than its own. The one drawn if it is; else one
    of ``bound.choices`` that is (the conversation's customer's); else a placed one (the
    drawn first) that the restaurant accepts first; else None."""
    zone = {r.id: r.zone for r in ctx.sql.all(RESTAURANTS)}
    free = _free_couriers(ctx)
    orders = {o.id: o for o in ctx.sql.all(ORDER_DISPATCH)}

    def served(o: Any) -> bool:
        return any(c != o.courier_id for c in free.get(zone[o.restaurant_id], []))

    drawn = str(bound.args.get("order_id", ""))
    pool = [drawn, *(str(c) for c in bound.choices.get("order_id", ()) if str(c) != drawn)]
    known = [orders[i] for i in pool if i in orders and served(orders[i])]
    ready = [o.id for o in known if o.status in ASSIGNABLE]
    if ready:
        return drawn if ready[0] == drawn else rng.choice(ready)
    placed = [o.id for o in known if o.status == "placed"]
    if not placed:
        return None
    order = drawn if placed[0] == drawn else rng.choice(placed)
    return Prepared(
        order, (("update_order_status", {"order_id": order, "new_status": "accepted"}),)
    )


def free_courier(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """An available courier of the zone of the order in ``order_id``'s restaurant, other
    than the order's own: the one drawn if it is, else another; None if there is none."""
    order = ctx.sql.first(ORDER, id=bound.args.get("order_id"))
    if order is None:
        return None
    zone = ctx.sql.one(RESTAURANT, id=order.restaurant_id).zone
    fits = [c for c in _free_couriers(ctx).get(zone, []) if c != order.courier_id]
    drawn = str(bound.args.get("courier_id", ""))
    if drawn in fits:
        return drawn
    return rng.choice(fits) if fits else None


def customer_with_cart(ctx: ToolContext, rng: random.Random, bound: Bound) -> Any:
    """A customer whose cart holds something, for ``place_order``: the one drawn if theirs
    does, else one of ``bound.choices`` whose cart does (the conversation's own customer,
    once it has one); else the drawn one, who adds an item to the cart first."""
    owners = {str(c) for c in ctx.sql.scalars(CART_OWNERS)}
    drawn = str(bound.args.get("customer_id", ""))
    if drawn in owners:
        return drawn
    others = [str(c) for c in bound.choices.get("customer_id", ()) if str(c) in owners]
    if others:
        return rng.choice(others)
    return Prepared(drawn, (("add_to_cart", {"customer_id": drawn}),))
