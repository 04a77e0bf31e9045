"""The shopping server's 23 tools. Docstrings are what the model reads: keep examples concrete.

You are the shop's support assistant and act for customers: every cart, address, order and
return tool takes the customer's id (or an order's, which names its customer). Business
rules have names (``insufficient_stock``, ``coupon_min_subtotal``, ``return_window_closed``,
...; :data:`RULES` lists them); a refused action raises ``PreconditionFailed``
(``PermissionDenied`` for another customer's address, ``Conflict`` when the thing is already
so) with a message that starts with ``Rule '<name>' failed:`` and says what to do instead.
A refused call changes nothing: the session rolls the whole call back.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import Field
from sqlalchemy import bindparam, delete, func, select

from prove_gym.server import (
    Conflict,
    Entity,
    InvalidArgument,
    PermissionDenied,
    PreconditionFailed,
    Query,
    Record,
    Server,
    ToolContext,
    TypedDict,
    contains,
    next_id,
    search_pattern,
)

from .models import (
    CATEGORIES,
    MAX_PER_ITEM,
    RETURN_WINDOW_DAYS,
    SHIPPING_RATES,
    ZERO,
    Address,
    Base,
    Cart,
    CartItem,
    Coupon,
    Customer,
    Order,
    OrderLine,
    Product,
    ReturnLine,
    ReturnRequest,
    Variant,
    allocate,
    availability,
    coupon_discount,
    refund_for,
    shipping_cost,
)
from .sampler import sample_shopping

RULES: dict[str, str] = {
    "out_of_stock": "A sold-out variant (stock 0) cannot be added to a cart.",
    "insufficient_stock": "A cart line, and so an order line, never asks for more units than "
    "the variant has in stock: stock never goes negative.",
    "item_limit": f"A cart holds at most {MAX_PER_ITEM} units of one variant.",
    "not_in_cart": "Only a variant that is in the customer's cart can be changed or removed.",
    "cart_empty": "Checking out and applying a coupon need at least one item in the cart.",
    "coupon_not_started": "A coupon works only from its starts_at.",
    "coupon_expired": "A coupon works only until its expires_at.",
    "coupon_already_used": "A single-use coupon works once per customer (an order that was "
    "cancelled gives it back).",
    "coupon_category": "A category coupon needs an item of its category in the cart and "
    "discounts only those items.",
    "coupon_min_subtotal": "A coupon needs the cart's subtotal (before discounts) to reach its "
    "minimum.",
    "one_coupon_per_cart": "A cart holds at most one coupon: remove it before applying another.",
    "coupon_already_applied": "Applying the coupon the cart already holds changes nothing.",
    "no_coupon": "There is no coupon to remove from an empty coupon slot.",
    "address_not_yours": "An order ships only to an address of its own customer, and only the "
    "customer's own address can become their default.",
    "already_default": "Setting the default address to the current default changes nothing.",
    "duplicate_address": "A customer does not keep the same street address twice.",
    "order_not_cancellable": "Only a 'placed' order (not shipped yet) can be cancelled.",
    "status_transition": "Orders move placed -> shipped -> delivered, one step at a time; "
    "delivered and cancelled orders are final.",
    "not_delivered": "Only a delivered order takes returns.",
    "return_window_closed": f"Items can be returned until {RETURN_WINDOW_DAYS} days after "
    "delivery.",
    "not_in_order": "A return names variants the order contains.",
    "return_exceeds_purchase": "A line's returned units never exceed the units bought.",
    "return_not_pending": "A return is refunded once.",
}

server = Server(
    "shopping",
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.0.0",
    base=Base,
    sampler=sample_shopping,
    description="An online shop's customer-support tools (Northwind Goods): a catalog of "
    "products in categories, each with variants (colour, size) that have their own price and "
    "stock; customers with saved addresses and a cart each; coupons with rules; checkout into "
    "orders that are placed, shipped and delivered (or cancelled before shipping); returns "
    "within 30 days of delivery and their refunds. Stock and money always add up.",
    instructions="Shop conventions: ids look like 'cus_004' (customer), 'adr_0012' (address), "
    "'prd_0042' (product), 'var_00117' (variant: what goes into a cart), 'ord_00131' (order), "
    "'ret_0009' (return); coupon codes are upper case, such as 'SAVE15'. You act for the "
    "customer named by customer_id: find it with search_customers. Amounts are exact US "
    'dollars shown as strings such as "49.99". An order total is subtotal - coupon discount '
    "+ shipping (standard 5.99, free from 50.00 of merchandise; express 14.99; overnight "
    "29.99). A return refunds what the returned units cost after their share of the coupon "
    "discount; shipping is not refunded. Refused calls name the rule that failed and change "
    "nothing. Rules: " + " ".join(f"{name}: {text}" for name, text in RULES.items()),
)

CustomerRow = Annotated[Record[Customer], Entity("customer")]
ProductRow = Annotated[Record[Product], Entity("product")]
VariantRow = Annotated[Record[Variant], Entity("variant")]
AddressRow = Annotated[Record[Address], Entity("address")]
CouponRow = Annotated[Record[Coupon], Entity("coupon")]
OrderRow = Annotated[Record[Order], Entity("order")]
ReturnRow = Annotated[Record[ReturnRequest], Entity("return")]
VariantIds = Annotated[list[VariantRow], Field(min_length=1, max_length=20)]
SearchText = Annotated[str, Field(max_length=200)]
Limit = Annotated[int, Field(ge=1, le=50)]
MAX_PRICE = Decimal("100000.00")
Price = Annotated[Decimal, Field(ge=0, le=MAX_PRICE, decimal_places=2)]
Quantity = Annotated[int, Field(ge=1, le=MAX_PER_ITEM)]
CategoryName = Literal[
    "electronics", "home", "kitchen", "clothing", "shoes", "beauty", "sports", "toys", "books"
]
Category = Annotated[CategoryName, Entity("category")]
ShippingMethod = Literal["standard", "express", "overnight"]
OrderStatus = Literal["placed", "shipped", "delivered", "cancelled"]
ReturnReason = Literal[
    "damaged", "wrong_item", "wrong_size", "not_as_described", "no_longer_needed"
]
CancelReason = Literal["changed_mind", "ordered_by_mistake", "found_cheaper", "delivery_too_slow"]
AddressLabel = Literal["home", "work", "other"]
LIST_CAP = 50


# ----------------------------------------------------------------- results
class VariantOut(TypedDict):
    variant_id: str
    sku: str
    label: str
    price: Decimal
    stock: int
    availability: str


class ProductSummary(TypedDict):
    product_id: str
    name: str
    brand: str
    category: str
    price_from: Decimal
    price_to: Decimal
    in_stock: bool
    variant_ids: list[str]


class ProductSearch(TypedDict):
    total: int
    products: list[ProductSummary]


class ProductDetail(TypedDict):
    product_id: str
    name: str
    brand: str
    category: str
    description: str
    price_from: Decimal
    price_to: Decimal
    variants: list[VariantOut]


class CategoryOut(TypedDict):
    category: str
    name: str
    products: int
    in_stock_products: int
    price_from: Decimal | None
    price_to: Decimal | None
    coupons: list[str]


class CategoryList(TypedDict):
    categories: list[CategoryOut]


class AvailabilityOut(TypedDict):
    variant_id: str
    product_id: str
    name: str
    label: str
    price: Decimal
    stock: int
    availability: str
    can_fulfil: bool


class AvailabilityList(TypedDict):
    quantity: int
    variants: list[AvailabilityOut]


class CustomerOut(TypedDict):
    customer_id: str
    name: str
    email: str
    phone: str
    default_address_id: str | None
    cart_units: int
    orders: int


class CustomerSearch(TypedDict):
    total: int
    customers: list[CustomerOut]


class CartLineOut(TypedDict):
    variant_id: str
    product_id: str
    name: str
    label: str
    category: str
    quantity: int
    unit_price: Decimal
    line_total: Decimal
    stock: int
    enough_stock: bool


class CartOut(TypedDict):
    customer_id: str
    items: list[CartLineOut]
    units: int
    subtotal: Decimal
    coupon_code: str | None
    discount: Decimal
    merchandise_total: Decimal
    shipping_options: dict[str, Decimal]
    total_with_standard_shipping: Decimal


class CartChange(TypedDict):
    customer_id: str
    variant_id: str
    quantity: int
    coupon_removed: str | None
    cart: CartOut


class CouponRemoved(TypedDict):
    customer_id: str
    removed_code: str
    cart: CartOut


class CouponOut(TypedDict):
    code: str
    description: str
    percent_off: int | None
    amount_off: Decimal | None
    min_subtotal: Decimal
    category: str | None
    once_per_customer: bool
    starts_at: str
    expires_at: str
    status: str
    used_by_customer: bool | None
    applies_to_cart: bool | None
    discount_on_cart: Decimal | None
    why_not: str | None


class CouponList(TypedDict):
    customer_id: str | None
    coupons: list[CouponOut]


class AddressOut(TypedDict):
    address_id: str
    customer_id: str
    label: str
    recipient: str
    line1: str
    city: str
    state: str
    postal_code: str
    is_default: bool


class AddressList(TypedDict):
    customer_id: str
    default_address_id: str | None
    addresses: list[AddressOut]


class DefaultChanged(AddressList):
    previous_default_id: str | None


class OrderSummary(TypedDict):
    order_id: str
    customer_id: str
    status: str
    placed_at: str
    units: int
    total: Decimal
    refunded: Decimal
    return_window: str
    return_by: str | None


class OrderList(TypedDict):
    customer_id: str
    total: int
    orders: list[OrderSummary]


class OrderLineOut(TypedDict):
    line_id: str
    variant_id: str
    product_id: str
    name: str
    category: str
    quantity: int
    unit_price: Decimal
    line_total: Decimal
    discount: Decimal
    returned: int
    returnable: int


class ReturnLineOut(TypedDict):
    variant_id: str
    quantity: int
    amount: Decimal


class ReturnOut(TypedDict):
    return_id: str
    order_id: str
    customer_id: str
    status: str
    reason: str
    amount: Decimal
    created_at: str
    refunded_at: str | None
    lines: list[ReturnLineOut]


class ReturnList(TypedDict):
    total: int
    returns: list[ReturnOut]


class OrderDetail(OrderSummary):
    shipping_method: str
    subtotal: Decimal
    coupon_code: str | None
    discount: Decimal
    shipping: Decimal
    address: AddressOut
    tracking_number: str | None
    shipped_at: str | None
    delivered_at: str | None
    cancelled_at: str | None
    cancel_reason: str | None
    lines: list[OrderLineOut]
    returns: list[ReturnOut]


class Cancellation(TypedDict):
    order: OrderDetail
    refund_amount: Decimal
    restocked: dict[str, int]


class StatusChange(TypedDict):
    order_id: str
    previous_status: str
    status: str
    tracking_number: str | None
    shipped_at: str | None
    delivered_at: str | None
    return_by: str | None


class RefundResult(TypedDict):
    return_id: str
    order_id: str
    status: str
    amount: Decimal
    order_total: Decimal
    order_refunded: Decimal
    restocked: dict[str, int]
    lines: list[ReturnLineOut]


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
# Rows are named tuples typed as the ORM types them; a row a tool changes is written with
# ctx.sql.update, which (as the ORM did) writes only the columns whose value differs.
# Writes keep the ORM's order (the change log's bytes record which table was written
# first): the ORM wrote a variant's new stock when the tool read the next variant, and the
# last one in its final flush, after the cart's, the order's and the return's rows.
customers_t, addresses_t, products_t = Customer.__table__, Address.__table__, Product.__table__
variants_t, coupons_t, carts_t = Variant.__table__, Coupon.__table__, Cart.__table__
orders_t, lines_t, returns_t = Order.__table__, OrderLine.__table__, ReturnRequest.__table__
cart_items_t = CartItem.__table__

CUSTOMERS = Query(select(customers_t).order_by(Customer.id))
CUSTOMER_NAMES = Query(select(Customer.name).order_by(Customer.id))
DEFAULT_ADDRESS = Query(
    select(Address.id)
    .where(Address.customer_id == bindparam("customer_id"), Address.is_default.is_(True))
    .order_by(Address.id)
)
CART_UNITS = Query(
    select(func.sum(CartItem.quantity)).where(CartItem.customer_id == bindparam("customer_id"))
)
ORDER_COUNT = Query(select(func.count()).where(Order.customer_id == bindparam("customer_id")))

ADDRESS = Query(select(addresses_t).where(Address.id == bindparam("id")))
ADDRESSES = Query(  # a customer's, the default first (Customer.addresses' order)
    select(addresses_t)
    .where(Address.customer_id == bindparam("customer_id"))
    .order_by(Address.is_default.desc(), Address.id)
)
ALL_ADDRESSES = Query(select(addresses_t).order_by(Address.id))
ADDRESSES_BY_CUSTOMER = Query(  # every customer's ADDRESSES, one customer after another
    select(addresses_t).order_by(Address.customer_id, Address.is_default.desc(), Address.id)
)

PRODUCTS = Query(select(products_t).order_by(Product.id))
PRODUCT_NAME = Query(select(Product.name).where(Product.id == bindparam("id")))
PRODUCT_WORDS = Query(select(Product.name, Product.brand).order_by(Product.id))
VARIANT_STOCK = Query(select(Variant.id, Variant.stock).where(Variant.id == bindparam("id")))
VARIANTS_OF = Query(  # a product's variants (Product.variants' order)
    select(variants_t).where(Variant.product_id == bindparam("product_id")).order_by(Variant.id)
)
VARIANTS_OF_PRODUCTS = Query(
    select(variants_t)
    .where(Variant.product_id.in_(bindparam("product_ids", expanding=True)))
    .order_by(Variant.id)
)
VARIANTS = Query(  # every variant with its product's category
    select(variants_t, Product.category)
    .join(products_t, Product.id == Variant.product_id)
    .order_by(Variant.id)
)

COUPON = Query(select(coupons_t).where(Coupon.code == bindparam("code")))
COUPONS = Query(select(coupons_t).order_by(Coupon.code))
CATEGORY_COUPONS = Query(  # a category's, and the store-wide ones
    select(coupons_t)
    .where((Coupon.category == bindparam("category")) | Coupon.category.is_(None))
    .order_by(Coupon.code)
)
ACTIVE_CATEGORY_COUPONS = Query(
    select(Coupon.code, Coupon.category)
    .where(
        Coupon.category.is_not(None),
        Coupon.starts_at <= bindparam("now"),
        Coupon.expires_at > bindparam("now"),
    )
    .order_by(Coupon.code)
)
USED_ON_ALL = Query(  # every live order that used a coupon: USED_ON's, of every customer
    select(Order.customer_id, Order.coupon_code, Order.id)
    .where(Order.coupon_code.is_not(None), Order.status != "cancelled")
    .order_by(Order.id)
)
USED_ON = Query(  # the live order of a customer that used a coupon
    select(Order.id)
    .where(
        Order.customer_id == bindparam("customer_id"),
        Order.coupon_code == bindparam("code"),
        Order.status != "cancelled",
    )
    .order_by(Order.id)
    .limit(1)
)

CART = Query(select(carts_t).where(Cart.customer_id == bindparam("customer_id")))
CART_COUPONS = Query(select(Cart.customer_id, Cart.coupon_code).order_by(Cart.customer_id))
_CART_ITEM = (  # a cart item's columns, with its variant's and product's
    CartItem.id,
    CartItem.variant_id,
    CartItem.quantity,
    Variant.product_id,
    Variant.label,
    Variant.price,
    Variant.stock,
    Product.name,
    Product.category,
)
_CART_ITEM_JOINS = cart_items_t.join(variants_t, Variant.id == CartItem.variant_id).join(
    products_t, Product.id == Variant.product_id
)
CART_ITEMS = Query(  # a cart's items with their variant and product (Cart.items' order)
    select(*_CART_ITEM)
    .select_from(_CART_ITEM_JOINS)
    .where(CartItem.customer_id == bindparam("customer_id"))
    .order_by(CartItem.id)
)
CART_ITEMS_BY_CUSTOMER = Query(  # every cart's CART_ITEMS, one customer after another
    select(CartItem.customer_id, *_CART_ITEM)
    .select_from(_CART_ITEM_JOINS)
    .order_by(CartItem.customer_id, CartItem.id)
)
CART_ITEM = Query(
    select(CartItem.id, CartItem.quantity).where(
        CartItem.customer_id == bindparam("customer_id"),
        CartItem.variant_id == bindparam("variant_id"),
    )
)
DELETE_CART_ITEM = Query(delete(CartItem).where(CartItem.id == bindparam("id")))

ORDER = Query(select(orders_t).where(Order.id == bindparam("id")))
ORDERS = Query(select(orders_t).order_by(Order.id))
ORDER_UNITS = Query(
    select(func.sum(OrderLine.quantity)).where(OrderLine.order_id == bindparam("order_id"))
)
ORDER_LINES = Query(  # an order's lines (Order.lines' order)
    select(lines_t).where(OrderLine.order_id == bindparam("order_id")).order_by(OrderLine.id)
)
ORDERED_VARIANTS = Query(select(OrderLine.order_id, OrderLine.variant_id).order_by(OrderLine.id))

RETURN = Query(select(returns_t).where(ReturnRequest.id == bindparam("id")))
ORDER_RETURNS = Query(
    select(returns_t)
    .where(ReturnRequest.order_id == bindparam("order_id"))
    .order_by(ReturnRequest.id)
)
OPEN_RETURNS = Query(
    select(returns_t).where(ReturnRequest.status == "requested").order_by(ReturnRequest.id)
)
RETURN_LINES = Query(  # a return's lines (ReturnRequest.lines' order)
    select(ReturnLine.variant_id, ReturnLine.quantity, ReturnLine.amount)
    .where(ReturnLine.return_id == bindparam("return_id"))
    .order_by(ReturnLine.id)
)


@functools.cache
def _products_matching(by_text: bool, by_category: bool) -> Query:
    """Products by name, optionally matching a text and a category: search_products'."""
    stmt = select(products_t)
    if by_text:
        stmt = stmt.where(
            contains(
                bindparam("pattern"), Product.name, Product.brand, Product.description, Product.id
            )
        )
    if by_category:
        stmt = stmt.where(Product.category == bindparam("category"))
    return Query(stmt.order_by(Product.name, Product.id))


@functools.cache
def _customers_matching(by_text: bool) -> tuple[Query, Query]:
    """How many customers match a text, and the first ``limit`` by name: search_customers'."""
    stmt = select(customers_t)
    if by_text:
        stmt = stmt.where(
            contains(
                bindparam("pattern"), Customer.name, Customer.email, Customer.phone, Customer.id
            )
        )
    count = Query(select(func.count()).select_from(stmt.subquery()))
    rows = Query(stmt.order_by(Customer.name, Customer.id).limit(bindparam("limit")))
    return count, rows


@functools.cache
def _orders_matching(by_status: bool) -> tuple[Query, Query]:
    """How many of a customer's orders match, and the newest ``limit``: list_orders'."""
    stmt = select(orders_t).where(Order.customer_id == bindparam("customer_id"))
    if by_status:
        stmt = stmt.where(Order.status == bindparam("status"))
    count = Query(select(func.count()).select_from(stmt.subquery()))
    rows = Query(stmt.order_by(Order.placed_at.desc(), Order.id.desc()).limit(bindparam("limit")))
    return count, rows


@functools.cache
def _returns_matching(by_customer: bool, by_order: bool, by_status: bool) -> tuple[Query, Query]:
    """How many returns match, and the newest ``limit``: list_returns'."""
    stmt = select(returns_t)
    if by_customer:
        stmt = stmt.where(ReturnRequest.customer_id == bindparam("customer_id"))
    if by_order:
        stmt = stmt.where(ReturnRequest.order_id == bindparam("order_id"))
    if by_status:
        stmt = stmt.where(ReturnRequest.status == bindparam("status"))
    count = Query(select(func.count()).select_from(stmt.subquery()))
    rows = Query(
        stmt.order_by(ReturnRequest.created_at.desc(), ReturnRequest.id.desc()).limit(
            bindparam("limit")
        )
    )
    return count, rows


# ----------------------------------------------------------------- helpers
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


def _text(value: str, name: str) -> str:
    text = " ".join(value.split())
    if not text:
        raise InvalidArgument(f"{name} must not be empty or blank.")
    return text


def _variant_name(ctx: ToolContext, v: Any) -> str:
    return f"{ctx.sql.scalar(PRODUCT_NAME, id=v.product_id)} ({v.label})"


def _variant_out(v: Any) -> VariantOut:
    return {
        "variant_id": v.id,
        "sku": v.sku,
        "label": v.label,
        "price": v.price,
        "stock": v.stock,
        "availability": availability(v.stock),
    }


def _summary(p: Any, variants: Sequence[Any]) -> ProductSummary:
    """A product with its ``variants`` (by id)."""
    prices = [v.price for v in variants]
    return {
        "product_id": p.id,
        "name": p.name,
        "brand": p.brand,
        "category": p.category,
        "price_from": min(prices, default=ZERO),
        "price_to": max(prices, default=ZERO),
        "in_stock": any(v.stock > 0 for v in variants),
        "variant_ids": [v.id for v in variants],
    }


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


def _item_name(i: Any) -> str:
    """A cart item's variant as an order line names it: "<product> (<label>)"."""
    return f"{i.name} ({i.label})"


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


def _address_list(ctx: ToolContext, customer_id: str) -> AddressList:
    rows = _addresses(ctx, customer_id)
    default = next((a.id for a in rows if a.is_default), None)
    return {
        "customer_id": customer_id,
        "default_address_id": default,
        "addresses": [_address_out(a) for a in rows],
    }


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


def _return_lines(ctx: ToolContext, return_id: str) -> list[ReturnLineOut]:
    return [
        {"variant_id": x.variant_id, "quantity": x.quantity, "amount": x.amount}
        for x in ctx.sql.all(RETURN_LINES, return_id=return_id)
    ]


def _return_out(ctx: ToolContext, r: Any) -> ReturnOut:
    return {
        "return_id": r.id,
        "order_id": r.order_id,
        "customer_id": r.customer_id,
        "status": r.status,
        "reason": r.reason,
        "amount": r.amount,
        "created_at": r.created_at.isoformat(timespec="minutes"),
        "refunded_at": _stamp(r.refunded_at),
        "lines": _return_lines(ctx, r.id),
    }


def _order_detail(ctx: ToolContext, o: Any) -> OrderDetail:
    returns = ctx.sql.all(ORDER_RETURNS, order_id=o.id)
    return {
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


def _coupon_status(ctx: ToolContext, c: Any) -> str:
    now = _now(ctx)
    if c.starts_at > now:
        return "not_started"
    return "expired" if c.expires_at <= now else "active"


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


def _take(ctx: ToolContext, item: Any) -> None:
    """Take a checked-out cart item's units from its variant's stock and it from the cart."""
    ctx.sql.update_by_key(Variant, item.variant_id, stock=item.stock - item.quantity)
    ctx.sql.run(DELETE_CART_ITEM, id=item.id)


def _restock(ctx: ToolContext, variant_id: str, units: int) -> int:
    v = ctx.sql.one(VARIANT_STOCK, id=variant_id)
    return ctx.sql.update(Variant, v, stock=v.stock + units).stock


# -------------------------------------------------------- example values
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


SUFFIXES = frozenset({"Pro", "Plus", "Lite", "Max", "II", "Set"})


def _product_word(ctx: ToolContext, rng: random.Random) -> str:
    """A word a shopper would search for: one of a product's item words, not its brand."""
    rows = ctx.sql.all(PRODUCT_WORDS)
    name, brand = rows[rng.randrange(len(rows))]
    words = [
        w
        for w in name.removeprefix(brand).split()
        if len(w) > 3 and w[0].isalpha() and w not in SUFFIXES
    ]
    return words[-1] if words else name


def _customer_word(ctx: ToolContext, rng: random.Random) -> str:
    names = ctx.sql.scalars(CUSTOMER_NAMES)
    return rng.choice(names).split()[-1]


# ------------------------------------------------------------------- tools
@server.tool(
    returns=("product", "variant", "category"),
    phrasings=[
        "Find {query} products",
        "Show me {category} items between {min_price} and {max_price}",
        "Search the catalog for {query} in {category}",
        "Which {query} products cost at most {max_price}?",
    ],
    examples={
        "query": _product_word,
        "min_price": [10, 20, 50],
        "max_price": [50, 100, 200, 500],
    },
)
def search_products(
    ctx: ToolContext,
    query: SearchText | None = None,
    category: Category | None = None,
    min_price: Price | None = None,
    max_price: Price | None = None,
    in_stock_only: bool = False,
    sort: Literal["name", "price_low_to_high", "price_high_to_low"] = "name",
    limit: Limit = 10,
) -> ProductSearch:
    """Search the catalog by words, category, price range and stock; at most `limit` results.

    A product matches a price range when one of its variants is priced inside it.

    Args:
        query: Case-insensitive words in the product name, brand or description, or a product
            id, such as "headphones", "Sonara" or "prd_0042"; leave it out to browse.
        category: Only this category, such as "kitchen" or "shoes" (see list_categories).
        min_price: Lowest variant price to include, such as 20 or "19.99".
        max_price: Highest variant price to include, such as 100 or "149.99".
        in_stock_only: Only products with at least one variant in stock, such as true.
        sort: "name" (default), "price_low_to_high" or "price_high_to_low".
        limit: Maximum number of products to return (1-50), such as 10.

    Returns:
        {"total": 14, "products": [{"product_id": "prd_0042", "name": "Sonara Wireless
        Earbuds", "category": "electronics", "price_from": "59.99", "price_to": "59.99",
        "in_stock": true, "variant_ids": ["var_00101", "var_00102"]}, ...]}; total counts
        every match.
    """
    text = (query or "").strip()
    params: dict[str, Any] = {}
    if text:
        params["pattern"] = search_pattern(text)
    if category is not None:
        params["category"] = category
    low, high = min_price, max_price
    if low is not None and high is not None and low > high:
        raise InvalidArgument(
            f"min_price {low} is above max_price {high}; give the lower bound as min_price."
        )
    products = ctx.sql.all(_products_matching(bool(text), category is not None), **params)
    ctx.spend(len(products), "products", hint="add words to query or pick a category")
    variants: dict[str, list[Any]] = {p.id: [] for p in products}
    for v in ctx.sql.all(VARIANTS_OF_PRODUCTS, product_ids=list(variants)):
        variants[v.product_id].append(v)
    found: list[tuple[Any, Decimal]] = []
    for p in products:
        prices = [
            v.price
            for v in variants[p.id]
            if (low is None or v.price >= low)
            and (high is None or v.price <= high)
            and (not in_stock_only or v.stock > 0)
        ]
        if prices:
            found.append((p, min(prices)))
    if sort == "price_low_to_high":
        found.sort(key=lambda pair: (pair[1], pair[0].name, pair[0].id))
    elif sort == "price_high_to_low":
        found.sort(key=lambda pair: (-pair[1], pair[0].name, pair[0].id))
    return {
        "total": len(found),
        "products": [_summary(p, variants[p.id]) for p, _ in found[:limit]],
    }


@server.tool(
    returns=("product", "variant", "category"),
    phrasings=[
        "Show me product {product_id}",
        "Which sizes and colours does {product_id} come in?",
    ],
)
def get_product(ctx: ToolContext, product_id: ProductRow) -> ProductDetail:
    """Get one product with every variant's price, stock and availability.

    Args:
        product_id: The product, such as "prd_0042" (search_products finds it by name).

    Returns:
        {"product_id": "prd_0042", "name": "Northway Rain Jacket", "category": "clothing",
        "description": "...", "variants": [{"variant_id": "var_00117", "sku":
        "NRJ-00117", "label": "Navy / M", "price": "129.99", "stock": 3, "availability":
        "low_stock"}, ...]}; availability is "in_stock", "low_stock" (under 5) or
        "out_of_stock".
    """
    p = product_id
    variants = ctx.sql.all(VARIANTS_OF, product_id=p.id)
    summary = _summary(p, variants)
    return {
        "product_id": p.id,
        "name": p.name,
        "brand": p.brand,
        "category": p.category,
        "description": p.description,
        "price_from": summary["price_from"],
        "price_to": summary["price_to"],
        "variants": [_variant_out(v) for v in variants],
    }


@server.tool(
    returns=("category", "coupon"),
    phrasings=["What categories does the shop have?", "List the product categories"],
)
def list_categories(ctx: ToolContext) -> CategoryList:
    """List the catalog's categories with product counts, price ranges and current coupons.

    Returns:
        {"categories": [{"category": "kitchen", "name": "Kitchen", "products": 11,
        "in_stock_products": 10, "price_from": "19.99", "price_to": "449.99", "coupons":
        ["KITCHEN10"]}, ...]}; coupons lists active coupons for that category only.
    """
    variants: dict[str, list[Any]] = {}
    for v in ctx.sql.all(VARIANTS):
        variants.setdefault(v.product_id, []).append(v)
    products: dict[str, list[str]] = {slug: [] for slug in CATEGORIES}
    for p in ctx.sql.all(PRODUCTS):
        products.setdefault(p.category, []).append(p.id)
    codes: dict[str, list[str]] = {slug: [] for slug in CATEGORIES}
    for c in ctx.sql.all(ACTIVE_CATEGORY_COUPONS, now=_now(ctx)):
        codes.setdefault(c.category, []).append(c.code)
    out: list[CategoryOut] = []
    for slug, name in CATEGORIES.items():
        ids = products[slug]
        prices = [v.price for pid in ids for v in variants.get(pid, [])]
        out.append(
            {
                "category": slug,
                "name": name,
                "products": len(ids),
                "in_stock_products": sum(
                    1 for pid in ids if any(v.stock > 0 for v in variants.get(pid, []))
                ),
                "price_from": min(prices, default=None),
                "price_to": max(prices, default=None),
                "coupons": codes[slug],
            }
        )
    return {"categories": out}


@server.tool(
    returns=("variant", "product"),
    phrasings=[
        "Is {variant_ids} in stock?",
        "Can I get {quantity} of {variant_ids}?",
        "Check the stock of {variant_ids}",
    ],
    examples={"quantity": [1, 2, 3, 5]},
)
def check_availability(
    ctx: ToolContext, variant_ids: VariantIds, quantity: Quantity = 1
) -> AvailabilityList:
    """Check how many units of some variants are in stock and whether `quantity` can be had.

    Args:
        variant_ids: The variants, such as ["var_00117", "var_00118"] (get_product lists a
            product's variants).
        quantity: How many units the customer wants of each (1-10), such as 2.

    Returns:
        {"quantity": 2, "variants": [{"variant_id": "var_00117", "name": "Northway Rain
        Jacket", "label": "Navy / M", "price": "129.99", "stock": 3, "availability":
        "low_stock", "can_fulfil": true}, ...]}.
    """
    seen: set[str] = set()
    out: list[AvailabilityOut] = []
    for v in variant_ids:
        if v.id in seen:
            continue
        seen.add(v.id)
        out.append(
            {
                "variant_id": v.id,
                "product_id": v.product_id,
                "name": ctx.sql.scalar(PRODUCT_NAME, id=v.product_id),
                "label": v.label,
                "price": v.price,
                "stock": v.stock,
                "availability": availability(v.stock),
                "can_fulfil": v.stock >= quantity,
            }
        )
    return {"quantity": quantity, "variants": out}


@server.tool(
    returns=("customer", "address"),
    phrasings=["Find the customer {query}", "Look up customer {query} for me"],
    examples={"query": _customer_word},
)
def search_customers(ctx: ToolContext, query: SearchText, limit: Limit = 10) -> CustomerSearch:
    """Find customers by name, email, phone or id, ordered by name.

    Args:
        query: Case-insensitive text, such as "Garcia", "maria.garcia@gmail.com" or
            "cus_004".
        limit: Maximum number of customers to return (1-50), such as 10.

    Returns:
        {"total": 2, "customers": [{"customer_id": "cus_004", "name": "Maria Garcia",
        "email": "maria.garcia@gmail.com", "default_address_id": "adr_0007",
        "cart_units": 3, "orders": 5, ...}]}.
    """
    text = query.strip()
    params: dict[str, Any] = {"pattern": search_pattern(text)} if text else {}
    count, matching = _customers_matching(bool(text))
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(matching, limit=limit, **params)
    out: list[CustomerOut] = []
    for c in rows:
        default = ctx.sql.scalar(DEFAULT_ADDRESS, customer_id=c.id)
        units = ctx.sql.scalar(CART_UNITS, customer_id=c.id)
        orders = ctx.sql.scalar(ORDER_COUNT, customer_id=c.id)
        out.append(
            {
                "customer_id": c.id,
                "name": c.name,
                "email": c.email,
                "phone": c.phone,
                "default_address_id": default,
                "cart_units": int(units or 0),
                "orders": int(orders or 0),
            }
        )
    return {"total": total, "customers": out}


@server.tool(
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


@server.tool(
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


@server.tool(
    returns=("address", "customer"),
    phrasings=[
        "Where can {customer_id} get orders shipped?",
        "List the addresses of {customer_id}",
    ],
)
def list_addresses(ctx: ToolContext, customer_id: CustomerRow) -> AddressList:
    """List a customer's saved addresses, the default first.

    Args:
        customer_id: The customer, such as "cus_004".

    Returns:
        {"customer_id": "cus_004", "default_address_id": "adr_0007", "addresses":
        [{"address_id": "adr_0007", "label": "home", "recipient": "Maria Garcia", "line1":
        "412 Oak St", "city": "Springfield", "state": "IL", "postal_code": "62704",
        "is_default": true}, ...]}.
    """
    return _address_list(ctx, customer_id.id)


@server.tool(
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


@server.tool(
    returns=("order", "variant", "product", "address", "customer", "return", "coupon"),
    phrasings=["Show me order {order_id}", "Where is my order {order_id}?"],
)
def get_order(ctx: ToolContext, order_id: OrderRow) -> OrderDetail:
    """Get one order: lines, totals, coupon, address, shipping, status dates and returns.

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


@server.tool(
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


@server.tool(
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


@server.tool(
    writes=True,
    idempotent=True,
    returns=("variant", "customer", "coupon"),
    phrasings=[
        "Change {variant_id} in {customer_id}'s cart to {quantity}",
        "Make it {quantity} of {variant_id} in the cart of {customer_id}",
    ],
    examples={"quantity": [0, 1, 2, 3]},
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


@server.tool(
    writes=True,
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


@server.tool(
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


@server.tool(
    writes=True,
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


@server.tool(
    writes=True,
    idempotent=True,
    returns=("address", "customer"),
    normalise={"line1": "strip", "city": "strip", "recipient": "strip"},
    phrasings=[
        "Add a {label} address for {customer_id}: {recipient}, {line1}, {city}, {state} "
        "{postal_code}",
        "Save {line1}, {city} {state} {postal_code} as an address of {customer_id} for {recipient}",
        "Add {line1}, {city}, {state} {postal_code} to {customer_id}'s addresses and make it "
        "the default: {make_default}",
    ],
    examples={
        "recipient": ["Maria Garcia", "James Carter", "Front Desk"],
        "line1": [a[0] for a in NEW_ADDRESSES],
        "city": [a[1] for a in NEW_ADDRESSES],
        "state": [a[2] for a in NEW_ADDRESSES],
        "postal_code": [a[3] for a in NEW_ADDRESSES],
    },
)
def add_address(
    ctx: ToolContext,
    customer_id: CustomerRow,
    label: AddressLabel,
    recipient: Annotated[str, Field(max_length=80)],
    line1: Annotated[str, Field(max_length=120)],
    city: Annotated[str, Field(max_length=60)],
    state: Annotated[str, Field(pattern=r"^[A-Za-z]{2}$", max_length=2)],
    postal_code: Annotated[str, Field(pattern=r"^[0-9]{5}$", max_length=5)],
    make_default: bool = False,
) -> AddressOut:
    """Save a US shipping address for a customer; their first address becomes the default.

    Args:
        customer_id: The customer, such as "cus_004".
        label: "home", "work" or "other".
        recipient: Who receives the parcels, such as "Maria Garcia".
        line1: Street and number, such as "500 Congress Ave, Suite 200".
        city: Such as "Austin".
        state: Two-letter state code, such as "TX".
        postal_code: Five-digit ZIP code, such as "78701".
        make_default: Make it the default shipping address, such as true.

    Returns:
        {"address_id": "adr_0112", "customer_id": "cus_004", "label": "work", "line1":
        "500 Congress Ave", "city": "Austin", "state": "TX", "postal_code": "78701",
        "is_default": false, ...}.
    """
    c = customer_id
    street, town, who = _text(line1, "line1"), _text(city, "city"), _text(recipient, "recipient")
    mine = _addresses(ctx, c.id)
    for a in mine:
        if a.line1.casefold() == street.casefold() and a.postal_code == postal_code:
            raise _clash(
                "duplicate_address",
                f"{c.id} already has this address as {a.id} ({a.line1}, {a.city} "
                f"{a.postal_code}); use {a.id} instead of saving it again.",
            )
    default = make_default or not mine
    if default:
        for a in sorted(mine, key=lambda a: a.id):  # the ORM wrote rows by key
            ctx.sql.update(Address, a, is_default=False)
    address_id = next_id(ctx, Address.id, "adr", 4)
    ctx.sql.insert(
        Address,
        id=address_id,
        customer_id=c.id,
        label=label,
        recipient=who,
        line1=street,
        city=town,
        state=state.upper(),
        postal_code=postal_code,
        is_default=default,
        created_at=_now(ctx),
    )
    return _address_out(ctx.sql.one(ADDRESS, id=address_id))


@server.tool(
    writes=True,
    idempotent=True,
    returns=("address", "customer"),
    phrasings=[
        "Make {address_id} the default address of {customer_id}",
        "Ship {customer_id}'s orders to {address_id} by default",
    ],
)
def set_default_address(
    ctx: ToolContext, customer_id: CustomerRow, address_id: AddressRow
) -> DefaultChanged:
    """Make one of a customer's saved addresses their default shipping address.

    Args:
        customer_id: The customer, such as "cus_004".
        address_id: One of their addresses, such as "adr_0008" (see list_addresses).

    Returns:
        {"customer_id": "cus_004", "default_address_id": "adr_0008",
        "previous_default_id": "adr_0007", "addresses": [...]}.
    """
    c, address = customer_id, address_id
    _mine(ctx, c, address, "be their default")
    if address.is_default:
        raise _clash(
            "already_default",
            f"{address.id} is already {c.id}'s default address; nothing to change.",
        )
    previous = None
    mine = _addresses(ctx, c.id)
    for a in mine:
        if a.is_default:
            previous = a.id
    for a in sorted(mine, key=lambda a: a.id):  # the ORM wrote rows by key
        ctx.sql.update(Address, a, is_default=a.id == address.id)
    return {**_address_list(ctx, c.id), "previous_default_id": previous}


@server.tool(
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
    c, address = customer_id, address_id
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
    subtotal = sum((t for _, t in lines), ZERO)
    discount = coupon_discount(coupon, lines) if coupon is not None else ZERO
    eligible = [
        t if coupon is not None and coupon.category in (None, cat) else ZERO for cat, t in lines
    ]
    shares = allocate(discount, eligible)
    shipping = shipping_cost(shipping_method, subtotal - discount)
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
        total=subtotal - discount + shipping,
        refunded=ZERO,
        coupon_code=coupon.code if coupon is not None else None,
        tracking_number=None,
        placed_at=now,
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
    return _order_detail(ctx, ctx.sql.one(ORDER, id=order_id))


@server.tool(
    writes=True,
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
    return {
        "order": _order_detail(ctx, o),
        "refund_amount": o.total,
        "restocked": dict(sorted(restocked.items())),
    }


@server.tool(
    writes=True,
    idempotent=True,
    returns="order",
    phrasings=["Mark order {order_id} as {status}", "Order {order_id} has been {status}"],
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


@server.tool(
    writes=True,
    returns=("return", "order", "variant", "customer"),
    phrasings=[
        "Return {variant_ids} from order {order_id}, reason: {reason}",
        "I want to send back {variant_ids} of {order_id} because it is {reason}",
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
    (process_refund).

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
    by_variant = {line.variant_id: line for line in ctx.sql.all(ORDER_LINES, order_id=o.id)}
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
    total = ZERO
    for line, units in wanted:
        amount = refund_for(line.line_total - line.discount, line.quantity, line.returned, units)
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


@server.tool(
    writes=True,
    idempotent=True,
    returns=("return", "order", "variant"),
    phrasings=["Refund return {return_id}", "The items of {return_id} arrived; pay the refund"],
)
def process_refund(ctx: ToolContext, return_id: ReturnRow) -> RefundResult:
    """Refund a requested return: its amount is paid back and its units go back in stock.

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
    restocked: dict[str, int] = {}
    for line in lines[:-1]:
        restocked[line.variant_id] = _restock(ctx, line.variant_id, line.quantity)
    order = ctx.sql.update(Order, order, refunded=order.refunded + ret.amount)
    ret = ctx.sql.update(ReturnRequest, ret, status="refunded", refunded_at=_now(ctx))
    for line in lines[-1:]:  # written after the order and the return, as the ORM's final flush
        restocked[line.variant_id] = _restock(ctx, line.variant_id, line.quantity)
    return {
        "return_id": ret.id,
        "order_id": order.id,
        "status": ret.status,
        "amount": ret.amount,
        "order_total": order.total,
        "order_refunded": order.refunded,
        "restocked": dict(sorted(restocked.items())),
        "lines": _return_lines(ctx, ret.id),
    }


# --------------------------------------------------------------- entities
def _new_address(n: int) -> tuple[str, str, str, str]:
    line1, city, state, code = NEW_ADDRESSES[n % len(NEW_ADDRESSES)]
    return f"{line1}, Suite {100 + n}", city, state, code


@server.entity(
    "customer",
    key="customer_id",
    model=Customer,
    not_found="Call search_customers with the customer's name or email to find their id "
    "(such as 'cus_004').",
)
def _customers(ctx: ToolContext) -> list[dict[str, Any]]:
    """Customers, with what their requests would plausibly name: their default address,
    their cart's variants, a coupon code they would try on it (one that applies for most;
    for others one they already used, or one their cart does not qualify for yet), and an
    address to save (for some, one they have saved already)."""
    # every customer's cart items, addresses, cart coupon and coupons used read at once
    # (not per customer, nor per customer and coupon)
    items_of: dict[str, list[Any]] = {}
    for i in ctx.sql.all(CART_ITEMS_BY_CUSTOMER):
        items_of.setdefault(i.customer_id, []).append(i)
    addresses_of: dict[str, list[Any]] = {}
    for a in ctx.sql.all(ADDRESSES_BY_CUSTOMER):
        addresses_of.setdefault(a.customer_id, []).append(a)
    held_of = {customer_id: code for customer_id, code in ctx.sql.all(CART_COUPONS)}
    used: dict[tuple[str, str], str] = {}
    for customer_id, code, order_id in ctx.sql.all(USED_ON_ALL):
        used.setdefault((customer_id, code), order_id)  # the first, as USED_ON's
    now = _now(ctx)
    out = []
    coupons = ctx.sql.all(COUPONS)
    for c in ctx.sql.all(CUSTOMERS):
        n = int(c.id.rsplit("_", 1)[1])
        items = items_of.get(c.id, [])
        saved = addresses_of.get(c.id, [])
        if saved and n % 5 == 0:
            line1, city, state, code = (
                saved[0].line1,
                saved[0].city,
                saved[0].state,
                saved[0].postal_code,
            )
        else:
            line1, city, state, code = _new_address(n)
        record: dict[str, Any] = {
            "customer_id": c.id,
            "name": c.name,
            "query": c.name.split()[-1],
            "recipient": c.name,
            "line1": line1,
            "city": city,
            "state": state,
            "postal_code": code,
        }
        if saved:
            record["address_id"] = saved[0].id
        if items:
            record["variant_ids"] = [i.variant_id for i in items]
            problems = {
                k.code: _coupon_problem(ctx, k, c.id, items, now=now, used=used) for k in coupons
            }
            held = held_of.get(c.id)
            pools: dict[str, list[str]] = {"fits": [], "used": [], "short": [], "dated": []}
            for code, problem in problems.items():
                rule = problem[0] if problem is not None else ""
                if rule in ("coupon_expired", "coupon_not_started"):
                    pools["dated"].append(code)
                elif rule == "coupon_already_used":
                    pools["used"].append(code)
                elif rule in ("coupon_min_subtotal", "coupon_category"):
                    pools["short"].append(code)
                elif problem is None and code != held:
                    pools["fits"].append(code)
            if held is not None and n % 2 == 0:
                record["code"] = held
            else:
                pool = pools[("fits", "used", "short", "dated")[n % 4]] or pools["fits"]
                if pool:
                    record["code"] = pool[(n // 4) % len(pool)]
        out.append(record)
    return out


@server.entity(
    "product",
    key="product_id",
    model=Product,
    not_found="Call search_products with words of the product's name to find its id (such as "
    "'prd_0042').",
)
def _products(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(PRODUCTS)
    return [
        {
            "product_id": p.id,
            "name": p.name,
            "query": p.name.split()[-1],
            "category": p.category,
        }
        for p in rows
    ]


@server.entity(
    "variant",
    key="variant_id",
    model=Variant,
    not_found="Call get_product with the product's id to see its variants (such as 'var_00117').",
)
def _variants(ctx: ToolContext) -> list[dict[str, Any]]:
    """Every variant, sold-out ones too (customers ask about them)."""
    rows = ctx.sql.all(VARIANTS)
    return [
        {
            "variant_id": v.id,
            "product_id": v.product_id,
            "category": v.category,
            "availability": availability(v.stock),
        }
        for v in rows
    ]


@server.entity(
    "address",
    key="address_id",
    model=Address,
    not_found="Call list_addresses with the customer's id to see their addresses (such as "
    "'adr_0007').",
)
def _address_records(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(ALL_ADDRESSES)
    return [
        {
            "address_id": a.id,
            "customer_id": a.customer_id,
            "city": a.city,
            "role": "default" if a.is_default else "spare",
        }
        for a in rows
    ]


NEXT_STATUS = {"placed": "shipped", "shipped": "delivered"}


@server.entity(
    "order",
    key="order_id",
    model=Order,
    not_found="Call list_orders with the customer's id to find the order's id (such as "
    "'ord_00131').",
)
def _orders(ctx: ToolContext) -> list[dict[str, Any]]:
    """Orders with their state (order_status, return_window), the status they can move to
    next and the variants they contain."""
    variants: dict[str, list[str]] = {}
    for line in ctx.sql.all(ORDERED_VARIANTS):
        variants.setdefault(line.order_id, []).append(line.variant_id)
    out = []
    for o in ctx.sql.all(ORDERS):
        record: dict[str, Any] = {
            "order_id": o.id,
            "customer_id": o.customer_id,
            "order_status": o.status,
            "return_window": _window(ctx, o),
            "variant_ids": variants.get(o.id, []),
        }
        if o.status in NEXT_STATUS:
            record["status"] = NEXT_STATUS[o.status]
        out.append(record)
    return out


@server.entity(
    "return",
    key="return_id",
    model=ReturnRequest,
    not_found="Call list_returns with the customer's or the order's id to find the return's "
    "id (such as 'ret_0009').",
)
def _returns(ctx: ToolContext) -> list[dict[str, Any]]:
    """Returns still waiting for their refund."""
    rows = ctx.sql.all(OPEN_RETURNS)
    return [
        {
            "return_id": r.id,
            "order_id": r.order_id,
            "customer_id": r.customer_id,
            "status": r.status,
        }
        for r in rows
    ]


@server.entity(
    "coupon",
    key="code",
    model=Coupon,
    not_found="Call list_coupons to see the coupon codes (upper case, such as 'SAVE15').",
    case="upper",  # "save15" is the same coupon, as at any real checkout
)
def _coupons(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(COUPONS)
    out = []
    for c in rows:
        record: dict[str, Any] = {"code": c.code, "coupon_status": _coupon_status(ctx, c)}
        if c.category is not None:
            record["category"] = c.category
        out.append(record)
    return out


@server.entity("category", key="category")
def _categories(ctx: ToolContext) -> list[dict[str, Any]]:
    return [{"category": slug, "name": name} for slug, name in CATEGORIES.items()]


assert set(CATEGORIES) == set(get_args(CategoryName))
