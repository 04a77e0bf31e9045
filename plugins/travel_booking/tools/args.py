"""What the travel_booking tools take: entity rows, argument types and the named rules."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from prove_gym.server import Entity, Record

from ..models import (
    PASSPORT_MARGIN_DAYS,
    Flight,
    FlightBooking,
    Hotel,
    HotelBooking,
    Itinerary,
    Room,
    Traveller,
)

# Rows: the core looks the id up before the tool runs (not_found hints: __init__'s entities).
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
    "connection_too_short": "From -v2, a traveller's confirmed flights leave 45 minutes or "
    "more between one landing and the next departure, compared as instants.",
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
