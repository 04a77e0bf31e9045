"""A sampled state starts from a copy of its server's empty schema: the bytes its DDL writes."""

from __future__ import annotations

import hashlib
import multiprocessing
import sqlite3

import pytest

from prove_gym import Server
from prove_gym.server.base import _schema_statements
from prove_gym.server.state import create_change_log


def _ddl_written(server: Server) -> bytes:
    conn = sqlite3.connect(":memory:")
    for statement in _schema_statements(server.base.metadata):
        conn.execute(statement)
    create_change_log(conn, server.base.metadata)
    data = conn.serialize()
    conn.close()
    return data


def test_a_state_starts_from_the_bytes_its_ddl_writes(calendar: Server) -> None:
    """Pages, header and schema cookie (which a backup would otherwise set to 1), for the
    first copy and every later one."""
    expected = _ddl_written(calendar)
    for _ in range(2):
        conn = sqlite3.connect(":memory:")
        calendar._start_state(conn)
        assert conn.serialize() == expected
        conn.close()


def _sample_digest(server: Server, seed: int) -> str:
    return hashlib.sha256(server.sample(seed, 1).data).hexdigest()


def _child(server: Server, seed: int, out: multiprocessing.Queue[str]) -> None:
    out.put(_sample_digest(server, seed))


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs the fork start method"
)
def test_a_forked_process_samples_the_same_bytes(calendar: Server) -> None:
    """A process forked after its parent sampled makes its own copy of the empty schema
    (SQLite connections must not cross a fork) and samples the same state."""
    parent = _sample_digest(calendar, 5)
    ctx = multiprocessing.get_context("fork")
    out: multiprocessing.Queue[str] = ctx.Queue()
    child = ctx.Process(target=_child, args=(calendar, 5, out))
    child.start()
    got = out.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0 and got == parent
