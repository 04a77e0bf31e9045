"""The CRM server: its relational and pipeline invariants after random call sequences, one
test per domain rule, its shipped tasks, and the conformance suite."""

from __future__ import annotations

import datetime as dt
import itertools
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import count, one, rows

CRM = prove_gym.get_server("crm")

# The pipeline as the server documents it, written out here independently of the code.
OPEN = ["prospecting", "qualification", "proposal", "negotiation"]
STAGES = [*OPEN, "closed_won", "closed_lost"]
PROBABILITY = {
    "prospecting": 10,
    "qualification": 25,
    "proposal": 50,
    "negotiation": 75,
    "closed_won": 100,
    "closed_lost": 0,
}
ALLOWED = (
    {(a, b) for i, a in enumerate(OPEN) for b in OPEN[:i]}  # back to an earlier open stage
    | {(a, b) for a, b in itertools.pairwise([*OPEN, "closed_won"])}  # one step forward
    | {(a, "closed_lost") for a in OPEN}
)
NEEDS_AMOUNT = {"proposal", "negotiation", "closed_won"}
TABLE_OF = {"account": "accounts", "contact": "contacts", "lead": "leads", "deal": "deals"}


def column(session: Session, sql: str, *params: Any) -> list[Any]:
    return [r[0] for r in rows(session, sql, *params)]


def rule_violations(session: Session) -> list[str]:
    """Every broken invariant of the CRM's state, read straight from SQLite."""
    broken: list[str] = []
    accounts = set(column(session, "SELECT id FROM accounts"))
    contact_account = dict(rows(session, "SELECT id, account_id FROM contacts"))
    owners = set(column(session, "SELECT id FROM owners"))
    for cid, acc in contact_account.items():
        if acc not in accounts:
            broken.append(f"contact {cid} belongs to the missing account {acc}")
    if count(session, "SELECT count(*) - count(DISTINCT email) FROM contacts"):
        broken.append("two contacts share an email")
    deals = rows(
        session,
        "SELECT id, account_id, contact_id, stage, probability, amount, closed_at, lost_reason, "
        "owner_id FROM deals",
    )
    history: dict[str, list[tuple[Any, Any]]] = {}
    for deal_id, frm, to in rows(
        session,
        "SELECT deal_id, from_stage, to_stage FROM deal_stage_changes ORDER BY length(id), id",
    ):
        history.setdefault(deal_id, []).append((frm, to))
    for deal_id, acc, contact, stage, prob, amount, closed_at, reason, owner in deals:
        if stage not in STAGES:
            broken.append(f"{deal_id} has the unknown stage {stage!r}")
            continue
        if acc not in accounts:
            broken.append(f"{deal_id} belongs to the missing account {acc}")
        if contact_account.get(contact) != acc:
            broken.append(f"{deal_id}'s contact {contact} does not work at its account {acc}")
        if owner not in owners:
            broken.append(f"{deal_id} is owned by the missing rep {owner}")
        if prob != PROBABILITY[stage]:
            broken.append(f"{deal_id} is {stage} with probability {prob}")
        if stage in NEEDS_AMOUNT and (amount is None or amount <= 0):
            broken.append(f"{deal_id} is {stage} without a positive amount")
        if amount is not None and amount <= 0:
            broken.append(f"{deal_id} has the amount {amount}")
        closed = stage not in OPEN
        if closed != (closed_at is not None):
            broken.append(f"{deal_id} is {stage} but closed_at is {closed_at}")
        if (stage == "closed_lost") != bool(reason):
            broken.append(f"{deal_id} is {stage} with lost_reason {reason!r}")
        steps = history.get(deal_id, [])
        if not steps or steps[0] != (None, "prospecting"):
            broken.append(f"{deal_id}'s history does not start with its creation")
            continue
        for (_, before), (frm, to) in itertools.pairwise(steps):
            if frm != before or (frm, to) not in ALLOWED:
                broken.append(f"{deal_id} recorded the move {frm} -> {to} after {before}")
        if steps[-1][1] != stage:
            broken.append(f"{deal_id} is {stage} but its history ends in {steps[-1][1]}")
    if set(history) - {d[0] for d in deals}:
        broken.append("the stage history names deals that do not exist")
    deal_of = {d[0]: d for d in deals}
    for lead_id, status, acc, contact, deal, at in rows(
        session,
        "SELECT id, status, converted_account_id, converted_contact_id, converted_deal_id, "
        "converted_at FROM leads",
    ):
        if status == "converted":
            if acc not in accounts or contact_account.get(contact) != acc or at is None:
                broken.append(f"converted lead {lead_id} links {contact} at {acc} inconsistently")
            if deal is not None and (deal not in deal_of or deal_of[deal][1] != acc):
                broken.append(f"converted lead {lead_id} links the deal {deal} of another account")
        elif (acc, contact, deal, at) != (None, None, None, None):
            broken.append(f"lead {lead_id} is {status} but links a conversion")
    existing = {kind: set(column(session, f"SELECT id FROM {t}")) for kind, t in TABLE_OF.items()}
    for table in ("activities", "notes"):
        for rid, rtype, record in rows(session, f"SELECT id, record_type, record_id FROM {table}"):
            if record not in existing.get(rtype, set()):
                broken.append(f"{table} {rid} is attached to the missing {rtype} {record}")
    for aid, done, done_at in rows(session, "SELECT id, completed, completed_at FROM activities"):
        if bool(done) != (done_at is not None):
            broken.append(f"activity {aid} completed={done} but completed_at={done_at}")
    return broken


# ------------------------------------------------------------ conformance
FUZZ_SAMPLES = [
    "acc_001",
    "acc_999",
    "con_0001",
    "con_9999",
    "lead_0001",
    "lead_9999",
    "deal_0001",
    "deal_9999",
    "act_00001",
    "own_01",
    "own_10",
    "proposal",
    "closed_won",
    "closed_lost",
    "qualified",
    "12500.00",
    "2026-03-02",
    "1999-01-01",
]

TestConformance = conformance_suite("crm", samples=FUZZ_SAMPLES, invariants=rule_violations)


# ------------------------------------------------------------------- state
def test_sampled_states_obey_the_rules_and_are_rich() -> None:
    stages: set[str] = set()
    for seed in range(4):
        with CRM.session(seed=seed) as s:
            assert rule_violations(s) == [], seed
            stages.update(column(s, "SELECT DISTINCT stage FROM deals"))
            assert count(s, "SELECT count(*) FROM accounts") == 40
            assert count(s, "SELECT count(*) FROM contacts") >= 100
            assert count(s, "SELECT count(*) FROM deals") >= 50
            assert count(s, "SELECT count(*) FROM leads WHERE status = 'qualified'") >= 5
            assert count(s, "SELECT count(*) FROM leads WHERE status = 'converted'") >= 5
            assert count(s, "SELECT count(*) FROM activities WHERE NOT completed") >= 50
            for kind in CRM.entities:
                assert s.list_entities(kind), f"no {kind} to ground requests in (seed {seed})"
    assert stages == set(STAGES)


def test_size_scales_the_book() -> None:
    with CRM.session(seed=3, size=2) as s:
        assert count(s, "SELECT count(*) FROM accounts") == 80
        assert rule_violations(s) == []


# ------------------------------------------------------------ rules
@pytest.fixture
def s() -> Any:
    with CRM.session(seed=7) as session:
        yield session


def find(s: Session, sql: str, *params: Any) -> Any:
    found = column(s, sql + " ORDER BY 1 LIMIT 1", *params)
    assert found, sql
    return found[0]


def refused(s: Session, name: str, args: dict[str, Any], rule: str) -> str:
    before = s.state_hash()
    result = s.call(name, args)
    assert not result.ok, f"{name} accepted {args}"
    assert f"Rule '{rule}' failed" in (result.message or ""), result.message
    assert s.state_hash() == before, f"the refused {name} changed the state"
    return result.message or ""


def test_deals_move_forward_one_stage_at_a_time(s) -> None:
    deal = find(s, "SELECT id FROM deals WHERE stage = 'prospecting'")
    message = refused(s, "move_deal_stage", {"deal_id": deal, "stage": "proposal"}, "stage_move")
    assert "'qualification'" in message
    refused(s, "move_deal_stage", {"deal_id": deal, "stage": "closed_won"}, "stage_move")
    assert s.call("move_deal_stage", {"deal_id": deal, "stage": "qualification"}).ok


def test_a_deal_walks_to_won_and_each_step_sets_probability_and_history(s) -> None:
    deal = find(s, "SELECT id FROM deals WHERE stage = 'prospecting' AND amount IS NULL")
    assert s.call("move_deal_stage", {"deal_id": deal, "stage": "qualification"}).ok
    refused(s, "move_deal_stage", {"deal_id": deal, "stage": "proposal"}, "amount_required")
    moved = s.call("move_deal_stage", {"deal_id": deal, "stage": "proposal", "amount": "18000"})
    assert moved.ok and moved.content["deal"]["probability"] == 50
    for stage in ("negotiation", "closed_won"):
        assert s.call("move_deal_stage", {"deal_id": deal, "stage": stage}).ok
    detail = s.call("get_deal", {"deal_id": deal}).content
    assert detail["probability"] == 100 and detail["next_stages"] == []
    assert detail["close_date"] == s.now.date().isoformat()
    assert [h["to_stage"] for h in detail["history"]][-4:] == [
        "qualification",
        "proposal",
        "negotiation",
        "closed_won",
    ]
    assert one(s, "SELECT amount FROM deals WHERE id = ?", deal) == 1800000  # cents


def test_closed_deals_are_final_and_take_no_new_activities(s) -> None:
    won = find(s, "SELECT id FROM deals WHERE stage = 'closed_won'")
    for stage in ("negotiation", "closed_lost", "prospecting"):
        args = {"deal_id": won, "stage": stage, "lost_reason": "x"}
        refused(s, "move_deal_stage", args, "deal_closed")
    refused(
        s,
        "log_activity",
        {"record_id": won, "kind": "call", "subject": "Upsell", "due_date": "2099-01-01"},
        "deal_closed",
    )


def test_losing_a_deal_needs_a_reason(s) -> None:
    deal = find(s, "SELECT id FROM deals WHERE stage = 'qualification'")
    refused(s, "move_deal_stage", {"deal_id": deal, "stage": "closed_lost"}, "lost_reason_required")
    lost = s.call(
        "move_deal_stage",
        {"deal_id": deal, "stage": "closed_lost", "lost_reason": "No budget this year"},
    )
    assert lost.ok and lost.content["deal"]["probability"] == 0
    assert one(s, "SELECT lost_reason FROM deals WHERE id = ?", deal) == "No budget this year"


def test_a_deals_contact_must_work_at_its_account(s) -> None:
    acc = find(s, "SELECT id FROM accounts")
    outsider = find(s, "SELECT id FROM contacts WHERE account_id != ?", acc)
    insider = find(s, "SELECT id FROM contacts WHERE account_id = ?", acc)
    close = (s.now.date() + dt.timedelta(days=30)).isoformat()
    args = {"account_id": acc, "contact_id": outsider, "name": "Renewal", "close_date": close}
    refused(s, "create_deal", args, "contact_account")
    made = s.call("create_deal", {**args, "contact_id": insider})
    assert made.ok and made.content["stage"] == "prospecting"
    assert made.content["probability"] == 10


def test_close_dates_and_due_dates_are_not_in_the_past(s) -> None:
    acc = find(s, "SELECT id FROM accounts")
    contact = find(s, "SELECT id FROM contacts WHERE account_id = ?", acc)
    yesterday = (s.now.date() - dt.timedelta(days=1)).isoformat()
    args = {"account_id": acc, "contact_id": contact, "name": "X", "close_date": yesterday}
    refused(s, "create_deal", args, "date_in_past")
    act = {"record_id": acc, "kind": "task", "subject": "Call back", "due_date": yesterday}
    refused(s, "log_activity", act, "date_in_past")


def test_only_qualified_leads_convert_and_converted_leads_are_frozen(s) -> None:
    new = find(s, "SELECT id FROM leads WHERE status = 'new'")
    refused(s, "convert_lead", {"lead_id": new}, "lead_not_qualified")
    assert s.call("update_lead", {"lead_id": new, "status": "qualified"}).ok
    done = s.call("convert_lead", {"lead_id": new, "deal_name": "Pilot", "deal_amount": "9000"})
    assert done.ok, done.message
    out = done.content
    lead = rows(
        s,
        "SELECT status, converted_account_id, converted_contact_id, converted_deal_id "
        "FROM leads WHERE id = ?",
        new,
    )[0]
    assert lead == ("converted", out["account_id"], out["contact_id"], out["deal"]["deal_id"])
    assert (
        one(s, "SELECT account_id FROM contacts WHERE id = ?", out["contact_id"])
        == (out["account_id"])
    )
    refused(s, "convert_lead", {"lead_id": new}, "lead_converted")
    refused(s, "update_lead", {"lead_id": new, "status": "working"}, "lead_converted")
    refused(s, "add_note", {"record_id": new, "body": "Hi"}, "lead_converted")


def test_converting_links_the_account_of_the_same_name_instead_of_a_duplicate(s) -> None:
    lead, company = rows(
        s,
        "SELECT l.id, l.company FROM leads l JOIN accounts a ON lower(a.name) = lower(l.company) "
        "WHERE l.status != 'converted' AND l.email NOT IN (SELECT email FROM contacts) "
        "ORDER BY l.id LIMIT 1",
    )[0]
    accounts = count(s, "SELECT count(*) FROM accounts")
    if one(s, "SELECT status FROM leads WHERE id = ?", lead) != "qualified":
        assert s.call("update_lead", {"lead_id": lead, "status": "qualified"}).ok
    out = s.call("convert_lead", {"lead_id": lead}).content
    assert out["account_created"] is False and out["contact_created"] is True
    assert one(s, "SELECT name FROM accounts WHERE id = ?", out["account_id"]) == company
    assert count(s, "SELECT count(*) FROM accounts") == accounts


def test_converting_a_lead_who_is_a_contact_elsewhere_is_refused(s) -> None:
    lead, contact_acc = rows(
        s,
        "SELECT l.id, c.account_id FROM leads l JOIN contacts c ON c.email = l.email "
        "WHERE l.status != 'converted' ORDER BY l.id LIMIT 1",
    )[0]
    other = find(s, "SELECT id FROM accounts WHERE id != ?", contact_acc)
    if one(s, "SELECT status FROM leads WHERE id = ?", lead) != "qualified":
        assert s.call("update_lead", {"lead_id": lead, "status": "qualified"}).ok
    refused(s, "convert_lead", {"lead_id": lead, "account_id": other}, "contact_account")
    out = s.call("convert_lead", {"lead_id": lead}).content
    assert out["contact_created"] is False and out["account_id"] == contact_acc


def test_contacts_and_leads_do_not_duplicate_emails(s) -> None:
    email, acc = rows(s, "SELECT email, account_id FROM contacts ORDER BY id LIMIT 1")[0]
    person = {"first_name": "A", "last_name": "B", "email": email.upper()}
    refused(s, "create_contact", {"account_id": acc, **person}, "duplicate_email")
    refused(s, "create_lead", {**person, "company": "X", "source": "web"}, "duplicate_email")


def test_inactive_reps_cannot_own_records(s) -> None:
    gone = find(s, "SELECT id FROM owners WHERE NOT active")
    args = {"name": "Brand New Co", "industry": "retail", "owner_id": gone}
    refused(s, "create_account", args, "owner_inactive")
    assert s.call("create_account", {"name": "Brand New Co", "industry": "retail"}).ok
    refused(
        s, "create_account", {"name": "brand new co", "industry": "retail"}, "duplicate_account"
    )


def test_an_activity_is_completed_once(s) -> None:
    act = find(s, "SELECT id FROM activities WHERE NOT completed")
    assert s.call("complete_activity", {"activity_id": act, "outcome": "Done."}).ok
    refused(s, "complete_activity", {"activity_id": act, "outcome": "Again"}, "activity_completed")


def test_pipeline_totals_equal_the_sum_of_the_deals(s) -> None:
    out = s.call("search_deals", {"open_only": True, "limit": 5}).content
    cents = one(s, "SELECT coalesce(sum(amount), 0) FROM deals WHERE stage IN (?, ?, ?, ?)", *OPEN)
    assert Decimal(out["total_amount"]) == Decimal(cents) / 100
    assert out["total"] == count(s, "SELECT count(*) FROM deals WHERE stage IN (?, ?, ?, ?)", *OPEN)
    weighted = sum(
        (Decimal(a) / 100 * p / 100).quantize(Decimal("0.01"))
        for a, p in rows(
            s, "SELECT amount, probability FROM deals WHERE stage IN (?, ?, ?, ?)", *OPEN
        )
        if a is not None
    )
    assert Decimal(out["weighted_amount"]) == weighted


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    moves=st.lists(
        st.tuples(
            st.integers(0, 30),
            st.sampled_from(STAGES),
            st.sampled_from([None, "5000", "120000.50"]),
            st.sampled_from([None, "Price too high", " "]),
        ),
        max_size=12,
    )
)
def test_random_stage_moves_keep_the_pipeline_consistent(moves: list[Any]) -> None:
    with CRM.session(seed=2) as s:
        deals = column(s, "SELECT id FROM deals ORDER BY id")
        for k, stage, amount, reason in moves:
            deal = deals[k % len(deals)]
            before = one(s, "SELECT stage FROM deals WHERE id = ?", deal)
            args = {"deal_id": deal, "stage": stage, "amount": amount, "lost_reason": reason}
            result = s.call("move_deal_stage", {k: v for k, v in args.items() if v is not None})
            assert result.error_kind != ErrorKind.INTERNAL, result.message
            expected = (before, stage) in ALLOWED
            if result.ok:
                assert expected, f"{before} -> {stage} was accepted"
            assert rule_violations(s) == []


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=12))
def test_searches_match_literally_and_are_deterministic(text: str) -> None:
    with CRM.session(seed=1) as s:
        for tool in ("search_accounts", "search_contacts", "search_leads", "search_deals"):
            first = s.call(tool, {"query": text, "limit": 100})
            assert first.ok, first.message
            assert s.call(tool, {"query": text, "limit": 100}).content == first.content


# ------------------------------------------------------------------- tasks
TASKS = prove_gym.get_registry().tasks("crm")


def test_shipped_tasks_include_hand_written_rule_tasks_and_synthesized_ones() -> None:
    assert len(TASKS) >= 200
    hand = [t for t in TASKS if t.id.startswith("crm-0")]
    assert len(hand) >= 3
    kinds = {turn.kind for t in hand for turn in t.turns}
    assert {"normal", "clarify"} <= kinds
    assert any(step.depends_on for t in hand for step in t.steps)
