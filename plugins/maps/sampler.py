"""A realistic city map: size 1 gives a 12 x 9 street grid (~190 segments), ~350 addresses,
120 places with weekly opening hours, 10 users with saved places and lists.

The grid's horizontal streets are "... Street", its vertical ones "... Avenue"; the top
row is an expressway (cars only, 80 km/h), one street and one avenue are arterials with a
bus line, some interior streets are one-way for cars (alternating directions, so every
driveable junction stays reachable), a block of the old town is a pedestrian zone (no
cars), and a few residential segments are missing. Addresses are numbered by block along
each street (even numbers one side, odd the other). Every random choice comes from
``ctx.rng``/``ctx.fake`` and every time from ``ctx.now``.
"""

from __future__ import annotations

import datetime as dt
from collections import deque
from dataclasses import dataclass, field
from random import Random

from prove_gym.server import SampleContext

from .models import (
    CATEGORIES,
    Address,
    Area,
    Edge,
    ListItem,
    Node,
    OpeningHours,
    Place,
    PlaceList,
    SavedPlace,
    Street,
    User,
    distance_m,
    to_metres,
    to_microdegrees,
)

# city, region, origin lat/lon in microdegrees, metres per degree of longitude there,
# first postcode, district names (the first is the old town with the pedestrian zone)
CITIES: tuple[tuple[str, str, int, int, int, int, tuple[str, ...]], ...] = (
    (
        "Portland",
        "OR",
        45_505_000,
        -122_690_000,
        78_030,
        97201,
        ("Old Town", "Pearl District", "Buckman", "Goose Hollow", "Kerns", "Sunnyside"),
    ),
    (
        "Madison",
        "WI",
        43_060_000,
        -89_410_000,
        81_340,
        53703,
        ("Old Market", "Tenney Park", "Marquette", "Vilas", "Regent", "Bay Creek"),
    ),
    (
        "Burlington",
        "VT",
        44_465_000,
        -73_225_000,
        79_400,
        5401,
        ("Church Street", "Old North End", "Hill Section", "South End", "Lakeside", "Ward 8"),
    ),
    (
        "Boulder",
        "CO",
        40_005_000,
        -105_290_000,
        85_250,
        80302,
        ("Old Town", "Whittier", "Mapleton Hill", "Goss Grove", "Martin Acres", "Newlands"),
    ),
)
STREET_WORDS = (
    "Maple", "Oak", "Cedar", "Elm", "Pine", "Birch", "Willow", "Chestnut", "Walnut", "Spruce",
    "Harbor", "Mill", "Church", "Market", "Station", "Park", "River", "Lake", "Hill", "Bridge",
    "King", "Queen", "Union", "Garden", "Orchard", "Meadow", "Lincoln", "Franklin", "Jefferson",
    "Madison", "Washington", "Jackson", "Adams", "Monroe", "Grant", "Hamilton", "Salmon",
    "Alder", "Hawthorne", "Belmont", "Clinton", "Division", "Taylor", "Yamhill", "Morrison",
)  # fmt: skip
CATEGORY_WEIGHTS: dict[str, int] = {
    "bakery": 6,
    "bank": 5,
    "bar": 8,
    "cafe": 12,
    "cinema": 2,
    "gas_station": 4,
    "gym": 4,
    "hospital": 1,
    "hotel": 4,
    "library": 2,
    "museum": 3,
    "park": 5,
    "pharmacy": 6,
    "restaurant": 18,
    "supermarket": 6,
}
NAME_PARTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "bakery": (("Golden", "Rise", "Crumb", "Hearth", "Flour", "Sunday"), ("Bakery", "Bakehouse")),
    "bank": (("First", "Union", "Cascade", "Summit", "Pioneer", "Harbor"), ("Bank", "Credit Union")),
    "bar": (("Copper", "Rusty", "Velvet", "Lantern", "Anchor", "Owl"), ("Tap Room", "Bar", "Pub")),
    "cafe": (("Blue Door", "Little", "Morning", "Bean", "Ember", "Common"), ("Café", "Coffee")),
    "cinema": (("Bagdad", "Hollywood", "Roxy", "Regal", "Avalon", "Lumière"), ("Cinema", "Theater")),
    "gas_station": (("Shell", "Chevron", "Arco", "76", "Pacific Pride", "Sinclair"), ("Station",)),
    "gym": (("Iron", "Peak", "Core", "Anytime", "Summit", "Pulse"), ("Fitness", "Gym")),
    "hospital": (("St. Mary's", "Providence", "Good Samaritan", "Legacy"), ("Medical Center",)),
    "hotel": (("Grand", "Harbor View", "Riverside", "Heathman", "Ace", "Jupiter"), ("Hotel", "Inn")),
    "library": (("Central", "Northside", "Eastside", "Belmont", "Hillside"), ("Library",)),
    "museum": (("City", "Art", "Science", "History", "Maritime", "Children's"), ("Museum",)),
    "park": (("Laurelhurst", "Washington", "Forest", "Riverfront", "Mt. Tabor", "Irving"), ("Park",)),
    "pharmacy": (("Walgreens", "CVS", "Rite Aid", "Corner", "Community", "Green Cross"), ("Pharmacy",)),
    "restaurant": (
        ("Olive", "Saffron", "Harvest", "Lotus", "Ember", "Tavola", "Pho", "Taqueria", "Basil"),
        ("Kitchen", "Bistro", "Grill", "Trattoria", "House", "Table"),
    ),
    "supermarket": (("Fred Meyer", "Safeway", "New Seasons", "Trader Joe's", "QFC"), ("Market",)),
}  # fmt: skip
FOOD = {"bakery", "bar", "cafe", "restaurant"}
LIST_THEMES: dict[str, tuple[str, ...]] = {
    "Coffee spots": ("cafe", "bakery"),
    "Date night": ("restaurant", "bar", "cinema"),
    "Weekend brunch": ("cafe", "bakery", "restaurant"),
    "Museums to visit": ("museum", "library", "park"),
    "Kid-friendly": ("park", "museum", "library", "cinema"),
    "Out-of-town guests": ("hotel", "restaurant", "museum", "park"),
    "Late-night eats": ("restaurant", "bar"),
    "Errands": ("pharmacy", "supermarket", "bank", "gas_station"),
    "Rainy day ideas": ("museum", "cinema", "library", "cafe"),
    "Best bakeries": ("bakery",),
}
LIST_NAMES = tuple(LIST_THEMES)
NOTES = (
    "Great for working remotely",
    "Try the seasonal special",
    "Parking is tight on weekends",
    "Ask for a window table",
    "Recommended by Sam",
    "Cash only at the counter",
    "Good with kids",
    "",
)
CLOSED_NOTES = ("closed for renovation", "closed for the season", "closed until further notice")


def _week(*days: tuple[int, ...] | None) -> list[list[tuple[int, int]]]:
    return [[] if d is None else [(d[i], d[i + 1]) for i in range(0, len(d), 2)] for d in days]


def _h(hh: int, mm: int = 0) -> int:
    return hh * 60 + mm


ALWAYS = _week(*[(0, 1440)] * 7)


def _hours(category: str, rng: Random) -> list[list[tuple[int, int]]]:
    """A week of opening intervals for a place of ``category`` (Monday first)."""
    if category == "cafe":
        o = rng.choice([_h(6, 30), _h(7), _h(7, 30)])
        c = rng.choice([_h(17), _h(18), _h(19)])
        return _week(*[(o, c)] * 5, (_h(8), c), (_h(8), _h(16)))
    if category == "bakery":
        return _week(*[(_h(6, 30), _h(18))] * 6, (_h(7), _h(14)) if rng.random() < 0.6 else None)
    if category == "restaurant":
        lunch, dinner = (_h(11, 30), _h(14, 30)), (_h(17, 30), rng.choice([_h(22), _h(22, 30)]))
        split = lunch + dinner
        monday = None if rng.random() < 0.4 else split
        return _week(monday, split, split, split, split, (_h(11, 30), _h(23)), (_h(11, 30), _h(21)))
    if category == "bar":
        late = rng.choice([_h(25), _h(26)])
        return _week(
            None if rng.random() < 0.3 else (_h(16), _h(24)),
            (_h(16), _h(24)),
            (_h(16), _h(24)),
            (_h(16), late),
            (_h(15), _h(26)),
            (_h(14), _h(26)),
            (_h(14), _h(23)),
        )
    if category == "pharmacy":
        if rng.random() < 0.2:
            return ALWAYS
        return _week(*[(_h(8), _h(20))] * 5, (_h(9), _h(18)), (_h(10), _h(16)))
    if category == "supermarket":
        return _week(*[(_h(7), rng.choice([_h(22), _h(23)]))] * 7)
    if category == "museum":
        return _week(
            None, *[(_h(10), _h(17))] * 3, (_h(10), _h(21)), (_h(10), _h(18)), (_h(10), _h(18))
        )
    if category == "park":
        return _week(*[(_h(5), _h(22))] * 7)
    if category == "gas_station":
        return ALWAYS if rng.random() < 0.5 else _week(*[(_h(6), _h(23))] * 7)
    if category in ("hospital", "hotel"):
        return ALWAYS
    if category == "library":
        return _week(*[(_h(10), _h(20))] * 4, (_h(10), _h(18)), (_h(10), _h(17)), None)
    if category == "bank":
        return _week(*[(_h(9), _h(17))] * 5, (_h(9), _h(13)) if rng.random() < 0.5 else None, None)
    if category == "gym":
        return _week(*[(_h(5), _h(23))] * 5, (_h(7), _h(21)), (_h(7), _h(21)))
    if category == "cinema":
        return _week(*[(_h(12), _h(23))] * 4, (_h(12), _h(25)), (_h(11), _h(25)), (_h(11), _h(23)))
    raise AssertionError(category)


# Rows are built as plain objects (attributes named as the columns) and inserted a table at
# a time, in the order the ORM's one flush wrote them: a mapped object costs the ORM ~30 µs
# to build and the flush more to write. ``eq=False``: compared by identity, as mapped
# objects are. (The one area stays a mapped object: ``to_metres`` and friends take it.)
@dataclass(slots=True, eq=False)
class _Street:
    id: str
    name: str
    kind: str


@dataclass(slots=True, eq=False)
class _Node:
    id: str
    x: int
    y: int
    lat_e6: int
    lon_e6: int


@dataclass(slots=True, eq=False)
class _Edge:
    id: str
    street_id: str
    from_node: str
    to_node: str
    length_m: int
    oneway: bool
    drive_kmh: int
    walk_kmh: int
    bike_kmh: int
    transit_kmh: int


@dataclass(slots=True, eq=False)
class _Address:
    id: str
    street_id: str
    number: int
    edge_id: str
    offset_m: int
    district: str
    postcode: str
    label: str
    full_label: str
    lat_e6: int
    lon_e6: int
    x: int
    y: int


@dataclass(slots=True, eq=False)
class _Place:
    id: str
    name: str
    category: str
    address_id: str
    phone: str
    rating_x10: int
    review_count: int
    price_level: int
    status: str
    status_note: str


@dataclass(slots=True, eq=False)
class _Hours:
    place_id: str
    weekday: int
    opens_min: int
    closes_min: int


@dataclass(slots=True, eq=False)
class _User:
    id: str
    name: str
    email: str
    home_address_id: str


@dataclass(slots=True, eq=False)
class _Saved:
    id: str
    user_id: str
    place_id: str
    label: str
    note: str
    saved_at: dt.datetime


@dataclass(slots=True, eq=False)
class _List:
    id: str
    user_id: str
    name: str
    description: str
    created_at: dt.datetime


@dataclass(slots=True, eq=False)
class _Item:
    list_id: str
    saved_id: str
    position: int
    note: str
    added_at: dt.datetime


@dataclass
class _Map:
    ctx: SampleContext
    area: Area
    cols: int
    rows: int
    districts: tuple[str, ...]
    postcode: int
    nodes: list[_Node] = field(default_factory=list)
    edges: list[_Edge] = field(default_factory=list)
    streets: dict[str, _Street] = field(default_factory=dict)
    addresses: list[_Address] = field(default_factory=list)
    hours: list[_Hours] = field(default_factory=list)
    users: list[_User] = field(default_factory=list)
    saved: list[_Saved] = field(default_factory=list)
    lists: list[_List] = field(default_factory=list)
    items: list[_Item] = field(default_factory=list)
    old_town: tuple[int, int, int, int] = (0, 0, 0, 0)
    """Columns c0..c1 and rows r0..r1 of the pedestrian zone's junctions."""

    def node(self, c: int, r: int) -> _Node:
        return self.nodes[r * self.cols + c]

    def district(self, c: int, r: int) -> str:
        c0, c1, r0, r1 = self.old_town
        if c0 <= c <= c1 and r0 <= r <= r1:
            return self.districts[0]
        third = min(2, 3 * c // self.cols)
        half = min(1, 2 * r // self.rows)
        return self.districts[1 + (third + 3 * half) % 5]


def sample_maps(ctx: SampleContext) -> None:
    """Fill an empty maps database (see the module docstring for sizes)."""
    m = _city(ctx)
    _graph(m)
    _addresses(m)
    places = _places(m)
    _users(m, places)
    # the tables in the order the ORM's flush wrote them (rows in the order they were made)
    ctx.insert(m.addresses, into=Address)
    ctx.insert([m.area])
    ctx.insert(m.edges, into=Edge)
    ctx.insert(m.nodes, into=Node)
    ctx.insert(m.lists, into=PlaceList)
    ctx.insert(m.saved, into=SavedPlace)
    ctx.insert(m.streets.values(), into=Street)  # rows, then avenues: in id order
    ctx.insert(m.users, into=User)
    ctx.insert(m.items, into=ListItem)
    ctx.insert(places, into=Place)
    ctx.insert(m.hours, into=OpeningHours)


# ---------------------------------------------------------------- the city
def _city(ctx: SampleContext) -> _Map:
    rng = ctx.rng
    city, region, lat, lon, per_lon, postcode, districts = rng.choice(CITIES)
    cols, rows = 8 + 4 * ctx.size, 6 + 3 * ctx.size
    area = Area(
        id="area_1",
        city=city,
        region=region,
        origin_lat_e6=lat,
        origin_lon_e6=lon,
        metres_per_degree_lon=per_lon,
        width_m=0,
        height_m=0,
    )
    return _Map(ctx, area, cols, rows, districts, postcode)


STREET_PREFIXES = ("North", "South", "East", "West", "Old", "New")


def _street_words(rng: Random, n: int) -> list[str]:
    """``n`` different street names' first words: the plain words while they last (every
    town of size 4 or less), then ones such as "North Maple" for a larger town's grid."""
    if n <= len(STREET_WORDS):
        return rng.sample(STREET_WORDS, n)
    more = [f"{p} {w}" for p in STREET_PREFIXES for w in STREET_WORDS]
    return rng.sample(STREET_WORDS, len(STREET_WORDS)) + rng.sample(more, n - len(STREET_WORDS))


def _graph(m: _Map) -> None:
    rng = m.ctx.rng
    xs, ys = [0], [0]
    for _ in range(m.cols - 1):
        xs.append(xs[-1] + rng.randrange(160, 261, 5))
    for _ in range(m.rows - 1):
        ys.append(ys[-1] + rng.randrange(120, 221, 5))
    m.area.width_m, m.area.height_m = xs[-1], ys[-1]
    for r in range(m.rows):
        for c in range(m.cols):
            x = xs[c] + rng.randint(-8, 8)
            y = ys[r] + rng.randint(-8, 8)
            lat, lon = to_microdegrees(m.area, x, y)
            x, y = to_metres(m.area, lat, lon)
            m.nodes.append(_Node(id=f"nd_{len(m.nodes) + 1:04d}", x=x, y=y, lat_e6=lat, lon_e6=lon))
    words = _street_words(rng, m.rows + m.cols)
    arterial_row = m.rows // 2 - 1 + rng.randint(0, 1)
    arterial_col = m.cols // 2 - 1 + rng.randint(0, 1)
    expressway = m.rows - 1
    c0 = rng.randint(1, m.cols - 5)
    if c0 <= arterial_col <= c0 + 3:
        c0 = arterial_col + 1 if arterial_col + 4 < m.cols - 1 else arterial_col - 4
    r0 = rng.randint(1, m.rows - 5)
    if r0 <= arterial_row <= r0 + 2:
        r0 = arterial_row + 1 if arterial_row + 3 < expressway else max(1, arterial_row - 3)
    m.old_town = (c0, c0 + 3, r0, r0 + 2)
    # streets: rows first (south to north), then avenues (west to east)
    for r in range(m.rows):
        kind = (
            "expressway" if r == expressway else "arterial" if r == arterial_row else "residential"
        )
        name = f"{words[r]} {'Parkway' if kind == 'expressway' else 'Street'}"
        m.streets[f"r{r}"] = _Street(id=f"st_{r + 1:03d}", name=name, kind=kind)
    for c in range(m.cols):
        kind = "arterial" if c == arterial_col else "residential"
        name = f"{words[m.rows + c]} Avenue"
        m.streets[f"c{c}"] = _Street(id=f"st_{m.rows + c + 1:03d}", name=name, kind=kind)
    # one-way: every other interior residential street, alternating directions
    oneway: dict[str, int] = {}
    for key, street in m.streets.items():
        index = int(key[1:])
        edge_of_map = index == 0 or index == (m.rows if key[0] == "r" else m.cols) - 1
        if street.kind == "residential" and not edge_of_map and rng.random() < 0.5:
            oneway[key] = 1 if len(oneway) % 2 == 0 else -1
    segments: list[tuple[str, int, int, int, int]] = []  # street key, c, r, c2, r2
    for r in range(m.rows):
        segments += [(f"r{r}", c, r, c + 1, r) for c in range(m.cols - 1)]
    for c in range(m.cols):
        segments += [(f"c{c}", c, r, c, r + 1) for r in range(m.rows - 1)]
    missing = _missing(m, segments, arterial_row, arterial_col)
    for key, c, r, c2, r2 in segments:
        if (c, r, c2, r2) in missing:
            continue
        street = m.streets[key]
        a, b = m.node(c, r), m.node(c2, r2)
        direction = oneway.get(key, 0)
        if direction < 0:
            a, b = b, a
        inside = _in_old_town(m, c, r) and _in_old_town(m, c2, r2) and street.kind != "arterial"
        kind = "pedestrian" if inside else street.kind
        speeds = {
            "expressway": (80, 0, 0, 0),
            "arterial": (50, 5, 18, 25),
            "residential": (30, 5, 15, 0),
            "pedestrian": (0, 5, 10, 0),
        }[kind]
        m.edges.append(
            _Edge(
                id=f"edg_{len(m.edges) + 1:04d}",
                street_id=street.id,
                from_node=a.id,
                to_node=b.id,
                length_m=max(1, distance_m(a.x, a.y, b.x, b.y) + rng.randint(0, 6)),
                oneway=bool(direction) and kind != "pedestrian",
                drive_kmh=speeds[0],
                walk_kmh=speeds[1],
                bike_kmh=speeds[2],
                transit_kmh=speeds[3],
            )
        )


def _in_old_town(m: _Map, c: int, r: int) -> bool:
    c0, c1, r0, r1 = m.old_town
    return c0 <= c <= c1 and r0 <= r <= r1


def _missing(
    m: _Map, segments: list[tuple[str, int, int, int, int]], arterial_row: int, arterial_col: int
) -> set[tuple[int, int, int, int]]:
    """A few interior residential segments that do not exist (a park, a rail yard), never
    disconnecting the walkable grid."""
    rng = m.ctx.rng
    gone: set[tuple[int, int, int, int]] = set()
    candidates = [
        (c, r, c2, r2)
        for key, c, r, c2, r2 in segments
        if 0 < r < m.rows - 2
        and 0 < c < m.cols - 1
        and 0 < r2 < m.rows - 2
        and 0 < c2 < m.cols - 1
        and key not in (f"r{arterial_row}", f"c{arterial_col}")
        and not (_in_old_town(m, c, r) or _in_old_town(m, c2, r2))
    ]
    for seg in rng.sample(candidates, k=max(2, len(candidates) // 25)):
        trial = gone | {seg}
        if _walk_connected(m, segments, trial):
            gone = trial
    return gone


def _walk_connected(
    m: _Map, segments: list[tuple[str, int, int, int, int]], gone: set[tuple[int, int, int, int]]
) -> bool:
    """Every junction reachable on foot (the expressway row's junctions by the avenues)."""
    adj: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for key, c, r, c2, r2 in segments:
        if (c, r, c2, r2) in gone or (key == f"r{m.rows - 1}"):
            continue
        adj.setdefault((c, r), []).append((c2, r2))
        adj.setdefault((c2, r2), []).append((c, r))
    seen = {(0, 0)}
    todo = deque([(0, 0)])
    while todo:
        for nxt in adj.get(todo.popleft(), []):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return len(seen) == m.rows * m.cols


# ---------------------------------------------------------------- addresses
def _addresses(m: _Map) -> None:
    """1-3 addresses per segment (none on the expressway), numbered by block."""
    rng = m.ctx.rng
    by_id = {n.id: n for n in m.nodes}
    index = {n.id: divmod(i, m.cols) for i, n in enumerate(m.nodes)}  # (r, c)
    streets = {s.id: s for s in m.streets.values()}
    city, region = m.area.city, m.area.region
    for e in m.edges:
        street = streets[e.street_id]
        if street.kind == "expressway":
            continue
        a, b = by_id[e.from_node], by_id[e.to_node]
        (ra, ca), (rb, cb) = index[a.id], index[b.id]
        block = min(ca, cb) if ra == rb else min(ra, rb)
        low_first = (ca, ra) <= (cb, rb)
        count = rng.choice([1, 2, 2, 3])
        for k in range(count):
            frac_low = (2 * k + 1) * 1000 // (2 * count) + rng.randint(-60, 60)
            frac = frac_low if low_first else 1000 - frac_low
            offset = min(max(1, e.length_m * frac // 1000), e.length_m - 1)
            x = a.x + (b.x - a.x) * offset // e.length_m
            y = a.y + (b.y - a.y) * offset // e.length_m
            lat, lon = to_microdegrees(m.area, x, y)
            x, y = to_metres(m.area, lat, lon)
            number = 100 * (block + 1) + 2 * k + rng.randint(0, 1) + 2 * rng.randint(0, 8) * k
            district = m.district(min(ca, cb), min(ra, rb))
            postcode = f"{m.postcode + m.districts.index(district):05d}"
            label = f"{number} {street.name}"
            m.addresses.append(
                _Address(
                    id="",
                    street_id=street.id,
                    number=number,
                    edge_id=e.id,
                    offset_m=offset,
                    district=district,
                    postcode=postcode,
                    label=label,
                    full_label=f"{label}, {district}, {city}, {region} {postcode}",
                    lat_e6=lat,
                    lon_e6=lon,
                    x=x,
                    y=y,
                )
            )
    # one address per label: a later duplicate number on the street moves up by 2
    used: set[str] = set()
    for addr in m.addresses:
        while addr.label in used:
            addr.number += 2
            street_name = addr.label.split(" ", 1)[1]
            addr.label = f"{addr.number} {street_name}"
            tail = addr.full_label.split(", ", 1)[1]
            addr.full_label = f"{addr.label}, {tail}"
        used.add(addr.label)
    for i, addr in enumerate(m.addresses, start=1):
        addr.id = f"adr_{i:05d}"


# ---------------------------------------------------------------- places
def _places(m: _Map) -> list[_Place]:
    rng, fake = m.ctx.rng, m.ctx.fake
    count = 120 * m.ctx.size
    chosen = sorted(rng.sample(range(len(m.addresses)), k=count))
    cats = sorted(CATEGORY_WEIGHTS)
    weights = [CATEGORY_WEIGHTS[c] for c in cats]
    categories = [*CATEGORIES, *rng.choices(cats, weights, k=count - len(CATEGORIES))]
    rng.shuffle(categories)
    names: set[str] = set()
    places: list[_Place] = []
    for i, (ai, category) in enumerate(zip(chosen, categories, strict=True), start=1):
        addr = m.addresses[ai]
        first, second = NAME_PARTS[category]
        name = ""
        for attempt in range(20):
            base = rng.choice(first) if attempt < 8 or rng.random() < 0.5 else fake.last_name()
            name = f"{base} {rng.choice(second)}"
            if attempt >= 10:
                name = f"{name} {addr.district}"
            if name not in names:
                break
        if name in names:
            name = f"{name} ({addr.label})"
        names.add(name)
        place = _Place(
            id=f"pl_{i:04d}",
            name=name,
            category=category,
            address_id=addr.id,
            phone=fake.numerify("(###) 555-####"),
            rating_x10=rng.choices(range(25, 51), weights=[1] * 10 + [3] * 10 + [2] * 6)[0],
            review_count=int(rng.lognormvariate(4.5, 1.2)) + 3,
            price_level=rng.choice([1, 2, 2, 2, 3, 3, 4]) if category in FOOD else 0,
            status="operational",
            status_note="",
        )
        places.append(place)
        for day, intervals in enumerate(_hours(category, rng)):
            for opens, closes in intervals:
                m.hours.append(
                    _Hours(place_id=place.id, weekday=day, opens_min=opens, closes_min=closes)
                )
    closed = rng.sample(places, k=max(2, count // 12))
    half = len(closed) // 2
    for p in closed[:half]:
        p.status = "temporarily_closed"
        p.status_note = rng.choice(CLOSED_NOTES)
    for p in closed[half:]:
        p.status = "permanently_closed"
        p.status_note = "permanently closed"
    return places


# ---------------------------------------------------------------- users
def _users(m: _Map, places: list[_Place]) -> None:
    rng, fake, now = m.ctx.rng, m.ctx.fake, m.ctx.now
    with_place = {p.address_id for p in places}
    homes = [a for a in m.addresses if a.id not in with_place]
    savable = [p for p in places if p.status != "permanently_closed"]
    saved_n = list_n = 0
    users = 10 * m.ctx.size
    for u, home in enumerate(rng.sample(homes, k=users), start=1):
        name = fake.unique.name()
        local = name.lower().replace(" ", ".").replace("'", "")
        user = _User(
            id=f"usr_{u:03d}",
            name=name,
            email=f"{local}@{fake.free_email_domain()}",
            home_address_id=home.id,
        )
        m.users.append(user)
        liked = rng.sample(sorted(CATEGORY_WEIGHTS), k=3)
        pool = [p for p in savable if p.category in liked]
        picks = rng.sample(pool, k=min(len(pool), rng.randint(2, 8)))
        rest = [p for p in savable if p not in picks]
        picks += rng.sample(rest, k=rng.randint(2, 8))
        saved: list[_Saved] = []
        for p in picks:
            saved_n += 1
            at = now - dt.timedelta(days=rng.randint(1, 500), minutes=rng.randrange(1440))
            saved.append(
                _Saved(
                    id=f"sav_{saved_n:04d}",
                    user_id=user.id,
                    place_id=p.id,
                    label=rng.choices(["favorite", "want_to_go", "starred"], [5, 4, 2])[0],
                    note=rng.choice(NOTES) if rng.random() < 0.35 else "",
                    saved_at=at,
                )
            )
        m.saved += saved
        for name_ in rng.sample(LIST_NAMES, k=rng.choice([1, 2, 2, 3, 4])):
            matching = [
                s for s, p in zip(saved, picks, strict=True) if p.category in LIST_THEMES[name_]
            ]
            if not matching:
                continue
            list_n += 1
            members = rng.sample(matching, k=rng.randint(1, min(8, len(matching))))
            created = min(s.saved_at for s in members) - dt.timedelta(days=rng.randint(0, 30))
            plist = _List(
                id=f"lst_{list_n:03d}",
                user_id=user.id,
                name=name_,
                description=rng.choice(["", "", f"{name_} around {m.area.city}"]),
                created_at=created,
            )
            m.lists.append(plist)
            for pos, s in enumerate(members, start=1):
                late = max(s.saved_at, created)
                added = late + (now - late) * rng.randint(0, 100) // 100
                m.items.append(
                    _Item(
                        list_id=plist.id,
                        saved_id=s.id,
                        position=pos,
                        note=rng.choice(NOTES) if rng.random() < 0.2 else "",
                        added_at=added.replace(microsecond=0),
                    )
                )
