"""Cart tools: a customer's cart, its lines and its coupon."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Annotated, Any

from pydantic import Field

from prove_gym.server import ToolContext, next_id
from prove_gym.server.tool import tool

from ..models import (
    MAX_PER_ITEM,
    SHIPPING_RATES,
    ZERO,
    Cart,
    CartItem,
    coupon_discount,
    shipping_cost,
)
from ._common import (
    _broken,
    _cart,
    _clash,
    _coupon_problem,
    _coupon_status,
    _items,
    _lines_of,
    _now,
    _used_on,
)
from .args import Category, CouponRow, CustomerRow, Quantity, VariantRow
from .queries import CART_ITEM, CATEGORY_COUPONS, COUPON, COUPONS, DELETE_CART_ITEM, PRODUCT_NAME
from .results import CartChange, CartLineOut, CartOut, CouponList, CouponOut, CouponRemoved


def _variant_name(ctx: ToolContext, v: Any) -> str:
    return f"{ctx.sql.scalar(PRODUCT_NAME, id=v.product_id)} ({v.label})"


def _revalidate(ctx: ToolContext, cart: Any) -> str | None:
    """Drop the cart's coupon when the cart no longer qualifies; says why, or None."""
    if cart.coupon_code is None:
        return None
    coupon = ctx.sql.one(COUPON, code=cart.coupon_code)
    problem = _coupon_problem(ctx, coupon, cart.customer_id, _items(ctx, cart.customer_id))
    if problem is None:
        return None
    ctx.sql.update(Cart, cart, coupon_code=None)
    return f"{coupon.code} was removed from the cart: {problem[1]} (rule '{problem[0]}')"


def _cart_out(ctx: ToolContext, customer_id: str) -> CartOut:
    cart = _cart(ctx, customer_id)
    items = _items(ctx, customer_id)
    out: list[CartLineOut] = []
    for i in items:
        out.append(
            {
                "variant_id": i.variant_id,
                "product_id": i.product_id,
                "name": i.name,
                "label": i.label,
                "category": i.category,
                "quantity": i.quantity,
                "unit_price": i.price,
                "line_total": i.price * i.quantity,
                "stock": i.stock,
                "enough_stock": i.stock >= i.quantity,
            }
        )
    subtotal = sum((line["line_total"] for line in out), ZERO)
    discount = ZERO
    if cart.coupon_code is not None:
        discount = coupon_discount(ctx.sql.one(COUPON, code=cart.coupon_code), _lines_of(items))
    merchandise = subtotal - discount
    options = {m: shipping_cost(m, merchandise) for m in SHIPPING_RATES}
    return {
        "customer_id": customer_id,
        "items": out,
        "units": sum(i.quantity for i in items),
        "subtotal": subtotal,
        "coupon_code": cart.coupon_code,
        "discount": discount,
        "merchandise_total": merchandise,
        "shipping_options": options if items else {},
        "total_with_standard_shipping": merchandise + options["standard"] if items else ZERO,
    }


def _coupon_out(
    ctx: ToolContext, c: Any, customer_id: str | None, items: Sequence[Any]
) -> CouponOut:
    used: bool | None = None
    applies: bool | None = None
    saving: Decimal | None = None
    why: str | None = None
    if customer_id is not None:
        used = c.once_per_customer and _used_on(ctx, c, customer_id) is not None
        problem = _coupon_problem(ctx, c, customer_id, items)
        applies = problem is None
        why = f"{problem[1]} (rule '{problem[0]}')" if problem is not None else None
        saving = coupon_discount(c, _lines_of(items)) if problem is None else None
    return {
        "code": c.code,
        "description": c.description,
        "percent_off": c.percent_off,
        "amount_off": c.amount_off,
        "min_subtotal": c.min_subtotal,
        "category": c.category,
        "once_per_customer": c.once_per_customer,
        "starts_at": c.starts_at.isoformat(timespec="minutes"),
        "expires_at": c.expires_at.isoformat(timespec="minutes"),
        "status": _coupon_status(ctx, c),
        "used_by_customer": used,
        "applies_to_cart": applies,
        "discount_on_cart": saving,
        "why_not": why,
    }


@tool(
    returns=("customer", "variant", "product", "coupon"),
    phrasings=["What is in {customer_id}'s cart?", "Show the cart of customer {customer_id}"],
)
def get_cart(ctx: ToolContext, customer_id: CustomerRow) -> CartOut:
    """Show a customer's cart: items, coupon, subtotal, discount and shipping options.

    Args:
        customer_id: The customer, such as "cus_004" (search_customers finds them).

    Returns:
        {"customer_id": "cus_004", "items": [{"variant_id": "var_00117", "name": "Northway
        Rain Jacket", "label": "Navy / M", "quantity": 1, "unit_price": "129.99",
        "line_total": "129.99", "stock": 3, "enough_stock": true}], "units": 1,
        "subtotal": "129.99", "coupon_code": "SAVE15", "discount": "19.50",
        "merchandise_total": "110.49", "shipping_options": {"standard": "0.00", "express":
        "14.99", "overnight": "29.99"}, "total_with_standard_shipping": "110.49"}.
    """
    return _cart_out(ctx, customer_id.id)


@tool(
    returns=("coupon", "category", "customer"),
    phrasings=[
        "Which coupons can {customer_id} use?",
        "List the coupons for {category} items",
        "What coupon codes are there right now?",
    ],
)
def list_coupons(
    ctx: ToolContext,
    customer_id: CustomerRow | None = None,
    category: Category | None = None,
    include_expired: bool = False,
) -> CouponList:
    """List coupons and their rules; with a customer, whether each applies to their cart now.

    With customer_id, coupons that apply to the customer's cart come first, with the
    discount they would give; the others say why not (why_not).

    Args:
        customer_id: The customer whose cart to check the coupons against, such as "cus_004".
        category: Only coupons for this category (and store-wide ones), such as "home".
        include_expired: Also list expired and not yet started coupons, such as true.

    Returns:
        {"customer_id": "cus_004", "coupons": [{"code": "SAVE15", "description": "15% off
        orders of 75.00 or more", "percent_off": 15, "amount_off": null, "min_subtotal":
        "75.00", "category": null, "once_per_customer": true, "expires_at":
        "2026-03-20T23:59", "status": "active", "used_by_customer": false,
        "applies_to_cart": true, "discount_on_cart": "19.50", "why_not": null}, ...]}.
    """
    if category is not None:
        coupons = ctx.sql.all(CATEGORY_COUPONS, category=category)
    else:
        coupons = ctx.sql.all(COUPONS)
    if not include_expired:
        coupons = [c for c in coupons if _coupon_status(ctx, c) == "active"]
    cid = customer_id.id if customer_id is not None else None
    items = _items(ctx, cid) if cid is not None else []
    out = [_coupon_out(ctx, c, cid, items) for c in coupons]
    if cid is not None:
        out.sort(key=lambda c: (not c["applies_to_cart"], c["code"]))
    return {"customer_id": cid, "coupons": out}


@tool(
    writes=True,
    returns=("variant", "customer", "product"),
    phrasings=[
        "Add {quantity} of {variant_id} to {customer_id}'s cart",
        "Put {variant_id} in the cart of {customer_id}",
    ],
    examples={"quantity": [1, 1, 2, 3]},
)
def add_to_cart(
    ctx: ToolContext, customer_id: CustomerRow, variant_id: VariantRow, quantity: Quantity = 1
) -> CartChange:
    """Add units of a variant to a customer's cart (added to what the cart already holds).

    The cart may hold at most the units in stock and at most 10 of one variant.

    Args:
        customer_id: The customer, such as "cus_004".
        variant_id: The variant to add, such as "var_00117" (get_product lists variants).
        quantity: How many units to add (1-10), such as 1.

    Returns:
        {"customer_id": "cus_004", "variant_id": "var_00117", "quantity": 2,
        "coupon_removed": null, "cart": {...the cart as get_cart shows it...}}; quantity is
        the variant's units in the cart now.
    """
    c, v = customer_id, variant_id
    if v.stock <= 0:
        raise _broken(
            "out_of_stock",
            f"{v.id} ({_variant_name(ctx, v)}) is out_of_stock. Nothing was added; offer "
            f"another variant of {v.product_id} (get_product shows which are in stock).",
        )
    cart = _cart(ctx, c.id)
    item = ctx.sql.first(CART_ITEM, customer_id=c.id, variant_id=v.id)
    have = item.quantity if item is not None else 0
    want = have + quantity
    if want > MAX_PER_ITEM:
        raise _broken(
            "item_limit",
            f"{c.id}'s cart already holds {have} of {v.id}; at most {MAX_PER_ITEM} units of one "
            f"variant fit in a cart, so at most {MAX_PER_ITEM - have} more can be added.",
        )
    if want > v.stock:
        raise _broken(
            "insufficient_stock",
            f"{v.id} ({_variant_name(ctx, v)}) has {v.stock} in stock and {c.id}'s cart "
            f"already holds {have}, so at most {max(0, v.stock - have)} more can be added. "
            "Nothing was added.",
        )
    ctx.sql.update(Cart, cart, updated_at=_now(ctx))  # the ORM flushed the cart first
    if item is None:
        ctx.sql.insert(
            CartItem,
            id=next_id(ctx, CartItem.id, "cit", 5),
            customer_id=c.id,
            variant_id=v.id,
            quantity=quantity,
            added_at=_now(ctx),
        )
    else:
        ctx.sql.update(CartItem, item, quantity=want)
    return {
        "customer_id": c.id,
        "variant_id": v.id,
        "quantity": want,
        "coupon_removed": None,
        "cart": _cart_out(ctx, c.id),
    }


def _cart_item(ctx: ToolContext, c: Any, v: Any) -> Any:
    item = ctx.sql.first(CART_ITEM, customer_id=c.id, variant_id=v.id)
    if item is None:
        raise _broken(
            "not_in_cart",
            f"{v.id} ({_variant_name(ctx, v)}) is not in {c.id}'s cart. Add it with "
            f"add_to_cart (customer_id='{c.id}', variant_id='{v.id}') instead, or check the "
            "cart with get_cart.",
        )
    return item


@tool(
    stands_in_for=("remove_from_cart",),
    writes=True,
    idempotent=True,
    inverse_of=("add_to_cart",),  # add 1 more, then set it to 1: the add is undone
    returns=("variant", "customer", "coupon"),
    phrasings=[
        "Change {variant_id} in {customer_id}'s cart to {quantity}",
        "Make it {quantity} of {variant_id} in the cart of {customer_id}",
    ],
    examples={"quantity": [0, 1, 2, 3]},
    ends_when={"quantity": 0},
)
def update_cart_item(
    ctx: ToolContext,
    customer_id: CustomerRow,
    variant_id: VariantRow,
    quantity: Annotated[int, Field(ge=0, le=MAX_PER_ITEM)],
) -> CartChange:
    """Set how many units of a variant in a customer's cart; 0 takes it out of the cart.

    If the cart no longer qualifies for its coupon, the coupon is removed (coupon_removed
    says why).

    Args:
        customer_id: The customer, such as "cus_004".
        variant_id: A variant in their cart, such as "var_00117" (see get_cart).
        quantity: The new number of units (0-10), such as 2; 0 removes the item.

    Returns:
        {"customer_id": "cus_004", "variant_id": "var_00117", "quantity": 2,
        "coupon_removed": null, "cart": {...}}.
    """
    c, v = customer_id, variant_id
    item = _cart_item(ctx, c, v)
    if quantity > v.stock:
        raise _broken(
            "insufficient_stock",
            f"{v.id} ({_variant_name(ctx, v)}) has {v.stock} in stock; set at most {v.stock} "
            "(0 takes it out). Nothing was changed.",
        )
    if quantity == 0:
        ctx.sql.run(DELETE_CART_ITEM, id=item.id)
    else:
        ctx.sql.update(CartItem, item, quantity=quantity)
    cart = ctx.sql.update(Cart, _cart(ctx, c.id), updated_at=_now(ctx))
    dropped = _revalidate(ctx, cart)
    return {
        "customer_id": c.id,
        "variant_id": v.id,
        "quantity": quantity,
        "coupon_removed": dropped,
        "cart": _cart_out(ctx, c.id),
    }


@tool(
    writes=True,
    inverse_of="add_to_cart",
    destructive=True,
    idempotent=True,
    returns=("variant", "customer", "coupon"),
    phrasings=[
        "Remove {variant_id} from {customer_id}'s cart",
        "Take {variant_id} out of the cart of {customer_id}",
    ],
)
def remove_from_cart(
    ctx: ToolContext, customer_id: CustomerRow, variant_id: VariantRow
) -> CartChange:
    """Take a variant out of a customer's cart; a coupon the cart no longer qualifies for goes.

    Args:
        customer_id: The customer, such as "cus_004".
        variant_id: A variant in their cart, such as "var_00117" (see get_cart).

    Returns:
        {"customer_id": "cus_004", "variant_id": "var_00117", "quantity": 0,
        "coupon_removed": "SAVE15 was removed from the cart: ...", "cart": {...}}.
    """
    c, v = customer_id, variant_id
    ctx.sql.run(DELETE_CART_ITEM, id=_cart_item(ctx, c, v).id)
    cart = ctx.sql.update(Cart, _cart(ctx, c.id), updated_at=_now(ctx))
    dropped = _revalidate(ctx, cart)
    return {
        "customer_id": c.id,
        "variant_id": v.id,
        "quantity": 0,
        "coupon_removed": dropped,
        "cart": _cart_out(ctx, c.id),
    }


def _coupon_hint(rule: str, c: Any, coupon: Any) -> str:
    """What to do next when ``coupon`` does not apply to ``c``'s cart."""
    if rule == "cart_empty":
        return f"Add items with add_to_cart (customer_id='{c.id}') first."
    if rule == "coupon_category":
        return (
            f"Add a {coupon.category} item with add_to_cart (customer_id='{c.id}'), or pick "
            "another coupon (list_coupons)."
        )
    if rule == "coupon_min_subtotal":
        return (
            f"Add more items with add_to_cart (customer_id='{c.id}'), or pick a coupon with a "
            "lower minimum (list_coupons)."
        )
    return f"Pick another coupon: list_coupons with customer_id '{c.id}' shows which apply."


@tool(
    writes=True,
    idempotent=True,
    returns=("coupon", "customer"),
    phrasings=[
        "Apply coupon {code} to {customer_id}'s cart",
        "Use the code {code} for customer {customer_id}",
    ],
)
def apply_coupon(ctx: ToolContext, customer_id: CustomerRow, code: CouponRow) -> CartOut:
    """Apply a coupon code to a customer's cart (a cart holds one coupon).

    The coupon must be active (between starts_at and expires_at), not already used by the
    customer if it is single-use, and the cart must reach its minimum subtotal and, for a
    category coupon, hold an item of that category (only those items are discounted).

    Args:
        customer_id: The customer, such as "cus_004".
        code: The coupon code, upper case, such as "SAVE15" (list_coupons shows them).

    Returns:
        The cart as get_cart shows it, with "coupon_code": "SAVE15" and its "discount".
    """
    c, coupon = customer_id, code
    cart = _cart(ctx, c.id)
    items = _items(ctx, c.id)
    problem = _coupon_problem(ctx, coupon, c.id, items)
    if problem is not None and problem[0] in (
        "coupon_not_started",
        "coupon_expired",
        "coupon_already_used",
    ):
        rule, why = problem
        raise _broken(rule, f"{why}. Nothing was applied. {_coupon_hint(rule, c, coupon)}")
    if cart.coupon_code == coupon.code:
        raise _clash(
            "coupon_already_applied",
            f"{coupon.code} is already applied to {c.id}'s cart; nothing to change.",
        )
    if cart.coupon_code is not None:
        raise _clash(
            "one_coupon_per_cart",
            f"{c.id}'s cart already holds the coupon {cart.coupon_code}, and a cart holds one "
            f"coupon. Remove it with remove_coupon (customer_id='{c.id}') first if the customer "
            f"prefers {coupon.code}.",
        )
    if problem is not None:
        rule, why = problem
        raise _broken(rule, f"{why}. Nothing was applied. {_coupon_hint(rule, c, coupon)}")
    ctx.sql.update(Cart, cart, coupon_code=coupon.code, updated_at=_now(ctx))
    return _cart_out(ctx, c.id)


@tool(
    writes=True,
    inverse_of="apply_coupon",
    idempotent=True,
    returns=("coupon", "customer"),
    phrasings=[
        "Remove the coupon from {customer_id}'s cart",
        "Take the discount code off the cart of {customer_id}",
    ],
)
def remove_coupon(ctx: ToolContext, customer_id: CustomerRow) -> CouponRemoved:
    """Take the coupon off a customer's cart.

    Args:
        customer_id: The customer, such as "cus_004".

    Returns:
        {"customer_id": "cus_004", "removed_code": "SAVE15", "cart": {...}}.
    """
    cart = _cart(ctx, customer_id.id)
    if cart.coupon_code is None:
        raise _clash(
            "no_coupon",
            f"{customer_id.id}'s cart holds no coupon; nothing to remove. Apply one with "
            "apply_coupon if the customer has a code.",
        )
    code = cart.coupon_code
    ctx.sql.update(Cart, cart, coupon_code=None, updated_at=_now(ctx))
    return {
        "customer_id": customer_id.id,
        "removed_code": code,
        "cart": _cart_out(ctx, customer_id.id),
    }
