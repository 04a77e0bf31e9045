"""Dates and times as people say them, and the one parser that reads them back.

A gold argument holds a date-time as the tool takes it (``2026-08-15T17:00``); nobody
types that. :func:`say_datetime` writes it as a user would ("5 pm on August 15, 2026",
"17:00 on 15 August 2026", "5:30 pm on Aug 15, 2026"; the form drawn from the value, so
the text is a function of the value alone), and :func:`said_datetimes` finds every such
phrase in a text and gives the date-times it denotes, so the text check
(:func:`prove_gym.synth.validate.text_problems`) accepts a human form that denotes exactly
the gold value. Dates ("2026-08-15": "August 15, 2026") and months ("2026-08": "August
2026") likewise (:func:`say_iso`, :func:`said_dates`, :func:`said_months`). Each is read
and written in the same forms, declared once here.

The reader is one regular expression with no nested repetition: linear in the text,
whatever the text (a model's output included).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date, datetime

from prove_gym.server.state import stable_int

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_MONTH = {name.lower(): n for n, name in enumerate(MONTHS, 1)} | {
    name[:3].lower(): n for n, name in enumerate(MONTHS, 1)
}
_MONTH_WORD = "|".join(sorted({*(m for m in MONTHS), *(m[:3] for m in MONTHS)}, key=len)[::-1])

# a gold value: an ISO 8601 local date-time, minutes or seconds (what the tools take)
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?")
# a said one: "5 pm on August 15, 2026", "17:00 on 15 August 2026", "5:30 pm on Aug 15, 2026"
_SAID = re.compile(
    r"\b(?P<h>\d{1,2})(?::(?P<mi>\d{2}))?(?::(?P<s>\d{2}))?(?: (?P<ap>am|pm))? on "
    rf"(?:(?P<m1>{_MONTH_WORD}) (?P<d1>\d{{1,2}}), (?P<y1>\d{{4}})"
    rf"|(?P<d2>\d{{1,2}}) (?P<m2>{_MONTH_WORD}) (?P<y2>\d{{4}}))\b"
)


def iso_datetime(value: str) -> datetime | None:
    """The date-time an ISO 8601 local date-time value denotes, or None for anything else.

    >>> iso_datetime("2026-08-15T17:00"), iso_datetime("2026-08-15"), iso_datetime("x")
    (datetime.datetime(2026, 8, 15, 17, 0), None, None)
    """
    m = _ISO.fullmatch(value)
    if m is None:
        return None
    try:
        year, month, day, hour, minute, second = (int(g or 0) for g in m.groups())
        return datetime(year, month, day, hour, minute, second)
    except ValueError:
        return None


_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_ISO_MONTH = re.compile(r"(\d{4})-(\d{2})")
# a said date ("August 15, 2026", "15 August 2026", "Aug 15, 2026") or month ("August
# 2026"); a month is not the tail of a date ("15 August 2026" says a day)
_SAID_DATE = re.compile(
    rf"\b(?:(?P<m1>{_MONTH_WORD}) (?P<d1>\d{{1,2}}), (?P<y1>\d{{4}})"
    rf"|(?P<d2>\d{{1,2}}) (?P<m2>{_MONTH_WORD}) (?P<y2>\d{{4}}))\b"
)
_SAID_MONTH = re.compile(rf"(?<!\d )\b(?P<m>{_MONTH_WORD}) (?P<y>\d{{4}})\b")


def iso_date(value: str) -> date | None:
    """The day an ISO 8601 date value ("2026-08-15") denotes, or None for anything else.

    >>> iso_date("2026-08-15"), iso_date("2026-02-30"), iso_date("2026-08-15T17:00")
    (datetime.date(2026, 8, 15), None, None)
    """
    m = _ISO_DATE.fullmatch(value)
    if m is None:
        return None
    try:
        return date(*(int(g) for g in m.groups()))
    except ValueError:
        return None


def iso_month(value: str) -> tuple[int, int] | None:
    """``(year, month)`` of an ISO 8601 month value ("2026-08"), or None for anything else.

    >>> iso_month("2026-08"), iso_month("2026-13"), iso_month("2026-08-15")
    ((2026, 8), None, None)
    """
    m = _ISO_MONTH.fullmatch(value)
    if m is None or not 1 <= int(m[2]) <= 12:
        return None
    return int(m[1]), int(m[2])


_STYLE: ContextVar[int | None] = ContextVar("said_date_style", default=None)
"""The form every date of the conversation being written takes (:func:`date_style`)."""


@contextmanager
def date_style(key: object) -> Iterator[None]:
    """Within it, :func:`say_date` and :func:`say_datetime` write every day in one form,
    drawn from ``key`` (a conversation's id): nobody writes "between 20 June 2026 and Jun
    21, 2026". Outside it the form is drawn from each value.

    >>> with date_style("c-1"):
    ...     a, b = say_date(date(2026, 6, 20)), say_date(date(2026, 6, 21))
    >>> a.split()[0][:3] == b.split()[0][:3]
    True
    """
    token = _STYLE.set(stable_int("said-date-style", str(key)) % 3)
    try:
        yield
    finally:
        _STYLE.reset(token)


def _form(kind: str, value: str) -> int:
    style = _STYLE.get()
    return stable_int(kind, value) % 3 if style is None else style


def say_date(day: date) -> str:
    """``day`` as a user writes it, in a form drawn from the value.

    >>> say_date(date(2026, 8, 15)) in ("August 15, 2026", "15 August 2026", "Aug 15, 2026")
    True
    """
    month = MONTHS[day.month - 1]
    form = _form("said-date", day.isoformat())
    if form == 0:
        return f"{month} {day.day}, {day.year}"
    if form == 1:
        return f"{day.day} {month} {day.year}"
    return f"{month[:3]} {day.day}, {day.year}"


def say_month(year: int, month: int) -> str:
    """A month as a user writes it: ``say_month(2026, 8)`` is "August 2026"."""
    return f"{MONTHS[month - 1]} {year}"


def say_iso(value: str) -> str | None:
    """An ISO 8601 date-time, date or month value as a user writes it, or None for any
    other text.

    >>> say_iso("2026-08"), say_iso("report-2026-08"), say_iso("2026-08-15") is not None
    ('August 2026', None, True)
    """
    when = iso_datetime(value)
    if when is not None:  # "5 pm on August 15, 2026", never "2026-08-15T17:00"
        return say_datetime(when)
    day = iso_date(value)
    if day is not None:
        return say_date(day)
    month = iso_month(value)
    return say_month(*month) if month is not None else None


def said_dates(text: str) -> set[date]:
    """Every day ``text`` says in a form :func:`say_date` writes (a date-time says its day).

    >>> sorted(said_dates("from Aug 15, 2026 to 2 September 2026, not August 40, 2026"))
    [datetime.date(2026, 8, 15), datetime.date(2026, 9, 2)]
    """
    out: set[date] = set()
    for m in _SAID_DATE.finditer(text):
        month = _MONTH[(m["m1"] or m["m2"]).lower()]
        try:
            out.add(date(int(m["y1"] or m["y2"]), month, int(m["d1"] or m["d2"])))
        except ValueError:
            continue
    return out


def said_months(text: str) -> set[tuple[int, int]]:
    """Every month ``text`` says as :func:`say_month` writes it, ``(year, month)``.

    >>> sorted(said_months("in August 2026, not on 15 August 2026"))
    [(2026, 8)]
    """
    return {(int(m["y"]), _MONTH[m["m"].lower()]) for m in _SAID_MONTH.finditer(text)}


def _clock(dt: datetime, twelve: bool) -> str:
    seconds = f":{dt.second:02d}" if dt.second else ""
    if not twelve:
        return f"{dt.hour:02d}:{dt.minute:02d}{seconds}"
    hour = dt.hour % 12 or 12
    minutes = f":{dt.minute:02d}" if dt.minute or dt.second else ""
    return f"{hour}{minutes}{seconds} {'am' if dt.hour < 12 else 'pm'}"


def say_datetime(dt: datetime) -> str:
    """``dt`` as a user writes it, in a form drawn from the value.

    >>> say_datetime(datetime(2026, 8, 15, 17, 0)) in (
    ...     "5 pm on August 15, 2026", "17:00 on 15 August 2026", "5 pm on Aug 15, 2026")
    True
    """
    month = MONTHS[dt.month - 1]
    form = _form("said-datetime", dt.isoformat())
    if form == 0:
        return f"{_clock(dt, True)} on {month} {dt.day}, {dt.year}"
    if form == 1:
        return f"{_clock(dt, False)} on {dt.day} {month} {dt.year}"
    return f"{_clock(dt, True)} on {month[:3]} {dt.day}, {dt.year}"


def said_datetimes(text: str) -> set[datetime]:
    """Every date-time ``text`` says in a form :func:`say_datetime` writes.

    >>> sorted(said_datetimes("Book it at 5:30 pm on Aug 15, 2026, or 09:00 on 16 August 2026."))
    [datetime.datetime(2026, 8, 15, 17, 30), datetime.datetime(2026, 8, 16, 9, 0)]
    >>> said_datetimes("at 5 pm"), said_datetimes("5 pm on August 40, 2026")
    (set(), set())
    """
    out: set[datetime] = set()
    for m in _SAID.finditer(text):
        month = _MONTH[(m["m1"] or m["m2"]).lower()]
        day, year = int(m["d1"] or m["d2"]), int(m["y1"] or m["y2"])
        hour, minute, second = int(m["h"]), int(m["mi"] or 0), int(m["s"] or 0)
        if m["ap"]:
            if not 1 <= hour <= 12:
                continue
            hour = hour % 12 + (12 if m["ap"] == "pm" else 0)
        try:
            out.add(datetime(year, month, day, hour, minute, second))
        except ValueError:
            continue
    return out


_SPANS = (("week", 10_080), ("day", 1_440), ("hour", 60))
_SAID_SPAN = re.compile(r"\b(\d{1,7}|an?|one)\s+(minute|hour|day|week)s?\b", re.IGNORECASE)
_MINUTES = re.compile(r"\b(\d{1,7}) minutes\b")


def say_minutes(n: int) -> str:
    """A number of minutes as people say it: the largest whole unit.

    >>> [say_minutes(n) for n in (1440, 60, 120, 90, 10_080, 2_880)]
    ['a day', 'an hour', '2 hours', '90 minutes', 'a week', '2 days']
    """
    for unit, size in _SPANS:
        if n >= size and n % size == 0:
            k = n // size
            return f"{'an' if unit == 'hour' else 'a'} {unit}" if k == 1 else f"{k} {unit}s"
    return f"{n} minute" if n == 1 else f"{n} minutes"


def spoken_minutes(text: str) -> str:
    """``text`` with each "N minutes" in the largest whole unit (:func:`say_minutes`):
    "Remind me a day before", never "1440 minutes before".

    >>> spoken_minutes("It's 1440 minutes before, for 45 minutes.")
    "It's a day before, for 45 minutes."
    """
    return _MINUTES.sub(lambda m: say_minutes(int(m[1])), text)


def said_minutes(text: str) -> set[int]:
    """Every span ``text`` says in a form :func:`say_minutes` writes, in minutes.

    >>> sorted(said_minutes("a day before, then 2 hours, an hour and 45 minutes"))
    [45, 60, 120, 1440]
    """
    sizes = {"minute": 1, **dict(_SPANS)}
    out: set[int] = set()
    for m in _SAID_SPAN.finditer(text):
        count = m[1].lower()
        k = 1 if count in ("a", "an", "one") else int(count)
        out.add(k * sizes[m[2].lower()])
    return out
