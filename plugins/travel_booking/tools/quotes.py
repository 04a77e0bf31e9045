"""Quote references, from ``prove/travel_booking-v1`` on (``QUOTES``): a flight change or a
cancellation with a refund is confirmed against the quote it was priced by, and moves exactly
that quote's money.

``quote_flight_change`` prices a change and ``quote_flight_cancellation`` a cancellation; each
returns a reference that ``change_flight`` or ``cancel_flight_booking`` must carry. The
reference is signed and holds what the quote promised: the booking, the flight a change moves
it to, how many times the booking had been changed when it was quoted (a change uses a quote
up) and when it expires (``QUOTE_VALID`` after it was made, in the server's clock), so nothing
has to be stored for it and a state's tables stay the same in every version. The signature
also covers the quoted amounts: the money moves only at the price quoted.

>>> import datetime as dt
>>> from decimal import Decimal
>>> at = dt.datetime(2026, 5, 14, 7, 45)
>>> ref = quote_ref(7, "fb_00031", "fl_0057", 0, at, (Decimal("75.00"), Decimal("18.00")))
>>> ref.startswith("fq_00031_0057_0_202605140745_")
True
>>> read_ref(ref).flight_id, read_ref("fq_1_2") is None
('fl_0057', True)
>>> cancel = quote_ref(7, "fb_00031", None, 1, at, (Decimal("32.49"),))
>>> cancel.startswith("cq_00031_1_202605140745_"), read_ref(cancel).kind
(True, 'cancel')
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import Field

QUOTES = 1
"""The env version quotes start in: from it on, ``change_flight`` and
``cancel_flight_booking`` need a quote reference."""

QUOTE_VALID = dt.timedelta(minutes=30)
"""How long a quote holds its price, from when it was made (the server's clock)."""

QuoteText = Annotated[str, Field(max_length=64)]

_STAMP = "%Y%m%d%H%M"
_PREFIX = {"change": "fq", "cancel": "cq"}


@dataclass(frozen=True, slots=True)
class QuoteRef:
    """What a quote reference says (unchecked: :func:`signature` tells whether it is ours).

    Attributes:
        kind: ``"change"`` (``fq_...``) or ``"cancel"`` (``cq_...``).
        booking_id: The booking quoted (``"fb_00031"``).
        flight_id: The flight a change moves it to (``"fl_0057"``); ``None`` for a
            cancellation.
        changes: The booking's change count when quoted; a change raises it, using the
            quote up.
        expires_at: When the quote stops holding its price.
        signature: The reference's last part.
        text: The reference as given (stripped).
    """

    kind: Literal["change", "cancel"]
    booking_id: str
    flight_id: str | None
    changes: int
    expires_at: dt.datetime
    signature: str
    text: str


def signature(
    seed: int,
    booking_id: str,
    flight_id: str | None,
    changes: int,
    expires_at: dt.datetime,
    amounts: tuple[Decimal, ...],
) -> str:
    """The signature of a quote: 10 hex digits over what it promises, keyed by the state's
    seed (the same on every machine; a model cannot make one up)."""
    text = "|".join(
        [
            "travel_booking.quote",
            str(seed),
            booking_id,
            flight_id or "cancel",
            str(changes),
            expires_at.strftime(_STAMP),
            *(f"{a:.2f}" for a in amounts),
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def quote_ref(
    seed: int,
    booking_id: str,
    flight_id: str | None,
    changes: int,
    expires_at: dt.datetime,
    amounts: tuple[Decimal, ...],
) -> str:
    """The reference of a quote: ``fq_<booking>_<flight>_<changes>_<expiry>_<sig>`` for a
    change to ``flight_id``, ``cq_<booking>_<changes>_<expiry>_<sig>`` for a cancellation."""
    sig = signature(seed, booking_id, flight_id, changes, expires_at, amounts)
    moved = [] if flight_id is None else [flight_id.removeprefix("fl_")]
    parts = [
        _PREFIX["cancel" if flight_id is None else "change"],
        booking_id.removeprefix("fb_"),
        *moved,
        str(changes),
        expires_at.strftime(_STAMP),
        sig,
    ]
    return "_".join(parts)


def read_ref(text: str) -> QuoteRef | None:
    """What a reference says, or ``None`` when it is not shaped as one (any text: bounded by
    the parameter's ``max_length``)."""
    parts = text.strip().split("_")
    if len(parts) == 6 and parts[0] == "fq":
        kind: Literal["change", "cancel"] = "change"
        _, booking, flight, changes, stamp, sig = parts
    elif len(parts) == 5 and parts[0] == "cq":
        kind, flight = "cancel", ""
        _, booking, changes, stamp, sig = parts
    else:
        return None
    numbers = (booking, changes, stamp) if kind == "cancel" else (booking, flight, changes, stamp)
    if not all(_digits(part) for part in numbers) or len(stamp) != 12 or len(changes) > 6:
        return None
    try:
        expires = dt.datetime.strptime(stamp, _STAMP)
    except ValueError:
        return None
    moved = f"fl_{flight}" if kind == "change" else None
    return QuoteRef(kind, f"fb_{booking}", moved, int(changes), expires, sig, text.strip())


def _digits(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` also takes "²", which ``int`` refuses)."""
    return text.isascii() and text.isdigit()
