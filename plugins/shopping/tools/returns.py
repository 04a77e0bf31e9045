"""Return tools: returns of delivered orders and their refunds."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from prove_gym.server import InvalidArgument, ToolContext, next_id
from prove_gym.server.tool import tool

from ..models import (
    RETURN_WINDOW_DAYS,
    ZERO,
    Order,
    OrderLine,
    ReturnLine,
    ReturnRequest,
    refund_for,
)
from ._common import (
    CONSEQUENCES,
    PAYMENT,
    _broken,
    _card_ref,
    _clash,
    _day,
    _now,
    _paid_with,
    _restock,
    _return_by,
    _return_lines,
    _return_out,
    _stamp,
    _tax_shares,
)
from .args import CustomerRow, Limit, OrderRow, Quantity, ReturnReason, ReturnRow, VariantIds
from .queries import (
    ORDER,
    ORDER_LINES,
    RETURN,
    RETURN_LINES,
    SHIPPING_REFUNDS,
    _returns_matching,
)
from .results import RefundResult, ReturnList, ReturnOut


@tool(
    returns=("return", "order", "customer", "variant"),
    phrasings=[
        "Which returns of {customer_id} are {status}?",
        "Show the returns for order {order_id}",
        "List the {status} returns",
    ],
)
def list_returns(
    ctx: ToolContext,
    customer_id: CustomerRow | None = None,
    order_id: OrderRow | None = None,
    status: Literal["requested", "refunded"] | None = None,
    limit: Limit = 20,
) -> ReturnList:
    """List returns, newest first: of a customer, of an order, or all in a status.

    Args:
        customer_id: Only this customer's returns, such as "cus_004".
        order_id: Only the returns of this order, such as "ord_00131".
        status: "requested" (waiting for the refund) or "refunded".
        limit: Maximum number of returns to return (1-50), such as 20.

    Returns:
        {"total": 2, "returns": [{"return_id": "ret_0009", "order_id": "ord_00131",
        "status": "requested", "reason": "wrong_size", "amount": "117.39", "lines":
        [{"variant_id": "var_00117", "quantity": 1, "amount": "117.39"}], ...}]}.
    """
    params: dict[str, Any] = {}
    if customer_id is not None:
        params["customer_id"] = customer_id.id
    if order_id is not None:
        params["order_id"] = order_id.id
    if status is not None:
        params["status"] = status
    count, matching = _returns_matching(
        customer_id is not None, order_id is not None, status is not None
    )
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(matching, limit=limit, **params)
    return {"total": total, "returns": [_return_out(ctx, r) for r in rows]}


@tool(
    writes=True,
    returns=("return", "order", "variant", "customer"),
    phrasings=[
        "Return {variant_ids} from order {order_id}, reason: {reason}",
        "Return {quantities} of {variant_ids} from {order_id} ({reason})",
    ],
    examples={"quantities": [[1], [1, 1], [2]]},
)
def request_return(
    ctx: ToolContext,
    order_id: OrderRow,
    variant_ids: VariantIds,
    reason: ReturnReason,
    quantities: Annotated[list[Quantity], Field(min_length=1, max_length=20)] | None = None,
) -> ReturnOut:
    """Open a return for items of a delivered order, within 30 days of delivery.

    The refund is what the returned units cost after their share of the order's coupon
    discount (shipping is not refunded); it is paid when the return is processed
    (process_refund). From prove/shopping-v2 it includes the units' share of the order's
    sales tax, and a return with reason "wrong_item" (the shop sent the wrong thing) also
    refunds the order's shipping, once per order ("shipping_refund").

    Args:
        order_id: A delivered order, such as "ord_00131".
        variant_ids: The variants to return, each once, such as ["var_00117"] (get_order
            lists the order's lines).
        reason: "damaged", "wrong_item", "wrong_size", "not_as_described" or
            "no_longer_needed".
        quantities: Units of each variant, in the same order, such as [1]; leave it out to
            return every unit of them not returned yet.

    Returns:
        {"return_id": "ret_0027", "order_id": "ord_00131", "status": "requested", "reason":
        "wrong_size", "amount": "117.39", "lines": [{"variant_id": "var_00117", "quantity":
        1, "amount": "117.39"}], ...}.
    """
    o = order_id
    ids = [v.id for v in variant_ids]
    if len(set(ids)) != len(ids):
        raise InvalidArgument("variant_ids names a variant twice; name each once.")
    if quantities is not None and len(quantities) != len(ids):
        raise InvalidArgument(
            f"{len(ids)} variant_ids but {len(quantities)} quantities; give one quantity per "
            "variant, in the same order (or none to return every unit)."
        )
    if o.status != "delivered":
        extra = {
            "placed": "it has not shipped yet, so the whole order can still be cancelled instead",
            "shipped": "returns open once it is delivered",
            "cancelled": f"it was cancelled and {o.refunded} refunded already",
        }[o.status]
        raise _broken(
            "not_delivered",
            f"order {o.id} is '{o.status}', not 'delivered'; {extra}. Nothing was done.",
        )
    end = _return_by(o)
    assert end is not None
    if _now(ctx) > end:
        raise _broken(
            "return_window_closed",
            f"order {o.id} was delivered on {_day(o.delivered_at or end)} and its return window "
            f"closed on {_day(end)} ({RETURN_WINDOW_DAYS} days after delivery). Nothing was "
            "done; only orders whose return_window is 'open' take returns.",
        )
    order_lines = ctx.sql.all(ORDER_LINES, order_id=o.id)
    by_variant = {line.variant_id: line for line in order_lines}
    missing = [i for i in ids if i not in by_variant]
    if missing:
        raise _broken(
            "not_in_order",
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not in order {o.id}; "
            f"its variants are {', '.join(sorted(by_variant))} (get_order shows its lines).",
        )
    wanted: list[tuple[Any, int]] = []
    for k, vid in enumerate(ids):
        line = by_variant[vid]
        left = line.quantity - line.returned
        units = quantities[k] if quantities is not None else left
        if left <= 0 or units > left:
            raise _broken(
                "return_exceeds_purchase",
                f"order {o.id} has {line.quantity} of {vid} and {line.returned} of them are "
                f"already on a return, so at most {left} can be returned. Nothing was done.",
            )
        wanted.append((line, units))
    taxed = ctx.env_version >= CONSEQUENCES
    tax_of = (
        dict(zip((x.id for x in order_lines), _tax_shares(o, order_lines), strict=True))
        if taxed
        else {}
    )
    # the shop's mistake: a wrong item's return refunds the shipping too, once per order
    wrong = taxed and reason == "wrong_item"
    shipping_back = (
        o.shipping if wrong and ctx.sql.first(SHIPPING_REFUNDS, order_id=o.id) is None else ZERO
    )
    return_id = next_id(ctx, ReturnRequest.id, "ret", 4)
    ctx.sql.insert(
        ReturnRequest,
        id=return_id,
        order_id=o.id,
        customer_id=o.customer_id,
        status="requested",
        reason=reason,
        amount=ZERO,
        created_at=_now(ctx),
        refunded_at=None,
    )
    total = shipping_back
    for line, units in wanted:
        net = line.line_total - line.discount + tax_of.get(line.id, ZERO)
        amount = refund_for(net, line.quantity, line.returned, units)
        ctx.sql.update(OrderLine, line, returned=line.returned + units)
        total += amount
        ctx.sql.insert(
            ReturnLine,
            id=next_id(ctx, ReturnLine.id, "rtl", 5),
            return_id=return_id,
            order_line_id=line.id,
            variant_id=line.variant_id,
            quantity=units,
            amount=amount,
        )
    ret = ctx.sql.update(ReturnRequest, ctx.sql.one(RETURN, id=return_id), amount=total)
    return _return_out(ctx, ret)


@tool(
    writes=True,
    idempotent=True,
    returns=("return", "order", "variant"),
    phrasings=["Refund return {return_id}", "The items of {return_id} arrived; pay the refund"],
)
def process_refund(ctx: ToolContext, return_id: ReturnRow) -> RefundResult:
    """Refund a requested return: its amount is paid back and its units go back in stock.

    From prove/shopping-v2 the units of a return with reason "damaged" are written off
    instead ("written_off"): they do not go back in stock. From prove/shopping-v3 the refund
    goes back to the card that paid the order ("refunded_to": its id, brand and last four;
    null for an order placed before the shop kept cards).

    Args:
        return_id: A "requested" return, such as "ret_0027" (list_returns with status
            "requested" finds them).

    Returns:
        {"return_id": "ret_0027", "order_id": "ord_00131", "status": "refunded", "amount":
        "117.39", "order_total": "144.47", "order_refunded": "117.39", "restocked":
        {"var_00117": 4}, "lines": [...]}.
    """
    ret = return_id
    if ret.status != "requested":
        raise _clash(
            "return_not_pending",
            f"return {ret.id} was already refunded ({ret.amount}) on {_stamp(ret.refunded_at)}; "
            "a return is refunded once.",
        )
    order = ctx.sql.one(ORDER, id=ret.order_id)
    if order.refunded + ret.amount > order.total:  # the shares make this impossible: a guard
        raise _broken(
            "return_exceeds_purchase",
            f"refunding {ret.amount} would take order {order.id}'s refunds past its total "
            f"{order.total}. Nothing was refunded.",
        )
    lines = ctx.sql.all(RETURN_LINES, return_id=ret.id)
    damaged = ctx.env_version >= CONSEQUENCES and ret.reason == "damaged"
    restocked: dict[str, int] = {}
    for line in [] if damaged else lines[:-1]:
        restocked[line.variant_id] = _restock(ctx, line.variant_id, line.quantity)
    order = ctx.sql.update(Order, order, refunded=order.refunded + ret.amount)
    ret = ctx.sql.update(ReturnRequest, ret, status="refunded", refunded_at=_now(ctx))
    for line in [] if damaged else lines[-1:]:  # after the order and the return, as the ORM did
        restocked[line.variant_id] = _restock(ctx, line.variant_id, line.quantity)
    out: RefundResult = {
        "return_id": ret.id,
        "order_id": order.id,
        "status": ret.status,
        "amount": ret.amount,
        "order_total": order.total,
        "order_refunded": order.refunded,
        "restocked": dict(sorted(restocked.items())),
        "lines": _return_lines(ctx, ret.id),
    }
    if ctx.env_version >= CONSEQUENCES:
        written_off: dict[str, int] = {}
        for line in lines if damaged else []:
            written_off[line.variant_id] = written_off.get(line.variant_id, 0) + line.quantity
        out["written_off"] = dict(sorted(written_off.items()))
    if ctx.env_version >= PAYMENT:
        paid = _paid_with(ctx, order.id)
        out["refunded_to"] = _card_ref(paid) if paid else None
    return out
