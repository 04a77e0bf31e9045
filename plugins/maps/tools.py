"""The maps server's 16 tools (12 reads, 4 writes). Docstrings are what the model reads.

Domain rules have names (``already_saved``, ``list_full``, ``no_route``, ...); a tool that
refuses raises ``PreconditionFailed`` with a message that starts with ``Rule '<name>'
failed:`` and says what to do instead (``RULES`` lists them all). Every write checks all
its rules before it changes anything.

Routes are computed at call time by Dijkstra over the road graph (never stored), fastest
first, ties broken by fewer metres and then by the junction id, so the same state always
gives the same route.
"""

from __future__ import annotations

import datetime as dt
import functools
import heapq
import random
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, Literal, get_args

from pydantic import Field
from sqlalchemy import bindparam, delete, func, or_, select, update

from prove_gym.server import (
    Bound,
    Entity,
    InvalidArgument,
    NotFound,
    PreconditionFailed,
    Query,
    Record,
    Server,
    ToolContext,
    TypedDict,
    contains,
    next_id,
    search_pattern,
)

from .models import (
    CATEGORIES,
    LIST_CAPACITY,
    MAX_LISTS,
    WEEKDAYS,
    Address,
    Area,
    Base,
    Edge,
    ListItem,
    OpeningHours,
    Place,
    PlaceList,
    SavedPlace,
    Street,
    User,
    degrees,
    distance_m,
    hhmm,
    rating,
    seconds,
    to_metres,
)
from .sampler import NOTES, sample_maps

OUT_OF_SCOPE = (
    "Show me live traffic cameras on the highway.",
    "Download the map of this city for offline use.",
    "Report a road closure on Main Street.",
    "Book a table for two at an Italian restaurant tonight.",
    "Call a taxi to take me to the airport.",
    "Show me the street view of the city museum.",
    "Add a missing place to the map.",
    "Share my live location with my sister.",
    "What's the weather like at the park right now?",
    "Buy me a transit ticket for this route.",
    "Write a review of the cafe I visited.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

server = Server(
    "maps",
    out_of_scope=OUT_OF_SCOPE,
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.0.0",
    base=Base,
    sampler=sample_maps,
    description="A city map: places and points of interest with categories and opening "
    "hours, geocoding (address text to coordinates) and reverse geocoding (coordinates to "
    "the nearest address), nearby search by radius, routes over the road graph by car, on "
    "foot, by bike or by transit with exact distance and time, and users' saved places and "
    "lists.",
    instructions="Maps conventions: places have ids like 'pl_0042', addresses 'adr_00317', "
    "users 'usr_004', saved places 'sav_0031', lists 'lst_007'. Routes and nearby searches "
    "start from address ids: a place's address_id comes with it in every place result, and "
    "geocode turns address text into one. Distances are whole metres, durations whole "
    "seconds, coordinates decimal degrees with six decimals. 'Open now' is judged at the "
    "map's current time, shown as 'now' in place details. Modes: drive (cars obey one-way "
    "streets and may not enter pedestrian zones or use them), walk, bike (neither may use the "
    "expressway) and transit (buses on bus routes, walking elsewhere). A list holds only its "
    "owner's saved places: save a place for the user before adding it to one of their lists. "
    "A refused request changes nothing; its message names the rule and what to do instead.",
)

PlaceRow = Annotated[Record[Place], Entity("place")]
AddressRow = Annotated[Record[Address], Entity("address")]
UserRow = Annotated[Record[User], Entity("user")]
SavedRow = Annotated[Record[SavedPlace], Entity("saved_place")]
ListRow = Annotated[Record[PlaceList], Entity("list")]
Category = Literal[
    "bakery",
    "bank",
    "bar",
    "cafe",
    "cinema",
    "gas_station",
    "gym",
    "hospital",
    "hotel",
    "library",
    "museum",
    "park",
    "pharmacy",
    "restaurant",
    "supermarket",
]
Mode = Literal["drive", "walk", "bike", "transit"]
SaveLabel = Literal["favorite", "want_to_go", "starred"]
SearchText = Annotated[str, Field(max_length=200)]
Note = Annotated[str, Field(max_length=300)]
Limit = Annotated[int, Field(ge=1, le=50)]
Latitude = Annotated[Decimal, Field(ge=-90, le=90, allow_inf_nan=False)]
Longitude = Annotated[Decimal, Field(ge=-180, le=180, allow_inf_nan=False)]
Radius = Annotated[int, Field(ge=50, le=5000)]
MAX_DESTINATIONS = 10
MAX_OFF_MAP_M = 1000
"""reverse_geocode answers only for points this close to an address of the map."""

RULES: dict[str, str] = {
    "place_permanently_closed": "A permanently closed place cannot be saved.",
    "already_saved": "A user saves a place once; the saved place keeps its first label.",
    "list_name_taken": "A user's lists have distinct names (ignoring case and surrounding spaces).",
    "too_many_lists": f"A user has at most {MAX_LISTS} lists.",
    "same_owner": "A list holds only saved places of the list's owner.",
    "already_in_list": "A saved place appears at most once in a list.",
    "list_full": f"A list holds at most {LIST_CAPACITY} places.",
    "no_route": "A route exists only where the mode may travel: cars obey one-way streets "
    "and stay out of pedestrian zones; walking, cycling and transit stay off the "
    "expressway.",
    "outside_map_area": f"Reverse geocoding answers only within {MAX_OFF_MAP_M} m of an "
    "address of the map.",
}


class RuleBroken(PreconditionFailed):
    """A named maps rule refused the request."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(f"Rule '{rule}' failed: {detail}")
        self.rule = rule


# ----------------------------------------------------------------- results
class PlaceSummary(TypedDict):
    place_id: str
    name: str
    category: str
    address_id: str
    address: str
    district: str
    rating: Decimal
    price_level: int | None
    status: str
    open_now: bool


class NearbyPlace(PlaceSummary):
    distance_m: int


class HoursOut(TypedDict):
    weekday: str
    opens: str
    closes: str


class PlaceDetail(TypedDict):
    place_id: str
    name: str
    category: str
    address_id: str
    address: str
    full_address: str
    district: str
    latitude: Decimal
    longitude: Decimal
    phone: str
    rating: Decimal
    review_count: int
    price_level: int | None
    status: str
    status_note: str | None
    now: str
    open_now: bool
    open_24_hours: bool
    closes_at: str | None
    opens_at: str | None
    hours: list[HoursOut]


class OpenAtOut(TypedDict):
    place_id: str
    name: str
    when: str
    weekday: str
    status: str
    open: bool
    hours_that_day: list[HoursOut]
    closes_at: str | None
    opens_at: str | None


class GeocodeOut(TypedDict):
    address_id: str
    address: str
    full_address: str
    district: str
    latitude: Decimal
    longitude: Decimal
    place_id: str | None
    place_name: str | None
    match: str


class ReverseOut(TypedDict):
    address_id: str
    address: str
    full_address: str
    district: str
    latitude: Decimal
    longitude: Decimal
    distance_m: int
    place_id: str | None
    place_name: str | None


class NearbyOut(TypedDict):
    center_address_id: str
    center: str
    radius_m: int
    places: list[NearbyPlace]


class StepOut(TypedDict):
    street: str
    distance_m: int
    duration_s: int


class RouteOut(TypedDict):
    origin_address_id: str
    origin: str
    destination_address_id: str
    destination: str
    mode: str
    distance_m: int
    duration_s: int
    duration_text: str
    straight_line_m: int
    steps: list[StepOut]


class LegOut(TypedDict):
    address_id: str
    address: str
    reachable: bool
    distance_m: int | None
    duration_s: int | None


class MatrixOut(TypedDict):
    origin_address_id: str
    origin: str
    mode: str
    destinations: list[LegOut]


class UserOut(TypedDict):
    user_id: str
    name: str
    email: str
    home_address_id: str
    home_address: str


class SavedOut(TypedDict):
    saved_id: str
    user_id: str
    place_id: str
    name: str
    category: str
    address_id: str
    address: str
    label: str
    note: str | None
    saved_at: str
    list_ids: list[str]


class SavedListOut(TypedDict):
    user_id: str
    label: str
    saved: list[SavedOut]


class ListSummary(TypedDict):
    list_id: str
    user_id: str
    name: str
    description: str | None
    place_count: int
    capacity: int
    created_at: str


class ListsOut(TypedDict):
    user_id: str
    lists: list[ListSummary]


class ItemOut(TypedDict):
    position: int
    saved_id: str
    place_id: str
    name: str
    category: str
    address_id: str
    address: str
    open_now: bool
    note: str | None
    added_at: str


class ListDetail(ListSummary):
    places: list[ItemOut]


class AddedOut(ItemOut):
    list_id: str
    place_count: int


class RemovedOut(TypedDict):
    saved_id: str
    user_id: str
    place_id: str
    removed_from_list_ids: list[str]


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
places, addresses, edges = Place.__table__, Address.__table__, Edge.__table__
users, saved_places = User.__table__, SavedPlace.__table__
place_lists, list_items = PlaceList.__table__, ListItem.__table__

AREA = Query(select(Area.__table__).where(Area.id == "area_1"))
STREET = Query(select(Street.__table__).where(Street.id == bindparam("id")))
STREET_NAMES = Query(select(Street.id, Street.name).order_by(Street.id))
EDGES = Query(select(edges).order_by(Edge.id))
ADDRESS = Query(select(addresses).where(Address.id == bindparam("id")))
ADDRESSES = Query(select(addresses).order_by(Address.id))
# the address listing's: the addresses of places and homes on a road cars can take
DRIVEABLE_USED_ADDRESSES = Query(
    select(Address.id, Address.label, Address.lat_e6, Address.lon_e6)
    .join(edges, Edge.id == Address.edge_id)
    .where(
        Edge.drive_kmh > 0,
        or_(
            Address.id.in_(select(Place.address_id)),
            Address.id.in_(select(User.home_address_id)),
        ),
    )
    .order_by(Address.id)
)
ADDRESS_LATITUDES = Query(select(Address.lat_e6).order_by(Address.id))
ADDRESS_LONGITUDES = Query(select(Address.lon_e6).order_by(Address.id))
HOURS = Query(
    select(OpeningHours.weekday, OpeningHours.opens_min, OpeningHours.closes_min)
    .where(OpeningHours.place_id == bindparam("place_id"))
    .order_by(OpeningHours.weekday, OpeningHours.opens_min)
)
# a place with what its results show of its address (the address id is its address_id)
_PLACES = select(
    places, Address.label.label("address"), Address.district, Address.x, Address.y
).join(addresses, Address.id == Place.address_id)
PLACE = Query(_PLACES.where(Place.id == bindparam("id")))
PLACE_OF_SAVED = Query(
    _PLACES.join(saved_places, SavedPlace.place_id == Place.id).where(
        SavedPlace.id == bindparam("saved_id")
    )
)
PLACES_NOT_CLOSED = Query(_PLACES.where(Place.status != "permanently_closed").order_by(Place.id))
PLACE_AT = Query(select(Place.id, Place.name).where(Place.address_id == bindparam("address_id")))
PLACES_NAMED = Query(
    select(Place.id, Place.name, Place.address_id)
    .join(addresses, Address.id == Place.address_id)
    .where(contains(bindparam("pattern"), Place.name))
    .order_by(Place.name, Place.id)
    .limit(bindparam("limit"))
)
PLACE_NAMES = Query(select(Place.name).order_by(Place.id))
PLACE_NAMES_AND_ADDRESSES = Query(
    select(Place.name, Address.label)
    .join(addresses, Address.id == Place.address_id)
    .order_by(Place.id)
)
BEST_PLACES = Query(  # open places, best first (the user listing's)
    select(Place.id)
    .where(Place.status == "operational")
    .order_by(Place.rating_x10.desc(), Place.id)
)
USER = Query(select(users).where(User.id == bindparam("id")))
USERS = Query(select(User.id, User.name, User.email).order_by(User.id))
USER_NAMES = Query(select(User.name).order_by(User.id))
USERS_MATCHING = Query(
    select(users, Address.label.label("home_address"))
    .join(addresses, Address.id == User.home_address_id)
    .where(contains(bindparam("pattern"), User.name, User.email))
    .order_by(User.name, User.id)
    .limit(bindparam("limit"))
)
SAVED_BY = Query(
    select(saved_places).where(
        SavedPlace.user_id == bindparam("user_id"), SavedPlace.place_id == bindparam("place_id")
    )
)
SAVED_WITH_NAMES = Query(
    select(SavedPlace.id, SavedPlace.user_id, SavedPlace.place_id, Place.name, SavedPlace.label)
    .join(places, Place.id == SavedPlace.place_id)
    .order_by(SavedPlace.id)
)
SAVED_PLACE_IDS = Query(  # every user's saved places and what they save (listings')
    select(SavedPlace.user_id, SavedPlace.id, SavedPlace.place_id).order_by(SavedPlace.id)
)
LISTED_SAVED_IDS = Query(  # every list's items (the list listing's)
    select(ListItem.list_id, ListItem.saved_id).order_by(ListItem.list_id, ListItem.saved_id)
)
DELETE_SAVED = Query(delete(SavedPlace).where(SavedPlace.id == bindparam("id")))
LISTS = Query(select(PlaceList.id, PlaceList.user_id, PlaceList.name).order_by(PlaceList.id))
LISTS_OF = Query(
    select(place_lists).where(PlaceList.user_id == bindparam("user_id")).order_by(PlaceList.id)
)
LISTS_OF_BY_NAME = Query(
    select(place_lists)
    .where(PlaceList.user_id == bindparam("user_id"))
    .order_by(func.lower(PlaceList.name), PlaceList.id)
)
LIST_ITEMS = Query(
    select(list_items).where(ListItem.list_id == bindparam("list_id")).order_by(ListItem.position)
)
LIST_ITEM_COUNT = Query(
    select(func.count()).select_from(list_items).where(ListItem.list_id == bindparam("list_id"))
)
LISTS_HOLDING = Query(
    select(ListItem.list_id)
    .where(ListItem.saved_id == bindparam("saved_id"))
    .order_by(ListItem.list_id)
)
_ITEM_KEY = (ListItem.list_id == bindparam("list_id"), ListItem.saved_id == bindparam("saved_id"))
DELETE_ITEM = Query(delete(ListItem).where(*_ITEM_KEY))
SET_ITEM_POSITION = Query(update(ListItem).where(*_ITEM_KEY).values(position=bindparam("position")))


@functools.cache
def _places_matching(text: bool, category: bool) -> Query:
    """Places (whose name, category or street contains ``pattern``; of one ``category``)
    by name: search_places' statement."""
    stmt = _PLACES
    if text:
        stmt = stmt.where(contains(bindparam("pattern"), Place.name, Place.category, Address.label))
    if category:
        stmt = stmt.where(Place.category == bindparam("category"))
    return Query(stmt.order_by(Place.name, Place.id))


@functools.cache
def _places_by_id(category: bool) -> Query:
    """Every place (of one category) by id: search_nearby's statement."""
    stmt = _PLACES
    if category:
        stmt = stmt.where(Place.category == bindparam("category"))
    return Query(stmt.order_by(Place.id))


@functools.cache
def _addresses_with(terms: int) -> Query:
    """The first 500 addresses whose full label contains every one of ``terms`` patterns
    (``term_0``, ``term_1``, ...), by id: geocode's statement."""
    stmt = select(addresses)
    for i in range(terms):
        stmt = stmt.where(contains(bindparam(f"term_{i}"), Address.full_label))
    return Query(stmt.order_by(Address.id).limit(500))


@functools.cache
def _saved_of(by_label: bool) -> Query:
    """A user's saved places (with one label), most recent first: list_saved_places' statement."""
    stmt = select(saved_places).where(SavedPlace.user_id == bindparam("user_id"))
    if by_label:
        stmt = stmt.where(SavedPlace.label == bindparam("label"))
    return Query(
        stmt.order_by(SavedPlace.saved_at.desc(), SavedPlace.id.desc()).limit(bindparam("limit"))
    )


# ----------------------------------------------------------------- helpers
def _stamp(at: dt.datetime) -> str:
    return at.isoformat(timespec="minutes")


def _hours(ctx: ToolContext, place_id: str) -> list[Any]:
    """A place's weekly opening intervals (``HOURS`` rows), by weekday and opening time."""
    return ctx.sql.all(HOURS, place_id=place_id)


def _hours_out(hours: list[Any]) -> list[HoursOut]:
    return [
        {"weekday": WEEKDAYS[h.weekday], "opens": hhmm(h.opens_min), "closes": hhmm(h.closes_min)}
        for h in hours
    ]


def _always(hours: list[Any]) -> bool:
    return {(h.weekday, h.opens_min, h.closes_min) for h in hours} >= {
        (d, 0, 1440) for d in range(7)
    }


def _schedule(
    place: Any, hours: list[Any], at: dt.datetime
) -> tuple[bool, dt.datetime | None, dt.datetime | None]:
    """(open at ``at``, when it next closes, when it next opens) from the weekly ``hours``.

    A temporarily or permanently closed place is never open and has no next opening.
    Adjacent intervals (a 24-hour day followed by the next) merge into one.
    """
    if place.status != "operational":
        return False, None, None
    if _always(hours):
        return True, None, None
    at = at.replace(second=0, microsecond=0)
    midnight = dt.datetime.combine(at.date(), dt.time())
    spans: list[tuple[dt.datetime, dt.datetime]] = []
    for offset in range(-1, 9):
        day = midnight + dt.timedelta(days=offset)
        for h in hours:
            if h.weekday == day.weekday():
                spans.append(
                    (
                        day + dt.timedelta(minutes=h.opens_min),
                        day + dt.timedelta(minutes=h.closes_min),
                    )
                )
    spans.sort()
    merged: list[list[dt.datetime]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in merged:
        if start <= at < end:
            return True, end, None
        if start > at:
            return False, None, start
    return False, None, None


def _open_now(ctx: ToolContext, place: Any) -> bool:
    return _schedule(place, _hours(ctx, place.id), ctx.now)[0]


def _summary(ctx: ToolContext, place: Any) -> PlaceSummary:
    """A place row with its address (``_PLACES``) as a result."""
    return {
        "place_id": place.id,
        "name": place.name,
        "category": place.category,
        "address_id": place.address_id,
        "address": place.address,
        "district": place.district,
        "rating": (rating(place.rating_x10)),
        "price_level": place.price_level or None,
        "status": place.status,
        "open_now": _open_now(ctx, place),
    }


def _area(ctx: ToolContext) -> Any:
    return ctx.sql.one(AREA)


def _minutes_text(duration_s: int) -> str:
    """Whole minutes rounded up, as people say them: "1 h 05 min", "12 min"."""
    minutes = (duration_s + 59) // 60
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


# ----------------------------------------------------------------- routing
def _speed(e: Any, mode: str) -> int:
    """The speed ``mode`` travels the whole segment ``e`` (an edge row) at (0: not allowed),
    as ``Edge.speed``."""
    if mode == "transit":
        return e.transit_kmh or e.walk_kmh
    return int(getattr(e, f"{mode}_kmh"))


@dataclass(frozen=True)
class _Hop:
    """How a route reached a junction: from ``prev`` (None: from the origin address) along
    ``edge`` for ``metres`` in ``secs``."""

    prev: str | None
    edge: Any
    metres: int
    secs: int


class _Router:
    """Dijkstra over the edges a mode may use, loaded once per call (nothing is stored)."""

    def __init__(self, ctx: ToolContext, mode: str) -> None:
        self.mode = mode
        edges = ctx.sql.all(EDGES)
        ctx.spend(len(edges), "road segments", hint="route fewer destinations at once")
        self.edges = {e.id: e for e in edges}
        self.adj: dict[str, list[tuple[str, Any]]] = {}
        for e in edges:
            if _speed(e, mode) == 0:
                continue
            self.adj.setdefault(e.from_node, []).append((e.to_node, e))
            if not self._oneway(e):
                self.adj.setdefault(e.to_node, []).append((e.from_node, e))

    def _oneway(self, e: Any) -> bool:
        return self.mode == "drive" and e.oneway

    def departures(self, addr: Any) -> list[tuple[str, int]]:
        """Junctions the mode can leave ``addr`` to, with the metres along its edge."""
        e = self.edges[addr.edge_id]
        if _speed(e, self.mode) == 0:
            return []
        out = [(e.to_node, e.length_m - addr.offset_m)]
        if not self._oneway(e):
            out.append((e.from_node, addr.offset_m))
        return out

    def arrivals(self, addr: Any) -> list[tuple[str, int]]:
        """Junctions the mode can reach ``addr`` from, with the metres along its edge."""
        e = self.edges[addr.edge_id]
        if _speed(e, self.mode) == 0:
            return []
        out = [(e.from_node, addr.offset_m)]
        if not self._oneway(e):
            out.append((e.to_node, e.length_m - addr.offset_m))
        return out

    def search(self, origin: Any) -> dict[str, tuple[int, int, _Hop]]:
        """Fastest (seconds, metres) to every reachable junction, and how it was reached.

        Ties on seconds go to fewer metres, then to the smaller junction id; each junction
        is settled once, in that order, so the result never depends on insertion order.
        """
        edge = self.edges[origin.edge_id]
        best: dict[str, tuple[int, int, _Hop]] = {}
        heap: list[tuple[int, int, str, str | None, str, int, int]] = []
        for node, metres in self.departures(origin):
            secs = seconds(metres, _speed(edge, self.mode))
            heap.append((secs, metres, node, None, edge.id, metres, secs))
        heapq.heapify(heap)
        while heap:
            secs, metres, node, prev, edge_id, hop_m, hop_s = heapq.heappop(heap)
            if node in best:
                continue
            best[node] = (secs, metres, _Hop(prev, self.edges[edge_id], hop_m, hop_s))
            for nxt, e in self.adj.get(node, []):
                if nxt in best:
                    continue
                step = seconds(e.length_m, _speed(e, self.mode))
                heapq.heappush(
                    heap, (secs + step, metres + e.length_m, nxt, node, e.id, e.length_m, step)
                )
        return best

    def finish(
        self,
        origin: Any,
        destination: Any,
        reached: dict[str, tuple[int, int, _Hop]],
    ) -> tuple[int, int, list[tuple[str, int, int]]] | None:
        """The best (seconds, metres, [(street id, metres, seconds)]) to ``destination``."""
        e = self.edges[destination.edge_id]
        speed = _speed(e, self.mode)
        options: list[tuple[int, int, str, list[tuple[str, int, int]]]] = []
        if origin.edge_id == destination.edge_id and speed:
            ahead = destination.offset_m >= origin.offset_m
            if ahead or not self._oneway(e):
                metres = abs(destination.offset_m - origin.offset_m)
                secs = seconds(metres, speed)
                options.append((secs, metres, "", [(e.street_id, metres, secs)]))
        for node, metres in self.arrivals(destination):
            if node not in reached:
                continue
            secs, total, _ = reached[node]
            last = seconds(metres, speed)
            path = [*self._path(reached, node), (e.street_id, metres, last)]
            options.append((secs + last, total + metres, node, path))
        if not options:
            return None
        secs, metres, _, path = min(options, key=lambda o: (o[0], o[1], o[2]))
        return secs, metres, path

    @staticmethod
    def _path(reached: dict[str, tuple[int, int, _Hop]], node: str) -> list[tuple[str, int, int]]:
        out: list[tuple[str, int, int]] = []
        current: str | None = node
        while current is not None:
            hop = reached[current][2]
            out.append((hop.edge.street_id, hop.metres, hop.secs))
            current = hop.prev
        out.reverse()
        return out


def _steps(ctx: ToolContext, path: list[tuple[str, int, int]]) -> list[StepOut]:
    """The path as consecutive streets (segments of one street merged)."""
    names = {s.id: s.name for s in ctx.sql.all(STREET_NAMES)}
    steps: list[StepOut] = []
    last = ""
    for street_id, metres, secs in path:
        if metres == 0:
            continue
        if steps and street_id == last:
            steps[-1]["distance_m"] += metres
            steps[-1]["duration_s"] += secs
        else:
            steps.append({"street": names[street_id], "distance_m": metres, "duration_s": secs})
        last = street_id
    return steps


def _why_not(ctx: ToolContext, router: _Router, origin: Any, dest: Any) -> str:
    mode = router.mode
    for what, addr in (("origin", origin), ("destination", dest)):
        e = router.edges[addr.edge_id]
        if _speed(e, mode) == 0:
            street = ctx.sql.one(STREET, id=e.street_id)
            kind = "pedestrian zone" if e.drive_kmh == 0 else "expressway"
            return (
                f"the {what} {addr.label} is on a {kind} segment of {street.name} where {mode} "
                "is not allowed"
            )
    return f"the road network allows no {mode} path from {origin.label} to {dest.label}"


def _no_route(ctx: ToolContext, router: _Router, origin: Any, dest: Any) -> RuleBroken:
    others = [m for m in ("walk", "bike", "transit") if m != router.mode]
    return RuleBroken(
        "no_route",
        f"there is no {router.mode} route: {_why_not(ctx, router, origin, dest)}. Choose "
        f"another mode ({', '.join(others)}), or route to a nearby address on a street "
        f"open to {router.mode}.",
    )


# -------------------------------------------------------- example values
NEW_LIST_NAMES = (
    "Summer patios",
    "Bookstores",
    "Visiting parents",
    "Quiet places to read",
    "Birthday dinner ideas",
    "Sunday errands",
)


def _some_query(ctx: ToolContext, rng: random.Random) -> str:
    return rng.choice(ctx.sql.scalars(PLACE_NAMES)).split()[0]


def _some_address(ctx: ToolContext, rng: random.Random) -> str:
    name, label = rng.choice(ctx.sql.all(PLACE_NAMES_AND_ADDRESSES))
    return rng.choice([name, label])


def _some_user(ctx: ToolContext, rng: random.Random) -> str:
    return rng.choice(ctx.sql.scalars(USER_NAMES))


def _some_when(ctx: ToolContext, rng: random.Random) -> str:
    at = ctx.now.replace(minute=0, second=0, microsecond=0)
    return _stamp(at + dt.timedelta(hours=rng.randint(1, 6 * 24)))


def _some_lat(ctx: ToolContext, rng: random.Random) -> Decimal:
    return degrees(rng.choice(ctx.sql.scalars(ADDRESS_LATITUDES)))


def _some_lon(ctx: ToolContext, rng: random.Random) -> Decimal:
    return degrees(rng.choice(ctx.sql.scalars(ADDRESS_LONGITUDES)))


def _new_list_name(ctx: ToolContext, rng: random.Random) -> str:
    return rng.choice(NEW_LIST_NAMES)


# ------------------------------------------------------------------- tools
@server.tool(
    returns=("place", "address"),
    phrasings=["Find {query} on the map", "Search for a {category} called {query}"],
    examples={"query": _some_query},
)
def search_places(
    ctx: ToolContext,
    query: SearchText = "",
    category: Category | None = None,
    open_now: bool = False,
    limit: Limit = 20,
) -> list[PlaceSummary]:
    """Find places and points of interest by name, category or street.

    Args:
        query: Case-insensitive fragment of the name or street, such as "Blue Door",
            "bakery" or "Maple Avenue"; empty lists every place (filter with category).
        category: Only this category, such as "cafe", "pharmacy" or "museum".
        open_now: true to keep only places open at the map's current time.
        limit: Maximum number of places to return (1-50).

    Returns:
        Places by name, e.g. [{"place_id": "pl_0042", "name": "Blue Door Café",
        "category": "cafe", "address_id": "adr_00317", "address": "1204 Maple Avenue",
        "rating": 4.5, "status": "operational", "open_now": true, ...}].
    """
    params: dict[str, Any] = {}
    text = query.strip()
    if text:
        params["pattern"] = search_pattern(text)
    if category is not None:
        params["category"] = category
    matching = _places_matching("pattern" in params, "category" in params)
    out: list[PlaceSummary] = []
    for place in ctx.sql.all(matching, **params):
        ctx.spend(1, "places", hint="give a more specific query or a category")
        row = _summary(ctx, place)
        if open_now and not row["open_now"]:
            continue
        out.append(row)
        if len(out) == limit:
            break
    return out


@server.tool(
    stands_in_for=("check_open_at",),
    returns=("place", "address"),
    phrasings=["Tell me about {place_id}", "Is {place_id} open right now?"],
)
def get_place(ctx: ToolContext, place_id: PlaceRow) -> PlaceDetail:
    """Get a place's details: address, coordinates, phone, rating, weekly opening hours,
    whether it is open now (at the map's current time) and when it next closes or opens.

    Args:
        place_id: The place, such as "pl_0042" (see search_places).

    Returns:
        {"place_id": "pl_0042", "name": "Blue Door Café", "now": "2026-03-04T10:30",
        "open_now": true, "closes_at": "2026-03-04T18:00", "opens_at": null,
        "hours": [{"weekday": "monday", "opens": "07:00", "closes": "18:00"}, ...], ...}.
    """
    p = place_id
    addr = ctx.sql.one(ADDRESS, id=p.address_id)
    hours = _hours(ctx, p.id)
    open_, closes, opens = _schedule(p, hours, ctx.now)
    return {
        "place_id": p.id,
        "name": p.name,
        "category": p.category,
        "address_id": addr.id,
        "address": addr.label,
        "full_address": addr.full_label,
        "district": addr.district,
        "latitude": (degrees(addr.lat_e6)),
        "longitude": (degrees(addr.lon_e6)),
        "phone": p.phone,
        "rating": (rating(p.rating_x10)),
        "review_count": p.review_count,
        "price_level": p.price_level or None,
        "status": p.status,
        "status_note": p.status_note or None,
        "now": _stamp(ctx.now),
        "open_now": open_,
        "open_24_hours": p.status == "operational" and _always(hours),
        "closes_at": _stamp(closes) if closes else None,
        "opens_at": _stamp(opens) if opens else None,
        "hours": _hours_out(hours),
    }


@server.tool(
    phrasings=["Will {place_id} be open at {when}?", "Can I go to {place_id} on {when}?"],
    examples={"when": _some_when},
)
def check_open_at(
    ctx: ToolContext, place_id: PlaceRow, when: Annotated[str, Field(max_length=25)]
) -> OpenAtOut:
    """Check whether a place is open at a given local date and time, from its weekly hours.

    Args:
        place_id: The place, such as "pl_0042".
        when: Local date and time as "YYYY-MM-DDTHH:MM", such as "2026-03-07T21:30".

    Returns:
        {"place_id": "pl_0042", "when": "2026-03-07T21:30", "weekday": "saturday",
        "open": false, "hours_that_day": [{"weekday": "saturday", "opens": "08:00",
        "closes": "16:00"}], "opens_at": "2026-03-08T08:00", "closes_at": null, ...}.
    """
    text = when.strip().replace(" ", "T", 1)
    try:
        at = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M")
    except ValueError:
        raise InvalidArgument(
            f"when {when!r} is not a date and time like '2026-03-07T21:30' (YYYY-MM-DDTHH:MM)."
        ) from None
    if not 2000 <= at.year <= 2100:
        raise InvalidArgument("when must be a date between the years 2000 and 2100.")
    p = place_id
    hours = _hours(ctx, p.id)
    open_, closes, opens = _schedule(p, hours, at)
    return {
        "place_id": p.id,
        "name": p.name,
        "when": _stamp(at),
        "weekday": WEEKDAYS[at.weekday()],
        "status": p.status,
        "open": open_,
        "hours_that_day": _hours_out([h for h in hours if h.weekday == at.weekday()]),
        "closes_at": _stamp(closes) if closes else None,
        "opens_at": _stamp(opens) if opens else None,
    }


ABBREVIATIONS = {
    "st": "street",
    "st.": "street",
    "ave": "avenue",
    "ave.": "avenue",
    "av": "avenue",
    "pkwy": "parkway",
    "pkwy.": "parkway",
}


def _geo(addr: Any, place: Any | None, match: str) -> GeocodeOut:
    return {
        "address_id": addr.id,
        "address": addr.label,
        "full_address": addr.full_label,
        "district": addr.district,
        "latitude": (degrees(addr.lat_e6)),
        "longitude": (degrees(addr.lon_e6)),
        "place_id": place.id if place else None,
        "place_name": place.name if place else None,
        "match": match,
    }


@server.tool(
    returns=("address", "place"),
    phrasings=["Where is {address}?", "Get the coordinates of {address}"],
    examples={"address": _some_address},
)
def geocode(
    ctx: ToolContext, address: Annotated[str, Field(max_length=200)], limit: Limit = 5
) -> list[GeocodeOut]:
    """Turn address text or a place name into map addresses with coordinates.

    Places whose name contains the text come first, then street addresses containing every
    word of it (house number, street, district or postcode; "St" and "Ave" are read as
    Street and Avenue), best match first.

    Args:
        address: Such as "1204 Maple Avenue", "1204 maple ave, Old Town" or "Blue Door Café".
        limit: Maximum number of matches to return (1-50).

    Returns:
        [{"address_id": "adr_00317", "address": "1204 Maple Avenue", "full_address":
        "1204 Maple Avenue, Old Town, Portland, OR 97201", "latitude": 45.512345,
        "longitude": -122.675301, "place_id": "pl_0042", "place_name": "Blue Door Café",
        "match": "place"}].
    """
    text = address.strip()
    words = [w for w in text.replace(",", " ").split() if w]
    if not words:
        raise InvalidArgument("address must not be empty: give a street address or a place name.")
    if len(words) > 12:
        raise InvalidArgument("address has more than 12 words; give the house number and street.")
    out: list[GeocodeOut] = []
    seen: set[str] = set()
    for place in ctx.sql.all(PLACES_NAMED, pattern=search_pattern(text), limit=limit):
        addr = ctx.sql.one(ADDRESS, id=place.address_id)
        out.append(_geo(addr, place, "place"))
        seen.add(addr.id)
    terms = [ABBREVIATIONS.get(w.casefold(), w) for w in words]
    patterns = {f"term_{i}": search_pattern(term) for i, term in enumerate(terms)}
    candidates = ctx.sql.all(_addresses_with(len(terms)), **patterns)
    ctx.spend(len(candidates), "addresses", hint="give the house number and street")

    def score(a: Any) -> tuple[int, int, int, str]:
        """Words matching the street address itself first, then the district and city."""
        street = a.label.casefold().split()
        everything = a.full_label.casefold().replace(",", " ").split()
        in_street = sum(1 for t in terms if t.casefold() in street)
        in_full = sum(1 for t in terms if t.casefold() in everything)
        return (-in_street, -in_full, len(a.label), a.id)

    for addr in sorted(candidates, key=score):
        if len(out) >= limit:
            break
        if addr.id in seen:
            continue
        seen.add(addr.id)
        at = ctx.sql.first(PLACE_AT, address_id=addr.id)
        out.append(_geo(addr, at, "address"))
    if not out:
        raise NotFound(
            f"No address or place matches {text!r}. Give a house number and street, such as "
            "'1204 Maple Avenue', or part of a place's name."
        )
    return out[:limit]


@server.tool(
    returns=("address", "place"),
    phrasings=[
        "What's the address at {latitude}, {longitude}?",
        "Where am I? I'm at {latitude}, {longitude}",
    ],
    examples={"latitude": _some_lat, "longitude": _some_lon},
)
def reverse_geocode(ctx: ToolContext, latitude: Latitude, longitude: Longitude) -> ReverseOut:
    """Find the street address nearest to a point (straight-line distance).

    Args:
        latitude: Decimal degrees, such as 45.512345 (six decimals are used).
        longitude: Decimal degrees, such as -122.675301.

    Returns:
        {"address_id": "adr_00317", "address": "1204 Maple Avenue", "distance_m": 14,
        "district": "Old Town", "place_id": "pl_0042", "place_name": "Blue Door Café", ...}.
    """
    area = _area(ctx)
    lat_e6 = int(latitude.scaleb(6).quantize(Decimal(1), ROUND_HALF_EVEN))
    lon_e6 = int(longitude.scaleb(6).quantize(Decimal(1), ROUND_HALF_EVEN))
    x, y = to_metres(area, lat_e6, lon_e6)
    rows = ctx.sql.all(ADDRESSES)
    ctx.spend(len(rows), "addresses")
    best = min(rows, key=lambda a: ((a.x - x) ** 2 + (a.y - y) ** 2, a.id))
    gap = distance_m(best.x, best.y, x, y)
    if gap > MAX_OFF_MAP_M:
        north = degrees(area.origin_lat_e6 + area.height_m * 1_000_000 // 111_320)
        east = degrees(area.origin_lon_e6 + area.width_m * 1_000_000 // area.metres_per_degree_lon)
        raise RuleBroken(
            "outside_map_area",
            f"the point ({latitude}, {longitude}) is {gap} m from the nearest address; the map "
            f"covers {area.city} between latitudes {degrees(area.origin_lat_e6)} and {north} "
            f"and longitudes {degrees(area.origin_lon_e6)} and {east}. Check the coordinates "
            "(latitude first).",
        )
    place = ctx.sql.first(PLACE_AT, address_id=best.id)
    return {
        "address_id": best.id,
        "address": best.label,
        "full_address": best.full_label,
        "district": best.district,
        "latitude": (degrees(best.lat_e6)),
        "longitude": (degrees(best.lon_e6)),
        "distance_m": gap,
        "place_id": place.id if place else None,
        "place_name": place.name if place else None,
    }


@server.tool(
    returns=("place", "address"),
    phrasings=[
        "Find a {category} within {radius_m} m of {address_id}",
        "What's near {address_id}?",
    ],
    examples={"radius_m": [300, 500, 800, 1500]},
)
def search_nearby(
    ctx: ToolContext,
    address_id: AddressRow,
    radius_m: Radius = 800,
    category: Category | None = None,
    open_now: bool = False,
    limit: Limit = 20,
) -> NearbyOut:
    """Find places within a straight-line radius of an address, nearest first (the place at
    the address itself is left out).

    Args:
        address_id: The center, such as "adr_00317" (geocode turns address text into one;
            every place result carries its address_id).
        radius_m: Search radius in metres (50-5000), such as 500.
        category: Only this category, such as "pharmacy".
        open_now: true to keep only places open at the map's current time.
        limit: Maximum number of places to return (1-50).

    Returns:
        {"center_address_id": "adr_00317", "center": "1204 Maple Avenue", "radius_m": 500,
        "places": [{"place_id": "pl_0017", "name": "Corner Pharmacy", "distance_m": 140,
        "open_now": true, ...}]}.
    """
    center = address_id
    params = {} if category is None else {"category": category}
    found: list[tuple[int, str, Any]] = []
    for place in ctx.sql.all(_places_by_id(category is not None), **params):
        ctx.spend(1, "places")
        if place.address_id == center.id:
            continue
        gap = distance_m(center.x, center.y, place.x, place.y)
        if gap <= radius_m:
            found.append((gap, place.id, place))
    found.sort(key=lambda f: (f[0], f[1]))
    places: list[NearbyPlace] = []
    for gap, _, place in found:
        row = _summary(ctx, place)
        if open_now and not row["open_now"]:
            continue
        places.append({**row, "distance_m": gap})
        if len(places) == limit:
            break
    return {
        "center_address_id": center.id,
        "center": center.label,
        "radius_m": radius_m,
        "places": places,
    }


@server.tool(
    stands_in_for=("get_distance_matrix",),
    phrasings=[
        "Plan a {mode} route from {origin_address_id} to {destination_address_id}",
        "How long does it take to {mode} from {origin_address_id} to {destination_address_id}?",
    ],
)
def get_route(
    ctx: ToolContext,
    origin_address_id: AddressRow,
    destination_address_id: AddressRow,
    mode: Mode,
) -> RouteOut:
    """Get the fastest route between two addresses for one mode of travel, with its exact
    distance, duration and the streets it follows.

    Args:
        origin_address_id: Where to start, such as "adr_00317" (a place's address_id, or
            geocode an address).
        destination_address_id: Where to go, such as "adr_00102".
        mode: "drive", "walk", "bike" or "transit" (buses on bus routes, walking elsewhere).

    Returns:
        {"origin": "1204 Maple Avenue", "destination": "310 Oak Street", "mode": "walk",
        "distance_m": 1432, "duration_s": 1032, "duration_text": "18 min",
        "steps": [{"street": "Maple Avenue", "distance_m": 410, "duration_s": 296}, ...]}.
    """
    origin, dest = origin_address_id, destination_address_id
    if origin.id == dest.id:
        raise InvalidArgument(
            f"origin and destination are the same address ({origin.label}); give two "
            "different addresses."
        )
    router = _Router(ctx, mode)
    done = router.finish(origin, dest, router.search(origin))
    if done is None:
        raise _no_route(ctx, router, origin, dest)
    secs, metres, path = done
    return {
        "origin_address_id": origin.id,
        "origin": origin.label,
        "destination_address_id": dest.id,
        "destination": dest.label,
        "mode": mode,
        "distance_m": metres,
        "duration_s": secs,
        "duration_text": _minutes_text(secs),
        "straight_line_m": distance_m(origin.x, origin.y, dest.x, dest.y),
        "steps": _steps(ctx, path),
    }


def _several(ctx: ToolContext, rng: random.Random, bound: Bound) -> list[str] | None:
    """The destinations in ``destination_address_ids`` if there are two or more: which of
    one is the quickest, or "compare" one time, is no question (get_route answers it);
    None otherwise, so synthesis draws others."""
    ids = bound.args.get("destination_address_ids")
    return [str(i) for i in ids] if isinstance(ids, list) and len(ids) >= 2 else None


@server.tool(
    stands_in_for=("get_route",),
    phrasings=[
        "Which of {destination_address_ids} is the quickest {mode} from {origin_address_id}?",
        "Compare {mode} times from {origin_address_id} to {destination_address_ids}",
    ],
    values={"destination_address_ids": _several},
)
def get_distance_matrix(
    ctx: ToolContext,
    origin_address_id: AddressRow,
    destination_address_ids: Annotated[
        list[AddressRow], Field(min_length=1, max_length=MAX_DESTINATIONS)
    ],
    mode: Mode,
) -> MatrixOut:
    """Travel distance and time from one address to several, quickest first; destinations
    the mode cannot reach come last with reachable false.

    Args:
        origin_address_id: Where to start, such as "adr_00317".
        destination_address_ids: 1-10 different addresses, such as ["adr_00102", "adr_00230"].
        mode: "drive", "walk", "bike" or "transit".

    Returns:
        {"origin": "1204 Maple Avenue", "mode": "bike", "destinations": [{"address_id":
        "adr_00102", "address": "310 Oak Street", "reachable": true, "distance_m": 1210,
        "duration_s": 290}, ...]}.
    """
    origin = origin_address_id
    ids = [d.id for d in destination_address_ids]
    if len(set(ids)) != len(ids):
        raise InvalidArgument("destination_address_ids lists an address twice; list each once.")
    if origin.id in ids:
        raise InvalidArgument(
            f"the origin {origin.id} is also a destination; leave it out of "
            "destination_address_ids."
        )
    router = _Router(ctx, mode)
    reached = router.search(origin)
    legs: list[LegOut] = []
    for dest in destination_address_ids:
        done = router.finish(origin, dest, reached)
        legs.append(
            {
                "address_id": dest.id,
                "address": dest.label,
                "reachable": done is not None,
                "distance_m": done[1] if done else None,
                "duration_s": done[0] if done else None,
            }
        )
    legs.sort(
        key=lambda g: (
            not g["reachable"],
            g["duration_s"] or 0,
            g["distance_m"] or 0,
            g["address_id"],
        )
    )
    return {
        "origin_address_id": origin.id,
        "origin": origin.label,
        "mode": mode,
        "destinations": legs,
    }


@server.tool(
    returns=("user", "address"),
    phrasings=["Find the maps account of {query}", "Look up the user {query}"],
    examples={"query": _some_user},
)
def find_users(ctx: ToolContext, query: SearchText, limit: Limit = 10) -> list[UserOut]:
    """Find users by name or email; the first step to read or change their saved places.

    Args:
        query: Case-insensitive fragment, such as "Garcia" or "maria.garcia@".
        limit: Maximum number of users to return (1-50).

    Returns:
        [{"user_id": "usr_004", "name": "Maria Garcia", "email": "maria.garcia@gmail.com",
        "home_address_id": "adr_00211", "home_address": "507 Cedar Street"}].
    """
    text = query.strip()
    if not text:
        raise InvalidArgument("query must not be empty: give part of the user's name or email.")
    return [
        {
            "user_id": u.id,
            "name": u.name,
            "email": u.email,
            "home_address_id": u.home_address_id,
            "home_address": u.home_address,
        }
        for u in ctx.sql.all(USERS_MATCHING, pattern=search_pattern(text), limit=limit)
    ]


def _list_ids(ctx: ToolContext, saved_id: str) -> list[str]:
    return ctx.sql.scalars(LISTS_HOLDING, saved_id=saved_id)


def _saved(ctx: ToolContext, s: Any) -> SavedOut:
    place = ctx.sql.one(PLACE, id=s.place_id)
    return {
        "saved_id": s.id,
        "user_id": s.user_id,
        "place_id": place.id,
        "name": place.name,
        "category": place.category,
        "address_id": place.address_id,
        "address": place.address,
        "label": s.label,
        "note": s.note or None,
        "saved_at": _stamp(s.saved_at),
        "list_ids": _list_ids(ctx, s.id),
    }


@server.tool(
    returns=("saved_place", "place", "address", "list"),
    phrasings=["Show the places {user_id} saved", "What has {user_id} marked as {label}?"],
)
def list_saved_places(
    ctx: ToolContext,
    user_id: UserRow,
    label: Literal["favorite", "want_to_go", "starred", "all"] = "all",
    limit: Limit = 50,
) -> SavedListOut:
    """List a user's saved places, most recently saved first, with the lists each is in.

    Args:
        user_id: The user, such as "usr_004" (see find_users).
        label: "favorite", "want_to_go", "starred", or "all" (the default).
        limit: Maximum number of saved places to return (1-50).

    Returns:
        {"user_id": "usr_004", "label": "all", "saved": [{"saved_id": "sav_0031",
        "place_id": "pl_0042", "name": "Blue Door Café", "address_id": "adr_00317",
        "label": "favorite", "list_ids": ["lst_007"], ...}]}.
    """
    params: dict[str, Any] = {"user_id": user_id.id, "limit": limit}
    if label != "all":
        params["label"] = label
    rows = ctx.sql.all(_saved_of("label" in params), **params)
    return {
        "user_id": user_id.id,
        "label": label,
        "saved": [_saved(ctx, s) for s in rows],
    }


def _count(ctx: ToolContext, plist: Any) -> int:
    return int(ctx.sql.scalar(LIST_ITEM_COUNT, list_id=plist.id) or 0)


def _list_summary(ctx: ToolContext, plist: Any) -> ListSummary:
    return {
        "list_id": plist.id,
        "user_id": plist.user_id,
        "name": plist.name,
        "description": plist.description or None,
        "place_count": _count(ctx, plist),
        "capacity": LIST_CAPACITY,
        "created_at": _stamp(plist.created_at),
    }


@server.tool(
    returns="list",
    phrasings=["Show the lists of {user_id}", "Which place lists does {user_id} have?"],
)
def list_lists(ctx: ToolContext, user_id: UserRow) -> ListsOut:
    """List a user's place lists by name, with how many places each holds.

    Args:
        user_id: The user, such as "usr_004" (see find_users).

    Returns:
        {"user_id": "usr_004", "lists": [{"list_id": "lst_007", "name": "Coffee spots",
        "place_count": 5, "capacity": 25, ...}]}.
    """
    lists = ctx.sql.all(LISTS_OF_BY_NAME, user_id=user_id.id)
    return {"user_id": user_id.id, "lists": [_list_summary(ctx, p) for p in lists]}


def _item(ctx: ToolContext, item: Any) -> ItemOut:
    place = ctx.sql.one(PLACE_OF_SAVED, saved_id=item.saved_id)
    return {
        "position": item.position,
        "saved_id": item.saved_id,
        "place_id": place.id,
        "name": place.name,
        "category": place.category,
        "address_id": place.address_id,
        "address": place.address,
        "open_now": _open_now(ctx, place),
        "note": item.note or None,
        "added_at": _stamp(item.added_at),
    }


@server.tool(
    returns=("list", "saved_place", "place", "address"),
    phrasings=["What's on list {list_id}?", "Show me the places in {list_id}"],
)
def get_list(ctx: ToolContext, list_id: ListRow) -> ListDetail:
    """Get one list with its places in list order and whether each is open now.

    Args:
        list_id: The list, such as "lst_007" (see list_lists).

    Returns:
        {"list_id": "lst_007", "name": "Coffee spots", "place_count": 2, "places":
        [{"position": 1, "saved_id": "sav_0031", "place_id": "pl_0042", "name":
        "Blue Door Café", "address_id": "adr_00317", "open_now": true, ...}, ...]}.
    """
    return {
        **_list_summary(ctx, list_id),
        "places": [_item(ctx, i) for i in ctx.sql.all(LIST_ITEMS, list_id=list_id.id)],
    }


@server.tool(
    writes=True,
    returns=("saved_place", "place"),
    phrasings=["Save {place_id} as {label} for {user_id}", "Star {place_id} for {user_id}"],
    examples={"note": list(NOTES[:-1])},
)
def save_place(
    ctx: ToolContext, user_id: UserRow, place_id: PlaceRow, label: SaveLabel, note: Note = ""
) -> SavedOut:
    """Save a place for a user with a label; a place is saved once per user.

    Args:
        user_id: The user, such as "usr_004" (see find_users).
        place_id: The place, such as "pl_0042" (see search_places).
        label: "favorite", "want_to_go" or "starred".
        note: Optional private note, such as "Try the seasonal special" (up to 300 characters).

    Returns:
        {"saved_id": "sav_0152", "user_id": "usr_004", "place_id": "pl_0042",
        "name": "Blue Door Café", "label": "favorite", "list_ids": [], ...}.
    """
    user, place = user_id, place_id
    if place.status == "permanently_closed":
        raise RuleBroken(
            "place_permanently_closed",
            f"{place.name} ({place.id}) is permanently closed and cannot be saved. Search for "
            f"another {place.category.replace('_', ' ')} nearby instead.",
        )
    existing = ctx.sql.first(SAVED_BY, user_id=user.id, place_id=place.id)
    if existing is not None:
        raise RuleBroken(
            "already_saved",
            f"{user.name} ({user.id}) already saved {place.name} as {existing.id} with label "
            f"'{existing.label}'. Use that saved place id; to change its label, remove it and "
            "save it again.",
        )
    saved = {
        "id": next_id(ctx, SavedPlace.id, "sav", 4),
        "user_id": user.id,
        "place_id": place.id,
        "label": label,
        "note": note.strip(),
        "saved_at": ctx.now,
    }
    ctx.sql.insert(SavedPlace, **saved)
    return _saved(ctx, SimpleNamespace(**saved))


@server.tool(
    writes=True,
    inverse_of="save_place",
    destructive=True,
    returns=("saved_place", "list"),
    phrasings=["Unsave {saved_id}", "Remove saved place {saved_id}"],
)
def remove_saved_place(ctx: ToolContext, saved_id: SavedRow) -> RemovedOut:
    """Remove a saved place; it also leaves every list it was in (the others move up).

    Args:
        saved_id: The saved place, such as "sav_0031" (see list_saved_places).

    Returns:
        {"saved_id": "sav_0031", "place_id": "pl_0042", "removed_from_list_ids": ["lst_007"]}.
    """
    saved = saved_id
    lists = _list_ids(ctx, saved.id)
    for list_id in lists:
        items = ctx.sql.all(LIST_ITEMS, list_id=list_id)
        gone = next(i for i in items if i.saved_id == saved.id)
        ctx.sql.run(DELETE_ITEM, list_id=list_id, saved_id=saved.id)
        for i in items:  # the places after it move up, one at a time (positions stay unique)
            if i.position > gone.position:
                ctx.sql.run(
                    SET_ITEM_POSITION, list_id=list_id, saved_id=i.saved_id, position=i.position - 1
                )
    out: RemovedOut = {
        "saved_id": saved.id,
        "user_id": saved.user_id,
        "place_id": saved.place_id,
        "removed_from_list_ids": lists,
    }
    ctx.sql.run(DELETE_SAVED, id=saved.id)
    return out


@server.tool(
    writes=True,
    returns="list",
    phrasings=[
        "Create a list called {name} for {user_id}",
        "Start a new list {name} for {user_id}",
    ],
    examples={"name": _new_list_name, "description": ["", "Places to try this summer"]},
)
def create_list(
    ctx: ToolContext,
    user_id: UserRow,
    name: Annotated[str, Field(min_length=1, max_length=60)],
    description: Note = "",
) -> ListSummary:
    """Create an empty, named list of places for a user.

    Args:
        user_id: The user, such as "usr_004" (see find_users).
        name: The list's name, such as "Summer patios" (1-60 characters, unique per user).
        description: Optional, such as "Places to try this summer" (up to 300 characters).

    Returns:
        {"list_id": "lst_031", "user_id": "usr_004", "name": "Summer patios",
        "place_count": 0, "capacity": 25, ...}.
    """
    user = user_id
    title = " ".join(name.split())
    if not title:
        raise InvalidArgument("name must not be blank: give the list a name.")
    lists = ctx.sql.all(LISTS_OF, user_id=user.id)
    for other in lists:
        if other.name.casefold() == title.casefold():
            raise RuleBroken(
                "list_name_taken",
                f"{user.name} already has a list named '{other.name}' ({other.id}). Add places "
                "to that list, or choose another name.",
            )
    if len(lists) >= MAX_LISTS:
        raise RuleBroken(
            "too_many_lists",
            f"{user.name} already has {len(lists)} lists, the most a user may have. Add the "
            "places to one of the existing lists instead.",
        )
    plist = {
        "id": next_id(ctx, PlaceList.id, "lst", 3),
        "user_id": user.id,
        "name": title,
        "description": description.strip(),
        "created_at": ctx.now,
    }
    ctx.sql.insert(PlaceList, **plist)
    return _list_summary(ctx, SimpleNamespace(**plist))


@server.tool(
    writes=True,
    returns=("list", "saved_place", "place"),
    phrasings=["Add {saved_id} to list {list_id}", "Put {saved_id} on the list {list_id}"],
    examples={"note": ["", "Go on a weekday", "Bring cash"]},
)
def add_to_list(
    ctx: ToolContext, list_id: ListRow, saved_id: SavedRow, note: Note = ""
) -> AddedOut:
    """Add one of the list owner's saved places to the end of the list.

    A list holds only its owner's saved places: save the place for that user first.

    Args:
        list_id: The list, such as "lst_007" (see list_lists).
        saved_id: The owner's saved place, such as "sav_0031" (see list_saved_places).
        note: Optional note for this list entry, such as "Go on a weekday".

    Returns:
        {"list_id": "lst_007", "position": 6, "saved_id": "sav_0031", "place_id": "pl_0042",
        "name": "Blue Door Café", "place_count": 6, ...}.
    """
    plist, saved = list_id, saved_id
    if saved.user_id != plist.user_id:
        owner = ctx.sql.one(USER, id=plist.user_id)
        raise RuleBroken(
            "same_owner",
            f"saved place {saved.id} belongs to user {saved.user_id}, but list {plist.id} "
            f"belongs to {owner.name} ({owner.id}); a list holds only its owner's saved "
            f"places. Save the place for {owner.id} first and add that saved place.",
        )
    items = ctx.sql.all(LIST_ITEMS, list_id=plist.id)
    if any(i.saved_id == saved.id for i in items):
        raise RuleBroken(
            "already_in_list",
            f"{saved.id} is already in list '{plist.name}' ({plist.id}); nothing to add.",
        )
    if len(items) >= LIST_CAPACITY:
        raise RuleBroken(
            "list_full",
            f"list '{plist.name}' ({plist.id}) already holds {len(items)} places, the most a "
            "list may hold. Remove a saved place from it, or create another list.",
        )
    item = {
        "list_id": plist.id,
        "saved_id": saved.id,
        "position": len(items) + 1,
        "note": note.strip(),
        "added_at": ctx.now,
    }
    ctx.sql.insert(ListItem, **item)
    return {
        **_item(ctx, SimpleNamespace(**item)),
        "list_id": plist.id,
        "place_count": len(items) + 1,
    }


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests. Fields named
# like tool parameters (place_id, saved_id, mode, label) give values the rules allow.
@server.entity(
    "place",
    key="place_id",
    model=Place,
    not_found="Call search_places with the place's name or category to find its id "
    "(such as 'pl_0042').",
)
def _places(ctx: ToolContext) -> list[dict]:
    """Places that are not permanently closed, with the address routes start from."""
    return [
        {
            "place_id": p.id,
            "name": p.name,
            "query": p.name,
            "category": p.category,
            "address_id": p.address_id,
            "address": p.address,
        }
        for p in ctx.sql.all(PLACES_NOT_CLOSED)
    ]


@server.entity(
    "address",
    key="address_id",
    model=Address,
    not_found="Call geocode with the street address or place name to find the address id "
    "(such as 'adr_00317').",
)
def _addresses(ctx: ToolContext) -> list[dict]:
    """Addresses of places and homes that cars can reach, with their coordinates."""
    return [
        {
            "address_id": a.id,
            "address": a.label,
            "latitude": (degrees(a.lat_e6)),
            "longitude": (degrees(a.lon_e6)),
            "mode": "drive",
        }
        for a in ctx.sql.all(DRIVEABLE_USED_ADDRESSES)
    ]


@server.entity(
    "user",
    key="user_id",
    model=User,
    not_found="Call find_users with the user's name or email to find their id (such as 'usr_004').",
)
def _users(ctx: ToolContext) -> list[dict]:
    """Users, each with a place they have not saved yet (one they could save)."""
    # the best open places and everyone's saved places read once (not a search per user)
    best = ctx.sql.scalars(BEST_PLACES)
    saved: dict[str, set[str]] = {}
    for user_id, _, place_id in ctx.sql.all(SAVED_PLACE_IDS):
        saved.setdefault(user_id, set()).add(place_id)
    out = []
    for u in ctx.sql.all(USERS):
        mine = saved.get(u.id, set())
        place = next((p for p in best if p not in mine), None)  # the best they have not saved
        record = {"user_id": u.id, "name": u.name, "query": u.name, "email": u.email}
        if place is not None:
            record["place_id"] = place
        out.append(record)
    return out


@server.entity(
    "saved_place",
    key="saved_id",
    model=SavedPlace,
    not_found="Call list_saved_places with the user's id to see their saved places "
    "(ids such as 'sav_0031').",
)
def _saved_places(ctx: ToolContext) -> list[dict]:
    return [
        {
            "saved_id": s.id,
            "user_id": s.user_id,
            "place_id": s.place_id,
            "name": s.name,
            "label": s.label,
        }
        for s in ctx.sql.all(SAVED_WITH_NAMES)
    ]


@server.entity(
    "list",
    key="list_id",
    model=PlaceList,
    not_found="Call list_lists with the user's id to see their lists (ids such as 'lst_007').",
)
def _lists(ctx: ToolContext) -> list[dict]:
    """Lists with room, each with a saved place of its owner that it does not hold yet."""
    # every list's items and every user's saved places read once (not per list)
    held: dict[str, set[str]] = {}
    for list_id, saved_id in ctx.sql.all(LISTED_SAVED_IDS):
        held.setdefault(list_id, set()).add(saved_id)
    saved: dict[str, list[str]] = {}  # each user's, by id
    for user_id, saved_id, _ in ctx.sql.all(SAVED_PLACE_IDS):
        saved.setdefault(user_id, []).append(saved_id)
    out = []
    for plist in ctx.sql.all(LISTS):
        items = held.get(plist.id, set())
        if len(items) >= LIST_CAPACITY:  # (_count: a list holds a saved place once)
            continue
        candidate = next((s for s in saved.get(plist.user_id, []) if s not in items), None)
        record = {"list_id": plist.id, "user_id": plist.user_id, "name": plist.name}
        if candidate is not None:
            record["saved_id"] = candidate
        out.append(record)
    return out


assert set(CATEGORIES) == set(get_args(Category))
