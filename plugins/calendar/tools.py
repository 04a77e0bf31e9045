"""The calendar's 17 tools. Docstrings are what the model reads: keep examples concrete."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field
from sqlalchemy import func, select

from prove_gym.server import (
    Conflict,
    Entity,
    InvalidArgument,
    NotFound,
    PreconditionFailed,
    Server,
    ToolContext,
    TypedDict,
    contains,
    next_id,
    parse_date,
)

from .models import Base, Calendar, Contact, Event, Invitee, Recurrence, Reminder, Settings
from .sampler import sample_calendar

SearchText = Annotated[str, Field(max_length=200)]
"""Free text matched with SQL LIKE: its length is capped in the schema."""

server = Server(
    "calendar",
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.0.0",
    base=Base,
    sampler=sample_calendar,
    description="A personal calendar with events, invitees, recurring events, reminders and "
    "free/busy lookups.",
    instructions="Calendar conventions: times are ISO 8601 local times in the user's home time "
    "zone (e.g. '2026-03-03T15:00') unless a tool takes a timezone; event ids look like "
    "'evt_0042'. Call get_current_time to learn today's date.",
)

EventRow = Annotated[Event, Entity("event")]
CalendarRow = Annotated[Calendar, Entity("calendar")]
CalendarId = Annotated[str, Entity("calendar")]
Email = Annotated[str, Entity("contact_email")]

MAX_DURATION = 24 * 60


class EventSummary(TypedDict):
    event_id: str
    title: str
    start: str
    end: str
    calendar_id: str
    status: str
    recurring: bool


InviteeOut = TypedDict("InviteeOut", {"email": str, "name": str, "response": str})
ReminderOut = TypedDict("ReminderOut", {"reminder_id": str, "minutes_before": int, "method": str})
RecurrenceOut = TypedDict(
    "RecurrenceOut", {"frequency": str, "interval": int, "count": int | None, "until": str | None}
)


class EventDetail(EventSummary):
    description: str
    location: str
    invitees: list[InviteeOut]
    reminders: list[ReminderOut]
    recurrence: RecurrenceOut | None


Interval = TypedDict("Interval", {"start": str, "end": str})
CurrentTime = TypedDict(
    "CurrentTime", {"now": str, "weekday": str, "timezone": str, "home_timezone": str}
)
CalendarOut = TypedDict(
    "CalendarOut", {"calendar_id": str, "name": str, "color": str, "description": str}
)
ContactOut = TypedDict("ContactOut", {"name": str, "email": str, "company": str, "timezone": str})
Cancelled = TypedDict("Cancelled", {"event_id": str, "status": str, "notified": int})
Guests = TypedDict("Guests", {"event_id": str, "invitees": list[str]})
Response = TypedDict("Response", {"event_id": str, "email": str, "response": str})
Occurrences = TypedDict("Occurrences", {"event_id": str, "occurrences": list[str]})
ReminderAdded = TypedDict(
    "ReminderAdded", {"reminder_id": str, "event_id": str, "minutes_before": int, "method": str}
)
FreeBusy = TypedDict("FreeBusy", {"date": str, "who": str, "busy": list[Interval]})


# ----------------------------------------------------------------- helpers
def _settings(ctx: ToolContext) -> Settings:
    return ctx.db.get(Settings, 1)  # type: ignore[return-value]


def _parse_time(value: str, name: str) -> dt.datetime:
    try:
        parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(
            f"{name} must be an ISO 8601 date-time such as '2026-03-03T15:00', got {value!r}."
        ) from None
    return parsed.replace(second=0, microsecond=0)


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: "America" is a directory
        raise InvalidArgument(
            f"Unknown time zone {name!r}; use an IANA name such as 'Europe/Berlin'."
        ) from None


def _to_home(ctx: ToolContext, when: dt.datetime, timezone: str | None) -> dt.datetime:
    """Interpret ``when`` in ``timezone`` (or its own offset) and express it in home time."""
    home = _zone(_settings(ctx).timezone)
    if when.tzinfo is None and timezone is None:
        return when
    aware = when if when.tzinfo is not None else when.replace(tzinfo=_zone(timezone or ""))
    return aware.astimezone(home).replace(tzinfo=None)


def _check_calendar(ctx: ToolContext, calendar_id: str) -> None:
    """For tools that report their other arguments' errors first (rows resolve before them)."""
    if ctx.db.get(Calendar, calendar_id) is None:
        raise NotFound(server.entities["calendar"].missing(calendar_id))


def _day(value: str, name: str) -> dt.datetime:
    """The start (midnight) of a date argument such as "2026-03-03"."""
    return dt.datetime.combine(parse_date(value, name), dt.time())


def _minutes(when: dt.datetime) -> str:
    return when.isoformat(timespec="minutes")


def _span(start: dt.datetime, end: dt.datetime) -> Interval:
    return {"start": _minutes(start), "end": _minutes(end)}


def _event_summary(e: Event) -> EventSummary:
    return {
        "event_id": e.id,
        "title": e.title,
        **_span(e.start, e.end),
        "calendar_id": e.calendar_id,
        "status": e.status,
        "recurring": e.recurrence is not None,
    }


def _event_detail(e: Event) -> EventDetail:
    r = e.recurrence
    return {
        **_event_summary(e),
        "description": e.description,
        "location": e.location,
        "invitees": [
            {"email": i.email, "name": i.name, "response": i.response} for i in e.invitees
        ],
        "reminders": [
            {"reminder_id": m.id, "minutes_before": m.minutes_before, "method": m.method}
            for m in e.reminders
        ],
        "recurrence": None
        if r is None
        else {
            "frequency": r.frequency,
            "interval": r.interval,
            "count": r.count,
            "until": r.until.isoformat() if r.until else None,
        },
    }


def _day_ahead(ctx: ToolContext, rng: random.Random) -> str:
    """A date 1-14 days after "now", for synthesized requests."""
    return (ctx.now + dt.timedelta(days=rng.randint(1, 14))).date().isoformat()


def _slot_ahead(ctx: ToolContext, rng: random.Random) -> str:
    day = ctx.now + dt.timedelta(days=rng.randint(1, 14))
    return day.replace(hour=rng.randint(8, 17), minute=rng.choice([0, 30])).isoformat(
        timespec="minutes"
    )


TITLES = ["Budget sync", "Design review", "Coffee chat", "Team offsite planning", "Dentist"]


def _check_duration(minutes: int) -> None:
    if not 5 <= minutes <= MAX_DURATION:
        raise InvalidArgument(
            f"duration_minutes must be between 5 and {MAX_DURATION}, got {minutes}."
        )


def _overlapping(ctx: ToolContext, start: dt.datetime, end: dt.datetime) -> list[Event]:
    stmt = (
        select(Event)
        .where(Event.status == "confirmed", Event.start < end, Event.end > start)
        .order_by(Event.start, Event.id)
    )
    return list(ctx.db.scalars(stmt))


# ------------------------------------------------------------------- tools
@server.tool(phrasings=["What time is it?", "What's today's date?"])
def get_current_time(ctx: ToolContext, timezone: str | None = None) -> CurrentTime:
    """Get the current date and time, in the user's home time zone or another one.

    Args:
        timezone: Optional IANA time zone to express the time in, such as "Asia/Tokyo".
    """
    home = _settings(ctx).timezone
    now = ctx.now
    if timezone:
        now = now.replace(tzinfo=_zone(home)).astimezone(_zone(timezone)).replace(tzinfo=None)
    return {
        "now": _minutes(now),
        "weekday": now.strftime("%A"),
        "timezone": timezone or home,
        "home_timezone": home,
    }


@server.tool(returns="calendar", phrasings=["Which calendars do I have?", "Show my calendars"])
def list_calendars(ctx: ToolContext) -> list[CalendarOut]:
    """List the user's calendars with their ids, e.g. [{"calendar_id": "cal_01", "name": "Work"}]."""
    rows = ctx.db.scalars(select(Calendar).order_by(Calendar.id))
    return [
        {"calendar_id": c.id, "name": c.name, "color": c.color, "description": c.description}
        for c in rows
    ]


@server.tool(
    returns="contact_email",
    phrasings=["Find {query} in my contacts", "What's {query}'s email address?"],
)
def list_contacts(
    ctx: ToolContext,
    query: SearchText | None = None,
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
) -> list[ContactOut]:
    """List contacts, optionally filtered by a name, email or company fragment.

    Args:
        query: Case-insensitive fragment to match, such as "chen" or "acme".
        limit: Maximum number of contacts to return (1-100).
    """
    stmt = select(Contact).order_by(Contact.name, Contact.id).limit(limit)
    if query:
        stmt = stmt.where(contains(query.strip(), Contact.name, Contact.email, Contact.company))
    return [
        {"name": c.name, "email": c.email, "company": c.company, "timezone": c.timezone}
        for c in ctx.db.scalars(stmt)
    ]


@server.tool(
    returns="event",
    phrasings=[
        "What's on my calendar between {start_date} and {end_date}?",
        "List my events from {start_date} to {end_date}",
    ],
    examples={"start_date": _day_ahead, "end_date": _day_ahead},
)
def list_events(
    ctx: ToolContext,
    start_date: str,
    end_date: str,
    calendar_id: CalendarId | None = None,
    include_cancelled: bool = False,
) -> list[EventSummary]:
    """List events that start between two dates (inclusive), earliest first.

    Args:
        start_date: First day, such as "2026-03-02".
        end_date: Last day, such as "2026-03-08" (at most 62 days after start_date).
        calendar_id: Only this calendar, such as "cal_01".
        include_cancelled: Also list cancelled events.
    """
    first = _day(start_date, "start_date")
    last = _day(end_date, "end_date")
    if last < first:
        raise InvalidArgument("end_date is before start_date.")
    if (last - first).days > 62:
        raise InvalidArgument("The range is too long: ask for at most 62 days at a time.")
    stmt = select(Event).where(Event.start >= first, Event.start < last + dt.timedelta(days=1))
    if calendar_id is not None:
        _check_calendar(ctx, calendar_id)
        stmt = stmt.where(Event.calendar_id == calendar_id)
    if not include_cancelled:
        stmt = stmt.where(Event.status == "confirmed")
    return [_event_summary(e) for e in ctx.db.scalars(stmt.order_by(Event.start, Event.id))]


@server.tool(
    returns="event",
    phrasings=["Find my {query} meeting", "When is the {query}?", "Look up events about {query}"],
    examples={"query": ["design review", "dentist", "sprint", "lunch", "yoga"]},
)
def search_events(
    ctx: ToolContext,
    query: SearchText,
    start_date: str | None = None,
    end_date: str | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
) -> list[EventSummary]:
    """Search events whose title, description or location contains the query.

    Args:
        query: Case-insensitive text, such as "design review" or "dentist".
        start_date: Only events starting on or after this day, such as "2026-03-02".
        end_date: Only events starting on or before this day.
        limit: Maximum number of results (1-50).
    """
    if not query.strip():
        raise InvalidArgument("query must not be empty.")
    stmt = select(Event).where(
        contains(query.strip(), Event.title, Event.description, Event.location)
    )
    if start_date:
        stmt = stmt.where(Event.start >= _day(start_date, "start_date"))
    if end_date:
        stmt = stmt.where(Event.start < _day(end_date, "end_date") + dt.timedelta(days=1))
    stmt = stmt.order_by(Event.start, Event.id).limit(limit)
    return [_event_summary(e) for e in ctx.db.scalars(stmt)]


@server.tool(
    returns="event",
    phrasings=["Show me the details of event {event_id}", "Who is invited to {event_id}?"],
)
def get_event(ctx: ToolContext, event_id: EventRow) -> EventDetail:
    """Get one event with its invitees, reminders and recurrence.

    Args:
        event_id: The event, such as "evt_0042".
    """
    return _event_detail(event_id)


@server.tool(
    writes=True,
    returns="event",
    phrasings=[
        "Schedule '{title}' on {start} for {duration_minutes} minutes in calendar {calendar_id}",
        "Put {title} on my calendar at {start}",
        "Book {duration_minutes} minutes for {title} starting {start}",
    ],
    examples={"title": TITLES, "start": _slot_ahead, "duration_minutes": [30, 45, 60, 90]},
)
def create_event(
    ctx: ToolContext,
    calendar_id: CalendarRow,
    title: str,
    start: str,
    duration_minutes: int = 60,
    location: str = "",
    description: str = "",
    timezone: str | None = None,
) -> EventDetail:
    """Create an event. Overlaps are allowed; use find_free_slot first to avoid them.

    Args:
        calendar_id: Calendar to add it to, such as "cal_01" (see list_calendars).
        title: Short title, such as "Design review".
        start: Start as ISO 8601, such as "2026-03-03T15:00".
        duration_minutes: Length in minutes (5-1440).
        location: Where it happens, such as "Room 4B" or "Zoom".
        description: Notes for the invitees.
        timezone: IANA zone of `start` if not the home zone, such as "Europe/London".
    """
    if not title.strip():
        raise InvalidArgument("title must not be empty.")
    _check_duration(duration_minutes)
    begin = _to_home(ctx, _parse_time(start, "start"), timezone)
    event = Event(
        id=next_id(ctx, Event.id, "evt", 4),
        calendar_id=calendar_id.id,
        title=title.strip(),
        description=description,
        location=location,
        start=begin,
        end=begin + dt.timedelta(minutes=duration_minutes),
        status="confirmed",
    )
    ctx.db.add(event)
    ctx.db.flush()
    return _event_detail(event)


@server.tool(
    writes=True,
    returns="event",
    phrasings=[
        "Move event {event_id} to {start}",
        "Rename {event_id} to '{title}'",
        "Change the location of {event_id} to {location}",
    ],
    examples={"start": _slot_ahead, "title": TITLES, "location": ["Room 4B", "Zoom", "Cafe Luna"]},
)
def update_event(
    ctx: ToolContext,
    event_id: EventRow,
    title: str | None = None,
    start: str | None = None,
    duration_minutes: int | None = None,
    location: str | None = None,
    description: str | None = None,
    calendar_id: CalendarId | None = None,
) -> EventDetail:
    """Change fields of an event; only the fields you pass change. Moving keeps the duration
    unless duration_minutes is given too.

    Args:
        event_id: The event to change, such as "evt_0042".
        title: New title.
        start: New start, such as "2026-03-04T10:30".
        duration_minutes: New length in minutes (5-1440).
        location: New location.
        description: New description.
        calendar_id: Move the event to another calendar, such as "cal_02".
    """
    event = event_id
    if event.status == "cancelled":
        raise PreconditionFailed(f"Event {event.id} is cancelled; create a new event instead.")
    if all(v is None for v in (title, start, duration_minutes, location, description, calendar_id)):
        raise InvalidArgument("Nothing to change: pass at least one field to update.")
    length = event.end - event.start
    if duration_minutes is not None:
        _check_duration(duration_minutes)
        length = dt.timedelta(minutes=duration_minutes)
    if start is not None:
        event.start = _parse_time(start, "start")
    event.end = event.start + length
    if title is not None:
        if not title.strip():
            raise InvalidArgument("title must not be empty.")
        event.title = title.strip()
    if location is not None:
        event.location = location
    if description is not None:
        event.description = description
    if calendar_id is not None:
        _check_calendar(ctx, calendar_id)
        event.calendar_id = calendar_id
    ctx.db.flush()
    return _event_detail(event)


@server.tool(
    writes=True,
    destructive=True,
    idempotent=True,
    returns="event",
    phrasings=["Cancel event {event_id}", "Delete {event_id} from my calendar"],
)
def delete_event(ctx: ToolContext, event_id: EventRow) -> Cancelled:
    """Cancel an event: it stays visible as cancelled and invitees are notified.

    Args:
        event_id: The event to cancel, such as "evt_0042".
    """
    event = event_id
    if event.status == "cancelled":
        raise PreconditionFailed(f"Event {event.id} is already cancelled.")
    event.status = "cancelled"
    ctx.db.flush()
    return {"event_id": event.id, "status": event.status, "notified": len(event.invitees)}


@server.tool(
    writes=True,
    returns="event",
    phrasings=["Invite {email} to {event_id}", "Add {email} as a guest of event {event_id}"],
    normalise={"email": "casefold"},
)
def add_invitee(ctx: ToolContext, event_id: EventRow, email: Email) -> Guests:
    """Invite someone to an event by email; their response starts as "needs_action".

    Args:
        event_id: The event, such as "evt_0042".
        email: The guest's email, such as "ana.silva@acme.com" (see list_contacts).
    """
    event = event_id
    email = email.strip().lower()
    if "@" not in email or "." not in email.split("@")[-1]:
        raise InvalidArgument(f"{email!r} is not an email address.")
    if event.status == "cancelled":
        raise PreconditionFailed(f"Event {event.id} is cancelled; invitations are closed.")
    if any(i.email == email for i in event.invitees):
        raise Conflict(f"{email} is already invited to {event.id}.")
    contact = ctx.db.scalar(select(Contact).where(func.lower(Contact.email) == email))
    event.invitees.append(Invitee(email=email, name=contact.name if contact else ""))
    ctx.db.flush()
    return {"event_id": event.id, "invitees": [i.email for i in event.invitees]}


@server.tool(
    writes=True,
    destructive=True,
    returns="event",
    phrasings=["Remove {email} from event {event_id}", "Uninvite {email} from {event_id}"],
    normalise={"email": "casefold"},
)
def remove_invitee(ctx: ToolContext, event_id: EventRow, email: Email) -> Guests:
    """Remove a guest from an event.

    Args:
        event_id: The event, such as "evt_0042".
        email: The guest's email as listed in get_event.
    """
    event = event_id
    email = email.strip().lower()
    match = next((i for i in event.invitees if i.email == email), None)
    if match is None:
        guests = ", ".join(i.email for i in event.invitees) or "nobody"
        raise NotFound(f"{email} is not invited to {event.id}. Invited: {guests}.")
    event.invitees.remove(match)
    ctx.db.flush()
    return {"event_id": event.id, "invitees": [i.email for i in event.invitees]}


@server.tool(
    writes=True,
    idempotent=True,
    returns="event",
    phrasings=[
        "Mark {email} as {response} for {event_id}",
        "Record that {email} {response} {event_id}",
    ],
    normalise={"email": "casefold"},
)
def respond_to_invitation(
    ctx: ToolContext,
    event_id: EventRow,
    email: Email,
    response: Literal["accepted", "declined", "tentative"],
) -> Response:
    """Record a guest's answer to an invitation.

    Args:
        event_id: The event, such as "evt_0042".
        email: The invited guest's email.
        response: One of "accepted", "declined", "tentative".
    """
    event = event_id
    email = email.strip().lower()
    match = next((i for i in event.invitees if i.email == email), None)
    if match is None:
        raise NotFound(f"{email} is not invited to {event.id}; call add_invitee first.")
    if event.status == "cancelled":
        raise PreconditionFailed(f"Event {event.id} is cancelled.")
    match.response = response
    ctx.db.flush()
    return {"event_id": event.id, "email": email, "response": response}


@server.tool(
    writes=True,
    idempotent=True,
    returns="event",
    phrasings=[
        "Make {event_id} repeat {frequency}",
        "Repeat event {event_id} every {interval} {frequency} for {count} times",
    ],
    examples={"interval": [1, 2], "count": [4, 8, 10]},
)
def set_recurrence(
    ctx: ToolContext,
    event_id: EventRow,
    frequency: Literal["daily", "weekly", "monthly", "none"],
    interval: int = 1,
    count: int | None = None,
    until: str | None = None,
) -> EventDetail:
    """Make an event repeat, change its rule, or stop it repeating with frequency "none".

    Args:
        event_id: The event, such as "evt_0042".
        frequency: "daily", "weekly", "monthly", or "none" to remove the rule.
        interval: Repeat every N periods (1-12), e.g. 2 with "weekly" is every other week.
        count: Stop after this many occurrences (1-365); give count or until, not both.
        until: Last possible day, such as "2026-06-30".
    """
    event = event_id
    if event.status == "cancelled":
        raise PreconditionFailed(f"Event {event.id} is cancelled.")
    if frequency == "none":
        if event.recurrence is None:
            raise PreconditionFailed(f"Event {event.id} does not repeat.")
        event.recurrence = None
        ctx.db.flush()
        return _event_detail(event)
    if not 1 <= interval <= 12:
        raise InvalidArgument(f"interval must be between 1 and 12, got {interval}.")
    if count is not None and until is not None:
        raise InvalidArgument("Give count or until, not both.")
    if count is not None and not 1 <= count <= 365:
        raise InvalidArgument(f"count must be between 1 and 365, got {count}.")
    until_date = parse_date(until, "until") if until else None
    if until_date is not None and until_date < event.start.date():
        raise InvalidArgument("until is before the event's first occurrence.")
    if event.recurrence is None:
        event.recurrence = Recurrence(
            frequency=frequency, interval=interval, count=count, until=until_date
        )
    else:
        event.recurrence.frequency = frequency
        event.recurrence.interval = interval
        event.recurrence.count = count
        event.recurrence.until = until_date
    ctx.db.flush()
    return _event_detail(event)


def _occurrences(event: Event, first: dt.datetime, last: dt.datetime) -> list[dt.datetime]:
    rule = event.recurrence
    if rule is None:
        return [event.start] if first <= event.start <= last else []
    out: list[dt.datetime] = []
    n = 0
    current = event.start
    while current <= last and n < 1000:
        if rule.count is not None and n >= rule.count:
            break
        if rule.until is not None and current.date() > rule.until:
            break
        if current >= first:
            out.append(current)
        n += 1
        if rule.frequency == "daily":
            current = event.start + dt.timedelta(days=n * rule.interval)
        elif rule.frequency == "weekly":
            current = event.start + dt.timedelta(weeks=n * rule.interval)
        else:
            months = event.start.month - 1 + n * rule.interval
            year = event.start.year + months // 12
            day = min(event.start.day, 28)
            current = event.start.replace(year=year, month=months % 12 + 1, day=day)
    return out


@server.tool(
    returns="event",
    phrasings=[
        "When does {event_id} happen between {start_date} and {end_date}?",
        "List the dates of {event_id} from {start_date} to {end_date}",
    ],
    examples={"start_date": _day_ahead, "end_date": _day_ahead},
)
def list_occurrences(
    ctx: ToolContext, event_id: EventRow, start_date: str, end_date: str
) -> Occurrences:
    """Expand a (possibly recurring) event into its occurrences between two dates.

    Args:
        event_id: The event, such as "evt_0042".
        start_date: First day, such as "2026-03-01".
        end_date: Last day (at most 366 days after start_date).
    """
    event = event_id
    first = _day(start_date, "start_date")
    last = _day(end_date, "end_date")
    if last < first or (last - first).days > 366:
        raise InvalidArgument("end_date must be on or after start_date and within 366 days.")
    times = _occurrences(event, first, last.replace(hour=23, minute=59))
    return {"event_id": event.id, "occurrences": [_minutes(t) for t in times]}


@server.tool(
    writes=True,
    returns=("event", "reminder"),
    phrasings=[
        "Remind me {minutes_before} minutes before {event_id}",
        "Add an {method} reminder {minutes_before} minutes before event {event_id}",
    ],
    examples={"minutes_before": [10, 15, 30, 60, 1440]},
)
def add_reminder(
    ctx: ToolContext,
    event_id: EventRow,
    minutes_before: int,
    method: Literal["popup", "email"] = "popup",
) -> ReminderAdded:
    """Add a reminder to an event (at most 5 per event).

    Args:
        event_id: The event, such as "evt_0042".
        minutes_before: How long before the start, in minutes (0-40320), e.g. 1440 for a day.
        method: "popup" or "email".
    """
    event = event_id
    if not 0 <= minutes_before <= 40320:
        raise InvalidArgument(f"minutes_before must be between 0 and 40320, got {minutes_before}.")
    if len(event.reminders) >= 5:
        raise PreconditionFailed(f"Event {event.id} already has 5 reminders.")
    if any(r.minutes_before == minutes_before and r.method == method for r in event.reminders):
        raise Conflict(
            f"Event {event.id} already has a {method} reminder {minutes_before} minutes before."
        )
    reminder = Reminder(
        id=next_id(ctx, Reminder.id, "rem", 4), minutes_before=minutes_before, method=method
    )
    event.reminders.append(reminder)
    ctx.db.flush()
    return {
        "reminder_id": reminder.id,
        "event_id": event.id,
        "minutes_before": minutes_before,
        "method": method,
    }


@server.tool(
    phrasings=["Am I free on {date}?", "Show my busy times on {date}"],
    examples={"date": _day_ahead},
)
def get_free_busy(ctx: ToolContext, date: str, email: Email | None = None) -> FreeBusy:
    """Busy intervals on one day, for the user or for a contact who is invited to the user's events.

    Args:
        date: The day, such as "2026-03-03".
        email: A contact's email to check instead of the user; only events they accepted count.
    """
    start = _day(date, "date")
    events = _overlapping(ctx, start, start + dt.timedelta(days=1))
    if email is not None:
        email = email.strip().lower()
        if ctx.db.scalar(select(Contact.id).where(func.lower(Contact.email) == email)) is None:
            raise NotFound(f"No contact with email {email!r}; call list_contacts to find it.")
        events = [
            e
            for e in events
            if any(i.email == email and i.response == "accepted" for i in e.invitees)
        ]
    return {
        "date": start.date().isoformat(),
        "who": email or _settings(ctx).owner_email,
        "busy": [_span(e.start, e.end) for e in events],
    }


@server.tool(
    phrasings=[
        "Find me a free {duration_minutes}-minute slot on {date}",
        "When am I free for {duration_minutes} minutes on {date}?",
    ],
    examples={"date": _day_ahead, "duration_minutes": [30, 60, 90]},
)
def find_free_slot(
    ctx: ToolContext,
    date: str,
    duration_minutes: Annotated[int, Field(ge=5, le=MAX_DURATION)],
    earliest: str = "09:00",
    latest: str = "18:00",
) -> Interval:
    """Find the first free slot of a given length on a day, within working hours.

    Args:
        date: The day, such as "2026-03-03".
        duration_minutes: Length needed, in minutes (5-1440).
        earliest: Earliest start time of day, such as "09:00".
        latest: Latest end time of day, such as "18:00".
    """
    day = parse_date(date, "date")
    try:
        lo = dt.datetime.combine(day, dt.time.fromisoformat(earliest))
        hi = dt.datetime.combine(day, dt.time.fromisoformat(latest))
    except ValueError:
        raise InvalidArgument("earliest and latest must be times such as '09:00'.") from None
    if hi <= lo:
        raise InvalidArgument("latest must be after earliest.")
    need = dt.timedelta(minutes=duration_minutes)
    cursor = lo
    for e in _overlapping(ctx, lo, hi):
        if e.start - cursor >= need:
            break
        cursor = max(cursor, e.end)
    if hi - cursor < need:
        raise PreconditionFailed(
            f"No free {duration_minutes}-minute slot on {day.isoformat()} between {earliest} and "
            f"{latest}; try another day or a shorter duration."
        )
    return _span(cursor, cursor + need)


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests.
@server.entity(
    "event",
    key="event_id",
    model=Event,
    not_found="Call search_events or list_events to find the event's id (such as 'evt_0042').",
)
def _events(ctx: ToolContext) -> list[dict]:
    """Confirmed events from a week ago to a month ahead (what users talk about)."""
    stmt = (
        select(Event)
        .where(
            Event.status == "confirmed",
            Event.start >= ctx.now - dt.timedelta(days=7),
            Event.start <= ctx.now + dt.timedelta(days=30),
        )
        .order_by(Event.id)
    )
    return [
        {
            "event_id": e.id,
            "title": e.title,
            "start": _minutes(e.start),
            "date": e.start.date().isoformat(),
            "calendar_id": e.calendar_id,
            "emails": [i.email for i in e.invitees],
        }
        for e in ctx.db.scalars(stmt)
    ]


@server.entity(
    "calendar",
    key="calendar_id",
    model=Calendar,
    not_found="Call list_calendars to see the calendars and their ids (such as 'cal_01').",
)
def _calendars(ctx: ToolContext) -> list[dict]:
    return [
        {"calendar_id": c.id, "name": c.name}
        for c in ctx.db.scalars(select(Calendar).order_by(Calendar.id))
    ]


@server.entity("contact_email", key="email")
def _contacts(ctx: ToolContext) -> list[dict]:
    rows = ctx.db.scalars(select(Contact).order_by(Contact.id))
    return [{"email": c.email, "name": c.name, "query": c.name.split()[-1]} for c in rows]


@server.entity("reminder", key="reminder_id")
def _reminders(ctx: ToolContext) -> list[dict]:
    rows = ctx.db.scalars(select(Reminder).order_by(Reminder.id))
    return [{"reminder_id": r.id, "event_id": r.event_id} for r in rows]
