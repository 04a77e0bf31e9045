"""Customer tools: finding a customer, their saved addresses and default address."""

from __future__ import annotations

import random
from typing import Annotated, Any

from pydantic import Field

from prove_gym.server import Bound, InvalidArgument, ToolContext, next_id, search_pattern
from prove_gym.server.tool import tool

from ..models import Address
from ._common import NEW_ADDRESSES, _address_out, _addresses, _clash, _mine, _now
from .args import AddressLabel, AddressRow, CustomerRow, Limit, SearchText
from .queries import (
    ADDRESS,
    CART_UNITS,
    CUSTOMER_NAMES,
    DEFAULT_ADDRESS,
    ORDER_COUNT,
    _customers_matching,
)
from .results import AddressList, AddressOut, CustomerOut, CustomerSearch, DefaultChanged


def _text(value: str, name: str) -> str:
    text = " ".join(value.split())
    if not text:
        raise InvalidArgument(f"{name} must not be empty or blank.")
    return text


def _address_list(ctx: ToolContext, customer_id: str) -> AddressList:
    rows = _addresses(ctx, customer_id)
    default = next((a.id for a in rows if a.is_default), None)
    return {
        "customer_id": customer_id,
        "default_address_id": default,
        "addresses": [_address_out(a) for a in rows],
    }


def _customer_word(ctx: ToolContext, rng: random.Random) -> str:
    names = ctx.sql.scalars(CUSTOMER_NAMES)
    return rng.choice(names).split()[-1]


@tool(
    returns=("customer", "address"),
    phrasings=["Find the customer {query}", "Look up customer {query} for me"],
    examples={"query": _customer_word},
)
def search_customers(ctx: ToolContext, query: SearchText, limit: Limit = 10) -> CustomerSearch:
    """Find customers by name, email, phone or id, ordered by name.

    Args:
        query: Case-insensitive text, such as "Garcia", "maria.garcia@gmail.com" or
            "cus_004".
        limit: Maximum number of customers to return (1-50), such as 10.

    Returns:
        {"total": 2, "customers": [{"customer_id": "cus_004", "name": "Maria Garcia",
        "email": "maria.garcia@gmail.com", "default_address_id": "adr_0007",
        "cart_units": 3, "orders": 5, ...}]}.
    """
    text = query.strip()
    params: dict[str, Any] = {"pattern": search_pattern(text)} if text else {}
    count, matching = _customers_matching(bool(text))
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(matching, limit=limit, **params)
    out: list[CustomerOut] = []
    for c in rows:
        default = ctx.sql.scalar(DEFAULT_ADDRESS, customer_id=c.id)
        units = ctx.sql.scalar(CART_UNITS, customer_id=c.id)
        orders = ctx.sql.scalar(ORDER_COUNT, customer_id=c.id)
        out.append(
            {
                "customer_id": c.id,
                "name": c.name,
                "email": c.email,
                "phone": c.phone,
                "default_address_id": default,
                "cart_units": int(units or 0),
                "orders": int(orders or 0),
            }
        )
    return {"total": total, "customers": out}


@tool(
    returns=("address", "customer"),
    phrasings=[
        "Where can {customer_id} get orders shipped?",
        "List the addresses of {customer_id}",
    ],
)
def list_addresses(ctx: ToolContext, customer_id: CustomerRow) -> AddressList:
    """List a customer's saved addresses, the default first.

    Args:
        customer_id: The customer, such as "cus_004".

    Returns:
        {"customer_id": "cus_004", "default_address_id": "adr_0007", "addresses":
        [{"address_id": "adr_0007", "label": "home", "recipient": "Maria Garcia", "line1":
        "412 Oak St", "city": "Springfield", "state": "IL", "postal_code": "62704",
        "is_default": true}, ...]}.
    """
    return _address_list(ctx, customer_id.id)


def _of_street(part: int) -> Any:
    """A value source for one part (city, state, ZIP code) of the address whose street
    ``line1`` holds: 1600 Blake St is in Denver, CO 80202, never in Portland, AL 85004."""

    def source(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
        street = str(bound.args.get("line1", ""))
        return next((a[part] for a in NEW_ADDRESSES if a[0] == street), None)

    return source


@tool(
    writes=True,
    idempotent=True,
    returns=("address", "customer"),
    normalise={"line1": "strip", "city": "strip", "recipient": "strip"},
    phrasings=[
        "Add a {label} address for {customer_id}: {recipient}, {line1}, {city}, {state} "
        "{postal_code}",
        "Save {line1}, {city} {state} {postal_code} as an address of {customer_id} for {recipient}",
        "Add {line1}, {city}, {state} {postal_code} to {customer_id}'s addresses and make it "
        "the default: {make_default}",
    ],
    examples={"recipient": ["Maria Garcia", "James Carter", "Front Desk"]},
    values={
        "line1": lambda ctx, rng, bound: rng.choice(NEW_ADDRESSES)[0],
        "city": _of_street(1),
        "state": _of_street(2),
        "postal_code": _of_street(3),
    },
)
def add_address(
    ctx: ToolContext,
    customer_id: CustomerRow,
    label: AddressLabel,
    recipient: Annotated[str, Field(max_length=80)],
    line1: Annotated[str, Field(max_length=120)],
    city: Annotated[str, Field(max_length=60)],
    state: Annotated[str, Field(pattern=r"^[A-Za-z]{2}$", max_length=2)],
    postal_code: Annotated[str, Field(pattern=r"^[0-9]{5}$", max_length=5)],
    make_default: bool = False,
) -> AddressOut:
    """Save a US shipping address for a customer; their first address becomes the default.

    Args:
        customer_id: The customer, such as "cus_004".
        label: "home", "work" or "other".
        recipient: Who receives the parcels, such as "Maria Garcia".
        line1: Street and number, such as "500 Congress Ave, Suite 200".
        city: Such as "Austin".
        state: Two-letter state code, such as "TX".
        postal_code: Five-digit ZIP code, such as "78701".
        make_default: Make it the default shipping address, such as true.

    Returns:
        {"address_id": "adr_0112", "customer_id": "cus_004", "label": "work", "line1":
        "500 Congress Ave", "city": "Austin", "state": "TX", "postal_code": "78701",
        "is_default": false, ...}.
    """
    c = customer_id
    street, town, who = _text(line1, "line1"), _text(city, "city"), _text(recipient, "recipient")
    mine = _addresses(ctx, c.id)
    for a in mine:
        if a.line1.casefold() == street.casefold() and a.postal_code == postal_code:
            raise _clash(
                "duplicate_address",
                f"{c.id} already has this address as {a.id} ({a.line1}, {a.city} "
                f"{a.postal_code}); use {a.id} instead of saving it again.",
            )
    default = make_default or not mine
    if default:
        for a in sorted(mine, key=lambda a: a.id):  # the ORM wrote rows by key
            ctx.sql.update(Address, a, is_default=False)
    address_id = next_id(ctx, Address.id, "adr", 4)
    ctx.sql.insert(
        Address,
        id=address_id,
        customer_id=c.id,
        label=label,
        recipient=who,
        line1=street,
        city=town,
        state=state.upper(),
        postal_code=postal_code,
        is_default=default,
        created_at=_now(ctx),
    )
    return _address_out(ctx.sql.one(ADDRESS, id=address_id))


@tool(
    writes=True,
    idempotent=True,
    returns=("address", "customer"),
    phrasings=[
        "Make {address_id} the default address of {customer_id}",
        "Ship {customer_id}'s orders to {address_id} by default",
    ],
)
def set_default_address(
    ctx: ToolContext, customer_id: CustomerRow, address_id: AddressRow
) -> DefaultChanged:
    """Make one of a customer's saved addresses their default shipping address.

    Args:
        customer_id: The customer, such as "cus_004".
        address_id: One of their addresses, such as "adr_0008" (see list_addresses).

    Returns:
        {"customer_id": "cus_004", "default_address_id": "adr_0008",
        "previous_default_id": "adr_0007", "addresses": [...]}.
    """
    c, address = customer_id, address_id
    _mine(ctx, c, address, "be their default")
    if address.is_default:
        raise _clash(
            "already_default",
            f"{address.id} is already {c.id}'s default address; nothing to change.",
        )
    previous = None
    mine = _addresses(ctx, c.id)
    for a in mine:
        if a.is_default:
            previous = a.id
    for a in sorted(mine, key=lambda a: a.id):  # the ORM wrote rows by key
        ctx.sql.update(Address, a, is_default=a.id == address.id)
    return {**_address_list(ctx, c.id), "previous_default_id": previous}
