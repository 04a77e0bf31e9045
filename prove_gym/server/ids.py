"""Readable, deterministic identifiers for new entities ("evt_0042")."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import func, select

from prove_gym.server.sql import Query
from prove_gym.server.tool import ToolContext


def next_id(ctx: ToolContext, column: Any, prefix: str, width: int) -> str:
    """The identifier after the largest existing one in ``column``: ``prefix_`` + zero-padded number.

    Numbering is deterministic (same state, same id) and keeps counting past
    the padding width: ids are compared by length first, so ``evt_10000``
    follows ``evt_9999`` instead of sorting before it. The column's ids must not be
    zero-padded wider than ``width`` (``evt_00042`` beside ``evt_0043``).

    >>> next_id(ctx, Event.id, "evt", 4)  # doctest: +SKIP
    'evt_0301'
    """
    last = _largest(ctx, column, prefix, width)
    n = int(str(last).rsplit("_", 1)[1]) + 1 if last else 1
    return f"{prefix}_{n:0{width}d}"


def _largest(ctx: ToolContext, column: Any, prefix: str, width: int) -> str | None:
    """``column``'s largest identifier, by length first.

    Two index lookups answer it in the usual case: when the smallest and the largest
    value (in text order) both start with ``prefix_``, every value does; when the largest
    is then ``width`` digits starting with ``0`` (``evt_0300``: within the zero padding),
    no value has more digits (one past the padding starts ``evt_1`` or above and sorts
    after it). Else (``evt_9999`` beside ``evt_10000``, or ids of another width) every
    value is read. Ids are assumed never zero-padded wider than ``width``.
    """
    lowest, highest = ctx.sql.first(_bounds(column)) or (None, None)
    head = prefix + "_"
    if (
        isinstance(lowest, str)
        and isinstance(highest, str)
        and lowest.startswith(head)
        and highest.startswith(head + "0")
        and len(highest) == len(head) + width
    ):
        return highest
    return ctx.sql.scalar(_last_id(column))


@functools.cache
def _bounds(column: Any) -> Query:
    """The statement that reads ``column``'s smallest and largest value (one index probe
    each: SQLite serves a lone min() or max() from the index)."""
    return Query(
        select(
            select(func.min(column)).scalar_subquery(),
            select(func.max(column)).scalar_subquery(),
        )
    )


@functools.cache
def _last_id(column: Any) -> Query:
    """The statement that reads ``column``'s largest identifier, by length first (every
    row; compiled once per column)."""
    return Query(select(column).order_by(func.length(column).desc(), column.desc()).limit(1))
