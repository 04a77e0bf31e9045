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
    follows ``evt_9999`` instead of sorting before it.

    >>> next_id(ctx, Event.id, "evt", 4)  # doctest: +SKIP
    'evt_0301'
    """
    if ctx.db.new or ctx.db.dirty:  # rows a tool added through the ORM count (autoflush)
        ctx.db.flush()
    last = ctx.sql.scalar(_last_id(column))
    n = int(str(last).rsplit("_", 1)[1]) + 1 if last else 1
    return f"{prefix}_{n:0{width}d}"


@functools.cache
def _last_id(column: Any) -> Query:
    """The statement that reads ``column``'s largest identifier (compiled once per column)."""
    return Query(select(column).order_by(func.length(column).desc(), column.desc()).limit(1))
