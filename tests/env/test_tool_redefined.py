"""A tool redefined from an env version on (``@server.tool(name=..., since=N)``): version N and
later play the new definition (parameters, schema, docstring, code), earlier versions keep the
old one byte for byte, everywhere a tool is resolved (sessions, offered tools, the env's prompt,
the registry, the reward, the conformance suite)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field
from sqlalchemy import Integer, String, bindparam, func, insert, select
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from prove_gym import EnvVersion, SampleContext, Server, ToolContext, hookimpl
from prove_gym.env.env import ProveEnv
from prove_gym.episode import Episode
from prove_gym.mcp.tools import mcp_tool
from prove_gym.registry import Registry
from prove_gym.server import PreconditionFailed, Query, TypedDict, next_id
from prove_gym.server.errors import ErrorKind
from prove_gym.server.session import Session
from prove_gym.server.tool import retold, tool
from prove_gym.task import Task, TaskError
from prove_gym.testing.conformance import (
    check_call_sequences,
    check_fuzz,
    check_output_schema,
    check_phrasings,
    check_tool_contract,
    conformance_suite,
)
from prove_gym.workspace import gold_replay, offered_tools


class _Base(DeclarativeBase):
    pass


class _Entry(_Base):
    __tablename__ = "entries"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    amount: Mapped[int] = mapped_column(Integer)
    key: Mapped[str | None] = mapped_column(String(32), nullable=True)


class EntryOut(TypedDict):
    entry_id: str
    amount: int


ADD = Query(insert(_Entry).values(id=bindparam("id"), amount=bindparam("a"), key=bindparam("k")))
BY_KEY = Query(select(_Entry.id, _Entry.amount).where(_Entry.key == bindparam("k")))
Amount = Annotated[int, Field(ge=1, le=1000)]


def _sample(ctx: SampleContext) -> None:
    ctx.db.add(_Entry(id="ent_001", amount=5, key=None))


def add_entry(ctx: ToolContext, amount: Amount) -> EntryOut:
    """Add an entry to the ledger.

    Args:
        amount: Whole units, such as 12.
    """
    entry = next_id(ctx, _Entry.id, "ent", 3)
    ctx.sql.run(ADD, id=entry, a=amount, k=None)
    return {"entry_id": entry, "amount": amount}


def add_entry_v1(
    ctx: ToolContext,
    amount: Amount,
    key: Annotated[str | None, Field(min_length=1, max_length=32)] = None,
) -> EntryOut:
    """Add an entry to the ledger; a retry with the same key adds nothing again.

    Args:
        amount: Whole units, such as 12.
        key: An idempotency key of your choosing, such as "rent-march".
    """
    if key is not None:
        found = ctx.sql.first(BY_KEY, k=key)
        if found is not None:
            if found.amount != amount:
                raise PreconditionFailed(
                    f"Rule 'key_reused' failed: key {key!r} added {found.amount}, not {amount}."
                )
            return {"entry_id": found.id, "amount": found.amount}
    entry = next_id(ctx, _Entry.id, "ent", 3)
    ctx.sql.run(ADD, id=entry, a=amount, k=key)
    return {"entry_id": entry, "amount": amount}


PHRASINGS = ["Add {amount} to the ledger", "Book {amount} units"]


def _server(tmp_path: Path | None = None, *, redefine: bool = True) -> Server:
    """``ledger``: ``add_entry`` takes an idempotency ``key`` from v1 on (``redefine``)."""
    server = Server(
        "ledger",
        version="2",
        base=_Base,
        sampler=_sample,
        description="A ledger.",
        env_versions=[EnvVersion(1, "add_entry takes an idempotency key"), EnvVersion(2, "same")],
    )
    server.tool(writes=True, returns="entry", phrasings=PHRASINGS)(add_entry)
    if redefine:
        server.tool(name="add_entry", since=1, writes=True, returns="entry", phrasings=PHRASINGS)(
            add_entry_v1
        )

    @server.entity("entry", key="entry_id", model=_Entry)
    def entries(ctx: ToolContext) -> list[dict[str, Any]]:
        return [{"entry_id": "ent_001", "amount": 5}]

    return server


def _registry(server: Server) -> Registry:
    class Plugin:
        @hookimpl
        def prove_gym_servers(self) -> list[Server]:
            return [server]

    registry = Registry(load_entrypoints=False)
    registry.register(Plugin(), name=server.name)
    return registry


def _task(version: int, arguments: dict[str, Any], **extra: Any) -> Task:
    step = {"id": "s1", "name": "add_entry", "arguments": arguments}
    data = {"id": f"ledger-v{version}", "servers": ["ledger"], "turns": [{"user": "Add 7."}]}
    data["turns"][0]["steps"] = [step]  # type: ignore[index]
    if version:
        data["env_versions"] = {"ledger": version}
    return Task.from_json({**data, **extra})


def _key_properties(spec: Any) -> set[str]:
    return set(spec.input_schema()["properties"])


def test_earlier_versions_keep_the_first_definition_byte_for_byte() -> None:
    plain, server = _server(redefine=False), _server()
    first, later = server.tools_for(0)["add_entry"], server.tools_for(1)["add_entry"]
    before = plain.tools["add_entry"]
    assert server.tools["add_entry"] is first and first.since == 0 and later.since == 1
    for shown in (
        lambda s: json.dumps(s.input_schema(), sort_keys=True),
        lambda s: json.dumps(s.openai_schema(), sort_keys=True),
        lambda s: mcp_tool(s).model_dump_json(),
        lambda s: s.description,
    ):
        assert shown(first) == shown(before) != shown(later)
    assert _key_properties(first) == {"amount"} and _key_properties(later) == {"amount", "key"}
    assert server.tools_for(2)["add_entry"] is later  # every later version too
    assert list(server.tools_for(2)) == list(server.tools)  # the same tools, in their order
    assert [t.since for t in server.visible_tools(1)] == [1]
    assert server.definitions() == [first, later]


def test_a_session_plays_its_versions_definition() -> None:
    server = _server()
    with server.session() as v0, server.session(env_version=1) as v1:
        refused = v0.call("add_entry", {"amount": 7, "key": "rent-march"})
        assert refused.error_kind == ErrorKind.BAD_ARGUMENTS and "key" in (refused.message or "")
        first = v1.call("add_entry", {"amount": 7, "key": "rent-march"})
        again = v1.call("add_entry", {"amount": 7, "key": "rent-march"})
        assert first.content == again.content == {"entry_id": "ent_002", "amount": 7}
        reused = v1.call("add_entry", {"amount": 8, "key": "rent-march"})
        assert reused.error_kind == ErrorKind.PRECONDITION_FAILED
        assert "Rule 'key_reused'" in (reused.message or "")
        assert v1.fork().call("add_entry", {"amount": 7, "key": "rent-march"}).content == (
            first.content
        )


@settings(max_examples=40, deadline=None)
@given(key=st.text(max_size=64), amount=st.integers(-5, 2000))
def test_v0_refuses_the_new_parameter_whatever_it_is(key: str, amount: int) -> None:
    with _LEDGER.session() as v0:
        before = v0.state_hash()
        result = v0.call("add_entry", {"amount": amount, "key": key})
        assert result.error_kind == ErrorKind.BAD_ARGUMENTS and v0.state_hash() == before


_LEDGER = _server()


def test_offered_tools_and_the_prompt_follow_the_tasks_version(tmp_path: Path) -> None:
    server = _server()
    registry = _registry(server)
    v0, v1 = _task(0, {"amount": 7}), _task(1, {"amount": 7, "key": "k1"})
    assert offered_tools(v0, registry)["add_entry"] is server.tools["add_entry"]
    assert offered_tools(v1, registry)["add_entry"].since == 1
    named = v1.model_copy(update={"tools": ["ledger.add_entry"]})  # by name, not by server
    assert offered_tools(named, registry)["add_entry"].since == 1
    assert registry.get_tool("ledger.add_entry").since == 0
    assert registry.get_tool("ledger.add_entry", 2).since == 1
    with Episode(v0, registry=registry) as e0, Episode(v1, registry=registry) as e1:
        [t0], [t1] = e0.tools, e1.tools
        assert "key" not in t0["function"]["parameters"]["properties"]
        assert "key" in t1["function"]["parameters"]["properties"]
        assert '"key"' in e1.observation and '"key"' not in e0.observation
    records, _ = gold_replay(v1, registry)
    assert records[0].result.ok
    records, _ = gold_replay(v1.model_copy(update={"env_versions": {}}), registry)
    assert records[0].result.error_kind == ErrorKind.BAD_ARGUMENTS  # v1's gold, played by v0


def test_the_v1_env_offers_and_plays_the_new_definition() -> None:
    from prove_gym.eval import OraclePolicy

    server = _server()
    registry = _registry(server)
    task = _task(1, {"amount": 7, "key": "k1"})
    task = task.model_copy(update={"final_state_hash": gold_replay(task, registry)[1]})
    for version, has_key in ((0, False), (1, True)):
        pool = [task] if version else []
        env = ProveEnv("ledger", tasks=pool, registry=registry, env_version=version)
        if version:
            _, info = env.reset(options={"task_index": 0})
        else:
            _, info = env.reset(options={"task": _task(0, {"amount": 7})})
        [offered] = info["tools"]
        assert ("key" in offered["function"]["parameters"]["properties"]) == has_key
        episode = env.episode
        assert episode is not None
        agent = OraclePolicy().start(episode)
        while not episode.done:
            episode.step(agent.act(episode))
        assert episode.breakdown is not None
        assert episode.breakdown.total == episode.breakdown.max_total
        env.close()


def test_a_redefinition_is_declared_with_add_tools_too() -> None:
    server = Server(
        "ledger",
        version="2",
        base=_Base,
        sampler=_sample,
        env_versions=[EnvVersion(1, "add_entry takes an idempotency key")],
    )
    first = tool(writes=True, phrasings=PHRASINGS)(add_entry)
    later = tool(name="add_entry", since=1, writes=True, phrasings=PHRASINGS)(add_entry_v1)
    server.add_tools([first, later])
    assert list(server.tools) == ["add_entry"] and server.tools_for(1)["add_entry"].since == 1


RETOLD = """Add an entry to the ledger; from this version the ledger counts in cents.

    Args:
        amount: Whole cents, such as 1200.
    """


def test_a_retold_tool_says_something_new_and_does_the_same() -> None:
    server = Server(
        "ledger",
        version="2",
        base=_Base,
        sampler=_sample,
        env_versions=[EnvVersion(1, "the ledger counts in cents")],
    )
    first = tool(writes=True, returns="entry", phrasings=PHRASINGS)(add_entry)
    later = retold(first, RETOLD, since=1, module=__name__)
    server.add_tools([first, later])
    old, new = server.tools_for(0)["add_entry"], server.tools_for(1)["add_entry"]
    assert (old.since, new.since) == (0, 1)
    assert old.description == "Add an entry to the ledger."
    assert new.description.startswith("Add an entry to the ledger; from this version")
    assert new.params[0].description == "Whole cents, such as 1200."
    # the same options, parameters, result and code: only what the model reads is new
    assert (new.writes, new.returns, new.phrasings) == (old.writes, old.returns, old.phrasings)
    assert new.output_schema == old.output_schema
    assert new.input_schema()["properties"]["amount"]["maximum"] == 1000
    with server.session() as v0, server.session(env_version=1) as v1:
        assert (
            v0.call("add_entry", {"amount": 7}).content
            == v1.call("add_entry", {"amount": 7}).content
        )


def test_only_a_declared_tool_is_retold_and_with_words() -> None:
    def undeclared(ctx: ToolContext, amount: Amount) -> EntryOut:
        """Add an entry.

        Args:
            amount: Whole units, such as 12.
        """
        return add_entry(ctx, amount)

    with pytest.raises(TypeError, match="not declared with @tool"):
        retold(undeclared, RETOLD, since=1, module=__name__)
    declared = tool(writes=True)(undeclared)
    with pytest.raises(TypeError, match="write the docstring"):
        retold(declared, "  ", since=1, module=__name__)


@pytest.mark.parametrize(
    ("since", "name", "hidden", "match"),
    [
        (3, "add_entry", False, "not one of its env versions"),
        (1, "add_entry", True, "is hidden, its earlier definition is not"),
    ],
)
def test_a_redefinition_must_name_a_declared_tool_and_version(
    since: int, name: str, hidden: bool, match: str
) -> None:
    server = _server(redefine=False)
    with pytest.raises(ValueError, match=match):
        server.tool(name=name, since=since, writes=True, hidden=hidden)(add_entry_v1)


def test_a_tool_is_redefined_once_per_version() -> None:
    server = _server()
    with pytest.raises(ValueError, match="since=1 twice"):
        server.tool(name="add_entry", since=1, writes=True, phrasings=PHRASINGS)(add_entry_v1)
    server.tool(name="add_entry", since=2, writes=True, phrasings=PHRASINGS)(add_entry)
    assert [server.tools_for(v)["add_entry"].since for v in (0, 1, 2)] == [0, 1, 2]


def test_the_conformance_checks_take_each_definition() -> None:
    server = _server()
    later = server.tools_for(1)["add_entry"]
    for check in (check_tool_contract, check_output_schema, check_phrasings):
        check(server, later)
        check(server, "add_entry@v1")
    check_fuzz(server, "add_entry@v1", samples=["rent-march"], max_examples=20)
    suite = conformance_suite("ledger", registry=_registry(server))
    [mark] = suite.test_fuzz.pytestmark  # type: ignore[attr-defined]
    assert mark.args == ("tool", ["add_entry", "add_entry@v1"])
    with pytest.raises(KeyError, match="does not redefine 'add_entry' since=2"):
        check_tool_contract(server, "add_entry@v2")


def test_call_sequences_under_a_version_call_its_definition() -> None:
    """Only v1's definition can write a key: an invariant against keys fails there alone."""
    server = _server()

    def no_keys(session: Session) -> list[str]:
        rows = session.raw_connection.execute("SELECT id FROM entries WHERE key IS NOT NULL")
        return [f"{entry} has a key" for (entry,) in rows.fetchall()]

    check_call_sequences(server, invariants=no_keys, samples=["k1"], max_examples=5, steps=5)
    with pytest.raises(AssertionError, match="has a key"):
        check_call_sequences(
            server, invariants=no_keys, samples=["k1"], max_examples=10, steps=5, version=1
        )


class CountOut(TypedDict):
    entries: int


COUNT = Query(select(func.count()).select_from(_Entry))


def count_entries(ctx: ToolContext) -> CountOut:
    """Count the ledger's entries."""
    return {"entries": int(ctx.sql.scalar(COUNT))}


def test_a_tool_new_in_a_version_is_neither_offered_nor_run_before_it() -> None:
    server = _server()
    server.tool(since=2, phrasings=["How many entries?", "Count the entries"])(count_entries)
    registry = _registry(server)
    assert "count_entries" not in server.tools and list(server.tools_for(1)) == ["add_entry"]
    assert list(server.tools_for(2)) == ["add_entry", "count_entries"]
    assert server.tools_for(2)["count_entries"].since == 2 and not server.problems()
    with server.session(env_version=1) as v1, server.session(env_version=2) as v2:
        assert v1.call("count_entries").error_kind == ErrorKind.UNKNOWN_TOOL
        assert "count_entries" not in (v1.call("count").message or "")
        assert v2.call("count_entries").content == {"entries": 1}
    task = _task(2, {"amount": 7}).model_copy(update={"tools": None})
    assert list(offered_tools(task, registry)) == ["add_entry", "count_entries"]
    earlier = task.model_copy(update={"env_versions": {"ledger": 1}})
    assert list(offered_tools(earlier, registry)) == ["add_entry"]
    counting = Task.from_json(
        {
            "id": "ledger-count",
            "servers": ["ledger"],
            "turns": [{"user": "Count.", "steps": [{"id": "s1", "name": "count_entries"}]}],
        }
    )
    with pytest.raises(TaskError, match="does not have"):  # v0 has no such tool
        gold_replay(counting, registry)
    records, _ = gold_replay(counting.model_copy(update={"env_versions": {"ledger": 2}}), registry)
    assert records[0].result.content == {"entries": 1}
    suite = conformance_suite("ledger", registry=registry)
    [mark] = suite.test_fuzz.pytestmark  # type: ignore[attr-defined]
    assert mark.args == ("tool", ["add_entry", "add_entry@v1", "count_entries@v2"])
    check_fuzz(server, "count_entries@v2", max_examples=5)
    with pytest.raises(ValueError, match="declares tool 'count_entries' twice"):
        server.tool(phrasings=["Count"])(count_entries)
