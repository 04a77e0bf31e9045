"""Checks, prices and result builders that several food_delivery resources share."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from prove_gym.server import PreconditionFailed, Query, ToolContext

from ..models import ACTIVE_STATUSES, CANCELLABLE, ORDER_FLOW, Courier, cancel_refund, split_ids
from .queries import COURIER, FEES, HISTORY, OPTION_NAMES, ORDER, ORDER_LINES, ORDER_RATING, RATING
from .results import GroupOut, OptionOut, OrderBrief, OrderDetail


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


def _option_names(ctx: ToolContext, lines: Iterable[Any]) -> dict[str, str]:
    """The names of the options chosen in cart ``lines``, by option id."""
    ids = sorted({i for line in lines for i in split_ids(line.option_ids)})
    return dict(ctx.sql.all(OPTION_NAMES, ids=ids))


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


def _release(ctx: ToolContext, courier_id: str | None) -> None:
    """The courier of a finished or reassigned order is free again."""
    if courier_id is None:
        return
    courier = ctx.sql.one(COURIER, id=courier_id)
    if courier.status == "on_delivery":
        ctx.sql.update(Courier, courier, status="available")
