"""State templates, cloning and the canonical state hash.

Sampling a realistic state with Faker takes tens of milliseconds; RL resets
are counted in millions. So each (server, seed, size) is sampled once into an
in-memory SQLite database, serialised to bytes (the *template*), and every
session deserialises its own private copy, which costs tens of microseconds.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import MetaData


@dataclass(frozen=True)
class StateTemplate:
    """An immutable snapshot of a sampled state.

    Attributes:
        server: Name of the server it belongs to.
        seed: Seed the state was sampled from.
        size: Scale the sampler was asked for.
        now: The fixed current time of this state.
        data: The SQLite database, serialised.
    """

    server: str
    seed: int
    size: int
    now: dt.datetime
    data: bytes = field(repr=False)

    def connect(self) -> sqlite3.Connection:
        """Open a new, private, writable in-memory copy of this state."""
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.deserialize(self.data)
        return conn

    def canonical_hash(self, metadata: MetaData) -> str:
        """:func:`canonical_state_hash` of this state, computed once per template.

        A session whose state is still exactly its template's (no row changed since it was
        cloned or reset) answers its state hash from here: an episode that only reads, and
        a distractor server nobody wrote to, cost no hashing at the end.
        """
        cached = self.__dict__.get("_canonical_hash")
        if cached is None:
            conn = self.connect()
            try:
                cached = canonical_state_hash(conn, metadata)
            finally:
                conn.close()
            self.__dict__["_canonical_hash"] = cached  # frozen: a cache, not a field
        return cached


def _json_default(value: object) -> object:
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"unhashable column value {value!r}")


def canonical_state_hash(conn: sqlite3.Connection, metadata: MetaData) -> str:
    """SHA-256 of every row of every table, tables by name, rows by primary key.

    Values are read as SQLite stores them (int, float, text, blob), so the
    hash is the same on any machine for the same state.
    """
    digest = hashlib.sha256()
    for name in sorted(metadata.tables):
        table = metadata.tables[name]
        order = [c.name for c in table.primary_key.columns] or [c.name for c in table.columns]
        columns = ", ".join(f'"{c.name}"' for c in table.columns)
        order_by = ", ".join(f'"{c}"' for c in order)
        rows = conn.execute(f'SELECT {columns} FROM "{name}" ORDER BY {order_by}').fetchall()
        digest.update(
            json.dumps([name, rows], separators=(",", ":"), default=_json_default).encode()
        )
    return digest.hexdigest()


def combine_hashes(hashes: dict[str, str]) -> str:
    """One hash for several servers' states (a multi-server task): sha256 over sorted pairs."""
    if len(hashes) == 1:
        return next(iter(hashes.values()))
    payload = json.dumps(sorted(hashes.items()), separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()
