"""Text search over columns: the one way a tool matches a model's search text in SQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, or_


def contains(text: str, *columns: Any) -> ColumnElement[bool]:
    """Rows where any of ``columns`` contains ``text``, case-insensitively, as written.

    ``%``, ``_`` and ``\\`` in the text are matched literally (LIKE would read them as
    wildcards), so "50%" finds "50% off" and "jane_doe" does not match "janeXdoe". Strip
    and length-check the text first (a ``SearchText`` parameter with ``max_length``).

    >>> from sqlalchemy import column
    >>> print(contains("50%", column("title"), column("body")))
    lower(title) LIKE lower(:title_1) ESCAPE '\\' OR lower(body) LIKE lower(:body_1) ESCAPE '\\'
    """
    if not columns:
        raise ValueError("contains() needs at least one column to search")
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    pattern = f"%{escaped}%"
    return or_(*(c.ilike(pattern, escape="\\") for c in columns))
