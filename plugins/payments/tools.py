"""The payments server's 10 tools. Docstrings are what the model reads: keep examples concrete.

Business rules have names (``refund_exceeds_captured``, ``invoice_not_open``, ...); a tool
that refuses an action raises ``PreconditionFailed`` (or ``Conflict`` for a reused
idempotency key or a taken URL) with a message that starts with ``Rule '<name>' failed:``
and says what would be allowed instead. A refused call changes nothing.

Every money movement (a charge, a refund, a payout) happens in one transaction with its
effects: the invoice's amount paid, the merchant's balance, the event and its webhook
deliveries. Creates take an optional ``idempotency_key``: the first request with a key is
remembered per merchant; a retry with the same key and the same arguments returns the
original object (``idempotent_replay: true``) and does nothing else, and the same key with
other arguments is refused.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import re
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import bindparam, func, select

from prove_gym.server import (
    Bound,
    Conflict,
    Entity,
    EnvVersion,
    InvalidArgument,
    PreconditionFailed,
    Principal,
    Query,
    Record,
    Server,
    ToolContext,
    TypedDict,
    contains,
    next_id,
    parse_date,
    search_pattern,
)

from .models import (
    CENT,
    DECLINE_MESSAGES,
    EVENT_TYPES,
    MAX_ENABLED_ENDPOINTS,
    REFUND_WINDOW_DAYS,
    ZERO,
    Base,
    Charge,
    Customer,
    Event,
    IdempotencyKey,
    Invoice,
    Merchant,
    Payout,
    Refund,
    WebhookDelivery,
    WebhookEndpoint,
    arrival_date,
    card_expired,
    delivery_status,
    fingerprint,
    receives,
)
from .sampler import CATEGORIES, sample_payments

OUT_OF_SCOPE = (
    "Change the merchant's bank account details.",
    "Issue a physical card for the merchant.",
    "Set up a subscription that bills the customer monthly.",
    "Fight the latest chargeback on the merchant's behalf.",
    "Generate an annual tax report for the merchant.",
    "Convert the merchant's balance to euros.",
    "Lower the merchant's processing fees.",
    "Add a second user to the merchant's dashboard.",
    "Send the customer a text reminder to pay.",
    "Rotate the merchant's API keys.",
    "Delete the last invoice entirely instead of voiding it.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

MERCHANT_ACCOUNT = 1
"""The env version from which a session acts for one merchant's account (signed in to its
dashboard, as its API key would): another merchant's invoices, charges and endpoints are
refused by the core, and find_merchant finds only the merchant itself."""

server = Server(
    "payments",
    out_of_scope=OUT_OF_SCOPE,
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.1.0",
    env_versions=[
        EnvVersion(
            MERCHANT_ACCOUNT,
            "acts for one merchant's account (the task's principal): a call on another "
            "merchant, or its invoices, charges or webhook endpoints, is refused with "
            "permission_denied (rule not_your_merchant); find_merchant finds only the "
            "merchant itself",
            tasks_file=Path(__file__).with_name("tasks_v1.jsonl"),
            principal=Principal(
                "merchant",
                "You are signed in to the dashboard of merchant {id} and act for it only: its "
                "invoices, charges, refunds, payouts, webhooks and events. find_merchant "
                "finds only this merchant; a call on another merchant or its invoices, "
                "charges or webhook endpoints is refused (rule 'not_your_merchant').",
            ),
        )
    ],
    base=Base,
    sampler=sample_payments,
    description="A payment platform serving many small businesses (merchants): invoices to "
    "their customers, card charges against invoices, refunds, each merchant's balance and "
    "payouts to its bank, and webhook endpoints that receive an event for every change, "
    "with a delivery log. Every money movement is transactional.",
    instructions="Payments conventions: ids look like 'mer_004' (merchant), 'inv_00042' "
    "(invoice; its number looks like 'BLUE-0042'), 'ch_00107' (charge), 're_00012' (refund), "
    "'po_00031' (payout), 'we_0003' (webhook endpoint), 'evt_00420' (event). Amounts are "
    "exact decimals in the merchant's currency: pass a number or a string such as "
    '"125.40"; results show amounts as strings. A merchant\'s balance is what its '
    "charges brought in minus refunds and payouts; refunds and payouts are paid from it. "
    "Refused calls name the rule that failed and change nothing. create_invoice, "
    "charge_invoice, refund_charge and create_payout take an optional idempotency_key: "
    "retrying with the same key and the same arguments returns the original object "
    "without charging or paying twice; a key reused with other arguments is refused.",
)

# Rows: the core looks the id up before the tool runs (not_found hints: see the entities below).
MerchantRow = Annotated[Record[Merchant], Entity("merchant")]
InvoiceRow = Annotated[Record[Invoice], Entity("invoice")]
ChargeRow = Annotated[Record[Charge], Entity("charge")]
EndpointRow = Annotated[Record[WebhookEndpoint], Entity("webhook_endpoint")]
CustomerEmail = Annotated[
    str, Entity("customer"), Field(max_length=120, pattern=r"^\s*[^@\s]+@[^@\s]+\.[^@\s]+\s*$")
]
MAX_AMOUNT = Decimal("100000.00")
Amount = Annotated[Decimal, Field(gt=0, le=MAX_AMOUNT, decimal_places=2)]
PayoutAmount = Annotated[Decimal, Field(ge=1, le=MAX_AMOUNT, decimal_places=2)]
IdemKey = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._:-]+$")]
# Longer than any name, email, number or description it is matched against.
SearchText = Annotated[str, Field(max_length=200)]
EventType = Literal[
    "invoice.created",
    "invoice.paid",
    "invoice.voided",
    "charge.succeeded",
    "charge.failed",
    "refund.created",
    "payout.created",
    "payout.paid",
]
Subscription = Literal[
    "*",
    "invoice.created",
    "invoice.paid",
    "invoice.voided",
    "charge.succeeded",
    "charge.failed",
    "refund.created",
    "payout.created",
    "payout.paid",
]
RefundReason = Literal["requested_by_customer", "duplicate", "fraudulent"]

RULES: dict[str, str] = {
    "invoice_not_open": "Only an 'open' invoice can be charged or voided: a paid invoice is "
    "settled (refund its charges instead) and a void one is cancelled.",
    "overpayment": "A charge may not exceed what is still due on its invoice "
    "(amount_due - amount_paid).",
    "no_payment_method": "A customer without a card on file cannot be charged.",
    "card_expired": "An expired card cannot be charged; the customer must update it.",
    "charge_failed": "Only a succeeded charge can be refunded: a failed one captured nothing.",
    "refund_exceeds_captured": "The refunds of a charge never add up to more than it captured.",
    "refund_window": f"A charge can be refunded for {REFUND_WINDOW_DAYS} days after it was made.",
    "insufficient_balance": "Refunds and payouts are paid from the merchant's balance and "
    "cannot exceed it; a payout is at least 1.00.",
    "payouts_paused": "A merchant whose payouts are paused cannot be paid out.",
    "invoice_has_payments": "An invoice that still holds money cannot be voided: refund its "
    "charges first.",
    "https_required": "Webhook endpoints must be https:// URLs.",
    "endpoint_limit": f"A merchant has at most {MAX_ENABLED_ENDPOINTS} enabled webhook endpoints.",
    "endpoint_url_taken": "A merchant cannot register the same URL twice.",
    "idempotency_key_reuse": "An idempotency key names one request: the same key with other "
    "arguments is refused.",
}


# ----------------------------------------------------------------- results
class EndpointBrief(TypedDict):
    endpoint_id: str
    url: str
    events: list[str]
    status: str
    response_code: int


class MerchantOut(TypedDict):
    merchant_id: str
    name: str
    email: str
    category: str
    country: str
    currency: str
    balance: Decimal
    charged_total: Decimal
    refunded_total: Decimal
    paid_out_total: Decimal
    payouts: str
    payout_pause_reason: str | None
    bank_account: str
    open_invoices: int
    amount_outstanding: Decimal
    webhook_endpoints: list[EndpointBrief]


class InvoiceSummary(TypedDict):
    invoice_id: str
    number: str
    merchant_id: str
    customer_name: str
    customer_email: str
    description: str
    currency: str
    amount_due: Decimal
    amount_paid: Decimal
    amount_refunded: Decimal
    amount_remaining: Decimal
    status: str
    overdue: bool
    due_date: str
    created_at: str


class InvoiceList(TypedDict):
    merchant_id: str
    currency: str
    total: int
    invoices: list[InvoiceSummary]


class RefundOut(TypedDict):
    refund_id: str
    amount: Decimal
    reason: str
    created_at: str
    idempotency_key: str | None


class ChargeOut(TypedDict):
    charge_id: str
    amount: Decimal
    status: str
    failure_code: str | None
    amount_refunded: Decimal
    refundable: Decimal
    card: str
    created_at: str
    idempotency_key: str | None
    refunds: list[RefundOut]


class CustomerOut(TypedDict):
    customer_email: str
    name: str
    card: str | None
    card_status: str


class InvoiceDetail(InvoiceSummary):
    customer: CustomerOut
    charges: list[ChargeOut]
    paid_at: str | None
    voided_at: str | None
    idempotency_key: str | None


class InvoiceVoided(InvoiceDetail):
    event_ids: list[str]


class InvoiceCreated(InvoiceVoided):
    idempotent_replay: bool


class ChargeResult(TypedDict):
    charge_id: str
    invoice_id: str
    merchant_id: str
    status: str
    amount: Decimal
    currency: str
    failure_code: str | None
    failure_message: str | None
    card: str
    invoice_status: str
    invoice_amount_paid: Decimal
    invoice_amount_remaining: Decimal
    merchant_balance: Decimal
    idempotency_key: str | None
    idempotent_replay: bool
    event_ids: list[str]


class RefundResult(TypedDict):
    refund_id: str
    charge_id: str
    invoice_id: str
    merchant_id: str
    status: str
    amount: Decimal
    currency: str
    reason: str
    charge_amount: Decimal
    charge_amount_refunded: Decimal
    charge_refundable: Decimal
    merchant_balance: Decimal
    idempotency_key: str | None
    idempotent_replay: bool
    event_ids: list[str]


class PayoutResult(TypedDict):
    payout_id: str
    merchant_id: str
    status: str
    amount: Decimal
    currency: str
    description: str
    bank_account: str
    arrival_date: str
    merchant_balance: Decimal
    idempotency_key: str | None
    idempotent_replay: bool
    event_ids: list[str]


class EndpointOut(EndpointBrief):
    merchant_id: str
    description: str
    created_at: str


class DeliveryOut(TypedDict):
    endpoint_id: str
    url: str
    status: str
    response_code: int
    attempted_at: str


class EventOut(TypedDict):
    event_id: str
    type: str
    created_at: str
    object_id: str
    invoice_id: str | None
    amount: Decimal | None
    summary: str
    deliveries: list[DeliveryOut]


class EventList(TypedDict):
    merchant_id: str
    total: int
    events: list[EventOut]


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
# Rows are named tuples typed as the ORM types them (Money as Decimal, dates, datetimes).
merchants_t, customers_t, invoices_t = Merchant.__table__, Customer.__table__, Invoice.__table__
charges_t, refunds_t, payouts_t = Charge.__table__, Refund.__table__, Payout.__table__
endpoints_t, events_t = WebhookEndpoint.__table__, Event.__table__
deliveries_t, keys_t = WebhookDelivery.__table__, IdempotencyKey.__table__
MERCHANT = Query(select(merchants_t).where(Merchant.id == bindparam("id")))
MERCHANTS = Query(select(merchants_t).order_by(Merchant.id))
MERCHANT_NAMES = Query(select(Merchant.name).order_by(Merchant.id))
# what find_merchant's text matches: a merchant's name, e-mail, invoice prefix or id
_MERCHANT_MATCHES = contains(
    bindparam("pattern"), Merchant.name, Merchant.email, Merchant.invoice_prefix, Merchant.id
)
# find_merchant acting for a merchant: itself, if it matches the text (or there is none)
OWN_MERCHANT_MATCHING = Query(
    select(merchants_t)
    .where(Merchant.id == bindparam("me"), _MERCHANT_MATCHES)
    .limit(bindparam("limit"))
)
OWN_MERCHANT = Query(
    select(merchants_t).where(Merchant.id == bindparam("me")).limit(bindparam("limit"))
)
# find_merchant's: by name, at most ``limit``, all of them or those matching a text
MERCHANTS_BY_NAME = Query(
    select(merchants_t).order_by(Merchant.name, Merchant.id).limit(bindparam("limit"))
)
MERCHANTS_MATCHING = Query(
    select(merchants_t)
    .where(_MERCHANT_MATCHES)
    .order_by(Merchant.name, Merchant.id)
    .limit(bindparam("limit"))
)
# a merchant's totals: sum() keeps the Money type (a Decimal, or None for no rows)
CHARGED = Query(
    select(func.sum(Charge.amount)).where(
        Charge.merchant_id == bindparam("merchant_id"), Charge.status == "succeeded"
    )
)
REFUNDED = Query(
    select(func.sum(Refund.amount)).where(Refund.merchant_id == bindparam("merchant_id"))
)
PAID_OUT = Query(
    select(func.sum(Payout.amount)).where(Payout.merchant_id == bindparam("merchant_id"))
)
OPEN_AMOUNTS = Query(
    select(Invoice.amount_due, Invoice.amount_paid)
    .where(Invoice.merchant_id == bindparam("merchant_id"), Invoice.status == "open")
    .order_by(Invoice.id)
)
CUSTOMER = Query(select(customers_t).where(Customer.id == bindparam("id")))
CUSTOMER_BY_EMAIL = Query(
    select(customers_t).where(
        Customer.merchant_id == bindparam("merchant_id"), Customer.email == bindparam("email")
    )
)
CUSTOMERS = Query(select(customers_t).order_by(Customer.merchant_id, Customer.id))
INVOICE = Query(select(invoices_t).where(Invoice.id == bindparam("id")))
INVOICE_NUMBERS = Query(
    select(Invoice.number).where(Invoice.merchant_id == bindparam("merchant_id"))
)
# open invoices with their customer's email, name and card (for the entity listing)
OPEN_INVOICES = Query(
    select(
        Invoice.id,
        Invoice.number,
        Invoice.merchant_id,
        Invoice.status,
        Invoice.amount_due,
        Customer.email,
        Customer.name,
        Customer.card_brand,
        Customer.card_exp_month,
        Customer.card_exp_year,
    )
    .join(customers_t, Customer.id == Invoice.customer_id)
    .where(Invoice.status == "open")
    .order_by(Invoice.id)
)
CHARGE = Query(select(charges_t).where(Charge.id == bindparam("id")))
# Invoice.charges and Charge.refunds: the relationships order by id
CHARGES_OF = Query(
    select(charges_t).where(Charge.invoice_id == bindparam("invoice_id")).order_by(Charge.id)
)
REFUNDS_OF = Query(
    select(refunds_t)
    .where(Refund.charge_id.in_(bindparam("charge_ids", expanding=True)))
    .order_by(Refund.id)
)
REFUND_COUNT = Query(
    select(func.count()).select_from(refunds_t).where(Refund.charge_id == bindparam("charge_id"))
)
# succeeded charges still refundable in full from the merchant's balance (the entity listing)
REFUNDABLE_CHARGES = Query(
    select(Charge.id, Charge.invoice_id, Charge.merchant_id, Charge.amount, Charge.amount_refunded)
    .join(merchants_t, Merchant.id == Charge.merchant_id)
    .where(
        Charge.status == "succeeded",
        Charge.amount > Charge.amount_refunded,
        Charge.amount - Charge.amount_refunded <= Merchant.balance,
        Charge.created_at >= bindparam("oldest"),
    )
    .order_by(Charge.id)
)
REFUND = Query(select(refunds_t).where(Refund.id == bindparam("id")))
REFUNDS = Query(select(Refund.id, Refund.charge_id, Refund.merchant_id).order_by(Refund.id))
PAYOUT = Query(select(payouts_t).where(Payout.id == bindparam("id")))
PAYOUTS = Query(select(Payout.id, Payout.merchant_id, Payout.status).order_by(Payout.id))
IDEMPOTENCY_KEY = Query(
    select(keys_t).where(
        IdempotencyKey.merchant_id == bindparam("merchant_id"),
        IdempotencyKey.key == bindparam("key"),
    )
)
# Merchant.endpoints: the relationship orders by id
ENDPOINTS_OF = Query(
    select(endpoints_t)
    .where(WebhookEndpoint.merchant_id == bindparam("merchant_id"))
    .order_by(WebhookEndpoint.id)
)
ENABLED_ENDPOINTS_OF = Query(
    select(endpoints_t)
    .where(
        WebhookEndpoint.merchant_id == bindparam("merchant_id"),
        WebhookEndpoint.status == "enabled",
    )
    .order_by(WebhookEndpoint.id)
)
ENDPOINTS = Query(
    select(
        WebhookEndpoint.id, WebhookEndpoint.merchant_id, WebhookEndpoint.url, WebhookEndpoint.status
    ).order_by(WebhookEndpoint.id)
)
LAST_SEQ = Query(select(func.max(Event.seq)))
EVENTS_SINCE = Query(
    select(Event.id, Event.merchant_id, Event.type, Event.invoice_id)
    .where(Event.created_at >= bindparam("since"))
    .order_by(Event.seq)
)
# Event.deliveries: the relationship orders by id
DELIVERIES_OF = Query(
    select(deliveries_t)
    .where(WebhookDelivery.event_id.in_(bindparam("event_ids", expanding=True)))
    .order_by(WebhookDelivery.id)
)


@functools.cache
def _invoices_matching(status: str | None, by_text: bool) -> tuple[Query, Query]:
    """How many of a merchant's invoices match, and the newest ``limit`` of them, each with
    its customer's name and email and what its charges refunded: list_invoices'."""
    joined = invoices_t.join(customers_t, Customer.id == Invoice.customer_id)
    where = [Invoice.merchant_id == bindparam("merchant_id")]
    if status == "overdue":
        where += [Invoice.status == "open", Invoice.due_date < bindparam("today")]
    elif status is not None:
        where.append(Invoice.status == status)
    if by_text:
        where.append(
            contains(
                bindparam("pattern"),
                Customer.name,
                Customer.email,
                Invoice.number,
                Invoice.description,
            )
        )
    refunded = (  # None for an invoice without charges
        select(func.sum(Charge.amount_refunded))
        .where(Charge.invoice_id == Invoice.id)
        .scalar_subquery()
    )
    count = Query(select(func.count()).select_from(joined).where(*where))
    rows = Query(
        select(
            invoices_t,
            Customer.name.label("customer_name"),
            Customer.email.label("customer_email"),
            refunded.label("amount_refunded"),
        )
        .select_from(joined)
        .where(*where)
        .order_by(Invoice.created_at.desc(), Invoice.id.desc())
        .limit(bindparam("limit"))
    )
    return count, rows


@functools.cache
def _events_matching(
    by_type: bool, by_invoice: bool, by_endpoint: bool, by_delivery: bool
) -> tuple[Query, Query]:
    """How many of a merchant's events match, and the newest ``limit`` of them: list_events'."""
    stmt = select(events_t).where(Event.merchant_id == bindparam("merchant_id"))
    if by_type:
        stmt = stmt.where(Event.type == bindparam("type"))
    if by_invoice:
        stmt = stmt.where(Event.invoice_id == bindparam("invoice_id"))
    if by_endpoint or by_delivery:
        sent = select(WebhookDelivery.event_id)
        if by_endpoint:
            sent = sent.where(WebhookDelivery.endpoint_id == bindparam("endpoint_id"))
        if by_delivery:
            sent = sent.where(WebhookDelivery.status == bindparam("delivery_status"))
        stmt = stmt.where(Event.id.in_(sent))
    count = Query(select(func.count()).select_from(stmt.subquery()))
    rows = Query(stmt.order_by(Event.seq.desc()).limit(bindparam("limit")))
    return count, rows


# ----------------------------------------------------------------- helpers
def _broken(rule: str, detail: str) -> PreconditionFailed:
    """The error for a failed business rule: it names the rule, then says what to do."""
    return PreconditionFailed(f"Rule '{rule}' failed: {detail}")


def _stamp(value: dt.datetime | None) -> str | None:
    return value.isoformat(timespec="minutes") if value is not None else None


def _money(value: Decimal | None) -> Decimal | None:
    return None if value is None else value.quantize(CENT)


def _text(value: str, name: str) -> str:
    text = " ".join(value.split())
    if not text:
        raise InvalidArgument(f"{name} must not be empty or blank.")
    return text


def _merchant(ctx: ToolContext, merchant_id: str) -> Any:
    return ctx.sql.one(MERCHANT, id=merchant_id)


def _bank(m: Any) -> str:
    return f"{m.bank_name} ****{m.bank_last4}"


def _events_of(endpoint: Any) -> list[str]:
    return ["*"] if endpoint.events == "*" else endpoint.events.split()


def _card(customer: Any) -> str | None:
    if customer.card_brand is None:
        return None
    return (
        f"{customer.card_brand} ending {customer.card_last4} "
        f"(expires {customer.card_exp_month:02d}/{customer.card_exp_year})"
    )


def _card_status(customer: Any, today: dt.date) -> str:
    if customer.card_brand is None or customer.card_exp_month is None:
        return "none"
    assert customer.card_exp_year is not None
    return (
        "expired"
        if card_expired(customer.card_exp_month, customer.card_exp_year, today)
        else "valid"
    )


def _refunded(invoice_charges: list[Any]) -> Decimal:
    return sum((c.amount_refunded for c in invoice_charges), ZERO)


def _summary(
    ctx: ToolContext, inv: Any, customer_name: str, customer_email: str, refunded: Decimal
) -> InvoiceSummary:
    return {
        "invoice_id": inv.id,
        "number": inv.number,
        "merchant_id": inv.merchant_id,
        "customer_name": customer_name,
        "customer_email": customer_email,
        "description": inv.description,
        "currency": inv.currency,
        "amount_due": inv.amount_due,
        "amount_paid": inv.amount_paid,
        "amount_refunded": refunded,
        "amount_remaining": inv.amount_due - inv.amount_paid if inv.status == "open" else ZERO,
        "status": inv.status,
        "overdue": inv.status == "open" and inv.due_date < ctx.now.date(),
        "due_date": inv.due_date.isoformat(),
        "created_at": inv.created_at.isoformat(timespec="minutes"),
    }


def _charge_out(c: Any, charge_refunds: list[Any]) -> ChargeOut:
    return {
        "charge_id": c.id,
        "amount": c.amount,
        "status": c.status,
        "failure_code": c.failure_code,
        "amount_refunded": c.amount_refunded,
        "refundable": c.amount - c.amount_refunded if c.status == "succeeded" else ZERO,
        "card": f"{c.card_brand} ending {c.card_last4}",
        "created_at": c.created_at.isoformat(timespec="minutes"),
        "idempotency_key": c.idempotency_key,
        "refunds": [
            {
                "refund_id": r.id,
                "amount": r.amount,
                "reason": r.reason,
                "created_at": r.created_at.isoformat(timespec="minutes"),
                "idempotency_key": r.idempotency_key,
            }
            for r in charge_refunds
        ],
    }


def _detail(ctx: ToolContext, inv: Any) -> InvoiceDetail:
    cust = ctx.sql.one(CUSTOMER, id=inv.customer_id)
    invoice_charges = ctx.sql.all(CHARGES_OF, invoice_id=inv.id)
    by_charge: dict[str, list[Any]] = {c.id: [] for c in invoice_charges}
    for r in ctx.sql.all(REFUNDS_OF, charge_ids=list(by_charge)):
        by_charge[r.charge_id].append(r)
    return {
        **_summary(ctx, inv, cust.name, cust.email, _refunded(invoice_charges)),
        "customer": {
            "customer_email": cust.email,
            "name": cust.name,
            "card": _card(cust),
            "card_status": _card_status(cust, ctx.now.date()),
        },
        "charges": [_charge_out(c, by_charge[c.id]) for c in invoice_charges],
        "paid_at": _stamp(inv.paid_at),
        "voided_at": _stamp(inv.voided_at),
        "idempotency_key": inv.idempotency_key,
    }


def _endpoint_brief(e: Any) -> EndpointBrief:
    return {
        "endpoint_id": e.id,
        "url": e.url,
        "events": _events_of(e),
        "status": e.status,
        "response_code": e.response_code,
    }


def _replayed(
    ctx: ToolContext, merchant_id: str, key: str | None, tool: str, params: dict[str, Any]
) -> str | None:
    """The id of the object an earlier request with ``key`` created, or ``None`` for a new key.

    Raises ``Conflict`` when the key was used with other arguments (or by another tool).
    """
    if key is None:
        return None
    used = ctx.sql.first(IDEMPOTENCY_KEY, merchant_id=merchant_id, key=key)
    if used is None:
        return None
    if used.tool != tool or used.fingerprint != fingerprint(tool, params):
        raise Conflict(
            f"Rule 'idempotency_key_reuse' failed: idempotency_key {key!r} was already used by "
            f"{used.tool} (which created {used.object_id}) with other arguments; nothing was "
            "done. A retry must repeat the original arguments exactly; a new request needs a "
            "new key (or none)."
        )
    return used.object_id


def _remember(
    ctx: ToolContext,
    merchant_id: str,
    key: str | None,
    tool: str,
    params: dict[str, Any],
    object_id: str,
) -> None:
    if key is not None:
        ctx.sql.insert(
            IdempotencyKey,
            merchant_id=merchant_id,
            key=key,
            tool=tool,
            fingerprint=fingerprint(tool, params),
            object_id=object_id,
            created_at=ctx.now,
        )


def _emit(
    ctx: ToolContext,
    merchant: Any,
    type_: str,
    object_id: str,
    summary: str,
    *,
    invoice_id: str | None = None,
    amount: Decimal | None = None,
) -> str:
    """Append an event and deliver it to every enabled endpoint that subscribes to it."""
    seq = (ctx.sql.scalar(LAST_SEQ) or 0) + 1
    event_id = f"evt_{seq:05d}"
    ctx.sql.insert(
        Event,
        id=event_id,
        seq=seq,
        merchant_id=merchant.id,
        type=type_,
        object_id=object_id,
        invoice_id=invoice_id,
        amount=amount,
        summary=summary[:200],
        created_at=ctx.now,
    )
    for ep in ctx.sql.all(ENABLED_ENDPOINTS_OF, merchant_id=merchant.id):
        if receives(ep, type_, seq):
            ctx.sql.insert(
                WebhookDelivery,
                id=next_id(ctx, WebhookDelivery.id, "whd", 6),
                event_id=event_id,
                endpoint_id=ep.id,
                status=delivery_status(ep.response_code),
                response_code=ep.response_code,
                attempted_at=ctx.now,
            )
    return event_id


# -------------------------------------------------------- example values
def _day_ahead(ctx: ToolContext, rng: random.Random) -> str:
    return (ctx.now + dt.timedelta(days=rng.choice([7, 14, 14, 30, 30, 45]))).date().isoformat()


def _new_key(ctx: ToolContext, rng: random.Random) -> str:
    return f"{rng.choice(['order', 'req', 'retry', 'job'])}-{rng.randrange(16**8):08x}"


def _merchant_word(ctx: ToolContext, rng: random.Random) -> str:
    names = ctx.sql.scalars(MERCHANT_NAMES)
    words = [w for w in rng.choice(names).split() if len(w) > 3 and w[0].isupper()]
    return words[0] if words else names[0]


SHARES = (Decimal("0.25"), Decimal("0.5"))
"""The part of a sum a person takes or gives back at once: a quarter, a half."""


def _part(total: Decimal, rng: random.Random) -> str | None:
    """A quarter or a half of ``total``, in whole units where it is 40 or more; None under
    4.00, where a part is no sensible sum."""
    if total < 4:
        return None
    part = total * rng.choice(SHARES)
    return str(part.quantize(Decimal("1")) if total >= 40 else part.quantize(CENT))


def _part_of_invoice(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A partial payment of the invoice: a quarter or half of what remains (a deposit of
    30 on a 120 invoice, never 15.5); None for an invoice that is not open."""
    inv = ctx.sql.first(INVOICE, id=str(bound.args.get("invoice_id", "")))
    if inv is None or inv.status != "open":
        return None
    return _part(inv.amount_due - inv.amount_paid, rng)


def _part_of_charge(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A partial refund of the charge: a quarter or half of what is left to refund."""
    charge = ctx.sql.first(CHARGE, id=str(bound.args.get("charge_id", "")))
    if charge is None:
        return None
    return _part(charge.amount - charge.amount_refunded, rng)


def _merchant_items(ctx: ToolContext, bound: Bound) -> list[tuple[str, int, int, bool]]:
    """What the merchant in ``merchant_id`` bills for (its category's items)."""
    merchant = ctx.sql.first(MERCHANT, id=str(bound.args.get("merchant_id", "")))
    return CATEGORIES[merchant.category][1] if merchant is not None else []


def _invoice_amount(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """What one of the merchant's services costs: a bakery's catering order of 120-900, a
    consultancy's workshop of 1,200-4,000; None for a merchant that bills nothing."""
    items = _merchant_items(ctx, bound)
    if not items:
        return None
    _, low, high, whole = rng.choice(items)
    return (
        f"{rng.randint(low, high)}.00"
        if whole
        else f"{rng.randint(low * 100, high * 100) / 100:.2f}"
    )


def _invoice_description(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """What the invoice is for: a service of the merchant that costs its amount (never a
    portrait session billed by a consultancy); None where none does."""
    try:
        amount = float(str(bound.args.get("amount")))
    except ValueError:
        return None
    fits = [text for text, low, high, _ in _merchant_items(ctx, bound) if low <= amount <= high]
    if not fits:
        return None
    month = ctx.now.strftime("%B")
    return rng.choice(fits).format(n=rng.randint(6, 60), month=month, k=rng.randint(1, 3))


def _name_for_email(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The name of the customer the invoice's email belongs to: the customer's own name
    when one has it, else the name the address spells (``mary.parsons@...`` is Mary
    Parsons); None when it spells no first and last name."""
    record = bound.records.get("customer_email")
    if record is not None and record.get("name"):
        return str(record["name"])
    local = str(bound.args.get("customer_email", "")).split("@", 1)[0]
    parts = [p for p in re.split(r"[._-]", local) if p.isalpha()]
    return " ".join(p.capitalize() for p in parts) if len(parts) == 2 else None


WEBHOOK_PATHS = ("v1", "payments", "events", "billing", "invoices", "orders")
"""The last part of a webhook URL :func:`_own_webhook_url` builds."""


def _own_webhook_url(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A webhook URL on the merchant's own domain, the one of its e-mail address:
    ``https://api.<domain>/webhooks/<path>``, one none of its endpoints has; None when the
    call names no merchant, its address has no domain, or every path is taken."""
    row = ctx.sql.first(MERCHANT, id=bound.args.get("merchant_id"))
    if row is None:
        return None
    domain = str(row.email).rpartition("@")[2].strip().lower()
    if "." not in domain:
        return None
    have = {e.url.rstrip("/") for e in ctx.sql.all(ENDPOINTS_OF, merchant_id=row.id)}
    urls = [f"https://api.{domain}/webhooks/{path}" for path in WEBHOOK_PATHS]
    free = [u for u in urls if u not in have]
    return rng.choice(free) if free else None


# ------------------------------------------------------------------- tools
@server.tool(
    returns=("merchant", "webhook_endpoint"),
    phrasings=["Find the merchant {query}", "Look up the account of {query} on the platform"],
    examples={"query": _merchant_word},
)
def find_merchant(
    ctx: ToolContext,
    query: SearchText | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
) -> list[MerchantOut]:
    """Find merchants by name, email, invoice prefix or id; with their balance and webhooks.

    The balance is charged_total - refunded_total - paid_out_total: what the merchant can
    refund or pay out now. Signed in to one merchant's account, it finds only that merchant.

    Args:
        query: Case-insensitive text, such as "Bakery", "billing@smithbakery.com", "SMIT" or
            "mer_004"; leave it out to list all merchants by name.
        limit: Maximum number of merchants to return (1-50), such as 10.

    Returns:
        [{"merchant_id": "mer_004", "name": "Smith Bakery", "currency": "USD",
        "balance": "1840.50", "payouts": "enabled", "bank_account": "Chase ****6789",
        "open_invoices": 3, "webhook_endpoints": [{"endpoint_id": "we_0003", ...}], ...}].
    """
    text = (query or "").strip()
    me = ctx.principal  # signed in to one merchant's account: it finds only itself
    if me is not None and text:
        found = ctx.sql.all(OWN_MERCHANT_MATCHING, me=me, pattern=search_pattern(text), limit=limit)
    elif me is not None:
        found = ctx.sql.all(OWN_MERCHANT, me=me, limit=limit)
    elif text:
        found = ctx.sql.all(MERCHANTS_MATCHING, pattern=search_pattern(text), limit=limit)
    else:
        found = ctx.sql.all(MERCHANTS_BY_NAME, limit=limit)
    out: list[MerchantOut] = []
    for m in found:
        charged = ctx.sql.scalar(CHARGED, merchant_id=m.id)
        refunded = ctx.sql.scalar(REFUNDED, merchant_id=m.id)
        paid_out = ctx.sql.scalar(PAID_OUT, merchant_id=m.id)
        open_invoices = ctx.sql.all(OPEN_AMOUNTS, merchant_id=m.id)
        outstanding = sum((i.amount_due - i.amount_paid for i in open_invoices), ZERO)
        webhook_endpoints = ctx.sql.all(ENDPOINTS_OF, merchant_id=m.id)
        out.append(
            {
                "merchant_id": m.id,
                "name": m.name,
                "email": m.email,
                "category": m.category,
                "country": m.country,
                "currency": m.currency,
                "balance": m.balance,
                "charged_total": charged or ZERO,
                "refunded_total": refunded or ZERO,
                "paid_out_total": paid_out or ZERO,
                "payouts": m.payouts,
                "payout_pause_reason": m.payout_pause_reason or None,
                "bank_account": _bank(m),
                "open_invoices": len(open_invoices),
                "amount_outstanding": outstanding,
                "webhook_endpoints": [_endpoint_brief(e) for e in webhook_endpoints],
            }
        )
    return out


@server.tool(
    returns=("invoice", "customer"),
    phrasings=[
        "Show the {status} invoices of {merchant_id}",
        "Find invoices of {merchant_id} for {search}",
        "List the latest invoices of merchant {merchant_id}",
    ],
)
def list_invoices(
    ctx: ToolContext,
    merchant_id: MerchantRow,
    status: Literal["open", "overdue", "paid", "void"] | None = None,
    search: SearchText | None = None,
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
) -> InvoiceList:
    """List a merchant's invoices, newest first, optionally filtered.

    Args:
        merchant_id: The merchant, such as "mer_004" (see find_merchant).
        status: Only "open" (awaiting payment), "overdue" (open and past its due date),
            "paid" or "void" invoices.
        search: Case-insensitive text in the customer's name or email, the invoice number
            or the description, such as "Garcia", "SMIT-0042" or "catering".
        limit: Maximum number of invoices to return (1-100), such as 20.

    Returns:
        {"merchant_id", "currency", "total": 57, "invoices": [{"invoice_id": "inv_00042",
        "number": "SMIT-0042", "customer_name": "Ana Garcia", "amount_due": "480.00",
        "amount_paid": "0.00", "amount_remaining": "480.00", "status": "open",
        "overdue": true, "due_date": "2026-02-14", ...}]}; total counts every match.
    """
    m = merchant_id
    text = (search or "").strip()
    count, matching = _invoices_matching(status, bool(text))
    params: dict[str, Any] = {"merchant_id": m.id}
    if status == "overdue":
        params["today"] = ctx.now.date()
    if text:
        params["pattern"] = search_pattern(text)
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(matching, **params, limit=limit)
    return {
        "merchant_id": m.id,
        "currency": m.currency,
        "total": total,
        "invoices": [
            _summary(ctx, inv, inv.customer_name, inv.customer_email, inv.amount_refunded or ZERO)
            for inv in rows
        ],
    }


@server.tool(
    returns=("invoice", "customer", "charge", "refund"),
    phrasings=["Show me invoice {invoice_id}", "Has invoice {invoice_id} been paid?"],
)
def get_invoice(ctx: ToolContext, invoice_id: InvoiceRow) -> InvoiceDetail:
    """Get one invoice with its customer's card on file, its charges and their refunds.

    Args:
        invoice_id: The invoice, such as "inv_00042" (list_invoices finds it by number
            such as "SMIT-0042" or by customer).

    Returns:
        {"invoice_id", "number", "status", "amount_due", "amount_paid", "amount_refunded",
        "amount_remaining", "customer": {"customer_email", "name", "card": "Visa ending 4242
        (expires 08/2027)", "card_status": "valid"}, "charges": [{"charge_id": "ch_00107",
        "amount": "480.00", "status": "succeeded", "amount_refunded": "0.00",
        "refundable": "480.00", "refunds": [...]}], ...}.
    """
    return _detail(ctx, invoice_id)


@server.tool(
    writes=True,
    returns=("invoice", "customer", "event"),
    normalise={"customer_email": "casefold", "description": "strip"},
    phrasings=[
        "Bill {customer_email} {amount} for {description} on behalf of {merchant_id}",
        "Create an invoice from {merchant_id} to {customer_email} over {amount} for "
        "{description}, due {due_date}",
        "Invoice {customer_name} ({customer_email}) {amount} for {description} from {merchant_id}",
    ],
    examples={"due_date": _day_ahead, "idempotency_key": _new_key},
    values={
        "amount": _invoice_amount,
        "description": _invoice_description,
        "customer_name": _name_for_email,
    },
)
def create_invoice(
    ctx: ToolContext,
    merchant_id: MerchantRow,
    customer_email: CustomerEmail,
    amount: Amount,
    description: Annotated[str, Field(min_length=1, max_length=200)],
    due_date: Annotated[str, Field(max_length=32)] | None = None,
    customer_name: Annotated[str, Field(max_length=80)] | None = None,
    idempotency_key: IdemKey | None = None,
) -> InvoiceCreated:
    """Create an open invoice from a merchant to a customer, identified by email.

    A customer the merchant has not billed before is added, which needs customer_name (an
    existing customer keeps their name); a new customer has no card on file, so
    charge_invoice cannot collect from them yet.

    Args:
        merchant_id: The merchant sending the invoice, such as "mer_004".
        customer_email: The customer's email, such as "ana.garcia@gmail.com".
        amount: Total due in the merchant's currency, more than 0 and at most 100000, such
            as 480 or "480.00".
        description: What the invoice is for, such as "Catering for 40 guests".
        due_date: When payment is due, today or within a year, such as "2026-04-30";
            default 30 days from today.
        customer_name: Full name, only needed for a new customer, such as "Ana Garcia".
        idempotency_key: Optional key such as "order-7f3a9c21" that makes a retry safe: the
            same key with the same arguments returns the first invoice instead of a second.

    Returns:
        The invoice: {"invoice_id": "inv_00612", "number": "SMIT-0058", "status": "open",
        "amount_due": "480.00", "due_date": "2026-04-30", "idempotent_replay": false,
        "event_ids": ["evt_02231"], ...}.
    """
    m = merchant_id
    email = customer_email.strip().casefold()
    money = amount.quantize(CENT)
    what = _text(description, "description")
    today = ctx.now.date()
    due = parse_date(due_date, "due_date") if due_date is not None else None
    name = " ".join(customer_name.split()) if customer_name is not None else None
    params = {
        "merchant_id": m.id,
        "customer_email": email,
        "amount": money,
        "description": what,
        "due_date": due.isoformat() if due else None,
        "customer_name": name or None,
    }
    earlier = _replayed(ctx, m.id, idempotency_key, "create_invoice", params)
    if earlier is not None:
        inv = ctx.sql.one(INVOICE, id=earlier)
        return {**_detail(ctx, inv), "idempotent_replay": True, "event_ids": []}
    due = due or today + dt.timedelta(days=30)
    if not today <= due <= today + dt.timedelta(days=365):
        raise InvalidArgument(
            f"due_date must be between today ({today.isoformat()}) and a year from now, "
            f"got {due.isoformat()}."
        )
    customer = ctx.sql.first(CUSTOMER_BY_EMAIL, merchant_id=m.id, email=email)
    if customer is not None:
        customer_id = customer.id
    else:
        if not name:
            raise InvalidArgument(
                f"{email} is not a customer of {m.name} ({m.id}) yet. To bill a new customer, "
                "pass customer_name with their full name (ask the user for it); or check the "
                "email with list_invoices."
            )
        customer_id = next_id(ctx, Customer.id, "cus", 4)
        ctx.sql.insert(
            Customer,
            id=customer_id,
            merchant_id=m.id,
            name=name,
            email=email,
            created_at=ctx.now,
        )
    numbers = ctx.sql.scalars(INVOICE_NUMBERS, merchant_id=m.id)
    last = max((int(n.rsplit("-", 1)[1]) for n in numbers), default=0)
    inv_id = next_id(ctx, Invoice.id, "inv", 5)
    number = f"{m.invoice_prefix}-{last + 1:04d}"
    ctx.sql.insert(
        Invoice,
        id=inv_id,
        number=number,
        merchant_id=m.id,
        customer_id=customer_id,
        description=what,
        currency=m.currency,
        amount_due=money,
        amount_paid=ZERO,
        status="open",
        due_date=due,
        created_at=ctx.now,
        idempotency_key=idempotency_key,
    )
    _remember(ctx, m.id, idempotency_key, "create_invoice", params, inv_id)
    event = _emit(
        ctx,
        m,
        "invoice.created",
        inv_id,
        f"Invoice {number} for {money} {m.currency} sent to {email}",
        invoice_id=inv_id,
        amount=money,
    )
    inv = ctx.sql.one(INVOICE, id=inv_id)  # the invoice as stored
    return {**_detail(ctx, inv), "idempotent_replay": False, "event_ids": [event]}


def _charge_result(
    charge: Any, inv: Any, m: Any, *, replay: bool, events: list[str]
) -> ChargeResult:
    """``charge`` with its invoice ``inv`` and merchant ``m`` as they are after the call."""
    return {
        "charge_id": charge.id,
        "invoice_id": inv.id,
        "merchant_id": m.id,
        "status": charge.status,
        "amount": charge.amount,
        "currency": m.currency,
        "failure_code": charge.failure_code,
        "failure_message": (
            f"{DECLINE_MESSAGES.get(charge.failure_code, 'The card was declined.')} Nothing "
            "was captured and the invoice is still open. Ask the customer to contact their "
            "bank or add another card: charging the same card again will be declined again."
            if charge.failure_code
            else None
        ),
        "card": f"{charge.card_brand} ending {charge.card_last4}",
        "invoice_status": inv.status,
        "invoice_amount_paid": inv.amount_paid,
        "invoice_amount_remaining": inv.amount_due - inv.amount_paid
        if inv.status == "open"
        else ZERO,
        "merchant_balance": m.balance,
        "idempotency_key": charge.idempotency_key,
        "idempotent_replay": replay,
        "event_ids": events,
    }


@server.tool(
    writes=True,
    returns=("charge", "invoice", "event"),
    phrasings=[
        "Charge the card on file for invoice {invoice_id}",
        "Collect payment for {invoice_id} now",
        "Take a partial payment of {amount} on invoice {invoice_id}",
        "Charge {invoice_id}; make it safe to retry with the key {idempotency_key}",
    ],
    examples={"idempotency_key": _new_key},
    values={"amount": _part_of_invoice},
)
def charge_invoice(
    ctx: ToolContext,
    invoice_id: InvoiceRow,
    amount: Amount | None = None,
    idempotency_key: IdemKey | None = None,
) -> ChargeResult:
    """Charge the customer's card on file for an open invoice: all that is due, or a part.

    The charge either succeeds (the amount is captured, added to the invoice's amount paid
    and to the merchant's balance; the invoice becomes "paid" once nothing is left) or is
    declined by the card issuer: then status is "failed", nothing is captured and
    failure_message says what to tell the customer.

    Args:
        invoice_id: The open invoice, such as "inv_00042".
        amount: Part of what is due, such as 100 or "100.00"; leave it out to charge
            everything still due.
        idempotency_key: Optional key such as "order-7f3a9c21": a retry with the same key and
            arguments returns the first charge and never charges twice.

    Returns:
        {"charge_id": "ch_00107", "status": "succeeded", "amount": "480.00",
        "invoice_status": "paid", "invoice_amount_remaining": "0.00",
        "merchant_balance": "2320.50", "idempotent_replay": false, "event_ids": [...], ...}.
    """
    inv = invoice_id
    m = _merchant(ctx, inv.merchant_id)
    money = _money(amount)
    params = {"invoice_id": inv.id, "amount": money}
    earlier = _replayed(ctx, m.id, idempotency_key, "charge_invoice", params)
    if earlier is not None:
        charge = ctx.sql.one(CHARGE, id=earlier)
        return _charge_result(
            charge,
            ctx.sql.one(INVOICE, id=charge.invoice_id),
            _merchant(ctx, charge.merchant_id),
            replay=True,
            events=[],
        )
    if inv.status == "paid":
        raise _broken(
            "invoice_not_open",
            f"invoice {inv.number} ({inv.id}) is paid in full since {_stamp(inv.paid_at)}; "
            "only an 'open' invoice can be charged. Nothing was charged. To give money back "
            "use refund_charge on its charges (see get_invoice).",
        )
    if inv.status == "void":
        raise _broken(
            "invoice_not_open",
            f"invoice {inv.number} ({inv.id}) is void; only an 'open' invoice can be charged. "
            "Nothing was charged. Create a new invoice with create_invoice if the customer "
            "still owes money.",
        )
    remaining = inv.amount_due - inv.amount_paid
    money = money if money is not None else remaining
    if money > remaining:
        raise _broken(
            "overpayment",
            f"invoice {inv.number} has {remaining} {m.currency} still due "
            f"({inv.amount_paid} of {inv.amount_due} paid); charge {remaining} or less, or "
            "leave amount out to charge everything due.",
        )
    cust = ctx.sql.one(CUSTOMER, id=inv.customer_id)
    if cust.card_brand is None or cust.card_exp_month is None or cust.card_exp_year is None:
        raise _broken(
            "no_payment_method",
            f"customer {cust.name} ({cust.email}) has no card on file, so invoice {inv.number} "
            "cannot be charged. Nothing was charged; the customer has to add a card first.",
        )
    if card_expired(cust.card_exp_month, cust.card_exp_year, ctx.now.date()):
        raise _broken(
            "card_expired",
            f"the card on file of {cust.name} ({_card(cust)}) has expired. Nothing was "
            "charged; ask the customer to update their card, then charge again.",
        )
    failed = cust.card_decline_code is not None
    charge = SimpleNamespace(
        id=next_id(ctx, Charge.id, "ch", 5),
        invoice_id=inv.id,
        merchant_id=m.id,
        customer_id=cust.id,
        amount=money,
        amount_refunded=ZERO,
        status="failed" if failed else "succeeded",
        failure_code=cust.card_decline_code,
        card_brand=cust.card_brand,
        card_last4=cust.card_last4 or "",
        created_at=ctx.now,
        idempotency_key=idempotency_key,
    )
    ctx.sql.insert(Charge, **vars(charge))
    _remember(ctx, m.id, idempotency_key, "charge_invoice", params, charge.id)
    card = f"{charge.card_brand} ending {charge.card_last4}"
    events = []
    if failed:
        events.append(
            _emit(
                ctx,
                m,
                "charge.failed",
                charge.id,
                f"Charge of {money} {m.currency} on {card} failed: {charge.failure_code}",
                invoice_id=inv.id,
                amount=money,
            )
        )
    else:
        # the merchant before the invoice: the order the ORM flushed them in
        m = ctx.sql.update(Merchant, m, balance=m.balance + money)
        inv = ctx.sql.update(Invoice, inv, amount_paid=inv.amount_paid + money)
        events.append(
            _emit(
                ctx,
                m,
                "charge.succeeded",
                charge.id,
                f"Charged {money} {m.currency} on {card} for invoice {inv.number}",
                invoice_id=inv.id,
                amount=money,
            )
        )
        if inv.amount_paid == inv.amount_due:
            inv = ctx.sql.update(Invoice, inv, status="paid", paid_at=ctx.now)
            events.append(
                _emit(
                    ctx,
                    m,
                    "invoice.paid",
                    inv.id,
                    f"Invoice {inv.number} paid in full",
                    invoice_id=inv.id,
                    amount=inv.amount_due,
                )
            )
    return _charge_result(charge, inv, m, replay=False, events=events)


def _refund_result(
    refund: Any, charge: Any, m: Any, *, replay: bool, events: list[str]
) -> RefundResult:
    """``refund`` with its charge and merchant ``m`` as they are after the call."""
    return {
        "refund_id": refund.id,
        "charge_id": charge.id,
        "invoice_id": refund.invoice_id,
        "merchant_id": m.id,
        "status": "succeeded",
        "amount": refund.amount,
        "currency": m.currency,
        "reason": refund.reason,
        "charge_amount": charge.amount,
        "charge_amount_refunded": charge.amount_refunded,
        "charge_refundable": charge.amount - charge.amount_refunded,
        "merchant_balance": m.balance,
        "idempotency_key": refund.idempotency_key,
        "idempotent_replay": replay,
        "event_ids": events,
    }


@server.tool(
    writes=True,
    returns=("refund", "charge", "invoice", "event"),
    phrasings=[
        "Refund charge {charge_id}",
        "Refund {amount} of charge {charge_id}, the reason is {reason}",
        "Give the customer their money back for {charge_id}",
    ],
    examples={"idempotency_key": _new_key},
    values={"amount": _part_of_charge},
    inverse_of=("charge_invoice",),
)
def refund_charge(
    ctx: ToolContext,
    charge_id: ChargeRow,
    amount: Amount | None = None,
    reason: RefundReason = "requested_by_customer",
    idempotency_key: IdemKey | None = None,
) -> RefundResult:
    """Refund a succeeded charge in full or in part, paid from the merchant's balance.

    A charge's refunds never add up to more than it captured. The invoice keeps its
    status; its amount_refunded grows.

    Args:
        charge_id: The charge, such as "ch_00107" (get_invoice lists an invoice's charges).
        amount: How much to refund, such as 25 or "25.00"; leave it out to refund all
            that is still refundable.
        reason: "requested_by_customer", "duplicate" or "fraudulent".
        idempotency_key: Optional key such as "req-0c9d2e11": a retry with the same key and
            arguments returns the first refund and never refunds twice.

    Returns:
        {"refund_id": "re_00031", "status": "succeeded", "amount": "25.00",
        "charge_amount": "480.00", "charge_amount_refunded": "25.00",
        "charge_refundable": "455.00", "merchant_balance": "1815.50", ...}.
    """
    charge = charge_id
    m = _merchant(ctx, charge.merchant_id)
    money = _money(amount)
    params = {"charge_id": charge.id, "amount": money, "reason": reason}
    earlier = _replayed(ctx, m.id, idempotency_key, "refund_charge", params)
    if earlier is not None:
        refund = ctx.sql.one(REFUND, id=earlier)
        return _refund_result(
            refund,
            ctx.sql.one(CHARGE, id=refund.charge_id),
            _merchant(ctx, refund.merchant_id),
            replay=True,
            events=[],
        )
    if charge.status != "succeeded":
        raise _broken(
            "charge_failed",
            f"charge {charge.id} failed ({charge.failure_code}) and captured nothing, so there "
            "is nothing to refund. Look for a 'succeeded' charge of the invoice with "
            "get_invoice.",
        )
    refundable = charge.amount - charge.amount_refunded
    if refundable <= 0:
        refund_count = ctx.sql.scalar(REFUND_COUNT, charge_id=charge.id)
        raise _broken(
            "refund_exceeds_captured",
            f"charge {charge.id} captured {charge.amount} {m.currency} and all of it has "
            f"already been refunded ({refund_count} refunds); 0.00 is left to refund.",
        )
    money = money if money is not None else refundable
    if money > refundable:
        raise _broken(
            "refund_exceeds_captured",
            f"charge {charge.id} captured {charge.amount} {m.currency} and "
            f"{charge.amount_refunded} is already refunded, so at most {refundable} can still "
            "be refunded. Refund that much or less.",
        )
    if ctx.now - charge.created_at > dt.timedelta(days=REFUND_WINDOW_DAYS):
        raise _broken(
            "refund_window",
            f"charge {charge.id} was made on {charge.created_at.date().isoformat()}, more than "
            f"{REFUND_WINDOW_DAYS} days ago, and can no longer be refunded through the "
            "platform. The merchant has to settle with the customer directly.",
        )
    if money > m.balance:
        raise _broken(
            "insufficient_balance",
            f"{m.name} ({m.id}) has a balance of {m.balance} {m.currency}, less than the "
            f"{money} to refund (refunds are paid from the balance; recent payouts emptied "
            "it). Refund at most the balance now, or wait for new payments to come in.",
        )
    refund = SimpleNamespace(
        id=next_id(ctx, Refund.id, "re", 5),
        charge_id=charge.id,
        invoice_id=charge.invoice_id,
        merchant_id=m.id,
        amount=money,
        reason=reason,
        created_at=ctx.now,
        idempotency_key=idempotency_key,
    )
    # the charge, the merchant, then the refund: the order the ORM flushed them in
    charge = ctx.sql.update(Charge, charge, amount_refunded=charge.amount_refunded + money)
    m = ctx.sql.update(Merchant, m, balance=m.balance - money)
    ctx.sql.insert(Refund, **vars(refund))
    _remember(ctx, m.id, idempotency_key, "refund_charge", params, refund.id)
    event = _emit(
        ctx,
        m,
        "refund.created",
        refund.id,
        f"Refunded {money} {m.currency} of charge {charge.id} ({reason})",
        invoice_id=charge.invoice_id,
        amount=money,
    )
    return _refund_result(refund, charge, m, replay=False, events=[event])


@server.tool(
    writes=True,
    inverse_of="create_invoice",
    destructive=True,
    idempotent=True,
    returns=("invoice", "event"),
    phrasings=["Void invoice {invoice_id}", "Cancel the invoice {invoice_id}, it was a mistake"],
)
def void_invoice(ctx: ToolContext, invoice_id: InvoiceRow) -> InvoiceVoided:
    """Void an open invoice so that it can no longer be paid (it stays listed as "void").

    An invoice still holding money (payments not refunded) cannot be voided: refund its
    charges with refund_charge first.

    Args:
        invoice_id: The open invoice to void, such as "inv_00042".

    Returns:
        The invoice with "status": "void", "voided_at" and "event_ids".
    """
    inv = invoice_id
    m = _merchant(ctx, inv.merchant_id)
    if inv.status != "open":
        raise _broken(
            "invoice_not_open",
            f"invoice {inv.number} ({inv.id}) is {inv.status}; only an 'open' invoice can be "
            "voided."
            + (
                " To give the money back, refund its charges with refund_charge."
                if inv.status == "paid"
                else ""
            ),
        )
    invoice_charges = ctx.sql.all(CHARGES_OF, invoice_id=inv.id)
    held = inv.amount_paid - _refunded(invoice_charges)
    if held > 0:
        refundable = [
            c.id
            for c in invoice_charges
            if c.status == "succeeded" and c.amount > c.amount_refunded
        ]
        raise _broken(
            "invoice_has_payments",
            f"invoice {inv.number} ({inv.id}) still holds {held} {m.currency} of payments "
            f"(charges {', '.join(refundable)}). Refund them with refund_charge first, or "
            "collect the rest with charge_invoice.",
        )
    inv = ctx.sql.update(Invoice, inv, status="void", voided_at=ctx.now)
    event = _emit(
        ctx, m, "invoice.voided", inv.id, f"Invoice {inv.number} voided", invoice_id=inv.id
    )
    return {**_detail(ctx, inv), "event_ids": [event]}


def _payout_result(payout: Any, m: Any, *, replay: bool, events: list[str]) -> PayoutResult:
    """``payout`` with its merchant ``m`` as it is after the call."""
    return {
        "payout_id": payout.id,
        "merchant_id": m.id,
        "status": payout.status,
        "amount": payout.amount,
        "currency": m.currency,
        "description": payout.description,
        "bank_account": f"{m.bank_name} ****{payout.bank_last4}",
        "arrival_date": payout.arrival_date.isoformat(),
        "merchant_balance": m.balance,
        "idempotency_key": payout.idempotency_key,
        "idempotent_replay": replay,
        "event_ids": events,
    }


@server.tool(
    writes=True,
    returns=("payout", "event"),
    phrasings=[
        "Pay out the balance of {merchant_id} to their bank",
        "Send {amount} from {merchant_id}'s balance to their bank account",
    ],
    examples={
        "amount": [50, 100, "250.00", 400, 75.25],
        "description": ["Manual payout", "Payroll top-up", "Early payout requested by owner"],
        "idempotency_key": _new_key,
    },
)
def create_payout(
    ctx: ToolContext,
    merchant_id: MerchantRow,
    amount: PayoutAmount | None = None,
    description: Annotated[str, Field(max_length=100)] = "",
    idempotency_key: IdemKey | None = None,
) -> PayoutResult:
    """Send money from a merchant's balance to its bank account; it arrives in 2 business days.

    Args:
        merchant_id: The merchant, such as "mer_004".
        amount: How much, at least 1.00 and at most the balance, such as 250 or "250.00";
            leave it out to pay out the whole balance.
        description: Shown on the bank statement, such as "Manual payout".
        idempotency_key: Optional key such as "job-51e0aa73": a retry with the same key and
            arguments returns the first payout and never pays out twice.

    Returns:
        {"payout_id": "po_00311", "status": "in_transit", "amount": "250.00",
        "bank_account": "Chase ****6789", "arrival_date": "2026-03-10",
        "merchant_balance": "1590.50", ...}.
    """
    m = merchant_id
    money = _money(amount)
    note = " ".join(description.split()) or "Manual payout"
    params = {"merchant_id": m.id, "amount": money, "description": note}
    earlier = _replayed(ctx, m.id, idempotency_key, "create_payout", params)
    if earlier is not None:
        payout = ctx.sql.one(PAYOUT, id=earlier)
        return _payout_result(payout, _merchant(ctx, payout.merchant_id), replay=True, events=[])
    if m.payouts != "enabled":
        raise _broken(
            "payouts_paused",
            f"payouts of {m.name} ({m.id}) are paused: {m.payout_pause_reason} Nothing was "
            "paid out; the merchant has to resolve this with the platform's support team.",
        )
    money = money if money is not None else m.balance
    if money > m.balance or money < 1:
        raise _broken(
            "insufficient_balance",
            f"{m.name} ({m.id}) has a balance of {m.balance} {m.currency}; a payout is at "
            f"least 1.00 and at most the balance, so {money} cannot be paid out. Pay out "
            "the balance or less.",
        )
    payout = SimpleNamespace(
        id=next_id(ctx, Payout.id, "po", 5),
        merchant_id=m.id,
        amount=money,
        status="in_transit",
        description=note,
        bank_last4=m.bank_last4,
        arrival_date=arrival_date(ctx.now.date()),
        created_at=ctx.now,
        idempotency_key=idempotency_key,
    )
    # the merchant, then the payout: the order the ORM flushed them in
    m = ctx.sql.update(Merchant, m, balance=m.balance - money)
    ctx.sql.insert(Payout, **vars(payout))
    _remember(ctx, m.id, idempotency_key, "create_payout", params, payout.id)
    event = _emit(
        ctx,
        m,
        "payout.created",
        payout.id,
        f"Payout of {money} {m.currency} to {_bank(m)}",
        amount=money,
    )
    return _payout_result(payout, m, replay=False, events=[event])


@server.tool(
    writes=True,
    returns="webhook_endpoint",
    normalise={"url": "strip"},
    phrasings=[
        "Register {url} as a webhook endpoint of {merchant_id} for {events}",
        "Send {merchant_id}'s payment events to {url}",
    ],
    examples={
        "events": [  # not ["*"]: "for *" is no request a person writes
            ["charge.succeeded", "charge.failed"],
            ["invoice.paid"],
            ["refund.created", "payout.created"],
            ["invoice.created", "invoice.paid", "invoice.voided"],
        ],
        "description": ["Order fulfilment", "Accounting sync", "Slack alerts"],
    },
    values={"url": _own_webhook_url},
)
def create_webhook_endpoint(
    ctx: ToolContext,
    merchant_id: MerchantRow,
    url: Annotated[str, Field(min_length=10, max_length=300, pattern=r"^\s*[A-Za-z]+://\S+\s*$")],
    events: Annotated[list[Subscription], Field(min_length=1, max_length=9)],
    description: Annotated[str, Field(max_length=140)] = "",
) -> EndpointOut:
    """Register a URL of the merchant's that will receive events from now on.

    Each later event of a subscribed type is sent to it and logged (see list_events); past
    events are not sent.

    Args:
        merchant_id: The merchant, such as "mer_004".
        url: An https URL, such as "https://api.smithbakery.com/webhooks/payments".
        events: Event types to receive, such as ["charge.succeeded", "refund.created"], or
            ["*"] for all of them.
        description: What it is for, such as "Accounting sync".

    Returns:
        {"endpoint_id": "we_0031", "url": "...", "events": ["charge.succeeded",
        "refund.created"], "status": "enabled", ...}.
    """
    m = merchant_id
    link = url.strip()
    if not link.lower().startswith("https://"):
        raise _broken(
            "https_required",
            f"{link!r} is not an https:// URL; webhook endpoints must use https. Ask the "
            "merchant for the https address of their endpoint.",
        )
    mine = ctx.sql.all(ENABLED_ENDPOINTS_OF, merchant_id=m.id)
    taken = [e for e in mine if e.url.rstrip("/") == link.rstrip("/")]
    if taken:
        raise Conflict(
            f"Rule 'endpoint_url_taken' failed: {m.id} already sends events to {link} "
            f"(endpoint {taken[0].id}, events {' '.join(_events_of(taken[0]))}); nothing was "
            "added."
        )
    if len(mine) >= MAX_ENABLED_ENDPOINTS:
        raise _broken(
            "endpoint_limit",
            f"{m.id} already has {len(mine)} enabled endpoints "
            f"({', '.join(e.id for e in mine)}), the most allowed.",
        )
    chosen = "*" if "*" in events else " ".join(t for t in EVENT_TYPES if t in set(events))
    seq = (ctx.sql.scalar(LAST_SEQ) or 0) + 1
    endpoint = SimpleNamespace(
        id=next_id(ctx, WebhookEndpoint.id, "we", 4),
        merchant_id=m.id,
        url=link,
        description=" ".join(description.split()),
        events=chosen,
        status="enabled",
        response_code=200,
        first_seq=seq,
        last_seq=None,
        created_at=ctx.now,
    )
    ctx.sql.insert(WebhookEndpoint, **vars(endpoint))
    return {
        **_endpoint_brief(endpoint),
        "merchant_id": m.id,
        "description": endpoint.description,
        "created_at": endpoint.created_at.isoformat(timespec="minutes"),
    }


@server.tool(
    returns=("event", "webhook_endpoint", "invoice"),
    phrasings=[
        "Which webhooks were sent for invoice {invoice_id} of {merchant_id}?",
        "Show the webhook events of {merchant_id}",
        "Show the {delivery_status} webhook deliveries of {merchant_id}",
        "List the latest {type} events of {merchant_id}",
    ],
)
def list_events(
    ctx: ToolContext,
    merchant_id: MerchantRow,
    type: EventType | None = None,
    invoice_id: InvoiceRow | None = None,
    endpoint_id: EndpointRow | None = None,
    delivery_status: Literal["delivered", "failed"] | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 20,
) -> EventList:
    """List a merchant's events, newest first, each with its webhook delivery log.

    Args:
        merchant_id: The merchant, such as "mer_004".
        type: Only events of this type, such as "charge.succeeded" or "refund.created".
        invoice_id: Only events about this invoice and its charges and refunds, such as
            "inv_00042".
        endpoint_id: Only events sent to this webhook endpoint, such as "we_0003".
        delivery_status: Only events with a delivery that "delivered" or "failed" (to
            endpoint_id when given).
        limit: Maximum number of events to return (1-50), such as 20.

    Returns:
        {"merchant_id", "total": 12, "events": [{"event_id": "evt_02231",
        "type": "charge.succeeded", "object_id": "ch_00107", "invoice_id": "inv_00042",
        "amount": "480.00", "summary": "...", "deliveries": [{"endpoint_id": "we_0003",
        "url": "...", "status": "failed", "response_code": 500, ...}]}]}.
    """
    m = merchant_id
    for name, row in (("invoice_id", invoice_id), ("endpoint_id", endpoint_id)):
        if row is not None and row.merchant_id != m.id:
            raise InvalidArgument(
                f"{name} {row.id} belongs to merchant {row.merchant_id}, not {m.id}; pass "
                f"merchant_id {row.merchant_id!r} or another {name}."
            )
    params: dict[str, Any] = {"merchant_id": m.id}
    if type is not None:
        params["type"] = type
    if invoice_id is not None:
        params["invoice_id"] = invoice_id.id
    if endpoint_id is not None:
        params["endpoint_id"] = endpoint_id.id
    if delivery_status is not None:
        params["delivery_status"] = delivery_status
    count, matching = _events_matching(
        type is not None,
        invoice_id is not None,
        endpoint_id is not None,
        delivery_status is not None,
    )
    total = ctx.sql.scalar(count, **params) or 0
    urls = {e.id: e.url for e in ctx.sql.all(ENDPOINTS_OF, merchant_id=m.id)}
    found = ctx.sql.all(matching, **params, limit=limit)
    sent: dict[str, list[Any]] = {e.id: [] for e in found}
    for d in ctx.sql.all(DELIVERIES_OF, event_ids=list(sent)):
        sent[d.event_id].append(d)
    return {
        "merchant_id": m.id,
        "total": total,
        "events": [
            {
                "event_id": e.id,
                "type": e.type,
                "created_at": e.created_at.isoformat(timespec="minutes"),
                "object_id": e.object_id,
                "invoice_id": e.invoice_id,
                "amount": e.amount,
                "summary": e.summary,
                "deliveries": [
                    {
                        "endpoint_id": d.endpoint_id,
                        "url": urls.get(d.endpoint_id, ""),
                        "status": d.status,
                        "response_code": d.response_code,
                        "attempted_at": d.attempted_at.isoformat(timespec="minutes"),
                    }
                    for d in sent[e.id]
                ],
            }
            for e in found
        ],
    }


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests.
@server.entity(
    "merchant",
    key="merchant_id",
    model=Merchant,
    not_found="Call find_merchant with the merchant's name to find its id (such as 'mer_004').",
)
def _merchants(ctx: ToolContext) -> list[dict[str, Any]]:
    """Every merchant, with a webhook URL it has not registered yet."""
    used: dict[str, set[str]] = {}
    for e in ctx.sql.all(ENDPOINTS):
        used.setdefault(e.merchant_id, set()).add(e.url)
    out = []
    for m in ctx.sql.all(MERCHANTS):
        url = next(
            u
            for n in range(1, 50)
            if (u := f"https://api.{m.website}/webhooks/v{n}") not in used.get(m.id, set())
        )
        out.append(
            {
                "merchant_id": m.id,
                "name": m.name,
                "query": m.name,
                "currency": m.currency,
                "balance": m.balance,
                "payouts": m.payouts,
                "url": url,
            }
        )
    return out


@server.entity("customer", key="customer_email")
def _customers(ctx: ToolContext) -> list[dict[str, Any]]:
    """Customers by email, with their merchant (an email is unique within a merchant)."""
    today = ctx.now.date()
    rows = ctx.sql.all(CUSTOMERS)
    return [
        {
            "customer_email": c.email,
            "merchant_id": c.merchant_id,
            "name": c.name,
            "search": c.name,
            "card_status": _card_status(c, today),
        }
        for c in rows
    ]


@server.entity(
    "invoice",
    key="invoice_id",
    model=Invoice,
    owner="merchant_id",
    not_found="Call list_invoices with the merchant's id (search= the customer's name or the "
    "invoice number such as 'SMIT-0042') to find the invoice's id (such as 'inv_00042').",
)
def _invoices(ctx: ToolContext) -> list[dict[str, Any]]:
    """Open invoices: what can still be charged, voided or chased (the others are history)."""
    today = ctx.now.date()
    rows = ctx.sql.all(OPEN_INVOICES)  # each with its customer's email, name and card
    return [
        {
            "invoice_id": inv.id,
            "number": inv.number,
            "merchant_id": inv.merchant_id,
            "customer_email": inv.email,
            "search": inv.name,
            "status": inv.status,
            "card_status": _card_status(inv, today),
            "amount_due": inv.amount_due,
        }
        for inv in rows
    ]


@server.entity(
    "charge",
    key="charge_id",
    model=Charge,
    owner="merchant_id",
    not_found="Call get_invoice with the invoice's id to see its charges (ids such as 'ch_00107').",
)
def _charges(ctx: ToolContext) -> list[dict[str, Any]]:
    """Succeeded charges that can still be refunded in full from the merchant's balance."""
    oldest = ctx.now - dt.timedelta(days=REFUND_WINDOW_DAYS)
    rows = ctx.sql.all(REFUNDABLE_CHARGES, oldest=oldest)
    return [
        {
            "charge_id": c.id,
            "invoice_id": c.invoice_id,
            "merchant_id": c.merchant_id,
            "refundable": c.amount - c.amount_refunded,
        }
        for c in rows
    ]


@server.entity("refund", key="refund_id")
def _refunds(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(REFUNDS)
    return [
        {"refund_id": r.id, "charge_id": r.charge_id, "merchant_id": r.merchant_id} for r in rows
    ]


@server.entity("payout", key="payout_id")
def _payouts(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(PAYOUTS)
    return [{"payout_id": p.id, "merchant_id": p.merchant_id, "status": p.status} for p in rows]


@server.entity(
    "webhook_endpoint",
    key="endpoint_id",
    model=WebhookEndpoint,
    owner="merchant_id",
    not_found="Call find_merchant to see a merchant's webhook endpoints (ids such as 'we_0003').",
)
def _endpoints(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(ENDPOINTS)
    return [{"endpoint_id": e.id, "merchant_id": e.merchant_id, "status": e.status} for e in rows]


@server.entity("event", key="event_id")
def _events(ctx: ToolContext) -> list[dict[str, Any]]:
    """Events of the last 30 days (what merchants ask about)."""
    rows = ctx.sql.all(EVENTS_SINCE, since=ctx.now - dt.timedelta(days=30))
    return [
        {"event_id": e.id, "merchant_id": e.merchant_id, "type": e.type, "invoice_id": e.invoice_id}
        for e in rows
    ]
