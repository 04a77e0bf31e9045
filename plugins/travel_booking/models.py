"""Travel booking state: flights with fares and seat maps, hotels with rooms and nightly
rates, travellers with passports and loyalty numbers, and itineraries that bundle flight
and hotel bookings with a ledger of every payment and refund.

Money is exact everywhere (:class:`~prove_gym.server.Money`, integer cents in SQLite), in
euros. The rules every state obeys (the tests check them after random call sequences):

- a seat of a flight is held by at most one confirmed flight booking and never by one
  when another passenger (``Flight.occupied``) already sits there; a confirmed booking's
  seat exists in its cabin of its aircraft;
- a room night is held by at most one booking (the primary key is the room and the night);
  a confirmed hotel booking holds exactly the nights ``check_in <= night < check_out`` of
  its room, and a cancelled one holds none;
- every booking's ``amount_paid`` is its charges and fees minus its refunds in the ledger,
  ``refunded`` is the sum of its refunds, and an itinerary's ``total_paid`` is the sum of
  its bookings' ``amount_paid``;
- a confirmed flight booking's fare is the fare of its flight, cabin and fare class; a
  confirmed hotel booking's ``total`` is the sum of its nights' prices under its rate plan;
- a cancelled itinerary has no confirmed booking; a booking is cancelled exactly when it
  has a ``cancelled_at``.
"""

from __future__ import annotations

import datetime as dt
import functools
from decimal import ROUND_HALF_UP, Decimal

from sqlalchemy import Date, DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from prove_gym.server import Money

CENT = Decimal("0.01")
ZERO = Decimal("0.00")
CURRENCY = "EUR"

AIRPORTS: dict[str, tuple[str, str]] = {
    "LIS": ("Lisbon", "PT"),
    "OPO": ("Porto", "PT"),
    "MAD": ("Madrid", "ES"),
    "BCN": ("Barcelona", "ES"),
    "CDG": ("Paris", "FR"),
    "NCE": ("Nice", "FR"),
    "LHR": ("London", "GB"),
    "EDI": ("Edinburgh", "GB"),
    "FRA": ("Frankfurt", "DE"),
    "MUC": ("Munich", "DE"),
    "FCO": ("Rome", "IT"),
    "MXP": ("Milan", "IT"),
    "AMS": ("Amsterdam", "NL"),
    "CPH": ("Copenhagen", "DK"),
}
"""IATA code -> (city, country). A flight between two countries is international."""

AIRLINES: dict[str, str] = {
    "TP": "TAP Air Portugal",
    "IB": "Iberia",
    "AF": "Air France",
    "BA": "British Airways",
    "LH": "Lufthansa",
    "AZ": "ITA Airways",
    "KL": "KLM",
    "SK": "SAS",
}
"""Airline code -> name; loyalty numbers are per airline."""

CABINS: tuple[str, ...] = ("business", "premium_economy", "economy")
"""Cabins, front to back."""

FARE_CLASSES: tuple[str, ...] = ("flex", "standard", "basic")
"""Fare classes, most to least flexible (see ``FARE_RULES``)."""

FARE_RULES: dict[str, dict[str, object]] = {
    "flex": {"changeable": True, "refundable": True},
    "standard": {"changeable": True, "refundable": False},
    "basic": {"changeable": False, "refundable": False},
}
"""flex: free changes, a cancellation refunds the whole fare. standard: changes cost a fee
(``CHANGE_FEES``) plus any fare difference, a cancellation refunds only the taxes. basic:
no changes, a cancellation refunds only the taxes."""

CHANGE_FEES: dict[str, Decimal] = {
    "economy": Decimal("75.00"),
    "premium_economy": Decimal("100.00"),
    "business": Decimal("150.00"),
}
"""What changing a standard fare to another flight costs, by cabin (flex changes are free)."""

LAYOUTS: dict[str, dict[str, tuple[int, int, str]]] = {
    "A320": {
        "business": (1, 3, "ACDF"),
        "premium_economy": (4, 6, "ABCDEF"),
        "economy": (7, 26, "ABCDEF"),
    },
    "A220": {"business": (1, 2, "ACDF"), "economy": (3, 21, "ABDEF")},
    "E190": {"business": (1, 2, "ACD"), "economy": (3, 24, "ACDF")},
}
"""Aircraft type -> cabin -> (first row, last row, seat letters): the seat map."""

WINDOW_AISLE: dict[str, tuple[str, str]] = {
    "ABCDEF": ("AF", "CD"),
    "ACDF": ("AF", "CD"),
    "ABDEF": ("AF", "BDE"),
    "ACD": ("AD", "AC"),
}
"""Seat letters -> (window letters, aisle letters)."""

CUTOFF = dt.timedelta(hours=2)
"""Flight bookings, changes and cancellations close this long before departure."""

PASSPORT_MARGIN_DAYS = 180
"""An international flight needs a passport valid this many days after departure."""

HOTEL_FREE_CANCEL = dt.timedelta(hours=48)
"""A flexible hotel rate is cancelled free until this long before check-in (15:00)."""

CHECK_IN_TIME = dt.time(15, 0)
MAX_NIGHTS = 14
NON_REFUNDABLE_DISCOUNT = Decimal("0.10")
"""The non-refundable rate plan is 10% cheaper per night, rounded to the cent."""

RATE_PLANS: tuple[str, ...] = ("flexible", "non_refundable")


class Base(DeclarativeBase):
    pass


class Flight(Base):
    """One scheduled flight; times are local to the airport (no time zones)."""

    __tablename__ = "flights"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    number: Mapped[str] = mapped_column(String(8))
    airline: Mapped[str] = mapped_column(String(2))
    origin: Mapped[str] = mapped_column(String(3), index=True)
    destination: Mapped[str] = mapped_column(String(3), index=True)
    departs_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)
    arrives_at: Mapped[dt.datetime] = mapped_column(DateTime)
    aircraft: Mapped[str] = mapped_column(String(8))
    occupied: Mapped[str] = mapped_column(String(2000))
    """Seats sold to passengers outside this system, space-separated in seat-map order."""

    fares: Mapped[list[Fare]] = relationship(order_by="Fare.id")


class Fare(Base):
    """The price of one fare class in one cabin of a flight (base fare plus taxes)."""

    __tablename__ = "fares"
    __table_args__ = (UniqueConstraint("flight_id", "cabin", "fare_class"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    flight_id: Mapped[str] = mapped_column(ForeignKey("flights.id"), index=True)
    cabin: Mapped[str] = mapped_column(String(16))
    fare_class: Mapped[str] = mapped_column(String(12))
    base: Mapped[Decimal] = mapped_column(Money())
    taxes: Mapped[Decimal] = mapped_column(Money())


class Hotel(Base):
    __tablename__ = "hotels"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    city: Mapped[str] = mapped_column(String(40), index=True)
    address: Mapped[str] = mapped_column(String(120))
    stars: Mapped[int] = mapped_column(Integer)

    room_types: Mapped[list[RoomType]] = relationship(order_by="RoomType.id")


class RoomType(Base):
    """A kind of room a hotel sells at one nightly rate per night (``RoomRate``)."""

    __tablename__ = "room_types"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    hotel_id: Mapped[str] = mapped_column(ForeignKey("hotels.id"), index=True)
    name: Mapped[str] = mapped_column(String(40))
    beds: Mapped[str] = mapped_column(String(40))
    max_guests: Mapped[int] = mapped_column(Integer)

    rooms: Mapped[list[Room]] = relationship(order_by="Room.id", back_populates="room_type")


class Room(Base):
    __tablename__ = "rooms"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    hotel_id: Mapped[str] = mapped_column(ForeignKey("hotels.id"), index=True)
    room_type_id: Mapped[str] = mapped_column(ForeignKey("room_types.id"), index=True)
    number: Mapped[str] = mapped_column(String(8))

    room_type: Mapped[RoomType] = relationship(back_populates="rooms")


class RoomRate(Base):
    """What one night in a room of this type costs (a night without a rate is not on sale)."""

    __tablename__ = "room_rates"
    room_type_id: Mapped[str] = mapped_column(ForeignKey("room_types.id"), primary_key=True)
    night: Mapped[dt.date] = mapped_column(Date, primary_key=True)
    rate: Mapped[Decimal] = mapped_column(Money())


class RoomNight(Base):
    """A night a room is taken: by a booking here, or (``hotel_booking_id`` null) by a guest
    who booked elsewhere. One row per room and night: a room cannot be sold twice."""

    __tablename__ = "room_nights"
    room_id: Mapped[str] = mapped_column(ForeignKey("rooms.id"), primary_key=True)
    night: Mapped[dt.date] = mapped_column(Date, primary_key=True)
    hotel_booking_id: Mapped[str | None] = mapped_column(
        ForeignKey("hotel_bookings.id"), nullable=True, index=True
    )


class Traveller(Base):
    __tablename__ = "travellers"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    first_name: Mapped[str] = mapped_column(String(60))
    last_name: Mapped[str] = mapped_column(String(60))
    email: Mapped[str] = mapped_column(String(120), unique=True)
    """Lower case: emails are compared without regard to case."""
    date_of_birth: Mapped[dt.date] = mapped_column(Date)
    nationality: Mapped[str] = mapped_column(String(2))
    passport_number: Mapped[str] = mapped_column(String(12))
    passport_expiry: Mapped[dt.date] = mapped_column(Date)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    loyalty: Mapped[list[LoyaltyAccount]] = relationship(order_by="LoyaltyAccount.id")


class LoyaltyAccount(Base):
    """A traveller's frequent-flyer number with one airline (at most one per airline)."""

    __tablename__ = "loyalty_accounts"
    __table_args__ = (UniqueConstraint("traveller_id", "airline"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    traveller_id: Mapped[str] = mapped_column(ForeignKey("travellers.id"), index=True)
    airline: Mapped[str] = mapped_column(String(2))
    number: Mapped[str] = mapped_column(String(16))


class Itinerary(Base):
    """A trip of a lead traveller: flight and hotel bookings paid together."""

    __tablename__ = "itineraries"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    traveller_id: Mapped[str] = mapped_column(ForeignKey("travellers.id"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    status: Mapped[str] = mapped_column(String(12))
    """"active" or "cancelled" (every booking cancelled with it)."""
    total_paid: Mapped[Decimal] = mapped_column(Money())
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    cancelled_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)

    flights: Mapped[list[FlightBooking]] = relationship(order_by="FlightBooking.id")
    hotels: Mapped[list[HotelBooking]] = relationship(order_by="HotelBooking.id")
    ledger: Mapped[list[Transaction]] = relationship(order_by="Transaction.id")


class FlightBooking(Base):
    """One traveller's ticket on one flight: cabin, fare class, seat and what was paid."""

    __tablename__ = "flight_bookings"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    itinerary_id: Mapped[str] = mapped_column(ForeignKey("itineraries.id"), index=True)
    traveller_id: Mapped[str] = mapped_column(ForeignKey("travellers.id"), index=True)
    flight_id: Mapped[str] = mapped_column(ForeignKey("flights.id"), index=True)
    cabin: Mapped[str] = mapped_column(String(16))
    fare_class: Mapped[str] = mapped_column(String(12))
    seat: Mapped[str] = mapped_column(String(4))
    base_fare: Mapped[Decimal] = mapped_column(Money())
    taxes: Mapped[Decimal] = mapped_column(Money())
    loyalty_number: Mapped[str | None] = mapped_column(String(16), nullable=True)
    changes: Mapped[int] = mapped_column(Integer)
    amount_paid: Mapped[Decimal] = mapped_column(Money())
    refunded: Mapped[Decimal] = mapped_column(Money())
    status: Mapped[str] = mapped_column(String(12))
    """"confirmed" or "cancelled"."""
    booked_at: Mapped[dt.datetime] = mapped_column(DateTime)
    cancelled_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)

    flight: Mapped[Flight] = relationship()
    traveller: Mapped[Traveller] = relationship()
    itinerary: Mapped[Itinerary] = relationship(back_populates="flights")


class HotelBooking(Base):
    __tablename__ = "hotel_bookings"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    itinerary_id: Mapped[str] = mapped_column(ForeignKey("itineraries.id"), index=True)
    hotel_id: Mapped[str] = mapped_column(ForeignKey("hotels.id"), index=True)
    room_id: Mapped[str] = mapped_column(ForeignKey("rooms.id"), index=True)
    check_in: Mapped[dt.date] = mapped_column(Date)
    check_out: Mapped[dt.date] = mapped_column(Date)
    guests: Mapped[int] = mapped_column(Integer)
    rate_plan: Mapped[str] = mapped_column(String(16))
    """"flexible" or "non_refundable" (see ``RATE_PLANS``)."""
    total: Mapped[Decimal] = mapped_column(Money())
    first_night: Mapped[Decimal] = mapped_column(Money())
    amount_paid: Mapped[Decimal] = mapped_column(Money())
    refunded: Mapped[Decimal] = mapped_column(Money())
    status: Mapped[str] = mapped_column(String(12))
    booked_at: Mapped[dt.datetime] = mapped_column(DateTime)
    cancelled_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)

    hotel: Mapped[Hotel] = relationship()
    room: Mapped[Room] = relationship()
    itinerary: Mapped[Itinerary] = relationship(back_populates="hotels")


class Transaction(Base):
    """One line of an itinerary's ledger: money taken ("charge", "change_fee",
    "fare_difference") or given back ("refund") for one booking."""

    __tablename__ = "transactions"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    itinerary_id: Mapped[str] = mapped_column(ForeignKey("itineraries.id"), index=True)
    flight_booking_id: Mapped[str | None] = mapped_column(
        ForeignKey("flight_bookings.id"), nullable=True, index=True
    )
    hotel_booking_id: Mapped[str | None] = mapped_column(
        ForeignKey("hotel_bookings.id"), nullable=True, index=True
    )
    kind: Mapped[str] = mapped_column(String(16))
    amount: Mapped[Decimal] = mapped_column(Money())
    """Always positive; ``kind`` says which way it went."""
    memo: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


TAKEN_KINDS: tuple[str, ...] = ("charge", "change_fee", "fare_difference")
"""Ledger kinds that take money; "refund" gives it back."""


# ------------------------------------------------------------ domain rules
# Shared by the sampler and the tools, so sampled history and live calls agree exactly.
@functools.cache
def seat_map(aircraft: str, cabin: str) -> tuple[str, ...]:
    """Every seat of a cabin, front to back, left to right (built once per aircraft and cabin).

    >>> seat_map("E190", "business")
    ('1A', '1C', '1D', '2A', '2C', '2D')
    """
    layout = LAYOUTS[aircraft].get(cabin)
    if layout is None:
        return ()
    first, last, letters = layout
    return tuple(f"{row}{letter}" for row in range(first, last + 1) for letter in letters)


def seat_cabin(aircraft: str, seat: str) -> str | None:
    """The cabin a seat such as "12C" is in, or ``None`` when the aircraft has no such seat."""
    for cabin in LAYOUTS[aircraft]:
        if seat in seat_map(aircraft, cabin):
            return cabin
    return None


def seat_position(aircraft: str, seat: str) -> str:
    """ "window", "aisle" or "middle"."""
    cabin = seat_cabin(aircraft, seat)
    if cabin is None:
        return "middle"
    window, aisle = WINDOW_AISLE[LAYOUTS[aircraft][cabin][2]]
    letter = seat[-1]
    return "window" if letter in window else "aisle" if letter in aisle else "middle"


def is_international(origin: str, destination: str) -> bool:
    return AIRPORTS[origin][1] != AIRPORTS[destination][1]


def passport_valid_for(expiry: dt.date, departure: dt.date, international: bool) -> bool:
    """Valid on the day of departure; for an international flight, 180 days beyond it.

    >>> passport_valid_for(dt.date(2026, 9, 1), dt.date(2026, 4, 1), True)
    False
    >>> passport_valid_for(dt.date(2026, 9, 1), dt.date(2026, 4, 1), False)
    True
    """
    margin = dt.timedelta(days=PASSPORT_MARGIN_DAYS if international else 0)
    return expiry >= departure + margin


def flight_refund(fare_class: str, base_fare: Decimal, taxes: Decimal) -> Decimal:
    """What cancelling a ticket gives back: the whole fare for flex, the taxes otherwise.

    >>> flight_refund("flex", Decimal("120.00"), Decimal("35.50"))
    Decimal('155.50')
    >>> flight_refund("basic", Decimal("120.00"), Decimal("35.50"))
    Decimal('35.50')
    """
    return base_fare + taxes if FARE_RULES[fare_class]["refundable"] else taxes


def change_fee(fare_class: str, cabin: str) -> Decimal | None:
    """The fee for moving a ticket to another flight, or ``None`` when it cannot change."""
    if not FARE_RULES[fare_class]["changeable"]:
        return None
    return ZERO if fare_class == "flex" else CHANGE_FEES[cabin]


def change_cost(
    fare_class: str, cabin: str, old_total: Decimal, new_total: Decimal
) -> tuple[Decimal, Decimal, Decimal]:
    """(fee, fare difference to pay, residual refunded) of a change to a fare of ``new_total``.

    A dearer flight costs the difference; a cheaper one gives the difference back only on a
    refundable (flex) fare, otherwise it is forfeited.

    >>> change_cost("standard", "economy", Decimal("150.00"), Decimal("180.00"))
    (Decimal('75.00'), Decimal('30.00'), Decimal('0.00'))
    >>> change_cost("flex", "economy", Decimal("150.00"), Decimal("120.00"))
    (Decimal('0.00'), Decimal('0.00'), Decimal('30.00'))
    """
    fee = change_fee(fare_class, cabin)
    if fee is None:
        raise ValueError(f"a {fare_class} fare cannot be changed")
    diff = new_total - old_total
    extra = diff if diff > 0 else ZERO
    residual = -diff if diff < 0 and FARE_RULES[fare_class]["refundable"] else ZERO
    return fee, extra, residual


def night_price(rate: Decimal, plan: str) -> Decimal:
    """One night's price under a rate plan (non-refundable is 10% off, to the cent).

    >>> night_price(Decimal("129.00"), "non_refundable")
    Decimal('116.10')
    """
    if plan == "non_refundable":
        return (rate * (1 - NON_REFUNDABLE_DISCOUNT)).quantize(CENT, rounding=ROUND_HALF_UP)
    return rate.quantize(CENT)


def free_cancel_until(check_in: dt.date) -> dt.datetime:
    return dt.datetime.combine(check_in, CHECK_IN_TIME) - HOTEL_FREE_CANCEL


def hotel_refund(
    plan: str, total: Decimal, first_night: Decimal, check_in: dt.date, at: dt.datetime
) -> Decimal:
    """A flexible rate refunds everything until 48 hours before check-in, then all but the
    first night; a non-refundable rate refunds nothing.

    >>> hotel_refund("flexible", Decimal("300.00"), Decimal("100.00"), dt.date(2026, 5, 10),
    ...              dt.datetime(2026, 5, 9, 9, 0))
    Decimal('200.00')
    """
    if plan == "non_refundable":
        return ZERO
    if at <= free_cancel_until(check_in):
        return total
    return total - first_night
