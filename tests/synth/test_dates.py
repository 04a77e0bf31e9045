"""Date-times as people say them: what the renderer writes, the checker reads back exactly."""

from __future__ import annotations

import time
from datetime import date, datetime

from hypothesis import given
from hypothesis import strategies as st

from prove_gym.server.result import ToolResult
from prove_gym.synth.dates import (
    iso_date,
    iso_datetime,
    iso_month,
    said_dates,
    said_datetimes,
    said_months,
    say_datetime,
)
from prove_gym.synth.render import render_value
from prove_gym.synth.validate import text_problems
from prove_gym.task import GoldStep, Task, Turn

MINUTES = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31)).map(
    lambda d: d.replace(second=0, microsecond=0)
)


@given(MINUTES, st.text(max_size=20), st.text(max_size=20))
def test_a_said_date_time_reads_back_as_exactly_that_one(when: datetime, before: str, after: str):
    said = say_datetime(when)
    assert "T" not in said and str(when.year) in said
    assert said_datetimes(f"{before} at {said}. {after}") >= {when}
    assert said_datetimes(f"at {said}.") == {when}


@given(MINUTES)
def test_the_renderer_says_an_iso_value_and_the_parser_reads_the_same_value(when: datetime):
    value = when.strftime("%Y-%m-%dT%H:%M")
    assert iso_datetime(value) == when
    assert said_datetimes(render_value(value)) == {when}


def test_only_forms_that_denote_a_valid_date_time_count() -> None:
    assert said_datetimes("5 pm on August 15, 2026") == {datetime(2026, 8, 15, 17)}
    assert said_datetimes("12 am on Aug 1, 2026") == {datetime(2026, 8, 1, 0)}
    assert said_datetimes("17:05 on 15 August 2026") == {datetime(2026, 8, 15, 17, 5)}
    for text in ("13 pm on August 15, 2026", "5 pm on February 30, 2026", "25:00 on 1 May 2026"):
        assert said_datetimes(text) == set(), text
    assert iso_datetime("2026-02-30T10:00") is None and iso_datetime("2026-08-15") is None


def _task(user: str, start: str) -> Task:
    step = GoldStep(
        id="s1",
        name="create_event",
        arguments={"calendar_id": "cal_01", "title": "Sync", "start": start},
    )
    return Task(id="t", servers=["calendar"], seed=0, turns=[Turn(user=user, steps=[step])])


def test_the_text_check_takes_a_said_date_time_only_when_it_is_the_gold_value() -> None:
    said = "Put Sync on cal_01 at 5 pm on August 15, 2026."
    results = [ToolResult.success({"id": "evt_1"})]
    assert text_problems(_task(said, "2026-08-15T17:00"), results) == []
    assert text_problems(_task(said, "2026-08-15T17:30"), results) == ["unsaid:create_event.start"]
    assert text_problems(_task(said.replace("2026", "2027"), "2026-08-15T17:00"), results)


def test_reading_hostile_text_takes_linear_time() -> None:
    for text in ("1" * 200_000, "5 pm on " * 40_000, "12:30:45 am on Aug 1" * 10_000):
        start = time.process_time()
        said_datetimes(text)
        assert time.process_time() - start < 2.0


DAYS = st.dates(min_value=date(1900, 1, 1), max_value=date(2099, 12, 31))


@given(DAYS)
def test_a_date_or_a_month_is_said_and_read_back_as_exactly_that_one(day: date) -> None:
    """ "2026-08-15": "August 15, 2026" (or "15 August 2026", "Aug 15, 2026"); "2026-08":
    "August 2026"; never the ISO form, and each reads back as the value it says."""
    value, month = day.isoformat(), day.isoformat()[:7]
    said_day, said_month = render_value(value), render_value(month)
    assert "-" not in said_day and "-" not in said_month
    assert iso_date(value) == day and said_dates(f"on {said_day}.") == {day}
    assert iso_month(month) == (day.year, day.month)
    assert said_months(f"in {said_month}.") == {(day.year, day.month)}
    assert said_months(f"on {said_day}.") == set()  # a day is not its month


def test_the_text_check_takes_a_said_date_or_month_only_for_its_value() -> None:
    results = [ToolResult.success({"total": 1})]

    def task(user: str, month: str, start: str) -> Task:
        step = GoldStep(
            id="s1",
            name="search_transactions",
            arguments={"month": month, "start_date": start},
        )
        return Task(id="t", servers=["budget"], seed=0, turns=[Turn(user=user, steps=[step])])

    said = "What did I spend in August 2026, from Aug 3, 2026?"
    assert text_problems(task(said, "2026-08", "2026-08-03"), results) == []
    assert text_problems(task(said, "2026-09", "2026-08-03"), results) == [
        "unsaid:search_transactions.month"
    ]
    assert text_problems(task(said, "2026-08", "2026-08-04"), results) == [
        "unsaid:search_transactions.start_date"
    ]


@given(st.integers(min_value=1, max_value=40_320))
def test_a_span_of_minutes_is_said_in_its_largest_unit_and_read_back_exactly(n: int) -> None:
    """calendar-2032: "It's 1440 minutes before." A span is said as people say it ("a day
    before", "2 hours") and the text check reads the same number of minutes back."""
    from prove_gym.synth.dates import said_minutes, spoken_minutes

    said = spoken_minutes(f"Remind me {n} minutes before.")
    assert said_minutes(said) == {n}, said
    if n % 60 == 0:
        assert "minute" not in said, said


def test_the_text_check_takes_a_span_said_in_another_unit_only_when_it_is_the_gold() -> None:
    def task(user: str, minutes: int) -> Task:
        step = GoldStep(
            id="s1",
            name="add_reminder",
            arguments={"event_id": "evt_0042", "minutes_before": minutes},
        )
        return Task(id="t", servers=["calendar"], seed=0, turns=[Turn(user=user, steps=[step])])

    results = [ToolResult.success({"reminder_id": "rem_1"})]
    said = "Remind me a day before evt_0042."
    assert text_problems(task(said, 1440), results) == []
    assert text_problems(task(said, 2880), results) == ["unsaid:add_reminder.minutes_before"]
