"""A household's envelope budget: size 1 gives ~5 accounts, ~25 categories, ~13 recurring
expenses and four months of history before the current one (~250 transactions, ~140
envelope transfers, ~110 category-month totals); size 2 about twice the history.

The history is replayed day by day against running balances, with the same rules the tools
enforce: an expense that would take a blocking category over its monthly limit, or an
account below zero (a card past its credit limit), is declined (left out); money is only
moved out of an envelope that holds it. Paychecks on the 1st and the 15th go to Ready to
Assign and are then assigned to the categories; cards are paid off on the 21st; recurring
bills are posted when due, a few days late for some, so that some are due today. The stored
totals are then summed from the rows the replay produced. Size ``n`` replays ``3n + 1``
months before the current one and uses more of the category pool.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from random import Random
from typing import Any

from prove_gym.server import SampleContext

from .models import (
    READY_TO_ASSIGN,
    ZERO,
    Account,
    Category,
    CategoryMonth,
    EnvelopeTransfer,
    Month,
    RecurringExpense,
    Settings,
    Transaction,
    first_of_month,
    month_key,
    next_occurrence,
    on_day,
)


@dataclass(frozen=True)
class Spending:
    """A category people spend in day to day: visits a month, amount range, payees."""

    name: str
    group: str
    visits: float
    lo: float
    hi: float
    payees: tuple[str, ...]
    block_p: float


EVERYDAY = [
    Spending(
        "Groceries",
        "Everyday",
        8,
        18,
        165,
        ("Whole Foods Market", "Trader Joe's", "Safeway", "Costco", "Kroger", "Aldi"),
        0.15,
    ),
    Spending(
        "Dining out",
        "Everyday",
        5,
        12,
        85,
        ("Chipotle", "Olive Garden", "Sweetgreen", "Panera Bread", "Shake Shack"),
        0.6,
    ),
    Spending(
        "Coffee shops",
        "Everyday",
        9,
        3.5,
        8.5,
        ("Starbucks", "Dunkin'", "Blue Bottle Coffee", "Peet's Coffee"),
        0.5,
    ),
    Spending(
        "Transportation",
        "Everyday",
        5,
        22,
        70,
        ("Shell", "Chevron", "BP", "Uber", "Lyft", "Metro Transit"),
        0.2,
    ),
    Spending(
        "Household supplies",
        "Everyday",
        2.5,
        8,
        75,
        ("Target", "Walmart", "Costco", "The Home Depot"),
        0.3,
    ),
    Spending(
        "Personal care",
        "Everyday",
        1.5,
        12,
        85,
        ("CVS", "Walgreens", "Sephora", "Great Clips"),
        0.3,
    ),
    Spending(
        "Health & pharmacy",
        "Everyday",
        1.2,
        10,
        120,
        ("CVS Pharmacy", "Walgreens Pharmacy", "Kaiser Permanente copay", "Quest Diagnostics"),
        0.0,
    ),
    Spending(
        "Pets", "Everyday", 2, 15, 95, ("Petco", "PetSmart", "Chewy", "Banfield Pet Hospital"), 0.2
    ),
]
LIFESTYLE = [
    Spending(
        "Entertainment",
        "Lifestyle",
        2.5,
        12,
        95,
        ("AMC Theatres", "Ticketmaster", "Steam", "Bowlero", "Dave & Buster's"),
        0.6,
    ),
    Spending(
        "Clothing", "Lifestyle", 1.5, 25, 160, ("Uniqlo", "Nordstrom Rack", "Old Navy", "Zara"), 0.6
    ),
    Spending("Gifts", "Lifestyle", 1, 20, 120, ("Amazon", "Etsy", "1-800-Flowers", "Target"), 0.3),
    Spending(
        "Hobbies", "Lifestyle", 1.2, 15, 130, ("Michaels", "REI", "Guitar Center", "JOANN"), 0.4
    ),
    Spending(
        "Kids activities",
        "Lifestyle",
        1,
        25,
        150,
        ("YMCA", "Little League", "Kumon", "Sky Zone"),
        0.2,
    ),
    Spending(
        "Books & learning",
        "Lifestyle",
        1,
        10,
        60,
        ("Audible", "Barnes & Noble", "Coursera", "Kindle Store"),
        0.4,
    ),
]
VARIABLE_BILLS: list[tuple[str, tuple[str, ...], float, float]] = [
    ("Electricity", ("Con Edison", "PG&E", "Duke Energy", "National Grid"), 55, 190),
    ("Water & trash", ("City Water Services", "Waste Management"), 30, 75),
]
FIXED_BILLS = [
    ("Internet", ("Comcast Xfinity", "Spectrum", "Verizon Fios", "AT&T Fiber"), 55, 90),
    ("Phone", ("T-Mobile", "Verizon Wireless", "AT&T Wireless", "Mint Mobile"), 30, 140),
    ("Car insurance", ("Geico", "State Farm", "Progressive", "Allstate"), 85, 210),
    ("Fitness", ("Planet Fitness", "Orangetheory", "YMCA Membership", "Equinox"), 25, 190),
]
STREAMING = [
    ("Netflix", "15.49"),
    ("Spotify", "11.99"),
    ("Disney+", "13.99"),
    ("Hulu", "17.99"),
    ("iCloud+", "2.99"),
    ("YouTube Premium", "13.99"),
    ("The New York Times", "17.00"),
    ("Peloton App", "12.99"),
]
GOALS = ["Emergency fund", "Vacation", "New car", "Holiday gifts", "Home repairs", "Annual bills"]
ARCHIVED = ["Wedding 2025", "Moving costs", "Old gym membership"]
BANKS = ["Chase", "Bank of America", "Wells Fargo", "Capital One", "Citibank", "US Bank"]
ONLINE_BANKS = ["Ally Bank", "Marcus by Goldman Sachs", "Capital One 360", "Discover Bank"]
CARDS = [
    ("Chase", "Chase Sapphire Preferred"),
    ("Citibank", "Citi Double Cash"),
    ("American Express", "Amex Blue Cash Everyday"),
    ("Discover", "Discover it Cash Back"),
    ("Capital One", "Capital One Quicksilver"),
]
SIDE_INCOME = ["Freelance invoice", "Etsy shop payout", "Tax refund", "Tutoring", "eBay sale"]
MEMOS = {
    "Groceries": ["Weekly shop", "", "", "Party snacks"],
    "Dining out": ["", "Birthday dinner", "Lunch with team", ""],
    "Gifts": ["Birthday present", "", "Wedding gift"],
}


def _cents(rng: Random, lo: float, hi: float) -> Decimal:
    """A random amount between ``lo`` and ``hi``, to the cent."""
    return Decimal(rng.randint(round(lo * 100), round(hi * 100))).scaleb(-2)


def _whole(value: float, step: int = 10) -> Decimal:
    """``value`` rounded up to a multiple of ``step`` whole units."""
    return Decimal(max(step, math.ceil(value / step) * step)).quantize(Decimal("0.01"))


@dataclass
class _Cat:
    id: str
    name: str
    group: str
    limit: Decimal | None
    enforcement: str
    opening: Decimal
    target: Decimal
    """What is assigned to it each month (0: nothing)."""
    spending: Spending | None = None
    archived: bool = False
    funded_until: dt.date | None = None


@dataclass
class _Acc:
    id: str
    name: str
    kind: str
    institution: str
    opening: Decimal
    credit_limit: Decimal | None = None
    closed: bool = False


@dataclass
class _Rec:
    payee: str
    account: str
    category: str
    amount: Decimal
    frequency: str
    start: dt.date
    end: dt.date | None = None
    status: str = "active"
    posted_until: dt.date | None = None
    """Occurrences on or before this day are posted (a few days late for some bills)."""
    next_date: dt.date | None = None
    created_on: dt.date | None = None


@dataclass
class _Book:
    """Running balances and month totals; every posting obeys the tools' rules or is declined."""

    accounts: dict[str, _Acc]
    cats: dict[str, _Cat]
    balance: dict[str, Decimal] = field(default_factory=dict)
    envelope: dict[str, Decimal] = field(default_factory=dict)
    spent: dict[tuple[str, str], Decimal] = field(default_factory=lambda: defaultdict(Decimal))
    txns: list[dict[str, Any]] = field(default_factory=list)
    moves: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.balance = {a.id: a.opening for a in self.accounts.values()}
        self.envelope = {c.id: c.opening for c in self.cats.values()}

    def can_pay(self, account: str, amount: Decimal) -> bool:
        acc = self.accounts[account]
        floor = -(acc.credit_limit or ZERO) if acc.kind == "credit_card" else ZERO
        return self.balance[account] - amount >= floor

    def expense(
        self,
        day: dt.date,
        account: str,
        category: str,
        amount: Decimal,
        payee: str,
        memo: str = "",
        recurring: int | None = None,
    ) -> bool:
        cat = self.cats[category]
        key = (category, month_key(day))
        blocked = cat.enforcement == "block" and cat.limit is not None
        if blocked and self.spent[key] + amount > (cat.limit or ZERO):
            return False
        if not self.can_pay(account, amount):
            return False
        self.balance[account] -= amount
        self.envelope[category] -= amount
        self.spent[key] += amount
        self._txn(day, "expense", account, None, category, amount, payee, memo, recurring)
        return True

    def income(
        self, day: dt.date, account: str, category: str, amount: Decimal, payee: str, memo: str = ""
    ) -> None:
        self.balance[account] += amount
        self.envelope[category] += amount
        self._txn(day, "income", account, None, category, amount, payee, memo, None)

    def shift(self, day: dt.date, src: str, dst: str, amount: Decimal, payee: str) -> bool:
        """An account transfer (card payment, savings, ATM cash)."""
        if amount <= 0 or not self.can_pay(src, amount):
            return False
        self.balance[src] -= amount
        self.balance[dst] += amount
        self._txn(day, "account_transfer", src, dst, None, amount, payee, "", None)
        return True

    def move(self, day: dt.date, src: str, dst: str, amount: Decimal, memo: str = "") -> Decimal:
        """Move ``amount`` between envelopes, at most the source's balance in whole dollars;
        returns what was moved."""
        amount = min(amount, self.envelope[src].quantize(Decimal(1), rounding=ROUND_FLOOR))
        if amount <= 0:
            return ZERO
        amount = amount.quantize(Decimal("0.01"))
        self.envelope[src] -= amount
        self.envelope[dst] += amount
        self.moves.append(
            {
                "date": day,
                "from_category_id": src,
                "to_category_id": dst,
                "amount": amount,
                "memo": memo,
            }
        )
        return amount

    def _txn(
        self,
        day: dt.date,
        kind: str,
        account: str,
        to_account: str | None,
        category: str | None,
        amount: Decimal,
        payee: str,
        memo: str,
        recurring: int | None,
    ) -> None:
        self.txns.append(
            {
                "date": day,
                "kind": kind,
                "account_id": account,
                "to_account_id": to_account,
                "category_id": category,
                "amount": amount,
                "payee": payee,
                "memo": memo,
                "recurring": recurring,
            }
        )


def sample_budget(ctx: SampleContext) -> None:
    """Fill an empty budget database (see the module docstring for sizes)."""
    rng, fake = ctx.rng, ctx.fake
    today = ctx.now.date()
    months_back = 3 * ctx.size + 1
    start = first_of_month(today, -months_back)
    closed_through = first_of_month(today, -1) - dt.timedelta(days=1)

    accounts = _accounts(rng, ctx.size)
    cats, recs = _categories(rng, fake, ctx.size, accounts, start, today)
    _fund_openings(rng, accounts, cats)
    book = _Book({a.id: a for a in accounts}, {c.id: c for c in cats})
    _replay(rng, fake, book, recs, start, today)

    db = ctx.db
    db.add(
        Settings(
            id=1,
            owner=fake.name(),
            currency="USD",
            history_start=start,
            closed_through=closed_through,
        )
    )
    db.add_all(
        Account(
            id=a.id,
            name=a.name,
            kind=a.kind,
            institution=a.institution,
            opening_balance=a.opening,
            balance=book.balance[a.id],
            credit_limit=a.credit_limit,
            closed=a.closed,
        )
        for a in accounts
    )
    db.add_all(
        Category(
            id=c.id,
            name=c.name,
            group_name=c.group,
            monthly_limit=c.limit,
            enforcement=c.enforcement,
            opening_balance=c.opening,
            balance=book.envelope[c.id],
            archived=c.archived,
        )
        for c in cats
    )
    order = sorted(range(len(recs)), key=lambda i: (recs[i].start, recs[i].payee))
    rec_ids = {index: f"rec_{n + 1:03d}" for n, index in enumerate(order)}
    for index, r in enumerate(recs):
        assert r.next_date is not None and r.created_on is not None
        db.add(
            RecurringExpense(
                id=rec_ids[index],
                payee=r.payee,
                account_id=r.account,
                category_id=r.category,
                amount=r.amount,
                frequency=r.frequency,
                anchor_day=r.start.day,
                start_date=r.start,
                next_date=r.next_date,
                end_date=r.end,
                status=r.status,
                created_on=r.created_on,
            )
        )
    for row in book.txns:
        row["recurring_id"] = rec_ids[row["recurring"]] if row["recurring"] is not None else None
    db.flush()
    _insert_rows(ctx, book)


def _accounts(rng: Random, size: int) -> list[_Acc]:
    bank = rng.choice(BANKS)
    online = rng.choice(ONLINE_BANKS)
    cards = rng.sample(CARDS, 2)
    out = [
        _Acc("", f"{bank} checking", "checking", bank, _cents(rng, 2500, 6000)),
        _Acc("", f"{online} savings", "savings", online, ZERO),  # set by _fund_openings
        _Acc(
            "",
            cards[0][1],
            "credit_card",
            cards[0][0],
            -_cents(rng, 0, 700),
            Decimal(rng.choice([3000, 5000, 7500, 10000])).quantize(Decimal("0.01")),
        ),
        _Acc("", "Cash wallet", "cash", "Cash", _cents(rng, 60, 220)),
    ]
    if size > 1 or rng.random() < 0.5:
        out.append(
            _Acc(
                "",
                cards[1][1],
                "credit_card",
                cards[1][0],
                -_cents(rng, 0, 300),
                Decimal(rng.choice([1500, 2500, 4000])).quantize(Decimal("0.01")),
            )
        )
    if rng.random() < 0.7:
        old = rng.choice([b for b in BANKS if b != bank])
        out.append(_Acc("", f"Old {old} checking", "checking", old, ZERO, closed=True))
    for i, a in enumerate(out):
        a.id = f"acc_{i + 1:02d}"
    return out


def _categories(
    rng: Random,
    fake: Any,
    size: int,
    accounts: list[_Acc],
    start: dt.date,
    today: dt.date,
) -> tuple[list[_Cat], list[_Rec]]:
    """The categories (Ready to Assign first, then by group) and the recurring expenses."""
    checking, card = accounts[0].id, accounts[2].id
    cats: list[_Cat] = [
        _Cat(READY_TO_ASSIGN, "Ready to Assign", "Inflow", None, "warn", ZERO, ZERO)
    ]
    recs: list[_Rec] = []

    def add(name: str, group: str, target: Decimal, **kw: Any) -> _Cat:
        cat = _Cat(f"cat_{len(cats):03d}", name, group, None, "warn", ZERO, target, **kw)
        cats.append(cat)
        return cat

    def recurring(cat: _Cat, payee: str, amount: Decimal, account: str, **kw: Any) -> _Rec:
        frequency = kw.pop("frequency", "monthly")
        if frequency == "weekly":
            began = start - dt.timedelta(days=rng.randint(7, 90))
        else:
            anchor = kw.pop("day", rng.randint(2, 28))
            began = on_day(first_of_month(start, -rng.randint(2, 30)), anchor)
        rec = _Rec(payee, account, cat.id, amount, frequency, began, **kw)
        recs.append(rec)
        return rec

    # Bills: rent and the fixed ones are recurring expenses; the variable ones are billed monthly.
    rent = add("Rent", "Bills", ZERO)
    landlord = f"{fake.last_name()} Property Management"
    recurring(rent, landlord, _whole(rng.uniform(1250, 2600), 25), checking, day=1)
    for name, _, _, _ in VARIABLE_BILLS:
        if name == "Electricity" or size > 1 or rng.random() < 0.6:
            add(name, "Bills", ZERO)
    for name, payees, lo, hi in FIXED_BILLS:
        if name != "Fitness" or size > 1 or rng.random() < 0.6:
            cat = add(name, "Bills", ZERO)
            pay_from = rng.choice([checking, card])
            recurring(cat, rng.choice(payees), _cents(rng, lo, hi), pay_from)
    subs = add("Subscriptions", "Bills", ZERO)
    for payee, price in rng.sample(STREAMING, min(len(STREAMING), rng.randint(3, 5) + size - 1)):
        recurring(subs, payee, Decimal(price), card)
    prime_start = on_day(first_of_month(today, rng.randint(-11, -1)), rng.randint(1, 28))
    recs.append(_Rec("Amazon Prime", card, subs.id, Decimal("139.00"), "yearly", prime_start))

    spending = EVERYDAY[:6] + rng.sample(EVERYDAY[6:], min(2, size))
    spending += LIFESTYLE[:2] + rng.sample(LIFESTYLE[2:], min(4, 1 + size))
    for s in spending:
        add(s.name, s.group, ZERO, spending=s)
    for name in rng.sample(GOALS, min(len(GOALS), 2 + size)):
        add(name, "Savings goals", _whole(rng.uniform(50, 400), 25))
    groceries = next(c for c in cats if c.name == "Groceries")
    if rng.random() < 0.5:
        recurring(
            groceries,
            "Farmers market CSA box",
            Decimal(rng.choice(["32.00", "38.50", "45.00"])),
            card,
            frequency="weekly",
        )

    # Archived: an old gym membership whose recurring expense ended, and maybe a past goal.
    gym = add("Old gym membership", "Bills", ZERO, archived=True)
    gym_end = start + dt.timedelta(days=rng.randint(20, 60))
    gym.funded_until = gym_end
    recurring(gym, "24 Hour Fitness", Decimal("39.99"), card, end=gym_end, status="ended")
    for name in rng.sample(ARCHIVED[:2], rng.randint(1, min(2, size))):
        add(name, "Savings goals", ZERO, archived=True)

    # A cancelled streaming service and a yearly bill that starts later this year.
    if rng.random() < 0.8:
        dropped = recurring(subs, "Paramount+", Decimal("7.99"), card)
        dropped.status = "cancelled"
        dropped.end = None
        dropped.posted_until = start + dt.timedelta(days=rng.randint(30, 80))
    dmv = next((c for c in cats if c.name == "Transportation"), None)
    if dmv is not None:
        later = on_day(first_of_month(today, rng.randint(1, 8)), rng.randint(1, 28))
        recs.append(
            _Rec("State DMV registration", checking, dmv.id, Decimal("186.00"), "yearly", later)
        )

    _set_limits(rng, cats, recs)
    return cats, recs


def _monthly_cost(rec: _Rec) -> Decimal:
    per_month = {"weekly": Decimal("4.35"), "monthly": Decimal(1), "yearly": Decimal(0)}
    return rec.amount * per_month[rec.frequency]


def _set_limits(rng: Random, cats: list[_Cat], recs: list[_Rec]) -> None:
    """Limits a little above what each category usually costs; targets follow the limits."""
    for cat in cats:
        if cat.group == "Inflow" or cat.group == "Savings goals":
            continue
        fixed = sum((_monthly_cost(r) for r in recs if r.category == cat.id), ZERO)
        if cat.spending is not None:
            s = cat.spending
            usual = s.visits * (s.lo + s.hi) / 2 * rng.uniform(0.95, 1.35)
            cat.limit = _whole(float(fixed) + usual, 10)
            if rng.random() < s.block_p and fixed == 0:
                cat.enforcement = "block"
        elif cat.name in ("Electricity", "Water & trash"):
            cat.limit = _whole(rng.uniform(150, 220) if cat.name == "Electricity" else 80, 10)
        else:
            cat.limit = _whole(float(fixed) * rng.uniform(1.0, 1.15) + 5, 5)
        cat.target = cat.limit
    # Savings goals have no spending cap; one may have a cap so it is not raided.
    goals = [c for c in cats if c.group == "Savings goals" and not c.archived]
    if goals and rng.random() < 0.5:
        capped = rng.choice(goals)
        capped.limit = _whole(rng.uniform(100, 300), 50)
        capped.enforcement = "block"


def _fund_openings(rng: Random, accounts: list[_Acc], cats: list[_Cat]) -> None:
    """Opening balances: envelopes hold exactly what the accounts hold at the start."""
    for cat in cats[1:]:
        if cat.group == "Savings goals":
            cat.opening = _cents(rng, 200, 4000) if not cat.archived else _cents(rng, 0, 250)
        elif not cat.archived:
            cat.opening = _cents(rng, 0, 40)
    goals = sum((c.opening for c in cats if c.group == "Savings goals"), ZERO)
    accounts[1].opening = goals + _cents(rng, 500, 3000)
    held = sum((a.opening for a in accounts), ZERO)
    cats[0].opening = held - sum((c.opening for c in cats[1:]), ZERO)
    assert cats[0].opening > 0, "checking covers the card debt and the small leftovers"


def _replay(
    rng: Random, fake: Any, book: _Book, recs: list[_Rec], start: dt.date, today: dt.date
) -> None:
    """Post the history day by day (see the module docstring)."""
    cats = list(book.cats.values())
    accounts = list(book.accounts.values())
    checking, savings, card, cash = (a.id for a in accounts[:4])
    cards = [a.id for a in accounts if a.kind == "credit_card" and not a.closed]
    spend_cats = [c for c in cats if c.spending is not None]
    employer = fake.company()
    goals = [c.id for c in cats if c.group == "Savings goals" and not c.archived]
    goals.sort(key=lambda c: book.cats[c].limit is not None)  # uncapped goals take surpluses
    buffer = _cents(rng, 150, 600)
    cushion = Decimal(rng.choice([1500, 2000, 2500, 3000]))
    paycheck = _paycheck(rng, cats)
    locals_ = [f"{fake.last_name()}'s Kitchen", f"{fake.city()} Taqueria"]
    bill_days: dict[str, tuple[int, str, float, float]] = {}
    for cat in cats:
        for bill, billers, low, high in VARIABLE_BILLS:
            if cat.name == bill:
                bill_days[cat.id] = (rng.randint(6, 24), rng.choice(billers), low, high)
    # Recurring bills: most active ones are posted on the day they fall due; a few of the
    # latest occurrences (within the last 20 days) are still waiting, so they are due today.
    late = 0
    for r in recs:
        r.created_on = r.start - dt.timedelta(days=rng.randint(0, 10))
        if r.status == "active":
            r.posted_until = today
            last = _last_occurrence(r, today)
            if last is not None and (today - last).days <= 20 and (late < 2 or rng.random() < 0.3):
                r.posted_until = last - dt.timedelta(days=1)
                late += 1
        elif r.status == "ended":
            r.posted_until = r.end
        if r.start > today:
            r.created_on = today - dt.timedelta(days=rng.randint(1, 20))
    occurrences: dict[dt.date, list[int]] = defaultdict(list)
    for index, r in enumerate(recs):
        day = r.start
        limit = r.posted_until or today
        while day <= limit:
            if day >= start:
                occurrences[day].append(index)
            day = next_occurrence(day, r.frequency, r.start.day)
        r.next_date = day

    day = start
    while day <= today:
        if day.day in (1, 15):
            book.income(day, checking, READY_TO_ASSIGN, paycheck, f"{employer} payroll")
            _assign(book, day, cats, first_half=day.day == 1)
        if day.day == 15 and goals:
            surplus = book.envelope[READY_TO_ASSIGN] - buffer
            if surplus > 50:
                share = surplus * rng.randint(60, 100) / 100
                book.move(day, READY_TO_ASSIGN, goals[0], share, memo="Extra savings")
        if rng.random() < 0.4 / 30:
            side = rng.choice(SIDE_INCOME)
            book.income(day, checking, READY_TO_ASSIGN, _cents(rng, 120, 1400), side)
        for index in occurrences.get(day, []):
            r = recs[index]
            book.expense(day, r.account, r.category, r.amount, r.payee, recurring=index)
        for cat_id, (bill_day, biller, lo, hi) in bill_days.items():
            if day.day == bill_day:
                book.expense(day, checking, cat_id, _cents(rng, lo, hi), biller)
        for cat in spend_cats:
            s = cat.spending
            assert s is not None
            if rng.random() >= s.visits / 30.4:
                continue
            amount = _cents(rng, s.lo, s.hi)
            payees = s.payees + tuple(locals_) if s.name == "Dining out" else s.payees
            payee = rng.choice(payees)
            memo = rng.choice(MEMOS.get(s.name, [""]))
            roll = rng.random()
            if amount <= 40 and roll < 0.25:
                order = [cash, card]
            elif roll < 0.65:
                order = [rng.choice(cards), checking]
            else:
                order = [checking, card]
            for account in order:
                if book.can_pay(account, amount):
                    book.expense(day, account, cat.id, amount, payee, memo)
                    break
        if rng.random() < 0.04 and day < today:
            gift_cat = rng.choice([c for c in spend_cats if c.group == "Lifestyle"])
            who = fake.first_name()
            book.income(day, checking, gift_cat.id, _cents(rng, 20, 150), f"Venmo from {who}")
        if day.day == 16 and book.balance[checking] > cushion + 100:
            spare = Decimal(int(book.balance[checking] - cushion) // 50 * 50)
            book.shift(day, checking, savings, spare.quantize(Decimal("0.01")), "Savings deposit")
        if day.day == 21:
            for card_id in cards:
                owed = -book.balance[card_id]
                left = book.balance[checking] - Decimal(300)
                name = book.accounts[card_id].name
                book.shift(day, checking, card_id, min(owed, left), f"{name} payment")
        if book.balance[cash] < 40 and rng.random() < 0.3:
            book.shift(day, checking, cash, Decimal(rng.choice([100, 140, 200])), "ATM withdrawal")
        if day.day == 25:
            _cover_overspending(rng, book, day, cats)
        if day == _last_day(day) and book.balance[savings] > 0:
            interest = (book.balance[savings] * Decimal("0.041") / 12).quantize(Decimal("0.01"))
            book.income(day, savings, READY_TO_ASSIGN, interest, "Interest earned")
        day += dt.timedelta(days=1)


def _last_occurrence(rec: _Rec, today: dt.date) -> dt.date | None:
    """The latest occurrence of ``rec`` on or before ``today`` (``None`` if it starts later)."""
    last, day = None, rec.start
    while day <= today:
        last, day = day, next_occurrence(day, rec.frequency, rec.start.day)
    return last


def _last_day(day: dt.date) -> dt.date:
    return first_of_month(day, 1) - dt.timedelta(days=1)


def _paycheck(rng: Random, cats: list[_Cat]) -> Decimal:
    """Half of what the month's targets need, plus a margin, in whole 50s."""
    need = sum((c.target for c in cats if not c.archived), ZERO)
    return _whole(float(need) * rng.uniform(1.04, 1.18) / 2, 50)


def _assign(book: _Book, day: dt.date, cats: list[_Cat], *, first_half: bool) -> None:
    """Give the paycheck in Ready to Assign a job, refilling envelopes up to their targets:
    bills and half of everyday spending on the 1st, the rest of everyday spending, lifestyle,
    and the savings goals' monthly contributions on the 15th."""
    for cat in cats[1:]:
        if cat.target <= 0 or (cat.archived and (cat.funded_until or day) < day):
            continue
        if cat.group == "Savings goals":
            share = ZERO if first_half else cat.target
        elif cat.group == "Bills":
            share = cat.target - book.envelope[cat.id] if first_half else ZERO
        elif cat.group == "Everyday":
            goal = (cat.target / 2).quantize(Decimal(1)) if first_half else cat.target
            share = goal - book.envelope[cat.id]
        else:
            share = ZERO if first_half else cat.target - book.envelope[cat.id]
        if share >= 1:
            book.move(
                day, READY_TO_ASSIGN, cat.id, share.quantize(Decimal(1), rounding=ROUND_FLOOR)
            )


def _cover_overspending(rng: Random, book: _Book, day: dt.date, cats: list[_Cat]) -> None:
    """Some months the owner covers an overspent envelope from Ready to Assign or a goal."""
    sources = [READY_TO_ASSIGN] + [c.id for c in cats if c.group == "Savings goals"]
    for cat in cats[1:]:
        if cat.archived or book.envelope[cat.id] >= 0 or rng.random() < 0.5:
            continue
        need = Decimal(math.ceil(-book.envelope[cat.id]))
        src = rng.choice(sources)
        book.move(day, src, cat.id, need, memo="Cover overspending")


def _insert_rows(ctx: SampleContext, book: _Book) -> None:
    """Chronological ids, bulk inserts, then the stored totals summed from the rows."""
    txn_rows = []
    for n, row in enumerate(book.txns):  # replayed in date order
        txn_rows.append(
            {
                "id": f"txn_{n + 1:05d}",
                "date": row["date"],
                "kind": row["kind"],
                "account_id": row["account_id"],
                "to_account_id": row["to_account_id"],
                "category_id": row["category_id"],
                "amount": row["amount"],
                "payee": row["payee"],
                "memo": row["memo"],
                "recurring_id": row.get("recurring_id"),
            }
        )
    move_rows = [{"id": f"trf_{n + 1:04d}", **m} for n, m in enumerate(book.moves)]
    spent: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    assigned: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    touched: dict[tuple[str, str], None] = {}
    income: dict[str, Decimal] = defaultdict(Decimal)
    outgo: dict[str, Decimal] = defaultdict(Decimal)
    for t in txn_rows:
        m = month_key(t["date"])
        if t["kind"] == "expense":
            spent[t["category_id"], m] += t["amount"]
            outgo[m] += t["amount"]
            touched[t["category_id"], m] = None
        elif t["kind"] == "income":
            assigned[t["category_id"], m] += t["amount"]
            income[m] += t["amount"]
            touched[t["category_id"], m] = None
    for mv in move_rows:
        m = month_key(mv["date"])
        assigned[mv["from_category_id"], m] -= mv["amount"]
        assigned[mv["to_category_id"], m] += mv["amount"]
        touched[mv["from_category_id"], m] = None
        touched[mv["to_category_id"], m] = None
    cm_rows = [
        {"category_id": c, "month": m, "spent": spent[c, m], "assigned": assigned[c, m]}
        for c, m in sorted(touched)
    ]
    month_rows = [
        {"month": m, "income": income[m], "spent": outgo[m]}
        for m in sorted(set(income) | set(outgo))
    ]
    # Off the ORM (its bulk path splits batches wherever a None appears).
    for model, rows in (
        (Transaction, txn_rows),
        (EnvelopeTransfer, move_rows),
        (CategoryMonth, cm_rows),
        (Month, month_rows),
    ):
        ctx.insert(rows, into=model)
