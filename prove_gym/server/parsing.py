"""Parsing helpers for tool arguments, with errors written for the model."""

from __future__ import annotations

import datetime as dt

from prove_gym.server.errors import InvalidArgument


def parse_date(value: str, name: str) -> dt.date:
    """Read an ISO date (``"2026-03-03"``; a date-time's time part is ignored).

    Raises:
        InvalidArgument: naming the parameter and showing the expected format.

    >>> parse_date("2026-03-03T10:00", "start_date")
    datetime.date(2026, 3, 3)
    """
    try:
        return dt.date.fromisoformat(value.strip()[:10])
    except ValueError:
        raise InvalidArgument(
            f"{name} must be a date such as '2026-03-03', got {value!r}."
        ) from None
