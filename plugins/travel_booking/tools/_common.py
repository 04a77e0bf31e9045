"""Checks, ledger writes and result builders that several travel_booking resources share."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

from prove_gym.server import Conflict, InvalidArgument, PreconditionFailed, ToolContext, next_id

from ..models import (
    CHECK_IN_TIME,
    CUTOFF,
    FARE_RULES,
    HOTEL_FREE_CANCEL,
    ZERO,
    FlightBooking,
    HotelBooking,
    Itinerary,
    Transaction,
    change_fee,
    flight_refund,
    free_cancel_until,
    hotel_refund,
    seat_map,
)
from ..times import LOCAL_TIMES, city_zone, departure, server_clock, show, show_in, show_utc
from ..times import check_in as check_in_instant
from .queries import FREE_NIGHTS, HOTEL, ITINERARY
from .results import Cancelled, FlightBookingOut, HotelBookingOut


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


def _free_of(flight: Any, cabin: str, booked: set[str]) -> list[str]:
    """:func:`_free_seats` given the flight's confirmed bookings' seats (``booked``)."""
    gone = set(flight.occupied.split())
    gone.update(booked)  # (in place: a union would copy the set)
    return [s for s in seat_map(flight.aircraft, cabin) if s not in gone]


def _local(ctx: ToolContext) -> bool:
    """Whether the session reads times as local times and instants (-v2 on: :mod:`..times`)."""
    return ctx.env_version >= LOCAL_TIMES


def _clock(ctx: ToolContext) -> dt.datetime:
    """The server's "now", comparable with :func:`_departs`: naive before -v2, the UTC
    instant from -v2."""
    return server_clock(ctx.now) if _local(ctx) else ctx.now


def _departs(ctx: ToolContext, flight: Any) -> dt.datetime:
    """When a flight (any row with its ``origin`` and ``departs_at``) leaves, comparable
    with :func:`_clock`: the stored time before -v2, its instant from -v2."""
    return departure(flight.origin, flight.departs_at) if _local(ctx) else flight.departs_at


def _departs_text(ctx: ToolContext, flight: Any) -> str:
    """A flight's departure as a result shows it: the stored time before -v2, the origin's
    local time with its offset from -v2 ("2026-03-29T09:05+02:00")."""
    if _local(ctx):
        return show(departure(flight.origin, flight.departs_at), flight.origin)
    return str(flight.departs_at.isoformat(timespec="minutes"))


def _clock_text(ctx: ToolContext, value: dt.datetime | None) -> str | None:
    """A time of the server's clock (a booking's, a quote's) as a result shows it: with its
    offset (UTC) from -v2."""
    if value is not None and _local(ctx):
        return show_utc(value)
    return _stamp(value)


def _open(ctx: ToolContext, flight: Any) -> bool:
    return _departs(ctx, flight) - _clock(ctx) >= CUTOFF


def _active(ctx: ToolContext, itin: Any) -> None:
    if itin.status != "active":
        raise _broken(
            "itinerary_cancelled",
            f"itinerary {itin.id} ({itin.name}) was cancelled on "
            f"{_clock_text(ctx, itin.cancelled_at)}; it takes no new bookings. Create a new "
            "itinerary for this trip.",
        )


def _confirmed(ctx: ToolContext, booking: Any, booking_id: str) -> None:
    if booking.status != "confirmed":
        raise _broken(
            "booking_cancelled",
            f"booking {booking_id} was cancelled on {_clock_text(ctx, booking.cancelled_at)}; it "
            "can no longer be changed or cancelled. Make a new booking instead.",
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
        "departs_at": _departs_text(ctx, b),
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


def _check_in(ctx: ToolContext, b: Any) -> dt.datetime:
    """When a hotel booking's stay starts (check-in day's 15:00), comparable with
    :func:`_clock`: from -v2 the instant of 15:00 in the hotel's city."""
    if _local(ctx):
        city = ctx.sql.one(HOTEL, id=b.hotel_id).city
        return check_in_instant(city, b.check_in, CHECK_IN_TIME)
    return dt.datetime.combine(b.check_in, CHECK_IN_TIME)


def _stay_started(ctx: ToolContext, b: Any) -> bool:
    return _clock(ctx) >= _check_in(ctx, b)


def _hotel_refund(ctx: ToolContext, b: Any) -> Decimal:
    """What cancelling hotel booking ``b`` now refunds (:func:`~..models.hotel_refund`; from
    -v2 the 48 hours before check-in are counted between instants)."""
    if not _local(ctx):
        return hotel_refund(b.rate_plan, b.total, b.first_night, b.check_in, ctx.now)
    if b.rate_plan == "non_refundable":
        return ZERO
    free = _clock(ctx) <= _check_in(ctx, b) - HOTEL_FREE_CANCEL
    return b.total if free else b.total - b.first_night


def _free_until_text(ctx: ToolContext, b: Any) -> str | None:
    """Until when a flexible booking cancels free: from -v2 in the hotel's local time with
    its offset."""
    if b.rate_plan != "flexible":
        return None
    if not _local(ctx):
        return _stamp(free_cancel_until(b.check_in))
    city = ctx.sql.one(HOTEL, id=b.hotel_id).city
    return show_in(_check_in(ctx, b) - HOTEL_FREE_CANCEL, city_zone(city))


def _hotel_booking_out(ctx: ToolContext, b: Any) -> HotelBookingOut:
    """``b``: a row of HOTEL_BOOKING (the booking with its hotel's, room's and type's names)."""
    live = b.status == "confirmed" and not _stay_started(ctx, b)
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
        "free_cancellation_until": _free_until_text(ctx, b),
        "refund_if_cancelled": _hotel_refund(ctx, b) if live else None,
    }


def _refund_rule(fare_class: str) -> str:
    """What cancelling a ticket of ``fare_class`` refunds, as a result says it."""
    if FARE_RULES[fare_class]["refundable"]:
        return "flex fare: the whole fare is refunded"
    return f"{fare_class} fare: only the taxes are refunded"


def _cancel_flight(ctx: ToolContext, b: Any) -> Cancelled:
    """Cancel a confirmed flight booking (a row with the columns of ``flight_bookings``)."""
    refund = flight_refund(b.fare_class, b.base_fare, b.taxes)
    rule = _refund_rule(b.fare_class)
    note = f"Refund of ticket {b.id} ({b.fare_class} fare)"
    return _cancelled(ctx, FlightBooking, b, refund, rule, note, flight=b.id)


def _cancel_hotel(ctx: ToolContext, b: Any) -> Cancelled:
    """Cancel a confirmed hotel booking (a row with the columns of ``hotel_bookings``) and
    free its room nights."""
    refund = _hotel_refund(ctx, b)
    if b.rate_plan == "non_refundable":
        rule = "non_refundable rate: nothing is refunded"
    elif refund == b.total:
        rule = "flexible rate cancelled 48 hours or more before check-in: refunded in full"
    else:
        rule = "flexible rate cancelled within 48 hours of check-in: the first night is kept"
    ctx.sql.run(FREE_NIGHTS, hotel_booking_id=b.id)
    note = f"Refund of hotel booking {b.id} ({b.rate_plan} rate)"
    return _cancelled(ctx, HotelBooking, b, refund, rule, note, hotel=b.id)


def _cancelled(
    ctx: ToolContext,
    model: type[FlightBooking] | type[HotelBooking],
    b: Any,
    refund: Decimal,
    rule: str,
    note: str,
    **link: str,
) -> Cancelled:
    """Mark booking ``b`` (a row of ``model``) cancelled, move ``refund`` out of it and its
    itinerary with a refund transaction (``note``, linked by ``link``), and say so."""
    itin = ctx.sql.one(ITINERARY, id=b.itinerary_id)
    paid = b.amount_paid
    changes: dict[str, Any] = {"status": "cancelled", "cancelled_at": ctx.now}
    if refund > 0:
        changes["refunded"] = b.refunded + refund
        changes["amount_paid"] = b.amount_paid - refund
        itin = ctx.sql.update(Itinerary, itin, total_paid=itin.total_paid - refund)
    b = ctx.sql.update(model, b, **changes)
    ids = [_txn(ctx, itin.id, "refund", refund, note, **link)] if refund > 0 else []
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


def _day_ahead(ctx: ToolContext, rng: random.Random) -> str:
    return (ctx.now + dt.timedelta(days=rng.choice([3, 7, 10, 14, 21]))).date().isoformat()
