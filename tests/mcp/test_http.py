"""`prove serve --transport http`: many concurrent sessions, each with its own state."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from prove_gym import Server
from prove_gym.mcp import ERROR_META, STATE_HASH_TOOL, SessionStore
from prove_gym.mcp.transports import http_app, http_endpoints, http_server

SEED = 7
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-httpx", "version": "0"},
    },
}


@pytest.fixture(scope="module")
def calendar_http(serve_http) -> Any:
    with serve_http("calendar", "--seed", str(SEED), "--max-sessions", "64") as process:
        yield process


def _open_raw_session(client: httpx.Client, url: str) -> dict[str, str]:
    """Initialize by hand; returns the headers that address the new session."""
    response = client.post(url, headers=HEADERS, json=INITIALIZE)
    assert response.status_code == 200, response.text
    headers = {
        **HEADERS,
        "mcp-session-id": response.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert client.post(url, headers=headers, json=note).status_code == 202
    return headers


def _tool_call(i: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": i,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


async def test_twenty_concurrent_clients_each_end_in_their_own_replayed_state(
    calendar_http, calendar: Server, trajectory, direct, over_mcp
) -> None:
    expected = {i: direct(calendar, trajectory(i)) for i in range(20)}
    outcome: dict[int, tuple[list[Any], str]] = {}
    before = calendar_http.health()

    async def client_run(i: int) -> None:
        async with Client(calendar_http.url("/mcp")) as client:
            outcome[i] = await over_mcp(client, trajectory(i))

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(client_run, i)
    for i, (results, state_hash) in outcome.items():
        replayed, replayed_hash = expected[i]
        assert [r.content[0].text for r in results] == [r.to_text() for r in replayed]
        assert state_hash == replayed_hash
    assert len({h for _, h in outcome.values()}) == 20
    after = calendar_http.wait_for(lambda h: h["sessions"] == before["sessions"])
    assert after["opened_total"] == before["opened_total"] + 20


async def test_the_server_survives_garbage_and_clients_that_vanish_mid_call(
    calendar_http, calendar: Server
) -> None:
    url = calendar_http.url("/mcp")
    with httpx.Client(timeout=10) as raw:
        session = _open_raw_session(raw, url)
        write = _tool_call(
            2,
            "create_event",
            {"calendar_id": "cal_01", "title": "Kept", "start": "2026-04-01T10:00"},
        )
        assert raw.post(url, headers=session, json=write).json()["result"]["isError"] is False
        garbage = [
            (HEADERS, b"{not json"),
            (session, b"{not json"),
            (session, b'{"jsonrpc": "2.0", "id": 3, "method": 17}'),
            (session, b'{"hello": "world"}'),
            (session, b"[]"),
            (session, b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": []}'),
            (session, b'{"jsonrpc": "2.0", "id": 5, "method": "no/such/method"}'),
            (
                {**HEADERS, "mcp-session-id": "forged"},
                b'{"jsonrpc": "2.0", "id": 6, "method": "tools/list"}',
            ),
        ]
        statuses = [raw.post(url, headers=h, content=body).status_code for h, body in garbage]
        assert all(400 <= s < 500 or s == 200 for s in statuses), statuses
        for i in range(3):  # send a call, then hang up before the answer
            with raw.stream(
                "POST", url, headers=session, json=_tool_call(10 + i, "list_calendars", {})
            ):
                pass
        with httpx.Client(timeout=10) as other:
            other_session = _open_raw_session(other, url)
            call = _tool_call(7, "get_event", {"event_id": "evt_0001"})
            assert (
                other.post(url, headers=other_session, json=call).json()["result"]["isError"]
                is False
            )
        digest = raw.post(url, headers=session, json=_tool_call(8, STATE_HASH_TOOL, {})).json()
        assert raw.delete(url, headers=session).status_code == 200
    reference = calendar.session(SEED)
    reference.call(
        "create_event", {"calendar_id": "cal_01", "title": "Kept", "start": "2026-04-01T10:00"}
    )
    assert digest["result"]["structuredContent"]["state_hash"] == reference.state_hash()
    assert calendar_http.alive()
    async with Client(url) as client:
        assert not (await client.call_tool("list_calendars", {})).is_error


def test_an_error_result_on_the_wire_has_text_and_kind_but_no_structured_content(
    calendar_http, calendar: Server
) -> None:
    """Strict clients (the TypeScript SDK) validate any ``structuredContent``, even an error's,
    against the tool's output schema, which describes success: an error result carries none."""
    url = calendar_http.url("/mcp")
    reference = calendar.session(SEED)
    calls = [("get_event", {"event_id": "evt_9999"}), ("create_event", {"title": 3})]
    with httpx.Client(timeout=10) as raw:
        session = _open_raw_session(raw, url)
        for i, (name, arguments) in enumerate(calls, start=2):
            result = raw.post(url, headers=session, json=_tool_call(i, name, arguments)).json()
            expected = reference.call(name, arguments)
            assert not expected.ok
            assert result["result"]["isError"] is True
            assert "structuredContent" not in result["result"]
            assert result["result"]["content"] == [{"type": "text", "text": expected.to_text()}]
            assert result["result"]["_meta"][ERROR_META] == {"kind": str(expected.error_kind)}
        ok = raw.post(
            url, headers=session, json=_tool_call(9, "get_event", {"event_id": "evt_0001"})
        )
        assert ok.json()["result"]["structuredContent"]["event_id"] == "evt_0001"
        assert raw.delete(url, headers=session).status_code == 200


@pytest.fixture(scope="module")
def limited_http(serve_http) -> Any:
    """Idle sessions end after 2 s, and at most 2 are open at once. (SDK clients keep
    a GET stream open, so they never count as idle while connected.)"""
    with serve_http("calendar", "--seed", str(SEED), "--ttl", "2", "--max-sessions", "2") as p:
        yield p


def test_idle_sessions_expire_after_the_ttl(limited_http) -> None:
    process = limited_http
    process.wait_for(lambda h: h["sessions"] == 0)
    url = process.url("/mcp")
    with httpx.Client(timeout=10) as raw:
        session = _open_raw_session(raw, url)
        call = _tool_call(2, "delete_event", {"event_id": "evt_0001"})
        assert raw.post(url, headers=session, json=call).json()["result"]["isError"] is False
        assert process.health()["sessions"] == 1
        process.wait_for(lambda h: h["sessions"] == 0, timeout=15)
        expired = raw.post(url, headers=session, json=_tool_call(3, "list_calendars", {}))
    assert expired.status_code == 404


async def test_the_session_limit_refuses_newcomers_clearly_until_a_session_ends(
    limited_http,
) -> None:
    process = limited_http
    process.wait_for(lambda h: h["sessions"] == 0)
    url = process.url("/mcp")
    with anyio.fail_after(60):
        async with Client(url) as first:
            async with Client(url) as second:
                assert process.health()["sessions"] == 2
                with pytest.raises(BaseException) as refused:
                    async with Client(url):
                        pass
                assert not (await second.call_tool("list_calendars", {})).is_error
            process.wait_for(lambda h: h["sessions"] == 1)
            async with Client(url) as third:
                assert not (await third.call_tool("list_calendars", {})).is_error
            assert not (await first.call_tool("list_calendars", {})).is_error
    messages = _messages(refused.value)
    assert any("limit of 2 concurrent MCP sessions" in m for m in messages), messages


def _messages(exc: BaseException) -> list[str]:
    if isinstance(exc, BaseExceptionGroup):
        return [m for e in exc.exceptions for m in _messages(e)]
    return [exc.message if isinstance(exc, MCPError) else str(exc)]


@contextlib.contextmanager
def listening(app: Any) -> Iterator[int]:
    """``http_server(app)`` serving on a free port in a thread: yields the port once ready."""
    ready = threading.Event()
    found: list[int] = []

    def on_ready(host: str, port: int) -> None:
        found.append(port)
        ready.set()

    server = http_server(app, port=0, on_ready=on_ready)
    thread = threading.Thread(target=lambda: anyio.run(server.serve), daemon=True)
    thread.start()
    try:
        assert ready.wait(30)
        yield found[0]
    finally:
        server.should_exit = True
        thread.join(15)


async def test_several_servers_are_mounted_under_their_names(
    calendar: Server, notes_server: Server
) -> None:
    store = SessionStore(max_sessions=8)
    app = http_app([calendar, notes_server], seed=SEED, store=store)
    with listening(app) as port:
        base = f"http://127.0.0.1:{port}"
        with anyio.fail_after(30):
            async with Client(f"{base}/calendar/mcp") as cal, Client(f"{base}/notes/mcp") as notes:
                cal_tools = [t.name for t in (await cal.list_tools()).tools]
                note_tools = [t.name for t in (await notes.list_tools()).tools]
                added = await notes.call_tool("add_note", {"text": "hi"})
                assert store.active == 2
        assert httpx.get(f"{base}/mcp").status_code == 404
        assert httpx.get(f"{base}/health").json()["endpoints"] == ["/calendar/mcp", "/notes/mcp"]
    assert cal_tools == [t.name for t in calendar.visible_tools()]
    assert note_tools == ["add_note", "get_note"]
    assert added.structured_content["note_id"] == "note_4"
    assert store.active == 0


def test_a_listening_server_takes_its_startup_heap_out_of_full_collections(
    calendar: Server,
) -> None:
    # A full collection walks every tracked object; frozen ones it skips. Without the
    # freeze, each full collection of a serving process walks its ~250,000 start-up
    # objects (about 170 ms, every few thousand calls).
    gc.unfreeze()
    app = http_app([calendar], seed=SEED)
    try:
        with listening(app):
            frozen = gc.get_freeze_count()  # settled before on_ready, so before this
    finally:
        gc.unfreeze()  # give this test process its collector back
    assert frozen > 50_000  # modules, schemas, mappers, the calendar's template


async def test_http_clients_are_steered_to_the_stateful_handshake_era(calendar_http) -> None:
    url = calendar_http.url("/calendar/mcp")
    with anyio.fail_after(30):
        async with Client(url) as auto:
            negotiated = auto.protocol_version
            assert not (await auto.call_tool("list_calendars", {})).is_error
        async with Client(url, mode="2026-07-28") as stateless:
            with pytest.raises(MCPError, match="no Mcp-Session-Id") as refused:
                await stateless.call_tool("list_calendars", {})
    assert negotiated == "2025-11-25"
    assert refused.value.code == -32600


def test_endpoints_are_per_server_unless_combined(calendar: Server, notes_server: Server) -> None:
    store = SessionStore()
    single = http_endpoints([calendar], store=store, seed=SEED)
    several = http_endpoints([calendar, notes_server], store=store, seed=SEED)
    combined = http_endpoints([calendar, notes_server], store=store, seed=SEED, combine=True)
    assert [e.path for e in single] == ["/mcp", "/calendar/mcp"]
    assert single[0].server is single[1].server
    assert [(e.path, e.server.prefixed) for e in several] == [
        ("/calendar/mcp", False),
        ("/notes/mcp", False),
    ]
    assert [e.path for e in combined] == ["/mcp"]
    assert "notes__add_note" in [t.name for t in combined[0].server.tools]
    assert all(e.server.store is store and e.server.http for e in single + several + combined)
