"""The tools as ``prove/travel_booking-v2`` (``LOCAL_TIMES``) describes them: local times with
their offsets, block times that follow from the route, rules compared between instants.

Each is a retelling (:func:`~prove_gym.server.tool.retold`) of the tool in force before -v2:
the same parameters, result schema and code, which branches on ``ctx.env_version`` where -v2
reads times differently (:mod:`.._common`, :mod:`..times`); only the docstring the model
reads is new. Earlier versions keep theirs byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prove_gym.server.tool import retold

from ..times import LOCAL_TIMES
from . import flights, hotels, itineraries, quoted, travellers

_TIMES = """Times are local: a flight departs at its origin airport's local
    time and arrives at its destination's, each with its UTC offset (Lisbon and London are
    UTC+0 in winter, +1 in summer; the other airports +1 and +2), such as
    "2026-03-29T09:05+02:00"; duration_minutes is the route's block time (35 minutes plus
    the great-circle distance at 780 km/h, to 5 minutes), the same for every flight of a
    route. "Now" is the agency's clock, in UTC."""


def _retold(fn: Callable[..., Any], doc: str) -> Callable[..., Any]:
    return retold(fn, doc, since=LOCAL_TIMES, module=__name__)


search_flights = _retold(
    flights.search_flights,
    f"""Find flights between two airports, earliest departure first, with seats left and
    lowest price per cabin. {_TIMES}

    Args:
        origin: Airport code or city, such as "LIS" or "Lisbon".
        destination: Airport code or city, such as "CDG" or "Paris".
        date: Only flights departing that day in the origin's local time, such as
            "2026-05-14"; leave it out for every flight that has not departed yet.
        cabin: Only show this cabin: "economy", "premium_economy" or "business".
        limit: Maximum number of flights (1-50), such as 20.

    Returns:
        {{"origin": ["LIS"], "destination": ["CDG"], "total": 3, "flights": [{{"flight_id":
        "fl_0042", "number": "TP 1350", "departs_at": "2026-05-14T07:30+01:00", "arrives_at":
        "2026-05-14T11:00+02:00", "duration_minutes": 150, "booking_open": true, "cabins":
        [{{"cabin": "economy", "seats_left": 23, "lowest_total": "121.48"}}], ...}}]}}.
    """,
)

get_flight = _retold(
    flights.get_flight,
    f"""Get one flight with every fare (per cabin and fare class) and the fare's rules.
    {_TIMES}

    Args:
        flight_id: The flight, such as "fl_0042" (search_flights finds it).

    Returns:
        {{"flight_id": "fl_0042", "number": "TP 1350", "departs_at": "2026-05-14T07:30+01:00",
        "arrives_at": "2026-05-14T11:00+02:00", "duration_minutes": 150, "booking_open": true,
        "cabins": [...], "fares": [{{"cabin": "economy", "fare_class": "standard",
        "base_fare": "88.99", "taxes": "32.49", "total": "121.48", "changeable": true,
        "change_fee": "75.00", "refundable": false, "refund_if_cancelled": "32.49"}}, ...],
        "currency": "EUR"}}.
    """,
)

book_flight = _retold(
    flights.book_flight,
    f"""Book a seat on a flight for a traveller, in a cabin and fare class, and charge the fare
    to the itinerary. The traveller's loyalty number with the airline is added. Booking
    closes 2 hours before the departure instant (rule departure_cutoff), and the traveller's
    flights must leave 45 minutes or more between one landing and the next departure
    (rule connection_too_short). {_TIMES}

    Args:
        itinerary_id: The trip to add it to, such as "itn_0012".
        traveller_id: Who flies, such as "trv_0007" (any traveller, not only the lead).
        flight_id: The flight, such as "fl_0042" (search_flights finds it).
        cabin: "economy", "premium_economy" or "business".
        fare_class: "basic" (no changes, taxes refunded), "standard" (changes for a fee,
            taxes refunded) or "flex" (free changes, full refund).
        seat: A free seat of that cabin, such as "14C" (get_seat_map lists them).

    Returns:
        {{"flight_booking_id": "fb_00112", "departs_at": "2026-05-14T07:30+01:00", "seat":
        "14C", "fare_total": "121.48", "amount_paid": "121.48", "itinerary_total_paid":
        "733.88", "transaction_ids": ["txn_00260"], ...}}.
    """,
)

change_seat = _retold(
    flights.change_seat,
    f"""Move a confirmed flight booking to another free seat of the same cabin (free of
    charge), until 2 hours before the departure instant (rule departure_cutoff). {_TIMES}

    Args:
        flight_booking_id: The booking, such as "fb_00031".
        seat: A free seat in the booking's cabin, such as "3A" (get_seat_map lists them).

    Returns:
        The booking with its new seat: {{"flight_booking_id": "fb_00031", "departs_at":
        "2026-05-14T07:30+01:00", "seat": "3A", ...}}.
    """,
)

quote_flight_change = _retold(
    quoted.quote_flight_change,
    f"""Price moving a flight booking to another flight of the same route (same cabin and fare
    class), without changing anything. The quote_id it returns is what change_flight needs:
    it holds the price for 30 minutes of the agency's clock (expires_at, in UTC). The new
    flight must leave the traveller's other flights 45 minutes or more between one landing
    and the next departure (rule connection_too_short). {_TIMES}

    Args:
        flight_booking_id: The booking, such as "fb_00031" (get_itinerary lists them).
        new_flight_id: The flight to move to, such as "fl_0057" (search_flights finds it).

    Returns:
        {{"flight_booking_id": "fb_00031", "to_flight_id": "fl_0057", "to_departs_at":
        "2026-05-16T18:40+02:00", "change_fee": "75.00", "fare_difference_due": "18.00",
        "residual_refund": "0.00", "amount_due": "93.00", "quote_id":
        "fq_00031_0057_0_202605140745_3f9a2c7b01", "expires_at": "2026-05-14T07:45+00:00",
        "seats_left": 12, ...}}.
    """,
)

change_flight = _retold(
    quoted.change_flight,
    f"""Move a flight booking to another flight of the same route, same cabin and fare class,
    at the price of its quote: call quote_flight_change first and pass its quote_id. The
    change charges exactly what the quote said (flex is free, standard pays a change fee,
    basic cannot change; a dearer flight costs the fare difference, a cheaper one refunds it
    only on a flex fare). Both flights must depart 2 hours or more from now, compared as
    instants (rule departure_cutoff), and the new one must leave the traveller's other
    flights 45 minutes or more between one landing and the next departure (rule
    connection_too_short). Without a quote, or with another booking's or
    flight's, an expired or an already used one, nothing changes. {_TIMES}

    Args:
        flight_booking_id: The booking, such as "fb_00031".
        new_flight_id: The new flight, such as "fl_0057" (same origin and destination).
        new_seat: A free seat of the booking's cabin on the new flight, such as "15D".
        quote_id: The quote_flight_change reference for this booking and flight, such as
            "fq_00031_0057_0_202605140745_3f9a2c7b01"; without it the change is refused.

    Returns:
        {{"flight_booking_id": "fb_00031", "flight_id": "fl_0057", "departs_at":
        "2026-05-16T18:40+02:00", "seat": "15D", "change_fee_charged": "75.00",
        "fare_difference_charged": "18.00", "residual_refunded": "0.00", "amount_paid":
        "214.48", "transaction_ids": ["txn_00261", "txn_00262"], ...}}.
    """,
)

quote_flight_cancellation = _retold(
    quoted.quote_flight_cancellation,
    f"""Price cancelling a flight booking, without changing anything: the refund its fare
    gives (flex: the whole fare; standard and basic: only the taxes). The quote_id it returns
    is what cancel_flight_booking needs: it holds the refund for 30 minutes of the agency's
    clock (expires_at, in UTC). {_TIMES}

    Args:
        flight_booking_id: The booking, such as "fb_00031" (get_itinerary lists them).

    Returns:
        {{"flight_booking_id": "fb_00031", "fare_class": "standard", "paid": "196.48",
        "refund": "32.49", "refund_rule": "standard fare: only the taxes are refunded",
        "quote_id": "cq_00031_0_202605140745_8d02e41b7c", "expires_at":
        "2026-05-14T07:45+00:00"}}.
    """,
)

cancel_flight_booking = _retold(
    quoted.cancel_flight_booking,
    f"""Cancel a flight booking and refund exactly what its quote said: call
    quote_flight_cancellation first and pass its quote_id. Flex refunds the whole fare,
    standard and basic only the taxes (change fees are never refunded). Frees the seat.
    Closes 2 hours before the departure instant (rule departure_cutoff). Without a quote, or
    with another booking's, an expired or an already used one, nothing changes. {_TIMES}

    Args:
        flight_booking_id: The booking, such as "fb_00031".
        quote_id: The quote_flight_cancellation reference for this booking, such as
            "cq_00031_0_202605140745_8d02e41b7c"; without it the cancellation is refused.

    Returns:
        {{"booking_id": "fb_00031", "status": "cancelled", "refund": "32.49", "refund_rule":
        "standard fare: only the taxes are refunded", "itinerary_total_paid": "580.91", ...}}.
    """,
)

list_itineraries = _retold(
    itineraries.list_itineraries,
    f"""List the itineraries a traveller leads or flies on, newest first. first_departure is
    the earliest confirmed flight's departure (by instant) in its origin's local time;
    created_at is the agency's clock, in UTC. {_TIMES}

    Args:
        traveller_id: The traveller, such as "trv_0007" (find_travellers finds them).
        status: Only "active" or only "cancelled" itineraries.
        limit: Maximum number of itineraries (1-50), such as 20.

    Returns:
        {{"traveller_id": "trv_0007", "total": 2, "itineraries": [{{"itinerary_id": "itn_0012",
        "name": "Paris client visit", "status": "active", "total_paid": "612.40",
        "confirmed_flights": 2, "confirmed_hotels": 1, "first_departure":
        "2026-05-14T07:30+01:00", "created_at": "2026-04-30T10:12+00:00", ...}}]}}.
    """,
)

get_itinerary = _retold(
    itineraries.get_itinerary,
    f"""Get an itinerary with its flight and hotel bookings, what each would refund if
    cancelled now, and its ledger of payments and refunds. A hotel's check-in (15:00) and
    free_cancellation_until are the hotel's local time with its offset; the ledger's times
    are the agency's clock, in UTC. {_TIMES}

    Args:
        itinerary_id: The itinerary, such as "itn_0012" (list_itineraries finds it).

    Returns:
        {{"itinerary_id": "itn_0012", "status": "active", "total_paid": "612.40", "flights":
        [{{"flight_booking_id": "fb_00031", "number": "TP 1350", "departs_at":
        "2026-05-14T07:30+01:00", "seat": "14C", "fare_class": "standard", "changeable": true,
        "change_fee": "75.00", "refund_if_cancelled": "32.49", ...}}], "hotels":
        [{{"hotel_booking_id": "hb_00009", "rate_plan": "flexible", "free_cancellation_until":
        "2026-05-12T15:00+02:00", "refund_if_cancelled": "387.00", ...}}], "ledger":
        [{{"transaction_id": "txn_00102", "kind": "charge", "amount": "121.48", "created_at":
        "2026-04-30T10:12+00:00", ...}}], "refund_if_cancelled": "419.49"}}.
    """,
)

cancel_itinerary = _retold(
    itineraries.cancel_itinerary,
    f"""Cancel an itinerary and every confirmed booking on it, each refunded by its own rules.
    Refused (nothing cancelled, rule travel_started) when any of its travel has already
    started: a flight departing within 2 hours, or a stay past its check-in (15:00 in the
    hotel's city), compared as instants. {_TIMES}

    Args:
        itinerary_id: The itinerary, such as "itn_0012".

    Returns:
        {{"itinerary_id": "itn_0012", "status": "cancelled", "cancelled": [{{"booking_id":
        "fb_00031", "refund": "32.49", ...}}, ...], "refund_total": "419.49", "total_paid":
        "192.91"}}.
    """,
)

book_hotel = _retold(
    hotels.book_hotel,
    """Book a hotel room for every night from check_in to check_out and charge the stay to the
    itinerary. Check-in is at 15:00 in the hotel's city; free_cancellation_until is 48 hours
    before that instant, shown in the hotel's local time with its UTC offset.

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
        "2026-05-14", "rate": "129.00"}, ...], "free_cancellation_until":
        "2026-05-12T15:00+02:00", "itinerary_total_paid": "999.88", "transaction_ids":
        ["txn_00263"], ...}.
    """,
)

cancel_hotel_booking = _retold(
    hotels.cancel_hotel_booking,
    """Cancel a hotel booking and free its room nights. A flexible rate refunds everything
    until 48 hours before check-in (15:00 in the hotel's city, compared as instants), then
    all but the first night; non_refundable refunds nothing. Once check-in's 15:00 has
    passed the stay cannot be cancelled (rule stay_started).

    Args:
        hotel_booking_id: The booking, such as "hb_00009".

    Returns:
        {"booking_id": "hb_00009", "status": "cancelled", "refund": "387.00", "refund_rule":
        "flexible rate cancelled 48 hours or more before check-in: refunded in full", ...}.
    """,
)

add_loyalty_number = _retold(
    travellers.add_loyalty_number,
    """Save a traveller's frequent-flyer number with an airline (one per airline); their
    confirmed bookings on that airline of flights not yet departed (compared as instants:
    the departure in its origin's local time against the agency's clock, in UTC) get it too.

    Args:
        traveller_id: The traveller, such as "trv_0007".
        airline: Airline code: "TP" (TAP), "IB" (Iberia), "AF" (Air France), "BA" (British
            Airways), "LH" (Lufthansa), "AZ" (ITA), "KL" (KLM) or "SK" (SAS).
        number: The airline's code then 6-12 digits, such as "TP123456789".

    Returns:
        The traveller with "loyalty" and "bookings_updated": ["fb_00031"] (upcoming bookings
        that now carry the number).
    """,
)
