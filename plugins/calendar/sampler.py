"""A realistic calendar: size 1 gives 3 calendars, 40 contacts and ~300 events around "now"."""

from __future__ import annotations

import datetime as dt

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


def sample_calendar(ctx: SampleContext) -> None:
    """Fill an empty calendar database (see the module docstring for sizes)."""
    rng, fake, db, now = ctx.rng, ctx.fake, ctx.db, ctx.now
    home_tz = rng.choice(TIMEZONES)
    owner = fake.name()
    owner_email = owner.lower().replace(" ", ".").replace("'", "") + "@example.com"
    db.add(Settings(id=1, owner_name=owner, owner_email=owner_email, timezone=home_tz))

    calendars = [
        Calendar(id="cal_01", name="Work", color="blue", description="Meetings and deadlines"),
        Calendar(id="cal_02", name="Personal", color="green", description="Appointments and fun"),
        Calendar(id="cal_03", name="Family", color="orange", description="Shared family plans"),
    ]
    db.add_all(calendars)
    titles = {"cal_01": WORK_TITLES, "cal_02": PERSONAL_TITLES, "cal_03": FAMILY_TITLES}

    contacts: list[Contact] = []
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
            Contact(
                id=f"con_{i + 1:03d}",
                name=name,
                email=email,
                company=company,
                timezone=rng.choice(TIMEZONES),
            )
        )
    db.add_all(contacts)

    n_events = 300 * ctx.size
    reminder_no = 0
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
        event = Event(
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
                event.invitees.append(
                    Invitee(
                        email=guest.email,
                        name=guest.name,
                        response=rng.choice(
                            ["accepted", "accepted", "declined", "tentative", "needs_action"]
                        ),
                    )
                )
        if rng.random() < 0.12:
            freq = rng.choice(["daily", "weekly", "weekly", "monthly"])
            event.recurrence = Recurrence(
                frequency=freq,
                interval=rng.choice([1, 1, 2]),
                count=rng.choice([None, 5, 10, 12]),
                until=None,
            )
        if rng.random() < 0.35:
            reminder_no += 1
            event.reminders.append(
                Reminder(
                    id=f"rem_{reminder_no:04d}",
                    minutes_before=rng.choice([5, 10, 15, 30, 60, 1440]),
                    method=rng.choice(["popup", "email"]),
                )
            )
        db.add(event)
