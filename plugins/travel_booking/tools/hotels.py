"""Hotel tools: search, availability and rates for a stay, booking and cancellation."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

from prove_gym.server import InvalidArgument, ToolContext, next_id, parse_date, search_pattern
from prove_gym.server.tool import tool

from ..models import CURRENCY, MAX_NIGHTS, ZERO, HotelBooking, Itinerary, RoomNight, night_price
from ._common import (
    _active,
    _broken,
    _cancel_hotel,
    _confirmed,
    _day_ahead,
    _hotel_booking_out,
    _stay_started,
    _taken,
    _txn,
)
from .args import (
    DateText,
    Guests,
    HotelBookingRow,
    HotelRow,
    ItineraryRow,
    Place,
    RatePlan,
    RoomRow,
)
from .queries import (
    HOTEL,
    HOTEL_BOOKING,
    HOTEL_CITIES,
    HOTEL_OFFERS_IN_CITY,
    RATES,
    ROOM_TYPE,
    ROOM_TYPES_OF,
    ROOMS_OF_TYPE,
    TAKEN_NIGHTS,
    TAKEN_ROOMS,
)
from .results import Cancelled, HotelAvailability, HotelBooked, HotelBrief, HotelSearch, RoomTypeOut


def _stay(ctx: ToolContext, check_in: str, check_out: str) -> list[dt.date]:
    """The nights of a stay, checked: today or later, at least 1 and at most 14 nights."""
    start, end = parse_date(check_in, "check_in"), parse_date(check_out, "check_out")
    today = ctx.now.date()
    if start < today:
        raise InvalidArgument(
            f"check_in {start.isoformat()} is in the past (today is {today.isoformat()}); "
            "choose today or a later date."
        )
    nights = (end - start).days
    if nights < 1 or nights > MAX_NIGHTS:
        raise InvalidArgument(
            f"check_out must be 1 to {MAX_NIGHTS} nights after check_in; got "
            f"{start.isoformat()} to {end.isoformat()} ({nights} nights)."
        )
    return [start + dt.timedelta(days=n) for n in range(nights)]


def _rates(ctx: ToolContext, room_type_id: str, nights: list[dt.date]) -> dict[dt.date, Decimal]:
    found = ctx.sql.all(RATES, room_type_id=room_type_id, first=nights[0], last=nights[-1])
    return {r.night: r.rate for r in found}


def _taken_nights(ctx: ToolContext, room_ids: list[str], nights: list[dt.date]) -> set[str]:
    """Rooms among ``room_ids`` that are taken on any of ``nights``."""
    return set(ctx.sql.scalars(TAKEN_ROOMS, room_ids=room_ids, first=nights[0], last=nights[-1]))


def _room_types(ctx: ToolContext, hotel_id: str, nights: list[dt.date]) -> list[RoomTypeOut]:
    out: list[RoomTypeOut] = []
    for rt in ctx.sql.all(ROOM_TYPES_OF, hotel_id=hotel_id):
        rates = _rates(ctx, rt.id, nights)
        on_sale = len(rates) == len(nights)
        its_rooms = ctx.sql.all(ROOMS_OF_TYPE, room_type_id=rt.id)
        busy = _taken_nights(ctx, [r.id for r in its_rooms], nights)
        free = [r for r in its_rooms if r.id not in busy] if on_sale else []
        out.append(
            {
                "room_type": rt.name,
                "beds": rt.beds,
                "max_guests": rt.max_guests,
                "on_sale": on_sale,
                "nightly_rates": [
                    {"night": n.isoformat(), "rate": r} for n, r in sorted(rates.items())
                ],
                "total_flexible": sum((night_price(r, "flexible") for r in rates.values()), ZERO)
                if on_sale
                else None,
                "total_non_refundable": sum(
                    (night_price(r, "non_refundable") for r in rates.values()), ZERO
                )
                if on_sale
                else None,
                "rooms_available": [{"room_id": r.id, "number": r.number} for r in free],
            }
        )
    return out


def _stay_end(ctx: ToolContext, rng: random.Random) -> str:
    return (ctx.now + dt.timedelta(days=rng.choice([12, 17, 24]))).date().isoformat()


def _city(ctx: ToolContext, rng: random.Random) -> str:
    cities = sorted(set(ctx.sql.scalars(HOTEL_CITIES)))
    return rng.choice(cities)


@tool(
    returns="hotel",
    phrasings=[
        "Find a hotel in {city} from {check_in} to {check_out}",
        "Hotels in {city} for {guests} guests, {check_in} to {check_out}",
    ],
    examples={"city": _city, "check_in": _day_ahead, "check_out": _stay_end, "guests": [1, 2]},
)
def search_hotels(
    ctx: ToolContext,
    city: Place,
    check_in: DateText,
    check_out: DateText,
    guests: Guests = 1,
) -> HotelSearch:
    """Find hotels in a city with rooms free for every night of a stay, cheapest first.

    Args:
        city: City name, such as "Lisbon" or "Paris".
        check_in: Arrival date, today or later, such as "2026-05-14".
        check_out: Departure date, 1-14 nights later, such as "2026-05-17".
        guests: How many people share the room (1-6), such as 2.

    Returns:
        {"city": "Lisbon", "nights": 3, "hotels": [{"hotel_id": "htl_004", "name": "Casa
        Ferreira", "stars": 4, "rooms_available": 5, "lowest_total": "387.00"}, ...]};
        lowest_total is the flexible rate for the whole stay (null when nothing is free).
    """
    nights = _stay(ctx, check_in, check_out)
    text = " ".join(city.split())
    offers = ctx.sql.all(
        HOTEL_OFFERS_IN_CITY,
        pattern=search_pattern(text),
        guests=guests,
        first=nights[0],
        last=nights[-1],
        nights=len(nights),
    )
    out: list[HotelBrief] = [
        {
            "hotel_id": h.id,
            "name": h.name,
            "city": h.city,
            "stars": h.stars,
            "address": h.address,
            "rooms_available": h.rooms_available,
            "lowest_total": h.lowest_total,
        }
        for h in offers
    ]
    return {
        "city": text,
        "check_in": nights[0].isoformat(),
        "check_out": (nights[-1] + dt.timedelta(days=1)).isoformat(),
        "nights": len(nights),
        "guests": guests,
        "currency": CURRENCY,
        "hotels": out,
    }


@tool(
    returns=("hotel", "room"),
    phrasings=[
        "Which rooms does {hotel_id} have free from {check_in} to {check_out}?",
        "What does a stay at {hotel_id} from {check_in} to {check_out} cost?",
    ],
    examples={"check_in": _day_ahead, "check_out": _stay_end},
)
def get_hotel_availability(
    ctx: ToolContext, hotel_id: HotelRow, check_in: DateText, check_out: DateText
) -> HotelAvailability:
    """Show a hotel's room types for a stay: nightly rates, totals per rate plan, free rooms.

    Args:
        hotel_id: The hotel, such as "htl_004" (search_hotels finds it).
        check_in: Arrival date, today or later, such as "2026-05-14".
        check_out: Departure date, 1-14 nights later, such as "2026-05-17".

    Returns:
        {"hotel_id": "htl_004", "nights": 3, "room_types": [{"room_type": "Superior King",
        "max_guests": 2, "on_sale": true, "nightly_rates": [{"night": "2026-05-14", "rate":
        "129.00"}, ...], "total_flexible": "387.00", "total_non_refundable": "348.30",
        "rooms_available": [{"room_id": "rm_0051", "number": "402"}]}, ...]}.
    """
    h = hotel_id
    nights = _stay(ctx, check_in, check_out)
    return {
        "hotel_id": h.id,
        "name": h.name,
        "city": h.city,
        "stars": h.stars,
        "address": h.address,
        "check_in": nights[0].isoformat(),
        "check_out": (nights[-1] + dt.timedelta(days=1)).isoformat(),
        "nights": len(nights),
        "currency": CURRENCY,
        "room_types": _room_types(ctx, h.id, nights),
    }


@tool(
    writes=True,
    returns=("hotel_booking", "itinerary", "room"),
    phrasings=[
        "Book room {room_id} from {check_in} to {check_out} for {guests} guests on "
        "{itinerary_id}, {rate_plan} rate",
        "Reserve {room_id} on trip {itinerary_id}, {check_in} to {check_out}, {rate_plan}",
    ],
    examples={"check_in": _day_ahead, "check_out": _stay_end, "guests": [1, 2]},
)
def book_hotel(
    ctx: ToolContext,
    itinerary_id: ItineraryRow,
    room_id: RoomRow,
    check_in: DateText,
    check_out: DateText,
    guests: Guests,
    rate_plan: RatePlan,
) -> HotelBooked:
    """Book a hotel room for every night from check_in to check_out and charge the stay to the
    itinerary.

    Args:
        itinerary_id: The trip to add it to, such as "itn_0012".
        room_id: A room free for every night, such as "rm_0051" (get_hotel_availability
            lists them).
        check_in: Arrival date, today or later, such as "2026-05-14".
        check_out: Departure date, 1-14 nights later, such as "2026-05-17".
        guests: How many people stay (1-6), at most the room's max_guests, such as 2.
        rate_plan: "flexible" (free cancellation until 48 hours before check-in) or
            "non_refundable" (10% cheaper, no refund).

    Returns:
        {"hotel_booking_id": "hb_00031", "total": "387.00", "nightly_prices": [{"night":
        "2026-05-14", "rate": "129.00"}, ...], "free_cancellation_until": "2026-05-12T15:00",
        "itinerary_total_paid": "999.88", "transaction_ids": ["txn_00263"], ...}.
    """
    itin, room = itinerary_id, room_id
    _active(ctx, itin)
    nights = _stay(ctx, check_in, check_out)
    rates = _rates(ctx, room.room_type_id, nights)
    missing = [n.isoformat() for n in nights if n not in rates]
    if missing:
        raise _broken(
            "dates_not_on_sale",
            f"room {room.id} has no rate for {', '.join(missing[:5])}; those nights are not on "
            "sale yet. Choose earlier dates.",
        )
    rt = ctx.sql.one(ROOM_TYPE, id=room.room_type_id)
    if guests > rt.max_guests:
        raise _broken(
            "room_capacity",
            f"room {room.id} ({rt.name}) sleeps at most {rt.max_guests}, not {guests}. Pick a "
            "larger room type or book two rooms.",
        )
    busy = ctx.sql.scalars(TAKEN_NIGHTS, room_id=room.id, first=nights[0], last=nights[-1])
    if busy:
        siblings = [r.id for r in ctx.sql.all(ROOMS_OF_TYPE, room_type_id=rt.id) if r.id != room.id]
        taken = _taken_nights(ctx, siblings, nights) if siblings else set()
        free = [r for r in siblings if r not in taken]
        hint = (
            f"Free {rt.name} rooms for these nights: {', '.join(free[:3])}."
            if free
            else "No other room of this type is free; try other dates or another room type."
        )
        raise _taken(
            "room_unavailable",
            f"room {room.id} is already taken on {', '.join(n.isoformat() for n in busy[:5])}. "
            + hint,
        )
    prices = [night_price(rates[n], rate_plan) for n in nights]
    total = sum(prices, ZERO)
    hotel = ctx.sql.one(HOTEL, id=room.hotel_id)
    booking_id = next_id(ctx, HotelBooking.id, "hb", 5)
    ctx.sql.insert(
        HotelBooking,
        id=booking_id,
        itinerary_id=itin.id,
        hotel_id=hotel.id,
        room_id=room.id,
        check_in=nights[0],
        check_out=nights[-1] + dt.timedelta(days=1),
        guests=guests,
        rate_plan=rate_plan,
        total=total,
        first_night=prices[0],
        amount_paid=total,
        refunded=ZERO,
        status="confirmed",
        booked_at=ctx.now,
        cancelled_at=None,
    )
    itin = ctx.sql.update(Itinerary, itin, total_paid=itin.total_paid + total)
    ctx.sql.insert_many(
        RoomNight,
        [{"room_id": room.id, "night": n, "hotel_booking_id": booking_id} for n in nights],
    )
    txn = _txn(
        ctx,
        itin.id,
        "charge",
        total,
        f"{hotel.name}, room {room.number}, {len(nights)} nights from {nights[0].isoformat()} "
        f"({rate_plan})",
        hotel=booking_id,
    )
    return {
        **_hotel_booking_out(ctx, ctx.sql.one(HOTEL_BOOKING, id=booking_id)),
        "nightly_prices": [
            {"night": n.isoformat(), "rate": p} for n, p in zip(nights, prices, strict=True)
        ],
        "itinerary_total_paid": itin.total_paid,
        "transaction_ids": [txn],
    }


@tool(
    writes=True,
    inverse_of="book_hotel",
    destructive=True,
    returns=("hotel_booking", "itinerary"),
    phrasings=[
        "Cancel hotel booking {hotel_booking_id}",
        "Cancel the hotel stay {hotel_booking_id}",
    ],
)
def cancel_hotel_booking(ctx: ToolContext, hotel_booking_id: HotelBookingRow) -> Cancelled:
    """Cancel a hotel booking and free its room nights. A flexible rate refunds everything
    until 48 hours before check-in (15:00), then all but the first night; non_refundable
    refunds nothing.

    Args:
        hotel_booking_id: The booking, such as "hb_00009".

    Returns:
        {"booking_id": "hb_00009", "status": "cancelled", "refund": "387.00", "refund_rule":
        "flexible rate cancelled 48 hours or more before check-in: refunded in full", ...}.
    """
    b = hotel_booking_id
    _confirmed(ctx, b, b.id)
    if _stay_started(ctx, b):
        raise _broken(
            "stay_started",
            f"booking {b.id} checked in on {b.check_in.isoformat()} at 15:00; a started stay "
            "cannot be cancelled here. The traveller must arrange an early departure with the "
            "hotel.",
        )
    return _cancel_hotel(ctx, b)
