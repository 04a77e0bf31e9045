"""The banking server: money rules under random call sequences, its tasks, and the conformance
suite."""

from __future__ import annotations

import datetime as dt
import itertools
import random
from collections import defaultdict
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from prove_plugins.banking.tools import SIGNED_IN
from pydantic import TypeAdapter

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.synth.ship import is_hand_written
from prove_gym.testing import junk_arguments
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import rows

BANKING = prove_gym.get_server("banking")
TOOLS = sorted(BANKING.tools)
SEEDS = [0, 7, 11]
SENSITIVE = {
    "transfer_funds",
    "add_beneficiary",
    "pay_beneficiary",
    "schedule_payment",
    "cancel_scheduled_payment",
    "block_card",
    "set_card_limit",
}


def balances(session: Session) -> dict[str, int]:
    """Account id -> balance in cents, read straight from SQLite."""
    return dict(rows(session, "SELECT id, balance FROM accounts"))


def money(cents: int) -> Decimal:
    return Decimal(cents).scaleb(-2)


def login(session: Session, customer: str) -> str:
    """The customer's auth token, the way a model gets it: authenticate with the passcode."""
    passcode = rows(session, "SELECT passcode FROM customers WHERE id = ?", customer)[0][0]
    result = session.call("authenticate", {"customer_id": customer, "passcode": passcode})
    assert result.ok, result.message
    return result.content["auth_token"]


def expected_rate(fx: dict[str, Decimal], source: str, target: str) -> Decimal:
    """The documented rule: the ratio of the stored USD rates, half-even to 6 places."""
    return (fx[source] / fx[target]).quantize(Decimal("0.000001"), ROUND_HALF_EVEN)


def rates(session: Session) -> dict[str, Decimal]:
    return {c: Decimal(r).scaleb(-6) for c, r in rows(session, "SELECT * FROM exchange_rates")}


def rule_violations(session: Session, initial: dict[str, int], old_txns: int) -> list[str]:
    """Every broken money rule, read straight from SQLite (see plugins/banking/models.py)."""
    broken = []
    below = rows(session, "SELECT id FROM accounts WHERE balance < -overdraft_limit")
    if below:
        broken.append(f"balance below minus the overdraft limit: {below}")
    dangling = rows(
        session,
        """SELECT t.id FROM transactions t
           LEFT JOIN accounts a ON a.id = t.account_id
           LEFT JOIN transfers f ON f.id = t.transfer_id
           LEFT JOIN cards c ON c.id = t.card_id
           WHERE a.id IS NULL OR (t.transfer_id IS NOT NULL AND f.id IS NULL)
              OR (t.card_id IS NOT NULL AND c.id IS NULL)""",
    )
    dangling += rows(
        session,
        """SELECT f.id FROM transfers f
           LEFT JOIN accounts a ON a.id = f.from_account_id
           LEFT JOIN accounts b ON b.id = f.to_account_id
           LEFT JOIN beneficiaries n ON n.id = f.beneficiary_id
           WHERE a.id IS NULL OR (f.to_account_id IS NOT NULL AND b.id IS NULL)
              OR (f.beneficiary_id IS NOT NULL AND n.id IS NULL)
              OR (f.to_account_id IS NULL) = (f.beneficiary_id IS NULL)""",
    )
    dangling += rows(
        session,
        """SELECT s.id FROM scheduled_payments s
           LEFT JOIN accounts a ON a.id = s.from_account_id
           LEFT JOIN accounts b ON b.id = s.to_account_id
           LEFT JOIN beneficiaries n ON n.id = s.beneficiary_id
           WHERE a.id IS NULL OR (s.to_account_id IS NOT NULL AND b.id IS NULL)
              OR (s.beneficiary_id IS NOT NULL AND n.id IS NULL)
              OR (s.to_account_id IS NULL) = (s.beneficiary_id IS NULL)""",
    )
    dangling += rows(
        session,
        "SELECT c.id FROM cards c LEFT JOIN accounts a ON a.id = c.account_id WHERE a.id IS NULL",
    )
    if dangling:
        broken.append(f"rows referencing missing entities: {dangling}")
    ledger = rows(
        session,
        """SELECT a.id, a.balance, a.opening_balance + COALESCE(SUM(t.amount), 0),
                  COALESCE(SUM(CASE WHEN t.id > ? THEN t.amount END), 0)
           FROM accounts a LEFT JOIN transactions t ON t.account_id = a.id GROUP BY a.id""",
        f"txn_{old_txns:05d}",
    )
    for acc, balance, from_ledger, new_entries in ledger:
        if balance != from_ledger:
            broken.append(f"{acc}: balance {balance} != opening + ledger {from_ledger}")
        if balance - initial[acc] != new_entries:
            broken.append(
                f"{acc}: changed by {balance - initial[acc]}, new entries sum {new_entries}"
            )
    last = rows(  # SQLite fills bare columns from the row that has the MAX
        session,
        """SELECT a.id FROM accounts a JOIN (
               SELECT account_id, balance_after, MAX(posted_at || ' ' || id)
               FROM transactions GROUP BY account_id) t ON t.account_id = a.id
           WHERE t.balance_after != a.balance""",
    )
    if last:
        broken.append(f"latest entry's balance_after differs from the balance: {last}")
    return broken


def conservation_problems(
    session: Session, initial: dict[str, int], old_transfers: int
) -> list[str]:
    """Own-account transfers conserve money (exactly per currency, within rounding in USD);
    money only leaves through payments to beneficiaries."""
    fx = rates(session)
    currency = dict(rows(session, "SELECT id, currency FROM accounts"))
    expected: dict[str, int] = defaultdict(int)
    drift, tolerance = Decimal(0), Decimal(0)
    problems = []
    for kind, amount, cur, credited, cur_to, rate in rows(
        session,
        """SELECT kind, amount, currency, credited_amount, credited_currency, rate
           FROM transfers WHERE id > ?""",
        f"trf_{old_transfers:05d}",
    ):
        rule = expected_rate(fx, cur, cur_to)
        if Decimal(rate).scaleb(-6) != rule:
            problems.append(f"transfer at rate {rate} instead of the stored rate")
        if money(credited) != (money(amount) * rule).quantize(Decimal("0.01"), ROUND_HALF_EVEN):
            problems.append(f"credited {credited} is not {amount} converted")
        expected[cur] -= amount
        if kind == "internal":
            expected[cur_to] += credited
            drift += money(credited) * fx[cur_to] - money(amount) * fx[cur]
            tolerance += (Decimal("0.005") + money(amount) * Decimal("0.0000005")) * fx[cur_to]
    totals: dict[str, int] = defaultdict(int)
    for acc, balance in balances(session).items():
        totals[currency[acc]] += balance - initial[acc]
    for cur in set(totals) | set(expected):
        if totals[cur] != expected[cur]:
            problems.append(
                f"{cur} total changed by {totals[cur]}, transfers explain {expected[cur]}"
            )
    if abs(drift) > tolerance:
        problems.append(f"own-account transfers changed the USD value by {drift}")
    return problems


# ------------------------------------------------------------ stateful
small = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("900"), places=2)
amounts = st.one_of(
    small,
    small,
    st.decimals(min_value=Decimal("0.01"), max_value=Decimal("90000"), places=2),
    st.sampled_from(["12.345", "0", "-5", "1e30", "0.001", "NaN"]),
)


def as_json(value: Decimal | str, style: int) -> Any:
    """The same amount as a model might send it: a string, a float or an int."""
    if isinstance(value, str):
        return value
    if style == 0:
        return str(value)
    if style == 1 or value != value.to_integral_value():
        return float(value)
    return int(value)


class BankingRules(RuleBasedStateMachine):
    """Random sequences of valid and invalid calls; the money rules must hold after every one."""

    session: Session

    @initialize(seed=st.sampled_from(SEEDS))
    def start(self, seed: int) -> None:
        self.session = BANKING.session(seed=seed)
        self.initial = balances(self.session)
        self.old_txns = rows(self.session, "SELECT COUNT(*) FROM transactions")[0][0]
        self.old_transfers = rows(self.session, "SELECT COUNT(*) FROM transfers")[0][0]
        self.owner = dict(rows(self.session, "SELECT id, customer_id FROM accounts"))
        self.customers = [c for (c,) in rows(self.session, "SELECT id FROM customers ORDER BY id")]
        self.tokens = {c: login(self.session, c) for c in self.customers}
        self.several = sorted({c for c in self.owner.values() if len(self._accounts_of(c)) > 1})
        self.hash = self.session.state_hash()

    def _call(self, name: str, args: dict[str, Any]) -> Any:
        result = self.session.call(name, args)
        assert result.error_kind != ErrorKind.INTERNAL, result.message
        after = self.session.state_hash()
        if not result.ok:
            assert result.message, f"{name} failed without a message"
            assert after == self.hash, f"failed {name}({args}) changed state"
        elif not BANKING.tools[name].writes:
            assert after == self.hash, f"read {name} changed state"
        self.hash = after
        return result

    def _token(self, data: st.DataObject, customer: str) -> dict[str, str]:
        which = data.draw(st.sampled_from(["right", "right", "right", "other", "missing"]))
        if which == "missing":
            return {}
        other = data.draw(st.sampled_from(self.customers))
        return {"auth_token": self.tokens[customer if which == "right" else other]}

    def _accounts_of(self, customer: str) -> list[str]:
        return sorted(a for a, c in self.owner.items() if c == customer)

    @rule(data=st.data(), amount=amounts, style=st.integers(0, 2))
    def transfer_between_own_accounts(
        self, data: st.DataObject, amount: Decimal | str, style: int
    ) -> None:
        customer = data.draw(
            st.sampled_from(self.several if data.draw(st.booleans()) else self.customers)
        )
        mine = self._accounts_of(customer)
        src = data.draw(st.sampled_from(mine))
        others = [a for a in mine if a != src] or mine
        strangers = [a for a in self.owner if a not in mine][:3]
        dst = data.draw(st.sampled_from(others) | st.sampled_from(mine + strangers))
        auth = self._token(data, customer)
        before = balances(self.session)
        result = self._call(
            "transfer_funds",
            {
                "from_account_id": src,
                "to_account_id": dst,
                "amount": as_json(amount, style),
                **auth,
            },
        )
        if auth.get("auth_token") != self.tokens[customer]:
            assert not result.ok
            if amount != "NaN":  # NaN never reaches the tool: the schema refuses it
                assert result.error_kind == ErrorKind.PERMISSION_DENIED
                assert "authenticate" in result.message
        if result.ok:
            sent = Decimal(str(amount))
            assert money(before[src] - balances(self.session)[src]) == sent
            assert result.content["amount"] == f"{sent:.2f}"

    @rule(data=st.data(), amount=amounts, style=st.integers(0, 2))
    def pay_a_beneficiary(self, data: st.DataObject, amount: Decimal | str, style: int) -> None:
        customer = data.draw(st.sampled_from(self.customers))
        src = data.draw(st.sampled_from(self._accounts_of(customer)))
        payees = [b for (b,) in rows(self.session, "SELECT id FROM beneficiaries ORDER BY id")]
        mine = [
            b
            for (b,) in rows(
                self.session, "SELECT id FROM beneficiaries WHERE customer_id = ?", customer
            )
        ]
        ben = data.draw(
            st.sampled_from(mine or payees) if data.draw(st.booleans()) else st.sampled_from(payees)
        )
        args = {"from_account_id": src, "beneficiary_id": ben, "amount": as_json(amount, style)}
        result = self._call("pay_beneficiary", {**args, **self._token(data, customer)})
        if result.ok:
            assert ben in mine

    @rule(data=st.data())
    def add_a_beneficiary(self, data: st.DataObject) -> None:
        customer = data.draw(st.sampled_from(self.customers))
        number = data.draw(
            st.integers(10**9, 10**14).map(str)
            | st.sampled_from(["004512345678", "DE44 5001 0517 5407 3249 31", "12", "x" * 40])
        )
        args = {
            "customer_id": customer,
            "name": data.draw(st.sampled_from(["Ana Silva", "", "Bo"])),
            "account_number": number,
            "currency": data.draw(st.sampled_from(["USD", "EUR", "XYZ"])),
        }
        self._call("add_beneficiary", {**args, **self._token(data, customer)})

    @rule(data=st.data(), amount=amounts, days=st.integers(-3, 400))
    def schedule_or_cancel(self, data: st.DataObject, amount: Decimal | str, days: int) -> None:
        customer = data.draw(st.sampled_from(self.customers))
        mine = self._accounts_of(customer)
        if data.draw(st.booleans()):
            schedules = [s for (s,) in rows(self.session, "SELECT id FROM scheduled_payments")]
            sched = data.draw(st.sampled_from(schedules))
            owner = rows(
                self.session,
                "SELECT a.customer_id FROM scheduled_payments s JOIN accounts a "
                "ON a.id = s.from_account_id WHERE s.id = ?",
                sched,
            )[0][0]
            self._call(
                "cancel_scheduled_payment",
                {"scheduled_payment_id": sched, **self._token(data, owner)},
            )
            return
        start = self.session.now.date().toordinal() + days
        args: dict[str, Any] = {
            "from_account_id": data.draw(st.sampled_from(mine)),
            "amount": as_json(amount, 0),
            "start_date": dt.date.fromordinal(start).isoformat(),
            "frequency": data.draw(st.sampled_from(["once", "weekly", "monthly"])),
        }
        if len(mine) > 1 and data.draw(st.booleans()):
            args["to_account_id"] = data.draw(st.sampled_from(mine))
        else:
            bens = [
                b
                for (b,) in rows(
                    self.session, "SELECT id FROM beneficiaries WHERE customer_id = ?", customer
                )
            ]
            if bens:
                args["beneficiary_id"] = data.draw(st.sampled_from(bens))
        self._call("schedule_payment", {**args, **self._token(data, customer)})

    @rule(data=st.data())
    def change_a_card(self, data: st.DataObject) -> None:
        card, customer = data.draw(
            st.sampled_from(
                rows(
                    self.session,
                    "SELECT c.id, a.customer_id FROM cards c JOIN accounts a ON a.id = c.account_id",
                )
            )
        )
        if data.draw(st.booleans()):
            self._call("block_card", {"card_id": card, **self._token(data, customer)})
        else:
            limit = data.draw(st.sampled_from([250, "750.50", 0, 20000, "1e3"]))
            self._call(
                "set_card_limit",
                {"card_id": card, "daily_limit": limit, **self._token(data, customer)},
            )

    @rule(data=st.data(), name=st.sampled_from(TOOLS))
    def call_any_tool_with_junk(self, data: st.DataObject, name: str) -> None:
        self._call(name, data.draw(arguments_for(name)))

    @invariant()
    def the_money_rules_hold(self) -> None:
        if hasattr(self, "session"):
            assert rule_violations(self.session, self.initial, self.old_txns) == []
            assert conservation_problems(self.session, self.initial, self.old_transfers) == []

    def teardown(self) -> None:
        if hasattr(self, "session"):
            self.session.close()


# ---------------------------------------------------------------- fuzzing
FUZZ = BANKING.session(seed=0)
FUZZ_TOKENS = [login(FUZZ, c) for c in ["cus_001", "cus_002", "cus_003"]]
FUZZ.close()

FUZZ_SAMPLES = [
    "cus_001",
    "cus_999",
    "acc_0001",
    "acc_0002",
    "acc_9999",
    "ben_0001",
    "ben_9999",
    "sch_0001",
    "sch_9999",
    "crd_0001",
    "crd_9999",
    "txn_00001",
    "tok_0000000000000000",
    *FUZZ_TOKENS,
    "2026-03-03",
    "2026-13-45",
    "9999-12-31",
    "0001-01-01",
    "9999-12",
    "2025-12",
    "USD",
    "EUR",
    "12.345",
    "1e30",
    "-0.00",
    "NaN",
    "lost",
    "monthly",
]


def arguments_for(tool: str) -> st.SearchStrategy[dict]:
    """Random dicts mixing the tool's real parameter names with junk keys and values."""
    return junk_arguments(BANKING.tools[tool], FUZZ_SAMPLES, text_size=20)


TestBankingRules = BankingRules.TestCase
TestBankingRules.settings = settings(
    max_examples=15,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# ------------------------------------------------------------ conformance
def money_rule_violations(session: Session) -> list[str]:
    """The money rules, measured from the session's own initial state."""
    with BANKING.session(seed=session.seed, size=session.size) as fresh:
        initial = balances(fresh)
        old_txns = rows(fresh, "SELECT COUNT(*) FROM transactions")[0][0]
        old_transfers = rows(fresh, "SELECT COUNT(*) FROM transfers")[0][0]
    return rule_violations(session, initial, old_txns) + conservation_problems(
        session, initial, old_transfers
    )


TestConformance = conformance_suite(
    "banking", samples=FUZZ_SAMPLES, invariants=money_rule_violations
)


# ----------------------------------------------------------- sampled states
def test_a_sampled_bank_is_big_enough_to_search_and_consistent() -> None:
    with BANKING.session(seed=7) as session:
        counts = {
            t: rows(session, f"SELECT COUNT(*) FROM {t}")[0][0]
            for t in ["customers", "accounts", "transactions", "beneficiaries", "cards"]
        }
        assert counts["customers"] == 40 and counts["accounts"] >= 60
        assert counts["transactions"] > 1500 and counts["beneficiaries"] > 50
        initial = balances(session)
        assert rule_violations(session, initial, counts["transactions"]) == []


# ------------------------------------------------------------ the rules
@pytest.fixture
def bank() -> Session:
    session = BANKING.session(seed=7)
    yield session
    session.close()


def test_amounts_are_exact_whether_sent_as_number_or_string() -> None:
    hashes = []
    for amount in [125.4, "125.40", "125.4"]:
        with BANKING.session(seed=7) as session:
            token = login(session, "cus_004")
            result = session.call(
                "transfer_funds",
                {
                    "from_account_id": "acc_0005",
                    "to_account_id": "acc_0006",
                    "amount": amount,
                    "auth_token": token,
                },
            )
            assert result.ok and result.content["amount"] == "125.40"
            hashes.append(session.state_hash())
    assert len(set(hashes)) == 1


@pytest.mark.parametrize("amount", ["12.345", 0.001, 0, -5, "1e30", "NaN", True, "1,000"])
def test_unusable_amounts_are_refused_and_change_nothing(bank: Session, amount: Any) -> None:
    token, before = login(bank, "cus_004"), bank.state_hash()
    result = bank.call(
        "transfer_funds",
        {
            "from_account_id": "acc_0005",
            "to_account_id": "acc_0006",
            "amount": amount,
            "auth_token": token,
        },
    )
    assert result.error_kind == ErrorKind.BAD_ARGUMENTS and bank.state_hash() == before


def test_sensitive_tools_need_the_owners_token_and_say_how_to_get_one(bank: Session) -> None:
    other = login(bank, "cus_001")
    assert bank.call(
        "authenticate", {"customer_id": "cus_004", "passcode": "000000"}
    ).error_kind == (ErrorKind.PERMISSION_DENIED)
    before = bank.state_hash()
    calls = [
        (
            "transfer_funds",
            {"from_account_id": "acc_0005", "to_account_id": "acc_0006", "amount": 5},
        ),
        (
            "pay_beneficiary",
            {"from_account_id": "acc_0005", "beneficiary_id": "ben_0014", "amount": 5},
        ),
        (
            "add_beneficiary",
            {"customer_id": "cus_004", "name": "Ana", "account_number": "004512345678"},
        ),
        (
            "schedule_payment",
            {
                "from_account_id": "acc_0005",
                "amount": 5,
                "start_date": "2026-03-10",
                "to_account_id": "acc_0006",
            },
        ),
        ("cancel_scheduled_payment", {"scheduled_payment_id": "sch_0003"}),
        ("set_card_limit", {"card_id": "crd_0006", "daily_limit": 100}),
        ("block_card", {"card_id": "crd_0006"}),
    ]
    assert {name for name, _ in calls} == SENSITIVE
    for name, args in calls:
        for auth in ({}, {"auth_token": other}, {"auth_token": "tok_guess"}):
            result = bank.call(name, {**args, **auth})
            assert result.error_kind == ErrorKind.PERMISSION_DENIED, (name, auth)
            assert "authenticate" in result.message and "cus_004" in result.message
    assert bank.state_hash() == before
    token = login(bank, "cus_004")
    assert all(bank.call(name, {**args, "auth_token": token}).ok for name, args in calls)


SENSITIVE_CALLS = [  # each of cus_004's (seed 7, the bank fixture's): its accounts, payee, schedule and card
    ("transfer_funds", {"from_account_id": "acc_0005", "to_account_id": "acc_0006", "amount": 5}),
    ("pay_beneficiary", {"from_account_id": "acc_0005", "beneficiary_id": "ben_0014", "amount": 5}),
    (
        "add_beneficiary",
        {"customer_id": "cus_004", "name": "Ana", "account_number": "004512345678"},
    ),
    (
        "schedule_payment",
        {
            "from_account_id": "acc_0005",
            "amount": 5,
            "start_date": "2026-03-10",
            "to_account_id": "acc_0006",
        },
    ),
    ("cancel_scheduled_payment", {"scheduled_payment_id": "sch_0003"}),
    ("set_card_limit", {"card_id": "crd_0006", "daily_limit": 100}),
    ("block_card", {"card_id": "crd_0006"}),
]


def test_v1_acts_for_the_signed_in_customer_and_the_token_only_confirms_them() -> None:
    """-v1: the core refuses another customer's rows (cards and schedules through their
    account) before the tool runs, whatever token is given; the signed-in customer's own
    calls still need their token."""
    assert {name for name, _ in SENSITIVE_CALLS} == SENSITIVE
    with BANKING.session(seed=7, env_version=SIGNED_IN, principal="cus_001") as me:
        passcode = rows(me, "SELECT passcode FROM customers WHERE id = 'cus_004'")[0][0]
        theirs = me.call("authenticate", {"customer_id": "cus_004", "passcode": passcode})
        assert theirs.error_kind == ErrorKind.PERMISSION_DENIED  # their passcode is no use
        mine = login(me, "cus_001")
        before = me.state_hash()
        for name, args in SENSITIVE_CALLS:
            for auth in ({}, {"auth_token": mine}):
                result = me.call(name, {**args, **auth})
                assert result.error_kind == ErrorKind.PERMISSION_DENIED, (name, result.message)
                assert (result.message or "").startswith("Rule 'not_your_customer' failed:")
        for reads in (
            ("list_accounts", {"customer_id": "cus_004"}),
            ("get_account", {"account_id": "acc_0005"}),
            ("list_cards", {"customer_id": "cus_004"}),
        ):
            assert me.call(*reads).error_kind == ErrorKind.PERMISSION_DENIED, reads
        assert me.state_hash() == before
        # find_customer finds the signed-in customer only, however wide the query
        name = rows(me, "SELECT name FROM customers WHERE id = 'cus_004'")[0][0]
        assert me.call("find_customer", {"query": name}).content == []
        found = me.call("find_customer", {"query": "cus_"}).content
        assert [c["customer_id"] for c in found] == ["cus_001"]
    with BANKING.session(seed=7, env_version=SIGNED_IN, principal="cus_004") as owner:
        for name, args in SENSITIVE_CALLS:
            result = owner.call(name, args)  # signed in, yet no passcode confirmed
            assert result.error_kind == ErrorKind.PERMISSION_DENIED, name
            assert "authenticate" in (result.message or ""), name
        token = login(owner, "cus_004")
        for name, args in SENSITIVE_CALLS:
            assert owner.call(name, {**args, "auth_token": token}).ok, name


def test_v1_schedules_only_to_the_signed_in_customers_payees_and_accounts() -> None:
    """schedule_payment's destinations are rows from -v1 on, so the core checks whose they
    are; -v0 keeps its ids, looked up after the token, and its own rule."""
    args = {"from_account_id": "acc_0005", "amount": 5, "start_date": "2026-03-10"}
    theirs = one_row("SELECT id FROM beneficiaries WHERE customer_id != 'cus_004' ORDER BY id")
    with BANKING.session(seed=7, env_version=SIGNED_IN, principal="cus_004") as v1:
        token = login(v1, "cus_004")
        before = v1.state_hash()
        result = v1.call(
            "schedule_payment", {**args, "beneficiary_id": theirs, "auth_token": token}
        )
        assert result.error_kind == ErrorKind.PERMISSION_DENIED, result.message
        assert (result.message or "").startswith("Rule 'not_your_customer' failed: beneficiary")
        assert v1.state_hash() == before
    with BANKING.session(seed=7) as v0:
        token = login(v0, "cus_004")
        result = v0.call(
            "schedule_payment", {**args, "beneficiary_id": theirs, "auth_token": token}
        )
        assert result.error_kind == ErrorKind.PRECONDITION_FAILED, result.message
        assert "not saved for cus_004" in (result.message or "")
        found = v0.call("find_customer", {"query": "cus_"}).content
        assert len(found) == 10  # -v0 finds any customer (the default limit)

    rowed = {
        v: [p.name for p in BANKING.tools_for(v)["schedule_payment"].row_params] for v in (0, 1)
    }
    assert rowed == {
        0: ["from_account_id"],
        1: ["from_account_id", "beneficiary_id", "to_account_id"],
    }


def one_row(sql: str) -> str:
    with BANKING.session(seed=7) as session:
        return str(rows(session, sql)[0][0])


def test_secret_parameters_are_declared_for_later_tooling() -> None:
    assert BANKING.tools["authenticate"].returns == ("auth_token",)
    assert "passcode" in BANKING.tools["authenticate"].required
    for name in SENSITIVE:
        entity = BANKING.tools[name].entity_params.get("auth_token")
        assert entity is not None and entity.name == "auth_token", name
    assert {t.name for t in BANKING.visible_tools() if t.writes} == SENSITIVE


def test_the_overdraft_limit_is_the_floor(bank: Session) -> None:
    token = login(bank, "cus_004")
    acc = bank.call("get_account", {"account_id": "acc_0005"}).content
    assert Decimal(acc["overdraft_limit"]) > 0
    too_much = str(Decimal(acc["available"]) + Decimal("0.01"))
    args = {"from_account_id": "acc_0005", "to_account_id": "acc_0006", "auth_token": token}
    refused = bank.call("transfer_funds", {**args, "amount": too_much})
    assert (
        refused.error_kind == ErrorKind.PRECONDITION_FAILED and acc["available"] in refused.message
    )
    assert bank.call("transfer_funds", {**args, "amount": acc["available"]}).ok
    after = bank.call("get_account", {"account_id": "acc_0005"}).content
    assert after["balance"] == f"-{acc['overdraft_limit']}" and after["available"] == "0.00"


def test_cross_currency_transfers_convert_at_the_stored_rate(bank: Session) -> None:
    token = login(bank, "cus_003")  # acc_0003 is USD, acc_0004 CHF
    quote = bank.call(
        "get_exchange_rate", {"from_currency": "USD", "to_currency": "CHF", "amount": "1000"}
    ).content
    done = bank.call(
        "transfer_funds",
        {
            "from_account_id": "acc_0003",
            "to_account_id": "acc_0004",
            "amount": 1000,
            "auth_token": token,
        },
    ).content
    assert (done["credited_currency"], done["rate"]) == ("CHF", quote["rate"])
    assert done["credited_amount"] == quote["converted_amount"]
    assert Decimal(done["credited_amount"]) == (Decimal(1000) * Decimal(quote["rate"])).quantize(
        Decimal("0.01")
    )


def test_transfers_go_only_between_own_active_accounts(bank: Session) -> None:
    token = login(bank, "cus_004")
    stranger = bank.call(
        "transfer_funds",
        {
            "from_account_id": "acc_0005",
            "to_account_id": "acc_0001",
            "amount": 5,
            "auth_token": token,
        },
    )
    assert stranger.error_kind == ErrorKind.PRECONDITION_FAILED
    assert "pay_beneficiary" in stranger.message
    frozen_token = login(bank, "cus_018")  # acc_0036 is frozen
    frozen = bank.call(
        "transfer_funds",
        {
            "from_account_id": "acc_0037",
            "to_account_id": "acc_0036",
            "amount": 5,
            "auth_token": frozen_token,
        },
    )
    assert frozen.error_kind == ErrorKind.PRECONDITION_FAILED and "frozen" in frozen.message


def test_statements_chain_month_to_month_and_end_at_the_balance(bank: Session) -> None:
    months = ["2025-11", "2025-12", "2026-01", "2026-02"]
    statements = [
        bank.call("get_statement", {"account_id": "acc_0001", "month": m}).content for m in months
    ]
    for earlier, later in itertools.pairwise(statements):
        assert earlier["closing_balance"] == later["opening_balance"]
    for s in statements:
        net = Decimal(s["money_in"]) - Decimal(s["money_out"])
        assert Decimal(s["opening_balance"]) + net == Decimal(s["closing_balance"])
        assert s["transaction_count"] == len(s["transactions"])
    balance = bank.call("get_account", {"account_id": "acc_0001"}).content["balance"]
    assert statements[-1]["closing_balance"] == balance
    assert bank.call(
        "get_statement", {"account_id": "acc_0001", "month": "2026-03"}
    ).error_kind == (ErrorKind.PRECONDITION_FAILED)


def test_blocked_cards_stay_blocked_and_keep_their_limit(bank: Session) -> None:
    token = login(bank, "cus_016")
    blocked = bank.call(
        "block_card", {"card_id": "crd_0029", "reason": "stolen", "auth_token": token}
    )
    assert blocked.content["status"] == "blocked" and blocked.content["block_reason"] == "stolen"
    for name, args in [("block_card", {}), ("set_card_limit", {"daily_limit": 500})]:
        again = bank.call(name, {"card_id": "crd_0029", "auth_token": token, **args})
        assert again.error_kind == ErrorKind.PRECONDITION_FAILED
    assert (
        bank.call(
            "set_card_limit", {"card_id": "crd_0030", "daily_limit": 10001, "auth_token": token}
        ).error_kind
        == ErrorKind.BAD_ARGUMENTS
    )


def test_scheduled_payments_are_created_listed_and_cancelled_once(bank: Session) -> None:
    token = login(bank, "cus_010")
    args = {
        "from_account_id": "acc_0018",
        "amount": "75.50",
        "frequency": "monthly",
        "beneficiary_id": "ben_0037",
        "auth_token": token,
    }
    past = bank.call("schedule_payment", {**args, "start_date": "2026-02-28"})
    assert past.error_kind == ErrorKind.BAD_ARGUMENTS and "2026-02-28" in past.message
    both = bank.call(
        "schedule_payment", {**args, "start_date": "2026-03-10", "to_account_id": "acc_0019"}
    )
    assert both.error_kind == ErrorKind.BAD_ARGUMENTS
    made = bank.call("schedule_payment", {**args, "start_date": "2026-03-10"}).content
    assert (made["scheduled_payment_id"], made["amount"]) == ("sch_0045", "75.50")
    dup = bank.call("schedule_payment", {**args, "start_date": "2026-03-10"})
    assert dup.error_kind == ErrorKind.CONFLICT and "sch_0045" in dup.message
    listed = bank.call("list_scheduled_payments", {"customer_id": "cus_010"}).content
    assert "sch_0045" in [s["scheduled_payment_id"] for s in listed["scheduled_payments"]]
    cancel = {"scheduled_payment_id": "sch_0045", "auth_token": token}
    assert bank.call("cancel_scheduled_payment", cancel).content["status"] == "cancelled"
    assert bank.call("cancel_scheduled_payment", cancel).error_kind == ErrorKind.PRECONDITION_FAILED
    listed = bank.call("list_scheduled_payments", {"customer_id": "cus_010"}).content
    assert "sch_0045" not in [s["scheduled_payment_id"] for s in listed["scheduled_payments"]]


def test_saving_the_same_payee_twice_conflicts(bank: Session) -> None:
    token = login(bank, "cus_004")
    args = {"customer_id": "cus_004", "name": "Ana Silva", "currency": "EUR", "auth_token": token}
    made = bank.call("add_beneficiary", {**args, "account_number": "DE44 5001 0517 5407 3249 31"})
    assert made.content["account_number"] == "DE44500105175407324931"
    again = bank.call("add_beneficiary", {**args, "account_number": "de44500105175407324931"})
    assert (
        again.error_kind == ErrorKind.CONFLICT and made.content["beneficiary_id"] in again.message
    )


def test_entity_sources_list_entities_that_exist(bank: Session) -> None:
    for kind, source in BANKING.entities.items():
        records = bank.list_entities(kind)
        assert records, kind
        if kind == "auth_token":
            continue
        table = {
            "customer": "customers",
            "account": "accounts",
            "beneficiary": "beneficiaries",
            "scheduled_payment": "scheduled_payments",
            "card": "cards",
            "transfer": "transfers",
            "transaction": "transactions",
        }[kind]
        ids = {i for (i,) in rows(bank, f"SELECT id FROM {table}")}
        assert {r[source.key] for r in records} <= ids, kind
    for record in bank.list_entities("auth_token"):
        got = bank.call(
            "authenticate", {"customer_id": record["customer_id"], "passcode": record["passcode"]}
        )
        assert got.content["auth_token"] == record["auth_token"]


def test_example_values_fit_their_parameters(bank: Session) -> None:
    ctx = bank.context()
    rng = random.Random(0)
    for tool in BANKING.visible_tools():
        fields = tool.args_model.model_fields
        for name, source in tool.examples.items():
            drawn = [source(ctx, rng) for _ in range(5)] if callable(source) else list(source)
            for value in drawn:
                TypeAdapter(fields[name].annotation).validate_python(value)
        free = [p.name for p in tool.params if p.required and p.entity is None]
        literal = {n for n in free if "enum" in tool.input_schema()["properties"][n]}
        assert set(free) - literal <= set(tool.examples) | set(tool.values), tool.name
    passcodes = {c for (c,) in rows(bank, "SELECT passcode FROM customers")}
    assert BANKING.tools["authenticate"].examples["passcode"](ctx, rng) in passcodes


# ------------------------------------------------------------------- tasks
def test_hand_written_tasks_cover_chains_turns_clarify_and_abstain() -> None:
    tasks = [t for t in prove_gym.get_registry().tasks("banking") if is_hand_written(t)]
    assert 3 <= len(tasks) <= 5
    kinds = {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "clarify", "abstain"} <= kinds
    assert any(len(t.turns) > 1 and t.steps for t in tasks)
    assert any(any(s.depends_on for s in t.steps) for t in tasks)


def test_gold_secrets_come_from_the_user_or_an_earlier_tool_output() -> None:
    for task in prove_gym.get_registry().tasks("banking"):
        records, _ = prove_gym.gold_replay(task)
        said = ""
        seen = ""
        step_turn = [i for i, turn in enumerate(task.turns) for _ in turn.steps]
        for record, step, turn in zip(records, task.steps, step_turn, strict=True):
            said = " ".join(t.user for t in task.turns[: turn + 1])
            for key in ("passcode", "auth_token"):
                if key in step.arguments:
                    assert str(step.arguments[key]) in said + seen, (task.id, step.id, key)
            seen += record.result.to_text()
