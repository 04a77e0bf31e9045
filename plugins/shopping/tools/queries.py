"""The statements the shopping tools read and write through (``ctx.sql``):
compiled once, run on SQLite directly."""

from __future__ import annotations

import functools

from sqlalchemy import bindparam, delete, func, select

from prove_gym.server import Query, contains

from ..models import (
    Address,
    Cart,
    CartItem,
    CheckoutKey,
    Coupon,
    Customer,
    Order,
    OrderLine,
    OrderPayment,
    PaymentMethod,
    Product,
    ReturnLine,
    ReturnRequest,
    Variant,
)

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
CHECKOUT_KEY = Query(  # a customer's idempotency key (from prove/shopping-v2)
    select(CheckoutKey.__table__).where(
        CheckoutKey.customer_id == bindparam("customer_id"),
        CheckoutKey.key == bindparam("key"),
    )
)
PAYMENT_METHOD = Query(  # a saved card by id (from prove/shopping-v3)
    select(PaymentMethod.__table__).where(PaymentMethod.id == bindparam("id"))
)
PAYMENT_METHODS = Query(  # a customer's cards on file (not removed), oldest first
    select(PaymentMethod.__table__)
    .where(
        PaymentMethod.customer_id == bindparam("customer_id"),
        PaymentMethod.removed_at.is_(None),
    )
    .order_by(PaymentMethod.id)
)
ALL_PAYMENT_METHODS = Query(select(PaymentMethod.__table__).order_by(PaymentMethod.id))
SAME_CARD = Query(  # a card on file of the customer with this brand, last four and expiry
    select(PaymentMethod.id)
    .where(
        PaymentMethod.customer_id == bindparam("customer_id"),
        PaymentMethod.brand == bindparam("brand"),
        PaymentMethod.last4 == bindparam("last4"),
        PaymentMethod.exp_month == bindparam("exp_month"),
        PaymentMethod.exp_year == bindparam("exp_year"),
        PaymentMethod.removed_at.is_(None),
    )
    .order_by(PaymentMethod.id)
)
ORDER_PAYMENT = Query(  # what paid an order placed under prove/shopping-v3, with its card
    select(
        OrderPayment.order_id,
        OrderPayment.payment_method_id,
        OrderPayment.amount,
        PaymentMethod.brand,
        PaymentMethod.last4,
    )
    .join(PaymentMethod, PaymentMethod.id == OrderPayment.payment_method_id)
    .where(OrderPayment.order_id == bindparam("order_id"))
)
SHIPPING_REFUNDS = Query(  # an order's returns that refund more than their lines: its shipping
    select(ReturnRequest.id)
    .where(
        ReturnRequest.order_id == bindparam("order_id"),
        ReturnRequest.amount
        != select(func.sum(ReturnLine.amount))
        .where(ReturnLine.return_id == ReturnRequest.id)
        .scalar_subquery(),
    )
    .order_by(ReturnRequest.id)
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
