"""The core's time zones (``prove_gym.server.zones``): the pinned zone data, a local day's
first moment in every zone, and names looked up without regard to case, bounded."""

from __future__ import annotations

import datetime as dt
import doctest

from hypothesis import given, settings
from hypothesis import strategies as st

from prove_gym.server import zones

NAMES = sorted(zones._names().values())


def test_the_doctests_hold() -> None:
    result = doctest.testmod(zones, verbose=False)
    assert result.attempted >= 6 and result.failed == 0


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(NAMES),
    day=st.dates(min_value=dt.date(1970, 1, 2), max_value=dt.date(2100, 12, 30)),
)
def test_a_local_day_starts_at_its_first_moment_in_every_zone(name: str, day: dt.date) -> None:
    """Its first moment shows the day, the minute before shows an earlier day, whether the
    zone's midnight happens, is skipped (Santiago, Havana) or the day starts after a gap."""
    tz = zones.zone(name)
    start = zones.day_start(day, tz)
    assert start.utcoffset() == dt.timedelta()
    assert zones.wall(start, tz).date() == day
    assert zones.wall(start - dt.timedelta(minutes=1), tz).date() < day


def test_a_skipped_midnight_starts_the_day_when_the_clocks_have_moved() -> None:
    santiago = zones.zone("America/Santiago")
    start = zones.day_start(dt.date(2026, 9, 6), santiago)  # 00:00 -> 01:00
    assert start.astimezone(santiago).isoformat() == "2026-09-06T01:00:00-03:00"
    assert not zones.exists(dt.datetime(2026, 9, 6), santiago)


@given(st.text(max_size=300))
def test_a_name_is_found_without_regard_to_case_or_not_at_all(text: str) -> None:
    found = zones.like(text)
    assert found is None or (found.casefold() == text.casefold() and found in NAMES)
    if found is not None:
        assert zones.zone(found).key == found


def test_every_listed_name_is_a_zone_and_case_finds_it() -> None:
    for name in NAMES:
        assert zones.like(name.upper()) == name
    assert zones.like("../../etc/passwd") is None and zones.like("x" * 10_000) is None
