"""A realistic payment platform: size 1 gives 12 merchants, ~200 customers, ~600 invoices,
~570 charges (some declined), ~45 refunds, ~250 payouts, ~18 webhook endpoints and ~2,200
events with ~1,000 deliveries; size n gives n times as many merchants.

The recorded history covers the 200 days before "now". Every merchant's business is
planned first (invoices, card payments, partial payments, declines, refunds, voids, weekly
or monthly payouts) and then replayed in time order against its balance with the same rules
the live tools apply: a refund the balance cannot cover is left out, a payout sends most of
the balance (a rolling reserve stays behind), a card is not charged after it expired. Every step appends an event, and every event
goes to the delivery log of each endpoint that subscribed to it at the time.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from operator import attrgetter, itemgetter
from random import Random
from typing import Any

from prove_gym.server import SampleContext, Weighted

from .models import (
    CENT,
    EVENT_TYPES,
    REFUND_WINDOW_DAYS,
    ZERO,
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
)

HISTORY_DAYS = 200
KEYED_DAYS = 45
"""Requests of the last 45 days were often made with an idempotency key (a retrying client)."""

# category -> (name patterns, [(description, low, high, whole units)])
CATEGORIES: dict[str, tuple[list[str], list[tuple[str, int, int, bool]]]] = {
    "bakery": (
        ["{last} Bakery", "{last}'s Bakehouse", "{city} Bread Co."],
        [
            ("Catering order for {n} guests", 120, 900, False),
            ("Wedding cake, three tiers", 350, 1200, True),
            ("Weekly bread delivery, {month}", 60, 240, False),
            ("Office breakfast platters", 80, 320, False),
        ],
    ),
    "software": (
        ["{last} Software", "{last}Labs", "{city} Cloud"],
        [
            ("Pro plan, {month}", 49, 49, True),
            ("Team plan, {month}", 199, 199, True),
            ("Annual license, {n} seats", 990, 4800, True),
            ("Onboarding package", 500, 1500, True),
        ],
    ),
    "design": (
        ["{last} Design Studio", "Studio {last}", "{last} & {last2} Creative"],
        [
            ("Logo design", 400, 2500, True),
            ("Website redesign, milestone {k}", 1500, 6000, True),
            ("Brand guidelines", 800, 3000, True),
            ("Social media templates", 250, 900, True),
        ],
    ),
    "consulting": (
        ["{last} & {last2} Consulting", "{last} Advisory", "{city} Strategy Partners"],
        [
            ("Consulting, {n} hours", 525, 4200, False),
            ("Strategy workshop", 1200, 4000, True),
            ("Monthly retainer, {month}", 1500, 5000, True),
        ],
    ),
    "fitness": (
        ["{city} Fitness", "{last} Strength Club", "Peak {last} Gym"],
        [
            ("Monthly membership, {month}", 59, 129, True),
            ("Personal training pack ({n} sessions)", 450, 900, True),
            ("Nutrition plan", 80, 200, True),
        ],
    ),
    "photography": (
        ["{last} Photography", "{city} Photo Works", "Lens & Light by {last}"],
        [
            ("Event photography", 600, 2400, True),
            ("Portrait session", 180, 450, True),
            ("Print order", 40, 300, False),
        ],
    ),
    "auto_repair": (
        ["{last} Auto Repair", "{city} Motor Works", "{last} Garage"],
        [
            ("Brake service", 180, 650, False),
            ("Oil change and inspection", 49, 129, False),
            ("Diagnostics", 90, 160, False),
            ("Tyre replacement (4)", 320, 880, False),
        ],
    ),
}
CITIES = [
    "Austin",
    "Portland",
    "Denver",
    "Brooklyn",
    "Oakland",
    "Madison",
    "Leeds",
    "Bristol",
    "Hamburg",
    "Cork",
    "Savannah",
    "Boulder",
]
COUNTRIES = [("US", "USD", 70), ("GB", "GBP", 15), ("DE", "EUR", 10), ("IE", "EUR", 5)]
BANKS = {
    "US": ["Chase", "Bank of America", "Wells Fargo", "Silicon Valley Bank", "US Bank"],
    "GB": ["Barclays", "HSBC UK", "Lloyds Bank", "Monzo Business"],
    "DE": ["Deutsche Bank", "Commerzbank", "N26 Business"],
    "IE": ["AIB", "Bank of Ireland"],
}
PAUSE_REASONS = [
    "Bank account verification pending: the bank statement uploaded was unreadable.",
    "Unusual refund activity is under review by the risk team.",
    "The business tax ID is missing from the merchant profile.",
]
ENDPOINT_PURPOSES = [
    "Order fulfilment",
    "Accounting sync (Xero)",
    "Slack alerts",
    "CRM billing status",
    "Data warehouse export",
]
ENDPOINT_PATHS = ["webhooks/payments", "payments/webhook", "billing/events", "hooks/payments"]
ENDPOINT_HOSTS = ["api", "hooks", "app", "erp", "ops"]
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
TLDS = {"US": "com", "GB": "co.uk", "DE": "de", "IE": "ie"}
DECLINE_CODES = ["insufficient_funds", "insufficient_funds", "do_not_honor", "lost_card"]
ONE = Decimal(1)
TWENTY = Decimal(20)

CATEGORY_NAMES = sorted(CATEGORIES)
COUNTRY = Weighted([((c, cur), w) for c, cur, w in COUNTRIES])
CARD_BRAND = Weighted([("Visa", 55), ("Mastercard", 30), ("Amex", 15)])
REFUND_REASON = Weighted([("requested_by_customer", 70), ("duplicate", 15), ("fraudulent", 15)])


_SEQ = itemgetter("seq")


def sample_payments(ctx: SampleContext) -> None:
    """Fill an empty payments database (see the module docstring for sizes)."""
    platform = _Platform(ctx)
    for i in range(12 * ctx.size):
        platform.add_merchant(f"mer_{i + 1:03d}")
    platform.replay()
    platform.write(ctx)


# Merchants, customers and endpoints are built as plain objects (attributes named as the
# columns) and inserted a table at a time, in the order the ORM's flush wrote them: a mapped
# object costs the ORM ~30 µs to build and a flush more to write, and every attribute read
# goes through its instrumentation. ``eq=False``: compared by identity, as mapped objects are.
@dataclass(slots=True, eq=False)
class _Merchant:
    id: str
    name: str
    email: str
    website: str
    category: str
    country: str
    currency: str
    invoice_prefix: str
    balance: Decimal
    payouts: str
    payout_pause_reason: str
    bank_name: str
    bank_last4: str
    created_at: dt.datetime


@dataclass(slots=True, eq=False)
class _Customer:
    id: str
    merchant_id: str
    name: str
    email: str
    created_at: dt.datetime
    card_brand: str | None = None
    card_last4: str | None = None
    card_exp_month: int | None = None
    card_exp_year: int | None = None
    card_decline_code: str | None = None


@dataclass(slots=True, eq=False)
class _Endpoint:
    id: str
    merchant_id: str
    url: str
    description: str
    events: str
    status: str
    response_code: int
    first_seq: int
    created_at: dt.datetime
    last_seq: int | None = None


@dataclass(slots=True)
class _Action:
    """One planned step of a merchant's history, replayed in time order (steps at the same
    time in the order they were planned)."""

    at: dt.datetime
    kind: str
    merchant: _Merchant
    data: dict[str, Any]


class _Platform:
    """Plans every merchant's history, then replays it; holds the rows it produced."""

    def __init__(self, ctx: SampleContext) -> None:
        self.rng, self.fake, self.now = ctx.rng, ctx.fake, ctx.now
        self.start = ctx.now - dt.timedelta(days=HISTORY_DAYS)
        self.merchants: list[_Merchant] = []
        self.customers: list[_Customer] = []
        self.emails: dict[str, set[str]] = {}
        """Each merchant's customers' emails."""
        self.endpoints: list[tuple[_Endpoint, dt.datetime, dt.datetime | None]] = []
        self.actions: list[_Action] = []
        self.paused_since: dict[str, dt.datetime] = {}
        self.prefixes: set[str] = set()
        self.keys: set[tuple[str, str]] = set()
        self.rows: dict[str, list[dict[str, Any]]] = {
            t: []
            for t in ("invoices", "charges", "refunds", "payouts", "events", "idempotency_keys")
        }
        self.invoice_count: dict[str, int] = {}
        self.today = ctx.now.date()
        self.keyed_since = ctx.now - dt.timedelta(days=KEYED_DAYS)
        days: list[dt.datetime] = []
        day = self.start.replace(hour=6, minute=0, second=0, microsecond=0)
        while day < self.now:
            days.append(day)
            day += dt.timedelta(days=1)
        self.weekdays = {wd: [d for d in days if d.weekday() == wd] for wd in range(5)}
        """The mornings of the history on each weekday (Monday to Friday)."""
        self.firsts = [d for d in days if d.day == 1]
        """The mornings of the history on the 1st of a month."""

    # ------------------------------------------------------------------ planning
    def add_merchant(self, mid: str) -> None:
        rng, fake = self.rng, self.fake
        category = rng.choice(CATEGORY_NAMES)
        patterns, _ = CATEGORIES[category]
        last, last2 = fake.last_name(), fake.last_name()
        name = rng.choice(patterns).format(last=last, last2=last2, city=rng.choice(CITIES))
        slug = "".join(ch for ch in name.lower() if ch.isalnum())[:40]
        country, currency = COUNTRY.pick(rng)
        domain = f"{slug}.{TLDS[country]}"
        paused = rng.random() < 0.17
        merchant = _Merchant(
            id=mid,
            name=name,
            email=f"billing@{domain}",
            website=domain,
            category=category,
            country=country,
            currency=currency,
            invoice_prefix=self._prefix(name),
            balance=ZERO,
            payouts="paused" if paused else "enabled",
            payout_pause_reason=rng.choice(PAUSE_REASONS) if paused else "",
            bank_name=rng.choice(BANKS[country]),
            bank_last4=f"{rng.randrange(10**4):04d}",
            created_at=_at(rng, self.now - dt.timedelta(days=rng.randint(HISTORY_DAYS + 30, 1500))),
        )
        self.merchants.append(merchant)
        self.invoice_count[mid] = 0
        if paused:
            self.paused_since[mid] = self.now - dt.timedelta(days=rng.randint(6, 50), hours=3)
        for _ in range(rng.randint(10, 24)):
            self.add_customer(merchant)
        self.plan_payouts(merchant)
        for _ in range(rng.choice([0, 1, 1, 1, 2, 2, 3])):
            self.add_endpoint(merchant)

    def _prefix(self, name: str) -> str:
        words = [w for w in name.replace("&", " ").split() if w[:1].isalpha()]
        base = "".join(ch for ch in words[0].upper() if ch.isalpha())[:4] or "INV"
        prefix, n = base, 1
        while prefix in self.prefixes:
            n += 1
            prefix = f"{base[:3]}{n}"
        self.prefixes.add(prefix)
        return prefix

    def add_customer(self, merchant: _Merchant) -> None:
        rng, fake = self.rng, self.fake
        name = f"{fake.first_name()} {fake.last_name()}"
        local = "".join([ch for ch in name.lower().replace(" ", ".") if ch.isalnum() or ch == "."])
        email = f"{local}@{fake.free_email_domain()}"
        taken = self.emails.setdefault(merchant.id, set())
        while email in taken:
            email = f"{local}{rng.randint(2, 99)}@{fake.free_email_domain()}"
        today = self.today
        customer = _Customer(
            id=f"cus_{len(self.customers) + 1:04d}",
            merchant_id=merchant.id,
            name=name,
            email=email,
            created_at=_at(rng, self.start - dt.timedelta(days=rng.randint(-150, 400))),
        )
        if rng.random() >= 0.05:
            customer.card_brand = CARD_BRAND.pick(rng)
            customer.card_last4 = f"{rng.randrange(10**4):04d}"
            months_ahead = -rng.randint(1, 5) if rng.random() < 0.1 else rng.randint(1, 48)
            year, month = divmod(today.year * 12 + today.month - 1 + months_ahead, 12)
            customer.card_exp_month, customer.card_exp_year = month + 1, year
            if months_ahead > 0 and rng.random() < 0.07:
                customer.card_decline_code = rng.choice(DECLINE_CODES)
        self.customers.append(customer)
        taken.add(email)
        start = max(customer.created_at, self.start)
        span = int((self.now - start).total_seconds() // 60) - 60
        times = sorted(
            start + dt.timedelta(minutes=rng.randrange(span))
            for _ in range(rng.choice([1, 1, 2, 2, 3, 3, 4, 5, 6]))
        )
        for at in times:
            self.plan_invoice(merchant, customer, _at(rng, at))

    def _act(self, at: dt.datetime, kind: str, merchant: _Merchant, **data: Any) -> None:
        if at < self.now:
            self.actions.append(_Action(at, kind, merchant, data))

    def plan_invoice(self, merchant: _Merchant, customer: _Customer, at: dt.datetime) -> None:
        rng = self.rng
        _, items = CATEGORIES[merchant.category]
        text, lo, hi, whole = rng.choice(items)
        month = MONTHS[(at.month - 1 + rng.choice([0, 0, 1])) % 12]
        description = text.format(n=rng.randint(4, 60), k=rng.randint(1, 4), month=month)
        amount = _amount(rng, lo, hi, whole)
        invoice: dict[str, Any] = {
            "customer": customer,
            "description": description,
            "amount_due": amount,
            "due_date": at.date() + dt.timedelta(days=rng.choice([7, 14, 30, 30])),
        }
        self._act(at, "invoice", merchant, invoice=invoice)
        fate = rng.random()
        if fate < 0.07:
            self._act(
                at + dt.timedelta(days=rng.randint(1, 15), minutes=7),
                "void",
                merchant,
                invoice=invoice,
            )
            return
        if customer.card_brand is None:
            return
        if customer.card_decline_code is not None:
            first = at + dt.timedelta(minutes=rng.randint(5, 4000))
            for i in range(rng.choice([1, 1, 2])):
                self._act(
                    first + dt.timedelta(days=3 * i),
                    "charge",
                    merchant,
                    invoice=invoice,
                    amount=amount,
                    decline=customer.card_decline_code,
                    full=True,
                )
            return
        pay = at + dt.timedelta(
            days=rng.choice([0, 0, 1, 2, 5, 10, 20, 35]), minutes=rng.randint(5, 600)
        )
        if rng.random() < 0.05:
            self._act(
                pay - dt.timedelta(minutes=3),
                "charge",
                merchant,
                invoice=invoice,
                amount=amount,
                decline="card_declined",
                full=True,
            )
        if rng.random() < 0.15 and amount >= TWENTY:
            part = (amount * Decimal(rng.randint(30, 70)) / 100).quantize(ONE)
            later = pay + dt.timedelta(days=rng.randint(7, 30))
            charges = [(pay, part, False), (later, amount - part, False)]
        else:
            charges = [(pay, amount, True)]
        for when, value, full in charges:
            charge: dict[str, Any] = {}
            self._act(
                when,
                "charge",
                merchant,
                invoice=invoice,
                amount=value,
                decline=None,
                full=full,
                charge=charge,
            )
            if rng.random() < 0.14:
                share = 100 if rng.random() < 0.4 else rng.randint(10, 60)
                refund = (value * share / 100).quantize(CENT)
                reason = REFUND_REASON.pick(rng)
                self._act(
                    when + dt.timedelta(days=rng.randint(1, 40), minutes=11),
                    "refund",
                    merchant,
                    charge=charge,
                    amount=refund,
                    reason=reason,
                )

    def plan_payouts(self, merchant: _Merchant) -> None:
        """Automatic payouts, weekly on one weekday or monthly on the 1st."""
        weekly, weekday = self.rng.random() < 0.7, self.rng.randrange(5)
        for day in self.weekdays[weekday] if weekly else self.firsts:
            self._act(day, "payout", merchant, share=self.rng.randint(60, 90))

    def add_endpoint(self, merchant: _Merchant) -> None:
        rng = self.rng
        mine = {e.url for e, _, _ in self.endpoints if e.merchant_id == merchant.id}
        url = (
            f"https://{rng.choice(ENDPOINT_HOSTS)}.{merchant.website}/{rng.choice(ENDPOINT_PATHS)}"
        )
        while url in mine:
            url = f"https://{rng.choice(ENDPOINT_HOSTS)}.{merchant.website}/{rng.choice(ENDPOINT_PATHS)}"
        if rng.random() < 0.35:
            events = "*"
        else:
            chosen = set(rng.sample(EVENT_TYPES, k=rng.randint(1, 4)))
            events = " ".join(t for t in EVENT_TYPES if t in chosen)
        created = _at(rng, self.now - dt.timedelta(days=rng.randint(3, 190)))
        disabled = None
        if rng.random() < 0.15:
            disabled = created + dt.timedelta(days=rng.randint(1, 60), hours=rng.randint(1, 20))
            disabled = disabled if disabled < self.now else None
        healthy = rng.random() < 0.85
        endpoint = _Endpoint(
            id="",
            merchant_id=merchant.id,
            url=url,
            description=rng.choice(ENDPOINT_PURPOSES),
            events=events,
            status="disabled" if disabled else "enabled",
            response_code=200 if healthy else rng.choice([500, 503, 404, 410]),
            first_seq=0,
            created_at=created,
        )
        self.endpoints.append((endpoint, created, disabled))

    # ------------------------------------------------------------------ replay
    def replay(self) -> None:
        """Apply the planned actions in time order, as the live tools would."""
        steps: dict[str, Callable[[_Action], None]] = {
            "invoice": self._do_invoice,
            "void": self._do_void,
            "charge": self._do_charge,
            "refund": self._do_refund,
            "payout": self._do_payout,
        }
        for act in sorted(self.actions, key=attrgetter("at")):  # stable: planned order on ties
            steps[act.kind](act)

    def _event(
        self,
        act: _Action,
        type_: str,
        object_id: str,
        summary: str,
        *,
        at: dt.datetime | None = None,
        invoice_id: str | None = None,
        amount: Decimal | None = None,
    ) -> None:
        self.rows["events"].append(
            {
                "merchant_id": act.merchant.id,
                "type": type_,
                "object_id": object_id,
                "invoice_id": invoice_id,
                "amount": amount,
                "summary": summary,
                "created_at": at or act.at,
            }
        )

    def _key(self, act: _Action, tool: str, params: dict[str, Any], object_id: str) -> str | None:
        """Sometimes record the idempotency key a merchant's integration sent."""
        if act.at < self.keyed_since or self.rng.random() >= 0.3:
            return None
        kind = tool.split("_")[-1][:3]
        key = f"{kind}-{self.rng.getrandbits(40):010x}"
        while (act.merchant.id, key) in self.keys:
            key = f"{kind}-{self.rng.getrandbits(40):010x}"
        self.keys.add((act.merchant.id, key))
        self.rows["idempotency_keys"].append(
            {
                "merchant_id": act.merchant.id,
                "key": key,
                "tool": tool,
                "fingerprint": fingerprint(tool, params),
                "object_id": object_id,
                "created_at": act.at,
            }
        )
        return key

    def _do_invoice(self, act: _Action) -> None:
        inv = act.data["invoice"]
        m = act.merchant
        self.invoice_count[m.id] += 1
        inv["id"] = f"inv_{len(self.rows['invoices']) + 1:05d}"
        customer: _Customer = inv["customer"]
        params = {
            "merchant_id": m.id,
            "customer_email": customer.email,
            "amount": inv["amount_due"],
            "description": inv["description"],
            "due_date": inv["due_date"].isoformat(),
            "customer_name": None,
        }
        row = {
            "id": inv["id"],
            "number": f"{m.invoice_prefix}-{self.invoice_count[m.id]:04d}",
            "merchant_id": m.id,
            "customer_id": customer.id,
            "description": inv["description"],
            "currency": m.currency,
            "amount_due": inv["amount_due"],
            "amount_paid": ZERO,
            "status": "open",
            "due_date": inv["due_date"],
            "created_at": act.at,
            "paid_at": None,
            "voided_at": None,
            "idempotency_key": self._key(act, "create_invoice", params, inv["id"]),
        }
        inv["row"] = row
        self.rows["invoices"].append(row)
        self._event(
            act,
            "invoice.created",
            row["id"],
            f"Invoice {row['number']} for {row['amount_due']} {m.currency} sent to "
            f"{customer.email}",
            invoice_id=row["id"],
            amount=row["amount_due"],
        )

    def _do_void(self, act: _Action) -> None:
        row = act.data["invoice"]["row"]
        if row["status"] != "open" or row["amount_paid"] != ZERO:
            return
        row["status"], row["voided_at"] = "void", act.at
        self._event(
            act,
            "invoice.voided",
            row["id"],
            f"Invoice {row['number']} voided",
            invoice_id=row["id"],
        )

    def _do_charge(self, act: _Action) -> None:
        d, m = act.data, act.merchant
        inv = d["invoice"]["row"]
        customer: _Customer = d["invoice"]["customer"]
        assert customer.card_exp_month is not None and customer.card_exp_year is not None
        if inv["status"] != "open" or card_expired(
            customer.card_exp_month, customer.card_exp_year, act.at.date()
        ):
            return
        amount: Decimal = min(d["amount"], inv["amount_due"] - inv["amount_paid"])
        cid = f"ch_{len(self.rows['charges']) + 1:05d}"
        failed = d["decline"] is not None
        params = {"invoice_id": inv["id"], "amount": None if d["full"] else amount}
        row = {
            "id": cid,
            "invoice_id": inv["id"],
            "merchant_id": m.id,
            "customer_id": customer.id,
            "amount": amount,
            "amount_refunded": ZERO,
            "status": "failed" if failed else "succeeded",
            "failure_code": d["decline"],
            "card_brand": customer.card_brand,
            "card_last4": customer.card_last4,
            "created_at": act.at,
            "idempotency_key": self._key(act, "charge_invoice", params, cid),
        }
        self.rows["charges"].append(row)
        if "charge" in d:
            d["charge"]["row"] = row
        card = f"{customer.card_brand} ending {customer.card_last4}"
        if failed:
            self._event(
                act,
                "charge.failed",
                cid,
                f"Charge of {amount} {m.currency} on {card} failed: {d['decline']}",
                invoice_id=inv["id"],
                amount=amount,
            )
            return
        m.balance += amount
        inv["amount_paid"] += amount
        self._event(
            act,
            "charge.succeeded",
            cid,
            f"Charged {amount} {m.currency} on {card} for invoice {inv['number']}",
            invoice_id=inv["id"],
            amount=amount,
        )
        if inv["amount_paid"] == inv["amount_due"]:
            inv["status"], inv["paid_at"] = "paid", act.at
            self._event(
                act,
                "invoice.paid",
                inv["id"],
                f"Invoice {inv['number']} paid in full",
                invoice_id=inv["id"],
                amount=inv["amount_due"],
            )

    def _do_refund(self, act: _Action) -> None:
        d, m = act.data, act.merchant
        charge = d["charge"].get("row")
        if charge is None or charge["status"] != "succeeded":
            return
        amount: Decimal = d["amount"]
        too_old = act.at - charge["created_at"] > dt.timedelta(days=REFUND_WINDOW_DAYS)
        left = charge["amount"] - charge["amount_refunded"]
        if too_old or amount > left or amount > m.balance or amount <= 0:
            return
        rid = f"re_{len(self.rows['refunds']) + 1:05d}"
        params = {"charge_id": charge["id"], "amount": amount, "reason": d["reason"]}
        self.rows["refunds"].append(
            {
                "id": rid,
                "charge_id": charge["id"],
                "invoice_id": charge["invoice_id"],
                "merchant_id": m.id,
                "amount": amount,
                "reason": d["reason"],
                "created_at": act.at,
                "idempotency_key": self._key(act, "refund_charge", params, rid),
            }
        )
        charge["amount_refunded"] += amount
        m.balance -= amount
        self._event(
            act,
            "refund.created",
            rid,
            f"Refunded {amount} {m.currency} of charge {charge['id']} ({d['reason']})",
            invoice_id=charge["invoice_id"],
            amount=amount,
        )

    def _do_payout(self, act: _Action) -> None:
        m = act.merchant
        paused = self.paused_since.get(m.id)
        if (paused is not None and act.at >= paused) or m.balance < ONE:
            return
        # A rolling reserve stays behind to cover refunds.
        amount = (m.balance * act.data["share"] / 100).quantize(ONE)
        if amount < 1:
            return
        pid = f"po_{len(self.rows['payouts']) + 1:05d}"
        arrives = arrival_date(act.at.date())
        landed = dt.datetime.combine(arrives, dt.time(9, 0))
        self.rows["payouts"].append(
            {
                "id": pid,
                "merchant_id": m.id,
                "amount": amount,
                "status": "paid" if landed <= self.now else "in_transit",
                "description": "Automatic payout",
                "bank_last4": m.bank_last4,
                "arrival_date": arrives,
                "created_at": act.at,
                "idempotency_key": None,
            }
        )
        m.balance -= amount
        bank = f"{m.bank_name} ****{m.bank_last4}"
        self._event(
            act, "payout.created", pid, f"Payout of {amount} {m.currency} to {bank}", amount=amount
        )
        if landed <= self.now:
            self._event(
                act, "payout.paid", pid, f"Payout {pid} arrived at {bank}", at=landed, amount=amount
            )

    # ------------------------------------------------------------------ writing
    def write(self, ctx: SampleContext) -> None:
        """Number the events in time order, work out the deliveries, insert everything."""
        # stable: events of the same time stay in the order they were recorded
        events = sorted(self.rows["events"], key=itemgetter("created_at"))
        for seq, e in enumerate(events, start=1):
            e["seq"], e["id"] = seq, f"evt_{seq:05d}"
        times = [e["created_at"] for e in events]
        by_merchant: dict[str, list[dict[str, Any]]] = {}
        for e in events:
            by_merchant.setdefault(e["merchant_id"], []).append(e)
        made = sorted(self.endpoints, key=lambda x: (x[1], x[0].merchant_id, x[0].url))
        sent: list[tuple[int, str, dict[str, Any], _Endpoint]] = []  # seq, endpoint id
        for n, (ep, created, disabled) in enumerate(made, start=1):
            ep.id = f"we_{n:04d}"
            ep.first_seq = bisect.bisect_left(times, created) + 1
            ep.last_seq = None if disabled is None else bisect.bisect_left(times, disabled)
            mine = by_merchant.get(ep.merchant_id, [])
            # what ``receives`` decides, the endpoint's part worked out once: a merchant's
            # events are in seq order, so its window is a slice of them
            start = bisect.bisect_left(mine, ep.first_seq, key=_SEQ)
            end = (
                len(mine)
                if ep.last_seq is None
                else bisect.bisect_right(mine, ep.last_seq, key=_SEQ)
            )
            if ep.events == "*":
                sent += [(e["seq"], ep.id, e, ep) for e in mine[start:end]]
            else:
                wanted = frozenset(ep.events.split())
                sent += [(e["seq"], ep.id, e, ep) for e in mine[start:end] if e["type"] in wanted]
        sent.sort(key=itemgetter(0, 1))
        after = dt.timedelta(seconds=2)
        deliveries = [
            {
                "id": f"whd_{n:06d}",
                "event_id": e["id"],
                "endpoint_id": ep.id,
                "status": delivery_status(ep.response_code),
                "response_code": ep.response_code,
                "attempted_at": e["created_at"] + after,
            }
            for n, (_, _, e, ep) in enumerate(sent, start=1)
        ]
        for model, rows in (
            (Customer, self.customers),
            (Merchant, self.merchants),
            (WebhookEndpoint, [ep for ep, _, _ in made]),
            (Invoice, self.rows["invoices"]),
            (Charge, self.rows["charges"]),
            (Refund, self.rows["refunds"]),
            (Payout, self.rows["payouts"]),
            (Event, events),
            (WebhookDelivery, deliveries),
            (IdempotencyKey, self.rows["idempotency_keys"]),
        ):
            ctx.insert(rows, into=model)


def _amount(rng: Random, lo: int, hi: int, whole: bool) -> Decimal:
    """A price between ``lo`` and ``hi``: whole units, or cents for goods sold by weight/time."""
    if whole:
        step = 5 if hi - lo >= 100 else 1
        return Decimal(rng.randrange(lo, hi + 1, step) if hi > lo else lo).quantize(CENT)
    return Decimal(rng.randint(lo * 100, hi * 100)).scaleb(-2)


def _at(rng: Random, when: dt.datetime) -> dt.datetime:
    """``when`` moved to business hours (same day), whole minutes."""
    return when.replace(hour=rng.randint(8, 18), minute=rng.randrange(60), second=0, microsecond=0)
