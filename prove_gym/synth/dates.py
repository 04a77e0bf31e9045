"""Dates and times as people say them, and the one parser that reads them back.

A gold argument holds a date-time as the tool takes it (``2026-08-15T17:00``); nobody
types that. :func:`say_datetime` writes it as a user would ("5 pm on August 15, 2026",
"17:00 on 15 August 2026", "5:30 pm on Aug 15, 2026"; the form drawn from the value, so
the text is a function of the value alone), and :func:`said_datetimes` finds every such
phrase in a text and gives the date-times it denotes, so the text check
(:func:`prove_gym.synth.validate.text_problems`) accepts a human form that denotes exactly
the gold value. Both read and write the same forms, declared once here.

The reader is one regular expression with no nested repetition: linear in the text,
whatever the text (a model's output included).
"""

from __future__ import annotations

import re
from datetime import datetime

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
    form = stable_int("said-datetime", dt.isoformat()) % 3
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
