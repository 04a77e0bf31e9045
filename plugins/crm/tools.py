"""The CRM's 16 tools. Docstrings are what the model reads: keep examples concrete.

Business rules have names (``stage_move``, ``amount_required``, ``contact_account``, ...);
a tool that refuses an action raises ``PreconditionFailed`` (``Conflict`` when the thing
already exists or is already done) with a message that starts with ``Rule '<name>' failed:``,
says what stood in the way and what to do instead. A refused call changes nothing: every
check runs before the first change.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import bindparam, case, exists, func, select

from prove_gym.server import (
    Bound,
    Conflict,
    Entity,
    InvalidArgument,
    NotFound,
    PreconditionFailed,
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
    CLOSED_STAGES,
    NEEDS_AMOUNT,
    OPEN_STAGES,
    PROBABILITY,
    RECORD_TYPES,
    STAGE_MOVES,
    STAGES,
    Account,
    Activity,
    Base,
    Contact,
    Deal,
    DealStageChange,
    Lead,
    Note,
    Owner,
    Settings,
)
from .sampler import sample_crm

OUT_OF_SCOPE = (
    "Import these leads from the spreadsheet I attached.",
    "Forecast next quarter's revenue with a chart.",
    "Merge the two duplicate Acme accounts into one.",
    "Give Priya permission to edit every deal.",
    "Set up a drip e-mail campaign for new leads.",
    "Record my sales calls automatically.",
    "Which of our competitors is winning the most deals this year?",
    "Add a custom field for contract renewal dates.",
    "Build a dashboard of my team's pipeline.",
    "Enrich this lead with their LinkedIn profile.",
    "Translate the latest note into German.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

server = Server(
    "crm",
    out_of_scope=OUT_OF_SCOPE,
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.0.0",
    base=Base,
    sampler=sample_crm,
    description="A sales team's CRM: accounts (companies) and their contacts, leads and their "
    "conversion into contacts, accounts and deals, a deal pipeline with stage rules, "
    "activities (calls, meetings, tasks with due dates) and notes, and the sales reps who own "
    "them.",
    instructions="CRM conventions: ids look like 'acc_012' (account), 'con_0042' (contact), "
    "'lead_0031' (lead), 'deal_0057' (deal), 'act_00123' (activity), 'own_03' (sales rep). "
    "Every contact belongs to one account, and a deal's contact must belong to the deal's "
    "account. Deals move through prospecting -> qualification -> proposal -> negotiation -> "
    "closed_won, one stage forward at a time (or back to an earlier open stage, or to "
    "closed_lost with a reason from any open stage); closed deals are final; from proposal "
    "on a deal needs an amount; the win probability follows the stage. Only a qualified "
    "lead can be converted, and a converted lead can no longer change. Money is in US "
    "dollars with two decimals, such as 12500.00; dates are ISO dates such as '2026-03-02'. "
    "Refused calls name the rule that failed and change nothing.",
)

# Rows: the core looks the id up before the tool runs (not_found hints: see the entities below).
OwnerRow = Annotated[Record[Owner], Entity("owner")]
AccountRow = Annotated[Record[Account], Entity("account")]
ContactRow = Annotated[Record[Contact], Entity("contact")]
LeadRow = Annotated[Record[Lead], Entity("lead")]
DealRow = Annotated[Record[Deal], Entity("deal")]
ActivityRow = Annotated[Record[Activity], Entity("activity")]
RecordId = Annotated[str, Entity("record"), Field(max_length=40)]
SearchText = Annotated[str, Field(max_length=200)]
Limit = Annotated[int, Field(ge=1, le=100)]
MAX_AMOUNT = Decimal("10000000.00")
Amount = Annotated[Decimal, Field(gt=0, le=MAX_AMOUNT, decimal_places=2)]
Name = Annotated[str, Field(max_length=60)]
Email = Annotated[str, Field(max_length=160, pattern=r"^\s*[^@\s]+@[^@\s]+\.[^@\s]+\s*$")]
DateText = Annotated[str, Field(max_length=40)]

Stage = Literal[
    "prospecting", "qualification", "proposal", "negotiation", "closed_won", "closed_lost"
]
LeadStatus = Literal["new", "working", "qualified", "unqualified"]
LeadSource = Literal["web", "referral", "event", "cold_call", "partner", "webinar"]
Industry = Literal[
    "software",
    "manufacturing",
    "healthcare",
    "finance",
    "retail",
    "education",
    "logistics",
    "energy",
    "other",
]
ActivityKind = Literal["call", "meeting", "task"]

RULES: dict[str, str] = {
    "stage_move": "A deal moves forward one stage at a time (prospecting -> qualification -> "
    "proposal -> negotiation -> closed_won), back to any earlier open stage, or to "
    "closed_lost from any open stage.",
    "deal_closed": "A closed deal (closed_won or closed_lost) is final: its stage cannot "
    "change and it takes no new activities; open a new deal for new business.",
    "amount_required": "From 'proposal' on (proposal, negotiation, closed_won) a deal needs a "
    "positive amount.",
    "lost_reason_required": "Moving a deal to closed_lost needs a reason.",
    "contact_account": "A deal's contact must belong to the deal's account.",
    "lead_converted": "A converted lead cannot be converted, edited or annotated again; work "
    "with the contact, account and deal it became.",
    "lead_not_qualified": "Only a lead with status 'qualified' can be converted.",
    "owner_inactive": "Records can only be given to active sales reps.",
    "duplicate_email": "A contact's email is unique; a person who is already a contact is not "
    "entered again as a lead.",
    "duplicate_account": "Account names are unique.",
    "activity_completed": "A completed activity cannot be completed again.",
    "date_in_past": "Due dates and expected close dates are today or later.",
}

MAX_DAYS_AHEAD = 730
LIST_CAP = 50
ZERO = Decimal("0.00")


# ----------------------------------------------------------------- results
class OwnerOut(TypedDict):
    owner_id: str
    name: str
    email: str
    title: str
    region: str
    active: bool
    is_you: bool


class AccountSummary(TypedDict):
    account_id: str
    name: str
    industry: str
    city: str
    website: str
    employees: int
    owner_id: str
    owner_name: str
    contact_count: int
    open_deal_count: int
    open_pipeline: Decimal
    won_total: Decimal


class AccountSearch(TypedDict):
    total: int
    accounts: list[AccountSummary]


class ContactOut(TypedDict):
    contact_id: str
    account_id: str
    account_name: str
    name: str
    first_name: str
    last_name: str
    email: str
    phone: str
    title: str
    owner_id: str


class ContactSearch(TypedDict):
    total: int
    contacts: list[ContactOut]


class DealSummary(TypedDict):
    deal_id: str
    name: str
    account_id: str
    account_name: str
    contact_id: str
    contact_name: str
    owner_id: str
    owner_name: str
    stage: str
    probability: int
    amount: Decimal | None
    weighted_amount: Decimal
    close_date: str
    closed: bool


class DealSearch(TypedDict):
    total: int
    total_amount: Decimal
    weighted_amount: Decimal
    deals: list[DealSummary]


class ActivityOut(TypedDict):
    activity_id: str
    kind: str
    subject: str
    record_type: str
    record_id: str
    owner_id: str
    due_date: str
    completed: bool
    completed_at: str | None
    outcome: str
    overdue: bool


class NoteOut(TypedDict):
    note_id: str
    record_type: str
    record_id: str
    author_id: str
    body: str
    created_at: str


class AccountDetail(AccountSummary):
    owners: list[OwnerOut]
    contacts: list[ContactOut]
    deals: list[DealSummary]
    open_activities: list[ActivityOut]
    notes: list[NoteOut]


class StageChangeOut(TypedDict):
    from_stage: str | None
    to_stage: str
    owner_id: str
    at: str


class DealDetail(DealSummary):
    lost_reason: str | None
    created_at: str
    closed_at: str | None
    next_stages: list[str]
    history: list[StageChangeOut]
    activities: list[ActivityOut]
    notes: list[NoteOut]


class LeadOut(TypedDict):
    lead_id: str
    name: str
    email: str
    company: str
    title: str
    source: str
    status: str
    owner_id: str
    owner_name: str
    created_at: str
    converted_account_id: str | None
    converted_contact_id: str | None
    converted_deal_id: str | None


class LeadSearch(TypedDict):
    total: int
    leads: list[LeadOut]


class LeadUpdated(TypedDict):
    lead: LeadOut
    previous_status: str
    previous_owner_id: str


class Conversion(TypedDict):
    lead: LeadOut
    account_id: str
    account_created: bool
    contact_id: str
    contact_created: bool
    deal: DealSummary | None


class StageMoved(TypedDict):
    deal: DealSummary
    from_stage: str
    to_stage: str
    next_stages: list[str]
    change_id: str


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
owners_t, accounts_t, contacts_t = Owner.__table__, Account.__table__, Contact.__table__
leads_t, deals_t, changes_t = Lead.__table__, Deal.__table__, DealStageChange.__table__
activities_t, notes_t = Activity.__table__, Note.__table__

ACTING_OWNER = Query(select(Settings.acting_owner_id).where(Settings.id == 1))
OWNER = Query(select(owners_t).where(Owner.id == bindparam("id")))
OWNER_NAME = Query(select(Owner.name).where(Owner.id == bindparam("id")))
ACTIVE_OWNERS = Query(select(owners_t).where(Owner.active.is_(True)).order_by(Owner.id))

ACCOUNT = Query(select(accounts_t).where(Account.id == bindparam("id")))
ACCOUNT_NAME = Query(select(Account.name).where(Account.id == bindparam("id")))
ACCOUNT_NAMED = Query(  # ``name`` in lower case
    select(accounts_t).where(func.lower(Account.name) == bindparam("name")).order_by(Account.id)
)
ACCOUNT_NAMES = Query(select(Account.name).order_by(Account.id))
ACCOUNTS = Query(select(Account.id, Account.name).order_by(Account.id))
# Account.contacts is not empty
ACCOUNTS_WITH_CONTACTS = Query(
    select(Account.id, Account.name, Account.industry)
    .where(exists().where(Contact.account_id == Account.id))
    .order_by(Account.id)
)
ACCOUNT_DEAL_AMOUNTS = Query(  # for an account's totals (_account)
    select(Deal.stage, Deal.amount)
    .where(Deal.account_id == bindparam("account_id"))
    .order_by(Deal.id)
)
CONTACT_COUNT = Query(
    select(func.count())
    .select_from(contacts_t)
    .where(Contact.account_id == bindparam("account_id"))
)

# contacts with their account's name
_CONTACTS = select(contacts_t, Account.name.label("account_name")).select_from(
    contacts_t.join(accounts_t, Account.id == Contact.account_id)
)
_BY_NAME = (func.lower(Contact.last_name), func.lower(Contact.first_name), Contact.id)
CONTACT = Query(_CONTACTS.where(Contact.id == bindparam("id")))
CONTACT_WITH_EMAIL = Query(
    _CONTACTS.where(Contact.email == bindparam("email")).order_by(Contact.id)
)
ACCOUNT_CONTACTS = Query(
    _CONTACTS.where(Contact.account_id == bindparam("account_id"))
    .order_by(*_BY_NAME)
    .limit(LIST_CAP)
)
CONTACTS = Query(
    select(
        Contact.id, Contact.account_id, Contact.first_name, Contact.last_name, Contact.email
    ).order_by(Contact.id)
)
CONTACT_EMAILS = Query(select(Contact.email).order_by(Contact.id))

# leads with their owner's name (None if the rep is unknown)
_LEADS = select(leads_t, Owner.name.label("owner_name")).select_from(
    leads_t.outerjoin(owners_t, Owner.id == Lead.owner_id)
)
LEAD = Query(_LEADS.where(Lead.id == bindparam("id")))
OPEN_LEAD_WITH_EMAIL = Query(
    select(leads_t)
    .where(Lead.email == bindparam("email"), Lead.status != "converted")
    .order_by(Lead.id)
)
_OPEN_LEAD = Lead.status != "converted"
OPEN_LEADS = Query(  # (the lead listing's columns: SQLite's cost grows with each one read)
    select(Lead.id, Lead.first_name, Lead.last_name, Lead.company, Lead.status)
    .where(_OPEN_LEAD)
    .order_by(Lead.id)
)
LEAD_EMAILS = Query(select(Lead.email).order_by(Lead.id))

# deals with the names of their account, contact and owner
_DEALS = select(
    deals_t,
    Account.name.label("account_name"),
    Contact.first_name.label("contact_first_name"),
    Contact.last_name.label("contact_last_name"),
    Owner.name.label("owner_name"),
).select_from(
    deals_t.join(accounts_t, Account.id == Deal.account_id)
    .join(contacts_t, Contact.id == Deal.contact_id)
    .join(owners_t, Owner.id == Deal.owner_id)
)
_CLOSED_LAST = case((Deal.stage.in_(sorted(CLOSED_STAGES)), 1), else_=0)
DEAL = Query(_DEALS.where(Deal.id == bindparam("id")))
ACCOUNT_DEALS = Query(  # open ones first
    _DEALS.where(Deal.account_id == bindparam("account_id"))
    .order_by(_CLOSED_LAST, Deal.close_date, Deal.id)
    .limit(LIST_CAP)
)
_OPEN_DEAL = Deal.stage.in_(OPEN_STAGES)
OPEN_DEALS = Query(  # (the deal listing's columns)
    select(
        Deal.id,
        Deal.name,
        Deal.account_id,
        Deal.contact_id,
        Deal.stage,
        Deal.amount.is_(None).label("no_amount"),
    )
    .where(_OPEN_DEAL)
    .order_by(Deal.id)
)
# What activities and notes attach to (the record listing's): each kind's ids and the
# names the listing shows, by id (only those columns: SQLite's cost grows with each one read)
_CONTACT_NAME = Contact.first_name + " " + Contact.last_name
_LEAD_NAME = Lead.first_name + " " + Lead.last_name
RECORD_NAMES = (
    ("account", ACCOUNTS),
    ("contact", Query(select(Contact.id, _CONTACT_NAME).order_by(Contact.id))),
    ("lead", Query(select(Lead.id, _LEAD_NAME).where(_OPEN_LEAD).order_by(Lead.id))),
    ("deal", Query(select(Deal.id, Deal.name).where(_OPEN_DEAL).order_by(Deal.id))),
)
HISTORY = Query(  # stg_10000 after stg_9999
    select(changes_t)
    .where(DealStageChange.deal_id == bindparam("deal_id"))
    .order_by(func.length(DealStageChange.id), DealStageChange.id)
)

ACTIVITY = Query(select(activities_t).where(Activity.id == bindparam("id")))
OPEN_ACTIVITIES = Query(
    select(activities_t)
    .where(
        Activity.record_type == bindparam("record_type"),
        Activity.record_id == bindparam("record_id"),
        Activity.completed.is_(False),
    )
    .order_by(Activity.due_date, Activity.id)
    .limit(LIST_CAP)
)
DEAL_ACTIVITIES = Query(  # open ones first, then the latest due
    select(activities_t)
    .where(Activity.record_type == "deal", Activity.record_id == bindparam("deal_id"))
    .order_by(Activity.completed, Activity.due_date.desc(), Activity.id)
    .limit(LIST_CAP)
)
ALL_OPEN_ACTIVITIES = Query(
    select(Activity.id, Activity.subject, Activity.kind, Activity.record_id)
    .where(Activity.completed.is_(False))
    .order_by(Activity.id)
)

NOTE = Query(select(notes_t).where(Note.id == bindparam("id")))
LATEST_NOTES = Query(
    select(notes_t)
    .where(Note.record_type == bindparam("record_type"), Note.record_id == bindparam("record_id"))
    .order_by(Note.created_at.desc(), Note.id.desc())
    .limit(20)
)
NOTES_BY_ID = Query(select(Note.id, Note.record_id).order_by(Note.id))

RECORD_ROWS: dict[str, Query] = {
    kind: Query(select(table).where(table.c.id == bindparam("id")))
    for kind, table in (
        ("account", accounts_t),
        ("contact", contacts_t),
        ("lead", leads_t),
        ("deal", deals_t),
    )
}
"""The row of an account, contact, lead or deal by id: what activities and notes attach to."""


@functools.cache
def _accounts_matching(by_text: bool, by_industry: bool, by_owner: bool) -> tuple[Query, Query]:
    """How many accounts match the filters given, and the first ``limit`` of them A to Z:
    search_accounts'."""
    conditions: list[Any] = []
    if by_text:
        conditions.append(
            contains(bindparam("pattern"), Account.name, Account.website, Account.city)
        )
    if by_industry:
        conditions.append(Account.industry == bindparam("industry"))
    if by_owner:
        conditions.append(Account.owner_id == bindparam("owner_id"))
    count = Query(select(func.count()).select_from(accounts_t).where(*conditions))
    page = Query(
        select(accounts_t)
        .where(*conditions)
        .order_by(func.lower(Account.name), Account.id)
        .limit(bindparam("limit"))
    )
    return count, page


@functools.cache
def _contacts_matching(by_text: bool, by_account: bool) -> tuple[Query, Query]:
    """How many contacts match the filters given, and the first ``limit`` of them by name:
    search_contacts'."""
    conditions: list[Any] = []
    if by_text:
        full = Contact.first_name + " " + Contact.last_name
        conditions.append(
            contains(
                bindparam("pattern"),
                Contact.first_name,
                Contact.last_name,
                full,
                Contact.email,
                Contact.title,
            )
        )
    if by_account:
        conditions.append(Contact.account_id == bindparam("account_id"))
    count = Query(select(func.count()).select_from(contacts_t).where(*conditions))
    page = Query(_CONTACTS.where(*conditions).order_by(*_BY_NAME).limit(bindparam("limit")))
    return count, page


@functools.cache
def _leads_matching(
    by_text: bool, by_status: bool, by_source: bool, by_owner: bool
) -> tuple[Query, Query]:
    """How many leads match the filters given, and the newest ``limit`` of them:
    search_leads'."""
    conditions: list[Any] = []
    if by_text:
        full = Lead.first_name + " " + Lead.last_name
        conditions.append(
            contains(bindparam("pattern"), full, Lead.email, Lead.company, Lead.title)
        )
    if by_status:
        conditions.append(Lead.status == bindparam("status"))
    if by_source:
        conditions.append(Lead.source == bindparam("source"))
    if by_owner:
        conditions.append(Lead.owner_id == bindparam("owner_id"))
    count = Query(select(func.count()).select_from(leads_t).where(*conditions))
    page = Query(
        _LEADS.where(*conditions)
        .order_by(Lead.created_at.desc(), Lead.id.desc())
        .limit(bindparam("limit"))
    )
    return count, page


@functools.cache
def _deals_matching(
    by_text: bool, by_stage: bool, by_account: bool, by_owner: bool, open_only: bool
) -> Query:
    """Every deal matching the filters given, soonest expected close first: search_deals'."""
    stmt = _DEALS
    if by_text:
        stmt = stmt.where(contains(bindparam("pattern"), Deal.name, Account.name))
    if by_stage:
        stmt = stmt.where(Deal.stage == bindparam("stage"))
    if by_account:
        stmt = stmt.where(Deal.account_id == bindparam("account_id"))
    if by_owner:
        stmt = stmt.where(Deal.owner_id == bindparam("owner_id"))
    if open_only:
        stmt = stmt.where(Deal.stage.in_(OPEN_STAGES))
    return Query(stmt.order_by(Deal.close_date, Deal.id))


# ----------------------------------------------------------------- helpers
def _broken(rule: str, detail: str) -> PreconditionFailed:
    """The error for a failed business rule: it names the rule, then says what to do."""
    return PreconditionFailed(f"Rule '{rule}' failed: {detail}")


def _exists(rule: str, detail: str) -> Conflict:
    return Conflict(f"Rule '{rule}' failed: {detail}")


def _you(ctx: ToolContext) -> str:
    you = ctx.sql.scalar(ACTING_OWNER)
    assert you is not None
    return str(you)


def _text(value: str, name: str, longest: int) -> str:
    text = " ".join(value.split())
    if not text:
        raise InvalidArgument(f"{name} must not be empty or blank.")
    if len(text) > longest:
        raise InvalidArgument(f"{name} is {len(text)} characters long; keep it to {longest}.")
    return text


def _body(value: str, name: str, longest: int) -> str:
    text = value.strip()
    if not text:
        raise InvalidArgument(f"{name} must not be empty or blank.")
    if len(text) > longest:
        raise InvalidArgument(f"{name} is {len(text)} characters long; keep it to {longest}.")
    return text


def _email(value: str) -> str:
    return value.strip().casefold()


def _future(ctx: ToolContext, value: str, name: str) -> dt.date:
    day = parse_date(value, name)
    today = ctx.now.date()
    if day < today:
        raise _broken(
            "date_in_past",
            f"{name} {day.isoformat()} is before today ({today.isoformat()}); ask the user for "
            "a date from today on.",
        )
    if day > today + dt.timedelta(days=MAX_DAYS_AHEAD):
        raise InvalidArgument(
            f"{name} {day.isoformat()} is more than two years ahead; ask the user for a "
            "nearer date."
        )
    return day


def _active_owner(owner: Any) -> Any:
    if not owner.active:
        raise _broken(
            "owner_inactive",
            f"{owner.name} ({owner.id}) has left the sales team and cannot own records; pick "
            "an active sales rep (the account's reps are listed with the account).",
        )
    return owner


def _stamp(value: dt.datetime | None) -> str | None:
    return value.isoformat(timespec="minutes") if value is not None else None


def _owner(o: Any, you: str) -> OwnerOut:
    """An owner row; ``you``: the acting sales rep's id."""
    return {
        "owner_id": o.id,
        "name": o.name,
        "email": o.email,
        "title": o.title,
        "region": o.region,
        "active": o.active,
        "is_you": o.id == you,
    }


def _weighted(d: Any) -> Decimal:
    if d.amount is None:
        return ZERO
    return (d.amount * d.probability / 100).quantize(Decimal("0.01"))


def _contact(c: Any) -> ContactOut:
    """A contact row with its account's name (``_CONTACTS``)."""
    return {
        "contact_id": c.id,
        "account_id": c.account_id,
        "account_name": c.account_name,
        "name": f"{c.first_name} {c.last_name}",
        "first_name": c.first_name,
        "last_name": c.last_name,
        "email": c.email,
        "phone": c.phone,
        "title": c.title,
        "owner_id": c.owner_id,
    }


def _deal(d: Any) -> DealSummary:
    """A deal row with the names of its account, contact and owner (``_DEALS``)."""
    return {
        "deal_id": d.id,
        "name": d.name,
        "account_id": d.account_id,
        "account_name": d.account_name,
        "contact_id": d.contact_id,
        "contact_name": f"{d.contact_first_name} {d.contact_last_name}",
        "owner_id": d.owner_id,
        "owner_name": d.owner_name,
        "stage": d.stage,
        "probability": d.probability,
        "amount": d.amount,
        "weighted_amount": _weighted(d),
        "close_date": d.close_date.isoformat(),
        "closed": d.stage in CLOSED_STAGES,
    }


def _activity(ctx: ToolContext, a: Any) -> ActivityOut:
    return {
        "activity_id": a.id,
        "kind": a.kind,
        "subject": a.subject,
        "record_type": a.record_type,
        "record_id": a.record_id,
        "owner_id": a.owner_id,
        "due_date": a.due_date.isoformat(),
        "completed": a.completed,
        "completed_at": _stamp(a.completed_at),
        "outcome": a.outcome,
        "overdue": not a.completed and a.due_date < ctx.now.date(),
    }


def _note(n: Any) -> NoteOut:
    return {
        "note_id": n.id,
        "record_type": n.record_type,
        "record_id": n.record_id,
        "author_id": n.author_id,
        "body": n.body,
        "created_at": n.created_at.isoformat(timespec="minutes"),
    }


def _lead(lead: Any) -> LeadOut:
    """A lead row with its owner's name (``_LEADS``)."""
    return {
        "lead_id": lead.id,
        "name": f"{lead.first_name} {lead.last_name}",
        "email": lead.email,
        "company": lead.company,
        "title": lead.title,
        "source": lead.source,
        "status": lead.status,
        "owner_id": lead.owner_id,
        "owner_name": lead.owner_name if lead.owner_name is not None else "",
        "created_at": lead.created_at.isoformat(timespec="minutes"),
        "converted_account_id": lead.converted_account_id,
        "converted_contact_id": lead.converted_contact_id,
        "converted_deal_id": lead.converted_deal_id,
    }


def _account(ctx: ToolContext, a: Any) -> AccountSummary:
    """An account row with its owner's name, contact count and deal totals."""
    deals = ctx.sql.all(ACCOUNT_DEAL_AMOUNTS, account_id=a.id)
    open_deals = [d for d in deals if d.stage not in CLOSED_STAGES]
    return {
        "account_id": a.id,
        "name": a.name,
        "industry": a.industry,
        "city": a.city,
        "website": a.website,
        "employees": a.employees,
        "owner_id": a.owner_id,
        "owner_name": ctx.sql.scalar(OWNER_NAME, id=a.owner_id),
        "contact_count": ctx.sql.scalar(CONTACT_COUNT, account_id=a.id) or 0,
        "open_deal_count": len(open_deals),
        "open_pipeline": sum((d.amount or ZERO for d in open_deals), ZERO),
        "won_total": sum(
            (d.amount or ZERO for d in deals if d.stage == "closed_won"),
            ZERO,
        ),
    }


def _open_activities(ctx: ToolContext, record_type: str, record_id: str) -> list[ActivityOut]:
    rows = ctx.sql.all(OPEN_ACTIVITIES, record_type=record_type, record_id=record_id)
    return [_activity(ctx, a) for a in rows]


def _notes(ctx: ToolContext, record_type: str, record_id: str) -> list[NoteOut]:
    rows = ctx.sql.all(LATEST_NOTES, record_type=record_type, record_id=record_id)
    return [_note(n) for n in rows]


def _deal_detail(ctx: ToolContext, deal_id: str) -> DealDetail:
    d = ctx.sql.one(DEAL, id=deal_id)
    history = ctx.sql.all(HISTORY, deal_id=deal_id)
    activities = ctx.sql.all(DEAL_ACTIVITIES, deal_id=deal_id)
    return {
        **_deal(d),
        "lost_reason": d.lost_reason,
        "created_at": d.created_at.isoformat(timespec="minutes"),
        "closed_at": _stamp(d.closed_at),
        "next_stages": list(STAGE_MOVES[d.stage]),
        "history": [
            {
                "from_stage": h.from_stage,
                "to_stage": h.to_stage,
                "owner_id": h.owner_id,
                "at": h.at.isoformat(timespec="minutes"),
            }
            for h in history
        ],
        "activities": [_activity(ctx, a) for a in activities],
        "notes": _notes(ctx, "deal", deal_id),
    }


def _record_change(ctx: ToolContext, deal_id: str, to: str, frm: str | None) -> str:
    """Record a deal's stage move, by you, now; the change's id."""
    change_id = next_id(ctx, DealStageChange.id, "stg", 5)
    ctx.sql.insert(
        DealStageChange,
        id=change_id,
        deal_id=deal_id,
        from_stage=frm,
        to_stage=to,
        owner_id=_you(ctx),
        at=ctx.now,
    )
    return change_id


def _check_contact(ctx: ToolContext, deal_account: Any, contact: Any) -> None:
    if contact.account_id != deal_account.id:
        raise _broken(
            "contact_account",
            f"{contact.first_name} {contact.last_name} ({contact.id}) works at "
            f"{ctx.sql.scalar(ACCOUNT_NAME, id=contact.account_id)} ({contact.account_id}), "
            f"not at {deal_account.name} ({deal_account.id}); pick one of the contacts of "
            f"{deal_account.id} (listed with the account), or add the person to that account "
            "first.",
        )


def _resolve_record(ctx: ToolContext, record_id: str) -> tuple[str, Any]:
    """The kind and row of an account, contact, lead or deal id, or NotFound saying which
    ids are accepted."""
    key = record_id.strip()
    prefix = key.split("_", 1)[0].lower()
    kind = RECORD_TYPES.get(prefix)
    row = ctx.sql.first(RECORD_ROWS[kind], id=key) if kind is not None else None
    if row is None or kind is None:
        raise NotFound(
            f"No account, contact, lead or deal with id {record_id!r}. Pass an account "
            "('acc_012'), contact ('con_0042'), lead ('lead_0031') or deal ('deal_0057') id; "
            "search the accounts, contacts, leads or deals to find it."
        )
    return kind, row


def _open_for_work(kind: str, row: Any, doing: str) -> None:
    if kind == "lead" and row.status == "converted":
        raise _broken(
            "lead_converted",
            f"lead {row.id} was converted into contact {row.converted_contact_id} at account "
            f"{row.converted_account_id}; {doing} on that contact (or account) instead.",
        )


def _new_contact(
    ctx: ToolContext,
    account_id: str,
    first: str,
    last: str,
    email: str,
    title: str,
    phone: str,
    owner_id: str,
) -> str:
    """Add a contact to an account; its id."""
    contact_id = next_id(ctx, Contact.id, "con", 4)
    ctx.sql.insert(
        Contact,
        id=contact_id,
        account_id=account_id,
        first_name=first,
        last_name=last,
        email=email,
        phone=phone,
        title=title,
        owner_id=owner_id,
        created_at=ctx.now,
    )
    return contact_id


def _new_deal(
    ctx: ToolContext,
    account_id: str,
    contact_id: str,
    name: str,
    amount: Decimal | None,
    close_date: dt.date,
    owner_id: str,
) -> str:
    """Open a deal in "prospecting" and record its creation in the history; its id."""
    deal_id = next_id(ctx, Deal.id, "deal", 4)
    ctx.sql.insert(
        Deal,
        id=deal_id,
        name=name,
        account_id=account_id,
        contact_id=contact_id,
        owner_id=owner_id,
        stage="prospecting",
        probability=PROBABILITY["prospecting"],
        amount=amount,
        close_date=close_date,
        lost_reason=None,
        created_at=ctx.now,
        closed_at=None,
    )
    _record_change(ctx, deal_id, "prospecting", None)
    return deal_id


# -------------------------------------------------------- example values
def _close_day(ctx: ToolContext, rng: random.Random) -> str:
    return (ctx.now.date() + dt.timedelta(days=rng.choice([14, 30, 45, 60, 90]))).isoformat()


def _due_day(ctx: ToolContext, rng: random.Random) -> str:
    return (ctx.now.date() + dt.timedelta(days=rng.choice([1, 2, 3, 5, 7, 10]))).isoformat()


PEOPLE = [
    ("Priya", "Raman", "VP of Operations"),
    ("Marco", "Bellini", "Head of Procurement"),
    ("Hannah", "Okafor", "IT Director"),
    ("Lucas", "Meyer", "CFO"),
    ("Sofia", "Alvarez", "Finance Manager"),
]
COMPANIES = ["Lumen Analytics", "Northpeak Logistics", "Cedar Health Partners", "Ironleaf Foods"]


def company_domain(company: str) -> str:
    """The web domain a company's staff write from: its name's letters and digits.

    >>> company_domain("Cedar Health Partners"), company_domain("O'Brien & Sons, Inc.")
    ('cedarhealthpartners.com', 'obriensonsinc.com')
    """
    slug = "".join(ch for ch in company.casefold() if ch.isascii() and ch.isalnum())
    return f"{slug or 'example'}.com"


def _person_email(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The work address of the person the call names, at the company it names (the
    account's, or ``company``): ``first.last@company.com``, numbered when taken."""
    first, last = bound.args.get("first_name"), bound.args.get("last_name")
    if not first or not last:
        return None
    company = bound.args.get("company")
    if company is None and "account_id" in bound.args:
        account = ctx.sql.first(ACCOUNT, id=str(bound.args["account_id"]))
        company = account.name if account is not None else None
    if not company:
        return None
    local = ".".join("".join(ch for ch in str(n).casefold() if ch.isalnum()) for n in (first, last))
    domain = company_domain(str(company))
    taken = set(ctx.sql.scalars(CONTACT_EMAILS)) | set(ctx.sql.scalars(LEAD_EMAILS))
    address, n = f"{local}@{domain}", 1
    while address in taken:
        n += 1
        address = f"{local}{n}@{domain}"
    return address


def _new_company(ctx: ToolContext, rng: random.Random) -> str:
    taken = {n.lower() for n in ctx.sql.scalars(ACCOUNT_NAMES)}
    free = [c for c in COMPANIES if c.lower() not in taken]
    return rng.choice(free) if free else f"{rng.choice(COMPANIES)} {rng.randint(2, 99)}"


def _name_word(ctx: ToolContext, rng: random.Random) -> str:
    names = ctx.sql.scalars(ACCOUNT_NAMES)
    word = rng.choice(names).replace(",", " ").split()[0]
    return word


DEAL_NAMES = [
    "Platform licence 2026",
    "Analytics add-on",
    "Support renewal",
    "Team seats expansion",
]
SUBJECTS = [
    "Follow-up call about pricing",
    "Send the revised proposal",
    "Product demo for the buying committee",
    "Check in on the security review",
]
NOTES = [
    "Budget confirmed for Q3; the CFO signs off on anything above 50k.",
    "They are comparing us with two other vendors.",
    "Asked for a reference customer in their industry.",
]


# ------------------------------------------------------------------- tools
@server.tool(
    returns=("account", "owner"),
    phrasings=[
        "Find the account {query}",
        "Which {industry} accounts do we have?",
        "Show me the accounts owned by {owner_id}",
    ],
    examples={"query": _name_word},
)
def search_accounts(
    ctx: ToolContext,
    query: SearchText | None = None,
    industry: Industry | None = None,
    owner_id: OwnerRow | None = None,
    limit: Limit = 20,
) -> AccountSearch:
    """Search accounts (companies) by name, website or city, industry or owner, A to Z.

    Args:
        query: Case-insensitive text in the name, website or city, such as "acme" or "Boston".
        industry: Only this industry, such as "software" or "healthcare".
        owner_id: Only accounts owned by this sales rep, such as "own_03".
        limit: Maximum number of accounts to return (1-100), such as 20.

    Returns:
        {"total": 3, "accounts": [{"account_id": "acc_012", "name": "Acme Corp",
        "owner_name": "Dana Lee", "contact_count": 4, "open_pipeline": 42500.00, ...}]}.
    """
    params: dict[str, Any] = {}
    text = (query or "").strip()
    if text:
        params["pattern"] = search_pattern(text)
    if industry is not None:
        params["industry"] = industry
    if owner_id is not None:
        params["owner_id"] = owner_id.id
    count, page = _accounts_matching(
        "pattern" in params, "industry" in params, "owner_id" in params
    )
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(page, limit=limit, **params)
    return {"total": total, "accounts": [_account(ctx, a) for a in rows]}


@server.tool(
    returns=("account", "contact", "deal", "activity", "owner"),
    phrasings=["Show me account {account_id}", "Who are our contacts at {account_id}?"],
)
def get_account(ctx: ToolContext, account_id: AccountRow) -> AccountDetail:
    """Get one account with its contacts, deals (open ones first), open activities, the latest
    notes, and the sales reps who can own its records.

    Args:
        account_id: The account, such as "acc_012" (search_accounts finds it by name).

    Returns:
        {"account_id": "acc_012", "name": "Acme Corp", "contacts": [{"contact_id":
        "con_0042", "name": "Jane Doe", ...}], "deals": [{"deal_id": "deal_0057",
        "stage": "proposal", "amount": 25000.00, ...}], "open_activities": [...],
        "notes": [...], "owners": [{"owner_id": "own_03", "name": "Dana Lee", ...}], ...}.
    """
    a = account_id
    contacts = ctx.sql.all(ACCOUNT_CONTACTS, account_id=a.id)
    deals = ctx.sql.all(ACCOUNT_DEALS, account_id=a.id)
    owners = ctx.sql.all(ACTIVE_OWNERS)
    you = _you(ctx)
    return {
        **_account(ctx, a),
        "owners": [_owner(o, you) for o in owners],
        "contacts": [_contact(c) for c in contacts],
        "deals": [_deal(d) for d in deals],
        "open_activities": _open_activities(ctx, "account", a.id),
        "notes": _notes(ctx, "account", a.id),
    }


@server.tool(
    returns=("contact", "account"),
    phrasings=["Find contacts matching '{query}'", "List the contacts at account {account_id}"],
    examples={"query": ["cfo", "director", "procurement", "gmail", "smith"]},
)
def search_contacts(
    ctx: ToolContext,
    query: SearchText | None = None,
    account_id: AccountRow | None = None,
    limit: Limit = 20,
) -> ContactSearch:
    """Search contacts by name, email or job title, optionally at one account; sorted by last
    name.

    Args:
        query: Case-insensitive text in the first or last name, email or title, such as
            "jane", "doe@acme.com" or "CFO".
        account_id: Only contacts of this account, such as "acc_012".
        limit: Maximum number of contacts to return (1-100), such as 20.

    Returns:
        {"total": 2, "contacts": [{"contact_id": "con_0042", "account_id": "acc_012",
        "account_name": "Acme Corp", "name": "Jane Doe", "email": "jane.doe@acme.com",
        "title": "CFO", ...}]}.
    """
    params: dict[str, Any] = {}
    text = (query or "").strip()
    if text:
        params["pattern"] = search_pattern(text)
    if account_id is not None:
        params["account_id"] = account_id.id
    count, page = _contacts_matching("pattern" in params, "account_id" in params)
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(page, limit=limit, **params)
    return {"total": total, "contacts": [_contact(c) for c in rows]}


@server.tool(
    returns=("lead", "owner"),
    phrasings=[
        "Find leads matching '{query}'",
        "Which leads are {status}?",
        "Show the leads from {source} owned by {owner_id}",
    ],
    examples={"query": ["director", "logistics", "health", "cfo", "analytics"]},
)
def search_leads(
    ctx: ToolContext,
    query: SearchText | None = None,
    status: Literal["new", "working", "qualified", "unqualified", "converted"] | None = None,
    source: LeadSource | None = None,
    owner_id: OwnerRow | None = None,
    limit: Limit = 20,
) -> LeadSearch:
    """Search leads by name, email, company or title, status, source or owner; newest first.

    Args:
        query: Case-insensitive text in the name, email, company or title, such as "globex".
        status: Only "new", "working", "qualified", "unqualified" or "converted" leads.
        source: Only leads from "web", "referral", "event", "cold_call", "partner" or
            "webinar".
        owner_id: Only leads owned by this sales rep, such as "own_03".
        limit: Maximum number of leads to return (1-100), such as 20.

    Returns:
        {"total": 5, "leads": [{"lead_id": "lead_0031", "name": "Tom Becker", "company":
        "Globex", "status": "qualified", "converted_contact_id": null, ...}]}.
    """
    params: dict[str, Any] = {}
    text = (query or "").strip()
    if text:
        params["pattern"] = search_pattern(text)
    if status is not None:
        params["status"] = status
    if source is not None:
        params["source"] = source
    if owner_id is not None:
        params["owner_id"] = owner_id.id
    count, page = _leads_matching(
        "pattern" in params, "status" in params, "source" in params, "owner_id" in params
    )
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(page, limit=limit, **params)
    return {"total": total, "leads": [_lead(lead) for lead in rows]}


@server.tool(
    returns=("deal", "account", "contact", "owner"),
    phrasings=[
        "Which deals are in {stage}?",
        "Show the open deals of account {account_id}",
        "How much pipeline does {owner_id} have?",
        "Find the deal about {query}",
    ],
    examples={"query": ["renewal", "licence", "analytics", "expansion", "migration"]},
)
def search_deals(
    ctx: ToolContext,
    query: SearchText | None = None,
    stage: Stage | None = None,
    account_id: AccountRow | None = None,
    owner_id: OwnerRow | None = None,
    open_only: bool = False,
    limit: Limit = 20,
) -> DealSearch:
    """Search deals by name, stage, account or owner; soonest expected close date first.

    total_amount and weighted_amount (amount x probability) add up every matching deal, not
    only the ones returned.

    Args:
        query: Case-insensitive text in the deal or account name, such as "renewal".
        stage: Only this stage: "prospecting", "qualification", "proposal", "negotiation",
            "closed_won" or "closed_lost".
        account_id: Only deals of this account, such as "acc_012".
        owner_id: Only deals owned by this sales rep, such as "own_03".
        open_only: Leave out closed deals (closed_won and closed_lost).
        limit: Maximum number of deals to return (1-100), such as 20.

    Returns:
        {"total": 4, "total_amount": 120000.00, "weighted_amount": 52500.00, "deals":
        [{"deal_id": "deal_0057", "name": "Acme Corp - Support renewal", "stage":
        "proposal", "probability": 50, "amount": 25000.00, "close_date": "2026-04-30", ...}]}.
    """
    params: dict[str, Any] = {}
    text = (query or "").strip()
    if text:
        params["pattern"] = search_pattern(text)
    if stage is not None:
        params["stage"] = stage
    if account_id is not None:
        params["account_id"] = account_id.id
    if owner_id is not None:
        params["owner_id"] = owner_id.id
    matching = _deals_matching(
        "pattern" in params,
        "stage" in params,
        "account_id" in params,
        "owner_id" in params,
        open_only,
    )
    every = ctx.sql.all(matching, **params)
    ctx.spend(len(every), "deals", hint="narrow the search with a stage, account or owner")
    return {
        "total": len(every),
        "total_amount": sum((d.amount or ZERO for d in every), ZERO),
        "weighted_amount": sum((_weighted(d) for d in every), ZERO),
        "deals": [_deal(d) for d in every[:limit]],
    }


@server.tool(
    returns=("deal", "account", "contact", "activity", "owner"),
    phrasings=["Show me deal {deal_id}", "What stage is {deal_id} in and what can it move to?"],
)
def get_deal(ctx: ToolContext, deal_id: DealRow) -> DealDetail:
    """Get one deal with its stage history, the stages it may move to next, its activities
    and its latest notes.

    Args:
        deal_id: The deal, such as "deal_0057" (search_deals finds it).

    Returns:
        {"deal_id": "deal_0057", "stage": "proposal", "probability": 50, "amount": 25000.00,
        "next_stages": ["negotiation", "qualification", "prospecting", "closed_lost"],
        "history": [{"from_stage": null, "to_stage": "prospecting", ...}, ...], ...}.
    """
    return _deal_detail(ctx, deal_id.id)


@server.tool(
    writes=True,
    returns=("account", "owner"),
    phrasings=[
        "Create an account for {name}, a {industry} company",
        "Add {name} as a new account owned by {owner_id}",
    ],
    examples={
        "name": _new_company,
        "city": ["Chicago", "Austin", "Berlin", "Toronto"],
        "website": ["https://www.lumenanalytics.com", "https://northpeak.io"],
    },
)
def create_account(
    ctx: ToolContext,
    name: Annotated[str, Field(max_length=120)],
    industry: Industry,
    owner_id: OwnerRow | None = None,
    city: Annotated[str, Field(max_length=80)] = "",
    website: Annotated[str, Field(max_length=120)] = "",
) -> AccountSummary:
    """Create an account (a company); you own it unless owner_id names another active rep.

    Args:
        name: The company's name, unique, such as "Lumen Analytics".
        industry: "software", "manufacturing", "healthcare", "finance", "retail",
            "education", "logistics", "energy" or "other".
        owner_id: The sales rep who owns it, such as "own_03"; omit to own it yourself.
        city: Where it is based, such as "Chicago".
        website: Such as "https://www.lumenanalytics.com".
    """
    title = _text(name, "name", 120)
    owner_key = _active_owner(owner_id).id if owner_id is not None else _you(ctx)
    clash = ctx.sql.first(ACCOUNT_NAMED, name=title.lower())
    if clash is not None:
        raise _exists(
            "duplicate_account",
            f"an account named {clash.name!r} already exists ({clash.id}); use it instead of "
            "creating another.",
        )
    account_key = next_id(ctx, Account.id, "acc", 3)
    ctx.sql.insert(
        Account,
        id=account_key,
        name=title,
        industry=industry,
        website=website.strip(),
        city=" ".join(city.split()),
        employees=0,
        owner_id=owner_key,
        created_at=ctx.now,
    )
    return _account(ctx, ctx.sql.one(ACCOUNT, id=account_key))


@server.tool(
    writes=True,
    returns=("contact", "account"),
    phrasings=[
        "Add {first_name} {last_name} ({email}) as a contact at {account_id}",
        "Create a contact {first_name} {last_name}, {title}, at account {account_id}",
    ],
    examples={
        "first_name": [p[0] for p in PEOPLE],
        "last_name": [p[1] for p in PEOPLE],
        "title": [p[2] for p in PEOPLE],
        "phone": ["+1-312-555-0142", "+44 20 7946 0958"],
    },
    values={"email": _person_email},
)
def create_contact(
    ctx: ToolContext,
    account_id: AccountRow,
    first_name: Name,
    last_name: Name,
    email: Email,
    title: Annotated[str, Field(max_length=80)] = "",
    phone: Annotated[str, Field(max_length=40)] = "",
) -> ContactOut:
    """Add a person to an account as a contact; you own the contact.

    Args:
        account_id: The account the person works at, such as "acc_012".
        first_name: Such as "Priya".
        last_name: Such as "Raman".
        email: Their work email, unique among contacts, such as "priya.raman@acme.com".
        title: Their job title, such as "VP of Operations".
        phone: Such as "+1-312-555-0142".
    """
    account = account_id
    first, last = _text(first_name, "first_name", 60), _text(last_name, "last_name", 60)
    address = _email(email)
    clash = ctx.sql.first(CONTACT_WITH_EMAIL, email=address)
    if clash is not None:
        raise _exists(
            "duplicate_email",
            f"{address} is already the contact {clash.first_name} {clash.last_name} "
            f"({clash.id}) at {clash.account_name} ({clash.account_id}); use that contact.",
        )
    contact_key = _new_contact(
        ctx, account.id, first, last, address, " ".join(title.split()), phone.strip(), _you(ctx)
    )
    return _contact(ctx.sql.one(CONTACT, id=contact_key))


@server.tool(
    writes=True,
    returns=("lead", "owner"),
    phrasings=[
        "Add a lead: {first_name} {last_name} from {company}, {email}",
        "Create a {source} lead for {first_name} {last_name} at {company} and give it to "
        "{owner_id}",
    ],
    examples={
        "first_name": [p[0] for p in PEOPLE],
        "last_name": [p[1] for p in PEOPLE],
        "company": COMPANIES,
        "title": [p[2] for p in PEOPLE],
    },
    values={"email": _person_email},
)
def create_lead(
    ctx: ToolContext,
    first_name: Name,
    last_name: Name,
    email: Email,
    company: Annotated[str, Field(max_length=120)],
    source: LeadSource,
    title: Annotated[str, Field(max_length=80)] = "",
    owner_id: OwnerRow | None = None,
) -> LeadOut:
    """Create a lead (status "new"); you own it unless owner_id names another active rep.

    Args:
        first_name: Such as "Marco".
        last_name: Such as "Bellini".
        email: Such as "marco.bellini@northpeak.io"; not the email of an existing contact.
        company: The company they work for, such as "Northpeak Logistics".
        source: Where the lead came from: "web", "referral", "event", "cold_call",
            "partner" or "webinar".
        title: Their job title, such as "Head of Procurement".
        owner_id: The sales rep to own it, such as "own_03"; omit to own it yourself.
    """
    first, last = _text(first_name, "first_name", 60), _text(last_name, "last_name", 60)
    firm = _text(company, "company", 120)
    owner_key = _active_owner(owner_id).id if owner_id is not None else _you(ctx)
    address = _email(email)
    contact = ctx.sql.first(CONTACT_WITH_EMAIL, email=address)
    if contact is not None:
        raise _exists(
            "duplicate_email",
            f"{address} is already the contact {contact.first_name} {contact.last_name} "
            f"({contact.id}) at {contact.account_name} ({contact.account_id}); work with that "
            "contact (a note or a deal) instead of a new lead.",
        )
    other = ctx.sql.first(OPEN_LEAD_WITH_EMAIL, email=address)
    if other is not None:
        raise _exists(
            "duplicate_email",
            f"{address} is already the open lead {other.id} ({other.first_name} "
            f"{other.last_name}, status '{other.status}'); update that lead instead.",
        )
    lead_key = next_id(ctx, Lead.id, "lead", 4)
    ctx.sql.insert(
        Lead,
        id=lead_key,
        first_name=first,
        last_name=last,
        email=address,
        company=firm,
        title=" ".join(title.split()),
        source=source,
        status="new",
        owner_id=owner_key,
        created_at=ctx.now,
        converted_at=None,
        converted_account_id=None,
        converted_contact_id=None,
        converted_deal_id=None,
    )
    return _lead(ctx.sql.one(LEAD, id=lead_key))


@server.tool(
    writes=True,
    returns=("lead", "owner"),
    phrasings=[
        "Mark lead {lead_id} as {status}",
        "Set {lead_id} to {status} and hand it over to {owner_id}",
    ],
)
def update_lead(
    ctx: ToolContext, lead_id: LeadRow, status: LeadStatus, owner_id: OwnerRow | None = None
) -> LeadUpdated:
    """Change a lead's status (and optionally its owner). Converting is its own action.

    Args:
        lead_id: The lead, such as "lead_0031"; it must not be converted.
        status: "new", "working", "qualified" or "unqualified".
        owner_id: An active sales rep to take the lead over, such as "own_03".
    """
    lead = lead_id
    _open_for_work("lead", lead, "make changes")
    owner = _active_owner(owner_id) if owner_id is not None else None
    if lead.status == status and (owner is None or owner.id == lead.owner_id):
        raise Conflict(f"lead {lead.id} is already '{status}'; nothing to change.")
    previous, previous_owner = lead.status, lead.owner_id
    ctx.sql.update(
        Lead, lead, status=status, owner_id=owner.id if owner is not None else lead.owner_id
    )
    return {
        "lead": _lead(ctx.sql.one(LEAD, id=lead.id)),
        "previous_status": previous,
        "previous_owner_id": previous_owner,
    }


@server.tool(
    writes=True,
    returns=("lead", "account", "contact", "deal"),
    phrasings=[
        "Convert lead {lead_id}",
        "Convert {lead_id} into account {account_id}",
        "Convert lead {lead_id} and open a deal '{deal_name}'",
    ],
    examples={"deal_name": DEAL_NAMES, "deal_amount": [12000, 25000, 48500]},
)
def convert_lead(
    ctx: ToolContext,
    lead_id: LeadRow,
    account_id: AccountRow | None = None,
    deal_name: Annotated[str, Field(max_length=160)] | None = None,
    deal_amount: Amount | None = None,
) -> Conversion:
    """Convert a qualified lead: it becomes a contact at an account, and optionally a deal.

    The account is account_id if given; otherwise the account whose name equals the lead's
    company, or a new account named after it (industry "other"). The contact is the existing contact with the
    lead's email (it must work at that account), otherwise a new one. With deal_name, a deal
    is opened in "prospecting" for the contact, closing in 30 days. The lead becomes
    "converted", links what it became, and cannot change any more.

    Args:
        lead_id: A lead with status "qualified", such as "lead_0031".
        account_id: An existing account to attach the contact to, such as "acc_012".
        deal_name: Name of a deal to open, such as "Globex - Platform licence".
        deal_amount: The deal's amount in dollars, such as 25000.00 (needs deal_name).
    """
    lead = lead_id
    _open_for_work("lead", lead, "convert")
    if lead.status != "qualified":
        raise _broken(
            "lead_not_qualified",
            f"lead {lead.id} is '{lead.status}'; only a 'qualified' lead can be converted. "
            "Change its status to 'qualified' first if the user confirms it is.",
        )
    if deal_amount is not None and deal_name is None:
        raise InvalidArgument("deal_amount needs deal_name: name the deal to open.")
    title = _text(deal_name, "deal_name", 160) if deal_name is not None else None
    owner = ctx.sql.first(OWNER, id=lead.owner_id)
    assert owner is not None
    owner_id = owner.id if owner.active else _you(ctx)
    account = account_id
    if account is None:
        account = ctx.sql.first(ACCOUNT_NAMED, name=lead.company.strip().lower())
    contact = ctx.sql.first(CONTACT_WITH_EMAIL, email=lead.email)
    if contact is not None and account is not None and contact.account_id != account.id:
        raise _broken(
            "contact_account",
            f"{lead.email} is already the contact {contact.id} at {contact.account_name} "
            f"({contact.account_id}), not at {account.name} ({account.id}); convert into "
            f"account {contact.account_id} instead.",
        )
    account_created = contact is None and account is None
    if account is not None:
        account_key = account.id
    elif contact is not None:
        account_key = contact.account_id
    else:
        account_key = next_id(ctx, Account.id, "acc", 3)
        ctx.sql.insert(
            Account,
            id=account_key,
            name=_text(lead.company, "company", 120),
            industry="other",
            website="",
            city="",
            employees=0,
            owner_id=owner_id,
            created_at=ctx.now,
        )
    contact_created = contact is None
    if contact is not None:
        contact_key = contact.id
    else:
        contact_key = _new_contact(
            ctx, account_key, lead.first_name, lead.last_name, lead.email, lead.title, "", owner_id
        )
    deal_key = None
    if title is not None:
        close = ctx.now.date() + dt.timedelta(days=30)
        deal_key = _new_deal(ctx, account_key, contact_key, title, deal_amount, close, owner_id)
    ctx.sql.update(
        Lead,
        lead,
        status="converted",
        converted_at=ctx.now,
        converted_account_id=account_key,
        converted_contact_id=contact_key,
        converted_deal_id=deal_key,
    )
    return {
        "lead": _lead(ctx.sql.one(LEAD, id=lead.id)),
        "account_id": account_key,
        "account_created": account_created,
        "contact_id": contact_key,
        "contact_created": contact_created,
        "deal": _deal(ctx.sql.one(DEAL, id=deal_key)) if deal_key is not None else None,
    }


@server.tool(
    writes=True,
    returns=("deal", "account", "contact"),
    phrasings=[
        "Open a deal '{name}' with {account_id}, contact {contact_id}, closing {close_date}",
        "Create a {amount} dollar deal '{name}' for account {account_id} with {contact_id}",
    ],
    examples={"name": DEAL_NAMES, "close_date": _close_day, "amount": [8000, 15000, 42000]},
)
def create_deal(
    ctx: ToolContext,
    account_id: AccountRow,
    contact_id: ContactRow,
    name: Annotated[str, Field(max_length=160)],
    close_date: DateText,
    amount: Amount | None = None,
    owner_id: OwnerRow | None = None,
) -> DealSummary:
    """Open a deal with an account in stage "prospecting" (probability 10%).

    Args:
        account_id: The account, such as "acc_012".
        contact_id: The deal's main contact, who must work at that account, such as
            "con_0042" (the account lists its contacts).
        name: Such as "Acme Corp - Platform licence".
        close_date: Expected close date, today or later, such as "2026-06-30".
        amount: Expected value in dollars, such as 25000.00 (needed from "proposal" on).
        owner_id: The sales rep who owns the deal, such as "own_03"; omit for the account's
            owner (or you, if that rep has left).
    """
    account, contact = account_id, contact_id
    _check_contact(ctx, account, contact)
    title = _text(name, "name", 160)
    close = _future(ctx, close_date, "close_date")
    if owner_id is not None:
        owner_key = _active_owner(owner_id).id
    else:
        account_owner = ctx.sql.one(OWNER, id=account.owner_id)
        owner_key = account_owner.id if account_owner.active else _you(ctx)
    deal_key = _new_deal(ctx, account.id, contact.id, title, amount, close, owner_key)
    return _deal(ctx.sql.one(DEAL, id=deal_key))


@server.tool(
    writes=True,
    returns="deal",
    phrasings=[
        "Move deal {deal_id} to {stage}",
        "Advance {deal_id} to {stage} at {amount} dollars",
        "Mark {deal_id} as {stage} because {lost_reason}",
    ],
    examples={
        "amount": [12000, 25000, 48500, 90000],
        "lost_reason": ["Chose a competitor", "No budget this year", "Price too high"],
    },
)
def move_deal_stage(
    ctx: ToolContext,
    deal_id: DealRow,
    stage: Stage,
    amount: Amount | None = None,
    lost_reason: Annotated[str, Field(max_length=300)] | None = None,
) -> StageMoved:
    """Move a deal to another pipeline stage; its probability follows the stage.

    Allowed: forward one stage at a time (prospecting -> qualification -> proposal ->
    negotiation -> closed_won), back to any earlier open stage, or to closed_lost from any
    open stage. Closed deals are final. From "proposal" on the deal needs an amount: pass
    amount to set it while moving. closed_lost needs lost_reason. Closing sets the close
    date to today.

    Args:
        deal_id: The deal, such as "deal_0057" (get_deal shows its next stages).
        stage: "prospecting", "qualification", "proposal", "negotiation", "closed_won" or
            "closed_lost".
        amount: The deal's new amount in dollars, such as 25000.00.
        lost_reason: Why the deal was lost, such as "Chose a competitor" (only for
            closed_lost).
    """
    deal = deal_id
    current = deal.stage
    if current in CLOSED_STAGES:
        raise _broken(
            "deal_closed",
            f"deal {deal.id} is already '{current}' (closed on {deal.close_date.isoformat()}) "
            "and closed deals are final; open a new deal for new business.",
        )
    if stage == current:
        raise Conflict(f"deal {deal.id} is already in '{current}'.")
    allowed = STAGE_MOVES[current]
    if stage not in allowed:
        nxt = STAGES[STAGES.index(current) + 1]
        raise _broken(
            "stage_move",
            f"deal {deal.id} cannot go from '{current}' to '{stage}': deals move forward one "
            f"stage at a time, so the next stage is '{nxt}'. Allowed from '{current}': "
            f"{', '.join(allowed)}.",
        )
    if stage in NEEDS_AMOUNT and amount is None and deal.amount is None:
        raise _broken(
            "amount_required",
            f"deal {deal.id} has no amount, and '{stage}' needs one; ask the user for the "
            "deal's value and pass it as amount.",
        )
    reason = None
    if stage == "closed_lost":
        if lost_reason is None or not lost_reason.strip():
            raise _broken(
                "lost_reason_required",
                f"closing deal {deal.id} as lost needs a lost_reason, such as 'Chose a "
                "competitor'; ask the user why it was lost.",
            )
        reason = _text(lost_reason, "lost_reason", 300)
    elif lost_reason is not None:
        raise InvalidArgument("lost_reason is only for moving a deal to closed_lost; leave it out.")
    changes: dict[str, Any] = {"stage": stage, "probability": PROBABILITY[stage]}
    if amount is not None:
        changes["amount"] = amount
    if stage in CLOSED_STAGES:
        changes.update(closed_at=ctx.now, close_date=ctx.now.date(), lost_reason=reason)
    ctx.sql.update(Deal, deal, **changes)
    change_id = _record_change(ctx, deal.id, stage, current)
    return {
        "deal": _deal(ctx.sql.one(DEAL, id=deal.id)),
        "from_stage": current,
        "to_stage": stage,
        "next_stages": list(STAGE_MOVES[stage]),
        "change_id": change_id,
    }


@server.tool(
    writes=True,
    returns=("activity", "record"),
    phrasings=[
        "Schedule a {kind} for {record_id} on {due_date}: {subject}",
        "Remind me to '{subject}' for {record_id} by {due_date}",
    ],
    examples={"subject": SUBJECTS, "due_date": _due_day},
)
def log_activity(
    ctx: ToolContext,
    record_id: RecordId,
    kind: ActivityKind,
    subject: Annotated[str, Field(max_length=200)],
    due_date: DateText,
) -> ActivityOut:
    """Schedule a call, meeting or task on an account, contact, lead or deal, owned by you.

    Args:
        record_id: What it is about: an account ("acc_012"), contact ("con_0042"), lead
            ("lead_0031") or deal ("deal_0057"); not a converted lead or a closed deal.
        kind: "call", "meeting" or "task".
        subject: Such as "Follow-up call about pricing".
        due_date: When it is due, today or later, such as "2026-03-05".
    """
    rtype, row = _resolve_record(ctx, record_id)
    _open_for_work(rtype, row, "schedule the activity")
    if rtype == "deal" and row.stage in CLOSED_STAGES:
        raise _broken(
            "deal_closed",
            f"deal {row.id} is '{row.stage}' and takes no new activities; schedule it on "
            f"account {row.account_id} instead.",
        )
    what = _text(subject, "subject", 200)
    due = _future(ctx, due_date, "due_date")
    activity_key = next_id(ctx, Activity.id, "act", 5)
    ctx.sql.insert(
        Activity,
        id=activity_key,
        kind=kind,
        subject=what,
        record_type=rtype,
        record_id=row.id,
        owner_id=_you(ctx),
        due_date=due,
        completed=False,
        completed_at=None,
        outcome="",
        created_at=ctx.now,
    )
    return _activity(ctx, ctx.sql.one(ACTIVITY, id=activity_key))


@server.tool(
    writes=True,
    returns="activity",
    phrasings=[
        "Mark activity {activity_id} as done: {outcome}",
        "I finished {activity_id}; note '{outcome}'",
    ],
    examples={"outcome": ["Left a voicemail.", "Sent the proposal.", "Demo went well."]},
)
def complete_activity(
    ctx: ToolContext,
    activity_id: ActivityRow,
    outcome: Annotated[str, Field(max_length=1000)],
) -> ActivityOut:
    """Mark an open call, meeting or task as done, with what came of it.

    Args:
        activity_id: The open activity, such as "act_00123" (accounts and deals list theirs).
        outcome: What happened, such as "Left a voicemail." or "Sent the proposal.".
    """
    a = activity_id
    if a.completed:
        raise _exists(
            "activity_completed",
            f"activity {a.id} ({a.subject!r}) was already completed at {_stamp(a.completed_at)}; "
            "schedule a new one if there is more to do.",
        )
    result = _text(outcome, "outcome", 1000)
    a = ctx.sql.update(Activity, a, completed=True, completed_at=ctx.now, outcome=result)
    return _activity(ctx, a)


@server.tool(
    writes=True,
    returns=("note", "record"),
    phrasings=["Add a note to {record_id}: {body}", "Note on {record_id} that {body}"],
    examples={"body": NOTES},
)
def add_note(
    ctx: ToolContext,
    record_id: RecordId,
    body: Annotated[str, Field(max_length=4000)],
) -> NoteOut:
    """Attach a note, written by you, to an account, contact, lead or deal.

    Args:
        record_id: An account ("acc_012"), contact ("con_0042"), lead ("lead_0031") or deal
            ("deal_0057"); not a converted lead.
        body: The note (at most 4000 characters), such as "Budget confirmed for Q3.".
    """
    rtype, row = _resolve_record(ctx, record_id)
    _open_for_work(rtype, row, "add the note")
    text = _body(body, "body", 4000)
    note_key = next_id(ctx, Note.id, "note", 5)
    ctx.sql.insert(
        Note,
        id=note_key,
        record_type=rtype,
        record_id=row.id,
        author_id=_you(ctx),
        body=text,
        created_at=ctx.now,
    )
    return _note(ctx.sql.one(NOTE, id=note_key))


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests.
NEXT_STATUS = {"new": "working", "working": "qualified", "qualified": "working"}
NEXT_STATUS["unqualified"] = "working"


@server.entity(
    "owner",
    key="owner_id",
    model=Owner,
    label="sales rep",
    not_found="Sales reps are listed with any account (get_account); ids look like 'own_03'.",
)
def _owners(ctx: ToolContext) -> list[dict[str, Any]]:
    """Active sales reps (reps who left cannot own records)."""
    rows = ctx.sql.all(ACTIVE_OWNERS)
    return [{"owner_id": o.id, "rep_name": o.name, "region": o.region} for o in rows]


@server.entity(
    "account",
    key="account_id",
    model=Account,
    not_found="Call search_accounts with words of the company's name to find its id (such as "
    "'acc_012').",
)
def _accounts(ctx: ToolContext) -> list[dict[str, Any]]:
    return [
        {
            "account_id": a.id,
            "account_name": a.name,
            "query": a.name.replace(",", " ").split()[0],
            "industry": a.industry,
        }
        for a in ctx.sql.all(ACCOUNTS_WITH_CONTACTS)
    ]


@server.entity(
    "contact",
    key="contact_id",
    model=Contact,
    not_found="Call search_contacts with the person's name or email to find the contact's id "
    "(such as 'con_0042').",
)
def _contacts(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(CONTACTS)
    return [
        {
            "contact_id": c.id,
            "account_id": c.account_id,
            "contact_name": f"{c.first_name} {c.last_name}",
            "email": c.email,
        }
        for c in rows
    ]


@server.entity(
    "lead",
    key="lead_id",
    model=Lead,
    not_found="Call search_leads with the person's name, email or company to find the lead's "
    "id (such as 'lead_0031').",
)
def _leads(ctx: ToolContext) -> list[dict[str, Any]]:
    """Leads not yet converted, with a status they could move to."""
    rows = ctx.sql.all(OPEN_LEADS)
    return [
        {
            "lead_id": lead.id,
            "lead_name": f"{lead.first_name} {lead.last_name}",
            "company": lead.company,
            "current_status": lead.status,
            "status": NEXT_STATUS[lead.status],
        }
        for lead in rows
    ]


@server.entity(
    "deal",
    key="deal_id",
    model=Deal,
    not_found="Call search_deals with words of the deal or account name to find the deal's id "
    "(such as 'deal_0057').",
)
def _deals(ctx: ToolContext) -> list[dict[str, Any]]:
    """Open deals, with the next stage they can move to as they are."""
    rows = ctx.sql.all(OPEN_DEALS)
    out = []
    for d in rows:
        nxt = STAGE_MOVES[d.stage][0]
        if nxt in NEEDS_AMOUNT and d.no_amount:
            nxt = "prospecting" if d.stage != "prospecting" else "qualification"
        out.append(
            {
                "deal_id": d.id,
                "deal_title": d.name,
                "account_id": d.account_id,
                "contact_id": d.contact_id,
                "current_stage": d.stage,
                "stage": nxt,
            }
        )
    return out


@server.entity(
    "activity",
    key="activity_id",
    model=Activity,
    not_found="Open activities are listed with their account (get_account) or deal "
    "(get_deal); ids look like 'act_00123'.",
)
def _activities(ctx: ToolContext) -> list[dict[str, Any]]:
    """Open activities (completed ones cannot be completed again)."""
    rows = ctx.sql.all(ALL_OPEN_ACTIVITIES)
    return [
        {"activity_id": a.id, "subject": a.subject, "kind": a.kind, "record_id": a.record_id}
        for a in rows
    ]


@server.entity("record", key="record_id")
def _records(ctx: ToolContext) -> list[dict[str, Any]]:
    """Accounts, contacts, open leads and open deals: what activities and notes attach to."""
    return [
        {"record_id": key, "record_type": kind, "record_name": name}
        for kind, query in RECORD_NAMES
        for key, name in ctx.sql.all(query)
    ]


@server.entity("note", key="note_id")
def _note_ids(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(NOTES_BY_ID)
    return [{"note_id": n.id, "record_id": n.record_id} for n in rows]


assert len(STAGES) == len(PROBABILITY)
