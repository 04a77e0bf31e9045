"""ProveMCPServer through the SDK's in-process client: schemas, results, errors, isolation."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

import prove_gym
from prove_gym import Server, Task, Turn
from prove_gym.env.env import ProveEnv
from prove_gym.mcp import (
    ERROR_META,
    RESET_TOOL,
    STATE_HASH_TOOL,
    ProveMCPServer,
    SessionStore,
    structured,
)
from prove_gym.synth.ship import is_hand_written

SEED = 7
MODES = ["auto", "legacy"]  # 2026-07-28 direct dispatch, and the initialize handshake


def _text(result: Any) -> str:
    assert len(result.content) == 1
    return result.content[0].text


def assert_same(mcp_result: Any, env_result: prove_gym.ToolResult) -> None:
    """An MCP result carries exactly what the env's result carries."""
    assert mcp_result.is_error is (not env_result.ok)
    assert _text(mcp_result) == env_result.to_text()
    if env_result.ok:
        assert mcp_result.structured_content == structured(env_result.content)
    else:
        assert mcp_result.structured_content is None  # the output schema describes success
        assert mcp_result.meta is not None
        assert mcp_result.meta[ERROR_META] == {"kind": str(env_result.error_kind)}


@pytest.mark.parametrize("name", sorted(prove_gym.get_registry().servers))
def test_every_installed_server_lists_the_envs_tools_schemas_and_annotations(name: str) -> None:
    server = prove_gym.get_server(name)
    listed = {t.name: t for t in ProveMCPServer(server, seed=SEED).tools}
    assert list(listed) == [t.name for t in server.visible_tools()]
    for spec in server.visible_tools():
        tool = listed[spec.name]
        assert tool.input_schema == spec.input_schema()
        assert tool.description == spec.description
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (not spec.writes)
        assert tool.annotations.destructive_hint is spec.destructive
        assert tool.annotations.idempotent_hint is spec.idempotent


@pytest.mark.parametrize("mode", MODES)
async def test_tools_list_over_the_wire_matches_the_env(calendar: Server, mode: str) -> None:
    async with Client(ProveMCPServer(calendar, seed=SEED), mode=mode) as client:
        tools = (await client.list_tools()).tools
    specs = calendar.visible_tools()
    assert len(tools) == len(specs) == 17
    for tool, spec in zip(tools, specs, strict=True):
        assert (tool.name, tool.description, tool.input_schema) == (
            spec.name,
            spec.description,
            spec.input_schema(),
        )
        assert tool.annotations.read_only_hint is (not spec.writes)
    assert {RESET_TOOL, STATE_HASH_TOOL}.isdisjoint(t.name for t in tools)


@pytest.mark.parametrize("mode", MODES)
async def test_read_and_write_tools_return_the_envs_results(calendar: Server, mode: str) -> None:
    reference = calendar.session(SEED)
    calls = [
        ("list_calendars", {}),
        ("get_event", {"event_id": "evt_0001"}),
        ("create_event", {"calendar_id": "cal_01", "title": "Budget", "start": "2026-04-01T10:00"}),
        ("get_event", {"event_id": "evt_0301"}),
    ]
    async with Client(ProveMCPServer(calendar, seed=SEED), mode=mode) as client:
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            assert_same(result, reference.call(name, arguments))
            assert not result.is_error
        digest = await client.call_tool(STATE_HASH_TOOL, {})
    assert isinstance(json.loads(_text(result)), dict)
    assert digest.structured_content == {"state_hash": reference.state_hash()}


@pytest.mark.parametrize("mode", MODES)
async def test_bad_arguments_are_tool_errors_with_the_envs_actionable_message(
    calendar: Server, mode: str
) -> None:
    reference = calendar.session(SEED)
    bad = [
        ("create_event", {"title": 3}),
        ("create_event", {"calendar_id": "cal_01", "title": "x", "start": "tomorrow at 3"}),
        ("get_event", {"event_id": "evt_0001", "verbose": True}),
        ("get_event", {"event_id": "evt_9999"}),
        ("list_events", {"start_date": ["2026-03-01"], "end_date": None}),
    ]
    async with Client(ProveMCPServer(calendar, seed=SEED), mode=mode) as client:
        for name, arguments in bad:
            result = await client.call_tool(name, arguments)
            expected = reference.call(name, arguments)
            assert result.is_error and not expected.ok
            assert_same(result, expected)
        assert "required but missing" in _text(await client.call_tool("create_event", {}))
        digest = await client.call_tool(STATE_HASH_TOOL, {})
    assert digest.structured_content["state_hash"] == calendar.session(SEED).state_hash()


@pytest.mark.parametrize("mode", MODES)
async def test_an_unknown_tool_is_a_clean_protocol_error_that_suggests_names(
    calendar: Server, mode: str
) -> None:
    async with Client(ProveMCPServer(calendar, seed=SEED), mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("list_calendar", {})
        assert (await client.call_tool("list_calendars", {})).is_error is False
    assert caught.value.code == INVALID_PARAMS
    assert "There is no tool named 'list_calendar'" in caught.value.message
    assert "Did you mean list_calendars" in caught.value.message
    assert caught.value.data == {"kind": "unknown_tool"}


async def test_reset_restores_the_seeded_state_and_helpers_take_no_arguments(
    calendar: Server,
) -> None:
    initial = calendar.session(SEED).state_hash()
    async with Client(ProveMCPServer(calendar, seed=SEED)) as client:
        await client.call_tool("delete_event", {"event_id": "evt_0001"})
        changed = await client.call_tool(STATE_HASH_TOOL, {})
        reset = await client.call_tool(RESET_TOOL, {})
        after = await client.call_tool("get_event", {"event_id": "evt_0001"})
        wrong = await client.call_tool(RESET_TOOL, {"server": "calendar"})
    assert changed.structured_content["state_hash"] != initial
    assert reset.structured_content == {"state_hash": initial, "reset": True}
    assert not after.is_error
    assert wrong.is_error and "takes no arguments" in _text(wrong)


async def test_two_clients_never_see_each_others_writes(calendar: Server) -> None:
    server = ProveMCPServer(calendar, seed=SEED)
    initial = calendar.session(SEED).state_hash()
    async with Client(server) as alice, Client(server, mode="legacy") as bob:
        assert server.store.active == 2
        created = await alice.call_tool(
            "create_event", {"calendar_id": "cal_01", "title": "Alice", "start": "2026-04-01T10:00"}
        )
        await bob.call_tool("delete_event", {"event_id": "evt_0002"})
        seen_by_bob = await bob.call_tool(
            "get_event", {"event_id": created.structured_content["event_id"]}
        )
        seen_by_alice = await alice.call_tool("get_event", {"event_id": "evt_0002"})
        hashes = [
            (await c.call_tool(STATE_HASH_TOOL, {})).structured_content["state_hash"]
            for c in (alice, bob)
        ]
    assert seen_by_bob.is_error and "evt_0301" in _text(seen_by_bob)
    assert not seen_by_alice.is_error
    assert len({initial, *hashes}) == 3
    assert server.store.active == 0


async def test_a_full_store_refuses_a_new_session_with_a_clear_error(calendar: Server) -> None:
    server = ProveMCPServer(calendar, seed=SEED, store=SessionStore(max_sessions=1))
    async with Client(server) as first:
        with pytest.raises(Exception, match="limit of 1 concurrent MCP sessions"):
            async with Client(server):
                pass
        assert not (await first.call_tool("list_calendars", {})).is_error
    async with Client(server) as again:
        assert not (await again.call_tool("list_calendars", {})).is_error


def _episode_results(steps: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], str]:
    task = Task(id="mcp-parity", servers=["calendar"], seed=SEED, turns=[Turn(user="Go ahead.")])
    env = ProveEnv("calendar", tasks=[task])
    env.reset(seed=0, options={"task": task})
    _, _, _, _, info = env.step([{"name": n, "arguments": a} for n, a in steps])
    results = [prove_gym.ToolResult.from_dict(r["result"]) for r in info["call_results"]]
    return results, env.state_hash()


@pytest.mark.parametrize("offload", [False, True])
async def test_one_trajectory_gives_identical_results_and_state_over_mcp_and_the_env(
    calendar: Server, offload: bool
) -> None:
    steps = [
        (s.name, s.arguments)
        for t in prove_gym.get_registry().tasks("calendar")
        if is_hand_written(t)  # a few calls of one message (the env runs 32 at most)
        for turn in t.turns
        for s in turn.steps
    ]
    steps += [
        (
            "create_event",
            {"calendar_id": "cal_02", "title": "Dentist", "start": "2026-04-03T08:30"},
        ),
        ("set_recurrence", {"event_id": "evt_0001", "frequency": "weekly", "count": 4}),
        ("remove_invitee", {"event_id": "evt_0001", "email": "nobody@example.com"}),
        ("update_event", {"event_id": "evt_0002", "duration_minutes": -5}),
        ("delete_event", {"event_id": "evt_0003"}),
    ]
    env_results, env_hash = _episode_results(steps)
    async with Client(ProveMCPServer(calendar, seed=SEED, offload=offload)) as client:
        for (name, arguments), expected in zip(steps, env_results, strict=True):
            assert_same(await client.call_tool(name, arguments), expected)
        mcp_hash = (await client.call_tool(STATE_HASH_TOOL, {})).structured_content["state_hash"]
    assert any(not r.ok for r in env_results) and any(r.ok for r in env_results)
    assert mcp_hash == env_hash != calendar.session(SEED).state_hash()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 400) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
calendar_tools = [t.name for t in prove_gym.get_server("calendar").visible_tools()]
argument_names = sorted(
    {p.name for t in prove_gym.get_server("calendar").visible_tools() for p in t.params} | {"bogus"}
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(
        st.tuples(
            st.sampled_from(calendar_tools),
            st.dictionaries(st.sampled_from(argument_names), json_values, max_size=4),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_any_arguments_get_the_same_answer_over_mcp_as_in_process(calls: list) -> None:
    calendar = prove_gym.get_server("calendar")

    async def run() -> None:
        reference = calendar.session(SEED)
        async with Client(ProveMCPServer(calendar, seed=SEED)) as client:
            for name, arguments in calls:
                assert_same(
                    await client.call_tool(name, arguments), reference.call(name, arguments)
                )
            digest = await client.call_tool(STATE_HASH_TOOL, {})
        assert digest.structured_content["state_hash"] == reference.state_hash()

    anyio.run(run)


async def test_several_servers_share_one_connection_with_prefixed_names(
    calendar: Server, notes_server: Server
) -> None:
    server = ProveMCPServer([calendar, notes_server], seed=SEED)
    async with Client(server) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        added = await client.call_tool("notes__add_note", {"text": "buy milk"})
        read = await client.call_tool("calendar__get_event", {"event_id": "evt_0001"})
        hidden = await client.call_tool("notes__count_notes", {})
        digest = await client.call_tool(STATE_HASH_TOOL, {})
        with pytest.raises(MCPError, match="Did you mean notes__add_note"):
            await client.call_tool("add_note", {"text": "x"})
    assert names == [f"calendar__{t.name}" for t in calendar.visible_tools()] + [
        "notes__add_note",
        "notes__get_note",
    ]
    assert added.structured_content == {"note_id": "note_4", "text": "buy milk"}
    assert not read.is_error
    assert hidden.structured_content == {"count": 4}
    assert set(digest.structured_content["servers"]) == {"calendar", "notes"}


def test_clashing_tool_names_need_prefixes(notes_server: Server) -> None:
    clash = Server("clash", version="1", base=notes_server.base, sampler=notes_server.sampler)
    clash.tool(notes_server.tools["add_note"].fn)
    with pytest.raises(ValueError, match="prefix=True"):
        ProveMCPServer([notes_server, clash], prefix=False)
    names = [t.name for t in ProveMCPServer([notes_server, clash]).tools]
    assert "clash__add_note" in names and "notes__add_note" in names


async def test_every_tool_of_every_server_lists_an_output_schema_its_results_validate() -> None:
    import jsonschema

    registry = prove_gym.get_registry()
    for name, server in registry.servers.items():
        task = next(t for t in registry.tasks(name) if t.steps and t.size is None)
        async with Client(ProveMCPServer(server, seed=task.seed)) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listed) == {t.name for t in server.visible_tools()}, name
            assert all(t.output_schema for t in listed.values()), name
            for step in task.steps:  # the gold calls succeed on the task's own state
                result = await client.call_tool(step.name, step.arguments)
                assert not result.is_error, (name, step.name)
                jsonschema.validate(result.structured_content, listed[step.name].output_schema)


async def test_every_tools_error_results_carry_text_and_kind_but_no_structured_content() -> None:
    """Strict clients validate any structured content against the output schema, which
    describes success; an error result of any tool of any server has none."""
    for name, server in prove_gym.get_registry().servers.items():
        with server.session(SEED) as reference:
            async with Client(ProveMCPServer(server, seed=SEED)) as client:
                for tool in server.visible_tools():
                    arguments = {"no_such_argument": [None]}
                    result = await client.call_tool(tool.name, arguments)
                    expected = reference.call(tool.name, arguments)
                    assert result.is_error and not expected.ok, (name, tool.name)
                    assert_same(result, expected)
