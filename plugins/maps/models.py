"""Maps state: one city's road graph, its street addresses, places with opening hours, and
users' saved places and lists.

Everything a tool returns is exact. Positions are stored as integer microdegrees
(``lat_e6``/``lon_e6``, returned as 6-decimal :class:`~decimal.Decimal`) and, for the
geometry, as integer metres east (``x``) and north (``y``) of the city's origin, derived
from the microdegrees by :func:`to_metres` (integer arithmetic only). Lengths are whole
metres, durations whole seconds, speeds whole km/h; a segment of ``m`` metres at ``kmh``
takes :func:`seconds` = ceil(3.6 m / kmh) seconds.

The road graph is fixed per seed: ``nodes`` are junctions, ``edges`` street segments with
a per-mode speed (0 = that mode may not use it). ``oneway`` edges may be driven only from
``from_node`` to ``to_node``; walking, cycling and transit ignore it. Every address lies
on one edge, ``offset_m`` metres from its ``from_node``. Routes are never stored: tools
compute them with Dijkstra at call time (see ``tools.py``).

Opening hours are weekly intervals in minutes after midnight; an interval past midnight
has ``closes_min`` above 1440 (a bar open 17:00-02:00 is ``1020..1560``).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from math import isqrt

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

METRES_PER_DEGREE_LAT = 111_320
"""Metres per degree of latitude (the spherical-earth figure the city uses everywhere)."""
MODES: tuple[str, ...] = ("drive", "walk", "bike", "transit")
CATEGORIES: tuple[str, ...] = (
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
)
PLACE_STATUSES: tuple[str, ...] = ("operational", "temporarily_closed", "permanently_closed")
SAVE_LABELS: tuple[str, ...] = ("favorite", "want_to_go", "starred")
LIST_CAPACITY = 25
"""A list holds at most this many places."""
MAX_LISTS = 10
"""A user has at most this many lists."""
WEEKDAYS: tuple[str, ...] = (
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
)


class Base(DeclarativeBase):
    pass


class Area(Base):
    """The city the map covers (one row): its origin and the metres per degree of longitude."""

    __tablename__ = "areas"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    city: Mapped[str] = mapped_column(String(60))
    region: Mapped[str] = mapped_column(String(60))
    origin_lat_e6: Mapped[int] = mapped_column(Integer)
    origin_lon_e6: Mapped[int] = mapped_column(Integer)
    metres_per_degree_lon: Mapped[int] = mapped_column(Integer)
    width_m: Mapped[int] = mapped_column(Integer)
    height_m: Mapped[int] = mapped_column(Integer)


class Street(Base):
    __tablename__ = "streets"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    kind: Mapped[str] = mapped_column(String(16))
    """"expressway", "arterial", "residential" or "pedestrian"."""


class Node(Base):
    """A junction of the road graph."""

    __tablename__ = "nodes"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    x: Mapped[int] = mapped_column(Integer)
    y: Mapped[int] = mapped_column(Integer)
    lat_e6: Mapped[int] = mapped_column(Integer)
    lon_e6: Mapped[int] = mapped_column(Integer)


class Edge(Base):
    """A street segment between two junctions, with a speed per mode (0: not allowed)."""

    __tablename__ = "edges"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    street_id: Mapped[str] = mapped_column(ForeignKey("streets.id"), index=True)
    from_node: Mapped[str] = mapped_column(ForeignKey("nodes.id"), index=True)
    to_node: Mapped[str] = mapped_column(ForeignKey("nodes.id"), index=True)
    length_m: Mapped[int] = mapped_column(Integer)
    oneway: Mapped[bool] = mapped_column(Boolean)
    """Cars may only go from ``from_node`` to ``to_node``."""
    drive_kmh: Mapped[int] = mapped_column(Integer)
    walk_kmh: Mapped[int] = mapped_column(Integer)
    bike_kmh: Mapped[int] = mapped_column(Integer)
    transit_kmh: Mapped[int] = mapped_column(Integer)
    """Bus speed where a bus line runs on the segment, else 0 (transit walks it then)."""

    def speed(self, mode: str) -> int:
        """The speed ``mode`` travels the whole segment at (0: not allowed)."""
        if mode == "transit":
            return self.transit_kmh or self.walk_kmh
        return int(getattr(self, f"{mode}_kmh"))


class Address(Base):
    """A street address on one edge of the graph."""

    __tablename__ = "addresses"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    street_id: Mapped[str] = mapped_column(ForeignKey("streets.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    edge_id: Mapped[str] = mapped_column(ForeignKey("edges.id"), index=True)
    offset_m: Mapped[int] = mapped_column(Integer)
    """Metres along the edge from its ``from_node`` (strictly inside the edge)."""
    district: Mapped[str] = mapped_column(String(40))
    postcode: Mapped[str] = mapped_column(String(10))
    label: Mapped[str] = mapped_column(String(120))
    """"1204 Maple Avenue"."""
    full_label: Mapped[str] = mapped_column(String(200))
    """"1204 Maple Avenue, Old Town, Portland 97204"."""
    lat_e6: Mapped[int] = mapped_column(Integer)
    lon_e6: Mapped[int] = mapped_column(Integer)
    x: Mapped[int] = mapped_column(Integer)
    y: Mapped[int] = mapped_column(Integer)


class Place(Base):
    """A point of interest at an address (at most one place per address)."""

    __tablename__ = "places"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(120))
    category: Mapped[str] = mapped_column(String(20), index=True)
    address_id: Mapped[str] = mapped_column(ForeignKey("addresses.id"), unique=True)
    phone: Mapped[str] = mapped_column(String(20))
    rating_x10: Mapped[int] = mapped_column(Integer)
    """Average rating times ten (43 is 4.3 stars)."""
    review_count: Mapped[int] = mapped_column(Integer)
    price_level: Mapped[int] = mapped_column(Integer)
    """1-4 for places that sell food or drink, 0 where it does not apply."""
    status: Mapped[str] = mapped_column(String(20))
    status_note: Mapped[str] = mapped_column(String(120), default="")

    address: Mapped[Address] = relationship()
    hours: Mapped[list[OpeningHours]] = relationship(
        order_by=lambda: [OpeningHours.weekday, OpeningHours.opens_min]
    )


class OpeningHours(Base):
    """One opening interval of a place on one weekday (0 = Monday)."""

    __tablename__ = "opening_hours"
    place_id: Mapped[str] = mapped_column(ForeignKey("places.id"), primary_key=True)
    weekday: Mapped[int] = mapped_column(Integer, primary_key=True)
    opens_min: Mapped[int] = mapped_column(Integer, primary_key=True)
    closes_min: Mapped[int] = mapped_column(Integer)


class User(Base):
    __tablename__ = "users"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120))
    home_address_id: Mapped[str] = mapped_column(ForeignKey("addresses.id"))


class SavedPlace(Base):
    """A place a user saved, with a label; one per user and place."""

    __tablename__ = "saved_places"
    __table_args__ = (UniqueConstraint("user_id", "place_id"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    place_id: Mapped[str] = mapped_column(ForeignKey("places.id"), index=True)
    label: Mapped[str] = mapped_column(String(16))
    note: Mapped[str] = mapped_column(String(300), default="")
    saved_at: Mapped[dt.datetime] = mapped_column(DateTime)


class PlaceList(Base):
    """A user's named list of saved places, in the order they were added."""

    __tablename__ = "place_lists"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    name: Mapped[str] = mapped_column(String(60))
    description: Mapped[str] = mapped_column(String(300), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    items: Mapped[list[ListItem]] = relationship(order_by="ListItem.position")


class ListItem(Base):
    """One saved place in one list; positions run 1..n without gaps."""

    __tablename__ = "list_items"
    __table_args__ = (UniqueConstraint("list_id", "position"),)
    list_id: Mapped[str] = mapped_column(ForeignKey("place_lists.id"), primary_key=True)
    saved_id: Mapped[str] = mapped_column(ForeignKey("saved_places.id"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    note: Mapped[str] = mapped_column(String(300), default="")
    added_at: Mapped[dt.datetime] = mapped_column(DateTime)


# ------------------------------------------------------------ geometry
# Shared by the sampler and the tools so stored and computed positions agree exactly.
def to_metres(area: Area, lat_e6: int, lon_e6: int) -> tuple[int, int]:
    """Integer metres east and north of the area's origin.

    >>> a = Area(origin_lat_e6=45_500_000, origin_lon_e6=-122_700_000, metres_per_degree_lon=78_000)
    >>> to_metres(a, 45_501_000, -122_699_000)
    (78, 111)
    """
    x = (lon_e6 - area.origin_lon_e6) * area.metres_per_degree_lon // 1_000_000
    y = (lat_e6 - area.origin_lat_e6) * METRES_PER_DEGREE_LAT // 1_000_000
    return x, y


def to_microdegrees(area: Area, x: int, y: int) -> tuple[int, int]:
    """The (lat_e6, lon_e6) of a point ``x`` metres east and ``y`` north of the origin."""
    lat = area.origin_lat_e6 + y * 1_000_000 // METRES_PER_DEGREE_LAT
    lon = area.origin_lon_e6 + x * 1_000_000 // area.metres_per_degree_lon
    return lat, lon


def distance_m(ax: int, ay: int, bx: int, by: int) -> int:
    """Straight-line distance in whole metres, rounded half up.

    >>> distance_m(0, 0, 3, 4), distance_m(0, 0, 1, 1)
    (5, 1)
    """
    d2 = (ax - bx) ** 2 + (ay - by) ** 2
    r = isqrt(d2)
    return r + 1 if d2 - r * r > r else r


def seconds(metres: int, kmh: int) -> int:
    """Whole seconds to cover ``metres`` at ``kmh``, rounded up.

    >>> seconds(1000, 36), seconds(1, 50), seconds(0, 5)
    (100, 1, 0)
    """
    return (metres * 36 + kmh * 10 - 1) // (kmh * 10)


def degrees(e6: int) -> Decimal:
    """Microdegrees as a 6-decimal Decimal.

    >>> degrees(-122_675_300)
    Decimal('-122.675300')
    """
    return Decimal(e6).scaleb(-6).quantize(Decimal("0.000001"))


def rating(x10: int) -> Decimal:
    return Decimal(x10).scaleb(-1)


def is_open_at(hours: list[OpeningHours], at: dt.datetime) -> bool:
    """Whether the weekly ``hours`` cover ``at`` (intervals past midnight included)."""
    minute = at.hour * 60 + at.minute
    day = at.weekday()
    yesterday = (day - 1) % 7
    for h in hours:
        if h.weekday == day and h.opens_min <= minute < h.closes_min:
            return True
        if h.weekday == yesterday and h.closes_min > 1440 and minute + 1440 < h.closes_min:
            return True
    return False


def hhmm(minutes: int) -> str:
    """Minutes after midnight as "HH:MM" (1560 is "02:00" the next day).

    >>> hhmm(1020), hhmm(1560), hhmm(1440)
    ('17:00', '02:00', '24:00')
    """
    if minutes == 1440:
        return "24:00"
    minutes %= 1440
    return f"{minutes // 60:02d}:{minutes % 60:02d}"
