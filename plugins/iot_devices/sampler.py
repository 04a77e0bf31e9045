"""Realistic smart homes: size 1 gives 2 homes, ~15 rooms, ~70 devices, ~900 sensor readings.

Each home gets a floor plan drawn from :data:`ROOMS` (living room, kitchen, bedrooms,
bathroom, hallway, office, garage...), the devices each room usually has, a day of sensor
readings, a few scenes built from its own devices and automations triggered by its motion
and door sensors. A few devices are offline, a lock may be jammed, a door may be open and a
space heater may sit on a plug too small for it: states the tools' rules must handle. Every
sampled state already obeys those rules (see ``tools.py``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from prove_gym.server import SampleContext

from .models import Automation, Device, Home, Reading, Room, Scene, SceneAction


@dataclass(frozen=True, slots=True)
class Make:
    manufacturer: str
    model: str
    extra: tuple[int, int] = (0, 0)  # lights: colour range K; plugs: (max load W, 0)


LIGHTS_CT = [
    Make("Philips Hue", "White Ambiance A19", (2200, 6500)),
    Make("LIFX", "Mini Color", (1500, 9000)),
    Make("IKEA", "TRADFRI LED1836", (2200, 4000)),
    Make("Nanoleaf", "Essentials A19", (2700, 6500)),
]
LIGHTS_DIM = [Make("Sengled", "Element Classic"), Make("Philips Hue", "White A19")]
LIGHTS_SWITCH = [Make("Leviton", "Decora Smart D215S"), Make("TP-Link Kasa", "HS200 Switch")]
THERMOSTATS = [
    Make("ecobee", "SmartThermostat Premium"),
    Make("Google Nest", "Learning Thermostat"),
    Make("Honeywell", "T9 Smart Thermostat"),
]
LOCKS = [
    Make("August", "Wi-Fi Smart Lock"),
    Make("Yale", "Assure Lock 2"),
    Make("Schlage", "Encode"),
]
BLINDS = [
    Make("Lutron", "Serena Roller Shade"),
    Make("IKEA", "FYRTUR"),
    Make("SmartWings", "Zebra"),
]
PLUGS = [
    Make("TP-Link Kasa", "EP25", (1800, 0)),
    Make("Eve", "Energy", (1800, 0)),
    Make("Meross", "MSS110", (1800, 0)),
    Make("Wyze", "Plug Mini", (1200, 0)),
]
SENSORS = {
    "temperature": Make("Aqara", "Temperature Sensor T1"),
    "humidity": Make("Eve", "Room"),
    "motion": Make("Philips Hue", "Motion Sensor"),
    "contact": Make("SmartThings", "Multipurpose Sensor"),
}

# (device template, name suffix); "plug:<appliance>:<watts>"
ROOMS: list[tuple[str, int, list[str]]] = [
    (
        "Living Room",
        1,
        [
            "light_ct:Ceiling Light",
            "light_dim:Floor Lamp",
            "blind:Left Blind",
            "blind:Right Blind",
            "thermostat:Thermostat",
            "sensor_motion:Motion Sensor",
            "sensor_temperature:Temperature Sensor",
            "plug:TV:120",
        ],
    ),
    (
        "Kitchen",
        1,
        [
            "light_ct:Pendant Lights",
            "light_switch:Under-cabinet Lights",
            "plug:Coffee Maker:1000",
            "plug:Kettle:1500",
            "sensor_motion:Motion Sensor",
        ],
    ),
    ("Hallway", 1, ["light_dim:Hall Light", "lock:Front Door Lock", "sensor_motion:Motion Sensor"]),
    (
        "Main Bedroom",
        2,
        [
            "light_ct:Ceiling Light",
            "light_dim:Bedside Lamp",
            "blind:Blind",
            "sensor_humidity:Humidity Sensor",
            "sensor_temperature:Temperature Sensor",
            "plug:Space Heater:1500",
        ],
    ),
    ("Kids Room", 2, ["light_ct:Ceiling Light", "blind:Blind", "plug:Night Light:5"]),
    ("Guest Room", 2, ["light_dim:Ceiling Light", "blind:Blind", "plug:Fan:45"]),
    (
        "Bathroom",
        2,
        ["light_switch:Vanity Light", "sensor_humidity:Humidity Sensor", "sensor_motion:Motion"],
    ),
    (
        "Office",
        1,
        [
            "light_ct:Desk Lamp",
            "blind:Blind",
            "plug:Monitor:35",
            "plug:Printer:30",
            "sensor_temperature:Temperature Sensor",
        ],
    ),
    (
        "Garage",
        0,
        ["light_switch:Garage Light", "lock:Side Door Lock", "plug:Chest Freezer:150"],
    ),
    ("Patio", 0, ["light_dim:Porch Light", "lock:Back Door Lock", "plug:String Lights:40"]),
    ("Basement", 0, ["light_switch:Basement Light", "sensor_humidity:Humidity Sensor"]),
]
ALWAYS = ("Living Room", "Kitchen", "Hallway", "Main Bedroom", "Bathroom")
HOME_NAMES = ["Main House", "Lake Cabin", "City Apartment", "Beach House", "Mom's House"]
READINGS_PER_SENSOR = 24
NewId = Callable[[str, int], str]


@dataclass(slots=True, eq=False)
class _Reading:
    """A reading as a plain row: readings are most of the rows, and a mapped object costs the
    ORM ~30 µs to build and its flush more to write."""

    id: str
    device_id: str
    recorded_at: dt.datetime
    value: Decimal


class _Home:
    """Numbering and per-home bookkeeping while one home is sampled."""

    def __init__(self, ctx: SampleContext, home: Home) -> None:
        self.ctx, self.home = ctx, home
        self.devices: list[Device] = []


def _tenth(value: float) -> Decimal:
    return Decimal(f"{value:.1f}")


def _half(value: float) -> Decimal:
    return Decimal(round(value * 2)) / 2


def sample_iot_devices(ctx: SampleContext) -> None:
    """Fill an empty database (see the module docstring for sizes)."""
    rng, fake, now = ctx.rng, ctx.fake, ctx.now
    counters = {"rm": 0, "dev": 0, "rdg": 0, "scn": 0, "aut": 0}

    def nid(kind: str, width: int) -> str:
        counters[kind] += 1
        return f"{kind}_{counters[kind]:0{width}d}"

    n_homes = 2 * ctx.size
    readings: list[_Reading] = []
    # Written as the ORM's one flush wrote them (automations, devices, homes, readings, rooms,
    # scenes and scene actions, in that order), off its unit of work: ``first`` holds the
    # rows before the readings, ``later`` those after.
    first: list[Home | Device | Automation] = []
    later: list[Room | Scene | SceneAction] = []
    names = list(HOME_NAMES)
    rng.shuffle(names)
    for h in range(n_homes):
        base = names[h % len(names)]
        name = base if h < len(names) else f"{base} {h // len(names) + 1}"
        home = Home(
            id=f"hom_{h + 1:02d}",
            name=name,
            address=fake.street_address() + ", " + fake.city() + ", " + fake.state_abbr(),
            owner_name=fake.name(),
        )
        first.append(home)
        optional = [r for r in ROOMS if r[0] not in ALWAYS]
        rooms = [r for r in ROOMS if r[0] in ALWAYS] + rng.sample(
            optional, rng.randint(2, len(optional))
        )
        rooms.sort(key=lambda r: [x[0] for x in ROOMS].index(r[0]))
        devices: list[Device] = []
        thermostat_done = False
        for room_name, floor, templates in rooms:
            room = Room(id=nid("rm", 3), home_id=home.id, name=room_name, floor=floor)
            later.append(room)
            for template in templates:
                kind, _, rest = template.partition(":")
                if kind == "thermostat":
                    if thermostat_done:
                        continue
                    thermostat_done = True
                label, _, watts = rest.partition(":")
                d = _device(ctx, kind, label, watts, room_name, now)
                d.id = nid("dev", 4)
                d.home_id, d.room_id = home.id, room.id
                devices.append(d)
        # Front/back door contact sensors paired with their locks.
        for lock in [d for d in devices if d.kind == "lock"]:
            sensor = _device(
                ctx, "sensor_contact", lock.name.replace(" Lock", " Sensor"), "", "", now
            )
            sensor.id = nid("dev", 4)
            sensor.home_id, sensor.room_id = home.id, lock.room_id
            devices.append(sensor)
            lock.contact_sensor_id = sensor.id
        readings += _readings(ctx, devices, nid)
        # Rule-consistent odd states: a lock on an open door is not locked.
        for lock in [d for d in devices if d.kind == "lock"]:
            door = next(d for d in devices if d.id == lock.contact_sensor_id)
            if door.value == 1 and lock.lock_state == "locked":
                lock.lock_state = "unlocked"
        first.extend(devices)
        _scenes_and_automations(ctx, home, devices, nid, first, later)
    by_model: dict[type, list[Home | Device | Automation]] = {}
    for row in first:
        by_model.setdefault(type(row), []).append(row)
    for model in (Automation, Device, Home):
        ctx.insert(by_model.get(model, []))
    ctx.insert(readings, into=Reading)
    ctx.insert(later)


def _device(
    ctx: SampleContext, template: str, label: str, watts: str, room: str, now: dt.datetime
) -> Device:
    rng = ctx.rng
    online = rng.random() >= 0.06
    seen = (
        now - dt.timedelta(minutes=rng.randint(0, 4))
        if online
        else now - dt.timedelta(hours=rng.randint(3, 96), minutes=rng.randrange(60))
    )
    name = f"{room} {label}".strip() if room else label
    common = {"online": online, "last_seen_at": seen.replace(second=0, microsecond=0), "name": name}
    kind = template.split("_")[0]
    if kind == "light":
        make = rng.choice(
            LIGHTS_CT
            if template == "light_ct"
            else LIGHTS_DIM
            if template == "light_dim"
            else LIGHTS_SWITCH
        )
        dimmable = template != "light_switch"
        on = rng.random() < 0.35
        lo, hi = make.extra
        ct = lo > 0
        return Device(
            kind="light",
            manufacturer=make.manufacturer,
            model=make.model,
            is_on=on,
            dimmable=dimmable,
            brightness=rng.choice([20, 40, 60, 80, 100]) if dimmable else 100,
            color_temp_min_k=lo if ct else None,
            color_temp_max_k=hi if ct else None,
            color_temp_k=rng.choice([k for k in (2700, 3000, 4000) if lo <= k <= hi])
            if ct
            else None,
            load_w=Decimal(rng.choice(["9.0", "8.5", "10.0", "11.0"]))
            if dimmable
            else Decimal("40.0"),
            **common,
        )
    if kind == "thermostat":
        make = rng.choice(THERMOSTATS)
        low = Decimal(rng.choice(["10.0", "15.0", "16.0"]))
        high = Decimal(rng.choice(["26.0", "28.0", "30.0"]))
        mode = rng.choices(["heat", "cool", "auto", "off"], weights=[40, 20, 30, 10])[0]
        return Device(
            kind="thermostat",
            manufacturer=make.manufacturer,
            model=make.model,
            hvac_mode=mode,
            setpoint_c=_half(rng.uniform(19.0, 23.0))
            if mode != "cool"
            else _half(rng.uniform(23.0, 25.0)),
            min_setpoint_c=low,
            max_setpoint_c=high,
            current_temp_c=_tenth(rng.uniform(18.0, 24.0)),
            **common,
        )
    if kind == "lock":
        make = rng.choice(LOCKS)
        state = "jammed" if rng.random() < 0.12 else rng.choice(["locked", "locked", "unlocked"])
        return Device(
            kind="lock",
            manufacturer=make.manufacturer,
            model=make.model,
            lock_state=state,
            battery_percent=rng.randint(8, 100),
            **common,
        )
    if kind == "blind":
        make = rng.choice(BLINDS)
        return Device(
            kind="blind",
            manufacturer=make.manufacturer,
            model=make.model,
            position=rng.choice([0, 0, 25, 50, 75, 100, 100]),
            **common,
        )
    if kind == "plug":
        make = rng.choice(PLUGS)
        load = Decimal(watts) + Decimal(rng.randint(-3, 3)) * Decimal("0.1") * (Decimal(watts) > 10)
        over = load > make.extra[0]
        return Device(
            kind="plug",
            manufacturer=make.manufacturer,
            model=make.model,
            appliance=label,
            is_on=(not over) and rng.random() < 0.5,
            load_w=load,
            max_load_w=make.extra[0],
            **common,
        )
    stype = template.split("_")[1]
    make = SENSORS[stype]
    return Device(
        kind="sensor",
        manufacturer=make.manufacturer,
        model=make.model,
        sensor_type=stype,
        battery_percent=rng.randint(5, 100),
        **common,
    )


def _readings(ctx: SampleContext, devices: list[Device], nid: NewId) -> list[_Reading]:
    """A day of readings per sensor, newest at (or before, when offline) the last-seen time."""
    rng = ctx.rng
    out: list[_Reading] = []
    for d in devices:
        if d.kind != "sensor":
            continue
        humid = "Bathroom" in d.name or "Basement" in d.name
        base = (
            rng.uniform(19.0, 22.5)
            if d.sensor_type == "temperature"
            else rng.uniform(48.0, 68.0)
            if humid
            else rng.uniform(32.0, 50.0)
        )
        end = d.last_seen_at.replace(minute=0 if d.online else d.last_seen_at.minute)
        value = Decimal(0)
        for i in range(READINGS_PER_SENSOR - 1, -1, -1):
            at = end - dt.timedelta(hours=i)
            if d.sensor_type in ("temperature", "humidity"):
                value = _tenth(base + rng.uniform(-1.5, 1.5) + (0.8 if 9 <= at.hour <= 18 else 0))
            elif d.sensor_type == "motion":
                value = Decimal(1 if rng.random() < (0.35 if 7 <= at.hour <= 22 else 0.05) else 0)
            else:
                value = Decimal(1 if rng.random() < 0.12 else 0)
            out.append(_Reading(id=nid("rdg", 6), device_id=d.id, recorded_at=at, value=value))
        d.value = value
    return out


def _scenes_and_automations(
    ctx: SampleContext,
    home: Home,
    devices: list[Device],
    nid: NewId,
    first: list[Home | Device | Automation],
    later: list[Room | Scene | SceneAction],
) -> None:
    rng, now = ctx.rng, ctx.now

    def find(kind: str, *words: str) -> list[Device]:
        return [d for d in devices if d.kind == kind and all(w in d.name for w in words)]

    lights = find("light")
    locks = find("lock")
    blinds = find("blind")
    thermostats = find("thermostat")
    plans: list[tuple[str, list[tuple[Device, str, str]]]] = []
    morning: list[tuple[Device, str, str]] = [(b, "position", "100") for b in blinds[:3]]
    for light in find("light", "Kitchen")[:1]:
        morning += _light_on(light, 80, 4000)
    for t in thermostats:
        morning.append(
            (
                t,
                "setpoint_c",
                str(min(max(Decimal("21.0"), t.min_setpoint_c or 0), t.max_setpoint_c or 30)),
            )
        )
    plans.append(("Good Morning", morning))
    movie: list[tuple[Device, str, str]] = []
    for light in find("light", "Living Room"):
        movie += _light_on(light, 20, 2700)
    movie += [(b, "position", "0") for b in find("blind", "Living Room")]
    plans.append(("Movie Night", movie))
    night: list[tuple[Device, str, str]] = [(d, "power", "off") for d in lights]
    night += [(lock, "lock", "locked") for lock in locks]
    for t in thermostats:
        night.append((t, "setpoint_c", str(max(Decimal("18.0"), t.min_setpoint_c or 0))))
    plans.append(("Good Night", night))
    away: list[tuple[Device, str, str]] = [(d, "power", "off") for d in lights]
    away += [(lock, "lock", "locked") for lock in locks]
    away += [(t, "hvac_mode", "off") for t in thermostats]
    plans.append(("Away", away))
    hall = find("light", "Hallway")
    if hall:
        plans.append(("Hallway Lights On", _light_on(hall[0], 60, 3000)))
    plans.append(
        (
            "Welcome Home",
            [(d, "power", "on") for d in lights[:3]] + [(b, "position", "50") for b in blinds[:2]],
        )
    )
    chosen = [p for p in plans if p[1]]
    keep = [p for i, p in enumerate(chosen) if i < 2 or rng.random() < 0.8]
    scenes: dict[str, Scene] = {}
    for name, actions in keep:
        scene = Scene(
            id=nid("scn", 3),
            home_id=home.id,
            name=name,
            created_at=(now - dt.timedelta(days=rng.randint(20, 400))).replace(
                second=0, microsecond=0
            ),
            last_activated_at=(now - dt.timedelta(hours=rng.randint(2, 200))).replace(
                minute=0, second=0, microsecond=0
            )
            if rng.random() < 0.7
            else None,
        )
        later.append(scene)
        scenes[name] = scene
        for pos, (d, attribute, value) in enumerate(actions, 1):
            later.append(
                SceneAction(
                    scene_id=scene.id,
                    position=pos,
                    device_id=d.id,
                    attribute=attribute,
                    value=value,
                )
            )
    # Automations from motion and door sensors to scenes.
    motion = [d for d in devices if d.sensor_type == "motion"]
    contact = [d for d in devices if d.sensor_type == "contact"]
    rules: list[tuple[str, Device, str, str]] = []
    for m in motion:
        if "Hallway" in m.name and "Hallway Lights On" in scenes:
            rules.append(("Hallway motion lights", m, "motion_detected", "Hallway Lights On"))
        elif "Living Room" in m.name and "Movie Night" in scenes and rng.random() < 0.5:
            rules.append(("Living room dim when quiet", m, "motion_cleared", "Movie Night"))
    for c in contact:
        if "Front Door" in c.name and "Welcome Home" in scenes:
            rules.append(("Front door welcome", c, "opened", "Welcome Home"))
        if "Good Night" in scenes and rng.random() < 0.5:
            rules.append(
                (f"{c.name.replace(' Sensor', '')} closed at night", c, "closed", "Good Night")
            )
    for name, sensor, trigger, scene_name in rules:
        first.append(
            Automation(
                id=nid("aut", 3),
                home_id=home.id,
                name=name,
                trigger_device_id=sensor.id,
                trigger=trigger,
                scene_id=scenes[scene_name].id,
                enabled=sensor.online and rng.random() < 0.8,
                created_at=(now - dt.timedelta(days=rng.randint(10, 300))).replace(
                    second=0, microsecond=0
                ),
                last_triggered_at=(now - dt.timedelta(hours=rng.randint(1, 72))).replace(
                    second=0, microsecond=0
                )
                if rng.random() < 0.6
                else None,
            )
        )


def _light_on(light: Device, brightness: int, kelvin: int) -> list[tuple[Device, str, str]]:
    out: list[tuple[Device, str, str]] = [(light, "power", "on")]
    if light.dimmable:
        out.append((light, "brightness", str(brightness)))
    if light.color_temp_min_k is not None and light.color_temp_max_k is not None:
        out.append(
            (
                light,
                "color_temp_k",
                str(min(max(kelvin, light.color_temp_min_k), light.color_temp_max_k)),
            )
        )
    return out
