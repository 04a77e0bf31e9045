"""Time zones for servers whose times are local somewhere: IANA rules from the pinned
``tzdata`` package, and local times that name their zone (calendar's ``-v1``, email's ``-v3``).

Zone rules are read from the ``tzdata`` package (a dependency, ``pyproject.toml``), never
from the machine's ``/usr/share/zoneinfo``: two machines with different system zone data
would otherwise show different offsets for the same stored time, and a state's results
would depend on where it runs.

A local time names its zone as RFC 9557 writes it (the form of JavaScript's Temporal and
Java's ``ZonedDateTime``): ``2026-03-08T09:00-04:00[America/New_York]``, the wall-clock
time, its UTC offset then, and the zone. :func:`parse_local` reads that form, a time with
an offset only, or a bare local time in a default zone.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from importlib import resources
from zoneinfo import ZoneInfo

ZONE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+-]{0,29}(?:/[A-Za-z0-9][A-Za-z0-9_+-]{0,29}){0,2}")
"""What an IANA zone name looks like ("America/Argentina/Buenos_Aires", "UTC", "Etc/GMT+5"):
checked before any file is looked up, so a name can never walk out of the zone data."""
_LOCAL = re.compile(r"\s*([^\[\]]{1,40}?)\s*(?:\[([^\[\]]{1,64})\])?\s*")
UTC = dt.UTC


class ZoneError(ValueError):
    """A zone name that is not an IANA zone of the pinned data."""


@functools.lru_cache(maxsize=64)
def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name`` from the pinned ``tzdata`` package.

    >>> zone("Europe/Berlin").key
    'Europe/Berlin'

    Raises:
        ZoneError: ``name`` is no zone of the package.
    """
    if not ZONE_NAME.fullmatch(name):
        raise ZoneError(name)
    source = resources.files("tzdata").joinpath("zoneinfo", *name.split("/"))
    if not source.is_file():
        raise ZoneError(name)
    with source.open("rb") as fh:
        return ZoneInfo.from_file(fh, key=name)


def exists(wall: dt.datetime, tz: ZoneInfo) -> bool:
    """Whether the wall-clock time ``wall`` happens in ``tz`` (not skipped by a change to
    summer time)."""
    aware = wall.replace(tzinfo=tz)
    return aware.astimezone(UTC).astimezone(tz).replace(tzinfo=None) == wall


def ambiguous(wall: dt.datetime, tz: ZoneInfo) -> bool:
    """Whether ``wall`` happens twice in ``tz`` (the hour repeated when summer time ends)."""
    first, second = wall.replace(tzinfo=tz, fold=0), wall.replace(tzinfo=tz, fold=1)
    return exists(wall, tz) and first.utcoffset() != second.utcoffset()


def instant(wall: dt.datetime, tz: ZoneInfo) -> dt.datetime:
    """The moment (in UTC) of the stored wall-clock time ``wall`` in ``tz``: its first
    occurrence where it happens twice; a skipped time is read with the offset before the
    gap, so it moves forward by the gap (RFC 5545's reading)."""
    return wall.replace(tzinfo=tz).astimezone(UTC)


def wall(moment: dt.datetime, tz: ZoneInfo) -> dt.datetime:
    """The wall-clock time in ``tz`` (naive) at ``moment`` (aware)."""
    return moment.astimezone(tz).replace(tzinfo=None)


def show(moment: dt.datetime, tz: ZoneInfo) -> str:
    """``moment`` as a local time in ``tz`` with its offset and zone, to the minute.

    >>> show(dt.datetime(2026, 3, 8, 14, 0, tzinfo=UTC), zone("America/New_York"))
    '2026-03-08T10:00-04:00[America/New_York]'
    """
    return f"{moment.astimezone(tz).isoformat(timespec='minutes')}[{tz.key}]"


def split_local(value: str) -> tuple[str, str | None]:
    """A local time's text and the zone named in brackets, if any.

    >>> split_local("2026-03-08T09:00-04:00[America/New_York]")
    ('2026-03-08T09:00-04:00', 'America/New_York')
    """
    found = _LOCAL.fullmatch(value) if len(value) <= 120 else None
    if found is None:
        return value.strip(), None
    return found[1], found[2]


def day_start(day: dt.date, tz: ZoneInfo) -> dt.datetime:
    """The first moment (in UTC) of the local date ``day`` in ``tz``: its midnight, or, on a
    day whose midnight the clocks skip, the moment the day begins after the gap (a day
    always has a start, so a date is never refused).

    >>> day_start(dt.date(2026, 3, 8), zone("America/New_York")).isoformat()
    '2026-03-08T05:00:00+00:00'
    >>> day_start(dt.date(2026, 9, 6), zone("America/Santiago")).isoformat()  # 00:00 skipped
    '2026-09-06T04:00:00+00:00'
    """
    midnight = dt.datetime.combine(day, dt.time())
    moment = instant(midnight, tz)
    if exists(midnight, tz):
        return moment
    # a skipped midnight read with the offset before the gap lands at or after the gap's end;
    # where the gap began before midnight the day began earlier, at the gap's end (zone
    # changes fall on whole minutes, and no gap is longer than a day)
    minute = dt.timedelta(minutes=1)
    for _ in range(24 * 60):
        if wall(moment - minute, tz).date() != day:
            break
        moment -= minute
    return moment


def refusal(
    local: dt.datetime,
    tz: ZoneInfo,
    what: str,
    *,
    twice: bool,
    zone_is: str,
    undone: str,
    fix_twice: str,
) -> tuple[str, str] | None:
    """Why the wall-clock time ``local`` cannot be read in ``tz``, as ``(rule, detail)`` for
    the server's own business-rule error, or ``None`` when it can: rule
    ``nonexistent_local_time`` (the clocks skip it) and, with ``twice``, rule
    ``ambiguous_local_time`` (it happens twice). ``what`` names the argument, ``zone_is``
    says which zone ``tz`` is to the caller (", your time zone", or ""), ``undone`` what did
    not happen ("Nothing was changed") and ``fix_twice`` what to do about a repeated time.

    >>> refusal(dt.datetime(2026, 3, 8, 2, 30), zone("America/New_York"), "start", twice=True,
    ...         zone_is="", undone="Nothing was changed", fix_twice="")[0]
    'nonexistent_local_time'
    """
    stamp = local.isoformat(timespec="minutes")
    if not exists(local, tz):
        after = wall(instant(local, tz), tz).isoformat(timespec="minutes")
        return "nonexistent_local_time", (
            f"{what} {stamp} does not exist in {tz.key}{zone_is}: the clocks skip it when "
            f"summer time starts (the same moment read after the change is {after}). "
            f"{undone}: give a time after the change, or an offset."
        )
    if twice and ambiguous(local, tz):
        first = local.replace(tzinfo=tz, fold=0).isoformat(timespec="minutes")
        second = local.replace(tzinfo=tz, fold=1).isoformat(timespec="minutes")
        return "ambiguous_local_time", (
            f"{what} {stamp} happens twice in {tz.key}{zone_is} ({first} and {second}, when "
            f"the clocks go back). {undone}: {fix_twice}"
        )
    return None


def like(name: str) -> str | None:
    """The zone of the pinned data whose name is ``name`` but for case, or ``None``.

    >>> like("america/new_york"), like("Mars/Olympus")
    ('America/New_York', None)
    """
    if not ZONE_NAME.fullmatch(name):
        return None
    return _names().get(name.casefold())


@functools.cache
def _names() -> dict[str, str]:
    """Every zone name of the pinned data (its ``zones`` list), by its case-folded form."""
    listed = resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8")
    return {n.casefold(): n for n in sorted(listed.split())}
