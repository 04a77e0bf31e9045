"""Text search over columns: the one way a tool matches a model's search text in SQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BindParameter, ColumnElement, literal, literal_column, or_


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

    The SQL is SQLite's own ``LIKE``, which ignores the case of ASCII letters, shaped for
    speed in two ways (the rows found are the same):

    - no ``lower()`` on each column (what ``ilike`` compiles to): SQLite's ``lower()`` folds
      the same ASCII letters and no others, and it copies every value scanned, most of a
      search's time. ``PRAGMA case_sensitive_like`` must stay off, as it is by default;
    - the pattern is ``:pattern || ''``, not a bare parameter: SQLite prepares a statement
      again every time a bare parameter of a ``LIKE`` is bound (to weigh an index on the
      column), which for a statement of some size costs more than running it.

    >>> from sqlalchemy import column
    >>> print(contains("50%", column("title"), column("body")))
    title LIKE (:param_1 || '') ESCAPE '\\' OR body LIKE (:param_1 || '') ESCAPE '\\'
    """
    if not columns:
        raise ValueError("contains() needs at least one column to search")
    if not isinstance(text, BindParameter):
        text = literal(search_pattern(text))
    pattern = text.concat(literal_column("''"))
    return or_(*(c.like(pattern, escape="\\") for c in columns))
