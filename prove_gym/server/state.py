"""State templates, cloning and the canonical state hash.

Sampling a realistic state with Faker takes tens of milliseconds; RL resets
are counted in millions. So each (server, seed, size) is sampled once into an
in-memory SQLite database, serialised to bytes (the *template*), and every
session deserialises its own private copy, which costs tens of microseconds.

The canonical hash of a state is one SHA-256 over every table in name order, each table
as the compact JSON ``[name, rows]``, rows by primary key (:func:`canonical_state_hash`).
It runs at the end of every episode, so it is computed incrementally, row by row:

- The template keeps a :class:`HashBase`: each table's canonical bytes and the hasher's
  state before each table, and from the same read, each table row by row
  (:class:`TableRows`: each row's primary key and where its JSON starts in the table's
  bytes, in the order SQLite's ``ORDER BY`` gives).
- Triggers in the state's own database log every row written since the template: its
  primary key (before and after, for an update) in :data:`ROW_LOG`; the few tables no
  key orders exactly (no primary key, a nullable or collated one) by name in
  :data:`CHANGE_LOG`. The log travels inside the bytes of every copy, snapshot and
  restore, and a rolled back write takes its log entries with it.
- A copy's hash re-reads only the logged rows, splices them into the template's rows
  (a row deleted, changed, or inserted at its place by key), and feeds SHA-256 from the
  state before the first table written, the runs of rows between those written as slices
  of the template's bytes: the value is exactly the one a full pass gives.
- A session answers from its template's hash while no row changed, and remembers its last
  hash until SQLite counts another change (``Session.state_hash``).

A table's canonical text is written by SQLite itself (``json_array``, one string a row)
wherever it is exactly what ``json.dumps`` would write, which is most tables; Python writes
the rest (:func:`_sqlite_rows`).

Whatever the splice cannot vouch for is read again in full: a table of
:data:`CHANGE_LOG`, a table more than half of whose rows were written, one whose key
values are not all of one kind (a text key set to a number), one whose row count
disagrees (``INSERT OR REPLACE`` deletes a row clashing on another unique column without
firing its delete trigger); and a state without this template's log (another template's
bytes restored) is hashed from scratch.
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import itertools
import json
import operator
import sqlite3
from array import array
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import MetaData, Table


def stable_int(*parts: object) -> int:
    """A 64-bit integer from ``parts`` that is the same on every machine and run."""
    data = "/".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")


MAX_STATE_SIZE = 16
"""The largest state size a server samples (the default is 1). Sampling grows with the
size (travel_booking's size 16 is 12 MB and about 40 s of CPU); a task or a command asking
for more is refused before anything is sampled."""

CHANGE_LOG = "_prove_changed_tables"
"""The table, in every sampled state, naming the tables written since the template that
:data:`ROW_LOG` does not log row by row (filled by triggers; not part of the state: no
hash, task or tool sees it)."""

ROW_LOG = "_prove_changed_rows"
"""The table, in every sampled state, holding the primary key of every row written since
the template (``name``, then the key's columns ``k0``, ``k1``...; a shorter key is padded
with 0). Filled by triggers; not part of the state."""

Key = tuple[Any, ...]
"""A row's primary key, its values as SQLite stores them."""


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
    def cookie(self) -> int:
        """The state's schema cookie (``PRAGMA schema_version``) as sampled."""
        cached = self.__dict__.get("_cookie")
        if cached is None:
            conn = self.connect()
            try:
                cached = self.__dict__["_cookie"] = conn.execute(
                    "PRAGMA schema_version"
                ).fetchone()[0]
            finally:
                conn.close()
        return int(cached)

    @property
    def log_key(self) -> int:
        """Which template a copy's change log is relative to (its ``PRAGMA user_version``)."""
        cached = self.__dict__.get("_log_key")
        if cached is None:
            cached = self.__dict__["_log_key"] = template_key(self.server, self.seed, self.size)
        return cached

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
        chunks: Each table's canonical bytes (its name and rows as compact JSON) as the hash
            takes them (none for an empty table :func:`added_later`).
        prefixes: The SHA-256 state before each table was fed in (copied, never updated).
        hexdigest: The hash of the whole state.
        rows: Row by row, each table whose written rows can be spliced into its chunk
            (:meth:`TableRows.of`); a table not here is read again in full once written.
    """

    names: tuple[str, ...]
    chunks: tuple[bytes, ...]
    prefixes: tuple[Any, ...] = field(repr=False)
    hexdigest: str
    rows: Mapping[str, TableRows] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, conn: sqlite3.Connection, metadata: MetaData) -> HashBase:
        """Read every table of ``conn`` once: its chunk, and its rows where they splice.

        The rows come from the same read as the chunk, so the first write to a table
        costs no second pass over it. They hold each row's key and offset: about 240 KB
        for a state of the default size (20 servers' mean), what the first write to every
        table used to build anyway.
        """
        names = tuple(sorted(metadata.tables))
        chunks: list[bytes] = []
        spliceable: dict[str, TableRows] = {}
        for name in names:
            if _row_key(metadata.tables[name]) is None:
                chunks.append(_hashed(metadata, name, _table_chunk(conn, metadata, name)))
                continue
            chunk, rows = TableRows.of(conn, metadata, name)
            chunks.append(_hashed(metadata, name, chunk))
            if rows is not None and not metadata.tables[name].info.get(ADDED_LATER):
                spliceable[name] = rows  # (one added later is read again in full)
        digest = hashlib.sha256()
        prefixes = []
        for chunk in chunks:
            prefixes.append(digest.copy())
            digest.update(chunk)
        return cls(names, tuple(chunks), tuple(prefixes), digest.hexdigest(), spliceable)


@dataclass(frozen=True)
class TableRows:
    """One table of a template row by row: what splicing a few rows written into it needs.

    Attributes:
        name: The table.
        chunk: Its canonical bytes, ``["name",[row,row,...]]``.
        starts: Where each row starts in ``chunk``; then one more, as if a last comma
            followed the last row (so row ``i`` is ``chunk[starts[i]:starts[i + 1] - 1]``).
        keys: Each row's primary key (the value itself for a one-column key, else a tuple),
            in canonical (``ORDER BY`` primary key) order.
        key_at: Where the primary key's columns are in a row.
        kinds: The :data:`_KIND` of every value of each key column.
        count_check: Whether a spliced table must be counted (see :meth:`of`).
    """

    name: str
    chunk: bytes = field(repr=False)
    starts: array[int] = field(repr=False)  # 8 bytes a row, not a Python int's 36
    keys: list[Any] = field(repr=False)
    key_at: tuple[int, ...]
    kinds: tuple[int, ...]
    count_check: bool

    @classmethod
    def of(
        cls, conn: sqlite3.Connection, metadata: MetaData, name: str
    ) -> tuple[bytes, TableRows | None]:
        """Read table ``name`` of ``conn`` (a table with a :func:`_row_key`) row by row: its
        canonical bytes, and the table as rows.

        The rows are ``None`` unless the table has rows and each key column holds values of
        one :data:`_KIND` that Python orders strictly as SQLite did: then a row of the same
        kinds spliced in lands where ``ORDER BY`` puts it. A table with another unique
        column is counted after each splice: an ``INSERT OR REPLACE`` or ``UPDATE OR
        REPLACE`` clashing on it deletes the other row without firing its delete trigger
        (SQLite's ``recursive_triggers`` is off).
        """
        table = metadata.tables[name]
        pk = _row_key(table)
        assert pk is not None
        columns = [c.name for c in table.columns]
        key_at = tuple(columns.index(c) for c in pk)
        head = _chunk_head(name)
        by_sqlite = _sqlite_rows(conn, metadata, name)
        if by_sqlite is not None:  # (key values..., row text): SQLite wrote each row's text
            chunk, fetched = by_sqlite
            read_at = tuple(range(len(pk)))
            rows = list(map(operator.itemgetter(len(pk)), fetched))
        else:
            fetched, read_at = conn.execute(_select_sql(metadata, name)).fetchall(), key_at
            rows = _encode_rows(fetched)
            # the rows joined are exactly json.dumps([name, rows]): the same C encoder, options
            chunk = (head + ",".join(rows) + "]]").encode()
        kinds: list[int] = []
        for at in read_at:
            types = set(map(type, map(operator.itemgetter(at), fetched)))
            found = {_KIND.get(t, -1) for t in types}
            if len(found) != 1 or -1 in found:  # an empty table is read again in full
                return chunk, None
            kinds.append(found.pop())
        keys = list(map(operator.itemgetter(*read_at), fetched))
        if not all(map(operator.lt, keys, itertools.islice(keys, 1, None))):
            return chunk, None
        # ASCII (ensure_ascii): as many bytes as characters; each row and its comma
        lengths = map(operator.add, map(len, rows), itertools.repeat(1))
        starts = array("q", itertools.accumulate(lengths, initial=len(head)))
        checks: dict[str, bool] = metadata.info.setdefault("prove_gym.count_checks", {})
        count_check = checks.get(name)
        if count_check is None:  # a schema's trait, the same in every state of the server
            indexes = conn.execute(f'PRAGMA index_list("{name}")').fetchall()
            count_check = checks[name] = any(
                unique and origin != "pk" for _, _, unique, origin, _ in indexes
            )
        return chunk, cls(name, chunk, starts, keys, key_at, tuple(kinds), count_check)

    def spliced(
        self, conn: sqlite3.Connection, metadata: MetaData, logged: Collection[Key]
    ) -> list[bytes | memoryview] | None:
        """This table's canonical bytes in ``conn``, whose rows differ from these at most at
        the ``logged`` keys (:data:`ROW_LOG`): those rows are read again, the runs of rows
        between them are slices of :attr:`chunk` (not copied). In pieces, to feed a hash
        in turn; ``None`` where the table must be read in full: a key of another kind than
        the template's (a text key set to a number...), or a row count that does not add up.
        """
        fresh: dict[Any, bytes] = {}
        for row in conn.execute(_fetch_logged_sql(metadata, self.name), (self.name,)):
            values = tuple(row[at] for at in self.key_at)
            if not self._orderable(values):
                return None
            fresh[values if len(values) > 1 else values[0]] = _encode_row(row).encode()
        keys = self.keys
        # What changes at each position of the template's rows: a fresh row goes in before
        # the row there (0), the row there is dropped (1); fresh rows at one position by key.
        events: list[tuple[int, int, Any, bytes]] = []
        for values in logged:
            if not self._orderable(values):
                return None
            key = values if len(values) > 1 else values[0]
            at = bisect.bisect_left(keys, key)
            if at < len(keys) and keys[at] == key:
                events.append((at, 1, key, b""))
        for key, encoded in fresh.items():
            events.append((bisect.bisect_left(keys, key), 0, key, encoded))
        events.sort(key=lambda e: e[:3])
        view, starts = memoryview(self.chunk), self.starts
        rows: list[bytes | memoryview] = []  # runs of the template's rows, and fresh rows
        count = 0
        done = 0  # the template's rows before this one are in rows (or dropped)
        for at, drop, _, encoded in events:
            if at > done:
                rows.append(view[starts[done] : starts[at] - 1])
                count += at - done
                done = at
            if drop:
                done = at + 1
            else:
                rows.append(encoded)
                count += 1
        if done < len(keys):
            rows.append(view[starts[done] : starts[-1] - 1])
            count += len(keys) - done
        counted = f'SELECT count(*) FROM "{self.name}"'
        if self.count_check and conn.execute(counted).fetchone()[0] != count:
            return None
        pieces: list[bytes | memoryview] = [view[: starts[0]]]  # ["name",[
        for k, run in enumerate(rows):
            if k:
                pieces.append(b",")
            pieces.append(run)
        pieces.append(b"]]")
        return pieces

    def _orderable(self, values: Key) -> bool:
        """Whether Python orders this key among the template's as SQLite would: each value
        of its column's :data:`_KIND`."""
        return all(_KIND.get(type(v)) == kind for v, kind in zip(values, self.kinds, strict=True))


def _json_default(value: object) -> object:
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"unhashable column value {value!r}")


def _row_encoder() -> Callable[[Any, int], Any]:
    """The encoder of one row's canonical text, as :func:`json.dumps` writes it inside
    the table's list (ASCII: ``ensure_ascii`` escapes the rest): called with the row and
    0, it gives the text in pieces. Made once, with the C encoder that ``json.dumps``
    itself uses where there is one: ``JSONEncoder.encode`` builds it anew at each call,
    which costs most of a short row's time."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython has the C encoder
        plain = json.JSONEncoder(separators=(",", ":"), default=_json_default).encode
        return lambda row, _indent: (plain(row),)
    return make(
        None,
        _json_default,
        json.encoder.encode_basestring_ascii,
        None,
        ":",
        ",",
        False,
        False,
        True,
    )


_row_pieces = _row_encoder()


def _encode_row(row: Any) -> str:
    """One row's canonical text (see :func:`_row_encoder`)."""
    return "".join(_row_pieces(row, 0))


def _encode_rows(rows: list[Any]) -> list[str]:
    """Each row's canonical text, the loop in C (no Python frame per row)."""
    return list(map("".join, map(_row_pieces, rows, itertools.repeat(0))))


_KIND = {int: 1, float: 1, str: 2, bytes: 3}
"""Python orders two values of one kind as SQLite's ``ORDER BY`` (binary collation) does:
numbers by value (integers and reals alike), text by code point (UTF-8's byte order),
blobs bytewise. (SQLite puts NULL, then numbers, then text, then blobs.)"""


def _row_key(table: Table) -> tuple[str, ...] | None:
    """The columns a table's written rows are logged by (its primary key), or ``None``:
    no primary key, or one SQLite may order otherwise than Python (a nullable
    or collated column), and the table is logged by name in :data:`CHANGE_LOG`."""
    pk = list(table.primary_key.columns)
    if not pk or any(c.nullable or getattr(c.type, "collation", None) for c in pk):
        return None
    return tuple(c.name for c in pk)


def _log_width(metadata: MetaData) -> int:
    """How many key columns :data:`ROW_LOG` has: the widest logged primary key's."""
    return max((len(k) for t in metadata.tables.values() if (k := _row_key(t))), default=1)


def canonical_state_hash(
    conn: sqlite3.Connection,
    metadata: MetaData,
    *,
    base: HashBase | None = None,
    changed: Collection[str] | None = None,
    rows: Mapping[str, Collection[Key]] | None = None,
) -> str:
    """SHA-256 of every row of every table, tables by name, rows by primary key (a table
    :func:`added_later` counts only with rows).

    Values are read as SQLite stores them (int, float, text, blob), so the
    hash is the same on any machine for the same state. Given the ``base`` of
    the state this one started from and the tables ``changed`` since, only those
    tables are read again; given also ``rows`` (the keys of the rows written since,
    by table, as :func:`change_log` reads them from :data:`ROW_LOG`), only those rows
    of their tables. The value is the same as without them.
    """
    if base is None or changed is None:
        digest = hashlib.sha256()
        for name in sorted(metadata.tables):
            digest.update(_hashed(metadata, name, _table_chunk(conn, metadata, name)))
        return digest.hexdigest()
    rows = rows or {}
    dirty = [k for k, name in enumerate(base.names) if name in changed or name in rows]
    if not dirty:
        return base.hexdigest
    digest = base.prefixes[dirty[0]].copy()
    for k in range(dirty[0], len(base.names)):
        name = base.names[k]
        pieces = None
        if name in rows and name not in changed:
            pieces = _spliced(conn, metadata, base, name, rows[name])
        if pieces is not None:
            for piece in pieces:
                digest.update(piece)
        elif name in changed or name in rows:
            digest.update(_hashed(metadata, name, _table_chunk(conn, metadata, name)))
        else:
            digest.update(base.chunks[k])
    return digest.hexdigest()


SPLICE_SHARE = 0.5
"""Above this share of a table's rows written, it is cheaper to read the table again."""


def _spliced(
    conn: sqlite3.Connection, metadata: MetaData, base: HashBase, name: str, logged: Collection[Key]
) -> list[bytes | memoryview] | None:
    """Table ``name``'s canonical bytes in pieces (:meth:`TableRows.spliced`), or ``None``
    where it is to be read in full."""
    table = base.rows.get(name)
    if table is None or len(logged) > SPLICE_SHARE * len(table.keys) + 8:
        return None
    return table.spliced(conn, metadata, logged)


def _select_sql(metadata: MetaData, name: str) -> str:
    """``SELECT`` of every row of a table in canonical order (cached in the metadata)."""
    queries: dict[str, str] = metadata.info.setdefault("prove_gym.hash_queries", {})
    sql = queries.get(name)
    if sql is None:
        table = metadata.tables[name]
        order = [c.name for c in table.primary_key.columns] or [c.name for c in table.columns]
        columns = ", ".join(f'"{c.name}"' for c in table.columns)
        order_by = ", ".join(f'"{c}"' for c in order)
        sql = queries[name] = f'SELECT {columns} FROM "{name}" ORDER BY {order_by}'
    return sql


def _fetch_logged_sql(metadata: MetaData, name: str) -> str:
    """``SELECT`` of the rows of a table whose key :data:`ROW_LOG` holds (table name as
    the one parameter): the log's few rows first, each row then found by its key."""
    queries: dict[str, str] = metadata.info.setdefault("prove_gym.logged_queries", {})
    sql = queries.get(name)
    if sql is None:
        table = metadata.tables[name]
        pk = _row_key(table)
        assert pk is not None
        columns = ", ".join(f't."{c.name}"' for c in table.columns)
        match = " AND ".join(f't."{c}" = l.k{i}' for i, c in enumerate(pk))
        sql = queries[name] = (
            f'SELECT {columns} FROM "{ROW_LOG}" AS l CROSS JOIN "{name}" AS t '
            f"WHERE l.name = ? AND {match}"
        )
    return sql


def _table_chunk(conn: sqlite3.Connection, metadata: MetaData, name: str) -> bytes:
    """One table's canonical bytes: ``[name, rows]`` as compact JSON, rows by primary key."""
    by_sqlite = _sqlite_rows(conn, metadata, name)
    if by_sqlite is not None:
        return by_sqlite[0]
    return _python_chunk(conn, metadata, name)


ADDED_LATER = "prove_gym.added_later"
"""``Table.info`` key of a table that a later env version of its server writes
(:func:`added_later`)."""


def added_later() -> dict[str, Any]:
    """``__table_args__`` of a model whose table a later env version adds: while the table is
    empty the state hash leaves it out, so every state an earlier version reaches (which
    never writes it) keeps the hash recorded before the table existed.

    >>> added_later()
    {'info': {'prove_gym.added_later': True}}
    """
    return {"info": {ADDED_LATER: True}}


def _hashed(metadata: MetaData, name: str, chunk: bytes) -> bytes:
    """``chunk`` as the state hash takes it: nothing for an empty :data:`ADDED_LATER` table."""
    if metadata.tables[name].info.get(ADDED_LATER) and chunk == _empty_chunk(name):
        return b""
    return chunk


def _empty_chunk(name: str) -> bytes:
    """The canonical bytes of table ``name`` without rows: ``["name",[]]``."""
    return (_chunk_head(name) + "]]").encode()


def _chunk_head(name: str) -> str:
    """The start of a table's canonical bytes, before its first row: ``["name",[``."""
    return json.dumps([name, []], separators=(",", ":"))[:-2]


def _python_chunk(conn: sqlite3.Connection, metadata: MetaData, name: str) -> bytes:
    """:func:`_table_chunk` as Python's JSON encoder writes it: the definition."""
    rows = conn.execute(_select_sql(metadata, name)).fetchall()
    return json.dumps([name, rows], separators=(",", ":"), default=_json_default).encode()


_TEXT_TYPES = ("CHAR", "CLOB", "TEXT")
"""A declared type naming one of these (and not INT) gives a column TEXT affinity: SQLite
stores a number written to it as text (https://sqlite.org/datatype3.html, 3.1)."""


def _sqlite_rows(
    conn: sqlite3.Connection, metadata: MetaData, name: str
) -> tuple[bytes, list[tuple[Any, ...]]] | None:
    """Table ``name``'s canonical bytes (:func:`_table_chunk`) written by SQLite
    (``json_array``) instead of Python, and its rows in canonical order, each as its
    primary key's values then the row's text; ``None`` where that text could differ from
    Python's ``json.dumps``, which then writes it.

    Where they agree: integers, NULL and text print alike, and SQLite escapes ``"``, ``\\``
    and the control characters as Python does. Where they may not, the text is not used: a
    real (Python writes the shortest repr, SQLite 15 digits: ``0.3`` for
    ``0.30000000000000004``), so a table with a real in a column that can hold one; a blob
    (SQLite refuses it); a character past ``~`` (Python escapes it, SQLite writes it as it
    is); and an SQLite without ``json_array``. Reading rows as text in C costs less than a
    third of making every value a Python object and encoding it.
    """
    queries: dict[str, tuple[str | None, str] | None] = metadata.info.setdefault(
        "prove_gym.json_queries", {}
    )
    if name not in queries:
        queries[name] = _json_queries(conn, metadata, name)
    found = queries[name]
    if found is None:
        return None
    has_real, select = found
    try:
        if has_real is not None and conn.execute(has_real).fetchone()[0]:
            return None
        rows = conn.execute(select).fetchall()
    except sqlite3.OperationalError:  # a blob, or no JSON functions in this SQLite
        return None
    text = _chunk_head(name) + ",".join(map(operator.itemgetter(-1), rows)) + "]]"
    if not text.isascii() or "\x7f" in text:
        return None
    return text.encode(), rows


def _json_queries(
    conn: sqlite3.Connection, metadata: MetaData, name: str
) -> tuple[str | None, str] | None:
    """For :func:`_sqlite_rows`: the query telling whether a column that can hold a real
    holds one (``None`` when none can), and the ``SELECT`` of each row's key and text;
    ``None`` for a table the database lays out otherwise than ``metadata``."""
    table = metadata.tables[name]
    columns = [c.name for c in table.columns]
    declared = {r[1]: str(r[2]).upper() for r in conn.execute(f'PRAGMA table_info("{name}")')}
    if list(declared) != columns:
        return None
    numeric = [c for c, t in declared.items() if "INT" in t or not any(k in t for k in _TEXT_TYPES)]
    has_real = (
        f'SELECT EXISTS (SELECT 1 FROM "{name}" WHERE '
        + " OR ".join(f"typeof(\"{c}\") = 'real'" for c in numeric)
        + ")"
        if numeric
        else None
    )
    keys = "".join(f'"{c}", ' for c in _row_key(table) or ())
    values = ", ".join(f'"{c}"' for c in columns)
    select = _select_sql(metadata, name)
    order = select[select.index(" ORDER BY ") :]
    return has_real, f'SELECT {keys}json_array({values}) FROM "{name}"{order}'


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
    """Create the empty :data:`CHANGE_LOG` and :data:`ROW_LOG` tables, with the state's own
    tables (before any row): their root pages are then the same in every state of the
    server, so they all share one :func:`schema_layout`."""
    for reserved in (CHANGE_LOG, ROW_LOG):
        if reserved in metadata.tables:
            raise ValueError(f"{reserved!r} is reserved for prove_gym's change log")
    conn.execute(f'CREATE TABLE "{CHANGE_LOG}" (name TEXT PRIMARY KEY) WITHOUT ROWID')
    keys = [f"k{i}" for i in range(_log_width(metadata))]
    # Key columns without a type keep each value as stored (integer, text...) for the join.
    columns = ", ".join(f"{k} NOT NULL" for k in keys)
    conn.execute(
        f'CREATE TABLE "{ROW_LOG}" (name TEXT NOT NULL, {columns}, '
        f"PRIMARY KEY (name, {', '.join(keys)})) WITHOUT ROWID"
    )


def install_change_log(conn: sqlite3.Connection, metadata: MetaData, key: int) -> None:
    """Add the triggers that log each row written in :data:`ROW_LOG` (by its primary key:
    an update logs the key it had and the key it has) or, for a table without a key that
    orders it exactly, the table's name in :data:`CHANGE_LOG`.

    Run on a freshly sampled state before it is serialised (after
    :func:`create_change_log`): the log is empty in the template and travels inside every
    copy, snapshot and restore of it, and a rolled back write leaves no mark. Any write is
    logged, through the ORM, Core or raw SQL alike; a row logged but changed back is
    simply read again. ``key`` (:func:`template_key`) goes in ``PRAGMA user_version``:
    another template's bytes restored into a session are then recognised, and hashed in
    full.
    """
    conn.execute(f"PRAGMA user_version = {int(key)}")
    width = _log_width(metadata)
    for name in sorted(metadata.tables):
        quoted = name.replace("'", "''")
        pk = _row_key(metadata.tables[name])
        for op in ("INSERT", "UPDATE", "DELETE"):
            if pk is None:
                body = f"INSERT OR IGNORE INTO \"{CHANGE_LOG}\" VALUES ('{quoted}')"
            else:
                pad = ", 0" * (width - len(pk))
                ages = {"INSERT": ["NEW"], "UPDATE": ["OLD", "NEW"], "DELETE": ["OLD"]}[op]
                values = ", ".join(
                    "('{}', {}{})".format(quoted, ", ".join(f'{age}."{c}"' for c in pk), pad)
                    for age in ages
                )
                body = f'INSERT OR IGNORE INTO "{ROW_LOG}" VALUES {values}'
            conn.execute(
                f'CREATE TRIGGER "{CHANGE_LOG}_{name}_{op.lower()}" AFTER {op} ON "{name}" '
                f"BEGIN {body}; END"
            )


@dataclass(frozen=True)
class ChangeLog:
    """What a state's log says was written since its template.

    Attributes:
        tables: Tables logged by name (:data:`CHANGE_LOG`): read again in full.
        rows: The keys of the rows written, by table (:data:`ROW_LOG`).
    """

    tables: frozenset[str]
    rows: dict[str, set[Key]]


def change_log(conn: sqlite3.Connection, metadata: MetaData, key: int) -> ChangeLog | None:
    """The log of the rows written since template ``key``, or ``None`` for a state without
    its log (another template's, or bytes that did not come from ``Server.sample``)."""
    if conn.execute("PRAGMA user_version").fetchone()[0] != key:
        return None
    try:
        tables = conn.execute(f'SELECT name FROM "{CHANGE_LOG}"').fetchall()
        logged = conn.execute(f'SELECT * FROM "{ROW_LOG}"').fetchall()
    except sqlite3.OperationalError:
        return None
    widths: dict[str, int] = metadata.info.get("prove_gym.key_widths") or {}
    if not widths:  # each row-logged table's key width, cached in the metadata
        widths = metadata.info["prove_gym.key_widths"] = {
            name: len(pk) for name, t in metadata.tables.items() if (pk := _row_key(t))
        }
    rows: dict[str, set[Key]] = {}
    for name, *values in logged:
        width = widths.get(name)
        if width is None:  # not this schema's log
            return None
        rows.setdefault(name, set()).add(tuple(values[:width]))
    return ChangeLog(frozenset(r[0] for r in tables), rows)


def changed_tables(conn: sqlite3.Connection, key: int) -> frozenset[str] | None:
    """The tables written since template ``key``, or ``None`` for a state without its log."""
    if conn.execute("PRAGMA user_version").fetchone()[0] != key:
        return None
    try:
        rows = conn.execute(
            f'SELECT name FROM "{CHANGE_LOG}" UNION SELECT DISTINCT name FROM "{ROW_LOG}"'
        ).fetchall()
    except sqlite3.OperationalError:  # bytes that did not come from Server.sample
        return None
    return frozenset(r[0] for r in rows)


def combine_hashes(hashes: dict[str, str]) -> str:
    """One hash for several servers' states (a multi-server task): sha256 over sorted pairs."""
    if len(hashes) == 1:
        return next(iter(hashes.values()))
    payload = json.dumps(sorted(hashes.items()), separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()
