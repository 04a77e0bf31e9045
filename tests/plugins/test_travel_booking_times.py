"""prove/travel_booking-v2: local times with their UTC offsets, block times that follow from
the route, and rules that compare instants (the departure cutoff, connections, hotel
check-in), across summer-time changes; -v0 and -v1 keep their stored times."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prove_plugins.travel_booking.models import AIRPORTS, LAYOUTS
from prove_plugins.travel_booking.times import (
    AIRPORT_PLACES,
    LOCAL_TIMES,
    MIN_CONNECTION,
    UTC,
    airport_zone,
    arrival,
    block_minutes,
    departure,
    distance_km,
    show,
)
from prove_plugins.travel_booking.tools.quotes import QUOTES

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.testing.sql import one, rows

TRAVEL = prove_gym.get_server("travel_booking")
CODES = sorted(AIRPORTS)
PAIRS = [(a, b) for a, b in itertools.permutations(CODES, 2)]


@pytest.fixture
def v2() -> Iterator[Session]:
    session = TRAVEL.session(seed=0, env_version=LOCAL_TIMES)
    yield session
    session.close()


def call_ok(session: Session, name: str, args: dict[str, Any]) -> Any:
    result = session.call(name, args)
    assert result.ok, f"{name}({args}): {result.message}"
    return result.content


def refused(session: Session, name: str, args: dict[str, Any], rule: str) -> str:
    """Call, expect a precondition refusal naming ``rule`` that changes nothing."""
    before = session.state_hash()
    result = session.call(name, args)
    assert result.error_kind == ErrorKind.PRECONDITION_FAILED, (name, result.message)
    assert f"Rule '{rule}'" in (result.message or ""), result.message
    assert session.state_hash() == before, f"refused {name} changed the state"
    return result.message or ""


def aware(text: str) -> dt.datetime:
    """A result's local time with its offset ("2026-03-29T09:05+02:00"), as an instant."""
    value = dt.datetime.fromisoformat(text)
    assert value.tzinfo is not None, text
    return value


def offset_of(text: str) -> str:
    return text[-6:]


def arrange(session: Session, sql: str, *params: Any) -> None:
    """Arrange the state with one statement, committed (a refused call rolls back)."""
    session.raw_connection.execute(sql, params)
    session.raw_connection.commit()


def move(session: Session, flight: str, departs: dt.datetime) -> None:
    """Arrange the state: ``flight`` departs at local time ``departs`` (as stored)."""
    stored = departs.isoformat(sep=" ", timespec="microseconds")
    arrange(session, "UPDATE flights SET departs_at = ? WHERE id = ?", stored, flight)


def traveller_and_trip(session: Session) -> tuple[str, str]:
    """A traveller with no bookings and a passport good for any flight, and a new trip."""
    traveller = one(
        session,
        """SELECT id FROM travellers WHERE passport_expiry >= date(?, '+400 days')
           AND id NOT IN (SELECT traveller_id FROM flight_bookings) ORDER BY id""",
        session.now.isoformat(sep=" "),
    )
    trip = call_ok(session, "create_itinerary", {"traveller_id": traveller, "name": "Test trip"})
    return traveller, trip["itinerary_id"]


def economy_seat(session: Session, flight: str) -> str:
    seats = call_ok(session, "get_seat_map", {"flight_id": flight, "cabin": "economy"})
    return str(seats["available"][0])


def economy_flights(session: Session, origin: str | None = None) -> list[str]:
    """Flights with an economy cabin, by id (optionally from ``origin``)."""
    found = rows(session, "SELECT id, aircraft, origin FROM flights ORDER BY id")
    return [f for f, a, o in found if "economy" in LAYOUTS[a] and origin in (None, o)]


# ------------------------------------------------------------ block times
def test_block_time_follows_the_distance() -> None:
    # LIS-OPO is a 277 km hop, LIS-CPH 2,472 km: about an hour against nearly four
    assert distance_km("LIS", "OPO") == 277 and distance_km("LIS", "CPH") == 2472
    assert block_minutes("LIS", "OPO") == 55
    assert block_minutes("LIS", "CPH") == 225
    assert block_minutes("LHR", "EDI") == 75 and block_minutes("MAD", "BCN") == 70


def test_every_airport_has_a_zone_and_real_coordinates() -> None:
    assert set(AIRPORT_PLACES) == set(AIRPORTS)
    for code, (zone, lat, lon) in AIRPORT_PLACES.items():
        assert 35 < lat < 60 and -10 < lon < 13, code
        wanted = {"PT": "Europe/Lisbon", "GB": "Europe/London"}.get(AIRPORTS[code][1])
        assert zone == wanted if wanted else zone not in ("Europe/Lisbon", "Europe/London")


@given(st.sampled_from(PAIRS), st.sampled_from(PAIRS))
def test_block_time_is_positive_symmetric_and_monotone_in_distance(
    one_route: tuple[str, str], other: tuple[str, str]
) -> None:
    (a, b), (c, d) = one_route, other
    minutes = block_minutes(a, b)
    assert minutes > 0 and minutes % 5 == 0
    assert minutes == block_minutes(b, a)
    if distance_km(a, b) <= distance_km(c, d):
        assert minutes <= block_minutes(c, d)


@given(
    st.sampled_from(PAIRS),
    st.datetimes(min_value=dt.datetime(2026, 1, 1), max_value=dt.datetime(2027, 12, 31)),
)
def test_a_flight_lands_its_block_time_after_it_leaves(
    route: tuple[str, str], wall: dt.datetime
) -> None:
    origin, destination = route
    wall = wall.replace(second=0, microsecond=0)
    leaves, lands = departure(origin, wall), arrival(origin, destination, wall)
    assert lands - leaves == dt.timedelta(minutes=block_minutes(origin, destination))
    # what a result shows reads back as the same instants, in the airports' zones
    assert aware(show(leaves, origin)) == leaves and aware(show(lands, destination)) == lands
    shown = show(leaves, origin)
    assert dt.datetime.fromisoformat(shown).replace(tzinfo=None) in (
        wall,
        wall + dt.timedelta(hours=1),
    )


def test_v2_shows_each_flight_in_its_airports_local_times(v2: Session) -> None:
    v0 = TRAVEL.session(seed=0)
    try:
        stored: dict[tuple[str, str], set[int]] = {}
        for flight in economy_flights(v2)[:80]:
            new = call_ok(v2, "get_flight", {"flight_id": flight})
            old = call_ok(v0, "get_flight", {"flight_id": flight})
            route = (new["origin"], new["destination"])
            stored.setdefault(route, set()).add(old["duration_minutes"])
            assert new["duration_minutes"] == block_minutes(*route)
            leaves, lands = aware(new["departs_at"]), aware(new["arrives_at"])
            assert lands - leaves == dt.timedelta(minutes=new["duration_minutes"])
            # the stored departure is the origin's wall-clock time
            assert new["departs_at"][:16] == old["departs_at"]
            for shown, code in ((leaves, route[0]), (lands, route[1])):
                local = shown.astimezone(airport_zone(code))
                assert shown.utcoffset() == local.utcoffset(), (flight, code)
            assert old["departs_at"][-6] != "+"  # -v0 keeps stored times without offsets
        # before -v2 a route took a stored time that ignores its length (issue #50): some
        # longer route is quicker than a shorter one
        lengths = sorted((distance_km(*route), min(m)) for route, m in stored.items())
        assert any(a[1] > b[1] and a[0] < b[0] for a, b in itertools.combinations(lengths, 2))
    finally:
        v0.close()


# ------------------------------------------------------------ summer time
def test_offsets_across_the_change_to_and_from_summer_time() -> None:
    # Paris goes from +01:00 to +02:00 at 01:00 UTC on 29 March 2026
    assert show(departure("CDG", dt.datetime(2026, 3, 28, 9, 5)), "CDG") == "2026-03-28T09:05+01:00"
    assert show(departure("CDG", dt.datetime(2026, 3, 29, 9, 5)), "CDG") == "2026-03-29T09:05+02:00"
    # a stored 02:30 that morning never happens: it moves forward by the gap
    skipped = departure("CDG", dt.datetime(2026, 3, 29, 2, 30))
    assert skipped == dt.datetime(2026, 3, 29, 1, 30, tzinfo=UTC)
    assert show(skipped, "CDG") == "2026-03-29T03:30+02:00"
    # London's 01:30 on 25 October 2026 happens twice: the first one, still summer time
    repeated = departure("LHR", dt.datetime(2026, 10, 25, 1, 30))
    assert repeated == dt.datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert show(repeated, "LHR") == "2026-10-25T01:30+01:00"
    # a night flight London -> Paris that lands after Paris changed its clocks: wall-clock
    # arithmetic would say 01:45, an hour that does not exist there
    wall = dt.datetime(2026, 3, 29, 0, 30)
    assert block_minutes("LHR", "CDG") == 60
    assert show(departure("LHR", wall), "LHR") == "2026-03-29T00:30+00:00"
    assert show(arrival("LHR", "CDG", wall), "CDG") == "2026-03-29T03:30+02:00"


def test_v2_results_carry_the_offset_of_the_flights_date(v2: Session) -> None:
    flight = economy_flights(v2, "CDG")[0]
    for day, offset in (
        (dt.datetime(2026, 3, 28, 9, 5), "+01:00"),
        (dt.datetime(2026, 3, 29, 9, 5), "+02:00"),
    ):
        move(v2, flight, day)
        shown = call_ok(v2, "get_flight", {"flight_id": flight})
        assert shown["departs_at"] == day.isoformat(timespec="minutes") + offset
        assert aware(shown["arrives_at"]) - aware(shown["departs_at"]) == dt.timedelta(
            minutes=shown["duration_minutes"]
        )


def test_v2_searches_by_the_origins_local_date_and_lists_by_instant() -> None:
    found = {}
    for version in (QUOTES, LOCAL_TIMES):
        with TRAVEL.session(seed=0, env_version=version) as session:
            lisbon, barcelona = (
                economy_flights(session, "LIS")[0],
                economy_flights(session, "BCN")[0],
            )
            for flight in (lisbon, barcelona):
                arrange(session, "UPDATE flights SET destination = 'CPH' WHERE id = ?", flight)
            # Lisbon 10:00+00:00 leaves half an hour after Barcelona 10:30+01:00
            move(session, lisbon, dt.datetime(2027, 1, 10, 10, 0))
            move(session, barcelona, dt.datetime(2027, 1, 10, 10, 30))
            # "on" is Barcelona, Lisbon and London: three origins, two zones
            search = {"origin": "on", "destination": "CPH", "date": "2027-01-10"}
            shown = call_ok(session, "search_flights", search)["flights"]
            found[version] = [(f["flight_id"], f["departs_at"]) for f in shown]
            assert {lisbon, barcelona} <= {f for f, _ in found[version]}
            # a stored 00:30 in Paris is 23:30 UTC the day before: it flies on the 10th there
            paris = economy_flights(session, "CDG")[0]
            arrange(session, "UPDATE flights SET destination = 'CPH' WHERE id = ?", paris)
            move(session, paris, dt.datetime(2027, 1, 10, 0, 30))
            for day, listed in (("2027-01-09", False), ("2027-01-10", True)):
                search = {"origin": "Paris", "destination": "CPH", "date": day}
                flights = call_ok(session, "search_flights", search)["flights"]
                assert (paris in {f["flight_id"] for f in flights}) is listed, (version, day)
    order = {v: [f for f, _ in found[v] if f in (lisbon, barcelona)] for v in found}
    assert order[QUOTES] == [lisbon, barcelona]  # by the stored wall-clock times
    assert order[LOCAL_TIMES] == [barcelona, lisbon]  # by instant
    assert dict(found[LOCAL_TIMES])[barcelona] == "2027-01-10T10:30+01:00"


# ------------------------------------------------------------ rules between instants
def test_the_departure_cutoff_compares_instants() -> None:
    # seed 7's clock reads 2026-08-06 14:00; FCO's fl_0261 is stored at 16:10, Rome's local
    # time: 14:10 UTC, ten minutes from now. -v1 read both as one clock and sold it
    for version, open_ in ((QUOTES, True), (LOCAL_TIMES, False)):
        with TRAVEL.session(seed=7, env_version=version) as session:
            assert session.now == dt.datetime(2026, 8, 6, 14, 0)
            flight = call_ok(session, "get_flight", {"flight_id": "fl_0261"})
            assert flight["booking_open"] is open_
            traveller, trip = traveller_and_trip(session)
            args = {
                "itinerary_id": trip,
                "traveller_id": traveller,
                "flight_id": "fl_0261",
                "cabin": "economy",
                "fare_class": "flex",
                "seat": economy_seat(session, "fl_0261"),
            }
            if open_:
                call_ok(session, "book_flight", args)
                continue
            message = refused(session, "book_flight", args, "departure_cutoff")
            assert "2026-08-06T16:10+02:00" in message and "now 2026-08-06T14:00+00:00" in message


def test_a_connection_needs_45_minutes_between_instants(v2: Session) -> None:
    traveller, trip = traveller_and_trip(v2)
    first, second = economy_flights(v2, "LIS")[0], economy_flights(v2, "MAD")[0]
    # Lisbon is an hour behind Madrid: LIS 08:00+00:00 -> MAD lands 10:15+01:00 (seed 0's
    # clock reads 2026-12-23 16:00)
    assert v2.now < dt.datetime(2027, 1, 10)
    move(v2, first, dt.datetime(2027, 1, 10, 8, 0))
    arrange(v2, "UPDATE flights SET destination = 'MAD' WHERE id = ?", first)
    lands = aware(call_ok(v2, "get_flight", {"flight_id": first})["arrives_at"])
    assert lands.isoformat() == "2027-01-10T10:15:00+01:00"
    booked = {"itinerary_id": trip, "traveller_id": traveller, "cabin": "economy"}
    call_ok(
        v2,
        "book_flight",
        {**booked, "flight_id": first, "fare_class": "flex", "seat": economy_seat(v2, first)},
    )
    # 10:45 in Madrid is 30 minutes after landing (wall clocks, Lisbon's 08:00 plus 75
    # minutes, would say 90): refused
    move(v2, second, dt.datetime(2027, 1, 10, 10, 45))
    onward = {**booked, "flight_id": second, "fare_class": "flex", "seat": economy_seat(v2, second)}
    message = refused(v2, "book_flight", onward, "connection_too_short")
    assert "2027-01-10T10:15+01:00" in message and "30 minutes after landing" in message
    # 45 minutes after landing, counted in instants, is enough
    move(v2, second, lands.replace(tzinfo=None) + MIN_CONNECTION)
    call_ok(v2, "book_flight", onward)


def test_v1_books_the_same_connection_without_the_rule() -> None:
    with TRAVEL.session(seed=0, env_version=QUOTES) as session:
        traveller, trip = traveller_and_trip(session)
        first, second = economy_flights(session, "LIS")[0], economy_flights(session, "MAD")[0]
        move(session, first, dt.datetime(2027, 1, 10, 8, 0))
        move(session, second, dt.datetime(2027, 1, 10, 8, 0))  # the same minute
        for flight in (first, second):
            seat = economy_seat(session, flight)
            args = {"itinerary_id": trip, "traveller_id": traveller, "cabin": "economy"}
            call_ok(
                session,
                "book_flight",
                {**args, "flight_id": flight, "fare_class": "flex", "seat": seat},
            )


def test_a_hotel_stay_starts_at_15_00_in_its_city(v2: Session) -> None:
    booking = one(
        v2,
        """SELECT b.id FROM hotel_bookings b JOIN hotels h ON h.id = b.hotel_id
           WHERE b.status = 'confirmed' AND b.rate_plan = 'flexible' AND b.check_in > date(?)
           AND h.city NOT IN ('Lisbon', 'Porto', 'London', 'Edinburgh') ORDER BY b.id""",
        v2.now.isoformat(sep=" "),
    )
    itinerary = one(v2, "SELECT itinerary_id FROM hotel_bookings WHERE id = ?", booking)
    shown = call_ok(v2, "get_itinerary", {"itinerary_id": itinerary})
    hotel = next(h for h in shown["hotels"] if h["hotel_booking_id"] == booking)
    free_until = aware(hotel["free_cancellation_until"])
    check_in = dt.date.fromisoformat(hotel["check_in"])
    # 48 hours before 15:00 on check-in day, in the hotel's zone (CET: +01:00 or +02:00)
    assert offset_of(hotel["free_cancellation_until"]) in ("+01:00", "+02:00")
    start = free_until + dt.timedelta(hours=48)
    assert start.astimezone(free_until.tzinfo).replace(tzinfo=None) == dt.datetime.combine(
        check_in, dt.time(15, 0)
    )
    # the ledger's times are the agency's clock, in UTC
    for line in shown["ledger"]:
        assert offset_of(line["created_at"]) == "+00:00"


def test_a_hotel_stay_starts_and_its_free_cancellation_ends_in_instants() -> None:
    # seed 7's clock reads 2026-08-06 14:00 UTC: 16:00 in Rome, where 15:00 has passed
    outcomes = {}
    for version in (QUOTES, LOCAL_TIMES):
        with TRAVEL.session(seed=7, env_version=version) as session:
            assert session.now == dt.datetime(2026, 8, 6, 14, 0)
            today, later = rows(
                session,
                """SELECT b.id FROM hotel_bookings b JOIN hotels h ON h.id = b.hotel_id
                   WHERE b.status = 'confirmed' AND b.rate_plan = 'flexible'
                   AND h.city IN ('Rome', 'Milan', 'Paris', 'Madrid') ORDER BY b.id LIMIT 2""",
            )
            arrange(
                session, "UPDATE hotel_bookings SET check_in = '2026-08-06' WHERE id = ?", *today
            )
            # two days ahead: free cancellation ends at 15:00 local today, 13:00 UTC
            arrange(
                session, "UPDATE hotel_bookings SET check_in = '2026-08-08' WHERE id = ?", *later
            )
            started = session.call("cancel_hotel_booking", {"hotel_booking_id": today[0]})
            late = call_ok(session, "cancel_hotel_booking", {"hotel_booking_id": later[0]})
            outcomes[version] = (started.ok, late["refund_rule"])
            if not started.ok:
                assert "Rule 'stay_started'" in (started.message or "")
    assert outcomes[QUOTES] == (
        True,
        "flexible rate cancelled 48 hours or more before check-in: refunded in full",
    )
    assert outcomes[LOCAL_TIMES] == (
        False,
        "flexible rate cancelled within 48 hours of check-in: the first night is kept",
    )


# ------------------------------------------------------------ what the model reads
def undescribed(schema: Any) -> Any:
    """A JSON schema without its descriptions."""
    if isinstance(schema, dict):
        return {k: undescribed(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [undescribed(v) for v in schema]
    return schema


def test_v2_retells_each_tool_it_reads_differently_and_v1_keeps_its_own() -> None:
    before, after = TRAVEL.tools_for(QUOTES), TRAVEL.tools_for(LOCAL_TIMES)
    retold = {name for name, t in after.items() if t.since == LOCAL_TIMES}
    assert {"search_flights", "get_flight", "book_flight", "change_flight"} <= retold
    for name in retold:
        old, new = before[name], after[name]
        assert old.since < LOCAL_TIMES and old.description != new.description
        for word in ("UTC", "instant"):
            assert word not in old.description, name
        assert "UTC" in new.description or "instants" in new.description, name
        # the same parameters and result schema: only what they say is new
        old_args, new_args = old.args_model.model_json_schema(), new.args_model.model_json_schema()
        assert undescribed(old_args) == undescribed(new_args), name
        assert old.output_schema == new.output_schema
        assert old.phrasings == new.phrasings and old.writes == new.writes
    for name in ("book_flight", "change_flight", "quote_flight_change"):
        assert "connection_too_short" in after[name].description
    version = TRAVEL.env_versions[LOCAL_TIMES]
    for text in (version.changes, version.instructions):
        assert "UTC" in text and "connection_too_short" in text and "780 km/h" in text
