"""The statements the travel_booking tools read and write through (``ctx.sql``):
compiled once, run on SQLite directly."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import String, and_, bindparam, case, delete, func, or_, select, type_coerce
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.elements import Label

from prove_gym.server import Money, Query, contains

from ..models import (
    CABINS,
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
)

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
FLIGHTS_OF_TRAVELLER = Query(  # a traveller's confirmed bookings with their flights' times
    select(
        FlightBooking.id,
        Flight.id.label("flight_id"),
        Flight.number,
        Flight.origin,
        Flight.destination,
        Flight.departs_at,
    )
    .join(flights_t, Flight.id == FlightBooking.flight_id)
    .where(
        FlightBooking.traveller_id == bindparam("traveller_id"),
        FlightBooking.status == "confirmed",
    )
    .order_by(Flight.departs_at, FlightBooking.id)
)
UPCOMING_WITHOUT_LOYALTY = Query(  # a traveller's bookings that add_loyalty_number updates
    select(FlightBooking.id, Flight.origin, Flight.departs_at)
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
    Flight.departs_at,
    Flight.aircraft,
    Flight.occupied,
    *(_fare_classes_in(cabin) for cabin in CABINS),
).where(Flight.departs_at >= bindparam("since"))
OPEN_FLIGHTS = Query(_OPEN_FLIGHT.order_by(Flight.id))
OTHER_FLIGHTS_OF_ROUTE = Query(  # the route's other flights departing from ``since``
    select(Flight.id)
    .where(
        Flight.origin == bindparam("origin"),
        Flight.destination == bindparam("destination"),
        Flight.id != bindparam("id"),
        Flight.departs_at >= bindparam("since"),
    )
    .order_by(Flight.id)
)
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
        Flight.origin,
        Flight.departs_at,
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
