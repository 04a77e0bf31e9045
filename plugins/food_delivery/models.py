"""Food delivery state: restaurants, menus, customers' carts, orders, couriers, tracking, ratings.

Money is exact everywhere (:class:`~prove_gym.server.Money`, integer cents in SQLite). The
rules every state obeys (the tests check them after random call sequences):

- a cart holds items of one restaurant only; a cart line's ``unit_price`` is its item's
  price plus the price deltas of its options, and every required option group of the item
  has exactly one choice;
- an order's ``subtotal`` is the sum of its lines (``unit_price * quantity``), its ``total``
  is ``subtotal + delivery_fee + tip``, the subtotal reaches the restaurant's minimum order
  and the delivery fee is the fee of the customer's zone;
- an order moves placed -> accepted -> preparing -> picked_up -> delivered, or to cancelled
  from placed, accepted or preparing; its tracking history is exactly that path, in time
  order, and ends in its status;
- only a cancelled order has a refund, never more than its total;
- a picked up or delivered order has a courier; a courier is "on_delivery" exactly when one
  active (accepted, preparing or picked up) order is assigned to them, and they work in the
  restaurant's zone;
- a rating belongs to a delivered order, one per order, with 1 to 5 stars.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from prove_gym.server import Money

CENT = Decimal("0.01")
ZERO = Decimal("0.00")

ZONES: tuple[str, ...] = (
    "downtown",
    "old_town",
    "riverside",
    "harbor",
    "university",
    "northgate",
    "west_end",
    "east_side",
)
"""The city's delivery zones."""

NEIGHBOURS: dict[str, tuple[str, ...]] = {
    "downtown": ("old_town", "riverside", "university", "east_side"),
    "old_town": ("downtown", "harbor", "west_end"),
    "riverside": ("downtown", "harbor", "east_side"),
    "harbor": ("old_town", "riverside"),
    "university": ("downtown", "northgate", "west_end"),
    "northgate": ("university", "east_side"),
    "west_end": ("old_town", "university"),
    "east_side": ("downtown", "riverside", "northgate"),
}
"""Zones next to each zone: a restaurant delivers to its own zone and some neighbours."""

CUISINES: tuple[str, ...] = (
    "pizza",
    "burgers",
    "sushi",
    "indian",
    "thai",
    "mexican",
    "chinese",
    "italian",
    "vegan",
    "breakfast",
)

WEEKDAYS: tuple[str, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

ORDER_FLOW: tuple[str, ...] = ("placed", "accepted", "preparing", "picked_up", "delivered")
"""The lifecycle, in order; "cancelled" may follow placed, accepted or preparing."""

ORDER_STATUSES: tuple[str, ...] = (*ORDER_FLOW, "cancelled")
ACTIVE_STATUSES: tuple[str, ...] = ("placed", "accepted", "preparing", "picked_up")
"""Orders not yet delivered or cancelled."""
COURIER_STAGES: tuple[str, ...] = ("accepted", "preparing", "picked_up")
"""Statuses in which an assigned courier is busy with the order."""
CANCELLABLE: tuple[str, ...] = ("placed", "accepted", "preparing")

CANCEL_REASONS: tuple[str, ...] = (
    "customer_request",
    "duplicate_order",
    "restaurant_unavailable",
    "courier_unavailable",
)
NOT_CUSTOMERS_FAULT: tuple[str, ...] = ("restaurant_unavailable", "courier_unavailable")
"""Cancellation reasons that always refund in full."""

MAX_LINE_QUANTITY = 20
MAX_CART_LINES = 15
RATING_WINDOW_DAYS = 14
"""A delivered order can be rated for this many days."""
TRAVEL_MINUTES = 15
"""What a courier takes from the restaurant to the door, added to the preparation time."""


class Base(DeclarativeBase):
    pass


class Restaurant(Base):
    __tablename__ = "restaurants"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    cuisine: Mapped[str] = mapped_column(String(16))
    address: Mapped[str] = mapped_column(String(120))
    zone: Mapped[str] = mapped_column(String(16))
    """Where the kitchen is; its couriers work in this zone."""
    phone: Mapped[str] = mapped_column(String(24))
    opens_at: Mapped[str] = mapped_column(String(5))
    """"HH:MM"; orders are taken from ``opens_at`` until (not including) ``closes_at``."""
    closes_at: Mapped[str] = mapped_column(String(5))
    closed_days: Mapped[str] = mapped_column(String(32), default="")
    """Space-separated weekdays ("mon tue") on which it is closed all day."""
    minimum_order: Mapped[Decimal] = mapped_column(Money())
    """The least food subtotal (before fees and tip) it accepts an order for."""
    prep_minutes: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    zones: Mapped[list[DeliveryZone]] = relationship(order_by="DeliveryZone.zone")
    items: Mapped[list[MenuItem]] = relationship(
        order_by="[MenuItem.position, MenuItem.id]", viewonly=True
    )


class DeliveryZone(Base):
    """A zone a restaurant delivers to, and what delivery there costs."""

    __tablename__ = "delivery_zones"
    restaurant_id: Mapped[str] = mapped_column(ForeignKey("restaurants.id"), primary_key=True)
    zone: Mapped[str] = mapped_column(String(16), primary_key=True)
    fee: Mapped[Decimal] = mapped_column(Money())


class MenuItem(Base):
    __tablename__ = "menu_items"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    restaurant_id: Mapped[str] = mapped_column(ForeignKey("restaurants.id"), index=True)
    category: Mapped[str] = mapped_column(String(40))
    name: Mapped[str] = mapped_column(String(80))
    description: Mapped[str] = mapped_column(String(200))
    price: Mapped[Decimal] = mapped_column(Money())
    available: Mapped[bool] = mapped_column(Boolean)
    """False while sold out: it cannot be added to a cart or ordered."""
    position: Mapped[int] = mapped_column(Integer)
    """Where it appears on the menu (categories in order, then items)."""

    groups: Mapped[list[OptionGroup]] = relationship(
        order_by="[OptionGroup.position, OptionGroup.id]"
    )


class OptionGroup(Base):
    """A choice to make about an item: "Size" (required, pick one) or "Extras" (up to n)."""

    __tablename__ = "option_groups"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    item_id: Mapped[str] = mapped_column(ForeignKey("menu_items.id"), index=True)
    name: Mapped[str] = mapped_column(String(40))
    required: Mapped[bool] = mapped_column(Boolean)
    """A required group takes exactly one choice; an optional one up to ``max_choices``."""
    max_choices: Mapped[int] = mapped_column(Integer)
    position: Mapped[int] = mapped_column(Integer)

    options: Mapped[list[Option]] = relationship(order_by="[Option.position, Option.id]")


class Option(Base):
    __tablename__ = "options"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    group_id: Mapped[str] = mapped_column(ForeignKey("option_groups.id"), index=True)
    item_id: Mapped[str] = mapped_column(ForeignKey("menu_items.id"), index=True)
    name: Mapped[str] = mapped_column(String(40))
    price_delta: Mapped[Decimal] = mapped_column(Money())
    """Added to the item's price (0.00 for the base choice)."""
    position: Mapped[int] = mapped_column(Integer)


class Customer(Base):
    __tablename__ = "customers"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120), unique=True)
    phone: Mapped[str] = mapped_column(String(24))
    address: Mapped[str] = mapped_column(String(120))
    zone: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    cart: Mapped[list[CartLine]] = relationship(order_by="CartLine.id", viewonly=True)


class CartLine(Base):
    """One item (with its chosen options) in a customer's cart; a cart is one restaurant's."""

    __tablename__ = "cart_lines"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    restaurant_id: Mapped[str] = mapped_column(ForeignKey("restaurants.id"))
    item_id: Mapped[str] = mapped_column(ForeignKey("menu_items.id"))
    option_ids: Mapped[str] = mapped_column(String(200))
    """Space-separated option ids in id order ("" for none)."""
    quantity: Mapped[int] = mapped_column(Integer)
    unit_price: Mapped[Decimal] = mapped_column(Money())
    added_at: Mapped[dt.datetime] = mapped_column(DateTime)


class Courier(Base):
    __tablename__ = "couriers"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    phone: Mapped[str] = mapped_column(String(24))
    vehicle: Mapped[str] = mapped_column(String(12))
    zone: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(12))
    """"available", "on_delivery" (busy with one order) or "off_shift"."""


class Order(Base):
    __tablename__ = "orders"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    restaurant_id: Mapped[str] = mapped_column(ForeignKey("restaurants.id"), index=True)
    courier_id: Mapped[str | None] = mapped_column(
        ForeignKey("couriers.id"), nullable=True, index=True
    )
    status: Mapped[str] = mapped_column(String(12))
    delivery_address: Mapped[str] = mapped_column(String(120))
    zone: Mapped[str] = mapped_column(String(16))
    note: Mapped[str] = mapped_column(String(200), default="")
    subtotal: Mapped[Decimal] = mapped_column(Money())
    delivery_fee: Mapped[Decimal] = mapped_column(Money())
    tip: Mapped[Decimal] = mapped_column(Money())
    total: Mapped[Decimal] = mapped_column(Money())
    refunded: Mapped[Decimal] = mapped_column(Money())
    cancel_reason: Mapped[str | None] = mapped_column(String(24), nullable=True)
    placed_at: Mapped[dt.datetime] = mapped_column(DateTime)
    estimated_delivery_at: Mapped[dt.datetime] = mapped_column(DateTime)

    lines: Mapped[list[OrderLine]] = relationship(order_by="OrderLine.id")
    history: Mapped[list[TrackingEvent]] = relationship(
        order_by="[TrackingEvent.at, TrackingEvent.id]"
    )


class OrderLine(Base):
    __tablename__ = "order_lines"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    order_id: Mapped[str] = mapped_column(ForeignKey("orders.id"), index=True)
    item_id: Mapped[str] = mapped_column(ForeignKey("menu_items.id"))
    name: Mapped[str] = mapped_column(String(80))
    options: Mapped[str] = mapped_column(String(300))
    """The chosen options' names, comma-separated ("Large, Extra cheese")."""
    quantity: Mapped[int] = mapped_column(Integer)
    unit_price: Mapped[Decimal] = mapped_column(Money())
    line_total: Mapped[Decimal] = mapped_column(Money())


class TrackingEvent(Base):
    """One step of an order's status history."""

    __tablename__ = "tracking_events"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    order_id: Mapped[str] = mapped_column(ForeignKey("orders.id"), index=True)
    status: Mapped[str] = mapped_column(String(12))
    at: Mapped[dt.datetime] = mapped_column(DateTime)
    note: Mapped[str] = mapped_column(String(200))


class Rating(Base):
    __tablename__ = "ratings"
    __table_args__ = (UniqueConstraint("order_id"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    order_id: Mapped[str] = mapped_column(ForeignKey("orders.id"))
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"))
    restaurant_id: Mapped[str] = mapped_column(ForeignKey("restaurants.id"), index=True)
    courier_id: Mapped[str] = mapped_column(ForeignKey("couriers.id"))
    food_stars: Mapped[int] = mapped_column(Integer)
    delivery_stars: Mapped[int] = mapped_column(Integer)
    comment: Mapped[str] = mapped_column(String(500))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


# ------------------------------------------------------------ domain rules
# Shared by the sampler and the tools, so sampled history and live calls agree exactly.
def minutes(hhmm: str) -> int:
    """Minutes after midnight of an "HH:MM" time.

    >>> minutes("11:30")
    690
    """
    hours, mins = hhmm.split(":")
    return int(hours) * 60 + int(mins)


def is_open(restaurant: Restaurant, when: dt.datetime) -> bool:
    """Whether the restaurant takes orders at ``when`` (its days and hours)."""
    if WEEKDAYS[when.weekday()] in restaurant.closed_days.split():
        return False
    now = when.hour * 60 + when.minute
    return minutes(restaurant.opens_at) <= now < minutes(restaurant.closes_at)


def next_opening(restaurant: Restaurant, when: dt.datetime) -> dt.datetime:
    """When the restaurant next opens after ``when`` (``when`` itself if it is open)."""
    if is_open(restaurant, when):
        return when
    opens = minutes(restaurant.opens_at)
    for days in range(8):
        day = when.date() + dt.timedelta(days=days)
        if WEEKDAYS[day.weekday()] in restaurant.closed_days.split():
            continue
        start = dt.datetime.combine(day, dt.time(opens // 60, opens % 60))
        if start >= when:
            return start
    return when  # unreachable for a restaurant open at least one day a week


def cancel_refund(order: Order, reason: str) -> Decimal:
    """What cancelling ``order`` now gives back.

    Before the kitchen starts (placed, accepted) and whenever the restaurant or courier is
    at fault, everything; once it is preparing, a customer's cancellation keeps half of the
    food subtotal (rounded half up to the cent) for the restaurant.

    >>> o = Order(status="preparing", subtotal=Decimal("25.05"), total=Decimal("30.04"))
    >>> cancel_refund(o, "customer_request"), cancel_refund(o, "restaurant_unavailable")
    (Decimal('17.51'), Decimal('30.04'))
    """
    if order.status != "preparing" or reason in NOT_CUSTOMERS_FAULT:
        return order.total
    kept = (order.subtotal / 2).quantize(CENT, rounding=ROUND_HALF_UP)
    return order.total - kept


def split_ids(option_ids: str) -> list[str]:
    return option_ids.split() if option_ids else []
