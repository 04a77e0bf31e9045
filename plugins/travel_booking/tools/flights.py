"""Flight tools: search, fares and seat maps, booking, seat and flight changes, cancellation."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Annotated, Any

from pydantic import Field

from prove_gym.server import Bound, InvalidArgument, ToolContext, next_id, parse_date
from prove_gym.server.tool import tool

from ..models import (
    AIRLINES,
    AIRPORTS,
    CURRENCY,
    FARE_RULES,
    LAYOUTS,
    PASSPORT_MARGIN_DAYS,
    ZERO,
    FlightBooking,
    Itinerary,
    change_cost,
    change_fee,
    flight_refund,
    is_international,
    passport_valid_for,
    seat_map,
    seat_position,
)
from ..times import MIN_CONNECTION, arrival, block_minutes, departure, show
from ._common import (
    _active,
    _broken,
    _cancel_flight,
    _clock,
    _clock_text,
    _confirmed,
    _day_ahead,
    _departs,
    _departs_text,
    _flight_booking_out,
    _free_of,
    _local,
    _name,
    _open,
    _taken,
    _txn,
)
from .args import (
    Cabin,
    DateText,
    FareClass,
    FlightBookingRow,
    FlightRow,
    ItineraryRow,
    Place,
    SeatText,
    TravellerRow,
)
from .queries import (
    BOOKED_SEATS,
    BOOKING_ON_FLIGHT,
    FARES,
    FLIGHT,
    FLIGHT_BOOKING,
    FLIGHTS_OF_TRAVELLER,
    ITINERARY,
    LOYALTY_OF,
    OTHER_FLIGHTS_OF_ROUTE,
    TRAVELLER,
    _flights_of_route,
)
from .results import (
    CabinBrief,
    Cancelled,
    ChangeDone,
    ChangeQuote,
    FareOut,
    FlightBooked,
    FlightBookingOut,
    FlightDetail,
    FlightSearch,
    FlightSummary,
    Schedule,
    SeatMapOut,
)


def _airports(text: str, name: str) -> list[str]:
    """IATA codes matching an airport code or (part of) a city name."""
    wanted = " ".join(text.split()).casefold()
    if wanted.upper() in AIRPORTS:
        return [wanted.upper()]
    found = [code for code, (city, _) in sorted(AIRPORTS.items()) if wanted in city.casefold()]
    if not found:
        served = ", ".join(f"{c} ({city})" for c, (city, _) in sorted(AIRPORTS.items()))
        raise InvalidArgument(
            f"{name} {text!r} is no airport served; use an IATA code or city of: {served}."
        )
    return found


def _booked_seats(ctx: ToolContext, flight_id: str) -> set[str]:
    return set(ctx.sql.scalars(BOOKED_SEATS, flight_id=flight_id))


def _free_seats(ctx: ToolContext, flight: Any, cabin: str) -> list[str]:
    """Free seats of a cabin in seat-map order (``flight``: a row of ``flights``)."""
    return _free_of(flight, cabin, _booked_seats(ctx, flight.id))


def _require_open(ctx: ToolContext, flight: Any, what: str) -> None:
    if not _open(ctx, flight):
        gone = _departs(ctx, flight) <= _clock(ctx)
        when = "has departed" if gone else "departs in under 2 hours"
        raise _broken(
            "departure_cutoff",
            f"flight {flight.number} ({flight.id}) {when} (departure "
            f"{_departs_text(ctx, flight)}, now {_clock_text(ctx, ctx.now)}); it can no longer "
            f"be {what}. Choose a later flight.",
        )


def _fare(ctx: ToolContext, flight: Any, cabin: str, fare_class: str) -> Any:
    """The flight's fare of a cabin and fare class (a row of ``fares``)."""
    offers = ctx.sql.all(FARES, flight_id=flight.id)
    for fare in offers:
        if fare.cabin == cabin and fare.fare_class == fare_class:
            return fare
    offered = ", ".join(f"{f.cabin} {f.fare_class}" for f in offers)
    raise _broken(
        "fare_not_offered",
        f"flight {flight.number} ({flight.id}, {flight.aircraft}) sells no {fare_class} fare in "
        f"{cabin}; it offers: {offered}. Pick one of those.",
    )


def _check_passport(t: Any, flight: Any) -> None:
    intl = is_international(flight.origin, flight.destination)
    if not passport_valid_for(t.passport_expiry, flight.departs_at.date(), intl):
        need = flight.departs_at.date() + dt.timedelta(days=PASSPORT_MARGIN_DAYS if intl else 0)
        kind = "international" if intl else "domestic"
        raise _broken(
            "passport_validity",
            f"{_name(t)} ({t.id})'s passport expires {t.passport_expiry.isoformat()}, but this "
            f"{kind} flight on {flight.departs_at.date().isoformat()} needs one valid until at "
            f"least {need.isoformat()}. Record the traveller's renewed passport first.",
        )


def _check_seat(ctx: ToolContext, flight: Any, cabin: str, seat: str) -> None:
    free = _free_seats(ctx, flight, cabin)
    if not free:
        raise _broken(
            "cabin_full",
            f"the {cabin} cabin of flight {flight.number} ({flight.id}) is sold out. Choose "
            "another cabin or another flight.",
        )
    if seat not in seat_map(flight.aircraft, cabin):
        first, last, letters = LAYOUTS[flight.aircraft][cabin]
        raise _broken(
            "seat_not_in_cabin",
            f"seat {seat} is not in the {cabin} cabin of this {flight.aircraft} (rows "
            f"{first}-{last}, seats {', '.join(letters)}). Free {cabin} seats include "
            f"{', '.join(free[:6])}.",
        )
    if seat not in free:
        raise _taken(
            "seat_taken",
            f"seat {seat} on flight {flight.number} ({flight.id}) is already taken. Free "
            f"{cabin} seats include {', '.join(free[:6])}.",
        )


def _check_not_on(ctx: ToolContext, t: Any, flight: Any) -> None:
    other = ctx.sql.scalar(BOOKING_ON_FLIGHT, traveller_id=t.id, flight_id=flight.id)
    if other is not None:
        raise _taken(
            "already_on_flight",
            f"{_name(t)} ({t.id}) already holds booking {other} on flight {flight.number} "
            f"({flight.id}); nothing was booked. Change that booking's seat instead.",
        )


def _check_connections(ctx: ToolContext, t: Any, flight: Any, moving: str | None = None) -> None:
    """From -v2: the traveller's other confirmed flights (all but booking ``moving``) leave
    ``MIN_CONNECTION`` or more between one landing and the next departing, as instants
    (rule connection_too_short)."""
    if not _local(ctx):
        return
    leaves = departure(flight.origin, flight.departs_at)
    lands = arrival(flight.origin, flight.destination, flight.departs_at)
    for other in ctx.sql.all(FLIGHTS_OF_TRAVELLER, traveller_id=t.id):
        if other.id == moving or other.flight_id == flight.id:
            continue
        o_leaves = departure(other.origin, other.departs_at)
        o_lands = arrival(other.origin, other.destination, other.departs_at)
        if leaves >= o_lands + MIN_CONNECTION or o_leaves >= lands + MIN_CONNECTION:
            continue
        first, then = ((other, o_lands), (flight, leaves))
        if o_leaves > leaves:
            first, then = ((flight, lands), (other, o_leaves))
        (a, a_lands), (b, b_leaves) = first, then
        gap = int((b_leaves - a_lands).total_seconds() // 60)
        apart = f"{gap} minutes after landing" if gap >= 0 else "before landing"
        raise _broken(
            "connection_too_short",
            f"{_name(t)} ({t.id}) would land in {a.destination} at "
            f"{show(a_lands, a.destination)} on flight {a.number} and leave {b.origin} at "
            f"{show(b_leaves, b.origin)} on flight {b.number}, {apart} (booking "
            f"{other.id} holds flight {other.number}). A traveller's flights need "
            f"{MIN_CONNECTION.seconds // 60} minutes or more between one landing and the next "
            "departure, counted between instants. Choose a flight that leaves that margin.",
        )


def _seat(text: str) -> str:
    return text.strip().upper()


def _summary(
    ctx: ToolContext, f: Any, offers: list[Any], cabin: str | None = None
) -> FlightSummary:
    """A flight (a row of ``flights``) with its fares (``offers``, rows of ``fares``)."""
    cabins: list[CabinBrief] = []
    for c in LAYOUTS[f.aircraft]:
        if cabin is not None and c != cabin:
            continue
        prices = [x.base + x.taxes for x in offers if x.cabin == c]
        cabins.append(
            {
                "cabin": c,
                "seats_left": len(_free_seats(ctx, f, c)),
                "lowest_total": min(prices),
            }
        )
    return {
        "flight_id": f.id,
        "number": f.number,
        "airline": AIRLINES[f.airline],
        "origin": f.origin,
        "destination": f.destination,
        **_schedule(ctx, f),
        "aircraft": f.aircraft,
        "international": is_international(f.origin, f.destination),
        "booking_open": _open(ctx, f),
        "cabins": cabins,
    }


def _schedule(ctx: ToolContext, f: Any) -> Schedule:
    """A flight's departure, arrival and duration as results show them: before -v2 the
    stored times; from -v2 the origin's and the destination's local times with their offsets
    and the block time of the route (:func:`~..times.block_minutes`)."""
    if not _local(ctx):
        return {
            "departs_at": f.departs_at.isoformat(timespec="minutes"),
            "arrives_at": f.arrives_at.isoformat(timespec="minutes"),
            "duration_minutes": int((f.arrives_at - f.departs_at).total_seconds() // 60),
        }
    return {
        "departs_at": show(departure(f.origin, f.departs_at), f.origin),
        "arrives_at": show(arrival(f.origin, f.destination, f.departs_at), f.destination),
        "duration_minutes": block_minutes(f.origin, f.destination),
    }


def _check_change(
    ctx: ToolContext, b: Any, old: Any, new: Any
) -> tuple[Any, tuple[Decimal, Decimal, Decimal]]:
    """Every rule of moving ``b`` from flight ``old`` to ``new`` (seat aside): the new fare
    (a row of ``fares``) and its cost."""
    _confirmed(ctx, b, b.id)
    if change_fee(b.fare_class, b.cabin) is None:
        raise _broken(
            "fare_not_changeable",
            f"booking {b.id} is a basic fare, which cannot move to another flight. The "
            f"traveller can cancel it (only the taxes, {b.taxes}, are refunded) and book "
            "the new flight separately.",
        )
    _require_open(ctx, old, "changed")
    if new.id == old.id:
        raise _broken(
            "change_same_route",
            f"booking {b.id} is already on flight {old.number} ({old.id}). Pick a different "
            "flight of the same route, or change only the seat.",
        )
    if (new.origin, new.destination) != (old.origin, old.destination):
        raise _broken(
            "change_same_route",
            f"booking {b.id} flies {old.origin}-{old.destination}, but flight {new.id} flies "
            f"{new.origin}-{new.destination}. Pick a {old.origin}-{old.destination} flight; "
            "for another route cancel and book anew.",
        )
    _require_open(ctx, new, "booked")
    fare = _fare(ctx, new, b.cabin, b.fare_class)
    traveller = ctx.sql.one(TRAVELLER, id=b.traveller_id)
    _check_passport(traveller, new)
    _check_not_on(ctx, traveller, new)
    _check_connections(ctx, traveller, new, moving=b.id)
    cost = change_cost(b.fare_class, b.cabin, b.base_fare + b.taxes, fare.base + fare.taxes)
    return fare, cost


SEATS = ["12C", "14A", "15D", "18F", "21B", "3A"]


@tool(
    returns="flight",
    phrasings=[
        "Find flights from {origin} to {destination} on {date}",
        "What flights are there from {origin} to {destination}?",
        "Search {cabin} flights {origin} to {destination} on {date}",
    ],
    examples={"origin": sorted(AIRPORTS), "destination": sorted(AIRPORTS), "date": _day_ahead},
)
def search_flights(
    ctx: ToolContext,
    origin: Place,
    destination: Place,
    date: DateText | None = None,
    cabin: Cabin | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 20,
) -> FlightSearch:
    """Find flights between two airports, earliest first, with seats left and lowest price per
    cabin.

    Args:
        origin: Airport code or city, such as "LIS" or "Lisbon".
        destination: Airport code or city, such as "CDG" or "Paris".
        date: Only flights departing that day (local), such as "2026-05-14"; leave it out
            for every upcoming flight of the route.
        cabin: Only show this cabin: "economy", "premium_economy" or "business".
        limit: Maximum number of flights (1-50), such as 20.

    Returns:
        {"origin": ["LIS"], "destination": ["CDG"], "total": 3, "flights": [{"flight_id":
        "fl_0042", "number": "TP 1350", "departs_at": "2026-05-14T07:30", "booking_open": true,
        "cabins": [{"cabin": "economy", "seats_left": 23, "lowest_total": "121.48"}], ...}]}.
    """
    origins, destinations = _airports(origin, "origin"), _airports(destination, "destination")
    day = parse_date(date, "date") if date is not None else None
    route: dict[str, Any] = {"origins": origins, "destinations": destinations}
    if day is not None:  # stored departures are the origin's local times: its local date
        start = dt.datetime.combine(day, dt.time())
        route.update(start=start, end=start + dt.timedelta(1))
    else:
        route.update(since=ctx.now)
    count, matching = _flights_of_route(day is not None)
    if _local(ctx):
        found = _in_instants(ctx, ctx.sql.all(matching, **route, limit=-1), day is None)
        total, rows = len(found), found[:limit]
    else:
        total = ctx.sql.scalar(count, **route) or 0
        rows = ctx.sql.all(matching, **route, limit=limit)
    out = []
    for f in rows:
        if cabin is not None and cabin not in LAYOUTS[f.aircraft]:
            continue
        out.append(_summary(ctx, f, ctx.sql.all(FARES, flight_id=f.id), cabin))
    return {
        "origin": origins,
        "destination": destinations,
        "date": day.isoformat() if day else None,
        "total": total,
        "flights": out,
    }


def _in_instants(ctx: ToolContext, rows: list[Any], upcoming: bool) -> list[Any]:
    """Flights (rows of ``flights``) by departure instant (then id), from -v2: the origins of
    one search can be in different zones. ``upcoming``: only those not departed (the rows
    read from the server's clock as a local time hold them all: no zone is behind UTC)."""
    now = _clock(ctx)
    timed = [(_departs(ctx, f), f.id, f) for f in rows]
    return [f for at, _, f in sorted(timed, key=lambda x: x[:2]) if not upcoming or at >= now]


@tool(
    returns="flight",
    phrasings=["Show me flight {flight_id} and its fares", "What does flight {flight_id} cost?"],
)
def get_flight(ctx: ToolContext, flight_id: FlightRow) -> FlightDetail:
    """Get one flight with every fare (per cabin and fare class) and the fare's rules.

    Args:
        flight_id: The flight, such as "fl_0042" (search_flights finds it).

    Returns:
        {"flight_id": "fl_0042", "number": "TP 1350", "booking_open": true, "cabins": [...],
        "fares": [{"cabin": "economy", "fare_class": "standard", "base_fare": "88.99",
        "taxes": "32.49", "total": "121.48", "changeable": true, "change_fee": "75.00",
        "refundable": false, "refund_if_cancelled": "32.49"}, ...], "currency": "EUR"}.
    """
    f = flight_id
    offers = ctx.sql.all(FARES, flight_id=f.id)
    fares: list[FareOut] = [
        {
            "cabin": x.cabin,
            "fare_class": x.fare_class,
            "base_fare": x.base,
            "taxes": x.taxes,
            "total": x.base + x.taxes,
            "changeable": bool(FARE_RULES[x.fare_class]["changeable"]),
            "change_fee": change_fee(x.fare_class, x.cabin),
            "refundable": bool(FARE_RULES[x.fare_class]["refundable"]),
            "refund_if_cancelled": flight_refund(x.fare_class, x.base, x.taxes),
        }
        for x in offers
    ]
    return {**_summary(ctx, f, offers), "fares": fares, "currency": CURRENCY}


@tool(
    returns="flight",
    phrasings=[
        "Which {cabin} seats are free on flight {flight_id}?",
        "Show the {cabin} seat map of {flight_id}",
    ],
)
def get_seat_map(ctx: ToolContext, flight_id: FlightRow, cabin: Cabin) -> SeatMapOut:
    """List the free seats of one cabin of a flight, front to back, with window and aisle seats.

    Args:
        flight_id: The flight, such as "fl_0042".
        cabin: "economy", "premium_economy" or "business".

    Returns:
        {"flight_id": "fl_0042", "aircraft": "A320", "cabin": "economy", "seats_total": 120,
        "seats_left": 23, "available": ["7A", "7C", "12F", ...], "window": ["7A", "12F"],
        "aisle": ["7C"]}.
    """
    f = flight_id
    if cabin not in LAYOUTS[f.aircraft]:
        raise InvalidArgument(
            f"flight {f.id} is an {f.aircraft}, which has no {cabin} cabin; its cabins are "
            f"{', '.join(LAYOUTS[f.aircraft])}."
        )
    free = _free_seats(ctx, f, cabin)
    return {
        "flight_id": f.id,
        "aircraft": f.aircraft,
        "cabin": cabin,
        "seats_total": len(seat_map(f.aircraft, cabin)),
        "seats_left": len(free),
        "available": free,
        "window": [s for s in free if seat_position(f.aircraft, s) == "window"],
        "aisle": [s for s in free if seat_position(f.aircraft, s) == "aisle"],
    }


def another_flight_of_route(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A flight a booking can move to: another departing flight of its route (the drawn one
    where it is one), never the flight it is on ("quote changing fb_00109 to the same flight"
    asks nothing). None where the route has no other."""
    booking = ctx.sql.first(FLIGHT_BOOKING, id=str(bound.args.get("flight_booking_id", "")))
    if booking is None:
        return None
    old = ctx.sql.one(FLIGHT, id=booking.flight_id)
    others = [
        str(row.id)
        for row in ctx.sql.all(
            OTHER_FLIGHTS_OF_ROUTE,
            origin=old.origin,
            destination=old.destination,
            id=old.id,
            since=ctx.now,
        )
    ]
    drawn = str(bound.args.get("new_flight_id", ""))
    if drawn in others:
        return drawn
    return rng.choice(others) if others else None


@tool(
    returns=("flight_booking", "flight"),
    phrasings=[
        "How much would it cost to move {flight_booking_id} to flight {new_flight_id}?",
        "Quote changing booking {flight_booking_id} to {new_flight_id}",
    ],
    values={"new_flight_id": another_flight_of_route},
)
def quote_flight_change(
    ctx: ToolContext, flight_booking_id: FlightBookingRow, new_flight_id: FlightRow
) -> ChangeQuote:
    """Price moving a flight booking to another flight of the same route (same cabin and fare
    class), without changing anything.

    Args:
        flight_booking_id: The booking, such as "fb_00031" (get_itinerary lists them).
        new_flight_id: The flight to move to, such as "fl_0057" (search_flights finds it).

    Returns:
        {"flight_booking_id": "fb_00031", "to_flight_id": "fl_0057", "change_fee": "75.00",
        "fare_difference_due": "18.00", "residual_refund": "0.00", "amount_due": "93.00",
        "seats_left": 12, ...}.
    """
    return _quote(ctx, flight_booking_id, new_flight_id)


def _quote(ctx: ToolContext, b: Any, new: Any) -> ChangeQuote:
    """The price of moving booking ``b`` to flight ``new`` (rows), every rule checked."""
    old = ctx.sql.one(FLIGHT, id=b.flight_id)
    fare, (fee, extra, residual) = _check_change(ctx, b, old, new)
    return {
        "flight_booking_id": b.id,
        "from_flight_id": b.flight_id,
        "to_flight_id": new.id,
        "to_number": new.number,
        "to_departs_at": _departs_text(ctx, new),
        "cabin": b.cabin,
        "fare_class": b.fare_class,
        "old_fare_total": b.base_fare + b.taxes,
        "new_fare_total": fare.base + fare.taxes,
        "change_fee": fee,
        "fare_difference_due": extra,
        "residual_refund": residual,
        "amount_due": fee + extra,
        "seats_left": len(_free_seats(ctx, new, b.cabin)),
    }


@tool(
    writes=True,
    returns=("flight_booking", "itinerary", "flight"),
    normalise={"seat": "casefold"},
    phrasings=[
        "Book {traveller_id} on flight {flight_id} in {cabin}, {fare_class} fare, seat {seat}, "
        "on itinerary {itinerary_id}",
        "Add flight {flight_id} to trip {itinerary_id} for {traveller_id}: {cabin} "
        "{fare_class}, seat {seat}",
    ],
)
def book_flight(
    ctx: ToolContext,
    itinerary_id: ItineraryRow,
    traveller_id: TravellerRow,
    flight_id: FlightRow,
    cabin: Cabin,
    fare_class: FareClass,
    seat: SeatText,
) -> FlightBooked:
    """Book a seat on a flight for a traveller, in a cabin and fare class, and charge the fare
    to the itinerary. The traveller's loyalty number with the airline is added.

    Args:
        itinerary_id: The trip to add it to, such as "itn_0012".
        traveller_id: Who flies, such as "trv_0007" (any traveller, not only the lead).
        flight_id: The flight, such as "fl_0042" (search_flights finds it).
        cabin: "economy", "premium_economy" or "business".
        fare_class: "basic" (no changes, taxes refunded), "standard" (changes for a fee,
            taxes refunded) or "flex" (free changes, full refund).
        seat: A free seat of that cabin, such as "14C" (get_seat_map lists them).

    Returns:
        {"flight_booking_id": "fb_00112", "seat": "14C", "fare_total": "121.48",
        "amount_paid": "121.48", "itinerary_total_paid": "733.88", "transaction_ids":
        ["txn_00260"], ...}.
    """
    itin, t, f = itinerary_id, traveller_id, flight_id
    place = _seat(seat)
    _active(ctx, itin)
    _require_open(ctx, f, "booked")
    fare = _fare(ctx, f, cabin, fare_class)
    _check_passport(t, f)
    _check_not_on(ctx, t, f)
    _check_connections(ctx, t, f)
    _check_seat(ctx, f, cabin, place)
    cards = ctx.sql.all(LOYALTY_OF, traveller_id=t.id)
    card = next((a.number for a in cards if a.airline == f.airline), None)
    amount = fare.base + fare.taxes
    booking_id = next_id(ctx, FlightBooking.id, "fb", 5)
    ctx.sql.insert(
        FlightBooking,
        id=booking_id,
        itinerary_id=itin.id,
        traveller_id=t.id,
        flight_id=f.id,
        cabin=cabin,
        fare_class=fare_class,
        seat=place,
        base_fare=fare.base,
        taxes=fare.taxes,
        loyalty_number=card,
        changes=0,
        amount_paid=amount,
        refunded=ZERO,
        status="confirmed",
        booked_at=ctx.now,
        cancelled_at=None,
    )
    itin = ctx.sql.update(Itinerary, itin, total_paid=itin.total_paid + amount)
    txn = _txn(
        ctx,
        itin.id,
        "charge",
        amount,
        f"Ticket {f.number} {f.origin}-{f.destination} {f.departs_at:%Y-%m-%d}, {cabin} "
        f"{fare_class}, seat {place}",
        flight=booking_id,
    )
    return {
        **_flight_booking_out(ctx, ctx.sql.one(FLIGHT_BOOKING, id=booking_id)),
        "itinerary_total_paid": itin.total_paid,
        "transaction_ids": [txn],
    }


@tool(
    writes=True,
    returns="flight_booking",
    normalise={"seat": "casefold"},
    phrasings=[
        "Move {flight_booking_id} to seat {seat}",
        "Change the seat of {flight_booking_id} to {seat}",
    ],
    examples={"seat": SEATS},
)
def change_seat(
    ctx: ToolContext, flight_booking_id: FlightBookingRow, seat: SeatText
) -> FlightBookingOut:
    """Move a confirmed flight booking to another free seat of the same cabin (free of charge).

    Args:
        flight_booking_id: The booking, such as "fb_00031".
        seat: A free seat in the booking's cabin, such as "3A" (get_seat_map lists them).

    Returns:
        The booking with its new seat: {"flight_booking_id": "fb_00031", "seat": "3A", ...}.
    """
    b = flight_booking_id
    place = _seat(seat)
    _confirmed(ctx, b, b.id)
    flight = ctx.sql.one(FLIGHT, id=b.flight_id)
    _require_open(ctx, flight, "changed")
    if place == b.seat:
        raise InvalidArgument(f"booking {b.id} already has seat {place}; pick another seat.")
    _check_seat(ctx, flight, b.cabin, place)
    ctx.sql.update(FlightBooking, b, seat=place)
    return _flight_booking_out(ctx, ctx.sql.one(FLIGHT_BOOKING, id=b.id))


@tool(
    writes=True,
    returns=("flight_booking", "flight"),
    normalise={"new_seat": "casefold"},
    phrasings=[
        "Move booking {flight_booking_id} to flight {new_flight_id}, seat {new_seat}",
        "Change {flight_booking_id} to the {new_flight_id} flight instead, seat {new_seat}",
    ],
    examples={"new_seat": SEATS},
    values={"new_flight_id": another_flight_of_route},
)
def change_flight(
    ctx: ToolContext,
    flight_booking_id: FlightBookingRow,
    new_flight_id: FlightRow,
    new_seat: SeatText,
) -> ChangeDone:
    """Move a flight booking to another flight of the same route, same cabin and fare class,
    under its fare's rules: flex is free, standard pays a change fee, basic cannot change. A
    dearer flight costs the fare difference; a cheaper one refunds it only on a flex fare.

    Args:
        flight_booking_id: The booking, such as "fb_00031".
        new_flight_id: The new flight, such as "fl_0057" (same origin and destination).
        new_seat: A free seat of the booking's cabin on the new flight, such as "15D".

    Returns:
        {"flight_booking_id": "fb_00031", "flight_id": "fl_0057", "seat": "15D",
        "change_fee_charged": "75.00", "fare_difference_charged": "18.00",
        "residual_refunded": "0.00", "amount_paid": "214.48", "transaction_ids":
        ["txn_00261", "txn_00262"], ...}.
    """
    b, new = flight_booking_id, new_flight_id
    place = _seat(new_seat)
    old = ctx.sql.one(FLIGHT, id=b.flight_id)
    fare, cost = _check_change(ctx, b, old, new)
    _check_seat(ctx, new, b.cabin, place)
    return _change(ctx, b, old, new, place, fare, cost)


def _change(
    ctx: ToolContext,
    b: Any,
    old: Any,
    new: Any,
    place: str,
    fare: Any,
    cost: tuple[Decimal, Decimal, Decimal],
) -> ChangeDone:
    """Move booking ``b`` from flight ``old`` to ``new``, seat ``place``, at ``fare`` (a row
    of ``fares``), charging ``cost`` (fee, fare difference, residual refunded): every rule
    already checked."""
    fee, extra, residual = cost
    itin = ctx.sql.one(ITINERARY, id=b.itinerary_id)
    route = f"{old.number} {old.departs_at:%Y-%m-%d %H:%M} to {new.number} {new.departs_at:%Y-%m-%d %H:%M}"
    itin = ctx.sql.update(Itinerary, itin, total_paid=itin.total_paid + fee + extra - residual)
    ctx.sql.update(
        FlightBooking,
        b,
        flight_id=new.id,
        seat=place,
        base_fare=fare.base,
        taxes=fare.taxes,
        changes=b.changes + 1,
        amount_paid=b.amount_paid + fee + extra - residual,
        refunded=b.refunded + residual,
    )
    ids = []
    if fee > 0:
        ids.append(_txn(ctx, itin.id, "change_fee", fee, f"Change fee: {route}", flight=b.id))
    if extra > 0:
        ids.append(
            _txn(ctx, itin.id, "fare_difference", extra, f"Fare difference: {route}", flight=b.id)
        )
    if residual > 0:
        ids.append(
            _txn(
                ctx, itin.id, "refund", residual, f"Fare difference refunded: {route}", flight=b.id
            )
        )
    return {
        **_flight_booking_out(ctx, ctx.sql.one(FLIGHT_BOOKING, id=b.id)),
        "change_fee_charged": fee,
        "fare_difference_charged": extra,
        "residual_refunded": residual,
        "itinerary_total_paid": itin.total_paid,
        "transaction_ids": ids,
    }


@tool(
    writes=True,
    inverse_of="book_flight",
    destructive=True,
    returns=("flight_booking", "itinerary"),
    phrasings=[
        "Cancel flight booking {flight_booking_id}",
        "Cancel the ticket {flight_booking_id}",
    ],
)
def cancel_flight_booking(ctx: ToolContext, flight_booking_id: FlightBookingRow) -> Cancelled:
    """Cancel a flight booking and refund by its fare: flex refunds the whole fare, standard
    and basic only the taxes (change fees are never refunded). Frees the seat.

    Args:
        flight_booking_id: The booking, such as "fb_00031".

    Returns:
        {"booking_id": "fb_00031", "status": "cancelled", "refund": "32.49", "refund_rule":
        "standard fare: only the taxes are refunded", "itinerary_total_paid": "580.91", ...}.
    """
    b = flight_booking_id
    _confirmed(ctx, b, b.id)
    _require_open(ctx, ctx.sql.one(FLIGHT, id=b.flight_id), "cancelled")
    return _cancel_flight(ctx, b)
