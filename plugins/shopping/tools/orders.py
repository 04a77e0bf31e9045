"""Order tools: checkout, an order's history and status, cancellation."""

from __future__ import annotations

from typing import Any, Literal

from prove_gym.server import ToolContext, next_id
from prove_gym.server.tool import tool

from ..models import (
    ZERO,
    Cart,
    CheckoutKey,
    Order,
    OrderLine,
    OrderPayment,
    Variant,
    allocate,
    card_expired,
    coupon_discount,
    sales_tax,
    shipping_cost,
)
from ._common import (
    CONSEQUENCES,
    PAYMENT,
    _address_out,
    _broken,
    _card_ref,
    _cart,
    _clash,
    _coupon_problem,
    _day,
    _denied,
    _items,
    _lines_of,
    _mine,
    _now,
    _paid_with,
    _restock,
    _return_by,
    _return_out,
    _stamp,
    _tax,
    _window,
)
from .args import (
    AddressRow,
    CancelReason,
    CustomerRow,
    IdempotencyKey,
    Limit,
    OrderRow,
    OrderStatus,
    PaymentMethodRow,
    ShippingMethod,
)
from .queries import (
    ADDRESS,
    CHECKOUT_KEY,
    COUPON,
    DELETE_CART_ITEM,
    ORDER,
    ORDER_LINES,
    ORDER_RETURNS,
    ORDER_UNITS,
    PAYMENT_METHODS,
    _orders_matching,
)
from .results import Cancellation, OrderDetail, OrderList, OrderSummary, StatusChange


def _item_name(i: Any) -> str:
    """A cart item's variant as an order line names it: "<product> (<label>)"."""
    return f"{i.name} ({i.label})"


def _order_summary(ctx: ToolContext, o: Any) -> OrderSummary:
    units = ctx.sql.scalar(ORDER_UNITS, order_id=o.id)
    end = _return_by(o)
    return {
        "order_id": o.id,
        "customer_id": o.customer_id,
        "status": o.status,
        "placed_at": o.placed_at.isoformat(timespec="minutes"),
        "units": int(units or 0),
        "total": o.total,
        "refunded": o.refunded,
        "return_window": _window(ctx, o),
        "return_by": _day(end) if end is not None else None,
    }


def _order_detail(ctx: ToolContext, o: Any) -> OrderDetail:
    returns = ctx.sql.all(ORDER_RETURNS, order_id=o.id)
    detail: OrderDetail = {
        **_order_summary(ctx, o),
        "shipping_method": o.shipping_method,
        "subtotal": o.subtotal,
        "coupon_code": o.coupon_code,
        "discount": o.discount,
        "shipping": o.shipping,
        "address": _address_out(ctx.sql.one(ADDRESS, id=o.address_id)),
        "tracking_number": o.tracking_number,
        "shipped_at": _stamp(o.shipped_at),
        "delivered_at": _stamp(o.delivered_at),
        "cancelled_at": _stamp(o.cancelled_at),
        "cancel_reason": o.cancel_reason,
        "lines": [
            {
                "line_id": line.id,
                "variant_id": line.variant_id,
                "product_id": line.product_id,
                "name": line.name,
                "category": line.category,
                "quantity": line.quantity,
                "unit_price": line.unit_price,
                "line_total": line.line_total,
                "discount": line.discount,
                "returned": line.returned,
                "returnable": line.quantity - line.returned if _window(ctx, o) == "open" else 0,
            }
            for line in ctx.sql.all(ORDER_LINES, order_id=o.id)
        ],
        "returns": [_return_out(ctx, r) for r in returns],
    }
    if ctx.env_version >= CONSEQUENCES:
        detail["tax"] = _tax(o)
    if ctx.env_version >= PAYMENT:
        paid = _paid_with(ctx, o.id)
        detail["payment"] = {**_card_ref(paid), "amount": paid.amount} if paid else None
    return detail


def _take(ctx: ToolContext, item: Any) -> None:
    """Take a checked-out cart item's units from its variant's stock and it from the cart."""
    ctx.sql.update_by_key(Variant, item.variant_id, stock=item.stock - item.quantity)
    ctx.sql.run(DELETE_CART_ITEM, id=item.id)


@tool(
    returns=("order", "customer"),
    phrasings=["Show {customer_id}'s orders", "Which of {customer_id}'s orders are {status}?"],
)
def list_orders(
    ctx: ToolContext,
    customer_id: CustomerRow,
    status: OrderStatus | None = None,
    limit: Limit = 10,
) -> OrderList:
    """List a customer's orders, newest first, with whether items can still be returned.

    Args:
        customer_id: The customer, such as "cus_004".
        status: Only orders in this status: "placed", "shipped", "delivered" or "cancelled".
        limit: Maximum number of orders to return (1-50), such as 10.

    Returns:
        {"customer_id": "cus_004", "total": 5, "orders": [{"order_id": "ord_00131",
        "status": "delivered", "placed_at": "2026-03-02T10:30", "units": 3, "total":
        "144.47", "refunded": "0.00", "return_window": "open", "return_by": "2026-04-06"},
        ...]}; return_window is "open", "closed", "not_delivered" or "cancelled".
    """
    params: dict[str, Any] = {"customer_id": customer_id.id}
    if status is not None:
        params["status"] = status
    count, matching = _orders_matching(status is not None)
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(matching, limit=limit, **params)
    return {
        "customer_id": customer_id.id,
        "total": total,
        "orders": [_order_summary(ctx, o) for o in rows],
    }


@tool(
    returns=("order", "variant", "product", "address", "customer", "return", "coupon"),
    phrasings=["Show me order {order_id}", "Where is my order {order_id}?"],
)
def get_order(ctx: ToolContext, order_id: OrderRow) -> OrderDetail:
    """Get one order: lines, totals, coupon, address, shipping, status dates and returns.

    From prove/shopping-v2 it shows the sales tax too ("tax"): total = subtotal - discount +
    shipping + tax (0.00 on orders placed before the shop charged tax). From
    prove/shopping-v3 it shows what paid the order ("payment": the card's id, brand and last
    four and the amount charged; null for an order placed before the shop kept cards).

    Args:
        order_id: The order, such as "ord_00131" (list_orders finds a customer's orders).

    Returns:
        {"order_id": "ord_00131", "status": "delivered", "subtotal": "159.97", "discount":
        "15.50", "shipping": "0.00", "total": "144.47", "refunded": "0.00",
        "return_window": "open", "return_by": "2026-04-06", "lines": [{"line_id":
        "oln_000342", "variant_id": "var_00117", "quantity": 1, "unit_price": "129.99",
        "line_total": "129.99", "discount": "12.60", "returned": 0, "returnable": 1}, ...],
        "address": {...}, "tracking_number": "1Z...", "returns": [...], ...}.
    """
    return _order_detail(ctx, order_id)


@tool(
    writes=True,
    returns=("order", "customer", "address", "variant", "coupon"),
    phrasings=[
        "Check out {customer_id}'s cart with {shipping_method} shipping to {address_id}",
        "Place the order for {customer_id}, ship it {shipping_method} to {address_id}",
    ],
)
def checkout(
    ctx: ToolContext,
    customer_id: CustomerRow,
    address_id: AddressRow,
    shipping_method: ShippingMethod,
) -> OrderDetail:
    """Turn a customer's cart into a placed order: stock is taken, the cart is emptied.

    The order keeps the cart's coupon and prices; its total is subtotal - discount + shipping
    (standard 5.99, free from 50.00 of merchandise after the discount; express 14.99;
    overnight 29.99). Every item must still be in stock in the quantity the cart holds.

    Args:
        customer_id: The customer, such as "cus_004".
        address_id: One of the customer's own addresses, such as "adr_0007" (see
            list_addresses).
        shipping_method: "standard" (3-5 days), "express" (2 days) or "overnight".

    Returns:
        The new order as get_order shows it: {"order_id": "ord_00151", "status": "placed",
        "subtotal": "159.97", "discount": "15.50", "shipping": "0.00", "total": "144.47",
        "lines": [...], ...}.
    """
    return _order_detail(ctx, _place(ctx, customer_id, address_id, shipping_method))


@tool(
    name="checkout",
    since=CONSEQUENCES,
    writes=True,
    returns=("order", "customer", "address", "variant", "coupon"),
    phrasings=[
        "Check out {customer_id}'s cart with {shipping_method} shipping to {address_id}",
        "Place the order for {customer_id}, ship it {shipping_method} to {address_id}",
        "Check out {customer_id}'s cart to {address_id}, {shipping_method}, with key "
        "{idempotency_key}",
    ],
    examples={"idempotency_key": ["order-7f3a9c", "checkout-2026-001", "b1e2c3d4"]},
)
def checkout_v2(
    ctx: ToolContext,
    customer_id: CustomerRow,
    address_id: AddressRow,
    shipping_method: ShippingMethod,
    idempotency_key: IdempotencyKey | None = None,
) -> OrderDetail:
    """Turn a customer's cart into a placed order: stock is taken, the cart is emptied.

    The order keeps the cart's coupon and prices; its total is subtotal - discount + shipping
    + tax. Shipping: standard 5.99, free from 50.00 of merchandise after the discount;
    express 14.99; overnight 29.99. Sales tax ("tax"): the merchandise (subtotal - discount,
    not shipping) times the base rate of the address's state (TX 6.25%, CA 7.25%, NY 4%, OR
    0%, ...), rounded half up to the cent. Every item must still be in stock in the quantity
    the cart holds.

    With an idempotency_key, a retry is safe: checking out again with the same key, address
    and shipping method returns the order it placed, unchanged, instead of placing another;
    the same key with another address or method is refused (rule idempotency_key_reused).

    Args:
        customer_id: The customer, such as "cus_004".
        address_id: One of the customer's own addresses, such as "adr_0007" (see
            list_addresses).
        shipping_method: "standard" (3-5 days), "express" (2 days) or "overnight".
        idempotency_key: A key of the customer's choosing for this checkout (1-64 letters,
            digits, '-', '_', '.' or ':'), such as "order-7f3a9c"; leave it out to place
            an order on every call.

    Returns:
        The order as get_order shows it: {"order_id": "ord_00151", "status": "placed",
        "subtotal": "159.97", "discount": "15.50", "shipping": "0.00", "tax": "9.03",
        "total": "153.50", "lines": [...], ...}.
    """
    return _checkout(ctx, customer_id, address_id, shipping_method, idempotency_key, None)


@tool(
    name="checkout",
    since=PAYMENT,
    writes=True,
    returns=("order", "customer", "address", "variant", "coupon", "payment_method"),
    phrasings=[
        "Check out {customer_id}'s cart with {shipping_method} shipping to {address_id}, "
        "paying with {payment_method_id}",
        "Place the order for {customer_id}, ship it {shipping_method} to {address_id} and "
        "charge card {payment_method_id}",
        "Check out {customer_id}'s cart to {address_id}, {shipping_method}, card "
        "{payment_method_id}, with key {idempotency_key}",
    ],
    examples={"idempotency_key": ["order-7f3a9c", "checkout-2026-001", "b1e2c3d4"]},
)
def checkout_v3(
    ctx: ToolContext,
    customer_id: CustomerRow,
    address_id: AddressRow,
    shipping_method: ShippingMethod,
    payment_method_id: PaymentMethodRow | None = None,
    idempotency_key: IdempotencyKey | None = None,
) -> OrderDetail:
    """Turn a customer's cart into a placed order paid with one of their saved cards: stock
    is taken, the cart is emptied and the card is charged exactly the order's total.

    The order keeps the cart's coupon and prices; its total is subtotal - discount + shipping
    + tax. Shipping: standard 5.99, free from 50.00 of merchandise after the discount;
    express 14.99; overnight 29.99. Sales tax ("tax"): the merchandise (subtotal - discount,
    not shipping) times the base rate of the address's state (TX 6.25%, CA 7.25%, NY 4%, OR
    0%, ...), rounded half up to the cent. Every item must still be in stock in the quantity
    the cart holds.

    A checkout needs a payment_method_id (rule payment_method_required): one of the
    customer's cards on file (list_payment_methods; add_payment_method saves one), not
    another customer's (rule not_your_payment_method), not removed (rule
    payment_method_removed) and not expired (rule card_expired: a card is good through its
    expiry month). Refunds of the order go back to that card.

    With an idempotency_key, a retry is safe: checking out again with the same key, address,
    shipping method and card returns the order it placed, unchanged, instead of placing
    another; the same key with another address, method or card is refused (rule
    idempotency_key_reused).

    Args:
        customer_id: The customer, such as "cus_004".
        address_id: One of the customer's own addresses, such as "adr_0007" (see
            list_addresses).
        shipping_method: "standard" (3-5 days), "express" (2 days) or "overnight".
        payment_method_id: The customer's saved card to charge, such as "pm_0001";
            required (without it the checkout is refused).
        idempotency_key: A key of the customer's choosing for this checkout (1-64 letters,
            digits, '-', '_', '.' or ':'), such as "order-7f3a9c"; leave it out to place
            an order on every call.

    Returns:
        The order as get_order shows it: {"order_id": "ord_00151", "status": "placed",
        "subtotal": "159.97", "discount": "15.50", "shipping": "0.00", "tax": "9.03",
        "total": "153.50", "payment": {"payment_method_id": "pm_0001", "brand": "visa",
        "last4": "4242", "amount": "153.50"}, "lines": [...], ...}.
    """
    return _checkout(
        ctx, customer_id, address_id, shipping_method, idempotency_key, payment_method_id
    )


def _checkout(
    ctx: ToolContext,
    c: Any,
    address: Any,
    shipping_method: str,
    idempotency_key: str | None,
    card: Any,
) -> OrderDetail:
    """Checkout from :data:`CONSEQUENCES` on: with an idempotency key, the order it placed
    if it placed one (the same address, method and, from :data:`PAYMENT`, card), else a new
    order, recorded under the key."""
    if idempotency_key is not None:
        first = ctx.sql.first(CHECKOUT_KEY, customer_id=c.id, key=idempotency_key)
        if first is not None:
            paid = _paid_with(ctx, first.order_id) if ctx.env_version >= PAYMENT else None
            card_id = card.id if card is not None else None
            was = (
                first.address_id,
                first.shipping_method,
                paid.payment_method_id if paid else None,
            )
            now = (address.id, shipping_method, card_id if paid else None)
            if was != now:
                with_card = f", paid with {paid.payment_method_id}" if paid else ""
                raise _clash(
                    "idempotency_key_reused",
                    f"{c.id} already checked out with key '{idempotency_key}': order "
                    f"{first.order_id}, {first.shipping_method} shipping to "
                    f"{first.address_id}{with_card}. A key names one checkout; nothing was "
                    "ordered. Check out with a new key (or none) to place another order.",
                )
            return _order_detail(ctx, ctx.sql.one(ORDER, id=first.order_id))
    o = _place(ctx, c, address, shipping_method, card)
    if idempotency_key is not None:
        ctx.sql.insert(
            CheckoutKey,
            customer_id=c.id,
            key=idempotency_key,
            order_id=o.id,
            address_id=address.id,
            shipping_method=shipping_method,
        )
    return _order_detail(ctx, o)


def _chargeable(ctx: ToolContext, c: Any, card: Any) -> None:
    """Refuse a checkout of ``c``'s cart that ``card`` cannot pay (from :data:`PAYMENT`)."""
    if card is None:
        on_file = ctx.sql.all(PAYMENT_METHODS, customer_id=c.id)
        if on_file:
            fix = (
                f"Pass payment_method_id: one of {c.id}'s cards on file ("
                + ", ".join(f"{p.id}: {p.brand} ending {p.last4}" for p in on_file[:5])
                + ")."
            )
        else:
            fix = (
                f"{c.id} has no card on file: save one with add_payment_method "
                f"(customer_id='{c.id}') first, then pass its payment_method_id."
            )
        raise _broken(
            "payment_method_required",
            f"a checkout is paid with one of the customer's saved cards. Nothing was "
            f"ordered. {fix}",
        )
    if card.customer_id != c.id:
        raise _denied(
            "not_your_payment_method",
            f"card {card.id} belongs to {card.customer_id}, not to {c.id}; nothing was "
            f"ordered. Charge one of {c.id}'s own cards (list_payment_methods).",
        )
    if card.removed_at is not None:
        raise _broken(
            "payment_method_removed",
            f"card {card.id} ({card.brand} ending {card.last4}) was removed on "
            f"{_stamp(card.removed_at)}; nothing was ordered. Charge a card on file "
            f"(list_payment_methods with customer_id '{c.id}').",
        )
    now = _now(ctx)
    if card_expired(card.exp_month, card.exp_year, now):
        raise _broken(
            "card_expired",
            f"card {card.id} ({card.brand} ending {card.last4}) expired at the end of "
            f"{card.exp_month:02d}/{card.exp_year} (today is {now.date().isoformat()}); "
            "nothing was ordered. Charge another card of the customer's, or save a valid "
            "one with add_payment_method.",
        )


def _place(ctx: ToolContext, c: Any, address: Any, shipping_method: str, card: Any = None) -> Any:
    """Check out ``c``'s cart to ``address``: the placed order's row (sales tax from
    :data:`CONSEQUENCES` on; from :data:`PAYMENT` on, ``card`` is charged its total, once
    every other rule of the checkout holds)."""
    cart = _cart(ctx, c.id)
    items = _items(ctx, c.id)
    if not items:
        raise _broken(
            "cart_empty",
            f"{c.id}'s cart is empty, so there is nothing to check out. Add items with "
            f"add_to_cart (customer_id='{c.id}') first.",
        )
    _mine(ctx, c, address, "receive this order")
    for i in items:
        if i.quantity > i.stock:
            raise _broken(
                "insufficient_stock",
                f"the cart holds {i.quantity} of {i.variant_id} ({_item_name(i)}) but it has "
                f"{i.stock} left in stock. Nothing was ordered; lower it with "
                f"update_cart_item (customer_id='{c.id}', variant_id='{i.variant_id}', "
                f"quantity={i.stock}) and check out again.",
            )
    lines = _lines_of(items)
    coupon = ctx.sql.first(COUPON, code=cart.coupon_code) if cart.coupon_code is not None else None
    if coupon is not None:
        problem = _coupon_problem(ctx, coupon, c.id, items)
        if problem is not None:  # carts drop coupons they stop qualifying for: a guard only
            raise _broken(
                problem[0],
                f"{problem[1]}. Nothing was ordered; take the coupon off with remove_coupon "
                f"(customer_id='{c.id}') and check out again.",
            )
    if ctx.env_version >= PAYMENT:
        _chargeable(ctx, c, card)
    subtotal = sum((t for _, t in lines), ZERO)
    discount = coupon_discount(coupon, lines) if coupon is not None else ZERO
    eligible = [
        t if coupon is not None and coupon.category in (None, cat) else ZERO for cat, t in lines
    ]
    shares = allocate(discount, eligible)
    shipping = shipping_cost(shipping_method, subtotal - discount)
    tax = sales_tax(subtotal - discount, address.state) if ctx.env_version >= CONSEQUENCES else ZERO
    now = _now(ctx)
    order_id = next_id(ctx, Order.id, "ord", 5)
    ctx.sql.insert(
        Order,
        id=order_id,
        customer_id=c.id,
        address_id=address.id,
        status="placed",
        shipping_method=shipping_method,
        subtotal=subtotal,
        discount=discount,
        shipping=shipping,
        total=subtotal - discount + shipping + tax,
        refunded=ZERO,
        coupon_code=coupon.code if coupon is not None else None,
        tracking_number=None,
        placed_at=now,
    )
    if ctx.env_version >= PAYMENT:
        ctx.sql.insert(
            OrderPayment,
            order_id=order_id,
            payment_method_id=card.id,
            amount=subtotal - discount + shipping + tax,
        )
    for i, share in zip(items, shares, strict=True):
        ctx.sql.insert(
            OrderLine,
            id=next_id(ctx, OrderLine.id, "oln", 6),
            order_id=order_id,
            variant_id=i.variant_id,
            product_id=i.product_id,
            name=_item_name(i),
            category=i.category,
            quantity=i.quantity,
            unit_price=i.price,
            line_total=i.price * i.quantity,
            discount=share,
            returned=0,
        )
        if i is not items[-1]:
            _take(ctx, i)
    ctx.sql.update(Cart, cart, coupon_code=None, updated_at=now)
    _take(ctx, items[-1])  # after the cart, as the ORM's final flush did
    return ctx.sql.one(ORDER, id=order_id)


@tool(
    writes=True,
    inverse_of="checkout",
    destructive=True,
    idempotent=True,
    returns=("order", "customer", "variant"),
    phrasings=[
        "Cancel order {order_id}: {reason}",
        "Please cancel {order_id}, the reason is {reason}",
    ],
)
def cancel_order(ctx: ToolContext, order_id: OrderRow, reason: CancelReason) -> Cancellation:
    """Cancel an order that has not shipped: its units go back in stock, the total is refunded.

    From prove/shopping-v3 the refund goes back to the card that paid the order
    ("refunded_to": its id, brand and last four; null for an order placed before the shop
    kept cards).

    Args:
        order_id: A "placed" order, such as "ord_00151".
        reason: "changed_mind", "ordered_by_mistake", "found_cheaper" or "delivery_too_slow".

    Returns:
        {"order": {...the order, "status": "cancelled", "refunded": "144.47"...},
        "refund_amount": "144.47", "restocked": {"var_00117": 4}}; restocked shows each
        variant's stock afterwards.
    """
    o = order_id
    if o.status != "placed":
        if o.status == "cancelled":
            detail = f"order {o.id} was already cancelled on {_stamp(o.cancelled_at)}."
        elif o.status == "shipped":
            detail = (
                f"order {o.id} is 'shipped' since {_stamp(o.shipped_at)} and can no longer be "
                "cancelled; once it is 'delivered', its items can be returned."
            )
        else:
            detail = (
                f"order {o.id} is 'delivered' since {_stamp(o.delivered_at)}; only a 'placed' "
                "order can be cancelled. Return its items instead while the return window is "
                "open."
            )
        raise _broken("order_not_cancellable", detail + " Nothing was changed.")
    lines = ctx.sql.all(ORDER_LINES, order_id=o.id)
    restocked: dict[str, int] = {}
    for line in lines[:-1]:
        restocked[line.variant_id] = _restock(ctx, line.variant_id, line.quantity)
    o = ctx.sql.update(
        Order,
        o,
        status="cancelled",
        cancelled_at=_now(ctx),
        cancel_reason=reason,
        refunded=o.total,
    )
    for line in lines[-1:]:  # written after the order, as the ORM's final flush did
        restocked[line.variant_id] = _restock(ctx, line.variant_id, line.quantity)
    out: Cancellation = {
        "order": _order_detail(ctx, o),
        "refund_amount": o.total,
        "restocked": dict(sorted(restocked.items())),
    }
    if ctx.env_version >= PAYMENT:
        paid = _paid_with(ctx, o.id)
        out["refunded_to"] = _card_ref(paid) if paid else None
    return out


@tool(
    writes=True,
    idempotent=True,
    returns="order",
    phrasings=[
        "Mark order {order_id} as {status}",
        "The order {order_id} was {status}, please record it",
    ],
)
def update_order_status(
    ctx: ToolContext, order_id: OrderRow, status: Literal["shipped", "delivered"]
) -> StatusChange:
    """Record that an order shipped (placed -> shipped) or arrived (shipped -> delivered).

    Shipping gives it a tracking number; delivery opens the 30-day return window.

    Args:
        order_id: The order, such as "ord_00151".
        status: "shipped" (for a placed order) or "delivered" (for a shipped order).

    Returns:
        {"order_id": "ord_00151", "previous_status": "placed", "status": "shipped",
        "tracking_number": "1Z00151...", "shipped_at": "2026-03-04T09:00", "delivered_at":
        null, "return_by": null}.
    """
    o = order_id
    before = o.status
    if before == status:
        raise _clash("status_transition", f"order {o.id} is already '{status}'; nothing to change.")
    if before in ("cancelled", "delivered"):
        raise _broken(
            "status_transition",
            f"order {o.id} is '{before}', which is final; its status cannot change.",
        )
    if before == "placed" and status == "delivered":
        raise _broken(
            "status_transition",
            f"order {o.id} is still 'placed': it must be marked 'shipped' before it can be "
            "'delivered'. Nothing was changed.",
        )
    now = _now(ctx)
    if status == "shipped":
        tracking = f"1Z{o.id.rsplit('_', 1)[1]}{now:%m%d%H%M}"
        o = ctx.sql.update(Order, o, status="shipped", shipped_at=now, tracking_number=tracking)
    else:
        o = ctx.sql.update(Order, o, status="delivered", delivered_at=now)
    end = _return_by(o)
    return {
        "order_id": o.id,
        "previous_status": before,
        "status": o.status,
        "tracking_number": o.tracking_number,
        "shipped_at": _stamp(o.shipped_at),
        "delivered_at": _stamp(o.delivered_at),
        "return_by": _day(end) if end is not None else None,
    }
