"""Local times and block times, from ``prove/travel_booking-v2`` on (``LOCAL_TIMES``).

Real flight APIs (Amadeus, Duffel) give a segment's departure and arrival as the local time
of each airport with its UTC offset, and a duration that follows from the route. From -v2
this server reads its stored rows the same way, without sampling anything new (every
version samples the same state for a seed):

- a flight's stored ``departs_at`` is its departure in the ORIGIN airport's local time
  (its zone: ``AIRPORT_PLACES``);
- its block time follows from the great-circle distance between the airports:
  ``TAXI_CLIMB_MINUTES + distance_km / CRUISE_KMH * 60``, rounded to the nearest 5
  minutes (:func:`block_minutes`); the stored ``arrives_at`` is not read;
- its arrival is the departure's instant plus the block time, shown in the DESTINATION's
  local time;
- the server's clock (``ctx.now``, when bookings are made, quotes expire, ...) is UTC;
- a traveller's flights leave ``MIN_CONNECTION`` between one landing and the next
  departure (rule ``connection_too_short``).

Dates stay as they were: ``search_flights``' date is the origin's local date (a stored
departure's own), a hotel's nights are its city's, and "today" for a stay is the clock's
date, which is every served city's date too (a state's clock reads 09:00 to 17:30 UTC).

Times are compared as instants, so a rule holds across a change to or from summer time. A
stored wall-clock time that happens twice (the hour repeated when summer time ends) is its
first occurrence, still in summer time; one that never happens (the hour skipped when summer
time starts) is read with the offset before the gap, so it moves forward by the gap: a
departure stored as 02:30 on the morning clocks go forward in Paris leaves at 03:30+02:00.
This is RFC 5545's reading, and Python's ``fold=0``.

Zone rules come from the pinned ``tzdata`` package (:func:`prove_gym.server.zones.zone`), never the machine's
``/usr/share/zoneinfo``, so every machine shows the same offsets.

>>> block_minutes("LIS", "OPO"), block_minutes("LIS", "CPH")
(55, 225)
>>> show(departure("CDG", dt.datetime(2026, 3, 29, 9, 5)), "CDG")
'2026-03-29T09:05+02:00'
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from zoneinfo import ZoneInfo

from prove_gym.server.zones import zone

from .models import AIRPORTS

LOCAL_TIMES = 2
"""The env version local times start in (``prove/travel_booking-v2``)."""

AIRPORT_PLACES: dict[str, tuple[str, float, float]] = {
    "LIS": ("Europe/Lisbon", 38.7813, -9.1359),
    "OPO": ("Europe/Lisbon", 41.2481, -8.6814),
    "MAD": ("Europe/Madrid", 40.4719, -3.5626),
    "BCN": ("Europe/Madrid", 41.2971, 2.0785),
    "CDG": ("Europe/Paris", 49.0097, 2.5479),
    "NCE": ("Europe/Paris", 43.6584, 7.2159),
    "LHR": ("Europe/London", 51.4700, -0.4543),
    "EDI": ("Europe/London", 55.9500, -3.3725),
    "FRA": ("Europe/Berlin", 50.0379, 8.5622),
    "MUC": ("Europe/Berlin", 48.3538, 11.7861),
    "FCO": ("Europe/Rome", 41.8003, 12.2389),
    "MXP": ("Europe/Rome", 45.6306, 8.7281),
    "AMS": ("Europe/Amsterdam", 52.3105, 4.7683),
    "CPH": ("Europe/Copenhagen", 55.6180, 12.6508),
}
"""IATA code -> (IANA zone, latitude, longitude in degrees): fixed facts, not sampled."""

CITY_ZONES: dict[str, str] = {city: AIRPORT_PLACES[code][0] for code, (city, _) in AIRPORTS.items()}
"""City -> IANA zone (a hotel's local time is its city's)."""

EARTH_RADIUS_KM = 6371.0
"""The mean radius of the Earth, for the great-circle distance."""

CRUISE_KMH = 780
"""The average speed over the ground of a narrow-body jet between European airports."""

TAXI_CLIMB_MINUTES = 35
"""What every flight adds to its time in the air: taxiing out and in, climb and approach."""

MIN_CONNECTION = dt.timedelta(minutes=45)
"""From -v2, a traveller's flights leave at least this long between one landing and the
next departure (rule ``connection_too_short``): a minimum connection time, as airlines
publish one, here for any two of a traveller's flights, since no one can board a flight
while on another."""

UTC = dt.UTC


def airport_zone(code: str) -> ZoneInfo:
    return zone(AIRPORT_PLACES[code][0])


def city_zone(city: str) -> ZoneInfo:
    return zone(CITY_ZONES[city])


@functools.cache
def distance_km(origin: str, destination: str) -> int:
    """The great-circle distance between two airports (haversine), to the kilometre.

    >>> distance_km("LIS", "OPO"), distance_km("OPO", "LIS")
    (277, 277)
    """
    _, lat1, lon1 = AIRPORT_PLACES[origin]
    _, lat2, lon2 = AIRPORT_PLACES[destination]
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return round(2 * EARTH_RADIUS_KM * math.asin(math.sqrt(h)))


def block_minutes(origin: str, destination: str) -> int:
    """Gate-to-gate minutes between two airports: ``TAXI_CLIMB_MINUTES`` plus the distance at
    ``CRUISE_KMH``, rounded to the nearest 5 minutes (half up). Whole-kilometre distances
    and integer arithmetic: the same on every machine.

    >>> block_minutes("LHR", "EDI"), block_minutes("MAD", "BCN")
    (75, 70)
    """
    # minutes * 10 = 10 * TAXI + km * 600 / CRUISE, rounded half up to a multiple of 50
    tenths = 10 * TAXI_CLIMB_MINUTES * CRUISE_KMH + distance_km(origin, destination) * 600
    return 5 * ((2 * tenths + 50 * CRUISE_KMH) // (100 * CRUISE_KMH))


def departure(origin: str, wall: dt.datetime) -> dt.datetime:
    """The instant (aware, UTC) of a departure stored as ``wall`` in ``origin``'s local time:
    a repeated wall time is its first occurrence, a skipped one moves forward by the gap."""
    return wall.replace(tzinfo=airport_zone(origin), fold=0).astimezone(UTC)


def arrival(origin: str, destination: str, wall: dt.datetime) -> dt.datetime:
    """The instant (aware, UTC) a flight from ``origin`` departing at local ``wall`` lands."""
    return departure(origin, wall) + dt.timedelta(minutes=block_minutes(origin, destination))


def check_in(city: str, day: dt.date, at: dt.time) -> dt.datetime:
    """The instant (aware, UTC) of local time ``at`` on ``day`` in ``city`` (a hotel's)."""
    return dt.datetime.combine(day, at).replace(tzinfo=city_zone(city), fold=0).astimezone(UTC)


def server_clock(now: dt.datetime) -> dt.datetime:
    """The server's clock (naive ``ctx.now``) as the UTC instant it is from -v2."""
    return now.replace(tzinfo=UTC)


def show(moment: dt.datetime, code: str) -> str:
    """An instant as the local time of airport ``code`` with its offset, to the minute.

    >>> show(dt.datetime(2026, 10, 25, 0, 30, tzinfo=UTC), "LHR")
    '2026-10-25T01:30+01:00'
    """
    return moment.astimezone(airport_zone(code)).isoformat(timespec="minutes")


def show_in(moment: dt.datetime, tz: ZoneInfo) -> str:
    """An instant as the local time of zone ``tz`` with its offset, to the minute."""
    return moment.astimezone(tz).isoformat(timespec="minutes")


def show_utc(moment: dt.datetime) -> str:
    """A time of the server's clock (naive, UTC) with its offset: ``2026-05-14T07:45+00:00``."""
    return server_clock(moment).isoformat(timespec="minutes")
