"""What the shopping tools return: the TypedDicts that become their output schemas."""

from __future__ import annotations

from decimal import Decimal

from prove_gym.server import NotRequired, TypedDict


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
    shipping_refund: NotRequired[Decimal]
    """From prove/shopping-v2: the order's shipping refunded with a wrong item's return."""


class ReturnList(TypedDict):
    total: int
    returns: list[ReturnOut]


class CardOut(TypedDict):
    payment_method_id: str
    brand: str
    last4: str


class OrderPaymentOut(CardOut):
    amount: Decimal


class PaymentMethodOut(CardOut):
    customer_id: str
    exp_month: int
    exp_year: int
    expired: bool
    billing_address_id: str
    added_at: str


class PaymentMethodList(TypedDict):
    customer_id: str
    payment_methods: list[PaymentMethodOut]


class PaymentMethodRemoved(TypedDict):
    payment_method_id: str
    customer_id: str
    removed_at: str
    payment_methods: list[PaymentMethodOut]


class OrderDetail(OrderSummary):
    shipping_method: str
    subtotal: Decimal
    coupon_code: str | None
    discount: Decimal
    shipping: Decimal
    tax: NotRequired[Decimal]
    """From prove/shopping-v2: the sales tax the total holds."""
    payment: NotRequired[OrderPaymentOut | None]
    """From prove/shopping-v3: the card charged and the amount (null: an order placed before
    the shop kept cards)."""
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
    refunded_to: NotRequired[CardOut | None]
    """From prove/shopping-v3: the card that paid, which the refund goes back to (null: an
    order placed before the shop kept cards, refunded the way it was paid)."""


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
    written_off: NotRequired[dict[str, int]]
    """From prove/shopping-v2: the units of a damaged return, which are not put back."""
    refunded_to: NotRequired[CardOut | None]
    """From prove/shopping-v3: as :class:`Cancellation`'s."""
    lines: list[ReturnLineOut]
