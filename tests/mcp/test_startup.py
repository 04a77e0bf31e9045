"""What a stdio server does before it answers ``initialize``: as little as it can.

An MCP client that launches ``prove-gym serve`` waits for that answer (with a timeout);
the state is sampled at the session's first tool call, and neither Gymnasium nor the
HTTP transport is imported (``benchmarks/bench_startup.py`` measures the CPU it saves).
"""

from __future__ import annotations

import json
import subprocess
import sys

from mcp import Client

from prove_gym import Server
from prove_gym.mcp import STATE_HASH_TOOL, ProveMCPServer

SEED = 7
UNSAMPLED = 424_242  # a seed no other test samples


async def test_a_lazy_server_samples_at_the_first_call_and_answers_as_an_eager_one(
    calendar: Server,
) -> None:
    calendar.forget(UNSAMPLED)
    lazy = ProveMCPServer(calendar, seed=UNSAMPLED, lazy=True)
    calls = [
        ("create_event", {"calendar_id": "cal_01", "title": "Budget", "start": "2026-04-01T10:00"}),
        ("get_event", {"event_id": "evt_0001"}),
    ]
    async with Client(lazy) as client:
        assert lazy.store.active == 0  # connected and initialized: nothing opened yet
        assert calendar.template(UNSAMPLED) is not None  # (sampled here, by this test)
        calendar.forget(UNSAMPLED)
        listed = (await client.list_tools()).tools
        assert lazy.store.active == 0
        lazy_results = [await client.call_tool(n, a) for n, a in calls]
        assert lazy.store.active == 1
        lazy_hash = await client.call_tool(STATE_HASH_TOOL, {})
    assert lazy.store.active == 0
    eager = ProveMCPServer(calendar, seed=UNSAMPLED)
    async with Client(eager) as client:
        assert eager.store.active == 1
        eager_results = [await client.call_tool(n, a) for n, a in calls]
        eager_hash = await client.call_tool(STATE_HASH_TOOL, {})
    async with Client(eager) as client:
        eager_listed = (await client.list_tools()).tools
    assert [t.model_dump() for t in listed] == [t.model_dump() for t in eager_listed]
    assert [t.name for t in listed] == [t.name for t in calendar.visible_tools()]
    assert [r.model_dump() for r in lazy_results] == [r.model_dump() for r in eager_results]
    assert lazy_hash.structured_content == eager_hash.structured_content


def test_the_stdio_server_imports_no_http_transport_and_no_gymnasium() -> None:
    code = (
        "import json, sys\n"
        "from prove_gym.cli.serve_cmd import run\n"
        "from prove_gym.mcp.stdio import serve_stdio\n"
        "import prove_gym; prove_gym.get_server('calendar')\n"
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m in ('gymnasium', 'prove_gym.mcp.transports'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
