"""Tool declarations: signature and docstring become schema, metadata and validation."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import pydantic
import pytest
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from prove_gym.server import Entity, Record, Server, ToolContext
from prove_gym.server.tool import build_tool_spec, parse_docstring
from prove_gym.testing.conformance import check_server_contract


class _Base(DeclarativeBase):
    pass


def _server() -> Server:
    return Server("toy", version="0", base=_Base, sampler=lambda ctx: None)


def test_signature_and_docstring_become_an_openai_schema() -> None:
    server = _server()

    @server.tool(writes=True, returns="note", phrasings=["Add a note {text}"])
    def add_note(
        ctx: ToolContext,
        text: str,
        folder_id: Annotated[str, Entity("folder")],
        priority: Literal["low", "high"] = "low",
        due: str | None = None,
    ) -> dict:
        """Add a note to a folder.

        Args:
            text: The note's text, such as "buy milk".
            folder_id: Folder to put it in, such as "fld_01".
            priority: "low" or "high".
            due: Optional due date, such as "2026-03-03".

        Returns:
            The new note.
        """
        return {}

    spec = server.tools["add_note"]
    schema = spec.openai_schema()["function"]
    assert schema["name"] == "add_note"
    assert schema["description"] == "Add a note to a folder.\n\nReturns:\n    The new note."
    params = schema["parameters"]
    assert params["required"] == ["text", "folder_id"]
    assert params["additionalProperties"] is False
    assert params["properties"]["text"] == {
        "description": 'The note\'s text, such as "buy milk".',
        "type": "string",
        "maxLength": 10_000,  # every string declares a cap; Field(max_length=...) sets another
    }
    assert params["properties"]["priority"]["enum"] == ["low", "high"]
    # Optional[str] is shown to the model as a plain optional string.
    assert params["properties"]["due"]["type"] == "string"
    assert "title" not in str(params)
    assert spec.entity_params == {"folder_id": Entity("folder")}
    assert spec.writes and not spec.idempotent and spec.returns == ("note",)
    assert spec.qualified_name == "toy.add_note"


def test_validation_coerces_json_and_rejects_extra_or_wrong_types() -> None:
    def f(ctx: ToolContext, n: int, flag: bool = False) -> int:
        """Doc."""
        return n

    spec = build_tool_spec(f)
    assert spec.validate({"n": 3}) == {"n": 3, "flag": False}
    with pytest.raises(pydantic.ValidationError):
        spec.validate({"n": "three"})
    with pytest.raises(pydantic.ValidationError):
        spec.validate({"n": 1, "extra": 2})
    with pytest.raises(pydantic.ValidationError):
        spec.validate({})


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def t(x: int) -> int:\n    '''Doc.'''\n    return 1", "first parameter must be 'ctx"),
        ("def t(ctx, x) -> int:\n    '''Doc.'''\n    return 1", "needs a type annotation"),
        ("def t(ctx, x: int) -> int:\n    return 1", "write a docstring"),
        (
            "def t(ctx, x: int) -> int:\n    '''Doc.\n\n    Args:\n        y: nothing.\n    '''\n    return 1",
            "documents unknown arguments ['y']",
        ),
    ],
)
def test_declaration_mistakes_fail_at_import_time(source: str, message: str) -> None:
    namespace: dict = {}
    exec(source, namespace)
    with pytest.raises(TypeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        build_tool_spec(namespace["t"])


def test_phrasing_slots_must_name_parameters() -> None:
    def f(ctx: ToolContext, event_id: str) -> None:
        """Doc."""

    with pytest.raises(TypeError, match=r"phrasing slot \{evnt_id\}"):
        build_tool_spec(f, phrasings=["Cancel {evnt_id}"])


def test_an_unknown_normalisation_fails_at_declaration() -> None:
    def f(ctx: ToolContext, email: str) -> None:
        """Doc."""

    with pytest.raises(TypeError, match=r"normalise\['email'\] is 'lowercase'; use one of"):
        build_tool_spec(f, normalise={"email": "lowercase"})  # type: ignore[dict-item]
    assert build_tool_spec(f, normalise={"email": "casefold"}).params[0].normalise == "casefold"


def test_a_tool_name_cannot_be_declared_twice() -> None:
    server = _server()

    def f(ctx: ToolContext) -> None:
        """Doc."""

    server.tool(f)
    with pytest.raises(ValueError, match="twice"):
        server.tool(f)


def test_docstring_args_may_wrap_and_carry_types() -> None:
    desc, args = parse_docstring(
        """Summary line.

        Args:
            query (str): Words to find,
                over two lines.
            limit: At most this many.
        """
    )
    assert desc == "Summary line."
    assert args == {"query": "Words to find, over two lines.", "limit": "At most this many."}


@pytest.mark.parametrize("value", ["NaN", "inf", "-Infinity", float("nan"), float("inf")])
def test_non_finite_numbers_are_bad_arguments_in_every_tool(value: object) -> None:
    def f(ctx: ToolContext, amount: float) -> float:
        """Doc."""
        return amount

    with pytest.raises(pydantic.ValidationError, match="finite"):
        build_tool_spec(f).validate({"amount": value})


def test_an_entity_marker_on_or_in_a_list_means_many_without_saying_so() -> None:
    from typing import Annotated

    from prove_gym.server.tool import Entity, _find_entity

    assert _find_entity(Annotated[str, Entity("contact")]) == Entity("contact")
    assert _find_entity(Annotated[list[str], Entity("contact")]) == Entity("contact", many=True)
    assert _find_entity(Annotated[list[str] | None, Entity("contact")]).many  # type: ignore[union-attr]
    assert _find_entity(list[Annotated[str, Entity("contact")]]) == Entity("contact", many=True)
    assert _find_entity(Annotated[str, Entity("c")] | None) == Entity("c")


class _Folder(_Base):
    __tablename__ = "folders"
    id: Mapped[str] = mapped_column(primary_key=True)


def test_tools_reach_state_through_sql_only() -> None:
    """One way to reach state: a tool's context has ``sql`` and no ORM session, and an
    entity parameter resolves to a row (``Record[...]``), never to an ORM object."""
    fields = {f.name for f in dataclasses.fields(ToolContext)}
    assert "sql" in fields and "db" not in fields
    server = _server()
    with pytest.raises(TypeError, match="tools get rows, not ORM objects"):

        @server.tool()
        def open_folder(ctx: ToolContext, folder_id: Annotated[_Folder, Entity("folder")]) -> str:
            """Open a folder.

            Args:
                folder_id: The folder, such as "fld_01".
            """
            return ""

    @server.tool()
    def show_folder(
        ctx: ToolContext, folder_id: Annotated[Record[_Folder], Entity("folder")]
    ) -> str:
        """Show a folder.

        Args:
            folder_id: The folder, such as "fld_01".
        """
        return folder_id.id

    param = server.tools["show_folder"].params[0]
    assert param.row is _Folder  # resolved to its row before the tool runs
    assert server.tools["show_folder"].input_schema()["properties"]["folder_id"]["type"] == "string"


def test_tools_declared_apart_register_in_the_listed_order() -> None:
    """A large server's layout: ``@tool`` where a tool is written, ``add_tools`` in one place."""
    import types

    from prove_gym.server.tool import tool

    resource = types.ModuleType("toy_resource")

    @tool(writes=True, phrasings=["Archive note {note_id}"])
    def archive_note(ctx: ToolContext, note_id: str) -> str:
        """Archive a note.

        Args:
            note_id: The note, such as "n_1".
        """
        return note_id

    @tool()
    def count_notes(ctx: ToolContext) -> int:
        """Count the notes."""
        return 0

    for fn in (archive_note, count_notes):
        fn.__module__ = resource.__name__
        setattr(resource, fn.__name__, fn)
    assert _server().tools == {}  # declaring registers nothing
    server = _server()
    server.add_tools([count_notes, archive_note], declared_in=[resource])
    assert list(server.tools) == ["count_notes", "archive_note"]
    assert server.tools["archive_note"].writes and server.tools["archive_note"].phrasings
    with pytest.raises(TypeError, match=r"declared with @tool but not listed: \['archive_note'\]"):
        _server().add_tools([count_notes], declared_in=[resource])

    def stray(ctx: ToolContext) -> int:
        """Never declared."""
        return 0

    with pytest.raises(TypeError, match="stray is listed but not declared"):
        _server().add_tools([stray])


def test_an_inverse_is_declared_on_one_side_and_read_both_ways() -> None:
    server = _server()

    @server.tool(writes=True, phrasings=["Like {post_id}", "Heart {post_id}"])
    def like_post(ctx: ToolContext, post_id: str) -> dict:
        """Like a post.

        Args:
            post_id: The post, such as "post_001".
        """
        return {}

    @server.tool(writes=True, inverse_of="like_post", phrasings=["Unlike {post_id}", "x {post_id}"])
    def unlike_post(ctx: ToolContext, post_id: str) -> dict:
        """Take a like back.

        Args:
            post_id: The post, such as "post_001".
        """
        return {}

    assert server.tools["unlike_post"].inverse_of == ("like_post",)
    assert server.inverses("like_post") == {"unlike_post"}
    assert server.inverses("unlike_post") == {"like_post"}
    assert not any("inverse_of" in p for p in server.problems())


def test_an_inverse_must_name_a_write_of_the_same_server() -> None:
    server = _server()

    @server.tool(writes=True, inverse_of="like_post", phrasings=["Unlike {post_id}", "x {post_id}"])
    def unlike_post(ctx: ToolContext, post_id: str) -> dict:
        """Take a like back.

        Args:
            post_id: The post, such as "post_001".
        """
        return {}

    assert any(
        "inverse_of names 'like_post', which is not a visible write tool of toy" in p
        for p in server.problems()
    )
    with pytest.raises(AssertionError, match="inverse_of names 'like_post'"):
        check_server_contract(server)  # the conformance kit's server contract
    with pytest.raises(TypeError, match="a read undoes nothing"):
        server.tool(inverse_of="unlike_post")(like_post_read)
    with pytest.raises(TypeError, match="not its own inverse"):
        server.tool(writes=True, inverse_of="like_post_read")(like_post_read)


def test_ends_when_names_arguments_of_a_write() -> None:
    """``ends_when=`` says with which argument values a write ends what it names; a read
    ends nothing, and an unknown argument is a mistake seen at declaration."""

    def set_quantity(ctx: ToolContext, item_id: str, quantity: int) -> dict:
        """Set an item's quantity; 0 removes it.

        Args:
            item_id: The item, such as "itm_01".
            quantity: The new quantity, such as 2.
        """
        return {}

    spec = build_tool_spec(set_quantity, writes=True, ends_when={"quantity": 0})
    assert spec.ends_when == {"quantity": 0}
    assert build_tool_spec(set_quantity, writes=True).ends_when == {}
    with pytest.raises(TypeError, match="a read ends nothing"):
        build_tool_spec(set_quantity, ends_when={"quantity": 0})
    with pytest.raises(TypeError, match=r"ends_when names unknown arguments \['qty'\]"):
        build_tool_spec(set_quantity, writes=True, ends_when={"qty": 0})


def like_post_read(ctx: ToolContext) -> dict:
    """A read."""
    return {}


def test_a_stand_in_is_declared_on_the_tool_that_can_serve_the_request() -> None:
    """``stands_in_for`` names tools of the same server; ``stand_ins`` reads it backwards,
    and ``problems()`` (the conformance kit's contract check) names a stand-in for a tool
    the server does not offer."""
    server = _server()

    @server.tool(phrasings=["Show the first lines of {path}", "head {path}"])
    def head(ctx: ToolContext, path: str) -> str:
        """The first lines of a file.

        Args:
            path: The file, such as "notes.txt".
        """
        return path

    @server.tool(stands_in_for="head", phrasings=["Show {path}", "cat {path}"])
    def cat(ctx: ToolContext, path: str) -> str:
        """The whole file.

        Args:
            path: The file, such as "notes.txt".
        """
        return path

    assert server.tools["cat"].stands_in_for == ("head",)
    assert server.stand_ins("head") == ["cat"] and server.stand_ins("cat") == []
    assert not [p for p in server.problems() if "stands_in_for" in p]

    @server.tool(stands_in_for=("head", "tail"), phrasings=["Lines of {path}", "sed {path}"])
    def read_lines(ctx: ToolContext, path: str) -> str:
        """Some lines of a file.

        Args:
            path: The file, such as "notes.txt".
        """
        return path

    assert server.stand_ins("head") == ["cat", "read_lines"]
    assert [p for p in server.problems() if "stands_in_for" in p] == [
        "toy.read_lines: stands_in_for names ['tail'], which are not tools this server offers"
    ]
    with pytest.raises(TypeError, match="stands_in_for names the tool itself"):
        build_tool_spec(head, stands_in_for=("head",))


def test_out_of_scope_requests_are_kept_in_order_and_listed_once() -> None:
    asks = ("Print my week.", "Sync with my phone.")
    server = Server("toy", version="0", base=_Base, sampler=lambda ctx: None, out_of_scope=asks)
    assert server.out_of_scope == asks and not server.problems()
    twice = Server(
        "toy", version="0", base=_Base, sampler=lambda ctx: None, out_of_scope=asks + asks[:1]
    )
    assert twice.problems() == ["toy: out_of_scope lists a request twice"]
