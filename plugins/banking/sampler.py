"""A realistic retail bank: size 1 gives 40 customers, ~100 accounts, ~90 cards, ~3,000 transactions.

The recorded history covers the 120 days before "now". Each customer's events
(salary, rent, bills, card spending, savings transfers, interest, fees) are
replayed in time order against the balances, so a debit that would breach the
overdraft limit is declined (left out) exactly as the live tools would refuse it,
and every account ends with ``balance == opening_balance + sum(amounts)``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from operator import itemgetter
from random import Random
from typing import Any

from prove_gym.server import SampleContext

from .models import (
    CENT,
    Account,
    Beneficiary,
    Card,
    Customer,
    ExchangeRate,
    ScheduledPayment,
    Transaction,
    Transfer,
    convert,
    cross_rate,
)

HISTORY_DAYS = 120
BASE_CURRENCY = "USD"
RATE_RANGES = {
    "USD": (10000, 10000),
    "EUR": (10500, 11200),
    "GBP": (12400, 13100),
    "CAD": (7100, 7600),
    "CHF": (10900, 11600),
}
"""Base (USD) per unit, in ten-thousandths; each seed draws its own fixed rates."""

CARD_SPEND = {
    "groceries": (["Whole Foods Market", "Trader Joe's", "Safeway", "Kroger", "Aldi"], 12, 160),
    "dining": (["Chipotle", "Starbucks", "Olive Garden", "Sweetgreen", "Panera Bread"], 4, 95),
    "fuel": (["Shell", "Chevron", "BP", "ExxonMobil"], 25, 85),
    "online": (["Amazon", "Etsy", "eBay", "Apple.com", "Netflix", "Spotify"], 6, 240),
    "transport": (["Uber", "Lyft", "Amtrak", "Delta Air Lines"], 8, 420),
    "pharmacy": (["CVS Pharmacy", "Walgreens"], 5, 70),
}
UTILITIES = [
    ("Con Edison", "electricity"),
    ("Comcast Xfinity", "internet"),
    ("Verizon Wireless", "phone"),
    ("City Water Services", "water"),
    ("State Farm Insurance", "insurance"),
]
BANKS = [
    "Chase",
    "Bank of America",
    "Wells Fargo",
    "Citibank",
    "Deutsche Bank",
    "Barclays",
    "HSBC",
    "BNP Paribas",
    "RBC Royal Bank",
    "UBS",
]
SPEND_KINDS = tuple(CARD_SPEND)
IBAN_COUNTRY = {"EUR": "DE", "GBP": "GB", "CAD": "CA", "CHF": "CH"}
UTILITY_ROLES = frozenset(role for _, role in UTILITIES)
ACCOUNT_FEE = Decimal("4.95")
INTEREST_PER_MONTH = Decimal("0.035")
SAVINGS_NAMES = ["Rainy day fund", "Holiday savings", "House deposit", "Emergency fund", "Savings"]
CHECKING_NAMES = ["Everyday", "Main checking", "Bills", "Joint checking"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


@dataclass(frozen=True, slots=True)
class _Day:
    """One day of the history window (the same for every customer of a state)."""

    midnight: dt.datetime
    of_month: int
    rent_memo: str


def _history_days(start: dt.datetime) -> list[_Day]:
    """The days from ``start``'s to ``HISTORY_DAYS`` later, computed once per state."""
    day0 = start.replace(hour=0, minute=0, second=0, microsecond=0)
    days = []
    for d in range(HISTORY_DAYS + 1):
        day = day0 + dt.timedelta(days=d)
        days.append(_Day(day, day.day, f"Rent {MONTHS[day.month - 1]} {day.year}"))
    return days


def beneficiary_number(rng: Random, currency: str) -> str:
    """A plausible payee account number for ``currency`` (IBAN-like outside the US)."""
    digits = "".join([str(rng.randrange(10)) for _ in range(18)])
    if currency == "USD":
        return digits[:12]
    return f"{IBAN_COUNTRY[currency]}{rng.randint(10, 99)}{digits}"


@dataclass
class _Ledger:
    """Running balances of one customer's accounts and the rows the replay produced."""

    tag: str
    balances: dict[str, Decimal]
    limits: dict[str, Decimal]
    rows: list[dict[str, Any]] = field(default_factory=list)
    transfers: list[dict[str, Any]] = field(default_factory=list)

    def can_debit(self, account: str, amount: Decimal) -> bool:
        return self.balances[account] - amount >= -self.limits[account]

    def post(
        self,
        account: str,
        at: dt.datetime,
        kind: str,
        desc: str,
        amount: Decimal,
        *,
        transfer: str | None = None,
        card: str | None = None,
    ) -> None:
        balance = self.balances[account] = self.balances[account] + amount
        self.rows.append(
            {
                "account_id": account,
                "posted_at": at,
                "kind": kind,
                "description": desc,
                "amount": amount,
                "balance_after": balance,
                "transfer_id": transfer,
                "card_id": card,
            }
        )


# Customers, accounts, cards, beneficiaries and standing orders are built as plain objects
# (attributes named as the columns) and inserted with ctx.insert: a mapped object costs the ORM
# ~30 µs to build and its flush more to write. ``eq=False``: compared by identity, as mapped
# objects are.
@dataclass(slots=True, eq=False)
class _Customer:
    id: str
    name: str
    email: str
    phone: str
    city: str
    segment: str
    joined_on: dt.date
    passcode: str
    auth_salt: str


@dataclass(slots=True, eq=False)
class _Account:
    id: str
    customer_id: str
    kind: str
    nickname: str
    number: str
    currency: str
    balance: Decimal
    opening_balance: Decimal
    overdraft_limit: Decimal
    status: str
    opened_on: dt.date


@dataclass(slots=True, eq=False)
class _Beneficiary:
    id: str
    customer_id: str
    name: str
    account_number: str
    bank_name: str
    currency: str
    added_on: dt.date


@dataclass(slots=True, eq=False)
class _Card:
    id: str
    account_id: str
    network: str
    kind: str
    last4: str
    expires: str
    status: str
    block_reason: str
    daily_limit: Decimal


@dataclass(slots=True, eq=False)
class _Schedule:
    id: str
    from_account_id: str
    to_account_id: str | None
    beneficiary_id: str | None
    amount: Decimal
    frequency: str
    next_date: dt.date
    end_date: dt.date | None
    reference: str
    status: str
    created_at: dt.datetime


def sample_banking(ctx: SampleContext) -> None:
    """Fill an empty banking database (see the module docstring for sizes)."""
    rng = ctx.rng
    rates = {cur: Decimal(rng.randint(lo, hi)).scaleb(-4) for cur, (lo, hi) in RATE_RANGES.items()}
    bank = _Bank(ctx, rates)
    for ci in range(40 * ctx.size):
        bank.add_customer(f"cus_{ci + 1:03d}")
    # the tables in the order the ORM's unit of work used to flush them
    for model, rows in (
        (Beneficiary, bank.benes),
        (Card, bank.cards),
        (Customer, bank.customers),
        (ExchangeRate, [{"currency": c, "base_per_unit": r} for c, r in rates.items()]),
        (ScheduledPayment, bank.schedules),
        (Account, bank.accounts),
    ):
        ctx.insert(rows, into=model)
    _insert_history(ctx, bank.txn_rows, bank.transfer_rows)


class _Bank:
    """Collects the rows of every customer; one method per kind of thing a customer has."""

    def __init__(self, ctx: SampleContext, rates: dict[str, Decimal]) -> None:
        self.rng, self.fake, self.now = ctx.rng, ctx.fake, ctx.now
        self.rates = rates
        self.start = ctx.now - dt.timedelta(days=HISTORY_DAYS)
        self.days = _history_days(self.start)
        # every (from, to) currency pair's rate, as cross_rate gives it
        self.cross = {(a, b): cross_rate(rates[a], rates[b]) for a in rates for b in rates}
        self.customers: list[_Customer] = []
        self.accounts: list[_Account] = []
        self.cards: list[_Card] = []
        self.benes: list[_Beneficiary] = []
        self.schedules: list[_Schedule] = []
        self.txn_rows: list[dict[str, Any]] = []
        self.transfer_rows: list[dict[str, Any]] = []
        self.used_last4: set[str] = set()

    def add_customer(self, cid: str) -> None:
        rng, fake = self.rng, self.fake
        name = fake.unique.name()
        local = name.lower().replace(" ", ".").replace("'", "")
        cust = _Customer(
            id=cid,
            name=name,
            email=f"{local}{rng.randint(1, 99)}@{fake.free_email_domain()}",
            phone=fake.numerify("+1-###-###-####"),
            city=fake.city(),
            segment=rng.choice(["standard", "standard", "standard", "premier"]),
            joined_on=(self.start - dt.timedelta(days=rng.randint(30, 4000))).date(),
            passcode=f"{rng.randrange(10**6):06d}",
            auth_salt=f"{rng.getrandbits(64):016x}",
        )
        self.customers.append(cust)
        scale = 3 if cust.segment == "premier" else 1
        home = rng.choices(["USD", "EUR", "GBP", "CAD"], weights=[85, 6, 6, 3])[0]

        checking = self.open_account(
            cust,
            "checking",
            rng.choice(CHECKING_NAMES),
            home,
            _cents(rng, 400, 5000 * scale),
            rng.choice([0, 0, 250, 500, 1000, 1500]),
        )
        savings = foreign = business = None
        if rng.random() < 0.65:
            savings = self.open_account(
                cust, "savings", rng.choice(SAVINGS_NAMES), home, _cents(rng, 800, 25000 * scale)
            )
        if rng.random() < 0.22:
            cur = rng.choice([c for c in self.rates if c != home])
            foreign = self.open_account(
                cust, "checking", f"{cur} travel wallet", cur, _cents(rng, 50, 3000)
            )
        if rng.random() < 0.1:
            business = self.open_account(
                cust,
                "business",
                f"{fake.last_name()} Consulting",
                home,
                _cents(rng, 5000, 60000),
                5000,
            )
        mine = [a for a in (checking, savings, foreign, business) if a is not None]
        cards = {a.id: self.add_cards(a) for a in mine if a.kind != "savings"}

        benes: dict[str, _Beneficiary] = {}
        if rng.random() < 0.6:
            benes["rent"] = self.add_bene(cust, f"{fake.last_name()} Property Management", home)
        for payee, what in rng.sample(UTILITIES, k=rng.randint(0, 3)):
            benes[what] = self.add_bene(cust, payee, home)
        for i in range(rng.choice([0, 1, 1, 2, 3])):
            cur = home if rng.random() < 0.8 else rng.choice(list(self.rates))
            benes[f"person{i}"] = self.add_bene(cust, fake.name(), cur)

        ledger = _Ledger(
            tag=cust.id,
            balances={a.id: a.opening_balance for a in mine},
            limits={a.id: a.overdraft_limit for a in mine},
        )
        rent = _cents(rng, 900, 2600, whole=True)
        monthly_saving = _cents(rng, 50, 600, whole=True)
        events = _history(
            rng,
            fake,
            self.days,
            self.now,
            (checking, savings, foreign, business),
            benes,
            rent=rent,
            monthly_saving=monthly_saving,
        )
        events.sort(key=itemgetter(0))
        for at, kind, payload in events:
            _apply(ledger, self.cross, at, kind, payload, cards)
        for acc in mine:
            acc.balance = ledger.balances[acc.id]
        self.txn_rows.extend(ledger.rows)
        self.transfer_rows.extend(ledger.transfers)

        # Standing orders: rent on the 1st, savings sweeps on the 28th, a few payments to people.
        today = self.now.date()
        first_of_next = (today.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
        next_28th = today.replace(day=28) if today.day < 28 else first_of_next.replace(day=28)
        if "rent" in benes and rng.random() < 0.7:
            self.schedule(checking, rent, "monthly", "Rent", first_of_next, bene=benes["rent"])
        if savings is not None and rng.random() < 0.5:
            self.schedule(
                checking, monthly_saving, "monthly", "Monthly savings", next_28th, to=savings
            )
        people = [b for role, b in benes.items() if role.startswith("person")]
        if people and rng.random() < 0.4:
            self.schedule(
                checking,
                _cents(rng, 20, 400),
                rng.choice(["once", "weekly"]),
                rng.choice(["Birthday gift", "Dinner split", "Piano lessons", "Loan repayment"]),
                today + dt.timedelta(days=rng.randint(1, 28)),
                bene=rng.choice(people),
            )

    def open_account(
        self,
        cust: _Customer,
        kind: str,
        nickname: str,
        currency: str,
        opening: Decimal,
        overdraft: int = 0,
    ) -> _Account:
        seq = len(self.accounts) + 1
        acc = _Account(
            id=f"acc_{seq:04d}",
            customer_id=cust.id,
            kind=kind,
            nickname=nickname,
            number=f"{seq:04d}{self.rng.randrange(10**6):06d}",
            currency=currency,
            balance=opening,
            opening_balance=opening,
            overdraft_limit=Decimal(overdraft).quantize(CENT),
            status="frozen" if self.rng.random() < 0.03 else "active",
            opened_on=cust.joined_on + dt.timedelta(days=self.rng.randint(0, 25)),
        )
        self.accounts.append(acc)
        return acc

    def add_cards(self, acc: _Account) -> _Card:
        """A physical debit card, sometimes a virtual one too; returns the physical one."""
        rng = self.rng
        made: list[_Card] = []
        for kind in ["physical", "virtual"] if rng.random() < 0.25 else ["physical"]:
            last4 = f"{rng.randrange(10**4):04d}"
            while last4 in self.used_last4:
                last4 = f"{rng.randrange(10**4):04d}"
            self.used_last4.add(last4)
            blocked = rng.random() < 0.07
            made.append(
                _Card(
                    id=f"crd_{len(self.cards) + len(made) + 1:04d}",
                    account_id=acc.id,
                    network=rng.choice(["Visa", "Mastercard"]),
                    kind=kind,
                    last4=last4,
                    expires=f"{rng.randint(1, 12):02d}/{(self.now.year + rng.randint(1, 4)) % 100:02d}",
                    status="blocked" if blocked else "active",
                    block_reason=rng.choice(["lost", "stolen", "suspected_fraud"])
                    if blocked
                    else "",
                    daily_limit=Decimal(rng.choice([500, 1000, 1000, 1500, 2000, 3000])).quantize(
                        CENT
                    ),
                )
            )
        self.cards.extend(made)
        return made[0]

    def add_bene(self, cust: _Customer, payee: str, currency: str) -> _Beneficiary:
        ben = _Beneficiary(
            id=f"ben_{len(self.benes) + 1:04d}",
            customer_id=cust.id,
            name=payee,
            account_number=beneficiary_number(self.rng, currency),
            bank_name=self.rng.choice(BANKS),
            currency=currency,
            added_on=cust.joined_on + dt.timedelta(days=self.rng.randint(1, 60)),
        )
        self.benes.append(ben)
        return ben

    def schedule(
        self,
        src: _Account,
        amount: Decimal,
        frequency: str,
        reference: str,
        first: dt.date,
        *,
        bene: _Beneficiary | None = None,
        to: _Account | None = None,
    ) -> None:
        rng = self.rng
        repeating = frequency != "once"
        self.schedules.append(
            _Schedule(
                id=f"sch_{len(self.schedules) + 1:04d}",
                from_account_id=src.id,
                to_account_id=to.id if to else None,
                beneficiary_id=bene.id if bene else None,
                amount=amount,
                frequency=frequency,
                next_date=first,
                end_date=first + dt.timedelta(days=365)
                if repeating and rng.random() < 0.3
                else None,
                reference=reference,
                status="cancelled" if rng.random() < 0.15 else "active",
                created_at=self.now
                - dt.timedelta(days=rng.randint(1, 300), minutes=rng.randrange(1440)),
            )
        )


def _cents(rng: Random, lo: int, hi: int, *, whole: bool = False) -> Decimal:
    """A random amount between ``lo`` and ``hi`` (whole units when ``whole``)."""
    if whole:
        return Decimal(rng.randint(lo, hi)).quantize(CENT)
    return Decimal(rng.randint(lo * 100, hi * 100)).scaleb(-2)


MINUTES_OF_DAY = [dt.timedelta(minutes=m) for m in range(24 * 60)]
"""Each minute of a day as a ``timedelta``: adding one to a midnight is a tenth of the cost of
``datetime.replace(hour=..., minute=...)`` (keyword arguments), for the same time."""


def _at(rng: Random, day: dt.datetime, lo: int = 7, hi: int = 22) -> dt.datetime:
    """A time on ``day`` (a midnight) from ``lo`` o'clock to before ``hi``."""
    hour = rng.randint(lo, hi - 1)
    return day + MINUTES_OF_DAY[60 * hour + rng.randrange(60)]


def _history(
    rng: Random,
    fake: Any,
    days: Sequence[_Day],
    now: dt.datetime,
    accounts: tuple[_Account, _Account | None, _Account | None, _Account | None],
    benes: dict[str, _Beneficiary],
    *,
    rent: Decimal,
    monthly_saving: Decimal,
) -> list[tuple[dt.datetime, str, dict[str, Any]]]:
    """The customer's money events in the history window, not yet applied."""
    checking, savings, foreign, business = accounts
    events: list[tuple[dt.datetime, str, dict[str, Any]]] = []

    def add(at: dt.datetime, event: str, **payload: Any) -> None:
        if at < now:
            events.append((at, event, payload))

    employer = fake.company()
    salary = _cents(rng, 2200, 7500, whole=True)
    bills = [(role, _cents(rng, 35, 180)) for role in benes if role in UTILITY_ROLES]
    bill_days = {3 + 4 * i: bill for i, bill in enumerate(bills)}  # at most one bill a day
    people = [b for role, b in benes.items() if role.startswith("person")]
    spend_rate = rng.uniform(0.2, 0.5)
    has_rent = "rent" in benes
    random = rng.random
    for day_of in days:
        day, of_month = day_of.midnight, day_of.of_month
        if of_month == 25:
            add(
                _at(rng, day, 6, 8),
                "credit",
                account=checking,
                kind="salary",
                desc=f"Salary {employer}",
                amount=salary,
            )
        if of_month == 1 and has_rent:
            add(
                _at(rng, day, 8, 10),
                "payment",
                account=checking,
                beneficiary=benes["rent"],
                amount=rent,
                memo=day_of.rent_memo,
            )
        bill = bill_days.get(of_month)
        if bill is not None:
            role, amount = bill
            add(
                _at(rng, day),
                "payment",
                account=checking,
                beneficiary=benes[role],
                amount=amount + _cents(rng, 0, 25),
                memo=f"{role.title()} bill",
            )
        if random() < spend_rate:
            merchants, lo, hi = CARD_SPEND[rng.choice(SPEND_KINDS)]
            add(
                _at(rng, day),
                "card",
                account=checking,
                merchant=rng.choice(merchants),
                amount=_cents(rng, lo, hi),
            )
        if random() < 0.04:
            add(
                _at(rng, day),
                "debit",
                account=checking,
                kind="atm_withdrawal",
                desc="ATM withdrawal",
                amount=Decimal(20 * rng.randint(2, 15)).quantize(CENT),
            )
        if of_month == 28:
            add(
                _at(rng, day, 20, 23),
                "debit",
                account=checking,
                kind="fee",
                desc="Monthly account fee",
                amount=ACCOUNT_FEE,
            )
            if savings is not None:
                add(
                    _at(rng, day, 9, 12),
                    "transfer",
                    source=checking,
                    target=savings,
                    amount=monthly_saving,
                    memo="Monthly savings",
                )
                add(_at(rng, day, 23, 24), "interest", account=savings)
            if foreign is not None and random() < 0.5:
                add(
                    _at(rng, day, 9, 18),
                    "transfer",
                    source=checking,
                    target=foreign,
                    amount=_cents(rng, 100, 900, whole=True),
                    memo=f"Top up {foreign.currency}",
                )
        if people and random() < 0.03:
            add(
                _at(rng, day),
                "payment",
                account=checking,
                beneficiary=rng.choice(people),
                amount=_cents(rng, 15, 300),
                memo=rng.choice(["Dinner", "Concert tickets", "Thanks!", "Shared groceries"]),
            )
        if foreign is not None and random() < 0.08:
            merchants, lo, hi = CARD_SPEND[rng.choice(["dining", "transport", "groceries"])]
            add(
                _at(rng, day),
                "card",
                account=foreign,
                merchant=rng.choice(merchants),
                amount=_cents(rng, lo, hi),
            )
        if business is not None and random() < 0.08:
            add(
                _at(rng, day, 9, 17),
                "credit",
                account=business,
                kind="deposit",
                desc=f"Invoice payment from {fake.company()}",
                amount=_cents(rng, 800, 9000),
            )
        if business is not None and random() < 0.1:
            add(
                _at(rng, day, 9, 17),
                "debit",
                account=business,
                kind="withdrawal",
                desc=f"Supplier {fake.company()}",
                amount=_cents(rng, 100, 3000),
            )
    return events


def _apply(
    ledger: _Ledger,
    cross: dict[tuple[str, str], Decimal],
    at: dt.datetime,
    kind: str,
    p: dict[str, Any],
    cards: dict[str, _Card],
) -> None:
    """Post one event to the ledger; a debit beyond the overdraft limit is declined (dropped)."""
    if kind == "card":  # the most common event first
        acc = p["account"].id
        card = cards.get(acc)
        if card is not None and ledger.can_debit(acc, p["amount"]):
            desc = f"{p['merchant']} (card ending {card.last4})"
            ledger.post(acc, at, "card_purchase", desc, -p["amount"], card=card.id)
    elif kind == "credit":
        ledger.post(p["account"].id, at, p["kind"], p["desc"], p["amount"])
    elif kind == "debit":
        if ledger.can_debit(p["account"].id, p["amount"]):
            ledger.post(p["account"].id, at, p["kind"], p["desc"], -p["amount"])
    elif kind == "interest":
        acc = p["account"].id
        interest = (ledger.balances[acc] * INTEREST_PER_MONTH / 12).quantize(CENT)
        if interest > 0:
            ledger.post(acc, at, "interest", "Interest 3.50% APY", interest)
    elif kind in ("transfer", "payment"):
        src: _Account = p["account"] if kind == "payment" else p["source"]
        if not ledger.can_debit(src.id, p["amount"]):
            return
        to_cur = p["beneficiary"].currency if kind == "payment" else p["target"].currency
        rate = cross[src.currency, to_cur]
        credited = convert(p["amount"], rate)
        tid = f"tmp_{ledger.tag}_{len(ledger.transfers)}"
        ledger.transfers.append(
            {
                "id": tid,
                "kind": "external" if kind == "payment" else "internal",
                "from_account_id": src.id,
                "to_account_id": None if kind == "payment" else p["target"].id,
                "beneficiary_id": p["beneficiary"].id if kind == "payment" else None,
                "amount": p["amount"],
                "currency": src.currency,
                "credited_amount": credited,
                "credited_currency": to_cur,
                "rate": rate,
                "memo": p["memo"],
                "created_at": at,
            }
        )
        if kind == "payment":
            desc = f"Payment to {p['beneficiary'].name}: {p['memo']}"
            ledger.post(src.id, at, "payment", desc, -p["amount"], transfer=tid)
        else:
            dst: _Account = p["target"]
            ledger.post(
                src.id,
                at,
                "transfer_out",
                f"Transfer to {dst.nickname}: {p['memo']}",
                -p["amount"],
                transfer=tid,
            )
            ledger.post(
                dst.id,
                at,
                "transfer_in",
                f"Transfer from {src.nickname}: {p['memo']}",
                credited,
                transfer=tid,
            )


def _insert_history(
    ctx: SampleContext, txns: list[dict[str, Any]], transfers: list[dict[str, Any]]
) -> None:
    """Give transfers and transactions chronological ids, then bulk-insert them."""
    transfers.sort(key=itemgetter("created_at", "from_account_id"))
    new_ids = {t["id"]: f"trf_{i + 1:05d}" for i, t in enumerate(transfers)}
    for t in transfers:
        t["id"] = new_ids[t["id"]]
    # A stable sort: within one timestamp the replay order stays (a transfer's debit first).
    rows = sorted(txns, key=itemgetter("posted_at"))
    for n, row in enumerate(rows, start=1):
        row["id"] = f"txn_{n:05d}"
        if row["transfer_id"] is not None:
            row["transfer_id"] = new_ids[row["transfer_id"]]
    ctx.insert(transfers, into=Transfer)
    ctx.insert(rows, into=Transaction)
