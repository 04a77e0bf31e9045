"""Flight tools from ``prove/travel_booking-v1`` on (``QUOTES``): a change or a cancellation
with a refund is made against its quote (the references: :mod:`.quotes`).

``quote_flight_change``, ``change_flight`` and ``cancel_flight_booking`` are redefined here
(``@tool(name=..., since=QUOTES)``; -v0 keeps :mod:`.flights`' definitions byte for byte),
and ``quote_flight_cancellation`` is new in -v1. They share :mod:`.flights`' checks and
writes, so the money a quote promises is computed the way -v0 computes it.
"""

from __future__ import annotations

from typing import Any

from prove_gym.server import PreconditionFailed, ToolContext
from prove_gym.server.tool import tool

from ..models import flight_refund
from ._common import _broken, _cancel_flight, _clock_text, _confirmed, _refund_rule
from .args import FlightBookingRow, FlightRow, SeatText
from .flights import (
    SEATS,
    _change,
    _check_change,
    _check_seat,
    _quote,
    _require_open,
    _seat,
    another_flight_of_route,
)
from .queries import FLIGHT
from .quotes import QUOTE_VALID, QUOTES, QuoteRef, QuoteText, quote_ref, read_ref, signature
from .results import CancellationQuote, Cancelled, ChangeDone, ChangeQuoted


def _check_ref(ctx: ToolContext, b: Any, new: Any | None, quote_id: str | None) -> QuoteRef:
    """The quote rules a change (to flight ``new``) or a cancellation (``new`` None) can be
    refused by before it is priced: a quote is given, is shaped as one of its kind, for this
    booking and this flight, unused and unexpired."""
    if new is None:
        what, example = "a cancellation", "'cq_00031_0_202605140745_8d02e41b7c'"
        how = "Call quote_flight_cancellation for this booking, then pass its quote_id."
    else:
        what, example = "a flight change", "'fq_00031_0057_0_202605140745_3f9a2c7b01'"
        how = "Call quote_flight_change for this booking and flight, then pass its quote_id."
    if quote_id is None or not quote_id.strip():
        raise _broken("quote_required", f"{what} is made only against a quote. {how}")
    ref = read_ref(quote_id)
    if ref is None or (ref.kind == "cancel") != (new is None):
        raise _broken(
            "quote_unknown",
            f"{quote_id.strip()[:64]!r} is not a quote reference for {what} (they look like "
            f"{example}). {how}",
        )
    if ref.booking_id != b.id:
        raise _broken(
            "quote_other_booking",
            f"quote {ref.text} prices booking {ref.booking_id}, not {b.id}. {how}",
        )
    if new is not None and ref.flight_id != new.id:
        raise _broken(
            "quote_other_flight",
            f"quote {ref.text} prices a move to flight {ref.flight_id}, not {new.id}. {how}",
        )
    if ref.changes < b.changes:
        raise _broken(
            "quote_used",
            f"quote {ref.text} can no longer be used: booking {b.id} has been changed since "
            f"it was quoted. {how}",
        )
    if ref.expires_at <= ctx.now:
        raise _broken(
            "quote_expired",
            f"quote {ref.text} expired at {_clock_text(ctx, ref.expires_at)} (now "
            f"{_clock_text(ctx, ctx.now)}); quotes hold their price for "
            f"{QUOTE_VALID.seconds // 60} minutes. {how}",
        )
    return ref


def _altered(ref: QuoteRef, how: str) -> PreconditionFailed:
    """The refusal of a well-shaped reference whose signature is not ours."""
    return _broken(
        "quote_unknown",
        f"{ref.text} does not match a quote this agency made (its reference was altered). {how}",
    )


@tool(
    name="quote_flight_change",
    since=QUOTES,
    returns=("flight_booking", "flight"),
    phrasings=[
        "How much would it cost to move {flight_booking_id} to flight {new_flight_id}?",
        "Quote changing booking {flight_booking_id} to {new_flight_id}",
    ],
    values={"new_flight_id": another_flight_of_route},
)
def quote_flight_change(
    ctx: ToolContext, flight_booking_id: FlightBookingRow, new_flight_id: FlightRow
) -> ChangeQuoted:
    """Price moving a flight booking to another flight of the same route (same cabin and fare
    class), without changing anything. The quote_id it returns is what change_flight needs:
    it holds the price for 30 minutes and is used up by the change.

    Args:
        flight_booking_id: The booking, such as "fb_00031" (get_itinerary lists them).
        new_flight_id: The flight to move to, such as "fl_0057" (search_flights finds it).

    Returns:
        {"flight_booking_id": "fb_00031", "to_flight_id": "fl_0057", "change_fee": "75.00",
        "fare_difference_due": "18.00", "residual_refund": "0.00", "amount_due": "93.00",
        "quote_id": "fq_00031_0057_0_202605140745_3f9a2c7b01", "expires_at":
        "2026-05-14T07:45", "seats_left": 12, ...}.
    """
    b = flight_booking_id
    quote = _quote(ctx, b, new_flight_id)
    expires = ctx.now + QUOTE_VALID
    amounts = (quote["change_fee"], quote["fare_difference_due"], quote["residual_refund"])
    ref = quote_ref(ctx.seed, b.id, new_flight_id.id, b.changes, expires, amounts)
    return {**quote, "quote_id": ref, "expires_at": _clock_text(ctx, expires) or ""}


@tool(
    name="change_flight",
    since=QUOTES,
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
    quote_id: QuoteText | None = None,
) -> ChangeDone:
    """Move a flight booking to another flight of the same route, same cabin and fare class,
    at the price of its quote: call quote_flight_change first and pass its quote_id. The
    change charges exactly what the quote said (flex is free, standard pays a change fee,
    basic cannot change; a dearer flight costs the fare difference, a cheaper one refunds it
    only on a flex fare). Without a quote, or with another booking's or flight's, an expired
    or an already used one, nothing changes.

    Args:
        flight_booking_id: The booking, such as "fb_00031".
        new_flight_id: The new flight, such as "fl_0057" (same origin and destination).
        new_seat: A free seat of the booking's cabin on the new flight, such as "15D".
        quote_id: The quote_flight_change reference for this booking and flight, such as
            "fq_00031_0057_0_202605140745_3f9a2c7b01"; without it the change is refused.

    Returns:
        {"flight_booking_id": "fb_00031", "flight_id": "fl_0057", "seat": "15D",
        "change_fee_charged": "75.00", "fare_difference_charged": "18.00",
        "residual_refunded": "0.00", "amount_paid": "214.48", "transaction_ids":
        ["txn_00261", "txn_00262"], ...}.
    """
    b, new = flight_booking_id, new_flight_id
    place = _seat(new_seat)
    ref = _check_ref(ctx, b, new, quote_id)
    old = ctx.sql.one(FLIGHT, id=b.flight_id)
    fare, cost = _check_change(ctx, b, old, new)
    if ref.signature != signature(ctx.seed, b.id, new.id, ref.changes, ref.expires_at, cost):
        raise _altered(
            ref, f"Call quote_flight_change for {b.id} and {new.id}, then pass its quote_id."
        )
    _check_seat(ctx, new, b.cabin, place)
    return _change(ctx, b, old, new, place, fare, cost)


@tool(
    since=QUOTES,
    returns="flight_booking",
    phrasings=[
        "How much would I get back if I cancelled {flight_booking_id}?",
        "Quote cancelling the ticket {flight_booking_id}",
    ],
)
def quote_flight_cancellation(
    ctx: ToolContext, flight_booking_id: FlightBookingRow
) -> CancellationQuote:
    """Price cancelling a flight booking, without changing anything: the refund its fare
    gives (flex: the whole fare; standard and basic: only the taxes). The quote_id it returns
    is what cancel_flight_booking needs: it holds the refund for 30 minutes.

    Args:
        flight_booking_id: The booking, such as "fb_00031" (get_itinerary lists them).

    Returns:
        {"flight_booking_id": "fb_00031", "fare_class": "standard", "paid": "196.48",
        "refund": "32.49", "refund_rule": "standard fare: only the taxes are refunded",
        "quote_id": "cq_00031_0_202605140745_8d02e41b7c", "expires_at": "2026-05-14T07:45"}.
    """
    b = flight_booking_id
    _confirmed(ctx, b, b.id)
    _require_open(ctx, ctx.sql.one(FLIGHT, id=b.flight_id), "cancelled")
    refund = flight_refund(b.fare_class, b.base_fare, b.taxes)
    expires = ctx.now + QUOTE_VALID
    return {
        "flight_booking_id": b.id,
        "fare_class": b.fare_class,
        "paid": b.amount_paid,
        "refund": refund,
        "refund_rule": _refund_rule(b.fare_class),
        "quote_id": quote_ref(ctx.seed, b.id, None, b.changes, expires, (refund,)),
        "expires_at": _clock_text(ctx, expires) or "",
    }


@tool(
    name="cancel_flight_booking",
    since=QUOTES,
    writes=True,
    inverse_of="book_flight",
    destructive=True,
    returns=("flight_booking", "itinerary"),
    phrasings=[
        "Cancel flight booking {flight_booking_id}",
        "Cancel the ticket {flight_booking_id}",
    ],
)
def cancel_flight_booking(
    ctx: ToolContext, flight_booking_id: FlightBookingRow, quote_id: QuoteText | None = None
) -> Cancelled:
    """Cancel a flight booking and refund exactly what its quote said: call
    quote_flight_cancellation first and pass its quote_id. Flex refunds the whole fare,
    standard and basic only the taxes (change fees are never refunded). Frees the seat.
    Without a quote, or with another booking's, an expired or an already used one, nothing
    changes.

    Args:
        flight_booking_id: The booking, such as "fb_00031".
        quote_id: The quote_flight_cancellation reference for this booking, such as
            "cq_00031_0_202605140745_8d02e41b7c"; without it the cancellation is refused.

    Returns:
        {"booking_id": "fb_00031", "status": "cancelled", "refund": "32.49", "refund_rule":
        "standard fare: only the taxes are refunded", "itinerary_total_paid": "580.91", ...}.
    """
    b = flight_booking_id
    ref = _check_ref(ctx, b, None, quote_id)
    refund = flight_refund(b.fare_class, b.base_fare, b.taxes)
    if ref.signature != signature(ctx.seed, b.id, None, ref.changes, ref.expires_at, (refund,)):
        raise _altered(ref, f"Call quote_flight_cancellation for {b.id}, then pass its quote_id.")
    if b.status != "confirmed":
        raise _broken(
            "quote_used",
            f"quote {ref.text} can no longer be used: booking {b.id} was cancelled on "
            f"{_clock_text(ctx, b.cancelled_at)}.",
        )
    _require_open(ctx, ctx.sql.one(FLIGHT, id=b.flight_id), "cancelled")
    return _cancel_flight(ctx, b)
