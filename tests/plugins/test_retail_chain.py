"""The retail_chain server: stock ledger rules under random call sequences, location scoping,
one test per domain rule, its tasks, and the conformance suite."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import one, rows

RETAIL = prove_gym.get_server("retail_chain")
SEEDS = [0, 5, 13]


# ------------------------------------------------------------ the invariants
def rule_violations(session: Session) -> list[str]:
    """Every broken retail_chain rule, read straight from SQLite (see models.py)."""
    broken: list[str] = []

    def check(what: str, sql: str, *params: Any) -> None:
        found = rows(session, sql, *params)
        if found:
            broken.append(f"{what}: {found[:5]}")

    check(
        "negative on-hand stock",
        "SELECT store_id, product_id, on_hand FROM inventory WHERE on_hand < 0",
    )
    check(
        "on_hand is not received + transferred in - transferred out - sold",
        """SELECT i.store_id, i.product_id, i.on_hand,
                  COALESCE(r.q, 0) + COALESCE(ti.q, 0) - COALESCE(tout.q, 0) - COALESCE(s.q, 0)
           FROM inventory i
           LEFT JOIN (SELECT store_id, product_id, SUM(quantity) q FROM restock_orders
                      WHERE status = 'received' GROUP BY store_id, product_id) r
             ON r.store_id = i.store_id AND r.product_id = i.product_id
           LEFT JOIN (SELECT to_store_id, product_id, SUM(quantity) q FROM transfers
                      WHERE status = 'received' GROUP BY to_store_id, product_id) ti
             ON ti.to_store_id = i.store_id AND ti.product_id = i.product_id
           LEFT JOIN (SELECT from_store_id, product_id, SUM(quantity) q FROM transfers
                      GROUP BY from_store_id, product_id) tout
             ON tout.from_store_id = i.store_id AND tout.product_id = i.product_id
           LEFT JOIN (SELECT s.store_id, l.product_id, SUM(l.quantity) q FROM sale_lines l
                      JOIN sales s ON s.id = l.sale_id GROUP BY s.store_id, l.product_id) s
             ON s.store_id = i.store_id AND s.product_id = i.product_id
           WHERE i.on_hand != COALESCE(r.q, 0) + COALESCE(ti.q, 0) - COALESCE(tout.q, 0)
                             - COALESCE(s.q, 0)""",
    )
    check(
        "every store carries every product exactly once",
        """SELECT (SELECT COUNT(*) FROM inventory),
                  (SELECT COUNT(*) FROM stores) * (SELECT COUNT(*) FROM products)
           WHERE (SELECT COUNT(*) FROM inventory)
                 != (SELECT COUNT(*) FROM stores) * (SELECT COUNT(*) FROM products)""",
    )
    check(
        "a transfer is not between two stores, not positive, or not received exactly once",
        """SELECT id, status, received_at FROM transfers
           WHERE from_store_id = to_store_id OR quantity <= 0
              OR status NOT IN ('in_transit', 'received')
              OR ((status = 'received') != (received_at IS NOT NULL))
              OR ((status = 'received') != (received_by IS NOT NULL))""",
    )
    check(
        "a restock order is not whole cases, costs the wrong amount, or is received twice",
        """SELECT o.id FROM restock_orders o JOIN products p ON p.id = o.product_id
           WHERE o.quantity <= 0 OR o.quantity % p.case_size != 0
              OR o.total_cost != o.unit_cost * o.quantity
              OR o.status NOT IN ('ordered', 'received')
              OR ((o.status = 'received') != (o.received_at IS NOT NULL))""",
    )
    check(
        "more than one open restock order for a store and product",
        """SELECT store_id, product_id FROM restock_orders WHERE status = 'ordered'
           GROUP BY store_id, product_id HAVING COUNT(*) > 1""",
    )
    check(
        "a sale's total or item count is not the sum of its lines, or a line is mispriced",
        """SELECT s.id, s.total, SUM(l.line_total) FROM sales s
           LEFT JOIN sale_lines l ON l.sale_id = s.id GROUP BY s.id
           HAVING COUNT(l.id) = 0 OR s.total != SUM(l.line_total) OR s.items != SUM(l.quantity)
           UNION ALL
           SELECT id, line_total, quantity * unit_price FROM sale_lines
           WHERE quantity <= 0 OR line_total != quantity * unit_price""",
    )
    check(
        "a sale names a product on two lines",
        "SELECT sale_id, product_id FROM sale_lines GROUP BY sale_id, product_id HAVING COUNT(*) > 1",
    )
    check(
        "exactly one acting employee",
        "SELECT COUNT(*) FROM acting_employee HAVING COUNT(*) != 1",
    )
    return broken


# ------------------------------------------------------------ fixtures
@pytest.fixture
def shop() -> Iterator[Session]:
    session = RETAIL.session(seed=0)
    yield session
    session.close()


def me(session: Session) -> tuple[str, str, str]:
    """(employee id, role, home store) of the acting employee."""
    found = rows(
        session,
        "SELECT e.id, e.role, e.store_id FROM acting_employee a JOIN employees e "
        "ON e.id = a.employee_id",
    )
    return found[0]


def my_stores(session: Session) -> list[str]:
    return [
        s
        for (s,) in rows(
            session,
            """SELECT s.id FROM stores s WHERE s.region_id = (SELECT st.region_id FROM stores st
           JOIN employees e ON e.store_id = st.id JOIN acting_employee a ON a.employee_id = e.id)
           ORDER BY s.id""",
        )
    ]


def other_store(session: Session) -> str:
    mine = my_stores(session)
    return next(s for (s,) in rows(session, "SELECT id FROM stores ORDER BY id") if s not in mine)


def act_as(session: Session, employee_id: str) -> None:
    """Switch the acting employee (state the tools never change)."""
    session.raw_connection.execute("UPDATE acting_employee SET employee_id = ?", (employee_id,))
    session.raw_connection.commit()
    session.db.expire_all()


def on_hand(session: Session, store: str, product: str) -> int:
    return int(
        one(
            session,
            "SELECT on_hand FROM inventory WHERE store_id = ? AND product_id = ?",
            store,
            product,
        )
    )


def stocked(session: Session, store: str, at_least: int = 10, *, live: bool = True) -> str:
    return one(
        session,
        """SELECT i.product_id FROM inventory i JOIN products p ON p.id = i.product_id
           WHERE i.store_id = ? AND i.on_hand >= ? AND p.discontinued = ? ORDER BY i.product_id""",
        store,
        at_least,
        0 if live else 1,
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
    assert f"Rule '{rule}' failed" in (result.message or ""), result.message
    assert session.state_hash() == before, f"refused {name} changed the state"
    return result.message or ""


# ------------------------------------------------------------ sampled states
@pytest.mark.parametrize("seed", SEEDS)
def test_a_sampled_chain_is_big_enough_and_keeps_every_rule(seed: int) -> None:
    with RETAIL.session(seed=seed) as session:
        assert one(session, "SELECT COUNT(*) FROM stores") == 12
        assert one(session, "SELECT COUNT(*) FROM products") == 40
        assert one(session, "SELECT COUNT(*) FROM sales") >= 250
        assert one(session, "SELECT COUNT(*) FROM transfers WHERE status = 'in_transit'") >= 5
        assert one(session, "SELECT COUNT(*) FROM restock_orders WHERE status = 'ordered'") >= 3
        assert me(session)[1] == "regional_manager"
        assert rule_violations(session) == []
        for kind in ("store", "product", "transfer", "restock_order"):
            assert session.list_entities(kind), kind


def test_larger_sizes_scale_and_stay_consistent() -> None:
    with RETAIL.session(seed=3, size=2) as session:
        assert one(session, "SELECT COUNT(*) FROM stores") == 24
        assert rule_violations(session) == []


# ------------------------------------------------------------ store_scope
def test_a_regional_manager_acts_in_their_region_only_and_hears_who_they_are(shop: Session) -> None:
    emp, _, _ = me(shop)
    mine, outside = my_stores(shop), other_store(shop)
    assert len(mine) == 4
    listed = call_ok(shop, "list_stores", {})
    assert listed["you"]["acts_in"] == mine
    assert {s["store_id"] for s in listed["stores"] if s["can_act"]} == set(mine)
    product = stocked(shop, outside)
    for name, args in [
        ("get_store_inventory", {"store_id": outside}),
        ("list_sales", {"store_id": outside}),
        ("list_shipments", {"store_id": outside}),
        ("record_sale", {"store_id": outside, "product_ids": [product]}),
        ("create_restock_order", {"store_id": outside, "product_id": product, "quantity": 24}),
        (
            "create_transfer",
            {
                "from_store_id": outside,
                "to_store_id": mine[0],
                "product_id": product,
                "quantity": 1,
            },
        ),
    ]:
        message = refused(shop, name, args, ErrorKind.PERMISSION_DENIED, "store_scope")
        assert emp in message and "regional manager" in message and mine[0] in message
        assert outside in message
    # sending from a store of the region to a store outside it is allowed
    done = call_ok(
        shop,
        "create_transfer",
        {
            "from_store_id": mine[0],
            "to_store_id": outside,
            "product_id": stocked(shop, mine[0]),
            "quantity": 1,
        },
    )
    # ... but the receiving store's manager receives it, not us
    refused(
        shop,
        "receive_transfer",
        {"transfer_id": done["transfer_id"]},
        ErrorKind.PERMISSION_DENIED,
        "store_scope",
    )


def test_a_store_manager_acts_in_their_own_store_only(shop: Session) -> None:
    mine = my_stores(shop)
    manager, home = rows(
        shop,
        "SELECT id, store_id FROM employees WHERE role = 'store_manager' AND store_id = ?",
        mine[1],
    )[0]
    act_as(shop, manager)
    listed = call_ok(shop, "list_stores", {})
    assert listed["you"]["role"] == "store_manager" and listed["you"]["acts_in"] == [home]
    assert [s["store_id"] for s in shop.list_entities("store")] == [home]
    call_ok(shop, "get_store_inventory", {"store_id": home})
    message = refused(
        shop,
        "get_store_inventory",
        {"store_id": mine[0]},
        ErrorKind.PERMISSION_DENIED,
        "store_scope",
    )
    assert "store manager" in message and manager in message and home in message
    stock = call_ok(shop, "find_stock", {"product_id": stocked(shop, home)})
    assert [s["store_id"] for s in stock["stores"] if s["can_act"]] == [home]
    assert {s["store_id"] for s in stock["stores"]} == set(mine)
    sale = call_ok(shop, "record_sale", {"store_id": home, "product_ids": [stocked(shop, home)]})
    assert sale["employee_id"] == manager
    assert rule_violations(shop) == []


# ------------------------------------------------------------ transfers
def test_a_transfer_leaves_once_and_arrives_once(shop: Session) -> None:
    src, dst = my_stores(shop)[:2]
    product = stocked(shop, src)
    a, b = on_hand(shop, src, product), on_hand(shop, dst, product)
    done = call_ok(
        shop,
        "create_transfer",
        {
            "from_store_id": src,
            "to_store_id": dst,
            "product_id": product,
            "quantity": 4,
            "note": "  Weekend   event ",
        },
    )
    assert done["status"] == "in_transit" and done["note"] == "Weekend event"
    assert (on_hand(shop, src, product), on_hand(shop, dst, product)) == (a - 4, b)
    assert done["from_store_on_hand"] == a - 4 and done["to_store_on_hand"] == b
    incoming = call_ok(shop, "list_shipments", {"store_id": dst, "direction": "incoming"})
    assert done["transfer_id"] in [t["transfer_id"] for t in incoming["transfers"]]
    got = call_ok(shop, "receive_transfer", {"transfer_id": done["transfer_id"]})
    assert got["status"] == "received" and got["to_store_on_hand"] == b + 4
    refused(
        shop,
        "receive_transfer",
        {"transfer_id": done["transfer_id"]},
        ErrorKind.PRECONDITION_FAILED,
        "already_received",
    )
    assert (on_hand(shop, src, product), on_hand(shop, dst, product)) == (a - 4, b + 4)
    assert rule_violations(shop) == []


def test_a_transfer_needs_two_stores(shop: Session) -> None:
    src = my_stores(shop)[0]
    refused(
        shop,
        "create_transfer",
        {"from_store_id": src, "to_store_id": src, "product_id": stocked(shop, src), "quantity": 1},
        ErrorKind.PRECONDITION_FAILED,
        "same_store",
    )


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(extra=st.integers(min_value=0, max_value=30))
def test_stock_never_goes_negative(extra: int) -> None:
    with RETAIL.session(seed=0) as session:
        src, dst = my_stores(session)[:2]
        product = stocked(session, src, 1)
        have = on_hand(session, src, product)
        want = have + extra
        args = {
            "from_store_id": src,
            "to_store_id": dst,
            "product_id": product,
            "quantity": max(want, 1),
        }
        if want <= have and want >= 1:
            call_ok(session, "create_transfer", args)
            assert on_hand(session, src, product) == have - want
        else:
            message = refused(
                session,
                "create_transfer",
                args,
                ErrorKind.PRECONDITION_FAILED,
                "insufficient_stock",
            )
            assert f"Send at most {have}" in message
        sale = {
            "store_id": src,
            "product_ids": [product],
            "quantities": [on_hand(session, src, product) + 1],
        }
        refused(session, "record_sale", sale, ErrorKind.PRECONDITION_FAILED, "insufficient_stock")
        assert rule_violations(session) == []


# ------------------------------------------------------------ restock orders
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(quantity=st.integers(min_value=1, max_value=200))
def test_restock_orders_come_in_whole_cases(quantity: int) -> None:
    with RETAIL.session(seed=0) as session:
        store = my_stores(session)[0]
        product, case = rows(
            session,
            """SELECT p.id, p.case_size FROM products p WHERE p.discontinued = 0 AND NOT EXISTS
               (SELECT 1 FROM restock_orders o WHERE o.product_id = p.id AND o.store_id = ?
                AND o.status = 'ordered') ORDER BY p.case_size DESC, p.id""",
            store,
        )[0]
        args = {"store_id": store, "product_id": product, "quantity": quantity}
        if quantity % case == 0:
            done = call_ok(session, "create_restock_order", args)
            assert done["cases"] == quantity // case and done["status"] == "ordered"
            assert Decimal(done["total_cost"]) == Decimal(done["unit_cost"]) * quantity
        else:
            message = refused(
                session, "create_restock_order", args, ErrorKind.PRECONDITION_FAILED, "case_pack"
            )
            assert str(quantity // case * case + case) in message
        assert rule_violations(session) == []


def test_discontinued_products_are_never_reordered(shop: Session) -> None:
    store = my_stores(shop)[0]
    product = one(shop, "SELECT id FROM products WHERE discontinued = 1 ORDER BY id")
    refused(
        shop,
        "create_restock_order",
        {"store_id": store, "product_id": product, "quantity": 48},
        ErrorKind.PRECONDITION_FAILED,
        "product_discontinued",
    )


def test_one_open_order_per_product_and_it_arrives_once(shop: Session) -> None:
    store = my_stores(shop)[0]
    product, case = rows(
        shop,
        """SELECT p.id, p.case_size FROM products p WHERE p.discontinued = 0 AND NOT EXISTS
           (SELECT 1 FROM restock_orders o WHERE o.product_id = p.id AND o.store_id = ?
            AND o.status = 'ordered') ORDER BY p.id""",
        store,
    )[0]
    before = on_hand(shop, store, product)
    order = call_ok(
        shop,
        "create_restock_order",
        {"store_id": store, "product_id": product, "quantity": case * 2},
    )
    assert on_hand(shop, store, product) == before
    refused(
        shop,
        "create_restock_order",
        {"store_id": store, "product_id": product, "quantity": case},
        ErrorKind.PRECONDITION_FAILED,
        "open_order_exists",
    )
    got = call_ok(shop, "receive_restock_order", {"order_id": order["order_id"]})
    assert got["on_hand"] == before + case * 2 == on_hand(shop, store, product)
    refused(
        shop,
        "receive_restock_order",
        {"order_id": order["order_id"]},
        ErrorKind.PRECONDITION_FAILED,
        "already_received",
    )
    call_ok(
        shop, "create_restock_order", {"store_id": store, "product_id": product, "quantity": case}
    )
    assert rule_violations(shop) == []


# ------------------------------------------------------------ sales
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(qty=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=4))
def test_a_sale_totals_its_lines_at_catalog_prices(qty: list[int]) -> None:
    with RETAIL.session(seed=0) as session:
        store = my_stores(session)[0]
        products = [
            p
            for (p,) in rows(
                session,
                "SELECT product_id FROM inventory WHERE store_id = ? AND on_hand >= 4 ORDER BY product_id",
                store,
            )
        ][: len(qty)]
        prices = {
            p: Decimal(one(session, "SELECT price FROM products WHERE id = ?", p)) / 100
            for p in products
        }
        before = {p: on_hand(session, store, p) for p in products}
        sale = call_ok(
            session, "record_sale", {"store_id": store, "product_ids": products, "quantities": qty}
        )
        assert Decimal(sale["total"]) == sum(
            (prices[p] * n for p, n in zip(products, qty, strict=True)), Decimal(0)
        )
        assert sale["items"] == sum(qty)
        assert [ln["quantity"] for ln in sale["lines"]] == qty
        for p, n in zip(products, qty, strict=True):
            assert on_hand(session, store, p) == before[p] - n == sale["on_hand_after"][p]
        listed = call_ok(session, "list_sales", {"store_id": store, "days": 1})
        assert listed["sales"][0]["sale_id"] == sale["sale_id"]
        assert rule_violations(session) == []


def test_sale_lines_name_each_product_once_with_one_quantity(shop: Session) -> None:
    store = my_stores(shop)[0]
    p = stocked(shop, store)
    refused(
        shop,
        "record_sale",
        {"store_id": store, "product_ids": [p, p]},
        ErrorKind.BAD_ARGUMENTS,
        "sale_lines",
    )
    refused(
        shop,
        "record_sale",
        {"store_id": store, "product_ids": [p], "quantities": [1, 2]},
        ErrorKind.BAD_ARGUMENTS,
        "sale_lines",
    )


def test_a_short_line_refuses_the_whole_sale(shop: Session) -> None:
    store = my_stores(shop)[0]
    plenty = stocked(shop, store, 5)
    empty = one(
        shop,
        "SELECT product_id FROM inventory WHERE store_id = ? ORDER BY on_hand, product_id",
        store,
    )
    message = refused(
        shop,
        "record_sale",
        {
            "store_id": store,
            "product_ids": [plenty, empty],
            "quantities": [1, on_hand(shop, store, empty) + 1],
        },
        ErrorKind.PRECONDITION_FAILED,
        "insufficient_stock",
    )
    assert empty in message and plenty not in message


def test_list_sales_totals_every_match_and_orders_newest_first(shop: Session) -> None:
    store = my_stores(shop)[0]
    listed = call_ok(shop, "list_sales", {"store_id": store, "days": 90, "limit": 5})
    assert len(listed["sales"]) == 5 and listed["count"] > 5
    stamps = [(s["created_at"], s["sale_id"]) for s in listed["sales"]]
    assert stamps == sorted(stamps, reverse=True)
    total = one(shop, "SELECT SUM(total) FROM sales WHERE store_id = ?", store)
    assert Decimal(listed["revenue"]) == Decimal(total) / 100


# ------------------------------------------------------------ random sequences
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**16), steps=st.integers(10, 30))
def test_random_plausible_calls_keep_every_rule(seed: int, steps: int) -> None:
    rng = random.Random(seed)
    with RETAIL.session(seed=seed % 4) as session:
        mine = my_stores(session)
        products = [p for (p,) in rows(session, "SELECT id FROM products ORDER BY id")]
        stores = [s for (s,) in rows(session, "SELECT id FROM stores ORDER BY id")]
        for _ in range(steps):
            kind = rng.randrange(5)
            if kind == 0:
                args: dict[str, Any] = {
                    "from_store_id": rng.choice(mine),
                    "to_store_id": rng.choice(stores),
                    "product_id": rng.choice(products),
                    "quantity": rng.randint(1, 20),
                }
                session.call("create_transfer", args)
            elif kind == 1:
                ents = session.list_entities("transfer")
                if ents:
                    session.call(
                        "receive_transfer", {"transfer_id": rng.choice(ents)["transfer_id"]}
                    )
            elif kind == 2:
                session.call(
                    "create_restock_order",
                    {
                        "store_id": rng.choice(mine),
                        "product_id": rng.choice(products),
                        "quantity": rng.choice([2, 4, 6, 8, 12, 24, 48]),
                    },
                )
            elif kind == 3:
                ents = session.list_entities("restock_order")
                if ents:
                    session.call(
                        "receive_restock_order", {"order_id": rng.choice(ents)["order_id"]}
                    )
            else:
                picks = rng.sample(products, rng.randint(1, 3))
                session.call(
                    "record_sale",
                    {
                        "store_id": rng.choice(stores),
                        "product_ids": picks,
                        "quantities": [rng.randint(1, 5) for _ in picks],
                    },
                )
            assert rule_violations(session) == []


# ------------------------------------------------------------ declarations
def test_entity_sources_list_entities_the_employee_can_act_on(shop: Session) -> None:
    mine = set(my_stores(shop))
    assert {r["store_id"] for r in shop.list_entities("store")} == mine
    for record in shop.list_entities("transfer"):
        assert record["store_id"] in mine
    for record in shop.list_entities("restock_order"):
        assert record["store_id"] in mine
    for record in shop.list_entities("product"):
        case = one(shop, "SELECT case_size FROM products WHERE id = ?", record["product_id"])
        assert record["quantity"] == case


def test_example_values_fit_their_parameters(shop: Session) -> None:
    ctx = shop.context()
    rng = random.Random(0)
    for tool in RETAIL.visible_tools():
        fields = tool.args_model.model_fields
        for name, source in tool.examples.items():
            drawn = [source(ctx, rng) for _ in range(5)] if callable(source) else list(source)
            annotation = fields[name].annotation
            assert annotation is not None, (tool.name, name)
            for value in drawn:
                TypeAdapter(annotation).validate_python(value)


def test_the_server_offers_eleven_tools_and_names_its_rules() -> None:
    assert len(RETAIL.visible_tools()) == 11
    writes = {t.name for t in RETAIL.visible_tools() if t.writes}
    assert writes == {
        "create_transfer",
        "receive_transfer",
        "create_restock_order",
        "receive_restock_order",
        "record_sale",
    }
    from prove_plugins.retail_chain.tools import RULES

    for rule in RULES:
        assert rule in (RETAIL.instructions or ""), rule


# ------------------------------------------------------------------- tasks
def test_hand_written_tasks_cover_chains_turns_clarify_and_abstain() -> None:
    tasks = [
        t
        for t in prove_gym.get_registry().tasks("retail_chain")
        if re.fullmatch(r"retail_chain-\d{3}", t.id)
    ]
    assert 3 <= len(tasks) <= 8
    kinds = {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "abstain"} <= kinds
    assert any(any(s.depends_on for s in t.steps) for t in tasks)


def test_shipped_tasks_are_sorted_unique_and_many() -> None:
    tasks = prove_gym.get_registry().tasks("retail_chain")
    ids = [t.id for t in tasks]
    assert len(ids) == len(set(ids)) >= 200
    lines = RETAIL.tasks_file.read_text().splitlines() if RETAIL.tasks_file else []
    assert [json.loads(line)["id"] for line in lines] == sorted(ids)


TestConformance = conformance_suite(
    "retail_chain",
    samples=[
        "str_001",
        "str_999",
        "prd_0027",
        "prd_9999",
        "trf_00001",
        "ro_00001",
        "TH-10999",
        0,
        -1,
        1001,
    ],
    invariants=rule_violations,
)


# ------------------------------------------------------------------- v1
def test_v1_acts_for_the_tasks_employee_and_leaves_supplier_orders_to_the_head_office() -> None:
    """prove/retail_chain-v1 (issue #50 item 1): the employee is the task's principal, not the
    state's acting_employee row; placing supplier orders is admin_only."""
    with RETAIL.session(seed=0) as v0:
        signed_in, _, _ = me(v0)
        manager, home = rows(
            v0,
            "SELECT id, store_id FROM employees WHERE role = 'store_manager' AND id != ? "
            "ORDER BY id",
            signed_in,
        )[0]
        product, elsewhere = stocked(v0, home), other_store(v0)
        order = {"store_id": home, "product_id": product, "quantity": 0}
        order["quantity"] = one(v0, "SELECT case_size FROM products WHERE id = ?", product)
        act_as(v0, manager)
        assert call_ok(v0, "create_restock_order", order)["status"] == "ordered"
    with RETAIL.session(seed=0, env_version=1, principal=manager) as v1:
        assert me(v1)[0] == signed_in  # the row is still there; v1 does not read it
        listed = call_ok(v1, "list_stores", {})
        assert listed["you"]["employee_id"] == manager and listed["you"]["acts_in"] == [home]
        assert [s["store_id"] for s in v1.list_entities("store")] == [home]
        call_ok(v1, "get_store_inventory", {"store_id": home})
        outside = next(s for s in (elsewhere, *my_stores(v1)) if s != home)
        message = refused(
            v1, "list_sales", {"store_id": outside}, ErrorKind.PERMISSION_DENIED, "store_scope"
        )
        assert manager in message and "store manager" in message and home in message
        sale = call_ok(v1, "record_sale", {"store_id": home, "product_ids": [product]})
        assert sale["employee_id"] == manager
        message = refused(
            v1, "create_restock_order", order, ErrorKind.PERMISSION_DENIED, "admin_only"
        )
        assert f"acting for employee '{manager}'" in message
        assert rule_violations(v1) == []
    with RETAIL.session(seed=0, env_version=1, principal=signed_in) as v1:
        assert call_ok(v1, "list_stores", {})["you"]["role"] == "regional_manager"
    with pytest.raises(ValueError, match="acts for one employee"):
        RETAIL.session(seed=0, env_version=1)
