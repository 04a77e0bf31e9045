"""The calendar's 17 tools. Docstrings are what the model reads: keep examples concrete."""

from __future__ import annotations

import datetime as dt
import functools
import random
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo

from pydantic import Field
from sqlalchemy import bindparam, delete, func, select, update

from prove_gym.server import (
    Bound,
    Conflict,
    Entity,
    EnvVersion,
    InvalidArgument,
    NotFound,
    NotRequired,
    PreconditionFailed,
    Query,
    Record,
    Server,
    ToolContext,
    TypedDict,
    contains,
    next_id,
    parse_date,
    search_pattern,
    zones,
)

from .models import Base, Calendar, Contact, Event, Invitee, Recurrence, Reminder, Settings
from .sampler import sample_calendar

SearchText = Annotated[str, Field(max_length=200)]
"""Free text matched with SQL LIKE: its length is capped in the schema."""


OUT_OF_SCOPE = (
    "Print my schedule for next week.",
    "Sync this calendar with my phone.",
    "Change the calendar's colour scheme to dark mode.",
    "Share my whole work calendar with my manager.",
    "Import the public holidays for Portugal.",
    "Subscribe me to my team's shared calendar feed.",
    "Export all my events to a file.",
    "Show me the weather forecast next to each event.",
    "Turn on two-factor sign-in for my calendar account.",
    "Send a text message to everyone in tomorrow's meeting.",
    "Book a taxi for my next appointment.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

TIME_ZONES = 1
"""The env version (``prove/calendar-v1``) from which every time is a moment in a named
zone: shown with its offset and zone, taken in any zone, compared as instants, durations
elapsed across daylight-saving changes."""

RULES: dict[str, str] = {
    "nonexistent_local_time": "From prove/calendar-v1: a local time skipped when clocks go "
    "forward (such as 02:30 on the day summer time starts) is refused; choose a time after "
    "the change.",
    "ambiguous_local_time": "From prove/calendar-v1: the calendar keeps times as wall-clock "
    "times in the home zone, so a start or end in the hour repeated when clocks go back "
    "there is refused; choose a time outside it.",
}

server = Server(
    "calendar",
    out_of_scope=OUT_OF_SCOPE,
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.1.0",
    env_versions=[
        EnvVersion(
            TIME_ZONES,
            "time zones: every time shown is a local time with its UTC offset and IANA zone "
            "(RFC 9557, '2026-03-08T09:00-04:00[America/New_York]'); every calendar keeps "
            "its times in the owner's home zone (the state's only calendar zone); a time "
            "given may name its offset or zone; durations are elapsed minutes across "
            "daylight-saving changes; free/busy and free slots compare instants, a "
            "contact's free/busy is their own day in their own zone; a skipped local time is "
            "refused (rule nonexistent_local_time), and so is a start or end in the home "
            "zone's repeated hour (rule ambiguous_local_time)",
            tasks_file=Path(__file__).with_name("tasks_v1.jsonl"),
            instructions="Time zones: every time is shown as a local time with its UTC "
            "offset and IANA zone, such as '2026-03-08T09:00-04:00[America/New_York]'. Your "
            "calendars keep their times in your home zone (get_current_time and "
            "list_calendars show it); contacts have their own zones (list_contacts). A time "
            "you give is a local time in your home zone ('2026-03-08T09:00'), or names its "
            "offset ('2026-03-08T09:00-04:00') or zone ('2026-03-08T09:00[Asia/Tokyo]'). "
            "Durations are elapsed minutes, also across a daylight-saving change. A local "
            "time skipped when clocks go forward is refused (rule 'nonexistent_local_time'), "
            "and so is a start or end in the hour repeated in your home zone when clocks go "
            "back (rule 'ambiguous_local_time'): choose another time. A contact's free/busy "
            "covers their own day, in their zone.",
        )
    ],
    base=Base,
    sampler=sample_calendar,
    description="A personal calendar with events, invitees, recurring events, reminders and "
    "free/busy lookups.",
    instructions="Calendar conventions: times are ISO 8601 local times in the user's home time "
    "zone (e.g. '2026-03-03T15:00') unless a tool takes a timezone; event ids look like "
    "'evt_0042'. Call get_current_time to learn today's date.",
)

EventRow = Annotated[Record[Event], Entity("event")]
CalendarRow = Annotated[Record[Calendar], Entity("calendar")]
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


class CalendarOut(TypedDict):
    calendar_id: str
    name: str
    color: str
    description: str
    timezone: NotRequired[str]
    """From prove/calendar-v1: the zone the calendar keeps its times in (the owner's)."""


ContactOut = TypedDict("ContactOut", {"name": str, "email": str, "company": str, "timezone": str})
Cancelled = TypedDict("Cancelled", {"event_id": str, "status": str, "notified": int})
Guests = TypedDict("Guests", {"event_id": str, "invitees": list[str]})
Response = TypedDict("Response", {"event_id": str, "email": str, "response": str})
Occurrences = TypedDict("Occurrences", {"event_id": str, "occurrences": list[str]})
ReminderAdded = TypedDict(
    "ReminderAdded", {"reminder_id": str, "event_id": str, "minutes_before": int, "method": str}
)
FreeBusy = TypedDict("FreeBusy", {"date": str, "who": str, "busy": list[Interval]})


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
events, invitees, reminders = Event.__table__, Invitee.__table__, Reminder.__table__
recurrences = Recurrence.__table__
SETTINGS = Query(select(Settings.__table__).where(Settings.id == 1))
CALENDAR = Query(select(Calendar.__table__).where(Calendar.id == bindparam("id")))
CALENDARS = Query(select(Calendar.__table__).order_by(Calendar.id))
CONTACT_BY_EMAIL = Query(
    select(Contact.__table__).where(func.lower(Contact.email) == bindparam("email"))
)
CONTACT_ID_BY_EMAIL = Query(
    select(Contact.id).where(func.lower(Contact.email) == bindparam("email"))
)
CONTACTS = Query(select(Contact.__table__).order_by(Contact.id))
CONTACTS_BY_NAME = Query(
    select(Contact.__table__).order_by(Contact.name, Contact.id).limit(bindparam("limit"))
)
CONTACTS_MATCHING = Query(
    select(Contact.__table__)
    .where(contains(bindparam("pattern"), Contact.name, Contact.email, Contact.company))
    .order_by(Contact.name, Contact.id)
    .limit(bindparam("limit"))
)
EVENT = Query(select(events).where(Event.id == bindparam("id")))
# an event summary also says whether it repeats
_SUMMARIES = select(*events.c, recurrences.c.event_id.is_not(None).label("recurring")).select_from(
    events.outerjoin(recurrences)
)
GUESTS = Query(
    select(invitees).where(Invitee.event_id == bindparam("event_id")).order_by(Invitee.email)
)
GUEST_COUNT = Query(select(func.count()).where(Invitee.event_id == bindparam("event_id")))
ACCEPTED_BY = Query(
    select(Invitee.event_id).where(
        Invitee.email == bindparam("email"), Invitee.response == "accepted"
    )
)
GUEST = Query(
    select(invitees).where(
        Invitee.event_id == bindparam("event_id"), Invitee.email == bindparam("email")
    )
)
SET_GUEST_RESPONSE = Query(
    update(Invitee)
    .where(Invitee.event_id == bindparam("event_id"), Invitee.email == bindparam("email"))
    .values(response=bindparam("response"))
)
REMOVE_GUEST = Query(
    delete(Invitee).where(
        Invitee.event_id == bindparam("event_id"), Invitee.email == bindparam("email")
    )
)
REMINDERS = Query(
    select(reminders).where(Reminder.event_id == bindparam("event_id")).order_by(Reminder.id)
)
ALL_REMINDERS = Query(select(Reminder.id, Reminder.event_id).order_by(Reminder.id))
RECURRENCE = Query(select(recurrences).where(Recurrence.event_id == bindparam("event_id")))
DROP_RECURRENCE = Query(delete(Recurrence).where(Recurrence.event_id == bindparam("event_id")))
SET_RECURRENCE = Query(
    update(Recurrence)
    .where(Recurrence.event_id == bindparam("event_id"))
    .values(
        frequency=bindparam("frequency"),
        interval=bindparam("interval"),
        count=bindparam("count"),
        until=bindparam("until"),
    )
)
CANCEL = Query(update(Event).where(Event.id == bindparam("id")).values(status="cancelled"))
UPDATE_EVENT = Query(
    update(Event)
    .where(Event.id == bindparam("id"))
    .values(
        title=bindparam("title"),
        start=bindparam("start"),
        end=bindparam("end"),
        location=bindparam("location"),
        description=bindparam("description"),
        calendar_id=bindparam("calendar_id"),
    )
)
OVERLAPPING = Query(
    _SUMMARIES.where(
        Event.status == "confirmed", Event.start < bindparam("end"), Event.end > bindparam("start")
    ).order_by(Event.start, Event.id)
)
# the event listing's: confirmed events starting from ``lo`` to ``hi``, and their guests
_UPCOMING = (
    Event.status == "confirmed",
    Event.start >= bindparam("lo"),
    Event.start <= bindparam("hi"),
)
UPCOMING = Query(
    select(Event.id, Event.title, Event.start, Event.calendar_id)
    .where(*_UPCOMING)
    .order_by(Event.id)
)
UPCOMING_GUESTS = Query(  # (only those events' invitees: most events are outside the window)
    select(Invitee.event_id, Invitee.email)
    .join(events, Event.id == Invitee.event_id)
    .where(*_UPCOMING)
    .order_by(Invitee.email, Invitee.id)
)


@functools.cache
def _events_between(by_calendar: bool, cancelled: bool) -> Query:
    """Summaries of the events starting in [first, after), by start: list_events' statement."""
    stmt = _SUMMARIES.where(Event.start >= bindparam("first"), Event.start < bindparam("after"))
    if by_calendar:
        stmt = stmt.where(Event.calendar_id == bindparam("calendar_id"))
    if not cancelled:
        stmt = stmt.where(Event.status == "confirmed")
    return Query(stmt.order_by(Event.start, Event.id))


@functools.cache
def _events_matching(since: bool, until: bool) -> Query:
    """Summaries of the events whose text matches, by start: search_events' statement."""
    stmt = _SUMMARIES.where(
        contains(bindparam("pattern"), Event.title, Event.description, Event.location)
    )
    if since:
        stmt = stmt.where(Event.start >= bindparam("first"))
    if until:
        stmt = stmt.where(Event.start < bindparam("after"))
    return Query(stmt.order_by(Event.start, Event.id).limit(bindparam("limit")))


# ----------------------------------------------------------------- helpers
def _settings(ctx: ToolContext) -> Any:
    return ctx.sql.first(SETTINGS)


def _parse_time(value: str, name: str) -> dt.datetime:
    try:
        parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(
            f"{name} must be an ISO 8601 date-time such as '2026-03-03T15:00', got {value!r}."
        ) from None
    return parsed.replace(second=0, microsecond=0)


def _zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``, from the pinned zone data (:mod:`.zones`)."""
    try:
        return zones.zone(name.strip())
    except zones.ZoneError:
        raise InvalidArgument(
            f"Unknown time zone {name[:64]!r}; use an IANA name such as 'Europe/Berlin'."
        ) from None


def _home(ctx: ToolContext) -> ZoneInfo:
    return _zone(_settings(ctx).timezone)


def _zoned(ctx: ToolContext) -> bool:
    return ctx.env_version >= TIME_ZONES


def _broken(rule: str, detail: str) -> PreconditionFailed:
    return PreconditionFailed(f"Rule '{rule}' failed: {detail}")


def _shower(ctx: ToolContext) -> Callable[[dt.datetime], str]:
    """How a stored (home wall-clock) time is shown: to the minute in ``-v0``; from
    ``-v1``, with its offset and zone."""
    if not _zoned(ctx):
        return _minutes
    home = _home(ctx)
    return lambda when: zones.show(zones.instant(when, home), home)


def _check_wall(wall: dt.datetime, tz: ZoneInfo, what: str, *, home: bool) -> None:
    """Refuse a wall-clock time that does not happen in ``tz``, or (``home``: the zone the
    calendar keeps its times in) that happens twice there."""
    refused = zones.refusal(
        wall,
        tz,
        what,
        twice=home,
        zone_is=", the zone the calendar keeps its times in" if home else "",
        undone="Nothing was changed",
        fix_twice="choose a time outside that hour.",
    )
    if refused is not None:
        raise _broken(*refused)


def _moment(ctx: ToolContext, value: str, name: str, timezone: str | None) -> dt.datetime:
    """From ``-v1``: the instant a time argument names: a local time in ``timezone`` (or
    the home zone), a time with an offset, or a local time with its zone in brackets."""
    text, named = zones.split_local(value)
    if named is not None and timezone is not None and named.strip() != timezone.strip():
        raise InvalidArgument(
            f"{name} names the zone {named[:64]!r} but timezone is {timezone[:64]!r}: give one."
        )
    given = named if named is not None else timezone
    tz = _zone(given) if given is not None else _home(ctx)
    when = _parse_time(text, name)
    if when.tzinfo is None:
        _check_wall(when, tz, name, home=False)
        return zones.instant(when, tz)
    if named is not None and when.astimezone(tz).utcoffset() != when.utcoffset():
        there = when.astimezone(tz).isoformat(timespec="minutes")
        raise InvalidArgument(
            f"{name} {value.strip()[:80]!r}: that moment is {there} in {tz.key}, at another "
            "offset; give the zone or the offset, or make them agree."
        )
    return when.astimezone(zones.UTC)


def _stored(ctx: ToolContext, moment: dt.datetime, what: str) -> dt.datetime:
    """From ``-v1``: the home wall-clock time a moment is kept as (refused when that time
    happens twice)."""
    home = _home(ctx)
    kept = zones.wall(moment, home)
    _check_wall(kept, home, what, home=True)
    return kept


def _to_home(ctx: ToolContext, when: dt.datetime, timezone: str | None) -> dt.datetime:
    """``-v0``: interpret ``when`` in ``timezone`` (or its own offset) in home time."""
    home = _home(ctx)
    if when.tzinfo is None and timezone is None:
        return when
    aware = when if when.tzinfo is not None else when.replace(tzinfo=_zone(timezone or ""))
    return aware.astimezone(home).replace(tzinfo=None)


def _check_calendar(ctx: ToolContext, calendar_id: str) -> None:
    """For tools that report their other arguments' errors first (rows resolve before them)."""
    if ctx.sql.first(CALENDAR, id=calendar_id) is None:
        raise NotFound(server.entities["calendar"].missing(calendar_id))


def _day(value: str, name: str) -> dt.datetime:
    """The start (midnight) of a date argument such as "2026-03-03"."""
    return dt.datetime.combine(parse_date(value, name), dt.time())


def _minutes(when: dt.datetime) -> str:
    return when.isoformat(timespec="minutes")


def _span(
    start: dt.datetime, end: dt.datetime, show: Callable[[dt.datetime], str] = _minutes
) -> Interval:
    return {"start": show(start), "end": show(end)}


def _event_summary(
    e: Any, recurring: bool | None = None, show: Callable[[dt.datetime], str] = _minutes
) -> EventSummary:
    """An event row's summary; ``recurring`` unless the row says it (``_SUMMARIES``)."""
    return {
        "event_id": e.id,
        "title": e.title,
        **_span(e.start, e.end, show),
        "calendar_id": e.calendar_id,
        "status": e.status,
        "recurring": e.recurring if recurring is None else recurring,
    }


def _event_detail(ctx: ToolContext, event_id: str) -> EventDetail:
    e = ctx.sql.one(EVENT, id=event_id)
    r = ctx.sql.first(RECURRENCE, event_id=event_id)
    return {
        **_event_summary(e, r is not None, _shower(ctx)),
        "description": e.description,
        "location": e.location,
        "invitees": [
            {"email": i.email, "name": i.name, "response": i.response}
            for i in ctx.sql.all(GUESTS, event_id=event_id)
        ],
        "reminders": [
            {"reminder_id": m.id, "minutes_before": m.minutes_before, "method": m.method}
            for m in ctx.sql.all(REMINDERS, event_id=event_id)
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


def _overlapping(ctx: ToolContext, start: dt.datetime, end: dt.datetime) -> list[Any]:
    return ctx.sql.all(OVERLAPPING, start=start, end=end)


# ------------------------------------------------------------------- tools
@server.tool(phrasings=["What time is it?", "What's today's date?"])
def get_current_time(ctx: ToolContext, timezone: str | None = None) -> CurrentTime:
    """Get the current date and time, in the user's home time zone or another one.

    From prove/calendar-v1 "now" names its offset and zone, such as
    "2026-03-05T15:30-05:00[America/New_York]".

    Args:
        timezone: Optional IANA time zone to express the time in, such as "Asia/Tokyo".
    """
    home = _settings(ctx).timezone
    now = ctx.now
    if _zoned(ctx):
        moment = zones.instant(now, _zone(home))
        there = _zone(timezone) if timezone else _zone(home)
        return {
            "now": zones.show(moment, there),
            "weekday": moment.astimezone(there).strftime("%A"),
            "timezone": there.key,
            "home_timezone": home,
        }
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
    """List the user's calendars with their ids, e.g. [{"calendar_id": "cal_01", "name": "Work"}].

    From prove/calendar-v1 each also names the zone it keeps its times in ("timezone").
    """
    out: list[CalendarOut] = [
        {"calendar_id": c.id, "name": c.name, "color": c.color, "description": c.description}
        for c in ctx.sql.all(CALENDARS)
    ]
    if _zoned(ctx):  # every calendar is the owner's, kept in their home zone
        home = _settings(ctx).timezone
        for c in out:
            c["timezone"] = home
    return out


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
    if query:
        rows = ctx.sql.all(CONTACTS_MATCHING, pattern=search_pattern(query.strip()), limit=limit)
    else:
        rows = ctx.sql.all(CONTACTS_BY_NAME, limit=limit)
    return [
        {"name": c.name, "email": c.email, "company": c.company, "timezone": c.timezone}
        for c in rows
    ]


@server.tool(
    stands_in_for=("get_free_busy", "find_free_slot"),
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
    params: dict[str, Any] = {"first": first, "after": last + dt.timedelta(days=1)}
    if calendar_id is not None:
        _check_calendar(ctx, calendar_id)
        params["calendar_id"] = calendar_id
    query = _events_between(calendar_id is not None, include_cancelled)
    show = _shower(ctx)
    return [_event_summary(e, show=show) for e in ctx.sql.all(query, **params)]


@server.tool(
    returns="event",
    phrasings=[
        "Find my {query} meeting",
        "When are my {query} events?",
        "Look up events about {query}",
    ],
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
    bounds: dict[str, dt.datetime] = {}
    if start_date:
        bounds["first"] = _day(start_date, "start_date")
    if end_date:
        bounds["after"] = _day(end_date, "end_date") + dt.timedelta(days=1)
    matching = _events_matching("first" in bounds, "after" in bounds)
    rows = ctx.sql.all(matching, pattern=search_pattern(query.strip()), limit=limit, **bounds)
    show = _shower(ctx)
    return [_event_summary(e, show=show) for e in rows]


@server.tool(
    returns="event",
    phrasings=["Show me the details of event {event_id}", "Who is invited to {event_id}?"],
)
def get_event(ctx: ToolContext, event_id: EventRow) -> EventDetail:
    """Get one event with its invitees, reminders and recurrence.

    Args:
        event_id: The event, such as "evt_0042".
    """
    return _event_detail(ctx, event_id.id)


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
        start: Start as ISO 8601, such as "2026-03-03T15:00"; from prove/calendar-v1 also
            with its offset or zone, such as "2026-03-03T15:00[Europe/London]".
        duration_minutes: Length in minutes (5-1440); from prove/calendar-v1 elapsed
            minutes, also across a daylight-saving change.
        location: Where it happens, such as "Room 4B" or "Zoom".
        description: Notes for the invitees.
        timezone: IANA zone of `start` if not the home zone, such as "Europe/London".

    From prove/calendar-v1 a local time the clocks skip is refused (rule
    nonexistent_local_time), and so is a start or end in the hour repeated in the home zone
    when the clocks go back (rule ambiguous_local_time).
    """
    if not title.strip():
        raise InvalidArgument("title must not be empty.")
    _check_duration(duration_minutes)
    length = dt.timedelta(minutes=duration_minutes)
    if _zoned(ctx):
        moment = _moment(ctx, start, "start", timezone)
        begin = _stored(ctx, moment, "start")
        finish = _stored(ctx, moment + length, "end")
    else:
        begin = _to_home(ctx, _parse_time(start, "start"), timezone)
        finish = begin + length
    new_id = next_id(ctx, Event.id, "evt", 4)
    ctx.sql.insert(
        Event,
        id=new_id,
        calendar_id=calendar_id.id,
        title=title.strip(),
        description=description,
        location=location,
        start=begin,
        end=finish,
        status="confirmed",
    )
    return _event_detail(ctx, new_id)


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
        start: New start, such as "2026-03-04T10:30"; from prove/calendar-v1 also with its
            offset or zone, such as "2026-03-04T10:30-05:00" (the same rules as
            create_event's start).
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
    if _zoned(ctx):  # moments: the length is elapsed time, across a daylight-saving change
        home = _home(ctx)
        if duration_minutes is None:
            length = zones.instant(event.end, home) - zones.instant(event.start, home)
        moment = (
            _moment(ctx, start, "start", None)
            if start is not None
            else zones.instant(event.start, home)
        )
        begin = _stored(ctx, moment, "start") if start is not None else event.start
        finish = _stored(ctx, moment + length, "end")
    else:
        begin = _parse_time(start, "start") if start is not None else event.start
        finish = begin + length
    if title is not None and not title.strip():
        raise InvalidArgument("title must not be empty.")
    if calendar_id is not None:
        _check_calendar(ctx, calendar_id)
    new = {
        "title": title.strip() if title is not None else event.title,
        "start": begin,
        "end": finish,
        "location": event.location if location is None else location,
        "description": event.description if description is None else description,
        "calendar_id": event.calendar_id if calendar_id is None else calendar_id,
    }
    if any(getattr(event, k) != v for k, v in new.items()):  # a write only where one is due
        ctx.sql.run(UPDATE_EVENT, id=event.id, **new)
    return _event_detail(ctx, event.id)


@server.tool(
    writes=True,
    inverse_of="create_event",
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
    ctx.sql.run(CANCEL, id=event.id)
    notified = ctx.sql.scalar(GUEST_COUNT, event_id=event.id)
    return {"event_id": event.id, "status": "cancelled", "notified": notified}


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
    guests = [i.email for i in ctx.sql.all(GUESTS, event_id=event.id)]
    if email in guests:
        raise Conflict(f"{email} is already invited to {event.id}.")
    contact = ctx.sql.first(CONTACT_BY_EMAIL, email=email)
    ctx.sql.insert(Invitee, event_id=event.id, email=email, name=contact.name if contact else "")
    return {"event_id": event.id, "invitees": [*guests, email]}  # the new guest last


@server.tool(
    writes=True,
    inverse_of="add_invitee",
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
    guests = [i.email for i in ctx.sql.all(GUESTS, event_id=event.id)]
    if email not in guests:
        listed = ", ".join(guests) or "nobody"
        raise NotFound(f"{email} is not invited to {event.id}. Invited: {listed}.")
    ctx.sql.run(REMOVE_GUEST, event_id=event.id, email=email)
    return {"event_id": event.id, "invitees": [g for g in guests if g != email]}


@server.tool(
    writes=True,
    idempotent=True,
    returns="event",
    phrasings=[
        "Mark {email} as {response} for {event_id}",
        "Record {email}'s reply to {event_id} as {response}",
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
    guest = ctx.sql.first(GUEST, event_id=event.id, email=email)
    if guest is None:
        raise NotFound(
            f"{email} is not invited to {event.id}, so there is no reply of theirs to record "
            "(get_event lists who is invited). Nothing was changed."
        )
    if event.status == "cancelled":
        raise PreconditionFailed(f"Event {event.id} is cancelled.")
    if guest.response != response:
        ctx.sql.run(SET_GUEST_RESPONSE, event_id=event.id, email=email, response=response)
    return {"event_id": event.id, "email": email, "response": response}


ONE_OFF = (
    "birthday", "anniversary", "appointment", "interview", "postmortem", "quarterly",
    "launch", "demo", "visit", "service", "workshop", "parent-teacher", "deep dive",
)  # fmt: skip
"""Words of event titles that happen once (or yearly, which no rule here says): no
"make Grandma's birthday repeat monthly"."""
DAILY_OK = ("standup", "school pickup", "gym", "yoga")
"""Words of event titles that can repeat every day."""


def _repeat_fitting(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """How an event would repeat, as its title has it: a standup or the school pickup
    daily or weekly, a 1:1 or a dinner weekly or monthly, "none" only for one that
    repeats now; None for an event that happens once (a birthday, an interview), so
    synthesis draws another."""
    event = ctx.sql.first(EVENT, id=str(bound.args.get("event_id", "")))
    if event is None:
        return None
    title = str(event.title).lower()
    if any(word in title for word in ONE_OFF):
        return None
    choices = ["weekly", "monthly"] + (["daily"] if any(w in title for w in DAILY_OK) else [])
    if ctx.sql.first(RECURRENCE, event_id=event.id) is not None:
        choices.append("none")
    return rng.choice(choices)


@server.tool(
    writes=True,
    idempotent=True,
    returns="event",
    values={"frequency": _repeat_fitting},
    phrasings=[
        "Set the repeat rule of {event_id} to {frequency}",
        "Make {event_id} repeat {frequency}, {count} times in all",
        "Repeat event {event_id} {frequency} at an interval of {interval}, {count} times in all",
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
        if not ctx.sql.run(DROP_RECURRENCE, event_id=event.id):
            raise PreconditionFailed(f"Event {event.id} does not repeat.")
        return _event_detail(ctx, event.id)
    if not 1 <= interval <= 12:
        raise InvalidArgument(f"interval must be between 1 and 12, got {interval}.")
    if count is not None and until is not None:
        raise InvalidArgument("Give count or until, not both.")
    if count is not None and not 1 <= count <= 365:
        raise InvalidArgument(f"count must be between 1 and 365, got {count}.")
    until_date = parse_date(until, "until") if until else None
    if until_date is not None and until_date < event.start.date():
        raise InvalidArgument("until is before the event's first occurrence.")
    rule = {"frequency": frequency, "interval": interval, "count": count, "until": until_date}
    current = ctx.sql.first(RECURRENCE, event_id=event.id)
    if current is None:
        ctx.sql.insert(Recurrence, event_id=event.id, **rule)
    elif any(getattr(current, k) != v for k, v in rule.items()):
        ctx.sql.run(SET_RECURRENCE, event_id=event.id, **rule)
    return _event_detail(ctx, event.id)


def _occurrences(event: Any, rule: Any, first: dt.datetime, last: dt.datetime) -> list[dt.datetime]:
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

    A repeating event keeps its local time of day in the home zone, across daylight-saving
    changes; from prove/calendar-v1 each occurrence shows its own offset.

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
    rule = ctx.sql.first(RECURRENCE, event_id=event.id)
    times = _occurrences(event, rule, first, last.replace(hour=23, minute=59))
    show = _shower(ctx)  # from -v1 each occurrence at its own offset (the same wall time)
    return {"event_id": event.id, "occurrences": [show(t) for t in times]}


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
    existing = ctx.sql.all(REMINDERS, event_id=event.id)
    if len(existing) >= 5:
        raise PreconditionFailed(f"Event {event.id} already has 5 reminders.")
    if any(r.minutes_before == minutes_before and r.method == method for r in existing):
        raise Conflict(
            f"Event {event.id} already has a {method} reminder {minutes_before} minutes before."
        )
    reminder_id = next_id(ctx, Reminder.id, "rem", 4)
    ctx.sql.insert(
        Reminder, id=reminder_id, event_id=event.id, minutes_before=minutes_before, method=method
    )
    return {
        "reminder_id": reminder_id,
        "event_id": event.id,
        "minutes_before": minutes_before,
        "method": method,
    }


@server.tool(
    stands_in_for=("find_free_slot",),
    phrasings=[
        "Am I free on {date}?",
        "Show my busy times on {date}",
        "Is {email} free on {date}?",
    ],
    examples={"date": _day_ahead},
)
def get_free_busy(ctx: ToolContext, date: str, email: Email | None = None) -> FreeBusy:
    """Busy intervals on one day, for the user or for a contact who is invited to the user's events.

    From prove/calendar-v1 the day is the contact's own day in their zone (the user's in the
    home zone), events count by the moments they cover, and each interval is shown in that
    zone with its offset.

    Args:
        date: The day, such as "2026-03-03".
        email: A contact's email to check instead of the user; only events they accepted count.
    """
    if _zoned(ctx):
        return _zoned_free_busy(ctx, date, email)
    start = _day(date, "date")
    events = _overlapping(ctx, start, start + dt.timedelta(days=1))
    if email is not None:
        email = email.strip().lower()
        if ctx.sql.first(CONTACT_ID_BY_EMAIL, email=email) is None:
            raise NotFound(f"No contact with email {email!r}; call list_contacts to find it.")
        accepted = set(ctx.sql.scalars(ACCEPTED_BY, email=email))
        events = [e for e in events if e.id in accepted]
    return {
        "date": start.date().isoformat(),
        "who": email or _settings(ctx).owner_email,
        "busy": [_span(e.start, e.end) for e in events],
    }


def _covering(ctx: ToolContext, lo: dt.datetime, hi: dt.datetime) -> list[Any]:
    """From ``-v1``: the confirmed events covering some moment of [lo, hi), by the moment
    they start (then id). Stored times are home wall-clock times, so the candidates are read
    a day wider on either side (no zone is a day from another) and compared as moments."""
    home, day = _home(ctx), dt.timedelta(days=1)
    rows = _overlapping(ctx, zones.wall(lo, home) - day, zones.wall(hi, home) + day)
    ctx.spend(len(rows), "events")
    moments = [(zones.instant(e.start, home), zones.instant(e.end, home), e) for e in rows]
    return [
        (begin, end, e)
        for begin, end, e in sorted(moments, key=lambda m: (m[0], m[2].id))
        if begin < hi and end > lo
    ]


def _zoned_free_busy(ctx: ToolContext, date: str, email: str | None) -> FreeBusy:
    """get_free_busy from ``-v1``: the asked person's own day, in their zone."""
    day = parse_date(date, "date")
    there = _home(ctx)
    if email is not None:
        email = email.strip().lower()
        contact = ctx.sql.first(CONTACT_BY_EMAIL, email=email)
        if contact is None:
            raise NotFound(f"No contact with email {email!r}; call list_contacts to find it.")
        there = _zone(contact.timezone)
    midnight = dt.datetime.combine(day, dt.time())
    lo = zones.instant(midnight, there)
    hi = zones.instant(midnight + dt.timedelta(days=1), there)
    covering = _covering(ctx, lo, hi)
    if email is not None:
        accepted = set(ctx.sql.scalars(ACCEPTED_BY, email=email))
        covering = [c for c in covering if c[2].id in accepted]
    return {
        "date": day.isoformat(),
        "who": email or _settings(ctx).owner_email,
        "busy": [
            {"start": zones.show(begin, there), "end": zones.show(end, there)}
            for begin, end, _ in covering
        ],
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

    From prove/calendar-v1 the hours are local times in the home zone and the slot is
    elapsed time, also on a day the clocks change; the slot names its offset and zone.

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
    if _zoned(ctx):  # moments: a day of a daylight-saving change is shorter or longer
        home = _home(ctx)
        _check_wall(lo, home, "earliest", home=False)
        _check_wall(hi, home, "latest", home=False)
        first, last = zones.instant(lo, home), zones.instant(hi, home)
        at = first
        for begin, end, _ in _covering(ctx, first, last):
            if begin - at >= need:
                break
            at = max(at, end)
        if last - at < need:
            raise PreconditionFailed(
                f"No free {duration_minutes}-minute slot on {day.isoformat()} between "
                f"{earliest} and {latest} ({home.key}); try another day or a shorter duration."
            )
        return {"start": zones.show(at, home), "end": zones.show(at + need, home)}
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
    lo, hi = ctx.now - dt.timedelta(days=7), ctx.now + dt.timedelta(days=30)
    guests: dict[str, list[str]] = {}
    for event_id, email in ctx.sql.all(UPCOMING_GUESTS, lo=lo, hi=hi):
        guests.setdefault(event_id, []).append(email)
    rows = ctx.sql.all(UPCOMING, lo=lo, hi=hi)
    return [
        {
            "event_id": e.id,
            "title": e.title,
            "start": _minutes(e.start),
            "date": e.start.date().isoformat(),
            "calendar_id": e.calendar_id,
            "emails": guests.get(e.id, []),
        }
        for e in rows
    ]


@server.entity(
    "calendar",
    key="calendar_id",
    model=Calendar,
    not_found="Call list_calendars to see the calendars and their ids (such as 'cal_01').",
)
def _calendars(ctx: ToolContext) -> list[dict]:
    return [{"calendar_id": c.id, "name": c.name} for c in ctx.sql.all(CALENDARS)]


@server.entity("contact_email", key="email")
def _contacts(ctx: ToolContext) -> list[dict]:
    rows = ctx.sql.all(CONTACTS)
    return [{"email": c.email, "name": c.name, "query": c.name.split()[-1]} for c in rows]


@server.entity("reminder", key="reminder_id")
def _reminders(ctx: ToolContext) -> list[dict]:
    return [{"reminder_id": r.id, "event_id": r.event_id} for r in ctx.sql.all(ALL_REMINDERS)]
