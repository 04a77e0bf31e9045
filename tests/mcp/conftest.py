"""Shared fixtures for the MCP tests: trajectories, direct replays, a served process."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import String, bindparam, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from prove_gym import SampleContext, Server, ToolContext
from prove_gym.mcp import STATE_HASH_TOOL
from prove_gym.server import NotFound, Query, ToolResult
from prove_gym.testing.served import ServedHTTP

SEED = 7

Step = tuple[str, dict[str, Any]]


# --------------------------------------------------------------- trajectories
def write_trajectory(i: int) -> list[Step]:
    """A write-heavy calendar trajectory, different for every ``i``.

    ``"$k.field"`` stands for ``field`` of step ``k``'s result, so the same steps
    run against any state (each session numbers its new events itself).
    """
    day = f"2026-05-{i % 27 + 1:02d}"
    existing = f"evt_{i * 7 % 290 + 1:04d}"
    return [
        ("create_event", {"calendar_id": "cal_01", "title": f"Sync {i}", "start": f"{day}T09:00"}),
        ("add_invitee", {"event_id": "$0.event_id", "email": f"guest{i}@example.com"}),
        ("update_event", {"event_id": "$0.event_id", "title": f"Sync {i} (moved)"}),
        ("add_reminder", {"event_id": "$0.event_id", "minutes_before": 5 + i}),
        (
            "create_event",
            {"calendar_id": "cal_02", "title": f"Lunch {i}", "start": f"{day}T12:00"},
        ),
        ("delete_event", {"event_id": "$4.event_id"}),
        ("update_event", {"event_id": existing, "location": f"Room {i}"}),
        ("add_invitee", {"event_id": "evt_9999", "email": "nobody@example.com"}),
        ("create_event", {"calendar_id": "cal_01", "title": 42}),
    ]


def resolve(arguments: dict[str, Any], contents: list[Any]) -> dict[str, Any]:
    """Replace ``"$k.field"`` values with ``contents[k][field]``."""
    out = {}
    for key, value in arguments.items():
        if isinstance(value, str) and re.fullmatch(r"\$\d+\.\w+", value):
            index, field = value[1:].split(".")
            value = contents[int(index)][field]
        out[key] = value
    return out


def replay_direct(
    server: Server, steps: list[Step], seed: int = SEED
) -> tuple[list[ToolResult], str]:
    """Run ``steps`` on a fresh in-process session: (results, final state hash)."""
    with server.session(seed) as session:
        results: list[ToolResult] = []
        for name, arguments in steps:
            results.append(session.call(name, resolve(arguments, [r.content for r in results])))
        return results, session.state_hash()


async def run_over_mcp(client: Any, steps: list[Step]) -> tuple[list[Any], str]:
    """Run ``steps`` through an MCP client: (CallToolResults, final state hash)."""
    results: list[Any] = []
    contents: list[Any] = []
    for name, arguments in steps:
        result = await client.call_tool(name, resolve(arguments, contents))
        results.append(result)
        content = result.structured_content
        contents.append(content if not result.is_error else None)
    digest = await client.call_tool(STATE_HASH_TOOL, {})
    return results, digest.structured_content["state_hash"]


@pytest.fixture(scope="session")
def trajectory() -> Callable[[int], list[Step]]:
    return write_trajectory


@pytest.fixture(scope="session")
def direct() -> Callable[..., tuple[list[ToolResult], str]]:
    return replay_direct


@pytest.fixture(scope="session")
def over_mcp() -> Callable[..., Any]:
    return run_over_mcp


# ------------------------------------------------------- a second tiny server
class NotesBase(DeclarativeBase):
    pass


class Note(NotesBase):
    __tablename__ = "notes"
    id: Mapped[str] = mapped_column(String, primary_key=True)
    text: Mapped[str] = mapped_column(String)


def _sample_notes(ctx: SampleContext) -> None:
    for n in range(1, 4):
        ctx.db.add(Note(id=f"note_{n}", text=ctx.fake.sentence()))


notes = Server("notes", version="1.0", base=NotesBase, sampler=_sample_notes)
_COUNT = Query(select(func.count()).select_from(Note))
_NOTE = Query(select(Note.id, Note.text).where(Note.id == bindparam("id")))


@notes.tool(writes=True, phrasings=["Write a note saying {text}"])
def add_note(ctx: ToolContext, text: str) -> dict:
    """Add a note.

    Args:
        text: What the note says, such as "buy milk".
    """
    note_id = f"note_{ctx.sql.scalar(_COUNT) + 1}"
    ctx.sql.insert(Note, id=note_id, text=text)
    return {"note_id": note_id, "text": text}


@notes.tool(phrasings=["Read note {note_id}"])
def get_note(ctx: ToolContext, note_id: str) -> dict:
    """Read one note.

    Args:
        note_id: The note, such as "note_1".
    """
    note = ctx.sql.first(_NOTE, id=note_id)
    if note is None:
        raise NotFound(f"No note {note_id!r}; notes are numbered note_1, note_2, ...")
    return {"note_id": note.id, "text": note.text}


@notes.tool(hidden=True)
def count_notes(ctx: ToolContext) -> dict:
    """How many notes exist (a hidden helper)."""
    return {"count": ctx.sql.scalar(_COUNT)}


@pytest.fixture(scope="session")
def notes_server() -> Server:
    return notes


# ------------------------------------------------------------ served processes
class ServedProcess(ServedHTTP):
    """``prove-gym serve ... --transport http --port 0`` in a subprocess, with health checks."""

    def health(self) -> dict[str, Any]:
        return httpx.get(self.url("/health"), timeout=5).json()

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 15) -> dict:
        """Poll ``/health`` until ``predicate`` holds (bounded)."""
        deadline = time.monotonic() + timeout
        while True:
            health = self.health()
            if predicate(health):
                return health
            if time.monotonic() > deadline:
                raise TimeoutError(f"health never matched: {health}")
            time.sleep(0.05)


@contextmanager
def served(*args: str) -> Iterator[ServedProcess]:
    process = ServedProcess(list(args))
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="session")
def serve_http() -> Callable[..., Any]:
    """``with serve_http("calendar", "--seed", "7") as proc:`` -> a running server."""
    return served
