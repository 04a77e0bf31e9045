"""A node as a call holds it: a full row, an entry read for a path or a walk, a resolved path."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import NamedTuple


class NodeRow(NamedTuple):
    """One row of the ``nodes`` table, content included: a node a tool reads or changes."""

    id: str
    parent_id: str | None
    name: str
    kind: str
    owner: str
    mode: int
    size: int
    content: str
    modified: dt.datetime

    @property
    def is_dir(self) -> bool:
        return self.kind == "dir"


class Entry(NamedTuple):
    """A node as a call reads it, for paths, listings and walks: its content only when it was
    read with it (``None`` otherwise; :meth:`Fs.full` reads it)."""

    id: str
    parent_id: str | None
    name: str
    kind: str
    owner: str
    mode: int
    size: int
    modified: dt.datetime
    content: str | None = None

    @property
    def is_dir(self) -> bool:
        return self.kind == "dir"


AnyNode = NodeRow | Entry


@dataclass(slots=True)
class Loc:
    """A resolved path: the node if it exists, else the existing parent and the new name."""

    path: str
    parent: Entry | None
    name: str
    node: NodeRow | None
    slash: bool
