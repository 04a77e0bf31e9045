"""The payments server: money and webhook rules under random call sequences, idempotency keys,
one test per domain rule, its tasks, and the conformance suite."""

from __future__ import annotations

import datetime as dt
import json
import random
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from pydantic import TypeAdapter

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import one, rows

PAYMENTS = prove_gym.get_server("payments")
TOOLS = sorted(t.name for t in PAYMENTS.visible_tools())
SEEDS = [0, 7, 11]
TYPES = [
    "invoice.created",
    "invoice.paid",
    "invoice.voided",
    "charge.succeeded",
    "charge.failed",
    "refund.created",
    "payout.created",
    "payout.paid",
]
TODAY_MONTHS = "(strftime('%Y', ?) * 12 + strftime('%m', ?))"


def cents(session: Session, sql: str, *params: Any) -> int:
    return int(rows(session, sql, *params)[0][0] or 0)


def money(value: int) -> Decimal:
    return Decimal(value).scaleb(-2)


def counts(session: Session) -> dict[str, int]:
    tables = ["charges", "refunds", "payouts", "invoices", "events", "webhook_deliveries"]
    return {t: cents(session, f"SELECT COUNT(*) FROM {t}") for t in tables}


# ------------------------------------------------------------ the invariants
def rule_violations(session: Session) -> list[str]:
    """Every broken payments rule, read straight from SQLite (see plugins/payments/models.py)."""
    broken: list[str] = []

    def check(what: str, sql: str, *params: Any) -> None:
        found = rows(session, sql, *params)
        if found:
            broken.append(f"{what}: {found[:5]}")

    check(
        "refunded more than captured, or amount_refunded is not the sum of the refunds",
        """SELECT c.id, c.amount, c.amount_refunded, COALESCE(r.s, 0) FROM charges c
           LEFT JOIN (SELECT charge_id, SUM(amount) s FROM refunds GROUP BY charge_id) r
             ON r.charge_id = c.id
           WHERE c.amount <= 0 OR c.amount_refunded < 0 OR c.amount_refunded > c.amount
              OR c.amount_refunded != COALESCE(r.s, 0)
              OR c.status NOT IN ('succeeded', 'failed')
              OR (c.status = 'failed' AND (c.amount_refunded != 0 OR c.failure_code IS NULL))
              OR (c.status = 'succeeded' AND c.failure_code IS NOT NULL)""",
    )
    check(
        "an invoice's amount_paid is not its succeeded charges, or its status disagrees",
        """SELECT i.id, i.status, i.amount_due, i.amount_paid, COALESCE(c.s, 0) FROM invoices i
           LEFT JOIN (SELECT invoice_id, SUM(amount) s FROM charges
                      WHERE status = 'succeeded' GROUP BY invoice_id) c ON c.invoice_id = i.id
           WHERE i.amount_paid != COALESCE(c.s, 0) OR i.amount_paid > i.amount_due
              OR i.amount_due <= 0 OR i.status NOT IN ('open', 'paid', 'void')
              OR ((i.status = 'paid') != (i.amount_paid = i.amount_due))
              OR ((i.status = 'paid') != (i.paid_at IS NOT NULL))
              OR ((i.status = 'void') != (i.voided_at IS NOT NULL))""",
    )
    check(
        "a void invoice still holds money",
        """SELECT i.id FROM invoices i JOIN charges c ON c.invoice_id = i.id
           WHERE i.status = 'void' AND c.status = 'succeeded'
           GROUP BY i.id HAVING SUM(c.amount - c.amount_refunded) != 0""",
    )
    check(
        "a charge or refund disagrees with its invoice on merchant or customer",
        """SELECT c.id FROM charges c JOIN invoices i ON i.id = c.invoice_id
           WHERE c.merchant_id != i.merchant_id OR c.customer_id != i.customer_id
           UNION ALL
           SELECT r.id FROM refunds r JOIN charges c ON c.id = r.charge_id
           WHERE r.merchant_id != c.merchant_id OR r.invoice_id != c.invoice_id
           UNION ALL
           SELECT i.id FROM invoices i JOIN customers u ON u.id = i.customer_id
           JOIN merchants m ON m.id = i.merchant_id
           WHERE u.merchant_id != i.merchant_id OR i.currency != m.currency""",
    )
    check(
        "a merchant's balance is not charges - refunds - payouts, or is negative",
        """SELECT m.id, m.balance, COALESCE(c.s, 0) - COALESCE(r.s, 0) - COALESCE(p.s, 0)
           FROM merchants m
           LEFT JOIN (SELECT merchant_id, SUM(amount) s FROM charges
                      WHERE status = 'succeeded' GROUP BY merchant_id) c ON c.merchant_id = m.id
           LEFT JOIN (SELECT merchant_id, SUM(amount) s FROM refunds GROUP BY merchant_id) r
             ON r.merchant_id = m.id
           LEFT JOIN (SELECT merchant_id, SUM(amount) s FROM payouts GROUP BY merchant_id) p
             ON p.merchant_id = m.id
           WHERE m.balance < 0
              OR m.balance != COALESCE(c.s, 0) - COALESCE(r.s, 0) - COALESCE(p.s, 0)""",
    )
    expected_events = """
        SELECT 'charge.' || status, id, merchant_id FROM charges
        UNION ALL SELECT 'refund.created', id, merchant_id FROM refunds
        UNION ALL SELECT 'payout.created', id, merchant_id FROM payouts
        UNION ALL SELECT 'invoice.created', id, merchant_id FROM invoices
        UNION ALL SELECT 'invoice.paid', id, merchant_id FROM invoices WHERE status = 'paid'
        UNION ALL SELECT 'invoice.voided', id, merchant_id FROM invoices WHERE status = 'void'"""
    wanted = {(t, o, m) for t, o, m in rows(session, expected_events)}
    have: dict[tuple[str, str, str], int] = {}
    for t, o, m in rows(session, "SELECT type, object_id, merchant_id FROM events"):
        have[(t, o, m)] = have.get((t, o, m), 0) + 1
    missing = sorted(wanted - set(have))
    doubled = sorted(k for k, n in have.items() if n > 1)
    stray = sorted(k for k in set(have) - wanted if k[0] != "payout.paid")
    if missing or doubled or stray:
        broken.append(
            f"events do not match the objects: missing {missing[:3]}, doubled {doubled[:3]}, "
            f"without an object {stray[:3]}"
        )
    check(
        "event ids are not numbered by seq",
        "SELECT id, seq FROM events WHERE id != printf('evt_%05d', seq)",
    )
    # the delivery log: one delivery per event and subscribed endpoint enabled at the time
    endpoints = rows(
        session,
        "SELECT id, merchant_id, events, status, first_seq, last_seq, response_code "
        "FROM webhook_endpoints",
    )
    for eid, _, _, status, _, last, _ in endpoints:
        if (status == "enabled") != (last is None):
            broken.append(f"endpoint {eid} is {status} but last_seq is {last}")
    by_merchant: dict[str, list[tuple]] = {}
    for ep in endpoints:
        by_merchant.setdefault(ep[1], []).append(ep)
    expected: dict[tuple[str, str], int] = {}
    for event_id, seq, merchant, type_ in rows(
        session, "SELECT id, seq, merchant_id, type FROM events"
    ):
        for eid, _, events, _, first, last, code in by_merchant.get(merchant, []):
            window = first <= seq and (last is None or seq <= last)
            if window and (events == "*" or type_ in events.split(" ")):
                expected[(event_id, eid)] = code
    logged = {
        (e, p): (s, c)
        for e, p, s, c in rows(
            session, "SELECT event_id, endpoint_id, status, response_code FROM webhook_deliveries"
        )
    }
    if set(logged) != set(expected):
        broken.append(
            f"delivery log differs from the subscriptions: missing "
            f"{sorted(set(expected) - set(logged))[:3]}, unexpected "
            f"{sorted(set(logged) - set(expected))[:3]}"
        )
    wrong = [
        k
        for k, (status, code) in logged.items()
        if code != expected.get(k, code) or (status == "delivered") != (200 <= code < 300)
    ]
    if wrong:
        broken.append(f"delivery status disagrees with the endpoint's response: {wrong[:3]}")
    # idempotency keys name the object their request created, of the same merchant
    for merchant, key, tool, object_id in rows(
        session, "SELECT merchant_id, key, tool, object_id FROM idempotency_keys"
    ):
        table = {
            "create_invoice": "invoices",
            "charge_invoice": "charges",
            "refund_charge": "refunds",
            "create_payout": "payouts",
        }.get(tool)
        found = (
            rows(
                session, f"SELECT merchant_id, idempotency_key FROM {table} WHERE id = ?", object_id
            )
            if table
            else []
        )
        if found != [(merchant, key)]:
            broken.append(f"idempotency key {merchant}/{key} ({tool}) -> {object_id}: {found}")
    return broken


# ------------------------------------------------------------ fixtures
@pytest.fixture
def pay() -> Iterator[Session]:
    session = PAYMENTS.session(seed=0)
    yield session
    session.close()


def chargeable_invoice(session: Session, *, min_due: int = 10000) -> str:
    """An open invoice whose customer has a valid card that the issuer accepts."""
    today = session.now.date().isoformat()
    return one(
        session,
        f"""SELECT i.id FROM invoices i JOIN customers c ON c.id = i.customer_id
            WHERE i.status = 'open' AND i.amount_paid = 0 AND i.amount_due >= ?
              AND c.card_brand IS NOT NULL AND c.card_decline_code IS NULL
              AND c.card_exp_year * 12 + c.card_exp_month >= {TODAY_MONTHS}
            ORDER BY i.id""",
        min_due,
        today,
        today,
    )


def refundable_charge(session: Session) -> str:
    """A recent succeeded, unrefunded charge whose merchant's balance covers it."""
    return one(
        session,
        """SELECT c.id FROM charges c JOIN merchants m ON m.id = c.merchant_id
           WHERE c.status = 'succeeded' AND c.amount_refunded = 0 AND c.amount <= m.balance
             AND c.created_at >= datetime(?, '-90 days') ORDER BY c.id""",
        session.now.isoformat(sep=" "),
    )


def call_ok(session: Session, name: str, args: dict[str, Any]) -> Any:
    result = session.call(name, args)
    assert result.ok, f"{name}({args}): {result.message}"
    return result.content


def refused(session: Session, name: str, args: dict[str, Any], kind: ErrorKind, rule: str) -> str:
    """Call, expect a refusal naming ``rule`` that changes nothing; returns the message."""
    before = session.state_hash()
    result = session.call(name, args)
    assert result.error_kind == kind, (name, args, result.error_kind, result.message)
    assert rule in (result.message or ""), result.message
    assert session.state_hash() == before, f"refused {name} changed the state"
    return result.message or ""


# ------------------------------------------------------------ sampled states
@pytest.mark.parametrize("seed", SEEDS)
def test_a_sampled_platform_is_big_enough_and_keeps_every_rule(seed: int) -> None:
    with PAYMENTS.session(seed=seed) as session:
        n = counts(session)
        assert cents(session, "SELECT COUNT(*) FROM merchants") == 12
        assert cents(session, "SELECT COUNT(*) FROM customers") >= 120
        assert n["invoices"] >= 300 and n["charges"] >= 250 and n["refunds"] >= 10
        assert n["payouts"] >= 50 and n["webhook_deliveries"] >= 100
        statuses = {s for (s,) in rows(session, "SELECT DISTINCT status FROM invoices")}
        assert statuses == {"open", "paid", "void"}
        assert cents(session, "SELECT COUNT(*) FROM charges WHERE status = 'failed'") > 0
        assert rule_violations(session) == []


def test_larger_sizes_scale_and_stay_consistent() -> None:
    with PAYMENTS.session(seed=3, size=2) as session:
        assert cents(session, "SELECT COUNT(*) FROM merchants") == 24
        assert rule_violations(session) == []


# ------------------------------------------------------------ amounts
def test_amounts_are_exact_whether_sent_as_number_or_string() -> None:
    hashes = []
    for amount in [12.5, "12.50", "12.5", Decimal("12.5")]:
        with PAYMENTS.session(seed=0) as session:
            invoice = chargeable_invoice(session)
            done = call_ok(session, "charge_invoice", {"invoice_id": invoice, "amount": amount})
            assert done["amount"] == "12.50"
            hashes.append(session.state_hash())
    assert len(set(hashes)) == 1


@pytest.mark.parametrize("amount", ["12.345", 0.001, 0, -5, "1e30", "NaN", True, "1,000", "abc"])
def test_unusable_amounts_are_refused_before_anything_happens(pay: Session, amount: Any) -> None:
    invoice = chargeable_invoice(pay)
    before = pay.state_hash()
    for name, args in [
        ("charge_invoice", {"invoice_id": invoice}),
        ("refund_charge", {"charge_id": refundable_charge(pay)}),
        ("create_payout", {"merchant_id": "mer_001"}),
    ]:
        result = pay.call(name, {**args, "amount": amount})
        assert result.error_kind == ErrorKind.BAD_ARGUMENTS, (name, amount, result.message)
    assert pay.state_hash() == before


# ------------------------------------------------------------ charges
def test_charging_in_parts_pays_the_invoice_and_moves_the_balance_once(pay: Session) -> None:
    invoice = chargeable_invoice(pay)
    merchant = one(pay, "SELECT merchant_id FROM invoices WHERE id = ?", invoice)
    due = money(cents(pay, "SELECT amount_due FROM invoices WHERE id = ?", invoice))
    balance = money(cents(pay, "SELECT balance FROM merchants WHERE id = ?", merchant))
    first = call_ok(pay, "charge_invoice", {"invoice_id": invoice, "amount": "30.00"})
    assert (first["status"], first["invoice_status"]) == ("succeeded", "open")
    assert Decimal(first["invoice_amount_remaining"]) == due - 30
    too_much = str(due - 30 + Decimal("0.01"))
    message = refused(
        pay,
        "charge_invoice",
        {"invoice_id": invoice, "amount": too_much},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'overpayment'",
    )
    assert str(due - 30) in message
    rest = call_ok(pay, "charge_invoice", {"invoice_id": invoice})
    assert Decimal(rest["amount"]) == due - 30 and rest["invoice_status"] == "paid"
    assert Decimal(rest["merchant_balance"]) == balance + due
    types = [
        e["type"]
        for e in call_ok(
            pay, "list_events", {"merchant_id": merchant, "invoice_id": invoice, "limit": 3}
        )["events"]
    ]
    assert types == ["invoice.paid", "charge.succeeded", "charge.succeeded"]
    refused(
        pay,
        "charge_invoice",
        {"invoice_id": invoice},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'invoice_not_open'",
    )
    assert rule_violations(pay) == []


def test_a_declined_card_records_a_failed_charge_and_moves_no_money(pay: Session) -> None:
    invoice = one(
        pay,
        """SELECT i.id FROM invoices i JOIN customers c ON c.id = i.customer_id
           WHERE i.status = 'open' AND c.card_decline_code IS NOT NULL ORDER BY i.id""",
    )
    merchant = one(pay, "SELECT merchant_id FROM invoices WHERE id = ?", invoice)
    balance = cents(pay, "SELECT balance FROM merchants WHERE id = ?", merchant)
    paid = cents(pay, "SELECT amount_paid FROM invoices WHERE id = ?", invoice)
    done = call_ok(pay, "charge_invoice", {"invoice_id": invoice})
    assert done["status"] == "failed" and done["failure_code"] and done["failure_message"]
    assert done["invoice_status"] == "open"
    assert cents(pay, "SELECT balance FROM merchants WHERE id = ?", merchant) == balance
    assert cents(pay, "SELECT amount_paid FROM invoices WHERE id = ?", invoice) == paid
    event = one(pay, "SELECT type FROM events WHERE object_id = ?", done["charge_id"])
    assert event == "charge.failed"
    refused(
        pay,
        "refund_charge",
        {"charge_id": done["charge_id"]},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'charge_failed'",
    )
    assert rule_violations(pay) == []


def test_expired_or_missing_cards_are_refused_and_say_what_to_do(pay: Session) -> None:
    today = pay.now.date().isoformat()
    expired = one(
        pay,
        f"""SELECT i.id FROM invoices i JOIN customers c ON c.id = i.customer_id
            WHERE i.status = 'open' AND c.card_brand IS NOT NULL
              AND c.card_exp_year * 12 + c.card_exp_month < {TODAY_MONTHS} ORDER BY i.id""",
        today,
        today,
    )
    message = refused(
        pay,
        "charge_invoice",
        {"invoice_id": expired},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'card_expired'",
    )
    assert "update" in message
    merchant = one(pay, "SELECT merchant_id FROM invoices WHERE id = ?", expired)
    made = call_ok(
        pay,
        "create_invoice",
        {
            "merchant_id": merchant,
            "customer_email": "Ana.Garcia@Example.com ",
            "customer_name": "Ana Garcia",
            "amount": 80,
            "description": "Portrait session",
        },
    )
    assert made["customer"] == {
        "customer_email": "ana.garcia@example.com",
        "name": "Ana Garcia",
        "card": None,
        "card_status": "none",
    }
    refused(
        pay,
        "charge_invoice",
        {"invoice_id": made["invoice_id"]},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'no_payment_method'",
    )


def test_a_new_customer_needs_a_name_and_dates_stay_within_a_year(pay: Session) -> None:
    args = {"merchant_id": "mer_001", "amount": 50, "description": "Consulting"}
    message = refused(
        pay,
        "create_invoice",
        {**args, "customer_email": "nobody@example.org"},
        ErrorKind.BAD_ARGUMENTS,
        "customer_name",
    )
    assert "ask the user" in message
    email = one(pay, "SELECT email FROM customers WHERE merchant_id = 'mer_001' ORDER BY id")
    for due in ["2020-01-01", "2099-01-01", "next week"]:
        refused(
            pay,
            "create_invoice",
            {**args, "customer_email": email, "due_date": due},
            ErrorKind.BAD_ARGUMENTS,
            "due_date",
        )
    made = call_ok(pay, "create_invoice", {**args, "customer_email": email.upper()})
    assert made["customer_email"] == email and made["status"] == "open"
    prefix = one(pay, "SELECT invoice_prefix FROM merchants WHERE id = 'mer_001'")
    last = max(
        int(n.rsplit("-", 1)[1])
        for (n,) in rows(pay, "SELECT number FROM invoices WHERE merchant_id = 'mer_001'")
    )
    assert made["number"] == f"{prefix}-{last:04d}"


# ------------------------------------------------------------ refunds
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(
        st.one_of(
            st.none(), st.decimals(min_value=Decimal("0.01"), max_value=Decimal("400"), places=2)
        ),
        min_size=1,
        max_size=6,
    )
)
def test_refunds_never_add_up_to_more_than_was_captured(parts: list[Decimal | None]) -> None:
    with PAYMENTS.session(seed=0) as session:
        charge = refundable_charge(session)
        captured = money(cents(session, "SELECT amount FROM charges WHERE id = ?", charge))
        refunded = Decimal("0.00")
        for part in parts:
            args: dict[str, Any] = {"charge_id": charge}
            if part is not None:
                args["amount"] = str(part)
            result = session.call("refund_charge", args)
            left = captured - refunded
            want = left if part is None else part
            if left > 0 and want <= left:
                assert result.ok, result.message
                refunded += want
                assert Decimal(result.content["charge_refundable"]) == captured - refunded
            else:
                assert result.error_kind == ErrorKind.PRECONDITION_FAILED
                assert "Rule 'refund_exceeds_captured'" in (result.message or "")
                assert str(left) in (result.message or "")
        stored = money(cents(session, "SELECT amount_refunded FROM charges WHERE id = ?", charge))
        assert stored == refunded <= captured
        assert rule_violations(session) == []


def test_refunds_come_out_of_the_balance_and_stop_at_zero(pay: Session) -> None:
    merchant = one(
        pay, "SELECT id FROM merchants WHERE payouts = 'enabled' AND balance > 500 ORDER BY id"
    )
    charge = one(
        pay,
        """SELECT id FROM charges WHERE merchant_id = ? AND status = 'succeeded'
           AND amount - amount_refunded >= 2 AND created_at >= datetime(?, '-150 days')
           ORDER BY id""",
        merchant,
        pay.now.isoformat(sep=" "),
    )
    payout = call_ok(pay, "create_payout", {"merchant_id": merchant})
    assert payout["merchant_balance"] == "0.00" and payout["status"] == "in_transit"
    message = refused(
        pay,
        "refund_charge",
        {"charge_id": charge, "amount": 1},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'insufficient_balance'",
    )
    assert "0.00" in message
    refused(
        pay,
        "create_payout",
        {"merchant_id": merchant},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'insufficient_balance'",
    )


def test_charges_older_than_the_refund_window_cannot_be_refunded(pay: Session) -> None:
    old = one(
        pay,
        """SELECT c.id FROM charges c JOIN merchants m ON m.id = c.merchant_id
           WHERE c.status = 'succeeded' AND c.amount > c.amount_refunded
             AND c.created_at < datetime(?, '-180 days') ORDER BY c.id""",
        pay.now.isoformat(sep=" "),
    )
    refused(
        pay,
        "refund_charge",
        {"charge_id": old, "amount": "0.01"},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'refund_window'",
    )


# ------------------------------------------------------------ voids and payouts
def test_only_open_invoices_holding_no_money_can_be_voided(pay: Session) -> None:
    paid = one(pay, "SELECT id FROM invoices WHERE status = 'paid' ORDER BY id")
    refused(
        pay, "void_invoice", {"invoice_id": paid}, ErrorKind.PRECONDITION_FAILED, "invoice_not_open"
    )
    invoice = chargeable_invoice(pay)
    charge = call_ok(pay, "charge_invoice", {"invoice_id": invoice, "amount": 20})["charge_id"]
    message = refused(
        pay,
        "void_invoice",
        {"invoice_id": invoice},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'invoice_has_payments'",
    )
    assert charge in message and "refund_charge" in message
    call_ok(pay, "refund_charge", {"charge_id": charge, "amount": 5})
    refused(
        pay,
        "void_invoice",
        {"invoice_id": invoice},
        ErrorKind.PRECONDITION_FAILED,
        "invoice_has_payments",
    )
    call_ok(pay, "refund_charge", {"charge_id": charge})
    voided = call_ok(pay, "void_invoice", {"invoice_id": invoice})
    assert voided["status"] == "void" and voided["amount_refunded"] == "20.00"
    refused(
        pay,
        "void_invoice",
        {"invoice_id": invoice},
        ErrorKind.PRECONDITION_FAILED,
        "invoice_not_open",
    )
    refused(
        pay,
        "charge_invoice",
        {"invoice_id": invoice},
        ErrorKind.PRECONDITION_FAILED,
        "invoice_not_open",
    )
    assert rule_violations(pay) == []


def test_paused_merchants_cannot_be_paid_out_and_hear_why(pay: Session) -> None:
    merchant, reason = rows(
        pay, "SELECT id, payout_pause_reason FROM merchants WHERE payouts = 'paused' ORDER BY id"
    )[0]
    message = refused(
        pay,
        "create_payout",
        {"merchant_id": merchant, "amount": 1},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'payouts_paused'",
    )
    assert reason in message


def test_payouts_arrive_two_business_days_later_and_never_exceed_the_balance(
    pay: Session,
) -> None:
    merchant = one(
        pay, "SELECT id FROM merchants WHERE payouts = 'enabled' AND balance > 1000 ORDER BY id"
    )
    balance = money(cents(pay, "SELECT balance FROM merchants WHERE id = ?", merchant))
    refused(
        pay,
        "create_payout",
        {"merchant_id": merchant, "amount": str(balance + Decimal("0.01"))},
        ErrorKind.PRECONDITION_FAILED,
        "insufficient_balance",
    )
    assert pay.call("create_payout", {"merchant_id": merchant, "amount": "0.99"}).error_kind == (
        ErrorKind.BAD_ARGUMENTS
    )
    done = call_ok(pay, "create_payout", {"merchant_id": merchant, "amount": 100})
    assert Decimal(done["merchant_balance"]) == balance - 100
    arrival = dt.date.fromisoformat(done["arrival_date"])
    today = pay.now.date()
    days = [today + dt.timedelta(days=d) for d in range(1, (arrival - today).days + 1)]
    assert [d.weekday() < 5 for d in days].count(True) == 2 and arrival.weekday() < 5


# ------------------------------------------------------------ idempotency
KEYED = [
    (
        "create_invoice",
        lambda s: {
            "merchant_id": "mer_001",
            "customer_email": one(s, "SELECT email FROM customers WHERE merchant_id = 'mer_001'"),
            "amount": "120.00",
            "description": "Catering",
        },
    ),
    ("charge_invoice", lambda s: {"invoice_id": chargeable_invoice(s), "amount": 15}),
    ("refund_charge", lambda s: {"charge_id": refundable_charge(s), "amount": 3}),
    (
        "create_payout",
        lambda s: {
            "merchant_id": one(
                s,
                "SELECT id FROM merchants WHERE payouts = 'enabled' AND balance > 5000 ORDER BY id",
            ),
            "amount": 10,
        },
    ),
]


@pytest.mark.parametrize(("tool", "make"), KEYED, ids=[k[0] for k in KEYED])
def test_a_retry_with_the_same_key_returns_the_original_without_moving_money_twice(
    pay: Session, tool: str, make: Any
) -> None:
    args = {**make(pay), "idempotency_key": "order-4711"}
    first = call_ok(pay, tool, args)
    assert first["idempotent_replay"] is False and first["event_ids"]
    after_first, n = pay.state_hash(), counts(pay)
    for _ in range(3):
        again = call_ok(pay, tool, dict(args))
        assert again["idempotent_replay"] is True and again["event_ids"] == []
        assert {k: v for k, v in again.items() if k not in ("idempotent_replay", "event_ids")} == {
            k: v for k, v in first.items() if k not in ("idempotent_replay", "event_ids")
        }
        assert pay.state_hash() == after_first and counts(pay) == n
    changed = {**args, "amount": "16.00" if tool != "refund_charge" else "2.00"}
    message = refused(pay, tool, changed, ErrorKind.CONFLICT, "Rule 'idempotency_key_reuse'")
    assert "order-4711" in message
    assert rule_violations(pay) == []


def test_a_key_belongs_to_one_request_of_one_merchant(pay: Session) -> None:
    invoice = chargeable_invoice(pay)
    merchant = one(pay, "SELECT merchant_id FROM invoices WHERE id = ?", invoice)
    charge = call_ok(
        pay, "charge_invoice", {"invoice_id": invoice, "amount": 5, "idempotency_key": "k-1"}
    )
    message = refused(
        pay,
        "create_payout",
        {"merchant_id": merchant, "amount": 5, "idempotency_key": "k-1"},
        ErrorKind.CONFLICT,
        "idempotency_key_reuse",
    )
    assert "charge_invoice" in message and charge["charge_id"] in message
    other = one(
        pay,
        "SELECT id FROM merchants WHERE payouts = 'enabled' AND balance > 100 AND id != ? "
        "ORDER BY id",
        merchant,
    )
    assert (
        call_ok(
            pay, "create_payout", {"merchant_id": other, "amount": 5, "idempotency_key": "k-1"}
        )["idempotent_replay"]
        is False
    )


def test_a_declined_charge_is_replayed_too_and_a_refused_call_keeps_no_key(pay: Session) -> None:
    declined = one(
        pay,
        """SELECT i.id FROM invoices i JOIN customers c ON c.id = i.customer_id
           WHERE i.status = 'open' AND c.card_decline_code IS NOT NULL ORDER BY i.id""",
    )
    args = {"invoice_id": declined, "idempotency_key": "try-1"}
    first = call_ok(pay, "charge_invoice", args)
    again = call_ok(pay, "charge_invoice", args)
    assert (again["charge_id"], again["status"], again["idempotent_replay"]) == (
        first["charge_id"],
        "failed",
        True,
    )
    paid = one(pay, "SELECT id FROM invoices WHERE status = 'paid' ORDER BY id")
    args = {"invoice_id": paid, "idempotency_key": "try-2"}
    refused(pay, "charge_invoice", args, ErrorKind.PRECONDITION_FAILED, "invoice_not_open")
    assert rows(pay, "SELECT * FROM idempotency_keys WHERE key = 'try-2'") == []


def test_sampled_keys_replay_the_requests_they_record(pay: Session) -> None:
    key, object_id = rows(
        pay,
        "SELECT key, object_id FROM idempotency_keys WHERE tool = 'charge_invoice' ORDER BY key",
    )[0]
    invoice, amount, status = rows(
        pay, "SELECT invoice_id, amount, status FROM charges WHERE id = ?", object_id
    )[0]
    remaining_before = rows(
        pay, "SELECT amount_due - amount_paid FROM invoices WHERE id = ?", invoice
    )
    args: dict[str, Any] = {"invoice_id": invoice, "idempotency_key": key}
    result = pay.call("charge_invoice", args)
    if not result.ok:  # the request named an amount (a partial payment)
        args["amount"] = str(money(amount))
        result = pay.call("charge_invoice", args)
    assert result.ok and result.content["idempotent_replay"], result.message
    assert result.content["charge_id"] == object_id and result.content["status"] == status
    assert rows(pay, "SELECT amount_due - amount_paid FROM invoices WHERE id = ?", invoice) == (
        remaining_before
    )


# ------------------------------------------------------------ webhooks
def test_a_new_endpoint_receives_later_events_of_its_types_only(pay: Session) -> None:
    invoice = chargeable_invoice(pay)
    merchant = one(pay, "SELECT merchant_id FROM invoices WHERE id = ?", invoice)
    old = cents(pay, "SELECT COUNT(*) FROM events")
    endpoint = call_ok(
        pay,
        "create_webhook_endpoint",
        {
            "merchant_id": merchant,
            "url": "https://hooks.example.com/payments",
            "events": ["charge.succeeded", "invoice.paid", "charge.succeeded"],
        },
    )
    assert endpoint["events"] == ["invoice.paid", "charge.succeeded"]
    assert (
        cents(
            pay,
            "SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ?",
            endpoint["endpoint_id"],
        )
        == 0
    )
    charged = call_ok(pay, "charge_invoice", {"invoice_id": invoice})
    assert len(charged["event_ids"]) == 2
    sent = rows(
        pay,
        "SELECT e.type, d.status FROM webhook_deliveries d JOIN events e ON e.id = d.event_id "
        "WHERE d.endpoint_id = ? ORDER BY e.seq",
        endpoint["endpoint_id"],
    )
    assert sent == [("charge.succeeded", "delivered"), ("invoice.paid", "delivered")]
    call_ok(pay, "create_payout", {"merchant_id": merchant, "amount": 1})
    assert (
        cents(
            pay,
            "SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ?",
            endpoint["endpoint_id"],
        )
        == 2
    )
    listed = call_ok(
        pay,
        "list_events",
        {"merchant_id": merchant, "endpoint_id": endpoint["endpoint_id"], "limit": 50},
    )
    assert listed["total"] == 2 and cents(pay, "SELECT COUNT(*) FROM events") == old + 3
    assert rule_violations(pay) == []


def test_endpoints_need_https_a_fresh_url_and_room(pay: Session) -> None:
    merchant = "mer_001"
    base = {"merchant_id": merchant, "events": ["*"]}
    refused(
        pay,
        "create_webhook_endpoint",
        {**base, "url": "http://hooks.example.com/x"},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'https_required'",
    )
    call_ok(pay, "create_webhook_endpoint", {**base, "url": "https://hooks.example.com/a"})
    refused(
        pay,
        "create_webhook_endpoint",
        {**base, "url": "https://hooks.example.com/a/"},
        ErrorKind.CONFLICT,
        "endpoint_url_taken",
    )
    enabled = cents(
        pay,
        "SELECT COUNT(*) FROM webhook_endpoints WHERE merchant_id = ? AND status = 'enabled'",
        merchant,
    )
    for i in range(5 - enabled):
        call_ok(pay, "create_webhook_endpoint", {**base, "url": f"https://hooks.example.com/n{i}"})
    refused(
        pay,
        "create_webhook_endpoint",
        {**base, "url": "https://hooks.example.com/one-more"},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'endpoint_limit'",
    )


def test_failing_endpoints_log_failed_deliveries_and_filters_find_them(pay: Session) -> None:
    merchant, endpoint, code = rows(
        pay,
        """SELECT merchant_id, id, response_code FROM webhook_endpoints
           WHERE status = 'enabled' AND response_code >= 400 AND events = '*' ORDER BY id""",
    )[0]
    payout = (
        call_ok(pay, "create_payout", {"merchant_id": merchant, "amount": 1})
        if cents(
            pay, "SELECT balance FROM merchants WHERE id = ? AND payouts = 'enabled'", merchant
        )
        >= 100
        else None
    )
    failed = call_ok(
        pay,
        "list_events",
        {"merchant_id": merchant, "endpoint_id": endpoint, "delivery_status": "failed"},
    )
    assert failed["total"] > 0
    for event in failed["events"]:
        mine = [d for d in event["deliveries"] if d["endpoint_id"] == endpoint]
        assert mine and mine[0]["status"] == "failed" and mine[0]["response_code"] == code
    if payout is not None:
        assert failed["events"][0]["event_id"] == payout["event_ids"][0]
    other_invoice = one(pay, "SELECT id FROM invoices WHERE merchant_id != ? ORDER BY id", merchant)
    refused(
        pay,
        "list_events",
        {"merchant_id": merchant, "invoice_id": other_invoice},
        ErrorKind.BAD_ARGUMENTS,
        "belongs to merchant",
    )


# ------------------------------------------------------------ stateful
pool_keys = st.sampled_from([None, None, "k-1", "k-2", "k-3"])
amounts = st.one_of(
    st.none(),
    st.decimals(min_value=Decimal("0.01"), max_value=Decimal("300"), places=2).map(str),
    st.sampled_from(["12.345", "0", "-5", 1e30, "250", 20]),
)


class PaymentsRules(RuleBasedStateMachine):
    """Plausible payments calls, retries with keys included; the rules hold after every one
    and the balance moves by exactly the money calls that did something."""

    session: Session

    @initialize(seed=st.sampled_from(SEEDS))
    def start(self, seed: int) -> None:
        self.session = PAYMENTS.session(seed=seed)
        self.hash = self.session.state_hash()
        self.merchants = [m for (m,) in rows(self.session, "SELECT id FROM merchants ORDER BY id")]

    def _call(self, name: str, args: dict[str, Any]) -> Any:
        before = self._balances()
        result = self.session.call(name, {k: v for k, v in args.items() if v is not None})
        assert result.error_kind != ErrorKind.INTERNAL, result.message
        after = self.session.state_hash()
        if not result.ok:
            assert result.message and after == self.hash, f"failed {name}({args}) changed state"
        elif result.content.get("idempotent_replay"):
            assert after == self.hash, f"replayed {name}({args}) changed state"
        elif not PAYMENTS.tools[name].writes:
            assert after == self.hash
        if result.ok:
            delta = {
                m: self._balances()[m] - before[m]
                for m in before
                if self._balances()[m] != before[m]
            }
            moved = Decimal(0)
            if not result.content.get("idempotent_replay"):
                if name == "charge_invoice" and result.content["status"] == "succeeded":
                    moved = Decimal(result.content["amount"])
                elif name in ("refund_charge", "create_payout"):
                    moved = -Decimal(result.content["amount"])
            expected = {result.content["merchant_id"]: moved} if moved else {}
            assert delta == expected, (name, args, delta, expected)
        self.hash = after
        return result

    def _balances(self) -> dict[str, Decimal]:
        return {m: money(b) for m, b in rows(self.session, "SELECT id, balance FROM merchants")}

    def _ids(self, sql: str) -> list[str]:
        return [i for (i,) in rows(self.session, sql)]

    @rule(data=st.data(), amount=amounts, key=pool_keys)
    def charge(self, data: st.DataObject, amount: Any, key: str | None) -> None:
        invoices = self._ids("SELECT id FROM invoices WHERE status = 'open' ORDER BY id")
        everything = self._ids("SELECT id FROM invoices ORDER BY id")
        invoice = data.draw(st.sampled_from(invoices) | st.sampled_from(everything))
        self._call(
            "charge_invoice", {"invoice_id": invoice, "amount": amount, "idempotency_key": key}
        )

    @rule(data=st.data(), amount=amounts, key=pool_keys)
    def refund(self, data: st.DataObject, amount: Any, key: str | None) -> None:
        charges = self._ids("SELECT id FROM charges ORDER BY id DESC LIMIT 40")
        reason = data.draw(st.sampled_from(["requested_by_customer", "duplicate", "fraudulent"]))
        self._call(
            "refund_charge",
            {
                "charge_id": data.draw(st.sampled_from(charges)),
                "amount": amount,
                "reason": reason,
                "idempotency_key": key,
            },
        )

    @rule(data=st.data(), amount=amounts, key=pool_keys)
    def payout(self, data: st.DataObject, amount: Any, key: str | None) -> None:
        merchant = data.draw(st.sampled_from(self.merchants))
        self._call(
            "create_payout", {"merchant_id": merchant, "amount": amount, "idempotency_key": key}
        )

    @rule(data=st.data())
    def void(self, data: st.DataObject) -> None:
        invoices = self._ids(
            "SELECT id FROM invoices WHERE status != 'paid' ORDER BY id DESC LIMIT 30"
        )
        self._call("void_invoice", {"invoice_id": data.draw(st.sampled_from(invoices))})

    @rule(data=st.data(), amount=amounts, key=pool_keys, new=st.booleans())
    def invoice(self, data: st.DataObject, amount: Any, key: str | None, new: bool) -> None:
        merchant = data.draw(st.sampled_from(self.merchants))
        emails = self._ids(
            f"SELECT email FROM customers WHERE merchant_id = '{merchant}' ORDER BY id"
        )
        args = {
            "merchant_id": merchant,
            "customer_email": "new.person@example.com"
            if new
            else data.draw(st.sampled_from(emails)),
            "customer_name": "New Person" if new and data.draw(st.booleans()) else None,
            "amount": amount if amount is not None else "99.00",
            "description": data.draw(st.sampled_from(["Consulting", "Cake", "  "])),
            "idempotency_key": key,
        }
        self._call("create_invoice", args)

    @rule(data=st.data())
    def endpoint(self, data: st.DataObject) -> None:
        merchant = data.draw(st.sampled_from(self.merchants))
        events = data.draw(st.lists(st.sampled_from(["*", *TYPES]), min_size=1, max_size=3))
        url = data.draw(st.sampled_from(["https://a.example.com/h", "https://b.example.com/h"]))
        self._call(
            "create_webhook_endpoint", {"merchant_id": merchant, "url": url, "events": events}
        )

    @invariant()
    def the_payment_rules_hold(self) -> None:
        if hasattr(self, "session"):
            assert rule_violations(self.session) == []

    def teardown(self) -> None:
        if hasattr(self, "session"):
            self.session.close()


TestPaymentsRules = PaymentsRules.TestCase
TestPaymentsRules.settings = settings(
    max_examples=10,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# ------------------------------------------------------------ conformance
FUZZ_SAMPLES = [
    "mer_001",
    "mer_999",
    "inv_00001",
    "inv_99999",
    "ch_00001",
    "ch_99999",
    "we_0001",
    "we_9999",
    "SMIT-0001",
    "ana.garcia@example.com",
    "https://hooks.example.com/payments",
    "http://insecure.example.com/hook",
    "*",
    "charge.succeeded",
    "refund.created",
    "requested_by_customer",
    "overdue",
    "failed",
    "order-0001",
    "12.345",
    "0.50",
    "1e30",
    "-1",
    "NaN",
    "2026-04-30",
    "9999-12-31",
]

TestConformance = conformance_suite("payments", samples=FUZZ_SAMPLES, invariants=rule_violations)


# ------------------------------------------------------------ declarations
def test_entity_sources_list_entities_that_exist(pay: Session) -> None:
    tables = {
        "merchant": ("merchants", "id"),
        "customer": ("customers", "email"),
        "invoice": ("invoices", "id"),
        "charge": ("charges", "id"),
        "refund": ("refunds", "id"),
        "payout": ("payouts", "id"),
        "webhook_endpoint": ("webhook_endpoints", "id"),
        "event": ("events", "id"),
    }
    assert set(PAYMENTS.entities) == set(tables)
    for kind, source in PAYMENTS.entities.items():
        records = pay.list_entities(kind)
        table, column = tables[kind]
        assert records, kind
        ids = {i for (i,) in rows(pay, f"SELECT {column} FROM {table}")}
        assert {r[source.key] for r in records} <= ids, kind
    urls = {u for (u,) in rows(pay, "SELECT url FROM webhook_endpoints")}
    for record in pay.list_entities("merchant"):
        assert record["url"].startswith("https://") and record["url"] not in urls
    for record in pay.list_entities("charge"):
        assert Decimal(record["refundable"]) > 0


def test_example_values_fit_their_parameters(pay: Session) -> None:
    ctx = pay.context()
    rng = random.Random(0)
    for tool in PAYMENTS.visible_tools():
        fields = tool.args_model.model_fields
        for name, source in tool.examples.items():
            drawn = [source(ctx, rng) for _ in range(5)] if callable(source) else list(source)
            annotation = fields[name].annotation
            assert annotation is not None, (tool.name, name)
            for value in drawn:
                TypeAdapter(annotation).validate_python(value)
        free = [p.name for p in tool.params if p.required and p.entity is None]
        literal = {n for n in free if "enum" in tool.input_schema()["properties"][n]}
        assert set(free) - literal - {"url"} <= set(tool.examples) | set(tool.values), tool.name


def test_the_server_offers_ten_tools_and_names_its_rules() -> None:
    assert len(PAYMENTS.visible_tools()) == 10
    writes = {t.name for t in PAYMENTS.visible_tools() if t.writes}
    assert writes == {
        "create_invoice",
        "charge_invoice",
        "refund_charge",
        "void_invoice",
        "create_payout",
        "create_webhook_endpoint",
    }
    for name in ("create_invoice", "charge_invoice", "refund_charge", "create_payout"):
        assert "idempotency_key" in PAYMENTS.tools[name].input_schema()["properties"], name


# ------------------------------------------------------------------- tasks
def test_hand_written_tasks_cover_chains_turns_clarify_and_abstain() -> None:
    tasks = [
        t
        for t in prove_gym.get_registry().tasks("payments")
        if re.fullmatch(r"payments-\d{3}", t.id)
    ]
    assert 3 <= len(tasks) <= 8
    kinds = {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "clarify", "abstain"} <= kinds
    assert any(len(t.turns) > 1 and t.steps for t in tasks)
    assert any(any(s.depends_on for s in t.steps) for t in tasks)


def test_shipped_tasks_are_sorted_unique_and_many() -> None:
    tasks = prove_gym.get_registry().tasks("payments")
    ids = [t.id for t in tasks]
    assert len(ids) == len(set(ids)) >= 200
    lines = PAYMENTS.tasks_file.read_text().splitlines() if PAYMENTS.tasks_file else []
    assert [json.loads(line)["id"] for line in lines] == sorted(ids)


# ------------------------------------------------------------ -v1: one merchant's account
def test_v1_acts_for_one_merchants_account() -> None:
    """prove/payments-v1 (issue #50: the assistant charged, refunded and paid out for any
    merchant on the platform)."""
    with PAYMENTS.session(seed=0) as v0:
        invoice = v0.list_entities("invoice")[0]
        charge = v0.list_entities("charge")[0]
        theirs = invoice["merchant_id"]
        mine = one(v0, "SELECT id FROM merchants WHERE id != ? ORDER BY id", theirs)
        assert v0.call("void_invoice", {"invoice_id": invoice["invoice_id"]}).error_kind != (
            ErrorKind.PERMISSION_DENIED
        )
    with PAYMENTS.session(seed=0, env_version=1, principal=mine) as s:
        before = s.state_hash()
        other_charge = next(c for c in s.list_entities("charge") if c["merchant_id"] != mine)
        for name, args in [
            ("void_invoice", {"invoice_id": invoice["invoice_id"]}),
            ("refund_charge", {"charge_id": other_charge["charge_id"]}),
            ("create_payout", {"merchant_id": theirs}),
            ("list_events", {"merchant_id": theirs}),
        ]:
            refused = s.call(name, args)
            assert refused.error_kind == ErrorKind.PERMISSION_DENIED, (name, refused)
            assert (refused.message or "").startswith("Rule 'not_your_merchant' failed"), refused
        assert s.state_hash() == before
    with PAYMENTS.session(seed=0, env_version=1, principal=charge["merchant_id"]) as s:
        assert s.call("refund_charge", {"charge_id": charge["charge_id"]}).ok


@pytest.mark.parametrize("seed", SEEDS)
def test_v1_find_merchant_finds_only_the_signed_in_merchant(seed: int) -> None:
    with PAYMENTS.session(seed=seed) as v0:
        everyone = v0.call("find_merchant", {"limit": 50}).content
        assert len(everyone) > 1
        me, other = everyone[0], everyone[1]
    with PAYMENTS.session(seed=seed, env_version=1, principal=me["merchant_id"]) as s:
        assert s.call("find_merchant", {"limit": 50}).content == [me]
        assert s.call("find_merchant", {"query": me["name"]}).content == [me]
        assert s.call("find_merchant", {"query": other["merchant_id"]}).content == []


@pytest.mark.parametrize("seed", SEEDS)
def test_a_drawn_webhook_url_is_on_the_merchants_own_domain(seed: int) -> None:
    """payments-2026-00010 registered https://api.leedsbreadco.com/webhooks/v1 for mer_004,
    "Hutchinson Software" <billing@hutchinsonsoftware.com>: the URL was another merchant's.
    Synthesis draws ``url`` from the merchant's own e-mail domain, a URL none of its
    endpoints has, which the call takes."""
    from prove_gym.synth.chains import PlannedStep
    from prove_gym.synth.grounding import Grounder, entity_index

    session = PAYMENTS.session(seed, PAYMENTS.default_size)
    spec = PAYMENTS.tools["create_webhook_endpoint"]
    email = dict(rows(session, "SELECT id, email FROM merchants"))
    urls = {(m, u) for m, u in rows(session, "SELECT merchant_id, url FROM webhook_endpoints")}
    drawn = set()
    for rng in range(12):
        grounder = Grounder(session, entity_index(session), random.Random(rng))
        g = grounder.ground(PlannedStep(spec), [], {})
        assert g.unresolved is None and g.sources["url"] == "value"
        merchant, url = g.args["merchant_id"], g.args["url"]
        domain = email[merchant].rpartition("@")[2]
        assert re.fullmatch(rf"https://api\.{re.escape(domain)}/webhooks/[a-z0-9-]+", url), url
        assert (merchant, url) not in urls
        drawn.add(url)
        result = session.call(spec.name, g.args)
        # the URL is never what fails (a merchant at its endpoint limit is refused)
        assert result.ok or "endpoint_limit" in (result.message or ""), result.message
        session.rollback()
    assert len(drawn) > 3
