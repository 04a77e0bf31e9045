"""The food delivery server: cart, order-lifecycle, courier and rating rules under random call
sequences, one test per domain rule, its tasks, and the conformance suite."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import count as sql_count
from prove_gym.testing.sql import one, rows

FOOD = prove_gym.get_server("food_delivery")
FLOW = ["placed", "accepted", "preparing", "picked_up", "delivered"]
SEEDS = [0, 5, 13]


def count(session: Session, table: str, where: str = "1", *params: Any) -> int:
    return sql_count(session, f"SELECT COUNT(*) FROM {table} WHERE {where}", *params)


def money(cents: Any) -> Decimal:
    return Decimal(int(cents or 0)).scaleb(-2)


# ------------------------------------------------------------ the invariants
def rule_violations(session: Session) -> list[str]:
    """Every broken food delivery rule, read straight from SQLite (see models.py)."""
    broken: list[str] = []

    def check(what: str, sql: str, *params: Any) -> None:
        found = rows(session, sql, *params)
        if found:
            broken.append(f"{what}: {found[:5]}")

    check(
        "an order's subtotal is not the sum of its lines, or a line's total is wrong",
        """SELECT o.id, o.subtotal, COALESCE(l.s, 0) FROM orders o
           LEFT JOIN (SELECT order_id, SUM(line_total) s, COUNT(*) n FROM order_lines
                      GROUP BY order_id) l ON l.order_id = o.id
           WHERE o.subtotal != COALESCE(l.s, 0) OR COALESCE(l.n, 0) = 0
           UNION ALL
           SELECT id, line_total, unit_price * quantity FROM order_lines
           WHERE line_total != unit_price * quantity OR quantity < 1 OR unit_price < 0""",
    )
    check(
        "an order's total is not subtotal + delivery fee + tip",
        """SELECT id, total FROM orders
           WHERE total != subtotal + delivery_fee + tip OR tip < 0 OR delivery_fee < 0""",
    )
    check(
        "an order is below its restaurant's minimum, or its zone/fee disagrees with the "
        "restaurant's delivery zones",
        """SELECT o.id FROM orders o JOIN restaurants r ON r.id = o.restaurant_id
           LEFT JOIN delivery_zones z ON z.restaurant_id = o.restaurant_id AND z.zone = o.zone
           WHERE o.subtotal < r.minimum_order OR z.zone IS NULL OR z.fee != o.delivery_fee""",
    )
    check(
        "a refund outside a cancellation, or more than the total",
        """SELECT id, status, refunded, total FROM orders
           WHERE refunded < 0 OR refunded > total
              OR (status != 'cancelled' AND (refunded != 0 OR cancel_reason IS NOT NULL))
              OR (status = 'cancelled' AND cancel_reason IS NULL)""",
    )
    check(
        "a picked up or delivered order without a courier",
        "SELECT id FROM orders WHERE status IN ('picked_up', 'delivered') AND courier_id IS NULL",
    )
    check(
        "a courier's status disagrees with their active orders, or they serve another zone",
        """SELECT c.id, c.status, COUNT(o.id) FROM couriers c
           LEFT JOIN orders o ON o.courier_id = c.id
                AND o.status IN ('accepted', 'preparing', 'picked_up')
           GROUP BY c.id
           HAVING COUNT(o.id) > 1 OR ((c.status = 'on_delivery') != (COUNT(o.id) = 1))
              OR c.status NOT IN ('available', 'on_delivery', 'off_shift')
           UNION ALL
           SELECT o.id, c.zone, r.zone FROM orders o JOIN couriers c ON c.id = o.courier_id
           JOIN restaurants r ON r.id = o.restaurant_id
           WHERE o.status IN ('accepted', 'preparing', 'picked_up') AND c.zone != r.zone""",
    )
    # the tracking history is the lifecycle path, in time order, ending in the status
    history: dict[str, list[tuple[str, str]]] = {}
    for order_id, status, at in rows(
        session, "SELECT order_id, status, at FROM tracking_events ORDER BY at, id"
    ):
        history.setdefault(order_id, []).append((status, at))
    for order_id, status in rows(session, "SELECT id, status FROM orders ORDER BY id"):
        path = [s for s, _ in history.get(order_id, [])]
        if status == "cancelled":
            ok = (
                len(path) >= 2
                and path[-1] == "cancelled"
                and path[:-1] == FLOW[: len(path) - 1]
                and path[-2] in ("placed", "accepted", "preparing")
            )
        else:
            ok = bool(path) and path == FLOW[: FLOW.index(status) + 1] if status in FLOW else False
        if not ok:
            broken.append(f"order {order_id} is {status} but its history is {path}")
    check(
        "tracking events of unknown orders",
        "SELECT id FROM tracking_events WHERE order_id NOT IN (SELECT id FROM orders)",
    )
    check(
        "a rating of an order that is not delivered, or disagreeing with it, or out of range",
        """SELECT t.id FROM ratings t JOIN orders o ON o.id = t.order_id
           WHERE o.status != 'delivered' OR t.customer_id != o.customer_id
              OR t.restaurant_id != o.restaurant_id OR t.courier_id != o.courier_id
              OR t.food_stars NOT BETWEEN 1 AND 5 OR t.delivery_stars NOT BETWEEN 1 AND 5""",
    )
    check(
        "an order rated twice",
        "SELECT order_id FROM ratings GROUP BY order_id HAVING COUNT(*) > 1",
    )
    check(
        "a cart with items of several restaurants, or of a restaurant not delivering there",
        """SELECT customer_id FROM cart_lines GROUP BY customer_id
           HAVING COUNT(DISTINCT restaurant_id) > 1
           UNION ALL
           SELECT l.id FROM cart_lines l JOIN customers c ON c.id = l.customer_id
           JOIN menu_items i ON i.id = l.item_id
           LEFT JOIN delivery_zones z ON z.restaurant_id = l.restaurant_id AND z.zone = c.zone
           WHERE z.zone IS NULL OR i.restaurant_id != l.restaurant_id
              OR l.quantity NOT BETWEEN 1 AND 20""",
    )
    # a cart line's price is its item's price plus its options', and its options fit the item
    groups = {
        gid: (item, bool(req), mx)
        for gid, item, req, mx in rows(
            session, "SELECT id, item_id, required, max_choices FROM option_groups"
        )
    }
    options = {
        oid: (gid, item, delta)
        for oid, gid, item, delta in rows(
            session, "SELECT id, group_id, item_id, price_delta FROM options"
        )
    }
    prices = dict(rows(session, "SELECT id, price FROM menu_items"))
    for line_id, item, ids, unit in rows(
        session, "SELECT id, item_id, option_ids, unit_price FROM cart_lines ORDER BY id"
    ):
        chosen = ids.split() if ids else []
        if chosen != sorted(set(chosen)) or any(options[o][1] != item for o in chosen):
            broken.append(f"cart line {line_id} has options {chosen} not of item {item}")
            continue
        if unit != prices[item] + sum(options[o][2] for o in chosen):
            broken.append(f"cart line {line_id} costs {unit}, not its item and options")
        for gid, (g_item, required, mx) in groups.items():
            if g_item != item:
                continue
            picked = sum(1 for o in chosen if options[o][0] == gid)
            if (required and picked != 1) or picked > mx:
                broken.append(f"cart line {line_id} picks {picked} of group {gid}")
    return broken


# ------------------------------------------------------------ helpers
@pytest.fixture
def food() -> Iterator[Session]:
    session = FOOD.session(seed=0)
    yield session
    session.close()


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


def is_open_now(session: Session, restaurant_id: str) -> bool:
    detail = call_ok(session, "get_restaurant", {"restaurant_id": restaurant_id})
    return bool(detail["open_now"])


def open_setup(session: Session) -> tuple[str, str]:
    """A (customer, restaurant) pair: the restaurant is open now and delivers to the customer,
    whose cart is empty."""
    for cid, zone in rows(
        session,
        """SELECT id, zone FROM customers
           WHERE id NOT IN (SELECT customer_id FROM cart_lines) ORDER BY id""",
    ):
        for (rid,) in rows(
            session,
            "SELECT restaurant_id FROM delivery_zones WHERE zone = ? ORDER BY restaurant_id",
            zone,
        ):
            if is_open_now(session, rid):
                return cid, rid
    raise AssertionError("no open restaurant delivers to any customer")


def open_seed() -> int:
    """A seed whose clock has restaurants open (the clock is 09:00-17:30 on some day)."""
    for seed in range(40):
        with FOOD.session(seed=seed) as s:
            if s.now.hour >= 12 and s.now.weekday() not in (0, 1, 6):
                return seed
    raise AssertionError("no seed with an afternoon clock")


OPEN_SEED = open_seed()


def item_with_required(session: Session, restaurant_id: str) -> tuple[str, list[str], Decimal]:
    """An available item with a required group, a valid option choice and its unit price."""
    for (item,) in rows(
        session,
        """SELECT i.id FROM menu_items i WHERE i.restaurant_id = ? AND i.available = 1
             AND EXISTS (SELECT 1 FROM option_groups g WHERE g.item_id = i.id AND g.required = 1)
           ORDER BY i.id""",
        restaurant_id,
    ):
        menu = call_ok(session, "get_menu", {"restaurant_id": restaurant_id, "search": None})
        entry = next(i for i in menu["items"] if i["item_id"] == item)
        chosen = [g["options"][-1] for g in entry["option_groups"] if g["required"]]
        price = Decimal(entry["price"]) + sum(Decimal(o["price_delta"]) for o in chosen)
        return item, [o["option_id"] for o in chosen], price
    raise AssertionError(f"{restaurant_id} has no item with a required group")


def fill_cart(session: Session, customer: str, restaurant: str) -> None:
    """Add items until the cart reaches the restaurant's minimum order."""
    item, options, _ = item_with_required(session, restaurant)
    while True:
        cart = call_ok(
            session,
            "add_to_cart",
            {"customer_id": customer, "item_id": item, "option_ids": options, "quantity": 2},
        )
        if Decimal(cart["amount_to_minimum"]) == 0:
            return


def placed_order(session: Session) -> tuple[str, str]:
    """A new order placed now: (order id, restaurant zone)."""
    customer, restaurant = open_setup(session)
    fill_cart(session, customer, restaurant)
    order = call_ok(session, "place_order", {"customer_id": customer, "tip": 2})
    zone = one(session, "SELECT zone FROM restaurants WHERE id = ?", restaurant)
    return order["order_id"], zone


def free_courier(session: Session, zone: str) -> str:
    found = rows(
        session,
        "SELECT id FROM couriers WHERE zone = ? AND status = 'available' ORDER BY id",
        zone,
    )
    if found:
        return str(found[0][0])
    cid = one(session, "SELECT id FROM couriers WHERE zone = ? AND status = 'off_shift'", zone)
    call_ok(session, "set_courier_availability", {"courier_id": cid, "status": "available"})
    return str(cid)


# ------------------------------------------------------------ sampled states
@pytest.mark.parametrize("seed", SEEDS)
def test_a_sampled_city_is_big_enough_and_keeps_every_rule(seed: int) -> None:
    with FOOD.session(seed=seed) as session:
        assert count(session, "restaurants") == 12
        assert count(session, "menu_items") >= 100
        assert count(session, "customers") == 90
        assert count(session, "orders") >= 250
        assert count(session, "ratings") >= 50
        statuses = {s for (s,) in rows(session, "SELECT DISTINCT status FROM orders")}
        assert {"delivered", "cancelled"} <= statuses
        assert count(session, "cart_lines") > 0
        assert rule_violations(session) == []


def test_larger_sizes_scale_and_stay_consistent() -> None:
    with FOOD.session(seed=3, size=2) as session:
        assert count(session, "restaurants") == 24
        assert count(session, "orders") >= 500
        assert rule_violations(session) == []


# ------------------------------------------------------------ carts
def test_cart_prices_add_option_deltas_exactly_and_merge_the_same_choice() -> None:
    with FOOD.session(seed=OPEN_SEED) as s:
        customer, restaurant = open_setup(s)
        item, options, price = item_with_required(s, restaurant)
        args = {"customer_id": customer, "item_id": item, "option_ids": options, "quantity": 2}
        first = call_ok(s, "add_to_cart", args)
        again = call_ok(s, "add_to_cart", {**args, "option_ids": list(reversed(options))})
        assert first["added_line_id"] == again["added_line_id"]
        (line,) = again["lines"]
        assert line["quantity"] == 4
        assert Decimal(line["unit_price"]) == price
        assert Decimal(again["subtotal"]) == price * 4
        assert rule_violations(s) == []


def test_a_cart_holds_one_restaurant_and_only_ones_delivering_there(food: Session) -> None:
    customer, restaurant_id = (
        one(food, "SELECT customer_id, restaurant_id FROM cart_lines ORDER BY id LIMIT 1"),
        None,
    )
    restaurant_id = one(
        food, "SELECT restaurant_id FROM cart_lines WHERE customer_id = ?", customer
    )
    zone = one(food, "SELECT zone FROM customers WHERE id = ?", customer)
    other = one(
        food,
        """SELECT restaurant_id FROM delivery_zones WHERE zone = ? AND restaurant_id != ?
           ORDER BY restaurant_id""",
        zone,
        restaurant_id,
    )
    item, options, _ = item_with_required(food, other)
    args = {"customer_id": customer, "item_id": item, "option_ids": options}
    msg = refused(
        food, "add_to_cart", args, ErrorKind.PRECONDITION_FAILED, "one_restaurant_per_cart"
    )
    assert restaurant_id in msg
    call_ok(food, "clear_cart", {"customer_id": customer})
    call_ok(food, "add_to_cart", args)
    far = one(
        food,
        """SELECT id FROM restaurants WHERE id NOT IN
             (SELECT restaurant_id FROM delivery_zones WHERE zone = ?) ORDER BY id""",
        zone,
    )
    call_ok(food, "clear_cart", {"customer_id": customer})
    item, options, _ = item_with_required(food, far)
    refused(
        food,
        "add_to_cart",
        {"customer_id": customer, "item_id": item, "option_ids": options},
        ErrorKind.PRECONDITION_FAILED,
        "outside_delivery_zone",
    )


def test_options_must_fit_the_item_its_required_groups_and_limits(food: Session) -> None:
    customer, restaurant = open_setup(food)
    item, options, _ = item_with_required(food, restaurant)
    base = {"customer_id": customer, "item_id": item}
    refused(
        food,
        "add_to_cart",
        {**base, "option_ids": []},
        ErrorKind.PRECONDITION_FAILED,
        "required_option_missing",
    )
    foreign = one(food, "SELECT id FROM options WHERE item_id != ? ORDER BY id", item)
    refused(
        food,
        "add_to_cart",
        {**base, "option_ids": [*options, foreign]},
        ErrorKind.BAD_ARGUMENTS,
        "option_not_on_item",
    )
    refused(
        food,
        "add_to_cart",
        {**base, "option_ids": [*options, options[0]]},
        ErrorKind.BAD_ARGUMENTS,
        "option_not_on_item",
    )
    group = one(food, "SELECT group_id FROM options WHERE id = ?", options[0])
    twins = [
        o for (o,) in rows(food, "SELECT id FROM options WHERE group_id = ? ORDER BY id", group)
    ]
    refused(
        food,
        "add_to_cart",
        {**base, "option_ids": [*options, *(t for t in twins if t not in options)][:3]},
        ErrorKind.PRECONDITION_FAILED,
        "required_option_missing",
    )
    sold_out = rows(food, "SELECT id FROM menu_items WHERE available = 0 ORDER BY id")
    assert sold_out
    refused(
        food,
        "add_to_cart",
        {"customer_id": customer, "item_id": sold_out[0][0], "option_ids": []},
        ErrorKind.PRECONDITION_FAILED,
        "item_unavailable",
    )
    extras = rows(
        food,
        """SELECT g.item_id, g.id, g.max_choices FROM option_groups g
           JOIN menu_items i ON i.id = g.item_id
           WHERE g.required = 0 AND i.available = 1 AND i.restaurant_id = ?
             AND (SELECT COUNT(*) FROM options o WHERE o.group_id = g.id) > g.max_choices
           ORDER BY g.id""",
        restaurant,
    )
    if extras:
        item2, gid, mx = extras[0]
        required = [
            o
            for (o,) in rows(
                food,
                """SELECT MIN(o.id) FROM options o JOIN option_groups g ON g.id = o.group_id
                   WHERE g.item_id = ? AND g.required = 1 GROUP BY g.id ORDER BY g.id""",
                item2,
            )
        ]
        many = [
            o for (o,) in rows(food, "SELECT id FROM options WHERE group_id = ? ORDER BY id", gid)
        ]
        refused(
            food,
            "add_to_cart",
            {"customer_id": customer, "item_id": item2, "option_ids": [*required, *many[: mx + 1]]},
            ErrorKind.PRECONDITION_FAILED,
            "too_many_options",
        )


def test_removing_a_line_needs_the_right_customer(food: Session) -> None:
    line, owner = rows(food, "SELECT id, customer_id FROM cart_lines ORDER BY id")[0]
    stranger = one(food, "SELECT id FROM customers WHERE id != ? ORDER BY id", owner)
    refused(
        food,
        "remove_from_cart",
        {"customer_id": stranger, "cart_line_id": line},
        ErrorKind.BAD_ARGUMENTS,
        line,
    )
    cart = call_ok(food, "remove_from_cart", {"customer_id": owner, "cart_line_id": line})
    assert line not in [ln["cart_line_id"] for ln in cart["lines"]]
    assert count(food, "cart_lines", "id = ?", line) == 0


# ------------------------------------------------------------ placing orders
def test_an_order_totals_exactly_and_empties_the_cart() -> None:
    with FOOD.session(seed=OPEN_SEED) as s:
        customer, restaurant = open_setup(s)
        fill_cart(s, customer, restaurant)
        cart = call_ok(s, "view_cart", {"customer_id": customer})
        assert cart["ready_to_order"] and cart["problems"] == []
        order = call_ok(s, "place_order", {"customer_id": customer, "tip": "2.50"})
        assert order["status"] == "placed"
        assert Decimal(order["subtotal"]) == Decimal(cart["subtotal"])
        assert Decimal(order["total"]) == (
            Decimal(cart["subtotal"]) + Decimal(cart["delivery_fee"]) + Decimal("2.50")
        )
        assert [h["status"] for h in order["history"]] == ["placed"]
        assert order["history"][0]["at"] == s.now.isoformat(timespec="minutes")
        assert count(s, "cart_lines", "customer_id = ?", customer) == 0
        assert rule_violations(s) == []


def test_ordering_needs_items_an_open_restaurant_and_the_minimum(food: Session) -> None:
    empty = one(
        food, "SELECT id FROM customers WHERE id NOT IN (SELECT customer_id FROM cart_lines)"
    )
    refused(
        food, "place_order", {"customer_id": empty}, ErrorKind.PRECONDITION_FAILED, "cart_empty"
    )
    with FOOD.session(seed=OPEN_SEED) as s:
        customer, restaurant = open_setup(s)
        item, options, price = item_with_required(s, restaurant)
        minimum = money(one(s, "SELECT minimum_order FROM restaurants WHERE id = ?", restaurant))
        if price < minimum:
            call_ok(
                s, "add_to_cart", {"customer_id": customer, "item_id": item, "option_ids": options}
            )
            msg = refused(
                s,
                "place_order",
                {"customer_id": customer},
                ErrorKind.PRECONDITION_FAILED,
                "below_minimum_order",
            )
            assert str(minimum - price) in msg
    # a cart at a closed restaurant: find a state and cart whose restaurant is closed
    for seed in range(10):
        with FOOD.session(seed=seed) as s:
            for (customer,) in rows(s, "SELECT DISTINCT customer_id FROM cart_lines ORDER BY 1"):
                cart = call_ok(s, "view_cart", {"customer_id": customer})
                if cart["open_now"] is False:
                    msg = refused(
                        s,
                        "place_order",
                        {"customer_id": customer},
                        ErrorKind.PRECONDITION_FAILED,
                        "restaurant_closed",
                    )
                    assert "next opens at" in msg
                    return
    raise AssertionError("no cart at a closed restaurant in ten seeds")


# ------------------------------------------------------------ the lifecycle
def test_an_order_walks_the_lifecycle_one_step_at_a_time() -> None:
    with FOOD.session(seed=OPEN_SEED) as s:
        order, zone = placed_order(s)
        for wrong in ["preparing", "picked_up", "delivered"]:
            refused(
                s,
                "update_order_status",
                {"order_id": order, "new_status": wrong},
                ErrorKind.PRECONDITION_FAILED,
                "invalid_transition",
            )
        call_ok(s, "update_order_status", {"order_id": order, "new_status": "accepted"})
        call_ok(s, "update_order_status", {"order_id": order, "new_status": "preparing"})
        refused(
            s,
            "update_order_status",
            {"order_id": order, "new_status": "picked_up"},
            ErrorKind.PRECONDITION_FAILED,
            "courier_required",
        )
        courier = free_courier(s, zone)
        call_ok(s, "assign_courier", {"order_id": order, "courier_id": courier})
        assert one(s, "SELECT status FROM couriers WHERE id = ?", courier) == "on_delivery"
        call_ok(s, "update_order_status", {"order_id": order, "new_status": "picked_up"})
        done = call_ok(s, "update_order_status", {"order_id": order, "new_status": "delivered"})
        assert [h["status"] for h in done["history"]] == FLOW
        assert done["next_status"] is None and not done["can_cancel"]
        assert one(s, "SELECT status FROM couriers WHERE id = ?", courier) == "available"
        refused(
            s,
            "update_order_status",
            {"order_id": order, "new_status": "delivered"},
            ErrorKind.PRECONDITION_FAILED,
            "invalid_transition",
        )
        assert rule_violations(s) == []


@pytest.mark.parametrize(
    ("stage", "reason", "full"),
    [
        ("placed", "customer_request", True),
        ("accepted", "duplicate_order", True),
        ("preparing", "customer_request", False),
        ("preparing", "restaurant_unavailable", True),
        ("preparing", "courier_unavailable", True),
    ],
)
def test_cancellation_refunds_by_stage_and_reason(stage: str, reason: str, full: bool) -> None:
    with FOOD.session(seed=OPEN_SEED) as s:
        order, zone = placed_order(s)
        for status in FLOW[1 : FLOW.index(stage) + 1]:
            call_ok(s, "update_order_status", {"order_id": order, "new_status": status})
        courier = None
        if stage != "placed":
            courier = free_courier(s, zone)
            call_ok(s, "assign_courier", {"order_id": order, "courier_id": courier})
        detail = call_ok(s, "get_order", {"order_id": order})
        done = call_ok(s, "cancel_order", {"order_id": order, "reason": reason})
        total, subtotal = Decimal(done["total"]), Decimal(done["subtotal"])
        kept = (subtotal / 2).quantize(Decimal("0.01"), rounding="ROUND_HALF_UP")
        expected = total if full else total - kept
        assert Decimal(done["refunded"]) == expected
        if reason == "customer_request":
            assert Decimal(detail["refund_if_cancelled_by_customer"]) == expected
        assert done["status"] == "cancelled" and done["history"][-1]["status"] == "cancelled"
        if courier:
            assert one(s, "SELECT status FROM couriers WHERE id = ?", courier) == "available"
        refused(
            s,
            "cancel_order",
            {"order_id": order, "reason": reason},
            ErrorKind.PRECONDITION_FAILED,
            "order_not_cancellable",
        )
        assert rule_violations(s) == []


def test_picked_up_and_delivered_orders_cannot_be_cancelled(food: Session) -> None:
    for status in ("picked_up", "delivered"):
        found = rows(food, "SELECT id FROM orders WHERE status = ? ORDER BY id", status)
        if found:
            refused(
                food,
                "cancel_order",
                {"order_id": found[0][0], "reason": "customer_request"},
                ErrorKind.PRECONDITION_FAILED,
                "order_not_cancellable",
            )


# ------------------------------------------------------------ couriers
def test_couriers_are_assigned_in_their_zone_when_available_and_released() -> None:
    with FOOD.session(seed=OPEN_SEED) as s:
        order, zone = placed_order(s)
        courier = free_courier(s, zone)
        refused(
            s,
            "assign_courier",
            {"order_id": order, "courier_id": courier},
            ErrorKind.PRECONDITION_FAILED,
            "order_not_assignable",
        )
        call_ok(s, "update_order_status", {"order_id": order, "new_status": "accepted"})
        stranger = one(
            s, "SELECT id FROM couriers WHERE zone != ? AND status = 'available' ORDER BY id", zone
        )
        refused(
            s,
            "assign_courier",
            {"order_id": order, "courier_id": stranger},
            ErrorKind.PRECONDITION_FAILED,
            "courier_wrong_zone",
        )
        call_ok(s, "assign_courier", {"order_id": order, "courier_id": courier})
        refused(
            s,
            "assign_courier",
            {"order_id": order, "courier_id": courier},
            ErrorKind.CONFLICT,
            "courier_already_assigned",
        )
        refused(
            s,
            "set_courier_availability",
            {"courier_id": courier, "status": "off_shift"},
            ErrorKind.PRECONDITION_FAILED,
            "courier_has_active_order",
        )
        off = rows(
            s, "SELECT id FROM couriers WHERE zone = ? AND status = 'off_shift' ORDER BY id", zone
        )
        if off:
            refused(
                s,
                "assign_courier",
                {"order_id": order, "courier_id": off[0][0]},
                ErrorKind.PRECONDITION_FAILED,
                "courier_unavailable",
            )
            call_ok(s, "set_courier_availability", {"courier_id": off[0][0], "status": "available"})
            # reassignment frees the first courier
            call_ok(s, "assign_courier", {"order_id": order, "courier_id": off[0][0]})
            assert one(s, "SELECT status FROM couriers WHERE id = ?", courier) == "available"
        assert rule_violations(s) == []


# ------------------------------------------------------------ ratings
def test_only_delivered_orders_are_rated_once_within_the_window(food: Session) -> None:
    now = food.now.isoformat(sep=" ")
    fresh = one(
        food,
        """SELECT o.id FROM orders o JOIN tracking_events t ON t.order_id = o.id
           WHERE o.status = 'delivered' AND t.status = 'delivered'
             AND t.at >= datetime(?, '-10 days')
             AND o.id NOT IN (SELECT order_id FROM ratings) ORDER BY o.id""",
        now,
    )
    args = {"order_id": fresh, "food_stars": 4, "delivery_stars": 5, "comment": "  Hot  food "}
    out = call_ok(food, "rate_order", args)
    assert out["comment"] == "Hot food" and out["restaurant_rating_count"] >= 1
    refused(food, "rate_order", args, ErrorKind.CONFLICT, "already_rated")
    old = one(
        food,
        """SELECT o.id FROM orders o JOIN tracking_events t ON t.order_id = o.id
           WHERE o.status = 'delivered' AND t.status = 'delivered'
             AND t.at < datetime(?, '-15 days')
             AND o.id NOT IN (SELECT order_id FROM ratings) ORDER BY o.id""",
        now,
    )
    refused(
        food,
        "rate_order",
        {**args, "order_id": old},
        ErrorKind.PRECONDITION_FAILED,
        "rating_window",
    )
    cancelled = one(food, "SELECT id FROM orders WHERE status = 'cancelled' ORDER BY id")
    refused(
        food,
        "rate_order",
        {**args, "order_id": cancelled},
        ErrorKind.PRECONDITION_FAILED,
        "rating_not_allowed",
    )
    for stars in (0, 6):
        result = food.call("rate_order", {**args, "order_id": old, "food_stars": stars})
        assert result.error_kind == ErrorKind.BAD_ARGUMENTS


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tip=st.decimals(min_value=0, max_value=100, places=2), quantity=st.integers(1, 5))
def test_totals_are_exact_for_any_tip_and_quantity(tip: Decimal, quantity: int) -> None:
    with FOOD.session(seed=OPEN_SEED) as s:
        customer, restaurant = open_setup(s)
        item, options, price = item_with_required(s, restaurant)
        call_ok(
            s,
            "add_to_cart",
            {"customer_id": customer, "item_id": item, "option_ids": options, "quantity": quantity},
        )
        cart = call_ok(s, "view_cart", {"customer_id": customer})
        if not cart["ready_to_order"]:
            return
        order = call_ok(s, "place_order", {"customer_id": customer, "tip": str(tip)})
        assert Decimal(order["subtotal"]) == price * quantity
        assert Decimal(order["total"]) == price * quantity + Decimal(order["delivery_fee"]) + tip
        assert rule_violations(s) == []


# ------------------------------------------------------------ random sequences
class FoodRules(RuleBasedStateMachine):
    """Plausible calls in any order; every rule holds after each."""

    @initialize(seed=st.sampled_from([OPEN_SEED, 0]))
    def start(self, seed: int) -> None:
        self.session = FOOD.session(seed=seed)
        s = self.session
        self.customers = [c for (c,) in rows(s, "SELECT id FROM customers ORDER BY id LIMIT 25")]
        self.items = [
            i for (i,) in rows(s, "SELECT id FROM menu_items WHERE available = 1 ORDER BY id")
        ]
        self.couriers = [c for (c,) in rows(s, "SELECT id FROM couriers ORDER BY id")]

    def _orders(self) -> list[str]:
        return [
            o
            for (o,) in rows(
                self.session,
                """SELECT id FROM orders WHERE status != 'delivered' OR placed_at >= datetime(?,
                   '-14 days') ORDER BY id""",
                self.session.now.isoformat(sep=" "),
            )
        ]

    def _call(self, name: str, args: dict[str, Any]) -> None:
        before = self.session.state_hash()
        result = self.session.call(name, args)
        assert result.error_kind != ErrorKind.INTERNAL, (name, args, result.message)
        if not result.ok:
            assert self.session.state_hash() == before, (name, args, result.message)

    @rule(data=st.data())
    def add(self, data: st.DataObject) -> None:
        item = data.draw(st.sampled_from(self.items))
        opts = [
            o
            for (o,) in rows(
                self.session,
                """SELECT MIN(o.id) FROM options o JOIN option_groups g ON g.id = o.group_id
                   WHERE g.item_id = ? AND g.required = 1 GROUP BY g.id ORDER BY g.id""",
                item,
            )
        ]
        self._call(
            "add_to_cart",
            {
                "customer_id": data.draw(st.sampled_from(self.customers)),
                "item_id": item,
                "option_ids": opts,
                "quantity": data.draw(st.integers(1, 4)),
            },
        )

    @rule(data=st.data())
    def place(self, data: st.DataObject) -> None:
        self._call(
            "place_order",
            {
                "customer_id": data.draw(st.sampled_from(self.customers)),
                "tip": data.draw(st.sampled_from([0, 1, "2.50"])),
            },
        )

    @rule(data=st.data())
    def clear(self, data: st.DataObject) -> None:
        self._call("clear_cart", {"customer_id": data.draw(st.sampled_from(self.customers))})

    @rule(data=st.data())
    def advance(self, data: st.DataObject) -> None:
        orders = self._orders()
        self._call(
            "update_order_status",
            {
                "order_id": data.draw(st.sampled_from(orders)),
                "new_status": data.draw(st.sampled_from(FLOW[1:])),
            },
        )

    @rule(data=st.data())
    def assign(self, data: st.DataObject) -> None:
        self._call(
            "assign_courier",
            {
                "order_id": data.draw(st.sampled_from(self._orders())),
                "courier_id": data.draw(st.sampled_from(self.couriers)),
            },
        )

    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        self._call(
            "cancel_order",
            {
                "order_id": data.draw(st.sampled_from(self._orders())),
                "reason": data.draw(
                    st.sampled_from(["customer_request", "restaurant_unavailable"])
                ),
            },
        )

    @rule(data=st.data())
    def rate(self, data: st.DataObject) -> None:
        self._call(
            "rate_order",
            {
                "order_id": data.draw(st.sampled_from(self._orders())),
                "food_stars": data.draw(st.integers(1, 5)),
                "delivery_stars": data.draw(st.integers(1, 5)),
            },
        )

    @rule(data=st.data())
    def shift(self, data: st.DataObject) -> None:
        self._call(
            "set_courier_availability",
            {
                "courier_id": data.draw(st.sampled_from(self.couriers)),
                "status": data.draw(st.sampled_from(["available", "off_shift"])),
            },
        )

    @invariant()
    def the_food_rules_hold(self) -> None:
        if hasattr(self, "session"):
            assert rule_violations(self.session) == []

    def teardown(self) -> None:
        if hasattr(self, "session"):
            self.session.close()


TestFoodRules = FoodRules.TestCase
TestFoodRules.settings = settings(
    max_examples=8,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# ------------------------------------------------------------ conformance
FUZZ_SAMPLES = [
    "rst_001",
    "rst_999",
    "itm_0001",
    "itm_9999",
    "opt_0001",
    "opt_9999",
    "cus_0001",
    "cus_9999",
    "cl_0001",
    "cl_9999",
    "ord_00001",
    "ord_99999",
    "cou_001",
    "cou_999",
    "downtown",
    "pizza",
    "accepted",
    "picked_up",
    "delivered",
    "cancelled",
    "customer_request",
    "off_shift",
    "12.345",
    "1e30",
    "-1",
    "NaN",
    "50%",
]

TestConformance = conformance_suite(
    "food_delivery", samples=FUZZ_SAMPLES, invariants=rule_violations
)


# ------------------------------------------------------------ declarations
def test_entity_sources_list_entities_that_exist(food: Session) -> None:
    tables = {
        "restaurant": ("restaurants", "id"),
        "menu_item": ("menu_items", "id"),
        "option": ("options", "id"),
        "customer": ("customers", "id"),
        "cart_line": ("cart_lines", "id"),
        "order": ("orders", "id"),
        "courier": ("couriers", "id"),
        "rating": ("ratings", "id"),
    }
    assert set(FOOD.entities) == set(tables)
    for kind, source in FOOD.entities.items():
        records = food.list_entities(kind)
        table, column = tables[kind]
        assert records, kind
        ids = {i for (i,) in rows(food, f"SELECT {column} FROM {table}")}
        assert {r[source.key] for r in records} <= ids, kind
    # the option choice an item record suggests is accepted by add_to_cart's rules
    for record in food.list_entities("menu_item")[:40]:
        required = count(food, "option_groups", "item_id = ? AND required = 1", record["item_id"])
        assert len(record["option_ids"]) == required or (
            required == 0 and len(record["option_ids"]) <= 1
        )


def test_the_server_offers_seventeen_tools_and_names_its_rules() -> None:
    from prove_plugins.food_delivery.tools import RULES

    assert len(FOOD.visible_tools()) == 17
    writes = {t.name for t in FOOD.visible_tools() if t.writes}
    assert writes == {
        "add_to_cart",
        "remove_from_cart",
        "clear_cart",
        "place_order",
        "update_order_status",
        "assign_courier",
        "cancel_order",
        "rate_order",
        "set_courier_availability",
    }
    import prove_plugins.food_delivery.tools as tools_module

    source = "\n".join(  # every module of the tools/ package, less the rules' own table
        p.read_text(encoding="utf-8")
        for p in sorted(Path(tools_module.__file__ or "").parent.glob("*.py"))
        if p.name != "args.py"
    )
    for rule_name in RULES:
        assert f"'{rule_name}'" in source or f'"{rule_name}"' in source, rule_name


# ------------------------------------------------------------------- tasks
def test_hand_written_tasks_cover_rules_turns_and_abstain() -> None:
    tasks = [
        t
        for t in prove_gym.get_registry().tasks("food_delivery")
        if re.fullmatch(r"food_delivery-\d{3}", t.id)
    ]
    assert 3 <= len(tasks) <= 8
    kinds = {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "abstain"} <= kinds
    assert any(len(t.turns) > 1 for t in tasks)


def test_shipped_tasks_are_sorted_unique_and_many() -> None:
    tasks = prove_gym.get_registry().tasks("food_delivery")
    ids = [t.id for t in tasks]
    assert len(ids) == len(set(ids)) >= 200
    lines = FOOD.tasks_file.read_text().splitlines() if FOOD.tasks_file else []
    assert [json.loads(line)["id"] for line in lines] == sorted(ids)


def test_history_times_never_pass_the_clock(food: Session) -> None:
    latest = one(food, "SELECT MAX(at) FROM tracking_events")
    assert dt.datetime.fromisoformat(str(latest)) <= food.now


# ------------------------------------------------------------ -v1: a signed-in customer
def test_v1_acts_for_one_customer_and_leaves_the_kitchen_and_dispatch_to_the_platform() -> None:
    """prove/food_delivery-v1 (issue #50: the assistant acted for any customer, moved orders
    through the kitchen and dispatched couriers)."""
    with FOOD.session(seed=0) as v0:
        order, theirs = rows(
            v0, "SELECT id, customer_id FROM orders WHERE status = 'placed' ORDER BY id"
        )[0]
        mine = one(v0, "SELECT id FROM customers WHERE id != ? ORDER BY id", theirs)
        assert v0.call("update_order_status", {"order_id": order, "new_status": "accepted"}).ok
        assert v0.call("list_couriers", {}).ok
    with FOOD.session(seed=0, env_version=1, principal=mine) as other:
        before = other.state_hash()
        for name, args in [
            ("get_order", {"order_id": order}),
            ("cancel_order", {"order_id": order, "reason": "customer_request"}),
            ("view_cart", {"customer_id": theirs}),
        ]:
            refused = other.call(name, args)
            assert refused.error_kind == ErrorKind.PERMISSION_DENIED, (name, refused)
            assert (refused.message or "").startswith("Rule 'not_your_customer' failed"), refused
            assert theirs not in (refused.message or "") or name == "view_cart"
        assert other.state_hash() == before
    with FOOD.session(seed=0, env_version=1, principal=theirs) as owner:
        before = owner.state_hash()
        for name, args in [
            ("update_order_status", {"order_id": order, "new_status": "accepted"}),
            ("list_couriers", {}),
        ]:
            refused = owner.call(name, args)
            assert refused.error_kind == ErrorKind.PERMISSION_DENIED, (name, refused)
            assert (refused.message or "").startswith(f"Rule 'admin_only' failed: {name}")
        assert owner.state_hash() == before
        assert owner.call("get_order", {"order_id": order}).ok


def test_v1_a_customer_cancels_only_with_their_own_reasons() -> None:
    """A full refund while preparing for 'restaurant_unavailable' is the restaurant's to give."""
    with FOOD.session(seed=0) as v0:
        order, who = rows(
            v0, "SELECT id, customer_id FROM orders WHERE status = 'placed' ORDER BY id"
        )[0]
        assert v0.call("cancel_order", {"order_id": order, "reason": "courier_unavailable"}).ok
    with FOOD.session(seed=0, env_version=1, principal=who) as customer:
        before = customer.state_hash()
        for reason in ("restaurant_unavailable", "courier_unavailable"):
            refused = customer.call("cancel_order", {"order_id": order, "reason": reason})
            assert refused.error_kind == ErrorKind.PERMISSION_DENIED
            assert (refused.message or "").startswith("Rule 'customer_cancel_reason' failed")
        assert customer.state_hash() == before
        done = customer.call("cancel_order", {"order_id": order, "reason": "customer_request"})
        assert done.ok and done.content["status"] == "cancelled"


@pytest.mark.parametrize("seed", [0, 3])
def test_v1_listings_show_only_the_customers_own(seed: int) -> None:
    """find_customer finds only the signed-in account; list_orders, even by restaurant or
    status, only its orders; -v0 lists everyone's as before."""
    with FOOD.session(seed=seed) as v0:
        who, restaurant = rows(v0, "SELECT customer_id, restaurant_id FROM orders ORDER BY id")[0]
        name = one(v0, "SELECT name FROM customers WHERE id = ?", who)
        everyone = v0.call("list_orders", {"restaurant_id": restaurant, "limit": 50}).content
        found = v0.call("find_customer", {"query": "a", "limit": 50}).content
        assert len(found) > 1
        assert {o["customer_id"] for o in everyone["orders"]} != {who}
        theirs = sql_count(v0, "SELECT COUNT(*) FROM orders WHERE customer_id = ?", who)
    with FOOD.session(seed=seed, env_version=1, principal=who) as me:
        assert [c["customer_id"] for c in me.call("find_customer", {"query": name}).content] == [
            who
        ]
        other = next(c for c in found if c["customer_id"] != who)
        assert me.call("find_customer", {"query": other["customer_id"]}).content == []
        mine = me.call("list_orders", {"limit": 50}).content
        assert mine["total"] == theirs
        assert {o["customer_id"] for o in mine["orders"]} == {who}
        at = me.call("list_orders", {"restaurant_id": restaurant, "limit": 50}).content
        assert at["orders"] and {o["customer_id"] for o in at["orders"]} == {who}
        assert at["total"] == len(at["orders"]) < everyone["total"]
