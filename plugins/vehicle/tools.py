"""The vehicle's 20 tools. Docstrings are what the model reads: keep examples concrete.

The rules every tool enforces (and the stateful test checks after every call):

- Moving (a gear other than park, or a speed above 0) needs every door closed and
  the parking brake released; leaving park also needs the engine running.
- Cruise control is active only in drive at CRUISE_MIN_KPH or faster, and the
  vehicle then travels at the cruise speed.
- With the engine off the car is in park at 0 km/h, and the engine-dependent
  features are off: climate control, seat heating and cruise control.
- The fuel or battery level stays within [0, capacity]; a locked door is closed;
  fog lights need the headlights on or on auto; at most one route is active.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import bindparam, func, select, update

from prove_gym.server import (
    Entity,
    InvalidArgument,
    NotFound,
    PreconditionFailed,
    Query,
    Record,
    Server,
    ToolContext,
    TypedDict,
    contains,
    next_id,
    search_pattern,
)

from .models import (
    TENTH,
    Base,
    ClimateZone,
    Destination,
    Door,
    Route,
    Seat,
    Tire,
    Trip,
    Vehicle,
    Window,
    energy_needed,
    eta_minutes,
    range_km,
    road_distance_km,
)
from .sampler import sample_vehicle

CRUISE_MIN_KPH = 40
MAX_SPEED_KPH = 180
MAX_REVERSE_KPH = 15
LOW_TIRE_MARGIN_KPA = 25
ARRIVED_KM = Decimal("0.2")


OUT_OF_SCOPE = (
    "Run a full diagnostic on the brakes.",
    "Play my road-trip playlist.",
    "Update the car's software.",
    "Check the tyre pressure.",
    "Call roadside assistance.",
    "Fold the mirrors in.",
    "Open the sunroof.",
    "Pay for my parking.",
    "Adjust the driver's seat position.",
    "Switch on the massage seats.",
    "Turn the wipers on.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

server = Server(
    "vehicle",
    out_of_scope=OUT_OF_SCOPE,
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.0.0",
    base=Base,
    sampler=sample_vehicle,
    description="A connected car: ignition, gears and speed, doors and windows, climate, seat "
    "heating, lights, cruise control, navigation to saved places, fuel or battery, trip log.",
    instructions="Vehicle conventions: units are km, km/h, degrees Celsius, kPa, and litres "
    "(fuel) or kWh (battery). Actions are gated by the car's mode: leaving park needs the engine "
    "on, every door closed and the parking brake released; doors open and the parking brake "
    "engages only in park at 0 km/h; cruise control needs drive and at least 40 km/h; climate "
    "and seat heating need the engine on; refuelling or charging needs the engine off. Call "
    "get_vehicle_status or get_cabin_status to learn the current mode. Saved places have ids "
    "like 'dst_004' (see list_saved_destinations).",
)

DestinationRow = Annotated[Record[Destination], Entity("destination")]
DoorPosition = Literal["front_left", "front_right", "rear_left", "rear_right", "trunk"]
WindowPosition = Literal["front_left", "front_right", "rear_left", "rear_right"]
SeatPosition = Literal["driver", "passenger", "rear_left", "rear_right"]
OnOff = Literal["on", "off"]
Unit = Literal["L", "kWh"]
Gear = Literal["park", "reverse", "neutral", "drive"]
Limit = Annotated[int, Field(ge=1, le=100)]
Category = Literal[
    "home",
    "work",
    "family",
    "gym",
    "grocery",
    "restaurant",
    "coffee",
    "school",
    "medical",
    "shopping",
    "park",
    "charging",
    "gas_station",
    "airport",
]


# ------------------------------------------------------------------ results
Cruise = TypedDict("Cruise", {"active": bool, "speed_kph": int | None})
Lights = TypedDict("Lights", {"headlights": str, "fog_lights": OnOff, "hazard_lights": OnOff})
ZoneState = TypedDict(
    "ZoneState", {"zone": str, "temperature_c": float, "fan_speed": int, "ac": OnOff}
)
Climate = TypedDict("Climate", {"power": OnOff, "zones": list[ZoneState]})
DoorState = TypedDict("DoorState", {"position": str, "open": bool, "locked": bool})
Doors = TypedDict("Doors", {"doors": list[DoorState]})
WindowState = TypedDict("WindowState", {"position": str, "open_percent": int})
SeatState = TypedDict("SeatState", {"position": str, "heat_level": int})
SeatHeating = TypedDict("SeatHeating", {"seat": str, "heat_level": int})
Location = TypedDict("Location", {"label": str, "city": str, "latitude": float, "longitude": float})


class Mode(TypedDict):
    """The driving mode, part of every result of a tool that can change it."""

    engine_on: bool
    gear: str
    speed_kph: int
    parking_brake: Literal["engaged", "released"]
    cruise_control: Cruise


class ModeChange(Mode):
    changed: bool


class EngineStopped(ModeChange):
    switched_off: list[str]


class Energy(TypedDict):
    type: Literal["fuel", "battery"]
    unit: Unit
    level: float
    capacity: float
    percent: int
    range_km: int
    consumption_per_100km: float


class RouteInfo(TypedDict):
    route_id: str
    destination_id: str
    destination_name: str
    origin: str
    distance_km: float
    eta_minutes: int
    status: str


class NewRoute(RouteInfo):
    replaced_route_id: str | None
    range_km: int
    enough_energy: bool


class Arrival(Mode):
    trip_id: str
    route_id: str
    destination_id: str
    destination_name: str
    distance_km: float
    energy_used: float
    departed_at: str
    arrived_at: str
    energy: Energy
    odometer_km: float


class DoorChange(DoorState):
    changed: bool


class Cabin(Doors):
    windows: list[WindowState]
    seats: list[SeatState]
    climate: Climate


class Profile(TypedDict):
    make: str
    model: str
    year: int
    color: str
    vin: str
    license_plate: str
    owner: str
    powertrain: str


class TireState(TypedDict):
    position: str
    pressure_kpa: int
    recommended_kpa: int
    status: Literal["ok", "low", "high"]


class VehicleStatus(Mode):
    vehicle: Profile
    energy: Energy
    odometer_km: float
    location: Location
    climate: OnOff
    lights: Lights
    tires: list[TireState]
    active_route: RouteInfo | None
    warnings: list[str]


class Place(TypedDict):
    destination_id: str
    name: str
    category: str
    address: str
    distance_km: float
    eta_minutes: int


class TripEntry(TypedDict):
    trip_id: str
    started_at: str
    ended_at: str
    origin: str
    destination: str
    destination_id: str | None
    distance_km: float
    energy_used: float
    avg_speed_kph: int


class TripLog(TypedDict):
    trips: list[TripEntry]
    count: int
    total_distance_km: float
    unit: Unit


Refill = TypedDict("Refill", {"added": float, "unit": Unit, "energy": Energy})


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
# Rows are named tuples typed as the ORM types them; a row a tool changes is written with
# _write, which (as the ORM did) writes only the columns whose value differs.
routes = Route.__table__
VEHICLE = Query(select(Vehicle.__table__).where(Vehicle.id == 1))
DOORS = Query(select(Door.__table__).order_by(Door.position))
DOOR = Query(select(Door.__table__).where(Door.position == bindparam("position")))
WINDOWS = Query(select(Window.__table__).order_by(Window.position))
WINDOW = Query(select(Window.__table__).where(Window.position == bindparam("position")))
SEATS = Query(select(Seat.__table__).order_by(Seat.position))
SEAT = Query(select(Seat.__table__).where(Seat.position == bindparam("position")))
SEATS_OFF = Query(update(Seat).where(Seat.heat_level > 0).values(heat_level=0))
ZONES = Query(select(ClimateZone.__table__).order_by(ClimateZone.zone))
TIRES = Query(select(Tire.__table__).order_by(Tire.position))
DESTINATION = Query(select(Destination.__table__).where(Destination.id == bindparam("id")))
DESTINATIONS = Query(select(Destination.__table__).order_by(Destination.id))
DESTINATION_NAMES = Query(select(Destination.name).order_by(Destination.id))
# a route with its destination's name (None when the destination is gone)
_ROUTES = select(routes, Destination.name.label("destination_name")).select_from(
    routes.outerjoin(Destination.__table__)
)
ROUTE = Query(_ROUTES.where(Route.id == bindparam("id")))
ACTIVE_ROUTE = Query(_ROUTES.where(Route.status == "active"))  # at most one (no order needed)
LAST_TRIP_END = Query(select(func.max(Trip.ended_at)))
TRIPS = Query(select(Trip.id, Trip.destination_id, Trip.started_at).order_by(Trip.id))


@functools.cache
def _destinations_matching(by_text: bool, by_category: bool) -> Query:
    """Saved places by id, optionally matching a text and a category: list_saved_destinations'."""
    stmt = select(Destination.__table__).order_by(Destination.id)
    if by_text:
        stmt = stmt.where(contains(bindparam("pattern"), Destination.name, Destination.address))
    if by_category:
        stmt = stmt.where(Destination.category == bindparam("category"))
    return Query(stmt)


@functools.cache
def _latest_trips(by_destination: bool) -> Query:
    """Trips newest first, at most ``limit``, optionally to one place: get_trip_log's."""
    stmt = (
        select(Trip.__table__)
        .order_by(Trip.started_at.desc(), Trip.id.desc())
        .limit(bindparam("limit"))
    )
    if by_destination:
        stmt = stmt.where(Trip.destination_id == bindparam("destination_id"))
    return Query(stmt)


# ----------------------------------------------------------------- helpers
Problem = tuple[str, str]
"""(what is wrong, how to fix it), e.g. ("the trunk is open", "Close it with close_door first")."""
ENGINE_OFF: Problem = ("the engine is off", "Start it with start_engine first")
SHIFT_TO_DRIVE = "Shift to drive with shift_gear (gear='drive') first"


def _vehicle(ctx: ToolContext) -> Any:
    """The vehicle's row (``VEHICLE``)."""
    return ctx.sql.one(VEHICLE)


def _doors(ctx: ToolContext) -> list[Any]:
    return ctx.sql.all(DOORS)


def _door_name(position: str) -> str:
    return "the trunk" if position == "trunk" else f"the {position.replace('_', '-')} door"


def _join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _fuel(v: Any) -> tuple[Unit, str]:
    """(unit, what the energy is called): ("L", "fuel") or ("kWh", "charge")."""
    return ("kWh", "charge") if v.powertrain == "electric" else ("L", "fuel")


def _fail(action: str, *problems: Problem) -> None:
    """Raise one message naming every unmet precondition and its fix, if there are any."""
    if problems:
        parts = [f"{what}. {fix}." for what, fix in problems]
        raise PreconditionFailed(f"Cannot {action}: " + " Also: ".join(parts))


def _no_energy(v: Any, purpose: str = "") -> Problem:
    """Out of fuel or charge: refuel (parked), or stop to refuel before ``purpose`` (driving)."""
    what = _fuel(v)[1]
    if not purpose:
        return (f"there is no {what} left", "Refuel or charge with refuel_or_charge first")
    return (
        f"there is no {what} left {purpose}",
        "Stop, shift to park, turn the engine off and use refuel_or_charge first",
    )


def _open_doors_problem(ctx: ToolContext) -> list[Problem]:
    open_ = [_door_name(d.position) for d in _doors(ctx) if d.is_open]
    if not open_:
        return []
    verb, pronoun = ("is", "it") if len(open_) == 1 else ("are", "them")
    return [(f"{_join(open_)} {verb} open", f"Close {pronoun} with close_door first")]


def _leave_park_problems(ctx: ToolContext, v: Any) -> list[Problem]:
    """Everything that keeps the car from leaving park."""
    problems: list[Problem] = [] if v.engine_on else [ENGINE_OFF]
    problems += _open_doors_problem(ctx)
    if v.parking_brake:
        release = "Release it with set_parking_brake (action='release') first"
        problems.append(("the parking brake is on", release))
    if v.energy_level <= 0:
        problems.append(_no_energy(v))
    return problems


def _stopped_in_park_problems(v: Any) -> list[Problem]:
    """What keeps the car from being stopped in park (for doors, brake, engine off, refuel)."""
    if v.speed_kph > 0:
        slow = "Slow to 0 with set_speed (speed_kph=0), then shift to park with shift_gear first"
        return [(f"the car is moving at {v.speed_kph} km/h in {v.gear}", slow)]
    if v.gear != "park":
        return [(f"the car is in {v.gear}", "Shift to park with shift_gear (gear='park') first")]
    return []


CRUISE_OFF: dict[str, Any] = {"cruise_active": False, "cruise_speed_kph": None}
"""Cruise control disengaged, as vehicle columns: ``ctx.sql.update(Vehicle, v, **CRUISE_OFF)``."""


def _energy(v: Any) -> Energy:
    level, capacity = v.energy_level, v.energy_capacity
    return {
        "type": "battery" if v.powertrain == "electric" else "fuel",
        "unit": _fuel(v)[0],
        "level": float(level),
        "capacity": float(capacity),
        "percent": int(level * 100 / capacity),
        "range_km": range_km(level, v.consumption_per_100km),
        "consumption_per_100km": float(v.consumption_per_100km),
    }


def _route_dict(r: Any) -> RouteInfo:
    """A route row of ``_ROUTES`` (with its destination's name)."""
    return {
        "route_id": r.id,
        "destination_id": r.destination_id,
        "destination_name": r.destination_name if r.destination_name is not None else "",
        "origin": r.origin_label,
        "distance_km": float(r.distance_km),
        "eta_minutes": r.eta_minutes,
        "status": r.status,
    }


def _mode(v: Any) -> Mode:
    return {
        "engine_on": v.engine_on,
        "gear": v.gear,
        "speed_kph": v.speed_kph,
        "parking_brake": "engaged" if v.parking_brake else "released",
        "cruise_control": {"active": v.cruise_active, "speed_kph": v.cruise_speed_kph},
    }


def _changed(v: Any, changed: bool) -> ModeChange:
    return {**_mode(v), "changed": changed}


def _on_off(flag: bool) -> OnOff:
    return "on" if flag else "off"


def _climate(ctx: ToolContext, v: Any) -> Climate:
    return {
        "power": _on_off(v.climate_on),
        "zones": [
            {
                "zone": z.zone,
                "temperature_c": float(z.target_temp_c),
                "fan_speed": z.fan_speed,
                "ac": _on_off(z.ac_on),
            }
            for z in ctx.sql.all(ZONES)
        ],
    }


def _lights(v: Any) -> Lights:
    return {
        "headlights": v.headlights,
        "fog_lights": _on_off(v.fog_lights),
        "hazard_lights": _on_off(v.hazard_lights),
    }


def _door(d: Any) -> DoorState:
    return {"position": d.position, "open": d.is_open, "locked": d.is_locked}


def _distance_from_here(v: Any, d: Any) -> Decimal:
    return road_distance_km(v.latitude, v.longitude, d.latitude, d.longitude)


def _tire_status(t: Any) -> Literal["ok", "low", "high"]:
    if t.pressure_kpa < t.recommended_kpa - LOW_TIRE_MARGIN_KPA:
        return "low"
    if t.pressure_kpa > t.recommended_kpa + LOW_TIRE_MARGIN_KPA:
        return "high"
    return "ok"


def _place_query(ctx: ToolContext, rng: random.Random) -> str:
    """A word that names a saved place of this state, such as "home" or "bistro"."""
    names = ctx.sql.scalars(DESTINATION_NAMES)
    words = [w.strip("(),'") for n in names for w in n.split() if len(w.strip("(),'")) > 3]
    return rng.choice(words) if words else "home"


# ------------------------------------------------------------------- reads
@server.tool(
    returns="destination",
    phrasings=["How's my car doing?", "What's the fuel level and range of my car?"],
)
def get_vehicle_status(ctx: ToolContext) -> VehicleStatus:
    """Get the car's profile and current mode: engine, gear, speed, parking brake, cruise
    control, fuel or battery level with range, odometer, location, lights, tire pressure,
    the active navigation route and warnings (open doors, low tires, low fuel).

    Returns:
        For example {"vehicle": {"make": "Toyota", "model": "Camry", "vin": "1HGCM82633A004352",
        ...}, "engine_on": false, "gear": "park", "speed_kph": 0, "parking_brake": "engaged",
        "energy": {"type": "fuel", "unit": "L", "level": 23.4, "range_km": 334, ...}, ...}.
    """
    v = _vehicle(ctx)
    tires: list[TireState] = [
        {
            "position": t.position,
            "pressure_kpa": t.pressure_kpa,
            "recommended_kpa": t.recommended_kpa,
            "status": _tire_status(t),
        }
        for t in ctx.sql.all(TIRES)
    ]
    energy = _energy(v)
    warnings = [f"{_door_name(d.position)} is open" for d in _doors(ctx) if d.is_open]
    warnings += [
        f"{t['position']} tire pressure is {t['status']} ({t['pressure_kpa']} kPa, recommended "
        f"{t['recommended_kpa']} kPa)"
        for t in tires
        if t["status"] != "ok"
    ]
    if energy["percent"] < 10:
        warnings.append(f"{energy['type']} is low: {energy['percent']}% ({energy['range_km']} km)")
    route = ctx.sql.first(ACTIVE_ROUTE)
    return {
        "vehicle": {
            "make": v.make,
            "model": v.model,
            "year": v.year,
            "color": v.color,
            "vin": v.vin,
            "license_plate": v.license_plate,
            "owner": v.owner_name,
            "powertrain": v.powertrain,
        },
        **_mode(v),
        "energy": energy,
        "odometer_km": float(v.odometer_km),
        "location": {
            "label": v.location_label,
            "city": v.city,
            "latitude": v.latitude,
            "longitude": v.longitude,
        },
        "climate": _on_off(v.climate_on),
        "lights": _lights(v),
        "tires": tires,
        "active_route": _route_dict(route) if route else None,
        "warnings": warnings,
    }


@server.tool(
    phrasings=["Are all the doors closed and locked?", "What's the cabin temperature set to?"],
)
def get_cabin_status(ctx: ToolContext) -> Cabin:
    """Get the cabin: each door (open, locked), each window (percent open), each seat's
    heating level (0-3) and the climate control with its zones.

    Returns:
        For example {"doors": [{"position": "rear_left", "open": true, "locked": false}, ...],
        "windows": [{"position": "front_left", "open_percent": 0}, ...], "seats":
        [{"position": "driver", "heat_level": 2}, ...], "climate": {"power": "on", "zones":
        [{"zone": "driver", "temperature_c": 21.5, "fan_speed": 3, "ac": "off"}, ...]}}.
    """
    windows = ctx.sql.all(WINDOWS)
    seats = ctx.sql.all(SEATS)
    return {
        "doors": [_door(d) for d in _doors(ctx)],
        "windows": [{"position": w.position, "open_percent": w.open_percent} for w in windows],
        "seats": [{"position": s.position, "heat_level": s.heat_level} for s in seats],
        "climate": _climate(ctx, _vehicle(ctx)),
    }


@server.tool(
    returns="destination",
    phrasings=[
        "Show my saved places",
        "Find {query} in my saved destinations",
        "List my saved {category} places",
    ],
    examples={"query": _place_query},
)
def list_saved_destinations(
    ctx: ToolContext,
    query: Annotated[str, Field(max_length=200)] | None = None,
    category: Category | None = None,
    limit: Limit = 20,
) -> list[Place]:
    """List saved navigation destinations, nearest first, with the driving distance and ETA
    from where the car is now.

    Args:
        query: Case-insensitive fragment of the name or address, such as "home" or "bistro".
        category: Only this kind of place, such as "restaurant" or "charging".
        limit: Maximum number of places to return (1-100).

    Returns:
        For example [{"destination_id": "dst_001", "name": "Home", "category": "home",
        "address": "12 Oak Street, Seattle, WA", "distance_km": 7.4, "eta_minutes": 12}, ...].
    """
    v = _vehicle(ctx)
    params: dict[str, str] = {}
    if query is not None and query.strip():
        params["pattern"] = search_pattern(query.strip())
    if category is not None:
        params["category"] = category
    matching = _destinations_matching("pattern" in params, "category" in params)
    rows = sorted(
        ((_distance_from_here(v, d), d) for d in ctx.sql.all(matching, **params)),
        key=lambda pair: (pair[0], pair[1].id),
    )
    return [
        {
            "destination_id": d.id,
            "name": d.name,
            "category": d.category,
            "address": d.address,
            "distance_km": float(km),
            "eta_minutes": eta_minutes(km),
        }
        for km, d in rows[:limit]
    ]


@server.tool(
    returns=("trip", "destination"),
    phrasings=[
        "Show my recent trips",
        "Show my last {limit} trips",
        "When did I last drive to {destination_id}?",
    ],
    examples={"limit": [3, 5, 10]},
)
def get_trip_log(
    ctx: ToolContext,
    limit: Limit = 10,
    destination_id: Annotated[str, Entity("destination")] | None = None,
) -> TripLog:
    """List completed drives, newest first, with distance and fuel or energy used.

    Args:
        limit: Maximum number of trips to return (1-100).
        destination_id: Only trips that ended at this saved place, such as "dst_001".

    Returns:
        For example {"trips": [{"trip_id": "trp_0079", "started_at": "2026-03-02T08:10",
        "origin": "Home", "destination": "Work (Acme Inc)", "destination_id": "dst_002",
        "distance_km": 14.2, "energy_used": 1.1, "avg_speed_kph": 41}], "count": 1,
        "total_distance_km": 14.2, "unit": "L"}.
    """
    params: dict[str, Any] = {"limit": limit}
    if destination_id is not None:
        # Hand lookup: the core cannot resolve an optional row parameter (`Model | None`) yet.
        if ctx.sql.first(DESTINATION, id=destination_id) is None:
            raise NotFound(server.entities["destination"].missing(destination_id))
        params["destination_id"] = destination_id
    trips = ctx.sql.all(_latest_trips(destination_id is not None), **params)
    return {
        "trips": [
            {
                "trip_id": t.id,
                "started_at": t.started_at.isoformat(timespec="minutes"),
                "ended_at": t.ended_at.isoformat(timespec="minutes"),
                "origin": t.origin_label,
                "destination": t.destination_label,
                "destination_id": t.destination_id,
                "distance_km": float(t.distance_km),
                "energy_used": float(t.energy_used),
                "avg_speed_kph": t.avg_speed_kph,
            }
            for t in trips
        ],
        "count": len(trips),
        "total_distance_km": float(sum((t.distance_km for t in trips), Decimal(0))),
        "unit": _fuel(_vehicle(ctx))[0],
    }


# ------------------------------------------------------- ignition and motion
@server.tool(
    writes=True,
    idempotent=True,
    phrasings=["Start the car", "Turn on the engine"],
)
def start_engine(ctx: ToolContext) -> ModeChange:
    """Start the engine (for an electric car: switch the drive system on). Needs some fuel or
    charge left. Starting a running engine changes nothing.

    Returns:
        For example {"engine_on": true, "changed": true, "gear": "park", ...}.
    """
    v = _vehicle(ctx)
    if v.engine_on:
        return _changed(v, False)
    if v.energy_level <= 0:
        _fail("start the engine", _no_energy(v))
    v = ctx.sql.update(Vehicle, v, engine_on=True)
    return _changed(v, True)


@server.tool(
    writes=True,
    inverse_of="start_engine",
    idempotent=True,
    phrasings=["Turn the car off", "Stop the engine"],
)
def stop_engine(ctx: ToolContext) -> EngineStopped:
    """Stop the engine. The car must be stopped in park. Climate control, seat heating and
    cruise control switch off with it.

    Returns:
        For example {"engine_on": false, "changed": true, "switched_off": ["climate",
        "seat_heating"], ...}.
    """
    v = _vehicle(ctx)
    if not v.engine_on:
        return {**_changed(v, False), "switched_off": []}
    _fail("stop the engine", *_stopped_in_park_problems(v))
    heated = ctx.sql.run(SEATS_OFF) > 0  # every seat above level 0 to 0
    was_on = (
        ("climate", v.climate_on),
        ("seat_heating", heated),
        ("cruise_control", v.cruise_active),
    )
    v = ctx.sql.update(Vehicle, v, **CRUISE_OFF, engine_on=False, climate_on=False)
    return {**_changed(v, True), "switched_off": [name for name, on in was_on if on]}


@server.tool(
    writes=True,
    idempotent=True,
    phrasings=["Shift into {gear}", "Put the car in {gear}"],
)
def shift_gear(ctx: ToolContext, gear: Gear) -> ModeChange:
    """Shift the transmission. Leaving park needs the engine on, every door closed and the
    parking brake released. Park and reverse (and leaving reverse) need the car at 0 km/h;
    drive and neutral can be swapped while rolling. Cruise control turns off outside drive.

    Args:
        gear: "park", "reverse", "neutral" or "drive".

    Returns:
        For example {"gear": "drive", "speed_kph": 0, "engine_on": true, ...}.
    """
    v = _vehicle(ctx)
    if gear == v.gear:
        return _changed(v, False)
    action = f"shift to {gear}"
    if v.speed_kph > 0 and (gear in ("park", "reverse") or v.gear == "reverse"):
        slow = "Slow to 0 with set_speed (speed_kph=0) first"
        _fail(action, (f"the car is moving at {v.speed_kph} km/h", slow))
    if v.gear == "park":
        _fail(action, *_leave_park_problems(ctx, v))
    cruise = CRUISE_OFF if gear != "drive" else {}
    v = ctx.sql.update(Vehicle, v, **cruise, gear=gear)
    return _changed(v, True)


@server.tool(
    writes=True,
    idempotent=True,
    phrasings=["Set the speed to {speed_kph} km/h", "Change the speed to {speed_kph} km/h"],
    examples={"speed_kph": [0, 30, 50, 80, 100]},
)
def set_speed(
    ctx: ToolContext, speed_kph: Annotated[int, Field(ge=0, le=MAX_SPEED_KPH)]
) -> ModeChange:
    """Accelerate or brake to a speed. Needs drive (up to 180 km/h) or reverse (up to 15 km/h);
    in neutral the car can only slow down; in park only 0 is possible. Changing the speed
    yourself disengages cruise control.

    Args:
        speed_kph: Target speed in km/h, such as 50; 0 brings the car to a stop.

    Returns:
        For example {"speed_kph": 50, "gear": "drive", "cruise_control": {"active": false, ...}}.
    """
    v = _vehicle(ctx)
    action = f"set the speed to {speed_kph} km/h"
    if v.gear == "park":
        if speed_kph == 0:
            return _changed(v, False)
        _fail(action, ("the car is in park", SHIFT_TO_DRIVE), *_leave_park_problems(ctx, v))
    if v.gear == "reverse" and speed_kph > MAX_REVERSE_KPH:
        raise InvalidArgument(
            f"In reverse the speed is limited to {MAX_REVERSE_KPH} km/h; got {speed_kph}."
        )
    if v.gear == "neutral" and speed_kph > v.speed_kph:
        coasting = f"the car is in neutral at {v.speed_kph} km/h and can only slow down"
        _fail(action, (coasting, "Shift to drive with shift_gear (gear='drive') to accelerate"))
    if speed_kph > v.speed_kph and v.energy_level <= 0:
        _fail(action, _no_energy(v, "to accelerate"))
    changed = speed_kph != v.speed_kph or v.cruise_active
    v = ctx.sql.update(Vehicle, v, **CRUISE_OFF, speed_kph=speed_kph)
    return _changed(v, changed)


@server.tool(
    writes=True,
    idempotent=True,
    phrasings=["Please {action} the parking brake", "Could you {action} the handbrake?"],
)
def set_parking_brake(ctx: ToolContext, action: Literal["engage", "release"]) -> ModeChange:
    """Engage or release the parking brake. Engaging needs the car stopped in park; releasing
    is always possible.

    Args:
        action: "engage" or "release".

    Returns:
        For example {"parking_brake": "released", "gear": "park", "changed": true, ...}.
    """
    v = _vehicle(ctx)
    engaged = action == "engage"
    if v.parking_brake == engaged:
        return _changed(v, False)
    if engaged:
        _fail("engage the parking brake", *_stopped_in_park_problems(v))
    v = ctx.sql.update(Vehicle, v, parking_brake=engaged)
    return _changed(v, True)


# --------------------------------------------------------- doors and windows
@server.tool(
    writes=True,
    idempotent=True,
    phrasings=["Open the {position} door", "Could you open the {position} door?"],
)
def open_door(ctx: ToolContext, position: DoorPosition) -> DoorChange:
    """Open one door or the trunk. The car must be stopped in park and the door unlocked.

    Args:
        position: "front_left", "front_right", "rear_left", "rear_right" or "trunk".

    Returns:
        For example {"position": "trunk", "open": true, "locked": false, "changed": true}.
    """
    door = ctx.sql.one(DOOR, position=position)
    if door.is_open:  # an open door is never locked
        return {**_door(door), "changed": False}
    problems = _stopped_in_park_problems(_vehicle(ctx))
    if door.is_locked:
        unlock = "Unlock with set_door_locks (action='unlock') first"
        problems.append((f"{_door_name(position)} is locked", unlock))
    _fail(f"open {_door_name(position)}", *problems)
    door = ctx.sql.update(Door, door, is_open=True)
    return {**_door(door), "changed": True}


@server.tool(
    writes=True,
    inverse_of="open_door",
    idempotent=True,
    phrasings=["Close the {position} door", "Please shut the {position} door"],
)
def close_door(ctx: ToolContext, position: DoorPosition) -> DoorChange:
    """Close one door or the trunk (always possible).

    Args:
        position: "front_left", "front_right", "rear_left", "rear_right" or "trunk".

    Returns:
        For example {"position": "rear_left", "open": false, "locked": false, "changed": true}.
    """
    door = ctx.sql.one(DOOR, position=position)
    changed = door.is_open
    door = ctx.sql.update(Door, door, is_open=False)
    return {**_door(door), "changed": changed}


@server.tool(
    writes=True,
    idempotent=True,
    phrasings=["Please {action} the car", "Could you {action} all the doors?"],
)
def set_door_locks(ctx: ToolContext, action: Literal["lock", "unlock"]) -> Doors:
    """Lock or unlock every door and the trunk at once. Locking needs all of them closed.

    Args:
        action: "lock" or "unlock".

    Returns:
        For example {"doors": [{"position": "front_left", "open": false, "locked": true}, ...]}.
    """
    if action == "lock":
        _fail("lock the doors", *_open_doors_problem(ctx))
    doors = [ctx.sql.update(Door, d, is_locked=action == "lock") for d in _doors(ctx)]
    return {"doors": [_door(d) for d in doors]}


@server.tool(
    writes=True,
    idempotent=True,
    phrasings=[
        "Put the {position} window at {open_percent} percent open",
        "Set the {position} window to {open_percent}%",
    ],
    examples={"open_percent": [0, 25, 50, 100]},
)
def set_window(
    ctx: ToolContext, position: WindowPosition, open_percent: Annotated[int, Field(ge=0, le=100)]
) -> WindowState:
    """Open or close a side window to a given position.

    Args:
        position: "front_left", "front_right", "rear_left" or "rear_right".
        open_percent: 0 closes the window, 100 opens it fully, such as 25.

    Returns:
        For example {"position": "front_left", "open_percent": 25}.
    """
    ctx.sql.update(Window, ctx.sql.one(WINDOW, position=position), open_percent=open_percent)
    return {"position": position, "open_percent": open_percent}


# -------------------------------------------------------- comfort and lights
@server.tool(
    writes=True,
    idempotent=True,
    phrasings=[
        "Set the temperature to {temperature_c} degrees",
        "Set the {zone} side to {temperature_c} degrees",
        "Turn the AC {ac} and the fan to {fan_speed}",
        "Turn the climate control {power}",
    ],
    examples={"temperature_c": [19.5, 21.0, 22.5], "fan_speed": [2, 3, 5]},
)
def set_climate(
    ctx: ToolContext,
    power: OnOff = "on",
    zone: Literal["driver", "passenger", "rear"] | None = None,
    temperature_c: Annotated[float, Field(ge=16, le=30)] | None = None,
    fan_speed: Annotated[int, Field(ge=1, le=7)] | None = None,
    ac: OnOff | None = None,
) -> Climate:
    """Turn climate control on (needs the engine running) and adjust it, or turn it off.

    Args:
        power: "on" turns the climate on and applies the settings; "off" turns it off (then
            give no other settings).
        zone: "driver", "passenger" or "rear"; leave it out to set every zone.
        temperature_c: Target temperature from 16 to 30 in steps of 0.5, such as 21.5.
        fan_speed: Fan level from 1 to 7.
        ac: "on" to run the air conditioning, "off" to stop it.

    Returns:
        For example {"power": "on", "zones": [{"zone": "driver", "temperature_c": 21.5,
        "fan_speed": 3, "ac": "off"}, ...]}.
    """
    v = _vehicle(ctx)
    if power == "off" and any(x is not None for x in (zone, temperature_c, fan_speed, ac)):
        raise InvalidArgument(
            "Turning the climate off takes no settings; drop zone, temperature_c, fan_speed "
            "and ac, or pass power='on' to change them."
        )
    if power == "on":
        temp = None if temperature_c is None else Decimal(str(temperature_c))
        if temp is not None and (temp * 2) % 1 != 0:
            raise InvalidArgument(
                f"temperature_c must be between 16 and 30 in steps of 0.5 (such as 21.5), "
                f"got {temperature_c}."
            )
        if not v.engine_on:
            _fail("turn on climate control", ENGINE_OFF)
        for z in ctx.sql.all(ZONES):
            if zone in (None, z.zone):
                ctx.sql.update(
                    ClimateZone,
                    z,
                    target_temp_c=z.target_temp_c if temp is None else temp,
                    fan_speed=z.fan_speed if fan_speed is None else fan_speed,
                    ac_on=z.ac_on if ac is None else ac == "on",
                )
    v = ctx.sql.update(Vehicle, v, climate_on=power == "on")
    return _climate(ctx, v)


@server.tool(
    writes=True,
    idempotent=True,
    phrasings=["Turn the {seat} seat heater to {level}", "Heat the {seat} seat on level {level}"],
    examples={"level": [0, 1, 2, 3]},
)
def set_seat_heating(
    ctx: ToolContext, seat: SeatPosition, level: Annotated[int, Field(ge=0, le=3)]
) -> SeatHeating:
    """Set a seat heater's level; levels above 0 need the engine running.

    Args:
        seat: "driver", "passenger", "rear_left" or "rear_right".
        level: 0 (off) to 3 (hottest), such as 2.

    Returns:
        For example {"seat": "driver", "heat_level": 2}.
    """
    if level > 0 and not _vehicle(ctx).engine_on:
        _fail(f"heat the {seat.replace('_', '-')} seat", ENGINE_OFF)
    ctx.sql.update(Seat, ctx.sql.one(SEAT, position=seat), heat_level=level)
    return {"seat": seat, "heat_level": level}


@server.tool(
    writes=True,
    idempotent=True,
    phrasings=[
        "Headlights {headlights}, please",
        "Turn the hazard lights {hazard_lights}",
        "Switch the fog lights {fog_lights}",
    ],
)
def set_lights(
    ctx: ToolContext,
    headlights: Literal["off", "on", "auto"] | None = None,
    fog_lights: OnOff | None = None,
    hazard_lights: OnOff | None = None,
) -> Lights:
    """Set the exterior lights; only the ones you pass change. Fog lights need the headlights on
    or on auto; switching the headlights off also switches the fog lights off.

    Args:
        headlights: "off", "on" or "auto".
        fog_lights: "on" or "off".
        hazard_lights: "on" or "off" (hazards work with the engine off too).

    Returns:
        For example {"headlights": "on", "fog_lights": "on", "hazard_lights": "off"}.
    """
    if headlights is None and fog_lights is None and hazard_lights is None:
        raise InvalidArgument("Nothing to change: pass headlights, fog_lights or hazard_lights.")
    v = _vehicle(ctx)
    lights = headlights or v.headlights
    if fog_lights == "on" and lights == "off":
        same_call = "Pass headlights='on' or 'auto' in the same call"
        _fail("turn on the fog lights", ("the headlights are off", same_call))
    fog = v.fog_lights if fog_lights is None else fog_lights == "on"
    hazard = v.hazard_lights if hazard_lights is None else hazard_lights == "on"
    v = ctx.sql.update(
        Vehicle, v, headlights=lights, fog_lights=fog and lights != "off", hazard_lights=hazard
    )
    return _lights(v)


@server.tool(
    stands_in_for=("set_speed",),
    writes=True,
    idempotent=True,
    phrasings=[
        "Please {action} cruise control",
        "I'd like you to {action} cruise control at {speed_kph} km/h",
    ],
    examples={"speed_kph": [60, 90, 110]},
)
def set_cruise_control(
    ctx: ToolContext,
    action: Literal["engage", "cancel"],
    speed_kph: Annotated[int, Field(ge=CRUISE_MIN_KPH, le=MAX_SPEED_KPH)] | None = None,
) -> ModeChange:
    """Engage cruise control (in drive, at 40 km/h or faster) or cancel it. Engaging holds the
    given speed, or the current speed if none is given.

    Args:
        action: "engage" or "cancel".
        speed_kph: Speed to hold, 40-180 km/h, such as 100 (only with "engage").

    Returns:
        For example {"cruise_control": {"active": true, "speed_kph": 100}, "speed_kph": 100, ...}.
    """
    v = _vehicle(ctx)
    if action == "cancel":
        if speed_kph is not None:
            raise InvalidArgument("speed_kph only applies when engaging cruise control.")
        was = v.cruise_active
        return _changed(ctx.sql.update(Vehicle, v, **CRUISE_OFF), was)
    problems: list[Problem] = []
    if v.gear != "drive":
        what = f"the car is in {v.gear}, and cruise control works only in drive"
        reach = f"reach at least {CRUISE_MIN_KPH} km/h with set_speed first"
        problems.append((what, f"Shift to drive with shift_gear and {reach}"))
    elif v.speed_kph < CRUISE_MIN_KPH:
        what = f"the car is going {v.speed_kph} km/h, below the {CRUISE_MIN_KPH} km/h minimum"
        problems.append((what, f"Speed up to at least {CRUISE_MIN_KPH} km/h with set_speed first"))
    target = speed_kph if speed_kph is not None else v.speed_kph
    if target > v.speed_kph and v.energy_level <= 0:
        problems.append(_no_energy(v, f"to speed up to {target} km/h"))
    _fail("engage cruise control", *problems)
    changed = not v.cruise_active or v.cruise_speed_kph != target
    v = ctx.sql.update(Vehicle, v, cruise_active=True, cruise_speed_kph=target, speed_kph=target)
    return _changed(v, changed)


# ---------------------------------------------------------------- navigation
@server.tool(
    writes=True,
    returns="destination",
    phrasings=["Navigate to {destination_id}", "Set a route to saved place {destination_id}"],
)
def set_route(ctx: ToolContext, destination_id: DestinationRow) -> NewRoute:
    """Start navigation from where the car is to a saved place; it replaces any active route.
    Distance and ETA are computed from the stored coordinates.

    Args:
        destination_id: The saved place, such as "dst_004" (see list_saved_destinations).

    Returns:
        For example {"route_id": "rte_0002", "destination_id": "dst_004", "distance_km": 12.5,
        "eta_minutes": 18, "range_km": 334, "enough_energy": true, ...}.
    """
    dest = destination_id  # the core has resolved the id to its row
    v = _vehicle(ctx)
    km = _distance_from_here(v, dest)
    if km < ARRIVED_KM:
        raise PreconditionFailed(
            f"The car is already at {dest.name} ({dest.id}); pick another destination."
        )
    previous = ctx.sql.first(ACTIVE_ROUTE)
    if previous is not None:
        ctx.sql.update(Route, previous, status="cancelled")
    route_id = next_id(ctx, Route.id, "rte", 4)
    ctx.sql.insert(
        Route,
        id=route_id,
        destination_id=dest.id,
        origin_label=v.location_label,
        distance_km=km,
        eta_minutes=eta_minutes(km),
        status="active",
    )
    return {
        **_route_dict(ctx.sql.one(ROUTE, id=route_id)),
        "replaced_route_id": previous.id if previous else None,
        "range_km": range_km(v.energy_level, v.consumption_per_100km),
        "enough_energy": energy_needed(km, v.consumption_per_100km) <= v.energy_level,
    }


@server.tool(
    writes=True,
    returns=("trip", "destination"),
    phrasings=["Start driving to the destination I set", "Follow the route to the destination"],
)
def drive_route(ctx: ToolContext) -> Arrival:
    """Drive the active navigation route to its end. The car must be in drive (engine on, doors
    closed, parking brake released) with enough fuel or charge for the distance. On arrival the
    car is at the destination at 0 km/h, still in drive, and the trip is logged.

    Returns:
        For example {"trip_id": "trp_0081", "destination_id": "dst_004", "distance_km": 12.5,
        "energy_used": 0.9, "arrived_at": "2026-03-02T10:48", "energy": {...}, ...}.
    """
    v = _vehicle(ctx)
    route = ctx.sql.first(ACTIVE_ROUTE)
    if route is None:
        raise PreconditionFailed("There is no active route. Set one with set_route first.")
    problems: list[Problem] = []
    if v.gear != "drive":
        problems.append((f"the car is in {v.gear}", SHIFT_TO_DRIVE))
        if v.gear == "park":
            problems += _leave_park_problems(ctx, v)
    need = energy_needed(route.distance_km, v.consumption_per_100km)
    if need > v.energy_level:
        unit, what = _fuel(v)
        problems.append(
            (
                f"there is not enough {what} for this {route.distance_km} km route: it needs "
                f"{need} {unit} and {v.energy_level} {unit} is left (range "
                f"{range_km(v.energy_level, v.consumption_per_100km)} km)",
                "Stop in park, turn the engine off and use refuel_or_charge first",
            )
        )
    _fail("drive the route", *problems)
    dest = ctx.sql.one(DESTINATION, id=route.destination_id)
    last_end = ctx.sql.scalar(LAST_TRIP_END)
    start = max(ctx.now, last_end) if last_end is not None else ctx.now
    end = start + dt.timedelta(minutes=route.eta_minutes)
    trip_id = next_id(ctx, Trip.id, "trp", 4)
    # written in the order the ORM flushed them (by model name), so the bytes are the same
    ctx.sql.update(Route, route, status="completed")
    ctx.sql.insert(
        Trip,
        id=trip_id,
        started_at=start,
        ended_at=end,
        origin_label=v.location_label,
        destination_label=dest.name,
        destination_id=dest.id,
        distance_km=route.distance_km,
        energy_used=need,
        avg_speed_kph=max(1, round(float(route.distance_km) * 60 / route.eta_minutes)),
    )
    v = ctx.sql.update(
        Vehicle,
        v,
        energy_level=v.energy_level - need,
        odometer_km=v.odometer_km + route.distance_km,
        latitude=dest.latitude,
        longitude=dest.longitude,
        location_label=dest.name,
        speed_kph=0,
        **CRUISE_OFF,
    )
    return {
        "trip_id": trip_id,
        "route_id": route.id,
        "destination_id": dest.id,
        "destination_name": dest.name,
        "distance_km": float(route.distance_km),
        "energy_used": float(need),
        "departed_at": start.isoformat(timespec="minutes"),
        "arrived_at": end.isoformat(timespec="minutes"),
        **_mode(v),
        "energy": _energy(v),
        "odometer_km": float(v.odometer_km),
    }


@server.tool(
    writes=True,
    phrasings=["Top the car up to full", "Top the car up by {amount}"],
    examples={"amount": [5.0, 10.0, 20.0]},
)
def refuel_or_charge(ctx: ToolContext, amount: float | None = None) -> Refill:
    """Add fuel (litres) or charge (kWh), or fill up completely when no amount is given. The
    engine must be off.

    Args:
        amount: Litres or kWh to add, such as 20.0; at most what still fits.

    Returns:
        For example {"added": 31.6, "energy": {"level": 60.0, "capacity": 60.0, "percent": 100,
        "range_km": 857, ...}}.
    """
    v = _vehicle(ctx)
    unit, what = _fuel(v)
    added = room = v.energy_capacity - v.energy_level
    if room <= 0:
        _fail("refuel or charge", (f"the {what} is already full", "No refill is needed"))
    # Not a Field constraint: a full tank is reported first, and amounts round to a tenth.
    if amount is not None:
        try:
            added = Decimal(str(amount)).quantize(TENTH)
        except InvalidOperation:  # too large to hold in tenths
            added = Decimal(0)
        if not added > 0:
            raise InvalidArgument(f"amount must be a positive number of {unit}, got {amount}.")
        if added > room:
            raise InvalidArgument(
                f"Only {room} {unit} fits ({v.energy_level} of {v.energy_capacity} {unit}); "
                f"pass amount at most {room}, or omit it to fill up."
            )
    if v.engine_on:
        _fail("refuel or charge", ("the engine is running", "Turn it off with stop_engine first"))
    v = ctx.sql.update(Vehicle, v, energy_level=v.energy_level + added)
    return {"added": float(added), "unit": unit, "energy": _energy(v)}


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests.
@server.entity(
    "destination",
    key="destination_id",
    model=Destination,
    label="saved destination",
    not_found="Call list_saved_destinations (optionally with a query such as 'home') to find "
    "the id.",
)
def _destinations(ctx: ToolContext) -> list[dict]:
    """Saved places the car is not already at (so a route to them makes sense)."""
    v = _vehicle(ctx)
    rows = ctx.sql.all(DESTINATIONS)
    return [
        {
            "destination_id": d.id,
            "name": d.name,
            "category": d.category,
            "query": d.name.split(" (")[0],
            "distance_km": float(_distance_from_here(v, d)),
        }
        for d in rows
        if _distance_from_here(v, d) >= ARRIVED_KM
    ]


@server.entity(
    "trip", key="trip_id", model=Trip, not_found="Call get_trip_log to find the trip's id."
)
def _trips(ctx: ToolContext) -> list[dict]:
    rows = ctx.sql.all(TRIPS)
    return [
        {
            "trip_id": t.id,
            "destination_id": t.destination_id,
            "date": t.started_at.date().isoformat(),
        }
        for t in rows
    ]
