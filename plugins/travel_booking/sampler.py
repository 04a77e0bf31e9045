"""A realistic travel agency: size 1 gives ~330 flights on 12 routes between 14 European
airports (6 days back to 30 days ahead, each with fares per cabin and fare class and a seat
map partly sold to other passengers), ~18 hotels with ~130 rooms and nightly rates from 15
days back to 40 days ahead, 50 travellers (passports, some expiring, and loyalty numbers)
and ~35 itineraries with ~90 flight bookings, ~25 hotel bookings, some cancelled, and
their ledger. Size n gives n times as many routes, hotels per city, travellers and trips.

Bookings are planned first and then replayed in time order with the rules the live tools
apply (a seat or a room night is taken once, a passport must be valid, a booking closes two
hours before departure, refunds follow the fare class or the rate plan).
"""

from __future__ import annotations

import datetime as dt
import unicodedata
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from typing import Any

from prove_gym.server import SampleContext

from .models import (
    AIRLINES,
    AIRPORTS,
    CENT,
    CUTOFF,
    LAYOUTS,
    ZERO,
    Fare,
    Flight,
    FlightBooking,
    Hotel,
    HotelBooking,
    Itinerary,
    LoyaltyAccount,
    Room,
    RoomNight,
    RoomRate,
    RoomType,
    Transaction,
    Traveller,
    flight_refund,
    hotel_refund,
    is_international,
    night_price,
    passport_valid_for,
    seat_map,
)

FLIGHT_DAYS = range(-6, 31)
RATE_DAYS = range(-15, 41)
HOME_AIRLINE = {"PT": "TP", "ES": "IB", "FR": "AF", "GB": "BA", "DE": "LH", "IT": "AZ"}
HOME_AIRLINE |= {"NL": "KL", "DK": "SK"}
NATIONALITIES = ["PT", "ES", "FR", "GB", "DE", "IT", "NL", "DK", "US", "IE", "BR"]
ROOM_TYPES = [
    ("Standard Double", "1 double bed", 2, Decimal("1.00")),
    ("Twin Room", "2 single beds", 2, Decimal("1.00")),
    ("Single Room", "1 single bed", 1, Decimal("0.80")),
    ("Superior King", "1 king bed", 2, Decimal("1.30")),
    ("Junior Suite", "1 king bed and a sofa bed", 3, Decimal("1.75")),
    ("Family Room", "1 double bed and 2 single beds", 4, Decimal("1.55")),
]
HOTEL_NAMES = [
    "Grand Hotel {city}",
    "{city} Riverside Inn",
    "Hotel {surname}",
    "The {surname} House",
    "{city} Central Suites",
    "Casa {surname}",
    "{surname} Palace",
    "{city} Harbour Hotel",
]
STREETS = ["Avenue", "Street", "Square", "Boulevard", "Quay", "Lane"]
TRIP_PURPOSES = [
    "client visit",
    "team offsite",
    "conference",
    "weekend break",
    "family holiday",
    "sales kickoff",
    "city break",
    "board meeting",
]
CABIN_FACTOR = {"economy": Decimal(1), "premium_economy": Decimal("1.6"), "business": Decimal(3)}
CLASS_FACTOR = {"flex": Decimal("2.1"), "standard": Decimal("1.35"), "basic": Decimal(1)}
FARE_CLASSES = ("flex", "standard", "basic")
BUSINESS_CLASSES = ("flex", "standard")
BUSINESS_TAX = Decimal("12.40")
WEEKEND_DEMAND = Decimal("0.15")
WEEKEND_RATE = Decimal("1.15")
ONE = Decimal(1)
ONE_DAY = dt.timedelta(days=1)
TWO_DAYS = dt.timedelta(days=2)
SEVEN_DAYS = dt.timedelta(days=7)


def sample_travel_booking(ctx: SampleContext) -> None:
    """Fill an empty travel database (see the module docstring for sizes)."""
    agency = _Agency(ctx)
    agency.add_flights(6 * ctx.size)
    agency.add_hotels(ctx.size)
    agency.add_travellers(50 * ctx.size)
    agency.plan_trips(35 * ctx.size)
    agency.replay()
    agency.write(ctx)


@dataclass
class _Action:
    at: dt.datetime
    order: int
    kind: str
    data: dict[str, Any] = field(default_factory=dict)


# Flights, hotels, room types and rooms are planned as plain objects (their fields named as
# the columns) and inserted as rows: a mapped object costs the ORM ~30 µs to build and every
# attribute read goes through a descriptor, and there are hundreds of flights a state.
@dataclass(slots=True)
class _Flight:
    id: str
    number: str
    airline: str
    origin: str
    destination: str
    departs_at: dt.datetime
    arrives_at: dt.datetime
    aircraft: str
    occupied: str


@dataclass(slots=True)
class _Hotel:
    id: str
    name: str
    city: str
    address: str
    stars: int


@dataclass(slots=True)
class _RoomType:
    id: str
    hotel_id: str
    name: str
    beds: str
    max_guests: int


@dataclass(slots=True)
class _Room:
    id: str
    hotel_id: str
    room_type_id: str
    number: str


# Travellers, bookings and the ledger too (``eq=False``: compared and hashed by identity, as
# mapped objects are; a trip's party is deduplicated by traveller).
@dataclass(slots=True, eq=False)
class _Traveller:
    id: str
    first_name: str
    last_name: str
    email: str
    date_of_birth: dt.date
    nationality: str
    passport_number: str
    passport_expiry: dt.date
    created_at: dt.datetime


@dataclass(slots=True, eq=False)
class _LoyaltyAccount:
    id: str
    traveller_id: str
    airline: str
    number: str


@dataclass(slots=True, eq=False)
class _Itinerary:
    id: str
    traveller_id: str
    name: str
    status: str
    total_paid: Decimal
    created_at: dt.datetime
    cancelled_at: dt.datetime | None


@dataclass(slots=True, eq=False)
class _FlightBooking:
    id: str
    itinerary_id: str
    traveller_id: str
    flight_id: str
    cabin: str
    fare_class: str
    seat: str
    base_fare: Decimal
    taxes: Decimal
    loyalty_number: str | None
    changes: int
    amount_paid: Decimal
    refunded: Decimal
    status: str
    booked_at: dt.datetime
    cancelled_at: dt.datetime | None


@dataclass(slots=True, eq=False)
class _HotelBooking:
    id: str
    itinerary_id: str
    hotel_id: str
    room_id: str
    check_in: dt.date
    check_out: dt.date
    guests: int
    rate_plan: str
    total: Decimal
    first_night: Decimal
    amount_paid: Decimal
    refunded: Decimal
    status: str
    booked_at: dt.datetime
    cancelled_at: dt.datetime | None


@dataclass(slots=True, eq=False)
class _Transaction:
    id: str
    itinerary_id: str
    flight_booking_id: str | None
    hotel_booking_id: str | None
    kind: str
    amount: Decimal
    memo: str
    created_at: dt.datetime


class _Agency:
    def __init__(self, ctx: SampleContext) -> None:
        self.rng, self.fake, self.now = ctx.rng, ctx.fake, ctx.now
        self.today = ctx.now.date()
        self.flights: list[_Flight] = []
        self.fares: list[dict[str, Any]] = []  # rows of the fares table
        self.by_route: dict[tuple[str, str], list[_Flight]] = {}
        self.taken: dict[str, set[str]] = {}
        self.fare_of: dict[tuple[str, str, str], tuple[Decimal, Decimal]] = {}  # base, taxes
        self.hotels: list[_Hotel] = []
        self.room_types: list[_RoomType] = []
        self.rooms: list[_Room] = []
        self.rates: dict[tuple[str, dt.date], Decimal] = {}
        self.nights: dict[tuple[str, dt.date], str | None] = {}
        self.travellers: list[_Traveller] = []
        self.loyalty: list[_LoyaltyAccount] = []
        self.rooms_of: dict[str, list[_Room]] = {}  # by hotel id, in id order
        self.room_type: dict[str, _RoomType] = {}  # by id
        self.actions: list[_Action] = []
        self.itineraries: list[_Itinerary] = []
        self.flight_bookings: list[_FlightBooking] = []
        self.hotel_bookings: list[_HotelBooking] = []
        self.ledger: list[_Transaction] = []
        self.aboard: set[tuple[str, str]] = set()
        self.cards: dict[tuple[str, str], str] = {}  # (traveller id, airline) -> number
        # Decimal sums used over and over (computed here, in the context the sampler runs in)
        self.demand = {day: ONE + Decimal(max(0, 14 - day)) / 28 for day in FLIGHT_DAYS}
        """A flight's demand by days to departure, before the random part."""
        self.hundredths = [Decimal(k) / 100 for k in range(111)]

    # ------------------------------------------------------------ flights
    def add_flights(self, pairs: int) -> None:
        rng = self.rng
        codes = sorted(AIRPORTS)
        all_pairs = [(a, b) for i, a in enumerate(codes) for b in codes[i + 1 :]]
        chosen = rng.sample(all_pairs, min(pairs, len(all_pairs)))
        routes = sorted([p for a, b in chosen for p in ((a, b), (b, a))])
        used_numbers: set[str] = set()
        n = 0
        for origin, destination in routes:
            home = [HOME_AIRLINE[AIRPORTS[origin][1]], HOME_AIRLINE[AIRPORTS[destination][1]]]
            airline = rng.choice(home)
            aircraft = rng.choice(sorted(LAYOUTS))
            minutes = rng.randrange(70, 185, 5)
            cheapest = Decimal(rng.randrange(39, 149))
            taxes = Decimal(rng.randint(1500, 4800)).scaleb(-2)
            cabin_taxes = {
                cabin: (taxes + (BUSINESS_TAX if cabin == "business" else ZERO)).quantize(CENT)
                for cabin in LAYOUTS[aircraft]
            }
            slots = [(rng.randint(6, 10), rng.choice([0, 15, 30, 45]), 0.55)]
            slots.append((rng.randint(16, 20), rng.choice([0, 10, 25, 40, 55]), 0.3))
            numbers = []
            for _ in slots:
                number = f"{airline} {rng.randint(100, 1999)}"
                while number in used_numbers:
                    number = f"{airline} {rng.randint(100, 1999)}"
                used_numbers.add(number)
                numbers.append(number)
            duration = dt.timedelta(minutes=minutes)
            departures = [(dt.time(hour, minute), chance) for hour, minute, chance in slots]
            route_flights: list[_Flight] = []
            for day in FLIGHT_DAYS:
                date = self.today + dt.timedelta(days=day)
                for (departure, chance), number in zip(departures, numbers, strict=True):
                    if rng.random() >= chance:
                        continue
                    n += 1
                    departs = dt.datetime.combine(date, departure)
                    flight = _Flight(
                        id=f"fl_{n:04d}",
                        number=number,
                        airline=airline,
                        origin=origin,
                        destination=destination,
                        departs_at=departs,
                        arrives_at=departs + duration,
                        aircraft=aircraft,
                        occupied="",
                    )
                    self.flights.append(flight)
                    route_flights.append(flight)
                    self._fares(flight, cheapest, cabin_taxes, day)
                    self._sell(flight, day)
            if route_flights:
                self.by_route[(origin, destination)] = route_flights
        self.flights.sort(key=lambda f: f.id)

    def _fares(
        self, flight: _Flight, cheapest: Decimal, cabin_taxes: dict[str, Decimal], day: int
    ) -> None:
        """The flight's fares; ``cabin_taxes`` are the route's taxes per cabin."""
        demand = self.demand[day] + self.hundredths[self.rng.randint(0, 20)]
        if flight.departs_at.weekday() in (4, 6):
            demand += WEEKEND_DEMAND
        base_economy = (cheapest * demand).quantize(ONE)
        flight_id, fares, fare_of = flight.id, self.fares, self.fare_of
        for cabin, fare_class, fare_base in _fare_ladder(base_economy, flight.aircraft):
            taxes = cabin_taxes[cabin]
            fares.append(
                {
                    "id": f"fare_{len(fares) + 1:05d}",
                    "flight_id": flight_id,
                    "cabin": cabin,
                    "fare_class": fare_class,
                    "base": fare_base,
                    "taxes": taxes,
                }
            )
            fare_of[(flight_id, cabin, fare_class)] = (fare_base, taxes)

    def _sell(self, flight: _Flight, day: int) -> None:
        """Seats sold to other passengers: fuller for sooner flights, some cabins sold out."""
        rng = self.rng
        load = 0.9 if day <= 0 else max(0.2, 0.85 - 0.02 * day)
        sold: set[str] = set()
        for seats in _cabin_seats(flight.aircraft):
            share = 1.0 if rng.random() < 0.06 else min(1.0, load + rng.uniform(-0.15, 0.1))
            sold.update(rng.sample(seats, int(len(seats) * share)))
        self.taken[flight.id] = sold

    # ------------------------------------------------------------ hotels
    def add_hotels(self, per_city: int) -> None:
        rng, fake = self.rng, self.fake
        names: set[str] = set()
        cities = sorted({city for city, _ in AIRPORTS.values()})
        nights = [self.today + dt.timedelta(days=day) for day in RATE_DAYS]
        weekend = [n.weekday() in (4, 5) for n in nights]  # Friday and Saturday cost more
        n_room = 0
        rates, choice = self.rates, rng.choice
        wobbles = self.hundredths[95:111]
        for city in cities:
            count = per_city + (1 if rng.random() < 0.3 else 0)
            for _ in range(count):
                name = ""
                while not name or name in names:
                    pattern = rng.choice(HOTEL_NAMES)
                    name = pattern.format(city=city, surname=_ascii(fake.last_name()))
                names.add(name)
                stars = rng.choice([3, 3, 4, 4, 4, 5])
                hotel = _Hotel(
                    id=f"htl_{len(self.hotels) + 1:03d}",
                    name=name,
                    city=city,
                    address=f"{rng.randint(1, 220)} {_ascii(fake.last_name())} "
                    f"{rng.choice(STREETS)}, {city}",
                    stars=stars,
                )
                self.hotels.append(hotel)
                base = Decimal(
                    {3: rng.randint(65, 105), 4: rng.randint(110, 175), 5: rng.randint(210, 320)}[
                        stars
                    ]
                )
                for name_, beds, guests, factor in sorted(
                    rng.sample(ROOM_TYPES, 3), key=lambda t: t[3]
                ):
                    rt = _RoomType(
                        id=f"rt_{len(self.room_types) + 1:04d}",
                        hotel_id=hotel.id,
                        name=name_,
                        beds=beds,
                        max_guests=guests,
                    )
                    self.room_types.append(rt)
                    floor = rng.randint(1, 6)
                    for k in range(rng.randint(2, 3)):
                        n_room += 1
                        self.rooms.append(
                            _Room(
                                id=f"rm_{n_room:04d}",
                                hotel_id=hotel.id,
                                room_type_id=rt.id,
                                number=f"{floor}{k + 1:02d}",
                            )
                        )
                    price = base * factor
                    # every rate this room type can have, weekdays and weekends, by wobble
                    # (0.95 to 1.10): 32 computed once rather than one per night. Choosing
                    # one of the 16 draws as ``randint(95, 110)`` did (one index below 16).
                    choices = [
                        [(p * wobble).quantize(ONE).quantize(CENT) for wobble in wobbles]
                        for p in (price * ONE, price * WEEKEND_RATE)
                    ]
                    for night, is_weekend in zip(nights, weekend, strict=True):
                        rates[(rt.id, night)] = choice(choices[is_weekend])
        for room in self.rooms:
            self.rooms_of.setdefault(room.hotel_id, []).append(room)
        self.room_type = {rt.id: rt for rt in self.room_types}
        # guests who booked elsewhere: about a quarter of the room nights
        random, booked = rng.random, self.nights
        for room in self.rooms:
            room_id = room.id
            for night in nights:
                if random() < 0.25:
                    booked[(room_id, night)] = None

    # ------------------------------------------------------------ travellers
    def add_travellers(self, count: int) -> None:
        rng, fake = self.rng, self.fake
        emails: set[str] = set()
        domains = ["gmail.com", "outlook.com", "proton.me", "acme-corp.com", "yahoo.com"]
        for i in range(count):
            first, last = _ascii(fake.first_name()), _ascii(fake.last_name())
            local = f"{_letters(first)}.{_letters(last)}"
            email = f"{local}@{rng.choice(domains)}"
            while email in emails:
                email = f"{local}{rng.randint(2, 99)}@{rng.choice(domains)}"
            emails.add(email)
            roll = rng.random()
            if roll < 0.04:
                expiry = self.today - dt.timedelta(days=rng.randint(5, 300))
            elif roll < 0.16:
                expiry = self.today + dt.timedelta(days=rng.randint(20, 170))
            else:
                expiry = self.today + dt.timedelta(days=rng.randint(250, 3600))
            traveller = _Traveller(
                id=f"trv_{i + 1:04d}",
                first_name=first,
                last_name=last,
                email=email,
                date_of_birth=dt.date(
                    rng.randint(1950, 2006), rng.randint(1, 12), rng.randint(1, 28)
                ),
                nationality=rng.choice(NATIONALITIES),
                passport_number=f"{rng.choice('CFGHJKLMNPRTX')}{rng.choice('ABCDEFGHJK')}"
                f"{rng.randint(1000000, 9999999)}",
                passport_expiry=expiry,
                created_at=self.now
                - dt.timedelta(days=rng.randint(40, 900), hours=rng.randint(0, 23)),
            )
            self.travellers.append(traveller)
            if rng.random() < 0.45:
                for airline in sorted(rng.sample(sorted(AIRLINES), rng.randint(1, 2))):
                    self.loyalty.append(
                        _LoyaltyAccount(
                            id=f"loy_{len(self.loyalty) + 1:04d}",
                            traveller_id=traveller.id,
                            airline=airline,
                            number=f"{airline}{rng.randint(10**8, 10**9 - 1)}",
                        )
                    )

    # ------------------------------------------------------------ trips
    def plan_trips(self, count: int) -> None:
        rng = self.rng
        routes = sorted(self.by_route)
        for _ in range(count):
            created = self.now - dt.timedelta(days=rng.randint(1, 30), hours=rng.randint(0, 12))
            created = created.replace(minute=rng.randrange(60), second=0, microsecond=0)
            route = rng.choice(routes)
            # bounds as times, not a timedelta built and compared per flight (the same test)
            earliest = created + ONE_DAY
            outbound = [f for f in self.by_route[route] if f.departs_at > earliest]
            if not outbound:
                continue
            out = rng.choice(outbound[:20])
            back_route = (route[1], route[0])
            back_from, back_until = out.arrives_at + TWO_DAYS, out.arrives_at + SEVEN_DAYS
            back = [
                f
                for f in self.by_route.get(back_route, [])
                if back_from <= f.departs_at <= back_until
            ]
            ret = rng.choice(back) if back and rng.random() < 0.8 else None
            lead = rng.choice(self.travellers)
            party = [lead, *rng.sample(self.travellers, rng.choice([0, 0, 1, 2]))]
            party = list(dict.fromkeys(party))
            cabin = rng.choices(["economy", "premium_economy", "business"], weights=[75, 10, 15])[0]
            fare_class = rng.choices(["basic", "standard", "flex"], weights=[35, 45, 20])[0]
            city = AIRPORTS[route[1]][0]
            trip: dict[str, Any] = {
                "lead": lead,
                "name": f"{city} {rng.choice(TRIP_PURPOSES)}",
                "party": party,
                "flights": [f for f in (out, ret) if f is not None],
                "cabin": cabin,
                "fare_class": fare_class,
                "city": city,
                "check_in": out.arrives_at.date(),
                "check_out": ret.departs_at.date()
                if ret
                else out.arrives_at.date() + dt.timedelta(days=rng.randint(1, 4)),
                "hotel": rng.random() < 0.7,
            }
            order = len(self.actions)
            self.actions.append(_Action(created, order, "trip", trip))
            first = out.departs_at
            roll = rng.random()
            if roll < 0.12:
                latest = min(self.now, first - dt.timedelta(hours=3))
                if latest > created:
                    at = created + (latest - created) * rng.uniform(0.2, 1.0)
                    at = at.replace(second=0, microsecond=0)
                    self.actions.append(_Action(at, order, "cancel_trip", trip))
            elif roll < 0.25:
                latest = min(self.now, first - dt.timedelta(hours=3))
                if latest > created:
                    at = created + (latest - created) * rng.uniform(0.2, 1.0)
                    at = at.replace(second=0, microsecond=0)
                    self.actions.append(_Action(at, order, "cancel_one", trip))

    def replay(self) -> None:
        self.cards = {(a.traveller_id, a.airline): a.number for a in self.loyalty}
        for act in sorted(self.actions, key=lambda a: (a.at, a.order, a.kind)):
            getattr(self, f"_do_{act.kind}")(act)

    def _txn(
        self, itin: _Itinerary, at: dt.datetime, kind: str, amount: Decimal, memo: str, **ref: str
    ) -> None:
        self.ledger.append(
            _Transaction(
                id=f"txn_{len(self.ledger) + 1:05d}",
                itinerary_id=itin.id,
                flight_booking_id=ref.get("flight"),
                hotel_booking_id=ref.get("hotel"),
                kind=kind,
                amount=amount,
                memo=memo[:200],
                created_at=at,
            )
        )

    def _do_trip(self, act: _Action) -> None:
        rng, trip, at = self.rng, act.data, act.at
        itin = _Itinerary(
            id=f"itn_{len(self.itineraries) + 1:04d}",
            traveller_id=trip["lead"].id,
            name=trip["name"],
            status="active",
            total_paid=ZERO,
            created_at=at,
            cancelled_at=None,
        )
        self.itineraries.append(itin)
        trip["itinerary"], trip["bookings"] = itin, []
        cards = self.cards
        for flight in trip["flights"]:
            cabin = trip["cabin"] if trip["cabin"] in LAYOUTS[flight.aircraft] else "economy"
            fare_class = trip["fare_class"]
            if cabin == "business" and fare_class == "basic":
                fare_class = "standard"
            fare_base, fare_taxes = self.fare_of[(flight.id, cabin, fare_class)]
            intl = is_international(flight.origin, flight.destination)
            for person in trip["party"]:
                if not passport_valid_for(person.passport_expiry, flight.departs_at.date(), intl):
                    continue
                if flight.departs_at - at < CUTOFF or (person.id, flight.id) in self.aboard:
                    continue
                taken = self.taken[flight.id]
                free = [s for s in seat_map(flight.aircraft, cabin) if s not in taken]
                if not free:
                    continue
                seat = rng.choice(free)
                self.taken[flight.id].add(seat)
                self.aboard.add((person.id, flight.id))
                amount = fare_base + fare_taxes
                booking = _FlightBooking(
                    id=f"fb_{len(self.flight_bookings) + 1:05d}",
                    itinerary_id=itin.id,
                    traveller_id=person.id,
                    flight_id=flight.id,
                    cabin=cabin,
                    fare_class=fare_class,
                    seat=seat,
                    base_fare=fare_base,
                    taxes=fare_taxes,
                    loyalty_number=cards.get((person.id, flight.airline)),
                    changes=0,
                    amount_paid=amount,
                    refunded=ZERO,
                    status="confirmed",
                    booked_at=at,
                    cancelled_at=None,
                )
                self.flight_bookings.append(booking)
                trip["bookings"].append(booking)
                itin.total_paid += amount
                self._txn(
                    itin,
                    at,
                    "charge",
                    amount,
                    f"Ticket {flight.number} {flight.origin}-{flight.destination} "
                    f"{flight.departs_at:%Y-%m-%d}, {cabin} {fare_class}, seat {seat}",
                    flight=booking.id,
                )
        if trip["hotel"]:
            self._book_hotel(trip, itin, at)

    def _book_hotel(self, trip: dict[str, Any], itin: _Itinerary, at: dt.datetime) -> None:
        rng = self.rng
        check_in, check_out = trip["check_in"], trip["check_out"]
        nights = [check_in + dt.timedelta(days=d) for d in range((check_out - check_in).days)]
        guests = len(trip["party"])
        hotels = [h for h in self.hotels if h.city == trip["city"]]
        rates, booked, room_type = self.rates, self.nights, self.room_type
        rooms = [
            r
            for h in hotels
            for r in self.rooms_of.get(h.id, [])
            if room_type[r.room_type_id].max_guests >= guests
            and all((r.room_type_id, n) in rates for n in nights)
            and all((r.id, n) not in booked for n in nights)
        ]
        if not rooms or not nights:
            return
        room = rng.choice(rooms)
        plan = "non_refundable" if rng.random() < 0.3 else "flexible"
        prices = [night_price(self.rates[(room.room_type_id, n)], plan) for n in nights]
        total = sum(prices, ZERO)
        hotel = next(h for h in hotels if h.id == room.hotel_id)
        booking = _HotelBooking(
            id=f"hb_{len(self.hotel_bookings) + 1:05d}",
            itinerary_id=itin.id,
            hotel_id=hotel.id,
            room_id=room.id,
            check_in=check_in,
            check_out=check_out,
            guests=guests,
            rate_plan=plan,
            total=total,
            first_night=prices[0],
            amount_paid=total,
            refunded=ZERO,
            status="confirmed",
            booked_at=at,
            cancelled_at=None,
        )
        self.hotel_bookings.append(booking)
        trip["bookings"].append(booking)
        for n in nights:
            self.nights[(room.id, n)] = booking.id
        itin.total_paid += total
        self._txn(
            itin,
            at,
            "charge",
            total,
            f"{hotel.name}, room {room.number}, {len(nights)} nights from "
            f"{check_in.isoformat()} ({plan})",
            hotel=booking.id,
        )

    def _cancel(
        self, booking: _FlightBooking | _HotelBooking, itin: _Itinerary, at: dt.datetime
    ) -> None:
        if booking.status != "confirmed":
            return
        if isinstance(booking, _FlightBooking):
            refund = flight_refund(booking.fare_class, booking.base_fare, booking.taxes)
            self.taken[booking.flight_id].discard(booking.seat)
            self.aboard.discard((booking.traveller_id, booking.flight_id))
            ref = {"flight": booking.id}
            memo = f"Refund of ticket {booking.id} ({booking.fare_class} fare)"
        else:
            refund = hotel_refund(
                booking.rate_plan, booking.total, booking.first_night, booking.check_in, at
            )
            for n in range((booking.check_out - booking.check_in).days):
                self.nights.pop((booking.room_id, booking.check_in + dt.timedelta(days=n)), None)
            ref = {"hotel": booking.id}
            memo = f"Refund of hotel booking {booking.id} ({booking.rate_plan} rate)"
        booking.status, booking.cancelled_at = "cancelled", at
        if refund > 0:
            booking.refunded += refund
            booking.amount_paid -= refund
            itin.total_paid -= refund
            self._txn(itin, at, "refund", refund, memo, **ref)

    def _do_cancel_trip(self, act: _Action) -> None:
        itin: _Itinerary = act.data["itinerary"]
        for booking in act.data["bookings"]:
            self._cancel(booking, itin, act.at)
        itin.status, itin.cancelled_at = "cancelled", act.at

    def _do_cancel_one(self, act: _Action) -> None:
        bookings = act.data["bookings"]
        if bookings:
            self._cancel(self.rng.choice(bookings), act.data["itinerary"], act.at)

    # ------------------------------------------------------------ writing
    def write(self, ctx: SampleContext) -> None:
        booked: dict[str, set[str]] = {}
        for b in self.flight_bookings:
            if b.status == "confirmed":
                booked.setdefault(b.flight_id, set()).add(b.seat)
        for flight in self.flights:
            taken = self.taken[flight.id]
            if flight.id in booked:
                taken = taken - booked[flight.id]
            order = _seat_order(flight.aircraft)
            flight.occupied = " ".join([s for s in order if s in taken])
        # plain rows, no objects; tables in the order ctx.insert writes them (parents first)
        ctx.insert(self.flights, into=Flight)
        ctx.insert(self.hotels, into=Hotel)
        ctx.insert(self.fares, into=Fare)
        ctx.insert(self.room_types, into=RoomType)
        ctx.insert(self.rooms, into=Room)
        ctx.insert(
            [
                {"room_type_id": rt, "night": night, "rate": rate}
                for (rt, night), rate in sorted(self.rates.items())
            ],
            into=RoomRate,
        )
        ctx.insert(self.travellers, into=Traveller)
        ctx.insert(self.itineraries, into=Itinerary)
        ctx.insert(self.loyalty, into=LoyaltyAccount)
        ctx.insert(self.flight_bookings, into=FlightBooking)
        ctx.insert(self.hotel_bookings, into=HotelBooking)
        ctx.insert(
            [
                {"room_id": room, "night": night, "hotel_booking_id": booking}
                for (room, night), booking in sorted(self.nights.items())
            ],
            into=RoomNight,
        )
        ctx.insert(self.ledger, into=Transaction)


@cache
def _fare_ladder(base_economy: Decimal, aircraft: str) -> tuple[tuple[str, str, Decimal], ...]:
    """(cabin, fare class, base fare) of every fare of an aircraft, cabin by cabin as
    ``LAYOUTS`` lists them, from the flight's economy base (a whole number of euros).

    Computed once per base and aircraft (a few hundred of them): every value is quantized,
    so the same base always gives the same fares.
    """
    ladder = []
    for cabin in LAYOUTS[aircraft]:
        base = (base_economy * CABIN_FACTOR[cabin]).quantize(ONE)
        for fare_class in BUSINESS_CLASSES if cabin == "business" else FARE_CLASSES:
            fare_base = ((base * CLASS_FACTOR[fare_class]).quantize(ONE) - CENT).quantize(CENT)
            ladder.append((cabin, fare_class, fare_base))
    return tuple(ladder)


@cache
def _cabin_seats(aircraft: str) -> list[list[str]]:
    """The seats of each cabin of an aircraft (``seat_map``), cabin by cabin as ``LAYOUTS``
    lists them, as lists: ``rng.sample`` first checks that its population is a sequence,
    which CPython answers from a cache for a list but not for a tuple (a microsecond more a
    call, a thousand calls a state). The same seats in the same order: the same draws."""
    return [list(seat_map(aircraft, cabin)) for cabin in LAYOUTS[aircraft]]


@cache
def _seat_order(aircraft: str) -> list[str]:
    """Every seat of an aircraft, cabin by cabin as ``LAYOUTS`` lists them."""
    return [s for cabin in LAYOUTS[aircraft] for s in seat_map(aircraft, cabin)]


def _ascii(text: str) -> str:
    """Names as plain ASCII letters (emails and searches stay simple)."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return "".join(c for c in folded if c.isalpha() or c in " -'") or "Smith"


def _letters(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalpha()) or "guest"
