"""What the food_delivery tools return: the TypedDicts that become their output schemas."""

from __future__ import annotations

from decimal import Decimal

from prove_gym.server import TypedDict


class ZoneFee(TypedDict):
    zone: str
    fee: Decimal


class RestaurantBrief(TypedDict):
    restaurant_id: str
    name: str
    cuisine: str
    zone: str
    address: str
    hours: str
    closed_days: list[str]
    open_now: bool
    minimum_order: Decimal
    delivery_zones: list[ZoneFee]
    rating: Decimal | None
    rating_count: int


class RestaurantList(TypedDict):
    total: int
    restaurants: list[RestaurantBrief]


class CategoryOut(TypedDict):
    category: str
    items: int
    available: int


class RestaurantDetail(RestaurantBrief):
    phone: str
    prep_minutes: int
    next_opening: str | None
    categories: list[CategoryOut]
    active_orders: int


class OptionOut(TypedDict):
    option_id: str
    name: str
    price_delta: Decimal


class GroupOut(TypedDict):
    group_id: str
    name: str
    required: bool
    max_choices: int
    options: list[OptionOut]


class ItemOut(TypedDict):
    item_id: str
    category: str
    name: str
    description: str
    price: Decimal
    available: bool
    option_groups: list[GroupOut]


class MenuOut(TypedDict):
    restaurant_id: str
    name: str
    open_now: bool
    total: int
    items: list[ItemOut]


class CustomerOut(TypedDict):
    customer_id: str
    name: str
    email: str
    phone: str
    address: str
    zone: str
    cart_lines: int
    active_order_ids: list[str]


class CartLineOut(TypedDict):
    cart_line_id: str
    item_id: str
    name: str
    options: list[str]
    option_ids: list[str]
    quantity: int
    unit_price: Decimal
    line_total: Decimal


class CartOut(TypedDict):
    customer_id: str
    restaurant_id: str | None
    restaurant_name: str | None
    lines: list[CartLineOut]
    item_count: int
    subtotal: Decimal
    minimum_order: Decimal | None
    amount_to_minimum: Decimal
    delivery_fee: Decimal | None
    open_now: bool | None
    estimated_total: Decimal | None
    ready_to_order: bool
    problems: list[str]


class CartAdded(CartOut):
    added_line_id: str


class CartRemoved(CartOut):
    removed_line_id: str


class CartCleared(CartOut):
    removed_lines: int


class OrderBrief(TypedDict):
    order_id: str
    customer_id: str
    customer_name: str
    restaurant_id: str
    restaurant_name: str
    status: str
    item_count: int
    total: Decimal
    placed_at: str


class OrderList(TypedDict):
    total: int
    orders: list[OrderBrief]


class OrderLineOut(TypedDict):
    item_id: str
    name: str
    options: str
    quantity: int
    unit_price: Decimal
    line_total: Decimal


class CourierBrief(TypedDict):
    courier_id: str
    name: str
    phone: str
    vehicle: str


class TrackOut(TypedDict):
    status: str
    at: str
    note: str


class RatingBrief(TypedDict):
    rating_id: str
    food_stars: int
    delivery_stars: int
    comment: str
    created_at: str


class OrderDetail(OrderBrief):
    lines: list[OrderLineOut]
    subtotal: Decimal
    delivery_fee: Decimal
    tip: Decimal
    refunded: Decimal
    cancel_reason: str | None
    delivery_address: str
    zone: str
    note: str
    courier: CourierBrief | None
    estimated_delivery_at: str | None
    history: list[TrackOut]
    next_status: str | None
    can_cancel: bool
    refund_if_cancelled_by_customer: Decimal | None
    rating: RatingBrief | None


class CourierOut(TypedDict):
    courier_id: str
    name: str
    phone: str
    vehicle: str
    zone: str
    status: str
    active_order_id: str | None


class CourierList(TypedDict):
    total: int
    couriers: list[CourierOut]


class RatingOut(RatingBrief):
    order_id: str
    restaurant_id: str
    courier_id: str
    restaurant_rating: Decimal
    restaurant_rating_count: int
