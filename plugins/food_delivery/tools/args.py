"""What the food_delivery tools take: entity rows, argument types and the named rules."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import Field

from prove_gym.server import Entity, Record

from ..models import (
    MAX_CART_LINES,
    MAX_LINE_QUANTITY,
    RATING_WINDOW_DAYS,
    CartLine,
    Courier,
    Customer,
    MenuItem,
    Option,
    Order,
    Restaurant,
)

RestaurantRow = Annotated[Record[Restaurant], Entity("restaurant")]
ItemRow = Annotated[Record[MenuItem], Entity("menu_item")]
OptionRow = Annotated[Record[Option], Entity("option")]
CustomerRow = Annotated[Record[Customer], Entity("customer")]
CartLineRow = Annotated[Record[CartLine], Entity("cart_line")]
OrderRow = Annotated[Record[Order], Entity("order")]
CourierRow = Annotated[Record[Courier], Entity("courier")]
SearchText = Annotated[str, Field(max_length=200)]
Zone = Literal[
    "downtown",
    "old_town",
    "riverside",
    "harbor",
    "university",
    "northgate",
    "west_end",
    "east_side",
]
Cuisine = Literal[
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
]
OrderStatus = Literal["placed", "accepted", "preparing", "picked_up", "delivered", "cancelled"]
NextStatus = Literal["accepted", "preparing", "picked_up", "delivered"]
CancelReason = Literal[
    "customer_request", "duplicate_order", "restaurant_unavailable", "courier_unavailable"
]
CUSTOMER_CANCEL_REASONS = ("customer_request", "duplicate_order")
"""The reasons a customer acting for themself cancels with (from env version 1): the others
refund in full while preparing, and are the restaurant's or dispatch's to give."""
Stars = Annotated[int, Field(ge=1, le=5)]
Tip = Annotated[Decimal, Field(ge=0, le=100, decimal_places=2)]
Quantity = Annotated[int, Field(ge=1, le=MAX_LINE_QUANTITY)]
Limit = Annotated[int, Field(ge=1, le=50)]

RULES: dict[str, str] = {
    "item_unavailable": "A sold-out menu item cannot be added to a cart or ordered.",
    "option_not_on_item": "Every chosen option must belong to the item, each at most once.",
    "required_option_missing": "Each required option group (such as Size) takes exactly one "
    "choice.",
    "too_many_options": "An option group takes at most its max_choices options.",
    "one_restaurant_per_cart": "A cart holds items of one restaurant only.",
    "outside_delivery_zone": "A restaurant only delivers to its delivery zones.",
    "cart_limit": f"A cart has at most {MAX_CART_LINES} lines and {MAX_LINE_QUANTITY} of one item.",
    "cart_empty": "An empty cart cannot be ordered.",
    "restaurant_closed": "Orders are taken only during the restaurant's opening hours.",
    "below_minimum_order": "The food subtotal must reach the restaurant's minimum order.",
    "invalid_transition": "An order moves placed -> accepted -> preparing -> picked_up -> "
    "delivered, one step at a time.",
    "courier_required": "An order is picked up by its assigned courier.",
    "order_not_assignable": "A courier is assigned to an accepted or preparing order.",
    "courier_unavailable": "Only an available courier (on shift, not on a delivery) can be "
    "assigned.",
    "courier_wrong_zone": "A courier works in one zone and picks up only from restaurants there.",
    "courier_already_assigned": "Assigning the order's own courier again changes nothing.",
    "order_not_cancellable": "Only placed, accepted or preparing orders can be cancelled; the "
    "refund is everything, except that a customer's cancellation while preparing keeps half "
    "the food subtotal.",
    "customer_cancel_reason": "A signed-in customer (from env version 1) cancels with reason "
    "customer_request or duplicate_order; restaurant_unavailable and courier_unavailable are "
    "the restaurant's and dispatch's to give.",
    "rating_not_allowed": "Only a delivered order can be rated.",
    "already_rated": "An order is rated once.",
    "rating_window": f"An order can be rated for {RATING_WINDOW_DAYS} days after delivery.",
    "courier_has_active_order": "A courier on a delivery stays on it until it is delivered, "
    "cancelled or reassigned.",
}
