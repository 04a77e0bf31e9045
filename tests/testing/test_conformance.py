"""The conformance kit: a well-formed server passes it, a broken one fails naming the tool."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field
from sqlalchemy import String, bindparam, select, update
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from prove_gym import Registry, Task, gold_replay, hookimpl
from prove_gym.server import (
    Entity,
    EnvVersion,
    NotFound,
    PreconditionFailed,
    Query,
    Record,
    SampleContext,
    Server,
    Session,
    ToolContext,
    TypedDict,
    added_later,
    next_id,
)
from prove_gym.testing.conformance import (
    check_call_sequences,
    check_fuzz,
    check_gymnasium,
    check_output_schema,
    check_phrasings,
    check_sampler_determinism,
    check_server_contract,
    check_task,
    check_tool_contract,
    conformance_suite,
)

TAGS = ["home", "work", "ideas"]


class Base(DeclarativeBase):
    pass


class Note(Base):
    __tablename__ = "notes"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    tag: Mapped[str] = mapped_column(String(16))


def sample_notes(ctx: SampleContext) -> None:
    for i in range(1, 31):
        title = ctx.fake.sentence(nb_words=3).rstrip(".")
        ctx.db.add(Note(id=f"note_{i:03d}", title=title, tag=ctx.rng.choice(TAGS)))


def sample_notes_in_hash_order(ctx: SampleContext) -> None:
    """Broken: the ids follow the iteration order of a set of strings (``PYTHONHASHSEED``)."""
    for i, word in enumerate({"alpha", "bravo", "charlie", "delta", "echo", "foxtrot"}):
        ctx.db.add(Note(id=f"note_{i + 1:03d}", title=word, tag=ctx.rng.choice(TAGS)))


def sample_notes_ignoring_the_seed(ctx: SampleContext) -> None:
    """Broken: every seed gives the same notes."""
    for i in range(1, 6):
        ctx.db.add(Note(id=f"note_{i:03d}", title=f"Note {i}", tag="home"))


class NoteOut(TypedDict):
    note_id: str
    title: str
    tag: str


NoteRow = Annotated[Record[Note], Entity("note")]
NOTE_TAGS = Query(select(Note.id, Note.tag).order_by(Note.id))
NOTES = Note.__table__
TAG_NOTES = Query(select(NOTES).where(Note.tag == bindparam("tag")).order_by(Note.id))
RETITLE = Query(update(Note).where(Note.id == bindparam("id")).values(title=bindparam("title")))


def out(note: Any) -> NoteOut:
    return {"note_id": note.id, "title": note.title, "tag": note.tag}


def _listing(tag: str | None) -> Query:
    query = select(NOTES).order_by(Note.id).limit(bindparam("limit"))
    return Query(query if tag is None else query.where(Note.tag == bindparam("tag")))


LISTINGS = {tag: _listing(tag) for tag in (None, *TAGS)}


def notes_server(name: str = "notes", sampler: Any = sample_notes) -> Server:
    """A small well-formed server: one entity, typed results, a read and two writes."""
    server = Server(name, version="1.0", base=Base, sampler=sampler, description="Notes.")

    @server.entity("note", key="note_id", model=Note, not_found="Call list_notes to see them.")
    def notes(ctx: ToolContext) -> list[dict[str, Any]]:
        return [{"note_id": n.id, "tag": n.tag} for n in ctx.sql.all(NOTE_TAGS)]

    @server.tool(returns="note", phrasings=["Show me note {note_id}", "What is {note_id}?"])
    def get_note(ctx: ToolContext, note_id: NoteRow) -> NoteOut:
        """Read one note.

        Args:
            note_id: The note, such as "note_001".
        """
        return out(note_id)

    @server.tool(returns="note", phrasings=["List my {tag} notes", "Which notes are {tag}?"])
    def list_notes(
        ctx: ToolContext,
        tag: Literal["home", "work", "ideas"] | None = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 20,
    ) -> list[NoteOut]:
        """List notes, newest last.

        Args:
            tag: Only notes with this tag, such as "work".
            limit: At most this many notes, such as 10.
        """
        if tag is None:
            return [out(n) for n in ctx.sql.all(LISTINGS[None], limit=limit)]
        return [out(n) for n in ctx.sql.all(LISTINGS[tag], tag=tag, limit=limit)]

    @server.tool(
        writes=True,
        returns="note",
        phrasings=["Add a note called {title}", "Write down {title} under {tag}"],
        examples={"title": ["Groceries", "Call the bank"]},
    )
    def add_note(
        ctx: ToolContext,
        title: Annotated[str, Field(min_length=1, max_length=200)],
        tag: Literal["home", "work", "ideas"] = "home",
    ) -> NoteOut:
        """Add a note.

        Args:
            title: What the note says, such as "Groceries".
            tag: Its tag, such as "home".
        """
        note_id = next_id(ctx, Note.id, "note", 3)
        ctx.sql.insert(Note, id=note_id, title=title, tag=tag)
        return {"note_id": note_id, "title": title, "tag": tag}

    @server.tool(
        writes=True,
        returns="note",
        phrasings=["Tag {note_id} as {tag}", "Move {note_id} to {tag}"],
    )
    def retag_note(
        ctx: ToolContext,
        note_id: NoteRow,
        tag: Literal["home", "work", "ideas"],
    ) -> NoteOut:
        """Change a note's tag.

        Args:
            note_id: The note, such as "note_001".
            tag: The new tag, such as "work".
        """
        if note_id.tag == tag:
            raise PreconditionFailed(f"{note_id.id} is already tagged {tag}.")
        return out(ctx.sql.update(Note, note_id, tag=tag))

    return server


def registry_of(server: Server, tasks: Sequence[Task] = ()) -> Registry:
    class Plugin:
        @hookimpl
        def prove_gym_servers(self) -> list[Server]:
            return [server]

        @hookimpl
        def prove_gym_tasks(self, server: Server) -> list[Task]:
            return list(tasks)

    registry = Registry(load_entrypoints=False)
    registry.register(Plugin(), name=f"{server.name}-plugin")
    return registry


def notes_task(registry: Registry, *, server: str = "notes", recorded: str | None = None) -> Task:
    task = Task(
        id=f"{server}-001",
        servers=[server],
        seed=3,
        turns=[
            {
                "user": "Tag note_002 as ideas.",
                "steps": [
                    {"id": "s1", "name": "get_note", "arguments": {"note_id": "note_002"}},
                    {"id": "s2", "name": "add_note", "arguments": {"title": "Buy milk"}},
                ],
            }
        ],
    )
    if recorded is None:
        recorded = gold_replay(task, registry)[1]
    return task.model_copy(update={"final_state_hash": recorded})


def test_a_well_formed_server_passes_the_contract_phrasing_task_and_gymnasium_checks() -> None:
    server = notes_server()
    registry = registry_of(server)
    task = notes_task(registry)
    registry = registry_of(server, [task])
    check_server_contract(server)
    for tool in server.tools:
        check_tool_contract(server, tool)
        check_output_schema(server, tool)
        check_phrasings(server, tool)
    check_task(task, registry=registry)
    check_gymnasium(server, registry=registry)


class Others(DeclarativeBase):
    """Tables of the contract test below, apart from the notes server's (whose hashes and
    schema the other tests use)."""


class Pin(Others):
    """A table a later env version adds: no sampled state has a row of it."""

    __tablename__ = "pins"
    __table_args__ = added_later()
    note_id: Mapped[str] = mapped_column(String(16), primary_key=True)


class Stray(Others):
    """A table no version writes and the sampler leaves empty."""

    __tablename__ = "strays"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)


def test_only_an_entity_of_a_table_added_later_may_list_nothing_on_a_sampled_state() -> None:
    server = notes_server()

    @server.entity("pin", key="note_id", model=Pin, not_found="Call list_notes.")
    def pins(ctx: ToolContext) -> list[dict[str, Any]]:
        return []

    check_server_contract(server)  # a later version's pins: none is sampled, as expected

    @server.entity("stray", key="id", model=Stray, not_found="Call list_notes.")
    def strays(ctx: ToolContext) -> list[dict[str, Any]]:
        return []

    with pytest.raises(AssertionError, match="entity source 'stray' lists nothing") as failed:
        check_server_contract(server)
    assert "'pin'" not in str(failed.value)


def test_a_well_formed_server_keeps_its_invariants_through_random_call_sequences() -> None:
    server = notes_server()

    def tags_are_known(session: Session) -> list[str]:
        rows = session.raw_connection.execute("SELECT id, tag FROM notes").fetchall()
        return [f"{note} has tag {tag!r}" for note, tag in rows if tag not in TAGS]

    check_call_sequences(server, invariants=tags_are_known, max_examples=5, steps=10)


def test_a_well_formed_server_survives_hostile_and_fuzzed_arguments() -> None:
    server = notes_server()
    for tool in server.tools:
        check_fuzz(server, tool, samples=["note_001", "note_999"], max_examples=10)


def test_a_well_formed_server_samples_the_same_state_in_fresh_processes() -> None:
    server = notes_server()
    check_sampler_determinism(server, registry=registry_of(server))


def test_the_suite_is_a_test_class_with_a_test_per_tool_and_task() -> None:
    server = notes_server()
    registry = registry_of(server)
    registry = registry_of(server, [notes_task(registry)])
    suite = conformance_suite("notes", registry=registry, samples=["note_999"], max_examples=5)
    tests = {n for n in dir(suite) if n.startswith("test_")}
    assert {"test_fuzz", "test_output_schema", "test_call_sequences", "test_shipped_task"} < tests
    assert parametrized(suite, "test_fuzz").args[1] == [
        "get_note",
        "list_notes",
        "add_note",
        "retag_note",
    ]
    assert parametrized(suite, "test_shipped_task").kwargs["ids"] == ["notes-001"]
    instance = suite()
    instance.test_tool_contract("add_note")
    instance.test_shipped_task(registry.tasks("notes")[0])


def parametrized(suite: type, method: str) -> Any:
    [mark] = [m for m in getattr(suite, method).pytestmark if m.name == "parametrize"]
    return mark


# ------------------------------------------------------------- broken servers
def test_a_read_tool_that_commits_is_named_with_the_likely_cause() -> None:
    server = notes_server()

    @server.tool(returns="note", phrasings=["Peek at {note_id}", "Open {note_id}"])
    def peek_note(ctx: ToolContext, note_id: NoteRow) -> NoteOut:
        """Read a note, and (wrongly) mark it as read.

        Args:
            note_id: The note, such as "note_001".
        """
        ctx.sql.run(RETITLE, id=note_id.id, title=note_id.title + " (read)")
        ctx.sql.raw.commit()
        return out(note_id)

    with pytest.raises(
        AssertionError,
        match=r"read tool peek_note changed the state .*most likely it writes without writes=True",
    ):
        check_fuzz(server, "peek_note", max_examples=5)


def test_a_write_that_commits_part_of_its_work_before_failing_is_named() -> None:
    server = notes_server()

    @server.tool(writes=True, returns="note", phrasings=["Archive {note_id}", "Drop {note_id}"])
    def archive_note(ctx: ToolContext, note_id: NoteRow) -> NoteOut:
        """Archive a note.

        Args:
            note_id: The note, such as "note_001".
        """
        ctx.sql.update(Note, note_id, tag="archived")
        ctx.sql.raw.commit()
        raise NotFound("No archive to move it to. Call list_archives first.")

    with pytest.raises(
        AssertionError,
        match=r"write tool archive_note failed with not_found but the state hash changed "
        r".*a commit before the failure\?",
    ):
        check_fuzz(server, "archive_note", max_examples=5)


def test_a_result_its_output_schema_does_not_allow_is_named() -> None:
    server = notes_server()

    @server.tool(returns="note", phrasings=["Summarise {note_id}", "Sum up {note_id}"])
    def summarise_note(ctx: ToolContext, note_id: NoteRow) -> NoteOut:
        """Summarise a note.

        Args:
            note_id: The note, such as "note_001".
        """
        return {"note_id": note_id.id, "title": None, "tag": note_id.tag}  # type: ignore[typeddict-item]

    check_output_schema(server, "summarise_note")  # the schema itself is fine
    with pytest.raises(
        AssertionError,
        match=r"notes\.summarise_note returned a result its output_schema does not allow "
        r"\(None is not of type 'string' at title\)",
    ):
        check_fuzz(server, "summarise_note", max_examples=5)


def test_an_untyped_return_is_named() -> None:
    server = notes_server()

    @server.tool(returns="note", phrasings=["Count {tag} notes", "How many {tag} notes?"])
    def count_notes(ctx: ToolContext, tag: Literal["home", "work", "ideas"]) -> dict:
        """Count the notes with a tag.

        Args:
            tag: The tag, such as "work".
        """
        return {"count": len(ctx.sql.all(TAG_NOTES, tag=tag))}

    check_tool_contract(server, "count_notes")
    with pytest.raises(AssertionError, match=r"notes\.count_notes: untyped return: annotate it"):
        check_output_schema(server, "count_notes")


def test_an_undocumented_parameter_and_a_single_phrasing_are_named() -> None:
    server = notes_server()

    @server.tool(phrasings=["Find {text}"])
    def find_notes(ctx: ToolContext, text: str) -> list[NoteOut]:
        """Find notes by title."""
        return []

    with pytest.raises(AssertionError, match=r"notes\.find_notes: parameter 'text' has no desc"):
        check_tool_contract(server, "find_notes")
    with pytest.raises(AssertionError, match=r"1 phrasing\(s\): declare at least two"):
        check_tool_contract(server, "find_notes")


def test_a_phrasing_whose_slot_the_renderer_cannot_fill_is_named() -> None:
    server = notes_server()

    @server.tool(returns="note", phrasings=["Open {note_id}", "Open the note {note id}"])
    def open_note(ctx: ToolContext, note_id: NoteRow) -> NoteOut:
        """Open a note.

        Args:
            note_id: The note, such as "note_001".
        """
        return out(note_id)

    with pytest.raises(
        AssertionError, match=r"notes\.open_note: phrasing 'Open the note \{note id\}' has slot"
    ):
        check_phrasings(server, "open_note")


def test_broken_invariants_are_reported_with_the_calls_that_broke_them() -> None:
    server = notes_server()

    def never_more_than_thirty_notes(session: Session) -> list[str]:
        (count,) = session.raw_connection.execute("SELECT COUNT(*) FROM notes").fetchone()
        return [f"{count} notes"] if count > 30 else []

    with pytest.raises(
        AssertionError, match=r"(?s)notes: the server's invariants are broken: 31 notes.*add_note"
    ):
        check_call_sequences(
            server, invariants=never_more_than_thirty_notes, max_examples=20, steps=10
        )


def test_a_sampler_that_follows_hash_order_differs_in_a_fresh_process() -> None:
    server = notes_server("hash_order_notes", sampler=sample_notes_in_hash_order)
    with pytest.raises(AssertionError, match=r"gives another state in a fresh process"):
        check_sampler_determinism(server, sizes=[1], registry=registry_of(server))


def test_a_sampler_that_ignores_the_seed_is_caught() -> None:
    server = notes_server("same_notes", sampler=sample_notes_ignoring_the_seed)
    with pytest.raises(AssertionError, match=r"seeds 0 and 1 give the same state"):
        check_sampler_determinism(server, sizes=[1], registry=registry_of(server))


def test_a_task_whose_recorded_state_is_stale_is_named() -> None:
    server = notes_server()
    task = notes_task(registry_of(server), recorded="0" * 64)
    with pytest.raises(AssertionError, match=r"notes task notes-001: .*final_state_hash"):
        check_task(task, registry=registry_of(server, [task]))


@pytest.mark.parametrize(
    ("schema", "plausible", "expected"),
    [
        ({"enum": ["available", "off_shift"]}, ["delivered", "off_shift"], "off_shift"),
        ({"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]}, ["x", "b"], "b"),
        ({"enum": [1, 2]}, [True, 2], 2),  # True == 1, yet no enum value
        ({"enum": ["a", "b"]}, ["x"], "a"),  # none fits: the enum's first
        ({"type": "string"}, ["x"], "x"),
    ],
)
def test_a_well_formed_value_is_a_plausible_one_its_enum_allows(
    schema: dict[str, Any], plausible: list[Any], expected: Any
) -> None:
    """A record field named like the parameter may be another kind's (an order's status for
    a courier's): the base of a built call takes only what the schema allows."""
    from prove_gym.testing.strategies import first_value

    assert first_value(schema, plausible, None) == expected


def test_call_sequences_run_under_the_version_asked_for() -> None:
    """A rule that only a later version has is exercised by that version's sequences."""
    server = Server(
        "versioned_notes",
        version="1.0",
        base=Base,
        sampler=sample_notes,
        description="Notes.",
        env_versions=[EnvVersion(1, "files new notes under 'archived'")],
    )

    @server.tool(writes=True, phrasings=["Add a note called {title}", "Write down {title}"])
    def add_note(
        ctx: ToolContext, title: Annotated[str, Field(min_length=1, max_length=200)]
    ) -> str:
        """Add a note.

        Args:
            title: What the note says, such as "Groceries".
        """
        note_id = next_id(ctx, Note.id, "note", 3)
        tag = "archived" if ctx.env_version >= 1 else "home"
        ctx.sql.insert(Note, id=note_id, title=title, tag=tag)
        return note_id

    def tags_are_known(session: Session) -> list[str]:
        rows = session.raw_connection.execute("SELECT id, tag FROM notes").fetchall()
        return [f"{note} has tag {tag!r}" for note, tag in rows if tag not in TAGS]

    check_call_sequences(server, invariants=tags_are_known, max_examples=5, steps=5)
    with pytest.raises(AssertionError, match="has tag 'archived'"):
        check_call_sequences(server, invariants=tags_are_known, max_examples=5, steps=5, version=1)
