"""Shopping state: a catalog of products and their variants (price, stock), customers with
addresses and a cart each, coupons with rules, orders with their lines, and returns.

Money is exact everywhere (:class:`~prove_gym.server.Money`, integer cents in SQLite). Times
are naive UTC relative to the state's fixed "now". The rules every state obeys (the tests
check them after random call sequences):

- a variant's ``stock`` is never negative, and equals the units it ever ``received`` minus
  the units on orders that were not cancelled plus the units of refunded returns (a
  cancelled order and a refunded return put their units back on the shelf; from
  ``prove/shopping-v2`` a damaged return is written off instead);
- an order line's ``line_total`` is quantity x unit price; an order's ``subtotal`` is the sum
  of its lines, its ``discount`` the sum of the lines' discount shares (never more than the
  subtotal), and ``total = subtotal - discount + shipping + tax``, where the tax is 0.00 but
  on an order placed under ``prove/shopping-v2``, which charges :func:`sales_tax` on the
  merchandise (subtotal - discount) at its address's state rate;
- an order is "placed", "shipped", "delivered" or "cancelled", with the matching timestamps;
  only an order that never shipped is cancelled; its address belongs to its customer;
- ``refunded`` is the sum of its refunded returns (the whole total for a cancelled order)
  and never more than the total; a return refunds its lines (each the units' share of what
  the line cost after its discount share, and from v2 its share of the tax) and, from v2,
  a wrong item's return the order's shipping too, once per order; a line's ``returned`` units (requested or refunded returns)
  never exceed its quantity, and only a delivered order has returns, each requested within
  ``RETURN_WINDOW_DAYS`` of delivery;
- a cart holds at most one coupon (one column), and that coupon applies to the cart: not
  expired, not used by the customer if single-use, the cart reaches its minimum subtotal and
  holds an item of its category; a once-per-customer coupon is on at most one order of a
  customer that was not cancelled;
- a customer with addresses has exactly one default address;
- a checkout's idempotency key (from ``prove/shopping-v2``) names an order of its customer,
  placed to the key's address with the key's shipping method;
- a saved card (from ``prove/shopping-v3``) keeps only its brand, last four digits, expiry
  and billing address (an address of its customer), never the number; an order's payment
  charges a card of the order's customer exactly the order's total.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from prove_gym.server import Money, added_later

CENT = Decimal("0.01")
ZERO = Decimal("0.00")

CATEGORIES: dict[str, str] = {
    "electronics": "Electronics",
    "home": "Home & Living",
    "kitchen": "Kitchen",
    "clothing": "Clothing",
    "shoes": "Shoes",
    "beauty": "Beauty",
    "sports": "Sports & Outdoors",
    "toys": "Toys & Games",
    "books": "Books",
}
"""Category slug -> display name."""

SHIPPING_RATES: dict[str, Decimal] = {
    "standard": Decimal("5.99"),
    "express": Decimal("14.99"),
    "overnight": Decimal("29.99"),
}
FREE_SHIPPING_FROM = Decimal("50.00")
"""Standard shipping is free when the merchandise total (subtotal - discount) reaches this."""
RETURN_WINDOW_DAYS = 30
"""Items can be returned until this many days after delivery."""
MAX_PER_ITEM = 10
"""The most units of one variant a cart (and so an order) may hold."""
LOW_STOCK = 5
"""A variant with fewer units than this (but some) is "low_stock"."""
SALES_TAX: dict[str, Decimal] = {
    "AL": Decimal("4.00"), "AK": Decimal("0.00"), "AZ": Decimal("5.60"),
    "AR": Decimal("6.50"), "CA": Decimal("7.25"), "CO": Decimal("2.90"),
    "CT": Decimal("6.35"), "DE": Decimal("0.00"), "DC": Decimal("6.00"),
    "FL": Decimal("6.00"), "GA": Decimal("4.00"), "HI": Decimal("4.00"),
    "ID": Decimal("6.00"), "IL": Decimal("6.25"), "IN": Decimal("7.00"),
    "IA": Decimal("6.00"), "KS": Decimal("6.50"), "KY": Decimal("6.00"),
    "LA": Decimal("5.00"), "ME": Decimal("5.50"), "MD": Decimal("6.00"),
    "MA": Decimal("6.25"), "MI": Decimal("6.00"), "MN": Decimal("6.875"),
    "MS": Decimal("7.00"), "MO": Decimal("4.225"), "MT": Decimal("0.00"),
    "NE": Decimal("5.50"), "NV": Decimal("6.85"), "NH": Decimal("0.00"),
    "NJ": Decimal("6.625"), "NM": Decimal("4.875"), "NY": Decimal("4.00"),
    "NC": Decimal("4.75"), "ND": Decimal("5.00"), "OH": Decimal("5.75"),
    "OK": Decimal("4.50"), "OR": Decimal("0.00"), "PA": Decimal("6.00"),
    "RI": Decimal("7.00"), "SC": Decimal("6.00"), "SD": Decimal("4.20"),
    "TN": Decimal("7.00"), "TX": Decimal("6.25"), "UT": Decimal("4.85"),
    "VT": Decimal("6.00"), "VA": Decimal("5.30"), "WA": Decimal("6.50"),
    "WV": Decimal("6.00"), "WI": Decimal("5.00"), "WY": Decimal("4.00"),
}  # fmt: skip
"""Sales tax by the shipping address's state, in percent of the merchandise (subtotal -
discount; shipping is not taxed): each state's statewide base rate, without county or city
taxes. A state not in the table (an address typed by hand) is taxed at 0. Charged from
``prove/shopping-v2`` on (:func:`sales_tax`)."""


class Base(DeclarativeBase):
    pass


class Customer(Base):
    __tablename__ = "customers"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120), unique=True)
    phone: Mapped[str] = mapped_column(String(30))
    joined_at: Mapped[dt.datetime] = mapped_column(DateTime)

    addresses: Mapped[list[Address]] = relationship(
        order_by=lambda: (Address.is_default.desc(), Address.id), viewonly=True
    )


class Address(Base):
    __tablename__ = "addresses"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    label: Mapped[str] = mapped_column(String(10))
    """"home", "work" or "other"."""
    recipient: Mapped[str] = mapped_column(String(80))
    line1: Mapped[str] = mapped_column(String(120))
    city: Mapped[str] = mapped_column(String(60))
    state: Mapped[str] = mapped_column(String(2))
    postal_code: Mapped[str] = mapped_column(String(5))
    is_default: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


class Product(Base):
    __tablename__ = "products"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(120))
    brand: Mapped[str] = mapped_column(String(40))
    category: Mapped[str] = mapped_column(String(16), index=True)
    description: Mapped[str] = mapped_column(String(400))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    variants: Mapped[list[Variant]] = relationship(
        back_populates="product", order_by="Variant.id", viewonly=True
    )


class Variant(Base):
    """One buyable version of a product (a colour, a size): its own price and stock."""

    __tablename__ = "variants"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    product_id: Mapped[str] = mapped_column(ForeignKey("products.id"), index=True)
    sku: Mapped[str] = mapped_column(String(32), unique=True)
    label: Mapped[str] = mapped_column(String(60))
    """What tells it apart, such as "Black / M" or "Standard"."""
    price: Mapped[Decimal] = mapped_column(Money())
    stock: Mapped[int] = mapped_column(Integer)
    received: Mapped[int] = mapped_column(Integer)
    """Units ever put on the shelf by the warehouse (no tool changes it)."""

    product: Mapped[Product] = relationship(back_populates="variants")


class Coupon(Base):
    """A discount code: a percentage or a fixed amount off, with its rules."""

    __tablename__ = "coupons"
    code: Mapped[str] = mapped_column(String(20), primary_key=True)
    description: Mapped[str] = mapped_column(String(160))
    percent_off: Mapped[int | None] = mapped_column(Integer, nullable=True)
    amount_off: Mapped[Decimal | None] = mapped_column(Money(), nullable=True)
    min_subtotal: Mapped[Decimal] = mapped_column(Money())
    category: Mapped[str | None] = mapped_column(String(16), nullable=True)
    """Only items of this category are discounted, and the cart must hold one."""
    once_per_customer: Mapped[bool] = mapped_column(Boolean)
    starts_at: Mapped[dt.datetime] = mapped_column(DateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime)


class Cart(Base):
    """A customer's cart: its coupon (at most one); the items are ``cart_items``."""

    __tablename__ = "carts"
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), primary_key=True)
    coupon_code: Mapped[str | None] = mapped_column(ForeignKey("coupons.code"), nullable=True)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime)

    items: Mapped[list[CartItem]] = relationship(order_by="CartItem.id", viewonly=True)


class CartItem(Base):
    __tablename__ = "cart_items"
    __table_args__ = (UniqueConstraint("customer_id", "variant_id"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("carts.customer_id"), index=True)
    variant_id: Mapped[str] = mapped_column(ForeignKey("variants.id"))
    quantity: Mapped[int] = mapped_column(Integer)
    added_at: Mapped[dt.datetime] = mapped_column(DateTime)

    variant: Mapped[Variant] = relationship()


class Order(Base):
    __tablename__ = "orders"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    address_id: Mapped[str] = mapped_column(ForeignKey("addresses.id"))
    status: Mapped[str] = mapped_column(String(10))
    """"placed", "shipped", "delivered" or "cancelled"."""
    shipping_method: Mapped[str] = mapped_column(String(10))
    subtotal: Mapped[Decimal] = mapped_column(Money())
    discount: Mapped[Decimal] = mapped_column(Money())
    shipping: Mapped[Decimal] = mapped_column(Money())
    total: Mapped[Decimal] = mapped_column(Money())
    """What the customer paid: subtotal - discount + shipping."""
    refunded: Mapped[Decimal] = mapped_column(Money())
    coupon_code: Mapped[str | None] = mapped_column(ForeignKey("coupons.code"), nullable=True)
    tracking_number: Mapped[str | None] = mapped_column(String(24), nullable=True)
    placed_at: Mapped[dt.datetime] = mapped_column(DateTime)
    shipped_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    delivered_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    cancelled_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    cancel_reason: Mapped[str | None] = mapped_column(String(30), nullable=True)

    lines: Mapped[list[OrderLine]] = relationship(order_by="OrderLine.id", viewonly=True)
    address: Mapped[Address] = relationship()


class OrderLine(Base):
    __tablename__ = "order_lines"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    order_id: Mapped[str] = mapped_column(ForeignKey("orders.id"), index=True)
    variant_id: Mapped[str] = mapped_column(ForeignKey("variants.id"), index=True)
    product_id: Mapped[str] = mapped_column(ForeignKey("products.id"))
    name: Mapped[str] = mapped_column(String(200))
    category: Mapped[str] = mapped_column(String(16))
    quantity: Mapped[int] = mapped_column(Integer)
    unit_price: Mapped[Decimal] = mapped_column(Money())
    line_total: Mapped[Decimal] = mapped_column(Money())
    discount: Mapped[Decimal] = mapped_column(Money())
    """This line's share of the order's coupon discount."""
    returned: Mapped[int] = mapped_column(Integer, default=0)
    """Units on returns of this line (requested or refunded)."""


class ReturnRequest(Base):
    """A return of some units of a delivered order; refunded once processed."""

    __tablename__ = "returns"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    order_id: Mapped[str] = mapped_column(ForeignKey("orders.id"), index=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    status: Mapped[str] = mapped_column(String(10))
    """"requested" (waiting for the refund) or "refunded"."""
    reason: Mapped[str] = mapped_column(String(30))
    amount: Mapped[Decimal] = mapped_column(Money())
    """The refund: the sum of its lines' amounts."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    refunded_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)

    lines: Mapped[list[ReturnLine]] = relationship(order_by="ReturnLine.id", viewonly=True)


class ReturnLine(Base):
    __tablename__ = "return_lines"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    return_id: Mapped[str] = mapped_column(ForeignKey("returns.id"), index=True)
    order_line_id: Mapped[str] = mapped_column(ForeignKey("order_lines.id"), index=True)
    variant_id: Mapped[str] = mapped_column(ForeignKey("variants.id"))
    quantity: Mapped[int] = mapped_column(Integer)
    amount: Mapped[Decimal] = mapped_column(Money())


class CheckoutKey(Base):
    """The idempotency key a checkout was placed with (from ``prove/shopping-v2``): checking
    out again with it returns that order instead of placing another. Keys are the customer's
    own (two customers may use the same text). No sampled state has one: the table counts in
    the state hash only once a key is written (:func:`~prove_gym.server.added_later`)."""

    __tablename__ = "checkout_keys"
    __table_args__ = added_later()
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), primary_key=True)
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    order_id: Mapped[str] = mapped_column(ForeignKey("orders.id"))
    address_id: Mapped[str] = mapped_column(ForeignKey("addresses.id"))
    shipping_method: Mapped[str] = mapped_column(String(10))


class PaymentMethod(Base):
    """A card a customer saved (from ``prove/shopping-v3``): its brand, last four digits,
    expiry and billing address, never its number. A removed card keeps its row
    (``removed_at``), as the orders it paid name it. No sampled state has one: the table
    counts in the state hash only once a card is saved (:func:`~prove_gym.server.added_later`)."""

    __tablename__ = "payment_methods"
    __table_args__ = added_later()
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    brand: Mapped[str] = mapped_column(String(12))
    """"visa", "mastercard", "amex" or "discover" (:data:`CARD_BRANDS`)."""
    last4: Mapped[str] = mapped_column(String(4))
    exp_month: Mapped[int] = mapped_column(Integer)
    exp_year: Mapped[int] = mapped_column(Integer)
    billing_address_id: Mapped[str] = mapped_column(ForeignKey("addresses.id"))
    added_at: Mapped[dt.datetime] = mapped_column(DateTime)
    removed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class OrderPayment(Base):
    """What paid an order placed under ``prove/shopping-v3``: the card charged and the amount,
    exactly the order's total; its refunds go back to that card. Orders placed before have
    none (the table is :func:`~prove_gym.server.added_later`, like :class:`PaymentMethod`)."""

    __tablename__ = "order_payments"
    __table_args__ = added_later()
    order_id: Mapped[str] = mapped_column(ForeignKey("orders.id"), primary_key=True)
    payment_method_id: Mapped[str] = mapped_column(ForeignKey("payment_methods.id"), index=True)
    amount: Mapped[Decimal] = mapped_column(Money())


# ------------------------------------------------------------ domain rules
# Shared by the sampler and the tools, so sampled history and live calls agree exactly.
def cents(value: Decimal) -> Decimal:
    """Round half up to the cent.

    >>> cents(Decimal("2.675")), cents(Decimal("7.5"))
    (Decimal('2.68'), Decimal('7.50'))
    """
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def coupon_discount(coupon: Coupon, lines: Sequence[tuple[str, Decimal]]) -> Decimal:
    """What ``coupon`` takes off lines of (category, line total): a share of the eligible
    items (those of its category, or all), never more than they cost.

    >>> c = Coupon(percent_off=15, amount_off=None, category="home")
    >>> coupon_discount(c, [("home", Decimal("40.00")), ("books", Decimal("9.99"))])
    Decimal('6.00')
    """
    eligible = sum(
        (total for category, total in lines if coupon.category in (None, category)), ZERO
    )
    if coupon.percent_off is not None:
        return cents(eligible * coupon.percent_off / 100)
    return min(coupon.amount_off or ZERO, eligible)


def allocate(amount: Decimal, weights: Sequence[Decimal]) -> list[Decimal]:
    """Split ``amount`` into cents proportional to ``weights`` (largest remainder, ties to the
    first), so the shares add up to ``amount`` exactly.

    >>> allocate(Decimal("10.00"), [Decimal("1"), Decimal("1"), Decimal("1")])
    [Decimal('3.34'), Decimal('3.33'), Decimal('3.33')]
    """
    whole = sum(weights, ZERO)
    if whole <= 0 or amount <= 0:
        return [ZERO for _ in weights]
    units = int(amount / CENT)
    raw = [Decimal(units) * w / whole for w in weights]
    shares = [int(r.to_integral_value(rounding=ROUND_FLOOR)) for r in raw]
    left = units - sum(shares)
    order = sorted(range(len(raw)), key=lambda i: (-(raw[i] - shares[i]), i))
    for i in order[:left]:
        shares[i] += 1
    return [Decimal(s) * CENT for s in shares]


def shipping_cost(method: str, merchandise: Decimal) -> Decimal:
    """The shipping charge: standard is free from ``FREE_SHIPPING_FROM`` of merchandise.

    >>> shipping_cost("standard", Decimal("49.99")), shipping_cost("standard", Decimal("50"))
    (Decimal('5.99'), Decimal('0.00'))
    """
    if method == "standard" and merchandise >= FREE_SHIPPING_FROM:
        return ZERO
    return SHIPPING_RATES[method]


def sales_tax(merchandise: Decimal, state: str) -> Decimal:
    """The sales tax on ``merchandise`` shipped to ``state`` (:data:`SALES_TAX`), rounded
    half up to the cent like every amount of the shop.

    >>> sales_tax(Decimal("84.99"), "TX"), sales_tax(Decimal("84.99"), "OR")
    (Decimal('5.31'), Decimal('0.00'))
    """
    return cents(merchandise * SALES_TAX.get(state, ZERO) / 100)


def refund_for(net: Decimal, quantity: int, before: int, units: int) -> Decimal:
    """The refund for ``units`` more of a line whose ``net`` (line total - discount share)
    paid for ``quantity`` units, ``before`` of them already returned: the units' share,
    rounded so that returning every unit refunds exactly ``net``.

    >>> [refund_for(Decimal("10.00"), 3, b, 1) for b in range(3)]
    [Decimal('3.33'), Decimal('3.34'), Decimal('3.33')]
    """
    return cents(net * (before + units) / quantity) - cents(net * before / quantity)


def availability(stock: int) -> str:
    """ "out_of_stock", "low_stock" (under ``LOW_STOCK``) or "in_stock"."""
    if stock <= 0:
        return "out_of_stock"
    return "low_stock" if stock < LOW_STOCK else "in_stock"


# ------------------------------------------------------------ cards (prove/shopping-v3)
CARD_BRANDS = ("visa", "mastercard", "amex", "discover")
"""The card brands the shop takes."""
TEST_CARDS: dict[str, str] = {
    "4242424242424242": "visa",
    "4000056655665556": "visa",
    "4012888888881881": "visa",
    "5555555555554444": "mastercard",
    "2223003122003222": "mastercard",
    "5200828282828210": "mastercard",
    "378282246310005": "amex",
    "371449635398431": "amex",
    "6011111111111117": "discover",
    "6011000990139424": "discover",
}
"""The card networks' published test numbers, which the shop (a sandbox, as a payment
provider's test mode is) takes; any other number, even a well-formed one, is refused, so no
real card's number is ever handled."""
CARD_TOKENS: dict[str, str] = {
    "tok_visa": "4242424242424242",
    "tok_mastercard": "5555555555554444",
    "tok_amex": "378282246310005",
    "tok_discover": "6011111111111117",
}
"""Tokens that stand for a test card (as a payment page hands a shop a token, not the
number): each names the number it stands for."""
CARD_SEPARATORS = frozenset(" -")
"""What may separate a card number's digit groups ("4242 4242 4242 4242")."""
MAX_CARD_TEXT = 32
"""The longest card number text taken (19 digits and their separators fit)."""


def luhn_ok(digits: str) -> bool:
    """Whether ``digits`` (ASCII digits only) passes the Luhn check digit test, which every
    card number does: one pass from the right, doubling every second digit.

    >>> luhn_ok("4242424242424242"), luhn_ok("4242424242424241")
    (True, False)
    """
    total = 0
    for k, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if k % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


class CardRefused(ValueError):
    """A card number or token the shop does not take: ``rule`` names why
    (``card_number_invalid`` or ``test_card_only``)."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(detail)
        self.rule = rule


def read_card(text: str) -> tuple[str, str]:
    """The (brand, last four digits) of a test card given by its number or a token
    (:data:`TEST_CARDS`, :data:`CARD_TOKENS`). Linear in ``text`` (no pattern matching);
    what is refused is never repeated in the error, which names only the last four digits.

    >>> read_card("4242 4242 4242 4242"), read_card("tok_amex")
    (('visa', '4242'), ('amex', '0005'))

    Raises:
        CardRefused: ``card_number_invalid`` (not 13-19 digits, or a wrong check digit) or
            ``test_card_only`` (a well-formed number that is not a test card).
    """
    token = text.strip()
    if token in CARD_TOKENS:
        number = CARD_TOKENS[token]
        return TEST_CARDS[number], number[-4:]
    if len(text) > MAX_CARD_TEXT:
        raise CardRefused(
            "card_number_invalid", f"a card number is at most {MAX_CARD_TEXT} characters"
        )
    digits = "".join(ch for ch in text if ch not in CARD_SEPARATORS)
    if not digits.isascii() or not digits.isdigit() or not 13 <= len(digits) <= 19:
        raise CardRefused(
            "card_number_invalid",
            "a card number is 13 to 19 digits (spaces or dashes between groups allowed), or "
            f"a token: {', '.join(CARD_TOKENS)}",
        )
    if not luhn_ok(digits):
        raise CardRefused(
            "card_number_invalid",
            f"the card number ending {digits[-4:]} fails its check digit (Luhn): a digit is "
            "wrong or two are swapped",
        )
    brand = TEST_CARDS.get(digits)
    if brand is None:
        raise CardRefused(
            "test_card_only",
            f"the card ending {digits[-4:]} is not a test card; this shop is a sandbox and "
            "takes only test cards such as 4242 4242 4242 4242, or a token such as tok_visa",
        )
    return brand, digits[-4:]


def card_expired(exp_month: int, exp_year: int, now: dt.datetime) -> bool:
    """Whether a card with this expiry is expired at ``now``: a card is good through the last
    day of its expiry month.

    >>> at = dt.datetime(2026, 3, 31, 23, 59)
    >>> card_expired(3, 2026, at), card_expired(2, 2026, at), card_expired(12, 2025, at)
    (False, True, True)
    """
    return (now.year, now.month) > (exp_year, exp_month)
