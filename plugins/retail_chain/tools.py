"""The retail_chain server's 11 tools. Docstrings are what the model reads: keep examples concrete.

Every tool acts as one employee: in ``-v0`` the state's ``acting_employee``, from
``prove/retail_chain-v1`` the task's principal (:data:`EMPLOYEE`). A store manager may act only
in their own store, a regional manager in every store of their region. A call about any other store
is refused with ``PermissionDenied`` naming the rule ``store_scope``, the employee, their
role and the stores they may act in. Other business rules have names too
(``insufficient_stock``, ``case_pack``, ...): a refusal starts with ``Rule '<name>' failed:``
and says what would be allowed instead (:data:`RULES` lists them all; the server's
instructions carry them to the model). Every check runs before anything is written, and
the session rolls back a call that fails anyway.

``on_hand`` changes only through :func:`_move`, so every store's stock always equals what
restock orders delivered + transfers received - transfers sent - units sold (``models.py``).
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import bindparam, func, select, update

from prove_gym.server import (
    Bound,
    Entity,
    EnvVersion,
    InvalidArgument,
    PermissionDenied,
    PreconditionFailed,
    Principal,
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
    ROLE_LABELS,
    ZERO,
    ActingEmployee,
    Base,
    Employee,
    Inventory,
    Product,
    Region,
    RestockOrder,
    Sale,
    SaleLine,
    Store,
    Transfer,
)
from .sampler import sample_retail_chain

RULES: dict[str, str] = {
    "store_scope": "You act as one employee: a store manager may act only in their own store, "
    "a regional manager only in the stores of their region. Stock, shipments and sales of "
    "other stores belong to their own managers.",
    "insufficient_stock": "A sale or a transfer never takes more units than the store has on "
    "hand: on-hand stock is never negative.",
    "same_store": "A transfer moves stock between two different stores.",
    "case_pack": "Restock orders come in whole cases: the quantity is a multiple of the "
    "product's case_size.",
    "product_discontinued": "A discontinued product is sold down and may be transferred, but "
    "is never reordered from the supplier.",
    "open_order_exists": "A store has at most one open (not yet received) restock order per "
    "product: receive it before ordering more.",
    "already_received": "A transfer or a restock order arrives exactly once: a received one "
    "cannot be received again.",
    "sale_lines": "A sale names each product once, with one quantity (1 or more) per product.",
}


OUT_OF_SCOPE = (
    "Change the catalog price of the trail shoes.",
    "Hire a new cashier for the downtown store.",
    "Print price tags for the new arrivals.",
    "Schedule shifts for next week.",
    "Open a new store in the mall.",
    "Set up a loyalty programme for our customers.",
    "Run a clearance sale on the tents.",
    "Switch to a different supplier for water bottles.",
    "Forecast demand for the holiday season.",
    "Do a full stock count with a scanner.",
    "Give the downtown staff a raise.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

EMPLOYEE = 1
"""The env version from which a session acts for the task's employee (a core ``Principal``)
instead of the state's ``acting_employee`` row, and supplier orders are the head office's."""

server = Server(
    "retail_chain",
    out_of_scope=OUT_OF_SCOPE,
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.1.0",
    me=lambda ctx: {"employee": _me(ctx).id},
    env_versions=[
        EnvVersion(
            EMPLOYEE,
            "acts for the task's employee (the principal) instead of the state's acting "
            "employee: the same store_scope by role; placing restock orders with the "
            "supplier is the head office's (rule admin_only), receiving them stays the "
            "store's",
            tasks_file=Path(__file__).with_name("tasks_v1.jsonl"),
            principal=Principal(
                "employee",
                "You are signed in as employee {id} at the chain's back-office terminal and "
                "act as them: a store manager in their own store, a regional manager in the "
                "stores of their region (rule 'store_scope'; list_stores shows who you are "
                "and where you can act). Restock orders from the supplier are placed by the "
                "head office's buyers, not by stores (rule 'admin_only'): receive them when "
                "they arrive, and move stock between stores with transfers.",
                admin_only=("create_restock_order",),
            ),
        )
    ],
    base=Base,
    sampler=sample_retail_chain,
    description="Back-office tools of an outdoor-goods retail chain (Trailhead Outfitters): "
    "stores grouped in regions, the product catalog, each store's inventory, stock "
    "transfers between stores, restock orders from the supplier and store sales. You act "
    "as one employee, and every query and change is scoped to the stores your role allows.",
    instructions="Retail chain conventions: ids look like 'str_003' (store), 'reg_01' "
    "(region), 'emp_004' (employee), 'prd_0012' (product; its SKU looks like 'TH-10444'), "
    "'trf_00031' (transfer), 'ro_00512' (restock order), 'sal_00210' (sale). Prices are "
    'exact decimals shown as strings such as "129.95"; quantities are whole units. You act '
    "as the employee list_stores names: a store manager acts only in their own store, a "
    "regional manager in every store of their region (can_act in list_stores). A transfer "
    "leaves the sending store when it is created and arrives when the receiving store "
    "receives it; a restock order arrives when it is received. Refused calls name the rule "
    "that failed and change nothing. Rules: "
    + " ".join(f"{name}: {text}" for name, text in RULES.items()),
)

StoreRow = Annotated[Record[Store], Entity("store")]
ProductRow = Annotated[Record[Product], Entity("product")]
TransferRow = Annotated[Record[Transfer], Entity("transfer")]
OrderRow = Annotated[Record[RestockOrder], Entity("restock_order")]
ProductIds = Annotated[list[ProductRow], Field(min_length=1, max_length=10)]
Quantity = Annotated[int, Field(ge=1, le=1000)]
SearchText = Annotated[str, Field(max_length=200)]
Category = Literal[
    "footwear",
    "apparel",
    "camping",
    "hydration",
    "packs",
    "electronics",
    "climbing",
    "essentials",
    "food",
]


# ----------------------------------------------------------------- results
class EmployeeOut(TypedDict):
    employee_id: str
    name: str
    email: str
    role: str
    store_id: str
    store_name: str
    region_id: str
    region_name: str
    acts_in: list[str]


class StoreOut(TypedDict):
    store_id: str
    name: str
    city: str
    address: str
    region_id: str
    region_name: str
    manager: str
    can_act: bool


class StoreList(TypedDict):
    you: EmployeeOut
    total: int
    stores: list[StoreOut]


class ProductOut(TypedDict):
    product_id: str
    sku: str
    name: str
    brand: str
    category: str
    price: Decimal
    unit_cost: Decimal
    case_size: int
    discontinued: bool


class StockItem(TypedDict):
    product_id: str
    sku: str
    name: str
    category: str
    price: Decimal
    on_hand: int
    reorder_point: int
    low_stock: bool
    incoming: int
    discontinued: bool


class StoreInventory(TypedDict):
    store_id: str
    store_name: str
    total: int
    items: list[StockItem]


class StockAt(TypedDict):
    store_id: str
    store_name: str
    on_hand: int
    reorder_point: int
    low_stock: bool
    incoming: int
    can_act: bool


class ProductStock(TypedDict):
    product_id: str
    sku: str
    name: str
    case_size: int
    discontinued: bool
    region_id: str
    region_name: str
    total_on_hand: int
    stores: list[StockAt]


class TransferOut(TypedDict):
    transfer_id: str
    product_id: str
    product_name: str
    from_store_id: str
    to_store_id: str
    quantity: int
    status: str
    note: str
    created_by: str
    created_at: str
    received_by: str | None
    received_at: str | None


class OrderOut(TypedDict):
    order_id: str
    store_id: str
    product_id: str
    product_name: str
    quantity: int
    cases: int
    unit_cost: Decimal
    total_cost: Decimal
    status: str
    created_by: str
    ordered_at: str
    received_at: str | None


class Shipments(TypedDict):
    store_id: str
    store_name: str
    transfers: list[TransferOut]
    restock_orders: list[OrderOut]


class TransferResult(TransferOut):
    from_store_on_hand: int
    to_store_on_hand: int


class OrderResult(OrderOut):
    on_hand: int


class LineOut(TypedDict):
    product_id: str
    name: str
    quantity: int
    unit_price: Decimal
    line_total: Decimal


class SaleOut(TypedDict):
    sale_id: str
    store_id: str
    employee_id: str
    created_at: str
    items: int
    total: Decimal
    lines: list[LineOut]


class SaleResult(SaleOut):
    on_hand_after: dict[str, int]


class SalesList(TypedDict):
    store_id: str
    store_name: str
    days: int
    count: int
    units: int
    revenue: Decimal
    sales: list[SaleOut]


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
# Rows are named tuples typed as the ORM types them; a row a tool changes is written with
# _write, which (as the ORM did) writes only the columns whose value differs.
employees, stores, products = Employee.__table__, Store.__table__, Product.__table__
inventory, transfers, orders = Inventory.__table__, Transfer.__table__, RestockOrder.__table__
sales, regions = Sale.__table__, Region.__table__
# the acting employee, with their store's name and region
ME = Query(
    select(
        employees,
        Store.name.label("store_name"),
        Store.region_id,
        Region.name.label("region_name"),
    )
    .select_from(ActingEmployee.__table__)
    .join(employees, Employee.id == ActingEmployee.employee_id)
    .join(stores, Store.id == Employee.store_id)
    .join(regions, Region.id == Store.region_id)
    .where(ActingEmployee.id == 1)
)
EMPLOYEE_ROW = Query(  # ME for the session's principal (from EMPLOYEE on)
    select(
        employees,
        Store.name.label("store_name"),
        Store.region_id,
        Region.name.label("region_name"),
    )
    .join(stores, Store.id == Employee.store_id)
    .join(regions, Region.id == Store.region_id)
    .where(Employee.id == bindparam("id"))
)
STORE = Query(select(stores).where(Store.id == bindparam("id")))
REGION_STORES = Query(
    select(stores).where(Store.region_id == bindparam("region_id")).order_by(Store.id)
)
STORE_CITIES = Query(select(Store.city).order_by(Store.id))
REGION_NAME = Query(select(Region.name).where(Region.id == bindparam("id")))
STORE_MANAGER = Query(
    select(Employee.name)
    .where(Employee.store_id == bindparam("store_id"), Employee.role == "store_manager")
    .order_by(Employee.id)
)
STORE_MANAGERS = Query(
    select(Employee.store_id, Employee.name)
    .where(Employee.role == "store_manager")
    .order_by(Employee.id)
)
EMPLOYEES = Query(select(Employee.id, Employee.name, Employee.store_id).order_by(Employee.id))
PRODUCT = Query(select(products).where(Product.id == bindparam("id")))
PRODUCTS = Query(select(products).order_by(Product.id))
PRODUCT_NAMES = Query(select(Product.name).order_by(Product.id))
STOCK = Query(
    select(inventory).where(
        Inventory.store_id == bindparam("store_id"),
        Inventory.product_id == bindparam("product_id"),
    )
)
SET_ON_HAND = Query(
    update(Inventory)
    .where(
        Inventory.store_id == bindparam("store_id"),
        Inventory.product_id == bindparam("product_id"),
    )
    .values(on_hand=bindparam("on_hand"))
)
IN_STOCK_EVERYWHERE = Query(
    select(Inventory.product_id)
    .where(Inventory.store_id.in_(bindparam("store_ids", expanding=True)))
    .group_by(Inventory.product_id)
    .having(func.min(Inventory.on_hand) >= 5)
    .order_by(Inventory.product_id)
)
# a product's stock in every store of a region, with the store's name
REGION_STOCK = Query(
    select(inventory, Store.name.label("store_name"))
    .join(stores, Store.id == Inventory.store_id)
    .where(
        Inventory.product_id == bindparam("product_id"), Store.region_id == bindparam("region_id")
    )
    .order_by(Inventory.on_hand.desc(), Inventory.store_id)
)
INCOMING_TRANSFERS = Query(
    select(Transfer.product_id, func.sum(Transfer.quantity))
    .where(Transfer.to_store_id == bindparam("store_id"), Transfer.status == "in_transit")
    .group_by(Transfer.product_id)
    .order_by(Transfer.product_id)
)
INCOMING_ORDERS = Query(
    select(RestockOrder.product_id, func.sum(RestockOrder.quantity))
    .where(RestockOrder.store_id == bindparam("store_id"), RestockOrder.status == "ordered")
    .group_by(RestockOrder.product_id)
    .order_by(RestockOrder.product_id)
)
# a transfer with its product's name; a restock order with its product's name and case size
_TRANSFERS = select(transfers, Product.name.label("product_name")).join(
    products, Product.id == Transfer.product_id
)
_ORDERS = select(orders, Product.name.label("product_name"), Product.case_size).join(
    products, Product.id == RestockOrder.product_id
)
TRANSFERS_TO = Query(
    select(Transfer.id, Transfer.to_store_id, Transfer.product_id, Transfer.quantity)
    .where(
        Transfer.status == "in_transit",
        Transfer.to_store_id.in_(bindparam("store_ids", expanding=True)),
    )
    .order_by(Transfer.id)
)
STORE_ORDERS = Query(
    _ORDERS.where(
        RestockOrder.store_id == bindparam("store_id"),
        RestockOrder.status == bindparam("status"),
    )
    .order_by(RestockOrder.ordered_at.desc(), RestockOrder.id.desc())
    .limit(bindparam("limit"))
)
OPEN_ORDER = Query(
    select(RestockOrder.id, RestockOrder.quantity)
    .where(
        RestockOrder.store_id == bindparam("store_id"),
        RestockOrder.product_id == bindparam("product_id"),
        RestockOrder.status == "ordered",
    )
    .order_by(RestockOrder.id)
)
OPEN_ORDERS_OF = Query(
    select(RestockOrder.id, RestockOrder.store_id, RestockOrder.product_id)
    .where(
        RestockOrder.status == "ordered",
        RestockOrder.store_id.in_(bindparam("store_ids", expanding=True)),
    )
    .order_by(RestockOrder.id)
)
SALE = Query(select(sales).where(Sale.id == bindparam("id")))
SALE_LINES = Query(  # the lines of several sales, by line id (so by line id in each)
    select(
        SaleLine.sale_id,
        SaleLine.product_id,
        Product.name,
        SaleLine.quantity,
        SaleLine.unit_price,
        SaleLine.line_total,
    )
    .join(products, Product.id == SaleLine.product_id)
    .where(SaleLine.sale_id.in_(bindparam("sale_ids", expanding=True)))
    .order_by(SaleLine.id)
)
RECENT_SALES = Query(
    select(Sale.id, Sale.store_id)
    .where(
        Sale.store_id.in_(bindparam("store_ids", expanding=True)),
        Sale.created_at >= bindparam("since"),
    )
    .order_by(Sale.id)
)


@functools.cache
def _stores_matching(by_text: bool) -> Query:
    """Stores by id with their region's name, optionally matching a text: list_stores'."""
    stmt = select(stores, Region.name.label("region_name")).join(
        regions, Region.id == Store.region_id
    )
    if by_text:
        stmt = stmt.where(
            contains(
                bindparam("pattern"), Store.name, Store.city, Store.address, Region.name, Store.id
            )
        )
    return Query(stmt.order_by(Store.id))


@functools.cache
def _products_matching(by_text: bool, by_category: bool) -> Query:
    """Products by name, at most ``limit``, optionally matching a text and a category."""
    stmt = select(products)
    if by_text:
        stmt = stmt.where(
            contains(bindparam("pattern"), Product.name, Product.brand, Product.sku, Product.id)
        )
    if by_category:
        stmt = stmt.where(Product.category == bindparam("category"))
    return Query(stmt.order_by(Product.name, Product.id).limit(bindparam("limit")))


@functools.cache
def _stock_matching(by_text: bool, low_only: bool) -> tuple[Query, Query]:
    """How many of a store's stock rows match, and the first ``limit`` by product name (each
    with its product's columns): get_store_inventory's."""
    stmt = (
        select(
            inventory,
            Product.sku,
            Product.name,
            Product.category,
            Product.price,
            Product.discontinued,
        )
        .join(products, Product.id == Inventory.product_id)
        .where(Inventory.store_id == bindparam("store_id"))
    )
    if by_text:
        stmt = stmt.where(
            contains(bindparam("pattern"), Product.name, Product.brand, Product.sku, Product.id)
        )
    if low_only:
        stmt = stmt.where(Inventory.on_hand <= Inventory.reorder_point)
    count = Query(select(func.count()).select_from(stmt.subquery()))
    rows = Query(stmt.order_by(Product.name, Product.id).limit(bindparam("limit")))
    return count, rows


@functools.cache
def _shipped_transfers(direction: str) -> Query:
    """A store's transfers of one status, newest first, at most ``limit``: list_shipments'."""
    stmt = _TRANSFERS.where(Transfer.status == bindparam("status"))
    if direction == "incoming":
        stmt = stmt.where(Transfer.to_store_id == bindparam("store_id"))
    elif direction == "outgoing":
        stmt = stmt.where(Transfer.from_store_id == bindparam("store_id"))
    else:
        stmt = stmt.where(
            (Transfer.to_store_id == bindparam("store_id"))
            | (Transfer.from_store_id == bindparam("store_id"))
        )
    return Query(
        stmt.order_by(Transfer.created_at.desc(), Transfer.id.desc()).limit(bindparam("limit"))
    )


@functools.cache
def _sales_since(by_product: bool) -> tuple[Query, Query]:
    """How many of a store's sales since ``since`` match with their lines' units and
    revenue (one row), and the newest ``limit`` of them: list_sales'."""
    in_store = (Sale.store_id == bindparam("store_id"), Sale.created_at >= bindparam("since"))
    matching = select(sales).where(*in_store)
    line_conditions = [*in_store]
    if by_product:
        matching = matching.where(
            Sale.id.in_(
                select(SaleLine.sale_id).where(SaleLine.product_id == bindparam("product_id"))
            )
        )
        line_conditions.append(SaleLine.product_id == bindparam("product_id"))
    count = select(func.count()).select_from(matching.subquery()).scalar_subquery()
    totals = (
        select(
            count.label("count"),  # uncorrelated: SQLite runs it once
            func.sum(SaleLine.quantity).label("units"),
            func.sum(SaleLine.line_total).label("revenue"),
        )
        .join(sales, Sale.id == SaleLine.sale_id)
        .where(*line_conditions)
    )
    rows = matching.order_by(Sale.created_at.desc(), Sale.id.desc()).limit(bindparam("limit"))
    return Query(totals), Query(rows)


# ----------------------------------------------------------------- helpers
def _broken(rule: str, detail: str) -> PreconditionFailed:
    """The error for a failed business rule: it names the rule, then says what to do."""
    return PreconditionFailed(f"Rule '{rule}' failed: {detail}")


def _stamp(value: Any) -> str | None:
    return value.isoformat(timespec="minutes") if value is not None else None


def _me(ctx: ToolContext) -> Any:
    """The acting employee's row, with ``store_name``, ``region_id`` and ``region_name``: the
    session's principal from :data:`EMPLOYEE` on, the state's ``acting_employee`` before."""
    if ctx.principal is not None:
        return ctx.sql.one(EMPLOYEE_ROW, id=ctx.principal)
    return ctx.sql.one(ME)


def _scope(ctx: ToolContext, me: Any) -> list[Any]:
    """The stores ``me`` may act in, by id."""
    if me.role == "regional_manager":
        return ctx.sql.all(REGION_STORES, region_id=me.region_id)
    return [ctx.sql.one(STORE, id=me.store_id)]


def _who(me: Any) -> str:
    if me.role == "regional_manager":
        where = f"the {me.region_name} region ({me.region_id})"
    else:
        where = f"store {me.store_id} ({me.store_name})"
    return f"{me.name} ({me.id}), {ROLE_LABELS.get(me.role, me.role)} of {where}"


def _require(ctx: ToolContext, store: Any, action: str) -> Any:
    """The acting employee, if they may ``action`` in ``store``; else ``store_scope`` fails."""
    me = _me(ctx)
    allowed = _scope(ctx, me)
    if store.id in {s.id for s in allowed}:
        return me
    mine = ", ".join(f"{s.id} ({s.name})" for s in allowed)
    owner = ctx.sql.scalar(STORE_MANAGER, store_id=store.id)
    contact = f"; its manager is {owner}" if owner is not None else ""
    region_name = ctx.sql.scalar(REGION_NAME, id=store.region_id)
    raise PermissionDenied(
        f"Rule 'store_scope' failed: you are {_who(me)} and may {action} only in {mine}. "
        f"Store {store.id} ({store.name}) is in the {region_name} region ({store.region_id})"
        f"{contact}. Nothing was changed: pick one of your stores, or ask that store's manager."
    )


def _stock(ctx: ToolContext, store_id: str, product_id: str) -> Any:
    return ctx.sql.one(STOCK, store_id=store_id, product_id=product_id)


def _move(ctx: ToolContext, store_id: str, product_id: str, delta: int) -> int:
    """The only place ``on_hand`` changes; returns the new level (callers checked it)."""
    row = _stock(ctx, store_id, product_id)
    on_hand = row.on_hand + delta
    assert on_hand >= 0
    if on_hand != row.on_hand:
        ctx.sql.run(SET_ON_HAND, store_id=store_id, product_id=product_id, on_hand=on_hand)
    return int(on_hand)


def _incoming(ctx: ToolContext, store_id: str) -> dict[str, int]:
    """Units on their way to a store, by product: transfers in transit and open orders."""
    out: dict[str, int] = {}
    for pid, qty in ctx.sql.all(INCOMING_TRANSFERS, store_id=store_id):
        out[pid] = out.get(pid, 0) + int(qty)
    for pid, qty in ctx.sql.all(INCOMING_ORDERS, store_id=store_id):
        out[pid] = out.get(pid, 0) + int(qty)
    return out


def _product_out(p: Any) -> ProductOut:
    return {
        "product_id": p.id,
        "sku": p.sku,
        "name": p.name,
        "brand": p.brand,
        "category": p.category,
        "price": p.price,
        "unit_cost": p.unit_cost,
        "case_size": p.case_size,
        "discontinued": p.discontinued,
    }


def _transfer_out(t: Any, product_name: str) -> TransferOut:
    return {
        "transfer_id": t.id,
        "product_id": t.product_id,
        "product_name": product_name,
        "from_store_id": t.from_store_id,
        "to_store_id": t.to_store_id,
        "quantity": t.quantity,
        "status": t.status,
        "note": t.note,
        "created_by": t.created_by,
        "created_at": t.created_at.isoformat(timespec="minutes"),
        "received_by": t.received_by,
        "received_at": _stamp(t.received_at),
    }


def _order_out(o: Any, product_name: str, case_size: int) -> OrderOut:
    return {
        "order_id": o.id,
        "store_id": o.store_id,
        "product_id": o.product_id,
        "product_name": product_name,
        "quantity": o.quantity,
        "cases": o.quantity // case_size,
        "unit_cost": o.unit_cost,
        "total_cost": o.total_cost,
        "status": o.status,
        "created_by": o.created_by,
        "ordered_at": o.ordered_at.isoformat(timespec="minutes"),
        "received_at": _stamp(o.received_at),
    }


def _sale_out(s: Any, lines: list[LineOut]) -> SaleOut:
    return {
        "sale_id": s.id,
        "store_id": s.store_id,
        "employee_id": s.employee_id,
        "created_at": s.created_at.isoformat(timespec="minutes"),
        "items": s.items,
        "total": s.total,
        "lines": lines,
    }


def _line_out(ln: Any) -> LineOut:
    return {
        "product_id": ln.product_id,
        "name": ln.name,
        "quantity": ln.quantity,
        "unit_price": ln.unit_price,
        "line_total": ln.line_total,
    }


def _lines_of(ctx: ToolContext, sale_ids: list[str]) -> dict[str, list[LineOut]]:
    """The lines of each of ``sale_ids``, by line id, read in one statement."""
    out: dict[str, list[LineOut]] = {}
    if sale_ids:
        for ln in ctx.sql.all(SALE_LINES, sale_ids=sale_ids):
            out.setdefault(ln.sale_id, []).append(_line_out(ln))
    return out


# -------------------------------------------------------- example values
def _my_store_ids(ctx: ToolContext) -> list[str]:
    return [s.id for s in _scope(ctx, _me(ctx))]


def _product_word(ctx: ToolContext, rng: random.Random) -> str:
    names = ctx.sql.scalars(PRODUCT_NAMES)
    words = [w for w in rng.choice(names).split() if len(w) > 3 and w[0].isupper()]
    return words[0] if words else names[0]


def _category_of_query(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A category the catalog sells: with a search word, one that has a product the word
    names (never "electronics" searched for "Trekking"); None where no product has the
    word, so synthesis draws another."""
    word = str(bound.args.get("query") or "").lower()
    cats = sorted({str(p.category) for p in ctx.sql.all(PRODUCTS) if word in str(p.name).lower()})
    return rng.choice(cats) if cats else None


def _store_word(ctx: ToolContext, rng: random.Random) -> str:
    return rng.choice(ctx.sql.scalars(STORE_CITIES))


NOTES = ["Rebalancing stock", "Customer hold for pickup", "Low at destination", "Weekend event"]


# ------------------------------------------------------------------- tools
@server.tool(
    returns=("store", "employee"),
    phrasings=[
        "Which stores can I manage?",
        "Find the {query} store",
        "Who am I signed in as, and which stores are mine?",
    ],
    examples={"query": _store_word},
)
def list_stores(ctx: ToolContext, query: SearchText | None = None) -> StoreList:
    """Who you are (the acting employee) and the chain's stores, with can_act for yours.

    A store manager can act only in their own store; a regional manager in every store of
    their region. Stock, shipments and sales of a store can be read and changed only where
    can_act is true.

    Args:
        query: Case-insensitive text in the store's name, city, address, region or id, such
            as "Portland", "Mall", "Northwest" or "str_003"; leave it out for every store.

    Returns:
        {"you": {"employee_id": "emp_002", "name": "Dana Whitfield", "role":
        "regional_manager", "store_id": "str_001", "region_id": "reg_01", "acts_in":
        ["str_001", "str_002", "str_003", "str_004"], ...}, "total": 12, "stores":
        [{"store_id": "str_001", "name": "Portland Downtown", "city": "Portland",
        "region_name": "Northwest", "manager": "Lee Park", "can_act": true, ...}]}.
    """
    me = _me(ctx)
    mine = {s.id for s in _scope(ctx, me)}
    text = (query or "").strip()
    if text:
        found = ctx.sql.all(_stores_matching(True), pattern=search_pattern(text))
    else:
        found = ctx.sql.all(_stores_matching(False))
    managers = {e.store_id: e.name for e in ctx.sql.all(STORE_MANAGERS)}
    return {
        "you": {
            "employee_id": me.id,
            "name": me.name,
            "email": me.email,
            "role": me.role,
            "store_id": me.store_id,
            "store_name": me.store_name,
            "region_id": me.region_id,
            "region_name": me.region_name,
            "acts_in": sorted(mine),
        },
        "total": len(found),
        "stores": [
            {
                "store_id": s.id,
                "name": s.name,
                "city": s.city,
                "address": s.address,
                "region_id": s.region_id,
                "region_name": s.region_name,
                "manager": managers.get(s.id, ""),
                "can_act": s.id in mine,
            }
            for s in found
        ],
    }


@server.tool(
    returns="product",
    phrasings=[
        "Find the products named '{query}' in the catalog",
        "What {category} products do we sell?",
        "Look up the prices of products matching '{query}'",
    ],
    examples={"query": _product_word},
    values={"category": _category_of_query},
)
def search_products(
    ctx: ToolContext,
    query: SearchText | None = None,
    category: Category | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 20,
) -> list[ProductOut]:
    """Search the chain's product catalog (the same in every store), ordered by name.

    Args:
        query: Case-insensitive text in the product's name, brand, SKU or id, such as
            "headlamp", "Ridgeline", "TH-10444" or "prd_0012".
        category: Only products of this category, such as "camping" or "footwear".
        limit: Maximum number of products to return (1-50), such as 20.

    Returns:
        [{"product_id": "prd_0027", "sku": "TH-10999", "name": "Rechargeable Headlamp",
        "brand": "Lumen", "category": "electronics", "price": "49.95", "unit_cost": "24.98",
        "case_size": 12, "discontinued": false}].
    """
    text = (query or "").strip()
    params: dict[str, Any] = {"limit": limit}
    if text:
        params["pattern"] = search_pattern(text)
    if category is not None:
        params["category"] = category
    rows = ctx.sql.all(_products_matching(bool(text), category is not None), **params)
    return [_product_out(p) for p in rows]


@server.tool(
    stands_in_for=("find_stock",),
    returns="product",
    phrasings=[
        "Show the stock levels of {store_id}",
        "How many products matching '{search}' does store {store_id} have?",
        "Show the inventory of {store_id}",
    ],
    examples={"search": _product_word},
)
def get_store_inventory(
    ctx: ToolContext,
    store_id: StoreRow,
    search: SearchText | None = None,
    low_stock_only: bool = False,
    limit: Annotated[int, Field(ge=1, le=100)] = 25,
) -> StoreInventory:
    """One of your stores' stock levels, ordered by product name.

    A product is low on stock when on_hand is at or below its reorder_point; incoming
    counts units on their way (transfers in transit and restock orders not yet received).

    Args:
        store_id: A store you can act in, such as "str_003" (see list_stores).
        search: Case-insensitive text in the product's name, brand, SKU or id, such as
            "tent" or "TH-10444".
        low_stock_only: true to list only products at or below their reorder point.
        limit: Maximum number of products to return (1-100), such as 25.

    Returns:
        {"store_id": "str_003", "store_name": "Salem Mall", "total": 40, "items":
        [{"product_id": "prd_0027", "name": "Rechargeable Headlamp", "on_hand": 7,
        "reorder_point": 6, "low_stock": false, "incoming": 12, ...}]}; total counts every
        match.
    """
    store = store_id
    _require(ctx, store, "view stock")
    text = (search or "").strip()
    params: dict[str, Any] = {"store_id": store.id}
    if text:
        params["pattern"] = search_pattern(text)
    count, matching = _stock_matching(bool(text), low_stock_only)
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(matching, limit=limit, **params)
    incoming = _incoming(ctx, store.id)
    return {
        "store_id": store.id,
        "store_name": store.name,
        "total": total,
        "items": [
            {
                "product_id": r.product_id,
                "sku": r.sku,
                "name": r.name,
                "category": r.category,
                "price": r.price,
                "on_hand": r.on_hand,
                "reorder_point": r.reorder_point,
                "low_stock": r.on_hand <= r.reorder_point,
                "incoming": incoming.get(r.product_id, 0),
                "discontinued": r.discontinued,
            }
            for r in rows
        ],
    }


@server.tool(
    returns=("product", "store"),
    phrasings=[
        "Which of our stores has {product_id} in stock?",
        "Where in my region is {product_id} in stock?",
    ],
)
def find_stock(ctx: ToolContext, product_id: ProductRow) -> ProductStock:
    """A product's stock in every store of your region, most units first.

    Use it to find a store to transfer from. can_act says which of these stores you can
    act in.

    Args:
        product_id: The product, such as "prd_0027" (see search_products).

    Returns:
        {"product_id": "prd_0027", "name": "Rechargeable Headlamp", "case_size": 12,
        "region_id": "reg_01", "total_on_hand": 41, "stores": [{"store_id": "str_002",
        "store_name": "Eugene Riverside", "on_hand": 19, "reorder_point": 6,
        "low_stock": false, "incoming": 0, "can_act": true}, ...]}.
    """
    p = product_id
    me = _me(ctx)
    mine = {s.id for s in _scope(ctx, me)}
    rows = ctx.sql.all(REGION_STOCK, product_id=p.id, region_id=me.region_id)
    out: list[StockAt] = []
    for r in rows:
        incoming = _incoming(ctx, r.store_id)
        out.append(
            {
                "store_id": r.store_id,
                "store_name": r.store_name,
                "on_hand": r.on_hand,
                "reorder_point": r.reorder_point,
                "low_stock": r.on_hand <= r.reorder_point,
                "incoming": incoming.get(p.id, 0),
                "can_act": r.store_id in mine,
            }
        )
    return {
        "product_id": p.id,
        "sku": p.sku,
        "name": p.name,
        "case_size": p.case_size,
        "discontinued": p.discontinued,
        "region_id": me.region_id,
        "region_name": me.region_name,
        "total_on_hand": sum(r.on_hand for r in rows),
        "stores": out,
    }


@server.tool(
    returns=("transfer", "restock_order", "product"),
    phrasings=[
        "What deliveries are on their way to {store_id}?",
        "Show the {status} shipments of store {store_id}",
        "List the {direction} transfers of {store_id}",
    ],
)
def list_shipments(
    ctx: ToolContext,
    store_id: StoreRow,
    status: Literal["open", "received"] = "open",
    direction: Literal["incoming", "outgoing", "both"] = "both",
    limit: Annotated[int, Field(ge=1, le=50)] = 20,
) -> Shipments:
    """One of your stores' transfers and restock orders, newest first.

    "open" shipments are on their way: transfers in transit and restock orders not yet
    received. Restock orders are always incoming.

    Args:
        store_id: A store you can act in, such as "str_003".
        status: "open" (default: still on their way) or "received" (already arrived).
        direction: "incoming" (to this store), "outgoing" (transfers sent from it) or
            "both" (default).
        limit: Maximum number of transfers, and of restock orders, to return (1-50).

    Returns:
        {"store_id": "str_003", "store_name": "Salem Mall", "transfers": [{"transfer_id":
        "trf_00031", "product_id": "prd_0027", "from_store_id": "str_001", "to_store_id":
        "str_003", "quantity": 6, "status": "in_transit", ...}], "restock_orders":
        [{"order_id": "ro_00512", "product_id": "prd_0011", "quantity": 4, "cases": 2,
        "total_cost": "698.00", "status": "ordered", ...}]}.
    """
    store = store_id
    _require(ctx, store, "view shipments")
    t_status = "in_transit" if status == "open" else "received"
    sent = ctx.sql.all(
        _shipped_transfers(direction), status=t_status, store_id=store.id, limit=limit
    )
    ordered: list[Any] = []
    if direction != "outgoing":
        ordered = ctx.sql.all(
            STORE_ORDERS,
            store_id=store.id,
            status="ordered" if status == "open" else "received",
            limit=limit,
        )
    return {
        "store_id": store.id,
        "store_name": store.name,
        "transfers": [_transfer_out(t, t.product_name) for t in sent],
        "restock_orders": [_order_out(o, o.product_name, o.case_size) for o in ordered],
    }


@server.tool(
    writes=True,
    returns=("transfer", "product"),
    normalise={"note": "strip"},
    phrasings=[
        "Send {quantity} units of {product_id} from {from_store_id} to {to_store_id}",
        "Transfer {quantity} {product_id} from store {from_store_id} to store {to_store_id}",
        "Move {quantity} of {product_id} from {from_store_id} over to {to_store_id}: {note}",
    ],
    examples={"quantity": [2, 3, 4, 5, 6], "note": NOTES},
)
def create_transfer(
    ctx: ToolContext,
    from_store_id: StoreRow,
    to_store_id: StoreRow,
    product_id: ProductRow,
    quantity: Quantity,
    note: Annotated[str, Field(max_length=200)] = "",
) -> TransferResult:
    """Send units of a product from one of your stores to another store of the chain.

    The units leave the sending store now (its on_hand drops) and arrive when the
    receiving store receives the transfer; until then it is "in_transit".

    Args:
        from_store_id: The sending store, one you can act in, such as "str_002".
        to_store_id: The receiving store (any other store of the chain), such as "str_003".
        product_id: The product, such as "prd_0027".
        quantity: Whole units to send (1-1000), at most the sending store's on_hand, such as 6.
        note: Optional reason shown to the receiving store, such as "Customer hold for pickup".

    Returns:
        {"transfer_id": "trf_00061", "status": "in_transit", "quantity": 6,
        "from_store_on_hand": 13, "to_store_on_hand": 4, ...}.
    """
    src, dst, p = from_store_id, to_store_id, product_id
    if src.id == dst.id:
        raise _broken(
            "same_store",
            f"from_store_id and to_store_id are both {src.id}; nothing was changed. "
            "Send the units to a different store.",
        )
    me = _require(ctx, src, "send transfers")
    have = _stock(ctx, src.id, p.id).on_hand
    if quantity > have:
        raise _broken(
            "insufficient_stock",
            f"{src.id} ({src.name}) has {have} of {p.id} ({p.name}) on hand, fewer than "
            f"{quantity}; nothing was changed. Send at most {have}, or send from another store "
            "of your region that has more.",
        )
    t: dict[str, Any] = {
        "id": next_id(ctx, Transfer.id, "trf", 5),
        "product_id": p.id,
        "from_store_id": src.id,
        "to_store_id": dst.id,
        "quantity": quantity,
        "status": "in_transit",
        "note": " ".join(note.split()),
        "created_by": me.id,
        "created_at": ctx.now,
    }
    ctx.sql.insert(Transfer, **t)
    left = _move(ctx, src.id, p.id, -quantity)
    sent = SimpleNamespace(**t, received_by=None, received_at=None)
    return {
        **_transfer_out(sent, p.name),
        "from_store_on_hand": left,
        "to_store_on_hand": _stock(ctx, dst.id, p.id).on_hand,
    }


def _sent_before(name: str) -> Callable[[ToolContext, random.Random, Bound], str | None]:
    """The value source of ``name``, a transfer or restock order to receive: one that was
    on its way before the conversation began (a conversation that just made one has not
    seen it arrive, so it never receives it at once); None for one the conversation made."""

    def source(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
        return str(bound.args[name]) if name in bound.records else None

    return source


@server.tool(
    writes=True,
    returns=("transfer", "product"),
    phrasings=[
        "Receive {transfer_id}, it just arrived",
        "Check in {transfer_id} at its store",
    ],
    values={"transfer_id": _sent_before("transfer_id")},
)
def receive_transfer(ctx: ToolContext, transfer_id: TransferRow) -> TransferResult:
    """Receive an in-transit transfer at its destination store: its units are added there.

    The receiving store must be one you can act in. A transfer is received exactly once.

    Args:
        transfer_id: The transfer, such as "trf_00031" (see list_shipments).

    Returns:
        {"transfer_id": "trf_00031", "status": "received", "received_at":
        "2026-03-02T10:00", "to_store_on_hand": 13, ...}.
    """
    t = transfer_id
    dst = ctx.sql.one(STORE, id=t.to_store_id)
    me = _require(ctx, dst, "receive transfers")
    if t.status != "in_transit":
        raise _broken(
            "already_received",
            f"transfer {t.id} was received at {dst.id} on {_stamp(t.received_at)}; its "
            f"{t.quantity} units are already counted in that store's stock. Nothing was "
            "changed.",
        )
    t = ctx.sql.update(Transfer, t, status="received", received_by=me.id, received_at=ctx.now)
    now_there = _move(ctx, dst.id, t.product_id, t.quantity)
    return {
        **_transfer_out(t, ctx.sql.one(PRODUCT, id=t.product_id).name),
        "from_store_on_hand": _stock(ctx, t.from_store_id, t.product_id).on_hand,
        "to_store_on_hand": now_there,
    }


@server.tool(
    writes=True,
    returns=("restock_order", "product"),
    phrasings=[
        "Order {quantity} units of {product_id} for store {store_id}",
        "Restock {product_id} at {store_id}: {quantity} units",
    ],
)
def create_restock_order(
    ctx: ToolContext, store_id: StoreRow, product_id: ProductRow, quantity: Quantity
) -> OrderResult:
    """Order a product from the supplier for one of your stores, in whole cases.

    From prove/retail_chain-v1 only the head office's buyers place supplier orders (rule
    admin_only): a store receives them (receive_restock_order) and transfers stock.

    The order is "ordered" until it arrives and is received; the cost is quantity x the
    product's unit_cost.

    Args:
        store_id: A store you can act in, such as "str_003".
        product_id: The product, such as "prd_0027" (not a discontinued one).
        quantity: Units, a multiple of the product's case_size (1-1000): for a case_size of
            12, 12, 24 or 36.

    Returns:
        {"order_id": "ro_00601", "status": "ordered", "quantity": 24, "cases": 2,
        "unit_cost": "24.98", "total_cost": "599.52", "on_hand": 5, ...}.
    """
    store, p = store_id, product_id
    me = _require(ctx, store, "order stock")
    if p.discontinued:
        raise _broken(
            "product_discontinued",
            f"{p.id} ({p.name}) is discontinued and is never reordered; nothing was changed. "
            "Move units from another store with a transfer instead.",
        )
    if quantity % p.case_size:
        low = quantity // p.case_size * p.case_size
        options = " or ".join(str(n) for n in (low, low + p.case_size) if n > 0)
        raise _broken(
            "case_pack",
            f"{p.id} ({p.name}) comes in cases of {p.case_size}, and {quantity} is not a whole "
            f"number of cases; nothing was changed. Order {options} units instead.",
        )
    open_order = ctx.sql.first(OPEN_ORDER, store_id=store.id, product_id=p.id)
    if open_order is not None:
        raise _broken(
            "open_order_exists",
            f"order {open_order.id} for {open_order.quantity} of {p.id} ({p.name}) at "
            f"{store.id} is still open; nothing was changed. Receive it when it arrives "
            "before ordering more.",
        )
    o: dict[str, Any] = {
        "id": next_id(ctx, RestockOrder.id, "ro", 5),
        "store_id": store.id,
        "product_id": p.id,
        "quantity": quantity,
        "unit_cost": p.unit_cost,
        "total_cost": p.unit_cost * quantity,
        "status": "ordered",
        "created_by": me.id,
        "ordered_at": ctx.now,
    }
    ctx.sql.insert(RestockOrder, **o)
    made = SimpleNamespace(**o, received_at=None)
    return {
        **_order_out(made, p.name, p.case_size),
        "on_hand": _stock(ctx, store.id, p.id).on_hand,
    }


@server.tool(
    writes=True,
    returns=("restock_order", "product"),
    phrasings=[
        "Receive {order_id}, it was delivered",
        "Mark {order_id} as received",
    ],
    values={"order_id": _sent_before("order_id")},
)
def receive_restock_order(ctx: ToolContext, order_id: OrderRow) -> OrderResult:
    """Receive a delivered restock order: its units are added to its store's stock.

    The store must be one you can act in. An order is received exactly once.

    Args:
        order_id: The restock order, such as "ro_00512" (see list_shipments).

    Returns:
        {"order_id": "ro_00512", "status": "received", "quantity": 24, "on_hand": 31, ...}.
    """
    o = order_id
    store = ctx.sql.one(STORE, id=o.store_id)
    _require(ctx, store, "receive restock orders")
    if o.status != "ordered":
        raise _broken(
            "already_received",
            f"order {o.id} was received at {store.id} on {_stamp(o.received_at)}; its "
            f"{o.quantity} units are already counted in that store's stock. Nothing was "
            "changed.",
        )
    o = ctx.sql.update(RestockOrder, o, status="received", received_at=ctx.now)
    level = _move(ctx, store.id, o.product_id, o.quantity)
    p = ctx.sql.one(PRODUCT, id=o.product_id)
    return {**_order_out(o, p.name, p.case_size), "on_hand": level}


def _in_stock_products(ctx: ToolContext, rng: random.Random) -> list[str]:
    """One or two products every one of your stores has at least 5 of."""
    mine = _my_store_ids(ctx)
    ids = ctx.sql.scalars(IN_STOCK_EVERYWHERE, store_ids=mine)
    return rng.sample(ids, min(len(ids), rng.choice([1, 1, 2])))


@server.tool(
    writes=True,
    returns=("sale", "product"),
    phrasings=[
        "Ring up a sale of {product_ids} at {store_id}",
        "A customer at {store_id} just bought {product_ids}; record the sale",
        "At {store_id}, sell {quantities} of {product_ids}",
    ],
    examples={"product_ids": _in_stock_products, "quantities": [[1], [2], [1, 1], [2, 1]]},
)
def record_sale(
    ctx: ToolContext,
    store_id: StoreRow,
    product_ids: ProductIds,
    quantities: Annotated[list[Quantity], Field(min_length=1, max_length=10)] | None = None,
) -> SaleResult:
    """Record a sale in one of your stores at the catalog prices; the units leave its stock.

    Each line is a product and how many were sold; the sale's total is the sum of its lines
    (quantity x price).

    Args:
        store_id: A store you can act in, such as "str_003".
        product_ids: The products sold, each once, such as ["prd_0027", "prd_0035"].
        quantities: How many of each, in the same order, such as [2, 1]; leave it out to
            sell one of each.

    Returns:
        {"sale_id": "sal_00433", "store_id": "str_003", "items": 3, "total": "131.90",
        "lines": [{"product_id": "prd_0027", "quantity": 2, "unit_price": "49.95",
        "line_total": "99.90"}, ...], "on_hand_after": {"prd_0027": 5, "prd_0035": 11}}.
    """
    store = store_id
    qty = list(quantities) if quantities is not None else [1] * len(product_ids)
    if len(qty) != len(product_ids):
        raise InvalidArgument(
            f"Rule 'sale_lines' failed: {len(product_ids)} product_ids but {len(qty)} "
            "quantities; give one quantity per product, in the same order (or none to sell "
            "one of each)."
        )
    seen: set[str] = set()
    for p in product_ids:
        if p.id in seen:
            raise InvalidArgument(
                f"Rule 'sale_lines' failed: {p.id} is named twice; name each product once and "
                "add up its quantity."
            )
        seen.add(p.id)
    me = _require(ctx, store, "record sales")
    products = list(product_ids)
    short = [
        f"{p.id} ({p.name}): {have} on hand, {n} asked"
        for p, n in zip(products, qty, strict=True)
        if (have := _stock(ctx, store.id, p.id).on_hand) < n
    ]
    if short:
        raise _broken(
            "insufficient_stock",
            f"{store.id} ({store.name}) does not have enough of " + "; ".join(short) + ". "
            "Nothing was recorded: sell at most what is on hand, or bring units in from "
            "another store first.",
        )
    sale_id = next_id(ctx, Sale.id, "sal", 5)
    ctx.sql.insert(
        Sale,
        id=sale_id,
        store_id=store.id,
        employee_id=me.id,
        total=ZERO,
        items=0,
        created_at=ctx.now,
    )
    total, items = ZERO, 0
    after: dict[str, int] = {}
    lines: list[tuple[str, LineOut]] = []  # by line id, as the sale's lines are ordered
    for p, n in zip(products, qty, strict=True):
        line_total = p.price * n
        line_id = next_id(ctx, SaleLine.id, "sln", 6)
        ctx.sql.insert(
            SaleLine,
            id=line_id,
            sale_id=sale_id,
            product_id=p.id,
            quantity=n,
            unit_price=p.price,
            line_total=line_total,
        )
        lines.append(
            (
                line_id,
                {
                    "product_id": p.id,
                    "name": p.name,
                    "quantity": n,
                    "unit_price": p.price,
                    "line_total": line_total,
                },
            )
        )
        total += line_total
        items += n
        after[p.id] = _move(ctx, store.id, p.id, -n)
    sale = ctx.sql.one(SALE, id=sale_id)
    ctx.sql.update(Sale, sale, total=total, items=items)
    sale = ctx.sql.one(SALE, id=sale_id)  # as written (refreshed)
    out = [line for _, line in sorted(lines, key=lambda x: x[0])]
    return {**_sale_out(sale, out), "on_hand_after": dict(sorted(after.items()))}


@server.tool(
    returns=("sale", "product"),
    phrasings=[
        "How much did {store_id} sell in the last {days} days?",
        "Show recent sales of {product_id} at {store_id}",
        "List the sales of store {store_id}",
    ],
    examples={"days": [1, 7, 14, 30]},
)
def list_sales(
    ctx: ToolContext,
    store_id: StoreRow,
    product_id: ProductRow | None = None,
    days: Annotated[int, Field(ge=1, le=90)] = 7,
    limit: Annotated[int, Field(ge=1, le=50)] = 20,
) -> SalesList:
    """One of your stores' sales of the last few days, newest first, with totals.

    Args:
        store_id: A store you can act in, such as "str_003".
        product_id: Only sales with a line of this product, such as "prd_0027"; units and
            revenue then count that product's lines only.
        days: How many days back from now (1-90), such as 7 (default) or 30.
        limit: Maximum number of sales to return (1-50); count, units and revenue cover
            every match.

    Returns:
        {"store_id": "str_003", "days": 7, "count": 9, "units": 14, "revenue": "1264.35",
        "sales": [{"sale_id": "sal_00433", "created_at": "2026-03-01T15:42", "items": 3,
        "total": "131.90", "lines": [...]}, ...]}.
    """
    store = store_id
    _require(ctx, store, "view sales")
    since = ctx.now - dt.timedelta(days=days)
    params: dict[str, Any] = {"store_id": store.id, "since": since}
    if product_id is not None:
        params["product_id"] = product_id.id
    totals_q, rows_q = _sales_since(product_id is not None)
    count, units, revenue = ctx.sql.one(totals_q, **params)
    rows = ctx.sql.all(rows_q, limit=limit, **params)
    lines = _lines_of(ctx, [s.id for s in rows])
    return {
        "store_id": store.id,
        "store_name": store.name,
        "days": days,
        "count": count,
        "units": int(units or 0),
        "revenue": Decimal(revenue) if revenue is not None else ZERO,
        "sales": [_sale_out(s, lines.get(s.id, [])) for s in rows],
    }


# ---------------------------------------------------------------- entities
@server.entity(
    "store",
    key="store_id",
    model=Store,
    not_found="Call list_stores to see the stores and their ids (such as 'str_003').",
)
def _stores(ctx: ToolContext) -> list[dict[str, Any]]:
    """The stores the acting employee can act in (others are refused by store_scope)."""
    return [
        {"store_id": s.id, "name": s.name, "query": s.city, "region_id": s.region_id}
        for s in _scope(ctx, _me(ctx))
    ]


@server.entity(
    "product",
    key="product_id",
    model=Product,
    not_found="Call search_products with the product's name or SKU to find its id "
    "(such as 'prd_0027').",
)
def _products(ctx: ToolContext) -> list[dict[str, Any]]:
    """Products; quantity is one case (what a restock order is made of)."""
    return [
        {
            "product_id": p.id,
            "name": p.name,
            "query": p.name,
            "search": p.name,
            "sku": p.sku,
            "category": p.category,
            "discontinued": p.discontinued,
            "quantity": p.case_size,
        }
        for p in ctx.sql.all(PRODUCTS)
    ]


@server.entity(
    "transfer",
    key="transfer_id",
    model=Transfer,
    shared=True,  # a store's, not its creator's: the tools' store_scope decides who acts
    not_found="Call list_shipments with the receiving store's id to see its transfers "
    "(such as 'trf_00031').",
)
def _transfers(ctx: ToolContext) -> list[dict[str, Any]]:
    """Transfers in transit to a store the acting employee can act in (they can receive them)."""
    mine = _my_store_ids(ctx)
    rows = ctx.sql.all(TRANSFERS_TO, store_ids=mine)
    return [
        {
            "transfer_id": t.id,
            "store_id": t.to_store_id,
            "product_id": t.product_id,
            "quantity": t.quantity,
        }
        for t in rows
    ]


@server.entity(
    "restock_order",
    key="order_id",
    model=RestockOrder,
    shared=True,  # a store's, not its creator's: the tools' store_scope decides who acts
    not_found="Call list_shipments with the store's id to see its restock orders "
    "(such as 'ro_00512').",
)
def _orders(ctx: ToolContext) -> list[dict[str, Any]]:
    """Open restock orders of the stores the acting employee can act in."""
    mine = _my_store_ids(ctx)
    rows = ctx.sql.all(OPEN_ORDERS_OF, store_ids=mine)
    return [{"order_id": o.id, "store_id": o.store_id, "product_id": o.product_id} for o in rows]


@server.entity("sale", key="sale_id")
def _sales(ctx: ToolContext) -> list[dict[str, Any]]:
    """Sales of the last 7 days in the stores the acting employee can act in."""
    mine = _my_store_ids(ctx)
    rows = ctx.sql.all(RECENT_SALES, store_ids=mine, since=ctx.now - dt.timedelta(days=7))
    return [{"sale_id": s.id, "store_id": s.store_id} for s in rows]


@server.entity("employee", key="employee_id", model=Employee)
def _employees(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(EMPLOYEES)
    return [{"employee_id": e.id, "name": e.name, "store_id": e.store_id} for e in rows]
