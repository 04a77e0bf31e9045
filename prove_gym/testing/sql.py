"""Read a session's SQLite state directly in a plugin's tests (invariants, rule checks).

Tests assert what the tables hold, not what a tool says they hold:

>>> from prove_gym.testing.sql import count, one, rows
>>> session = get_server("calendar").session(seed=7)               # doctest: +SKIP
>>> count(session, "SELECT COUNT(*) FROM events WHERE status = ?", "cancelled")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from prove_gym.server.session import Session


def rows(session: Session, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Every row ``sql`` selects from the session's live state (``?`` placeholders)."""
    return list(session.raw_connection.execute(sql, params).fetchall())


def one(session: Session, sql: str, *params: Any) -> Any:
    """The first column of the first row; fails the test when there is none."""
    found = rows(session, sql, *params)
    assert found, f"the sampled state has no row for: {sql}"
    return found[0][0]


def count(session: Session, sql: str, *params: Any) -> int:
    """A ``SELECT COUNT(...)`` (or ``SUM``) as an int, 0 for NULL."""
    return int(rows(session, sql, *params)[0][0] or 0)
