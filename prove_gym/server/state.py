"""State templates, cloning and the canonical state hash.

Sampling a realistic state with Faker takes tens of milliseconds; RL resets
are counted in millions. So each (server, seed, size) is sampled once into an
in-memory SQLite database, serialised to bytes (the *template*), and every
session deserialises its own private copy, which costs tens of microseconds.

The canonical hash of a state is one SHA-256 over every table in name order. A
template keeps each table's canonical bytes and the hasher's state before each
table, and its database logs which tables were written since (triggers filling
:data:`CHANGE_LOG`), so the hash of a session's state re-reads only the tables
written to and gives exactly the value a full pass gives.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import MetaData

CHANGE_LOG = "_prove_changed_tables"
"""The table, in every sampled state, naming the tables written since the template
(filled by triggers; not part of the state: no hash, task or tool sees it)."""


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
        return self.hash_base(metadata).hexdigest

    @property
    def layout(self) -> str:
        """A digest of the schema as SQLite lays it out (its cookie, and every table's and
        index's SQL and root page). A connection that held a state of the same layout can
        take this one in: its cached prepared statements still point at the right pages.
        """
        cached = self.__dict__.get("_layout")
        if cached is None:
            conn = self.connect()
            try:
                cached = schema_layout(conn)
            finally:
                conn.close()
            self.__dict__["_layout"] = cached
        return cached

    @property
    def log_key(self) -> int:
        """Which template a copy's change log is relative to (its ``PRAGMA user_version``)."""
        return template_key(self.server, self.seed, self.size)

    def hash_base(self, metadata: MetaData) -> HashBase:
        """Each table's canonical bytes and hasher prefix, computed once per template."""
        cached = self.__dict__.get("_hash_base")
        if cached is None:
            conn = self.connect()
            try:
                cached = HashBase.of(conn, metadata)
            finally:
                conn.close()
            self.__dict__["_hash_base"] = cached  # frozen: a cache, not a field
        return cached


@dataclass(frozen=True)
class HashBase:
    """A state's canonical hash in parts: what re-hashing a few changed tables needs.

    Attributes:
        names: The state's tables, in hash order (by name).
        chunks: Each table's canonical bytes (its name and rows as compact JSON).
        prefixes: The SHA-256 state before each table was fed in (copied, never updated).
        hexdigest: The hash of the whole state.
    """

    names: tuple[str, ...]
    chunks: tuple[bytes, ...]
    prefixes: tuple[Any, ...] = field(repr=False)
    hexdigest: str

    @classmethod
    def of(cls, conn: sqlite3.Connection, metadata: MetaData) -> HashBase:
        names = tuple(sorted(metadata.tables))
        chunks = tuple(_table_chunk(conn, metadata, name) for name in names)
        digest = hashlib.sha256()
        prefixes = []
        for chunk in chunks:
            prefixes.append(digest.copy())
            digest.update(chunk)
        return cls(names, chunks, tuple(prefixes), digest.hexdigest())


def _json_default(value: object) -> object:
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"unhashable column value {value!r}")


def canonical_state_hash(
    conn: sqlite3.Connection,
    metadata: MetaData,
    *,
    base: HashBase | None = None,
    changed: Collection[str] | None = None,
) -> str:
    """SHA-256 of every row of every table, tables by name, rows by primary key.

    Values are read as SQLite stores them (int, float, text, blob), so the
    hash is the same on any machine for the same state. Given the ``base`` of
    the state this one started from and the tables ``changed`` since, only those
    tables are read again; the value is the same as without them.
    """
    if base is None or changed is None:
        digest = hashlib.sha256()
        for name in sorted(metadata.tables):
            digest.update(_table_chunk(conn, metadata, name))
        return digest.hexdigest()
    dirty = [k for k, name in enumerate(base.names) if name in changed]
    if not dirty:
        return base.hexdigest
    digest = base.prefixes[dirty[0]].copy()
    for k in range(dirty[0], len(base.names)):
        name = base.names[k]
        digest.update(_table_chunk(conn, metadata, name) if name in changed else base.chunks[k])
    return digest.hexdigest()


def _table_chunk(conn: sqlite3.Connection, metadata: MetaData, name: str) -> bytes:
    """One table's canonical bytes: ``[name, rows]`` as compact JSON, rows by primary key."""
    queries: dict[str, str] = metadata.info.setdefault("prove_gym.hash_queries", {})
    sql = queries.get(name)
    if sql is None:
        table = metadata.tables[name]
        order = [c.name for c in table.primary_key.columns] or [c.name for c in table.columns]
        columns = ", ".join(f'"{c.name}"' for c in table.columns)
        order_by = ", ".join(f'"{c}"' for c in order)
        sql = queries[name] = f'SELECT {columns} FROM "{name}" ORDER BY {order_by}'
    rows = conn.execute(sql).fetchall()
    return json.dumps([name, rows], separators=(",", ":"), default=_json_default).encode()


def schema_layout(conn: sqlite3.Connection) -> str:
    """See :attr:`StateTemplate.layout`.

    SQLite re-prepares a cached statement only when the schema cookie changed, and two
    states built by the same DDL have the same cookie: a statement prepared on one would
    read the other at its own root pages. So a connection is only ever refilled with a
    state of the layout it held.
    """
    version = conn.execute("PRAGMA schema_version").fetchone()[0]
    rows = conn.execute(
        "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master ORDER BY type, name"
    ).fetchall()
    return hashlib.sha256(json.dumps([version, rows]).encode()).hexdigest()


def template_key(server: str, seed: int, size: int) -> int:
    """A stable 31-bit number for (server, seed, size): marks a state's change log."""
    digest = hashlib.sha256(f"{server}\x00{seed}\x00{size}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def create_change_log(conn: sqlite3.Connection, metadata: MetaData) -> None:
    """Create the empty :data:`CHANGE_LOG` table, with the state's own tables (before any
    row): its root page is then the same in every state of the server, so they all share
    one :func:`schema_layout`."""
    if CHANGE_LOG in metadata.tables:
        raise ValueError(f"{CHANGE_LOG!r} is reserved for prove_gym's change log")
    conn.execute(f'CREATE TABLE "{CHANGE_LOG}" (name TEXT PRIMARY KEY) WITHOUT ROWID')


def install_change_log(conn: sqlite3.Connection, metadata: MetaData, key: int) -> None:
    """Add the triggers that name each table written to in :data:`CHANGE_LOG`.

    Run on a freshly sampled state before it is serialised (after
    :func:`create_change_log`): the log is empty in the template and travels inside every
    copy, snapshot and restore of it, and a rolled back write leaves no mark. Any write
    marks its table, through the ORM, Core or raw SQL alike; a table marked but changed
    back is simply read again. ``key`` (:func:`template_key`) goes in ``PRAGMA
    user_version``: another template's bytes restored into a session are then
    recognised, and hashed in full.
    """
    conn.execute(f"PRAGMA user_version = {int(key)}")
    for name in sorted(metadata.tables):
        quoted = name.replace("'", "''")
        for op in ("INSERT", "UPDATE", "DELETE"):
            conn.execute(
                f'CREATE TRIGGER "{CHANGE_LOG}_{name}_{op.lower()}" AFTER {op} ON "{name}" '
                f"BEGIN INSERT OR IGNORE INTO \"{CHANGE_LOG}\" VALUES ('{quoted}'); END"
            )


def changed_tables(conn: sqlite3.Connection, key: int) -> frozenset[str] | None:
    """The tables written since template ``key``, or ``None`` for a state without its log."""
    if conn.execute("PRAGMA user_version").fetchone()[0] != key:
        return None
    try:
        rows = conn.execute(f'SELECT name FROM "{CHANGE_LOG}"').fetchall()
    except sqlite3.OperationalError:  # bytes that did not come from Server.sample
        return None
    return frozenset(r[0] for r in rows)


def combine_hashes(hashes: dict[str, str]) -> str:
    """One hash for several servers' states (a multi-server task): sha256 over sorted pairs."""
    if len(hashes) == 1:
        return next(iter(hashes.values()))
    payload = json.dumps(sorted(hashes.items()), separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()
