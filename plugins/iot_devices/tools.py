"""The iot_devices server's 25 tools. Docstrings are what the model reads: keep examples concrete.

Device rules have names (:data:`RULES`); a tool that refuses a command raises
``PreconditionFailed`` (``InvalidArgument`` for a command sent to the wrong kind of device)
with a message that starts with ``Rule '<name>' failed:``, names the device and its limit,
and says what to do instead. Every check runs before anything is written (a scene checks
all of its settings before applying any), and the session rolls back a call that fails
anyway.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import bindparam, delete, func, select, update

from prove_gym.server import (
    Bound,
    Conflict,
    Entity,
    EnvVersion,
    InvalidArgument,
    NotRequired,
    PreconditionFailed,
    Principal,
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
    TRIGGERS,
    Automation,
    Base,
    Clock,
    Device,
    Home,
    Reading,
    Room,
    Scene,
    SceneAction,
    power_draw_w,
)
from .sampler import sample_iot_devices

RULES: dict[str, str] = {
    "offline": "An offline device takes no command and cannot be saved into a scene until it "
    "reconnects (check its power or Wi-Fi); its last_seen_at says since when.",
    "device_kind": "Each command works on one kind of device (a light, thermostat, lock, "
    "blind, plug or sensor); get_device tells a device's kind.",
    "not_dimmable": "A light that is not dimmable has only full brightness (100); switch it "
    "on or off instead.",
    "color_temperature": "A light takes a colour temperature only within its own range "
    "(color_temp_range_k); a light without a range has a fixed white.",
    "setpoint_range": "A thermostat's setpoint stays within its own minimum and maximum "
    "(setpoint_range_c), in steps of 0.5 degrees C.",
    "thermostat_off": "A thermostat in mode 'off' takes no setpoint: set the mode to heat, "
    "cool or auto first.",
    "lock_jammed": "A jammed lock takes no lock or unlock command until someone frees the "
    "bolt by hand.",
    "door_open": "A lock cannot lock while its door's contact sensor reports the door open.",
    "plug_overload": "A plug cannot switch on an appliance that draws more than the plug's "
    "rated maximum load (max_load_w).",
    "same_home": "A device moves only between rooms of its own home; a scene's devices and "
    "an automation's sensor and scene belong to the home they are created in.",
    "scene_devices": "A scene saves the current state of 1 to 20 distinct lights, "
    "thermostats, locks, blinds or plugs (sensors have no state to set).",
    "unique_name": "Scene names and automation names are unique within a home (case-insensitive).",
    "trigger_type": "Motion sensors trigger on motion_detected or motion_cleared, contact "
    "sensors on opened or closed; temperature and humidity sensors trigger nothing.",
    "scene_in_use": "A scene that an automation runs cannot be deleted; delete that "
    "automation first.",
    "sensor_offline": "An automation whose trigger sensor is offline cannot be enabled.",
}


OUT_OF_SCOPE = (
    "Update the firmware on every device.",
    "Pair a new smart speaker with the living room.",
    "Show me the live camera feed from the front door.",
    "Ask the voice assistant to play some jazz.",
    "Order new batteries for the motion sensor.",
    "Reset the Wi-Fi password for the home network.",
    "Share access to my home with my neighbour.",
    "Run the robot vacuum in the kitchen.",
    "Predict my electricity bill for next month.",
    "Set the oven to 200 degrees.",
    "Call the alarm company.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

MEMBER = 1
"""The env version from which a session acts for a member of one home."""

CLOCK = 2
"""The env version (``prove/iot_devices-v2``) from which time passes inside a session: a call
whose effect takes time advances the home's clock by its declared duration (:data:`TAKES`),
and the home moves on meanwhile (:func:`_elapse`). It also scopes list_homes and
search_devices to the member's home (in -v1 they still showed every home)."""

BLIND_SECONDS_FULL = 30
"""Seconds a blind takes from closed (0) to fully open (100)."""
LOCK_SECONDS = 3
"""Seconds a lock's bolt takes to move."""
DEGREES_PER_MINUTE = Decimal("0.1")
"""How fast a thermostat moves its room's temperature toward the setpoint."""
MOTION_HOLD = dt.timedelta(minutes=2)
"""How long a motion sensor reports motion after its newest reading of motion."""
MINUTE = dt.timedelta(minutes=1)

TAKES: dict[str, str] = {
    "set_blind_position": "0.3 s per percent the blind moves "
    f"({BLIND_SECONDS_FULL} s from closed to fully open), rounded up to a whole second",
    "set_lock": f"{LOCK_SECONDS} s when the bolt moves",
    "set_thermostat_setpoint": "until the room reaches the setpoint: the thermostat moves its "
    f"room's temperature {DEGREES_PER_MINUTE} C toward it on each whole minute (heat only "
    "warms, cool only cools, auto both, off neither)",
    "set_thermostat_mode": "as set_thermostat_setpoint: until the room reaches the setpoint",
    "activate_scene": "the longest of its settings' durations (its devices move together)",
}
"""The duration each call takes from prove/iot_devices-v2 on (every other call takes none):
the call returns once its effect is complete, the clock that much later."""

server = Server(
    "iot_devices",
    out_of_scope=OUT_OF_SCOPE,
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.2.0",
    env_versions=[
        EnvVersion(
            MEMBER,
            "acts for a member of one home (the task's principal): a call on another "
            "home, or on its rooms, devices, scenes or automations, is refused with "
            "permission_denied (rule not_your_home) and changes nothing",
            tasks_file=Path(__file__).with_name("tasks_v1.jsonl"),
            principal=Principal(
                "home",
                "You are signed in as a member of home {id} and act for it: a call naming "
                "another home, or a room, device, scene or automation of another home, is "
                "refused (rule 'not_your_home'). list_homes shows your home's name.",
            ),
        ),
        EnvVersion(
            CLOCK,
            "time passes inside a task: a call whose effect takes time (a blind moving, a "
            "bolt, a thermostat reaching its setpoint, a scene of those) advances the home's "
            "clock by its declared duration, and meanwhile thermostats move their rooms' "
            "temperature toward the setpoint (new readings of the room's temperature "
            "sensors), motion sensors clear two minutes after their last motion, and an "
            "enabled automation whose trigger a new reading reports runs its scene; "
            "list_homes and search_devices show only the member's home; keeps v1's member",
            tasks_file=Path(__file__).with_name("tasks_v2.jsonl"),
            instructions="Time: the home has a clock that starts at the state's current time "
            "and moves only when a call's effect takes time; the call returns once its effect "
            "is complete, that much later. Durations: "
            + "; ".join(f"{tool}: {text}" for tool, text in TAKES.items())
            + ". Every other call takes no time. While time passes, on each whole minute: a "
            "motion sensor whose newest motion reading is two minutes old or more reports "
            "clear (a new reading of 0); each online thermostat in heat, cool or auto moves "
            "its own temperature (current_temp_c) and that of its room's online temperature "
            "sensors (a new reading each) 0.1 C toward its setpoint; then every enabled "
            "automation whose sensor reported its trigger runs its scene (by automation id; "
            "once per reading; not when the scene cannot apply cleanly), which sets its "
            "last_triggered_at and the scene's last_activated_at to that minute. "
            "Timestamps that tools write (a scene's or automation's created_at, "
            "last_activated_at) are the clock's, and a device's last_seen_at says when it last "
            "reported: a device you command (alone or in a scene) at the end of the call, a "
            "thermostat or sensor also on each minute its value moves, so a command's result "
            "shows the clock's time. list_homes and search_devices show only your home.",
        ),
    ],
    base=Base,
    sampler=sample_iot_devices,
    description="Smart homes: rooms with lights (brightness, colour temperature), "
    "thermostats (mode and setpoint range), door locks, blinds (0-100% open), smart plugs "
    "with power draw, and temperature, humidity, motion and door sensors with a reading "
    "history; scenes (saved device states applied together) and automations (a sensor "
    "event runs a scene).",
    instructions="Smart-home conventions: ids look like 'hom_01' (home), 'rm_004' (room), "
    "'dev_0012' (device: light, thermostat, lock, blind, plug or sensor), 'scn_003' (scene), "
    "'aut_002' (automation). Temperatures are degrees Celsius, power is watts, blind "
    "positions are percent open (0 closed, 100 fully open), colour temperature is kelvin. "
    "list_rooms shows every room's devices by kind and get_device a device's state and "
    "limits. Rules the tools enforce (a refusal names the rule): "
    + " ".join(f"{name}: {text}" for name, text in RULES.items()),
)

HomeRow = Annotated[Record[Home], Entity("home")]
RoomRow = Annotated[Record[Room], Entity("room")]
DeviceRow = Annotated[Record[Device], Entity("device")]
LightRow = Annotated[Record[Device], Entity("light")]
ThermostatRow = Annotated[Record[Device], Entity("thermostat")]
LockRow = Annotated[Record[Device], Entity("lock")]
BlindRow = Annotated[Record[Device], Entity("blind")]
PlugRow = Annotated[Record[Device], Entity("plug")]
SensorRow = Annotated[Record[Device], Entity("sensor")]
TriggerSensorRow = Annotated[Record[Device], Entity("trigger_sensor")]
SceneRow = Annotated[Record[Scene], Entity("scene")]
AutomationRow = Annotated[Record[Automation], Entity("automation")]

OnOff = Literal["on", "off"]
Kind = Literal["light", "thermostat", "lock", "blind", "plug", "sensor"]
HvacMode = Literal["off", "heat", "cool", "auto"]
Trigger = Literal["motion_detected", "motion_cleared", "opened", "closed"]
Limit = Annotated[int, Field(ge=1, le=100)]
SearchText = Annotated[str, Field(min_length=1, max_length=200)]
Name = Annotated[str, Field(min_length=1, max_length=60)]
MAX_SCENE_DEVICES = 20
MAX_SCENES_PER_HOME = 50
MAX_AUTOMATIONS_PER_HOME = 50
UNITS = {"temperature": "C", "humidity": "%", "motion": "motion", "contact": "open"}


# ----------------------------------------------------------------- results
class HomeOut(TypedDict):
    home_id: str
    name: str
    address: str
    owner: str
    rooms: int
    devices: int
    offline_devices: int
    lights_on: int
    unlocked_locks: int
    open_doors: int


class RoomOut(TypedDict):
    room_id: str
    name: str
    floor: int
    lights: list[str]
    thermostats: list[str]
    locks: list[str]
    blinds: list[str]
    plugs: list[str]
    sensors: list[str]


class DeviceSummary(TypedDict):
    device_id: str
    name: str
    kind: str
    room_id: str
    room: str
    online: bool
    state: str


class DeviceOut(TypedDict):
    """A device's state; the fields after ``last_seen_at`` depend on its kind."""

    device_id: str
    name: str
    kind: str
    home_id: str
    room_id: str
    room: str
    manufacturer: str
    model: str
    online: bool
    last_seen_at: str
    power: NotRequired[OnOff]
    dimmable: NotRequired[bool]
    brightness: NotRequired[int]
    color_temp_k: NotRequired[int | None]
    color_temp_range_k: NotRequired[list[int] | None]
    hvac_mode: NotRequired[str]
    setpoint_c: NotRequired[float]
    setpoint_range_c: NotRequired[list[float]]
    current_temp_c: NotRequired[float]
    lock_state: NotRequired[str]
    door: NotRequired[str | None]
    battery_percent: NotRequired[int]
    position: NotRequired[int]
    appliance: NotRequired[str]
    power_draw_w: NotRequired[float]
    max_load_w: NotRequired[int]
    sensor_type: NotRequired[str]
    value: NotRequired[float]
    unit: NotRequired[str]


class DeviceChange(DeviceOut):
    changed: bool


class ReadingOut(TypedDict):
    recorded_at: str
    value: float


class SensorHistory(TypedDict):
    sensor_id: str
    name: str
    sensor_type: str
    unit: str
    online: bool
    readings: list[ReadingOut]
    count: int
    minimum: float | None
    maximum: float | None
    average: float | None


class SceneSummary(TypedDict):
    scene_id: str
    name: str
    home_id: str
    devices: int
    last_activated_at: str | None
    automations: list[str]


class ActionOut(TypedDict):
    device_id: str
    device_name: str
    attribute: str
    value: str


class SceneOut(TypedDict):
    scene_id: str
    name: str
    home_id: str
    created_at: str
    last_activated_at: str | None
    actions: list[ActionOut]


class Activation(TypedDict):
    scene_id: str
    name: str
    activated_at: str
    applied: list[ActionOut]
    changed_devices: list[str]


class AutomationOut(TypedDict):
    automation_id: str
    name: str
    home_id: str
    sensor_id: str
    sensor_name: str
    trigger: str
    scene_id: str
    scene_name: str
    enabled: bool
    last_triggered_at: str | None


class AutomationChange(AutomationOut):
    changed: bool


class Deleted(TypedDict):
    deleted: str
    name: str


class PowerUse(TypedDict):
    device_id: str
    name: str
    kind: str
    room: str
    power_draw_w: float


class EnergyOut(TypedDict):
    home_id: str
    total_w: float
    devices: list[PowerUse]


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
# Rows are named tuples typed as the ORM types them; a row a tool changes is written with
# ctx.sql.update, which (as the ORM did) writes only the columns whose value differs.
devices, rooms, scenes = Device.__table__, Room.__table__, Scene.__table__
automations, scene_actions = Automation.__table__, SceneAction.__table__
HOMES = Query(select(Home.__table__).order_by(Home.id))
ROOMS = Query(select(rooms).order_by(Room.id))
ROOMS_OF_HOME = Query(select(rooms).where(Room.home_id == bindparam("home_id")).order_by(Room.id))
ROOM_COUNT = Query(select(func.count()).where(Room.home_id == bindparam("home_id")))
ROOM_NAME = Query(select(Room.name).where(Room.id == bindparam("id")))
# the devices in the rooms of a home, for list_rooms to group by room
ROOM_DEVICES = Query(
    select(Device.room_id, Device.id, Device.kind)
    .join(rooms, Room.id == Device.room_id)
    .where(Room.home_id == bindparam("home_id"))
    .order_by(Device.id)
)
DEVICE = Query(select(devices).where(Device.id == bindparam("id")))
# a device with its room's name (None when the room is gone)
_DEVICES = select(devices, Room.name.label("room")).select_from(
    devices.outerjoin(rooms, Room.id == Device.room_id)
)
HOME_DEVICES = Query(_DEVICES.where(Device.home_id == bindparam("home_id")).order_by(Device.id))


def _devices_matching(*where: Any) -> Query:
    """search_devices' query: an inner join (it matches the room's name, and finds no device
    without one), narrowed by ``where``."""
    return Query(
        select(devices, Room.name.label("room"))
        .join(rooms, Room.id == Device.room_id)
        .where(
            *where,
            contains(
                bindparam("pattern"),
                Device.name,
                Device.manufacturer,
                Device.model,
                Device.appliance,
                Room.name,
            ),
        )
        .order_by(Device.id)
        .limit(bindparam("limit"))
    )


DEVICES_MATCHING = _devices_matching()
ONLINE_DEVICES = Query(select(devices).where(Device.online.is_(True)).order_by(Device.id))
ONLINE_OF_KIND = Query(
    select(devices)
    .where(Device.online.is_(True), Device.kind == bindparam("kind"))
    .order_by(Device.id)
)
SENSORS = Query(select(devices).where(Device.kind == "sensor").order_by(Device.id))
LATEST_READINGS = Query(
    select(Reading.recorded_at, Reading.value)
    .where(Reading.device_id == bindparam("device_id"))
    .order_by(Reading.recorded_at.desc(), Reading.id.desc())
    .limit(bindparam("limit"))
)
SCENE = Query(select(scenes).where(Scene.id == bindparam("id")))
SCENES = Query(select(scenes).order_by(Scene.id))
SCENES_OF_HOME = Query(
    select(scenes).where(Scene.home_id == bindparam("home_id")).order_by(Scene.id)
)
SCENE_NAMED = Query(  # name: lowercased
    select(Scene.id).where(
        Scene.home_id == bindparam("home_id"), func.lower(Scene.name) == bindparam("name")
    )
)
SCENE_COUNT = Query(select(func.count()).where(Scene.home_id == bindparam("home_id")))
SCENE_DEVICE_COUNT = Query(
    select(func.count(func.distinct(SceneAction.device_id))).where(
        SceneAction.scene_id == bindparam("scene_id")
    )
)
# a scene's settings in order, with each device's name (None when the device is gone)
ACTIONS = Query(
    select(
        SceneAction.device_id,
        Device.name.label("device_name"),
        SceneAction.attribute,
        SceneAction.value,
    )
    .select_from(scene_actions.outerjoin(devices, Device.id == SceneAction.device_id))
    .where(SceneAction.scene_id == bindparam("scene_id"))
    .order_by(SceneAction.position)
)
SCENE_DEVICES = Query(
    select(devices)
    .where(
        Device.id.in_(
            select(SceneAction.device_id).where(SceneAction.scene_id == bindparam("scene_id"))
        )
    )
    .order_by(Device.id)
)
DELETE_SCENE = Query(delete(Scene).where(Scene.id == bindparam("id")))
DELETE_ACTIONS = Query(delete(SceneAction).where(SceneAction.scene_id == bindparam("scene_id")))
SCENE_AUTOMATIONS = Query(
    select(Automation.id)
    .where(Automation.scene_id == bindparam("scene_id"))
    .order_by(Automation.id)
)
# an automation with its sensor's name and state and its scene's name (None when gone)
_AUTOMATIONS = select(
    automations,
    Device.name.label("sensor_name"),
    Device.online.label("sensor_online"),
    Scene.name.label("scene_name"),
).select_from(
    automations.outerjoin(devices, Device.id == Automation.trigger_device_id).outerjoin(
        scenes, Scene.id == Automation.scene_id
    )
)
AUTOMATION = Query(_AUTOMATIONS.where(Automation.id == bindparam("id")))
AUTOMATIONS = Query(_AUTOMATIONS.order_by(Automation.id))
AUTOMATION_NAMED = Query(  # name: lowercased
    select(Automation.id).where(
        Automation.home_id == bindparam("home_id"),
        func.lower(Automation.name) == bindparam("name"),
    )
)
AUTOMATION_COUNT = Query(select(func.count()).where(Automation.home_id == bindparam("home_id")))
DELETE_AUTOMATION = Query(delete(Automation).where(Automation.id == bindparam("id")))
# -v2's: the clock, what moves while time passes, and the member's own home
CLOCK_NOW = Query(select(Clock.now).where(Clock.id == 1))
SET_CLOCK = Query(update(Clock).where(Clock.id == 1).values(now=bindparam("now")))
HOME = Query(select(Home.__table__).where(Home.id == bindparam("home_id")))
ONLINE_SENSORS_OF_TYPE = Query(
    select(devices)
    .where(
        Device.online.is_(True),
        Device.kind == "sensor",
        Device.sensor_type == bindparam("sensor_type"),
    )
    .order_by(Device.id)
)
NEWEST_READING_AT = Query(
    select(Reading.recorded_at)
    .where(Reading.device_id == bindparam("device_id"))
    .order_by(Reading.recorded_at.desc(), Reading.id.desc())
    .limit(1)
)
RUNNING_THERMOSTATS = Query(  # online and in heat, cool or auto
    select(devices)
    .where(Device.online.is_(True), Device.kind == "thermostat", Device.hvac_mode != "off")
    .order_by(Device.id)
)
TRIGGERED = Query(  # the enabled automations a sensor's event runs
    select(automations)
    .where(
        Automation.trigger_device_id == bindparam("sensor_id"),
        Automation.trigger == bindparam("trigger"),
        Automation.enabled.is_(True),
    )
    .order_by(Automation.id)
)
DEVICES_MATCHING_IN_HOME = _devices_matching(Device.home_id == bindparam("home_id"))


@functools.cache
def _devices_of_home(by_kind: bool, by_room: bool, by_online: bool) -> Query:
    """A home's devices by id, at most ``limit``, optionally filtered: list_devices'."""
    stmt = _DEVICES.where(Device.home_id == bindparam("home_id"))
    if by_kind:
        stmt = stmt.where(Device.kind == bindparam("kind"))
    if by_room:
        stmt = stmt.where(Device.room_id == bindparam("room_id"))
    if by_online:
        stmt = stmt.where(Device.online == bindparam("online"))
    return Query(stmt.order_by(Device.id).limit(bindparam("limit")))


@functools.cache
def _automations_of_home(by_enabled: bool) -> Query:
    """A home's automations by id, optionally only enabled or disabled: list_automations'."""
    stmt = _AUTOMATIONS.where(Automation.home_id == bindparam("home_id"))
    if by_enabled:
        stmt = stmt.where(Automation.enabled == bindparam("enabled"))
    return Query(stmt.order_by(Automation.id))


# ----------------------------------------------------------------- helpers
# A device is a row of DEVICE (a Record[Device] parameter) or of a statement that adds its
# room's name (_DEVICES: ``d.room``).
def _refuse(rule: str, message: str) -> None:
    raise PreconditionFailed(f"Rule '{rule}' failed: {message}")


def _label(d: Any) -> str:
    return f"{d.name} ({d.id})"


def _when(value: Any) -> str | None:
    return None if value is None else value.isoformat(timespec="minutes")


def _require_kind(d: Any, kind: str, what: str) -> None:
    if d.kind != kind:
        raise InvalidArgument(
            f"Rule 'device_kind' failed: {_label(d)} is a {d.kind}, not a {kind}; {what} works "
            f"only on {kind}s. Pick a {kind} from list_rooms or list_devices (kind='{kind}')."
        )


def _require_online(d: Any) -> None:
    if not d.online:
        _refuse(
            "offline",
            f"{_label(d)} is offline (last seen {_when(d.last_seen_at)}) and cannot take "
            "commands until it reconnects; check its power or Wi-Fi, then try again.",
        )


def _door(ctx: ToolContext, lock: Any) -> Any | None:
    """The contact sensor of a lock's door, if it has one."""
    if lock.contact_sensor_id is None:
        return None
    return ctx.sql.first(DEVICE, id=lock.contact_sensor_id)


def _door_open(ctx: ToolContext, lock: Any) -> bool:
    door = _door(ctx, lock)
    return door is not None and door.value == 1


def _room_name(ctx: ToolContext, d: Any) -> str:
    name = ctx.sql.scalar(ROOM_NAME, id=d.room_id)
    return name if name is not None else ""


def _home_devices(ctx: ToolContext, home_id: str) -> list[Any]:
    """A home's devices by id, with their rooms' names."""
    return ctx.sql.all(HOME_DEVICES, home_id=home_id)


def _device(ctx: ToolContext, d: Any) -> DeviceOut:
    out: DeviceOut = {
        "device_id": d.id,
        "name": d.name,
        "kind": d.kind,
        "home_id": d.home_id,
        "room_id": d.room_id,
        "room": _room_name(ctx, d),
        "manufacturer": d.manufacturer,
        "model": d.model,
        "online": d.online,
        "last_seen_at": d.last_seen_at.isoformat(timespec="minutes"),
    }
    if d.kind == "light":
        out["power"] = "on" if d.is_on else "off"
        out["dimmable"] = bool(d.dimmable)
        out["brightness"] = d.brightness or 0
        out["color_temp_k"] = d.color_temp_k
        ct = d.color_temp_min_k is not None and d.color_temp_max_k is not None
        out["color_temp_range_k"] = (
            [d.color_temp_min_k or 0, d.color_temp_max_k or 0] if ct else None
        )
        out["power_draw_w"] = float(power_draw_w(d))
    elif d.kind == "thermostat":
        out["hvac_mode"] = d.hvac_mode or "off"
        out["setpoint_c"] = float(d.setpoint_c or 0)
        out["setpoint_range_c"] = [float(d.min_setpoint_c or 0), float(d.max_setpoint_c or 0)]
        out["current_temp_c"] = float(d.current_temp_c or 0)
    elif d.kind == "lock":
        out["lock_state"] = d.lock_state or "unlocked"
        door = _door(ctx, d)
        out["door"] = None if door is None else ("open" if door.value == 1 else "closed")
        out["battery_percent"] = d.battery_percent or 0
    elif d.kind == "blind":
        out["position"] = d.position or 0
    elif d.kind == "plug":
        out["power"] = "on" if d.is_on else "off"
        out["appliance"] = d.appliance or ""
        out["power_draw_w"] = float(power_draw_w(d))
        out["max_load_w"] = d.max_load_w or 0
    else:
        out["sensor_type"] = d.sensor_type or ""
        out["value"] = float(d.value or 0)
        out["unit"] = UNITS.get(d.sensor_type or "", "")
        out["battery_percent"] = d.battery_percent or 0
    return out


def _changed(ctx: ToolContext, d: Any, changed: bool) -> DeviceChange:
    return {**_device(ctx, d), "changed": changed}


def _state_text(ctx: ToolContext, d: Any) -> str:
    """A one-line state, such as "on, 60%, 2700 K" or "heat to 21.5 C (now 20.3 C)"."""
    if d.kind == "light":
        if not d.is_on:
            return "off"
        parts = ["on"] + ([f"{d.brightness}%"] if d.dimmable else [])
        return ", ".join(parts + ([f"{d.color_temp_k} K"] if d.color_temp_k else []))
    if d.kind == "thermostat":
        now = f"now {d.current_temp_c} C"
        return (
            f"off ({now})" if d.hvac_mode == "off" else f"{d.hvac_mode} to {d.setpoint_c} C ({now})"
        )
    if d.kind == "lock":
        return (d.lock_state or "") + (", door open" if _door_open(ctx, d) else "")
    if d.kind == "blind":
        return f"{d.position}% open"
    if d.kind == "plug":
        return f"{'on' if d.is_on else 'off'} ({d.appliance}, {power_draw_w(d)} W)"
    return _reading(d)


def _reading(d: Any) -> str:
    """A sensor's state as people read it: a contact is open or closed, motion seen or not."""
    if d.sensor_type == "contact":
        return "contact open" if d.value == 1 else "contact closed"
    if d.sensor_type == "motion":
        return "motion detected" if d.value == 1 else "no motion"
    return f"{d.sensor_type} {d.value} {UNITS.get(d.sensor_type or '', '')}".strip()


def _summary(ctx: ToolContext, d: Any) -> DeviceSummary:
    """A device row of a statement that adds its room's name (``_DEVICES``)."""
    return {
        "device_id": d.id,
        "name": d.name,
        "kind": d.kind,
        "room_id": d.room_id,
        "room": d.room if d.room is not None else "",
        "online": d.online,
        "state": _state_text(ctx, d),
    }


def _actions(ctx: ToolContext, scene: Any) -> list[ActionOut]:
    return [
        {
            "device_id": a.device_id,
            "device_name": a.device_name if a.device_name is not None else "",
            "attribute": a.attribute,
            "value": a.value,
        }
        for a in ctx.sql.all(ACTIONS, scene_id=scene.id)
    ]


def _scene(ctx: ToolContext, scene: Any) -> SceneOut:
    return {
        "scene_id": scene.id,
        "name": scene.name,
        "home_id": scene.home_id,
        "created_at": scene.created_at.isoformat(timespec="minutes"),
        "last_activated_at": _when(scene.last_activated_at),
        "actions": _actions(ctx, scene),
    }


def _automation(a: Any) -> AutomationOut:
    """An automation row of ``_AUTOMATIONS`` (with its sensor's and scene's names)."""
    return {
        "automation_id": a.id,
        "name": a.name,
        "home_id": a.home_id,
        "sensor_id": a.trigger_device_id,
        "sensor_name": a.sensor_name if a.sensor_name is not None else "",
        "trigger": a.trigger,
        "scene_id": a.scene_id,
        "scene_name": a.scene_name if a.scene_name is not None else "",
        "enabled": a.enabled,
        "last_triggered_at": _when(a.last_triggered_at),
    }


def _check_setpoint(d: Any, value: Decimal, mode: str | None) -> str | None:
    """Why ``value`` cannot be the setpoint of thermostat ``d`` in ``mode``, or None."""
    lo, hi = d.min_setpoint_c, d.max_setpoint_c
    if mode == "off":
        return (
            f"thermostat_off|{_label(d)} is off and takes no setpoint; set its mode to heat, "
            "cool or auto first."
        )
    if lo is not None and hi is not None and not lo <= value <= hi:
        return (
            f"setpoint_range|{value} C is outside {_label(d)}'s setpoint range of {lo} to {hi} C; "
            f"pick a temperature from {lo} to {hi}."
        )
    return None


def _check_kelvin(d: Any, kelvin: int) -> str | None:
    lo, hi = d.color_temp_min_k, d.color_temp_max_k
    if lo is None or hi is None:
        return (
            f"color_temperature|{_label(d)} has a fixed white and no colour temperature; "
            "change its brightness or power instead."
        )
    if not lo <= kelvin <= hi:
        return (
            f"color_temperature|{kelvin} K is outside {_label(d)}'s range of {lo} to {hi} K; "
            f"pick a value from {lo} to {hi}."
        )
    return None


def _check_brightness(d: Any, brightness: int) -> str | None:
    if not d.dimmable and brightness != 100:
        return (
            f"not_dimmable|{_label(d)} is not dimmable: it has only full brightness (100); "
            "switch it on or off instead."
        )
    return None


def _check_plug_on(d: Any) -> str | None:
    if d.load_w is not None and d.max_load_w is not None and d.load_w > d.max_load_w:
        return (
            f"plug_overload|{_label(d)} is rated for at most {d.max_load_w} W but its "
            f"{d.appliance} draws {d.load_w} W; plug the appliance into an outlet or plug rated "
            "for its load."
        )
    return None


def _check_lock(ctx: ToolContext, d: Any, state: str) -> str | None:
    if d.lock_state == "jammed":
        return (
            f"lock_jammed|{_label(d)} is jammed and takes no lock or unlock command; someone "
            "has to free the bolt by hand."
        )
    door = _door(ctx, d) if state == "locked" else None
    if door is not None and door.value == 1:
        return (
            f"door_open|{_label(d)} cannot lock while {door.name} reports the door open; close "
            "the door first."
        )
    return None


def _raise(problem: str | None) -> None:
    if problem is not None:
        rule, _, message = problem.partition("|")
        _refuse(rule, message)


# ------------------------------------------------------------------- clock
# From prove/iot_devices-v2 a call whose effect takes time (TAKES) returns once it is complete:
# the clock (the one row of Clock; the sampled ctx.now until a call first moves it) advances
# by the call's duration and the home moves on meanwhile, one whole minute at a time
# (_elapse). Earlier versions never write the clock and act at ctx.now.
def _now(ctx: ToolContext) -> dt.datetime:
    """The moment the tools act at: the clock's from -v2 on, else the sampled ``ctx.now``."""
    if ctx.env_version < CLOCK:
        return ctx.now
    at = ctx.sql.scalar(CLOCK_NOW)
    return ctx.now if at is None else at


def _blind_seconds(before: int | None, after: int | None) -> int:
    """Seconds a blind takes from ``before`` to ``after`` percent open (rounded up).

    >>> _blind_seconds(0, 100), _blind_seconds(40, 35), _blind_seconds(50, 50)
    (30, 2, 0)
    """
    moved = abs((after or 0) - (before or 0))
    return -(-moved * BLIND_SECONDS_FULL // 100)


def _target(thermostat: Any, temperature: Decimal | None) -> Decimal | None:
    """Where ``thermostat`` drives a room at ``temperature``: its setpoint, when it is online
    and its mode moves that way (heat warms, cool cools, auto both); else ``None``."""
    if temperature is None or thermostat.setpoint_c is None or not thermostat.online:
        return None
    if temperature < thermostat.setpoint_c and thermostat.hvac_mode in ("heat", "auto"):
        return thermostat.setpoint_c
    if temperature > thermostat.setpoint_c and thermostat.hvac_mode in ("cool", "auto"):
        return thermostat.setpoint_c
    return None


def _toward(value: Decimal, target: Decimal) -> Decimal:
    """One minute's move of ``value`` toward ``target``, never past it.

    >>> _toward(Decimal("20.0"), Decimal("21.0")), _toward(Decimal("20.95"), Decimal("21.0"))
    (Decimal('20.1'), Decimal('21.0'))
    """
    if value < target:
        return min(value + DEGREES_PER_MINUTE, target)
    return max(value - DEGREES_PER_MINUTE, target)


def _next_minute(at: dt.datetime) -> dt.datetime:
    """The first whole minute after ``at`` (strictly)."""
    return at.replace(second=0, microsecond=0) + MINUTE


def _reach_seconds(start: dt.datetime, thermostat: Any) -> int:
    """Seconds from ``start`` until ``thermostat`` has brought its own temperature to its
    setpoint (one step of :data:`DEGREES_PER_MINUTE` on each whole minute), or 0."""
    temperature, minutes = thermostat.current_temp_c, 0
    target = _target(thermostat, temperature)
    while target is not None and temperature != target:
        temperature, minutes = _toward(temperature, target), minutes + 1
    if not minutes:
        return 0
    return int((_next_minute(start) + (minutes - 1) * MINUTE - start).total_seconds())


def _elapse(ctx: ToolContext, seconds: int) -> None:
    """Let ``seconds`` pass (from -v2 on; earlier versions take no time): the home moves on
    at each whole minute the clock passes (:func:`_tick`), then the clock stands at the end.

    Deterministic: the minutes are visited in order and within one everything in id order.
    It stops visiting minutes as soon as nothing can move any more (no thermostat away from
    its setpoint, no motion sensor still to clear), which changes nothing but the work."""
    if ctx.env_version < CLOCK or seconds <= 0:
        return
    start = _now(ctx)
    end = start + dt.timedelta(seconds=seconds)
    minute = _next_minute(start)
    while minute <= end and _tick(ctx, minute):
        minute += MINUTE
    if ctx.sql.run(SET_CLOCK, now=end) == 0:
        ctx.sql.insert(Clock, id=1, now=end)


def _after(ctx: ToolContext, d: Any, seconds: int) -> Any:
    """Device ``d`` once a command to it has taken its ``seconds`` (:func:`_elapse`) and it
    has reported its new state then (its last_seen_at): from -v2 on; before, ``d``."""
    if ctx.env_version < CLOCK:
        return d
    _elapse(ctx, seconds)
    d = ctx.sql.one(DEVICE, id=d.id)
    return ctx.sql.update(Device, d, last_seen_at=_now(ctx))


def _reached(ctx: ToolContext, d: Any) -> Any:
    """Thermostat ``d`` once its room has reached the setpoint (from -v2 on: the call takes
    that long, :func:`_reach_seconds`); in earlier versions ``d`` as it is."""
    if ctx.env_version < CLOCK:
        return d
    return _after(ctx, d, _reach_seconds(_now(ctx), d))


def _record(ctx: ToolContext, sensor: Any, value: Decimal, at: dt.datetime) -> None:
    """A sensor's new reading at ``at``: a Reading row, its value and last_seen_at."""
    ctx.sql.insert(
        Reading,
        id=next_id(ctx, Reading.id, "rdg", 6),
        device_id=sensor.id,
        recorded_at=at,
        value=value,
    )
    ctx.sql.update(Device, sensor, value=value, last_seen_at=at)


def _tick(ctx: ToolContext, at: dt.datetime) -> bool:
    """The home at whole minute ``at``, in this order: motion sensors clear (by id),
    thermostats and their rooms' temperature sensors move 0.1 C toward the setpoint (by id),
    then the automations the new readings trigger run their scenes (by sensor, then
    automation id). True while something may still move at a later minute."""
    moving = False
    events: list[tuple[str, str]] = []
    for sensor in ctx.sql.all(ONLINE_SENSORS_OF_TYPE, sensor_type="motion"):
        if sensor.value != 1:
            continue
        seen = ctx.sql.scalar(NEWEST_READING_AT, device_id=sensor.id)
        if seen is not None and seen + MOTION_HOLD > at:
            moving = True  # it clears at a later minute
            continue
        _record(ctx, sensor, Decimal(0), at)
        events.append((sensor.id, "motion_cleared"))
    rooms_thermostat: dict[str, Any] = {}
    for thermostat in ctx.sql.all(RUNNING_THERMOSTATS):
        rooms_thermostat.setdefault(thermostat.room_id, thermostat)  # the first by id
        target = _target(thermostat, thermostat.current_temp_c)
        if target is not None:
            temperature = _toward(thermostat.current_temp_c, target)
            ctx.sql.update(Device, thermostat, current_temp_c=temperature, last_seen_at=at)
            moving = moving or temperature != target
    for sensor in ctx.sql.all(ONLINE_SENSORS_OF_TYPE, sensor_type="temperature"):
        thermostat = rooms_thermostat.get(sensor.room_id)
        target = None if thermostat is None else _target(thermostat, sensor.value)
        if target is not None:
            value = _toward(sensor.value, target)
            _record(ctx, sensor, value, at)
            moving = moving or value != target
    for sensor_id, trigger in sorted(events):
        for automation in ctx.sql.all(TRIGGERED, sensor_id=sensor_id, trigger=trigger):
            scene = ctx.sql.first(SCENE, id=automation.scene_id)
            try:
                plan = None if scene is None else _plan(ctx, scene)
            except PreconditionFailed:
                plan = None  # a scene that cannot apply cleanly does not run
            if scene is None or plan is None:
                continue
            _apply(ctx, scene, plan, at)
            ctx.sql.update(Automation, automation, last_triggered_at=at)
            moving = True  # its scene may have set a thermostat going
    return moving


# --------------------------------------------------- examples for synthesis
SCENE_MOODS = ("evening", "morning", "night", "relax", "welcome")
"""What a scene is for, after the room (or home) it sets: "Kitchen evening"."""


def scene_name_for(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A scene name that says where it acts: the room of its devices ("Office evening"),
    or the home's when they are in several rooms; not "Reading Time" for a kettle."""
    rooms = set()
    for device_id in bound.args.get("device_ids") or []:
        device = ctx.sql.first(DEVICE, id=str(device_id))
        if device is None:
            return None
        rooms.add(ctx.sql.scalar(ROOM_NAME, id=device.room_id) if device.room_id else None)
    place = rooms.pop() if len(rooms) == 1 and None not in rooms else "Home"
    return f"{place} {rng.choice(SCENE_MOODS)}"


def automation_name_for(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """An automation name that says what starts it: the sensor and its event ("Garage
    Side Door opened"), not "Quiet hall" for a garage door that runs Movie Night."""
    sensor = ctx.sql.first(DEVICE, id=str(bound.args.get("sensor_id", "")))
    trigger = str(bound.args.get("trigger", "")).replace("_", " ")
    if sensor is None or not trigger:
        return None
    place = sensor.name.removesuffix(" Sensor")
    first, _, rest = trigger.partition(" ")
    if rest and place.lower().endswith(first):  # "Hall Motion detected", not "motion motion"
        trigger = rest
    return f"{place} {trigger}"


def _device_query(ctx: ToolContext, rng: random.Random) -> str:
    words = ["Lamp", "Ceiling", "Thermostat", "Lock", "Blind", "Heater", "Motion", "Hue", "Kettle"]
    return rng.choice(words)


# ------------------------------------------------------------------- reads
@server.tool(
    returns="home",
    phrasings=["Show my homes", "Which of my homes has lights on or doors unlocked?"],
)
def list_homes(ctx: ToolContext) -> list[HomeOut]:
    """List the homes on this account with a quick status: rooms, devices, offline devices,
    lights on, unlocked locks and open doors. From prove/iot_devices-v2 only your own home.

    Returns:
        For example [{"home_id": "hom_01", "name": "Main House", "address": "12 Oak St, Salem,
        OR", "rooms": 8, "devices": 41, "offline_devices": 2, "lights_on": 5,
        "unlocked_locks": 1, "open_doors": 0, ...}].
    """
    out: list[HomeOut] = []
    scoped = ctx.env_version >= CLOCK and ctx.principal is not None
    homes = ctx.sql.all(HOME, home_id=ctx.principal) if scoped else ctx.sql.all(HOMES)
    for h in homes:
        devices = _home_devices(ctx, h.id)
        out.append(
            {
                "home_id": h.id,
                "name": h.name,
                "address": h.address,
                "owner": h.owner_name,
                "rooms": ctx.sql.scalar(ROOM_COUNT, home_id=h.id) or 0,
                "devices": len(devices),
                "offline_devices": sum(not d.online for d in devices),
                "lights_on": sum(d.kind == "light" and d.is_on for d in devices),
                "unlocked_locks": sum(
                    d.kind == "lock" and d.lock_state == "unlocked" for d in devices
                ),
                "open_doors": sum(d.sensor_type == "contact" and d.value == 1 for d in devices),
            }
        )
    return out


@server.tool(
    returns=("room", "light", "thermostat", "lock", "blind", "plug", "sensor"),
    phrasings=["What rooms and devices are in {home_id}?", "Show the rooms of home {home_id}"],
)
def list_rooms(ctx: ToolContext, home_id: HomeRow) -> list[RoomOut]:
    """List a home's rooms with the ids of their devices, grouped by kind.

    Args:
        home_id: The home, such as "hom_01" (see list_homes).

    Returns:
        For example [{"room_id": "rm_001", "name": "Living Room", "floor": 1, "lights":
        ["dev_0001", "dev_0002"], "thermostats": ["dev_0005"], "locks": [], "blinds":
        ["dev_0003"], "plugs": ["dev_0008"], "sensors": ["dev_0006"]}, ...].
    """
    in_room: dict[str, list[Any]] = {}
    for d in ctx.sql.all(ROOM_DEVICES, home_id=home_id.id):
        in_room.setdefault(d.room_id, []).append(d)
    out: list[RoomOut] = []
    for r in ctx.sql.all(ROOMS_OF_HOME, home_id=home_id.id):
        ids: dict[str, list[str]] = {
            k: [] for k in ("light", "thermostat", "lock", "blind", "plug", "sensor")
        }
        for d in in_room.get(r.id, []):
            ids[d.kind].append(d.id)
        out.append(
            {
                "room_id": r.id,
                "name": r.name,
                "floor": r.floor,
                "lights": ids["light"],
                "thermostats": ids["thermostat"],
                "locks": ids["lock"],
                "blinds": ids["blind"],
                "plugs": ids["plug"],
                "sensors": ids["sensor"],
            }
        )
    return out


@server.tool(
    stands_in_for=("search_devices",),
    returns=("device", "room"),
    phrasings=[
        "List the {kind} devices in {home_id}",
        "What devices are there in {home_id}?",
        "What's in room {room_id}?",
    ],
)
def list_devices(
    ctx: ToolContext,
    home_id: HomeRow,
    kind: Kind | None = None,
    room_id: RoomRow | None = None,
    online: bool | None = None,
    limit: Limit = 50,
) -> list[DeviceSummary]:
    """List a home's devices with a one-line state each, by device id.

    Args:
        home_id: The home, such as "hom_01".
        kind: Only this kind: "light", "thermostat", "lock", "blind", "plug" or "sensor".
        room_id: Only devices in this room of the home, such as "rm_003".
        online: true for devices that are online only, false for offline ones only.
        limit: Maximum number of devices to return (1-100).

    Returns:
        For example [{"device_id": "dev_0001", "name": "Living Room Ceiling Light", "kind":
        "light", "room_id": "rm_001", "room": "Living Room", "online": true, "state": "on, 60%,
        2700 K"}, ...].
    """
    if room_id is not None and room_id.home_id != home_id.id:
        raise InvalidArgument(
            f"Rule 'same_home' failed: room {room_id.id} ({room_id.name}) is in home "
            f"{room_id.home_id}, not {home_id.id}; pass a room of {home_id.id} (see list_rooms)."
        )
    params: dict[str, Any] = {"home_id": home_id.id, "limit": limit}
    if kind is not None:
        params["kind"] = kind
    if room_id is not None:
        params["room_id"] = room_id.id
    if online is not None:
        params["online"] = online
    query = _devices_of_home("kind" in params, "room_id" in params, "online" in params)
    return [_summary(ctx, d) for d in ctx.sql.all(query, **params)]


@server.tool(
    returns="device",
    phrasings=["Find my {query} devices", "Search for devices named {query}"],
    examples={"query": _device_query},
)
def search_devices(ctx: ToolContext, query: SearchText, limit: Limit = 20) -> list[DeviceSummary]:
    """Find devices in every home whose name, room, appliance, manufacturer or model contains
    the text (case-insensitive), by device id. From prove/iot_devices-v2 only in your own home.

    Args:
        query: Text to look for, such as "lamp", "Kitchen" or "Hue".
        limit: Maximum number of devices to return (1-100).

    Returns:
        For example [{"device_id": "dev_0002", "name": "Living Room Floor Lamp", "kind": "light",
        "room": "Living Room", "online": true, "state": "off", ...}].
    """
    text = query.strip()
    if not text:
        raise InvalidArgument("query is blank; pass some text such as 'lamp' or 'Kitchen'.")
    pattern = search_pattern(text)
    if ctx.env_version >= CLOCK and ctx.principal is not None:  # the member's home only
        found = ctx.sql.all(
            DEVICES_MATCHING_IN_HOME, home_id=ctx.principal, pattern=pattern, limit=limit
        )
    else:
        found = ctx.sql.all(DEVICES_MATCHING, pattern=pattern, limit=limit)
    return [_summary(ctx, d) for d in found]


@server.tool(
    returns=("device", "home"),
    phrasings=["What's the status of {device_id}?", "Show me device {device_id} and its limits"],
)
def get_device(ctx: ToolContext, device_id: DeviceRow) -> DeviceOut:
    """Get one device's full state, capabilities and limits: a light's power, brightness,
    whether it is dimmable and its colour-temperature range; a thermostat's mode, setpoint
    and setpoint range; a lock's state and door; a blind's position; a plug's appliance,
    power draw and rated load; a sensor's latest value.

    Args:
        device_id: The device, such as "dev_0012".

    Returns:
        For example {"device_id": "dev_0005", "name": "Living Room Thermostat", "kind":
        "thermostat", "online": true, "hvac_mode": "heat", "setpoint_c": 21.0,
        "setpoint_range_c": [16.0, 28.0], "current_temp_c": 20.4, ...}.
    """
    return _device(ctx, device_id)


@server.tool(
    returns="sensor",
    phrasings=[
        "Show the last {limit} readings of sensor {sensor_id}",
        "What has {sensor_id} been reporting?",
    ],
    examples={"limit": [6, 12, 24]},
)
def get_sensor_readings(ctx: ToolContext, sensor_id: SensorRow, limit: Limit = 24) -> SensorHistory:
    """Get a sensor's reading history, newest first, with the minimum, maximum and average of
    the readings returned. Temperature is in C, humidity in %, motion is 1 (motion) or 0,
    contact is 1 (open) or 0 (closed). From prove/iot_devices-v2 sensors add readings while
    time passes (a temperature sensor as its room's thermostat moves it, a motion sensor
    when it clears).

    Args:
        sensor_id: The sensor, such as "dev_0006" (see list_rooms).
        limit: How many of the newest readings to return (1-100), such as 12.

    Returns:
        For example {"sensor_id": "dev_0006", "sensor_type": "temperature", "unit": "C",
        "readings": [{"recorded_at": "2026-03-02T09:00", "value": 21.3}, ...], "count": 12,
        "minimum": 19.8, "maximum": 22.1, "average": 20.9, ...}.
    """
    d = sensor_id
    _require_kind(d, "sensor", "get_sensor_readings")
    rows = ctx.sql.all(LATEST_READINGS, device_id=d.id, limit=limit)
    values = [r.value for r in rows]
    avg = (sum(values, Decimal(0)) / len(values)).quantize(Decimal("0.01")) if values else None
    return {
        "sensor_id": d.id,
        "name": d.name,
        "sensor_type": d.sensor_type or "",
        "unit": UNITS.get(d.sensor_type or "", ""),
        "online": d.online,
        "readings": [
            {"recorded_at": r.recorded_at.isoformat(timespec="minutes"), "value": float(r.value)}
            for r in rows
        ],
        "count": len(rows),
        "minimum": float(min(values)) if values else None,
        "maximum": float(max(values)) if values else None,
        "average": float(avg) if avg is not None else None,
    }


@server.tool(
    returns="scene",
    phrasings=["What scenes do I have in {home_id}?", "List the scenes of {home_id}"],
)
def list_scenes(ctx: ToolContext, home_id: HomeRow) -> list[SceneSummary]:
    """List a home's scenes with how many devices each sets and which automations run it.

    Args:
        home_id: The home, such as "hom_01".

    Returns:
        For example [{"scene_id": "scn_001", "name": "Good Morning", "home_id": "hom_01",
        "devices": 5, "last_activated_at": "2026-03-01T07:00", "automations": ["aut_001"]}].
    """
    out: list[SceneSummary] = []
    for s in ctx.sql.all(SCENES_OF_HOME, home_id=home_id.id):
        devices = ctx.sql.scalar(SCENE_DEVICE_COUNT, scene_id=s.id)
        autos = ctx.sql.scalars(SCENE_AUTOMATIONS, scene_id=s.id)
        out.append(
            {
                "scene_id": s.id,
                "name": s.name,
                "home_id": s.home_id,
                "devices": devices or 0,
                "last_activated_at": _when(s.last_activated_at),
                "automations": autos,
            }
        )
    return out


@server.tool(
    returns=("scene", "device"),
    phrasings=["What does scene {scene_id} do?", "Show me the settings in scene {scene_id}"],
)
def get_scene(ctx: ToolContext, scene_id: SceneRow) -> SceneOut:
    """Get a scene and the settings it applies, in order.

    Args:
        scene_id: The scene, such as "scn_002" (see list_scenes).

    Returns:
        For example {"scene_id": "scn_002", "name": "Movie Night", "actions": [{"device_id":
        "dev_0001", "device_name": "Living Room Ceiling Light", "attribute": "brightness",
        "value": "20"}, {"device_id": "dev_0003", "attribute": "position", "value": "0", ...}]}.
    """
    return _scene(ctx, scene_id)


@server.tool(
    returns=("automation", "scene", "trigger_sensor"),
    phrasings=["Show the automations in {home_id}", "Which automations are enabled in {home_id}?"],
)
def list_automations(
    ctx: ToolContext, home_id: HomeRow, enabled: bool | None = None
) -> list[AutomationOut]:
    """List a home's automations: which sensor event runs which scene, and whether each is on.
    From prove/iot_devices-v2 an enabled automation runs its scene when time passes and its
    sensor reports the trigger (a motion sensor clears two minutes after its last motion);
    last_triggered_at says when it last did.

    Args:
        home_id: The home, such as "hom_01".
        enabled: true for enabled automations only, false for disabled ones only.

    Returns:
        For example [{"automation_id": "aut_001", "name": "Hallway motion lights", "sensor_id":
        "dev_0011", "trigger": "motion_detected", "scene_id": "scn_005", "enabled": true, ...}].
    """
    params: dict[str, Any] = {"home_id": home_id.id}
    if enabled is not None:
        params["enabled"] = enabled
    return [
        _automation(a) for a in ctx.sql.all(_automations_of_home("enabled" in params), **params)
    ]


@server.tool(
    returns="device",
    phrasings=[
        "How much power is {home_id} using right now?",
        "What is drawing power in {home_id}?",
    ],
)
def get_energy_usage(ctx: ToolContext, home_id: HomeRow) -> EnergyOut:
    """Get the power a home's lights and plugs draw right now, highest first, and the total.
    A plug draws its appliance's load when on; a dimmable light its wattage times brightness.

    Args:
        home_id: The home, such as "hom_01".

    Returns:
        For example {"home_id": "hom_01", "total_w": 1168.5, "devices": [{"device_id": "dev_0009",
        "name": "Kitchen Coffee Maker Plug", "kind": "plug", "room": "Kitchen", "power_draw_w":
        1000.0}, ...]}.
    """
    using = [(power_draw_w(d), d) for d in _home_devices(ctx, home_id.id)]
    using = sorted((p for p in using if p[0] > 0), key=lambda p: (-p[0], p[1].id))
    return {
        "home_id": home_id.id,
        "total_w": float(sum((w for w, _ in using), Decimal("0.0"))),
        "devices": [
            {
                "device_id": d.id,
                "name": d.name,
                "kind": d.kind,
                "room": d.room if d.room is not None else "",
                "power_draw_w": float(w),
            }
            for w, d in using
        ],
    }


# ------------------------------------------------------------------ lights
@server.tool(
    writes=True,
    idempotent=True,
    returns="light",
    phrasings=["Turn {power} the light {light_id}", "Switch light {light_id} {power}"],
)
def set_light_power(ctx: ToolContext, light_id: LightRow, power: OnOff) -> DeviceChange:
    """Switch a light on or off; it comes back on at its last brightness and colour.

    Args:
        light_id: The light, such as "dev_0001" (see list_rooms).
        power: "on" or "off".

    Returns:
        For example {"device_id": "dev_0001", "power": "on", "brightness": 60, "changed": true,
        ...}.
    """
    d = light_id
    _require_kind(d, "light", "set_light_power")
    _require_online(d)
    on = power == "on"
    changed = d.is_on != on
    d = ctx.sql.update(Device, d, is_on=on)
    return _changed(ctx, _after(ctx, d, 0), changed)


def light_that_is_on(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The light in ``light_id`` if it is on: "dim the light" of one that is off switches it
    on, undoing "switch it off" the conversation just asked for; None otherwise, so
    synthesis draws another."""
    row = ctx.sql.first(DEVICE, id=str(bound.args.get("light_id", "")))
    return str(row.id) if row is not None and row.is_on else None


@server.tool(
    writes=True,
    idempotent=True,
    returns="light",
    phrasings=[
        "Dim {light_id} to {brightness}%",
        "Set the brightness of {light_id} to {brightness}",
    ],
    examples={"brightness": [20, 40, 75, 100]},
    values={"light_id": light_that_is_on},
)
def set_brightness(
    ctx: ToolContext, light_id: LightRow, brightness: Annotated[int, Field(ge=1, le=100)]
) -> DeviceChange:
    """Set a dimmable light's brightness (1-100 %); the light switches on. A light that is not
    dimmable only takes 100.

    Args:
        light_id: The light, such as "dev_0002".
        brightness: Percent from 1 to 100, such as 40.

    Returns:
        For example {"device_id": "dev_0002", "power": "on", "brightness": 40, "changed": true,
        ...}.
    """
    d = light_id
    _require_kind(d, "light", "set_brightness")
    _require_online(d)
    _raise(_check_brightness(d, brightness))
    changed = not d.is_on or d.brightness != brightness
    d = ctx.sql.update(Device, d, is_on=True, brightness=brightness)
    return _changed(ctx, _after(ctx, d, 0), changed)


@server.tool(
    writes=True,
    idempotent=True,
    returns="light",
    phrasings=[
        "Set {light_id} to {kelvin} kelvin",
        "Make light {light_id} warmer, {kelvin} K please",
    ],
    examples={"kelvin": [2700, 3000, 4000, 5000]},
)
def set_color_temperature(
    ctx: ToolContext, light_id: LightRow, kelvin: Annotated[int, Field(ge=1000, le=10000)]
) -> DeviceChange:
    """Set a tunable-white light's colour temperature in kelvin (2700 is warm, 6500 is cool
    daylight), within the light's own color_temp_range_k (see get_device). It does not switch
    the light on or off.

    Args:
        light_id: The light, such as "dev_0001".
        kelvin: Colour temperature, such as 2700.

    Returns:
        For example {"device_id": "dev_0001", "color_temp_k": 2700, "color_temp_range_k":
        [2200, 6500], "changed": true, ...}.
    """
    d = light_id
    _require_kind(d, "light", "set_color_temperature")
    _require_online(d)
    _raise(_check_kelvin(d, kelvin))
    changed = d.color_temp_k != kelvin
    d = ctx.sql.update(Device, d, color_temp_k=kelvin)
    return _changed(ctx, _after(ctx, d, 0), changed)


# ------------------------------------------------------------- thermostats
@server.tool(
    writes=True,
    idempotent=True,
    returns="thermostat",
    phrasings=["Set thermostat {thermostat_id} to {mode} mode", "Switch {thermostat_id} to {mode}"],
)
def set_thermostat_mode(
    ctx: ToolContext, thermostat_id: ThermostatRow, mode: HvacMode
) -> DeviceChange:
    """Set a thermostat's mode: "heat", "cool", "auto" (heats or cools to the setpoint) or
    "off". The setpoint is kept. From prove/iot_devices-v2 the call returns once the room has
    reached the setpoint (0.1 C per minute; heat only warms, cool only cools), so
    current_temp_c shows it reached and the home's clock that much later.

    Args:
        thermostat_id: The thermostat, such as "dev_0005".
        mode: "off", "heat", "cool" or "auto".

    Returns:
        For example {"device_id": "dev_0005", "hvac_mode": "heat", "setpoint_c": 21.0,
        "changed": true, ...}.
    """
    d = thermostat_id
    _require_kind(d, "thermostat", "set_thermostat_mode")
    _require_online(d)
    changed = d.hvac_mode != mode
    d = ctx.sql.update(Device, d, hvac_mode=mode)
    return _changed(ctx, _reached(ctx, d), changed)


@server.tool(
    writes=True,
    idempotent=True,
    returns="thermostat",
    phrasings=[
        "Set thermostat {thermostat_id} to {temperature_c} degrees",
        "Change the temperature on {thermostat_id} to {temperature_c} C",
    ],
    examples={"temperature_c": [19.0, 20.5, 21.0, 22.5]},
)
def set_thermostat_setpoint(
    ctx: ToolContext,
    thermostat_id: ThermostatRow,
    temperature_c: Annotated[float, Field(ge=5, le=35)],
) -> DeviceChange:
    """Set a thermostat's target temperature in degrees C, in steps of 0.5, within its own
    setpoint_range_c (see get_device). The thermostat must be in heat, cool or auto mode.
    From prove/iot_devices-v2 the call returns once the room has reached it (0.1 C per
    minute; heat only warms, cool only cools): current_temp_c shows it reached, the room's
    temperature sensors have new readings, and the home's clock is that much later.

    Args:
        thermostat_id: The thermostat, such as "dev_0005".
        temperature_c: Target temperature, such as 21.5.

    Returns:
        For example {"device_id": "dev_0005", "hvac_mode": "heat", "setpoint_c": 21.5,
        "setpoint_range_c": [16.0, 28.0], "changed": true, ...}.
    """
    d = thermostat_id
    _require_kind(d, "thermostat", "set_thermostat_setpoint")
    value = Decimal(str(temperature_c)).quantize(TENTH) if (temperature_c * 2) % 1 == 0 else None
    if value is None:
        raise InvalidArgument(
            f"temperature_c must be in steps of 0.5 degrees (such as 21.5), got {temperature_c}."
        )
    _require_online(d)
    _raise(_check_setpoint(d, value, d.hvac_mode))
    changed = d.setpoint_c != value
    d = ctx.sql.update(Device, d, setpoint_c=value)
    return _changed(ctx, _reached(ctx, d), changed)


# -------------------------------------------------- locks, blinds and plugs
@server.tool(
    writes=True,
    idempotent=True,
    returns="lock",
    phrasings=["Please {action} {lock_id}", "Can you {action} the door lock {lock_id}?"],
)
def set_lock(ctx: ToolContext, lock_id: LockRow, action: Literal["lock", "unlock"]) -> DeviceChange:
    """Lock or unlock a door lock. A jammed lock refuses both; locking needs the door closed
    (the lock's "door" field, from its contact sensor). From prove/iot_devices-v2 moving the
    bolt takes 3 seconds of the home's clock.

    Args:
        lock_id: The lock, such as "dev_0014" (see list_rooms).
        action: "lock" or "unlock".

    Returns:
        For example {"device_id": "dev_0014", "lock_state": "locked", "door": "closed",
        "changed": true, ...}.
    """
    d = lock_id
    _require_kind(d, "lock", "set_lock")
    _require_online(d)
    state = "locked" if action == "lock" else "unlocked"
    _raise(_check_lock(ctx, d, state))
    changed = d.lock_state != state
    d = ctx.sql.update(Device, d, lock_state=state)
    return _changed(ctx, _after(ctx, d, LOCK_SECONDS if changed else 0), changed)


@server.tool(
    writes=True,
    idempotent=True,
    returns="blind",
    phrasings=["Open blind {blind_id} to {position}%", "Set {blind_id} to {position} percent open"],
    examples={"position": [0, 25, 50, 100]},
)
def set_blind_position(
    ctx: ToolContext, blind_id: BlindRow, position: Annotated[int, Field(ge=0, le=100)]
) -> DeviceChange:
    """Move a blind: 0 closes it, 100 opens it fully. From prove/iot_devices-v2 it takes 0.3
    seconds of the home's clock per percent moved (30 s from closed to fully open).

    Args:
        blind_id: The blind, such as "dev_0003".
        position: Percent open from 0 to 100, such as 50.

    Returns:
        For example {"device_id": "dev_0003", "position": 50, "changed": true, ...}.
    """
    d = blind_id
    _require_kind(d, "blind", "set_blind_position")
    _require_online(d)
    changed = d.position != position
    seconds = _blind_seconds(d.position, position)
    d = ctx.sql.update(Device, d, position=position)
    return _changed(ctx, _after(ctx, d, seconds), changed)


@server.tool(
    writes=True,
    idempotent=True,
    returns="plug",
    phrasings=["Turn {power} plug {plug_id}", "Switch the smart plug {plug_id} {power}"],
)
def set_plug_power(ctx: ToolContext, plug_id: PlugRow, power: OnOff) -> DeviceChange:
    """Switch a smart plug (and the appliance on it) on or off. A plug cannot switch on an
    appliance that draws more than its rated max_load_w.

    Args:
        plug_id: The plug, such as "dev_0008".
        power: "on" or "off".

    Returns:
        For example {"device_id": "dev_0008", "power": "on", "appliance": "Coffee Maker",
        "power_draw_w": 1000.0, "max_load_w": 1800, "changed": true, ...}.
    """
    d = plug_id
    _require_kind(d, "plug", "set_plug_power")
    _require_online(d)
    on = power == "on"
    if on:
        _raise(_check_plug_on(d))
    changed = d.is_on != on
    d = ctx.sql.update(Device, d, is_on=on)
    return _changed(ctx, _after(ctx, d, 0), changed)


@server.tool(
    writes=True,
    idempotent=True,
    returns=("device", "room"),
    phrasings=["Move {device_id} to room {room_id}", "I put device {device_id} in {room_id} now"],
)
def move_device(ctx: ToolContext, device_id: DeviceRow, room_id: RoomRow) -> DeviceChange:
    """Assign a device to another room of the same home (after moving it physically). Works
    for offline devices too.

    Args:
        device_id: The device, such as "dev_0002".
        room_id: The room it is in now, such as "rm_004" (see list_rooms).

    Returns:
        For example {"device_id": "dev_0002", "room_id": "rm_004", "room": "Office",
        "changed": true, ...}.
    """
    d, room = device_id, room_id
    if room.home_id != d.home_id:
        _refuse(
            "same_home",
            f"{_label(d)} belongs to home {d.home_id} and room {room.id} ({room.name}) to home "
            f"{room.home_id}; pick a room of {d.home_id} (see list_rooms).",
        )
    changed = d.room_id != room.id
    d = ctx.sql.update(Device, d, room_id=room.id)
    return _changed(ctx, d, changed)


# ------------------------------------------------------------------ scenes
def _snapshot(d: Any) -> list[tuple[str, str]]:
    """The settings that reproduce device ``d``'s current state."""
    if d.kind == "light":
        if not d.is_on:
            return [("power", "off")]
        out = [("power", "on")]
        if d.dimmable:
            out.append(("brightness", str(d.brightness)))
        if d.color_temp_k is not None:
            out.append(("color_temp_k", str(d.color_temp_k)))
        return out
    if d.kind == "plug":
        return [("power", "on" if d.is_on else "off")]
    if d.kind == "thermostat":
        out = [("hvac_mode", d.hvac_mode or "off")]
        if d.hvac_mode != "off":
            out.append(("setpoint_c", str(d.setpoint_c)))
        return out
    if d.kind == "lock":
        return [("lock", d.lock_state or "unlocked")]
    return [("position", str(d.position))]


@server.tool(
    writes=True,
    returns="scene",
    phrasings=[
        "Save the current state of {device_ids} as a scene called {name} in {home_id}",
        "Create a scene {name} in {home_id} from devices {device_ids}",
    ],
    values={"name": scene_name_for},
)
def create_scene(
    ctx: ToolContext,
    home_id: HomeRow,
    name: Name,
    device_ids: Annotated[list[DeviceRow], Field(min_length=1, max_length=MAX_SCENE_DEVICES)],
) -> SceneOut:
    """Save the current state of some devices of a home as a new scene, to apply later with
    activate_scene: a light's power, brightness and colour temperature, a thermostat's mode
    and setpoint, a lock's state, a blind's position, a plug's power. Sensors cannot be in a
    scene; every device must be online and in the home.

    Args:
        home_id: The home, such as "hom_01".
        name: A name not used by another scene of the home, such as "Reading Time".
        device_ids: 1 to 20 devices, such as ["dev_0001", "dev_0003"].

    Returns:
        For example {"scene_id": "scn_011", "name": "Reading Time", "home_id": "hom_01",
        "actions": [{"device_id": "dev_0001", "attribute": "power", "value": "on"}, ...], ...}.
    """
    label = name.strip()
    if not label:
        raise InvalidArgument("name is blank; pass a scene name such as 'Reading Time'.")
    ids = [d.id for d in device_ids]
    if len(set(ids)) != len(ids):
        raise InvalidArgument(
            "Rule 'scene_devices' failed: device_ids lists a device twice; list each device once."
        )
    for d in device_ids:
        if d.home_id != home_id.id:
            _refuse(
                "same_home",
                f"{_label(d)} is in home {d.home_id}, not {home_id.id}; pick devices of "
                f"{home_id.id} (see list_rooms).",
            )
        if d.kind == "sensor":
            _refuse(
                "scene_devices",
                f"{_label(d)} is a sensor and has no state to save; leave it out of the scene.",
            )
        _require_online(d)
        if d.kind == "lock" and d.lock_state == "jammed":
            _raise(_check_lock(ctx, d, "locked"))
    taken = ctx.sql.scalar(SCENE_NAMED, home_id=home_id.id, name=label.lower())
    if taken is not None:
        raise Conflict(
            f"Rule 'unique_name' failed: home {home_id.id} already has a scene named '{label}' "
            f"({taken}); choose another name."
        )
    count = ctx.sql.scalar(SCENE_COUNT, home_id=home_id.id) or 0
    if count >= MAX_SCENES_PER_HOME:
        raise PreconditionFailed(
            f"Home {home_id.id} already has {count} scenes, the most allowed; delete one first."
        )
    scene_id = next_id(ctx, Scene.id, "scn", 3)
    ctx.sql.insert(Scene, id=scene_id, home_id=home_id.id, name=label, created_at=_now(ctx))
    actions: list[dict[str, Any]] = []
    for d in device_ids:
        for attribute, value in _snapshot(d):
            actions.append(
                {
                    "scene_id": scene_id,
                    "position": len(actions) + 1,
                    "device_id": d.id,
                    "attribute": attribute,
                    "value": value,
                }
            )
    ctx.sql.insert_many(SceneAction, actions)
    return _scene(ctx, ctx.sql.one(SCENE, id=scene_id))


def _plan(ctx: ToolContext, scene: Any) -> list[tuple[Any, Any]]:
    """Check every setting of the scene, in order, before any is applied: its (setting,
    device) pairs, the device as it is before the scene applies."""
    problems: list[str] = []
    plan: list[tuple[Any, Any]] = []
    modes: dict[str, str | None] = {}
    seen_offline: set[str] = set()
    devices = {d.id: d for d in ctx.sql.all(SCENE_DEVICES, scene_id=scene.id)}
    for a in ctx.sql.all(ACTIONS, scene_id=scene.id):
        d = devices[a.device_id]
        problem: str | None = None
        if not d.online:
            if d.id in seen_offline:
                continue
            seen_offline.add(d.id)
            problem = f"offline|{_label(d)} is offline (last seen {_when(d.last_seen_at)})"
        elif a.attribute == "power" and a.value == "on" and d.kind == "plug":
            problem = _check_plug_on(d)
        elif a.attribute == "brightness":
            problem = _check_brightness(d, int(a.value))
        elif a.attribute == "color_temp_k":
            problem = _check_kelvin(d, int(a.value))
        elif a.attribute == "hvac_mode":
            modes[d.id] = a.value
        elif a.attribute == "setpoint_c":
            problem = _check_setpoint(d, Decimal(a.value), modes.get(d.id, d.hvac_mode))
        elif a.attribute == "lock":
            problem = _check_lock(ctx, d, a.value)
        if problem is not None:
            problems.append(problem)
        plan.append((a, d))
    if problems:
        rules = sorted({p.partition("|")[0] for p in problems})
        details = "; ".join(p.partition("|")[2].rstrip(".") for p in problems)
        raise PreconditionFailed(
            f"Rule {', '.join(repr(r) for r in rules)} failed: scene {scene.id} ({scene.name}) was "
            f"not applied, nothing changed: {details}. Fix those devices, or save a new scene "
            "without them."
        )
    return plan


def _applied(plan: list[tuple[Any, Any]]) -> tuple[dict[str, Any], set[str]]:
    """Each device of a checked scene (:func:`_plan`) as its settings leave it, and the ids
    of those that end up different."""
    current = {d.id: d for _, d in plan}
    changed: set[str] = set()
    for a, d in plan:
        before = current[d.id]
        current[d.id] = before._replace(**_setting(a.attribute, a.value))
        if _snapshot(current[d.id]) != _snapshot(before):
            changed.add(d.id)
    return current, changed


def scene_that_changes_something(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The scene in ``scene_id`` if running it would change a device (not one saved from
    how the home is right now and run at once, which changes nothing); one the home cannot
    run (an offline device) stays, its refusal being the lesson. None otherwise, so
    synthesis draws another."""
    scene = ctx.sql.first(SCENE, id=str(bound.args.get("scene_id", "")))
    if scene is None:
        return None
    try:
        plan = _plan(ctx, scene)
    except PreconditionFailed:
        return str(scene.id)
    return str(scene.id) if _applied(plan)[1] else None


def _setting(attribute: str, value: str) -> dict[str, Any]:
    """The device columns one scene setting writes (none for an unknown attribute)."""
    if attribute == "power":
        return {"is_on": value == "on"}
    if attribute == "brightness":
        return {"brightness": int(value)}
    if attribute == "color_temp_k":
        return {"color_temp_k": int(value)}
    if attribute == "hvac_mode":
        return {"hvac_mode": value}
    if attribute == "setpoint_c":
        return {"setpoint_c": Decimal(value)}
    if attribute == "lock":
        return {"lock_state": value}
    if attribute == "position":
        return {"position": int(value)}
    return {}


@server.tool(
    writes=True,
    returns=("scene", "device"),
    phrasings=["Activate the scene {scene_id}", "Run scene {scene_id}"],
    values={"scene_id": scene_that_changes_something},
)
def activate_scene(ctx: ToolContext, scene_id: SceneRow) -> Activation:
    """Apply every setting of a scene at once. All or nothing: if any device is offline, a lock
    is jammed or its door open, a plug would overload or a setting is outside a device's
    limits, nothing changes and the refusal lists every problem. From prove/iot_devices-v2
    the call returns once its devices have all moved (the longest of their times: a blind
    0.3 s per percent, a bolt 3 s, a thermostat until the room reaches the setpoint).

    Args:
        scene_id: The scene, such as "scn_003" (see list_scenes).

    Returns:
        For example {"scene_id": "scn_003", "name": "Good Night", "activated_at":
        "2026-03-02T22:00", "applied": [...], "changed_devices": ["dev_0001", "dev_0014"]}.
    """
    scene = scene_id
    now = _now(ctx)
    found, current, changed = _apply(ctx, scene, _plan(ctx, scene), now)
    if ctx.env_version >= CLOCK:  # its devices move together: the longest of their durations
        seconds = [0]
        for device_id in sorted(changed):
            was, now_is = found[device_id], current[device_id]
            if was.kind == "blind":
                seconds.append(_blind_seconds(was.position, now_is.position))
            elif was.kind == "lock" and was.lock_state != now_is.lock_state:
                seconds.append(LOCK_SECONDS)
            elif was.kind == "thermostat":
                seconds.append(_reach_seconds(now, now_is))
        _elapse(ctx, max(seconds))
        for device_id in sorted(current):  # done moving: each reports then
            d = ctx.sql.one(DEVICE, id=device_id)
            ctx.sql.update(Device, d, last_seen_at=_now(ctx))
    return {
        "scene_id": scene.id,
        "name": scene.name,
        "activated_at": now.isoformat(timespec="minutes"),
        "applied": _actions(ctx, scene),
        "changed_devices": sorted(changed),
    }


def _apply(
    ctx: ToolContext, scene: Any, plan: list[tuple[Any, Any]], at: dt.datetime
) -> tuple[dict[str, Any], dict[str, Any], set[str]]:
    """Apply a checked scene (:func:`_plan`) at ``at``: each of its devices as found and as
    left (by id), and the ids of those whose state changed."""
    found = {d.id: d for _, d in plan}  # each device as the scene found it
    current, changed = _applied(plan)  # and as its settings leave it
    if ctx.env_version >= CLOCK:  # each device reports its new state (-v2)
        current = {key: d._replace(last_seen_at=at) for key, d in current.items()}
    # Written as the ORM flushed them: the devices by id, then the scene; ctx.sql.update
    # writes only the columns that end up different (a setting undone later writes nothing).
    for device_id in sorted(current):
        ctx.sql.update(Device, found[device_id], **current[device_id]._asdict())
    ctx.sql.update(Scene, scene, last_activated_at=at)
    return found, current, changed


@server.tool(
    writes=True,
    inverse_of="create_scene",
    destructive=True,
    returns="scene",
    phrasings=["Delete the scene {scene_id}", "Remove scene {scene_id}, I don't use it"],
)
def delete_scene(ctx: ToolContext, scene_id: SceneRow) -> Deleted:
    """Delete a scene. A scene that an automation runs cannot be deleted until that automation
    is deleted.

    Args:
        scene_id: The scene, such as "scn_004".

    Returns:
        For example {"deleted": "scn_004", "name": "Movie Night"}.
    """
    scene = scene_id
    users = ctx.sql.scalars(SCENE_AUTOMATIONS, scene_id=scene.id)
    if users:
        _refuse(
            "scene_in_use",
            f"scene {scene.id} ({scene.name}) is run by automation {', '.join(users)}; delete "
            "that automation first, then delete the scene.",
        )
    # The ORM deleted the scene first, then its settings (no relationship cascades them).
    ctx.sql.run(DELETE_SCENE, id=scene.id)
    ctx.sql.run(DELETE_ACTIONS, scene_id=scene.id)
    return {"deleted": scene.id, "name": scene.name}


# ------------------------------------------------------------- automations
@server.tool(
    writes=True,
    returns=("automation", "scene", "trigger_sensor"),
    phrasings=[
        "When {sensor_id} reports {trigger}, run scene {scene_id}; call it {name} in {home_id}",
        "Create an automation {name} in {home_id} that runs {scene_id} on {trigger} from "
        "{sensor_id}",
    ],
    values={"name": automation_name_for},
)
def create_automation(
    ctx: ToolContext,
    home_id: HomeRow,
    name: Name,
    sensor_id: TriggerSensorRow,
    trigger: Trigger,
    scene_id: SceneRow,
) -> AutomationOut:
    """Create an enabled automation: when the sensor reports the trigger event, the scene runs.
    Motion sensors trigger on "motion_detected" or "motion_cleared", contact (door) sensors
    on "opened" or "closed". The sensor and the scene must belong to the home; the sensor
    must be online.

    Args:
        home_id: The home, such as "hom_01".
        name: A name not used by another automation of the home, such as "Night entry lights".
        sensor_id: The motion or contact sensor, such as "dev_0011".
        trigger: "motion_detected", "motion_cleared", "opened" or "closed".
        scene_id: The scene to run, such as "scn_005".

    Returns:
        For example {"automation_id": "aut_004", "name": "Night entry lights", "sensor_id":
        "dev_0011", "trigger": "motion_detected", "scene_id": "scn_005", "enabled": true, ...}.
    """
    label = name.strip()
    if not label:
        raise InvalidArgument("name is blank; pass a name such as 'Night entry lights'.")
    sensor, scene = sensor_id, scene_id
    _require_kind(sensor, "sensor", "create_automation's sensor_id")
    for what, home in (
        (_label(sensor), sensor.home_id),
        (f"scene {scene.id} ({scene.name})", scene.home_id),
    ):
        if home != home_id.id:
            _refuse(
                "same_home",
                f"{what} is in home {home}, not {home_id.id}; pick one of {home_id.id} (see "
                "list_rooms and list_scenes).",
            )
    allowed = TRIGGERS.get(sensor.sensor_type or "", ())
    if trigger not in allowed:
        fix = (
            f"use {' or '.join(allowed)}" if allowed else "pick a motion or contact sensor instead"
        )
        _refuse(
            "trigger_type",
            f"{_label(sensor)} is a {sensor.sensor_type} sensor and cannot trigger on "
            f"'{trigger}'; {fix}.",
        )
    if not sensor.online:
        _refuse(
            "sensor_offline",
            f"{_label(sensor)} is offline (last seen {_when(sensor.last_seen_at)}), so the "
            "automation could never run; wait for it to reconnect or pick another sensor.",
        )
    taken = ctx.sql.scalar(AUTOMATION_NAMED, home_id=home_id.id, name=label.lower())
    if taken is not None:
        raise Conflict(
            f"Rule 'unique_name' failed: home {home_id.id} already has an automation named "
            f"'{label}' ({taken}); choose another name."
        )
    count = ctx.sql.scalar(AUTOMATION_COUNT, home_id=home_id.id) or 0
    if count >= MAX_AUTOMATIONS_PER_HOME:
        raise PreconditionFailed(
            f"Home {home_id.id} already has {count} automations, the most allowed; delete one first."
        )
    automation_id = next_id(ctx, Automation.id, "aut", 3)
    ctx.sql.insert(
        Automation,
        id=automation_id,
        home_id=home_id.id,
        name=label,
        trigger_device_id=sensor.id,
        trigger=trigger,
        scene_id=scene.id,
        enabled=True,
        created_at=_now(ctx),
        last_triggered_at=None,
    )
    return _automation(ctx.sql.one(AUTOMATION, id=automation_id))


@server.tool(
    writes=True,
    idempotent=True,
    returns=("automation", "scene"),
    phrasings=[
        "Mark automation {automation_id} as {enabled}",
        "Set automation {automation_id} to {enabled}",
    ],
)
def set_automation_enabled(
    ctx: ToolContext, automation_id: AutomationRow, enabled: bool
) -> AutomationChange:
    """Enable or disable an automation. Enabling needs its trigger sensor online.

    Args:
        automation_id: The automation, such as "aut_002" (see list_automations).
        enabled: true to enable it, false to pause it.

    Returns:
        For example {"automation_id": "aut_002", "enabled": false, "changed": true, ...}.
    """
    a = automation_id
    if enabled and not a.enabled:
        sensor = ctx.sql.one(DEVICE, id=a.trigger_device_id)
        if not sensor.online:
            _refuse(
                "sensor_offline",
                f"automation {a.id} ({a.name}) is triggered by {_label(sensor)}, which is offline "
                f"(last seen {_when(sensor.last_seen_at)}); wait for it to reconnect.",
            )
    changed = a.enabled != enabled
    ctx.sql.update(Automation, a, enabled=enabled)
    return {**_automation(ctx.sql.one(AUTOMATION, id=a.id)), "changed": changed}


@server.tool(
    writes=True,
    inverse_of="create_automation",
    destructive=True,
    returns="automation",
    phrasings=["Delete automation {automation_id}", "Remove the automation {automation_id}"],
)
def delete_automation(ctx: ToolContext, automation_id: AutomationRow) -> Deleted:
    """Delete an automation (its scene stays).

    Args:
        automation_id: The automation, such as "aut_003".

    Returns:
        For example {"deleted": "aut_003", "name": "Front door welcome"}.
    """
    a = automation_id
    ctx.sql.run(DELETE_AUTOMATION, id=a.id)
    return {"deleted": a.id, "name": a.name}


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests. Records carry
# "home_id" so the draws of one request agree on the home, and suggested new values (a field
# named like a write's parameter) that the device can take.
def _rows(ctx: ToolContext, kind: str | None = None) -> list[Any]:
    """Online devices by id, of one kind or all."""
    if kind is None:
        return ctx.sql.all(ONLINE_DEVICES)
    return ctx.sql.all(ONLINE_OF_KIND, kind=kind)


@server.entity(
    "home", key="home_id", model=Home, not_found="Call list_homes to find the home's id."
)
def _homes(ctx: ToolContext) -> list[dict]:
    out = []
    for h in ctx.sql.all(HOMES):
        scene_ready = [
            d.id
            for d in _home_devices(ctx, h.id)
            if d.online and d.kind != "sensor" and d.lock_state != "jammed"
        ]
        out.append({"home_id": h.id, "home_name": h.name, "device_ids": scene_ready})
    return out


@server.entity(
    "room",
    key="room_id",
    model=Room,
    not_found="Call list_rooms with the home's id to find it.",
    owner="home_id",
)
def _rooms(ctx: ToolContext) -> list[dict]:
    return [
        {"room_id": r.id, "room_name": r.name, "home_id": r.home_id} for r in ctx.sql.all(ROOMS)
    ]


def _device_record(d: Any, key: str) -> dict[str, Any]:
    return {key: d.id, "device_name": d.name, "home_id": d.home_id, "kind": d.kind}


@server.entity(
    "device",
    key="device_id",
    model=Device,
    not_found="Call search_devices, list_devices or list_rooms to find the device's id.",
    owner="home_id",
)
def _devices(ctx: ToolContext) -> list[dict]:
    return [_device_record(d, "device_id") for d in _rows(ctx)]


NOT_FOUND_KIND = "Call list_rooms or list_devices (kind='{kind}') to find the {kind}'s id."


@server.entity(
    "light",
    key="light_id",
    model=Device,
    not_found=NOT_FOUND_KIND.format(kind="light"),
    owner="home_id",
)
def _lights(ctx: ToolContext) -> list[dict]:
    out = []
    for d in _rows(ctx, "light"):
        rec = _device_record(d, "light_id")
        rec["power"] = "off" if d.is_on else "on"
        rec["brightness"] = (30 if d.brightness != 30 else 70) if d.dimmable else 100
        if d.color_temp_min_k is not None and d.color_temp_max_k is not None:
            rec["kelvin"] = 2700 if d.color_temp_k != 2700 and d.color_temp_min_k <= 2700 else 4000
        out.append(rec)
    return out


@server.entity(
    "thermostat",
    key="thermostat_id",
    model=Device,
    not_found=NOT_FOUND_KIND.format(kind="thermostat"),
    owner="home_id",
)
def _thermostats(ctx: ToolContext) -> list[dict]:
    out = []
    for d in _rows(ctx, "thermostat"):
        rec = _device_record(d, "thermostat_id")
        rec["mode"] = "heat" if d.hvac_mode != "heat" else "auto"
        if d.hvac_mode != "off":
            target = Decimal("22.0") if d.setpoint_c != Decimal("22.0") else Decimal("20.5")
            rec["temperature_c"] = float(target)
        out.append(rec)
    return out


@server.entity(
    "lock",
    key="lock_id",
    model=Device,
    not_found=NOT_FOUND_KIND.format(kind="lock"),
    owner="home_id",
)
def _locks(ctx: ToolContext) -> list[dict]:
    out = []
    for d in _rows(ctx, "lock"):
        if d.lock_state == "jammed":
            continue
        rec = _device_record(d, "lock_id")
        rec["action"] = "unlock" if d.lock_state == "locked" or _door_open(ctx, d) else "lock"
        out.append(rec)
    return out


@server.entity(
    "blind",
    key="blind_id",
    model=Device,
    not_found=NOT_FOUND_KIND.format(kind="blind"),
    owner="home_id",
)
def _blinds(ctx: ToolContext) -> list[dict]:
    out = []
    for d in _rows(ctx, "blind"):
        rec = _device_record(d, "blind_id")
        rec["position"] = 100 if (d.position or 0) < 50 else 0
        out.append(rec)
    return out


@server.entity(
    "plug",
    key="plug_id",
    model=Device,
    not_found=NOT_FOUND_KIND.format(kind="plug"),
    owner="home_id",
)
def _plugs(ctx: ToolContext) -> list[dict]:
    out = []
    for d in _rows(ctx, "plug"):
        if _check_plug_on(d) is not None:
            continue
        rec = _device_record(d, "plug_id")
        rec["power"] = "off" if d.is_on else "on"
        rec["appliance"] = d.appliance
        out.append(rec)
    return out


@server.entity(
    "sensor",
    key="sensor_id",
    model=Device,
    not_found=NOT_FOUND_KIND.format(kind="sensor"),
    owner="home_id",
)
def _sensors(ctx: ToolContext) -> list[dict]:
    return [
        {**_device_record(d, "sensor_id"), "sensor_type": d.sensor_type}
        for d in ctx.sql.all(SENSORS)
    ]


@server.entity(
    "trigger_sensor",
    key="sensor_id",
    model=Device,
    label="motion or contact sensor",
    not_found="Call list_rooms or list_devices (kind='sensor') to find a motion or contact "
    "sensor's id.",
    owner="home_id",
)
def _trigger_sensors(ctx: ToolContext) -> list[dict]:
    out = []
    for d in _rows(ctx, "sensor"):
        triggers = TRIGGERS.get(d.sensor_type or "", ())
        if triggers:
            out.append({**_device_record(d, "sensor_id"), "trigger": triggers[0]})
    return out


@server.entity(
    "scene",
    key="scene_id",
    model=Scene,
    not_found="Call list_scenes with the home's id to find it.",
    owner="home_id",
)
def _scenes(ctx: ToolContext) -> list[dict]:
    """Scenes that apply cleanly now (every device online and able to take its setting)."""
    out = []
    for s in ctx.sql.all(SCENES):
        try:
            _plan(ctx, s)
        except PreconditionFailed:
            continue
        out.append({"scene_id": s.id, "scene_name": s.name, "home_id": s.home_id})
    return out


@server.entity(
    "automation",
    key="automation_id",
    model=Automation,
    not_found="Call list_automations with the home's id to find it.",
    owner="home_id",
)
def _automations(ctx: ToolContext) -> list[dict]:
    out = []
    for a in ctx.sql.all(AUTOMATIONS):
        if not a.enabled and not a.sensor_online:  # its sensor offline (or gone)
            continue  # cannot be re-enabled: not worth asking about
        out.append(
            {
                "automation_id": a.id,
                "automation_name": a.name,
                "home_id": a.home_id,
                "enabled": not a.enabled,
            }
        )
    return out
