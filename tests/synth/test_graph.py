"""The dependency graph comes from declarations; an LLM may refine it, cached by schema hash."""

from __future__ import annotations

import json
from typing import Annotated

import pytest
from sqlalchemy import String, bindparam, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import prove_gym
from prove_gym import Entity, SampleContext, Server, ToolContext
from prove_gym.server import Query
from prove_gym.synth.graph import STATE, apply_refinement, build_graph, refine_graph
from prove_gym.synth.llm import LLMClient

NoteId = Annotated[str, Entity("note")]


def notes_server(name: str = "notes") -> Server:
    """A four-tool server whose dependencies are known by construction."""

    class Base(DeclarativeBase):
        pass

    class Note(Base):
        __tablename__ = "notes"
        id: Mapped[str] = mapped_column(String, primary_key=True)
        text: Mapped[str] = mapped_column(String)

    def sample(ctx: SampleContext) -> None:
        for i in range(1, 6):
            ctx.db.add(Note(id=f"n_{i}", text=ctx.fake.word()))

    server = Server(name, version="1", base=Base, sampler=sample)
    count = Query(select(func.count()).select_from(Note))
    by_id = Query(select(Note.text).where(Note.id == bindparam("id")))
    every = Query(select(Note.id, Note.text).order_by(Note.id))

    @server.tool(writes=True, returns="note", phrasings=["Write {text}"], examples={"text": ["hi"]})
    def add_note(ctx: ToolContext, text: str) -> dict:
        """Add a note.

        Args:
            text: The text, such as "buy milk".
        """
        n = ctx.sql.scalar(count) + 1
        ctx.sql.insert(Note, id=f"n_{n}", text=text)
        return {"note_id": f"n_{n}"}

    @server.tool(returns="note", phrasings=["Show {note_id}"])
    def get_note(ctx: ToolContext, note_id: NoteId) -> dict:
        """Get a note.

        Args:
            note_id: The note, such as "n_1".
        """
        return {"note_id": note_id, "text": ctx.sql.scalar(by_id, id=note_id)}

    @server.tool(phrasings=["How many notes?"])
    def count_notes(ctx: ToolContext) -> dict:
        """Count the notes."""
        return {"count": ctx.sql.scalar(count)}

    @server.tool(writes=True, phrasings=["Lock everything"])
    def lock_all(ctx: ToolContext) -> dict:
        """Lock every note."""
        return {"locked": True}

    @server.entity("note", key="note_id")
    def notes(ctx: ToolContext) -> list[dict]:
        return [{"note_id": n.id, "text": n.text} for n in ctx.sql.all(every)]

    return server


def edges(graph) -> dict[tuple[str, str], str]:
    return {(e.src, e.dst): e.kind for e in graph.edges}


def test_a_result_entity_taken_as_an_identifier_is_an_explicit_edge() -> None:
    graph = build_graph(notes_server())
    edge = graph.edge("add_note", "get_note")
    assert edge is not None and edge.kind == "explicit"
    assert edge.via == ("note",) and edge.params == ("note_id",)


def test_a_write_that_names_no_entity_changes_what_every_other_tool_sees() -> None:
    found = edges(build_graph(notes_server()))
    assert found[("lock_all", "get_note")] == "implicit"
    assert found[("lock_all", "count_notes")] == "implicit"
    assert found[("lock_all", "add_note")] == "implicit"
    assert STATE in build_graph(notes_server()).edge("lock_all", "count_notes").via


def test_reads_never_start_an_implicit_edge_and_unrelated_pairs_have_none() -> None:
    found = edges(build_graph(notes_server()))
    assert ("count_notes", "get_note") not in found
    assert ("get_note", "lock_all") not in found
    assert ("add_note", "count_notes") not in found  # declarations cannot tell: the LLM may


def test_calendar_edges_follow_its_declarations() -> None:
    graph = build_graph(prove_gym.get_server("calendar"))
    found = edges(graph)
    assert found[("search_events", "add_invitee")] == "explicit"
    assert found[("list_calendars", "create_event")] == "explicit"
    assert found[("create_event", "list_events")] == "implicit"
    assert found[("add_invitee", "list_contacts")] == "implicit"
    assert "get_current_time" in graph.isolated()
    assert graph.counts()["explicit"] > 0 and graph.counts()["implicit"] > 0


def test_the_graph_renders_as_text_dot_and_json() -> None:
    graph = build_graph(notes_server())
    assert "add_note" in graph.to_text() and "explicit" in graph.to_text()
    dot = graph.to_dot()
    assert dot.startswith('digraph "notes"') and '"add_note" -> "get_note"' in dot
    assert "style=dashed" in dot  # implicit edges
    data = json.loads(json.dumps(graph.to_dict()))
    assert data["counts"] == graph.counts() and len(data["edges"]) == len(graph.edges)


def test_the_schema_hash_changes_when_a_tool_changes() -> None:
    a, b = notes_server(), notes_server()
    assert build_graph(a).schema_hash == build_graph(b).schema_hash

    @b.tool(phrasings=["Ping"])
    def ping(ctx: ToolContext) -> dict:
        """Ping."""
        return {}

    assert build_graph(a).schema_hash != build_graph(b).schema_hash


def test_an_llm_refines_edges_and_the_reply_is_cached_by_schema_hash(fake_llm, tmp_path) -> None:
    fake_llm.reply = lambda payload: json.dumps(
        {
            "edges": [
                {"from": "add_note", "to": "count_notes", "kind": "implicit", "reason": "count"},
                {"from": "lock_all", "to": "add_note", "kind": "none"},
                {"from": "nope", "to": "add_note", "kind": "explicit"},
            ]
        }
    )
    server = notes_server()
    client = LLMClient(fake_llm.url, "tiny-model", cache_dir=tmp_path)
    refined = refine_graph(server, client, cache_dir=tmp_path)
    found = edges(refined)
    assert found[("add_note", "count_notes")] == "implicit"
    assert refined.edge("add_note", "count_notes").source == "llm"
    assert ("lock_all", "add_note") not in found
    assert found[("add_note", "get_note")] == "explicit"  # untouched declared edge
    assert refined.refined_by == "tiny-model"
    request = fake_llm.requests[0]
    assert request["model"] == "tiny-model"
    assert "count_notes" in request["messages"][1]["content"]

    again = refine_graph(
        server, LLMClient(fake_llm.url, "tiny-model", cache_dir=tmp_path), cache_dir=tmp_path
    )
    assert len(fake_llm.requests) == 1  # read from the cache
    assert edges(again) == found


def test_refinement_ignores_unknown_tools_and_self_loops() -> None:
    graph = build_graph(notes_server())
    refined = apply_refinement(
        graph,
        [
            {"from": "add_note", "to": "add_note", "kind": "implicit"},
            {"from": "ghost", "to": "get_note", "kind": "explicit"},
            "not a dict",
        ],
    )
    assert edges(refined) == edges(graph)


@pytest.mark.parametrize("server", sorted(prove_gym.get_registry().servers))
def test_every_installed_server_has_a_graph_over_its_visible_tools(server: str) -> None:
    srv = prove_gym.get_server(server)
    graph = build_graph(srv)
    assert graph.tools == tuple(t.name for t in srv.visible_tools())
    for e in graph.edges:
        assert e.src in graph.tools and e.dst in graph.tools and e.src != e.dst
