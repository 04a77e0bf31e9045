"""A realistic small sales team's CRM: size 1 gives 10 sales reps (one has left), 40 accounts
with about 150 contacts, about 90 deals across the pipeline (each with its stage history),
80 leads (a sixth of them already converted), about 300 activities and 200 notes; size n
gives n times as many of everything.

Deals move forward one stage at a time and about four in ten are closed (won or lost); open
deals from "proposal" on always have an amount, earlier ones often not yet. Some leads
work at companies that are already accounts, and a few are people who are already contacts,
so converting them links instead of creating. Activities are done in the past and open
(some overdue) in the next weeks; closed deals and converted leads only keep completed ones.
Every state obeys the rules in ``models.py``.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal
from random import Random

from faker import Faker

from prove_gym.server import SampleContext

from .models import (
    INDUSTRIES,
    LEAD_SOURCES,
    NEEDS_AMOUNT,
    OPEN_STAGES,
    PROBABILITY,
    Account,
    Activity,
    Contact,
    Deal,
    DealStageChange,
    Lead,
    Note,
    Owner,
    Settings,
)

REGIONS = ["North America East", "North America West", "EMEA", "APAC", "LATAM"]
REP_TITLES = ["Account Executive", "Senior Account Executive", "Sales Development Rep"]
CONTACT_TITLES = [
    "CEO",
    "CFO",
    "CTO",
    "VP of Sales",
    "VP of Engineering",
    "Head of Procurement",
    "IT Director",
    "Operations Manager",
    "Finance Manager",
    "Product Manager",
    "Office Manager",
    "Purchasing Lead",
]
PRODUCTS = [
    "Platform licence",
    "Analytics add-on",
    "Support renewal",
    "Onboarding package",
    "Enterprise upgrade",
    "Data migration",
    "Team seats expansion",
    "Security suite",
]
LOST_REASONS = [
    "Chose a competitor",
    "No budget this year",
    "Project cancelled",
    "Went silent after the demo",
    "Price too high",
]
CALL_SUBJECTS = [
    "Discovery call with {name}",
    "Follow-up call about pricing",
    "Check in with {name} on the rollout",
    "Call {name} about the renewal",
]
MEETING_SUBJECTS = [
    "Product demo for {company}",
    "Quarterly business review",
    "On-site workshop at {company}",
    "Contract review meeting",
]
TASK_SUBJECTS = [
    "Send the proposal to {name}",
    "Prepare the quote for {company}",
    "Update the mutual action plan",
    "Share case studies with {name}",
    "Send the security questionnaire",
]
NOTE_BODIES = [
    "{name} mentioned the budget is approved for next quarter.",
    "Competitor pricing came up; they are talking to two other vendors.",
    "Decision maker is the CFO; {name} is the champion.",
    "Asked for a reference customer in {industry}.",
    "Legal review is expected to take about two weeks.",
    "Interested in the analytics add-on after the demo.",
    "Renewal is due in the spring; usage is growing.",
    "Prefers email over phone calls.",
]
OUTCOMES = [
    "Left a voicemail.",
    "Good conversation, next step agreed.",
    "Sent the follow-up email.",
    "Done.",
]


# Rows are built as plain objects (attributes named as the columns) and inserted a table at
# a time, in the order the ORM's flushes wrote them: a mapped object costs the ORM ~30 µs to
# build and a flush more to write. ``eq=False``: compared by identity, as mapped objects are.
@dataclass(slots=True, eq=False)
class _Owner:
    id: str
    name: str
    email: str
    title: str
    region: str
    active: bool


@dataclass(slots=True, eq=False)
class _Account:
    id: str
    name: str
    industry: str
    website: str
    city: str
    employees: int
    owner_id: str
    created_at: dt.datetime


@dataclass(slots=True, eq=False)
class _Contact:
    id: str
    account_id: str
    first_name: str
    last_name: str
    email: str
    phone: str
    title: str
    owner_id: str
    created_at: dt.datetime


@dataclass(slots=True, eq=False)
class _Deal:
    id: str
    name: str
    account_id: str
    contact_id: str
    owner_id: str
    stage: str
    probability: int
    amount: Decimal | None
    close_date: dt.date
    lost_reason: str | None
    created_at: dt.datetime
    closed_at: dt.datetime | None


@dataclass(slots=True, eq=False)
class _StageChange:
    id: str
    deal_id: str
    from_stage: str | None
    to_stage: str
    owner_id: str
    at: dt.datetime


@dataclass(slots=True, eq=False)
class _Lead:
    id: str
    first_name: str
    last_name: str
    email: str
    company: str
    title: str
    source: str
    status: str
    owner_id: str
    created_at: dt.datetime
    converted_at: dt.datetime | None = None
    converted_account_id: str | None = None
    converted_contact_id: str | None = None
    converted_deal_id: str | None = None


@dataclass(slots=True, eq=False)
class _Activity:
    id: str
    kind: str
    subject: str
    record_type: str
    record_id: str
    owner_id: str
    due_date: dt.date
    completed: bool
    completed_at: dt.datetime | None
    outcome: str
    created_at: dt.datetime


@dataclass(slots=True, eq=False)
class _Note:
    id: str
    record_type: str
    record_id: str
    author_id: str
    body: str
    created_at: dt.datetime


def sample_crm(ctx: SampleContext) -> None:
    """Fill an empty CRM database (see the module docstring for sizes)."""
    _Book(ctx).build()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower().split(" ")[0].split(",")[0]) or "company"


class _Book:
    def __init__(self, ctx: SampleContext) -> None:
        self.ctx = ctx
        self.rng: Random = ctx.rng
        self.fake: Faker = ctx.fake
        self.now = ctx.now.replace(second=0, microsecond=0)
        self.today = self.now.date()
        self.n = ctx.size
        self.owners: list[_Owner] = []
        self.owner_by_id: dict[str, _Owner] = {}
        self.accounts: list[_Account] = []
        self.contacts: dict[str, list[_Contact]] = {}
        self.deals: list[_Deal] = []
        self.changes: list[_StageChange] = []
        self.leads: list[_Lead] = []
        self.activities: list[_Activity] = []
        self.notes: list[_Note] = []
        self.emails: set[str] = set()
        self.counters: dict[str, int] = {}

    def next(self, prefix: str, width: int) -> str:
        n = self.counters.get(prefix, 0) + 1
        self.counters[prefix] = n
        return f"{prefix}_{n:0{width}d}"

    def past(self, lo_days: int, hi_days: int) -> dt.datetime:
        minutes = self.rng.randint(lo_days * 1440, hi_days * 1440)
        return (self.now - dt.timedelta(minutes=minutes)).replace(second=0)

    def email(self, first: str, last: str, domain: str) -> str:
        base = f"{re.sub(r'[^a-z]', '', first.lower())}.{re.sub(r'[^a-z]', '', last.lower())}"
        candidate = f"{base}@{domain}"
        k = 2
        while candidate in self.emails:
            candidate = f"{base}{k}@{domain}"
            k += 1
        self.emails.add(candidate)
        return candidate

    def build(self) -> None:
        self.make_owners()
        self.make_accounts()
        self.make_deals()
        self.make_leads()
        self.make_activities_and_notes()
        insert = self.ctx.insert
        insert(self.owners, into=Owner)
        acting = self.owners[0].id
        insert([{"id": 1, "company": "Brightwave Software", "acting_owner_id": acting}], Settings)
        insert(self.accounts, into=Account)
        insert([c for acc in self.accounts for c in self.contacts[acc.id]], into=Contact)
        insert(self.deals, into=Deal)
        insert(self.activities, into=Activity)
        insert(self.changes, into=DealStageChange)
        insert(self.leads, into=Lead)
        insert(self.notes, into=Note)

    # ------------------------------------------------------------- owners
    def make_owners(self) -> None:
        names: set[str] = set()
        for i in range(10 * self.n):
            name = self.fake.name()
            while name in names or len(name.split()) != 2:
                name = self.fake.name()
            names.add(name)
            first, last = name.split()
            title = "Sales Manager" if i == 1 else self.rng.choice(REP_TITLES)
            self.owners.append(
                _Owner(
                    id=self.next("own", 2),
                    name=name,
                    email=self.email(first, last, "brightwave.io"),
                    title=title,
                    region=REGIONS[i % len(REGIONS)],
                    active=i != 9,  # one rep has left the company
                )
            )
            self.owner_by_id[self.owners[-1].id] = self.owners[-1]

    def active_owner(self) -> _Owner:
        return self.rng.choice([o for o in self.owners if o.active])

    # ----------------------------------------------------------- accounts
    def make_accounts(self) -> None:
        names: set[str] = set()
        for _ in range(40 * self.n):
            name = self.fake.company()
            while name.lower() in names:
                name = self.fake.company()
            names.add(name.lower())
            domain = f"{_slug(name)}.com"
            owner = self.active_owner() if self.rng.random() < 0.93 else self.owners[9]
            acc = _Account(
                id=self.next("acc", 3),
                name=name,
                industry=self.rng.choice(INDUSTRIES[:-1]),
                website=f"https://www.{domain}",
                city=self.fake.city(),
                employees=self.rng.choice([12, 25, 40, 80, 150, 300, 650, 1200, 4000]),
                owner_id=owner.id,
                created_at=self.past(200, 900),
            )
            self.accounts.append(acc)
            people = []
            for _ in range(self.rng.randint(2, 6)):
                first, last = self.fake.first_name(), self.fake.last_name()
                people.append(
                    _Contact(
                        id="",
                        account_id=acc.id,
                        first_name=first,
                        last_name=last,
                        email=self.email(first, last, domain),
                        phone=self.fake.numerify("+1-###-###-####"),
                        title=self.rng.choice(CONTACT_TITLES),
                        owner_id=acc.owner_id,
                        created_at=acc.created_at + dt.timedelta(days=self.rng.randint(0, 150)),
                    )
                )
            self.contacts[acc.id] = people
        # contact ids in account order, so they read naturally
        for acc in self.accounts:
            for c in self.contacts[acc.id]:
                c.id = self.next("con", 4)

    # -------------------------------------------------------------- deals
    def make_deals(self) -> None:
        weights = {
            "prospecting": 15,
            "qualification": 15,
            "proposal": 15,
            "negotiation": 12,
            "closed_won": 25,
            "closed_lost": 18,
        }
        stages, w = list(weights), list(weights.values())
        for acc in self.accounts:
            for _ in range(self.rng.choice([1, 2, 2, 3, 3])):
                stage = self.rng.choices(stages, w)[0]
                contact = self.rng.choice(self.contacts[acc.id])
                created = self.past(20, 320)
                owner_id = acc.owner_id if self.rng.random() < 0.8 else self.active_owner().id
                closed = stage in ("closed_won", "closed_lost")
                if not closed and not self.owner_by_id[owner_id].active:
                    owner_id = self.active_owner().id
                amount: Decimal | None = Decimal(self.rng.randint(10, 500) * 500)
                if stage not in NEEDS_AMOUNT and stage != "closed_lost":
                    amount = amount if self.rng.random() < 0.5 else None
                deal = _Deal(
                    id=self.next("deal", 4),
                    name=f"{acc.name} - {self.rng.choice(PRODUCTS)}",
                    account_id=acc.id,
                    contact_id=contact.id,
                    owner_id=owner_id,
                    stage=stage,
                    probability=PROBABILITY[stage],
                    amount=amount,
                    close_date=self.today,
                    lost_reason=None,
                    created_at=created,
                    closed_at=None,
                )
                # the path: created in prospecting, forward one stage at a time
                if stage == "closed_lost":
                    last_open = self.rng.choice(OPEN_STAGES)
                    path = [*OPEN_STAGES[: OPEN_STAGES.index(last_open) + 1], "closed_lost"]
                    deal.lost_reason = self.rng.choice(LOST_REASONS)
                elif stage == "closed_won":
                    path = [*OPEN_STAGES, "closed_won"]
                else:
                    path = list(OPEN_STAGES[: OPEN_STAGES.index(stage) + 1])
                span = (self.now - created).total_seconds()
                cuts = sorted(self.rng.random() for _ in range(len(path) - 1))
                times = [created] + [
                    (created + dt.timedelta(seconds=span * c)).replace(second=0, microsecond=0)
                    for c in cuts
                ]
                for k, (to, at) in enumerate(zip(path, times, strict=True)):
                    self.changes.append(
                        _StageChange(
                            id="",
                            deal_id=deal.id,
                            from_stage=path[k - 1] if k else None,
                            to_stage=to,
                            owner_id=owner_id,
                            at=at,
                        )
                    )
                if stage in ("closed_won", "closed_lost"):
                    deal.closed_at = times[-1]
                    deal.close_date = times[-1].date()
                else:
                    deal.close_date = self.today + dt.timedelta(days=self.rng.randint(-10, 120))
                self.deals.append(deal)
        for change in self.changes:
            change.id = self.next("stg", 5)

    # -------------------------------------------------------------- leads
    def make_leads(self) -> None:
        statuses = ["new", "working", "qualified", "unqualified", "converted"]
        weights = [28, 25, 22, 10, 15]
        deals_by_contact: dict[str, list[_Deal]] = {}
        for d in self.deals:
            deals_by_contact.setdefault(d.contact_id, []).append(d)
        used_contacts: set[str] = set()
        for _ in range(80 * self.n):
            status = self.rng.choices(statuses, weights)[0]
            created = self.past(3, 400)
            owner = self.active_owner()
            source = self.rng.choice(LEAD_SOURCES)
            if status == "converted" or self.rng.random() < 0.06:
                # a person who is (or became) a contact
                acc = self.rng.choice(self.accounts)
                free = [c for c in self.contacts[acc.id] if c.id not in used_contacts]
                if not free:
                    continue
                c = self.rng.choice(free)
                used_contacts.add(c.id)
                lead = _Lead(
                    id="",
                    first_name=c.first_name,
                    last_name=c.last_name,
                    email=c.email,
                    company=acc.name,
                    title=c.title,
                    source=source,
                    status=status,
                    owner_id=owner.id,
                    created_at=min(created, c.created_at - dt.timedelta(days=1)),
                )
                if status == "converted":
                    lead.converted_at = c.created_at
                    lead.converted_account_id = acc.id
                    lead.converted_contact_id = c.id
                    mine = deals_by_contact.get(c.id, [])
                    if mine and self.rng.random() < 0.6:
                        lead.converted_deal_id = mine[0].id
                self.leads.append(lead)
                continue
            if self.rng.random() < 0.12:
                company = self.rng.choice(self.accounts).name  # works at a known account
            else:
                company = self.fake.company()
            first, last = self.fake.first_name(), self.fake.last_name()
            self.leads.append(
                _Lead(
                    id="",
                    first_name=first,
                    last_name=last,
                    email=self.email(first, last, f"{_slug(company)}.com"),
                    company=company,
                    title=self.rng.choice(CONTACT_TITLES),
                    source=source,
                    status=status,
                    owner_id=owner.id,
                    created_at=created,
                )
            )
        self.leads.sort(key=lambda lead: (lead.created_at, lead.email))
        for lead in self.leads:
            lead.id = self.next("lead", 4)

    # ------------------------------------------------- activities, notes
    def make_activities_and_notes(self) -> None:
        targets: list[tuple[str, str, str, str, str, bool]] = []
        # (record_type, record_id, person, company, owner_id, open work allowed)
        for acc in self.accounts:
            person = self.contacts[acc.id][0].first_name
            targets.append(("account", acc.id, person, acc.name, acc.owner_id, True))
            for c in self.contacts[acc.id]:
                if self.rng.random() < 0.3:
                    targets.append(("contact", c.id, c.first_name, acc.name, c.owner_id, True))
        account_by_id = {a.id: a for a in self.accounts}
        for d in self.deals:
            acc = account_by_id[d.account_id]
            contact = next(c for c in self.contacts[acc.id] if c.id == d.contact_id)
            open_deal = d.closed_at is None
            targets.append(("deal", d.id, contact.first_name, acc.name, d.owner_id, open_deal))
            if open_deal:
                targets.append(("deal", d.id, contact.first_name, acc.name, d.owner_id, True))
        for lead in self.leads:
            if self.rng.random() < 0.6:
                targets.append(
                    (
                        "lead",
                        lead.id,
                        lead.first_name,
                        lead.company,
                        lead.owner_id,
                        lead.status != "converted",
                    )
                )
        industries = {a.id: a.industry for a in self.accounts}
        activities = self.activities
        notes = self.notes
        for rtype, rid, person, company, owner_id, open_ok in targets:
            if not self.owner_by_id[owner_id].active:
                owner_id = self.owners[0].id
            for _ in range(self.rng.randint(0, 2) + (1 if rtype == "deal" else 0)):
                kind = self.rng.choice(["call", "call", "meeting", "task", "task"])
                pattern = self.rng.choice(
                    {"call": CALL_SUBJECTS, "meeting": MEETING_SUBJECTS, "task": TASK_SUBJECTS}[
                        kind
                    ]
                )
                done = not open_ok or self.rng.random() < 0.55
                created = self.past(15, 120)
                if done:
                    due = (created + dt.timedelta(days=self.rng.randint(0, 10))).date()
                    due = min(due, self.today)
                    completed_at: dt.datetime | None = dt.datetime.combine(
                        due, dt.time(self.rng.randint(8, 17), self.rng.choice([0, 15, 30, 45]))
                    )
                    if completed_at is not None and completed_at > self.now:
                        completed_at = self.now
                    outcome = self.rng.choice(OUTCOMES)
                else:
                    due = self.today + dt.timedelta(days=self.rng.randint(-6, 21))
                    completed_at, outcome = None, ""
                activities.append(
                    _Activity(
                        id="",
                        kind=kind,
                        subject=pattern.format(name=person, company=company),
                        record_type=rtype,
                        record_id=rid,
                        owner_id=owner_id,
                        due_date=due,
                        completed=done,
                        completed_at=completed_at,
                        outcome=outcome,
                        created_at=created,
                    )
                )
            if self.rng.random() < 0.55:
                notes.append(
                    _Note(
                        id="",
                        record_type=rtype,
                        record_id=rid,
                        author_id=owner_id,
                        body=self.rng.choice(NOTE_BODIES).format(
                            name=person, industry=industries.get(rid, "their industry")
                        ),
                        created_at=self.past(1, 200),
                    )
                )
        activities.sort(key=lambda a: (a.created_at, a.record_id, a.subject))
        for a in activities:
            a.id = self.next("act", 5)
        notes.sort(key=lambda n: (n.created_at, n.record_id, n.body))
        for n in notes:
            n.id = self.next("note", 5)
