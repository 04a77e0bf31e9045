"""A realistic city food delivery platform: size 1 gives 12 restaurants with ~130 menu items
(sizes, sides and add-ons as option groups), 90 customers (15 with a cart in progress), 24
couriers over 8 zones and ~320 orders of the last 45 days (most delivered, some cancelled
with the refund the rules give, ~50% of delivered ones rated), plus a few orders still on
their way; size n gives n times as many restaurants, customers, couriers and orders.

Every order is built with the same rules the live tools apply: placed while its restaurant
was open, from a zone it delivers to, reaching its minimum order, with prices from the menu;
its tracking history walks the lifecycle in time order, and a courier carries at most one
active order.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from operator import attrgetter
from typing import Any

from prove_gym.server import SampleContext, Weighted

from .models import (
    CANCEL_REASONS,
    CENT,
    NEIGHBOURS,
    ORDER_FLOW,
    TRAVEL_MINUTES,
    WEEKDAYS,
    ZERO,
    ZONES,
    CartLine,
    Courier,
    Customer,
    DeliveryZone,
    MenuItem,
    Option,
    OptionGroup,
    Order,
    OrderLine,
    Rating,
    Restaurant,
    TrackingEvent,
    cancel_refund,
    is_open,
    minutes,
)

# (group name, required, max_choices, [(option, price delta), ...])
GroupSpec = tuple[str, bool, int, list[tuple[str, str]]]

GROUPS: dict[str, list[GroupSpec]] = {
    "pizza": [
        (
            "Size",
            True,
            1,
            [("Small 10in", "0.00"), ("Medium 12in", "3.00"), ("Large 14in", "5.50")],
        ),
        (
            "Extra toppings",
            False,
            3,
            [
                ("Extra mozzarella", "1.50"),
                ("Mushrooms", "1.00"),
                ("Black olives", "1.00"),
                ("Jalapenos", "0.80"),
                ("Prosciutto", "2.50"),
            ],
        ),
    ],
    "burger": [
        (
            "Side",
            True,
            1,
            [("Fries", "0.00"), ("Sweet potato fries", "1.50"), ("Side salad", "1.00")],
        ),
        (
            "Add-ons",
            False,
            3,
            [("Bacon", "1.80"), ("Cheddar", "1.00"), ("Avocado", "2.00"), ("Fried egg", "1.20")],
        ),
    ],
    "sushi": [
        ("Pieces", True, 1, [("6 pieces", "0.00"), ("12 pieces", "6.50")]),
        (
            "Extras",
            False,
            2,
            [("Spicy mayo", "0.50"), ("Extra ginger", "0.30"), ("Eel sauce", "0.50")],
        ),
    ],
    "curry": [
        ("Spice level", True, 1, [("Mild", "0.00"), ("Medium", "0.00"), ("Hot", "0.00")]),
        (
            "Extras",
            False,
            2,
            [("Extra chicken", "3.00"), ("Basmati rice", "2.50"), ("Naan", "2.00")],
        ),
    ],
    "wok": [
        (
            "Protein",
            True,
            1,
            [("Tofu", "0.00"), ("Chicken", "1.50"), ("Beef", "2.50"), ("Prawns", "3.00")],
        ),
        ("Spice level", True, 1, [("Mild", "0.00"), ("Medium", "0.00"), ("Hot", "0.00")]),
    ],
    "taco": [
        (
            "Filling",
            True,
            1,
            [("Chicken", "0.00"), ("Carnitas", "1.00"), ("Beef", "1.50"), ("Black bean", "0.00")],
        ),
        (
            "Extras",
            False,
            3,
            [("Guacamole", "1.50"), ("Sour cream", "0.75"), ("Pickled onions", "0.50")],
        ),
    ],
    "pasta": [
        (
            "Pasta",
            True,
            1,
            [("Spaghetti", "0.00"), ("Penne", "0.00"), ("Gluten-free penne", "1.50")],
        ),
        ("Extras", False, 2, [("Parmesan", "1.00"), ("Chili flakes", "0.00"), ("Burrata", "3.50")]),
    ],
    "bowl": [
        ("Base", True, 1, [("Quinoa", "0.00"), ("Brown rice", "0.00"), ("Greens", "0.00")]),
        ("Add-ons", False, 3, [("Avocado", "2.00"), ("Tempeh", "2.50"), ("Hummus", "1.50")]),
    ],
    "eggs": [
        ("Eggs", True, 1, [("Fried", "0.00"), ("Scrambled", "0.00"), ("Poached", "0.50")]),
        ("Extras", False, 3, [("Bacon", "2.50"), ("Avocado", "2.00"), ("Hash brown", "1.80")]),
    ],
    "drink": [("Size", True, 1, [("Regular", "0.00"), ("Large", "1.00")])],
    "side": [
        ("Dip", False, 2, [("Garlic aioli", "0.80"), ("Ketchup", "0.00"), ("Chili mayo", "0.80")])
    ],
    "dessert": [("Extras", False, 1, [("Whipped cream", "0.90"), ("Ice cream scoop", "2.00")])],
    "plain": [],
}

# cuisine -> [(category, group kind, [(item, description, price), ...]), ...]
Menu = list[tuple[str, str, list[tuple[str, str, str]]]]
DRINKS = (
    "Drinks",
    "drink",
    [
        ("Cola", "Chilled can", "2.50"),
        ("Sparkling water", "Lightly sparkling", "2.20"),
        ("Homemade lemonade", "Fresh lemons and mint", "3.90"),
        ("Iced tea", "Peach, brewed in house", "3.50"),
    ],
)
MENUS: dict[str, Menu] = {
    "pizza": [
        (
            "Pizzas",
            "pizza",
            [
                ("Margherita", "Tomato, mozzarella, basil", "10.50"),
                ("Pepperoni", "Tomato, mozzarella, spicy pepperoni", "12.50"),
                ("Quattro Formaggi", "Mozzarella, gorgonzola, fontina, parmesan", "13.50"),
                ("Diavola", "Tomato, mozzarella, salami, chili", "13.00"),
                ("Veggie Supreme", "Peppers, onions, mushrooms, olives", "12.00"),
                ("Hawaiian", "Ham and pineapple", "12.50"),
            ],
        ),
        (
            "Sides",
            "side",
            [
                ("Garlic bread", "With herb butter", "4.50"),
                ("Chicken wings", "Eight wings, BBQ glaze", "7.90"),
                ("Caesar salad", "Romaine, croutons, parmesan", "6.90"),
            ],
        ),
        ("Desserts", "dessert", [("Tiramisu", "Espresso and mascarpone", "5.50")]),
        DRINKS,
    ],
    "burgers": [
        (
            "Burgers",
            "burger",
            [
                ("Classic burger", "Beef patty, lettuce, tomato, pickles", "11.90"),
                ("Cheeseburger", "Beef patty, double cheddar", "12.90"),
                ("Smokehouse burger", "Bacon, onion rings, BBQ sauce", "14.50"),
                ("Crispy chicken burger", "Buttermilk chicken, slaw", "12.50"),
                ("Beyond burger", "Plant-based patty, vegan mayo", "13.50"),
            ],
        ),
        (
            "Sides",
            "side",
            [
                ("Onion rings", "Beer-battered", "4.90"),
                ("Loaded fries", "Cheese sauce and jalapenos", "6.50"),
                ("Mozzarella sticks", "Six sticks with marinara", "5.90"),
            ],
        ),
        ("Shakes", "plain", [("Vanilla shake", "Thick and creamy", "5.50")]),
        DRINKS,
    ],
    "sushi": [
        (
            "Rolls",
            "sushi",
            [
                ("California roll", "Crab, avocado, cucumber", "8.50"),
                ("Spicy tuna roll", "Tuna, chili mayo, scallion", "9.50"),
                ("Salmon avocado roll", "Salmon and avocado", "9.00"),
                ("Dragon roll", "Eel, avocado, eel sauce", "12.50"),
                ("Veggie roll", "Cucumber, avocado, carrot", "7.00"),
            ],
        ),
        (
            "Small plates",
            "plain",
            [
                ("Edamame", "Sea salt", "4.50"),
                ("Miso soup", "Tofu and wakame", "3.50"),
                ("Gyoza", "Six pork dumplings", "6.50"),
            ],
        ),
        DRINKS,
    ],
    "indian": [
        (
            "Curries",
            "curry",
            [
                ("Butter chicken", "Tomato and butter sauce", "14.50"),
                ("Chicken tikka masala", "Grilled chicken, creamy masala", "14.90"),
                ("Lamb rogan josh", "Slow-cooked lamb", "16.50"),
                ("Chana masala", "Chickpeas, tomato, spices", "11.90"),
                ("Palak paneer", "Spinach and cottage cheese", "12.90"),
            ],
        ),
        (
            "Breads and sides",
            "side",
            [
                ("Garlic naan", "From the tandoor", "3.50"),
                ("Vegetable samosas", "Two, with tamarind chutney", "5.50"),
                ("Onion bhaji", "Four fritters", "5.00"),
            ],
        ),
        (
            "Drinks",
            "drink",
            [("Mango lassi", "Yogurt and mango", "4.50"), ("Cola", "Chilled can", "2.50")],
        ),
    ],
    "thai": [
        (
            "Wok",
            "wok",
            [
                ("Pad thai", "Rice noodles, peanuts, tamarind", "13.50"),
                ("Pad see ew", "Wide noodles, soy, broccoli", "13.00"),
                ("Drunken noodles", "Basil, chili, wide noodles", "13.50"),
                ("Basil fried rice", "Holy basil, egg", "12.50"),
            ],
        ),
        (
            "Curries",
            "curry",
            [
                ("Green curry", "Coconut, bamboo shoots, basil", "14.00"),
                ("Massaman curry", "Potato, peanuts, tamarind", "14.50"),
            ],
        ),
        (
            "Starters",
            "plain",
            [
                ("Spring rolls", "Four, sweet chili", "5.50"),
                ("Tom yum soup", "Hot and sour", "6.50"),
            ],
        ),
        DRINKS,
    ],
    "mexican": [
        (
            "Tacos and burritos",
            "taco",
            [
                ("Street tacos", "Three corn tortillas, salsa verde", "10.50"),
                ("Burrito", "Rice, beans, cheese, salsa", "12.50"),
                ("Burrito bowl", "Rice, beans, corn, lettuce", "12.00"),
                ("Quesadilla", "Flour tortilla, melted cheese", "10.90"),
            ],
        ),
        (
            "Sides",
            "side",
            [
                ("Nachos", "Cheese, jalapenos, pico de gallo", "7.50"),
                ("Chips and guacamole", "Made fresh daily", "6.50"),
                ("Elote", "Grilled corn, cotija, lime", "4.90"),
            ],
        ),
        ("Desserts", "dessert", [("Churros", "Cinnamon sugar, chocolate dip", "5.50")]),
        DRINKS,
    ],
    "chinese": [
        (
            "Mains",
            "wok",
            [
                ("Kung pao chicken", "Peanuts, dried chili", "13.50"),
                ("Beef and broccoli", "Oyster sauce", "14.50"),
                ("Mapo tofu", "Sichuan pepper, chili bean", "12.00"),
                ("Chow mein", "Egg noodles, vegetables", "11.50"),
                ("Egg fried rice", "Scallion and egg", "9.50"),
            ],
        ),
        (
            "Dim sum",
            "plain",
            [
                ("Har gow", "Four prawn dumplings", "6.50"),
                ("Pork bao", "Two steamed buns", "5.90"),
                ("Spring rolls", "Four, vegetable", "4.90"),
            ],
        ),
        DRINKS,
    ],
    "italian": [
        (
            "Pasta",
            "pasta",
            [
                ("Carbonara", "Guanciale, egg, pecorino", "14.50"),
                ("Bolognese", "Slow-cooked beef ragu", "13.90"),
                ("Pesto genovese", "Basil, pine nuts, parmesan", "12.90"),
                ("Arrabbiata", "Tomato, garlic, chili", "11.50"),
                ("Cacio e pepe", "Pecorino and black pepper", "12.50"),
            ],
        ),
        (
            "Antipasti",
            "plain",
            [
                ("Bruschetta", "Tomato, garlic, basil", "6.50"),
                ("Arancini", "Three, with mozzarella", "7.50"),
            ],
        ),
        (
            "Desserts",
            "dessert",
            [
                ("Panna cotta", "Berry coulis", "5.90"),
                ("Tiramisu", "Espresso and mascarpone", "6.50"),
            ],
        ),
        DRINKS,
    ],
    "vegan": [
        (
            "Bowls",
            "bowl",
            [
                ("Buddha bowl", "Roasted vegetables, tahini", "12.90"),
                ("Falafel bowl", "Falafel, pickles, herbs", "12.50"),
                ("Poke bowl", "Marinated tofu, edamame, seaweed", "13.50"),
                ("Harvest bowl", "Sweet potato, kale, pecans", "12.90"),
            ],
        ),
        (
            "Wraps",
            "side",
            [
                ("Hummus wrap", "Hummus, roasted peppers", "9.50"),
                ("Jackfruit wrap", "BBQ jackfruit, slaw", "10.50"),
            ],
        ),
        ("Desserts", "dessert", [("Chocolate avocado mousse", "Dairy-free", "5.50")]),
        DRINKS,
    ],
    "breakfast": [
        (
            "Breakfast plates",
            "eggs",
            [
                ("Full breakfast", "Eggs, sausage, beans, toast", "13.50"),
                ("Eggs benedict", "Ham, hollandaise, muffin", "12.50"),
                ("Avocado toast", "Sourdough, chili flakes, eggs", "11.50"),
                ("Breakfast burrito", "Eggs, potatoes, cheese", "10.90"),
            ],
        ),
        (
            "Sweet",
            "plain",
            [
                ("Buttermilk pancakes", "Maple syrup, berries", "10.50"),
                ("French toast", "Brioche, cinnamon", "10.90"),
                ("Granola bowl", "Yogurt, honey, fruit", "8.50"),
            ],
        ),
        (
            "Coffee",
            "drink",
            [
                ("Flat white", "Double shot", "3.60"),
                ("Cappuccino", "Double shot", "3.60"),
                ("Fresh orange juice", "Squeezed to order", "4.50"),
            ],
        ),
    ],
}

NAME_PATTERNS: dict[str, list[str]] = {
    "pizza": ["{last}'s Pizzeria", "Slice of {city}", "Forno {last}"],
    "burgers": ["{last} Burger Co.", "Grill House {city}", "The Patty Lab"],
    "sushi": ["Sushi {jp}", "{jp} Sushi Bar", "Maki House"],
    "indian": ["Taj {city}", "Spice of {in}", "{in} Curry House"],
    "thai": ["Bangkok Street {city}", "Thai Orchid", "Lotus {th}"],
    "mexican": ["Taqueria {last}", "El Camino {city}", "Casa {last}"],
    "chinese": ["Golden Dragon {city}", "Jade Garden", "Lucky Wok {last}"],
    "italian": ["Trattoria {last}", "Nonna {it}", "Osteria {city}"],
    "vegan": ["Green Bowl {city}", "Sprout & Co.", "Plant Kitchen {last}"],
    "breakfast": ["Sunny Side {city}", "{last}'s Diner", "Morning Glory Cafe"],
}
WORDS = {
    "jp": ["Kyoto", "Hana", "Sakura", "Umi", "Tokyo"],
    "in": ["Delhi", "Punjab", "Mumbai", "Kerala", "Bengal"],
    "th": ["Siam", "Chiang Mai", "Phuket"],
    "it": ["Maria", "Lucia", "Rosa", "Giulia"],
}
HOURS: list[tuple[str, str, int]] = [
    ("11:00", "22:00", 30),
    ("11:30", "23:00", 20),
    ("10:00", "21:00", 20),
    ("12:00", "22:30", 12),
    ("17:00", "23:00", 8),
]
BREAKFAST_HOURS: list[tuple[str, str, int]] = [("07:00", "15:00", 60), ("08:00", "16:00", 40)]
COMMENTS = {
    5: ["Perfect, still hot!", "Great food and a very friendly courier.", "Best pad thai in town."],
    4: ["Tasty, arrived a little late.", "Good portions.", "Nice, will order again."],
    3: ["Okay, nothing special.", "Fries were a bit soggy."],
    2: ["Cold on arrival.", "Missing the sauce I ordered."],
    1: ["Order was wrong and very late.", "Never arrived hot, disappointing."],
}
DAYS_OF_HISTORY = 45


def sample_food_delivery(ctx: SampleContext) -> None:
    _Builder(ctx).build()


# The menu and the order history are built as plain objects (their fields named as the
# columns) and inserted as rows: a mapped object costs the ORM ~30 µs to build and every
# attribute read goes through a descriptor, and a state has thousands of these.
@dataclass(slots=True)
class _Item:
    id: str
    restaurant_id: str
    category: str
    name: str
    description: str
    price: Decimal
    available: bool
    position: int


@dataclass(slots=True)
class _Group:
    id: str
    item_id: str
    name: str
    required: bool
    max_choices: int
    position: int


@dataclass(slots=True)
class _Option:
    id: str
    group_id: str
    item_id: str
    name: str
    price_delta: Decimal
    position: int


@dataclass(slots=True)
class _Order:
    id: str
    customer_id: str
    restaurant_id: str
    courier_id: str | None
    status: str
    delivery_address: str
    zone: str
    note: str
    subtotal: Decimal
    delivery_fee: Decimal
    tip: Decimal
    total: Decimal
    refunded: Decimal
    cancel_reason: str | None
    placed_at: dt.datetime
    estimated_delivery_at: dt.datetime


@dataclass(slots=True)
class _Line:
    id: str
    order_id: str
    item_id: str
    name: str
    options: str
    quantity: int
    unit_price: Decimal
    line_total: Decimal


@dataclass(slots=True)
class _Event:
    id: str
    order_id: str
    status: str
    at: dt.datetime
    note: str


@dataclass(slots=True)
class _Customer:
    id: str
    name: str
    email: str
    phone: str
    address: str
    zone: str
    created_at: dt.datetime


@dataclass(slots=True)
class _Courier:
    id: str
    name: str
    phone: str
    vehicle: str
    zone: str
    status: str


@dataclass(slots=True)
class _CartLine:
    id: str
    customer_id: str
    restaurant_id: str
    item_id: str
    option_ids: str
    quantity: int
    unit_price: Decimal
    added_at: dt.datetime


_Pick = tuple[_Item, list[_Option], int, Decimal]
"""A line of food chosen: the item, its options, the quantity and the unit price."""


OPENING_HOURS = Weighted([((opens, closes), w) for opens, closes, w in HOURS])
BREAKFAST_OPENING_HOURS = Weighted([((opens, closes), w) for opens, closes, w in BREAKFAST_HOURS])
VEHICLES = Weighted([("bike", 45), ("scooter", 35), ("car", 20)])
QUANTITIES = Weighted([(1, 70), (2, 25), (3, 5)])
UNDER_WAY = Weighted([("placed", 3), ("accepted", 3), ("preparing", 3), ("picked_up", 3)])
STARS = Weighted([(5, 45), (4, 30), (3, 12), (2, 8), (1, 5)])
CANCELLATIONS = Weighted(list(zip(CANCEL_REASONS, [55, 10, 25, 10], strict=True)))
TIPS = [Decimal(tip) for tip in ["0.00", "0.00", "1.00", "2.00", "3.00", "5.00"]]
ORDER_NOTES = ["", "", "", "Ring the bell twice", "Leave at the door", "No cutlery"]
BY_ID = attrgetter("id")


class _Builder:
    def __init__(self, ctx: SampleContext) -> None:
        self.ctx, self.rng, self.fake, self.now = ctx, ctx.rng, ctx.fake, ctx.now
        self.restaurants: list[Restaurant] = []
        self.items: dict[str, list[_Item]] = {}
        self.groups: dict[str, list[tuple[_Group, list[_Option]]]] = {}
        self.fees: dict[str, dict[str, Decimal]] = {}
        self.customers: list[_Customer] = []
        self.emails: set[str] = set()  # the customers' emails
        self.couriers: list[_Courier] = []
        self.counts = {"itm": 0, "grp": 0, "opt": 0}
        self.orders: list[_Order] = []
        self.lines: list[_Line] = []
        self.events: list[_Event] = []  # in the order made (ids follow time order)
        self.ratings: list[dict[str, Any]] = []  # rows of the ratings table
        self.cart_lines: list[_CartLine] = []
        # once the catalogue is built: the restaurants delivering to each zone, each one's
        # available items, and the couriers of each zone (all of them, and those available)
        self.serving: dict[str, list[Restaurant]] = {}
        self.menus: dict[str, list[_Item]] = {}
        self.hours: dict[str, tuple[int, int]] = {}  # opening and closing minute of the day
        self.zone_couriers: dict[str, list[_Courier]] = {}
        self.available_couriers: dict[str, list[_Courier]] = {}

    def _id(self, prefix: str, width: int) -> str:
        self.counts[prefix] = self.counts.get(prefix, 0) + 1
        return f"{prefix}_{self.counts[prefix]:0{width}d}"

    def build(self) -> None:
        size = max(1, self.ctx.size)
        for n in range(12 * size):
            self.add_restaurant(n)
        for _ in range(90 * size):
            self.add_customer()
        for n in range(24 * size):
            self.add_courier(n)
        self.add_orders(320 * size)
        self.add_carts(15 * size)
        self.write()

    def write(self) -> None:
        """Insert every row, each table's once final, tables parents first (in the order of
        the models' ``sorted_tables``). Restaurants stay mapped objects: the shared rules
        (``is_open``) take them, and there are only a dozen a size."""
        zones = [
            {"restaurant_id": r.id, "zone": zone, "fee": fee}
            for r in self.restaurants
            for zone, fee in sorted(self.fees[r.id].items())
        ]
        insert = self.ctx.insert
        insert(self.couriers, into=Courier)
        insert(self.customers, into=Customer)
        insert(self.restaurants)
        insert(zones, into=DeliveryZone)
        insert([i for r in self.restaurants for i in self.items[r.id]], into=MenuItem)
        insert(self.orders, into=Order)
        insert(self.cart_lines, into=CartLine)
        groups = [g for item_groups in self.groups.values() for g in item_groups]
        insert([group for group, _ in groups], into=OptionGroup)
        insert(self.lines, into=OrderLine)
        insert(self.ratings, into=Rating)
        insert(self.events, into=TrackingEvent)
        insert([o for _, options in groups for o in options], into=Option)

    # ------------------------------------------------------------ the catalogue
    def add_restaurant(self, n: int) -> None:
        rng, fake = self.rng, self.fake
        cuisine = list(MENUS)[n % len(MENUS)] if n < len(MENUS) else rng.choice(list(MENUS))
        taken = {r.name for r in self.restaurants}
        name = ""
        while not name or name in taken:
            name = rng.choice(NAME_PATTERNS[cuisine]).format(
                last=fake.last_name(),
                city=rng.choice(["Harbor", "Downtown", "Old Town", "Uptown", "Riverside"]),
                **{k: rng.choice(v) for k, v in WORDS.items()},
            )
            if name in taken:
                name = f"{name} {rng.choice(['II', 'Express', 'Kitchen', 'Corner'])}"
        zone = ZONES[n % len(ZONES)] if n < len(ZONES) else rng.choice(ZONES)
        hours = BREAKFAST_OPENING_HOURS if cuisine == "breakfast" else OPENING_HOURS
        opens, closes = hours.pick(rng)
        closed = rng.choice(["mon", "tue", "sun"]) if rng.random() < 0.3 else ""
        rid = f"rst_{n + 1:03d}"
        restaurant = Restaurant(
            id=rid,
            name=name,
            cuisine=cuisine,
            address=f"{fake.building_number()} {fake.street_name()}",
            zone=zone,
            phone=f"+1-555-{rng.randrange(100, 999)}-{rng.randrange(1000, 9999)}",
            opens_at=opens,
            closes_at=closes,
            closed_days=closed,
            minimum_order=Decimal(rng.choice([10, 12, 15, 15, 20, 25])).quantize(CENT),
            prep_minutes=rng.choice([15, 20, 20, 25, 30, 35]),
            created_at=self.now - dt.timedelta(days=rng.randint(200, 1500)),
        )
        self.restaurants.append(restaurant)
        self.hours[rid] = (minutes(opens), minutes(closes))
        near = list(NEIGHBOURS[zone])
        reach = rng.sample(near, k=rng.randint(1, min(3, len(near))))
        own = Decimal(rng.choice(["0.99", "1.49", "1.99", "2.49"]))
        self.fees[rid] = {zone: own}
        for z in reach:
            self.fees[rid][z] = own + Decimal(rng.choice(["1.50", "2.00", "2.50", "3.00"]))
        items: list[_Item] = []
        position = 0
        for category, kind, dishes in MENUS[cuisine]:
            for dish, description, price in dishes:
                if rng.random() < 0.12 and len(dishes) > 2:
                    continue  # not every restaurant serves the whole menu
                position += 1
                markup = Decimal(rng.choice(["0.00", "0.00", "0.50", "1.00", "-0.50"]))
                item = _Item(
                    id=self._id("itm", 4),
                    restaurant_id=rid,
                    category=category,
                    name=dish,
                    description=description,
                    price=Decimal(price) + markup,
                    available=rng.random() >= 0.06,
                    position=position,
                )
                items.append(item)
                self.groups[item.id] = self.make_groups(item, kind)
        self.items[rid] = items
        self.menus[rid] = [item for item in items if item.available]

    def make_groups(self, item: _Item, kind: str) -> list[tuple[_Group, list[_Option]]]:
        out = []
        for g_pos, (gname, required, max_choices, options) in enumerate(GROUPS[kind], start=1):
            group = _Group(
                id=self._id("grp", 4),
                item_id=item.id,
                name=gname,
                required=required,
                max_choices=1 if required else max_choices,
                position=g_pos,
            )
            opts = [
                _Option(
                    id=self._id("opt", 4),
                    group_id=group.id,
                    item_id=item.id,
                    name=oname,
                    price_delta=Decimal(delta),
                    position=o_pos,
                )
                for o_pos, (oname, delta) in enumerate(options, start=1)
            ]
            out.append((group, opts))
        return out

    def add_customer(self) -> None:
        rng, fake = self.rng, self.fake
        first, last = fake.first_name(), fake.last_name()
        taken = self.emails
        local = f"{first}.{last}".lower().replace("'", "").replace(" ", "")
        email = f"{local}@{fake.free_email_domain()}"
        while email in taken:
            email = f"{local}{rng.randint(2, 99)}@{fake.free_email_domain()}"
        taken.add(email)
        self.customers.append(
            _Customer(
                id=f"cus_{len(self.customers) + 1:04d}",
                name=f"{first} {last}",
                email=email,
                phone=f"+1-555-{rng.randrange(100, 999)}-{rng.randrange(1000, 9999)}",
                address=f"{fake.building_number()} {fake.street_name()}, Apt {rng.randint(1, 40)}",
                zone=rng.choice(ZONES),
                created_at=self.now - dt.timedelta(days=rng.randint(50, 900)),
            )
        )

    def add_courier(self, n: int) -> None:
        rng, fake = self.rng, self.fake
        self.couriers.append(
            _Courier(
                id=f"cou_{n + 1:03d}",
                name=f"{fake.first_name()} {fake.last_name()}",
                phone=f"+1-555-{rng.randrange(100, 999)}-{rng.randrange(1000, 9999)}",
                vehicle=VEHICLES.pick(rng),
                zone=ZONES[n % len(ZONES)],
                status="available" if rng.random() < 0.6 else "off_shift",
            )
        )

    # ------------------------------------------------------------ choosing food
    def pick_options(self, item: _Item) -> list[_Option]:
        """A valid choice: one option of each required group, some optional add-ons."""
        rng = self.rng
        chosen: list[_Option] = []
        for group, options in self.groups[item.id]:
            if group.required:
                chosen.append(rng.choice(options))
            elif rng.random() < 0.3:
                k = rng.randint(1, group.max_choices)
                chosen.extend(rng.sample(options, k=min(k, len(options))))
        return sorted(chosen, key=BY_ID)

    def pick_food(self, restaurant: Restaurant, minimum: Decimal) -> list[_Pick]:
        """Lines of available items until the subtotal reaches ``minimum``."""
        rng, menu = self.rng, self.menus[restaurant.id]
        lines: list[_Pick] = []
        subtotal = ZERO
        while subtotal < minimum or (len(lines) < 3 and rng.random() < 0.4):
            item = rng.choice(menu)
            options = self.pick_options(item)
            quantity = QUANTITIES.pick(rng)
            price = _unit_price(item, options)
            lines.append((item, options, quantity, price))
            subtotal += price * quantity
        return lines

    # ------------------------------------------------------------ history
    def add_orders(self, count: int) -> None:
        rng, now = self.rng, self.now
        self.serving = {
            zone: [r for r in self.restaurants if zone in self.fees[r.id]] for zone in ZONES
        }
        for zone in ZONES:  # a courier's status changes only once every order is made
            self.zone_couriers[zone] = [c for c in self.couriers if c.zone == zone]
            self.available_couriers[zone] = [
                c for c in self.zone_couriers[zone] if c.status == "available"
            ]
        plans: list[dict[str, Any]] = []
        for _ in range(count):
            customer = rng.choice(self.customers)
            options = self.serving[customer.zone]
            if not options:
                continue
            restaurant = rng.choice(options)
            placed = self.open_time(restaurant, rng.randint(1, DAYS_OF_HISTORY))
            if placed is None:
                continue
            outcome = "cancelled" if rng.random() < 0.12 else "delivered"
            plans.append(
                {"customer": customer, "restaurant": restaurant, "placed": placed, "end": outcome}
            )
        # orders still under way: placed in the last 80 minutes, at open restaurants
        for _ in range(10 * max(1, self.ctx.size)):
            customer = rng.choice(self.customers)
            placed = now - dt.timedelta(minutes=rng.randint(3, 80))
            options = [r for r in self.serving[customer.zone] if is_open(r, placed)]
            if not options:
                continue
            end = UNDER_WAY.pick(rng)
            plans.append(
                {
                    "customer": customer,
                    "restaurant": rng.choice(options),
                    "placed": placed,
                    "end": end,
                }
            )
        plans.sort(key=lambda p: (p["placed"], p["customer"].id))
        busy: set[str] = set()
        orders, lines, ratings = self.orders, self.lines, self.ratings
        events: list[_Event] = []
        for n, plan in enumerate(plans, start=1):
            order, order_lines, history = self.make_order(n, plan, busy)
            if order is None:
                continue
            orders.append(order)
            lines.extend(order_lines)
            events.extend(history)
            if order.status == "delivered" and rng.random() < 0.5:
                delivered = history[-1].at
                made = delivered + dt.timedelta(minutes=rng.randint(20, 60 * 48))
                if made < now and order.courier_id is not None:
                    stars = STARS.pick(rng)
                    ratings.append(
                        {
                            "id": f"rat_{len(ratings) + 1:04d}",
                            "order_id": order.id,
                            "customer_id": order.customer_id,
                            "restaurant_id": order.restaurant_id,
                            "courier_id": order.courier_id,
                            "food_stars": stars,
                            "delivery_stars": max(1, min(5, stars + rng.choice([-1, 0, 0, 1]))),
                            "comment": rng.choice(COMMENTS[stars]) if rng.random() < 0.6 else "",
                            "created_at": made,
                        }
                    )
        # a stable sort: events of the same time keep the order they were made in
        for n, ev in enumerate(sorted(events, key=attrgetter("at")), start=1):
            ev.id = f"trk_{n:06d}"
        for k, line in enumerate(lines, start=1):
            line.id = f"ol_{k:05d}"
        for courier in self.couriers:
            if courier.id in busy:
                courier.status = "on_delivery"
        self.events.extend(events)

    def open_time(self, restaurant: Restaurant, days_ago: int) -> dt.datetime | None:
        day = (self.now - dt.timedelta(days=days_ago)).date()
        opens, closes = self.hours[restaurant.id]
        at = opens + self.rng.randrange(max(1, closes - opens - 30))
        when = dt.datetime.combine(day, dt.time(at // 60, at % 60))
        return when if is_open(restaurant, when) and when < self.now else None

    def make_order(
        self, n: int, plan: dict[str, Any], busy: set[str]
    ) -> tuple[_Order | None, list[_Line], list[_Event]]:
        rng, now = self.rng, self.now
        customer: _Customer = plan["customer"]
        restaurant: Restaurant = plan["restaurant"]
        placed: dt.datetime = plan["placed"]
        end: str = plan["end"]
        oid = f"ord_{n:05d}"
        food = self.pick_food(restaurant, restaurant.minimum_order)
        order_lines = []
        for item, options, quantity, price in food:
            order_lines.append(
                _Line(
                    id="",
                    order_id=oid,
                    item_id=item.id,
                    name=item.name,
                    options=", ".join(o.name for o in options),
                    quantity=quantity,
                    unit_price=price,
                    line_total=price * quantity,
                )
            )
        subtotal = sum((line.line_total for line in order_lines), ZERO)
        fee = self.fees[restaurant.id][customer.zone]
        tip = rng.choice(TIPS)
        # the path it took: the flow up to where it ended, or up to where it was cancelled
        if end == "cancelled":
            stop = rng.choice(["placed", "accepted", "accepted", "preparing"])
            path = [*ORDER_FLOW[: ORDER_FLOW.index(stop) + 1], "cancelled"]
        else:
            path = list(ORDER_FLOW[: ORDER_FLOW.index(end) + 1])
        gaps = {
            "accepted": rng.randint(1, 6),
            "preparing": rng.randint(1, 5),
            "picked_up": restaurant.prep_minutes + rng.randint(-5, 10),
            "delivered": rng.randint(8, 25),
            "cancelled": rng.randint(2, 12),
        }
        times = [placed]
        for status in path[1:]:
            times.append(times[-1] + dt.timedelta(minutes=gaps[status]))
        if times[-1] > now:  # an order under way cannot have a future step
            keep = [t for t in times if t <= now]
            path, times = path[: len(keep)], keep
        courier_id = None
        reached = set(path)
        if "picked_up" in reached or (
            reached & {"accepted", "preparing"} and rng.random() < 0.5 and end != "cancelled"
        ):
            active = path[-1] in ("accepted", "preparing", "picked_up")
            if active:
                pool = [c for c in self.available_couriers[restaurant.zone] if c.id not in busy]
            else:
                pool = self.zone_couriers[restaurant.zone]
            if pool:
                courier_id = rng.choice(pool).id
                if active:
                    busy.add(courier_id)
            elif "picked_up" in reached:
                cut = path.index("picked_up")
                path, times = path[:cut], times[:cut]
        status = path[-1]
        order = _Order(
            id=oid,
            customer_id=customer.id,
            restaurant_id=restaurant.id,
            courier_id=courier_id,
            status=status,
            delivery_address=customer.address,
            zone=customer.zone,
            note=rng.choice(ORDER_NOTES),
            subtotal=subtotal,
            delivery_fee=fee,
            tip=tip,
            total=subtotal + fee + tip,
            refunded=ZERO,
            cancel_reason=None,
            placed_at=placed,
            estimated_delivery_at=placed
            + dt.timedelta(minutes=restaurant.prep_minutes + TRAVEL_MINUTES),
        )
        if status == "cancelled":
            reason = CANCELLATIONS.pick(rng)
            # the refund depends on where it was cancelled
            was = Order(status=path[-2], subtotal=order.subtotal, total=order.total)
            order.refunded = cancel_refund(was, reason)
            order.cancel_reason = reason
        history = [
            _Event(id="", order_id=oid, status=s, at=t, note=NOTES[s])
            for s, t in zip(path, times, strict=True)
        ]
        return order, order_lines, history

    # ------------------------------------------------------------ carts
    def add_carts(self, count: int) -> None:
        rng = self.rng
        shoppers = rng.sample(self.customers, k=min(count, len(self.customers)))
        n = 0
        for customer in sorted(shoppers, key=lambda c: c.id):
            options = self.serving[customer.zone]
            if not options:
                continue
            restaurant = rng.choice(options)
            # some carts are still short of the minimum order
            target = restaurant.minimum_order if rng.random() < 0.7 else Decimal("0.01")
            merged: dict[tuple[str, str], _CartLine] = {}
            for item, chosen, quantity, price in self.pick_food(restaurant, target):
                key = (item.id, " ".join(o.id for o in chosen))
                if key in merged:
                    merged[key].quantity += quantity
                    continue
                n += 1
                merged[key] = _CartLine(
                    id=f"cl_{n:04d}",
                    customer_id=customer.id,
                    restaurant_id=restaurant.id,
                    item_id=item.id,
                    option_ids=key[1],
                    quantity=quantity,
                    unit_price=price,
                    added_at=self.now - dt.timedelta(minutes=rng.randint(2, 600)),
                )
            self.cart_lines.extend(merged.values())


NOTES = {
    "placed": "Order placed",
    "accepted": "Restaurant accepted the order",
    "preparing": "The kitchen is preparing the order",
    "picked_up": "Courier picked up the order",
    "delivered": "Delivered to the customer",
    "cancelled": "Order cancelled",
}


def unit_price(item: MenuItem, options: list[Option]) -> Decimal:
    return item.price + sum((o.price_delta for o in options), ZERO)


def _unit_price(item: _Item, options: list[_Option]) -> Decimal:
    """:func:`unit_price` of the sampler's plain menu objects."""
    return item.price + sum((o.price_delta for o in options), ZERO)


__all__ = ["NOTES", "WEEKDAYS", "sample_food_delivery", "unit_price"]
