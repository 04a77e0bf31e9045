"""An acting principal: declared once on the env version and the entities, enforced by the core."""

from __future__ import annotations

from typing import Annotated

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import ForeignKey, String, bindparam, select
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from prove_gym import (
    Entity,
    EnvVersion,
    ErrorKind,
    Principal,
    SampleContext,
    Server,
    Task,
    TaskError,
    ToolContext,
    Turn,
    Workspace,
)
from prove_gym.episode import episode_instructions
from prove_gym.registry import Registry
from prove_gym.server import Query, Record, TypedDict
from prove_gym.testing.conformance import check_principal


class Base(DeclarativeBase):
    pass


class Account(Base):
    __tablename__ = "accounts"
    id: Mapped[str] = mapped_column(String(8), primary_key=True)


class Note(Base):
    __tablename__ = "notes"
    id: Mapped[str] = mapped_column(String(8), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    text: Mapped[str] = mapped_column(String(80))


def sample_notes(ctx: SampleContext) -> None:
    ctx.db.add_all([Account(id=f"acc_{a}") for a in (1, 2, 3)])
    ctx.db.add_all(
        [
            Note(id=f"nt_{a}{n}", account_id=f"acc_{a}", text=f"note {n}")
            for a in (1, 2)
            for n in (1, 2)
        ]
    )


class NoteOut(TypedDict):
    note_id: str
    text: str


ALL_NOTES = Query(select(Note.id, Note.account_id).order_by(Note.id))
ACCOUNTS = Query(select(Account.id).order_by(Account.id))
SET_TEXT = Query(
    Note.__table__.update().where(Note.id == bindparam("id")).values(text=bindparam("text"))
)

AccountRow = Annotated[Record[Account], Entity("account")]
NoteRow = Annotated[Record[Note], Entity("note")]


def notes_server(name: str = "principal_notes") -> Server:
    """Accounts own notes; from v1 a session acts for one account."""
    server = Server(
        name,
        version="1.1",
        base=Base,
        sampler=sample_notes,
        env_versions=[
            EnvVersion(
                1,
                "acts for one account",
                principal=Principal(
                    "account", "You act for account {id}.", admin_only=("clear_notes",)
                ),
            ),
            EnvVersion(2, "changes nothing else", instructions="Be brief."),
        ],
    )

    @server.entity("account", key="account_id", model=Account)
    def accounts(ctx: ToolContext) -> list[dict[str, str]]:
        return [{"account_id": a.id} for a in ctx.sql.all(ACCOUNTS)]

    @server.entity("note", key="note_id", model=Note, owner="account_id")
    def notes(ctx: ToolContext) -> list[dict[str, str]]:
        return [{"note_id": n.id, "account_id": n.account_id} for n in ctx.sql.all(ALL_NOTES)]

    @server.tool(
        writes=True, returns="note", phrasings=["Set {note_id} to {text}", "Edit {note_id}"]
    )
    def edit_note(ctx: ToolContext, note_id: NoteRow, text: str) -> NoteOut:
        """Replace a note's text.

        Args:
            note_id: The note, such as "nt_11".
            text: The new text, such as "call Ana".
        """
        ctx.sql.run(SET_TEXT, id=note_id.id, text=text)
        return {"note_id": note_id.id, "text": text}

    @server.tool(returns="note", phrasings=["Read {note_ids}", "Show notes {note_ids}"])
    def read_notes(
        ctx: ToolContext, note_ids: list[NoteRow], account_id: AccountRow | None = None
    ) -> list[NoteOut]:
        """Read notes, optionally saying whose account they should be in.

        Args:
            note_ids: The notes, such as ["nt_11"].
            account_id: The account, such as "acc_1".
        """
        return [{"note_id": n.id, "text": n.text} for n in note_ids]

    @server.tool(writes=True, phrasings=["Clear every note", "Empty all the notes"])
    def clear_notes(ctx: ToolContext) -> list[NoteOut]:
        """Blank every note of every account (the operator's clean-up)."""
        ctx.sql.run(CLEAR)
        return []

    return server


CLEAR = Query(Note.__table__.update().values(text=""))


def test_v0_acts_for_nobody_and_behaves_as_before() -> None:
    server = notes_server()
    with server.session() as s:
        assert s.principal is None and s.context().principal is None
        assert s.call("edit_note", {"note_id": "nt_21", "text": "x"}).ok
    with pytest.raises(ValueError, match="acts for nobody"):
        server.session(principal="acc_1")


def test_a_later_version_needs_a_principal_that_exists_and_keeps_it_in_later_versions() -> None:
    server = notes_server()
    assert server.principal(0) is None
    assert server.principal(1) is server.principal(2) is not None
    with pytest.raises(ValueError, match="acts for one account: name its id"):
        server.session(env_version=1)
    with pytest.raises(ValueError, match="no account with id 'acc_9'"):
        server.session(env_version=2, principal="acc_9")
    with server.session(env_version=2, principal="acc_1") as s:
        assert s.context().principal == "acc_1"


def test_a_call_on_another_principals_row_is_refused_naming_the_rule_and_changes_nothing() -> None:
    server = notes_server()
    with server.session(env_version=1, principal="acc_1") as s:
        before = s.state_hash()
        refused = s.call("edit_note", {"note_id": "nt_21", "text": "mine now"})
        assert refused.error_kind == ErrorKind.PERMISSION_DENIED
        assert refused.message == (
            "Rule 'not_your_account' failed: note 'nt_21' is another account's; you act "
            "for account 'acc_1' and can use only its own. Nothing was changed."
        )
        assert s.state_hash() == before
        assert s.call("edit_note", {"note_id": "nt_11", "text": "mine"}).ok
        assert s.state_hash() != before


def test_every_row_of_a_list_and_the_principals_own_kind_are_checked() -> None:
    server = notes_server()
    with server.session(env_version=1, principal="acc_1") as s:
        mixed = s.call("read_notes", {"note_ids": ["nt_11", "nt_22"]})
        assert mixed.error_kind == ErrorKind.PERMISSION_DENIED and "'nt_22'" in (
            mixed.message or ""
        )
        other = s.call("read_notes", {"note_ids": ["nt_11"], "account_id": "acc_2"})
        assert other.error_kind == ErrorKind.PERMISSION_DENIED
        assert "account 'acc_2' is not yours" in (other.message or "")
        assert s.call("read_notes", {"note_ids": ["nt_11", "nt_12"], "account_id": "acc_1"}).ok
        # an unknown id is still not_found, answered before whose it is
        assert (
            s.call("edit_note", {"note_id": "nt_99", "text": "x"}).error_kind == ErrorKind.NOT_FOUND
        )


@settings(max_examples=25, deadline=None)
@given(
    me=st.sampled_from(["acc_1", "acc_2", "acc_3"]),
    notes=st.lists(st.sampled_from(["nt_11", "nt_12", "nt_21", "nt_22"]), min_size=1, max_size=4),
)
def test_a_read_is_refused_exactly_when_a_note_is_someone_elses(me: str, notes: list[str]) -> None:
    server = _SHARED
    with server.session(env_version=1, principal=me) as s:
        result = s.call("read_notes", {"note_ids": notes})
    theirs = [n for n in notes if f"acc_{n[3]}" != me]
    assert result.ok == (not theirs), result
    if theirs:
        assert result.error_kind == ErrorKind.PERMISSION_DENIED and "not_your_account" in (
            result.message or ""
        )


_SHARED = notes_server("principal_notes_shared")


def test_a_fork_acts_for_the_same_principal() -> None:
    with notes_server().session(env_version=1, principal="acc_2") as s, s.fork() as twin:
        assert twin.principal == "acc_2"
        assert (
            twin.call("edit_note", {"note_id": "nt_11", "text": "x"}).error_kind
            == ErrorKind.PERMISSION_DENIED
        )


def test_declarations_are_checked_where_they_are_written() -> None:
    server = notes_server()
    with pytest.raises(TypeError, match="owner='owner_id' must name a column"):
        server.entity("ghost", key="note_id", model=Note, owner="owner_id")(lambda ctx: [])
    with pytest.raises(ValueError, match=r"must name the principal with \{id\}"):
        Principal("account", "You act for an account.")
    bare = Server(
        "principal_bare",
        version="1",
        base=Base,
        sampler=sample_notes,
        env_versions=[EnvVersion(1, "acts for an account", principal=Principal("account", "{id}"))],
    )

    @bare.tool(phrasings=["Read {note_id}", "Show {note_id}"])
    def peek(ctx: ToolContext, note_id: Annotated[str, Entity("note")]) -> NoteOut:
        """Read a note by id.

        Args:
            note_id: The note, such as "nt_11".
        """
        return {"note_id": note_id, "text": ""}

    bare.entity("note", key="note_id", model=Note, owner="account_id")(lambda ctx: [])
    problems = bare.problems()
    assert (
        "principal_bare: env v1's principal 'account' is not an entity declared with a model"
        in problems[0]
    )
    bare.entity("account", key="account_id", model=Account)(lambda ctx: [])
    assert any(
        "names a note by id only, so the core cannot check whose it is" in p
        for p in bare.problems()
    )


def _registry(server: Server) -> Registry:
    from prove_gym import hookimpl

    class Plugin:
        @hookimpl
        def prove_gym_servers(self) -> list[Server]:
            return [server]

    registry = Registry(load_entrypoints=False)
    registry.register(Plugin(), name=server.name)
    return registry


def test_a_task_names_its_principal_and_the_system_prompt_says_who_the_user_is() -> None:
    server = notes_server()
    registry = _registry(server)
    turns = [Turn(user="Fix my note.")]
    task = Task(
        id="t",
        servers=[server.name],
        turns=turns,
        env_versions={server.name: 1},
        principals={server.name: "acc_2"},
    )
    with Workspace(task, registry) as ws:
        assert (
            ws.call("edit_note", {"note_id": "nt_11", "text": "x"}).result.error_kind
            == ErrorKind.PERMISSION_DENIED
        )
        assert ws.call("edit_note", {"note_id": "nt_21", "text": "x"}).result.ok
    assert episode_instructions(task, registry).endswith("You act for account acc_2.")
    assert "principals" not in Task(id="v0", servers=[server.name], turns=turns).to_json()
    with pytest.raises(TaskError, match="acts for one account: name it in the task's principals"):
        Workspace(task.model_copy(update={"principals": {}}), registry)
    with pytest.raises(TaskError, match="acts for nobody: drop it"):
        Workspace(task.model_copy(update={"env_versions": {}}), registry)
    with pytest.raises(TaskError, match="no account with id 'acc_7'"):
        Workspace(task.model_copy(update={"principals": {server.name: "acc_7"}}), registry)


def test_the_conformance_check_passes_a_server_that_enforces_its_principal() -> None:
    check_principal(notes_server())


def test_the_conformance_check_names_an_owned_entity_that_declares_no_owner() -> None:
    server = notes_server()
    forgot = server.entities["note"]
    server.entities["note"] = type(forgot)(forgot.kind, forgot.key, forgot.fn, forgot.model)
    with pytest.raises(AssertionError) as failed:
        check_principal(server)
    assert str(failed.value) == (
        "prove/principal_notes-v1: entity 'note' refers to the account in column 'account_id' "
        "but declares no owner=: a call naming another account's note is never refused "
        "(declare owner='account_id')"
    )


def test_an_admin_only_tool_is_refused_for_any_principal_and_declared_tools_only() -> None:
    server = notes_server()
    with server.session() as v0:
        assert v0.call("clear_notes").ok
    with server.session(env_version=1, principal="acc_1") as s:
        before = s.state_hash()
        refused = s.call("clear_notes")
        assert refused.error_kind == ErrorKind.PERMISSION_DENIED
        assert refused.message == (
            "Rule 'admin_only' failed: clear_notes is for principal_notes's own staff; acting "
            "for account 'acc_1' you cannot call it. Nothing was changed."
        )
        assert s.state_hash() == before
    typo = Principal("account", "{id}", admin_only=("clear_note",))
    server.env_versions[1] = EnvVersion(1, "acts for one account", principal=typo)
    assert "principal_notes: env v1's principal names unknown admin_only tools ['clear_note']" in (
        server.problems()
    )


def shared_server() -> Server:
    """notes_server plus a look at any account (shared=True on the parameter) and a board of
    notes every account may pin to (shared=True on the entity)."""
    server = notes_server("principal_shared")
    source = server.entities["note"]
    # a note here is everyone's to read and pin: its account is who wrote it, not who owns it
    server.entities["note"] = type(source)(
        source.kind, source.key, source.fn, source.model, shared=True
    )

    @server.tool(returns="note", phrasings=["Show account {account_id}", "Who is {account_id}?"])
    def show_account(
        ctx: ToolContext, account_id: Annotated[Record[Account], Entity("account", shared=True)]
    ) -> NoteOut:
        """What every account may see of another.

        Args:
            account_id: The account, such as "acc_2".
        """
        return {"note_id": "", "text": account_id.id}

    return server


def test_a_shared_parameter_or_entity_names_any_principals_row() -> None:
    """A marketplace member looks at another's public profile and bids on another's listing:
    the core does not refuse them, and the conformance check asks no owner= of them."""
    server = shared_server()
    assert server.problems() == []
    with server.session(env_version=1, principal="acc_1") as s:
        seen = s.call("show_account", {"account_id": "acc_2"})
        assert seen.ok and seen.content["text"] == "acc_2"
        assert s.call("edit_note", {"note_id": "nt_21", "text": "pinned"}).ok
        own_kind = s.call("read_notes", {"note_ids": ["nt_21"], "account_id": "acc_2"})
        assert own_kind.error_kind == ErrorKind.PERMISSION_DENIED  # not shared: still checked
    spec = server.tools["show_account"]
    assert server.owned_params(spec, Principal("account", "{id}")) == ()
    check_principal(server)  # read_notes' account_id is still checked


def test_an_entity_is_owned_or_shared_not_both() -> None:
    server = notes_server("principal_both")
    with pytest.raises(TypeError, match="a shared entity has no owner="):
        server.entity("board", key="note_id", model=Note, owner="account_id", shared=True)


def test_a_principal_whose_tools_name_nothing_it_owns_passes_the_check() -> None:
    """A signed-in person the tools act as without naming them (social_media's user): no
    owned parameter, so nothing to swap; an owned one no two principals hold still fails."""
    server = shared_server()
    del server.tools["read_notes"]  # its account_id was the only owned parameter
    check_principal(server)
    owned = notes_server("principal_unheld")
    note = owned.entities["note"]
    lister = note.fn
    owned.entities["note"] = type(note)(
        note.kind,
        note.key,
        lambda ctx: [r for r in lister(ctx) if r["account_id"] == "acc_1"],
        note.model,
        owner="account_id",
    )
    with pytest.raises(AssertionError, match="no tool could be checked: no two accounts own"):
        check_principal(owned)


# ------------------------------------------------------------ owned through another entity
class PinBase(DeclarativeBase):
    pass


class Owner(PinBase):
    __tablename__ = "owners"
    id: Mapped[str] = mapped_column(String(8), primary_key=True)


class Board(PinBase):
    __tablename__ = "boards"
    id: Mapped[str] = mapped_column(String(8), primary_key=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("owners.id"))


class Pin(PinBase):
    """A pin names no owner: it belongs to whoever owns its board."""

    __tablename__ = "pins"
    id: Mapped[str] = mapped_column(String(8), primary_key=True)
    board_id: Mapped[str] = mapped_column(ForeignKey("boards.id"))
    text: Mapped[str] = mapped_column(String(80))


def sample_pins(ctx: SampleContext) -> None:
    ctx.db.add_all([Owner(id=f"own_{o}") for o in (1, 2)])
    ctx.db.add_all([Board(id=f"brd_{o}", owner_id=f"own_{o}") for o in (1, 2)])
    ctx.db.add_all(
        [Pin(id=f"pin_{o}{n}", board_id=f"brd_{o}", text="") for o in (1, 2) for n in (1, 2)]
    )


PINS = Query(select(Pin.id, Pin.board_id).order_by(Pin.id))
BOARDS = Query(select(Board.id, Board.owner_id).order_by(Board.id))
OWNERS = Query(select(Owner.id).order_by(Owner.id))
WRITE_PIN = Query(
    Pin.__table__.update().where(Pin.id == bindparam("id")).values(text=bindparam("text"))
)
PinRow = Annotated[Record[Pin], Entity("pin")]


class PinOut(TypedDict):
    pin_id: str
    text: str


def pins_server(through: str = "board") -> Server:
    """Owners own boards, boards hold pins; from v1 a session acts for one owner."""
    server = Server(
        "principal_pins",
        version="1.1",
        base=PinBase,
        sampler=sample_pins,
        env_versions=[
            EnvVersion(1, "acts for one owner", principal=Principal("owner", "You are {id}."))
        ],
    )

    @server.entity("owner", key="owner_id", model=Owner)
    def owners(ctx: ToolContext) -> list[dict[str, str]]:
        return [{"owner_id": o.id} for o in ctx.sql.all(OWNERS)]

    @server.entity("board", key="board_id", model=Board, owner="owner_id")
    def boards(ctx: ToolContext) -> list[dict[str, str]]:
        return [{"board_id": b.id} for b in ctx.sql.all(BOARDS)]

    @server.entity("pin", key="pin_id", model=Pin, owner="board_id", through=through)
    def pins(ctx: ToolContext) -> list[dict[str, str]]:
        return [{"pin_id": p.id} for p in ctx.sql.all(PINS)]

    @server.tool(
        writes=True, returns="pin", phrasings=["Write {text} on {pin_id}", "Edit {pin_id}"]
    )
    def write_pin(ctx: ToolContext, pin_id: PinRow, text: str) -> PinOut:
        """Write on a pin.

        Args:
            pin_id: The pin, such as "pin_11".
            text: What it says, such as "milk".
        """
        ctx.sql.run(WRITE_PIN, id=pin_id.id, text=text)
        return {"pin_id": pin_id.id, "text": text}

    return server


def test_a_row_owned_through_another_is_refused_for_another_principal() -> None:
    server = pins_server()
    assert server.problems() == []
    with server.session(env_version=1, principal="own_1") as s:
        before = s.state_hash()
        theirs = s.call("write_pin", {"pin_id": "pin_21", "text": "x"})
        assert theirs.error_kind == ErrorKind.PERMISSION_DENIED
        assert (theirs.message or "").startswith("Rule 'not_your_owner' failed: pin 'pin_21'")
        assert s.state_hash() == before
        assert s.call("write_pin", {"pin_id": "pin_12", "text": "x"}).ok
    with server.session() as v0:  # -v0 acts for nobody
        assert v0.call("write_pin", {"pin_id": "pin_21", "text": "x"}).ok
    check_principal(server)


def test_owned_through_an_undeclared_entity_is_a_problem() -> None:
    with pytest.raises(TypeError, match="needs owner="):
        Server("p", version="1", base=PinBase, sampler=sample_pins).entity(
            "pin", key="pin_id", model=Pin, through="board"
        )
    assert any("through='tray'" in p for p in pins_server("tray").problems())
