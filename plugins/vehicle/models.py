"""Vehicle state: one car with its doors, windows, seats, climate zones, tires, navigation.

Units are metric throughout: km, km/h, degrees Celsius, kPa, and litres (fuel) or
kWh (battery) for energy. Fixed-point quantities (energy, temperatures, distances)
are exact ``Decimal`` values stored as integers of tenths (``Money(1)``), so the
state hash never depends on float formatting.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import ROUND_CEILING, Decimal

from sqlalchemy import Boolean, DateTime, Float, ForeignKey, Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from prove_gym.server import Money


class Base(DeclarativeBase):
    pass


def _tenths() -> Money:
    """An exact one-decimal quantity (``Money`` stores any fixed-point Decimal)."""
    return Money(places=1)


class Vehicle(Base):
    """The car: profile, driving mode, energy, lights, cruise and position (a single row)."""

    __tablename__ = "vehicle"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # profile
    vin: Mapped[str] = mapped_column(String(17))
    make: Mapped[str] = mapped_column(String(40))
    model: Mapped[str] = mapped_column(String(40))
    year: Mapped[int] = mapped_column(Integer)
    color: Mapped[str] = mapped_column(String(30))
    license_plate: Mapped[str] = mapped_column(String(16))
    owner_name: Mapped[str] = mapped_column(String(80))
    powertrain: Mapped[str] = mapped_column(String(10))  # "gasoline" | "electric"
    odometer_km: Mapped[Decimal] = mapped_column(_tenths())
    # driving mode
    engine_on: Mapped[bool] = mapped_column(Boolean)
    gear: Mapped[str] = mapped_column(String(8))  # park | reverse | neutral | drive
    speed_kph: Mapped[int] = mapped_column(Integer)
    parking_brake: Mapped[bool] = mapped_column(Boolean)
    cruise_active: Mapped[bool] = mapped_column(Boolean)
    cruise_speed_kph: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # energy: litres of fuel or kWh of battery
    energy_capacity: Mapped[Decimal] = mapped_column(_tenths())
    energy_level: Mapped[Decimal] = mapped_column(_tenths())
    consumption_per_100km: Mapped[Decimal] = mapped_column(_tenths())
    # climate and lights
    climate_on: Mapped[bool] = mapped_column(Boolean)
    headlights: Mapped[str] = mapped_column(String(4))  # off | on | auto
    fog_lights: Mapped[bool] = mapped_column(Boolean)
    hazard_lights: Mapped[bool] = mapped_column(Boolean)
    # position
    latitude: Mapped[float] = mapped_column(Float)
    longitude: Mapped[float] = mapped_column(Float)
    location_label: Mapped[str] = mapped_column(String(120))
    city: Mapped[str] = mapped_column(String(60))


class Door(Base):
    """A door, by position: front_left, front_right, rear_left, rear_right or trunk."""

    __tablename__ = "doors"
    position: Mapped[str] = mapped_column(String(12), primary_key=True)
    is_open: Mapped[bool] = mapped_column(Boolean)
    is_locked: Mapped[bool] = mapped_column(Boolean)


class Window(Base):
    """A side window, by position; 0 is closed, 100 fully open."""

    __tablename__ = "windows"
    position: Mapped[str] = mapped_column(String(12), primary_key=True)
    open_percent: Mapped[int] = mapped_column(Integer)


class Seat(Base):
    """A heated seat, by position: driver, passenger, rear_left, rear_right."""

    __tablename__ = "seats"
    position: Mapped[str] = mapped_column(String(12), primary_key=True)
    heat_level: Mapped[int] = mapped_column(Integer)  # 0 (off) to 3


class ClimateZone(Base):
    """One climate zone: driver, passenger or rear."""

    __tablename__ = "climate_zones"
    zone: Mapped[str] = mapped_column(String(10), primary_key=True)
    target_temp_c: Mapped[Decimal] = mapped_column(_tenths())
    fan_speed: Mapped[int] = mapped_column(Integer)  # 1-7
    ac_on: Mapped[bool] = mapped_column(Boolean)


class Tire(Base):
    """A tire's measured and recommended pressure."""

    __tablename__ = "tires"
    position: Mapped[str] = mapped_column(String(12), primary_key=True)
    pressure_kpa: Mapped[int] = mapped_column(Integer)
    recommended_kpa: Mapped[int] = mapped_column(Integer)


class Destination(Base):
    """A saved place the navigation can route to."""

    __tablename__ = "destinations"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    category: Mapped[str] = mapped_column(String(20))
    address: Mapped[str] = mapped_column(String(160))
    latitude: Mapped[float] = mapped_column(Float)
    longitude: Mapped[float] = mapped_column(Float)


class Route(Base):
    """A navigation route; at most one is ``active`` at a time."""

    __tablename__ = "routes"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    destination_id: Mapped[str] = mapped_column(ForeignKey("destinations.id"))
    origin_label: Mapped[str] = mapped_column(String(120))
    distance_km: Mapped[Decimal] = mapped_column(_tenths())
    eta_minutes: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(10))  # active | completed | cancelled


class Trip(Base):
    """One completed drive in the trip log."""

    __tablename__ = "trips"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    started_at: Mapped[dt.datetime] = mapped_column(DateTime)
    ended_at: Mapped[dt.datetime] = mapped_column(DateTime)
    origin_label: Mapped[str] = mapped_column(String(120))
    destination_label: Mapped[str] = mapped_column(String(120))
    destination_id: Mapped[str | None] = mapped_column(ForeignKey("destinations.id"), nullable=True)
    distance_km: Mapped[Decimal] = mapped_column(_tenths())
    energy_used: Mapped[Decimal] = mapped_column(_tenths())
    avg_speed_kph: Mapped[int] = mapped_column(Integer)


# ------------------------------------------------------------ derived quantities
# Routing is computed from stored coordinates only, so a distance or an ETA is the
# same on every machine and in every run.
ROAD_FACTOR = 1.3
"""Roads are longer than the straight line: distance = great-circle km x 1.3."""
AVERAGE_SPEED_KPH = 50
"""ETA = distance at 50 km/h, rounded up to the minute, plus PARKING_MINUTES."""
PARKING_MINUTES = 3
TENTH = Decimal("0.1")


def road_distance_km(lat1: float, lon1: float, lat2: float, lon2: float) -> Decimal:
    """Driving distance between two points, in km to one decimal (haversine x ROAD_FACTOR).

    >>> road_distance_km(47.6062, -122.3321, 47.6205, -122.3493)
    Decimal('2.6')
    """
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    km = 2 * 6371.0 * math.asin(math.sqrt(min(1.0, a))) * ROAD_FACTOR
    return Decimal(f"{km:.1f}")


def eta_minutes(distance_km: Decimal) -> int:
    """Minutes to drive ``distance_km`` (see AVERAGE_SPEED_KPH).

    >>> eta_minutes(Decimal("12.5"))
    18
    """
    return math.ceil(distance_km * 60 / AVERAGE_SPEED_KPH) + PARKING_MINUTES


def energy_needed(distance_km: Decimal, consumption_per_100km: Decimal) -> Decimal:
    """Litres or kWh used over ``distance_km``, rounded up to a tenth.

    >>> energy_needed(Decimal("12.5"), Decimal("7.2"))
    Decimal('0.9')
    """
    return (distance_km * consumption_per_100km / 100).quantize(TENTH, rounding=ROUND_CEILING)


def range_km(level: Decimal, consumption_per_100km: Decimal) -> int:
    """Whole km the remaining energy lasts.

    >>> range_km(Decimal("30.0"), Decimal("7.5"))
    400
    """
    return int(level * 100 / consumption_per_100km)
