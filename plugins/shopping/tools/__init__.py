"""The shopping server: an online shop's customer-support tools (Northwind Goods).

You are the shop's support assistant and act for customers: every cart, address, order and
return tool takes the customer's id (or an order's, which names its customer). Business
rules have names (``insufficient_stock``, ``coupon_min_subtotal``, ``return_window_closed``,
...; :data:`~.args.RULES` lists them); a refused action raises ``PreconditionFailed``
(``PermissionDenied`` for another customer's address, ``Conflict`` when the thing is already
so) with a message that starts with ``Rule '<name>' failed:`` and says what to do instead.
A refused call changes nothing: the session rolls the whole call back.

This module declares the server, the entity kinds it grounds requests on, and its 23 tools
in the order the model reads them (``TOOLS``; then the definitions and tools of later env
versions). The tools live by resource: :mod:`.catalog`, :mod:`.customers` (and their
addresses), :mod:`.cart` (and its coupon), :mod:`.orders`, :mod:`.returns`, :mod:`.wallet`
(saved cards, from ``prove/shopping-v3``); what they take (and the named rules) is in :mod:`.args`, what they return
in :mod:`.results`, the statements they run in :mod:`.queries`, and the pricing, checks and
result builders several of them share in :mod:`._common`. Docstrings are what the model
reads: keep examples concrete.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

from prove_gym.server import EnvVersion, Principal, Server, ToolContext

from ..models import (
    CATEGORIES,
    Address,
    Base,
    Coupon,
    Customer,
    Order,
    PaymentMethod,
    Product,
    ReturnRequest,
    Variant,
    availability,
)
from ..sampler import sample_shopping
from . import cart, catalog, customers, orders, returns, wallet
from ._common import (
    CONSEQUENCES,
    NEW_ADDRESSES,
    PAYMENT,
    _coupon_problem,
    _coupon_status,
    _now,
    _window,
)
from .args import RULES, RULES_V2, RULES_V3, CategoryName
from .queries import (
    ADDRESSES_BY_CUSTOMER,
    ALL_ADDRESSES,
    ALL_PAYMENT_METHODS,
    CART_COUPONS,
    CART_ITEMS_BY_CUSTOMER,
    COUPONS,
    CUSTOMERS,
    OPEN_RETURNS,
    ORDERED_VARIANTS,
    ORDERS,
    PRODUCTS,
    USED_ON_ALL,
    VARIANTS,
)

OUT_OF_SCOPE = (
    "Gift-wrap my order.",
    "Track the delivery van on a map.",
    "Price-match the headphones with another shop.",
    "Create a wish list for my birthday.",
    "Change the email address on my account.",
    "Chat with a customer service agent.",
    "Reserve this item in a store near me.",
    "Pay in four instalments.",
    "Write a review for the headphones I bought.",
    "Notify me when the blue sneakers are back in stock.",
    "Add a product to the catalog.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

CUSTOMER = 1
"""The env version from which a session acts for one customer."""

TAX_AND_RETURNS = (
    "Sales tax: an order placed now is charged sales tax on its merchandise (subtotal - "
    "discount; shipping is not taxed) at the base rate of the shipping address's state (such "
    "as TX 6.25%, CA 7.25%, NY 4%, OR 0%), rounded half up to the cent, so total = subtotal - "
    "discount + shipping + tax; orders placed before show tax 0.00. A return refunds the "
    "units' share of the tax too. A return with reason 'wrong_item' also refunds the order's "
    "shipping (once per order). Units of a 'damaged' return are written off when it is "
    "refunded: they do not go back in stock. checkout takes an optional idempotency_key: a "
    "retry with the same key returns the order already placed. "
)
"""What prove/shopping-v2 adds, in the words of its instructions (v3 keeps it all)."""

server = Server(
    "shopping",
    out_of_scope=OUT_OF_SCOPE,
    persona=("customer",),
    tasks_file=Path(__file__).parents[1] / "tasks.jsonl",
    version="1.3.0",
    env_versions=[
        EnvVersion(
            CUSTOMER,
            "acts for one customer (the task's principal): a call on another customer or "
            "their addresses, orders or returns is refused with permission_denied (rule "
            "not_your_customer); marking orders shipped or delivered and paying refunds are "
            "the shop's own operations (rule admin_only)",
            tasks_file=Path(__file__).parents[1] / "tasks_v1.jsonl",
            principal=Principal(
                "customer",
                "You are helping customer {id}, who is signed in: you act for them only. "
                "Calls on another customer, or their addresses, orders or returns, are "
                "refused (rule 'not_your_customer'). Marking an order shipped or delivered "
                "and paying a refund are done by the shop's warehouse once the parcel moves "
                "or the returned items arrive, not by you (rule 'admin_only').",
                admin_only=("update_order_status", "process_refund"),
            ),
        ),
        EnvVersion(
            CONSEQUENCES,
            "orders carry sales tax by the shipping address's state (get_order shows "
            "subtotal, discount, shipping, tax and total; a return refunds its units' share "
            "of the tax); a damaged return is written off, not restocked, when refunded; a "
            "return of a wrong item refunds the order's shipping too, once per order; "
            "checkout takes an idempotency key (rule idempotency_key_reused); keeps v1's "
            "customer principal",
            tasks_file=Path(__file__).parents[1] / "tasks_v2.jsonl",
            instructions=TAX_AND_RETURNS
            + "Rules: "
            + " ".join(f"{name}: {text}" for name, text in RULES_V2.items()),
        ),
        EnvVersion(
            PAYMENT,
            "checkout charges one of the customer's saved cards, exactly the order's total "
            "(rules payment_method_required, card_expired, not_your_payment_method, "
            "payment_method_removed); cards are saved, listed and removed with "
            "add_payment_method, list_payment_methods and remove_payment_method (test cards "
            "or tokens only, kept as brand and last four: rules card_number_invalid, "
            "test_card_only, duplicate_card); refunds go back to the card that paid; keeps "
            "v2's tax, returns, idempotency key and customer principal",
            tasks_file=Path(__file__).parents[1] / "tasks_v3.jsonl",
            instructions=TAX_AND_RETURNS
            + "Payment: checkout charges one of the customer's saved cards "
            "(payment_method_id, such as 'pm_0001': list_payment_methods shows them), "
            "exactly the order's total; a card is saved with add_payment_method from a test "
            "card number (such as 4242 4242 4242 4242) or a token (such as tok_visa) with "
            "its expiry and billing address, and only its brand and last four digits are "
            "kept. Refunds (cancellations and returns) go back to the card that paid. "
            "Rules: "
            + " ".join(f"{name}: {text}" for name, text in {**RULES_V2, **RULES_V3}.items()),
        ),
    ],
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

TOOLS = (
    catalog.search_products,
    catalog.get_product,
    catalog.list_categories,
    catalog.check_availability,
    customers.search_customers,
    cart.get_cart,
    cart.list_coupons,
    customers.list_addresses,
    orders.list_orders,
    orders.get_order,
    returns.list_returns,
    cart.add_to_cart,
    cart.update_cart_item,
    cart.remove_from_cart,
    cart.apply_coupon,
    cart.remove_coupon,
    customers.add_address,
    customers.set_default_address,
    orders.checkout,
    orders.checkout_v2,
    orders.cancel_order,
    orders.update_order_status,
    returns.request_return,
    returns.process_refund,
    orders.checkout_v3,
    wallet.list_payment_methods,
    wallet.add_payment_method,
    wallet.remove_payment_method,
)
"""The server's tools in the order the model reads them: this list decides it, not the modules'."""
RESOURCES = (cart, catalog, customers, orders, returns, wallet)
server.add_tools(TOOLS, declared_in=RESOURCES)


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
    owner="customer_id",
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
    owner="customer_id",
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
    owner="customer_id",
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
    "payment_method",
    key="payment_method_id",
    model=PaymentMethod,
    owner="customer_id",
    not_found="Call list_payment_methods with the customer's id to see their saved cards "
    "(such as 'pm_0001').",
)
def _payment_methods(ctx: ToolContext) -> list[dict[str, Any]]:
    """Saved cards (from prove/shopping-v3; no sampled state has one), removed ones too."""
    return [
        {
            "payment_method_id": p.id,
            "customer_id": p.customer_id,
            "status": "removed" if p.removed_at is not None else "on_file",
        }
        for p in ctx.sql.all(ALL_PAYMENT_METHODS)
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
