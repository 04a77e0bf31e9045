"""The travel_booking server: seat, room-night and money rules under random call sequences,
one test per domain rule (fare rules, refunds, passports, cut-offs), its tasks, and the
conformance suite."""

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
from prove_plugins.travel_booking.models import (
    CHANGE_FEES,
    LAYOUTS,
    change_cost,
    hotel_refund,
    night_price,
    seat_map,
)
from prove_plugins.travel_booking.tools.quotes import QUOTES, quote_ref
from pydantic import TypeAdapter

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import count, one, rows

TRAVEL = prove_gym.get_server("travel_booking")
SEEDS = [0, 7, 11]


def money(cents: int | None) -> Decimal:
    return Decimal(cents or 0).scaleb(-2)


# ------------------------------------------------------------ the invariants
def rule_violations(session: Session) -> list[str]:
    """Every broken travel rule, read straight from SQLite (see the models' docstring)."""
    broken: list[str] = []

    def check(what: str, sql: str, *params: Any) -> None:
        found = rows(session, sql, *params)
        if found:
            broken.append(f"{what}: {found[:5]}")

    check(
        "a seat is held by two confirmed bookings",
        """SELECT flight_id, seat, COUNT(*) FROM flight_bookings WHERE status = 'confirmed'
           GROUP BY flight_id, seat HAVING COUNT(*) > 1""",
    )
    check(
        "a traveller holds two confirmed bookings on one flight",
        """SELECT flight_id, traveller_id FROM flight_bookings WHERE status = 'confirmed'
           GROUP BY flight_id, traveller_id HAVING COUNT(*) > 1""",
    )
    aircraft = dict(rows(session, "SELECT id, aircraft FROM flights"))
    occupied = {f: set(o.split()) for f, o in rows(session, "SELECT id, occupied FROM flights")}
    for bid, flight, cabin, seat in rows(
        session,
        "SELECT id, flight_id, cabin, seat FROM flight_bookings WHERE status = 'confirmed'",
    ):
        if seat not in seat_map(aircraft[flight], cabin):
            broken.append(f"booking {bid}: seat {seat} is not in {cabin} of {aircraft[flight]}")
        if seat in occupied[flight]:
            broken.append(f"booking {bid}: seat {seat} is also sold to another passenger")
    for flight, taken in occupied.items():
        every = {s for c in LAYOUTS[aircraft[flight]] for s in seat_map(aircraft[flight], c)}
        if not taken <= every:
            broken.append(f"flight {flight} has occupied seats outside its map")
    check(
        "a confirmed booking's fare is not its flight's fare",
        """SELECT b.id FROM flight_bookings b LEFT JOIN fares f ON f.flight_id = b.flight_id
             AND f.cabin = b.cabin AND f.fare_class = b.fare_class
           WHERE b.status = 'confirmed'
             AND (f.id IS NULL OR f.base != b.base_fare OR f.taxes != b.taxes)""",
    )
    check(
        "a confirmed hotel booking does not hold exactly its nights",
        """SELECT b.id, julianday(b.check_out) - julianday(b.check_in), COUNT(n.night),
                  MIN(n.night), MAX(n.night)
           FROM hotel_bookings b LEFT JOIN room_nights n ON n.hotel_booking_id = b.id
           WHERE b.status = 'confirmed' GROUP BY b.id
           HAVING COUNT(n.night) != julianday(b.check_out) - julianday(b.check_in)
              OR MIN(n.night) != b.check_in
              OR MAX(n.night) != date(b.check_out, '-1 day')""",
    )
    check(
        "a room night is held by a booking of another room or a cancelled booking",
        """SELECT n.room_id, n.night, b.id FROM room_nights n
           JOIN hotel_bookings b ON b.id = n.hotel_booking_id
           WHERE b.room_id != n.room_id OR b.status != 'confirmed'""",
    )
    # a hotel booking's total is the sum of its nights' prices under its plan
    rates = {
        (rt, night): money(rate)
        for rt, night, rate in rows(session, "SELECT room_type_id, night, rate FROM room_rates")
    }
    for bid, rt, check_in, check_out, plan, total, first in rows(
        session,
        """SELECT b.id, r.room_type_id, b.check_in, b.check_out, b.rate_plan, b.total,
                  b.first_night
           FROM hotel_bookings b JOIN rooms r ON r.id = b.room_id""",
    ):
        start, end = dt.date.fromisoformat(check_in), dt.date.fromisoformat(check_out)
        nights = [start + dt.timedelta(days=n) for n in range((end - start).days)]
        prices = [night_price(rates[(rt, n.isoformat())], plan) for n in nights]
        if sum(prices, Decimal(0)) != money(total) or prices[0] != money(first):
            broken.append(f"hotel booking {bid}: total {money(total)} != nights {prices}")
    for table, ref in (
        ("flight_bookings", "flight_booking_id"),
        ("hotel_bookings", "hotel_booking_id"),
    ):
        check(
            f"{table}: amount_paid or refunded disagrees with the ledger",
            f"""SELECT b.id, b.amount_paid, b.refunded, COALESCE(t.paid, 0), COALESCE(t.back, 0)
                FROM {table} b LEFT JOIN (
                  SELECT {ref} id,
                         SUM(CASE WHEN kind != 'refund' THEN amount ELSE 0 END) paid,
                         SUM(CASE WHEN kind = 'refund' THEN amount ELSE 0 END) back
                  FROM transactions WHERE {ref} IS NOT NULL GROUP BY {ref}) t ON t.id = b.id
                WHERE b.amount_paid != COALESCE(t.paid, 0) - COALESCE(t.back, 0)
                   OR b.refunded != COALESCE(t.back, 0) OR b.amount_paid < 0
                   OR b.refunded < 0""",
        )
    check(
        "an itinerary's total_paid is not the sum of its bookings' amount_paid",
        """SELECT i.id, i.total_paid, COALESCE(f.s, 0) + COALESCE(h.s, 0) FROM itineraries i
           LEFT JOIN (SELECT itinerary_id, SUM(amount_paid) s FROM flight_bookings
                      GROUP BY itinerary_id) f ON f.itinerary_id = i.id
           LEFT JOIN (SELECT itinerary_id, SUM(amount_paid) s FROM hotel_bookings
                      GROUP BY itinerary_id) h ON h.itinerary_id = i.id
           WHERE i.total_paid != COALESCE(f.s, 0) + COALESCE(h.s, 0)""",
    )
    check(
        "a ledger line is not positive, has an unknown kind, or names no booking of its trip",
        """SELECT t.id FROM transactions t
           LEFT JOIN flight_bookings f ON f.id = t.flight_booking_id
           LEFT JOIN hotel_bookings h ON h.id = t.hotel_booking_id
           WHERE t.amount <= 0
              OR t.kind NOT IN ('charge', 'change_fee', 'fare_difference', 'refund')
              OR ((t.flight_booking_id IS NULL) = (t.hotel_booking_id IS NULL))
              OR COALESCE(f.itinerary_id, h.itinerary_id) != t.itinerary_id""",
    )
    check(
        "a booking's refunds exceed what its fare or stay rules allow",
        """SELECT id FROM flight_bookings WHERE status = 'cancelled'
             AND fare_class != 'flex' AND refunded > taxes
           UNION ALL
           SELECT id FROM hotel_bookings WHERE (rate_plan = 'non_refundable' AND refunded != 0)
              OR refunded > total""",
    )
    for table in ("flight_bookings", "hotel_bookings"):
        check(
            f"{table}: status and cancelled_at disagree",
            f"""SELECT id, status FROM {table}
                WHERE status NOT IN ('confirmed', 'cancelled')
                   OR ((status = 'cancelled') != (cancelled_at IS NOT NULL))""",
        )
    check(
        "a cancelled itinerary still has a confirmed booking",
        """SELECT i.id FROM itineraries i WHERE i.status = 'cancelled' AND (
             EXISTS (SELECT 1 FROM flight_bookings b
                     WHERE b.itinerary_id = i.id AND b.status = 'confirmed')
             OR EXISTS (SELECT 1 FROM hotel_bookings b
                        WHERE b.itinerary_id = i.id AND b.status = 'confirmed'))
           UNION ALL
           SELECT id FROM itineraries WHERE status NOT IN ('active', 'cancelled')
              OR ((status = 'cancelled') != (cancelled_at IS NOT NULL))""",
    )
    check(
        "a traveller has two loyalty numbers with one airline, or a number of another airline",
        """SELECT traveller_id, airline FROM loyalty_accounts
           WHERE substr(number, 1, 2) != airline
           UNION ALL
           SELECT traveller_id, airline FROM loyalty_accounts
           GROUP BY traveller_id, airline HAVING COUNT(*) > 1""",
    )
    return broken


# ------------------------------------------------------------ fixtures
@pytest.fixture
def trip() -> Iterator[Session]:
    session = TRAVEL.session(seed=0)
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


def now(session: Session) -> str:
    return session.now.isoformat(sep=" ")


def good_traveller(session: Session) -> str:
    """A traveller whose passport is fine for any flight of the sampled horizon."""
    return one(
        session,
        "SELECT id FROM travellers WHERE passport_expiry >= date(?, '+400 days') ORDER BY id",
        now(session),
    )


def open_flight(session: Session, *, cabin: str = "economy", skip: int = 0) -> tuple[str, str]:
    """A flight departing 2+ days ahead with free seats in ``cabin``, and one free seat."""
    for fid, aircraft, occupied in rows(
        session,
        """SELECT id, aircraft, occupied FROM flights WHERE departs_at >= datetime(?, '+2 days')
           ORDER BY id""",
        now(session),
    ):
        if cabin not in LAYOUTS[aircraft]:
            continue
        booked = {
            s
            for (s,) in rows(
                session,
                "SELECT seat FROM flight_bookings WHERE flight_id = ? AND status = 'confirmed'",
                fid,
            )
        }
        free = [s for s in seat_map(aircraft, cabin) if s not in set(occupied.split()) | booked]
        if free:
            if skip:
                skip -= 1
                continue
            return fid, free[0]
    raise AssertionError("no open flight")


def free_seat(session: Session, flight: str, cabin: str, avoid: str = "") -> str:
    aircraft, occupied = rows(
        session, "SELECT aircraft, occupied FROM flights WHERE id = ?", flight
    )[0]
    booked = {
        s
        for (s,) in rows(
            session,
            "SELECT seat FROM flight_bookings WHERE flight_id = ? AND status = 'confirmed'",
            flight,
        )
    }
    return next(
        s for s in seat_map(aircraft, cabin) if s not in set(occupied.split()) | booked | {avoid}
    )


def new_itinerary(session: Session, traveller: str) -> str:
    return call_ok(session, "create_itinerary", {"traveller_id": traveller, "name": "Test trip"})[
        "itinerary_id"
    ]


def book(session: Session, fare_class: str = "standard", cabin: str = "economy") -> dict[str, Any]:
    traveller = good_traveller(session)
    itin = new_itinerary(session, traveller)
    flight, seat = open_flight(session, cabin=cabin)
    return call_ok(
        session,
        "book_flight",
        {
            "itinerary_id": itin,
            "traveller_id": traveller,
            "flight_id": flight,
            "cabin": cabin,
            "fare_class": fare_class,
            "seat": seat,
        },
    )


def sibling_flight(session: Session, flight: str, cabin: str) -> str:
    """Another open flight of the same route offering ``cabin``."""
    for fid, aircraft in rows(
        session,
        """SELECT g.id, g.aircraft FROM flights f JOIN flights g ON g.origin = f.origin
             AND g.destination = f.destination AND g.id != f.id
           WHERE f.id = ? AND g.departs_at >= datetime(?, '+1 day')
           ORDER BY g.departs_at, g.id""",
        flight,
        now(session),
    ):
        if cabin in LAYOUTS[aircraft]:
            try:
                free_seat(session, fid, cabin)
            except StopIteration:
                continue
            return fid
    raise AssertionError("no sibling flight")


def fare_total(session: Session, flight: str, cabin: str, fare_class: str) -> Decimal:
    base, taxes = rows(
        session,
        "SELECT base, taxes FROM fares WHERE flight_id = ? AND cabin = ? AND fare_class = ?",
        flight,
        cabin,
        fare_class,
    )[0]
    return money(base + taxes)


# ------------------------------------------------------------ sampled states
@pytest.mark.parametrize("seed", SEEDS)
def test_a_sampled_agency_is_big_enough_and_keeps_every_rule(seed: int) -> None:
    with TRAVEL.session(seed=seed) as session:
        assert count(session, "SELECT COUNT(*) FROM flights") >= 200
        assert count(session, "SELECT COUNT(*) FROM hotels") >= 14
        assert count(session, "SELECT COUNT(*) FROM travellers") == 50
        assert count(session, "SELECT COUNT(*) FROM flight_bookings") >= 40
        assert count(session, "SELECT COUNT(*) FROM hotel_bookings") >= 5
        statuses = {s for (s,) in rows(session, "SELECT DISTINCT status FROM flight_bookings")}
        assert statuses == {"confirmed", "cancelled"}
        assert count(session, "SELECT COUNT(*) FROM transactions WHERE kind = 'refund'") > 0
        assert rule_violations(session) == []


def test_larger_sizes_scale_and_stay_consistent() -> None:
    with TRAVEL.session(seed=3, size=2) as session:
        assert count(session, "SELECT COUNT(*) FROM travellers") == 100
        assert rule_violations(session) == []


# ------------------------------------------------------------ flights
def test_booking_a_flight_charges_the_fare_and_takes_the_seat(trip: Session) -> None:
    traveller = good_traveller(trip)
    itin = new_itinerary(trip, traveller)
    flight, seat = open_flight(trip)
    price = fare_total(trip, flight, "economy", "basic")
    done = call_ok(
        trip,
        "book_flight",
        {
            "itinerary_id": itin,
            "traveller_id": traveller,
            "flight_id": flight,
            "cabin": "economy",
            "fare_class": "basic",
            "seat": seat.lower(),
        },
    )
    assert done["seat"] == seat and Decimal(done["amount_paid"]) == price
    assert Decimal(done["itinerary_total_paid"]) == price
    seats = call_ok(trip, "get_seat_map", {"flight_id": flight, "cabin": "economy"})
    assert seat not in seats["available"]
    other = one(
        trip,
        "SELECT id FROM travellers WHERE id != ? AND passport_expiry >= "
        "date(?, '+400 days') ORDER BY id",
        traveller,
        now(trip),
    )
    message = refused(
        trip,
        "book_flight",
        {
            "itinerary_id": itin,
            "traveller_id": other,
            "flight_id": flight,
            "cabin": "economy",
            "fare_class": "basic",
            "seat": seat,
        },
        ErrorKind.CONFLICT,
        "Rule 'seat_taken'",
    )
    assert "Free economy seats include" in message
    refused(
        trip,
        "book_flight",
        {
            "itinerary_id": itin,
            "traveller_id": traveller,
            "flight_id": flight,
            "cabin": "economy",
            "fare_class": "basic",
            "seat": free_seat(trip, flight, "economy"),
        },
        ErrorKind.CONFLICT,
        "Rule 'already_on_flight'",
    )
    assert rule_violations(trip) == []


def test_a_seat_sold_to_another_passenger_cannot_be_booked(trip: Session) -> None:
    flight, aircraft, occupied = next(
        r
        for r in rows(
            trip,
            "SELECT id, aircraft, occupied FROM flights WHERE departs_at >= "
            "datetime(?, '+2 days') ORDER BY id",
            now(trip),
        )
        if set(r[2].split()) & set(seat_map(r[1], "economy")) and free_seat(trip, r[0], "economy")
    )
    taken = next(s for s in seat_map(aircraft, "economy") if s in occupied.split())
    traveller = good_traveller(trip)
    refused(
        trip,
        "book_flight",
        {
            "itinerary_id": new_itinerary(trip, traveller),
            "traveller_id": traveller,
            "flight_id": flight,
            "cabin": "economy",
            "fare_class": "standard",
            "seat": taken,
        },
        ErrorKind.CONFLICT,
        "Rule 'seat_taken'",
    )


def test_seats_fares_and_cabins_must_fit_the_aircraft(trip: Session) -> None:
    traveller = good_traveller(trip)
    itin = new_itinerary(trip, traveller)
    flight, seat = open_flight(trip, cabin="business")
    base = {"itinerary_id": itin, "traveller_id": traveller, "flight_id": flight}
    refused(
        trip,
        "book_flight",
        {**base, "cabin": "business", "fare_class": "basic", "seat": seat},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'fare_not_offered'",
    )
    refused(
        trip,
        "book_flight",
        {**base, "cabin": "economy", "fare_class": "standard", "seat": seat},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'seat_not_in_cabin'",
    )
    small = one(
        trip,
        "SELECT id FROM flights WHERE aircraft = 'E190' AND departs_at >= "
        "datetime(?, '+1 day') ORDER BY id",
        now(trip),
    )
    refused(
        trip,
        "book_flight",
        {
            **base,
            "flight_id": small,
            "cabin": "premium_economy",
            "fare_class": "flex",
            "seat": "5A",
        },
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'fare_not_offered'",
    )


def test_a_sold_out_cabin_refuses_bookings(trip: Session) -> None:
    fid = ""
    for fid, aircraft, occupied in rows(  # noqa: B007
        trip,
        "SELECT id, aircraft, occupied FROM flights WHERE departs_at >= "
        "datetime(?, '+1 day') ORDER BY id",
        now(trip),
    ):
        full = [c for c in LAYOUTS[aircraft] if set(seat_map(aircraft, c)) <= set(occupied.split())]
        if full:
            break
    else:
        pytest.skip("no sold-out cabin in this state")
    traveller = good_traveller(trip)
    cabin = full[0]
    refused(
        trip,
        "book_flight",
        {
            "itinerary_id": new_itinerary(trip, traveller),
            "traveller_id": traveller,
            "flight_id": fid,
            "cabin": cabin,
            "fare_class": "flex",
            "seat": seat_map(aircraft, cabin)[0],
        },
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'cabin_full'",
    )


def test_an_international_flight_needs_six_months_of_passport(trip: Session) -> None:
    traveller = one(
        trip,
        """SELECT id FROM travellers WHERE passport_expiry > date(?, '+40 days')
           AND passport_expiry < date(?, '+170 days') ORDER BY id""",
        now(trip),
        now(trip),
    )
    itin = new_itinerary(trip, traveller)
    flight, seat = next(
        (f, free_seat(trip, f, "economy"))
        for (f,) in rows(
            trip,
            """SELECT id FROM flights WHERE departs_at >= datetime(?, '+1 day')
               AND substr(origin, 1, 0) = '' ORDER BY id""",
            now(trip),
        )
        if TRAVEL_INTL(trip, f)
    )
    args = {
        "itinerary_id": itin,
        "traveller_id": traveller,
        "flight_id": flight,
        "cabin": "economy",
        "fare_class": "standard",
        "seat": seat,
    }
    message = refused(trip, "book_flight", args, ErrorKind.PRECONDITION_FAILED, "passport_validity")
    assert "renewed passport" in message
    expiry = (trip.now.date() + dt.timedelta(days=3000)).isoformat()
    call_ok(
        trip,
        "update_passport",
        {"traveller_id": traveller, "passport_number": "XK1234567", "passport_expiry": expiry},
    )
    call_ok(trip, "book_flight", args)


def TRAVEL_INTL(session: Session, flight: str) -> bool:
    from prove_plugins.travel_booking.models import is_international

    origin, destination = rows(
        session, "SELECT origin, destination FROM flights WHERE id = ?", flight
    )[0]
    return is_international(origin, destination)


def test_bookings_close_two_hours_before_departure(trip: Session) -> None:
    soon = one(
        trip,
        """SELECT id FROM flights WHERE departs_at > datetime(?, '-3 days')
           AND departs_at < datetime(?, '+2 hours') ORDER BY departs_at DESC, id""",
        now(trip),
        now(trip),
    )
    traveller = good_traveller(trip)
    refused(
        trip,
        "book_flight",
        {
            "itinerary_id": new_itinerary(trip, traveller),
            "traveller_id": traveller,
            "flight_id": soon,
            "cabin": "economy",
            "fare_class": "flex",
            "seat": "10A",
        },
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'departure_cutoff'",
    )
    departed = one(
        trip,
        """SELECT b.id FROM flight_bookings b JOIN flights f ON f.id = b.flight_id
           WHERE b.status = 'confirmed' AND f.departs_at < ? ORDER BY b.id""",
        now(trip),
    )
    refused(
        trip,
        "cancel_flight_booking",
        {"flight_booking_id": departed},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'departure_cutoff'",
    )


# ------------------------------------------------------------ changes and refunds
@pytest.mark.parametrize("fare_class", ["standard", "flex"])
def test_a_change_charges_the_fee_and_difference_by_the_fare_rule(
    trip: Session, fare_class: str
) -> None:
    booked = book(trip, fare_class)
    bid, old = booked["flight_booking_id"], booked["flight_id"]
    new = sibling_flight(trip, old, "economy")
    old_total = Decimal(booked["fare_total"])
    new_total = fare_total(trip, new, "economy", fare_class)
    fee, extra, residual = change_cost(fare_class, "economy", old_total, new_total)
    assert fee == (CHANGE_FEES["economy"] if fare_class == "standard" else 0)
    quote = call_ok(trip, "quote_flight_change", {"flight_booking_id": bid, "new_flight_id": new})
    assert Decimal(quote["amount_due"]) == fee + extra
    assert Decimal(quote["residual_refund"]) == residual
    itin_before = money(
        count(trip, "SELECT total_paid FROM itineraries WHERE id = ?", booked["itinerary_id"])
    )
    seat = free_seat(trip, new, "economy")
    done = call_ok(
        trip,
        "change_flight",
        {"flight_booking_id": bid, "new_flight_id": new, "new_seat": seat},
    )
    assert done["flight_id"] == new and done["seat"] == seat and done["changes"] == 1
    assert Decimal(done["amount_paid"]) == old_total + fee + extra - residual
    assert Decimal(done["itinerary_total_paid"]) == itin_before + fee + extra - residual
    assert Decimal(done["fare_total"]) == new_total
    # the old seat is free again
    assert (
        count(
            trip,
            "SELECT COUNT(*) FROM flight_bookings WHERE flight_id = ? AND "
            "status = 'confirmed' AND seat = ?",
            old,
            booked["seat"],
        )
        == 0
    )
    assert rule_violations(trip) == []


def test_a_basic_fare_cannot_change_and_routes_must_match(trip: Session) -> None:
    basic = book(trip, "basic")
    new = sibling_flight(trip, basic["flight_id"], "economy")
    message = refused(
        trip,
        "change_flight",
        {"flight_booking_id": basic["flight_booking_id"], "new_flight_id": new, "new_seat": "20A"},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'fare_not_changeable'",
    )
    assert basic["taxes"] in message
    standard = call_ok(
        trip,
        "book_flight",
        {
            "itinerary_id": basic["itinerary_id"],
            "traveller_id": basic["traveller_id"],
            "flight_id": new,
            "cabin": "economy",
            "fare_class": "standard",
            "seat": free_seat(trip, new, "economy"),
        },
    )
    elsewhere = one(
        trip,
        """SELECT g.id FROM flights f JOIN flights g ON (g.origin != f.origin
             OR g.destination != f.destination)
           WHERE f.id = ? AND g.departs_at >= datetime(?, '+1 day') ORDER BY g.id""",
        new,
        now(trip),
    )
    refused(
        trip,
        "quote_flight_change",
        {"flight_booking_id": standard["flight_booking_id"], "new_flight_id": elsewhere},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'change_same_route'",
    )
    refused(
        trip,
        "change_flight",
        {
            "flight_booking_id": standard["flight_booking_id"],
            "new_flight_id": new,
            "new_seat": "20A",
        },
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'change_same_route'",
    )
    # moving onto the flight of the traveller's basic booking: already on it
    refused(
        trip,
        "change_flight",
        {
            "flight_booking_id": standard["flight_booking_id"],
            "new_flight_id": basic["flight_id"],
            "new_seat": free_seat(trip, basic["flight_id"], "economy"),
        },
        ErrorKind.CONFLICT,
        "Rule 'already_on_flight'",
    )


@pytest.mark.parametrize("fare_class", ["basic", "standard", "flex"])
def test_cancelling_a_ticket_refunds_by_fare_class_and_frees_the_seat(
    trip: Session, fare_class: str
) -> None:
    booked = book(trip, fare_class)
    base, taxes = Decimal(booked["base_fare"]), Decimal(booked["taxes"])
    done = call_ok(
        trip, "cancel_flight_booking", {"flight_booking_id": booked["flight_booking_id"]}
    )
    expected = base + taxes if fare_class == "flex" else taxes
    assert Decimal(done["refund"]) == expected
    assert Decimal(done["amount_paid"]) == base + taxes - expected
    seats = call_ok(trip, "get_seat_map", {"flight_id": booked["flight_id"], "cabin": "economy"})
    assert booked["seat"] in seats["available"]
    refused(
        trip,
        "cancel_flight_booking",
        {"flight_booking_id": booked["flight_booking_id"]},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'booking_cancelled'",
    )
    assert rule_violations(trip) == []


# ------------------------------------------------------------ v1: changes against a quote
@pytest.fixture
def quoted() -> Iterator[Session]:
    session = TRAVEL.session(seed=0, env_version=QUOTES)
    yield session
    session.close()


def ledger_lines(session: Session, booking: str) -> list[tuple[str, Decimal]]:
    """The ledger lines of ``booking``'s changes and refunds (not its ticket), in order."""
    return [
        (kind, money(cents))
        for kind, cents in rows(
            session,
            """SELECT kind, amount FROM transactions WHERE flight_booking_id = ?
               AND kind != 'charge' ORDER BY id""",
            booking,
        )
    ]


@pytest.mark.parametrize("fare_class", ["standard", "flex"])
def test_v1_changes_a_flight_only_against_its_quote_and_charges_exactly_it(
    quoted: Session, fare_class: str
) -> None:
    booked = book(quoted, fare_class)
    bid, old = booked["flight_booking_id"], booked["flight_id"]
    new = sibling_flight(quoted, old, "economy")
    seat = free_seat(quoted, new, "economy")
    change = {"flight_booking_id": bid, "new_flight_id": new, "new_seat": seat}
    quote = call_ok(quoted, "quote_flight_change", {"flight_booking_id": bid, "new_flight_id": new})
    assert quote["expires_at"] == (quoted.now + dt.timedelta(minutes=30)).isoformat(
        timespec="minutes"
    )
    ref = quote["quote_id"]
    assert ref.startswith(f"fq_{bid[3:]}_{new[3:]}_0_")
    # the same quote asked again is the same reference (a read changes nothing)
    again = call_ok(quoted, "quote_flight_change", {"flight_booking_id": bid, "new_flight_id": new})
    assert again["quote_id"] == ref
    refused(quoted, "change_flight", change, ErrorKind.PRECONDITION_FAILED, "'quote_required'")
    refused(
        quoted,
        "change_flight",
        {**change, "quote_id": "  "},
        ErrorKind.PRECONDITION_FAILED,
        "'quote_required'",
    )
    for junk in ["Q-1", ref.replace("fq_", "fx_"), ref[:-1] + ("0" if ref[-1] != "0" else "1")]:
        refused(
            quoted,
            "change_flight",
            {**change, "quote_id": junk},
            ErrorKind.PRECONDITION_FAILED,
            "'quote_unknown'",
        )
    # another booking's quote: a second traveller's booking of the same flight
    other = call_ok(
        quoted,
        "book_flight",
        {
            "itinerary_id": booked["itinerary_id"],
            "traveller_id": one(
                quoted,
                """SELECT id FROM travellers WHERE passport_expiry >= date(?, '+400 days')
                   AND id != ? ORDER BY id""",
                now(quoted),
                booked["traveller_id"],
            ),
            "flight_id": old,
            "cabin": "economy",
            "fare_class": fare_class,
            "seat": free_seat(quoted, old, "economy"),
        },
    )
    theirs = call_ok(
        quoted,
        "quote_flight_change",
        {"flight_booking_id": other["flight_booking_id"], "new_flight_id": new},
    )["quote_id"]
    refused(
        quoted,
        "change_flight",
        {**change, "quote_id": theirs},
        ErrorKind.PRECONDITION_FAILED,
        "'quote_other_booking'",
    )
    # a quote for another flight of the route
    third = next(
        f
        for (f,) in rows(
            quoted,
            """SELECT g.id FROM flights f JOIN flights g ON g.origin = f.origin
                 AND g.destination = f.destination AND g.id NOT IN (f.id, ?)
               WHERE f.id = ? AND g.departs_at >= datetime(?, '+1 day') ORDER BY g.id""",
            new,
            old,
            now(quoted),
        )
        if quoted.call("quote_flight_change", {"flight_booking_id": bid, "new_flight_id": f}).ok
    )
    elsewhere = call_ok(
        quoted, "quote_flight_change", {"flight_booking_id": bid, "new_flight_id": third}
    )["quote_id"]
    refused(
        quoted,
        "change_flight",
        {**change, "quote_id": elsewhere},
        ErrorKind.PRECONDITION_FAILED,
        "'quote_other_flight'",
    )
    # a quote made 31 minutes ago, at the same price: expired in the server's clock
    amounts = tuple(
        Decimal(quote[k]) for k in ("change_fee", "fare_difference_due", "residual_refund")
    )
    stale = quote_ref(0, bid, new, 0, quoted.now - dt.timedelta(minutes=1), amounts)
    refused(
        quoted,
        "change_flight",
        {**change, "quote_id": stale},
        ErrorKind.PRECONDITION_FAILED,
        "'quote_expired'",
    )
    # with its quote: exactly the quoted amounts move, as ledger lines and totals
    paid_before = money(count(quoted, "SELECT amount_paid FROM flight_bookings WHERE id = ?", bid))
    done = call_ok(quoted, "change_flight", {**change, "quote_id": f"  {ref} "})
    fee, extra, residual = amounts
    assert (
        Decimal(done["change_fee_charged"]),
        Decimal(done["fare_difference_charged"]),
        Decimal(done["residual_refunded"]),
    ) == amounts
    assert Decimal(done["amount_paid"]) == paid_before + Decimal(quote["amount_due"]) - residual
    expected = [("change_fee", fee), ("fare_difference", extra), ("refund", residual)]
    assert ledger_lines(quoted, bid) == [(k, a) for k, a in expected if a > 0]
    # used up: the same quote again (the booking is on the new flight now)
    refused(
        quoted,
        "change_flight",
        {**change, "quote_id": ref},
        ErrorKind.PRECONDITION_FAILED,
        "'quote_used'",
    )
    assert rule_violations(quoted) == []


@pytest.mark.parametrize("fare_class", ["basic", "standard", "flex"])
def test_v1_cancels_a_ticket_only_against_its_quote_and_refunds_exactly_it(
    quoted: Session, fare_class: str
) -> None:
    booked = book(quoted, fare_class)
    bid = booked["flight_booking_id"]
    cancel = {"flight_booking_id": bid}
    quote = call_ok(quoted, "quote_flight_cancellation", cancel)
    base, taxes = Decimal(booked["base_fare"]), Decimal(booked["taxes"])
    refund = base + taxes if fare_class == "flex" else taxes
    assert Decimal(quote["refund"]) == refund
    ref = quote["quote_id"]
    assert ref.startswith(f"cq_{bid[3:]}_0_")
    refused(
        quoted, "cancel_flight_booking", cancel, ErrorKind.PRECONDITION_FAILED, "'quote_required'"
    )
    other = call_ok(
        quoted,
        "quote_flight_cancellation",
        {
            "flight_booking_id": one(
                quoted,
                "SELECT id FROM flight_bookings WHERE status = 'confirmed' AND id != ? AND "
                "flight_id IN (SELECT id FROM flights WHERE departs_at >= datetime(?, '+1 day')) "
                "ORDER BY id",
                bid,
                now(quoted),
            )
        },
    )["quote_id"]
    stale = quote_ref(0, bid, None, 0, quoted.now - dt.timedelta(minutes=1), (refund,))
    for wrong, named in [
        (other, "'quote_other_booking'"),
        (stale, "'quote_expired'"),
        (ref[:-1] + ("0" if ref[-1] != "0" else "1"), "'quote_unknown'"),
        (quote_ref(0, bid, booked["flight_id"], 0, quoted.now, (refund,)), "'quote_unknown'"),
    ]:
        refused(
            quoted,
            "cancel_flight_booking",
            {**cancel, "quote_id": wrong},
            ErrorKind.PRECONDITION_FAILED,
            named,
        )
    done = call_ok(quoted, "cancel_flight_booking", {**cancel, "quote_id": ref})
    assert Decimal(done["refund"]) == refund and done["status"] == "cancelled"
    assert ledger_lines(quoted, bid) == ([("refund", refund)] if refund > 0 else [])
    refused(
        quoted,
        "cancel_flight_booking",
        {**cancel, "quote_id": ref},
        ErrorKind.PRECONDITION_FAILED,
        "'quote_used'",
    )
    assert rule_violations(quoted) == []


def test_v1_a_change_outdates_the_bookings_earlier_quotes(quoted: Session) -> None:
    booked = book(quoted, "flex")
    bid, old = booked["flight_booking_id"], booked["flight_id"]
    new = sibling_flight(quoted, old, "economy")
    cancel_ref = call_ok(quoted, "quote_flight_cancellation", {"flight_booking_id": bid})
    change_ref = call_ok(
        quoted, "quote_flight_change", {"flight_booking_id": bid, "new_flight_id": new}
    )
    call_ok(
        quoted,
        "change_flight",
        {
            "flight_booking_id": bid,
            "new_flight_id": new,
            "new_seat": free_seat(quoted, new, "economy"),
            "quote_id": change_ref["quote_id"],
        },
    )
    refused(
        quoted,
        "cancel_flight_booking",
        {"flight_booking_id": bid, "quote_id": cancel_ref["quote_id"]},
        ErrorKind.PRECONDITION_FAILED,
        "'quote_used'",
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(junk=st.text(max_size=64))
def test_v1_a_change_with_any_other_text_as_its_quote_is_refused_unchanged(junk: str) -> None:
    with TRAVEL.session(seed=0, env_version=QUOTES) as session:
        record = next(r for r in session.list_entities("flight_booking") if r.get("new_flight_id"))
        change = {k: record[k] for k in ("flight_booking_id", "new_flight_id", "new_seat")}
        before = session.state_hash()
        result = session.call("change_flight", {**change, "quote_id": junk})
        assert result.error_kind == ErrorKind.PRECONDITION_FAILED, result.message
        assert re.search(
            r"Rule 'quote_(required|unknown|other_booking|other_flight)'", str(result.message)
        )
        assert session.state_hash() == before


def test_v0_keeps_its_change_flight_cancellation_and_quote_without_references(
    trip: Session,
) -> None:
    """-v0 plays the first definitions: no quote_id parameter, no reference in a quote."""
    record = next(r for r in trip.list_entities("flight_booking") if r.get("new_flight_id"))
    quote = call_ok(
        trip,
        "quote_flight_change",
        {k: record[k] for k in ("flight_booking_id", "new_flight_id")},
    )
    assert "quote_id" not in quote and "expires_at" not in quote
    v0 = TRAVEL.tools_for(0)["change_flight"]
    assert "quote_id" not in v0.input_schema()["properties"]
    assert "quote_id" in TRAVEL.tools_for(QUOTES)["change_flight"].input_schema()["properties"]
    assert (
        "quote_id" not in TRAVEL.tools_for(0)["cancel_flight_booking"].input_schema()["properties"]
    )
    assert "quote_flight_cancellation" not in TRAVEL.tools
    assert (
        trip.call(
            "quote_flight_cancellation", {"flight_booking_id": record["flight_booking_id"]}
        ).error_kind
        == ErrorKind.UNKNOWN_TOOL
    )
    call_ok(
        trip,
        "change_flight",
        {k: record[k] for k in ("flight_booking_id", "new_flight_id", "new_seat")},
    )


def test_change_seat_stays_in_the_cabin(trip: Session) -> None:
    booked = book(trip, "basic")
    bid, flight = booked["flight_booking_id"], booked["flight_id"]
    seat = free_seat(trip, flight, "economy", avoid=booked["seat"])
    assert call_ok(trip, "change_seat", {"flight_booking_id": bid, "seat": seat})["seat"] == seat
    aircraft = one(trip, "SELECT aircraft FROM flights WHERE id = ?", flight)
    front = seat_map(aircraft, "business")[0]
    refused(
        trip,
        "change_seat",
        {"flight_booking_id": bid, "seat": front},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'seat_not_in_cabin'",
    )


# ------------------------------------------------------------ hotels
def free_room(session: Session, days_ahead: int = 10, nights: int = 3) -> tuple[str, str, str]:
    start = session.now.date() + dt.timedelta(days=days_ahead)
    end = start + dt.timedelta(days=nights)
    room = one(
        session,
        """SELECT r.id FROM rooms r JOIN room_types t ON t.id = r.room_type_id
           WHERE t.max_guests >= 2 AND NOT EXISTS (SELECT 1 FROM room_nights n
             WHERE n.room_id = r.id AND n.night >= ? AND n.night < ?) ORDER BY r.id""",
        start.isoformat(),
        end.isoformat(),
    )
    return room, start.isoformat(), end.isoformat()


@given(
    days=st.integers(min_value=3, max_value=25),
    nights=st.integers(min_value=1, max_value=5),
    plan=st.sampled_from(["flexible", "non_refundable"]),
)
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_hotel_stay_costs_the_sum_of_its_nights(days: int, nights: int, plan: str) -> None:
    with TRAVEL.session(seed=0) as session:
        room, start, end = free_room(session, days, nights)
        itin = new_itinerary(session, good_traveller(session))
        done = call_ok(
            session,
            "book_hotel",
            {
                "itinerary_id": itin,
                "room_id": room,
                "check_in": start,
                "check_out": end,
                "guests": 2,
                "rate_plan": plan,
            },
        )
        rt = one(session, "SELECT room_type_id FROM rooms WHERE id = ?", room)
        rates = [
            money(r)
            for (r,) in rows(
                session,
                "SELECT rate FROM room_rates WHERE room_type_id = ? AND night >= ? AND night < ? "
                "ORDER BY night",
                rt,
                start,
                end,
            )
        ]
        assert len(rates) == nights
        assert Decimal(done["total"]) == sum((night_price(r, plan) for r in rates), Decimal(0))
        assert (
            count(
                session,
                "SELECT COUNT(*) FROM room_nights WHERE hotel_booking_id = ?",
                done["hotel_booking_id"],
            )
            == nights
        )
        refused(
            session,
            "book_hotel",
            {
                "itinerary_id": itin,
                "room_id": room,
                "check_in": start,
                "check_out": end,
                "guests": 1,
                "rate_plan": "flexible",
            },
            ErrorKind.CONFLICT,
            "Rule 'room_unavailable'",
        )
        assert rule_violations(session) == []


def test_hotel_rules_capacity_sale_window_and_dates(trip: Session) -> None:
    itin = new_itinerary(trip, good_traveller(trip))
    single = one(
        trip,
        "SELECT r.id FROM rooms r JOIN room_types t ON t.id = r.room_type_id "
        "WHERE t.max_guests = 1 ORDER BY r.id",
    )
    start = (trip.now.date() + dt.timedelta(days=5)).isoformat()
    end = (trip.now.date() + dt.timedelta(days=6)).isoformat()
    base = {"itinerary_id": itin, "room_id": single, "rate_plan": "flexible"}
    refused(
        trip,
        "book_hotel",
        {**base, "check_in": start, "check_out": end, "guests": 2},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'room_capacity'",
    )
    far = (trip.now.date() + dt.timedelta(days=45)).isoformat()
    farther = (trip.now.date() + dt.timedelta(days=47)).isoformat()
    refused(
        trip,
        "book_hotel",
        {**base, "check_in": far, "check_out": farther, "guests": 1},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'dates_not_on_sale'",
    )
    refused(
        trip,
        "book_hotel",
        {**base, "check_in": end, "check_out": start, "guests": 1},
        ErrorKind.BAD_ARGUMENTS,
        "nights after check_in",
    )


@pytest.mark.parametrize(
    ("plan", "days_ahead", "share"),
    [("flexible", 10, "all"), ("flexible", 1, "all_but_first"), ("non_refundable", 10, "none")],
)
def test_hotel_cancellation_refunds_by_rate_plan(
    trip: Session, plan: str, days_ahead: int, share: str
) -> None:
    room, start, end = free_room(trip, days_ahead, 3)
    itin = new_itinerary(trip, good_traveller(trip))
    done = call_ok(
        trip,
        "book_hotel",
        {
            "itinerary_id": itin,
            "room_id": room,
            "check_in": start,
            "check_out": end,
            "guests": 1,
            "rate_plan": plan,
        },
    )
    total = Decimal(done["total"])
    first = Decimal(done["nightly_prices"][0]["rate"])
    cancelled = call_ok(
        trip, "cancel_hotel_booking", {"hotel_booking_id": done["hotel_booking_id"]}
    )
    expected = {"all": total, "all_but_first": total - first, "none": Decimal(0)}[share]
    assert Decimal(cancelled["refund"]) == expected
    assert expected == hotel_refund(plan, total, first, dt.date.fromisoformat(start), trip.now)
    assert (
        count(
            trip,
            "SELECT COUNT(*) FROM room_nights WHERE hotel_booking_id = ?",
            done["hotel_booking_id"],
        )
        == 0
    )
    assert rule_violations(trip) == []


def test_a_started_stay_cannot_be_cancelled(trip: Session) -> None:
    started = one(
        trip,
        """SELECT id FROM hotel_bookings WHERE status = 'confirmed'
           AND datetime(check_in, '+15 hours') <= ? ORDER BY id""",
        now(trip),
    )
    refused(
        trip,
        "cancel_hotel_booking",
        {"hotel_booking_id": started},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'stay_started'",
    )


# ------------------------------------------------------------ itineraries and travellers
def test_cancelling_an_itinerary_refunds_each_booking_by_its_rules(trip: Session) -> None:
    booked = book(trip, "standard")
    itin = booked["itinerary_id"]
    room, start, end = free_room(trip, 12, 2)
    hotel = call_ok(
        trip,
        "book_hotel",
        {
            "itinerary_id": itin,
            "room_id": room,
            "check_in": start,
            "check_out": end,
            "guests": 1,
            "rate_plan": "flexible",
        },
    )
    expected = Decimal(booked["taxes"]) + Decimal(hotel["total"])
    detail = call_ok(trip, "get_itinerary", {"itinerary_id": itin})
    assert Decimal(detail["refund_if_cancelled"]) == expected
    done = call_ok(trip, "cancel_itinerary", {"itinerary_id": itin})
    assert Decimal(done["refund_total"]) == expected and len(done["cancelled"]) == 2
    assert Decimal(done["total_paid"]) == Decimal(booked["base_fare"])
    refused(
        trip,
        "book_hotel",
        {
            "itinerary_id": itin,
            "room_id": room,
            "check_in": start,
            "check_out": end,
            "guests": 1,
            "rate_plan": "flexible",
        },
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'itinerary_cancelled'",
    )
    assert rule_violations(trip) == []


def test_an_itinerary_with_travel_under_way_is_not_cancelled_as_a_whole(trip: Session) -> None:
    itin = one(
        trip,
        """SELECT b.itinerary_id FROM flight_bookings b JOIN flights f ON f.id = b.flight_id
           JOIN itineraries i ON i.id = b.itinerary_id
           WHERE b.status = 'confirmed' AND i.status = 'active' AND f.departs_at < ?
           ORDER BY b.itinerary_id""",
        now(trip),
    )
    refused(
        trip,
        "cancel_itinerary",
        {"itinerary_id": itin},
        ErrorKind.PRECONDITION_FAILED,
        "Rule 'travel_started'",
    )


def test_travellers_emails_and_loyalty_numbers_are_unique(trip: Session) -> None:
    email = one(trip, "SELECT email FROM travellers ORDER BY id")
    args = {
        "first_name": "Maria",
        "last_name": "Lopez",
        "email": email.upper(),
        "date_of_birth": "1985-04-12",
        "nationality": "es",
        "passport_number": "xa1234567",
        "passport_expiry": "2035-01-31",
    }
    refused(trip, "create_traveller", args, ErrorKind.CONFLICT, "Rule 'email_taken'")
    made = call_ok(trip, "create_traveller", {**args, "email": "maria.lopez@acme-corp.com"})
    assert (made["nationality"], made["passport_number"]) == ("ES", "XA1234567")
    traveller, airline = rows(
        trip, "SELECT traveller_id, airline FROM loyalty_accounts ORDER BY id"
    )[0]
    refused(
        trip,
        "add_loyalty_number",
        {"traveller_id": traveller, "airline": airline, "number": f"{airline}999999999"},
        ErrorKind.CONFLICT,
        "Rule 'loyalty_already_registered'",
    )


def test_a_new_loyalty_number_reaches_upcoming_bookings(trip: Session) -> None:
    booked = book(trip, "flex")
    airline = one(trip, "SELECT airline FROM flights WHERE id = ?", booked["flight_id"])
    traveller = booked["traveller_id"]
    if booked["loyalty_number"] is not None:
        pytest.skip("this traveller already has a number with the airline")
    done = call_ok(
        trip,
        "add_loyalty_number",
        {"traveller_id": traveller, "airline": airline, "number": f"{airline}12345678"},
    )
    assert booked["flight_booking_id"] in done["bookings_updated"]
    assert (
        one(
            trip,
            "SELECT loyalty_number FROM flight_bookings WHERE id = ?",
            booked["flight_booking_id"],
        )
        == f"{airline}12345678"
    )


# ------------------------------------------------------------ stateful
class TravelRules(RuleBasedStateMachine):
    """Plausible travel calls; the rules hold after every one, a refused call changes nothing
    and every ledger movement matches what the call reported."""

    session: Session

    @initialize(seed=st.sampled_from(SEEDS))
    def start(self, seed: int) -> None:
        self.session = TRAVEL.session(seed=seed)
        self.hash = self.session.state_hash()
        self.flights = self._ids(
            "SELECT id FROM flights WHERE departs_at >= datetime(?, "
            "'-1 day') ORDER BY id LIMIT 120",
            now(self.session),
        )
        self.travellers = self._ids("SELECT id FROM travellers ORDER BY id")

    def _ids(self, sql: str, *params: Any) -> list[str]:
        return [i for (i,) in rows(self.session, sql, *params)]

    def _total(self) -> Decimal:
        return money(count(self.session, "SELECT SUM(total_paid) FROM itineraries"))

    def _call(self, name: str, args: dict[str, Any]) -> Any:
        before = self._total()
        result = self.session.call(name, args)
        assert result.error_kind != ErrorKind.INTERNAL, result.message
        after = self.session.state_hash()
        if not result.ok or not TRAVEL.tools[name].writes:
            assert after == self.hash, f"{name}({args}) changed state: {result.message}"
        else:
            moved = self._total() - before
            c = result.content
            if name == "book_flight":
                assert moved == Decimal(c["amount_paid"])
            elif name == "book_hotel":
                assert moved == Decimal(c["total"])
            elif name in ("cancel_flight_booking", "cancel_hotel_booking"):
                assert moved == -Decimal(c["refund"])
            elif name == "cancel_itinerary":
                assert moved == -Decimal(c["refund_total"])
            elif name == "change_flight":
                delta = (
                    Decimal(c["change_fee_charged"])
                    + Decimal(c["fare_difference_charged"])
                    - Decimal(c["residual_refunded"])
                )
                assert moved == delta
            else:
                assert moved == 0
        self.hash = after
        return result

    @rule(data=st.data())
    def book_flight(self, data: st.DataObject) -> None:
        itins = self._ids("SELECT id FROM itineraries ORDER BY id DESC LIMIT 10")
        flight = data.draw(st.sampled_from(self.flights))
        aircraft = one(self.session, "SELECT aircraft FROM flights WHERE id = ?", flight)
        cabin = data.draw(st.sampled_from(["economy", "business", "premium_economy"]))
        seats = seat_map(aircraft, cabin) or ["3A"]
        self._call(
            "book_flight",
            {
                "itinerary_id": data.draw(st.sampled_from(itins)),
                "traveller_id": data.draw(st.sampled_from(self.travellers)),
                "flight_id": flight,
                "cabin": cabin,
                "fare_class": data.draw(st.sampled_from(["basic", "standard", "flex"])),
                "seat": data.draw(st.sampled_from(seats)),
            },
        )

    @rule(data=st.data())
    def change(self, data: st.DataObject) -> None:
        bookings = self._ids("SELECT id FROM flight_bookings ORDER BY id DESC LIMIT 20")
        bid = data.draw(st.sampled_from(bookings))
        flight, cabin = rows(
            self.session, "SELECT flight_id, cabin FROM flight_bookings WHERE id = ?", bid
        )[0]
        siblings = self._ids(
            "SELECT g.id FROM flights f JOIN flights g ON g.origin = f.origin AND "
            "g.destination = f.destination WHERE f.id = ? ORDER BY g.id",
            flight,
        )
        new = data.draw(st.sampled_from(siblings))
        aircraft = one(self.session, "SELECT aircraft FROM flights WHERE id = ?", new)
        seat = data.draw(st.sampled_from(seat_map(aircraft, cabin) or ["9C"]))
        if data.draw(st.booleans()):
            self._call(
                "change_flight", {"flight_booking_id": bid, "new_flight_id": new, "new_seat": seat}
            )
        else:
            self._call("change_seat", {"flight_booking_id": bid, "seat": seat})

    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        kind = data.draw(st.sampled_from(["flight", "hotel", "itinerary"]))
        table = {
            "flight": "flight_bookings",
            "hotel": "hotel_bookings",
            "itinerary": "itineraries",
        }[kind]
        ids = self._ids(f"SELECT id FROM {table} ORDER BY id DESC LIMIT 15")
        if not ids:
            return
        name, key = {
            "flight": ("cancel_flight_booking", "flight_booking_id"),
            "hotel": ("cancel_hotel_booking", "hotel_booking_id"),
            "itinerary": ("cancel_itinerary", "itinerary_id"),
        }[kind]
        self._call(name, {key: data.draw(st.sampled_from(ids))})

    @rule(
        data=st.data(), days=st.integers(-2, 50), nights=st.integers(0, 6), guests=st.integers(1, 4)
    )
    def hotel(self, data: st.DataObject, days: int, nights: int, guests: int) -> None:
        itins = self._ids("SELECT id FROM itineraries ORDER BY id DESC LIMIT 10")
        rooms = self._ids("SELECT id FROM rooms ORDER BY id LIMIT 30")
        start = self.session.now.date() + dt.timedelta(days=days)
        self._call(
            "book_hotel",
            {
                "itinerary_id": data.draw(st.sampled_from(itins)),
                "room_id": data.draw(st.sampled_from(rooms)),
                "check_in": start.isoformat(),
                "check_out": (start + dt.timedelta(days=nights)).isoformat(),
                "guests": guests,
                "rate_plan": data.draw(st.sampled_from(["flexible", "non_refundable"])),
            },
        )

    @rule(data=st.data())
    def new_trip(self, data: st.DataObject) -> None:
        self._call(
            "create_itinerary",
            {"traveller_id": data.draw(st.sampled_from(self.travellers)), "name": "Trip"},
        )

    @invariant()
    def the_travel_rules_hold(self) -> None:
        if hasattr(self, "session"):
            assert rule_violations(self.session) == []

    def teardown(self) -> None:
        if hasattr(self, "session"):
            self.session.close()


TestTravelRules = TravelRules.TestCase
TestTravelRules.settings = settings(
    max_examples=8,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# ------------------------------------------------------------ conformance
FUZZ_SAMPLES = [
    "fl_0001",
    "fl_9999",
    "trv_0001",
    "trv_9999",
    "itn_0001",
    "itn_9999",
    "fb_00001",
    "fb_99999",
    "htl_001",
    "rm_0001",
    "hb_00001",
    "LIS",
    "Paris",
    "XXX",
    "12A",
    "99Z",
    "economy",
    "business",
    "flex",
    "basic",
    "non_refundable",
    "TP123456789",
    "2026-05-14",
    "1999-02-30",
    "9999-12-31",
    "maria.lopez@acme-corp.com",
]

TestConformance = conformance_suite(
    "travel_booking", samples=FUZZ_SAMPLES, invariants=rule_violations
)


# ------------------------------------------------------------ declarations
def test_entity_sources_list_entities_that_exist(trip: Session) -> None:
    tables = {
        "flight": "flights",
        "traveller": "travellers",
        "itinerary": "itineraries",
        "flight_booking": "flight_bookings",
        "hotel": "hotels",
        "room": "rooms",
        "hotel_booking": "hotel_bookings",
    }
    assert set(TRAVEL.entities) == set(tables)
    for kind, source in TRAVEL.entities.items():
        records = trip.list_entities(kind)
        assert records, kind
        ids = {i for (i,) in rows(trip, f"SELECT id FROM {tables[kind]}")}
        assert {r[source.key] for r in records} <= ids, kind


def test_entity_records_ground_calls_that_succeed(trip: Session) -> None:
    """The values an entity record offers (a seat, a stay, a change option) are accepted."""
    flight = trip.list_entities("flight")[0]
    itin = trip.list_entities("itinerary")[0]
    call_ok(
        trip,
        "book_flight",
        {
            "itinerary_id": itin["itinerary_id"],
            "traveller_id": itin["traveller_id"],
            **{k: flight[k] for k in ("flight_id", "cabin", "fare_class", "seat")},
        },
    )
    room = trip.list_entities("room")[0]
    call_ok(
        trip,
        "book_hotel",
        {
            "itinerary_id": itin["itinerary_id"],
            "rate_plan": "flexible",
            **{k: room[k] for k in ("room_id", "check_in", "check_out", "guests")},
        },
    )
    movable = [r for r in trip.list_entities("flight_booking") if r.get("new_flight_id")]
    assert movable
    call_ok(
        trip,
        "change_flight",
        {k: movable[0][k] for k in ("flight_booking_id", "new_flight_id", "new_seat")},
    )
    traveller = trip.list_entities("traveller")[0]
    call_ok(
        trip, "add_loyalty_number", {k: traveller[k] for k in ("traveller_id", "airline", "number")}
    )
    assert rule_violations(trip) == []


def test_example_values_fit_their_parameters(trip: Session) -> None:
    ctx = trip.context()
    rng = random.Random(0)
    for tool in TRAVEL.visible_tools():
        fields = tool.args_model.model_fields
        for name, source in tool.examples.items():
            drawn = [source(ctx, rng) for _ in range(5)] if callable(source) else list(source)
            annotation = fields[name].annotation
            assert annotation is not None, (tool.name, name)
            for value in drawn:
                TypeAdapter(annotation).validate_python(value)


def test_the_server_offers_twenty_tools() -> None:
    assert len(TRAVEL.visible_tools()) == 20
    writes = {t.name for t in TRAVEL.visible_tools() if t.writes}
    assert len(writes) == 11


# ------------------------------------------------------------------- tasks
def test_hand_written_tasks_cover_chains_turns_clarify_and_abstain() -> None:
    tasks = [
        t
        for t in prove_gym.get_registry().tasks("travel_booking")
        if re.fullmatch(r"travel_booking-\d{3}", t.id)
    ]
    assert 3 <= len(tasks) <= 8
    kinds = {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "clarify"} <= kinds
    assert any(len(t.turns) > 1 and t.steps for t in tasks)
    assert any(any(s.depends_on for s in t.steps) for t in tasks)


def test_shipped_tasks_are_sorted_unique_and_many() -> None:
    tasks = prove_gym.get_registry().tasks("travel_booking")
    ids = [t.id for t in tasks]
    assert len(ids) == len(set(ids)) >= 200
    lines = TRAVEL.tasks_file.read_text().splitlines() if TRAVEL.tasks_file else []
    assert [json.loads(line)["id"] for line in lines] == sorted(ids)
