"""The travel_booking server's 20 tools. Docstrings are what the model reads: keep examples
concrete.

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
import functools
import random
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import String, and_, bindparam, case, delete, func, or_, select, type_coerce
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.elements import Label

from prove_gym.server import (
    Conflict,
    Entity,
    InvalidArgument,
    Money,
    PreconditionFailed,
    Query,
    Record,
    Server,
    ToolContext,
    TypedDict,
    contains,
    next_id,
    parse_date,
    search_pattern,
    stable_int,
)

from .models import (
    AIRLINES,
    AIRPORTS,
    CABINS,
    CURRENCY,
    CUTOFF,
    FARE_RULES,
    LAYOUTS,
    MAX_NIGHTS,
    PASSPORT_MARGIN_DAYS,
    ZERO,
    Base,
    Fare,
    Flight,
    FlightBooking,
    Hotel,
    HotelBooking,
    Itinerary,
    LoyaltyAccount,
    Room,
    RoomNight,
    RoomRate,
    RoomType,
    Transaction,
    Traveller,
    change_cost,
    change_fee,
    flight_refund,
    free_cancel_until,
    hotel_refund,
    is_international,
    night_price,
    passport_valid_for,
    seat_map,
    seat_position,
)
from .sampler import sample_travel_booking

server = Server(
    "travel_booking",
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.0.0",
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
)

# Rows: the core looks the id up before the tool runs (not_found hints: see the entities below).
FlightRow = Annotated[Record[Flight], Entity("flight")]
TravellerRow = Annotated[Record[Traveller], Entity("traveller")]
ItineraryRow = Annotated[Record[Itinerary], Entity("itinerary")]
FlightBookingRow = Annotated[Record[FlightBooking], Entity("flight_booking")]
HotelRow = Annotated[Record[Hotel], Entity("hotel")]
RoomRow = Annotated[Record[Room], Entity("room")]
HotelBookingRow = Annotated[Record[HotelBooking], Entity("hotel_booking")]

Cabin = Literal["economy", "premium_economy", "business"]
FareClass = Literal["basic", "standard", "flex"]
RatePlan = Literal["flexible", "non_refundable"]
Airline = Literal["TP", "IB", "AF", "BA", "LH", "AZ", "KL", "SK"]
Place = Annotated[str, Field(min_length=2, max_length=60)]
DateText = Annotated[str, Field(min_length=8, max_length=32)]
SeatText = Annotated[str, Field(min_length=2, max_length=4, pattern=r"^\s*\d{1,2}[A-Fa-f]\s*$")]
SearchText = Annotated[str, Field(max_length=200)]
Name = Annotated[str, Field(min_length=1, max_length=60)]
Guests = Annotated[int, Field(ge=1, le=6)]

RULES: dict[str, str] = {
    "departure_cutoff": "Flight bookings, changes and cancellations close 2 hours before "
    "departure; a departed flight cannot be booked, changed or cancelled.",
    "fare_not_offered": "A fare class is sold only in the cabins that offer it (business has "
    "no basic fare; not every aircraft has a premium_economy cabin).",
    "cabin_full": "A cabin with no free seat cannot be booked.",
    "seat_taken": "A seat holds one passenger: a seat sold to someone else cannot be booked.",
    "seat_not_in_cabin": "A seat must be in the booked cabin of the flight's aircraft.",
    "passport_validity": f"A passport must be valid on the day of departure and, for an "
    f"international flight, {PASSPORT_MARGIN_DAYS} days beyond it.",
    "already_on_flight": "A traveller holds at most one confirmed booking per flight.",
    "itinerary_cancelled": "A cancelled itinerary takes no new bookings.",
    "booking_cancelled": "A cancelled booking cannot be changed or cancelled again.",
    "fare_not_changeable": "A basic fare cannot move to another flight.",
    "change_same_route": "A flight booking changes only to another flight of the same "
    "origin and destination.",
    "room_unavailable": "A room night holds one booking: nights already taken cannot be booked.",
    "room_capacity": "A room holds at most its room type's max_guests.",
    "dates_not_on_sale": "Only nights with a published rate can be booked.",
    "stay_started": "A hotel booking cannot be cancelled once check-in day's 15:00 has passed.",
    "travel_started": "An itinerary whose travel has started cannot be cancelled as a whole.",
    "email_taken": "A traveller's email belongs to one traveller.",
    "loyalty_already_registered": "A traveller has one loyalty number per airline.",
}


# ----------------------------------------------------------------- results
class CabinBrief(TypedDict):
    cabin: str
    seats_left: int
    lowest_total: Decimal


class FlightSummary(TypedDict):
    flight_id: str
    number: str
    airline: str
    origin: str
    destination: str
    departs_at: str
    arrives_at: str
    duration_minutes: int
    aircraft: str
    international: bool
    booking_open: bool
    cabins: list[CabinBrief]


class FlightSearch(TypedDict):
    origin: list[str]
    destination: list[str]
    date: str | None
    total: int
    flights: list[FlightSummary]


class FareOut(TypedDict):
    cabin: str
    fare_class: str
    base_fare: Decimal
    taxes: Decimal
    total: Decimal
    changeable: bool
    change_fee: Decimal | None
    refundable: bool
    refund_if_cancelled: Decimal


class FlightDetail(FlightSummary):
    fares: list[FareOut]
    currency: str


class SeatMapOut(TypedDict):
    flight_id: str
    aircraft: str
    cabin: str
    seats_total: int
    seats_left: int
    available: list[str]
    window: list[str]
    aisle: list[str]


class HotelBrief(TypedDict):
    hotel_id: str
    name: str
    city: str
    stars: int
    address: str
    rooms_available: int
    lowest_total: Decimal | None


class HotelSearch(TypedDict):
    city: str
    check_in: str
    check_out: str
    nights: int
    guests: int
    currency: str
    hotels: list[HotelBrief]


class NightRate(TypedDict):
    night: str
    rate: Decimal


class RoomBrief(TypedDict):
    room_id: str
    number: str


class RoomTypeOut(TypedDict):
    room_type: str
    beds: str
    max_guests: int
    on_sale: bool
    nightly_rates: list[NightRate]
    total_flexible: Decimal | None
    total_non_refundable: Decimal | None
    rooms_available: list[RoomBrief]


class HotelAvailability(TypedDict):
    hotel_id: str
    name: str
    city: str
    stars: int
    address: str
    check_in: str
    check_out: str
    nights: int
    currency: str
    room_types: list[RoomTypeOut]


class LoyaltyOut(TypedDict):
    airline: str
    airline_name: str
    number: str


class TravellerOut(TypedDict):
    traveller_id: str
    name: str
    email: str
    date_of_birth: str
    nationality: str
    passport_number: str
    passport_expiry: str
    loyalty: list[LoyaltyOut]


class LoyaltyAdded(TravellerOut):
    bookings_updated: list[str]


class FlightBookingOut(TypedDict):
    flight_booking_id: str
    itinerary_id: str
    traveller_id: str
    traveller_name: str
    flight_id: str
    number: str
    origin: str
    destination: str
    departs_at: str
    cabin: str
    fare_class: str
    seat: str
    base_fare: Decimal
    taxes: Decimal
    fare_total: Decimal
    amount_paid: Decimal
    refunded: Decimal
    loyalty_number: str | None
    changes: int
    status: str
    changeable: bool
    change_fee: Decimal | None
    refund_if_cancelled: Decimal | None


class HotelBookingOut(TypedDict):
    hotel_booking_id: str
    itinerary_id: str
    hotel_id: str
    hotel_name: str
    room_id: str
    room_number: str
    room_type: str
    check_in: str
    check_out: str
    nights: int
    guests: int
    rate_plan: str
    total: Decimal
    amount_paid: Decimal
    refunded: Decimal
    status: str
    free_cancellation_until: str | None
    refund_if_cancelled: Decimal | None


class LedgerLine(TypedDict):
    transaction_id: str
    booking_id: str | None
    kind: str
    amount: Decimal
    memo: str
    created_at: str


class ItinerarySummary(TypedDict):
    itinerary_id: str
    name: str
    lead_traveller_id: str
    lead_traveller_name: str
    status: str
    total_paid: Decimal
    confirmed_flights: int
    confirmed_hotels: int
    first_departure: str | None
    created_at: str


class ItineraryList(TypedDict):
    traveller_id: str
    total: int
    itineraries: list[ItinerarySummary]


class ItineraryDetail(ItinerarySummary):
    currency: str
    flights: list[FlightBookingOut]
    hotels: list[HotelBookingOut]
    ledger: list[LedgerLine]
    refund_if_cancelled: Decimal | None


class FlightBooked(FlightBookingOut):
    itinerary_total_paid: Decimal
    transaction_ids: list[str]


class HotelBooked(HotelBookingOut):
    nightly_prices: list[NightRate]
    itinerary_total_paid: Decimal
    transaction_ids: list[str]


class ChangeQuote(TypedDict):
    flight_booking_id: str
    from_flight_id: str
    to_flight_id: str
    to_number: str
    to_departs_at: str
    cabin: str
    fare_class: str
    old_fare_total: Decimal
    new_fare_total: Decimal
    change_fee: Decimal
    fare_difference_due: Decimal
    residual_refund: Decimal
    amount_due: Decimal
    seats_left: int


class ChangeDone(FlightBookingOut):
    change_fee_charged: Decimal
    fare_difference_charged: Decimal
    residual_refunded: Decimal
    itinerary_total_paid: Decimal
    transaction_ids: list[str]


class Cancelled(TypedDict):
    booking_id: str
    itinerary_id: str
    status: str
    paid_before: Decimal
    refund: Decimal
    refund_rule: str
    amount_paid: Decimal
    itinerary_total_paid: Decimal
    transaction_ids: list[str]


class ItineraryCancelled(TypedDict):
    itinerary_id: str
    status: str
    cancelled: list[Cancelled]
    refund_total: Decimal
    total_paid: Decimal


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
# Rows are named tuples typed as the ORM types them; lists are ordered as the models'
# relationships order them (Flight.fares by Fare.id, Itinerary.flights by FlightBooking.id, ...).
flights_t, fares_t, travellers_t = Flight.__table__, Fare.__table__, Traveller.__table__
hotels_t, room_types_t, rooms_t = Hotel.__table__, RoomType.__table__, Room.__table__
itineraries_t, flight_bookings_t = Itinerary.__table__, FlightBooking.__table__
hotel_bookings_t = HotelBooking.__table__
FLIGHT = Query(select(flights_t).where(Flight.id == bindparam("id")))
FARES = Query(select(fares_t).where(Fare.flight_id == bindparam("flight_id")).order_by(Fare.id))
BOOKED_SEATS = Query(
    select(FlightBooking.seat).where(
        FlightBooking.flight_id == bindparam("flight_id"), FlightBooking.status == "confirmed"
    )
)
BOOKING_ON_FLIGHT = Query(  # a traveller's confirmed booking on a flight
    select(FlightBooking.id)
    .where(
        FlightBooking.traveller_id == bindparam("traveller_id"),
        FlightBooking.flight_id == bindparam("flight_id"),
        FlightBooking.status == "confirmed",
    )
    .order_by(FlightBooking.id)
)
# a flight booking with what its result shows of its flight and traveller
_FLIGHT_BOOKING = (
    select(
        flight_bookings_t,
        Flight.number,
        Flight.origin,
        Flight.destination,
        Flight.departs_at,
        Traveller.first_name,
        Traveller.last_name,
    )
    .join(flights_t, Flight.id == FlightBooking.flight_id)
    .join(travellers_t, Traveller.id == FlightBooking.traveller_id)
)
FLIGHT_BOOKING = Query(_FLIGHT_BOOKING.where(FlightBooking.id == bindparam("id")))
FLIGHT_BOOKINGS_OF = Query(
    _FLIGHT_BOOKING.where(FlightBooking.itinerary_id == bindparam("itinerary_id")).order_by(
        FlightBooking.id
    )
)
UPCOMING_WITHOUT_LOYALTY = Query(  # a traveller's bookings that add_loyalty_number updates
    select(FlightBooking.id)
    .join(flights_t, Flight.id == FlightBooking.flight_id)
    .where(
        FlightBooking.traveller_id == bindparam("traveller_id"),
        FlightBooking.status == "confirmed",
        FlightBooking.loyalty_number.is_(None),
        Flight.airline == bindparam("airline"),
        Flight.departs_at > bindparam("now"),
    )
    .order_by(FlightBooking.id)
)
HOTEL = Query(select(hotels_t).where(Hotel.id == bindparam("id")))
HOTELS = Query(select(hotels_t).order_by(Hotel.id))
HOTEL_CITIES = Query(select(Hotel.city).order_by(Hotel.city))
# per room type sleeping ``guests`` in a hotel: its nights rated from ``first`` to ``last``,
# their rates' sum (the flexible total: rates are whole cents) and its rooms free every night
_STAY_RATE_ROWS = (  # a room type's rates of the nights from ``first`` to ``last``
    RoomRate.room_type_id == RoomType.id,
    RoomRate.night >= bindparam("first"),
    RoomRate.night <= bindparam("last"),
)
_RATED_NIGHTS = select(func.count()).where(*_STAY_RATE_ROWS).scalar_subquery()
_STAY_RATES = select(func.sum(RoomRate.rate)).where(*_STAY_RATE_ROWS).scalar_subquery()
_FREE_ROOMS = (
    select(func.count())
    .where(
        Room.room_type_id == RoomType.id,
        ~select(RoomNight.room_id)
        .where(
            RoomNight.room_id == Room.id,
            RoomNight.night >= bindparam("first"),
            RoomNight.night <= bindparam("last"),
        )
        .exists(),
    )
    .scalar_subquery()
)
# the city's hotels, each once per room type of it sleeping ``guests`` (once with NULLs if none)
_FITTING_TYPES = (
    select(
        hotels_t,
        _RATED_NIGHTS.label("rated"),
        _STAY_RATES.label("total"),
        _FREE_ROOMS.label("free"),
    )
    .select_from(
        hotels_t.outerjoin(
            room_types_t,
            and_(RoomType.hotel_id == Hotel.id, RoomType.max_guests >= bindparam("guests")),
        )
    )
    .where(contains(bindparam("pattern"), Hotel.city))
    .subquery()
)
_T = _FITTING_TYPES.c
# a type is on sale when every one of the ``nights`` has a rate; only then are its rooms free
_ON_SALE = _T.rated == bindparam("nights")
_LOWEST_TOTAL = type_coerce(func.min(case((and_(_ON_SALE, _T.free > 0), _T.total))), Money())
HOTEL_OFFERS_IN_CITY = Query(  # search_hotels': cheapest first, those with no free room last
    select(
        _T.id,
        _T.name,
        _T.city,
        _T.address,
        _T.stars,
        func.coalesce(func.sum(case((_ON_SALE, _T.free), else_=0)), 0).label("rooms_available"),
        _LOWEST_TOTAL.label("lowest_total"),
    )
    .group_by(_T.id)
    .order_by(_LOWEST_TOTAL.is_(None), _LOWEST_TOTAL, _T.id)
)
ROOM_TYPE = Query(select(room_types_t).where(RoomType.id == bindparam("id")))
ROOM_TYPES_OF = Query(
    select(room_types_t).where(RoomType.hotel_id == bindparam("hotel_id")).order_by(RoomType.id)
)
ROOMS_OF_TYPE = Query(
    select(rooms_t).where(Room.room_type_id == bindparam("room_type_id")).order_by(Room.id)
)
ROOMS_WITH_CAPACITY = Query(
    select(Room.id, Room.hotel_id, Room.room_type_id, RoomType.max_guests)
    .join(room_types_t, RoomType.id == Room.room_type_id)
    .order_by(Room.id)
)
RATES = Query(
    select(RoomRate.night, RoomRate.rate)
    .where(
        RoomRate.room_type_id == bindparam("room_type_id"),
        RoomRate.night >= bindparam("first"),
        RoomRate.night <= bindparam("last"),
    )
    .order_by(RoomRate.night)
)
TAKEN_ROOMS = Query(  # rooms among ``room_ids`` taken on a night from ``first`` to ``last``
    select(RoomNight.room_id).where(
        RoomNight.room_id.in_(bindparam("room_ids", expanding=True)),
        RoomNight.night >= bindparam("first"),
        RoomNight.night <= bindparam("last"),
    )
)
TAKEN_NIGHTS = Query(
    select(RoomNight.night)
    .where(
        RoomNight.room_id == bindparam("room_id"),
        RoomNight.night >= bindparam("first"),
        RoomNight.night <= bindparam("last"),
    )
    .order_by(RoomNight.night)
)
FREE_NIGHTS = Query(  # the room nights a hotel booking holds
    delete(RoomNight).where(RoomNight.hotel_booking_id == bindparam("hotel_booking_id"))
)
# a hotel booking with what its result shows of its hotel, room and room type
_HOTEL_BOOKING = (
    select(
        hotel_bookings_t,
        Hotel.name.label("hotel_name"),
        Room.number.label("room_number"),
        RoomType.name.label("room_type"),
    )
    .join(hotels_t, Hotel.id == HotelBooking.hotel_id)
    .join(rooms_t, Room.id == HotelBooking.room_id)
    .join(room_types_t, RoomType.id == Room.room_type_id)
)
HOTEL_BOOKING = Query(_HOTEL_BOOKING.where(HotelBooking.id == bindparam("id")))
HOTEL_BOOKINGS_OF = Query(
    _HOTEL_BOOKING.where(HotelBooking.itinerary_id == bindparam("itinerary_id")).order_by(
        HotelBooking.id
    )
)
UPCOMING_STAYS = Query(
    select(HotelBooking.id, HotelBooking.itinerary_id, HotelBooking.hotel_id)
    .where(HotelBooking.status == "confirmed", HotelBooking.check_in > bindparam("after"))
    .order_by(HotelBooking.id)
)
TRAVELLER = Query(select(travellers_t).where(Traveller.id == bindparam("id")))
TRAVELLERS = Query(select(travellers_t).order_by(Traveller.id))
TRAVELLER_BY_EMAIL = Query(select(travellers_t).where(Traveller.email == bindparam("email")))
TRAVELLER_LAST_NAMES = Query(select(Traveller.last_name).order_by(Traveller.id))
LOYALTY_OF = Query(
    select(LoyaltyAccount.airline, LoyaltyAccount.number)
    .where(LoyaltyAccount.traveller_id == bindparam("traveller_id"))
    .order_by(LoyaltyAccount.id)
)
LOYALTY_AIRLINES = Query(select(LoyaltyAccount.traveller_id, LoyaltyAccount.airline))
ITINERARY = Query(select(itineraries_t).where(Itinerary.id == bindparam("id")))
LEDGER = Query(
    select(Transaction.__table__)
    .where(Transaction.itinerary_id == bindparam("itinerary_id"))
    .order_by(Transaction.id)
)
BOOKABLE_ITINERARIES = Query(  # active, led by a traveller whose passport is valid to ``until``
    select(Itinerary.id, Itinerary.traveller_id, Itinerary.name)
    .join(travellers_t, Traveller.id == Itinerary.traveller_id)
    .where(Itinerary.status == "active", Traveller.passport_expiry >= bindparam("until"))
    .order_by(Itinerary.id)
)

# The entity listings' reads: each reads a table (or its part the listing can use) once,
# grouped in Python, rather than once per listed row.
_SEP = "\x1f"  # joins a group's values in one column (no stored text holds it)


def _joined(column: Any) -> ColumnElement[str]:
    """A group's values of ``column`` as their stored text, joined by ``_SEP`` (any order)."""
    return func.group_concat(type_coerce(column, String()), _SEP, type_=String())


def _fare_classes_in(cabin: str) -> Label[str]:
    """A flight's fare classes of ``cabin`` joined by ``_SEP`` (NULL when it sells none), as
    a column of a select of flights labelled by the cabin."""
    joined = select(_joined(Fare.fare_class)).where(
        Fare.flight_id == Flight.id, Fare.cabin == cabin
    )
    return joined.scalar_subquery().label(cabin)


_OPEN_FLIGHT = select(  # a flight departing from ``since``: what the listings use of it
    Flight.id,
    Flight.number,
    Flight.origin,
    Flight.destination,
    func.date(Flight.departs_at).label("day"),  # its departure's date as text ("2026-05-22")
    Flight.aircraft,
    Flight.occupied,
    *(_fare_classes_in(cabin) for cabin in CABINS),
).where(Flight.departs_at >= bindparam("since"))
OPEN_FLIGHTS = Query(_OPEN_FLIGHT.order_by(Flight.id))
OPEN_FLIGHTS_BY_DEPARTURE = Query(_OPEN_FLIGHT.order_by(Flight.departs_at, Flight.id))
CONFIRMED_SEATS = Query(  # every confirmed booking's flight, seat and traveller
    select(FlightBooking.flight_id, FlightBooking.seat, FlightBooking.traveller_id)
    .where(FlightBooking.status == "confirmed")
    .order_by(FlightBooking.id)
)
OPEN_BOOKINGS = Query(  # confirmed bookings of flights departing from ``since``
    select(
        FlightBooking.id,
        FlightBooking.itinerary_id,
        FlightBooking.traveller_id,
        FlightBooking.flight_id,
        FlightBooking.cabin,
        FlightBooking.fare_class,
        FlightBooking.seat,
        Traveller.passport_expiry,
    )
    .join(flights_t, Flight.id == FlightBooking.flight_id)
    .join(travellers_t, Traveller.id == FlightBooking.traveller_id)
    .where(FlightBooking.status == "confirmed", Flight.departs_at >= bindparam("since"))
    .order_by(FlightBooking.id)
)
# per room type / room, its nights rated / taken from ``first`` to ``last``, as stored text
# ("2026-05-22") joined by _SEP
RATED_NIGHTS = Query(
    select(RoomRate.room_type_id, _joined(RoomRate.night))
    .where(RoomRate.night >= bindparam("first"), RoomRate.night <= bindparam("last"))
    .group_by(RoomRate.room_type_id)
    .order_by(RoomRate.room_type_id)
)
TAKEN_NIGHTS_OF_ROOMS = Query(
    select(RoomNight.room_id, _joined(RoomNight.night))
    .where(RoomNight.night >= bindparam("first"), RoomNight.night <= bindparam("last"))
    .group_by(RoomNight.room_id)
    .order_by(RoomNight.room_id)
)


@functools.cache
def _flights_of_route(by_day: bool) -> tuple[Query, Query]:
    """How many flights between airports match, and the first ``limit`` by departure: those
    of one day (``start`` to ``end``) or every one from ``since``. search_flights'."""
    stmt = select(flights_t).where(
        Flight.origin.in_(bindparam("origins", expanding=True)),
        Flight.destination.in_(bindparam("destinations", expanding=True)),
    )
    if by_day:
        stmt = stmt.where(
            Flight.departs_at >= bindparam("start"), Flight.departs_at < bindparam("end")
        )
    else:
        stmt = stmt.where(Flight.departs_at >= bindparam("since"))
    count = Query(select(func.count()).select_from(stmt.subquery()))
    rows = Query(stmt.order_by(Flight.departs_at, Flight.id).limit(bindparam("limit")))
    return count, rows


@functools.cache
def _travellers_matching(by_text: bool) -> Query:
    """Travellers by name, at most ``limit``, optionally matching a text: find_travellers'."""
    stmt = select(travellers_t)
    if by_text:
        full = Traveller.first_name + " " + Traveller.last_name
        stmt = stmt.where(contains(bindparam("pattern"), full, Traveller.email, Traveller.id))
    return Query(
        stmt.order_by(Traveller.last_name, Traveller.first_name, Traveller.id).limit(
            bindparam("limit")
        )
    )


@functools.cache
def _itineraries_of(by_status: bool) -> tuple[Query, Query]:
    """How many itineraries a traveller leads or flies on match (optionally of one
    ``status``), and the newest ``limit`` of them: list_itineraries'."""
    flies = select(FlightBooking.itinerary_id).where(
        FlightBooking.traveller_id == bindparam("traveller_id")
    )
    stmt = select(itineraries_t).where(
        or_(Itinerary.traveller_id == bindparam("traveller_id"), Itinerary.id.in_(flies))
    )
    if by_status:
        stmt = stmt.where(Itinerary.status == bindparam("status"))
    count = Query(select(func.count()).select_from(stmt.subquery()))
    rows = Query(
        stmt.order_by(Itinerary.created_at.desc(), Itinerary.id.desc()).limit(bindparam("limit"))
    )
    return count, rows


# ----------------------------------------------------------------- helpers
def _broken(rule: str, detail: str) -> PreconditionFailed:
    """The error for a failed business rule: it names the rule, then says what to do."""
    return PreconditionFailed(f"Rule '{rule}' failed: {detail}")


def _taken(rule: str, detail: str) -> Conflict:
    return Conflict(f"Rule '{rule}' failed: {detail}")


def _stamp(value: dt.datetime | None) -> str | None:
    return value.isoformat(timespec="minutes") if value is not None else None


def _name(t: Any) -> str:
    """A traveller's name (any row with their ``first_name`` and ``last_name``)."""
    return f"{t.first_name} {t.last_name}"


def _one_line(value: str, name: str) -> str:
    text = " ".join(value.split())
    if not text:
        raise InvalidArgument(f"{name} must not be empty or blank.")
    return text


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


def _free_of(flight: Any, cabin: str, booked: set[str]) -> list[str]:
    """:func:`_free_seats` given the flight's confirmed bookings' seats (``booked``)."""
    gone = set(flight.occupied.split())
    gone.update(booked)  # (in place: a union would copy the set)
    return [s for s in seat_map(flight.aircraft, cabin) if s not in gone]


def _open(ctx: ToolContext, flight: Any) -> bool:
    return flight.departs_at - ctx.now >= CUTOFF


def _require_open(ctx: ToolContext, flight: Any, what: str) -> None:
    if not _open(ctx, flight):
        when = "has departed" if flight.departs_at <= ctx.now else "departs in under 2 hours"
        raise _broken(
            "departure_cutoff",
            f"flight {flight.number} ({flight.id}) {when} (departure "
            f"{_stamp(flight.departs_at)}, now {_stamp(ctx.now)}); it can no longer be {what}. "
            "Choose a later flight.",
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


def _seat(text: str) -> str:
    return text.strip().upper()


def _active(itin: Any) -> None:
    if itin.status != "active":
        raise _broken(
            "itinerary_cancelled",
            f"itinerary {itin.id} ({itin.name}) was cancelled on {_stamp(itin.cancelled_at)}; "
            "it takes no new bookings. Create a new itinerary for this trip.",
        )


def _confirmed(booking: Any, booking_id: str) -> None:
    if booking.status != "confirmed":
        raise _broken(
            "booking_cancelled",
            f"booking {booking_id} was cancelled on {_stamp(booking.cancelled_at)}; it can no "
            "longer be changed or cancelled. Make a new booking instead.",
        )


def _txn(
    ctx: ToolContext,
    itinerary_id: str,
    kind: str,
    amount: Decimal,
    memo: str,
    *,
    flight: str | None = None,
    hotel: str | None = None,
) -> str:
    """Write a line of an itinerary's ledger; its id."""
    txn_id = next_id(ctx, Transaction.id, "txn", 5)
    ctx.sql.insert(
        Transaction,
        id=txn_id,
        itinerary_id=itinerary_id,
        flight_booking_id=flight,
        hotel_booking_id=hotel,
        kind=kind,
        amount=amount,
        memo=memo[:200],
        created_at=ctx.now,
    )
    return txn_id


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
        "departs_at": f.departs_at.isoformat(timespec="minutes"),
        "arrives_at": f.arrives_at.isoformat(timespec="minutes"),
        "duration_minutes": int((f.arrives_at - f.departs_at).total_seconds() // 60),
        "aircraft": f.aircraft,
        "international": is_international(f.origin, f.destination),
        "booking_open": _open(ctx, f),
        "cabins": cabins,
    }


def _flight_booking_out(ctx: ToolContext, b: Any) -> FlightBookingOut:
    """``b``: a row of FLIGHT_BOOKING (the booking with its flight's and traveller's columns)."""
    live = b.status == "confirmed" and _open(ctx, b)
    fee = change_fee(b.fare_class, b.cabin)
    return {
        "flight_booking_id": b.id,
        "itinerary_id": b.itinerary_id,
        "traveller_id": b.traveller_id,
        "traveller_name": _name(b),
        "flight_id": b.flight_id,
        "number": b.number,
        "origin": b.origin,
        "destination": b.destination,
        "departs_at": b.departs_at.isoformat(timespec="minutes"),
        "cabin": b.cabin,
        "fare_class": b.fare_class,
        "seat": b.seat,
        "base_fare": b.base_fare,
        "taxes": b.taxes,
        "fare_total": b.base_fare + b.taxes,
        "amount_paid": b.amount_paid,
        "refunded": b.refunded,
        "loyalty_number": b.loyalty_number,
        "changes": b.changes,
        "status": b.status,
        "changeable": live and fee is not None,
        "change_fee": fee if live else None,
        "refund_if_cancelled": flight_refund(b.fare_class, b.base_fare, b.taxes) if live else None,
    }


def _stay_started(ctx: ToolContext, b: Any) -> bool:
    return ctx.now >= dt.datetime.combine(b.check_in, dt.time(15, 0))


def _hotel_booking_out(ctx: ToolContext, b: Any) -> HotelBookingOut:
    """``b``: a row of HOTEL_BOOKING (the booking with its hotel's, room's and type's names)."""
    live = b.status == "confirmed" and not _stay_started(ctx, b)
    free_until = free_cancel_until(b.check_in) if b.rate_plan == "flexible" else None
    return {
        "hotel_booking_id": b.id,
        "itinerary_id": b.itinerary_id,
        "hotel_id": b.hotel_id,
        "hotel_name": b.hotel_name,
        "room_id": b.room_id,
        "room_number": b.room_number,
        "room_type": b.room_type,
        "check_in": b.check_in.isoformat(),
        "check_out": b.check_out.isoformat(),
        "nights": (b.check_out - b.check_in).days,
        "guests": b.guests,
        "rate_plan": b.rate_plan,
        "total": b.total,
        "amount_paid": b.amount_paid,
        "refunded": b.refunded,
        "status": b.status,
        "free_cancellation_until": _stamp(free_until),
        "refund_if_cancelled": hotel_refund(
            b.rate_plan, b.total, b.first_night, b.check_in, ctx.now
        )
        if live
        else None,
    }


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
    departures = sorted(b.departs_at for b in confirmed)
    return {
        "itinerary_id": itin.id,
        "name": itin.name,
        "lead_traveller_id": lead.id,
        "lead_traveller_name": _name(lead),
        "status": itin.status,
        "total_paid": itin.total_paid,
        "confirmed_flights": len(confirmed),
        "confirmed_hotels": sum(1 for h in hotels if h.status == "confirmed"),
        "first_departure": _stamp(departures[0]) if departures else None,
        "created_at": itin.created_at.isoformat(timespec="minutes"),
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
                "created_at": t.created_at.isoformat(timespec="minutes"),
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
                f"{_stamp(b.departs_at)}) has departed or closes within 2 hours"
            )
    for h in hotels:
        if h.status == "confirmed" and _stay_started(ctx, h):
            return f"hotel booking {h.id} at {h.hotel_name} started on {h.check_in.isoformat()}"
    return None


def _traveller_out(ctx: ToolContext, t: Any) -> TravellerOut:
    return {
        "traveller_id": t.id,
        "name": _name(t),
        "email": t.email,
        "date_of_birth": t.date_of_birth.isoformat(),
        "nationality": t.nationality,
        "passport_number": t.passport_number,
        "passport_expiry": t.passport_expiry.isoformat(),
        "loyalty": [
            {"airline": a.airline, "airline_name": AIRLINES[a.airline], "number": a.number}
            for a in ctx.sql.all(LOYALTY_OF, traveller_id=t.id)
        ],
    }


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


def _check_change(
    ctx: ToolContext, b: Any, old: Any, new: Any
) -> tuple[Any, tuple[Decimal, Decimal, Decimal]]:
    """Every rule of moving ``b`` from flight ``old`` to ``new`` (seat aside): the new fare
    (a row of ``fares``) and its cost."""
    _confirmed(b, b.id)
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
    cost = change_cost(b.fare_class, b.cabin, b.base_fare + b.taxes, fare.base + fare.taxes)
    return fare, cost


def _cancel_flight(ctx: ToolContext, b: Any) -> Cancelled:
    """Cancel a confirmed flight booking (a row with the columns of ``flight_bookings``)."""
    itin = ctx.sql.one(ITINERARY, id=b.itinerary_id)
    paid = b.amount_paid
    refund = flight_refund(b.fare_class, b.base_fare, b.taxes)
    rule = (
        "flex fare: the whole fare is refunded"
        if FARE_RULES[b.fare_class]["refundable"]
        else f"{b.fare_class} fare: only the taxes are refunded"
    )
    changes: dict[str, Any] = {"status": "cancelled", "cancelled_at": ctx.now}
    if refund > 0:
        changes["refunded"] = b.refunded + refund
        changes["amount_paid"] = b.amount_paid - refund
        itin = ctx.sql.update(Itinerary, itin, total_paid=itin.total_paid - refund)
    b = ctx.sql.update(FlightBooking, b, **changes)
    ids = []
    if refund > 0:
        ids.append(
            _txn(
                ctx,
                itin.id,
                "refund",
                refund,
                f"Refund of ticket {b.id} ({b.fare_class} fare)",
                flight=b.id,
            )
        )
    return {
        "booking_id": b.id,
        "itinerary_id": itin.id,
        "status": b.status,
        "paid_before": paid,
        "refund": refund,
        "refund_rule": rule,
        "amount_paid": b.amount_paid,
        "itinerary_total_paid": itin.total_paid,
        "transaction_ids": ids,
    }


def _cancel_hotel(ctx: ToolContext, b: Any) -> Cancelled:
    """Cancel a confirmed hotel booking (a row with the columns of ``hotel_bookings``) and
    free its room nights."""
    itin = ctx.sql.one(ITINERARY, id=b.itinerary_id)
    paid = b.amount_paid
    refund = hotel_refund(b.rate_plan, b.total, b.first_night, b.check_in, ctx.now)
    if b.rate_plan == "non_refundable":
        rule = "non_refundable rate: nothing is refunded"
    elif refund == b.total:
        rule = "flexible rate cancelled 48 hours or more before check-in: refunded in full"
    else:
        rule = "flexible rate cancelled within 48 hours of check-in: the first night is kept"
    changes: dict[str, Any] = {"status": "cancelled", "cancelled_at": ctx.now}
    if refund > 0:
        changes["refunded"] = b.refunded + refund
        changes["amount_paid"] = b.amount_paid - refund
        itin = ctx.sql.update(Itinerary, itin, total_paid=itin.total_paid - refund)
    ctx.sql.run(FREE_NIGHTS, hotel_booking_id=b.id)
    b = ctx.sql.update(HotelBooking, b, **changes)
    ids = []
    if refund > 0:
        ids.append(
            _txn(
                ctx,
                itin.id,
                "refund",
                refund,
                f"Refund of hotel booking {b.id} ({b.rate_plan} rate)",
                hotel=b.id,
            )
        )
    return {
        "booking_id": b.id,
        "itinerary_id": itin.id,
        "status": b.status,
        "paid_before": paid,
        "refund": refund,
        "refund_rule": rule,
        "amount_paid": b.amount_paid,
        "itinerary_total_paid": itin.total_paid,
        "transaction_ids": ids,
    }


# -------------------------------------------------------- example values
def _day_ahead(ctx: ToolContext, rng: random.Random) -> str:
    return (ctx.now + dt.timedelta(days=rng.choice([3, 7, 10, 14, 21]))).date().isoformat()


def _stay_end(ctx: ToolContext, rng: random.Random) -> str:
    return (ctx.now + dt.timedelta(days=rng.choice([12, 17, 24]))).date().isoformat()


def _expiry(ctx: ToolContext, rng: random.Random) -> str:
    return (ctx.now.date() + dt.timedelta(days=rng.randint(3 * 365, 10 * 365))).isoformat()


def _passport_no(ctx: ToolContext, rng: random.Random) -> str:
    return f"{rng.choice('CFHKLMPRX')}{rng.choice('ABCDEFGH')}{rng.randint(1000000, 9999999)}"


def _city(ctx: ToolContext, rng: random.Random) -> str:
    cities = sorted(set(ctx.sql.scalars(HOTEL_CITIES)))
    return rng.choice(cities)


def _traveller_word(ctx: ToolContext, rng: random.Random) -> str:
    names = ctx.sql.scalars(TRAVELLER_LAST_NAMES)
    return rng.choice(names)


FIRST_NAMES = ["Maria", "Tom", "Aisha", "Jonas", "Priya", "Lucas", "Ingrid"]
LAST_NAMES = ["Lopez", "Becker", "Khan", "Weber", "Patel", "Moreau", "Larsen"]
NEW_EMAILS = [
    "maria.lopez@acme-corp.com",
    "tom.becker@gmail.com",
    "aisha.khan@outlook.com",
    "jonas.weber@proton.me",
    "priya.patel@acme-corp.com",
]
SEATS = ["12C", "14A", "15D", "18F", "21B", "3A"]
TRIP_NAMES = ["Lisbon offsite", "Paris client visit", "Summer holiday", "Berlin trade fair"]


# ------------------------------------------------------------------- tools
@server.tool(
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
    if day is not None:
        start = dt.datetime.combine(day, dt.time())
        route.update(start=start, end=start + dt.timedelta(1))
    else:
        route.update(since=ctx.now)
    count, matching = _flights_of_route(day is not None)
    total = ctx.sql.scalar(count, **route) or 0
    out = []
    for f in ctx.sql.all(matching, **route, limit=limit):
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


@server.tool(
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


@server.tool(
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


@server.tool(
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


@server.tool(
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


@server.tool(
    returns="traveller",
    phrasings=["Find the traveller {query}", "Look up {query}'s traveller profile"],
    examples={"query": _traveller_word},
)
def find_travellers(
    ctx: ToolContext,
    query: SearchText | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
) -> list[TravellerOut]:
    """Find travellers by name, email or id, with passport and loyalty numbers.

    Args:
        query: Case-insensitive text, such as "Silva", "Ana Silva", "ana.silva@gmail.com" or
            "trv_0007"; leave it out to list travellers by name.
        limit: Maximum number of travellers (1-50), such as 10.

    Returns:
        [{"traveller_id": "trv_0007", "name": "Ana Silva", "email": "ana.silva@gmail.com",
        "passport_number": "CA1234567", "passport_expiry": "2029-03-31", "loyalty":
        [{"airline": "TP", "number": "TP123456789"}], ...}].
    """
    text = " ".join((query or "").split())
    matching = _travellers_matching(bool(text))
    if text:
        rows = ctx.sql.all(matching, pattern=search_pattern(text), limit=limit)
    else:
        rows = ctx.sql.all(matching, limit=limit)
    return [_traveller_out(ctx, t) for t in rows]


@server.tool(
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


@server.tool(
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


@server.tool(
    returns=("flight_booking", "flight"),
    phrasings=[
        "How much would it cost to move {flight_booking_id} to flight {new_flight_id}?",
        "Quote changing booking {flight_booking_id} to {new_flight_id}",
    ],
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
    b, new = flight_booking_id, new_flight_id
    old = ctx.sql.one(FLIGHT, id=b.flight_id)
    fare, (fee, extra, residual) = _check_change(ctx, b, old, new)
    return {
        "flight_booking_id": b.id,
        "from_flight_id": b.flight_id,
        "to_flight_id": new.id,
        "to_number": new.number,
        "to_departs_at": new.departs_at.isoformat(timespec="minutes"),
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


@server.tool(
    writes=True,
    returns="traveller",
    normalise={"email": "casefold"},
    phrasings=[
        "Add traveller {first_name} {last_name} ({email}), born {date_of_birth}, "
        "{nationality} passport {passport_number} valid until {passport_expiry}",
        "Create a profile for {first_name} {last_name}, email {email}, passport "
        "{passport_number} expiring {passport_expiry}",
    ],
    examples={
        "first_name": FIRST_NAMES,
        "last_name": LAST_NAMES,
        "email": NEW_EMAILS,
        "date_of_birth": ["1985-04-12", "1992-11-03", "1978-07-22", "2001-01-30"],
        "nationality": ["PT", "ES", "FR", "DE", "GB", "US"],
        "passport_number": _passport_no,
        "passport_expiry": _expiry,
    },
)
def create_traveller(
    ctx: ToolContext,
    first_name: Name,
    last_name: Name,
    email: Annotated[str, Field(max_length=120, pattern=r"^\s*[^@\s]+@[^@\s]+\.[^@\s]+\s*$")],
    date_of_birth: DateText,
    nationality: Annotated[str, Field(pattern=r"^\s*[A-Za-z]{2}\s*$")],
    passport_number: Annotated[str, Field(pattern=r"^\s*[A-Za-z0-9]{6,12}\s*$")],
    passport_expiry: DateText,
) -> TravellerOut:
    """Create a traveller profile with their passport.

    Args:
        first_name: Given name, such as "Maria".
        last_name: Family name, such as "Lopez".
        email: Their email, unique per traveller, such as "maria.lopez@acme-corp.com".
        date_of_birth: Such as "1985-04-12".
        nationality: Two-letter country code of the passport, such as "ES".
        passport_number: 6-12 letters and digits, such as "XA1234567".
        passport_expiry: When the passport expires, a future date such as "2031-06-30".

    Returns:
        {"traveller_id": "trv_0051", "name": "Maria Lopez", "email": "maria.lopez@acme-corp.com",
        "passport_expiry": "2031-06-30", "loyalty": [], ...}.
    """
    mail = email.strip().casefold()
    born = parse_date(date_of_birth, "date_of_birth")
    expiry = parse_date(passport_expiry, "passport_expiry")
    today = ctx.now.date()
    if not dt.date(1900, 1, 1) <= born < today:
        raise InvalidArgument(f"date_of_birth must be a past date, got {born.isoformat()}.")
    if expiry <= today:
        raise InvalidArgument(
            f"passport_expiry {expiry.isoformat()} is not in the future; an expired passport "
            "cannot be recorded. Ask the traveller for their current passport."
        )
    other = ctx.sql.first(TRAVELLER_BY_EMAIL, email=mail)
    if other is not None:
        raise _taken(
            "email_taken",
            f"{mail} already belongs to {_name(other)} ({other.id}); nothing was created. Use "
            "that traveller, or ask for another email.",
        )
    traveller_id = next_id(ctx, Traveller.id, "trv", 4)
    ctx.sql.insert(
        Traveller,
        id=traveller_id,
        first_name=_one_line(first_name, "first_name"),
        last_name=_one_line(last_name, "last_name"),
        email=mail,
        date_of_birth=born,
        nationality=nationality.strip().upper(),
        passport_number=passport_number.strip().upper(),
        passport_expiry=expiry,
        created_at=ctx.now,
    )
    return _traveller_out(ctx, ctx.sql.one(TRAVELLER, id=traveller_id))


@server.tool(
    writes=True,
    returns="traveller",
    phrasings=[
        "{traveller_id} renewed their passport: number {passport_number}, valid until "
        "{passport_expiry}",
        "Update the passport of {traveller_id} to {passport_number} expiring {passport_expiry}",
    ],
    examples={"passport_number": _passport_no, "passport_expiry": _expiry},
)
def update_passport(
    ctx: ToolContext,
    traveller_id: TravellerRow,
    passport_number: Annotated[str, Field(pattern=r"^\s*[A-Za-z0-9]{6,12}\s*$")],
    passport_expiry: DateText,
) -> TravellerOut:
    """Record a traveller's new passport (number and expiry); the nationality stays.

    Args:
        traveller_id: The traveller, such as "trv_0007".
        passport_number: 6-12 letters and digits, such as "XA1234567".
        passport_expiry: A future date, such as "2034-02-28".

    Returns:
        The traveller: {"traveller_id": "trv_0007", "passport_number": "XA1234567",
        "passport_expiry": "2034-02-28", ...}.
    """
    t = traveller_id
    expiry = parse_date(passport_expiry, "passport_expiry")
    if expiry <= ctx.now.date():
        raise InvalidArgument(
            f"passport_expiry {expiry.isoformat()} is not in the future; record a valid passport."
        )
    t = ctx.sql.update(
        Traveller, t, passport_number=passport_number.strip().upper(), passport_expiry=expiry
    )
    return _traveller_out(ctx, t)


@server.tool(
    writes=True,
    returns=("traveller", "flight_booking"),
    normalise={"number": "casefold"},
    phrasings=[
        "Add {traveller_id}'s {airline} frequent flyer number {number}",
        "Save loyalty number {number} with airline {airline} for {traveller_id}",
    ],
)
def add_loyalty_number(
    ctx: ToolContext,
    traveller_id: TravellerRow,
    airline: Airline,
    number: Annotated[str, Field(pattern=r"^\s*[A-Za-z]{2}\d{6,12}\s*$")],
) -> LoyaltyAdded:
    """Save a traveller's frequent-flyer number with an airline (one per airline); their
    upcoming confirmed bookings on that airline get it too.

    Args:
        traveller_id: The traveller, such as "trv_0007".
        airline: Airline code: "TP" (TAP), "IB" (Iberia), "AF" (Air France), "BA" (British
            Airways), "LH" (Lufthansa), "AZ" (ITA), "KL" (KLM) or "SK" (SAS).
        number: The airline's code then 6-12 digits, such as "TP123456789".

    Returns:
        The traveller with "loyalty" and "bookings_updated": ["fb_00031"] (upcoming bookings
        that now carry the number).
    """
    t = traveller_id
    code = number.strip().upper()
    if not code.startswith(airline):
        raise InvalidArgument(
            f"a {AIRLINES[airline]} loyalty number starts with {airline}, such as "
            f"{airline}123456789; got {code!r}."
        )
    mine = next(
        (a for a in ctx.sql.all(LOYALTY_OF, traveller_id=t.id) if a.airline == airline), None
    )
    if mine is not None:
        raise _taken(
            "loyalty_already_registered",
            f"{_name(t)} ({t.id}) already has {AIRLINES[airline]} number {mine.number}; "
            "nothing was added. A traveller keeps one number per airline.",
        )
    ctx.sql.insert(
        LoyaltyAccount,
        id=next_id(ctx, LoyaltyAccount.id, "loy", 4),
        traveller_id=t.id,
        airline=airline,
        number=code,
    )
    updated = ctx.sql.scalars(
        UPCOMING_WITHOUT_LOYALTY, traveller_id=t.id, airline=airline, now=ctx.now
    )
    for booking_id in updated:
        ctx.sql.update_by_key(FlightBooking, booking_id, loyalty_number=code)
    return {**_traveller_out(ctx, t), "bookings_updated": updated}


@server.tool(
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


@server.tool(
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
    _active(itin)
    _require_open(ctx, f, "booked")
    fare = _fare(ctx, f, cabin, fare_class)
    _check_passport(t, f)
    _check_not_on(ctx, t, f)
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


@server.tool(
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
    _confirmed(b, b.id)
    flight = ctx.sql.one(FLIGHT, id=b.flight_id)
    _require_open(ctx, flight, "changed")
    if place == b.seat:
        raise InvalidArgument(f"booking {b.id} already has seat {place}; pick another seat.")
    _check_seat(ctx, flight, b.cabin, place)
    ctx.sql.update(FlightBooking, b, seat=place)
    return _flight_booking_out(ctx, ctx.sql.one(FLIGHT_BOOKING, id=b.id))


@server.tool(
    writes=True,
    returns=("flight_booking", "flight"),
    normalise={"new_seat": "casefold"},
    phrasings=[
        "Move booking {flight_booking_id} to flight {new_flight_id}, seat {new_seat}",
        "Change {flight_booking_id} to the {new_flight_id} flight instead, seat {new_seat}",
    ],
    examples={"new_seat": SEATS},
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
    fare, (fee, extra, residual) = _check_change(ctx, b, old, new)
    _check_seat(ctx, new, b.cabin, place)
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


@server.tool(
    writes=True,
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
    _confirmed(b, b.id)
    _require_open(ctx, ctx.sql.one(FLIGHT, id=b.flight_id), "cancelled")
    return _cancel_flight(ctx, b)


@server.tool(
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
    _active(itin)
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


@server.tool(
    writes=True,
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
    _confirmed(b, b.id)
    if _stay_started(ctx, b):
        raise _broken(
            "stay_started",
            f"booking {b.id} checked in on {b.check_in.isoformat()} at 15:00; a started stay "
            "cannot be cancelled here. The traveller must arrange an early departure with the "
            "hotel.",
        )
    return _cancel_hotel(ctx, b)


@server.tool(
    writes=True,
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
    _active(itin)
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


# --------------------------------------------------------------- entities
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
