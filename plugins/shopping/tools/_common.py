"""Pricing, checks and result builders that several shopping resources share."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from prove_gym.server import Conflict, PermissionDenied, PreconditionFailed, ToolContext

from ..models import RETURN_WINDOW_DAYS, ZERO, Cart, Variant, allocate
from .queries import (
    ADDRESSES,
    CART,
    CART_ITEMS,
    ORDER_PAYMENT,
    RETURN_LINES,
    USED_ON,
    VARIANT_STOCK,
)
from .results import AddressOut, CardOut, ReturnLineOut, ReturnOut

CONSEQUENCES = 2
"""The env version from which an order carries sales tax, a damaged return is not restocked
and a wrong item's return refunds the order's shipping too."""


PAYMENT = 3
"""The env version from which a checkout charges one of the customer's saved cards and a
refund goes back to the card that paid."""


def _card_ref(p: Any) -> CardOut:
    """A card as an order's payment and a refund name it."""
    return {"payment_method_id": p.payment_method_id, "brand": p.brand, "last4": p.last4}


def _paid_with(ctx: ToolContext, order_id: str) -> Any:
    """What paid ``order_id`` (its card's id, brand and last four, and the amount), or None
    for an order placed before ``prove/shopping-v3``."""
    return ctx.sql.first(ORDER_PAYMENT, order_id=order_id)


def _tax(o: Any) -> Any:
    """An order's sales tax: what its total holds beyond subtotal - discount + shipping (0.00
    for an order placed before ``prove/shopping-v2``, which charged none)."""
    return o.total - (o.subtotal - o.discount + o.shipping)


def _tax_shares(o: Any, lines: Sequence[Any]) -> list[Any]:
    """Each of ``o``'s lines' share of its sales tax, in proportion to what the line cost after
    its discount share (:func:`~..models.allocate`: the shares add up to the tax exactly)."""
    return allocate(_tax(o), [line.line_total - line.discount for line in lines])


def _broken(rule: str, detail: str) -> PreconditionFailed:
    """The error for a failed business rule: it names the rule, then says what to do."""
    return PreconditionFailed(f"Rule '{rule}' failed: {detail}")


def _denied(rule: str, detail: str) -> PermissionDenied:
    return PermissionDenied(f"Rule '{rule}' failed: {detail}")


def _clash(rule: str, detail: str) -> Conflict:
    return Conflict(f"Rule '{rule}' failed: {detail}")


def _now(ctx: ToolContext) -> dt.datetime:
    return ctx.now.replace(second=0, microsecond=0)


def _stamp(value: dt.datetime | None) -> str | None:
    return value.isoformat(timespec="minutes") if value is not None else None


def _day(value: dt.datetime) -> str:
    return value.date().isoformat()


def _cart(ctx: ToolContext, customer_id: str) -> Any:
    cart = ctx.sql.first(CART, customer_id=customer_id)
    if cart is None:  # every sampled customer has one; a guard for hand-made states
        ctx.sql.insert(Cart, customer_id=customer_id, coupon_code=None, updated_at=_now(ctx))
        cart = ctx.sql.one(CART, customer_id=customer_id)
    return cart


def _items(ctx: ToolContext, customer_id: str) -> list[Any]:
    """The cart's items, each with its variant's ``product_id``, ``label``, ``price`` and
    ``stock`` and its product's ``name`` and ``category``."""
    return ctx.sql.all(CART_ITEMS, customer_id=customer_id)


def _lines_of(items: Sequence[Any]) -> list[tuple[str, Decimal]]:
    """(category, line total) of cart items: what coupons are computed on."""
    return [(i.category, i.price * i.quantity) for i in items]


def _used_on(ctx: ToolContext, coupon: Any, customer_id: str) -> str | None:
    """The live (not cancelled) order of ``customer_id`` that used ``coupon``, if any."""
    return ctx.sql.scalar(USED_ON, customer_id=customer_id, code=coupon.code)


def _coupon_problem(
    ctx: ToolContext,
    coupon: Any,
    customer_id: str,
    items: Sequence[Any],
    *,
    now: dt.datetime | None = None,
    used: Mapping[tuple[str, str], str] | None = None,
) -> tuple[str, str] | None:
    """The rule ``coupon`` breaks on this customer's cart and why, or None when it applies.

    A caller checking many coupons may pass what it would otherwise read: ``now``
    (``_now(ctx)``) and ``used``, every (customer, code)'s :func:`_used_on` order (those
    with none left out)."""
    if now is None:
        now = _now(ctx)
    if coupon.starts_at > now:
        return "coupon_not_started", f"{coupon.code} starts on {_day(coupon.starts_at)}"
    if coupon.expires_at <= now:
        return "coupon_expired", f"{coupon.code} expired on {_day(coupon.expires_at)}"
    if coupon.once_per_customer:
        if used is None:
            order = _used_on(ctx, coupon, customer_id)
        else:
            order = used.get((customer_id, coupon.code))
        if order is not None:
            return (
                "coupon_already_used",
                f"{coupon.code} is single-use and {customer_id} already used it on {order}",
            )
    if not items:
        return "cart_empty", f"{customer_id}'s cart is empty"
    lines = _lines_of(items)
    if coupon.category is not None and not any(c == coupon.category for c, _ in lines):
        return (
            "coupon_category",
            f"{coupon.code} is for {coupon.category} items only and the cart has none",
        )
    subtotal = sum((t for _, t in lines), ZERO)
    if subtotal < coupon.min_subtotal:
        return (
            "coupon_min_subtotal",
            f"{coupon.code} needs a subtotal of {coupon.min_subtotal} and the cart's is "
            f"{subtotal} ({coupon.min_subtotal - subtotal} short)",
        )
    return None


def _address_out(a: Any) -> AddressOut:
    return {
        "address_id": a.id,
        "customer_id": a.customer_id,
        "label": a.label,
        "recipient": a.recipient,
        "line1": a.line1,
        "city": a.city,
        "state": a.state,
        "postal_code": a.postal_code,
        "is_default": a.is_default,
    }


def _addresses(ctx: ToolContext, customer_id: str) -> list[Any]:
    return ctx.sql.all(ADDRESSES, customer_id=customer_id)


def _return_by(o: Any) -> dt.datetime | None:
    if o.status != "delivered" or o.delivered_at is None:
        return None
    return o.delivered_at + dt.timedelta(days=RETURN_WINDOW_DAYS)


def _window(ctx: ToolContext, o: Any) -> str:
    """ "open", "closed", "not_delivered" or "cancelled": can items of ``o`` be returned now?"""
    if o.status == "cancelled":
        return "cancelled"
    end = _return_by(o)
    if end is None:
        return "not_delivered"
    return "open" if _now(ctx) <= end else "closed"


def _return_lines(ctx: ToolContext, return_id: str) -> list[ReturnLineOut]:
    return [
        {"variant_id": x.variant_id, "quantity": x.quantity, "amount": x.amount}
        for x in ctx.sql.all(RETURN_LINES, return_id=return_id)
    ]


def _return_out(ctx: ToolContext, r: Any) -> ReturnOut:
    lines = _return_lines(ctx, r.id)
    out: ReturnOut = {
        "return_id": r.id,
        "order_id": r.order_id,
        "customer_id": r.customer_id,
        "status": r.status,
        "reason": r.reason,
        "amount": r.amount,
        "created_at": r.created_at.isoformat(timespec="minutes"),
        "refunded_at": _stamp(r.refunded_at),
        "lines": lines,
    }
    if ctx.env_version >= CONSEQUENCES:
        out["shipping_refund"] = r.amount - sum((x["amount"] for x in lines), ZERO)
    return out


def _coupon_status(ctx: ToolContext, c: Any) -> str:
    now = _now(ctx)
    if c.starts_at > now:
        return "not_started"
    return "expired" if c.expires_at <= now else "active"


def _mine(ctx: ToolContext, customer: Any, address: Any, doing: str) -> None:
    if address.customer_id == customer.id:
        return
    if _addresses(ctx, customer.id):
        fix = (
            f"Use one of {customer.id}'s own addresses (list_addresses with customer_id "
            f"'{customer.id}')."
        )
    else:
        fix = (
            f"{customer.id} has no saved address yet: save theirs with add_address "
            f"(customer_id='{customer.id}') first."
        )
    raise _denied(
        "address_not_yours",
        f"address {address.id} belongs to {address.customer_id}, not to {customer.name} "
        f"({customer.id}), so it cannot {doing}. {fix}",
    )


def _restock(ctx: ToolContext, variant_id: str, units: int) -> int:
    v = ctx.sql.one(VARIANT_STOCK, id=variant_id)
    return ctx.sql.update(Variant, v, stock=v.stock + units).stock


NEW_ADDRESSES = [
    ("500 Congress Ave", "Austin", "TX", "78701"),
    ("1600 Blake St", "Denver", "CO", "80202"),
    ("400 Pine St", "Seattle", "WA", "98101"),
    ("820 SW Alder St", "Portland", "OR", "97205"),
    ("233 S Wacker Dr", "Chicago", "IL", "60606"),
    ("75 State St", "Boston", "MA", "02109"),
    ("191 Peachtree St NE", "Atlanta", "GA", "30303"),
    ("2 N Central Ave", "Phoenix", "AZ", "85004"),
]
