"""Sessions: isolated clones of a seeded template, structured errors, atomic writes."""

from __future__ import annotations

import datetime as dt
import sqlite3
from typing import Annotated

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Integer, String, bindparam, delete, select, update
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from prove_gym import Entity, ErrorKind, SampleContext, Server, Session, ToolContext
from prove_gym.server import Query, Record


def test_two_sessions_from_one_seed_start_identical_and_diverge_independently(
    calendar: Server,
) -> None:
    a, b = calendar.session(seed=3), calendar.session(seed=3)
    assert a.state_hash() == b.state_hash()
    created = a.call(
        "create_event", {"calendar_id": "cal_01", "title": "Only in A", "start": "2026-05-01T10:00"}
    )
    assert created.ok, created
    assert a.state_hash() != b.state_hash()
    found_in_b = b.call("search_events", {"query": "Only in A"})
    assert found_in_b.ok and found_in_b.content == []
    assert calendar.session(seed=3).state_hash() == b.state_hash()


def test_different_seeds_give_different_states_and_times(calendar: Server) -> None:
    s1, s2 = calendar.session(seed=1), calendar.session(seed=2)
    assert s1.state_hash() != s2.state_hash()
    assert s1.now != s2.now or s1.state_hash() != s2.state_hash()


def test_sampling_is_reproducible_from_scratch(calendar: Server) -> None:
    """The cache is not what makes states equal: sampling twice gives the same bytes' hash."""
    t1 = calendar.sample(seed=11)
    t2 = calendar.sample(seed=11)
    s1 = calendar.session(seed=11)
    assert t1.now == t2.now
    conn1, conn2 = t1.connect(), t2.connect()
    from prove_gym.server.state import canonical_state_hash

    h1 = canonical_state_hash(conn1, calendar.base.metadata)
    assert h1 == canonical_state_hash(conn2, calendar.base.metadata) == s1.state_hash()


def test_state_hash_is_pinned_for_a_known_seed(calendar: Server) -> None:
    """Same seed, same state on any machine: the calendar's hand-written tasks pin their hashes."""
    import prove_gym

    task = prove_gym.get_registry().tasks("calendar")[0]
    _, final = prove_gym.gold_replay(task)
    assert final == task.final_state_hash


@pytest.mark.parametrize(
    ("name", "args", "kind", "needle"),
    [
        ("no_such_tool", {}, ErrorKind.UNKNOWN_TOOL, "Did you mean"),
        ("get_event", {}, ErrorKind.BAD_ARGUMENTS, "'event_id' is required"),
        ("get_event", {"event_id": 42}, ErrorKind.BAD_ARGUMENTS, "valid string"),
        ("get_event", {"event_id": "evt_0001", "x": 1}, ErrorKind.BAD_ARGUMENTS, "not a parameter"),
        ("get_event", ["evt_0001"], ErrorKind.BAD_ARGUMENTS, "must be a JSON object"),
        ("get_event", {"event_id": "evt_9999"}, ErrorKind.NOT_FOUND, "search_events"),
        (
            "find_free_slot",
            {"date": "soon", "duration_minutes": 30},
            ErrorKind.BAD_ARGUMENTS,
            "2026-03-03",
        ),
    ],
)
def test_bad_input_comes_back_as_an_actionable_error(
    calendar: Server, name: str, args: object, kind: ErrorKind, needle: str
) -> None:
    session = calendar.session(seed=0)
    before = session.state_hash()
    result = session.call(name if name != "no_such_tool" else "get_evnt", args)
    assert not result.ok
    assert result.error_kind == kind
    assert needle in (result.message or "")
    assert session.state_hash() == before


def test_a_failed_write_leaves_no_partial_change(calendar: Server) -> None:
    """update_event assigns the new start before it validates the calendar: all of it rolls back."""
    session = calendar.session(seed=0)
    before = session.state_hash()
    event = session.call("get_event", {"event_id": "evt_0001"}).content
    result = session.call(
        "update_event",
        {"event_id": "evt_0001", "start": "2026-09-09T09:00", "calendar_id": "cal_99"},
    )
    assert result.error_kind == ErrorKind.NOT_FOUND
    assert session.state_hash() == before
    assert session.call("get_event", {"event_id": "evt_0001"}).content == event


def test_reset_restores_the_initial_state(calendar: Server) -> None:
    session = calendar.session(seed=5)
    initial = session.state_hash()
    assert session.call("delete_event", {"event_id": "evt_0002"}).ok
    assert session.state_hash() != initial
    session.reset()
    assert session.state_hash() == initial
    assert session.call("get_event", {"event_id": "evt_0002"}).content["status"] in (
        "confirmed",
        "cancelled",
    )


def test_snapshot_and_restore_round_trip(calendar: Server) -> None:
    session = calendar.session(seed=5)
    session.call("add_reminder", {"event_id": "evt_0003", "minutes_before": 10})
    snap, mid = session.snapshot(), session.state_hash()
    session.call("delete_event", {"event_id": "evt_0004"})
    session.restore(snap)
    assert session.state_hash() == mid


def test_a_closed_session_refuses_calls(calendar: Server) -> None:
    session = calendar.session(seed=0)
    session.close()
    session.close()
    with pytest.raises(RuntimeError, match="closed"):
        session.call("list_calendars", {})


class _Base(DeclarativeBase):
    pass


class _Row(_Base):
    __tablename__ = "rows"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(20))


def test_a_bug_in_a_tool_is_reported_not_raised_and_rolled_back() -> None:
    Base, Row = _Base, _Row
    server = Server(
        "buggy", version="0", base=Base, sampler=lambda ctx: ctx.db.add(Row(id=1, name="a"))
    )

    @server.tool(writes=True)
    def rename_then_crash(ctx: ToolContext, name: str) -> None:
        """Renames row 1, then hits a bug."""
        ctx.sql.run(_RENAME, id=1, name=name)
        raise ZeroDivisionError("boom")

    @server.tool
    def sneaky_read(ctx: ToolContext) -> str:
        """Declared read-only, but writes."""
        ctx.sql.run(_RENAME, id=1, name="changed")
        return "ok"

    session = server.session(seed=0)
    before = session.state_hash()
    result = session.call("rename_then_crash", {"name": "b"})
    assert result.error_kind == ErrorKind.INTERNAL and "ZeroDivisionError" in result.message
    assert "boom" not in result.message  # an exception's text may hold paths or SQL
    assert session.state_hash() == before
    assert session.call("sneaky_read", {}).ok
    assert session.state_hash() == before, "a read tool's writes must never be committed"


_RENAME = Query(update(_Row).where(_Row.id == bindparam("id")).values(name=bindparam("name")))
_NAMES = Query(select(_Row.name).order_by(_Row.id))


def test_changes_a_read_makes_never_reach_a_later_write() -> None:
    def sample(ctx: SampleContext) -> None:
        ctx.db.add_all([_Row(id=1, name="a"), _Row(id=2, name="b")])

    server = Server("careless", version="0", base=_Base, sampler=sample)

    @server.tool
    def careless_read(ctx: ToolContext) -> str:
        """Declared read-only, but changes, deletes and adds rows."""
        ctx.sql.run(_RENAME, id=1, name="changed")
        ctx.sql.run(Query(delete(_Row).where(_Row.id == 2)))
        ctx.sql.insert(_Row, id=3, name="new")
        return "ok"

    @server.tool(writes=True)
    def add_row(ctx: ToolContext, name: str) -> str:
        """Adds a row."""
        ctx.sql.insert(_Row, id=4, name=name)
        return "ok"

    session, expected = server.session(seed=0), server.session(seed=0)
    assert session.call("careless_read", {}).ok
    assert session.call("add_row", {"name": "d"}).ok
    assert expected.call("add_row", {"name": "d"}).ok
    assert session.state_hash() == expected.state_hash()


def test_a_tool_that_swallows_a_failed_write_leaves_the_next_call_working() -> None:
    server = Server(
        "swallowing", version="0", base=_Base, sampler=lambda ctx: ctx.db.add(_Row(id=1, name="a"))
    )

    @server.tool(writes=True)
    def swallowing_write(ctx: ToolContext) -> str:
        """Adds a row, then one whose key is taken; catches the failure and carries on."""
        ctx.sql.insert(_Row, id=2, name="b")
        try:
            ctx.sql.insert(_Row, id=1, name="again")
        except sqlite3.IntegrityError as exc:
            return type(exc).__name__
        return "inserted"

    @server.tool
    def names(ctx: ToolContext) -> list[str]:
        """The rows' names."""
        return list(ctx.sql.scalars(_NAMES))

    session = server.session(seed=0)
    assert session.call("swallowing_write", {}).content == "IntegrityError"
    assert session.call("names", {}).content == ["a", "b"]  # what it wrote before stands


def test_list_entities_reads_real_state_and_never_writes(calendar: Server) -> None:
    session = calendar.session(seed=0)
    before = session.state_hash()
    events = session.list_entities("event")
    assert events and all(
        session.call("get_event", {"event_id": e["event_id"]}).ok for e in events[:5]
    )
    assert session.state_hash() == before
    with pytest.raises(KeyError):
        session.list_entities("unicorn")


def _nested(depth: int) -> list:
    value: list = ["deep"]
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("x" * 10_001, "longer than 10000"),
        (chr(0xD800), "lone surrogate"),
        (list(range(6_000)), "more than 5000 values"),
        (_nested(20), "nested more than 16"),
    ],
)
def test_hostile_argument_values_are_bad_arguments_before_any_tool_runs(
    calendar, value, problem
) -> None:
    session = calendar.session(seed=3)
    before = session.state_hash()
    result = session.call("search_events", {"query": value})
    assert result.error_kind == "bad_arguments" and problem in result.message
    assert session.state_hash() == before


class _NotesBase(DeclarativeBase):
    pass


class _Note(_NotesBase):
    __tablename__ = "notes"
    id: Mapped[str] = mapped_column(String, primary_key=True)


def _sample_notes(ctx: SampleContext) -> None:
    ctx.db.add(_Note(id="n_1"))


_NOTES = Server("optional_rows", version="1", base=_NotesBase, sampler=_sample_notes)


@_NOTES.entity("note", key="note_id", model=_Note, not_found="Call list_notes.")
def _notes(ctx: ToolContext) -> list[dict]:
    return []


@_NOTES.tool(phrasings=["Show {note_id}", "Open {note_id}"])
def show(ctx: ToolContext, note_id: Annotated[Record[_Note] | None, Entity("note")] = None) -> str:
    """Show a note, or say there is none.

    Args:
        note_id: The note, such as "n_1".
    """
    return note_id.id if note_id is not None else "none"


def test_a_row_parameter_may_be_optional() -> None:
    session = _NOTES.session()
    assert _NOTES.tools["show"].input_schema()["properties"]["note_id"]["type"] == "string"
    assert session.call("show", {}).content == "none"
    assert session.call("show", {"note_id": "n_1"}).content == "n_1"
    missing = session.call("show", {"note_id": "n_2"})
    assert missing.message == "No note with id 'n_2'. Call list_notes."


@pytest.mark.parametrize("annotation", [_Note, _Note | None, list[_Note]])
def test_a_tool_taking_orm_objects_is_refused_with_the_record_form(annotation: object) -> None:
    server = Server("objects", version="1", base=_NotesBase, sampler=_sample_notes)

    def peek(ctx: ToolContext, note_id: str) -> str:
        """Peek at a note.

        Args:
            note_id: The note, such as "n_1".
        """
        return "n"

    peek.__annotations__["note_id"] = Annotated[annotation, Entity("note")]
    with pytest.raises(TypeError, match=r"Annotated\[Record\[_Note\], Entity"):
        server.tool(peek)


_ACTIONS = st.lists(
    st.one_of(
        st.tuples(st.just("gold"), st.integers(0, 10_000)),  # the next gold step of a task
        st.tuples(st.just("bad_write"), st.integers(0, 10_000)),  # a write that fails
        st.tuples(st.just("orm_write"), st.integers(0, 10_000)),  # a direct write (tests do)
        st.tuples(st.just("restore"), st.integers(0, 10_000)),  # back to an earlier snapshot
        st.tuples(st.just("reset"), st.integers(0, 10_000)),
        st.tuples(st.just("foreign"), st.integers(0, 10_000)),  # another seed's state restored
        st.tuples(st.just("undone"), st.integers(0, 10_000)),  # a raw write rolled back
    ),
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(task_index=st.integers(0, 10_000), actions=_ACTIONS)
def test_the_cached_state_hash_always_equals_the_hash_computed_afresh(
    calendar: Server, task_index: int, actions: list[tuple[str, int]]
) -> None:
    """A session answers an unchanged template state from its template's cached hash and
    re-reads only the rows its change log names; after any mix of writes, failed writes,
    raw writes kept or rolled back, restores (of its own snapshots or another seed's state)
    and resets it must still equal a full hash."""
    from prove_gym import get_registry
    from prove_gym.server.state import canonical_state_hash

    tasks = [t for t in get_registry().tasks("calendar") if t.servers == ["calendar"]]
    task = tasks[task_index % len(tasks)]
    steps = [s for turn in task.turns for s in turn.steps]
    session = calendar.session(task.seed, task.size)
    snapshots = [session.snapshot()]
    done = 0
    for kind, n in actions:
        if kind == "gold" and steps:
            step = steps[done % len(steps)]
            done += 1
            session.call(step.name, step.arguments)
        elif kind == "bad_write":
            assert not session.call("delete_event", {"event_id": f"evt_{9000 + n % 99}"}).ok
        elif kind == "orm_write":
            session.raw_connection.execute("UPDATE calendars SET name = name || 'x'")
        elif kind == "restore":
            session.restore(snapshots[n % len(snapshots)])
        elif kind == "reset":
            session.reset()
        elif kind == "foreign":  # its change log is another template's: hashed in full
            session.restore(calendar.template(task.seed + 1 + n % 2, task.size).data)
        elif kind == "undone":
            raw = session.raw_connection
            raw.execute("DELETE FROM events")
            raw.rollback()
        snapshots.append(session.snapshot())
        fresh = canonical_state_hash(session.raw_connection, calendar.base.metadata)
        assert session.state_hash() == fresh
    session.close()


def test_the_change_log_names_exactly_the_tables_written(calendar: Server) -> None:
    """The log travels in the state's bytes: empty in the template, a table named once a row
    of it changes (by a tool or raw SQL), nothing left by a rolled-back write or a read."""
    from prove_gym.server.state import changed_tables

    session = calendar.session(seed=5)
    raw, key = session.raw_connection, session.template.log_key
    assert changed_tables(raw, key) == frozenset()
    assert session.call("list_calendars", {}).ok
    assert not session.call("delete_event", {"event_id": "evt_9999"}).ok
    assert changed_tables(raw, key) == frozenset()
    created = session.call(
        "create_event", {"calendar_id": "cal_01", "title": "Log me", "start": "2026-05-01T10:00"}
    )
    assert created.ok, created
    assert changed_tables(raw, key) == frozenset({"events"})
    raw.execute("UPDATE calendars SET name = name || '!'")
    raw.commit()
    assert changed_tables(raw, key) == frozenset({"events", "calendars"})
    assert changed_tables(raw, calendar.template(seed=6).log_key) is None  # not its template
    session.reset()
    assert changed_tables(raw, key) == frozenset()
    session.close()


def test_a_closed_sessions_database_serves_the_next_session_from_its_own_template(
    calendar: Server,
) -> None:
    """Closing gives the database back to the server; the next session refills it from its
    own template, so nothing of the closed session's writes or seed survives in it."""
    from prove_gym.server.base import IDLE_STATES

    first = calendar.session(seed=21)
    assert first.call(
        "create_event",
        {"calendar_id": "cal_01", "title": "Left behind", "start": "2026-05-01T10:00"},
    ).ok
    raw = first.raw_connection
    first.close()
    with pytest.raises(RuntimeError, match="closed"):
        first.call("list_calendars", {})
    with pytest.raises(RuntimeError, match="closed"):
        first.state_hash()
    second = calendar.session(seed=22)
    assert second.raw_connection is raw  # the same database, refilled
    assert second.state_hash() == calendar.template(seed=22).canonical_hash(calendar.base.metadata)
    found = second.call("search_events", {"query": "Left behind"})
    assert found.ok and found.content == []
    second.close()
    many = [calendar.session(seed=23) for _ in range(IDLE_STATES + 3)]
    for s in many:
        s.close()
    assert len(calendar._idle) == IDLE_STATES  # bounded: the rest are really closed


def test_a_database_left_as_its_template_is_taken_as_it_is_and_any_other_is_refilled(
    calendar: Server,
) -> None:
    """A session that changed no row leaves its database holding its template exactly: the
    next session of that template takes it without copying the bytes again. A write, even
    one refused and rolled back, or a schema change, makes the next session refill it."""
    template = calendar.template(seed=31)
    clean = template.canonical_hash(calendar.base.metadata)
    new_event = {"calendar_id": "cal_01", "title": "Stays?", "start": "2026-05-01T10:00"}

    def next_session_after(play) -> Session:
        first = calendar.session(seed=31)
        play(first)
        raw = first.raw_connection
        first.close()
        second = calendar.session(seed=31)
        assert second.raw_connection is raw
        return second

    def read(s: Session) -> None:
        assert s.call("list_calendars", {}).ok

    def write(s: Session) -> None:
        assert s.call("create_event", new_event).ok

    def refused(s: Session) -> None:  # rolled back: SQLite still counts the change
        assert not s.call("create_event", {**new_event, "end": "2026-04-01T10:00"}).ok

    def ddl(s: Session) -> None:  # SQLite counts no change for it
        s.raw_connection.execute("CREATE TABLE scratch (x INTEGER)")

    for play in (read, write, refused, ddl):
        second = next_session_after(play)
        assert second.state_hash() == clean, play.__name__
        assert second.call("search_events", {"query": "Stays?"}).content == [], play.__name__
        tables = second.raw_connection.execute(
            "SELECT name FROM sqlite_master WHERE name = 'scratch'"
        ).fetchall()
        assert tables == [], play.__name__
        second.close()


def test_reset_gives_back_the_template_exactly_whatever_the_session_did(calendar: Server) -> None:
    """After reads only, reset keeps the database as it is (it holds the template's bytes);
    after a write, a refused write, a schema change or ORM objects left pending, it is
    the template again, byte for byte, with nothing pending."""
    template = calendar.template(seed=32)
    new_event = {"calendar_id": "cal_01", "title": "Stays?", "start": "2026-05-01T10:00"}
    (event,) = [m.class_ for m in calendar.base.registry.mappers if m.local_table.name == "events"]

    def read(s: Session) -> None:
        assert s.call("list_calendars", {}).ok

    def write(s: Session) -> None:
        assert s.call("create_event", new_event).ok

    def refused(s: Session) -> None:
        assert not s.call("create_event", {**new_event, "end": "2026-04-01T10:00"}).ok

    def ddl(s: Session) -> None:  # (its own text: sqlite3 caches statements by their text)
        s.raw_connection.execute("CREATE TABLE scratch_of_reset (x INTEGER)")

    def pending(s: Session) -> None:  # added, never flushed: no row changed yet
        at = dt.datetime(2026, 5, 1, 10)
        s.db.add(event(id="evt_9999", calendar_id="cal_01", title="Stays?", start=at, end=at))

    session = calendar.session(seed=32)
    for play in (read, write, refused, ddl, pending, read):
        play(session)
        session.reset()
        session.db.flush()  # nothing of the play is left to write
        assert session.snapshot() == template.data, play.__name__
        assert session.call("create_event", new_event).ok  # a write of its own, then back
        session.reset()
        assert session.snapshot() == template.data, play.__name__
        found = session.call("search_events", {"query": "Stays?"}).content
        assert found == [], play.__name__


def test_every_state_of_a_server_shares_one_schema_layout(calendar: Server) -> None:
    """Seeds and sizes differ in rows only: one idle database serves them all (the change log
    is created with the tables, before any row, so its root page never moves)."""
    layouts = {calendar.template(seed, size).layout for seed in (0, 1, 2) for size in (1, 2)}
    assert len(layouts) == 1
    small = calendar.session(seed=31, size=1)
    raw = small.raw_connection
    assert small.call(
        "search_events", {"query": "e"}
    ).ok  # statements now cached on this connection
    small.close()
    large = calendar.session(seed=32, size=2)
    assert large.raw_connection is raw
    from prove_gym.server.state import canonical_state_hash

    expected = calendar.template(seed=32, size=2).canonical_hash(calendar.base.metadata)
    assert canonical_state_hash(raw, calendar.base.metadata) == expected
    assert large.call("search_events", {"query": "e"}).ok
    large.close()


def test_bytes_of_another_layout_get_a_connection_of_their_own(calendar: Server) -> None:
    """SQLite re-prepares a cached statement only when the schema cookie changed; bytes whose
    schema differs are therefore never loaded into a connection that cached statements."""
    session = calendar.session(seed=33)
    assert session.call("list_calendars", {}).ok
    other = calendar.template(seed=33).connect()
    other.execute("CREATE TABLE scratch_notes (id INTEGER PRIMARY KEY, body TEXT)")
    other.commit()
    changed = other.serialize()
    before = session.raw_connection
    session.restore(changed)
    assert session.raw_connection is not before
    assert session.call("list_calendars", {}).ok
    session.reset()
    assert session.state_hash() == calendar.template(seed=33).canonical_hash(calendar.base.metadata)
    session.close()


@pytest.mark.parametrize(
    ("server", "tool", "arguments", "shown"),
    [
        ("email", "create_label", {"mailbox_id": "mbx_01", "name": "!Urgent"}, "[A-Za-z0-9]"),
        ("travel_booking", "book_flight", {"seat": "99Z"}, "[A-Fa-f]"),
        ("banking", "get_exchange_rate", {"from_currency": "usd", "to_currency": "EUR"}, "'USD'"),
    ],
)
def test_a_bad_argument_message_keeps_the_case_of_patterns_and_values(
    server: str, tool: str, arguments: dict, shown: str
) -> None:
    import prove_gym

    with prove_gym.get_server(server).session(seed=0) as session:
        result = session.call(tool, arguments)
    assert result.error_kind == ErrorKind.BAD_ARGUMENTS
    assert shown in result.message, result.message  # "[a-fa-f]" would tell the model nothing


def test_a_long_bad_value_is_shown_shortened() -> None:
    import prove_gym

    with prove_gym.get_server("email").session(seed=0) as session:
        result = session.call("create_label", {"mailbox_id": "mbx_01", "name": "!" + "x" * 500})
    assert "(got '!xxx" in result.message and "...)" in result.message
    assert len(result.message) < 600


@pytest.mark.parametrize(
    ("server", "tool", "arguments"),
    [
        ("iot_devices", "get_device", {"device_id": " dev_0001 "}),
        ("calendar", "get_event", {"event_id": "evt_0001\t"}),
    ],
)
def test_an_entity_id_with_surrounding_space_names_the_same_entity(
    server: str, tool: str, arguments: dict
) -> None:
    import prove_gym

    with prove_gym.get_server(server).session(seed=0) as session:
        sloppy = session.call(tool, arguments)
        exact = session.call(tool, {k: v.strip() for k, v in arguments.items()})
    assert sloppy.ok and sloppy.content == exact.content
