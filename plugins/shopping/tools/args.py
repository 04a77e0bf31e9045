"""What the shopping tools take: entity rows, argument types and the named rules."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import Field

from prove_gym.server import Entity, Record

from ..models import (
    MAX_CARD_TEXT,
    MAX_PER_ITEM,
    RETURN_WINDOW_DAYS,
    Address,
    Coupon,
    Customer,
    Order,
    PaymentMethod,
    Product,
    ReturnRequest,
    Variant,
)

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
"""The rules of every version, which the server's instructions carry; a version's own are
in its ``instructions`` (the earlier versions' system prompt stays as it was)."""
RULES_V2: dict[str, str] = {
    "idempotency_key_reused": "A checkout's idempotency key names one checkout of the "
    "customer: checking out again with the same key, address and shipping method returns "
    "the order it placed; with another address or method it is refused.",
}
"""The rules new in prove/shopping-v2."""
RULES_V3: dict[str, str] = {
    "payment_method_required": "From v3 a checkout charges one of the customer's saved "
    "cards: it names its payment_method_id (list_payment_methods; add_payment_method saves "
    "one).",
    "card_expired": "A card is good through the last day of its expiry month: an expired "
    "card is not saved, nor charged.",
    "not_your_payment_method": "A checkout charges a card of its own customer only.",
    "payment_method_removed": "A removed card is not charged, and is removed once.",
    "duplicate_card": "A customer does not save the same card (brand, last four digits and "
    "expiry) twice.",
    "card_number_invalid": "A card number is 13-19 digits with a valid check digit (Luhn), "
    "or a token such as tok_visa.",
    "test_card_only": "The shop is a sandbox: it takes the card networks' test numbers "
    "(such as 4242 4242 4242 4242) or tokens, never a real card's number.",
}
"""The rules new in prove/shopping-v3: a checkout is paid with a saved card."""


CustomerRow = Annotated[Record[Customer], Entity("customer")]
ProductRow = Annotated[Record[Product], Entity("product")]
VariantRow = Annotated[Record[Variant], Entity("variant")]
AddressRow = Annotated[Record[Address], Entity("address")]
CouponRow = Annotated[Record[Coupon], Entity("coupon")]
OrderRow = Annotated[Record[Order], Entity("order")]
ReturnRow = Annotated[Record[ReturnRequest], Entity("return")]
PaymentMethodRow = Annotated[Record[PaymentMethod], Entity("payment_method")]
CardNumber = Annotated[str, Field(min_length=1, max_length=MAX_CARD_TEXT)]
ExpMonth = Annotated[int, Field(ge=1, le=12)]
ExpYear = Annotated[int, Field(ge=2000, le=2099)]
VariantIds = Annotated[list[VariantRow], Field(min_length=1, max_length=20)]
SearchText = Annotated[str, Field(max_length=200)]
IdempotencyKey = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")]
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
