"""Smart-home state: homes, rooms, devices of six kinds, sensor readings, scenes, automations.

One ``devices`` table holds every kind; the columns a kind does not use stay NULL (see
:data:`KIND_COLUMNS`). Fixed-point quantities (temperatures in degrees Celsius, power in
watts, sensor values) are exact ``Decimal`` values stored as integers of tenths
(``Money(places=1)``), so the state hash never depends on float formatting.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from prove_gym.server import Money, added_later

TENTH = Decimal("0.1")

KINDS = ("light", "thermostat", "lock", "blind", "plug", "sensor")
SENSOR_TYPES = ("temperature", "humidity", "motion", "contact")
HVAC_MODES = ("off", "heat", "cool", "auto")
LOCK_STATES = ("locked", "unlocked", "jammed")

KIND_COLUMNS: dict[str, tuple[str, ...]] = {
    "light": ("dimmable", "brightness", "load_w"),
    "thermostat": ("hvac_mode", "setpoint_c", "min_setpoint_c", "max_setpoint_c", "current_temp_c"),
    "lock": ("lock_state", "battery_percent"),
    "blind": ("position",),
    "plug": ("appliance", "load_w", "max_load_w"),
    "sensor": ("sensor_type", "value", "battery_percent"),
}
"""The columns each kind always fills (lights may also have a colour-temperature range)."""


class Base(DeclarativeBase):
    pass


def _tenths() -> Money:
    """An exact one-decimal quantity (``Money`` stores any fixed-point Decimal)."""
    return Money(places=1)


class Home(Base):
    """A household with its own rooms, devices, scenes and automations."""

    __tablename__ = "homes"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    address: Mapped[str] = mapped_column(String(160))
    owner_name: Mapped[str] = mapped_column(String(80))
    rooms: Mapped[list[Room]] = relationship(order_by="Room.id", viewonly=True)


class Room(Base):
    __tablename__ = "rooms"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    home_id: Mapped[str] = mapped_column(ForeignKey("homes.id"))
    name: Mapped[str] = mapped_column(String(60))
    floor: Mapped[int] = mapped_column(Integer)


class Device(Base):
    """One device. ``online`` False means it answers no command until it reconnects.

    light: ``is_on``, ``dimmable``, ``brightness`` (1-100, kept while off), optional colour
    temperature range ``color_temp_min_k``..``color_temp_max_k`` and ``color_temp_k``,
    ``load_w`` (watts at full brightness).
    thermostat: ``hvac_mode`` (off/heat/cool/auto), ``setpoint_c`` within
    [``min_setpoint_c``, ``max_setpoint_c``], ``current_temp_c``.
    lock: ``lock_state`` (locked/unlocked/jammed), ``battery_percent``, optional
    ``contact_sensor_id`` (the door's contact sensor).
    blind: ``position`` 0 (closed) to 100 (fully open).
    plug: ``is_on``, ``appliance`` plugged in, ``load_w`` it draws, ``max_load_w`` rating.
    sensor: ``sensor_type`` (temperature/humidity/motion/contact), ``value`` (the latest
    reading: degrees C, percent humidity, 1 motion / 0 clear, 1 open / 0 closed).
    """

    __tablename__ = "devices"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    home_id: Mapped[str] = mapped_column(ForeignKey("homes.id"))
    room_id: Mapped[str] = mapped_column(ForeignKey("rooms.id"))
    name: Mapped[str] = mapped_column(String(80))
    kind: Mapped[str] = mapped_column(String(12))
    manufacturer: Mapped[str] = mapped_column(String(40))
    model: Mapped[str] = mapped_column(String(40))
    online: Mapped[bool] = mapped_column(Boolean)
    last_seen_at: Mapped[dt.datetime] = mapped_column(DateTime)
    is_on: Mapped[bool] = mapped_column(Boolean, default=False)
    # lights
    dimmable: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    brightness: Mapped[int | None] = mapped_column(Integer, nullable=True)
    color_temp_min_k: Mapped[int | None] = mapped_column(Integer, nullable=True)
    color_temp_max_k: Mapped[int | None] = mapped_column(Integer, nullable=True)
    color_temp_k: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # thermostats
    hvac_mode: Mapped[str | None] = mapped_column(String(8), nullable=True)
    setpoint_c: Mapped[Decimal | None] = mapped_column(_tenths(), nullable=True)
    min_setpoint_c: Mapped[Decimal | None] = mapped_column(_tenths(), nullable=True)
    max_setpoint_c: Mapped[Decimal | None] = mapped_column(_tenths(), nullable=True)
    current_temp_c: Mapped[Decimal | None] = mapped_column(_tenths(), nullable=True)
    # locks
    lock_state: Mapped[str | None] = mapped_column(String(10), nullable=True)
    contact_sensor_id: Mapped[str | None] = mapped_column(String(16), nullable=True)
    battery_percent: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # blinds
    position: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # plugs (and lights' wattage)
    appliance: Mapped[str | None] = mapped_column(String(60), nullable=True)
    load_w: Mapped[Decimal | None] = mapped_column(_tenths(), nullable=True)
    max_load_w: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # sensors
    sensor_type: Mapped[str | None] = mapped_column(String(12), nullable=True)
    value: Mapped[Decimal | None] = mapped_column(_tenths(), nullable=True)


class Reading(Base):
    """One sensor reading; a sensor's ``value`` is its newest reading."""

    __tablename__ = "readings"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    device_id: Mapped[str] = mapped_column(ForeignKey("devices.id"))
    recorded_at: Mapped[dt.datetime] = mapped_column(DateTime)
    value: Mapped[Decimal] = mapped_column(_tenths())


class Scene(Base):
    """A saved set of device states, applied together by activate_scene."""

    __tablename__ = "scenes"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    home_id: Mapped[str] = mapped_column(ForeignKey("homes.id"))
    name: Mapped[str] = mapped_column(String(60))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    last_activated_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    actions: Mapped[list[SceneAction]] = relationship(
        order_by="SceneAction.position", viewonly=True
    )


class SceneAction(Base):
    """One setting of a scene: ``attribute`` of ``device_id`` becomes ``value``.

    Attributes: power ("on"/"off", lights and plugs), brightness ("1"-"100"), color_temp_k
    ("2700"), hvac_mode ("heat"), setpoint_c ("21.5"), lock ("locked"/"unlocked"),
    position ("0"-"100", blinds).
    """

    __tablename__ = "scene_actions"
    scene_id: Mapped[str] = mapped_column(ForeignKey("scenes.id"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    device_id: Mapped[str] = mapped_column(ForeignKey("devices.id"))
    attribute: Mapped[str] = mapped_column(String(16))
    value: Mapped[str] = mapped_column(String(16))


class Automation(Base):
    """When ``trigger`` happens on ``trigger_device_id`` (a sensor), apply ``scene_id``."""

    __tablename__ = "automations"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    home_id: Mapped[str] = mapped_column(ForeignKey("homes.id"))
    name: Mapped[str] = mapped_column(String(60))
    trigger_device_id: Mapped[str] = mapped_column(ForeignKey("devices.id"))
    trigger: Mapped[str] = mapped_column(String(20))
    scene_id: Mapped[str] = mapped_column(ForeignKey("scenes.id"))
    enabled: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    last_triggered_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class Clock(Base):
    """The home's clock once time has passed in a session (from ``prove/iot_devices-v2``).

    One row (``id`` 1): the moment the tools now act at. A state with no row is at the
    sampled ``now`` (``ctx.now``); only -v2's tools write the row, as a call's declared
    duration passes (see ``tools.py``, "The clock"), so the table counts in the state hash
    only once written (:func:`~prove_gym.server.added_later`) and every earlier version's
    state keeps its hash.
    """

    __tablename__ = "clock"
    __table_args__ = added_later()
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    now: Mapped[dt.datetime] = mapped_column(DateTime)


TRIGGERS: dict[str, tuple[str, ...]] = {
    "motion": ("motion_detected", "motion_cleared"),
    "contact": ("opened", "closed"),
}
"""Which trigger events each sensor type can fire (temperature and humidity have none)."""


def power_draw_w(d: Device) -> Decimal:
    """Watts a device draws now: a plug its appliance's load, a light its load x brightness.

    >>> power_draw_w(Device(kind="light", is_on=True, load_w=Decimal("9.0"), brightness=50))
    Decimal('4.5')
    """
    if not d.is_on or d.load_w is None or d.kind not in ("light", "plug"):
        return Decimal("0.0")
    if d.kind == "light" and d.dimmable:
        return (d.load_w * (d.brightness or 0) / 100).quantize(TENTH)
    return d.load_w
