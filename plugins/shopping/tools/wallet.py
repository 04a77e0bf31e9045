"""Wallet tools (from prove/shopping-v3): a customer's saved cards, which a checkout charges.

A card is saved from a test card's number or a token (the shop is a sandbox, as a payment
provider's test mode is: :func:`~..models.read_card`); only its brand, last four digits,
expiry and billing address are kept, never the number. Removing a card keeps its row (the
orders it paid name it) and takes it off file.
"""

from __future__ import annotations

from typing import Any

from prove_gym.server import InvalidArgument, ToolContext, next_id
from prove_gym.server.tool import tool

from ..models import CardRefused, PaymentMethod, card_expired, read_card
from ._common import PAYMENT, _broken, _clash, _mine, _now, _stamp
from .args import AddressRow, CardNumber, CustomerRow, ExpMonth, ExpYear, PaymentMethodRow
from .queries import PAYMENT_METHOD, PAYMENT_METHODS, SAME_CARD
from .results import PaymentMethodList, PaymentMethodOut, PaymentMethodRemoved


def _card_out(ctx: ToolContext, p: Any) -> PaymentMethodOut:
    return {
        "payment_method_id": p.id,
        "brand": p.brand,
        "last4": p.last4,
        "customer_id": p.customer_id,
        "exp_month": p.exp_month,
        "exp_year": p.exp_year,
        "expired": card_expired(p.exp_month, p.exp_year, _now(ctx)),
        "billing_address_id": p.billing_address_id,
        "added_at": p.added_at.isoformat(timespec="minutes"),
    }


def _on_file(ctx: ToolContext, customer_id: str) -> list[PaymentMethodOut]:
    return [_card_out(ctx, p) for p in ctx.sql.all(PAYMENT_METHODS, customer_id=customer_id)]


def _expiry(exp_month: int, exp_year: int) -> str:
    return f"{exp_month:02d}/{exp_year}"


@tool(
    since=PAYMENT,
    returns=("payment_method", "customer", "address"),
    phrasings=[
        "Which cards does {customer_id} have on file?",
        "List the payment methods of {customer_id}",
    ],
)
def list_payment_methods(ctx: ToolContext, customer_id: CustomerRow) -> PaymentMethodList:
    """List a customer's saved cards (not removed ones), oldest first, with whether each has
    expired: a checkout charges one of them (its payment_method_id).

    Args:
        customer_id: The customer, such as "cus_004".

    Returns:
        {"customer_id": "cus_004", "payment_methods": [{"payment_method_id": "pm_0001",
        "brand": "visa", "last4": "4242", "exp_month": 8, "exp_year": 2028, "expired":
        false, "billing_address_id": "adr_0007", "added_at": "2026-03-02T10:30"}, ...]}.
    """
    return {"customer_id": customer_id.id, "payment_methods": _on_file(ctx, customer_id.id)}


@tool(
    since=PAYMENT,
    writes=True,
    idempotent=True,
    returns=("payment_method", "customer", "address"),
    normalise={"card_number": "strip"},
    phrasings=[
        "Save the card {card_number} (expires {exp_month}/{exp_year}) for {customer_id}, "
        "billed to {billing_address_id}",
        "Add a card to {customer_id}'s account: {card_number}, expiry {exp_month}/{exp_year}, "
        "billing address {billing_address_id}",
    ],
    examples={
        "card_number": ["4242 4242 4242 4242", "5555555555554444", "tok_amex", "tok_visa"],
        "exp_month": [4, 8, 12],
        "exp_year": [2028, 2029, 2031],
    },
)
def add_payment_method(
    ctx: ToolContext,
    customer_id: CustomerRow,
    card_number: CardNumber,
    exp_month: ExpMonth,
    exp_year: ExpYear,
    billing_address_id: AddressRow,
) -> PaymentMethodOut:
    """Save a card for a customer, to pay their checkouts with. Only its brand, last four
    digits, expiry and billing address are kept, never the number.

    The shop is a sandbox: it takes the card networks' test numbers (such as "4242 4242 4242
    4242" Visa, "5555 5555 5555 4444" Mastercard, "3782 822463 10005" Amex, "6011 1111 1111
    1117" Discover) or a token ("tok_visa", "tok_mastercard", "tok_amex", "tok_discover");
    a number with a wrong check digit (rule card_number_invalid) or any other card (rule
    test_card_only) is refused. An expired card is refused (rule card_expired: a card is
    good through its expiry month), as is a card already on file (rule duplicate_card).

    Args:
        customer_id: The customer, such as "cus_004".
        card_number: The test card's number (digits; spaces or dashes between groups are
            fine), such as "4242 4242 4242 4242", or a token such as "tok_visa".
        exp_month: The expiry month printed on the card (1-12), such as 8.
        exp_year: The expiry year, four digits, such as 2028.
        billing_address_id: One of the customer's own addresses the card is billed to,
            such as "adr_0007" (see list_addresses).

    Returns:
        The saved card: {"payment_method_id": "pm_0001", "customer_id": "cus_004", "brand":
        "visa", "last4": "4242", "exp_month": 8, "exp_year": 2028, "expired": false,
        "billing_address_id": "adr_0007", "added_at": "2026-03-02T10:30"}.
    """
    c = customer_id
    try:
        brand, last4 = read_card(card_number)
    except CardRefused as e:
        raise InvalidArgument(f"Rule '{e.rule}' failed: {e}. Nothing was saved.") from None
    now = _now(ctx)
    if card_expired(exp_month, exp_year, now):
        raise _broken(
            "card_expired",
            f"the {brand} card ending {last4} expired at the end of "
            f"{_expiry(exp_month, exp_year)} (today is {now.date().isoformat()}). Nothing was "
            "saved; ask the customer for a card that is still valid.",
        )
    _mine(ctx, c, billing_address_id, "be this card's billing address")
    same = ctx.sql.scalar(
        SAME_CARD,
        customer_id=c.id,
        brand=brand,
        last4=last4,
        exp_month=exp_month,
        exp_year=exp_year,
    )
    if same is not None:
        raise _clash(
            "duplicate_card",
            f"{c.id} already has this {brand} card ending {last4} "
            f"({_expiry(exp_month, exp_year)}) on file as {same}; nothing was saved. Pay "
            f"with payment_method_id '{same}'.",
        )
    card_id = next_id(ctx, PaymentMethod.id, "pm", 4)
    ctx.sql.insert(
        PaymentMethod,
        id=card_id,
        customer_id=c.id,
        brand=brand,
        last4=last4,
        exp_month=exp_month,
        exp_year=exp_year,
        billing_address_id=billing_address_id.id,
        added_at=now,
        removed_at=None,
    )
    return _card_out(ctx, ctx.sql.one(PAYMENT_METHOD, id=card_id))


@tool(
    since=PAYMENT,
    writes=True,
    destructive=True,
    returns=("payment_method", "customer"),
    phrasings=[
        "Remove the card {payment_method_id}",
        "Delete payment method {payment_method_id} from the account",
    ],
)
def remove_payment_method(
    ctx: ToolContext, payment_method_id: PaymentMethodRow
) -> PaymentMethodRemoved:
    """Take a saved card off file: no checkout can charge it any more. The orders it paid
    still name it, and their refunds still go back to it.

    Args:
        payment_method_id: A card on file, such as "pm_0001" (list_payment_methods).

    Returns:
        {"payment_method_id": "pm_0001", "customer_id": "cus_004", "removed_at":
        "2026-03-02T10:30", "payment_methods": [...the cards still on file...]}.
    """
    p = payment_method_id
    if p.removed_at is not None:
        raise _clash(
            "payment_method_removed",
            f"card {p.id} ({p.brand} ending {p.last4}) was already removed on "
            f"{_stamp(p.removed_at)}; nothing was changed.",
        )
    p = ctx.sql.update(PaymentMethod, p, removed_at=_now(ctx))
    return {
        "payment_method_id": p.id,
        "customer_id": p.customer_id,
        "removed_at": _stamp(p.removed_at) or "",
        "payment_methods": _on_file(ctx, p.customer_id),
    }
