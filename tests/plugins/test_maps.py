"""The maps server: routes against a brute-force reference, opening hours, geocoding, the
saved-place and list rules each on its own, random call sequences, its tasks, and the
conformance suite."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from pydantic import TypeAdapter

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.server import ToolResult
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import count, one, rows

MAPS = prove_gym.get_server("maps")
SEEDS = [0, 3, 7]
WRITES = {"save_place", "remove_saved_place", "create_list", "add_to_list"}
CAPACITY = 25
MAX_LISTS = 10


def column(session: Session, sql: str, *params: Any) -> list[Any]:
    return [r[0] for r in rows(session, sql, *params)]


def rule_violations(session: Session) -> list[str]:
    """Every broken maps rule, read straight from SQLite."""
    broken: list[str] = []

    def check(what: str, sql: str) -> None:
        found = rows(session, sql)
        if found:
            broken.append(f"{what}: {found[:5]}")

    check(
        "list positions do not run 1..n without gaps",
        """SELECT list_id FROM list_items GROUP BY list_id
           HAVING MIN(position) != 1 OR MAX(position) != COUNT(*)
               OR COUNT(DISTINCT position) != COUNT(*)""",
    )
    check(
        "a list holds another user's saved place",
        """SELECT i.list_id, i.saved_id FROM list_items i
           JOIN place_lists l ON l.id = i.list_id JOIN saved_places s ON s.id = i.saved_id
           WHERE s.user_id != l.user_id""",
    )
    check(
        "a list item points at a missing saved place or list",
        """SELECT i.list_id, i.saved_id FROM list_items i
           LEFT JOIN saved_places s ON s.id = i.saved_id
           LEFT JOIN place_lists l ON l.id = i.list_id
           WHERE s.id IS NULL OR l.id IS NULL""",
    )
    check(
        f"a list holds more than {CAPACITY} places",
        f"SELECT list_id FROM list_items GROUP BY list_id HAVING COUNT(*) > {CAPACITY}",
    )
    check(
        f"a user has more than {MAX_LISTS} lists",
        f"SELECT user_id FROM place_lists GROUP BY user_id HAVING COUNT(*) > {MAX_LISTS}",
    )
    check(
        "a user has two lists with the same name",
        """SELECT user_id, LOWER(name) FROM place_lists GROUP BY user_id, LOWER(name)
           HAVING COUNT(*) > 1""",
    )
    check(
        "a user saved one place twice",
        """SELECT user_id, place_id FROM saved_places GROUP BY user_id, place_id
           HAVING COUNT(*) > 1""",
    )
    check(
        "a saved place is permanently closed or has an unknown label",
        """SELECT s.id FROM saved_places s JOIN places p ON p.id = s.place_id
           WHERE p.status = 'permanently_closed'
              OR s.label NOT IN ('favorite', 'want_to_go', 'starred')""",
    )
    check(
        "a list item was added before its place was saved",
        """SELECT i.list_id, i.saved_id FROM list_items i
           JOIN saved_places s ON s.id = i.saved_id WHERE i.added_at < s.saved_at""",
    )
    # The map itself is fixed: the graph is consistent and every address lies on its edge.
    check(
        "an address lies outside its edge",
        """SELECT a.id FROM addresses a JOIN edges e ON e.id = a.edge_id
           WHERE a.offset_m <= 0 OR a.offset_m >= e.length_m""",
    )
    check(
        "an edge is shorter than the straight line between its junctions or has a bad speed",
        """SELECT e.id FROM edges e JOIN nodes a ON a.id = e.from_node
           JOIN nodes b ON b.id = e.to_node
           WHERE e.length_m * e.length_m + 2 * e.length_m + 1
                 < (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)
              OR e.drive_kmh < 0 OR e.walk_kmh < 0 OR e.bike_kmh < 0 OR e.transit_kmh < 0
              OR (e.drive_kmh = 0 AND e.walk_kmh = 0)""",
    )
    check(
        "opening hours are empty, reversed or longer than a day",
        """SELECT place_id, weekday, opens_min FROM opening_hours
           WHERE opens_min < 0 OR opens_min >= 1440 OR closes_min <= opens_min
              OR closes_min > opens_min + 1440 OR weekday NOT BETWEEN 0 AND 6""",
    )
    check(
        "two places share an address",
        "SELECT address_id FROM places GROUP BY address_id HAVING COUNT(*) > 1",
    )
    return broken


# ----------------------------------------------------------------- helpers
def ok(session: Session, name: str, args: dict[str, Any]) -> Any:
    result = session.call(name, args)
    assert result.ok, f"{name}({args}): {result.message}"
    return result.content


def refused(session: Session, name: str, args: dict[str, Any], rule: str) -> str:
    """The call fails naming ``rule`` and changes nothing; returns the message."""
    before = session.state_hash()
    result = session.call(name, args)
    assert result.error_kind == ErrorKind.PRECONDITION_FAILED, (name, args, result)
    assert result.message and result.message.startswith(f"Rule '{rule}' failed:"), result.message
    assert session.state_hash() == before
    return result.message


@pytest.fixture
def city() -> Any:
    with MAPS.session(seed=7) as session:
        yield session


def unsaved_place(session: Session, user: str) -> str:
    return str(
        one(
            session,
            """SELECT id FROM places WHERE status = 'operational' AND id NOT IN
               (SELECT place_id FROM saved_places WHERE user_id = ?) ORDER BY id""",
            user,
        )
    )


# ------------------------------------------------------------- routing
def reference(session: Session, mode: str, origin: str, dest: str) -> tuple[int, int] | None:
    """(seconds, metres) of the best route by Bellman-Ford over the raw tables."""

    def secs(metres: int, kmh: int) -> int:
        return -(-metres * 36 // (kmh * 10))

    edges = rows(
        session,
        """SELECT id, from_node, to_node, length_m, oneway, drive_kmh, walk_kmh, bike_kmh,
                  transit_kmh FROM edges ORDER BY id""",
    )

    def speed(e: tuple[Any, ...]) -> int:
        drive, walk, bike, transit = e[5], e[6], e[7], e[8]
        return {"drive": drive, "walk": walk, "bike": bike, "transit": transit or walk}[mode]

    by_id = {e[0]: e for e in edges}
    arcs = []
    for e in edges:
        if speed(e):
            arcs.append((e[1], e[2], secs(e[3], speed(e)), e[3]))
            if not (mode == "drive" and e[4]):
                arcs.append((e[2], e[1], secs(e[3], speed(e)), e[3]))
    (o_edge, o_off), (d_edge, d_off) = (
        rows(session, "SELECT edge_id, offset_m FROM addresses WHERE id = ?", a)[0]
        for a in (origin, dest)
    )
    oe, de = by_id[o_edge], by_id[d_edge]
    one_way = mode == "drive" and bool(oe[4])
    best: dict[str, tuple[int, int]] = {}
    if speed(oe):
        best[oe[2]] = (secs(oe[3] - o_off, speed(oe)), oe[3] - o_off)
        if not one_way:
            start = (secs(o_off, speed(oe)), o_off)
            best[oe[1]] = min(best.get(oe[1], start), start)
    for _ in range(len(by_id) + 1):
        changed = False
        for a, b, s, m in arcs:
            if a in best:
                cand = (best[a][0] + s, best[a][1] + m)
                if b not in best or cand < best[b]:
                    best[b] = cand
                    changed = True
        if not changed:
            break
    options = []
    if speed(de):
        ends = [(de[1], d_off)] + ([] if mode == "drive" and de[4] else [(de[2], de[3] - d_off)])
        for node, metres in ends:
            if node in best:
                options.append((best[node][0] + secs(metres, speed(de)), best[node][1] + metres))
        if o_edge == d_edge and (d_off >= o_off or not (mode == "drive" and de[4])):
            options.append((secs(abs(d_off - o_off), speed(de)), abs(d_off - o_off)))
    return min(options) if options else None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(SEEDS),
    mode=st.sampled_from(["drive", "walk", "bike", "transit"]),
    picks=st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)),
)
def test_routes_are_the_fastest_the_graph_allows(
    seed: int, mode: str, picks: tuple[int, int]
) -> None:
    with MAPS.session(seed=seed) as session:
        ids = column(session, "SELECT id FROM addresses ORDER BY id")
        origin, dest = ids[picks[0] % len(ids)], ids[picks[1] % len(ids)]
        if origin == dest:
            return
        args = {"origin_address_id": origin, "destination_address_id": dest, "mode": mode}
        result = session.call("get_route", args)
        expected = reference(session, mode, origin, dest)
        if expected is None:
            assert result.error_kind == ErrorKind.PRECONDITION_FAILED
            assert result.message and result.message.startswith("Rule 'no_route' failed:")
            return
        assert result.ok, result.message
        route = result.content
        assert (route["duration_s"], route["distance_m"]) == expected
        assert sum(s["distance_m"] for s in route["steps"]) == route["distance_m"]
        assert sum(s["duration_s"] for s in route["steps"]) == route["duration_s"]
        assert route["distance_m"] >= route["straight_line_m"] - 2
        assert session.call("get_route", args).content == route  # same answer every time


def test_walking_is_symmetric_and_driving_obeys_one_way_streets(city: Session) -> None:
    ids = column(city, "SELECT id FROM addresses ORDER BY id")
    rng = random.Random(1)
    for _ in range(10):
        a, b = rng.sample(ids, 2)
        there = ok(
            city, "get_route", {"origin_address_id": a, "destination_address_id": b, "mode": "walk"}
        )
        back = ok(
            city, "get_route", {"origin_address_id": b, "destination_address_id": a, "mode": "walk"}
        )
        assert there["distance_m"] == back["distance_m"]
    # two addresses on one one-way segment: driving ahead is direct, driving back goes around
    a, b = rows(
        city,
        """SELECT a.id, b.id FROM addresses a JOIN addresses b
             ON b.edge_id = a.edge_id AND b.offset_m > a.offset_m
           JOIN edges e ON e.id = a.edge_id WHERE e.oneway = 1 ORDER BY a.id, b.id""",
    )[0]
    ahead = ok(
        city, "get_route", {"origin_address_id": a, "destination_address_id": b, "mode": "drive"}
    )
    around = ok(
        city, "get_route", {"origin_address_id": b, "destination_address_id": a, "mode": "drive"}
    )
    walk_back = ok(
        city, "get_route", {"origin_address_id": b, "destination_address_id": a, "mode": "walk"}
    )
    assert ahead["distance_m"] == walk_back["distance_m"] < around["distance_m"]


def test_cars_cannot_reach_the_pedestrian_zone_but_walkers_can(city: Session) -> None:
    inside = one(
        city,
        """SELECT a.id FROM addresses a JOIN edges e ON e.id = a.edge_id
           WHERE e.drive_kmh = 0 ORDER BY a.id""",
    )
    home = one(
        city,
        """SELECT u.home_address_id FROM users u JOIN addresses a ON a.id = u.home_address_id
           JOIN edges e ON e.id = a.edge_id WHERE e.drive_kmh > 0 ORDER BY u.id""",
    )
    args = {"origin_address_id": home, "destination_address_id": inside}
    message = refused(city, "get_route", {**args, "mode": "drive"}, "no_route")
    assert "pedestrian zone" in message and "walk" in message
    assert ok(city, "get_route", {**args, "mode": "walk"})["distance_m"] > 0
    matrix = ok(
        city,
        "get_distance_matrix",
        {
            "origin_address_id": home,
            "destination_address_ids": [
                inside,
                "adr_00001" if home != "adr_00001" else "adr_00002",
            ],
            "mode": "drive",
        },
    )
    assert [d["reachable"] for d in matrix["destinations"]] == [True, False]


def test_the_distance_matrix_agrees_with_single_routes_quickest_first(city: Session) -> None:
    origin = "adr_00010"
    dests = ["adr_00300", "adr_00050", "adr_00200", "adr_00120"]
    for mode in ("bike", "transit"):
        matrix = ok(
            city,
            "get_distance_matrix",
            {"origin_address_id": origin, "destination_address_ids": dests, "mode": mode},
        )["destinations"]
        times = [d["duration_s"] for d in matrix]
        assert times == sorted(times)
        for d in matrix:
            single = ok(
                city,
                "get_route",
                {
                    "origin_address_id": origin,
                    "destination_address_id": d["address_id"],
                    "mode": mode,
                },
            )
            assert (single["duration_s"], single["distance_m"]) == (
                d["duration_s"],
                d["distance_m"],
            )
    bad = city.call(
        "get_distance_matrix",
        {"origin_address_id": origin, "destination_address_ids": [dests[0]] * 2, "mode": "walk"},
    )
    assert bad.error_kind == ErrorKind.BAD_ARGUMENTS


def test_transit_is_never_slower_than_walking(city: Session) -> None:
    ids = column(city, "SELECT id FROM addresses ORDER BY id")
    rng = random.Random(3)
    for _ in range(8):
        a, b = rng.sample(ids, 2)
        args = {"origin_address_id": a, "destination_address_id": b}
        walk = ok(city, "get_route", {**args, "mode": "walk"})
        transit = ok(city, "get_route", {**args, "mode": "transit"})
        assert transit["duration_s"] <= walk["duration_s"]


# ------------------------------------------------------------- opening hours
def test_open_now_follows_the_state_clock_and_the_weekly_hours(city: Session) -> None:
    now = city.now
    minute = now.hour * 60 + now.minute
    for place in column(city, "SELECT id FROM places ORDER BY id"):
        detail = ok(city, "get_place", {"place_id": place})
        status = one(city, "SELECT status FROM places WHERE id = ?", place)
        today = rows(
            city,
            "SELECT opens_min, closes_min FROM opening_hours WHERE place_id = ? AND weekday = ?",
            place,
            now.weekday(),
        )
        late = rows(
            city,
            """SELECT closes_min FROM opening_hours WHERE place_id = ? AND weekday = ?
               AND closes_min > 1440""",
            place,
            (now.weekday() - 1) % 7,
        )
        expected = status == "operational" and (
            any(o <= minute < c for o, c in today) or any(minute + 1440 < c for (c,) in late)
        )
        assert detail["open_now"] == expected, place
        assert detail["now"] == now.isoformat(timespec="minutes")
        same = ok(city, "check_open_at", {"place_id": place, "when": detail["now"]})
        assert same["open"] == expected
        if expected and not detail["open_24_hours"]:
            assert detail["closes_at"] > detail["now"]
        if detail["opens_at"]:
            assert not expected and detail["opens_at"] > detail["now"]


def test_bars_stay_open_past_midnight_and_closed_places_never_open(city: Session) -> None:
    bar, closes = rows(
        city,
        """SELECT h.place_id, h.closes_min FROM opening_hours h JOIN places p ON p.id = h.place_id
           WHERE h.closes_min > 1440 AND h.weekday = 4 AND p.status = 'operational'
           ORDER BY h.place_id""",
    )[0]
    friday = city.now.date() + dt.timedelta(days=(4 - city.now.weekday()) % 7)
    saturday_1am = dt.datetime.combine(friday + dt.timedelta(days=1), dt.time(1, 0))
    result = ok(city, "check_open_at", {"place_id": bar, "when": saturday_1am.isoformat()[:16]})
    assert result["open"] and result["weekday"] == "saturday"
    assert result["closes_at"] == (
        dt.datetime.combine(friday, dt.time()) + dt.timedelta(minutes=closes)
    ).isoformat(timespec="minutes")
    for place in column(city, "SELECT id FROM places WHERE status != 'operational' ORDER BY id"):
        assert not ok(city, "get_place", {"place_id": place})["open_now"]
    bad = city.call("check_open_at", {"place_id": bar, "when": "next friday"})
    assert bad.error_kind == ErrorKind.BAD_ARGUMENTS


def test_open_now_filters_search_and_nearby(city: Session) -> None:
    everything = ok(city, "search_places", {"category": "restaurant", "limit": 50})
    open_only = ok(city, "search_places", {"category": "restaurant", "open_now": True, "limit": 50})
    assert [p for p in everything if p["open_now"]] == open_only
    assert [p["name"] for p in everything] == sorted(p["name"] for p in everything)


# ------------------------------------------------------------- geocoding
def test_geocode_and_reverse_geocode_round_trip(city: Session) -> None:
    for addr, label in rows(city, "SELECT id, label FROM addresses ORDER BY id LIMIT 40"):
        found = ok(city, "geocode", {"address": label})
        assert found[0]["address_id"] == addr
        back = ok(
            city,
            "reverse_geocode",
            {"latitude": found[0]["latitude"], "longitude": found[0]["longitude"]},
        )
        assert back["address_id"] == addr and back["distance_m"] == 0
    label = one(city, "SELECT label FROM addresses WHERE label LIKE '%Avenue' ORDER BY id")
    short = label.replace("Avenue", "ave")
    assert ok(city, "geocode", {"address": short})[0]["address"] == label


def test_geocode_finds_places_by_name_and_rejects_nonsense(city: Session) -> None:
    name, addr = rows(city, "SELECT name, address_id FROM places ORDER BY id")[0]
    first = ok(city, "geocode", {"address": name})[0]
    assert first["match"] == "place" and first["address_id"] == addr
    missing = city.call("geocode", {"address": "99999 Nowhere Boulevard"})
    assert missing.error_kind == ErrorKind.NOT_FOUND
    refused(city, "reverse_geocode", {"latitude": 0, "longitude": 0}, "outside_map_area")


def test_nearby_is_within_the_radius_nearest_first(city: Session) -> None:
    center = one(city, "SELECT address_id FROM places ORDER BY id")
    found = ok(city, "search_nearby", {"address_id": center, "radius_m": 600, "limit": 50})
    gaps = [p["distance_m"] for p in found["places"]]
    assert gaps == sorted(gaps) and all(g <= 600 for g in gaps)
    assert center not in [p["address_id"] for p in found["places"]]
    cafes = ok(city, "search_nearby", {"address_id": center, "radius_m": 5000, "category": "cafe"})
    assert cafes["places"] and {p["category"] for p in cafes["places"]} == {"cafe"}


# ------------------------------------------------------------- saved places and lists
def test_a_place_is_saved_once_and_never_when_permanently_closed(city: Session) -> None:
    user = "usr_001"
    place = unsaved_place(city, user)
    saved = ok(city, "save_place", {"user_id": user, "place_id": place, "label": "starred"})
    assert saved["saved_id"].startswith("sav_") and saved["list_ids"] == []
    message = refused(
        city,
        "save_place",
        {"user_id": user, "place_id": place, "label": "favorite"},
        "already_saved",
    )
    assert saved["saved_id"] in message
    closed = one(city, "SELECT id FROM places WHERE status = 'permanently_closed' ORDER BY id")
    refused(
        city,
        "save_place",
        {"user_id": user, "place_id": closed, "label": "favorite"},
        "place_permanently_closed",
    )
    assert not rule_violations(city)


def test_search_save_add_to_list_then_route_to_it(city: Session) -> None:
    user = ok(city, "find_users", {"query": "Jessica Taylor"})[0]
    place = ok(city, "search_places", {"query": "Blue Door Café"})[0]
    saved = ok(
        city,
        "save_place",
        {"user_id": user["user_id"], "place_id": place["place_id"], "label": "favorite"},
    )
    plist = ok(city, "create_list", {"user_id": user["user_id"], "name": "Summer patios"})
    added = ok(city, "add_to_list", {"list_id": plist["list_id"], "saved_id": saved["saved_id"]})
    assert added["position"] == 1 and added["place_count"] == 1
    listing = ok(city, "get_list", {"list_id": plist["list_id"]})
    assert [p["saved_id"] for p in listing["places"]] == [saved["saved_id"]]
    mine = ok(city, "list_saved_places", {"user_id": user["user_id"]})["saved"][0]
    assert mine["saved_id"] == saved["saved_id"] and mine["list_ids"] == [plist["list_id"]]
    route = ok(
        city,
        "get_route",
        {
            "origin_address_id": user["home_address_id"],
            "destination_address_id": mine["address_id"],
            "mode": "bike",
        },
    )
    assert route["destination"] == place["address"]
    assert not rule_violations(city)


def test_lists_hold_only_their_owners_saved_places_once(city: Session) -> None:
    plist, owner = rows(city, "SELECT id, user_id FROM place_lists ORDER BY id")[0]
    other = one(city, "SELECT id FROM saved_places WHERE user_id != ? ORDER BY id", owner)
    refused(city, "add_to_list", {"list_id": plist, "saved_id": other}, "same_owner")
    inside = one(city, "SELECT saved_id FROM list_items WHERE list_id = ? ORDER BY position", plist)
    refused(city, "add_to_list", {"list_id": plist, "saved_id": inside}, "already_in_list")


def test_a_full_list_refuses_more_places(city: Session) -> None:
    user = "usr_001"
    plist = ok(city, "create_list", {"user_id": user, "name": "Everything"})["list_id"]
    places = column(
        city,
        """SELECT id FROM places WHERE status = 'operational' AND id NOT IN
           (SELECT place_id FROM saved_places WHERE user_id = ?) ORDER BY id LIMIT 26""",
        user,
    )
    for i, place in enumerate(places):
        saved = ok(city, "save_place", {"user_id": user, "place_id": place, "label": "starred"})
        if i < CAPACITY:
            ok(city, "add_to_list", {"list_id": plist, "saved_id": saved["saved_id"]})
        else:
            refused(
                city, "add_to_list", {"list_id": plist, "saved_id": saved["saved_id"]}, "list_full"
            )
    assert count(city, "SELECT COUNT(*) FROM list_items WHERE list_id = ?", plist) == CAPACITY
    assert not rule_violations(city)


def test_list_names_are_unique_per_user_and_lists_are_capped(city: Session) -> None:
    plist, owner, name = rows(city, "SELECT id, user_id, name FROM place_lists ORDER BY id")[0]
    message = refused(
        city, "create_list", {"user_id": owner, "name": f"  {name.upper()} "}, "list_name_taken"
    )
    assert plist in message
    other = one(city, "SELECT id FROM users WHERE id != ? ORDER BY id", owner)
    if not count(
        city, "SELECT COUNT(*) FROM place_lists WHERE user_id = ? AND name = ?", other, name
    ):
        ok(city, "create_list", {"user_id": other, "name": name})
    have = count(city, "SELECT COUNT(*) FROM place_lists WHERE user_id = ?", owner)
    for i in range(MAX_LISTS - have):
        ok(city, "create_list", {"user_id": owner, "name": f"Extra {i}"})
    refused(city, "create_list", {"user_id": owner, "name": "One too many"}, "too_many_lists")
    blank = city.call("create_list", {"user_id": other, "name": "   "})
    assert blank.error_kind == ErrorKind.BAD_ARGUMENTS


def test_removing_a_saved_place_takes_it_off_its_lists_and_closes_the_gap(city: Session) -> None:
    plist, saved = rows(
        city,
        """SELECT list_id, saved_id FROM list_items WHERE position = 1 AND list_id IN
           (SELECT list_id FROM list_items GROUP BY list_id HAVING COUNT(*) >= 3)
           ORDER BY list_id""",
    )[0]
    before = column(
        city, "SELECT saved_id FROM list_items WHERE list_id = ? ORDER BY position", plist
    )
    lists = column(
        city, "SELECT list_id FROM list_items WHERE saved_id = ? ORDER BY list_id", saved
    )
    removed = ok(city, "remove_saved_place", {"saved_id": saved})
    assert removed["removed_from_list_ids"] == lists
    after = ok(city, "get_list", {"list_id": plist})["places"]
    assert [p["saved_id"] for p in after] == before[1:]
    assert [p["position"] for p in after] == list(range(1, len(before)))
    assert count(city, "SELECT COUNT(*) FROM saved_places WHERE id = ?", saved) == 0
    gone = city.call("remove_saved_place", {"saved_id": saved})
    assert gone.error_kind == ErrorKind.NOT_FOUND
    assert not rule_violations(city)


# ------------------------------------------------------------ random sequences
class MapsRules(RuleBasedStateMachine):
    """Plausible saves, lists, adds and removals (valid and not); the rules hold after each."""

    session: Session

    @initialize(seed=st.sampled_from(SEEDS))
    def open_session(self, seed: int) -> None:
        self.session = MAPS.session(seed=seed)
        self.users = column(self.session, "SELECT id FROM users ORDER BY id")
        self.places = column(self.session, "SELECT id FROM places ORDER BY id")
        self.hash = self.session.state_hash()

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        result = self.session.call(name, args)
        assert result.error_kind != ErrorKind.INTERNAL, result.message
        after = self.session.state_hash()
        if not result.ok:
            assert result.message, f"{name} failed without a message"
            assert after == self.hash, f"failed {name}({args}) changed the state"
        elif name not in WRITES:
            assert after == self.hash, f"read {name} changed the state"
        self.hash = after
        return result

    @rule(data=st.data(), label=st.sampled_from(["favorite", "want_to_go", "starred"]))
    def save(self, data: st.DataObject, label: str) -> None:
        user = data.draw(st.sampled_from(self.users))
        place = data.draw(st.sampled_from(self.places))
        was = count(
            self.session,
            "SELECT COUNT(*) FROM saved_places WHERE user_id = ? AND place_id = ?",
            user,
            place,
        )
        closed = one(self.session, "SELECT status FROM places WHERE id = ?", place)
        result = self.call("save_place", {"user_id": user, "place_id": place, "label": label})
        assert result.ok == (not was and closed != "permanently_closed")

    @rule(data=st.data(), name=st.sampled_from(["Coffee spots", "Patios", "patios ", "Errands"]))
    def create(self, data: st.DataObject, name: str) -> None:
        self.call("create_list", {"user_id": data.draw(st.sampled_from(self.users)), "name": name})

    @rule(data=st.data())
    def add(self, data: st.DataObject) -> None:
        lists = column(self.session, "SELECT id FROM place_lists ORDER BY id")
        saved = column(self.session, "SELECT id FROM saved_places ORDER BY id")
        if not lists or not saved:
            return
        plist = data.draw(st.sampled_from(lists))
        owner = one(self.session, "SELECT user_id FROM place_lists WHERE id = ?", plist)
        own = column(
            self.session, "SELECT id FROM saved_places WHERE user_id = ? ORDER BY id", owner
        )
        choice = data.draw(st.sampled_from(own + saved[:3] if own else saved))
        self.call("add_to_list", {"list_id": plist, "saved_id": choice})

    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        saved = column(self.session, "SELECT id FROM saved_places ORDER BY id")
        self.call(
            "remove_saved_place", {"saved_id": data.draw(st.sampled_from([*saved, "sav_9999"]))}
        )

    @rule(data=st.data())
    def read(self, data: st.DataObject) -> None:
        user = data.draw(st.sampled_from(self.users))
        self.call("list_saved_places", {"user_id": user})
        for plist in self.call("list_lists", {"user_id": user}).content["lists"]:
            view = self.call("get_list", {"list_id": plist["list_id"]}).content
            assert [p["position"] for p in view["places"]] == list(
                range(1, view["place_count"] + 1)
            )

    @invariant()
    def the_rules_hold(self) -> None:
        if hasattr(self, "session"):
            problems = rule_violations(self.session)
            assert not problems, problems

    def teardown(self) -> None:
        if hasattr(self, "session"):
            self.session.close()


TestMapsRules = MapsRules.TestCase
TestMapsRules.settings = settings(
    max_examples=10,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# ------------------------------------------------------------ sampler and grounding
@pytest.mark.parametrize("size", [1, 2, 3])
def test_sizes_give_dozens_to_hundreds_of_entities(size: int) -> None:
    with MAPS.session(seed=1, size=size) as session:
        n = {
            t: count(session, f"SELECT COUNT(*) FROM {t}")
            for t in ("nodes", "edges", "addresses", "places", "users", "saved_places")
        }
        assert n["places"] == 120 * size and n["users"] == 10 * size
        assert n["addresses"] > n["places"] and n["edges"] > n["nodes"]
        assert not rule_violations(session)
        statuses = set(column(session, "SELECT DISTINCT status FROM places"))
        assert statuses == {"operational", "temporarily_closed", "permanently_closed"}
        assert len(column(session, "SELECT DISTINCT category FROM places")) == 15
        assert count(session, "SELECT COUNT(*) FROM edges WHERE oneway = 1") > 0
        assert count(session, "SELECT COUNT(*) FROM edges WHERE drive_kmh = 0") > 0
        assert count(session, "SELECT COUNT(*) FROM edges WHERE transit_kmh > 0") > 0
        homes = column(session, "SELECT home_address_id FROM users")
        assert len(set(homes)) == len(homes)


def test_entity_records_give_writes_the_rules_allow() -> None:
    for seed in SEEDS:
        with MAPS.session(seed=seed) as session:
            for record in session.list_entities("user"):
                ok(
                    session,
                    "save_place",
                    {
                        "user_id": record["user_id"],
                        "place_id": record["place_id"],
                        "label": "favorite",
                    },
                )
                session.reset()
            lists = session.list_entities("list")
            assert lists
            for record in lists:
                if "saved_id" in record:
                    ok(
                        session,
                        "add_to_list",
                        {"list_id": record["list_id"], "saved_id": record["saved_id"]},
                    )
                    session.reset()
            addresses = session.list_entities("address")
            for a, b in zip(addresses[:10], addresses[10:20], strict=True):
                ok(
                    session,
                    "get_route",
                    {
                        "origin_address_id": a["address_id"],
                        "destination_address_id": b["address_id"],
                        "mode": "drive",
                    },
                )


def test_example_values_fit_their_parameters(city: Session) -> None:
    ctx = city.context()
    rng = random.Random(0)
    for tool in MAPS.visible_tools():
        fields = tool.args_model.model_fields
        for name, source in tool.examples.items():
            drawn = [source(ctx, rng) for _ in range(5)] if callable(source) else list(source)
            for value in drawn:
                TypeAdapter(fields[name].annotation).validate_python(value)
        free = [p.name for p in tool.params if p.required and p.entity is None]
        literal = {n for n in free if "enum" in tool.input_schema()["properties"][n]}
        assert set(free) - literal <= set(tool.examples) | set(tool.values), tool.name
    city.rollback()


def test_every_rule_is_enforced_somewhere_and_documented() -> None:
    import inspect
    import re

    import prove_plugins.maps.tools as tools

    raised = set(re.findall(r'RuleBroken\(\s*"(\w+)"', inspect.getsource(tools)))
    assert raised | {"no_route"} == set(tools.RULES)


def test_sixteen_tools_four_writes() -> None:
    tools = MAPS.visible_tools()
    assert len(tools) == 16
    assert {t.name for t in tools if t.writes} == WRITES


# ------------------------------------------------------------------- tasks
def test_hand_written_tasks_cover_rules_turns_clarify_and_abstain() -> None:
    tasks = [t for t in prove_gym.get_registry().tasks("maps") if not t.meta]
    assert 3 <= len(tasks) <= 8
    kinds = {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "clarify", "abstain"} <= kinds
    assert any(len(t.turns) > 1 and t.steps for t in tasks)
    assert any(any(s.depends_on for s in t.steps) for t in tasks)
    synthesized = [t for t in prove_gym.get_registry().tasks("maps") if t.meta]
    assert len(synthesized) >= 200


TestConformance = conformance_suite(
    "maps",
    samples=[
        "pl_9999",
        "adr_99999",
        "usr_999",
        "sav_9999",
        "lst_999",
        "pl_0001",
        "adr_00001",
        "usr_001",
        "2026-03-07T21:30",
        "walk",
        "drive",
        "45.5",
        "-122.68",
        "0",
    ],
    invariants=rule_violations,
)


def test_a_town_past_size_4_still_names_every_street_once() -> None:
    """A larger grid has more streets than plain street words (45): size 5 and above used
    to raise ValueError while sampling; their extra streets are "North Maple" and the like."""
    with MAPS.session(seed=2, size=5) as session:
        names = column(session, "SELECT name FROM streets ORDER BY id")
        assert len(names) > 45
        assert len(set(names)) == len(names)
        origin, dest = column(session, "SELECT id FROM addresses ORDER BY id")[:2]
        route = session.call(
            "get_route",
            {"origin_address_id": origin, "destination_address_id": dest, "mode": "walk"},
        )
        assert route.ok, route.message
