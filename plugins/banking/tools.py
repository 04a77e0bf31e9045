"""The banking server's 17 tools. Docstrings are what the model reads: keep examples concrete.

Sensitive operations (moving money, adding payees, scheduling or cancelling
payments, changing cards) need the customer's ``auth_token``, which only
``authenticate`` hands out, given the passcode the customer states. A missing or
wrong token is a ``permission_denied`` error that says how to authenticate.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import re
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import Field
from sqlalchemy import bindparam, func, select, update

from prove_gym.server import (
    Bound,
    Conflict,
    Entity,
    EnvVersion,
    InvalidArgument,
    NotFound,
    NotRequired,
    PermissionDenied,
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
    Account,
    Base,
    Beneficiary,
    Card,
    Customer,
    ExchangeRate,
    ScheduledPayment,
    Transaction,
    Transfer,
    auth_token_for,
    convert,
    cross_rate,
)
from .sampler import HISTORY_DAYS, UTILITIES, beneficiary_number, sample_banking

OUT_OF_SCOPE = (
    "Can you raise the overdraft limit on my account to 2,000?",
    "Order me a new chequebook.",
    "I'd like to apply for a mortgage.",
    "What interest rate would I get on a five-year fixed savings bond?",
    "Change the phone number on my profile.",
    "Open a new savings account for my daughter.",
    "Send me a replacement card to my new address.",
    "Dispute the last charge from the supermarket, I never made it.",
    "Tell me my credit score.",
    "Find me a branch advisor who speaks Portuguese.",
    "Reset my online banking password.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

SIGNED_IN = 1
"""The env version a session is signed in as one customer from (the core's :class:`Principal`):
whose accounts, payees, cards and scheduled payments a call may touch is the core's check; the
auth_token only confirms the signed-in customer's passcode."""

server = Server(
    "banking",
    out_of_scope=OUT_OF_SCOPE,
    persona=("customer",),
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.1.0",
    base=Base,
    sampler=sample_banking,
    description="A retail bank: customers, accounts and balances, transaction history and "
    "monthly statements, transfers between a customer's own accounts (with currency "
    "conversion at fixed rates), payments to saved beneficiaries, scheduled payments and "
    "debit cards.",
    instructions="Banking conventions: ids look like 'cus_012' (customer), 'acc_0031' "
    "(account), 'ben_0007' (beneficiary), 'sch_0004' (scheduled payment), 'crd_0019' (card). "
    "Amounts are exact decimals in the account's currency: pass a number or a string such as "
    '"125.40"; results show amounts as strings. Transfers, payments, adding beneficiaries, '
    "scheduling or cancelling payments and card changes need an auth_token: call authenticate "
    "with the customer's id and the passcode the customer gave you. Never guess a passcode; "
    "ask the customer for it.",
    env_versions=[
        EnvVersion(
            SIGNED_IN,
            "acts for one signed-in customer: another customer's accounts, payees, cards and "
            "scheduled payments are refused by the core (rule not_your_customer), "
            "find_customer finds only them, and the auth_token confirms their passcode only",
            tasks_file=Path(__file__).with_name("tasks_v1.jsonl"),
            principal=Principal(
                "customer",
                "You serve customer {id}, who is signed in to online banking: you act for them "
                "alone and can see and use only their own accounts, payees, cards and "
                "scheduled payments (find_customer finds only them). Transfers, payments, new payees, schedules and card "
                "changes still need their passcode: ask them for it and call authenticate with "
                "customer_id {id}.",
            ),
        )
    ],
)

# Rows: the core looks the id up before the tool runs (not_found hints: see the entities below).
CustomerRow = Annotated[Record[Customer], Entity("customer")]
AccountRow = Annotated[Record[Account], Entity("account")]
BeneficiaryRow = Annotated[Record[Beneficiary], Entity("beneficiary")]
ScheduleRow = Annotated[Record[ScheduledPayment], Entity("scheduled_payment")]
CardRow = Annotated[Record[Card], Entity("card")]
# Ids that schedule_payment looks up itself, after its auth and argument checks.
AccountId = Annotated[str, Entity("account")]
BeneficiaryId = Annotated[str, Entity("beneficiary")]
AuthToken = Annotated[str | None, Entity("auth_token")]
# Longer than any field it is matched against; unbounded LIKE patterns make SQLite fail.
SearchText = Annotated[str, Field(max_length=200)]
Currency = Literal["USD", "EUR", "GBP", "CAD", "CHF"]
TransactionKind = Literal[
    "salary",
    "deposit",
    "card_purchase",
    "atm_withdrawal",
    "withdrawal",
    "payment",
    "transfer_in",
    "transfer_out",
    "interest",
    "fee",
]

MAX_AMOUNT = Decimal("1000000.00")
MAX_CARD_LIMIT = Decimal("10000.00")
MAX_SCHEDULE_DAYS = 365


# ----------------------------------------------------------------- results
class CustomerOut(TypedDict):
    customer_id: str
    name: str
    email: str
    phone: str
    city: str
    segment: str
    accounts: list[str]


class AuthOut(TypedDict):
    customer_id: str
    name: str
    auth_token: str


class AccountOut(TypedDict):
    account_id: str
    nickname: str
    kind: str
    number: str
    currency: str
    balance: Decimal
    available: Decimal
    overdraft_limit: Decimal
    status: str


class AccountsOut(TypedDict):
    customer_id: str
    name: str
    as_of: str
    accounts: list[AccountOut]


class CardBrief(TypedDict):
    card_id: str
    last4: str
    status: str


class TransactionOut(TypedDict):
    transaction_id: str
    posted_at: str
    kind: str
    description: str
    amount: Decimal
    balance_after: Decimal
    transfer_id: str | None


class AccountDetail(AccountOut):
    customer_id: str
    owner: str
    opened_on: str
    as_of: str
    cards: list[CardBrief]
    recent_transactions: list[TransactionOut]


class TransactionsOut(TypedDict):
    account_id: str
    currency: str
    transactions: list[TransactionOut]


class StatementOut(TransactionsOut):
    month: str
    opening_balance: Decimal
    money_in: Decimal
    money_out: Decimal
    closing_balance: Decimal
    transaction_count: int


class RateOut(TypedDict):
    from_currency: str
    to_currency: str
    rate: Decimal
    amount: NotRequired[Decimal]
    converted_amount: NotRequired[Decimal]


class SentOut(TypedDict):
    transfer_id: str
    status: str
    from_account_id: str
    amount: Decimal
    currency: str
    credited_amount: Decimal
    credited_currency: str
    rate: Decimal
    from_balance: Decimal


class TransferOut(SentOut):
    to_account_id: str
    to_balance: Decimal
    transaction_ids: list[str]
    memo: str


class PaymentOut(SentOut):
    beneficiary_id: str
    payee: str
    transaction_id: str
    reference: str


class BeneficiaryOut(TypedDict):
    beneficiary_id: str
    name: str
    account_number: str
    bank_name: str
    currency: str
    added_on: str


class ScheduleOut(TypedDict):
    scheduled_payment_id: str
    from_account_id: str
    to_account_id: str | None
    beneficiary_id: str | None
    amount: Decimal
    frequency: str
    next_date: str
    end_date: str | None
    reference: str
    status: str


class SchedulesOut(TypedDict):
    customer_id: str
    today: str
    scheduled_payments: list[ScheduleOut]


class CardOut(TypedDict):
    card_id: str
    account_id: str
    network: str
    kind: str
    last4: str
    expires: str
    status: str
    block_reason: str | None
    daily_limit: Decimal
    currency: str


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
customers_t = Customer.__table__
accounts_t = Account.__table__
beneficiaries_t = Beneficiary.__table__
schedules_t = ScheduledPayment.__table__
cards_t = Card.__table__
transactions_t = Transaction.__table__
RATES = Query(select(ExchangeRate.currency, ExchangeRate.base_per_unit))
CUSTOMER = Query(select(customers_t).where(Customer.id == bindparam("id")))
OWNER = Query(  # the customer who owns an account
    select(customers_t)
    .select_from(customers_t.join(accounts_t, Account.customer_id == Customer.id))
    .where(Account.id == bindparam("account_id"))
)
PASSCODES = Query(select(Customer.passcode).order_by(Customer.id))
CUSTOMER_NAMES = Query(select(Customer.name).order_by(Customer.id))
CUSTOMERS = Query(select(customers_t).order_by(Customer.id))
CUSTOMERS_MATCHING = Query(
    select(customers_t)
    .where(
        contains(bindparam("pattern"), Customer.name, Customer.email, Customer.phone, Customer.id)
    )
    .order_by(Customer.name, Customer.id)
    .limit(bindparam("limit"))
)
OWN_CUSTOMER_MATCHING = Query(
    select(customers_t)
    .where(
        Customer.id == bindparam("me"),
        contains(bindparam("pattern"), Customer.name, Customer.email, Customer.phone, Customer.id),
    )
    # at most one row; the limit is bound as find_customer's other statement's is
    .limit(bindparam("limit"))
)
ACCOUNT = Query(select(accounts_t).where(Account.id == bindparam("id")))
ACCOUNT_CURRENCY = Query(select(Account.currency).where(Account.id == bindparam("id")))
# Customer.accounts: the relationship orders by Account.id
ACCOUNTS_OF = Query(
    select(accounts_t).where(Account.customer_id == bindparam("customer_id")).order_by(Account.id)
)
ACCOUNT_IDS_OF = Query(
    select(Account.customer_id, Account.id)
    .where(Account.customer_id.in_(bindparam("customer_ids", expanding=True)))
    .order_by(Account.id)
)
SET_BALANCE = Query(
    update(Account).where(Account.id == bindparam("id")).values(balance=bindparam("balance"))
)
# active accounts with their owner's passcode (for the entity listings: only the columns
# they use, so that the rest, money and dates, are not read back)
ACTIVE_ACCOUNTS = Query(
    select(
        Account.id,
        Account.customer_id,
        Account.nickname,
        Account.currency,
        Account.balance,
        Customer.passcode,
    )
    .select_from(accounts_t.join(customers_t, Account.customer_id == Customer.id))
    .where(Account.status == "active")
    .order_by(Account.id)
)
FUNDED_CUSTOMERS = Query(  # customers with an active account holding money
    select(Customer.id, Customer.name, Customer.email, Customer.passcode)
    .where(
        Customer.id.in_(
            select(Account.customer_id).where(Account.status == "active", Account.balance > 0)
        )
    )
    .order_by(Customer.id)
)
RECENT_TRANSACTIONS = Query(
    select(transactions_t)
    .where(Transaction.account_id == bindparam("account_id"))
    .order_by(Transaction.posted_at.desc(), Transaction.id.desc())
    .limit(5)
)
SUM_BEFORE = Query(  # sum() keeps the Money type: a Decimal, or None for no rows
    select(func.sum(Transaction.amount)).where(
        Transaction.account_id == bindparam("account_id"), Transaction.posted_at < bindparam("lo")
    )
)
MONTH_TRANSACTIONS = Query(
    select(transactions_t)
    .where(
        Transaction.account_id == bindparam("account_id"),
        Transaction.posted_at >= bindparam("lo"),
        Transaction.posted_at < bindparam("hi"),
    )
    .order_by(Transaction.posted_at, Transaction.id)
)
TRANSACTIONS_SINCE = Query(
    select(Transaction.id, Transaction.account_id, Transaction.description)
    .where(Transaction.posted_at >= bindparam("since"))
    .order_by(Transaction.id)
)
TRANSFERS = Query(select(Transfer.id, Transfer.from_account_id).order_by(Transfer.id))
CARDS_OF_ACCOUNT = Query(
    select(Card.id, Card.last4, Card.status)
    .where(Card.account_id == bindparam("account_id"))
    .order_by(Card.id)
)
# cards with the currency of their account
CARDS_OF_CUSTOMER = Query(
    select(cards_t, Account.currency)
    .select_from(cards_t.join(accounts_t, Card.account_id == Account.id))
    .where(Account.customer_id == bindparam("customer_id"))
    .order_by(Card.id)
)
ACTIVE_CARDS = Query(
    select(Card.id, Card.last4, Card.account_id, Account.customer_id, Customer.passcode)
    .select_from(
        cards_t.join(accounts_t, Card.account_id == Account.id).join(
            customers_t, Account.customer_id == Customer.id
        )
    )
    .where(Card.status == "active")
    .order_by(Card.id)
)
BLOCK_CARD = Query(
    update(Card)
    .where(Card.id == bindparam("id"))
    .values(status="blocked", block_reason=bindparam("block_reason"))
)
SET_CARD_LIMIT = Query(
    update(Card).where(Card.id == bindparam("id")).values(daily_limit=bindparam("daily_limit"))
)
BENEFICIARY = Query(select(beneficiaries_t).where(Beneficiary.id == bindparam("id")))
BENEFICIARIES = Query(
    select(Beneficiary.id, Beneficiary.name, Beneficiary.customer_id).order_by(Beneficiary.id)
)
BENEFICIARIES_OF = Query(
    select(beneficiaries_t)
    .where(Beneficiary.customer_id == bindparam("customer_id"))
    .order_by(Beneficiary.id)
)
SAVED_PAYEE = Query(
    select(Beneficiary.id, Beneficiary.name).where(
        Beneficiary.customer_id == bindparam("customer_id"),
        Beneficiary.account_number == bindparam("account_number"),
    )
)
DUPLICATE_SCHEDULE = Query(
    select(ScheduledPayment.id).where(
        ScheduledPayment.status == "active",
        ScheduledPayment.from_account_id == bindparam("from_account_id"),
        ScheduledPayment.beneficiary_id.is_not_distinct_from(bindparam("beneficiary_id")),
        ScheduledPayment.to_account_id.is_not_distinct_from(bindparam("to_account_id")),
        ScheduledPayment.amount == bindparam("amount"),
        ScheduledPayment.frequency == bindparam("frequency"),
        ScheduledPayment.next_date == bindparam("next_date"),
    )
)
CANCEL_SCHEDULE = Query(
    update(ScheduledPayment)
    .where(ScheduledPayment.id == bindparam("id"))
    .values(status="cancelled")
)
# active schedules with the paying account's owner and passcode (for the entity listing)
ACTIVE_SCHEDULES = Query(
    select(
        ScheduledPayment.id,
        ScheduledPayment.from_account_id,
        ScheduledPayment.amount,
        ScheduledPayment.reference,
        Account.customer_id,
        Customer.passcode,
    )
    .select_from(
        schedules_t.join(accounts_t, ScheduledPayment.from_account_id == Account.id).join(
            customers_t, Account.customer_id == Customer.id
        )
    )
    .where(ScheduledPayment.status == "active")
    .order_by(ScheduledPayment.id)
)


@functools.cache
def _transactions_query(since: bool, until: bool, by_kind: bool, matching: bool) -> Query:
    """An account's transactions, newest first, with the filters asked for: list_transactions'."""
    stmt = select(transactions_t).where(Transaction.account_id == bindparam("account_id"))
    if since:
        stmt = stmt.where(Transaction.posted_at >= bindparam("first"))
    if until:
        stmt = stmt.where(Transaction.posted_at <= bindparam("last"))
    if by_kind:
        stmt = stmt.where(Transaction.kind == bindparam("kind"))
    if matching:
        stmt = stmt.where(contains(bindparam("pattern"), Transaction.description))
    stmt = stmt.order_by(Transaction.posted_at.desc(), Transaction.id.desc())
    return Query(stmt.limit(bindparam("limit")))


@functools.cache
def _schedules_query(include_cancelled: bool) -> Query:
    """A customer's scheduled payments, soonest first: list_scheduled_payments' statement."""
    stmt = (
        select(schedules_t)
        .select_from(schedules_t.join(accounts_t, ScheduledPayment.from_account_id == Account.id))
        .where(Account.customer_id == bindparam("customer_id"))
        .order_by(ScheduledPayment.next_date, ScheduledPayment.id)
    )
    if not include_cancelled:
        stmt = stmt.where(ScheduledPayment.status == "active")
    return Query(stmt)


# ----------------------------------------------------------------- helpers
def _require_auth(customer: Any, token: str | None) -> None:
    """Refuse a sensitive call without the auth_token of the customer it acts for.

    ``customer`` (a row of ``customers``) owns what the call touches. In -v0 the token is
    all that ties a caller to them. From -v1 (``SIGNED_IN``) the session is signed in as one
    customer, whose rows alone the core lets a call name (rule ``not_your_customer``, before
    the tool runs), so ``customer`` is always them and the token only confirms their passcode.
    """
    how = (
        f"Call authenticate with customer_id '{customer.id}' and the passcode the customer "
        "gives you (ask them for it if they have not said it; never guess), then retry with "
        "the auth_token it returns."
    )
    if token is None or not token.strip():
        raise PermissionDenied(f"This operation needs an auth_token for {customer.id}. {how}")
    if token.strip() != auth_token_for(customer.id, customer.auth_salt):
        raise PermissionDenied(f"The auth_token is not valid for customer {customer.id}. {how}")


def _money(value: Decimal, name: str, *, maximum: Decimal = MAX_AMOUNT) -> Decimal:
    """Validate a positive amount with at most two decimal places; returns it to the cent."""
    if not value.is_finite() or value <= 0:
        raise InvalidArgument(f"{name} must be a positive amount such as 125.40, got {value}.")
    if value > maximum:
        raise InvalidArgument(f"{name} must be at most {maximum}, got {value}.")
    cents = value.quantize(CENT)
    if cents != value:
        raise InvalidArgument(
            f"{name} must have at most two decimal places (whole cents), got {value}."
        )
    return cents


def _rate(ctx: ToolContext, from_currency: str, to_currency: str) -> Decimal:
    rates = {r.currency: r.base_per_unit for r in ctx.sql.all(RATES)}
    return cross_rate(rates[from_currency], rates[to_currency])


def _require_active(acc: Any) -> None:
    if acc.status != "active":
        raise PreconditionFailed(
            f"Account {acc.id} is {acc.status}: it can neither send nor receive money. "
            "The customer has to contact the bank's fraud team; use another account."
        )


def _available(acc: Any) -> Decimal:
    return acc.balance + acc.overdraft_limit


class _Sent(NamedTuple):
    """The recorded transfer, as _send wrote it."""

    id: str
    credited_amount: Decimal
    rate: Decimal


def _send(
    ctx: ToolContext,
    src: Any,
    money: Decimal,
    currency: str,
    memo: str,
    *,
    to_account_id: str | None = None,
    beneficiary_id: str | None = None,
) -> _Sent:
    """Record money leaving ``src`` once it has the funds, converted to ``currency``."""
    if money > _available(src):
        raise PreconditionFailed(
            f"Insufficient funds: {src.id} has a balance of {src.balance} {src.currency} and an "
            f"overdraft limit of {src.overdraft_limit}, so at most {_available(src)} "
            f"{src.currency} can be sent, not {money}. Send less or use another account."
        )
    rate = _rate(ctx, src.currency, currency)
    credited = convert(money, rate)
    if credited <= 0:
        raise InvalidArgument(f"{money} {src.currency} is too small to convert to {currency}.")
    transfer = _Sent(next_id(ctx, Transfer.id, "trf", 5), credited, rate)
    ctx.sql.insert(
        Transfer,
        id=transfer.id,
        kind="internal" if to_account_id else "external",
        from_account_id=src.id,
        to_account_id=to_account_id,
        beneficiary_id=beneficiary_id,
        amount=money,
        currency=src.currency,
        credited_amount=credited,
        credited_currency=currency,
        rate=rate,
        memo=memo,
        created_at=ctx.now,
    )
    return transfer


def _post(
    ctx: ToolContext,
    acc: Any,
    kind: str,
    description: str,
    amount: Decimal,
    transfer_id: str | None = None,
) -> tuple[Any, str]:
    """Book ``amount`` on ``acc``: the account row with its new balance, and the entry's id."""
    balance = acc.balance + amount
    ctx.sql.run(SET_BALANCE, id=acc.id, balance=balance)
    txn_id = next_id(ctx, Transaction.id, "txn", 5)
    ctx.sql.insert(
        Transaction,
        id=txn_id,
        account_id=acc.id,
        posted_at=ctx.now,
        kind=kind,
        description=description[:140],
        amount=amount,
        balance_after=balance,
        transfer_id=transfer_id,
    )
    return acc._replace(balance=balance), txn_id


def _clean_text(value: str, name: str, limit: int = 140) -> str:
    value = value.strip()
    if len(value) > limit:
        raise InvalidArgument(f"{name} must be at most {limit} characters long.")
    return value


def _account_summary(acc: Any) -> AccountOut:
    return {
        "account_id": acc.id,
        "nickname": acc.nickname,
        "kind": acc.kind,
        "number": f"****{acc.number[-4:]}",
        "currency": acc.currency,
        "balance": acc.balance,
        "available": _available(acc),
        "overdraft_limit": acc.overdraft_limit,
        "status": acc.status,
    }


def _txn_record(t: Any) -> TransactionOut:
    return {
        "transaction_id": t.id,
        "posted_at": t.posted_at.isoformat(timespec="minutes"),
        "kind": t.kind,
        "description": t.description,
        "amount": t.amount,
        "balance_after": t.balance_after,
        "transfer_id": t.transfer_id,
    }


def _card_record(card: Any, currency: str) -> CardOut:
    """``card``: a cards row; ``currency``: its account's."""
    return {
        "card_id": card.id,
        "account_id": card.account_id,
        "network": card.network,
        "kind": card.kind,
        "last4": card.last4,
        "expires": card.expires,
        "status": card.status,
        "block_reason": card.block_reason or None,
        "daily_limit": card.daily_limit,
        "currency": currency,
    }


def _beneficiary_record(b: Any) -> BeneficiaryOut:
    return {
        "beneficiary_id": b.id,
        "name": b.name,
        "account_number": b.account_number,
        "bank_name": b.bank_name,
        "currency": b.currency,
        "added_on": b.added_on.isoformat(),
    }


def _schedule_record(s: Any) -> ScheduleOut:
    return {
        "scheduled_payment_id": s.id,
        "from_account_id": s.from_account_id,
        "to_account_id": s.to_account_id,
        "beneficiary_id": s.beneficiary_id,
        "amount": s.amount,
        "frequency": s.frequency,
        "next_date": s.next_date.isoformat(),
        "end_date": s.end_date.isoformat() if s.end_date else None,
        "reference": s.reference,
        "status": s.status,
    }


# -------------------------------------------------------- example values
def _day_ahead(ctx: ToolContext, rng: random.Random) -> str:
    return (ctx.now + dt.timedelta(days=rng.randint(1, 30))).date().isoformat()


def _recent_month(ctx: ToolContext, rng: random.Random) -> str:
    first = ctx.now.date().replace(day=1)
    for _ in range(rng.randint(0, 3)):
        first = (first - dt.timedelta(days=1)).replace(day=1)
    return first.strftime("%Y-%m")


def _some_passcode(ctx: ToolContext, rng: random.Random) -> str:
    codes = ctx.sql.scalars(PASSCODES)
    return rng.choice(codes)


def _some_surname(ctx: ToolContext, rng: random.Random) -> str:
    names = ctx.sql.scalars(CUSTOMER_NAMES)
    return rng.choice(names).split()[-1]


def _number_for_currency(ctx: ToolContext, rng: random.Random, bound: Bound) -> str:
    """A payee account number of the call's currency: a GB IBAN for GBP, a DE one for
    EUR, a US account number for USD or none given (never a German IBAN paid in
    dollars)."""
    return beneficiary_number(rng, str(bound.args.get("currency") or "USD"))


AMOUNTS = [20, 45.5, 75, 120, "250.00", 400, "1200.00"]
PER_PAYMENT = {"weekly": (10, 150), "monthly": (50, 1500), "once": (20, 2500)}
"""What one payment of a standing order comes to, by how often it repeats."""


def _amount_for_frequency(ctx: ToolContext, rng: random.Random, bound: Bound) -> str:
    """A payment's amount as often as it repeats: a weekly allowance of 40, a monthly rent
    share of 650, never 1,134.00 every week."""
    lo, hi = PER_PAYMENT.get(str(bound.args.get("frequency", "once")), PER_PAYMENT["once"])
    return f"{rng.randint(lo // 5, hi // 5) * 5}.00"


PAYEE_NAMES = [
    "Maria Lopez",
    "Greenway Plumbing LLC",
    "Tom Becker",
    "City Tennis Club",
    "Aisha Khan",
]
UTILITY_REFERENCES = {
    "electricity": "Electricity bill",
    "internet": "Internet bill",
    "phone": "Phone bill",
    "water": "Water bill",
    "insurance": "Insurance premium",
}
PERSONAL_REFERENCES = ("Birthday gift", "Dinner last week", "Concert tickets", "Half the groceries")
OWN_REFERENCES = ("Monthly savings", "Holiday fund", "Top-up", "Savings")


def _reference(ctx: ToolContext, rng: random.Random, bound: Bound) -> str:
    """What a payment is for, as its payee makes sense of it: the bill of a utility (never
    "Rent" to State Farm Insurance), rent to a property manager, an invoice to a business,
    a shared cost to a person, savings between the customer's own accounts."""
    ben = bound.args.get("beneficiary_id")
    if ben is None:
        return rng.choice(OWN_REFERENCES)
    record = bound.records.get("beneficiary_id")
    if record is not None:
        name = str(record.get("name", ""))
    else:  # a payee the conversation saved
        row = ctx.sql.first(BENEFICIARY, id=str(ben))
        name = str(row.name) if row is not None else ""
    role = dict(UTILITIES).get(name)
    if role is not None:
        return UTILITY_REFERENCES[role]
    if name.endswith("Property Management"):
        return "Rent"
    if name.endswith(("LLC", "Inc.", "Club")):
        return "Membership" if name.endswith("Club") else f"Invoice {rng.randint(1000, 9999)}"
    return rng.choice(PERSONAL_REFERENCES)


# ------------------------------------------------------------------- tools
@server.tool(
    returns=("customer", "account"),
    phrasings=["Look up the customer {query}", "Find the bank customer named {query}"],
    examples={"query": _some_surname},
)
def find_customer(
    ctx: ToolContext, query: SearchText, limit: Annotated[int, Field(ge=1, le=50)] = 10
) -> list[CustomerOut]:
    """Find customers by name, email, phone or customer id; the first step to serve a customer.

    Args:
        query: Case-insensitive fragment, such as "Garcia", "jane.doe" or "cus_012".
        limit: Maximum number of customers to return (1-50).

    Returns:
        Matching customers with their ids and account ids, e.g.
        [{"customer_id": "cus_012", "name": "Jane Doe", "accounts": ["acc_0031", "acc_0032"]}].
    """
    text = query.strip()
    if not text:
        raise InvalidArgument("query must not be empty: give a name, email, phone or id.")
    if ctx.principal is not None:  # signed in: a customer finds no one but themself
        rows = ctx.sql.all(
            OWN_CUSTOMER_MATCHING, me=ctx.principal, pattern=search_pattern(text), limit=limit
        )
    else:
        rows = ctx.sql.all(CUSTOMERS_MATCHING, pattern=search_pattern(text), limit=limit)
    owned: dict[str, list[str]] = {c.id: [] for c in rows}
    for a in ctx.sql.all(ACCOUNT_IDS_OF, customer_ids=list(owned)):
        owned[a.customer_id].append(a.id)
    return [
        {
            "customer_id": c.id,
            "name": c.name,
            "email": c.email,
            "phone": c.phone,
            "city": c.city,
            "segment": c.segment,
            "accounts": owned[c.id],
        }
        for c in rows
    ]


@server.tool(
    returns="auth_token",
    phrasings=[
        "I'm customer {customer_id}, my passcode is {passcode}",
        "Log me in: customer {customer_id}, passcode {passcode}",
    ],
    examples={"passcode": _some_passcode},
)
def authenticate(ctx: ToolContext, customer_id: CustomerRow, passcode: str) -> AuthOut:
    """Verify a customer's passcode and get the auth_token that sensitive operations require.

    Use the passcode exactly as the customer stated it; if they have not given one, ask.
    The token stays valid for the rest of the conversation.

    Args:
        customer_id: The customer, such as "cus_012" (see find_customer).
        passcode: The customer's 6-digit passcode as they told you, such as "482913".

    Returns:
        {"customer_id": "cus_012", "name": "Jane Doe", "auth_token": "tok_..."}.
    """
    cust = customer_id
    if passcode.strip() != cust.passcode:
        raise PermissionDenied(
            f"Wrong passcode for customer {cust.id}. Ask the customer to repeat their "
            "6-digit passcode; do not guess or retry with made-up values."
        )
    return {
        "customer_id": cust.id,
        "name": cust.name,
        "auth_token": auth_token_for(cust.id, cust.auth_salt),
    }


@server.tool(
    returns="account",
    phrasings=["What accounts does {customer_id} have?", "Show the balances of {customer_id}"],
)
def list_accounts(ctx: ToolContext, customer_id: CustomerRow) -> AccountsOut:
    """List a customer's accounts with balances; no authentication needed.

    Args:
        customer_id: The customer, such as "cus_012".

    Returns:
        {"customer_id", "name", "as_of", "accounts": [{"account_id": "acc_0031",
        "nickname": "Everyday", "currency": "USD", "balance": "1250.40",
        "available": "1750.40", "overdraft_limit": "500.00", "status": "active", ...}]}.
        "available" is balance plus overdraft limit: the most that can be sent.
    """
    return {
        "customer_id": customer_id.id,
        "name": customer_id.name,
        "as_of": ctx.now.isoformat(timespec="minutes"),
        "accounts": [
            _account_summary(a) for a in ctx.sql.all(ACCOUNTS_OF, customer_id=customer_id.id)
        ],
    }


@server.tool(
    returns=("account", "customer", "card", "transaction"),
    phrasings=["What's the balance of account {account_id}?", "Show me details of {account_id}"],
)
def get_account(ctx: ToolContext, account_id: AccountRow) -> AccountDetail:
    """Get one account: balance, available funds, overdraft limit, owner, cards, last 5 entries.

    Args:
        account_id: The account, such as "acc_0031".
    """
    acc = account_id
    recent = ctx.sql.all(RECENT_TRANSACTIONS, account_id=acc.id)
    cards = ctx.sql.all(CARDS_OF_ACCOUNT, account_id=acc.id)
    return {
        **_account_summary(acc),
        "customer_id": acc.customer_id,
        "owner": ctx.sql.one(CUSTOMER, id=acc.customer_id).name,
        "opened_on": acc.opened_on.isoformat(),
        "as_of": ctx.now.isoformat(timespec="minutes"),
        "cards": [{"card_id": c.id, "last4": c.last4, "status": c.status} for c in cards],
        "recent_transactions": [_txn_record(t) for t in recent],
    }


@server.tool(
    returns=("transaction", "transfer"),
    phrasings=[
        "Show recent transactions on {account_id}",
        "Find {query} payments on account {account_id}",
        "List transactions on {account_id} from {start_date} to {end_date}",
    ],
    examples={
        "query": ["Amazon", "Salary", "Rent", "Starbucks", "ATM"],
        "start_date": lambda ctx, rng: (
            (ctx.now - dt.timedelta(days=rng.randint(20, 60))).date().isoformat()
        ),
        "end_date": lambda ctx, rng: ctx.now.date().isoformat(),
    },
)
def list_transactions(
    ctx: ToolContext,
    account_id: AccountRow,
    start_date: str | None = None,
    end_date: str | None = None,
    kind: TransactionKind | None = None,
    query: SearchText | None = None,
    limit: int = 20,
) -> TransactionsOut:
    """List an account's transactions, newest first, optionally filtered.

    Args:
        account_id: The account, such as "acc_0031".
        start_date: Only transactions on or after this day, such as "2026-02-01".
        end_date: Only transactions on or before this day, such as "2026-02-28".
        kind: Only one kind, such as "card_purchase", "salary" or "transfer_out".
        query: Case-insensitive text in the description, such as "Amazon".
        limit: Maximum number of transactions (1-100).

    Returns:
        {"account_id", "currency", "transactions": [{"transaction_id": "txn_01234",
        "posted_at": "2026-02-14T12:30", "kind": "card_purchase", "description": "...",
        "amount": "-42.10", "balance_after": "1208.30", "transfer_id": null}]};
        negative amounts are money leaving the account.
    """
    acc = account_id
    if not 1 <= limit <= 100:
        raise InvalidArgument(f"limit must be between 1 and 100, got {limit}.")
    params: dict[str, Any] = {"account_id": acc.id, "limit": limit}
    first = parse_date(start_date, "start_date") if start_date else None
    last = parse_date(end_date, "end_date") if end_date else None
    if first and last and last < first:
        raise InvalidArgument("end_date is before start_date.")
    if first:
        params["first"] = dt.datetime.combine(first, dt.time())
    if last:
        params["last"] = dt.datetime.combine(last, dt.time.max)
    if kind is not None:
        params["kind"] = kind
    if query and query.strip():
        params["pattern"] = search_pattern(query.strip())
    stmt = _transactions_query(
        "first" in params, "last" in params, "kind" in params, "pattern" in params
    )
    return {
        "account_id": acc.id,
        "currency": acc.currency,
        "transactions": [_txn_record(t) for t in ctx.sql.all(stmt, **params)],
    }


@server.tool(
    returns="transaction",
    phrasings=[
        "Get the {month} statement for {account_id}",
        "How much went in and out of {account_id} in {month}?",
    ],
    examples={"month": _recent_month},
)
def get_statement(ctx: ToolContext, account_id: AccountRow, month: str) -> StatementOut:
    """Monthly statement of an account: opening and closing balance, money in/out, entries.

    Args:
        account_id: The account, such as "acc_0031".
        month: The calendar month as "YYYY-MM", such as "2026-02"; the current month gives
            a statement up to now. History goes back 120 days.

    Returns:
        {"account_id", "month", "currency", "opening_balance", "money_in", "money_out",
        "closing_balance", "transaction_count", "transactions": [...oldest first]}.
    """
    acc = account_id
    if not re.fullmatch(r"\d{4}-\d{2}", month.strip()):
        raise InvalidArgument(f"month must look like '2026-02', got {month!r}.")
    try:
        first = dt.date.fromisoformat(month.strip() + "-01")
    except ValueError:
        raise InvalidArgument(f"month must look like '2026-02', got {month!r}.") from None
    today = ctx.now.date()
    history_start = (ctx.now - dt.timedelta(days=HISTORY_DAYS)).date()
    if first > today:
        raise PreconditionFailed(
            f"{month} is in the future; today is {today.isoformat()}. Ask for the current "
            f"month ({today.strftime('%Y-%m')}) or an earlier one."
        )
    if first < history_start.replace(day=1):
        raise PreconditionFailed(
            f"No statement for {month}: history starts on {history_start.isoformat()}. Ask for "
            f"{history_start.strftime('%Y-%m')} or later."
        )
    nxt = (first + dt.timedelta(days=32)).replace(day=1)
    lo = dt.datetime.combine(first, dt.time())
    hi = dt.datetime.combine(nxt, dt.time())
    before = ctx.sql.scalar(SUM_BEFORE, account_id=acc.id, lo=lo)
    opening = acc.opening_balance + (before or Decimal("0.00"))
    rows = ctx.sql.all(MONTH_TRANSACTIONS, account_id=acc.id, lo=lo, hi=hi)
    money_in = sum((t.amount for t in rows if t.amount > 0), Decimal("0.00"))
    money_out = sum((-t.amount for t in rows if t.amount < 0), Decimal("0.00"))
    return {
        "account_id": acc.id,
        "month": first.strftime("%Y-%m"),
        "currency": acc.currency,
        "opening_balance": opening.quantize(CENT),
        "money_in": money_in,
        "money_out": money_out,
        "closing_balance": (opening + money_in - money_out).quantize(CENT),
        "transaction_count": len(rows),
        "transactions": [_txn_record(t) for t in rows],
    }


@server.tool(
    phrasings=[
        "How many {to_currency} do I get for {amount} {from_currency}?",
        "What's the exchange rate from {from_currency} to {to_currency}?",
    ],
    examples={"amount": AMOUNTS},
)
def get_exchange_rate(
    ctx: ToolContext,
    from_currency: Currency,
    to_currency: Currency,
    amount: Decimal | None = None,
) -> RateOut:
    """The bank's fixed exchange rate between two currencies, and optionally a converted amount.

    Transfers and payments between different currencies convert at exactly this rate,
    rounded to the cent.

    Args:
        from_currency: Currency to convert from, such as "USD".
        to_currency: Currency to convert to, such as "EUR".
        amount: Amount in from_currency to convert, such as 250 or "250.00".

    Returns:
        {"from_currency": "USD", "to_currency": "EUR", "rate": "0.921659",
        "amount": "250.00", "converted_amount": "230.41"}.
    """
    rate = _rate(ctx, from_currency, to_currency)
    result: RateOut = {"from_currency": from_currency, "to_currency": to_currency, "rate": rate}
    if amount is not None:
        money = _money(amount, "amount")
        result |= {"amount": money, "converted_amount": convert(money, rate)}
    return result


@server.tool(
    writes=True,
    returns=("transfer", "account", "transaction"),
    phrasings=[
        "Move {amount} from {from_account_id} to {to_account_id}",
        "Transfer {amount} from my account {from_account_id} into {to_account_id}",
    ],
    examples={"amount": AMOUNTS, "memo": ["Savings", "Holiday fund", "Top up"]},
)
def transfer_funds(
    ctx: ToolContext,
    from_account_id: AccountRow,
    to_account_id: AccountRow,
    amount: Decimal,
    auth_token: AuthToken = None,
    memo: str = "",
) -> TransferOut:
    """Move money between two accounts of the same customer, at once and atomically.

    If the currencies differ the amount is converted at the fixed rate (see
    get_exchange_rate). The source balance may not fall below minus its overdraft limit.
    To pay another person or company use pay_beneficiary instead.

    Args:
        from_account_id: Account to take the money from, such as "acc_0031".
        to_account_id: The same customer's account to credit, such as "acc_0032".
        amount: Amount in the currency of from_account_id, as a number or decimal string,
            such as 250 or "250.00".
        auth_token: The token authenticate returned for the accounts' owner, such as
            "tok_9f2c41d07ab35e68"; without it the transfer is refused.
        memo: Note shown on both statements, such as "Holiday fund".

    Returns:
        {"transfer_id": "trf_00412", "status": "completed", "amount": "250.00",
        "currency": "USD", "credited_amount": "230.41", "credited_currency": "EUR",
        "rate": "0.921659", "from_balance": "1000.40", "to_balance": "730.41", ...}.
    """
    src, dst = from_account_id, to_account_id
    _require_auth(ctx.sql.one(CUSTOMER, id=src.customer_id), auth_token)
    if src.id == dst.id:
        raise InvalidArgument("from_account_id and to_account_id are the same account.")
    if dst.customer_id != src.customer_id:
        raise PreconditionFailed(
            f"{dst.id} does not belong to {src.customer_id}, the owner of {src.id}: "
            "transfer_funds only moves money between a customer's own accounts. To pay someone "
            "else, save them with add_beneficiary and use pay_beneficiary."
        )
    money = _money(amount, "amount")
    note = _clean_text(memo, "memo")
    _require_active(src)
    _require_active(dst)
    transfer = _send(ctx, src, money, dst.currency, note, to_account_id=dst.id)
    credited = transfer.credited_amount
    suffix = f": {note}" if note else ""
    src, debit_id = _post(
        ctx, src, "transfer_out", f"Transfer to {dst.nickname}{suffix}", -money, transfer.id
    )
    dst, credit_id = _post(
        ctx, dst, "transfer_in", f"Transfer from {src.nickname}{suffix}", credited, transfer.id
    )
    return {
        "transfer_id": transfer.id,
        "status": "completed",
        "from_account_id": src.id,
        "to_account_id": dst.id,
        "amount": money,
        "currency": src.currency,
        "credited_amount": credited,
        "credited_currency": dst.currency,
        "rate": transfer.rate,
        "from_balance": src.balance,
        "to_balance": dst.balance,
        "transaction_ids": [debit_id, credit_id],
        "memo": note,
    }


@server.tool(
    returns="beneficiary",
    phrasings=["Who are the saved payees of {customer_id}?", "List beneficiaries of {customer_id}"],
)
def list_beneficiaries(ctx: ToolContext, customer_id: CustomerRow) -> list[BeneficiaryOut]:
    """List the payees a customer has saved, which pay_beneficiary and schedule_payment can pay.

    Args:
        customer_id: The customer, such as "cus_012".

    Returns:
        [{"beneficiary_id": "ben_0007", "name": "Maria Lopez", "account_number": "...",
        "bank_name": "Chase", "currency": "USD", "added_on": "2025-06-01"}].
    """
    rows = ctx.sql.all(BENEFICIARIES_OF, customer_id=customer_id.id)
    return [_beneficiary_record(b) for b in rows]


@server.tool(
    writes=True,
    idempotent=True,
    returns="beneficiary",
    phrasings=[
        "Add {name} with account number {account_number} as a payee for {customer_id}",
        "Save {name} ({account_number}, {currency}) as a new beneficiary of {customer_id}",
    ],
    examples={"name": PAYEE_NAMES},
    values={"account_number": _number_for_currency},
)
def add_beneficiary(
    ctx: ToolContext,
    customer_id: CustomerRow,
    name: str,
    account_number: str,
    currency: Currency = "USD",
    bank_name: str = "",
    auth_token: AuthToken = None,
) -> BeneficiaryOut:
    """Save a new external payee for a customer so they can be paid.

    Args:
        customer_id: The customer, such as "cus_012".
        name: The payee's name, such as "Maria Lopez" or "Greenway Plumbing LLC".
        account_number: The payee's account number or IBAN, such as "DE44500105175407324931"
            or "004512345678" (spaces and dashes are ignored).
        currency: Currency the payee's account is held in, such as "EUR".
        bank_name: The payee's bank, such as "Chase".
        auth_token: The token authenticate returned for this customer, such as
            "tok_9f2c41d07ab35e68"; without it the payee is not saved.

    Returns:
        {"beneficiary_id": "ben_0123", "name": ..., "account_number": ..., ...}.
    """
    cust = customer_id
    _require_auth(cust, auth_token)
    payee = _clean_text(name, "name", 80)
    if not payee:
        raise InvalidArgument("name must not be empty.")
    number = re.sub(r"[\s-]", "", account_number).upper()
    if not (8 <= len(number) <= 34 and number.isalnum() and sum(c.isdigit() for c in number) >= 6):
        raise InvalidArgument(
            f"{account_number!r} is not an account number: use 8-34 letters and digits, such as "
            "'004512345678' or an IBAN like 'DE44500105175407324931'."
        )
    existing = ctx.sql.first(SAVED_PAYEE, customer_id=cust.id, account_number=number)
    if existing is not None:
        raise Conflict(
            f"{cust.id} already has this account saved as {existing.id} ({existing.name}); "
            "pay that beneficiary instead of adding it again."
        )
    ben = {
        "id": next_id(ctx, Beneficiary.id, "ben", 4),
        "customer_id": cust.id,
        "name": payee,
        "account_number": number,
        "bank_name": _clean_text(bank_name, "bank_name", 80),
        "currency": currency,
        "added_on": ctx.now.date(),
    }
    ctx.sql.insert(Beneficiary, **ben)
    return _beneficiary_record(SimpleNamespace(**ben))


@server.tool(
    writes=True,
    returns=("transfer", "account", "transaction"),
    phrasings=[
        "Pay {amount} to {beneficiary_id} from {from_account_id}",
        "Send {amount} from account {from_account_id} to payee {beneficiary_id} for {reference}",
    ],
    examples={"amount": AMOUNTS},
    values={"reference": _reference},
)
def pay_beneficiary(
    ctx: ToolContext,
    from_account_id: AccountRow,
    beneficiary_id: BeneficiaryRow,
    amount: Decimal,
    auth_token: AuthToken = None,
    reference: str = "",
) -> PaymentOut:
    """Pay a saved beneficiary now from one of the customer's accounts; the money leaves the bank.

    If the payee's currency differs, they receive the amount converted at the fixed rate.

    Args:
        from_account_id: Account to pay from, such as "acc_0031".
        beneficiary_id: A payee saved by the same customer, such as "ben_0007".
        amount: Amount in the currency of from_account_id, such as 120 or "120.00".
        auth_token: The token authenticate returned for the account's owner, such as
            "tok_9f2c41d07ab35e68"; without it the call is refused.
        reference: Text the payee sees, such as "Invoice 2291".

    Returns:
        {"transfer_id": "trf_00413", "status": "completed", "amount": "120.00",
        "currency": "USD", "credited_amount": "120.00", "credited_currency": "USD",
        "from_balance": "880.40", ...}.
    """
    src, ben = from_account_id, beneficiary_id
    _require_auth(ctx.sql.one(CUSTOMER, id=src.customer_id), auth_token)
    if ben.customer_id != src.customer_id:
        raise PreconditionFailed(
            f"Beneficiary {ben.id} is not saved for {src.customer_id}, the owner of {src.id}. "
            f"Call list_beneficiaries for {src.customer_id}, or add_beneficiary first."
        )
    money = _money(amount, "amount")
    ref = _clean_text(reference, "reference")
    _require_active(src)
    transfer = _send(ctx, src, money, ben.currency, ref, beneficiary_id=ben.id)
    desc = f"Payment to {ben.name}" + (f": {ref}" if ref else "")
    src, debit_id = _post(ctx, src, "payment", desc, -money, transfer.id)
    return {
        "transfer_id": transfer.id,
        "status": "completed",
        "from_account_id": src.id,
        "beneficiary_id": ben.id,
        "payee": ben.name,
        "amount": money,
        "currency": src.currency,
        "credited_amount": transfer.credited_amount,
        "credited_currency": ben.currency,
        "rate": transfer.rate,
        "from_balance": src.balance,
        "transaction_id": debit_id,
        "reference": ref,
    }


@server.tool(
    returns=("scheduled_payment", "account", "beneficiary"),
    phrasings=[
        "What payments does {customer_id} have scheduled?",
        "List the standing orders of {customer_id}",
    ],
)
def list_scheduled_payments(
    ctx: ToolContext, customer_id: CustomerRow, include_cancelled: bool = False
) -> SchedulesOut:
    """List a customer's scheduled (future or repeating) payments, soonest first.

    Args:
        customer_id: The customer, such as "cus_012".
        include_cancelled: Also list cancelled ones.

    Returns:
        {"customer_id", "today", "scheduled_payments": [{"scheduled_payment_id": "sch_0004",
        "from_account_id": "acc_0031", "beneficiary_id": "ben_0007", "to_account_id": null,
        "amount": "1450.00", "frequency": "monthly", "next_date": "2026-04-01", ...}]}.
    """
    rows = ctx.sql.all(_schedules_query(include_cancelled), customer_id=customer_id.id)
    return {
        "customer_id": customer_id.id,
        "today": ctx.now.date().isoformat(),
        "scheduled_payments": [_schedule_record(s) for s in rows],
    }


SCHEDULE_OPTIONS: dict[str, Any] = dict(
    writes=True,
    idempotent=True,
    returns=("scheduled_payment", "account", "beneficiary"),
    phrasings=[
        "Schedule a payment of {amount} from {from_account_id} to {beneficiary_id} "
        "starting {start_date}, {frequency}",
        "On {start_date}, move {amount} from {from_account_id} to {to_account_id}",
        "Set up a transfer of {amount} from {from_account_id} to {to_account_id} "
        "from {start_date}, {frequency}",
    ],
    examples={
        "start_date": _day_ahead,
        "end_date": lambda ctx, rng: (
            (ctx.now + dt.timedelta(days=rng.randint(120, 360))).date().isoformat()
        ),
    },
    values={"amount": _amount_for_frequency, "reference": _reference},
)
"""schedule_payment's declaration, shared by its definitions (-v0's and ``SIGNED_IN``'s)."""


@server.tool(**SCHEDULE_OPTIONS)
def schedule_payment(
    ctx: ToolContext,
    from_account_id: AccountRow,
    amount: Decimal,
    start_date: str,
    frequency: Literal["once", "weekly", "monthly"] = "once",
    beneficiary_id: BeneficiaryId | None = None,
    to_account_id: AccountId | None = None,
    end_date: str | None = None,
    reference: str = "",
    auth_token: AuthToken = None,
) -> ScheduleOut:
    """Schedule a future payment to a saved beneficiary, or a future transfer to an own account.

    Give exactly one of beneficiary_id or to_account_id. Funds are checked when it runs,
    not now.

    Args:
        from_account_id: Account to pay from, such as "acc_0031".
        amount: Amount in the currency of from_account_id, such as 75 or "75.50".
        start_date: First payment date, after today and within a year, such as "2026-04-01".
        frequency: "once", "weekly" or "monthly".
        beneficiary_id: A payee saved by the same customer, such as "ben_0007".
        to_account_id: Or another account of the same customer, such as "acc_0032".
        end_date: Last possible date for repeating payments, such as "2026-12-31".
        reference: Text shown with each payment, such as "Rent".
        auth_token: The token authenticate returned for the account's owner, such as
            "tok_9f2c41d07ab35e68"; without it the call is refused.

    Returns:
        {"scheduled_payment_id": "sch_0051", "status": "active", "next_date": "2026-04-01", ...}.
    """
    src = from_account_id
    _require_auth(ctx.sql.one(CUSTOMER, id=src.customer_id), auth_token)
    return _schedule(
        ctx, src, amount, start_date, frequency, beneficiary_id, to_account_id, end_date, reference
    )


def _schedule(
    ctx: ToolContext,
    src: Any,
    amount: Decimal,
    start_date: str,
    frequency: str,
    beneficiary_id: str | None,
    to_account_id: str | None,
    end_date: str | None,
    reference: str,
) -> ScheduleOut:
    """schedule_payment once its caller is authenticated: ``src`` is the paying account's row,
    the destinations ids (one of them) that it looks up itself."""
    if (beneficiary_id is None) == (to_account_id is None):
        raise InvalidArgument(
            "Give exactly one of beneficiary_id (pay a saved payee) or to_account_id (move money "
            "to another own account)."
        )
    # Destinations are looked up here, not as rows: auth and the rule above are reported first.
    if beneficiary_id is not None:
        ben = ctx.sql.first(BENEFICIARY, id=beneficiary_id)
        if ben is None:
            raise NotFound(ctx.server.entities["beneficiary"].missing(beneficiary_id))
        if ben.customer_id != src.customer_id:
            raise PreconditionFailed(
                f"Beneficiary {ben.id} is not saved for {src.customer_id}, the owner of "
                f"{src.id}. Call list_beneficiaries for {src.customer_id}."
            )
    if to_account_id is not None:
        dst = ctx.sql.first(ACCOUNT, id=to_account_id)
        if dst is None:
            raise NotFound(ctx.server.entities["account"].missing(to_account_id))
        if dst.id == src.id:
            raise InvalidArgument("from_account_id and to_account_id are the same account.")
        if dst.customer_id != src.customer_id:
            raise PreconditionFailed(
                f"{dst.id} does not belong to {src.customer_id}; scheduled transfers go between "
                "a customer's own accounts. Save the payee with add_beneficiary instead."
            )
        _require_active(dst)
    _require_active(src)
    money = _money(amount, "amount")
    today = ctx.now.date()
    first = parse_date(start_date, "start_date")
    if not today < first <= today + dt.timedelta(days=MAX_SCHEDULE_DAYS):
        raise InvalidArgument(
            f"start_date must be after today ({today.isoformat()}) and within "
            f"{MAX_SCHEDULE_DAYS} days; to pay today use pay_beneficiary or transfer_funds."
        )
    until = parse_date(end_date, "end_date") if end_date else None
    if until is not None:
        if frequency == "once":
            raise InvalidArgument("end_date only applies to weekly or monthly payments.")
        if until < first:
            raise InvalidArgument("end_date is before start_date.")
    ref = _clean_text(reference, "reference")
    duplicate = ctx.sql.scalar(
        DUPLICATE_SCHEDULE,
        from_account_id=src.id,
        beneficiary_id=beneficiary_id,
        to_account_id=to_account_id,
        amount=money,
        frequency=frequency,
        next_date=first,
    )
    if duplicate is not None:
        raise Conflict(f"The same payment is already scheduled as {duplicate}; nothing was added.")
    sched = {
        "id": next_id(ctx, ScheduledPayment.id, "sch", 4),
        "from_account_id": src.id,
        "to_account_id": to_account_id,
        "beneficiary_id": beneficiary_id,
        "amount": money,
        "frequency": frequency,
        "next_date": first,
        "end_date": until,
        "reference": ref,
        "status": "active",
        "created_at": ctx.now,
    }
    ctx.sql.insert(ScheduledPayment, **sched)
    return _schedule_record(SimpleNamespace(**sched))


@server.tool(name="schedule_payment", since=SIGNED_IN, **SCHEDULE_OPTIONS)
def schedule_payment_v1(
    ctx: ToolContext,
    from_account_id: AccountRow,
    amount: Decimal,
    start_date: str,
    frequency: Literal["once", "weekly", "monthly"] = "once",
    beneficiary_id: BeneficiaryRow | None = None,
    to_account_id: AccountRow | None = None,
    end_date: str | None = None,
    reference: str = "",
    auth_token: AuthToken = None,
) -> ScheduleOut:
    """Schedule a future payment to a saved beneficiary, or a future transfer to an own account.

    Give exactly one of beneficiary_id or to_account_id. Funds are checked when it runs,
    not now.

    Args:
        from_account_id: Account to pay from, such as "acc_0031".
        amount: Amount in the currency of from_account_id, such as 75 or "75.50".
        start_date: First payment date, after today and within a year, such as "2026-04-01".
        frequency: "once", "weekly" or "monthly".
        beneficiary_id: A payee saved by the same customer, such as "ben_0007".
        to_account_id: Or another account of the same customer, such as "acc_0032".
        end_date: Last possible date for repeating payments, such as "2026-12-31".
        reference: Text shown with each payment, such as "Rent".
        auth_token: The token authenticate returned for the signed-in customer, such as
            "tok_9f2c41d07ab35e68"; without it the call is refused.

    Returns:
        {"scheduled_payment_id": "sch_0051", "status": "active", "next_date": "2026-04-01", ...}.
    """
    src = from_account_id
    _require_auth(ctx.sql.one(CUSTOMER, id=src.customer_id), auth_token)
    return _schedule(
        ctx,
        src,
        amount,
        start_date,
        frequency,
        beneficiary_id.id if beneficiary_id is not None else None,
        to_account_id.id if to_account_id is not None else None,
        end_date,
        reference,
    )


@server.tool(
    writes=True,
    inverse_of="schedule_payment",
    destructive=True,
    idempotent=True,
    returns="scheduled_payment",
    phrasings=[
        "Cancel scheduled payment {scheduled_payment_id}",
        "I no longer need payment {scheduled_payment_id}, cancel it",
    ],
)
def cancel_scheduled_payment(
    ctx: ToolContext, scheduled_payment_id: ScheduleRow, auth_token: AuthToken = None
) -> ScheduleOut:
    """Cancel a scheduled payment so that it never runs again.

    Args:
        scheduled_payment_id: The scheduled payment, such as "sch_0004".
        auth_token: The token authenticate returned for the paying account's owner, such
            as "tok_9f2c41d07ab35e68"; without it the call is refused.
    """
    sched = scheduled_payment_id
    _require_auth(ctx.sql.one(OWNER, account_id=sched.from_account_id), auth_token)
    if sched.status == "cancelled":
        raise PreconditionFailed(f"Scheduled payment {sched.id} is already cancelled.")
    ctx.sql.run(CANCEL_SCHEDULE, id=sched.id)
    return _schedule_record(sched._replace(status="cancelled"))


@server.tool(
    returns=("card", "account"),
    phrasings=["Which cards does {customer_id} have?", "List the debit cards of {customer_id}"],
)
def list_cards(ctx: ToolContext, customer_id: CustomerRow) -> list[CardOut]:
    """List a customer's debit cards with status and daily spending limit.

    Args:
        customer_id: The customer, such as "cus_012".

    Returns:
        [{"card_id": "crd_0019", "account_id": "acc_0031", "network": "Visa",
        "kind": "physical", "last4": "4821", "status": "active", "daily_limit": "1000.00",
        "currency": "USD", ...}].
    """
    rows = ctx.sql.all(CARDS_OF_CUSTOMER, customer_id=customer_id.id)
    return [_card_record(c, c.currency) for c in rows]


@server.tool(
    writes=True,
    destructive=True,
    idempotent=True,
    returns="card",
    phrasings=["Block card {card_id}, it was {reason}", "My card {card_id} is gone, block it"],
)
def block_card(
    ctx: ToolContext,
    card_id: CardRow,
    reason: Literal["lost", "stolen", "damaged", "suspected_fraud"] = "lost",
    auth_token: AuthToken = None,
) -> CardOut:
    """Block a card permanently (lost, stolen, damaged or fraud); it cannot be unblocked.

    Args:
        card_id: The card, such as "crd_0019" (see list_cards; users often name the last 4 digits).
        reason: "lost", "stolen", "damaged" or "suspected_fraud".
        auth_token: The token authenticate returned for the card holder, such as
            "tok_9f2c41d07ab35e68"; without it the call is refused.
    """
    card = card_id
    _require_auth(ctx.sql.one(OWNER, account_id=card.account_id), auth_token)
    if card.status == "blocked":
        raise PreconditionFailed(
            f"Card {card.id} (ending {card.last4}) is already blocked ({card.block_reason})."
        )
    ctx.sql.run(BLOCK_CARD, id=card.id, block_reason=reason)
    currency = ctx.sql.scalar(ACCOUNT_CURRENCY, id=card.account_id)
    return _card_record(card._replace(status="blocked", block_reason=reason), currency)


@server.tool(
    writes=True,
    idempotent=True,
    returns="card",
    phrasings=[
        "Set the daily limit of card {card_id} to {daily_limit}",
        "Change my card {card_id} spending limit to {daily_limit} a day",
    ],
    examples={"daily_limit": [250, 500, "750.00", 1500, 2500]},
)
def set_card_limit(
    ctx: ToolContext, card_id: CardRow, daily_limit: Decimal, auth_token: AuthToken = None
) -> CardOut:
    """Set a card's daily spending limit, in the currency of its account.

    Args:
        card_id: The card, such as "crd_0019".
        daily_limit: New limit per day, more than 0 and at most 10000, such as 500 or "750.00".
        auth_token: The token authenticate returned for the card holder, such as
            "tok_9f2c41d07ab35e68"; without it the call is refused.
    """
    card = card_id
    _require_auth(ctx.sql.one(OWNER, account_id=card.account_id), auth_token)
    limit = _money(daily_limit, "daily_limit", maximum=MAX_CARD_LIMIT)
    if card.status != "active":
        raise PreconditionFailed(
            f"Card {card.id} (ending {card.last4}) is blocked; its limit cannot be changed."
        )
    if limit != card.daily_limit:  # a write only where one is due (the ORM skips equal values)
        ctx.sql.run(SET_CARD_LIMIT, id=card.id, daily_limit=limit)
    currency = ctx.sql.scalar(ACCOUNT_CURRENCY, id=card.account_id)
    return _card_record(card._replace(daily_limit=limit), currency)


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests. Records
# carry the owner's passcode so that a request can state it (it is never a tool output).
def _active_accounts(ctx: ToolContext) -> list[Any]:
    """Active accounts by id, each with its owner's ``passcode``."""
    return ctx.sql.all(ACTIVE_ACCOUNTS)


@server.entity(
    "customer",
    key="customer_id",
    model=Customer,
    not_found="Call find_customer with the customer's name or email to find their id "
    "(such as 'cus_012').",
)
def _customers(ctx: ToolContext) -> list[dict]:
    """Customers with at least one active account holding money."""
    rows = ctx.sql.all(FUNDED_CUSTOMERS)  # (chosen in SQL: not every account read back)
    return [
        {
            "customer_id": c.id,
            "name": c.name,
            "query": c.name,
            "email": c.email,
            "passcode": c.passcode,
        }
        for c in rows
    ]


@server.entity(
    "account",
    key="account_id",
    model=Account,
    owner="customer_id",
    not_found="Call list_accounts with the customer's id to see their accounts "
    "(ids such as 'acc_0031').",
)
def _accounts(ctx: ToolContext) -> list[dict]:
    """Active accounts with a positive balance, with a sibling account to transfer to."""
    accounts = _active_accounts(ctx)
    ids_of: dict[str, list[str]] = {}  # each customer's active accounts (not a scan per account)
    for a in accounts:
        ids_of.setdefault(a.customer_id, []).append(a.id)
    out = []
    for a in accounts:
        if a.balance <= 0:
            continue
        sibling = next((b for b in ids_of[a.customer_id] if b != a.id), None)
        out.append(
            {
                "account_id": a.id,
                "from_account_id": a.id,
                "to_account_id": sibling,
                "customer_id": a.customer_id,
                "nickname": a.nickname,
                "currency": a.currency,
                "balance": a.balance,
                "amount": max(Decimal(1), (a.balance / 5).quantize(Decimal(1))).quantize(CENT),
                "passcode": a.passcode,
            }
        )
    return out


@server.entity(
    "beneficiary",
    key="beneficiary_id",
    model=Beneficiary,
    owner="customer_id",
    not_found="Call list_beneficiaries with the customer's id to see their saved payees, "
    "or add_beneficiary to add one.",
)
def _beneficiaries(ctx: ToolContext) -> list[dict]:
    """Payees whose customer has an active, funded account to pay from."""
    funded: dict[str, Any] = {}
    for a in _active_accounts(ctx):
        if a.balance > 0:
            funded.setdefault(a.customer_id, a)
    out = []
    for b in ctx.sql.all(BENEFICIARIES):
        src = funded.get(b.customer_id)
        if src is None:
            continue
        out.append(
            {
                "beneficiary_id": b.id,
                "name": b.name,
                "customer_id": b.customer_id,
                "from_account_id": src.id,
                "passcode": src.passcode,
            }
        )
    return out


@server.entity(
    "scheduled_payment",
    key="scheduled_payment_id",
    model=ScheduledPayment,
    owner="from_account_id",
    through="account",
    not_found="Call list_scheduled_payments with the customer's id to find it.",
)
def _schedules(ctx: ToolContext) -> list[dict]:
    return [
        {
            "scheduled_payment_id": s.id,
            "customer_id": s.customer_id,
            "from_account_id": s.from_account_id,
            "amount": s.amount,
            "reference": s.reference,
            "passcode": s.passcode,
        }
        for s in ctx.sql.all(ACTIVE_SCHEDULES)
    ]


@server.entity(
    "card",
    key="card_id",
    model=Card,
    owner="account_id",
    through="account",
    not_found="Call list_cards with the customer's id to see their cards (ids such as 'crd_0019').",
)
def _cards(ctx: ToolContext) -> list[dict]:
    """Active cards (blocked ones cannot be changed)."""
    return [
        {
            "card_id": c.id,
            "last4": c.last4,
            "customer_id": c.customer_id,
            "account_id": c.account_id,
            "passcode": c.passcode,
        }
        for c in ctx.sql.all(ACTIVE_CARDS)
    ]


@server.entity("auth_token", key="auth_token")
def _tokens(ctx: ToolContext) -> list[dict]:
    """A secret: a gold call may use a token only after authenticate returned it."""
    rows = ctx.sql.all(CUSTOMERS)
    return [
        {
            "auth_token": auth_token_for(c.id, c.auth_salt),
            "customer_id": c.id,
            "passcode": c.passcode,
        }
        for c in rows
    ]


@server.entity("transfer", key="transfer_id")
def _transfers(ctx: ToolContext) -> list[dict]:
    rows = ctx.sql.all(TRANSFERS)
    return [{"transfer_id": t.id, "from_account_id": t.from_account_id} for t in rows]


@server.entity("transaction", key="transaction_id")
def _transactions(ctx: ToolContext) -> list[dict]:
    """Entries of the last 30 days (what customers ask about)."""
    rows = ctx.sql.all(TRANSACTIONS_SINCE, since=ctx.now - dt.timedelta(days=30))
    return [
        {"transaction_id": t.id, "account_id": t.account_id, "description": t.description}
        for t in rows
    ]
