"""Retail chain state: regions, stores, employees, products, inventory, transfers, restock
orders and sales.

Money is exact everywhere (:class:`~prove_gym.server.Money`, integer cents in SQLite). In
``prove/retail_chain-v0`` the employee using the tools is a row too (``acting_employee``), so
it is cloned, reset and hashed with the rest; from ``-v1`` the tools act for the task's
principal instead and leave that row unread. The rules every state obeys (the tests check them after random call
sequences):

- an inventory row's ``on_hand`` is never negative;
- ``on_hand`` of a product in a store equals what restock orders delivered there (received
  orders) + transfers received there - transfers sent from there (a transfer leaves its
  source when it is created) - units sold there;
- a transfer moves a positive quantity between two different stores; it arrives exactly
  once (``received`` with ``received_at`` set) or is still ``in_transit``;
- a sale's total is the sum of its lines, and a line's total is quantity x unit price;
- a restock order's total cost is quantity x unit cost, in whole cases of the product.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import Boolean, Date, DateTime, ForeignKey, Index, Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from prove_gym.server import Money

CENT = Decimal("0.01")
ZERO = Decimal("0.00")

ROLES = ("store_manager", "regional_manager")
"""A store manager acts in their own store; a regional manager in every store of their region."""

ROLE_LABELS = {"store_manager": "store manager", "regional_manager": "regional manager"}


class Base(DeclarativeBase):
    pass


class Region(Base):
    __tablename__ = "regions"
    id: Mapped[str] = mapped_column(String(12), primary_key=True)
    name: Mapped[str] = mapped_column(String(40))

    stores: Mapped[list[Store]] = relationship(order_by="Store.id")


class Store(Base):
    __tablename__ = "stores"
    id: Mapped[str] = mapped_column(String(12), primary_key=True)
    name: Mapped[str] = mapped_column(String(60))
    city: Mapped[str] = mapped_column(String(40))
    address: Mapped[str] = mapped_column(String(120))
    region_id: Mapped[str] = mapped_column(ForeignKey("regions.id"), index=True)
    opened_on: Mapped[dt.date] = mapped_column(Date)

    region: Mapped[Region] = relationship(back_populates="stores")


class Employee(Base):
    __tablename__ = "employees"
    id: Mapped[str] = mapped_column(String(12), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120))
    role: Mapped[str] = mapped_column(String(20))
    """One of :data:`ROLES`."""
    store_id: Mapped[str] = mapped_column(ForeignKey("stores.id"), index=True)
    """The store the employee belongs to (a regional manager's home store is in their region)."""

    store: Mapped[Store] = relationship()


class ActingEmployee(Base):
    """The one employee using the tools in a ``-v0`` session (a single row with ``id`` 1); from
    ``-v1`` the session's principal is."""

    __tablename__ = "acting_employee"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    employee_id: Mapped[str] = mapped_column(ForeignKey("employees.id"))

    employee: Mapped[Employee] = relationship()


class Product(Base):
    __tablename__ = "products"
    id: Mapped[str] = mapped_column(String(12), primary_key=True)
    sku: Mapped[str] = mapped_column(String(16), unique=True)
    name: Mapped[str] = mapped_column(String(80))
    brand: Mapped[str] = mapped_column(String(40))
    category: Mapped[str] = mapped_column(String(24))
    price: Mapped[Decimal] = mapped_column(Money())
    """Shelf price, the same in every store."""
    unit_cost: Mapped[Decimal] = mapped_column(Money())
    """What one unit costs from the supplier."""
    case_size: Mapped[int] = mapped_column(Integer)
    """Restock orders come in whole cases of this many units."""
    discontinued: Mapped[bool] = mapped_column(Boolean, default=False)
    """A discontinued product is sold down and moved between stores but never reordered."""


class Inventory(Base):
    """One product's stock in one store (every store carries every product)."""

    __tablename__ = "inventory"
    store_id: Mapped[str] = mapped_column(ForeignKey("stores.id"), primary_key=True)
    product_id: Mapped[str] = mapped_column(ForeignKey("products.id"), primary_key=True)
    on_hand: Mapped[int] = mapped_column(Integer)
    reorder_point: Mapped[int] = mapped_column(Integer)
    """At or below this many units the product is low on stock in the store."""

    product: Mapped[Product] = relationship()


class Transfer(Base):
    """Units sent from one store to another: they leave the source when the transfer is made
    and arrive at the destination when it is received (once)."""

    __tablename__ = "transfers"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    product_id: Mapped[str] = mapped_column(ForeignKey("products.id"), index=True)
    from_store_id: Mapped[str] = mapped_column(ForeignKey("stores.id"), index=True)
    to_store_id: Mapped[str] = mapped_column(ForeignKey("stores.id"), index=True)
    quantity: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(12))
    """"in_transit" or "received"."""
    note: Mapped[str] = mapped_column(String(200), default="")
    created_by: Mapped[str] = mapped_column(ForeignKey("employees.id"))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    received_by: Mapped[str | None] = mapped_column(ForeignKey("employees.id"), nullable=True)
    received_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)

    product: Mapped[Product] = relationship()


class RestockOrder(Base):
    """Units ordered from the supplier for one store; they arrive when the order is received."""

    __tablename__ = "restock_orders"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    store_id: Mapped[str] = mapped_column(ForeignKey("stores.id"), index=True)
    product_id: Mapped[str] = mapped_column(ForeignKey("products.id"), index=True)
    quantity: Mapped[int] = mapped_column(Integer)
    unit_cost: Mapped[Decimal] = mapped_column(Money())
    total_cost: Mapped[Decimal] = mapped_column(Money())
    status: Mapped[str] = mapped_column(String(12))
    """"ordered" or "received"."""
    created_by: Mapped[str] = mapped_column(ForeignKey("employees.id"))
    ordered_at: Mapped[dt.datetime] = mapped_column(DateTime)
    received_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)

    product: Mapped[Product] = relationship()


class Sale(Base):
    __tablename__ = "sales"
    # a store's sales by time: list_sales' count, totals and newest first
    __table_args__ = (Index("ix_sales_store_id_created_at", "store_id", "created_at"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    store_id: Mapped[str] = mapped_column(ForeignKey("stores.id"))
    employee_id: Mapped[str] = mapped_column(ForeignKey("employees.id"))
    total: Mapped[Decimal] = mapped_column(Money())
    items: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    lines: Mapped[list[SaleLine]] = relationship(order_by="SaleLine.id")


class SaleLine(Base):
    __tablename__ = "sale_lines"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    sale_id: Mapped[str] = mapped_column(ForeignKey("sales.id"), index=True)
    product_id: Mapped[str] = mapped_column(ForeignKey("products.id"), index=True)
    quantity: Mapped[int] = mapped_column(Integer)
    unit_price: Mapped[Decimal] = mapped_column(Money())
    line_total: Mapped[Decimal] = mapped_column(Money())

    product: Mapped[Product] = relationship()
