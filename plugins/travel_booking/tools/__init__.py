"""The travel_booking server: flights with fares and seat maps, hotels with nightly
rates, travellers, and itineraries that bundle flight and hotel bookings with exact refunds.

This module declares the server, the entity kinds it grounds requests on, and its tools in
the order the model reads them (``TOOLS``). The tools live by resource: :mod:`.flights`,
:mod:`.hotels`, :mod:`.travellers`, :mod:`.itineraries`; what they take (and the named
rules) is in :mod:`.args`, what they return in :mod:`.results`, the statements they run in
:mod:`.queries`, and the checks and helpers several of them share in :mod:`._common`.
Docstrings are what the model reads: keep examples concrete.

Business rules have names (``seat_taken``, ``fare_not_changeable``, ...); a tool that
refuses an action raises ``PreconditionFailed`` (or ``Conflict`` for something already
taken) with a message that starts with ``Rule '<name>' failed:`` and says what would be
allowed instead. A refused call changes nothing: every check runs before the first change.

Every money movement (a ticket, a change fee, a fare difference, a refund, a hotel stay)
is a line of the itinerary's ledger written in the same transaction as the booking, its
``amount_paid`` and the itinerary's ``total_paid``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from prove_gym.server import EnvVersion, Server, ToolContext, stable_int

from ..models import (
    AIRLINES,
    CUTOFF,
    LAYOUTS,
    PASSPORT_MARGIN_DAYS,
    Base,
    Flight,
    FlightBooking,
    Hotel,
    HotelBooking,
    Itinerary,
    Room,
    Traveller,
    change_fee,
    is_international,
    passport_valid_for,
)
from ..sampler import sample_travel_booking
from ..times import LOCAL_TIMES
from . import flights, hotels, itineraries, local, quoted, travellers
from ._common import _free_of, _name, _open
from .queries import (
    _SEP,
    BOOKABLE_ITINERARIES,
    CONFIRMED_SEATS,
    HOTELS,
    LOYALTY_AIRLINES,
    OPEN_BOOKINGS,
    OPEN_FLIGHTS,
    OPEN_FLIGHTS_BY_DEPARTURE,
    RATED_NIGHTS,
    ROOMS_WITH_CAPACITY,
    TAKEN_NIGHTS_OF_ROOMS,
    TRAVELLERS,
    UPCOMING_STAYS,
)
from .quotes import QUOTES

OUT_OF_SCOPE = (
    "Check me in for my flight.",
    "Add a checked bag to my booking.",
    "Order a vegetarian meal on the flight.",
    "Rent a car at the airport.",
    "Apply for a visa for this trip.",
    "Buy travel insurance for the itinerary.",
    "Upgrade me with my miles.",
    "Book airport lounge access.",
    "Request wheelchair assistance at the gate.",
    "What's the weather in the destination this week?",
    "Print my boarding pass.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

server = Server(
    "travel_booking",
    out_of_scope=OUT_OF_SCOPE,
    tasks_file=Path(__file__).parents[1] / "tasks.jsonl",
    version="1.2.0",
    base=Base,
    sampler=sample_travel_booking,
    description="A travel agency's booking system: flights between European airports with "
    "fares per cabin and fare class (flex, standard, basic) and seat maps, hotels with rooms "
    "and nightly rates, travellers with passports and loyalty numbers, and itineraries that "
    "bundle flight and hotel bookings with a ledger of payments and refunds. Seats and room "
    "nights are never sold twice; changes and cancellations follow the fare's rules.",
    instructions="Travel conventions: ids look like 'fl_0042' (flight; its number looks like "
    "'TP 1350'), 'trv_0007' (traveller), 'itn_0012' (itinerary), 'fb_00031' (flight booking), "
    "'htl_004' (hotel), 'rm_0051' (room), 'hb_00009' (hotel booking). Airports are IATA codes "
    "such as 'LIS' or city names such as 'Lisbon'. Dates are ISO ('2026-05-14'); times are "
    "local. Amounts are exact decimals in EUR, shown as strings. Fare rules: flex changes "
    "free and refunds in full; standard changes for a fee (75/100/150 EUR in economy/premium "
    "economy/business) plus any fare difference and refunds only the taxes; basic cannot "
    "change and refunds only the taxes. A cheaper new flight gives the difference back only "
    "on a flex fare. Flight bookings, changes and cancellations close 2 hours before "
    "departure. International flights need a passport valid 180 days past departure. Hotel "
    "rates: flexible cancels free until 48 hours before check-in (15:00), then the first "
    "night is kept; non_refundable is 10% cheaper and refunds nothing. Refused calls name "
    "the rule that failed and change nothing.",
    env_versions=[
        EnvVersion(
            QUOTES,
            "a flight change or cancellation is made against a quote: quote_flight_change and "
            "the new quote_flight_cancellation return a quote_id (valid 30 minutes) that "
            "change_flight or cancel_flight_booking must carry, and the money moved is exactly "
            "the quote's (rules quote_required, quote_unknown, quote_other_booking, "
            "quote_other_flight, quote_used, quote_expired)",
            tasks_file=Path(__file__).parents[1] / "tasks_v1.jsonl",
            instructions="Flight changes and cancellations need a quote: call "
            "quote_flight_change for the booking and the new flight (or "
            "quote_flight_cancellation for the booking), then pass its quote_id to "
            "change_flight (or cancel_flight_booking). A quote holds its price for 30 minutes "
            "and is used up by the change; the charge or refund is exactly the quote's. A call "
            "without a quote, with another booking's or flight's, an expired or an already "
            "used one is refused and changes nothing.",
        ),
        EnvVersion(
            LOCAL_TIMES,
            "times are local with their UTC offsets: a flight departs at its origin's local "
            "time and arrives at its destination's (ISO 8601 with offset, such as "
            "'2026-03-29T09:05+02:00'), its duration is the route's block time (35 minutes "
            "plus the great-circle distance at 780 km/h, to 5 minutes) rather than a stored "
            "one, the agency's clock is UTC, and every rule that compares times (the 2-hour "
            "departure_cutoff, a hotel's 15:00 check-in and its 48-hour free cancellation, "
            "travel_started, upcoming bookings) compares instants, across summer-time "
            "changes; and a traveller's flights leave 45 minutes between one landing and the "
            "next departure (rule connection_too_short)",
            tasks_file=Path(__file__).parents[1] / "tasks_v2.jsonl",
            instructions="Times are local: a flight's departs_at is its origin airport's "
            "local time and arrives_at its destination's, each with its UTC offset, such as "
            "'2026-03-29T09:05+02:00' (Lisbon, Porto, London and Edinburgh are UTC+0 in "
            "winter and +1 in summer; the other airports +1 and +2). duration_minutes is the "
            "route's block time: 35 minutes plus the great-circle distance at 780 km/h, "
            "rounded to 5 minutes, the same for every flight of a route. search_flights' "
            "date is the origin's local date. The agency's clock ('now', when things are "
            "booked, quotes' expires_at, the ledger) is UTC. The 2-hour cutoff before a "
            "departure, a hotel's check-in at 15:00 in its city and its free cancellation "
            "until 48 hours before are compared as instants, so they hold across a change "
            "to or from summer time. A traveller's flights must leave 45 minutes or more "
            "between one landing and the next departure (rule connection_too_short): a "
            "booking, a change or its quote that would not is refused and changes nothing.",
        ),
    ],
)

TOOLS = (
    flights.search_flights,
    flights.get_flight,
    flights.get_seat_map,
    hotels.search_hotels,
    hotels.get_hotel_availability,
    travellers.find_travellers,
    itineraries.list_itineraries,
    itineraries.get_itinerary,
    flights.quote_flight_change,
    travellers.create_traveller,
    travellers.update_passport,
    travellers.add_loyalty_number,
    itineraries.create_itinerary,
    flights.book_flight,
    flights.change_seat,
    flights.change_flight,
    flights.cancel_flight_booking,
    hotels.book_hotel,
    hotels.cancel_hotel_booking,
    itineraries.cancel_itinerary,
)
"""The server's tools in the order the model reads them: this list decides it, not the modules'."""
RESOURCES = (flights, hotels, itineraries, travellers)
server.add_tools(TOOLS, declared_in=RESOURCES)
LATER = (
    quoted.quote_flight_change,
    quoted.change_flight,
    quoted.cancel_flight_booking,
    quoted.quote_flight_cancellation,
    local.search_flights,
    local.get_flight,
    local.list_itineraries,
    local.get_itinerary,
    local.quote_flight_change,
    local.add_loyalty_number,
    local.book_flight,
    local.change_seat,
    local.change_flight,
    local.cancel_flight_booking,
    local.book_hotel,
    local.cancel_hotel_booking,
    local.cancel_itinerary,
    local.quote_flight_cancellation,
)
"""Later definitions of tools above (``@tool(name=..., since=N)``), each read in its tool's
place from env version N on, and tools new in a version (``since=N`` alone), after the first
tools: from -v1 (``QUOTES``) a change or a cancellation carries its quote's reference; from
-v2 (``LOCAL_TIMES``) fourteen tools are retold (:mod:`.local`: local times with offsets,
block times, rules between instants; their code branches on the version)."""
server.add_tools(LATER, declared_in=(quoted, local))


# What exists and is worth asking about, for grounding synthesized requests.
def _pick(options: list[str], *key: object) -> str:
    return options[stable_int(*key) % len(options)]


def _fare_classes(f: Any, cabin: str) -> list[str]:
    """The fare classes a flight (a row of OPEN_FLIGHTS) sells in a cabin, in no particular
    order (distinct: a unique constraint)."""
    joined: str | None = getattr(f, cabin)
    return joined.split(_SEP) if joined is not None else []


@server.entity(
    "flight",
    key="flight_id",
    model=Flight,
    not_found="Search flights by origin, destination and date to find the flight's id "
    "(such as 'fl_0042').",
)
def _flights(ctx: ToolContext) -> list[dict[str, Any]]:
    """Flights still open for booking, each with a cabin, fare class and seat that are free."""
    booked: dict[str, set[str]] = {}
    for flight_id, seat, _ in ctx.sql.all(CONFIRMED_SEATS):
        booked.setdefault(flight_id, set()).add(seat)
    out = []
    for f in ctx.sql.all(OPEN_FLIGHTS, since=ctx.now + CUTOFF):
        if not _open(ctx, f):  # from -v2 in instants (the rows hold every open flight)
            continue
        for cabin in ("economy", "premium_economy", "business"):
            if cabin not in LAYOUTS[f.aircraft]:
                continue
            free = _free_of(f, cabin, booked.get(f.id, set()))
            if not free:
                continue
            classes = sorted(_fare_classes(f, cabin))
            out.append(
                {
                    "flight_id": f.id,
                    "number": f.number,
                    "origin": f.origin,
                    "destination": f.destination,
                    "date": f.day,
                    "cabin": cabin,
                    "fare_class": _pick(classes, f.id, "class"),
                    "seat": _pick(free, f.id, "seat"),
                }
            )
            break
    return out


@server.entity(
    "traveller",
    key="traveller_id",
    model=Traveller,
    not_found="Find the traveller by name or email to get their id (such as 'trv_0007').",
)
def _travellers(ctx: ToolContext) -> list[dict[str, Any]]:
    """Every traveller, with an airline they have no loyalty number with yet."""
    airlines: dict[str, set[str]] = {}
    for traveller_id, airline in ctx.sql.all(LOYALTY_AIRLINES):
        airlines.setdefault(traveller_id, set()).add(airline)
    out = []
    for t in ctx.sql.all(TRAVELLERS):
        have = airlines.get(t.id, set())
        free = [a for a in sorted(AIRLINES) if a not in have]
        airline = _pick(free, t.id, "airline") if free else None
        out.append(
            {
                "traveller_id": t.id,
                "name": _name(t),
                "query": _name(t),
                "email": t.email,
                "airline": airline,
                "number": f"{airline}{stable_int(t.id, 'number') % 10**9:09d}" if airline else None,
            }
        )
    return out


@server.entity(
    "itinerary",
    key="itinerary_id",
    model=Itinerary,
    not_found="List the traveller's itineraries to find the itinerary's id (such as 'itn_0012').",
)
def _itineraries(ctx: ToolContext) -> list[dict[str, Any]]:
    """Active itineraries whose lead traveller's passport allows any trip (new bookings fit)."""
    fine = ctx.now.date() + dt.timedelta(days=PASSPORT_MARGIN_DAYS + 40)
    rows = ctx.sql.all(BOOKABLE_ITINERARIES, until=fine)
    return [{"itinerary_id": i, "traveller_id": t, "name": n} for i, t, n in rows]


@server.entity(
    "flight_booking",
    key="flight_booking_id",
    model=FlightBooking,
    not_found="Get the itinerary to see its flight bookings (ids such as 'fb_00031').",
)
def _flight_bookings(ctx: ToolContext) -> list[dict[str, Any]]:
    """Confirmed bookings of flights still open, with a free seat to move to and, for a
    changeable fare, another flight of the route it can move to."""
    since = ctx.now + CUTOFF
    # the open flights, their bookings and fares read once (not per booking and option)
    flights: dict[str, Any] = {}
    of_route: dict[tuple[str, str], list[Any]] = {}  # each route's flights by departure
    for f in ctx.sql.all(OPEN_FLIGHTS_BY_DEPARTURE, since=since):
        if not _open(ctx, f):  # from -v2 in instants (the rows hold every open flight)
            continue
        flights[f.id] = f
        of_route.setdefault((f.origin, f.destination), []).append(f)
    booked: dict[str, set[str]] = {}
    on_flight: set[tuple[str, str]] = set()  # (traveller, flight) of confirmed bookings
    for flight_id, seat, traveller_id in ctx.sql.all(CONFIRMED_SEATS):
        booked.setdefault(flight_id, set()).add(seat)
        on_flight.add((traveller_id, flight_id))
    free_of: dict[tuple[str, str], list[str]] = {}  # (flight, cabin) -> its free seats

    def free_seats(f: Any, cabin: str) -> list[str]:
        key = (f.id, cabin)
        if key not in free_of:
            free_of[key] = _free_of(f, cabin, booked.get(f.id, set()))
        return free_of[key]

    out = []
    for b in ctx.sql.all(OPEN_BOOKINGS, since=since):
        if b.flight_id not in flights:
            continue
        f = flights[b.flight_id]
        free = [s for s in free_seats(f, b.cabin) if s != b.seat]
        record: dict[str, Any] = {
            "flight_booking_id": b.id,
            "itinerary_id": b.itinerary_id,
            "traveller_id": b.traveller_id,
            "seat": _pick(free, b.id, "seat") if free else None,
        }
        if change_fee(b.fare_class, b.cabin) is not None:
            intl = is_international(f.origin, f.destination)
            for new in of_route[f.origin, f.destination]:
                if new.id == f.id:
                    continue
                seats = free_seats(new, b.cabin) if b.cabin in LAYOUTS[new.aircraft] else []
                if (
                    seats
                    and b.fare_class in _fare_classes(new, b.cabin)
                    and passport_valid_for(b.passport_expiry, dt.date.fromisoformat(new.day), intl)
                    and (b.traveller_id, new.id) not in on_flight
                ):
                    record["new_flight_id"] = new.id
                    record["new_seat"] = _pick(seats, b.id, new.id)
                    break
        out.append(record)
    return out


@server.entity(
    "hotel",
    key="hotel_id",
    model=Hotel,
    not_found="Search hotels by city and dates to find the hotel's id (such as 'htl_004').",
)
def _hotels(ctx: ToolContext) -> list[dict[str, Any]]:
    """Every hotel, with a stay from a week ahead (three nights) and its city."""
    start = ctx.now.date() + dt.timedelta(days=7)
    return [
        {
            "hotel_id": h.id,
            "name": h.name,
            "city": h.city,
            "check_in": start.isoformat(),
            "check_out": (start + dt.timedelta(days=3)).isoformat(),
        }
        for h in ctx.sql.all(HOTELS)
    ]


@server.entity(
    "room",
    key="room_id",
    model=Room,
    not_found="Check the hotel's availability for the dates to see free rooms (ids such as "
    "'rm_0051').",
)
def _rooms(ctx: ToolContext) -> list[dict[str, Any]]:
    """Rooms with a stay (2-4 nights, 3-30 days ahead) that is free and on sale."""
    today = ctx.now.date()
    # nights as stored text (what RATED_NIGHTS and TAKEN_NIGHTS_OF_ROOMS read): day k ahead
    # is days[k]; a stay starts 3 to 30 days ahead and lasts up to 4 nights
    days = [(today + dt.timedelta(days=k)).isoformat() for k in range(35)]
    window = {"first": today + dt.timedelta(days=3), "last": today + dt.timedelta(days=33)}
    on_sale = {t: set(text.split(_SEP)) for t, text in ctx.sql.all(RATED_NIGHTS, **window)}
    busy = {r: set(text.split(_SEP)) for r, text in ctx.sql.all(TAKEN_NIGHTS_OF_ROOMS, **window)}
    out = []
    for room in ctx.sql.all(ROOMS_WITH_CAPACITY):
        rated = on_sale.get(room.room_type_id, set())
        taken = busy.get(room.id, set())
        length = 2 + stable_int(room.id, "len") % 3
        for offset in range(3 + stable_int(room.id, "start") % 20, 31):
            nights = days[offset : offset + length]
            if rated.issuperset(nights) and taken.isdisjoint(nights):
                out.append(
                    {
                        "room_id": room.id,
                        "hotel_id": room.hotel_id,
                        "check_in": nights[0],
                        "check_out": days[offset + length],
                        "guests": min(2, room.max_guests),
                    }
                )
                break
    return out


@server.entity(
    "hotel_booking",
    key="hotel_booking_id",
    model=HotelBooking,
    not_found="Get the itinerary to see its hotel bookings (ids such as 'hb_00009').",
)
def _hotel_bookings(ctx: ToolContext) -> list[dict[str, Any]]:
    """Confirmed hotel bookings whose stay has not started (they can still be cancelled)."""
    start = (ctx.now - dt.timedelta(hours=15)).date()
    rows = ctx.sql.all(UPCOMING_STAYS, after=start)
    return [{"hotel_booking_id": i, "itinerary_id": it, "hotel_id": h} for i, it, h in rows]
