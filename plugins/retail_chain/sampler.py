"""A realistic outdoor-goods chain: size 1 gives 3 regions of 4 stores, 24 employees, 40
products stocked in every store (480 inventory rows), ~480 opening deliveries, ~90 later
restock orders, ~90 transfers and ~400 sales with ~700 lines; size n gives 3n regions.

Every store opened with whole cases of every product. The 60 days before "now" are then
replayed in time order with the same rules the live tools apply: a sale or a transfer never
takes more than the store holds, restock orders come in whole cases and never for a
discontinued product, and what is still on its way (transfers of the last 7 days, orders
of the last 6) has not arrived yet. ``on_hand`` is whatever that history leaves behind.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from prove_gym.server import SampleContext

from .models import (
    CENT,
    ActingEmployee,
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

HISTORY_DAYS = 60
REGIONS = ["Northwest", "Mountain", "Southwest", "Midwest", "Northeast", "Southeast"]
STORE_SUFFIXES = ["Downtown", "Mall", "Riverside", "Airport Plaza", "Northgate", "Old Town"]
CITIES = {
    "Northwest": ["Portland", "Seattle", "Eugene", "Spokane", "Tacoma", "Bend"],
    "Mountain": ["Denver", "Boulder", "Salt Lake City", "Bozeman", "Missoula", "Flagstaff"],
    "Southwest": ["Phoenix", "Tucson", "Albuquerque", "Santa Fe", "Las Vegas", "El Paso"],
    "Midwest": ["Chicago", "Madison", "Minneapolis", "Ann Arbor", "Milwaukee", "Columbus"],
    "Northeast": ["Boston", "Burlington", "Albany", "Hartford", "Providence", "Portsmouth"],
    "Southeast": ["Asheville", "Atlanta", "Chattanooga", "Knoxville", "Charlotte", "Savannah"],
}
TRANSIT_DAYS = 7
"""Transfers made in the last 7 days are still on their way."""
ORDER_DAYS = 6
"""Restock orders made in the last 6 days have not arrived yet."""

# (name, brand, category, price, case size)
CATALOG: list[tuple[str, str, str, str, int]] = [
    ("Trail Runner 2 Shoes", "Ridgeline", "footwear", "129.95", 6),
    ("Summit Hiking Boots", "Ridgeline", "footwear", "189.00", 6),
    ("Camp Slide Sandals", "Driftwood", "footwear", "39.99", 12),
    ("Merino Hiking Socks", "Woolhaven", "footwear", "18.50", 24),
    ("Storm Shell Rain Jacket", "Northpeak", "apparel", "159.00", 8),
    ("Down Puffer Vest", "Northpeak", "apparel", "119.00", 8),
    ("Quick-Dry Hiking Pants", "Trailwise", "apparel", "69.95", 12),
    ("Merino Base Layer Top", "Woolhaven", "apparel", "84.00", 12),
    ("Sun Hoodie UPF 50", "Trailwise", "apparel", "54.00", 12),
    ("Fleece Beanie", "Northpeak", "apparel", "24.00", 24),
    ("Two-Person Backpacking Tent", "Basecamp", "camping", "349.00", 2),
    ("Four-Person Dome Tent", "Basecamp", "camping", "229.00", 2),
    ("20F Down Sleeping Bag", "Basecamp", "camping", "279.00", 4),
    ("Self-Inflating Sleeping Pad", "Basecamp", "camping", "89.95", 6),
    ("Camp Chair Lite", "Driftwood", "camping", "59.00", 6),
    ("Two-Burner Camp Stove", "Emberline", "camping", "139.00", 4),
    ("Canister Fuel 230g", "Emberline", "camping", "7.95", 24),
    ("Titanium Spork", "Emberline", "camping", "11.00", 48),
    ("Insulated Water Bottle 32oz", "Hydrofall", "hydration", "39.95", 12),
    ("Hydration Reservoir 3L", "Hydrofall", "hydration", "42.00", 12),
    ("Squeeze Water Filter", "Hydrofall", "hydration", "36.95", 12),
    ("Collapsible Cup", "Hydrofall", "hydration", "9.50", 24),
    ("Daypack 24L", "Trailwise", "packs", "99.00", 6),
    ("Backpacking Pack 55L", "Trailwise", "packs", "249.00", 4),
    ("Hip Pack", "Trailwise", "packs", "34.00", 12),
    ("Dry Bag 10L", "Driftwood", "packs", "22.00", 12),
    ("Rechargeable Headlamp", "Lumen", "electronics", "49.95", 12),
    ("Solar Power Bank", "Lumen", "electronics", "64.00", 8),
    ("Camp Lantern", "Lumen", "electronics", "44.00", 8),
    ("GPS Satellite Messenger", "Lumen", "electronics", "399.00", 2),
    ("Trekking Poles (pair)", "Ridgeline", "climbing", "119.95", 6),
    ("Climbing Harness", "Cragworks", "climbing", "74.00", 6),
    ("Chalk Bag", "Cragworks", "climbing", "21.00", 12),
    ("Locking Carabiner", "Cragworks", "climbing", "14.50", 24),
    ("First Aid Kit", "Basecamp", "essentials", "32.00", 12),
    ("Bear Spray", "Basecamp", "essentials", "49.00", 12),
    ("Insect Repellent", "Basecamp", "essentials", "8.95", 24),
    ("Mineral Sunscreen SPF 50", "Driftwood", "essentials", "15.95", 24),
    ("Trail Mix Energy Bar", "Summit Snacks", "food", "2.75", 48),
    ("Freeze-Dried Chili Mac", "Summit Snacks", "food", "11.95", 24),
]
DISCONTINUED = {"Four-Person Dome Tent", "Camp Slide Sandals", "Collapsible Cup"}


def _margin(price: Decimal, share: float) -> Decimal:
    return (price * Decimal(str(share))).quantize(CENT)


# Rows are built as plain objects (fields named as the columns) or dicts and inserted with
# core at the end: a mapped object costs the ORM ~30 µs to build and a flush more to write.
@dataclass(slots=True)
class _Store:
    id: str
    name: str
    city: str
    address: str
    region_id: str
    opened_on: dt.date


@dataclass(slots=True)
class _Employee:
    id: str
    name: str
    email: str
    role: str
    store_id: str


@dataclass(slots=True)
class _Product:
    id: str
    sku: str
    name: str
    brand: str
    category: str
    price: Decimal
    unit_cost: Decimal
    case_size: int
    discontinued: bool


@dataclass(slots=True)
class _Restock:
    id: str
    store_id: str
    product_id: str
    quantity: int
    unit_cost: Decimal
    total_cost: Decimal
    status: str
    created_by: str
    ordered_at: dt.datetime
    received_at: dt.datetime | None


def sample_retail_chain(ctx: SampleContext) -> None:
    rng, fake, now = ctx.rng, ctx.fake, ctx.now
    start = now - dt.timedelta(days=HISTORY_DAYS)

    # ---- regions, stores, employees
    regions: list[dict[str, Any]] = []
    stores: list[_Store] = []
    employees: list[_Employee] = []
    used_cities: set[str] = set()
    n_regions = 3 * max(1, ctx.size)
    for r in range(n_regions):
        base = REGIONS[r % len(REGIONS)]
        name = base if r < len(REGIONS) else f"{base} {r // len(REGIONS) + 1}"
        region_id = f"reg_{r + 1:02d}"
        regions.append({"id": region_id, "name": name})
        choices = rng.sample(CITIES[base], 4)
        for k in range(4):
            city = choices[k]
            while city in used_cities:
                city = fake.city()
            used_cities.add(city)
            sid = f"str_{len(stores) + 1:03d}"
            store = _Store(
                id=sid,
                name=f"{city} {STORE_SUFFIXES[rng.randrange(len(STORE_SUFFIXES))]}",
                city=city,
                address=fake.street_address(),
                region_id=region_id,
                opened_on=(now - dt.timedelta(days=rng.randint(400, 3000))).date(),
            )
            stores.append(store)
            first, last = fake.first_name(), fake.last_name()
            manager = _Employee(
                id=f"emp_{len(employees) + 1:03d}",
                name=f"{first} {last}",
                email=f"{first}.{last}@trailhead-outfitters.com".lower(),
                role="store_manager",
                store_id=sid,
            )
            employees.append(manager)
            if k == 0:
                first, last = fake.first_name(), fake.last_name()
                boss = _Employee(
                    id=f"emp_{len(employees) + 1:03d}",
                    name=f"{first} {last}",
                    email=f"{first}.{last}@trailhead-outfitters.com".lower(),
                    role="regional_manager",
                    store_id=sid,
                )
                employees.append(boss)
    regionals = [e for e in employees if e.role == "regional_manager"]
    acting = regionals[rng.randrange(len(regionals))]
    managers = {e.store_id: e for e in employees if e.role == "store_manager"}
    regional_of = {e.store_id: e for e in regionals}
    region_boss = {s.region_id: regional_of[s.id] for s in stores if s.id in regional_of}

    # ---- products
    products: list[_Product] = []
    for i, (name, brand, category, price, case) in enumerate(CATALOG):
        shelf = Decimal(price)
        products.append(
            _Product(
                id=f"prd_{i + 1:04d}",
                sku=f"TH-{10000 + (i + 1) * 37}",
                name=name,
                brand=brand,
                category=category,
                price=shelf,
                unit_cost=_margin(shelf, rng.choice([0.45, 0.5, 0.55, 0.6])),
                case_size=case,
                discontinued=name in DISCONTINUED,
            )
        )

    # ---- opening stock: whole cases of every product in every store
    stock: dict[tuple[str, str], int] = {}
    orders: list[_Restock] = []
    for store in stores:
        opened = now - dt.timedelta(days=HISTORY_DAYS + rng.randint(5, 20), hours=rng.randint(0, 8))
        for p in products:
            cases = rng.randint(1, 3) if p.case_size >= 12 else rng.randint(2, 5)
            qty = cases * p.case_size
            stock[(store.id, p.id)] = qty
            orders.append(
                _Restock(
                    id="",
                    store_id=store.id,
                    product_id=p.id,
                    quantity=qty,
                    unit_cost=p.unit_cost,
                    total_cost=p.unit_cost * qty,
                    status="received",
                    created_by=managers[store.id].id,
                    ordered_at=opened - dt.timedelta(days=4),
                    received_at=opened,
                )
            )

    # ---- 60 days of history, replayed in time order
    events: list[tuple[dt.datetime, str, _Store]] = []
    for store in stores:
        for _ in range(rng.randint(28, 40)):
            events.append(
                (start + dt.timedelta(minutes=rng.randint(0, HISTORY_DAYS * 1440)), "sale", store)
            )
        for _ in range(rng.randint(5, 9)):
            events.append(
                (
                    start + dt.timedelta(minutes=rng.randint(0, HISTORY_DAYS * 1440)),
                    "restock",
                    store,
                )
            )
        # something on its way to every store: a recent order and a recent transfer
        recent = now - dt.timedelta(minutes=rng.randint(60, (ORDER_DAYS - 1) * 1440))
        events.append((recent, "restock", store))
        recent = now - dt.timedelta(minutes=rng.randint(60, (TRANSIT_DAYS - 1) * 1440))
        events.append((recent, "transfer", store))
        for _ in range(rng.randint(6, 10)):
            events.append(
                (
                    start + dt.timedelta(minutes=rng.randint(0, HISTORY_DAYS * 1440)),
                    "transfer",
                    store,
                )
            )
    events.sort(key=lambda e: (e[0], e[1], e[2].id))
    transfers: list[dict[str, Any]] = []
    open_orders: set[tuple[str, str]] = set()
    sales: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []
    by_region: dict[str, list[_Store]] = {}
    for s in stores:
        by_region.setdefault(s.region_id, []).append(s)
    for when, kind, store in events:
        when = when.replace(second=0, microsecond=0)
        if kind == "sale":
            picks = rng.sample(products, rng.choice([1, 1, 1, 2, 2, 3]))
            sale_lines = []
            for p in picks:
                have = stock[(store.id, p.id)]
                qty = min(have, rng.choice([1, 1, 1, 2, 2, 3, 4]))
                if qty <= 0:
                    continue
                stock[(store.id, p.id)] = have - qty
                sale_lines.append((p, qty))
            if not sale_lines:
                continue
            sale_id = f"sal_{len(sales) + 1:05d}"
            total = Decimal("0.00")
            count = 0
            for p, qty in sale_lines:
                lines.append(
                    {
                        "id": f"sln_{len(lines) + 1:06d}",
                        "sale_id": sale_id,
                        "product_id": p.id,
                        "quantity": qty,
                        "unit_price": p.price,
                        "line_total": p.price * qty,
                    }
                )
                total += p.price * qty
                count += qty
            sales.append(
                {
                    "id": sale_id,
                    "store_id": store.id,
                    "employee_id": managers[store.id].id,
                    "total": total,
                    "items": count,
                    "created_at": when,
                }
            )
        elif kind == "restock":
            arrived = when < now - dt.timedelta(days=ORDER_DAYS)
            p = rng.choice(
                [
                    p
                    for p in products
                    if not p.discontinued and (arrived or (store.id, p.id) not in open_orders)
                ]
            )
            qty = p.case_size * rng.randint(1, 3)
            if arrived:
                stock[(store.id, p.id)] += qty
            else:
                open_orders.add((store.id, p.id))
            orders.append(
                _Restock(
                    id="",
                    store_id=store.id,
                    product_id=p.id,
                    quantity=qty,
                    unit_cost=p.unit_cost,
                    total_cost=p.unit_cost * qty,
                    status="received" if arrived else "ordered",
                    created_by=managers[store.id].id,
                    ordered_at=when,
                    received_at=when + dt.timedelta(days=rng.randint(2, 5)) if arrived else None,
                )
            )
        else:
            others = [s for s in by_region[store.region_id] if s.id != store.id]
            if rng.random() < 0.25:
                others = [s for s in stores if s.region_id != store.region_id]
            dest = rng.choice(others)
            p = rng.choice(products)
            have = stock[(store.id, p.id)]
            qty = min(have // 2, rng.randint(2, 8))
            if qty <= 0:
                continue
            stock[(store.id, p.id)] = have - qty
            arrived = when < now - dt.timedelta(days=TRANSIT_DAYS)
            if arrived:
                stock[(dest.id, p.id)] += qty
            sender = managers[store.id] if rng.random() < 0.7 else region_boss[store.region_id]
            receiver = managers[dest.id]
            transfers.append(
                {
                    "id": f"trf_{len(transfers) + 1:05d}",
                    "product_id": p.id,
                    "from_store_id": store.id,
                    "to_store_id": dest.id,
                    "quantity": qty,
                    "status": "received" if arrived else "in_transit",
                    "note": rng.choice(
                        ["", "", "Rebalancing stock", "Customer hold", "Low at destination"]
                    ),
                    "created_by": sender.id,
                    "created_at": when,
                    "received_by": receiver.id if arrived else None,
                    "received_at": when + dt.timedelta(days=rng.randint(1, 3)) if arrived else None,
                }
            )
    orders.sort(key=lambda o: (o.ordered_at, o.store_id, o.product_id))
    for n, o in enumerate(orders, 1):
        o.id = f"ro_{n:05d}"

    # ---- inventory rows: what the history leaves behind
    inventory = [
        {
            "store_id": store.id,
            "product_id": p.id,
            "on_hand": stock[(store.id, p.id)],
            "reorder_point": max(2, p.case_size // 2 + rng.randint(-1, 2)),
        }
        for store in stores
        for p in products
    ]

    # ---- every row, tables in the order the ORM's flushes wrote them: after each other
    # when one refers to the other, else by class name
    for model, rows in (
        (Region, regions),
        (Store, stores),
        (Employee, employees),
        (ActingEmployee, [{"id": 1, "employee_id": acting.id}]),
        (Product, products),
        (RestockOrder, orders),
        (Sale, sales),
        (Transfer, transfers),
        (Inventory, inventory),
        (SaleLine, lines),
    ):
        ctx.insert(rows, into=model)
