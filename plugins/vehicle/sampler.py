"""A realistic car in a realistic moment: size 1 gives ~30 saved places and ~80 logged trips.

Each seed draws a car (gasoline or electric), a home city, and one of three
moments: parked with the engine off, idling in park, or driving along a road.
Which doors are open, the parking brake, the fuel or charge level, the lights,
the climate and an active route vary with it, always within the server's rules
(see ``tools.py``).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from decimal import Decimal

from prove_gym.server import SampleContext

from .models import (
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
    road_distance_km,
)

DOORS = ("front_left", "front_right", "rear_left", "rear_right", "trunk")
WINDOWS = ("front_left", "front_right", "rear_left", "rear_right")
SEATS = ("driver", "passenger", "rear_left", "rear_right")
ZONES = ("driver", "passenger", "rear")
TIRES = ("front_left", "front_right", "rear_left", "rear_right")


@dataclass(frozen=True, slots=True)
class CarModel:
    make: str
    model: str
    powertrain: str
    capacity: str  # litres or kWh
    consumption: tuple[float, float]  # per 100 km
    tire_kpa: int


CARS = [
    CarModel("Toyota", "Camry", "gasoline", "60.0", (6.4, 7.6), 240),
    CarModel("Honda", "Civic", "gasoline", "47.0", (6.0, 7.0), 230),
    CarModel("Ford", "F-150", "gasoline", "98.0", (11.0, 13.5), 240),
    CarModel("Subaru", "Outback", "gasoline", "70.0", (7.8, 9.2), 240),
    CarModel("Mazda", "CX-5", "gasoline", "56.0", (7.4, 8.6), 250),
    CarModel("Volkswagen", "Golf", "gasoline", "50.0", (5.6, 6.6), 250),
    CarModel("BMW", "330i", "gasoline", "59.0", (6.8, 8.0), 250),
    CarModel("Tesla", "Model 3", "electric", "75.0", (13.8, 15.8), 290),
    CarModel("Tesla", "Model Y", "electric", "75.0", (15.5, 17.5), 290),
    CarModel("Hyundai", "Ioniq 5", "electric", "77.4", (16.8, 19.0), 250),
    CarModel("Ford", "Mustang Mach-E", "electric", "91.0", (17.5, 20.0), 250),
    CarModel("Kia", "EV6", "electric", "77.4", (16.5, 18.5), 250),
    CarModel("Chevrolet", "Bolt EV", "electric", "65.0", (15.5, 17.0), 260),
    CarModel("Volvo", "XC40 Recharge", "electric", "78.0", (19.0, 22.0), 250),
]
COLORS = ["Pearl White", "Midnight Black", "Silver Metallic", "Deep Blue", "Ruby Red", "Graphite"]

CITIES = [
    ("Seattle", "WA", 47.6062, -122.3321),
    ("Denver", "CO", 39.7392, -104.9903),
    ("Austin", "TX", 30.2672, -97.7431),
    ("Chicago", "IL", 41.8781, -87.6298),
    ("Boston", "MA", 42.3601, -71.0589),
    ("Atlanta", "GA", 33.7490, -84.3880),
    ("Portland", "OR", 45.5152, -122.6784),
    ("Minneapolis", "MN", 44.9778, -93.2650),
    ("San Diego", "CA", 32.7157, -117.1611),
    ("Phoenix", "AZ", 33.4484, -112.0740),
]

# (category, name template, how many at size 1); {last}, {first}, {city}, {company}, {street}
PLACES = [
    ("family", "{first}'s house", 3),
    ("gym", "{company} Fitness", 2),
    ("grocery", "{last} Market", 3),
    ("restaurant", "{last}'s Bistro", 4),
    ("coffee", "Cafe on {street}", 2),
    ("school", "{last} Elementary School", 1),
    ("medical", "Dr. {last}'s office", 2),
    ("shopping", "{street} Shopping Center", 2),
    ("park", "{last} Park", 3),
    ("station", "{company} {station}", 3),
    ("airport", "{city} International Airport", 1),
]


def _point(ctx: SampleContext, lat: float, lon: float, radius_km: float) -> tuple[float, float]:
    """A point within ``radius_km`` of (lat, lon), rounded to 5 decimals (about a metre)."""
    rng = ctx.rng
    r = radius_km * math.sqrt(rng.random())
    angle = rng.random() * 2 * math.pi
    dlat = r * math.cos(angle) / 111.0
    dlon = r * math.sin(angle) / (111.0 * math.cos(math.radians(lat)))
    return round(lat + dlat, 5), round(lon + dlon, 5)


def _daytime(ctx: SampleContext, when: dt.datetime) -> dt.datetime:
    """``when`` if it falls between 07:00 and 22:00, else an evening time the day before."""
    if 7 <= when.hour < 22:
        return when
    day = when.date() - dt.timedelta(days=1 if when.hour < 7 else 0)
    return dt.datetime.combine(day, dt.time(ctx.rng.randint(17, 21), ctx.rng.randrange(60)))


def _tenth(value: float) -> Decimal:
    return Decimal(f"{value:.1f}")


def _destinations(
    ctx: SampleContext, electric: bool, city: str, state: str, lat: float, lon: float
) -> list[Destination]:
    """Home, work and places of every category, scattered around the city centre."""
    rng, fake = ctx.rng, ctx.fake
    station = "Charging Hub" if electric else "Gas Station"
    station_category = "charging" if electric else "gas_station"
    out: list[Destination] = []
    names: set[str] = set()

    def add(category: str, name: str, radius: float) -> None:
        while name in names:
            name = f"{name} ({fake.street_name()})"
        names.add(name)
        plat, plon = _point(ctx, lat, lon, radius)
        address = f"{fake.building_number()} {fake.street_name()}, {city}, {state}"
        out.append(
            Destination(
                id=f"dst_{len(out) + 1:03d}",
                name=name,
                category=category,
                address=address,
                latitude=plat,
                longitude=plon,
            )
        )

    add("home", "Home", 12)
    add("work", f"Work ({fake.company()})", 15)
    for _ in range(ctx.size):
        for category, template, count in PLACES:
            kind = station_category if category == "station" else category
            for _ in range(count):
                name = template.format(
                    first=fake.first_name(),
                    last=fake.last_name(),
                    city=city,
                    company=fake.last_name(),
                    street=fake.street_name(),
                    station=station,
                )
                radius = 30 if kind == "airport" else rng.choice([4, 8, 15, 25])
                add(kind, name, radius)
    return out


def sample_vehicle(ctx: SampleContext) -> None:
    """Fill an empty vehicle database (see the module docstring for sizes)."""
    rng, fake, now = ctx.rng, ctx.fake, ctx.now
    # every row in the order add_all took them, inserted at the end off the ORM's unit of work
    rows: list[Base] = []
    car = rng.choice(CARS)
    electric = car.powertrain == "electric"
    city, state, clat, clon = rng.choice(CITIES)
    places = _destinations(ctx, electric, city, state, clat, clon)
    rows.extend(places)

    consumption = _tenth(rng.uniform(*car.consumption))
    capacity = Decimal(car.capacity)
    moment = rng.choices(["parked", "idling", "driving"], weights=[50, 20, 30])[0]
    roll = rng.random()
    if moment == "parked" and roll < 0.04:
        level = Decimal("0.0")
    elif roll < 0.15:
        level = _tenth(float(capacity) * rng.uniform(0.02, 0.08))
    else:
        level = _tenth(float(capacity) * rng.uniform(0.1, 1.0))

    # Where the car is: parked or idling at a saved place, or on a road in the city.
    if moment == "driving":
        lat, lon = _point(ctx, clat, clon, 15)
        label = f"{fake.street_name()}, {city}"
        here: Destination | None = None
    else:
        here = places[0] if rng.random() < 0.5 else rng.choice(places[1:])
        lat, lon, label = here.latitude, here.longitude, here.name

    # Trip log: a chain of drives between saved places that ends where the car is now.
    n_trips = 80 * ctx.size
    stops: list[tuple[str, float, float, str | None]] = []
    for _ in range(n_trips):
        if rng.random() < 0.12:
            plat, plon = _point(ctx, clat, clon, 20)
            stops.append((f"{fake.street_address()}, {city}", plat, plon, None))
        else:
            p = rng.choice(places)
            stops.append((p.name, p.latitude, p.longitude, p.id))
    if here is not None:
        stops.append((here.name, here.latitude, here.longitude, here.id))
    else:
        p = rng.choice(places)
        stops.append((p.name, p.latitude, p.longitude, p.id))
    end = now - dt.timedelta(minutes=rng.randint(15, 600))
    if moment == "driving":
        end -= dt.timedelta(minutes=rng.randint(10, 40))
    end = _daytime(ctx, end)
    trips: list[Trip] = []
    total_km = Decimal(0)
    for i in range(len(stops) - 1, 0, -1):
        (olabel, olat, olon, _), (dlabel, dlat, dlon, did) = stops[i - 1], stops[i]
        if olabel == dlabel:
            continue
        km = max(road_distance_km(olat, olon, dlat, dlon), Decimal("0.5"))
        minutes = eta_minutes(km) + rng.randint(-2, 8)
        avg = max(12, min(110, round(float(km) * 60 / max(minutes, 1))))
        start = end - dt.timedelta(minutes=minutes)
        trips.append(
            Trip(
                id="",
                started_at=start,
                ended_at=end,
                origin_label=olabel,
                destination_label=dlabel,
                destination_id=did,
                distance_km=km,
                energy_used=energy_needed(km, consumption),
                avg_speed_kph=avg,
            )
        )
        total_km += km
        end = _daytime(ctx, start - dt.timedelta(minutes=rng.randint(30, 30 * 60)))
    for n, trip in enumerate(reversed(trips), 1):
        trip.id = f"trp_{n:04d}"
    rows.extend(trips)

    # Driving mode, consistent with the server's rules.
    engine_on = moment != "parked" and level > 0
    if moment == "idling" and not engine_on:
        moment = "parked"
    driving = moment == "driving" and engine_on
    speed = rng.choice([30, 45, 50, 60, 70, 80, 90, 100, 110]) if driving else 0
    cruise = driving and speed >= 60 and rng.random() < 0.5
    brake = (not driving) and rng.random() < (0.8 if moment == "parked" else 0.6)
    open_p = 0.0 if driving else (0.15 if moment == "parked" else 0.1)
    doors = [Door(position=p, is_open=rng.random() < open_p, is_locked=False) for p in DOORS]
    if driving or (not any(d.is_open for d in doors) and rng.random() < 0.6):
        for d in doors:
            d.is_locked = True
    rows.extend(doors)
    rows.extend(
        Window(
            position=p,
            open_percent=rng.choice([10, 25, 50, 100]) if rng.random() < 0.15 else 0,
        )
        for p in WINDOWS
    )
    cold = now.month in (11, 12, 1, 2, 3)
    climate_on = engine_on and rng.random() < 0.75
    rows.extend(
        Seat(
            position=p,
            heat_level=rng.choice([1, 2, 3]) if engine_on and cold and rng.random() < 0.5 else 0,
        )
        for p in SEATS
    )
    base_temp = rng.choice([19.0, 20.0, 20.5, 21.0, 21.5, 22.0, 23.0])
    rows.extend(
        ClimateZone(
            zone=z,
            target_temp_c=_tenth(base_temp + rng.choice([0.0, 0.0, 0.5, -0.5, 1.0])),
            fan_speed=rng.randint(1, 7),
            ac_on=(not cold) and rng.random() < 0.7,
        )
        for z in ZONES
    )
    low = rng.choice(TIRES) if rng.random() < 0.2 else None
    rows.extend(
        Tire(
            position=p,
            pressure_kpa=car.tire_kpa - (rng.randint(35, 70) if p == low else rng.randint(-8, 12)),
            recommended_kpa=car.tire_kpa,
        )
        for p in TIRES
    )
    headlights = rng.choices(["auto", "off", "on"], weights=[60, 25, 15])[0]
    route = None
    if (driving and rng.random() < 0.7) or (not driving and rng.random() < 0.2):
        target = rng.choice([p for p in places if p.name != label])
        km = road_distance_km(lat, lon, target.latitude, target.longitude)
        if km >= Decimal("0.2"):
            route = Route(
                id="rte_0001",
                destination_id=target.id,
                origin_label=label,
                distance_km=km,
                eta_minutes=eta_minutes(km),
                status="active",
            )
            rows.append(route)

    year = rng.randint(2016, 2026) if not electric else rng.randint(2019, 2026)
    rows.append(
        Vehicle(
            id=1,
            vin=fake.vin(),
            make=car.make,
            model=car.model,
            year=year,
            color=rng.choice(COLORS),
            license_plate=fake.license_plate(),
            owner_name=fake.name(),
            powertrain=car.powertrain,
            odometer_km=_tenth(rng.uniform(3000, 90000)) + total_km,
            engine_on=engine_on,
            gear="drive" if driving else "park",
            speed_kph=speed,
            parking_brake=brake,
            cruise_active=cruise,
            cruise_speed_kph=speed if cruise else None,
            energy_capacity=capacity,
            energy_level=level,
            consumption_per_100km=consumption,
            climate_on=climate_on,
            headlights=headlights,
            fog_lights=headlights != "off" and rng.random() < 0.1,
            hazard_lights=moment == "parked" and rng.random() < 0.05,
            latitude=lat,
            longitude=lon,
            location_label=label,
            city=f"{city}, {state}",
        )
    )
    # in the order the ORM's flush wrote the tables (its unit of work's): the same pages
    by_model: dict[type, list[Base]] = {}
    for row in rows:
        by_model.setdefault(type(row), []).append(row)
    for model in (ClimateZone, Destination, Door, Route, Seat, Tire, Trip, Vehicle, Window):
        ctx.insert(by_model.get(model, []))
