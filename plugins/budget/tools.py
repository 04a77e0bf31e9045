"""The budget server's 12 tools. Docstrings are what the model reads: keep examples concrete.

Business rules have names (``monthly_limit``, ``envelope_funds``, ...); a tool that refuses
an action raises ``PreconditionFailed`` with a message that starts with ``Rule '<name>'
failed:`` and says what would be allowed instead (:data:`RULES` lists them all; the
server's instructions carry them to the model). Every check runs before anything is
written, and the session rolls back a call that fails anyway.

The stored totals (account and category balances, ``category_months``, ``months``) change
only through :func:`_post`, :func:`_unpost` and :func:`_move`, so they always equal the sum
of their rows (see ``models.py``).
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import Field
from sqlalchemy import and_, bindparam, case, delete, func, or_, select, update

from prove_gym.server import (
    Bound,
    Conflict,
    Entity,
    InvalidArgument,
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
    CENT,
    DEPOSIT_KINDS,
    READY_TO_ASSIGN,
    ZERO,
    Account,
    Base,
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
    open_from,
)
from .sampler import EVERYDAY, FIXED_BILLS, LIFESTYLE, STREAMING, VARIABLE_BILLS, sample_budget
from .sampler import MEMOS as CATEGORY_MEMOS

RULES: dict[str, str] = {
    "date_window": "Expenses and income are dated from the first day of the previous month "
    "through today: earlier months are closed, later days have not happened yet (plan future "
    "bills with create_recurring_expense). A recurring expense starts between today and 365 "
    "days from now.",
    "closed_month": "A transaction dated in a closed month (before the previous month) cannot "
    "be deleted.",
    "monthly_limit": "A category whose enforcement is 'block' refuses an expense that would "
    "take its spending in that month over its monthly limit, and a recurring expense larger "
    "than the limit; with 'warn' the expense is recorded with a warning.",
    "envelope_funds": "Money moved out of a category (a transfer, or deleting income that went "
    "into it) cannot be more than the category holds.",
    "account_funds": "Checking, savings and cash accounts cannot go below zero; a credit card "
    "cannot go past its credit limit.",
    "account_closed": "A closed account takes no new transactions or recurring expenses.",
    "income_account": "Income is received into a checking, savings or cash account, never a "
    "credit card.",
    "category_archived": "An archived category takes no expenses, income, limits, recurring "
    "expenses or money moved in; money can still be moved out of it.",
    "ready_to_assign": "Ready to Assign (cat_000) only holds income not yet given a job: it "
    "takes no expenses, limits or recurring expenses.",
    "recurring_inactive": "Only an active recurring expense can be posted or cancelled.",
    "not_due": "A recurring expense is posted on or after its next date, never before.",
    "recurring_cap": "At most 100 recurring expenses can be active at once.",
}


OUT_OF_SCOPE = (
    "Connect my budget to my bank so transactions import automatically.",
    "Scan this receipt and add it.",
    "What will my net worth be in ten years?",
    "Share this budget with my partner.",
    "Export the whole budget to a spreadsheet.",
    "Can you file my tax return from these numbers?",
    "Round every expense up to the nearest dollar.",
    "Switch the budget's currency to euros.",
    "Print a chart of my spending by category.",
    "Suggest stocks to invest my savings in.",
    "Undo everything I changed yesterday.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

server = Server(
    "budget",
    out_of_scope=OUT_OF_SCOPE,
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.0.0",
    base=Base,
    sampler=sample_budget,
    description="A household's envelope budget: checking, savings, credit card and cash "
    "accounts; spending categories (envelopes) grouped as bills, everyday, lifestyle and "
    "savings goals, each with an optional monthly limit; expenses and income that add up into "
    "category and month totals; money moved between envelopes; recurring bills.",
    instructions="Budget conventions: ids look like 'acc_01' (account), 'cat_004' (category), "
    "'txn_00123' (transaction), 'trf_0042' (envelope transfer), 'rec_007' (recurring expense). "
    "Amounts are exact US dollars with at most two decimals: pass a number or a string such "
    "as \"42.50\"; results show amounts as strings. Dates look like '2026-03-14', months like "
    "'2026-03'. Income waits in Ready to Assign (category 'cat_000') until "
    "transfer_between_envelopes moves it into a category; an expense spends from one category "
    "and is paid from one account. Rules the tools enforce (a refusal names the rule): "
    + " ".join(f"{name}: {text}" for name, text in RULES.items()),
)

# Rows: the core looks the id up before the tool runs (not_found hints: see the entities below).
AccountRow = Annotated[Record[Account], Entity("account")]
CategoryRow = Annotated[Record[Category], Entity("category")]
TransactionRow = Annotated[Record[Transaction], Entity("transaction")]
RecurringRow = Annotated[Record[RecurringExpense], Entity("recurring_expense")]

MAX_AMOUNT = Decimal("1000000")
MAX_LIMIT = Decimal("100000")
MAX_ACTIVE_RECURRING = 100
MAX_RECURRING_YEARS = 10
RECURRING_HORIZON_DAYS = 365
MAX_SUGGESTED = Decimal(250)
"""The largest amount a category record suggests when it has no expense to go by."""

Amount = Annotated[Decimal, Field(gt=0, le=MAX_AMOUNT, decimal_places=2)]
LimitAmount = Annotated[Decimal, Field(gt=0, le=MAX_LIMIT, decimal_places=2)]
Payee = Annotated[str, Field(min_length=1, max_length=80)]
Memo = Annotated[str, Field(max_length=140)]
DateText = Annotated[str, Field(min_length=1, max_length=32)]
MonthText = Annotated[str, Field(pattern=r"^\d{4}-\d{2}$")]
SearchText = Annotated[str, Field(max_length=200)]
Limit = Annotated[int, Field(ge=1, le=100)]
Group = Literal["Bills", "Everyday", "Lifestyle", "Savings goals"]
TransactionKind = Literal["expense", "income", "account_transfer"]
Frequency = Literal["weekly", "monthly", "yearly"]
Enforcement = Literal["warn", "block"]
RecurringStatus = Literal["active", "cancelled", "ended", "all"]


# ----------------------------------------------------------------- results
class AccountOut(TypedDict):
    account_id: str
    name: str
    kind: str
    institution: str
    balance: Decimal
    credit_limit: Decimal | None
    available: Decimal
    closed: bool


class AccountsOut(TypedDict):
    as_of: str
    net_balance: Decimal
    accounts: list[AccountOut]


class CategoryOut(TypedDict):
    category_id: str
    name: str
    group: str
    monthly_limit: Decimal | None
    enforcement: str
    spent: Decimal
    assigned: Decimal
    remaining: Decimal | None
    over_limit: bool
    balance: Decimal
    archived: bool


class BudgetOut(TypedDict):
    month: str
    today: str
    ready_to_assign: Decimal
    ready_to_assign_id: str
    income: Decimal
    spent: Decimal
    categories: list[CategoryOut]


class TransactionOut(TypedDict):
    transaction_id: str
    date: str
    kind: str
    account_id: str
    to_account_id: str | None
    category_id: str | None
    category_name: str | None
    payee: str
    memo: str
    amount: Decimal
    recurring_id: str | None


class SearchOut(TypedDict):
    count: int
    expenses_total: Decimal
    income_total: Decimal
    transactions: list[TransactionOut]


class RecurringOut(TypedDict):
    recurring_id: str
    payee: str
    account_id: str
    category_id: str
    amount: Decimal
    frequency: str
    start_date: str
    next_date: str
    end_date: str | None
    status: str
    due: bool


class RecurringList(TypedDict):
    today: str
    recurring_expenses: list[RecurringOut]


class ExpenseOut(TypedDict):
    transaction_id: str
    date: str
    month: str
    account_id: str
    category_id: str
    amount: Decimal
    payee: str
    memo: str
    category_spent: Decimal
    monthly_limit: Decimal | None
    remaining: Decimal | None
    enforcement: str
    warning: str | None
    category_balance: Decimal
    account_balance: Decimal


class IncomeOut(TypedDict):
    transaction_id: str
    date: str
    account_id: str
    category_id: str
    amount: Decimal
    payer: str
    memo: str
    account_balance: Decimal
    category_balance: Decimal


class DeletedOut(TypedDict):
    transaction_id: str
    kind: str
    date: str
    amount: Decimal
    payee: str
    account_id: str
    account_balance: Decimal
    to_account_id: str | None
    category_id: str | None
    category_balance: Decimal | None


class TransferOut(TypedDict):
    transfer_id: str
    date: str
    from_category_id: str
    to_category_id: str
    amount: Decimal
    memo: str
    from_balance: Decimal
    to_balance: Decimal


class LimitOut(TypedDict):
    category_id: str
    name: str
    monthly_limit: Decimal
    previous_limit: Decimal | None
    enforcement: str
    month: str
    spent: Decimal
    remaining: Decimal
    over_limit: bool
    warning: str | None


class PostedOut(TypedDict):
    recurring_id: str
    transaction_id: str
    date: str
    amount: Decimal
    payee: str
    account_id: str
    category_id: str
    next_date: str
    status: str
    still_due: bool
    category_spent: Decimal
    remaining: Decimal | None
    warning: str | None
    account_balance: Decimal
    category_balance: Decimal


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
accounts_t, categories_t = Account.__table__, Category.__table__
transactions_t, recurring_t = Transaction.__table__, RecurringExpense.__table__
category_months_t, months_t = CategoryMonth.__table__, Month.__table__
SETTINGS = Query(select(Settings.__table__).where(Settings.id == 1))
ACCOUNT = Query(select(accounts_t).where(Account.id == bindparam("id")))
ACCOUNTS = Query(select(accounts_t).order_by(Account.id))
OPEN_ACCOUNTS = Query(select(accounts_t).where(Account.closed.is_(False)).order_by(Account.id))
NET_BALANCE = Query(select(func.sum(Account.balance)).where(Account.closed.is_(False)))
CATEGORY = Query(select(categories_t).where(Category.id == bindparam("id")))
ACTIVE_CATEGORIES = Query(
    select(categories_t).where(Category.archived.is_(False)).order_by(Category.id)
)
# category_months has a two-column key: (category_id, month)
_CATEGORY_MONTH_KEY = (
    CategoryMonth.category_id == bindparam("category_id"),
    CategoryMonth.month == bindparam("month"),
)
CATEGORY_MONTH = Query(select(category_months_t).where(*_CATEGORY_MONTH_KEY))
SPENT = Query(select(CategoryMonth.spent).where(*_CATEGORY_MONTH_KEY))
SET_CATEGORY_MONTH = Query(
    update(CategoryMonth)
    .where(*_CATEGORY_MONTH_KEY)
    .values(spent=bindparam("spent"), assigned=bindparam("assigned"))
)
DELETE_CATEGORY_MONTH = Query(delete(CategoryMonth).where(*_CATEGORY_MONTH_KEY))
SPENT_IN_MONTH = Query(
    select(CategoryMonth.category_id, CategoryMonth.spent)
    .where(CategoryMonth.month == bindparam("month"))
    .order_by(CategoryMonth.category_id)
)
MONTH = Query(select(months_t).where(Month.month == bindparam("month")))
DELETE_MONTH = Query(delete(Month).where(Month.month == bindparam("month")))
DELETE_TRANSACTION = Query(delete(Transaction).where(Transaction.id == bindparam("id")))
# what still adds to a month's totals (first and last: the month's first and last day)
_IN_MONTH = (Transaction.date >= bindparam("first"), Transaction.date <= bindparam("last"))
CATEGORY_TRANSACTION_IN_MONTH = Query(
    select(Transaction.id)
    .where(*_IN_MONTH, Transaction.category_id == bindparam("category_id"))
    .limit(1)
)
CATEGORY_TRANSFER_IN_MONTH = Query(
    select(EnvelopeTransfer.id)
    .where(
        EnvelopeTransfer.date >= bindparam("first"),
        EnvelopeTransfer.date <= bindparam("last"),
        or_(
            EnvelopeTransfer.from_category_id == bindparam("category_id"),
            EnvelopeTransfer.to_category_id == bindparam("category_id"),
        ),
    )
    .limit(1)
)
TRANSACTION_IN_MONTH = Query(
    select(Transaction.id).where(*_IN_MONTH, Transaction.kind.in_(("expense", "income"))).limit(1)
)
LAST_EXPENSE = Query(
    select(Transaction.payee, Transaction.amount)
    .where(Transaction.category_id == bindparam("category_id"), Transaction.kind == "expense")
    .order_by(Transaction.date.desc(), Transaction.id.desc())
    .limit(1)
)
# expenses and income from a day on, with the balances of their account and category
DELETABLE_SINCE = Query(
    select(
        Transaction.id,
        Transaction.kind,
        Transaction.payee,
        Transaction.date,
        Transaction.account_id,
        Transaction.category_id,
        Transaction.amount,
        Account.balance.label("account_balance"),
        Category.balance.label("category_balance"),
    )
    .select_from(
        transactions_t.join(accounts_t, Transaction.account_id == Account.id).outerjoin(
            categories_t, Transaction.category_id == Category.id
        )
    )
    .where(Transaction.date >= bindparam("first"), Transaction.kind.in_(("expense", "income")))
    .order_by(Transaction.id)
)
ACTIVE_RECURRING_COUNT = Query(
    select(func.count()).select_from(recurring_t).where(RecurringExpense.status == "active")
)
SAME_RECURRING = Query(  # an active bill like a new one (payee compared lowercased)
    select(RecurringExpense.id)
    .where(
        RecurringExpense.status == "active",
        func.lower(RecurringExpense.payee) == bindparam("payee"),
        RecurringExpense.account_id == bindparam("account_id"),
        RecurringExpense.category_id == bindparam("category_id"),
        RecurringExpense.amount == bindparam("amount"),
        RecurringExpense.frequency == bindparam("frequency"),
    )
    .order_by(RecurringExpense.id)
    .limit(1)
)
ACTIVE_RECURRING = Query(
    select(
        RecurringExpense.id,
        RecurringExpense.payee,
        RecurringExpense.account_id,
        RecurringExpense.category_id,
        RecurringExpense.next_date,
    )
    .where(RecurringExpense.status == "active")
    .order_by(RecurringExpense.id)
)
TRANSFERS = Query(
    select(
        EnvelopeTransfer.id, EnvelopeTransfer.from_category_id, EnvelopeTransfer.to_category_id
    ).order_by(EnvelopeTransfer.id)
)


@functools.cache
def _budget_query(by_group: bool, include_archived: bool) -> Query:
    """The spending categories with their totals of one month, by id: list_categories'."""
    stmt = (
        select(categories_t, CategoryMonth.spent, CategoryMonth.assigned)
        .select_from(
            categories_t.outerjoin(
                category_months_t,
                and_(
                    CategoryMonth.category_id == Category.id,
                    CategoryMonth.month == bindparam("month"),
                ),
            )
        )
        .where(Category.id != READY_TO_ASSIGN)
        .order_by(Category.id)
    )
    if by_group:
        stmt = stmt.where(Category.group_name == bindparam("group"))
    if not include_archived:
        stmt = stmt.where(Category.archived.is_(False))
    return Query(stmt)


@dataclass(frozen=True)
class _Search:
    """search_transactions' statements for one combination of filters."""

    totals: Query  # how many match (``matches``), the sums of their ``expenses`` and ``income``
    page: Query  # the newest ``limit``, each with its category's name


def _search_for(params: dict[str, Any]) -> _Search:
    """The statements of search_transactions for the filters ``params`` holds (the bound
    values of a search: ``first``/``last`` of a month, ``lo``, ``hi``, ``category_id``,
    ``account_id``, ``kind``, ``pattern``)."""
    return _search_queries(
        month="first" in params,
        since="lo" in params,
        until="hi" in params,
        by_category="category_id" in params,
        by_account="account_id" in params,
        by_kind="kind" in params,
        matching="pattern" in params,
    )


@functools.cache
def _search_queries(
    month: bool,
    since: bool,
    until: bool,
    by_category: bool,
    by_account: bool,
    by_kind: bool,
    matching: bool,
) -> _Search:
    """The statements of search_transactions with the filters asked for."""
    where: list[Any] = []
    if month:
        where += [Transaction.date >= bindparam("first"), Transaction.date <= bindparam("last")]
    if since:
        where.append(Transaction.date >= bindparam("lo"))
    if until:
        where.append(Transaction.date <= bindparam("hi"))
    if by_category:
        where.append(Transaction.category_id == bindparam("category_id"))
    if by_account:  # paid from it, or (an account transfer) paid to it
        where.append(
            or_(
                Transaction.account_id == bindparam("account_id"),
                Transaction.to_account_id == bindparam("account_id"),
            )
        )
    if by_kind:
        where.append(Transaction.kind == bindparam("kind"))
    if matching:
        where.append(contains(bindparam("pattern"), Transaction.payee, Transaction.memo))
    page = (
        select(transactions_t, Category.name.label("category_name"))
        .select_from(transactions_t.outerjoin(categories_t, Transaction.category_id == Category.id))
        .where(*where)
        .order_by(
            Transaction.date.desc(), func.length(Transaction.id).desc(), Transaction.id.desc()
        )
        .limit(bindparam("limit"))
    )

    def total(kind: str) -> Any:  # the sum of the amounts of one kind (NULL where none)
        return func.sum(case((Transaction.kind == kind, Transaction.amount)))

    # the count and both sums in one pass over the matches
    totals = (
        select(
            func.count().label("matches"),
            total("expense").label("expenses"),
            total("income").label("income"),
        )
        .select_from(transactions_t)
        .where(*where)
    )
    return _Search(totals=Query(totals), page=Query(page))


@functools.cache
def _recurring_query(by_status: bool, by_category: bool) -> Query:
    """Recurring expenses, soonest first: list_recurring_expenses' statement."""
    stmt = select(recurring_t).order_by(RecurringExpense.next_date, RecurringExpense.id)
    if by_status:
        stmt = stmt.where(RecurringExpense.status == bindparam("status"))
    if by_category:
        stmt = stmt.where(RecurringExpense.category_id == bindparam("category_id"))
    return Query(stmt)


BILLS_OF_CATEGORY = _recurring_query(False, True)
PAYEES_OF_CATEGORY = Query(
    select(transactions_t.c.payee)
    .where(transactions_t.c.category_id == bindparam("category_id"))
    .where(transactions_t.c.kind == "expense")
    .distinct()
    .order_by(transactions_t.c.payee)
)
"""The payees the budget's past expenses of a category went to, by name."""


# ----------------------------------------------------------------- helpers
def _broken(rule: str, detail: str) -> PreconditionFailed:
    """The error for a failed business rule: it names the rule, then says what to do."""
    return PreconditionFailed(f"Rule '{rule}' failed: {detail}")


def _settings(ctx: ToolContext) -> Any:
    return ctx.sql.one(SETTINGS)


def _today(ctx: ToolContext) -> dt.date:
    return ctx.now.date()


def _open_from(ctx: ToolContext) -> dt.date:
    return open_from(_settings(ctx).closed_through)


def _text(value: str, name: str) -> str:
    """Surrounding whitespace removed; an all-blank required text is refused."""
    text = value.strip()
    if not text:
        raise InvalidArgument(f"{name} must not be blank.")
    return text


def _label(row: Any) -> str:
    """An account's or a category's id and name."""
    return f"{row.id} ({row.name})"


def _transaction_day(ctx: ToolContext, value: str | None, name: str = "date") -> dt.date:
    """The day a new expense or income is dated: today by default, inside the open window."""
    today = _today(ctx)
    if value is None:
        return today
    day = parse_date(value, name)
    first = _open_from(ctx)
    if day > today:
        raise _broken(
            "date_window",
            f"{name} {day.isoformat()} is in the future (today is {today.isoformat()}). Record "
            "it on or after the day it happens, or plan it with create_recurring_expense.",
        )
    if day < first:
        raise _broken(
            "date_window",
            f"{name} {day.isoformat()} falls in a closed month: months through "
            f"{_settings(ctx).closed_through.isoformat()} are reconciled. Use a date from "
            f"{first.isoformat()} to {today.isoformat()}.",
        )
    return day


def _month(ctx: ToolContext, value: str | None) -> str:
    """A month ("YYYY-MM") with recorded history: from the first recorded month to now."""
    today = _today(ctx)
    if value is None:
        return month_key(today)
    try:
        first = dt.date(int(value[:4]), int(value[5:7]), 1)
    except ValueError:
        raise InvalidArgument(f"month must look like '2026-03', got {value!r}.") from None
    start = _settings(ctx).history_start
    if first > today:
        raise PreconditionFailed(
            f"{value} has not started yet; today is {today.isoformat()}. Ask for "
            f"{month_key(today)} or an earlier month."
        )
    if first < first_of_month(start):
        raise PreconditionFailed(
            f"No budget data for {value}: the history starts on {start.isoformat()}. Ask for "
            f"{month_key(start)} or later."
        )
    return month_key(first)


def _month_bounds(month: str) -> tuple[dt.date, dt.date]:
    first = dt.date(int(month[:4]), int(month[5:7]), 1)
    return first, first_of_month(first, 1) - dt.timedelta(days=1)


def _floor(acc: Any) -> Decimal:
    """The lowest balance the account may reach."""
    if acc.kind == "credit_card":
        return -(acc.credit_limit or ZERO)
    return ZERO


def _available(acc: Any) -> Decimal:
    return acc.balance - _floor(acc)


def _check_account(acc: Any, change: Decimal, doing: str) -> None:
    """``account_funds``: the balance after ``change`` stays at or above the account's floor."""
    if acc.balance + change >= _floor(acc):
        return
    if acc.kind == "credit_card":
        limit = f"a credit limit of {acc.credit_limit}, so at most {_available(acc)} more fits"
    else:
        limit = f"a {acc.kind} account cannot go below zero, so at most {acc.balance} can leave it"
    raise _broken(
        "account_funds",
        f"{doing} would take {_label(acc)} from {acc.balance} to {acc.balance + change}: "
        f"{limit}. Use another account (list_accounts shows what each can cover).",
    )


def _check_open_account(acc: Any) -> None:
    if acc.closed:
        raise _broken(
            "account_closed",
            f"{_label(acc)} is closed and takes no new transactions. Pick an open account "
            "from list_accounts.",
        )


def _check_spending_category(cat: Any, doing: str) -> None:
    if cat.id == READY_TO_ASSIGN:
        raise _broken(
            "ready_to_assign",
            f"Ready to Assign ({cat.id}) only holds income that has no job yet; {doing} must "
            "name a spending category. list_categories shows them; move money from "
            f"{cat.id} into one with transfer_between_envelopes.",
        )
    if cat.archived:
        raise _broken(
            "category_archived",
            f"{_label(cat)} is archived and takes no {doing}. Pick an active category from "
            "list_categories.",
        )


def _spent(ctx: ToolContext, category_id: str, month: str) -> Decimal:
    spent = ctx.sql.scalar(SPENT, category_id=category_id, month=month)
    return spent if spent is not None else ZERO


def _check_limit(ctx: ToolContext, cat: Any, day: dt.date, amount: Decimal) -> str | None:
    """``monthly_limit``: refuse an expense over a blocking limit; the warning for 'warn'."""
    if cat.monthly_limit is None:
        return None
    month = month_key(day)
    spent = _spent(ctx, cat.id, month)
    after = spent + amount
    if after <= cat.monthly_limit:
        return None
    room = max(cat.monthly_limit - spent, ZERO)
    if cat.enforcement == "block":
        needed = after.quantize(Decimal(1), rounding=ROUND_CEILING).quantize(CENT)
        raise _broken(
            "monthly_limit",
            f"{_label(cat)} blocks spending over its monthly limit of {cat.monthly_limit}; "
            f"{month} spending is {spent}, so at most {room} more fits, not {amount}. Raise the "
            f"limit with set_category_limit (monthly_limit={needed}), switch it to "
            "enforcement 'warn', or record the expense in another category.",
        )
    return (
        f"{_label(cat)} is now over its monthly limit of {cat.monthly_limit} for {month}: "
        f"{after} spent ({after - cat.monthly_limit} over)."
    )


def _add_to_category_month(
    ctx: ToolContext,
    category_id: str,
    month: str,
    *,
    spent: Decimal = ZERO,
    assigned: Decimal = ZERO,
) -> None:
    """Add to a category's totals of one month; its row is created by its first activity."""
    row = ctx.sql.first(CATEGORY_MONTH, category_id=category_id, month=month)
    if row is None:
        ctx.sql.insert(
            CategoryMonth, category_id=category_id, month=month, spent=spent, assigned=assigned
        )
    else:  # an amount is never zero, so the row always changes
        ctx.sql.run(
            SET_CATEGORY_MONTH,
            category_id=category_id,
            month=month,
            spent=row.spent + spent,
            assigned=row.assigned + assigned,
        )


def _add_to_month(
    ctx: ToolContext, month: str, *, income: Decimal = ZERO, spent: Decimal = ZERO
) -> None:
    """Add to the budget's totals of one month; its row is created by its first activity."""
    row = ctx.sql.first(MONTH, month=month)
    if row is None:
        ctx.sql.insert(Month, month=month, income=income, spent=spent)
    else:
        ctx.sql.update(Month, row, income=row.income + income, spent=row.spent + spent)


def _post(ctx: ToolContext, txn: Any, acc: Any, cat: Any, sign: int = 1) -> tuple[Any, Any]:
    """Add an expense's or income's amount to every stored total it belongs to (``sign=-1``
    removes it); its account and category rows with their new balances."""
    amount = txn.amount * sign
    month = month_key(txn.date)
    if txn.kind == "expense":
        acc = ctx.sql.update(Account, acc, balance=acc.balance - amount)
        cat = ctx.sql.update(Category, cat, balance=cat.balance - amount)
        _add_to_category_month(ctx, cat.id, month, spent=amount)
        _add_to_month(ctx, month, spent=amount)
    else:
        acc = ctx.sql.update(Account, acc, balance=acc.balance + amount)
        cat = ctx.sql.update(Category, cat, balance=cat.balance + amount)
        _add_to_category_month(ctx, cat.id, month, assigned=amount)
        _add_to_month(ctx, month, income=amount)
    return acc, cat


def _unpost(ctx: ToolContext, txn: Any, acc: Any, cat: Any | None) -> tuple[Any, Any | None]:
    """Remove a transaction and its share of the totals; drop total rows left with no activity.

    Returns its account and category (``None`` for an account transfer) as it left them.
    """
    if txn.kind == "account_transfer":  # only the two accounts' balances hold it
        acc = ctx.sql.update(Account, acc, balance=acc.balance + txn.amount)
        dst = ctx.sql.one(ACCOUNT, id=txn.to_account_id)  # read after: it could be acc itself
        ctx.sql.update(Account, dst, balance=dst.balance - txn.amount)
    else:
        acc, cat = _post(ctx, txn, acc, cat, -1)
    ctx.sql.run(DELETE_TRANSACTION, id=txn.id)
    if txn.category_id is not None:
        _prune(ctx, txn.category_id, month_key(txn.date))
    return acc, cat


def _prune(ctx: ToolContext, category_id: str, month: str) -> None:
    """Delete the month total rows that no transaction or transfer contributes to any more."""
    first, last = _month_bounds(month)
    of_category = {"category_id": category_id, "first": first, "last": last}
    if (
        ctx.sql.first(CATEGORY_TRANSACTION_IN_MONTH, **of_category) is None
        and ctx.sql.first(CATEGORY_TRANSFER_IN_MONTH, **of_category) is None
    ):
        ctx.sql.run(DELETE_CATEGORY_MONTH, category_id=category_id, month=month)
    if ctx.sql.first(TRANSACTION_IN_MONTH, first=first, last=last) is None:
        ctx.sql.run(DELETE_MONTH, month=month)


class _Posted(NamedTuple):
    """A transaction just recorded, with its account and category rows as it left them."""

    transaction: Any
    account: Any
    category: Any


def _new_transaction(
    ctx: ToolContext,
    kind: str,
    acc: Any,
    cat: Any,
    amount: Decimal,
    day: dt.date,
    payee: str,
    memo: str,
    recurring_id: str | None = None,
) -> _Posted:
    values = {
        "id": next_id(ctx, Transaction.id, "txn", 5),
        "date": day,
        "kind": kind,
        "account_id": acc.id,
        "to_account_id": None,
        "category_id": cat.id,
        "amount": amount,
        "payee": payee,
        "memo": memo,
        "recurring_id": recurring_id,
    }
    ctx.sql.insert(Transaction, **values)
    txn = SimpleNamespace(**values)
    acc, cat = _post(ctx, txn, acc, cat)
    return _Posted(txn, acc, cat)


def _expense(
    ctx: ToolContext,
    acc: Any,
    cat: Any,
    amount: Decimal,
    day: dt.date,
    payee: str,
    memo: str,
    recurring_id: str | None = None,
) -> tuple[_Posted, str | None]:
    """Check every rule an expense must pass, then record it; returns it and any warning."""
    money = amount.quantize(CENT)
    _check_open_account(acc)
    _check_spending_category(cat, "expenses")
    warning = _check_limit(ctx, cat, day, money)
    _check_account(acc, -money, f"Paying {money}")
    posted = _new_transaction(ctx, "expense", acc, cat, money, day, payee, memo, recurring_id)
    return posted, warning


def _remaining(cat: Any, spent: Decimal) -> Decimal | None:
    return None if cat.monthly_limit is None else cat.monthly_limit - spent


def _account_out(acc: Any) -> AccountOut:
    return {
        "account_id": acc.id,
        "name": acc.name,
        "kind": acc.kind,
        "institution": acc.institution,
        "balance": acc.balance,
        "credit_limit": acc.credit_limit,
        "available": _available(acc),
        "closed": acc.closed,
    }


def _recurring_out(ctx: ToolContext, rec: Any) -> RecurringOut:
    return {
        "recurring_id": rec.id,
        "payee": rec.payee,
        "account_id": rec.account_id,
        "category_id": rec.category_id,
        "amount": rec.amount,
        "frequency": rec.frequency,
        "start_date": rec.start_date.isoformat(),
        "next_date": rec.next_date.isoformat(),
        "end_date": rec.end_date.isoformat() if rec.end_date else None,
        "status": rec.status,
        "due": rec.status == "active" and rec.next_date <= _today(ctx),
    }


def _transaction_out(t: Any) -> TransactionOut:
    """A transaction row with its category's name (``category_name``: None without one)."""
    return {
        "transaction_id": t.id,
        "date": t.date.isoformat(),
        "kind": t.kind,
        "account_id": t.account_id,
        "to_account_id": t.to_account_id,
        "category_id": t.category_id,
        "category_name": t.category_name,
        "payee": t.payee,
        "memo": t.memo,
        "amount": t.amount,
        "recurring_id": t.recurring_id,
    }


# -------------------------------------------------------- example values
def _open_day(ctx: ToolContext, rng: random.Random) -> str:
    first = _open_from(ctx)
    span = (ctx.now.date() - first).days
    return (ctx.now.date() - dt.timedelta(days=rng.randint(0, min(span, 12)))).isoformat()


def _recent_month(ctx: ToolContext, rng: random.Random) -> str:
    return month_key(first_of_month(ctx.now.date(), -rng.randint(0, 2)))


def _start_day(ctx: ToolContext, rng: random.Random) -> str:
    return (ctx.now.date() + dt.timedelta(days=rng.randint(1, 30))).isoformat()


def _end_day(ctx: ToolContext, rng: random.Random) -> str:
    return (ctx.now.date() + dt.timedelta(days=rng.randint(150, 365))).isoformat()


def _window_start(ctx: ToolContext, rng: random.Random) -> str:
    first = _open_from(ctx)
    return (first + dt.timedelta(days=rng.randint(0, 10))).isoformat()


def _window_end(ctx: ToolContext, rng: random.Random) -> str:
    return (ctx.now.date() - dt.timedelta(days=rng.randint(0, 5))).isoformat()


def _payee_for_search(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A payee of a transaction the search's other filters find (the month, the days, the
    category, the account, the kind), so its words and the filters agree: no "Whole Foods"
    asked of the rent category (None: the filters find nothing to name)."""
    args = bound.args
    params: dict[str, Any] = {}
    try:
        if args.get("month") is not None:
            params["first"], params["last"] = _month_bounds(_month(ctx, str(args["month"])))
        if args.get("start_date") is not None:
            params["lo"] = parse_date(str(args["start_date"]), "start_date")
        if args.get("end_date") is not None:
            params["hi"] = parse_date(str(args["end_date"]), "end_date")
    except InvalidArgument:
        return None
    for name in ("category_id", "account_id", "kind"):
        if args.get(name) is not None:
            params[name] = str(args[name])
    search = _search_for(params)
    payees = sorted({row.payee for row in ctx.sql.all(search.page, **params, limit=100)})
    return rng.choice(payees) if payees else None


AMOUNTS = [12.5, 24.99, "38.40", 45, 60, "89.95", 120]
PAYEES = ["Whole Foods Market", "Shell", "Target", "Chipotle", "CVS Pharmacy", "AMC Theatres"]
PAYERS = ["Acme Corp payroll", "Freelance invoice", "Tax refund", "Venmo from Sam", "eBay sale"]
PAY: list[str | int] = [1850, "2450.00", "3120.00"]
"""What a paycheck brings in."""
OTHER_INCOME: list[str | int] = [75, 150, "320.50", 1200]
"""What other income brings in (a refund, a sale, money from a friend)."""
SPENDING_GROUPS = frozenset({"Bills", "Everyday"})
"""Groups whose envelopes income is never filed under (payroll is no rent)."""


def _income_amount(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | int | None:
    """An amount the payer would pay (a paycheck for payroll), for income filed where income
    goes: Ready to Assign, a savings goal, or (money from a friend) a Lifestyle envelope.
    None for a bill or an everyday envelope, so synthesis draws another category."""
    group = bound.records.get("category_id", {}).get("group")
    payer = str(bound.args.get("payer", ""))
    if group in SPENDING_GROUPS or (group == "Lifestyle" and not payer.startswith("Venmo")):
        return None
    return rng.choice(PAY if "payroll" in payer.casefold() else OTHER_INCOME)


GOAL_PAYEES: dict[str, tuple[str, ...]] = {
    "Emergency fund": ("Urgent Care Center", "AAA Roadside", "Roto-Rooter"),
    "Vacation": ("Delta Air Lines", "Airbnb", "Marriott", "Expedia"),
    "New car": ("Toyota of Springfield", "Carvana", "Jiffy Lube"),
    "Holiday gifts": ("Amazon", "Target", "Etsy", "Macy's"),
    "Home repairs": ("The Home Depot", "Lowe's", "Ace Hardware", "Mr. Handyman"),
    "Annual bills": ("Amazon Prime", "Costco Membership", "DMV registration"),
}
"""Where money set aside for a savings goal is spent."""
CATEGORY_PAYEES: dict[str, tuple[str, ...]] = {
    **{s.name: s.payees for s in (*EVERYDAY, *LIFESTYLE)},
    **{name: payees for name, payees, _, _ in (*VARIABLE_BILLS, *FIXED_BILLS)},
    **GOAL_PAYEES,
    "Subscriptions": tuple(name for name, _ in STREAMING),
}
"""The payees an expense filed under a category of the sampled budget is paid to, by the
category's name: a dinner at Chipotle goes under Dining out, not Home repairs."""


def _category(ctx: ToolContext, bound: Bound) -> tuple[str, str]:
    """The name and group of the category the call files under (the initial state's
    record, or the live row of a category the conversation made)."""
    record = bound.records.get("category_id")
    if record is not None:
        return str(record.get("name", "")), str(record.get("group", ""))
    row = ctx.sql.first(CATEGORY, id=str(bound.args.get("category_id", "")))
    return (str(row.name), str(row.group_name)) if row is not None else ("", "")


ONE_PROVIDER = frozenset(["Rent", *(name for name, _, _, _ in (*VARIABLE_BILLS, *FIXED_BILLS))])
"""Categories a household pays to one provider: one electricity company, one landlord."""


def _expense_payee(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The payee of a one-off expense: :func:`_payee`."""
    return _payee(ctx, rng, bound, bill=False)


def _bill_payee(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The payee of a new recurring bill: :func:`_payee`; None where the household already
    pays the category's one provider a bill (a second rent), so synthesis draws another
    category."""
    return _payee(ctx, rng, bound, bill=True)


def _payee(ctx: ToolContext, rng: random.Random, bound: Bound, *, bill: bool) -> str | None:
    """A payee that fits the expense's category (Chipotle for Dining out, Geico for Car
    insurance, the landlord of a bill filed under Rent); for a category the budget's owner
    named themself, any everyday payee. The household's own provider where it has one
    (the PG&E its past electricity bills went to, never Duke Energy besides). None for
    Ready to Assign, which holds income, so synthesis draws another category."""
    name, group = _category(ctx, bound)
    if group == "Inflow":
        return None
    category_id = str(bound.args.get("category_id", ""))
    if name in ONE_PROVIDER:
        bills = ctx.sql.all(BILLS_OF_CATEGORY, category_id=category_id)
        if bills and bill:
            return None  # a second rent, a second phone contract: another category
        paid = [str(b.payee) for b in bills] or [
            str(r.payee) for r in ctx.sql.all(PAYEES_OF_CATEGORY, category_id=category_id)
        ]
        if paid:
            return rng.choice(sorted(set(paid)))
    fits = CATEGORY_PAYEES.get(name)
    if name == "Subscriptions":  # the service that costs the drawn 13.99
        amount = str(bound.args.get("amount"))
        fits = tuple(n for n, price in STREAMING if price == amount) or fits
    if fits is None:
        bills = ctx.sql.all(BILLS_OF_CATEGORY, category_id=category_id)
        fits = tuple(sorted({str(b.payee) for b in bills})) or tuple(PAYEES)
    return rng.choice(fits)


BILL_RANGES: dict[str, tuple[float, float]] = {
    **{s.name: (s.lo, s.hi) for s in (*EVERYDAY, *LIFESTYLE)},
    **{name: (lo, hi) for name, _, lo, hi in (*VARIABLE_BILLS, *FIXED_BILLS)},
    "Subscriptions": (2.99, 17.99),
    "Annual bills": (60.0, 240.0),
}
"""What one bill of a category costs, by the category's name (rent: :data:`RENT`)."""
RENT = (1200, 2600)
"""A month's rent, in whole units."""


def _bill_amount(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """What a bill filed under the category would cost: a month's rent for Rent (never
    174.76), a streaming price for Subscriptions, a grocery shop's range for Groceries;
    for a savings goal or a category the owner named, an everyday sum. None for Ready to
    Assign."""
    name, group = _category(ctx, bound)
    if group == "Inflow":
        return None
    if name == "Rent":
        return f"{rng.randrange(RENT[0], RENT[1] + 1, 25)}.00"
    if name == "Subscriptions":  # a service's own price (the payee is drawn to match)
        return rng.choice([price for _, price in STREAMING])
    lo, hi = BILL_RANGES.get(name, (10.0, 150.0))
    cents = rng.randint(round(lo * 100), round(hi * 100))
    return f"{cents // 100}.{cents % 100:02d}"


def _expense_memo(ctx: ToolContext, rng: random.Random, bound: Bound) -> str:
    """A memo that fits the expense's category ("Birthday dinner" for Dining out), or none
    (``""``, the default) where no memo says more than the category does."""
    name, _ = _category(ctx, bound)
    return rng.choice([m for m in CATEGORY_MEMOS.get(name, []) if m] or [""])


def _bill_frequency(ctx: ToolContext, rng: random.Random, bound: Bound) -> str:
    """How often a bill of the drawn amount and category comes: a bill, a subscription or
    money put towards a goal monthly (yearly for Annual bills); an everyday cost weekly only
    for small sums (a dog walker's 25.00), else monthly or yearly: never a weekly 2,300.00
    bill, nor a weekly streaming subscription."""
    name, group = _category(ctx, bound)
    if name == "Annual bills":
        return "yearly"
    if group in ("Bills", "Savings goals"):
        return "monthly"
    try:
        amount = Decimal(str(bound.args.get("amount", "0")))
    except ArithmeticError:
        amount = Decimal(0)
    if amount <= 150:
        return rng.choice(["weekly", "monthly", "monthly"])
    if amount <= 1500:
        return rng.choice(["monthly", "monthly", "yearly"])
    return "monthly"


# ------------------------------------------------------------------- tools
@server.tool(
    returns="account",
    phrasings=["What accounts do I have?", "Show my account balances, closed ones too"],
)
def list_accounts(ctx: ToolContext, include_closed: bool = False) -> AccountsOut:
    """List the budget's accounts with balances; credit cards show debt as a negative balance.

    Args:
        include_closed: Also list closed accounts, such as an old checking account.

    Returns:
        {"as_of": "2026-03-14", "net_balance": "5120.33", "accounts": [{"account_id":
        "acc_01", "name": "Chase checking", "kind": "checking", "balance": "2310.55",
        "credit_limit": null, "available": "2310.55", "closed": false}, ...]}. "available" is
        what the account can still pay: the balance, or for a card the balance plus its limit.
    """
    rows = ctx.sql.all(ACCOUNTS if include_closed else OPEN_ACCOUNTS)
    net = ctx.sql.scalar(NET_BALANCE)
    return {
        "as_of": _today(ctx).isoformat(),
        "net_balance": net if net is not None else ZERO,
        "accounts": [_account_out(a) for a in rows],
    }


@server.tool(
    returns="category",
    phrasings=[
        "How is my budget doing this month?",
        "Show my {group} categories for {month}",
        "How much did I spend per category in {month}?",
    ],
    examples={"month": _recent_month},
)
def list_categories(
    ctx: ToolContext,
    month: MonthText | None = None,
    group: Group | None = None,
    include_archived: bool = False,
) -> BudgetOut:
    """The budget for one month: Ready to Assign, and per category its limit, spending and balance.

    Args:
        month: The month as "YYYY-MM", such as "2026-02"; default the current month.
        group: Only one group: "Bills", "Everyday", "Lifestyle" or "Savings goals".
        include_archived: Also list archived categories.

    Returns:
        {"month": "2026-03", "ready_to_assign": "412.00", "ready_to_assign_id": "cat_000",
        "income": "5400.00", "spent": "3120.75", "categories": [{"category_id": "cat_009",
        "name": "Dining out", "group": "Everyday", "monthly_limit": "250.00", "enforcement":
        "block", "spent": "231.40", "assigned": "250.00", "remaining": "18.60",
        "over_limit": false, "balance": "41.12", ...}]}. "spent" and "assigned" are for the
        month; "balance" is what the envelope holds now.
    """
    key = _month(ctx, month)
    params: dict[str, Any] = {"month": key}
    if group is not None:
        params["group"] = group
    rows = ctx.sql.all(_budget_query(group is not None, include_archived), **params)
    out: list[CategoryOut] = []
    for cat in rows:
        spent = cat.spent if cat.spent is not None else ZERO
        remaining = _remaining(cat, spent)
        out.append(
            {
                "category_id": cat.id,
                "name": cat.name,
                "group": cat.group_name,
                "monthly_limit": cat.monthly_limit,
                "enforcement": cat.enforcement,
                "spent": spent,
                "assigned": cat.assigned if cat.assigned is not None else ZERO,
                "remaining": remaining,
                "over_limit": remaining is not None and remaining < 0,
                "balance": cat.balance,
                "archived": cat.archived,
            }
        )
    totals = ctx.sql.first(MONTH, month=key)
    return {
        "month": key,
        "today": _today(ctx).isoformat(),
        "ready_to_assign": ctx.sql.one(CATEGORY, id=READY_TO_ASSIGN).balance,
        "ready_to_assign_id": READY_TO_ASSIGN,
        "income": totals.income if totals is not None else ZERO,
        "spent": totals.spent if totals is not None else ZERO,
        "categories": out,
    }


@server.tool(
    returns=("transaction", "category", "account", "recurring_expense"),
    phrasings=[
        "Show my recent transactions",
        "Show my {category_id} spending in {month}",
        "Find my {query} purchases",
        "List the transactions on account {account_id} from {start_date} to {end_date}",
        "How much did I spend in {month}?",
    ],
    examples={"month": _recent_month, "start_date": _window_start, "end_date": _window_end},
    values={"query": _payee_for_search},
)
def search_transactions(
    ctx: ToolContext,
    month: MonthText | None = None,
    start_date: DateText | None = None,
    end_date: DateText | None = None,
    category_id: CategoryRow | None = None,
    account_id: AccountRow | None = None,
    kind: TransactionKind | None = None,
    query: SearchText | None = None,
    limit: Limit = 20,
) -> SearchOut:
    """Find transactions, newest first, with the count and totals of everything that matches.

    Args:
        month: Only this month, such as "2026-02".
        start_date: Only on or after this day, such as "2026-02-10".
        end_date: Only on or before this day, such as "2026-02-28".
        category_id: Only this category, such as "cat_009".
        account_id: Only this account (paid from or, for account transfers, paid to), such
            as "acc_03".
        kind: Only "expense", "income" or "account_transfer" (card payments, cash from ATMs).
        query: Case-insensitive text in the payee or memo, such as "Starbucks".
        limit: At most this many transactions in the list (1-100); count and totals cover all.

    Returns:
        {"count": 14, "expenses_total": "412.80", "income_total": "0.00", "transactions":
        [{"transaction_id": "txn_00612", "date": "2026-03-12", "kind": "expense",
        "account_id": "acc_03", "category_id": "cat_008", "category_name": "Groceries",
        "payee": "Trader Joe's", "amount": "64.18", "recurring_id": null, ...}]}.
    """
    params: dict[str, Any] = {}
    if month is not None:
        params["first"], params["last"] = _month_bounds(_month(ctx, month))
    lo = parse_date(start_date, "start_date") if start_date is not None else None
    hi = parse_date(end_date, "end_date") if end_date is not None else None
    if lo is not None and hi is not None and hi < lo:
        raise InvalidArgument(
            f"end_date {hi.isoformat()} is before start_date {lo.isoformat()}; swap them."
        )
    if lo is not None:
        params["lo"] = lo
    if hi is not None:
        params["hi"] = hi
    if category_id is not None:
        params["category_id"] = category_id.id
    if account_id is not None:
        params["account_id"] = account_id.id
    if kind is not None:
        params["kind"] = kind
    if query is not None and query.strip():
        params["pattern"] = search_pattern(query.strip())
    search = _search_for(params)
    totals = ctx.sql.one(search.totals, **params)
    rows = ctx.sql.all(search.page, **params, limit=limit)
    return {
        "count": totals.matches,
        "expenses_total": totals.expenses if totals.expenses is not None else ZERO,
        "income_total": totals.income if totals.income is not None else ZERO,
        "transactions": [_transaction_out(t) for t in rows],
    }


@server.tool(
    returns=("recurring_expense", "category", "account"),
    phrasings=[
        "Which bills are coming up?",
        "List my recurring expenses ({status})",
        "What recurring expenses do I have in {category_id}?",
    ],
)
def list_recurring_expenses(
    ctx: ToolContext,
    status: RecurringStatus = "active",
    category_id: CategoryRow | None = None,
) -> RecurringList:
    """List recurring expenses (bills, subscriptions), soonest first; "due" ones can be posted.

    Args:
        status: "active" (default), "cancelled", "ended" or "all".
        category_id: Only those of this category, such as "cat_007".

    Returns:
        {"today": "2026-03-14", "recurring_expenses": [{"recurring_id": "rec_004", "payee":
        "Netflix", "account_id": "acc_03", "category_id": "cat_007", "amount": "15.49",
        "frequency": "monthly", "next_date": "2026-03-12", "status": "active", "due": true,
        ...}]}. "due" means next_date is today or earlier: post it with post_recurring_expense.
    """
    params: dict[str, Any] = {}
    if status != "all":
        params["status"] = status
    if category_id is not None:
        params["category_id"] = category_id.id
    rows = ctx.sql.all(_recurring_query("status" in params, "category_id" in params), **params)
    return {
        "today": _today(ctx).isoformat(),
        "recurring_expenses": [_recurring_out(ctx, r) for r in rows],
    }


@server.tool(
    writes=True,
    returns=("transaction", "category", "account"),
    phrasings=[
        "I spent {amount} at {payee}, put it under {category_id} and paid with {account_id}",
        "Log a {amount} expense at {payee} on {date} in {category_id} from {account_id}",
        "Record {payee} for {amount}: category {category_id}, account {account_id}",
    ],
    examples={"amount": AMOUNTS, "date": _open_day},
    values={"payee": _expense_payee, "memo": _expense_memo},
)
def add_expense(
    ctx: ToolContext,
    account_id: AccountRow,
    category_id: CategoryRow,
    amount: Amount,
    payee: Payee,
    date: DateText | None = None,
    memo: Memo = "",
) -> ExpenseOut:
    """Record money spent: paid from one account, spent from one category's envelope.

    The category's spending for the month grows by the amount. If that takes it over its
    monthly limit, a category set to "block" refuses the expense and one set to "warn"
    records it with a warning. The envelope may go negative (overspent); the account may
    not (a card may not pass its credit limit).

    Args:
        account_id: The account that paid, such as "acc_03" (see list_accounts).
        category_id: The spending category, such as "cat_008" for Groceries (see
            list_categories).
        amount: What was spent, more than 0 with at most two decimals, such as 42.5 or "42.50".
        payee: Who was paid, such as "Trader Joe's".
        date: The day it was spent, such as "2026-03-12"; default today. From the first day of
            the previous month through today.
        memo: A note, such as "Birthday dinner".

    Returns:
        {"transaction_id": "txn_00613", "category_spent": "273.40", "monthly_limit": "300.00",
        "remaining": "26.60", "warning": null, "category_balance": "18.12",
        "account_balance": "-842.10", ...}.
    """
    day = _transaction_day(ctx, date)
    (txn, acc, cat), warning = _expense(
        ctx, account_id, category_id, amount, day, _text(payee, "payee"), memo.strip()
    )
    spent = _spent(ctx, cat.id, month_key(day))
    return {
        "transaction_id": txn.id,
        "date": day.isoformat(),
        "month": month_key(day),
        "account_id": acc.id,
        "category_id": cat.id,
        "amount": txn.amount,
        "payee": txn.payee,
        "memo": txn.memo,
        "category_spent": spent,
        "monthly_limit": cat.monthly_limit,
        "remaining": _remaining(cat, spent),
        "enforcement": cat.enforcement,
        "warning": warning,
        "category_balance": cat.balance,
        "account_balance": acc.balance,
    }


@server.tool(
    writes=True,
    returns=("transaction", "category", "account"),
    phrasings=[
        "I got paid {amount} from {payer} into {account_id}",
        "Record {amount} of income from {payer} to {account_id} on {date}",
        "Add {amount} from {payer} to {account_id} and put it straight into {category_id}",
    ],
    examples={
        "payer": PAYERS,
        "memo": ["Paycheck", "Refund", "Birthday money", "Reimbursement"],
        "date": _open_day,
    },
    values={"amount": _income_amount},
)
def add_income(
    ctx: ToolContext,
    account_id: AccountRow,
    amount: Amount,
    payer: Payee,
    category_id: CategoryRow | None = None,
    date: DateText | None = None,
    memo: Memo = "",
) -> IncomeOut:
    """Record money received into an account; it goes to Ready to Assign unless a category is given.

    Args:
        account_id: The checking, savings or cash account it arrived in, such as "acc_01".
        amount: How much, more than 0 with at most two decimals, such as 2450 or "2450.00".
        payer: Who paid, such as "Acme Corp payroll" or "Venmo from Sam".
        category_id: Put it straight into this category, such as "cat_012"; default Ready to
            Assign ("cat_000"), from where transfer_between_envelopes hands it out.
        date: The day it arrived, such as "2026-03-01"; default today. From the first day of the
            previous month through today.
        memo: A note, such as "March paycheck".

    Returns:
        {"transaction_id": "txn_00614", "category_id": "cat_000", "account_balance":
        "4760.55", "category_balance": "2862.00", ...}.
    """
    acc = account_id
    cat = category_id if category_id is not None else ctx.sql.one(CATEGORY, id=READY_TO_ASSIGN)
    who = _text(payer, "payer")
    _check_open_account(acc)
    if acc.kind not in DEPOSIT_KINDS:
        raise _broken(
            "income_account",
            f"{_label(acc)} is a {acc.kind} account; income goes into a checking, savings or "
            "cash account. Pick one from list_accounts.",
        )
    if cat.archived:
        raise _broken(
            "category_archived",
            f"{_label(cat)} is archived and takes no income. Leave category_id out to put it in "
            "Ready to Assign, or pick an active category.",
        )
    day = _transaction_day(ctx, date)
    txn, acc, cat = _new_transaction(
        ctx, "income", acc, cat, amount.quantize(CENT), day, who, memo.strip()
    )
    return {
        "transaction_id": txn.id,
        "date": day.isoformat(),
        "account_id": acc.id,
        "category_id": cat.id,
        "amount": txn.amount,
        "payer": txn.payee,
        "memo": txn.memo,
        "account_balance": acc.balance,
        "category_balance": cat.balance,
    }


@server.tool(
    writes=True,
    inverse_of=("add_expense", "add_income"),
    destructive=True,
    idempotent=True,
    returns=("transaction", "category", "account"),
    phrasings=[
        "Delete transaction {transaction_id}, it was entered by mistake",
        "Remove {transaction_id} from my budget",
    ],
)
def delete_transaction(ctx: ToolContext, transaction_id: TransactionRow) -> DeletedOut:
    """Delete a transaction entered by mistake and take it out of every balance and total.

    Deleting an expense gives the money back to its account and category. Deleting income
    takes it back out, so the account and the category it went into must still hold it. A
    recurring expense's schedule is not changed. Transactions in closed months stay.

    Args:
        transaction_id: The transaction, such as "txn_00613" (see search_transactions).

    Returns:
        {"transaction_id": "txn_00613", "kind": "expense", "amount": "42.50",
        "account_balance": "-799.60", "category_balance": "60.62", ...}.
    """
    txn = transaction_id
    first = _open_from(ctx)
    if txn.date < first:
        raise _broken(
            "closed_month",
            f"{txn.id} is dated {txn.date.isoformat()}, in a closed month (months through "
            f"{_settings(ctx).closed_through.isoformat()} are reconciled). Only transactions "
            f"from {first.isoformat()} on can be deleted.",
        )
    acc = ctx.sql.one(ACCOUNT, id=txn.account_id)
    cat = ctx.sql.first(CATEGORY, id=txn.category_id) if txn.category_id is not None else None
    dst = ctx.sql.first(ACCOUNT, id=txn.to_account_id) if txn.to_account_id is not None else None
    if txn.kind == "income":
        assert cat is not None
        _check_account(acc, -txn.amount, f"Taking the {txn.amount} of {txn.id} back out")
        if cat.balance < txn.amount:
            raise _broken(
                "envelope_funds",
                f"{txn.id} put {txn.amount} into {_label(cat)}, which now holds only "
                f"{cat.balance}: the money has been spent or moved. Move it back into "
                f"{cat.id} with transfer_between_envelopes first.",
            )
    elif txn.kind == "account_transfer":
        assert dst is not None
        _check_account(dst, -txn.amount, f"Undoing the {txn.amount} transfer {txn.id}")
    record: DeletedOut = {
        "transaction_id": txn.id,
        "kind": txn.kind,
        "date": txn.date.isoformat(),
        "amount": txn.amount,
        "payee": txn.payee,
        "account_id": acc.id,
        "account_balance": acc.balance,
        "to_account_id": txn.to_account_id,
        "category_id": txn.category_id,
        "category_balance": None,
    }
    acc, cat = _unpost(ctx, txn, acc, cat)
    record["account_balance"] = acc.balance
    record["category_balance"] = cat.balance if cat is not None else None
    return record


@server.tool(
    writes=True,
    returns=("transfer", "category"),
    phrasings=[
        "Move {amount} from {from_category_id} to {to_category_id}",
        "Take {amount} out of {from_category_id} and put it in {to_category_id}",
        "Assign {amount} from {from_category_id} to {to_category_id} to cover {memo}",
    ],
    examples={
        "amount": [20, 35, "50.00", 75, 100, "150.00"],
        "memo": ["overspending", "concert tickets", "the car repair", "a birthday dinner"],
    },
)
def transfer_between_envelopes(
    ctx: ToolContext,
    from_category_id: CategoryRow,
    to_category_id: CategoryRow,
    amount: Amount,
    memo: Memo = "",
) -> TransferOut:
    """Move money from one category's envelope to another's; no account changes.

    Use Ready to Assign ("cat_000") as from_category_id to give new income a job, or as
    to_category_id to free money up. The source must hold the amount.

    Args:
        from_category_id: Where the money comes from, such as "cat_000" (Ready to Assign) or
            "cat_015" (Vacation).
        to_category_id: Where it goes, such as "cat_009" (Dining out).
        amount: How much, more than 0 with at most two decimals, such as 50 or "50.00".
        memo: A note, such as "overspending" or "concert tickets".

    Returns:
        {"transfer_id": "trf_0093", "amount": "50.00", "from_balance": "362.00",
        "to_balance": "91.12", ...}.
    """
    src, dst = from_category_id, to_category_id
    if src.id == dst.id:
        raise InvalidArgument(
            f"from_category_id and to_category_id are both {src.id}; name two categories."
        )
    if dst.archived:
        raise _broken(
            "category_archived",
            f"{_label(dst)} is archived and takes no money; pick an active category "
            "(money can still be moved out of an archived one).",
        )
    money = amount.quantize(CENT)
    if money > src.balance:
        holds = f"holds {src.balance}" if src.balance > 0 else f"holds nothing ({src.balance})"
        most = f"at most {src.balance} can be moved" if src.balance > 0 else "nothing can move"
        raise _broken(
            "envelope_funds",
            f"{_label(src)} {holds}, so {most}, not {money}. Move less, or take it from "
            "another category (list_categories shows every balance).",
        )
    day = _today(ctx)
    values = {
        "id": next_id(ctx, EnvelopeTransfer.id, "trf", 4),
        "date": day,
        "from_category_id": src.id,
        "to_category_id": dst.id,
        "amount": money,
        "memo": memo.strip(),
    }
    ctx.sql.insert(EnvelopeTransfer, **values)
    move = SimpleNamespace(**values)
    src, dst = _move(ctx, move, src, dst)
    return {
        "transfer_id": move.id,
        "date": day.isoformat(),
        "from_category_id": src.id,
        "to_category_id": dst.id,
        "amount": money,
        "memo": move.memo,
        "from_balance": src.balance,
        "to_balance": dst.balance,
    }


def _move(ctx: ToolContext, move: Any, src: Any, dst: Any) -> tuple[Any, Any]:
    """Add an envelope transfer to the balances and month totals of both categories (the rows
    of its source and destination); returns them with their new balances."""
    month = month_key(move.date)
    src = ctx.sql.update(Category, src, balance=src.balance - move.amount)
    dst = ctx.sql.update(Category, dst, balance=dst.balance + move.amount)
    _add_to_category_month(ctx, src.id, month, assigned=-move.amount)
    _add_to_category_month(ctx, dst.id, month, assigned=move.amount)
    return src, dst


def _limit_fitting(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A new monthly limit a person would set for the category: its present limit raised
    or trimmed by a tenth to a half, or, with none, what a month of it costs (never rent
    capped at 250.00); a round sum. None for Ready to Assign, which holds income."""
    name, group = _category(ctx, bound)
    if group == "Inflow":
        return None
    row = ctx.sql.first(CATEGORY, id=str(bound.args.get("category_id", "")))
    now = row.monthly_limit if row is not None else None
    if now:
        base = float(now)
    elif name == "Rent":
        base = float(RENT[1])
    else:
        base = BILL_RANGES.get(name, (50.0, 250.0))[1] * 1.5
    limit = base * rng.choice([0.8, 0.9, 1.1, 1.25, 1.5])
    step = 10 if limit < 500 else 50
    value = max(step, round(limit / step) * step)
    return None if now is not None and value == float(now) else f"{value}.00"


@server.tool(
    writes=True,
    idempotent=True,
    returns="category",
    phrasings=[
        "Set the monthly limit of {category_id} to {monthly_limit}",
        "Cap {category_id} at {monthly_limit} a month and {enforcement} anything over it",
    ],
    values={"monthly_limit": _limit_fitting},
)
def set_category_limit(
    ctx: ToolContext,
    category_id: CategoryRow,
    monthly_limit: LimitAmount,
    enforcement: Enforcement | None = None,
) -> LimitOut:
    """Set a category's monthly spending limit and whether spending over it is blocked.

    Args:
        category_id: The category, such as "cat_009" (Dining out).
        monthly_limit: The most to spend in it per calendar month, such as 300 or "300.00".
        enforcement: "block" to refuse expenses over the limit, "warn" to record them with a
            warning; default unchanged.

    Returns:
        {"category_id": "cat_009", "monthly_limit": "300.00", "previous_limit": "250.00",
        "enforcement": "block", "month": "2026-03", "spent": "231.40", "remaining": "68.60",
        "over_limit": false, "warning": null, ...}.
    """
    cat = category_id
    if cat.id == READY_TO_ASSIGN:
        raise _broken(
            "ready_to_assign",
            f"Ready to Assign ({cat.id}) holds unassigned income and has no spending limit; set "
            "the limit of a spending category from list_categories.",
        )
    if cat.archived:
        raise _broken(
            "category_archived",
            f"{_label(cat)} is archived; its limit cannot change. Pick an active category.",
        )
    previous = cat.monthly_limit
    values: dict[str, Any] = {"monthly_limit": monthly_limit.quantize(CENT)}
    if enforcement is not None:
        values["enforcement"] = enforcement
    cat = ctx.sql.update(Category, cat, **values)
    month = month_key(_today(ctx))
    spent = _spent(ctx, cat.id, month)
    remaining = cat.monthly_limit - spent
    warning = None
    if remaining < 0:
        warning = f"{month} spending ({spent}) is already {-remaining} over the new limit" + (
            "; no more expenses fit this month." if cat.enforcement == "block" else "."
        )
    return {
        "category_id": cat.id,
        "name": cat.name,
        "monthly_limit": cat.monthly_limit,
        "previous_limit": previous,
        "enforcement": cat.enforcement,
        "month": month,
        "spent": spent,
        "remaining": remaining,
        "over_limit": remaining < 0,
        "warning": warning,
    }


@server.tool(
    writes=True,
    idempotent=True,
    returns=("recurring_expense", "category", "account"),
    phrasings=[
        "Add a {frequency} {payee} bill of {amount} to {category_id}, paid from {account_id}, "
        "starting {start_date}",
        "Set up a {frequency} recurring expense of {amount} for {payee} from {start_date} "
        "in {category_id} on {account_id}",
    ],
    examples={"start_date": _start_day, "end_date": _end_day},
    values={"amount": _bill_amount, "payee": _bill_payee, "frequency": _bill_frequency},
)
def create_recurring_expense(
    ctx: ToolContext,
    account_id: AccountRow,
    category_id: CategoryRow,
    amount: Amount,
    payee: Payee,
    frequency: Frequency,
    start_date: DateText,
    end_date: DateText | None = None,
) -> RecurringOut:
    """Set up a bill that repeats every week, month or year, first due on start_date.

    Nothing is spent now: each occurrence is recorded with post_recurring_expense once due.
    Monthly and yearly ones keep start_date's day of the month (the last day in shorter months).

    Args:
        account_id: The account that pays it, such as "acc_03".
        category_id: The category it spends from, such as "cat_007" (Subscriptions).
        amount: Each payment, more than 0 with at most two decimals, such as "15.49".
        payee: Who is paid, such as "Netflix".
        frequency: "weekly", "monthly" or "yearly".
        start_date: The first due day, from today to 365 days ahead, such as "2026-04-01".
        end_date: The last day it may fall on, such as "2026-12-31"; default none.

    Returns:
        {"recurring_id": "rec_014", "next_date": "2026-04-01", "status": "active",
        "due": false, ...}.
    """
    acc, cat = account_id, category_id
    money = amount.quantize(CENT)
    who = _text(payee, "payee")
    _check_open_account(acc)
    _check_spending_category(cat, "recurring expenses")
    today = _today(ctx)
    first = parse_date(start_date, "start_date")
    horizon = today + dt.timedelta(days=RECURRING_HORIZON_DAYS)
    if not today <= first <= horizon:
        raise _broken(
            "date_window",
            f"start_date {first.isoformat()} must be from today ({today.isoformat()}) to "
            f"{horizon.isoformat()}. For a bill already paid use add_expense.",
        )
    until = parse_date(end_date, "end_date") if end_date is not None else None
    if until is not None:
        if until < first:
            raise InvalidArgument(
                f"end_date {until.isoformat()} is before start_date {first.isoformat()}."
            )
        if until > first + dt.timedelta(days=366 * MAX_RECURRING_YEARS):
            raise InvalidArgument(
                f"end_date must be within {MAX_RECURRING_YEARS} years of start_date; leave it "
                "out for a bill with no end."
            )
    if cat.enforcement == "block" and cat.monthly_limit is not None and money > cat.monthly_limit:
        raise _broken(
            "monthly_limit",
            f"{_label(cat)} blocks spending over its monthly limit of {cat.monthly_limit}, so a "
            f"{money} bill could never be posted. Raise the limit with set_category_limit, "
            "switch it to 'warn', or use another category.",
        )
    active = ctx.sql.scalar(ACTIVE_RECURRING_COUNT)
    if (active or 0) >= MAX_ACTIVE_RECURRING:
        raise _broken(
            "recurring_cap",
            f"{active} recurring expenses are already active, the most allowed. Cancel one "
            "with cancel_recurring_expense first.",
        )
    same = ctx.sql.scalar(
        SAME_RECURRING,
        payee=who.lower(),
        account_id=acc.id,
        category_id=cat.id,
        amount=money,
        frequency=frequency,
    )
    if same is not None:
        raise Conflict(
            f"The same {frequency} {money} bill to {who} is already active as {same}; nothing "
            "was added. list_recurring_expenses shows it."
        )
    values = {
        "id": next_id(ctx, RecurringExpense.id, "rec", 3),
        "payee": who,
        "account_id": acc.id,
        "category_id": cat.id,
        "amount": money,
        "frequency": frequency,
        "anchor_day": first.day,
        "start_date": first,
        "next_date": first,
        "end_date": until,
        "status": "active",
        "created_on": today,
    }
    ctx.sql.insert(RecurringExpense, **values)
    return _recurring_out(ctx, SimpleNamespace(**values))


@server.tool(
    writes=True,
    returns=("transaction", "recurring_expense", "category", "account"),
    phrasings=[
        "Post the {recurring_id} bill that is due",
        "Record this month's payment of recurring expense {recurring_id}",
    ],
)
def post_recurring_expense(ctx: ToolContext, recurring_id: RecurringRow) -> PostedOut:
    """Record the due occurrence of a recurring expense as an expense, then schedule the next one.

    The expense is dated on the occurrence's due day and passes the same rules as
    add_expense (monthly limit, account funds). If the bill ends before the next occurrence
    it becomes "ended".

    Args:
        recurring_id: The recurring expense, such as "rec_004" (see list_recurring_expenses;
            those with "due": true can be posted).

    Returns:
        {"recurring_id": "rec_004", "transaction_id": "txn_00615", "date": "2026-03-12",
        "next_date": "2026-04-12", "status": "active", "still_due": false, "warning": null,
        ...}.
    """
    rec = recurring_id
    today = _today(ctx)
    if rec.status != "active":
        raise _broken(
            "recurring_inactive",
            f"{rec.id} ({rec.payee}) is {rec.status}; only active recurring expenses are posted. "
            "Set it up again with create_recurring_expense if it is still needed.",
        )
    if rec.next_date > today:
        raise _broken(
            "not_due",
            f"{rec.id} ({rec.payee}) is upcoming, not 'due': its next date is "
            f"{rec.next_date.isoformat()}, after today ({today.isoformat()}). Post it on or "
            "after that day; list_recurring_expenses shows which are due.",
        )
    acc = ctx.sql.one(ACCOUNT, id=rec.account_id)
    cat = ctx.sql.one(CATEGORY, id=rec.category_id)
    first = _open_from(ctx)
    if rec.next_date < first:
        raise _broken(
            "date_window",
            f"{rec.id} was due on {rec.next_date.isoformat()}, in a closed month; cancel it "
            "with cancel_recurring_expense and set it up again.",
        )
    day = rec.next_date
    (txn, acc, cat), warning = _expense(
        ctx, acc, cat, rec.amount, day, rec.payee, f"{rec.frequency.title()} bill", rec.id
    )
    next_date = next_occurrence(day, rec.frequency, rec.anchor_day)
    ended = rec.end_date is not None and next_date > rec.end_date
    rec = ctx.sql.update(
        RecurringExpense, rec, next_date=next_date, status="ended" if ended else rec.status
    )
    spent = _spent(ctx, cat.id, month_key(day))
    return {
        "recurring_id": rec.id,
        "transaction_id": txn.id,
        "date": day.isoformat(),
        "amount": txn.amount,
        "payee": txn.payee,
        "account_id": acc.id,
        "category_id": cat.id,
        "next_date": rec.next_date.isoformat(),
        "status": rec.status,
        "still_due": rec.status == "active" and rec.next_date <= today,
        "category_spent": spent,
        "remaining": _remaining(cat, spent),
        "warning": warning,
        "account_balance": acc.balance,
        "category_balance": cat.balance,
    }


@server.tool(
    writes=True,
    inverse_of="create_recurring_expense",
    destructive=True,
    idempotent=True,
    returns="recurring_expense",
    phrasings=[
        "Cancel my recurring expense {recurring_id}",
        "Stop {recurring_id}, I don't need it any more",
    ],
)
def cancel_recurring_expense(ctx: ToolContext, recurring_id: RecurringRow) -> RecurringOut:
    """Cancel a recurring expense so that it is never due again; past payments stay recorded.

    Args:
        recurring_id: The recurring expense, such as "rec_004" (see list_recurring_expenses).

    Returns:
        {"recurring_id": "rec_004", "status": "cancelled", "due": false, ...}.
    """
    rec = recurring_id
    if rec.status != "active":
        raise _broken(
            "recurring_inactive",
            f"{rec.id} ({rec.payee}) is already {rec.status}; nothing to cancel.",
        )
    rec = ctx.sql.update(RecurringExpense, rec, status="cancelled")
    return _recurring_out(ctx, rec)


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests. Records carry
# values that fit the rules (an amount the envelope and the limit allow, a typical payee).
@server.entity(
    "account",
    key="account_id",
    model=Account,
    not_found="Call list_accounts to see the accounts and their ids (such as 'acc_01').",
)
def _accounts(ctx: ToolContext) -> list[dict[str, Any]]:
    """Open accounts."""
    rows = ctx.sql.all(OPEN_ACCOUNTS)
    return [
        {
            "account_id": a.id,
            "name": a.name,
            "kind": a.kind,
            "balance": a.balance,
            "available": _available(a),
        }
        for a in rows
    ]


@server.entity(
    "category",
    key="category_id",
    model=Category,
    not_found="Call list_categories to see the categories and their ids (such as 'cat_008').",
)
def _categories(ctx: ToolContext) -> list[dict[str, Any]]:
    """Active categories (Ready to Assign included), with an amount that fits their rules."""
    month = month_key(_today(ctx))
    spent = dict(ctx.sql.all(SPENT_IN_MONTH, month=month))
    out = []
    for c in ctx.sql.all(ACTIVE_CATEGORIES):
        last = ctx.sql.first(LAST_EXPENSE, category_id=c.id)
        # What fits: the envelope's balance (a transfer out) and a blocking limit's room.
        caps = [c.balance] if c.balance > 0 else []
        if c.enforcement == "block" and c.monthly_limit is not None:
            caps.append(c.monthly_limit - spent.get(c.id, ZERO))
        usual = last[1] if last is not None else min(MAX_SUGGESTED, c.balance / 3)
        amount = min([usual, *caps]).quantize(CENT) if caps else usual.quantize(CENT)
        record: dict[str, Any] = {
            "category_id": c.id,
            "name": c.name,
            "group": c.group_name,
            "balance": c.balance,
            "amount": amount if amount >= 1 else Decimal("20.00"),
        }
        if last is not None:
            record["payee"] = last[0]
        out.append(record)
    return out


@server.entity(
    "transaction",
    key="transaction_id",
    model=Transaction,
    not_found="Call search_transactions to find the transaction's id (such as 'txn_00612').",
)
def _transactions(ctx: ToolContext) -> list[dict[str, Any]]:
    """Expenses and income of the open months that could be deleted."""
    out = []
    for t in ctx.sql.all(DELETABLE_SINCE, first=_open_from(ctx)):
        if t.kind == "income" and (t.account_balance < t.amount or t.category_balance < t.amount):
            continue
        out.append(
            {
                "transaction_id": t.id,
                "kind": t.kind,
                "payee": t.payee,
                "date": t.date.isoformat(),
                "account_id": t.account_id,
                "category_id": t.category_id,
            }
        )
    return out


@server.entity(
    "recurring_expense",
    key="recurring_id",
    model=RecurringExpense,
    not_found="Call list_recurring_expenses to see them and their ids (such as 'rec_004').",
    label="recurring expense",
)
def _recurring(ctx: ToolContext) -> list[dict[str, Any]]:
    """Active recurring expenses; "state" says whether one is due now."""
    today = _today(ctx)
    return [
        {
            "recurring_id": r.id,
            "payee": r.payee,
            "account_id": r.account_id,
            "category_id": r.category_id,
            "next_date": r.next_date.isoformat(),
            "state": "due" if r.next_date <= today else "upcoming",
        }
        for r in ctx.sql.all(ACTIVE_RECURRING)
    ]


@server.entity("transfer", key="transfer_id", model=EnvelopeTransfer)
def _transfers(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(TRANSFERS)
    return [
        {
            "transfer_id": t.id,
            "from_category_id": t.from_category_id,
            "to_category_id": t.to_category_id,
        }
        for t in rows
    ]
