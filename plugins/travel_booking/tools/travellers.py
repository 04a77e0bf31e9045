"""Traveller tools: finding and creating profiles, passports and loyalty numbers."""

from __future__ import annotations

import datetime as dt
import random
from typing import Annotated, Any

from pydantic import Field

from prove_gym.server import (
    Bound,
    InvalidArgument,
    ToolContext,
    next_id,
    parse_date,
    search_pattern,
)
from prove_gym.server.tool import tool

from ..models import AIRLINES, FlightBooking, LoyaltyAccount, Traveller
from ._common import _clock, _departs, _name, _one_line, _taken
from .args import Airline, DateText, Name, SearchText, TravellerRow
from .queries import (
    LOYALTY_OF,
    TRAVELLER,
    TRAVELLER_BY_EMAIL,
    TRAVELLER_LAST_NAMES,
    UPCOMING_WITHOUT_LOYALTY,
    _travellers_matching,
)
from .results import LoyaltyAdded, TravellerOut


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


def _expiry(ctx: ToolContext, rng: random.Random) -> str:
    return (ctx.now.date() + dt.timedelta(days=rng.randint(3 * 365, 10 * 365))).isoformat()


def _passport_no(ctx: ToolContext, rng: random.Random) -> str:
    return f"{rng.choice('CFHKLMPRX')}{rng.choice('ABCDEFGH')}{rng.randint(1000000, 9999999)}"


def _traveller_word(ctx: ToolContext, rng: random.Random) -> str:
    names = ctx.sql.scalars(TRAVELLER_LAST_NAMES)
    return rng.choice(names)


FIRST_NAMES = ["Maria", "Tom", "Aisha", "Jonas", "Priya", "Lucas", "Ingrid"]
LAST_NAMES = ["Lopez", "Becker", "Khan", "Weber", "Patel", "Moreau", "Larsen"]
MAIL_DOMAINS = ["gmail.com", "outlook.com", "proton.me", "acme-corp.com"]


def _traveller_email(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The address of the traveller the call names: ``first.last@<a mail domain>``,
    numbered when another traveller has it."""
    first, last = bound.args.get("first_name"), bound.args.get("last_name")
    if not first or not last:
        return None
    local = ".".join("".join(ch for ch in str(n).casefold() if ch.isalnum()) for n in (first, last))
    domain = rng.choice(MAIL_DOMAINS)
    address, n = f"{local}@{domain}", 1
    while ctx.sql.first(TRAVELLER_BY_EMAIL, email=address) is not None:
        n += 1
        address = f"{local}{n}@{domain}"
    return address


@tool(
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


@tool(
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
        "date_of_birth": ["1985-04-12", "1992-11-03", "1978-07-22", "2001-01-30"],
        "nationality": ["PT", "ES", "FR", "DE", "GB", "US"],
        "passport_number": _passport_no,
        "passport_expiry": _expiry,
    },
    values={"email": _traveller_email},
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


@tool(
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


@tool(
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
    # stored departures are local times, none behind the server's clock (UTC): the rows
    # hold every upcoming booking, and from -v2 those departed in instants are left out
    rows = ctx.sql.all(UPCOMING_WITHOUT_LOYALTY, traveller_id=t.id, airline=airline, now=ctx.now)
    updated = [r.id for r in rows if _departs(ctx, r) > _clock(ctx)]
    for booking_id in updated:
        ctx.sql.update_by_key(FlightBooking, booking_id, loyalty_number=code)
    return {**_traveller_out(ctx, t), "bookings_updated": updated}
