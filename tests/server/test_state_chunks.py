"""A table's canonical bytes written by SQLite (``json_array``) are Python's, byte for byte.

The state hash is defined by Python's ``json.dumps`` of every table (see
:mod:`prove_gym.server.state`); where SQLite can write the same text in C it does, and
where it might not (a real, a blob, a character past ``~``) Python writes it. Either way
the bytes must be the definition's: these tests compare them with it, on values chosen to
differ and on every server's sampled states.
"""

from __future__ import annotations

import math
import sqlite3
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Column, Integer, MetaData, Table
from sqlalchemy.types import NullType

import prove_gym
from prove_gym.server.state import HashBase, TableRows, _hashed, _python_chunk, _table_chunk

_TYPES = ("INTEGER", "VARCHAR(20)", "TEXT", "DATETIME", "FLOAT", "NUMERIC", "BLOB", "")
"""Declared column types of every SQLite affinity (the last: none)."""

_VALUES = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(st.characters(codec="utf-8"), max_size=12),  # any text SQLite takes
    st.text(st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=12),  # ASCII, DEL
    st.binary(max_size=6),
    st.sampled_from(["1.5", "10", "2026-01-02 03:04:05.000000", "0.30000000000000004"]),
)


def _table(types: list[str]) -> tuple[sqlite3.Connection, MetaData]:
    metadata = MetaData()
    columns = [Column(f"c{k}", NullType()) for k in range(len(types))]
    Table("t", metadata, Column("id", Integer, primary_key=True), *columns)
    conn = sqlite3.connect(":memory:")
    declared = "".join(f', "c{k}" {t}' for k, t in enumerate(types))
    conn.execute(f'CREATE TABLE "t" ("id" INTEGER NOT NULL PRIMARY KEY{declared})')
    return conn, metadata


@settings(max_examples=150, deadline=None)
@given(
    types=st.lists(st.sampled_from(_TYPES), min_size=1, max_size=4),
    rows=st.lists(st.lists(_VALUES, min_size=4, max_size=4), max_size=6),
)
def test_a_tables_bytes_are_pythons_whatever_it_holds(
    types: list[str], rows: list[list[Any]]
) -> None:
    conn, metadata = _table(types)
    marks = ", ".join("?" for _ in range(len(types) + 1))
    for k, row in enumerate(rows):
        conn.execute(f'INSERT INTO "t" VALUES ({marks})', [k, *row[: len(types)]])
    expected = _python_chunk(conn, metadata, "t")
    assert _table_chunk(conn, metadata, "t") == expected
    chunk, table_rows = TableRows.of(conn, metadata, "t")
    assert chunk == expected
    if table_rows is not None:  # each row where the splice expects it
        assert table_rows.chunk[table_rows.starts[-1] - 1 :] == b"]]"
        assert len(table_rows.keys) == len(rows)


@pytest.mark.parametrize(
    ("value", "by_sqlite"),
    [
        ('plain ascii, "quoted" and \\ back', True),
        ("tab\there, newline\n and \x01", True),
        ("caf\u00e9", False),  # Python escapes it, SQLite would not
        ("del\x7f", False),
        (0.30000000000000004, False),  # SQLite would write 0.3
        (b"\x00\xff", False),  # SQLite refuses a blob
        (12, True),
        (None, True),
    ],
)
def test_sqlite_writes_the_text_only_where_it_is_pythons(value: Any, by_sqlite: bool) -> None:
    from prove_gym.server.state import _sqlite_rows

    conn, metadata = _table(["NUMERIC"])
    conn.execute('INSERT INTO "t" VALUES (1, ?)', (value,))
    found = _sqlite_rows(conn, metadata, "t")
    assert (found is not None) == by_sqlite
    assert _table_chunk(conn, metadata, "t") == _python_chunk(conn, metadata, "t")


def test_a_real_in_a_text_column_is_text_and_sqlite_writes_it() -> None:
    conn, metadata = _table(["TEXT"])
    conn.execute('INSERT INTO "t" VALUES (1, ?)', (math.pi,))  # stored as the text '3.14...'
    assert conn.execute('SELECT typeof("c0") FROM "t"').fetchone()[0] == "text"
    assert _table_chunk(conn, metadata, "t") == _python_chunk(conn, metadata, "t")


@pytest.mark.parametrize("name", prove_gym.get_registry().server_names)
def test_every_servers_states_hash_to_pythons_bytes(name: str) -> None:
    server = prove_gym.get_server(name)
    metadata = server.base.metadata
    for seed in (0, 7):
        conn = server.template(seed).connect()
        try:
            base = HashBase.of(conn, metadata)
            for table, chunk in zip(base.names, base.chunks, strict=True):
                # as hashed: an empty table added later (added_later()) counts for nothing
                expected = _hashed(metadata, table, _python_chunk(conn, metadata, table))
                assert chunk == expected, (name, seed, table)
        finally:
            conn.close()
