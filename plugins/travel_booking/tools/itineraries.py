"""Itinerary tools: listing, reading, creating and cancelling a whole trip."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from prove_gym.server import ToolContext, next_id
from prove_gym.server.tool import tool

from ..models import CURRENCY, ZERO, Itinerary
from ._common import (
    _active,
    _broken,
    _cancel_flight,
    _cancel_hotel,
    _clock_text,
    _departs,
    _departs_text,
    _flight_booking_out,
    _hotel_booking_out,
    _name,
    _one_line,
    _open,
    _stay_started,
)
from .args import ItineraryRow, TravellerRow
from .queries import (
    FLIGHT_BOOKINGS_OF,
    HOTEL_BOOKINGS_OF,
    ITINERARY,
    LEDGER,
    TRAVELLER,
    _itineraries_of,
)
from .results import Cancelled, ItineraryCancelled, ItineraryDetail, ItineraryList, ItinerarySummary


def _bookings(ctx: ToolContext, itinerary_id: str) -> tuple[list[Any], list[Any]]:
    """An itinerary's flight bookings (FLIGHT_BOOKING rows) and hotel bookings
    (HOTEL_BOOKING rows), each by id."""
    return (
        ctx.sql.all(FLIGHT_BOOKINGS_OF, itinerary_id=itinerary_id),
        ctx.sql.all(HOTEL_BOOKINGS_OF, itinerary_id=itinerary_id),
    )


def _itinerary_summary(
    ctx: ToolContext, itin: Any, flights: list[Any], hotels: list[Any]
) -> ItinerarySummary:
    lead = ctx.sql.one(TRAVELLER, id=itin.traveller_id)
    confirmed = [b for b in flights if b.status == "confirmed"]
    departures = sorted((_departs(ctx, b), b.id, b) for b in confirmed)
    return {
        "itinerary_id": itin.id,
        "name": itin.name,
        "lead_traveller_id": lead.id,
        "lead_traveller_name": _name(lead),
        "status": itin.status,
        "total_paid": itin.total_paid,
        "confirmed_flights": len(confirmed),
        "confirmed_hotels": sum(1 for h in hotels if h.status == "confirmed"),
        "first_departure": _departs_text(ctx, departures[0][2]) if departures else None,
        "created_at": _clock_text(ctx, itin.created_at) or "",
    }


def _itinerary_detail(ctx: ToolContext, itin: Any) -> ItineraryDetail:
    booked_flights, booked_hotels = _bookings(ctx, itin.id)
    flights = [_flight_booking_out(ctx, b) for b in booked_flights]
    hotels = [_hotel_booking_out(ctx, b) for b in booked_hotels]
    cancellable = itin.status == "active" and _blocker(ctx, booked_flights, booked_hotels) is None
    refunds = [f["refund_if_cancelled"] for f in flights] + [
        h["refund_if_cancelled"] for h in hotels
    ]
    return {
        **_itinerary_summary(ctx, itin, booked_flights, booked_hotels),
        "currency": CURRENCY,
        "flights": flights,
        "hotels": hotels,
        "ledger": [
            {
                "transaction_id": t.id,
                "booking_id": t.flight_booking_id or t.hotel_booking_id,
                "kind": t.kind,
                "amount": t.amount,
                "memo": t.memo,
                "created_at": _clock_text(ctx, t.created_at) or "",
            }
            for t in ctx.sql.all(LEDGER, itinerary_id=itin.id)
        ],
        "refund_if_cancelled": sum((r for r in refunds if r is not None), ZERO)
        if cancellable
        else None,
    }


def _blocker(ctx: ToolContext, flights: list[Any], hotels: list[Any]) -> str | None:
    """Why an itinerary with these bookings (FLIGHT_BOOKING and HOTEL_BOOKING rows) cannot
    be cancelled as a whole, or ``None``."""
    for b in flights:
        if b.status == "confirmed" and not _open(ctx, b):
            return (
                f"flight booking {b.id} (flight {b.number} on "
                f"{_departs_text(ctx, b)}) has departed or closes within 2 hours"
            )
    for h in hotels:
        if h.status == "confirmed" and _stay_started(ctx, h):
            return f"hotel booking {h.id} at {h.hotel_name} started on {h.check_in.isoformat()}"
    return None


TRIP_NAMES = ["Lisbon offsite", "Paris client visit", "Summer holiday", "Berlin trade fair"]


@tool(
    returns="itinerary",
    phrasings=["Show the trips of {traveller_id}", "List {traveller_id}'s {status} itineraries"],
)
def list_itineraries(
    ctx: ToolContext,
    traveller_id: TravellerRow,
    status: Literal["active", "cancelled"] | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 20,
) -> ItineraryList:
    """List the itineraries a traveller leads or flies on, newest first.

    Args:
        traveller_id: The traveller, such as "trv_0007" (find_travellers finds them).
        status: Only "active" or only "cancelled" itineraries.
        limit: Maximum number of itineraries (1-50), such as 20.

    Returns:
        {"traveller_id": "trv_0007", "total": 2, "itineraries": [{"itinerary_id": "itn_0012",
        "name": "Paris client visit", "status": "active", "total_paid": "612.40",
        "confirmed_flights": 2, "confirmed_hotels": 1, ...}]}.
    """
    t = traveller_id
    which: dict[str, Any] = {"traveller_id": t.id}
    if status is not None:
        which["status"] = status
    count, matching = _itineraries_of(status is not None)
    total = ctx.sql.scalar(count, **which) or 0
    rows = ctx.sql.all(matching, **which, limit=limit)
    return {
        "traveller_id": t.id,
        "total": total,
        "itineraries": [_itinerary_summary(ctx, i, *_bookings(ctx, i.id)) for i in rows],
    }


@tool(
    returns=("itinerary", "flight_booking", "hotel_booking", "flight", "hotel", "traveller"),
    phrasings=["Show me itinerary {itinerary_id}", "What is booked on trip {itinerary_id}?"],
)
def get_itinerary(ctx: ToolContext, itinerary_id: ItineraryRow) -> ItineraryDetail:
    """Get an itinerary with its flight and hotel bookings, what each would refund if
    cancelled now, and its ledger of payments and refunds.

    Args:
        itinerary_id: The itinerary, such as "itn_0012" (list_itineraries finds it).

    Returns:
        {"itinerary_id": "itn_0012", "status": "active", "total_paid": "612.40", "flights":
        [{"flight_booking_id": "fb_00031", "number": "TP 1350", "seat": "14C", "fare_class":
        "standard", "changeable": true, "change_fee": "75.00", "refund_if_cancelled":
        "32.49", ...}], "hotels": [{"hotel_booking_id": "hb_00009", "rate_plan": "flexible",
        "refund_if_cancelled": "387.00", ...}], "ledger": [{"transaction_id": "txn_00102",
        "kind": "charge", "amount": "121.48", ...}], "refund_if_cancelled": "419.49"}.
    """
    return _itinerary_detail(ctx, itinerary_id)


@tool(
    writes=True,
    returns="itinerary",
    phrasings=[
        "Start a new trip called {name} for {traveller_id}",
        "Create itinerary {name} with {traveller_id} as lead traveller",
    ],
    examples={"name": TRIP_NAMES},
)
def create_itinerary(
    ctx: ToolContext, traveller_id: TravellerRow, name: Annotated[str, Field(max_length=80)]
) -> ItineraryDetail:
    """Create an empty itinerary (a trip) led by a traveller; book flights and hotels into it.

    Args:
        traveller_id: The lead traveller, such as "trv_0007".
        name: What the trip is, such as "Lisbon offsite".

    Returns:
        {"itinerary_id": "itn_0036", "name": "Lisbon offsite", "status": "active",
        "total_paid": "0.00", "flights": [], "hotels": [], ...}.
    """
    itinerary_id = next_id(ctx, Itinerary.id, "itn", 4)
    ctx.sql.insert(
        Itinerary,
        id=itinerary_id,
        traveller_id=traveller_id.id,
        name=_one_line(name, "name"),
        status="active",
        total_paid=ZERO,
        created_at=ctx.now,
        cancelled_at=None,
    )
    return _itinerary_detail(ctx, ctx.sql.one(ITINERARY, id=itinerary_id))


@tool(
    writes=True,
    inverse_of=("create_itinerary", "book_flight", "book_hotel"),
    destructive=True,
    returns=("itinerary", "flight_booking", "hotel_booking"),
    phrasings=[
        "Cancel the whole trip {itinerary_id}",
        "Cancel itinerary {itinerary_id} and everything on it",
    ],
)
def cancel_itinerary(ctx: ToolContext, itinerary_id: ItineraryRow) -> ItineraryCancelled:
    """Cancel an itinerary and every confirmed booking on it, each refunded by its own rules.
    Refused (nothing cancelled) when any of its travel has already started.

    Args:
        itinerary_id: The itinerary, such as "itn_0012".

    Returns:
        {"itinerary_id": "itn_0012", "status": "cancelled", "cancelled": [{"booking_id":
        "fb_00031", "refund": "32.49", ...}, ...], "refund_total": "419.49", "total_paid":
        "192.91"}.
    """
    itin = itinerary_id
    _active(ctx, itin)
    flights, hotels = _bookings(ctx, itin.id)
    why = _blocker(ctx, flights, hotels)
    if why is not None:
        raise _broken(
            "travel_started",
            f"itinerary {itin.id} cannot be cancelled as a whole: {why}. Nothing was "
            "cancelled; cancel its other bookings one by one instead.",
        )
    done: list[Cancelled] = []
    for b in flights:
        if b.status == "confirmed":
            done.append(_cancel_flight(ctx, b))
    for h in hotels:
        if h.status == "confirmed":
            done.append(_cancel_hotel(ctx, h))
    itin = ctx.sql.one(ITINERARY, id=itin.id)  # with the refunds taken off its total_paid
    itin = ctx.sql.update(Itinerary, itin, status="cancelled", cancelled_at=ctx.now)
    return {
        "itinerary_id": itin.id,
        "status": itin.status,
        "cancelled": done,
        "refund_total": sum((c["refund"] for c in done), ZERO),
        "total_paid": itin.total_paid,
    }
