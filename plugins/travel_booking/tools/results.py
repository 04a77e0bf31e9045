"""What the travel_booking tools return: the TypedDicts that become their output schemas."""

from __future__ import annotations

from decimal import Decimal

from prove_gym.server import TypedDict


class CabinBrief(TypedDict):
    cabin: str
    seats_left: int
    lowest_total: Decimal


class Schedule(TypedDict):
    """A flight's times as a result shows them (part of :class:`FlightSummary`)."""

    departs_at: str
    arrives_at: str
    duration_minutes: int


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


class ChangeQuoted(ChangeQuote):
    """A change quote from ``prove/travel_booking-v1`` on: its reference and expiry."""

    quote_id: str
    expires_at: str


class CancellationQuote(TypedDict):
    """A cancellation quote (``prove/travel_booking-v1`` on)."""

    flight_booking_id: str
    fare_class: str
    paid: Decimal
    refund: Decimal
    refund_rule: str
    quote_id: str
    expires_at: str


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
