"""Text search over columns: the one way a tool matches a model's search text in SQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BindParameter, ColumnElement, or_


def search_pattern(text: str) -> str:
    r"""The LIKE pattern that finds ``text`` anywhere, as written: ``%``, ``_`` and ``\``
    are escaped (LIKE would read them as wildcards).

    >>> search_pattern("50%_off")
    '%50\\%\\_off%'
    """
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def contains(text: str | BindParameter[Any], *columns: Any) -> ColumnElement[bool]:
    """Rows where any of ``columns`` contains ``text``, case-insensitively, as written.

    ``%``, ``_`` and ``\\`` in the text are matched literally (LIKE would read them as
    wildcards), so "50%" finds "50% off" and "jane_doe" does not match "janeXdoe". Strip
    and length-check the text first (a ``SearchText`` parameter with ``max_length``).
    In a statement compiled once (:class:`~prove_gym.server.sql.Query`), pass a
    ``bindparam`` instead and give it :func:`search_pattern` of the text when it runs.

    It is SQLite's own ``LIKE``, which ignores the case of ASCII letters. It does not
    lower-case each column first (what ``ilike`` compiles to): SQLite's ``lower()`` folds
    the same ASCII letters and no others, so it would find the same rows, at the cost of
    a copy of every value scanned (most of a search's time). ``PRAGMA case_sensitive_like``
    must stay off, as it is by default.

    >>> from sqlalchemy import column
    >>> print(contains("50%", column("title"), column("body")))
    title LIKE :title_1 ESCAPE '\\' OR body LIKE :body_1 ESCAPE '\\'
    """
    if not columns:
        raise ValueError("contains() needs at least one column to search")
    pattern = text if isinstance(text, BindParameter) else search_pattern(text)
    return or_(*(c.like(pattern, escape="\\") for c in columns))
