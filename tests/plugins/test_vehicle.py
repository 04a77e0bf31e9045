"""The vehicle server: its mode rules under random call sequences, and the conformance suite."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.server import StateTemplate, canonical_state_hash
from prove_gym.synth.ship import is_hand_written
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import rows

VEHICLE = prove_gym.get_server("vehicle")
DOORS = ["front_left", "front_right", "rear_left", "rear_right", "trunk"]
SEATS = ["driver", "passenger", "rear_left", "rear_right"]
# Parked with doors open, idling, low fuel, driving with and without cruise, electric and gasoline.
SEEDS = [0, 1, 5, 10, 13, 14, 15, 17, 21, 24]


def vehicle_row(session: Session) -> dict[str, Any]:
    cur = session.raw_connection.execute("SELECT * FROM vehicle")
    names = [c[0] for c in cur.description]
    return dict(zip(names, cur.fetchone(), strict=True))


def rule_violations(session: Session) -> list[str]:
    """Every broken rule of the server (see plugins/vehicle/tools.py), read straight from SQLite."""
    v = vehicle_row(session)
    doors = rows(session, "SELECT position, is_open, is_locked FROM doors")
    broken = []
    moving = v["speed_kph"] > 0 or v["gear"] != "park"
    if moving and any(d[1] for d in doors):
        broken.append("a door is open while the car is out of park or moving")
    if moving and v["parking_brake"]:
        broken.append("the parking brake is on while the car is out of park or moving")
    if v["cruise_active"] and not (
        v["gear"] == "drive" and v["speed_kph"] >= 40 and v["cruise_speed_kph"] == v["speed_kph"]
    ):
        broken.append("cruise is active outside drive, below 40 km/h or off its set speed")
    if not v["cruise_active"] and v["cruise_speed_kph"] is not None:
        broken.append("an inactive cruise control keeps a speed")
    if not v["engine_on"]:
        if moving:
            broken.append("the engine is off but the car is out of park or moving")
        if v["climate_on"] or v["cruise_active"]:
            broken.append("climate or cruise is on with the engine off")
        if rows(session, "SELECT 1 FROM seats WHERE heat_level > 0"):
            broken.append("a seat heats with the engine off")
    if not 0 <= v["energy_level"] <= v["energy_capacity"]:
        broken.append(f"energy {v['energy_level']} outside [0, {v['energy_capacity']}] tenths")
    limit = {"park": 0, "reverse": 15, "neutral": 180, "drive": 180}[v["gear"]]
    if not 0 <= v["speed_kph"] <= limit:
        broken.append(f"speed {v['speed_kph']} km/h in {v['gear']}")
    if any(locked and is_open for _, is_open, locked in doors):
        broken.append("a locked door is open")
    if v["fog_lights"] and v["headlights"] == "off":
        broken.append("fog lights without headlights")
    if len(rows(session, "SELECT 1 FROM routes WHERE status = 'active'")) > 1:
        broken.append("more than one active route")
    if rows(session, "SELECT 1 FROM windows WHERE open_percent NOT BETWEEN 0 AND 100"):
        broken.append("a window beyond 0-100%")
    if rows(session, "SELECT 1 FROM seats WHERE heat_level NOT BETWEEN 0 AND 3"):
        broken.append("a seat heat level beyond 0-3")
    if rows(
        session,
        "SELECT 1 FROM climate_zones WHERE target_temp_c NOT BETWEEN 160 AND 300 "
        "OR fan_speed NOT BETWEEN 1 AND 7",
    ):
        broken.append("a climate zone out of range")
    return broken


def unchanged_since(session: Session, snapshot: bytes) -> bool:
    """The state hash equals the snapshot's (byte-identical databases skip the hashing)."""
    if session.snapshot() == snapshot:
        return True
    earlier = StateTemplate("vehicle", session.seed, session.size, session.now, snapshot).connect()
    try:
        return canonical_state_hash(earlier, VEHICLE.base.metadata) == session.state_hash()
    finally:
        earlier.close()


# ------------------------------------------------- arguments, mostly valid
def _maybe(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.none() | strategy


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


destination_ids = st.integers(0, 32).map(lambda n: f"dst_{n:03d}") | st.just("dst_999")
PLAUSIBLE: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "get_vehicle_status": st.just({}),
    "get_cabin_status": st.just({}),
    "list_saved_destinations": st.fixed_dictionaries(
        {},
        optional={
            "query": st.sampled_from(["home", "park", "bistro", "zzz", ""]),
            "category": st.sampled_from(["restaurant", "charging", "gas_station", "pizza"]),
            "limit": st.integers(-2, 120),
        },
    ),
    "get_trip_log": st.fixed_dictionaries(
        {}, optional={"limit": st.integers(-2, 120), "destination_id": destination_ids}
    ),
    "start_engine": st.just({}),
    "stop_engine": st.just({}),
    "shift_gear": st.fixed_dictionaries(
        {"gear": st.sampled_from(["park", "reverse", "neutral", "drive", "drive", "sport"])}
    ),
    "set_speed": st.fixed_dictionaries(
        {"speed_kph": st.sampled_from([0, 10, 15, 30, 39, 40, 60, 100, 180]) | st.integers(-5, 200)}
    ),
    "set_parking_brake": st.fixed_dictionaries(
        {"action": st.sampled_from(["engage", "release", "pull"])}
    ),
    "open_door": st.fixed_dictionaries({"position": st.sampled_from([*DOORS, "hood"])}),
    "close_door": st.fixed_dictionaries({"position": st.sampled_from([*DOORS, "hood"])}),
    "set_door_locks": st.fixed_dictionaries({"action": st.sampled_from(["lock", "unlock"])}),
    "set_window": st.fixed_dictionaries(
        {
            "position": st.sampled_from([*DOORS[:4], "trunk"]),
            "open_percent": st.integers(-10, 120),
        }
    ),
    "set_climate": st.fixed_dictionaries(
        {},
        optional={
            "power": st.sampled_from(["on", "off"]),
            "zone": st.sampled_from(["driver", "passenger", "rear", "roof"]),
            "temperature_c": st.sampled_from([15.5, 16.0, 21.5, 22.3, 30.0, 30.5]),
            "fan_speed": st.integers(-1, 8),
            "ac": st.sampled_from(["on", "off"]),
        },
    ),
    "set_seat_heating": st.fixed_dictionaries(
        {"seat": st.sampled_from([*SEATS, "middle"]), "level": st.integers(-1, 4)}
    ),
    "set_lights": st.fixed_dictionaries(
        {
            "headlights": _maybe(st.sampled_from(["off", "on", "auto", "bright"])),
            "fog_lights": _maybe(st.sampled_from(["on", "off"])),
            "hazard_lights": _maybe(st.sampled_from(["on", "off", "blink"])),
        }
    ).map(_drop_none),
    "set_cruise_control": st.fixed_dictionaries(
        {"action": st.sampled_from(["engage", "cancel"])},
        optional={"speed_kph": st.sampled_from([30, 40, 60, 90, 110, 181])},
    ),
    "set_route": st.fixed_dictionaries({"destination_id": destination_ids}),
    "drive_route": st.just({}),
    "refuel_or_charge": st.fixed_dictionaries(
        {}, optional={"amount": st.sampled_from([-1.0, 0.0, 0.05, 5.0, 20.0, 500.0])}
    ),
}

GET_MOVING = [("close_door", {"position": p}) for p in DOORS] + [
    ("start_engine", {}),
    ("set_parking_brake", {"action": "release"}),
    ("shift_gear", {"gear": "drive"}),
]


class VehicleRules(RuleBasedStateMachine):
    """Random sequences of valid and invalid calls; the rules must hold after every one."""

    session: Session

    @initialize(seed=st.sampled_from(SEEDS), fuel=st.sampled_from([None, None, 0.0, 0.02]))
    def start(self, seed: int, fuel: float | None) -> None:
        self.session = VEHICLE.session(seed=seed)
        if fuel is not None:  # reach the edge of the energy rules sooner than by driving
            self.session.raw_connection.execute(
                "UPDATE vehicle SET energy_level = CAST(energy_capacity * ? AS INTEGER)", (fuel,)
            )
            self.session.raw_connection.commit()
        self.odometer = vehicle_row(self.session)["odometer_km"]
        self.trips = len(rows(self.session, "SELECT id FROM trips"))

    def _call(self, name: str, args: dict[str, Any]) -> None:
        before = self.session.snapshot()
        result = self.session.call(name, args)
        assert result.error_kind != ErrorKind.INTERNAL, result.message
        if not result.ok:
            assert result.message, f"{name} failed without a message"
            assert unchanged_since(self.session, before), f"failed {name}({args}) changed state"
        elif not VEHICLE.tools[name].writes:
            assert unchanged_since(self.session, before), f"read {name} changed state"

    @rule(data=st.data(), name=st.sampled_from(sorted(PLAUSIBLE)))
    def call_any_tool(self, data: st.DataObject, name: str) -> None:
        self._call(name, data.draw(PLAUSIBLE[name], label=name))

    @rule()
    def get_ready_to_drive(self) -> None:
        for name, args in GET_MOVING:
            self._call(name, args)

    @rule(position=st.sampled_from(DOORS), open_it=st.booleans())
    def use_a_door(self, position: str, open_it: bool) -> None:
        self._call("open_door" if open_it else "close_door", {"position": position})

    @rule(action=st.sampled_from(["engage", "release"]))
    def use_the_parking_brake(self, action: str) -> None:
        self._call("set_parking_brake", {"action": action})

    @rule(speed=st.sampled_from([0, 20, 45, 80, 120]))
    def accelerate(self, speed: int) -> None:
        self._call("set_speed", {"speed_kph": speed})

    @rule(speed=st.sampled_from([None, 40, 90]))
    def engage_cruise(self, speed: int | None) -> None:
        self._call("set_cruise_control", _drop_none({"action": "engage", "speed_kph": speed}))

    @rule(seat=st.sampled_from(SEATS), level=st.integers(1, 3))
    def warm_up(self, seat: str, level: int) -> None:
        self._call("start_engine", {})
        self._call("set_climate", {"temperature_c": 22.0})
        self._call("set_seat_heating", {"seat": seat, "level": level})

    @rule()
    def park_and_switch_off(self) -> None:
        for name, args in [
            ("set_speed", {"speed_kph": 0}),
            ("shift_gear", {"gear": "park"}),
            ("stop_engine", {}),
        ]:
            self._call(name, args)

    @rule(destination=destination_ids)
    def navigate_and_drive(self, destination: str) -> None:
        self._call("set_route", {"destination_id": destination})
        self._call("drive_route", {})

    @invariant()
    def the_rules_hold(self) -> None:
        if hasattr(self, "session"):
            assert rule_violations(self.session) == []

    @invariant()
    def odometer_and_trip_log_only_grow(self) -> None:
        if hasattr(self, "session"):
            odometer = vehicle_row(self.session)["odometer_km"]
            trips = len(rows(self.session, "SELECT id FROM trips"))
            assert odometer >= self.odometer and trips >= self.trips
            self.odometer, self.trips = odometer, trips

    def teardown(self) -> None:
        if hasattr(self, "session"):
            self.session.close()


TestVehicleRules = VehicleRules.TestCase
TestVehicleRules.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# ------------------------------------------------------------ conformance
FUZZ_SAMPLES = [
    "dst_001",
    "dst_999",
    "trp_0001",
    "rte_0001",
    "drive",
    "trunk",
    "driver",
    "auto",
    "nan",
]

TestConformance = conformance_suite("vehicle", samples=FUZZ_SAMPLES, invariants=rule_violations)


# ------------------------------------------------------------------- state
def test_sampled_states_obey_the_rules_and_vary() -> None:
    gears, makes, open_doors = set(), set(), set()
    for seed in range(30):
        with VEHICLE.session(seed=seed) as s:
            assert rule_violations(s) == [], seed
            v = vehicle_row(s)
            gears.add(v["gear"])
            makes.add(v["make"])
            open_doors.update(p for p, is_open, _ in rows(s, "SELECT * FROM doors") if is_open)
            assert len(rows(s, "SELECT id FROM destinations")) >= 25
            assert len(rows(s, "SELECT id FROM trips")) >= 60
    assert gears == {"park", "drive"} and len(makes) >= 6 and len(open_doors) >= 4


def test_sampling_one_state_takes_well_under_half_a_second() -> None:
    t0 = time.perf_counter()
    VEHICLE.sample(seed=12345)
    assert time.perf_counter() - t0 < 0.5


# --------------------------------------------------------------- the rules
@pytest.fixture
def parked() -> Iterator[Session]:
    """Seed 15: a Hyundai Ioniq 5 at Home, engine off, parking brake on, rear-left door open."""
    with VEHICLE.session(seed=15) as s:
        yield s


def test_shifting_to_drive_names_every_unmet_precondition_and_its_fix(parked) -> None:
    before = parked.state_hash()
    result = parked.call("shift_gear", {"gear": "drive"})
    assert result.error_kind == ErrorKind.PRECONDITION_FAILED
    assert result.message == (
        "Cannot shift to drive: the engine is off. Start it with start_engine first. "
        "Also: the rear-left door is open. Close it with close_door first. "
        "Also: the parking brake is on. Release it with set_parking_brake (action='release') first."
    )
    assert parked.state_hash() == before
    for name, args in GET_MOVING:
        assert parked.call(name, args).ok
    assert vehicle_row(parked)["gear"] == "drive"


def test_two_open_doors_are_named_together(parked) -> None:
    assert parked.call("open_door", {"position": "trunk"}).ok
    parked.call("start_engine", {})
    parked.call("set_parking_brake", {"action": "release"})
    message = parked.call("shift_gear", {"gear": "reverse"}).message
    assert "the rear-left door and the trunk are open. Close them with close_door first" in message


def test_doors_and_parking_brake_only_work_when_stopped_in_park(parked) -> None:
    for name, args in GET_MOVING:
        parked.call(name, args)
    opened = parked.call("open_door", {"position": "front_left"})
    assert opened.error_kind == ErrorKind.PRECONDITION_FAILED
    assert "Shift to park with shift_gear" in opened.message
    assert parked.call("set_parking_brake", {"action": "engage"}).error_kind == (
        ErrorKind.PRECONDITION_FAILED
    )
    assert parked.call("set_speed", {"speed_kph": 50}).ok
    refused = parked.call("shift_gear", {"gear": "park"})
    assert "moving at 50 km/h. Slow to 0 with set_speed" in refused.message
    assert parked.call("stop_engine", {}).error_kind == ErrorKind.PRECONDITION_FAILED


def test_cruise_control_needs_drive_and_40_kmh_and_yields_to_the_driver(parked) -> None:
    for name, args in GET_MOVING:
        parked.call(name, args)
    assert parked.call("set_speed", {"speed_kph": 30}).ok
    low = parked.call("set_cruise_control", {"action": "engage"})
    assert "below the 40 km/h minimum" in low.message
    assert parked.call("set_speed", {"speed_kph": 70}).ok
    on = parked.call("set_cruise_control", {"action": "engage", "speed_kph": 100}).content
    assert on["cruise_control"] == {"active": True, "speed_kph": 100} and on["speed_kph"] == 100
    assert parked.call("shift_gear", {"gear": "neutral"}).ok
    assert vehicle_row(parked)["cruise_active"] == 0
    assert parked.call("set_speed", {"speed_kph": 120}).error_kind == (
        ErrorKind.PRECONDITION_FAILED
    )


def test_stopping_the_engine_switches_off_what_depends_on_it(parked) -> None:
    refused = parked.call("set_climate", {"temperature_c": 21.5})
    assert refused.message == (
        "Cannot turn on climate control: the engine is off. Start it with start_engine first."
    )
    assert parked.call("start_engine", {}).ok
    assert parked.call("set_climate", {"zone": "driver", "temperature_c": 21.5}).ok
    assert parked.call("set_seat_heating", {"seat": "driver", "level": 3}).ok
    stopped = parked.call("stop_engine", {}).content
    assert stopped["switched_off"] == ["climate", "seat_heating"]
    cabin = parked.call("get_cabin_status", {}).content
    assert cabin["climate"]["power"] == "off"
    assert {"zone": "driver", "temperature_c": 21.5, "fan_speed": 5, "ac": "on"} in cabin[
        "climate"
    ]["zones"]
    assert all(seat["heat_level"] == 0 for seat in cabin["seats"])


def test_a_route_is_measured_from_stored_coordinates(parked) -> None:
    here = vehicle_row(parked)
    (lat, lon) = rows(parked, "SELECT latitude, longitude FROM destinations WHERE id = 'dst_002'")[
        0
    ]
    p1, p2 = math.radians(here["latitude"]), math.radians(lat)
    a = (
        math.sin((p2 - p1) / 2) ** 2
        + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lon - here["longitude"]) / 2) ** 2
    )
    expected_km = round(2 * 6371.0 * math.asin(math.sqrt(a)) * 1.3, 1)
    route = parked.call("set_route", {"destination_id": "dst_002"}).content
    assert route["route_id"] == "rte_0001" and route["distance_km"] == expected_km
    assert route["eta_minutes"] == math.ceil(expected_km * 60 / 50) + 3
    again = parked.call("set_route", {"destination_id": "dst_003"}).content
    assert again["route_id"] == "rte_0002" and again["replaced_route_id"] == "rte_0001"
    home = parked.call("set_route", {"destination_id": "dst_001"})
    assert home.error_kind == ErrorKind.PRECONDITION_FAILED and "already at Home" in home.message
    assert parked.call("set_route", {"destination_id": "dst_999"}).error_kind == (
        ErrorKind.NOT_FOUND
    )


def test_driving_a_route_uses_energy_logs_the_trip_and_moves_the_car(parked) -> None:
    route = parked.call("set_route", {"destination_id": "dst_002"}).content
    for name, args in GET_MOVING:
        parked.call(name, args)
    level = vehicle_row(parked)["energy_level"]
    trip = parked.call("drive_route", {}).content
    assert trip["trip_id"] == "trp_0079" and trip["distance_km"] == route["distance_km"]
    assert trip["energy"]["level"] == pytest.approx((level - trip["energy_used"] * 10) / 10)
    status = parked.call("get_vehicle_status", {}).content
    assert status["location"]["label"] == "Work (George-Benitez)"
    assert status["active_route"] is None and status["speed_kph"] == 0
    log = parked.call("get_trip_log", {"limit": 1, "destination_id": "dst_002"}).content
    assert log["trips"][0]["trip_id"] == "trp_0079"
    assert parked.call("drive_route", {}).error_kind == ErrorKind.PRECONDITION_FAILED


def test_a_route_longer_than_the_range_is_refused_until_refuelled(parked) -> None:
    parked.raw_connection.execute("UPDATE vehicle SET energy_level = 5")  # 0.5 kWh
    parked.raw_connection.commit()
    assert parked.call("set_route", {"destination_id": "dst_028"}).content["enough_energy"] is False
    for name, args in GET_MOVING:
        parked.call(name, args)
    before = parked.state_hash()
    refused = parked.call("drive_route", {})
    assert "not enough charge" in refused.message and "refuel_or_charge" in refused.message
    assert parked.state_hash() == before
    assert "stop_engine" in parked.call("refuel_or_charge", {}).message
    for name, args in [("shift_gear", {"gear": "park"}), ("stop_engine", {})]:
        assert parked.call(name, args).ok
    too_much = parked.call("refuel_or_charge", {"amount": 80.0})
    assert (
        too_much.error_kind == ErrorKind.BAD_ARGUMENTS and "Only 76.9 kWh fits" in too_much.message
    )
    full = parked.call("refuel_or_charge", {}).content
    assert full["added"] == 76.9 and full["energy"]["percent"] == 100
    assert parked.call("refuel_or_charge", {}).error_kind == ErrorKind.PRECONDITION_FAILED


def test_an_empty_tank_keeps_the_engine_off(parked) -> None:
    parked.raw_connection.execute("UPDATE vehicle SET energy_level = 0")
    parked.raw_connection.commit()
    refused = parked.call("start_engine", {})
    assert refused.message == (
        "Cannot start the engine: there is no charge left. "
        "Refuel or charge with refuel_or_charge first."
    )


def test_locks_and_lights_follow_their_rules(parked) -> None:
    refused = parked.call("set_door_locks", {"action": "lock"})
    assert "the rear-left door is open. Close it with close_door first" in refused.message
    parked.call("close_door", {"position": "rear_left"})
    assert parked.call("set_door_locks", {"action": "lock"}).ok
    assert "locked" in parked.call("open_door", {"position": "trunk"}).message
    fog = parked.call("set_lights", {"headlights": "off", "fog_lights": "on"})
    assert fog.error_kind == ErrorKind.PRECONDITION_FAILED
    assert parked.call("set_lights", {"headlights": "on", "fog_lights": "on"}).ok
    assert parked.call("set_lights", {"headlights": "off"}).content == {
        "headlights": "off",
        "fog_lights": "off",
        "hazard_lights": "off",
    }


# ------------------------------------------------------------------- tasks
def test_hand_written_tasks_cover_chains_turns_clarify_and_abstain() -> None:
    tasks = [t for t in prove_gym.get_registry().tasks("vehicle") if is_hand_written(t)]
    assert 3 <= len(tasks) <= 5
    kinds = {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "clarify", "abstain"} <= kinds
    assert any(len(t.turns) > 1 and t.steps for t in tasks)
    assert any(any(s.depends_on for s in t.steps) for t in tasks)
