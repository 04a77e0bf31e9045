"""A realistic online shop: size 1 gives 60 customers (most with one to three addresses, a
few with none), ~90 products with ~200 variants (some sold out, some nearly), 15 coupons
(three expired, one not started yet), 150 orders over the last 180 days and ~30 returns;
size n gives n times as many customers, products and orders (the coupons stay the same).

History is replayed with the live rules: orders take coupons only while they are valid and
when the cart qualifies (single-use ones once per customer), their totals and discount
shares come from the same functions the tools use, orders placed in the last days are still
"placed" or "shipped", older ones delivered (a few cancelled before shipping), returns are
requested within the return window of delivered orders and refunded a few days later.
About half the customers have items in their cart, some with a coupon applied, some with
more units of a variant than are left in stock (someone else bought them meanwhile) and a
few stocking up on close to the ten-unit limit. Each variant's ``received`` units are what
its stock, sales and restocked returns add up to.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from random import Random

from sqlalchemy import update

from prove_gym.server import SampleContext

from .models import (
    CENT,
    MAX_PER_ITEM,
    RETURN_WINDOW_DAYS,
    Address,
    Cart,
    CartItem,
    Coupon,
    Customer,
    Order,
    OrderLine,
    Product,
    ReturnLine,
    ReturnRequest,
    Variant,
    allocate,
    coupon_discount,
    refund_for,
    shipping_cost,
)

SIZES = ["XS", "S", "M", "L", "XL"]
SHOE_SIZES = ["7", "8", "9", "10", "11", "12"]
COLORS = ["Black", "White", "Navy", "Grey", "Red", "Olive", "Sand", "Blue"]

# category -> (item, (low, high) price, variant axis, brands)
CATALOG: dict[str, list[tuple[str, tuple[int, int], str]]] = {
    "electronics": [
        ("Wireless Earbuds", (39, 149), "color"),
        ("Noise-Cancelling Headphones", (89, 349), "color"),
        ("Smart Watch", (129, 399), "color"),
        ("Bluetooth Speaker", (29, 129), "color"),
        ("USB-C Charger 65W", (25, 59), "none"),
        ("Portable Power Bank 20000mAh", (29, 69), "color"),
        ("4K Streaming Stick", (39, 59), "none"),
        ("Mechanical Keyboard", (69, 169), "switch"),
        ("Wireless Mouse", (19, 79), "color"),
        ("27-inch Monitor", (199, 449), "none"),
    ],
    "home": [
        ("Linen Duvet Cover", (79, 189), "bed"),
        ("Memory Foam Pillow", (29, 69), "none"),
        ("Ceramic Table Lamp", (39, 119), "color"),
        ("Cotton Bath Towel Set", (29, 79), "color"),
        ("Scented Soy Candle", (14, 36), "scent"),
        ("Wool Throw Blanket", (49, 129), "color"),
        ("Storage Basket Set", (24, 59), "color"),
        ("Blackout Curtains", (34, 89), "color"),
    ],
    "kitchen": [
        ("Chef's Knife 8-inch", (39, 149), "none"),
        ("Cast Iron Skillet 12-inch", (29, 79), "none"),
        ("Nonstick Cookware Set", (99, 299), "none"),
        ("Electric Kettle", (29, 99), "color"),
        ("French Press Coffee Maker", (24, 59), "capacity"),
        ("Bamboo Cutting Board", (19, 49), "none"),
        ("Stand Mixer", (199, 449), "color"),
        ("Glass Food Storage Set", (24, 59), "none"),
    ],
    "clothing": [
        ("Crewneck T-Shirt", (15, 35), "size"),
        ("Slim Fit Chinos", (39, 89), "size"),
        ("Merino Wool Sweater", (59, 139), "size"),
        ("Rain Jacket", (69, 189), "size"),
        ("Hooded Sweatshirt", (39, 79), "size"),
        ("Denim Jacket", (59, 129), "size"),
        ("Running Shorts", (19, 45), "size"),
    ],
    "shoes": [
        ("Trail Running Shoes", (89, 169), "shoe"),
        ("Leather Sneakers", (69, 149), "shoe"),
        ("Hiking Boots", (119, 229), "shoe"),
        ("Canvas Slip-Ons", (39, 69), "shoe"),
        ("Wool Slippers", (39, 89), "shoe"),
    ],
    "beauty": [
        ("Vitamin C Serum", (18, 59), "none"),
        ("Hydrating Face Moisturizer", (15, 49), "none"),
        ("Mineral Sunscreen SPF 50", (12, 34), "none"),
        ("Argan Oil Shampoo", (12, 29), "capacity"),
        ("Electric Toothbrush", (39, 129), "color"),
    ],
    "sports": [
        ("Yoga Mat", (24, 89), "color"),
        ("Adjustable Dumbbells", (99, 349), "none"),
        ("Insulated Water Bottle 32oz", (19, 45), "color"),
        ("Camping Tent 2-Person", (89, 249), "none"),
        ("Cycling Helmet", (39, 129), "size"),
        ("Resistance Band Set", (15, 39), "none"),
    ],
    "toys": [
        ("Building Blocks Set 500 Pieces", (29, 79), "none"),
        ("Remote Control Car", (34, 99), "color"),
        ("Wooden Puzzle Set", (14, 35), "none"),
        ("Strategy Board Game", (24, 59), "none"),
        ("Plush Teddy Bear", (14, 39), "color"),
    ],
    "books": [
        ("The Midnight Library", (12, 18), "format"),
        ("Atomic Habits", (16, 27), "format"),
        ("Dune", (10, 19), "format"),
        ("Salt Fat Acid Heat", (25, 40), "format"),
        ("Project Hail Mary", (12, 20), "format"),
    ],
}
BRANDS: dict[str, list[str]] = {
    "electronics": ["Sonara", "Voltix", "Nimbus", "Kestrel"],
    "home": ["Hearth & Co", "Linden", "Mossy Oak Home"],
    "kitchen": ["Copperline", "Ferro", "Kitchara"],
    "clothing": ["Northway", "Tidewater", "Urban Fieldhouse"],
    "shoes": ["Strider", "Peakline", "Cobble"],
    "beauty": ["Glowfield", "Purely", "Amara"],
    "sports": ["Summit Gear", "Pacer", "Ironleaf"],
    "toys": ["Playwell", "Tinker Town"],
    "books": ["Penguin", "Harper", "Vintage"],
}
AXES: dict[str, list[str]] = {
    "size": SIZES,
    "shoe": SHOE_SIZES,
    "switch": ["Red switches", "Brown switches", "Blue switches"],
    "bed": ["Twin", "Queen", "King"],
    "scent": ["Cedar", "Lavender", "Fig", "Sea Salt"],
    "capacity": ["Small", "Large"],
    "format": ["Paperback", "Hardcover"],
}
DESCRIPTIONS = [
    "Customer favourite with a two-year warranty.",
    "Thoughtfully designed and built to last.",
    "New this season; ships in recyclable packaging.",
    "Rated 4.6 out of 5 by our customers.",
    "Great as a gift; free returns within 30 days of delivery.",
]

# code, description, percent_off, amount_off, min_subtotal, category, once, starts (days from
# now), expires (days from now)
COUPONS: list[tuple[str, str, int | None, str | None, str, str | None, bool, int, int]] = [
    ("WELCOME10", "10% off your order", 10, None, "0", None, True, -150, 60),
    ("SAVE15", "15% off orders of 75.00 or more", 15, None, "75", None, True, -90, 21),
    ("TAKE20", "20.00 off orders of 100.00 or more", None, "20", "100", None, True, -60, 10),
    (
        "HOME25",
        "25% off home items, orders of 40.00 or more",
        25,
        None,
        "40",
        "home",
        True,
        -45,
        15,
    ),
    (
        "KITCHEN10",
        "10.00 off kitchen items, orders of 30.00 or more",
        None,
        "10",
        "30",
        "kitchen",
        False,
        -120,
        30,
    ),
    (
        "SPORTS15",
        "15% off sports gear, orders of 50.00 or more",
        15,
        None,
        "50",
        "sports",
        True,
        -30,
        5,
    ),
    ("SHOES20", "20% off shoes, orders of 60.00 or more", 20, None, "60", "shoes", True, -20, 25),
    (
        "BOOKS5",
        "5.00 off books, orders of 20.00 or more",
        None,
        "5",
        "20",
        "books",
        False,
        -200,
        40,
    ),
    ("TOYS10", "10% off toys, orders of 25.00 or more", 10, None, "25", "toys", False, -75, 45),
    (
        "TECH50",
        "50.00 off electronics, orders of 300.00 or more",
        None,
        "50",
        "300",
        "electronics",
        True,
        -40,
        12,
    ),
    ("FLASH30", "30% off orders of 150.00 or more, today only", 30, None, "150", None, True, -1, 0),
    ("SUMMER20", "20% off everything, summer sale", 20, None, "50", None, True, -200, -30),
    ("SPRING10", "10.00 off orders of 40.00 or more", None, "10", "40", None, False, -120, -5),
    (
        "BEAUTY15",
        "15% off beauty, orders of 30.00 or more",
        15,
        None,
        "30",
        "beauty",
        True,
        -60,
        -1,
    ),
    (
        "HOLIDAY25",
        "25% off orders of 80.00 or more, from next week",
        25,
        None,
        "80",
        None,
        True,
        7,
        40,
    ),
]
STREETS = ["Maple Ave", "Oak St", "Cedar Ln", "Pine Rd", "Elm St", "Lakeview Dr", "Hillcrest Rd"]
CANCEL_REASONS = ["changed_mind", "ordered_by_mistake", "found_cheaper", "delivery_too_slow"]
RETURN_REASONS = ["damaged", "wrong_item", "no_longer_needed", "not_as_described", "wrong_size"]


def _price(rng: Random, low: int, high: int) -> Decimal:
    """A shop price such as 39.99 or 124.00."""
    raw = rng.uniform(low, high)
    if raw < 100:
        return Decimal(int(raw)) + Decimal(rng.choice(["0.99", "0.99", "0.49", "0.00"]))
    return Decimal(int(raw // 5 * 5)) - (Decimal("0.01") if rng.random() < 0.6 else Decimal(0))


def _variants(rng: Random, axis: str) -> list[str]:
    if axis == "none":
        return ["Standard"]
    if axis == "color":
        return rng.sample(COLORS, rng.choice([1, 2, 2, 3, 4]))
    options = AXES[axis]
    if axis in ("size", "shoe"):
        start = rng.randrange(0, max(1, len(options) - 3))
        picked = options[start : start + rng.choice([3, 4, 4, 5])]
        if rng.random() < 0.5:
            color = rng.choice(COLORS)
            return [f"{color} / {size}" for size in picked]
        return picked
    return rng.sample(options, rng.choice([1, len(options)]) if len(options) > 2 else len(options))


def _stock(rng: Random) -> int:
    roll = rng.random()
    if roll < 0.08:
        return 0
    if roll < 0.22:
        return rng.randint(1, 4)
    return rng.randint(5, 80)


# Rows are built as plain objects (attributes named as the columns) and inserted a table at
# a time, in the order the ORM's flushes wrote them: a mapped object costs the ORM ~30 µs to
# build and a flush more to write. ``eq=False``: compared by identity, as mapped objects are.
# (The few coupons stay mapped objects: ``coupon_discount`` takes one.)
@dataclass(slots=True, eq=False)
class _Customer:
    id: str
    name: str
    email: str
    phone: str
    joined_at: dt.datetime


@dataclass(slots=True, eq=False)
class _Address:
    id: str
    customer_id: str
    label: str
    recipient: str
    line1: str
    city: str
    state: str
    postal_code: str
    is_default: bool
    created_at: dt.datetime


@dataclass(slots=True, eq=False)
class _Product:
    id: str
    name: str
    brand: str
    category: str
    description: str
    created_at: dt.datetime


@dataclass(slots=True, eq=False)
class _Variant:
    id: str
    product_id: str
    sku: str
    label: str
    price: Decimal
    stock: int
    received: int


@dataclass(slots=True, eq=False)
class _Cart:
    customer_id: str
    coupon_code: str | None
    updated_at: dt.datetime


@dataclass(slots=True, eq=False)
class _CartItem:
    id: str
    customer_id: str
    variant_id: str
    quantity: int
    added_at: dt.datetime


@dataclass(slots=True, eq=False)
class _Order:
    id: str
    customer_id: str
    address_id: str
    status: str
    shipping_method: str
    subtotal: Decimal
    discount: Decimal
    shipping: Decimal
    total: Decimal
    refunded: Decimal
    coupon_code: str | None
    tracking_number: str | None
    placed_at: dt.datetime
    shipped_at: dt.datetime | None = None
    delivered_at: dt.datetime | None = None
    cancelled_at: dt.datetime | None = None
    cancel_reason: str | None = None


@dataclass(slots=True, eq=False)
class _OrderLine:
    id: str
    order_id: str
    variant_id: str
    product_id: str
    name: str
    category: str
    quantity: int
    unit_price: Decimal
    line_total: Decimal
    discount: Decimal
    returned: int


@dataclass(slots=True, eq=False)
class _Return:
    id: str
    order_id: str
    customer_id: str
    status: str
    reason: str
    amount: Decimal
    created_at: dt.datetime
    refunded_at: dt.datetime | None


@dataclass(slots=True, eq=False)
class _ReturnLine:
    id: str
    return_id: str
    order_line_id: str
    variant_id: str
    quantity: int
    amount: Decimal


def sample_shopping(ctx: SampleContext) -> None:
    rng, fake, now = ctx.rng, ctx.fake, ctx.now.replace(second=0, microsecond=0)

    # ------------------------------------------------------------ customers
    customers: list[_Customer] = []
    addresses: dict[str, list[_Address]] = {}
    emails: set[str] = set()
    n_addr = 0
    for i in range(1, 60 * ctx.size + 1):
        first, last = fake.first_name(), fake.last_name()
        name = f"{first} {last}"
        email = f"{first}.{last}@{rng.choice(['gmail.com', 'yahoo.com', 'outlook.com'])}".lower()
        while email in emails:
            email = f"{first}.{last}{rng.randrange(2, 99)}@gmail.com".lower()
        emails.add(email)
        cid = f"cus_{i:03d}"
        customers.append(
            _Customer(
                id=cid,
                name=name,
                email=email,
                phone=f"+1-{rng.randint(201, 989)}-555-{rng.randint(100, 199):04d}",
                joined_at=now - dt.timedelta(days=rng.randrange(200, 2000)),
            )
        )
        mine: list[_Address] = []
        count = rng.choices([0, 1, 2, 3], weights=[2, 10, 6, 2])[0]
        for k in range(count):
            n_addr += 1
            mine.append(
                _Address(
                    id=f"adr_{n_addr:04d}",
                    customer_id=cid,
                    label=["home", "work", "other"][k],
                    recipient=name if k != 2 else f"{fake.first_name()} {last}",
                    line1=f"{rng.randint(10, 9899)} {rng.choice(STREETS)}"
                    + (f", Apt {rng.randint(1, 40)}" if rng.random() < 0.3 else ""),
                    city=fake.city(),
                    state=fake.state_abbr(include_territories=False),
                    postal_code=fake.zipcode(),
                    is_default=k == 0,
                    created_at=now - dt.timedelta(days=rng.randrange(190, 400) - 60 * k),
                )
            )
        addresses[cid] = mine

    # ------------------------------------------------------------ catalog
    products: list[_Product] = []
    variants: list[_Variant] = []
    category_of: dict[str, str] = {}
    names: set[str] = set()
    for round_ in range(ctx.size * 2):
        for category, items in CATALOG.items():
            for item, (low, high), axis in items:
                if round_ % 2 == 1 and rng.random() < 0.45:
                    continue
                brand = rng.choice(BRANDS[category])
                name = item if category == "books" else f"{brand} {item}"
                if name in names and category != "books":
                    name = f"{name} {rng.choice(['Pro', 'Plus', 'Lite', 'II', 'Max'])}"
                if name in names:
                    continue
                names.add(name)
                pid = f"prd_{len(products) + 1:04d}"
                products.append(
                    _Product(
                        id=pid,
                        name=name,
                        brand="" if category == "books" else brand,
                        category=category,
                        description=f"{name}. {rng.choice(DESCRIPTIONS)}",
                        created_at=now - dt.timedelta(days=rng.randrange(200, 900)),
                    )
                )
                base = _price(rng, low, high)
                for k, label in enumerate(_variants(rng, axis)):
                    price = base
                    if axis in ("bed", "capacity", "format", "switch") and k:
                        price = base + Decimal(5 * k + (10 if axis == "bed" else 0))
                    vid = f"var_{len(variants) + 1:05d}"
                    tag = "".join(w[0] for w in name.split()[:3]).upper()
                    variants.append(
                        _Variant(
                            id=vid,
                            product_id=pid,
                            sku=f"{tag}-{len(variants) + 1:05d}",
                            label=label,
                            price=price,
                            stock=_stock(rng),
                            received=0,
                        )
                    )
                    category_of[vid] = category
    product_of = {p.id: p for p in products}
    in_stock = [v for v in variants if v.stock > 0]
    scarce = [v for v in variants if v.stock < 4]

    # ------------------------------------------------------------ coupons
    coupons: list[Coupon] = []
    midnight = now.replace(hour=0, minute=0)
    for coupon_code, text, pct, off, least, only, once, starts, expires in COUPONS:
        coupons.append(
            Coupon(
                code=coupon_code,
                description=text,
                percent_off=pct,
                amount_off=Decimal(off).quantize(CENT) if off is not None else None,
                min_subtotal=Decimal(least).quantize(CENT),
                category=only,
                once_per_customer=once,
                starts_at=midnight + dt.timedelta(days=starts),
                expires_at=midnight + dt.timedelta(days=expires, hours=23, minutes=59),
            )
        )

    used: set[tuple[str, str]] = set()  # (customer, code) of single-use coupons on live orders

    def fitting(customer: str, lines: list[tuple[str, Decimal]], at: dt.datetime) -> list[Coupon]:
        subtotal = sum((t for _, t in lines), Decimal(0))
        return [
            c
            for c in coupons
            if c.starts_at <= at < c.expires_at
            and subtotal >= c.min_subtotal
            and (c.category is None or any(cat == c.category for cat, _ in lines))
            and not (c.once_per_customer and (customer, c.code) in used)
        ]

    # ------------------------------------------------------------ orders
    orders: list[_Order] = []
    lines: list[_OrderLine] = []
    returns: list[_Return] = []
    return_lines: list[_ReturnLine] = []
    sold: dict[str, int] = {}
    restocked: dict[str, int] = {}
    buyers = [c for c in customers if addresses[c.id]]
    stamps = []
    for _ in range(150 * ctx.size):
        roll = rng.random()
        if roll < 0.12:
            age = dt.timedelta(minutes=rng.randrange(20, 60 * 30))
        elif roll < 0.27:
            age = dt.timedelta(minutes=rng.randrange(60 * 30, 60 * 24 * 6))
        elif roll < 0.62:
            age = dt.timedelta(minutes=rng.randrange(60 * 24 * 6, 60 * 24 * 34))
        else:
            age = dt.timedelta(minutes=rng.randrange(60 * 24 * 34, 60 * 24 * 180))
        stamps.append(now - age)
    stamps.sort()
    for placed in stamps:
        customer = rng.choice(buyers)
        picks = rng.sample(variants, rng.choices([1, 2, 3, 4], weights=[5, 4, 2, 1])[0])
        bought = [(v, rng.choices([1, 2, 3], weights=[8, 3, 1])[0]) for v in picks]
        cats = [(category_of[v.id], v.price * q) for v, q in bought]
        subtotal = sum((t for _, t in cats), Decimal(0))
        coupon = None
        if rng.random() < 0.3:
            options = fitting(customer.id, cats, placed)
            coupon = rng.choice(options) if options else None
        discount = coupon_discount(coupon, cats) if coupon is not None else Decimal("0.00")
        eligible = [
            t if coupon is not None and coupon.category in (None, cat) else Decimal(0)
            for cat, t in cats
        ]
        shares = allocate(discount, eligible)
        method = rng.choices(["standard", "express", "overnight"], weights=[7, 2, 1])[0]
        shipping = shipping_cost(method, subtotal - discount)
        oid = f"ord_{len(orders) + 1:05d}"
        address = rng.choice(addresses[customer.id])
        order = _Order(
            id=oid,
            customer_id=customer.id,
            address_id=address.id,
            status="placed",
            shipping_method=method,
            subtotal=subtotal,
            discount=discount,
            shipping=shipping,
            total=subtotal - discount + shipping,
            refunded=Decimal("0.00"),
            coupon_code=coupon.code if coupon is not None else None,
            tracking_number=None,
            placed_at=placed,
        )
        orders.append(order)
        order_lines = []
        for (v, q), share in zip(bought, shares, strict=True):
            product = product_of[v.product_id]
            line = _OrderLine(
                id=f"oln_{len(lines) + 1:06d}",
                order_id=oid,
                variant_id=v.id,
                product_id=v.product_id,
                name=f"{product.name} ({v.label})",
                category=product.category,
                quantity=q,
                unit_price=v.price,
                line_total=v.price * q,
                discount=share,
                returned=0,
            )
            lines.append(line)
            order_lines.append(line)
        shipped = placed + dt.timedelta(hours=rng.randint(6, 40))
        delivered = shipped + dt.timedelta(
            days={"standard": rng.randint(3, 5), "express": 2, "overnight": 1}[method],
            hours=rng.randint(0, 8),
        )
        if rng.random() < 0.08 and placed + dt.timedelta(hours=2) < min(shipped, now):
            order.status = "cancelled"
            order.cancelled_at = placed + dt.timedelta(
                minutes=rng.randrange(10, int((min(shipped, now) - placed).total_seconds() // 60))
            )
            order.cancel_reason = rng.choice(CANCEL_REASONS)
            order.refunded = order.total
            continue
        if coupon is not None and coupon.once_per_customer:
            used.add((customer.id, coupon.code))
        for line in order_lines:
            sold[line.variant_id] = sold.get(line.variant_id, 0) + line.quantity
        if shipped > now:
            continue
        order.status, order.shipped_at = "shipped", shipped
        order.tracking_number = f"1Z{rng.randrange(10**9, 10**10)}{len(orders):04d}"
        if delivered > now:
            continue
        order.status, order.delivered_at = "delivered", delivered
        window_end = min(now, delivered + dt.timedelta(days=RETURN_WINDOW_DAYS - 1))
        if rng.random() < 0.3 and window_end > delivered + dt.timedelta(hours=12):
            span = int((window_end - delivered).total_seconds() // 60)
            created = delivered + dt.timedelta(minutes=rng.randrange(12 * 60, span))
            rid = f"ret_{len(returns) + 1:04d}"
            back = rng.sample(order_lines, rng.choice([1, 1, 2]) if len(order_lines) > 1 else 1)
            refunded_at = created + dt.timedelta(days=rng.randint(3, 9))
            done = refunded_at <= now
            ret = _Return(
                id=rid,
                order_id=oid,
                customer_id=customer.id,
                status="refunded" if done else "requested",
                reason=rng.choice(RETURN_REASONS),
                amount=Decimal("0.00"),
                created_at=created,
                refunded_at=refunded_at if done else None,
            )
            for line in back:
                units = rng.randint(1, line.quantity)
                amount = refund_for(
                    line.line_total - line.discount, line.quantity, line.returned, units
                )
                line.returned += units
                ret.amount += amount
                return_lines.append(
                    _ReturnLine(
                        id=f"rtl_{len(return_lines) + 1:05d}",
                        return_id=rid,
                        order_line_id=line.id,
                        variant_id=line.variant_id,
                        quantity=units,
                        amount=amount,
                    )
                )
                if done:
                    restocked[line.variant_id] = restocked.get(line.variant_id, 0) + units
            if done:
                order.refunded += ret.amount
            returns.append(ret)

    # ------------------------------------------------------------ carts
    carts: list[_Cart] = []
    cart_items: list[_CartItem] = []
    for c in customers:
        cart = _Cart(customer_id=c.id, coupon_code=None, updated_at=now)
        carts.append(cart)
        if rng.random() < 0.5:
            continue
        picks = rng.sample(in_stock, rng.choices([1, 2, 3, 4], weights=[4, 4, 2, 1])[0])
        stale = rng.choice(scarce) if rng.random() < 0.25 else None
        if stale is not None:  # someone else bought the last units meanwhile
            picks = [stale, *(v for v in picks if v is not stale)]
        mine_items: list[tuple[_Variant, int]] = []
        for v in picks:
            q = min(v.stock, rng.choices([1, 2, 3], weights=[6, 3, 1])[0])
            if v is stale:
                q = v.stock + rng.randint(1, 2)
            elif v.stock >= 20 and rng.random() < 0.06:  # stocking up
                q = rng.randint(MAX_PER_ITEM - 2, MAX_PER_ITEM)
            mine_items.append((v, q))
        added = now - dt.timedelta(hours=rng.randint(1, 24 * 20))
        cart.updated_at = added
        for v, q in mine_items:
            cart_items.append(
                _CartItem(
                    id=f"cit_{len(cart_items) + 1:05d}",
                    customer_id=c.id,
                    variant_id=v.id,
                    quantity=q,
                    added_at=added,
                )
            )
        if rng.random() < 0.35:
            cats = [(category_of[v.id], v.price * q) for v, q in mine_items]
            options = fitting(c.id, cats, now)
            if options:
                cart.coupon_code = rng.choice(options).code

    # the tables in the order the ORM's flushes wrote them (rows in the order they were made)
    ctx.insert([a for c in customers for a in addresses[c.id]], into=Address)
    ctx.insert(coupons)
    ctx.insert(customers, into=Customer)
    ctx.insert(products, into=Product)
    ctx.insert(variants, into=Variant)
    ctx.insert(orders, into=Order)
    ctx.insert(lines, into=OrderLine)
    ctx.insert(returns, into=ReturnRequest)
    ctx.insert(carts, into=Cart)
    ctx.insert(return_lines, into=ReturnLine)
    # then the flush that updated what each variant received (written as 0 above: an
    # update, not the final value, so the pages come out as they did) before the cart items
    received = []
    for v in variants:
        v.received = v.stock + sold.get(v.id, 0) - restocked.get(v.id, 0)
        if v.received:
            received.append({"id": v.id, "received": v.received})
    if received:
        ctx.db.execute(update(Variant), received)
    ctx.insert(cart_items, into=CartItem)
