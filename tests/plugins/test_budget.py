"""The budget server: stored totals against the rows they sum under random call sequences,
one test per domain rule, its sampler, and the conformance suite (which also replays every
shipped task at the maximum reward)."""

from __future__ import annotations

import datetime as dt
import inspect
import re
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from prove_plugins.budget import tools
from prove_plugins.budget.models import first_of_month, month_key, next_occurrence

import prove_gym
from prove_gym import ErrorKind, Session, ToolResult
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import rows

BUDGET = prove_gym.get_server("budget")
SEEDS = [0, 3, 7, 11]
RTA = "cat_000"
FEW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ----------------------------------------------------------------- helpers


def value(session: Session, sql: str, *params: Any) -> Any:
    return rows(session, sql, *params)[0][0]


def money(cents: int) -> Decimal:
    return Decimal(cents).scaleb(-2)


def cents(amount: Any) -> int:
    return int(Decimal(str(amount)) * 100)


def today(session: Session) -> dt.date:
    return session.now.date()


def open_from(session: Session) -> dt.date:
    closed = dt.date.fromisoformat(value(session, "SELECT closed_through FROM settings"))
    return closed + dt.timedelta(days=1)


def ok(session: Session, tool: str, args: dict[str, Any]) -> Any:
    result = session.call(tool, args)
    assert result.ok, f"{tool}({args}) -> {result.error_kind}: {result.message}"
    return result.content


def refused(session: Session, tool: str, args: dict[str, Any], rule: str) -> str:
    """The call fails on the named rule and changes nothing."""
    before = session.state_hash()
    result = session.call(tool, args)
    assert not result.ok, f"{tool}({args}) succeeded; rule {rule!r} should refuse it"
    assert result.error_kind == ErrorKind.PRECONDITION_FAILED, result.message
    assert (result.message or "").startswith(f"Rule '{rule}' failed:"), result.message
    assert session.state_hash() == before, f"the refused {tool} changed the state"
    return result.message or ""


def spent(session: Session, category: str, month: str) -> int:
    found = rows(
        session,
        "SELECT spent FROM category_months WHERE category_id = ? AND month = ?",
        category,
        month,
    )
    return found[0][0] if found else 0


def balance(session: Session, table: str, id_: str) -> int:
    return value(session, f"SELECT balance FROM {table} WHERE id = ?", id_)


def account(session: Session, kind: str) -> str:
    return value(session, "SELECT id FROM accounts WHERE kind = ? AND NOT closed ORDER BY id", kind)


def category(session: Session, name: str) -> str:
    return value(session, "SELECT id FROM categories WHERE name = ?", name)


def spending_categories(session: Session) -> list[str]:
    return [
        r[0]
        for r in rows(
            session,
            "SELECT id FROM categories WHERE id != ? AND NOT archived ORDER BY id",
            RTA,
        )
    ]


def blocking(session: Session, cat: str, room: int) -> int:
    """Make ``cat`` block spending over a limit ``room`` cents above this month's spending."""
    limit = spent(session, cat, month_key(today(session))) + room
    ok(
        session,
        "set_category_limit",
        {"category_id": cat, "monthly_limit": str(money(limit)), "enforcement": "block"},
    )
    return limit


# -------------------------------------------------------------- invariants
def rule_violations(session: Session) -> list[str]:
    """Every broken invariant of the budget's state, read straight from SQLite.

    Stored totals equal the sums of their rows (account and envelope balances, category and
    month totals); accounts and envelopes hold the same money; accounts stay above their
    floors; every row is well formed.
    """
    broken = []
    day = today(session).isoformat()
    for acc, held, expected in rows(
        session,
        """SELECT a.id, a.balance, a.opening_balance
             + COALESCE((SELECT SUM(CASE t.kind WHEN 'income' THEN t.amount ELSE -t.amount END)
                         FROM transactions t WHERE t.account_id = a.id), 0)
             + COALESCE((SELECT SUM(t.amount) FROM transactions t
                         WHERE t.to_account_id = a.id), 0)
           FROM accounts a""",
    ):
        if held != expected:
            broken.append(f"account {acc}: balance {held} != opening + its rows {expected}")
    for cat, held, expected in rows(
        session,
        """SELECT c.id, c.balance, c.opening_balance
             + COALESCE((SELECT SUM(CASE t.kind WHEN 'income' THEN t.amount ELSE -t.amount END)
                         FROM transactions t WHERE t.category_id = c.id), 0)
             + COALESCE((SELECT SUM(amount) FROM envelope_transfers
                         WHERE to_category_id = c.id), 0)
             - COALESCE((SELECT SUM(amount) FROM envelope_transfers
                         WHERE from_category_id = c.id), 0)
           FROM categories c""",
    ):
        if held != expected:
            broken.append(f"category {cat}: balance {held} != inflows - outflows {expected}")
    expected_cm: dict[tuple[str, str], list[int]] = {}
    for cat, month, out, into in rows(
        session,
        """SELECT category_id, substr(date, 1, 7),
                  SUM(CASE kind WHEN 'expense' THEN amount ELSE 0 END),
                  SUM(CASE kind WHEN 'income' THEN amount ELSE 0 END)
           FROM transactions WHERE category_id IS NOT NULL GROUP BY 1, 2""",
    ):
        expected_cm[(cat, month)] = [out, into]
    for cat, month, sign, amount in rows(
        session,
        """SELECT from_category_id, substr(date, 1, 7), -1, SUM(amount)
           FROM envelope_transfers GROUP BY 1, 2
           UNION ALL
           SELECT to_category_id, substr(date, 1, 7), 1, SUM(amount)
           FROM envelope_transfers GROUP BY 1, 2""",
    ):
        expected_cm.setdefault((cat, month), [0, 0])[1] += sign * amount
    stored_cm = {
        (c, m): [s, a]
        for c, m, s, a in rows(
            session, "SELECT category_id, month, spent, assigned FROM category_months"
        )
    }
    if stored_cm != expected_cm:
        keys = sorted(set(stored_cm) | set(expected_cm))
        diff = [
            (k, stored_cm.get(k), expected_cm.get(k))
            for k in keys
            if stored_cm.get(k) != expected_cm.get(k)
        ]
        broken.append(f"category_months (stored, from rows) differ: {diff[:4]}")
    stored_months = {m: [i, s] for m, i, s in rows(session, "SELECT * FROM months")}
    expected_months = {
        m: [i, s]
        for m, i, s in rows(
            session,
            """SELECT substr(date, 1, 7), SUM(CASE kind WHEN 'income' THEN amount ELSE 0 END),
                      SUM(CASE kind WHEN 'expense' THEN amount ELSE 0 END)
               FROM transactions WHERE kind IN ('income', 'expense') GROUP BY 1""",
        )
    }
    if stored_months != expected_months:
        broken.append(f"months {stored_months} != from rows {expected_months}")
    for month, total, parts in rows(
        session,
        """SELECT m.month, m.spent, (SELECT SUM(spent) FROM category_months c
                                     WHERE c.month = m.month) FROM months m""",
    ):
        if total != (parts or 0):
            broken.append(f"{month}: spent {total} != sum over its categories {parts}")
    held_accounts, held_categories = rows(
        session,
        "SELECT (SELECT SUM(balance) FROM accounts), (SELECT SUM(balance) FROM categories)",
    )[0]
    if held_accounts != held_categories:
        broken.append(f"accounts hold {held_accounts} but the envelopes {held_categories}")
    below = rows(
        session,
        """SELECT id FROM accounts WHERE (kind = 'credit_card' AND balance < -credit_limit)
           OR (kind != 'credit_card' AND balance < 0)""",
    )
    if below:
        broken.append(f"accounts below their floor: {below}")
    malformed = rows(
        session,
        """SELECT id FROM transactions WHERE date > ? OR amount <= 0
           OR (kind = 'expense' AND (category_id IS NULL OR category_id = 'cat_000'
                                     OR to_account_id IS NOT NULL))
           OR (kind = 'income' AND (category_id IS NULL OR to_account_id IS NOT NULL))
           OR (kind = 'account_transfer' AND (category_id IS NOT NULL OR to_account_id IS NULL
                                              OR to_account_id = account_id))
           OR kind NOT IN ('expense', 'income', 'account_transfer')""",
        day,
    )
    malformed += rows(
        session,
        """SELECT id FROM envelope_transfers
           WHERE amount <= 0 OR from_category_id = to_category_id OR date > ?""",
        day,
    )
    malformed += rows(
        session,
        """SELECT id FROM recurring_expenses WHERE amount <= 0
           OR status NOT IN ('active', 'cancelled', 'ended')
           OR frequency NOT IN ('weekly', 'monthly', 'yearly')
           OR (status = 'active' AND end_date IS NOT NULL AND next_date > end_date)""",
    )
    if malformed:
        broken.append(f"malformed rows: {malformed[:5]}")
    return broken


TestConformance = conformance_suite(
    "budget",
    samples=["acc_99", "cat_999", "txn_99999", "rec_999", RTA, "2026-02", "2025-01-15", "block"],
    invariants=rule_violations,
)


# ----------------------------------------------------------------- sampler
@pytest.mark.parametrize("size", [1, 2])
def test_sizes_give_dozens_to_hundreds_of_entities(size: int) -> None:
    with BUDGET.session(seed=0, size=size) as s:
        counts = {
            t: value(s, f"SELECT count(*) FROM {t}")
            for t in ("accounts", "categories", "transactions", "recurring_expenses")
        }
        assert 4 <= counts["accounts"] <= 8
        assert 18 <= counts["categories"] <= 40
        assert 150 * size <= counts["transactions"] <= 1500
        assert 8 <= counts["recurring_expenses"] <= 30


@pytest.mark.parametrize("seed", range(8))
def test_sampled_states_hold_the_invariants_and_offer_every_rule(seed: int) -> None:
    with BUDGET.session(seed=seed) as s:
        assert rule_violations(s) == []
        assert balance(s, "categories", RTA) >= 0
        day = today(s).isoformat()
        assert value(s, "SELECT count(*) FROM categories WHERE enforcement = 'block'") >= 1
        assert value(s, "SELECT count(*) FROM categories WHERE archived") >= 1
        assert value(s, "SELECT count(*) FROM accounts WHERE kind = 'cash'") == 1
        assert value(s, "SELECT count(*) FROM accounts WHERE kind = 'credit_card'") >= 1
        due = "SELECT count(*) FROM recurring_expenses WHERE status = 'active' AND next_date <= ?"
        assert value(s, due, day) >= 1, "some bill is due today, so post_recurring has work"
        assert value(s, "SELECT count(*) FROM transactions WHERE date < ?", open_from(s)) > 0


# ----------------------------------------------------------------- totals
def test_an_expense_adds_to_every_total_it_belongs_to() -> None:
    with BUDGET.session(seed=0) as s:
        cat, acc = category(s, "Groceries"), account(s, "credit_card")
        month = month_key(today(s))
        before = {
            "account": balance(s, "accounts", acc),
            "category": balance(s, "categories", cat),
            "spent": spent(s, cat, month),
            "month": value(s, "SELECT spent FROM months WHERE month = ?", month),
        }
        out = ok(
            s,
            "add_expense",
            {"account_id": acc, "category_id": cat, "amount": "64.18", "payee": "Trader Joe's"},
        )
        assert balance(s, "accounts", acc) == before["account"] - 6418
        assert balance(s, "categories", cat) == before["category"] - 6418
        assert spent(s, cat, month) == before["spent"] + 6418
        assert value(s, "SELECT spent FROM months WHERE month = ?", month) == before["month"] + 6418
        assert cents(out["category_spent"]) == spent(s, cat, month)
        assert cents(out["account_balance"]) == balance(s, "accounts", acc)
        assert out["date"] == today(s).isoformat()
        assert rule_violations(s) == []


@FEW
@given(
    pick=st.integers(0, 30),
    amount=st.integers(1, 20_000),
    back=st.integers(0, 40),
    kind=st.sampled_from(["expense", "income"]),
)
def test_adding_then_deleting_gives_back_the_exact_state(
    pick: int, amount: int, back: int, kind: str
) -> None:
    with BUDGET.session(seed=3) as s:
        initial = s.state_hash()
        cats = spending_categories(s)
        cat = cats[pick % len(cats)]
        day = max(today(s) - dt.timedelta(days=back), open_from(s)).isoformat()
        args: dict[str, Any] = {
            "account_id": account(s, "checking"),
            "category_id": cat,
            "amount": str(money(amount)),
            "date": day,
        }
        if kind == "expense":
            ok(
                s,
                "set_category_limit",
                {"category_id": cat, "monthly_limit": "99999", "enforcement": "warn"},
            )
            initial = s.state_hash()
            created = ok(s, "add_expense", {**args, "payee": "Test payee"})
        else:
            created = ok(s, "add_income", {**args, "payer": "Test payer"})
        assert rule_violations(s) == []
        ok(s, "delete_transaction", {"transaction_id": created["transaction_id"]})
        assert rule_violations(s) == []
        assert s.state_hash() == initial, "a total row or a balance was left behind"


def test_list_categories_and_search_agree_on_every_month() -> None:
    with BUDGET.session(seed=7) as s:
        for (month,) in rows(s, "SELECT month FROM months ORDER BY month"):
            budget = ok(s, "list_categories", {"month": month, "include_archived": True})
            found = ok(s, "search_transactions", {"month": month, "limit": 1})
            assert budget["spent"] == found["expenses_total"]
            assert budget["income"] == found["income_total"]
            assert cents(budget["spent"]) == sum(cents(c["spent"]) for c in budget["categories"])
            for cat in budget["categories"][:8]:
                one = ok(
                    s,
                    "search_transactions",
                    {"month": month, "category_id": cat["category_id"], "kind": "expense"},
                )
                assert one["expenses_total"] == cat["spent"], (month, cat["name"])


def test_list_categories_refuses_months_without_history() -> None:
    with BUDGET.session(seed=0) as s:
        later = month_key(first_of_month(today(s), 1))
        assert s.call("list_categories", {"month": later}).error_kind == "precondition_failed"
        assert s.call("list_categories", {"month": "2020-01"}).error_kind == "precondition_failed"
        assert s.call("list_categories", {"month": "2026-13"}).error_kind == "bad_arguments"
        assert s.call("list_categories", {"month": "March"}).error_kind == "bad_arguments"


# ------------------------------------------------------------ monthly_limit
@FEW
@given(room=st.integers(1, 30_000), extra=st.integers(-5_000, 5_000))
def test_monthly_limit_blocks_exactly_what_passes_the_limit(room: int, extra: int) -> None:
    with BUDGET.session(seed=0) as s:
        cat = category(s, "Dining out")
        limit = blocking(s, cat, room)
        amount = room + extra
        if amount <= 0:
            return
        args = {
            "account_id": account(s, "credit_card"),
            "category_id": cat,
            "amount": str(money(amount)),
            "payee": "Chipotle",
        }
        if amount <= room:
            out = ok(s, "add_expense", args)
            assert out["warning"] is None
            assert cents(out["remaining"]) == room - amount
        else:
            message = refused(s, "add_expense", args, "monthly_limit")
            assert "set_category_limit" in message and str(money(limit)) in message
        assert spent(s, cat, month_key(today(s))) <= limit


def test_a_warn_category_records_the_expense_with_a_warning() -> None:
    with BUDGET.session(seed=0) as s:
        cat = category(s, "Groceries")
        month = month_key(today(s))
        limit = spent(s, cat, month) + 1000
        ok(
            s,
            "set_category_limit",
            {"category_id": cat, "monthly_limit": str(money(limit)), "enforcement": "warn"},
        )
        out = ok(
            s,
            "add_expense",
            {
                "account_id": account(s, "checking"),
                "category_id": cat,
                "amount": 25,
                "payee": "Aldi",
            },
        )
        assert out["warning"] and "over its monthly limit" in out["warning"]
        assert cents(out["remaining"]) == -1500
        listed = ok(s, "list_categories", {"group": "Everyday"})
        entry = next(c for c in listed["categories"] if c["category_id"] == cat)
        assert entry["over_limit"] is True and cents(entry["spent"]) == limit + 1500


def test_the_limit_applies_to_the_month_the_expense_is_dated_in() -> None:
    with BUDGET.session(seed=0) as s:
        cat = category(s, "Dining out")
        blocking(s, cat, 500)  # this month: 5.00 of room
        last_month = open_from(s)
        args = {
            "account_id": account(s, "credit_card"),
            "category_id": cat,
            "amount": "5.01",
            "payee": "Shake Shack",
        }
        refused(s, "add_expense", args, "monthly_limit")
        room_then = int(value(s, "SELECT monthly_limit FROM categories WHERE id = ?", cat)) - spent(
            s, cat, month_key(last_month)
        )
        dated = {**args, "date": last_month.isoformat()}
        if room_then >= 501:
            assert ok(s, "add_expense", dated)["month"] == month_key(last_month)
        else:
            refused(s, "add_expense", dated, "monthly_limit")


def test_set_category_limit_reports_spending_already_over_the_new_limit() -> None:
    with BUDGET.session(seed=0) as s:
        cat = category(s, "Rent")
        month = month_key(today(s))
        out = ok(
            s,
            "set_category_limit",
            {"category_id": cat, "monthly_limit": "0.01", "enforcement": "block"},
        )
        assert out["over_limit"] is (spent(s, cat, month) > 1)
        assert out["previous_limit"] is not None and out["monthly_limit"] == "0.01"
        assert out["enforcement"] == "block"
        again = ok(s, "set_category_limit", {"category_id": cat, "monthly_limit": "2000"})
        assert again["enforcement"] == "block", "enforcement stays when it is left out"


# ------------------------------------------------------------ envelope_funds
@FEW
@given(pick=st.integers(0, 30), share=st.integers(1, 150))
def test_a_transfer_moves_at_most_what_the_envelope_holds(pick: int, share: int) -> None:
    with BUDGET.session(seed=11) as s:
        funded = [
            r[0]
            for r in rows(
                s, "SELECT id FROM categories WHERE balance > 100 AND NOT archived ORDER BY id"
            )
        ]
        src = funded[pick % len(funded)]
        dst = next(c for c in spending_categories(s) if c != src)
        held = balance(s, "categories", src)
        amount = max(1, held * share // 100)
        args = {"from_category_id": src, "to_category_id": dst, "amount": str(money(amount))}
        before_dst = balance(s, "categories", dst)
        if amount <= held:
            out = ok(s, "transfer_between_envelopes", args)
            assert cents(out["from_balance"]) == held - amount
            assert cents(out["to_balance"]) == before_dst + amount
        else:
            message = refused(s, "transfer_between_envelopes", args, "envelope_funds")
            assert str(money(held)) in message
        assert rule_violations(s) == []


def test_ready_to_assign_funds_categories_and_takes_money_back() -> None:
    with BUDGET.session(seed=0) as s:
        cat = category(s, "Groceries")
        rta = balance(s, "categories", RTA)
        ok(
            s,
            "transfer_between_envelopes",
            {"from_category_id": RTA, "to_category_id": cat, "amount": "100"},
        )
        ok(
            s,
            "transfer_between_envelopes",
            {"from_category_id": cat, "to_category_id": RTA, "amount": "40"},
        )
        assert balance(s, "categories", RTA) == rta - 6000
        refused(
            s,
            "transfer_between_envelopes",
            {"from_category_id": RTA, "to_category_id": cat, "amount": str(money(rta))},
            "envelope_funds",
        )


def test_deleting_income_that_was_already_moved_on_is_refused() -> None:
    with BUDGET.session(seed=0) as s:
        gifts = value(
            s,
            "SELECT id FROM categories WHERE balance >= 0 AND NOT archived AND id != ? ORDER BY id",
            RTA,
        )
        held = balance(s, "categories", gifts)
        income = ok(
            s,
            "add_income",
            {
                "account_id": account(s, "checking"),
                "amount": 50,
                "payer": "Venmo from Sam",
                "category_id": gifts,
            },
        )
        everything = str(money(held + 5000))
        ok(
            s,
            "transfer_between_envelopes",
            {"from_category_id": gifts, "to_category_id": RTA, "amount": everything},
        )
        message = refused(
            s, "delete_transaction", {"transaction_id": income["transaction_id"]}, "envelope_funds"
        )
        assert "transfer_between_envelopes" in message


# ------------------------------------------------------------ date_window
def test_transactions_are_dated_inside_the_open_window() -> None:
    with BUDGET.session(seed=0) as s:
        first, day = open_from(s), today(s)
        base = {
            "account_id": account(s, "checking"),
            "category_id": category(s, "Groceries"),
            "amount": 10,
            "payee": "Aldi",
        }
        for fine in (first, day, day - dt.timedelta(days=1)):
            ok(s, "add_expense", {**base, "date": fine.isoformat()})
        for bad in (first - dt.timedelta(days=1), day + dt.timedelta(days=1), dt.date(2020, 1, 1)):
            refused(s, "add_expense", {**base, "date": bad.isoformat()}, "date_window")
            income = {
                "account_id": base["account_id"],
                "amount": 5,
                "payer": "x",
                "date": bad.isoformat(),
            }
            refused(s, "add_income", income, "date_window")
        assert s.call("add_expense", {**base, "date": "yesterday"}).error_kind == "bad_arguments"


def test_transactions_in_closed_months_cannot_be_deleted() -> None:
    with BUDGET.session(seed=0) as s:
        old = value(s, "SELECT id FROM transactions WHERE date < ? ORDER BY id DESC", open_from(s))
        refused(s, "delete_transaction", {"transaction_id": old}, "closed_month")


# ------------------------------------------------------------ accounts
def test_cash_never_goes_below_zero_and_cards_stop_at_their_limit() -> None:
    with BUDGET.session(seed=0) as s:
        cash, card = account(s, "cash"), account(s, "credit_card")
        cat = category(s, "Groceries")
        ok(
            s,
            "set_category_limit",
            {"category_id": cat, "monthly_limit": "99999", "enforcement": "warn"},
        )
        for acc in (cash, card):
            floor = value(s, "SELECT COALESCE(-credit_limit, 0) FROM accounts WHERE id = ?", acc)
            room = balance(s, "accounts", acc) - floor
            assert room > 0
            args = {"account_id": acc, "category_id": cat, "payee": "Costco"}
            message = refused(
                s, "add_expense", {**args, "amount": str(money(room + 1))}, "account_funds"
            )
            assert str(money(balance(s, "accounts", acc))) in message
            ok(s, "add_expense", {**args, "amount": str(money(room))})
            assert balance(s, "accounts", acc) == floor


@pytest.mark.parametrize(
    ("tool", "rule"),
    [
        ("add_expense", "account_closed"),
        ("add_income", "account_closed"),
        ("create_recurring_expense", "account_closed"),
    ],
)
def test_closed_accounts_take_nothing_new(tool: str, rule: str) -> None:
    with BUDGET.session(seed=0) as s:
        closed = value(s, "SELECT id FROM accounts WHERE closed")
        args: dict[str, Any] = {"account_id": closed, "amount": 20}
        if tool == "add_income":
            args["payer"] = "Refund"
        else:
            args |= {"category_id": category(s, "Groceries"), "payee": "Aldi"}
        if tool == "create_recurring_expense":
            args |= {"frequency": "monthly", "start_date": today(s).isoformat()}
        refused(s, tool, args, rule)


def test_income_goes_to_deposit_accounts_and_ready_to_assign_by_default() -> None:
    with BUDGET.session(seed=0) as s:
        refused(
            s,
            "add_income",
            {"account_id": account(s, "credit_card"), "amount": 30, "payer": "Cashback"},
            "income_account",
        )
        rta = balance(s, "categories", RTA)
        out = ok(
            s,
            "add_income",
            {"account_id": account(s, "savings"), "amount": "12.34", "payer": "Interest"},
        )
        assert out["category_id"] == RTA and balance(s, "categories", RTA) == rta + 1234


# ------------------------------------------------------------ categories
def test_ready_to_assign_is_not_a_spending_category() -> None:
    with BUDGET.session(seed=0) as s:
        acc = account(s, "checking")
        spend = {"account_id": acc, "category_id": RTA, "amount": 5, "payee": "x"}
        refused(s, "add_expense", spend, "ready_to_assign")
        refused(
            s, "set_category_limit", {"category_id": RTA, "monthly_limit": 10}, "ready_to_assign"
        )
        bill = {**spend, "frequency": "weekly", "start_date": today(s).isoformat()}
        refused(s, "create_recurring_expense", bill, "ready_to_assign")
        listed = ok(s, "list_categories", {})
        assert RTA not in [c["category_id"] for c in listed["categories"]]
        assert listed["ready_to_assign_id"] == RTA
        assert cents(listed["ready_to_assign"]) == balance(s, "categories", RTA)


def test_archived_categories_take_nothing_in_but_give_money_back() -> None:
    with BUDGET.session(seed=0) as s:
        archived = value(s, "SELECT id FROM categories WHERE archived ORDER BY balance DESC")
        acc = account(s, "checking")
        refused(
            s,
            "add_expense",
            {"account_id": acc, "category_id": archived, "amount": 5, "payee": "x"},
            "category_archived",
        )
        refused(
            s,
            "add_income",
            {"account_id": acc, "category_id": archived, "amount": 5, "payer": "x"},
            "category_archived",
        )
        refused(
            s,
            "set_category_limit",
            {"category_id": archived, "monthly_limit": 10},
            "category_archived",
        )
        into = {"from_category_id": RTA, "to_category_id": archived, "amount": 1}
        refused(s, "transfer_between_envelopes", into, "category_archived")
        held = balance(s, "categories", archived)
        if held > 0:
            ok(
                s,
                "transfer_between_envelopes",
                {"from_category_id": archived, "to_category_id": RTA, "amount": str(money(held))},
            )
            assert balance(s, "categories", archived) == 0
        assert archived not in [
            c["category_id"] for c in ok(s, "list_categories", {})["categories"]
        ]


# ------------------------------------------------------------ recurring
def due(session: Session) -> list[tuple[str, str, str]]:
    return rows(
        session,
        """SELECT id, next_date, frequency FROM recurring_expenses
           WHERE status = 'active' AND next_date <= ? ORDER BY next_date, id""",
        today(session).isoformat(),
    )


def test_posting_a_due_bill_records_it_on_its_day_and_schedules_the_next() -> None:
    for seed in SEEDS:
        with BUDGET.session(seed=seed) as s:
            rec, next_date, frequency = due(s)[0]
            anchor = value(s, "SELECT anchor_day FROM recurring_expenses WHERE id = ?", rec)
            ok(
                s,
                "set_category_limit",
                {
                    "category_id": value(
                        s, "SELECT category_id FROM recurring_expenses WHERE id = ?", rec
                    ),
                    "monthly_limit": "99999",
                },
            )
            out = ok(s, "post_recurring_expense", {"recurring_id": rec})
            expected = next_occurrence(dt.date.fromisoformat(next_date), frequency, anchor)
            assert out["date"] == next_date and out["next_date"] == expected.isoformat()
            assert out["still_due"] is (expected <= today(s))
            txn = rows(
                s,
                "SELECT recurring_id, date, kind FROM transactions WHERE id = ?",
                out["transaction_id"],
            )
            assert txn == [(rec, next_date, "expense")]
            assert rule_violations(s) == []


def test_a_bill_is_posted_only_when_due_and_only_while_active() -> None:
    with BUDGET.session(seed=0) as s:
        upcoming = value(
            s,
            "SELECT id FROM recurring_expenses WHERE status = 'active' AND next_date > ? ORDER BY id",
            today(s).isoformat(),
        )
        message = refused(s, "post_recurring_expense", {"recurring_id": upcoming}, "not_due")
        assert "upcoming" in message
        rec = due(s)[0][0]
        ok(s, "cancel_recurring_expense", {"recurring_id": rec})
        refused(s, "post_recurring_expense", {"recurring_id": rec}, "recurring_inactive")
        refused(s, "cancel_recurring_expense", {"recurring_id": rec}, "recurring_inactive")
        ended = value(s, "SELECT id FROM recurring_expenses WHERE status = 'ended'")
        refused(s, "post_recurring_expense", {"recurring_id": ended}, "recurring_inactive")


def test_a_bill_ends_after_its_last_occurrence() -> None:
    with BUDGET.session(seed=0) as s:
        day = today(s).isoformat()
        created = ok(
            s,
            "create_recurring_expense",
            {
                "account_id": account(s, "checking"),
                "category_id": category(s, "Groceries"),
                "amount": "32.00",
                "payee": "Farm stand",
                "frequency": "weekly",
                "start_date": day,
                "end_date": day,
            },
        )
        assert created["due"] is True and created["status"] == "active"
        posted = ok(s, "post_recurring_expense", {"recurring_id": created["recurring_id"]})
        assert posted["status"] == "ended" and posted["still_due"] is False
        refused(
            s,
            "post_recurring_expense",
            {"recurring_id": created["recurring_id"]},
            "recurring_inactive",
        )


def test_create_recurring_expense_rules() -> None:
    with BUDGET.session(seed=0) as s:
        cat = category(s, "Dining out")
        blocking(s, cat, 10_000)
        base = {
            "account_id": account(s, "credit_card"),
            "category_id": cat,
            "amount": "15.49",
            "payee": "Netflix",
            "frequency": "monthly",
            "start_date": (today(s) + dt.timedelta(days=3)).isoformat(),
        }
        limit = value(s, "SELECT monthly_limit FROM categories WHERE id = ?", cat)
        refused(
            s,
            "create_recurring_expense",
            {**base, "amount": str(money(limit + 1))},
            "monthly_limit",
        )
        for bad in (today(s) - dt.timedelta(days=1), today(s) + dt.timedelta(days=366)):
            refused(
                s,
                "create_recurring_expense",
                {**base, "start_date": bad.isoformat()},
                "date_window",
            )
        ok(s, "create_recurring_expense", base)
        duplicate = s.call("create_recurring_expense", {**base, "payee": "NETFLIX"})
        assert duplicate.error_kind == "conflict"
        backwards = {**base, "end_date": today(s).isoformat()}
        assert s.call("create_recurring_expense", backwards).error_kind == "bad_arguments"


@given(
    start=st.dates(dt.date(2024, 1, 1), dt.date(2030, 12, 31)),
    frequency=st.sampled_from(["monthly", "yearly"]),
    steps=st.integers(1, 30),
)
@FEW
def test_monthly_and_yearly_bills_keep_their_day_of_the_month(
    start: dt.date, frequency: str, steps: int
) -> None:
    day = start
    for _ in range(steps):
        nxt = next_occurrence(day, frequency, start.day)
        months = (nxt.year - day.year) * 12 + nxt.month - day.month
        assert months == (1 if frequency == "monthly" else 12)
        last = (first_of_month(nxt, 1) - dt.timedelta(days=1)).day
        assert nxt.day == min(start.day, last)
        day = nxt


def test_at_most_100_recurring_expenses_are_active() -> None:
    with BUDGET.session(seed=0) as s:
        active = value(s, "SELECT count(*) FROM recurring_expenses WHERE status = 'active'")
        bill = {
            "account_id": account(s, "credit_card"),
            "category_id": category(s, "Groceries"),
            "amount": "9.99",
            "frequency": "monthly",
            "start_date": (today(s) + dt.timedelta(days=1)).isoformat(),
        }
        for n in range(100 - active):
            ok(s, "create_recurring_expense", {**bill, "payee": f"Service {n}"})
        refused(s, "create_recurring_expense", {**bill, "payee": "One too many"}, "recurring_cap")
        rec = value(s, "SELECT id FROM recurring_expenses WHERE payee = 'Service 0'")
        ok(s, "cancel_recurring_expense", {"recurring_id": rec})
        ok(s, "create_recurring_expense", {**bill, "payee": "One too many"})


def test_every_rule_a_refusal_names_is_documented_for_the_model() -> None:
    named = set(re.findall(r'_broken\(\s*"(\w+)"', inspect.getsource(tools)))
    assert named == set(tools.RULES), "a rule is refused without being documented, or unused"
    for rule_name in tools.RULES:
        assert f"{rule_name}:" in BUDGET.instructions


def test_search_matches_text_literally_and_accounts_on_both_sides() -> None:
    with BUDGET.session(seed=0) as s:
        assert ok(s, "search_transactions", {"query": "%"})["count"] == 0
        assert ok(s, "search_transactions", {"query": "_"})["count"] == 0
        card = account(s, "credit_card")
        found = ok(s, "search_transactions", {"account_id": card, "kind": "account_transfer"})
        assert found["count"] > 0, "card payments are found by the card they paid"
        assert all(t["to_account_id"] == card for t in found["transactions"])
        newest = found["transactions"]
        assert [t["date"] for t in newest] == sorted((t["date"] for t in newest), reverse=True)


def test_list_accounts_shows_what_each_account_can_still_pay() -> None:
    with BUDGET.session(seed=0) as s:
        listed = ok(s, "list_accounts", {})
        assert all(not a["closed"] for a in listed["accounts"])
        assert cents(listed["net_balance"]) == sum(cents(a["balance"]) for a in listed["accounts"])
        for a in listed["accounts"]:
            floor = -cents(a["credit_limit"]) if a["kind"] == "credit_card" else 0
            assert cents(a["available"]) == cents(a["balance"]) - floor
        every = ok(s, "list_accounts", {"include_closed": True})["accounts"]
        assert len(every) == len(listed["accounts"]) + value(
            s, "SELECT count(*) FROM accounts WHERE closed"
        )


# ------------------------------------------------------------ call sequences
def checked(session: Session, name: str, args: dict[str, Any]) -> ToolResult:
    """A call that never crashes; a failed one changes nothing."""
    before = session.state_hash()
    result = session.call(name, args)
    assert result.error_kind != ErrorKind.INTERNAL, result.message
    if not result.ok:
        assert result.message
        assert session.state_hash() == before, f"{name}({args}) failed but changed the state"
    return result


AMOUNTS = st.one_of(
    st.sampled_from(["0.01", "5", "19.99", "64.18", "250", "1200.00"]),
    st.integers(1, 400_000).map(lambda c: str(money(c))),
)


class BudgetRules(RuleBasedStateMachine):
    """Plausible calls on live ids (and some that break a rule); the totals must always add up."""

    session: Session

    @initialize(seed=st.sampled_from(SEEDS))
    def open_session(self, seed: int) -> None:
        self.session = BUDGET.session(seed=seed)
        self.day = today(self.session)
        self.first = open_from(self.session)

    def teardown(self) -> None:
        self.session.close()

    def pick(self, data: st.DataObject, sql: str, *params: Any) -> str:
        found = [r[0] for r in rows(self.session, sql, *params)]
        return data.draw(st.sampled_from(found or ["none_1"]))

    def some_account(self, data: st.DataObject) -> str:
        return self.pick(data, "SELECT id FROM accounts ORDER BY id")

    def some_category(self, data: st.DataObject) -> str:
        return self.pick(data, "SELECT id FROM categories ORDER BY id")

    def some_day(self, data: st.DataObject) -> str:
        offset = data.draw(st.integers(-3, (self.day - self.first).days + 3))
        return (self.day - dt.timedelta(days=offset)).isoformat()

    def limit_holds(self, result: ToolResult) -> None:
        """A blocking category never ends a successful expense over its limit."""
        if not result.ok:
            return
        cat = result.content["category_id"]
        enforcement, limit = rows(
            self.session, "SELECT enforcement, monthly_limit FROM categories WHERE id = ?", cat
        )[0]
        if enforcement == "block" and limit is not None:
            assert cents(result.content["category_spent"]) <= limit

    @rule(data=st.data(), amount=AMOUNTS)
    def add_expense(self, data: st.DataObject, amount: str) -> None:
        args = {
            "account_id": self.some_account(data),
            "category_id": self.some_category(data),
            "amount": amount,
            "payee": "Corner Store",
            "date": self.some_day(data),
        }
        self.limit_holds(checked(self.session, "add_expense", args))

    @rule(data=st.data(), amount=AMOUNTS, direct=st.booleans())
    def add_income(self, data: st.DataObject, amount: str, direct: bool) -> None:
        args = {"account_id": self.some_account(data), "amount": amount, "payer": "Payroll"}
        if direct:
            args["category_id"] = self.some_category(data)
        checked(self.session, "add_income", args)

    @rule(data=st.data(), share=st.integers(1, 130))
    def transfer(self, data: st.DataObject, share: int) -> None:
        src, dst = self.some_category(data), self.some_category(data)
        held = balance(self.session, "categories", src)
        amount = str(money(max(1, held * share // 100)))
        args = {"from_category_id": src, "to_category_id": dst, "amount": amount}
        checked(self.session, "transfer_between_envelopes", args)

    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        old = data.draw(st.integers(0, 4)) == 0
        sql = "SELECT id FROM transactions WHERE date " + ("<" if old else ">=") + " ? ORDER BY id"
        txn = self.pick(data, sql, self.first.isoformat())
        checked(self.session, "delete_transaction", {"transaction_id": txn})

    @rule(data=st.data(), limit=AMOUNTS, enforcement=st.sampled_from(["warn", "block", None]))
    def set_limit(self, data: st.DataObject, limit: str, enforcement: str | None) -> None:
        args: dict[str, Any] = {"category_id": self.some_category(data), "monthly_limit": limit}
        if enforcement is not None:
            args["enforcement"] = enforcement
        checked(self.session, "set_category_limit", args)

    @rule(
        data=st.data(),
        amount=AMOUNTS,
        frequency=st.sampled_from(["weekly", "monthly", "yearly"]),
        ahead=st.integers(-2, 40),
    )
    def create_bill(self, data: st.DataObject, amount: str, frequency: str, ahead: int) -> None:
        args = {
            "account_id": self.some_account(data),
            "category_id": self.some_category(data),
            "amount": amount,
            "payee": data.draw(st.sampled_from(["Netflix", "Gym", "Dog walker"])),
            "frequency": frequency,
            "start_date": (self.day + dt.timedelta(days=ahead)).isoformat(),
        }
        checked(self.session, "create_recurring_expense", args)

    @rule(data=st.data())
    def post_bill(self, data: st.DataObject) -> None:
        rec = self.pick(data, "SELECT id FROM recurring_expenses ORDER BY next_date, id")
        self.limit_holds(checked(self.session, "post_recurring_expense", {"recurring_id": rec}))

    @rule(data=st.data())
    def cancel_bill(self, data: st.DataObject) -> None:
        rec = self.pick(data, "SELECT id FROM recurring_expenses ORDER BY id")
        checked(self.session, "cancel_recurring_expense", {"recurring_id": rec})

    @invariant()
    def totals_equal_their_rows(self) -> None:
        if hasattr(self, "session"):
            assert rule_violations(self.session) == []


TestBudgetRules = BudgetRules.TestCase
TestBudgetRules.settings = settings(
    max_examples=12,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
