"""The incremental state hash: rows written since the template, spliced into its rows.

Whatever is written, and however (a tool, raw SQL kept or rolled back, ``INSERT OR
REPLACE``, a primary key changed, a row deleted and inserted again, a restore), a
session's :meth:`Session.state_hash` must equal :func:`canonical_state_hash` computed in
full on the same connection.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Column, Float, Integer, LargeBinary, String, Table, UniqueConstraint, insert
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import prove_gym
from prove_gym import SampleContext, Server, ToolContext
from prove_gym.server.session import Session
from prove_gym.server.state import (
    CHANGE_LOG,
    ROW_LOG,
    added_later,
    canonical_state_hash,
    change_log,
    changed_tables,
)


class _Base(DeclarativeBase):
    pass


class _Item(_Base):
    """Integer key, and another unique column (``INSERT OR REPLACE`` may clash on it)."""

    __tablename__ = "items"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    code: Mapped[str] = mapped_column(String(20), unique=True)
    note: Mapped[str | None] = mapped_column(String(40))


class _Pair(_Base):
    """A composite key, text then integer."""

    __tablename__ = "pairs"
    owner: Mapped[str] = mapped_column(String(20), primary_key=True)
    slot: Mapped[int] = mapped_column(Integer, primary_key=True)
    value: Mapped[float] = mapped_column(Float)


class _Tag(_Base):
    """A collated key: SQLite orders it otherwise than Python, so it is logged by name."""

    __tablename__ = "tags"
    label: Mapped[str] = mapped_column(String(20, collation="NOCASE"), primary_key=True)
    uses: Mapped[int] = mapped_column(Integer)


class _Blob(_Base):
    """A blob key (hashed as hex, ordered bytewise)."""

    __tablename__ = "blobs"
    digest: Mapped[bytes] = mapped_column(LargeBinary, primary_key=True)
    size: Mapped[int] = mapped_column(Integer)


_LOOSE = Table(  # no primary key: rows ordered by every column, logged by name
    "loose", _Base.metadata, Column("a", String(10)), Column("b", Integer), UniqueConstraint("b")
)


def _sample(ctx: SampleContext) -> None:
    n = 6 * ctx.size
    ctx.db.add_all(_Item(id=i, code=f"c{i:03d}", note=ctx.fake.word()) for i in range(1, n + 1))
    ctx.db.add_all(
        _Pair(owner=f"o{i % 3}", slot=i, value=ctx.rng.random()) for i in range(-2, n - 2)
    )
    ctx.db.add_all(_Tag(label=w, uses=i) for i, w in enumerate(["a", "B", "c", "D", "é", "Z"]))
    ctx.db.add_all(_Blob(digest=bytes([i * 40, i]), size=i) for i in range(6))
    ctx.db.execute(insert(_LOOSE), [{"a": f"x{i % 2}", "b": i} for i in range(n)])


def _toy() -> Server:
    server = Server("hashed", version="0", base=_Base, sampler=_sample)

    @server.tool(writes=True)
    def add_item(ctx: ToolContext, code: str) -> int:
        """Adds an item."""
        return ctx.sql.insert(_Item, code=code, note=None)

    return server


_TOY = _toy()


def _server(name: str) -> Server:
    return _TOY if name == "hashed" else prove_gym.get_server(name)


def _gold_steps(name: str) -> tuple[int, list[Any]]:
    """A seed and the gold calls of the server's first shipped single-server task."""
    if name == "hashed":
        return 0, [("add_item", {"code": "new"}), ("add_item", {"code": "c001"})]
    task = next(t for t in prove_gym.get_registry().tasks(name) if t.servers == [name])
    return task.seed, [(s.name, s.arguments) for turn in task.turns for s in turn.steps]


def _changed(value: Any, n: int) -> Any:
    """Another value of the same kind, ordered before or after ``value`` as ``n`` says."""
    if isinstance(value, str):
        return f"{value}~{n % 5}" if n % 2 else f"!{n % 5}{value}"
    if isinstance(value, bool | int):
        return value + 1000 + n % 7 if n % 2 else -value - 1 - n % 7
    if isinstance(value, float):
        return value + 0.25 * (1 + n % 3)
    if isinstance(value, bytes):
        return value + bytes([n % 256])
    return n % 3


_ODD_KEYS = (7, 2.5, b"\x00z", "", "10", -1)
"""Values of another type than a key column's own: SQLite converts some by the column's
affinity (text in an integer column...) and stores others as they are."""


def _raw_write(raw: sqlite3.Connection, session: Session, kind: str, a: int, b: int) -> None:
    """One raw write of ``kind`` to table ``a`` (by name order), row ``b`` (by rowid)."""
    metadata = session.server.base.metadata
    table = metadata.tables[sorted(metadata.tables)[a % len(metadata.tables)]]
    name = table.name
    columns = [c.name for c in table.columns]
    keys = [c.name for c in table.primary_key.columns] or columns[:1]
    others = [c for c in columns if c not in keys] or keys
    count = raw.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
    if count == 0:
        return
    found = raw.execute(
        f'SELECT rowid, * FROM "{name}" ORDER BY rowid LIMIT 1 OFFSET {b % count}'
    ).fetchone()
    rowid, row = found[0], dict(zip(columns, found[1:], strict=True))
    marks = ", ".join("?" for _ in columns)
    quoted = ", ".join(f'"{c}"' for c in columns)
    if kind == "update":
        column = others[b % len(others)]
        raw.execute(
            f'UPDATE "{name}" SET "{column}" = ? WHERE rowid = ?',
            (_changed(row[column], b), rowid),
        )
    elif kind == "delete":
        raw.execute(f'DELETE FROM "{name}" WHERE rowid = ?', (rowid,))
    elif kind == "reinsert":  # deleted, then inserted again as it was (at another rowid)
        raw.execute(f'DELETE FROM "{name}" WHERE rowid = ?', (rowid,))
        raw.execute(f'INSERT INTO "{name}" ({quoted}) VALUES ({marks})', list(row.values()))
    elif kind in ("insert", "replace"):  # a copy under another key; REPLACE may clash
        copy = dict(row, **{keys[0]: _changed(row[keys[0]], b)})
        verb = "INSERT OR REPLACE" if kind == "replace" else "INSERT"
        raw.execute(f'{verb} INTO "{name}" ({quoted}) VALUES ({marks})', list(copy.values()))
    elif kind == "replace_same":  # the same key, other values
        column = others[b % len(others)]
        copy = dict(row, **{column: _changed(row[column], b)})
        raw.execute(
            f'INSERT OR REPLACE INTO "{name}" ({quoted}) VALUES ({marks})', list(copy.values())
        )
    elif kind == "rekey":  # its primary key changed by UPDATE
        raw.execute(
            f'UPDATE "{name}" SET "{keys[0]}" = ? WHERE rowid = ?',
            (_changed(row[keys[0]], b), rowid),
        )
    elif kind == "odd_key":
        raw.execute(
            f'UPDATE "{name}" SET "{keys[-1]}" = ? WHERE rowid = ?',
            (_ODD_KEYS[b % len(_ODD_KEYS)], rowid),
        )
    elif kind == "wipe":
        raw.execute(f'DELETE FROM "{name}"')


_RAW = ("update", "delete", "reinsert", "insert", "replace", "replace_same", "rekey", "odd_key")


def _actions(size: int, restores: tuple[str, ...]) -> st.SearchStrategy[list[Any]]:
    return st.lists(
        st.tuples(
            st.sampled_from((*_RAW, "wipe", "gold", *restores)),
            st.integers(0, 10_000),
            st.integers(0, 10_000),
            st.booleans(),  # a raw write kept (committed) or rolled back
        ),
        max_size=size,
    )


def _assert_hash_is_canonical(session: Session) -> None:
    raw = session.raw_connection
    full = canonical_state_hash(raw, session.server.base.metadata)
    assert session.state_hash() == full
    assert session.state_hash() == full  # asked again: the same (remembered) answer


def _play(name: str, actions: list[tuple[str, int, int, bool]]) -> None:
    server = _server(name)
    seed, steps = _gold_steps(name)
    session = server.session(seed)
    raw = session.raw_connection
    snapshots = [session.snapshot()]
    done = 0
    for kind, a, b, keep in actions:
        if kind in (*_RAW, "wipe"):
            try:
                _raw_write(raw, session, kind, a, b)
            except sqlite3.Error:  # a constraint: the write failed, as a tool's may
                keep = False
            if keep:
                raw.commit()
            else:
                raw.rollback()
        elif kind == "gold" and steps:
            step_name, arguments = steps[done % len(steps)]
            done += 1
            session.call(step_name, arguments)
        elif kind == "restore":
            session.restore(snapshots[a % len(snapshots)])
        elif kind == "reset":
            session.reset()
        elif kind == "foreign":  # another template's log: hashed in full
            session.restore(server.template(seed + 1).data)
        _assert_hash_is_canonical(session)
        snapshots.append(session.snapshot())
    session.close()


@settings(max_examples=80, deadline=None)
@given(actions=_actions(14, ("restore", "reset", "foreign")))
def test_the_incremental_hash_always_equals_the_full_hash(
    actions: list[tuple[str, int, int, bool]],
) -> None:
    """Random raw writes (kept or rolled back) to keys of every kind, tool calls, restores
    of its own snapshots and of another template's bytes: the spliced hash is the full
    hash, every time."""
    _play("hashed", actions)


@pytest.mark.parametrize("name", ("calendar", "team_chat", "trading"))
@settings(max_examples=4, deadline=None)
@given(actions=_actions(6, ("restore", "reset")))
def test_the_incremental_hash_equals_the_full_hash_on_real_servers(
    name: str, actions: list[tuple[str, int, int, bool]]
) -> None:
    """The same on real schemas (composite keys, integer and date key columns); few
    examples, as each full hash of a real state costs tens of milliseconds."""
    _play(name, actions)


def test_the_log_holds_each_written_rows_key_and_a_rollback_leaves_none() -> None:
    session = _TOY.session(seed=3)
    raw, metadata, key = session.raw_connection, _TOY.base.metadata, session.template.log_key
    log = change_log(raw, metadata, key)
    assert log is not None and log.tables == frozenset() and log.rows == {}
    raw.execute("UPDATE items SET id = 100 WHERE id = 2")  # old and new key logged
    raw.execute("DELETE FROM pairs WHERE owner = 'o1' AND slot = 1")
    raw.execute("UPDATE tags SET uses = 9 WHERE label = 'a'")  # collated key: by name
    raw.execute("INSERT INTO loose VALUES ('y', 99)")  # no key: by name
    raw.commit()
    raw.execute("DELETE FROM blobs")
    raw.rollback()
    log = change_log(raw, metadata, key)
    assert log is not None
    assert log.tables == frozenset({"tags", "loose"})
    assert log.rows == {"items": {(2,), (100,)}, "pairs": {("o1", 1)}}
    assert changed_tables(raw, key) == frozenset({"items", "pairs", "tags", "loose"})
    assert change_log(raw, metadata, _TOY.template(seed=4).log_key) is None
    _assert_hash_is_canonical(session)
    session.reset()
    assert raw.execute(f'SELECT count(*) FROM "{ROW_LOG}"').fetchone()[0] == 0
    assert raw.execute(f'SELECT count(*) FROM "{CHANGE_LOG}"').fetchone()[0] == 0
    session.close()


def test_a_replace_that_deletes_a_clashing_row_unlogged_is_caught_by_the_count() -> None:
    """``INSERT OR REPLACE`` clashing on a unique column other than the key deletes that
    row without its delete trigger (``recursive_triggers`` is off): only the new key is
    logged, and the table's row count tells the splice to read the table again."""
    session = _TOY.session(seed=5)
    raw = session.raw_connection
    assert session.state_hash()  # the template's rows of every table, built once
    raw.execute("INSERT OR REPLACE INTO items (id, code, note) VALUES (500, 'c003', 'x')")
    raw.commit()
    log = change_log(raw, _TOY.base.metadata, session.template.log_key)
    assert log is not None and log.rows == {"items": {(500,)}}  # row 3 went unlogged
    assert raw.execute("SELECT count(*) FROM items WHERE id = 3").fetchone()[0] == 0
    _assert_hash_is_canonical(session)
    session.close()


def test_a_remembered_hash_is_forgotten_at_any_change_or_restore() -> None:
    session = _TOY.session(seed=6)
    raw = session.raw_connection
    pristine = session.state_hash()
    raw.execute("UPDATE items SET note = 'one' WHERE id = 1")
    raw.commit()
    first = session.state_hash()
    assert first != pristine
    snapshot = session.snapshot()
    raw.execute("UPDATE items SET note = 'two' WHERE id = 1")
    raw.commit()
    second = session.state_hash()
    assert second not in (first, pristine)
    session.restore(snapshot)  # no change SQLite counts, yet another state
    assert session.state_hash() == first
    raw.execute("UPDATE items SET note = 'three' WHERE id = 1")
    raw.rollback()  # a change counted, then undone
    assert session.state_hash() == first
    raw.execute("UPDATE items SET note = 'four' WHERE id = 1")
    assert session.state_hash() not in (first, second)  # hashed inside the transaction
    raw.rollback()  # undone, and SQLite counts nothing for it
    assert session.state_hash() == first
    session.close()


def test_the_hash_after_a_payments_episode_is_spliced_and_exact() -> None:
    """A big server, a whole gold episode: each call's hash equals the full hash."""
    server = prove_gym.get_server("payments")
    task = next(t for t in prove_gym.get_registry().tasks("payments") if t.servers == ["payments"])
    session = server.session(task.seed, task.size)
    for step in (s for turn in task.turns for s in turn.steps):
        session.call(step.name, step.arguments)
        _assert_hash_is_canonical(session)
    session.close()


class _Before(DeclarativeBase):
    pass


class _After(DeclarativeBase):
    pass


def _ledger(base: type[DeclarativeBase]) -> type:
    class Entry(base):  # type: ignore[valid-type,misc]
        __tablename__ = "entries"
        id: Mapped[int] = mapped_column(Integer, primary_key=True)
        amount: Mapped[int] = mapped_column(Integer)

    return Entry


_ENTRY_BEFORE, _ENTRY_AFTER = _ledger(_Before), _ledger(_After)


class _Key(_After):
    """A table a later version writes (an idempotency key per entry): hashed only with rows."""

    __tablename__ = "entry_keys"
    __table_args__ = added_later()
    key: Mapped[str] = mapped_column(String(40), primary_key=True)
    entry_id: Mapped[int] = mapped_column(Integer)


def _ledger_server(base: type[DeclarativeBase], entry: type) -> Server:
    def sample(ctx: SampleContext) -> None:
        ctx.db.add_all(entry(id=i, amount=ctx.rng.randrange(100)) for i in range(1, 6))

    server = Server("ledger_hashed", version="0", base=base, sampler=sample)

    @server.tool(writes=True)
    def add_entry(ctx: ToolContext, amount: int, key: str | None = None) -> int:
        """Adds an entry, and its key when given."""
        entry_id = ctx.sql.insert(entry, amount=amount)
        if key is not None:
            ctx.sql.insert(_Key, key=key, entry_id=entry_id)
        return entry_id

    return server


def test_an_empty_table_added_later_leaves_every_state_hash_as_it_was() -> None:
    """A later env version that adds a table (ADDED_LATER) keeps every hash an earlier version
    recorded: the table counts only once it has rows, incrementally and in full alike."""
    before = _ledger_server(_Before, _ENTRY_BEFORE)
    after = _ledger_server(_After, _ENTRY_AFTER)
    with before.session(seed=3) as old, after.session(seed=3) as new:
        assert new.state_hash() == old.state_hash()
        assert old.call("add_entry", {"amount": 7}).ok and new.call("add_entry", {"amount": 7}).ok
        assert new.state_hash() == old.state_hash()
        assert new.call("add_entry", {"amount": 8, "key": "k-1"}).ok
        keyed = new.state_hash()
        full = canonical_state_hash(new.raw_connection, _After.metadata)
        assert keyed == full and keyed != old.state_hash()
        new.raw_connection.execute("DELETE FROM entry_keys")
        new.raw_connection.execute("DELETE FROM entries WHERE amount = 8")
        new.raw_connection.commit()
        assert new.state_hash() == old.state_hash()
        assert canonical_state_hash(new.raw_connection, _After.metadata) == old.state_hash()
