"""A realistic calendar: size 1 gives 3 calendars, 40 contacts and ~300 events around "now"."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from prove_gym.server import SampleContext

from .models import Calendar, Contact, Event, Invitee, Recurrence, Reminder, Settings

TIMEZONES = [
    "America/New_York",
    "America/Chicago",
    "America/Los_Angeles",
    "Europe/London",
    "Europe/Berlin",
    "Asia/Tokyo",
    "Australia/Sydney",
]

WORK_TITLES = [
    "Design review",
    "Sprint planning",
    "Sprint retrospective",
    "Quarterly business review",
    "Budget sync",
    "Hiring committee",
    "Roadmap workshop",
    "Customer call: {company}",
    "Interview: {name}",
    "1:1 with {name}",
    "Architecture deep dive",
    "Incident postmortem",
    "Vendor demo: {company}",
    "All-hands",
    "Product launch prep",
]
PERSONAL_TITLES = [
    "Dentist appointment",
    "Yoga class",
    "Lunch with {name}",
    "Coffee with {name}",
    "Gym session",
    "Haircut",
    "Book club",
    "Car service",
    "Dinner with {name}",
    "Piano lesson",
]
FAMILY_TITLES = [
    "School pickup",
    "Parent-teacher meeting",
    "Family dinner",
    "Soccer practice",
    "Grandma's birthday",
    "Vet visit",
]
LOCATIONS = [
    "Room 4B",
    "Main conference room",
    "Zoom",
    "Google Meet",
    "Cafe Luna",
    "HQ lobby",
    "City Gym",
    "Online",
    "",
]


# Rows are built as plain objects (attributes named as the columns) and inserted a table at
# a time, in the order the ORM's flush wrote them (children in the order of their events):
# a mapped object costs the ORM ~30 µs to build and the flush more to write.
@dataclass(slots=True, eq=False)
class _Calendar:
    id: str
    name: str
    color: str
    description: str


@dataclass(slots=True, eq=False)
class _Contact:
    id: str
    name: str
    email: str
    company: str
    timezone: str


@dataclass(slots=True, eq=False)
class _Event:
    id: str
    calendar_id: str
    title: str
    description: str
    location: str
    start: dt.datetime
    end: dt.datetime
    status: str


@dataclass(slots=True, eq=False)
class _Invitee:  # ``id``: numbered by the database, in insert order
    event_id: str
    email: str
    name: str
    response: str


@dataclass(slots=True, eq=False)
class _Recurrence:
    event_id: str
    frequency: str
    interval: int
    count: int | None
    until: dt.date | None


@dataclass(slots=True, eq=False)
class _Reminder:
    id: str
    event_id: str
    minutes_before: int
    method: str


def sample_calendar(ctx: SampleContext) -> None:
    """Fill an empty calendar database (see the module docstring for sizes)."""
    rng, fake, now = ctx.rng, ctx.fake, ctx.now
    home_tz = rng.choice(TIMEZONES)
    owner = fake.name()
    owner_email = owner.lower().replace(" ", ".").replace("'", "") + "@example.com"
    settings = {"id": 1, "owner_name": owner, "owner_email": owner_email, "timezone": home_tz}

    calendars = [
        _Calendar(id="cal_01", name="Work", color="blue", description="Meetings and deadlines"),
        _Calendar(id="cal_02", name="Personal", color="green", description="Appointments and fun"),
        _Calendar(id="cal_03", name="Family", color="orange", description="Shared family plans"),
    ]
    titles = {"cal_01": WORK_TITLES, "cal_02": PERSONAL_TITLES, "cal_03": FAMILY_TITLES}

    contacts: list[_Contact] = []
    used_emails: set[str] = {owner_email}
    for i in range(40 * ctx.size):
        name = fake.unique.name()
        local = name.lower().replace(" ", ".").replace("'", "")
        company = fake.company()
        domain = company.split()[0].lower().strip(",").replace("'", "") + ".com"
        email = f"{local}@{domain}"
        if email in used_emails:
            email = f"{local}{i}@{domain}"
        used_emails.add(email)
        contacts.append(
            _Contact(
                id=f"con_{i + 1:03d}",
                name=name,
                email=email,
                company=company,
                timezone=rng.choice(TIMEZONES),
            )
        )

    n_events = 300 * ctx.size
    reminder_no = 0
    events: list[_Event] = []
    invitees: list[_Invitee] = []
    recurrences: list[_Recurrence] = []
    reminders: list[_Reminder] = []
    day0 = now.replace(hour=0, minute=0, second=0, microsecond=0)
    for i in range(n_events):
        cal = rng.choices(calendars, weights=[6, 3, 1])[0]
        person = rng.choice(contacts)
        title = rng.choice(titles[cal.id]).format(name=person.name, company=person.company)
        day = day0 + dt.timedelta(days=rng.randint(-60, 60))
        if cal.id == "cal_01":
            start = day.replace(hour=rng.randint(8, 17), minute=rng.choice([0, 30]))
        else:
            start = day.replace(hour=rng.randint(7, 20), minute=rng.choice([0, 15, 30, 45]))
        duration = rng.choice([15, 30, 30, 45, 60, 60, 90, 120])
        event = _Event(
            id=f"evt_{i + 1:04d}",
            calendar_id=cal.id,
            title=title,
            description=fake.sentence(nb_words=10) if rng.random() < 0.6 else "",
            location=rng.choice(LOCATIONS),
            start=start,
            end=start + dt.timedelta(minutes=duration),
            status="cancelled" if rng.random() < 0.04 else "confirmed",
        )
        if cal.id == "cal_01" or rng.random() < 0.3:
            for guest in rng.sample(contacts, k=rng.randint(1, 5)):
                invitees.append(
                    _Invitee(
                        event_id=event.id,
                        email=guest.email,
                        name=guest.name,
                        response=rng.choice(
                            ["accepted", "accepted", "declined", "tentative", "needs_action"]
                        ),
                    )
                )
        if rng.random() < 0.12:
            freq = rng.choice(["daily", "weekly", "weekly", "monthly"])
            recurrences.append(
                _Recurrence(
                    event_id=event.id,
                    frequency=freq,
                    interval=rng.choice([1, 1, 2]),
                    count=rng.choice([None, 5, 10, 12]),
                    until=None,
                )
            )
        if rng.random() < 0.35:
            reminder_no += 1
            reminders.append(
                _Reminder(
                    id=f"rem_{reminder_no:04d}",
                    event_id=event.id,
                    minutes_before=rng.choice([5, 10, 15, 30, 60, 1440]),
                    method=rng.choice(["popup", "email"]),
                )
            )
        events.append(event)
    for model, rows in (
        (Calendar, calendars),
        (Contact, contacts),
        (Event, events),
        (Settings, [settings]),
        (Invitee, invitees),
        (Recurrence, recurrences),
        (Reminder, reminders),
    ):
        ctx.insert(rows, into=model)
