"""`prove-gym serve` driven by the MCP Python SDK's client, over stdio and HTTP.

The same plan and checks as the TypeScript client's test (``conftest.py``): every tool
of every server, good and bad arguments, every result compared with the env's and every
structured result validated against its tool's output schema. The Python client also
validates a success's structured content itself (it skips error results).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent

import prove_gym

pytestmark = pytest.mark.slow  # about 55 s on a 2-core machine: every tool of every server, twice

CONNECTION_TIMEOUT_S = 300
"""Bound on one session's calls (about 20 s for every server on a 2-core machine)."""


async def _run(client: Client, connection: Any) -> dict[str, Any]:
    """The connection's report, in ``tests/interop/ts/interop.mjs``'s shape."""
    listed = (await client.list_tools()).tools
    tools = [{"name": t.name, "outputSchema": bool(t.output_schema)} for t in listed]
    results: list[dict[str, Any]] = []
    for tool, call in connection.calls:
        try:
            result = await client.call_tool(tool, call.arguments if call else {})
        except (MCPError, RuntimeError) as exc:  # RuntimeError: output-schema validation
            code = exc.error.code if isinstance(exc, MCPError) else None
            results.append({"rpcError": {"code": code, "message": str(exc)}})
            continue
        block = result.content[0] if len(result.content) == 1 else None
        text = block.text if isinstance(block, TextContent) else result.content
        results.append(
            {
                "isError": result.is_error,
                "text": text,
                "structuredContent": result.structured_content,
                "meta": result.meta,
            }
        )
    return {"name": connection.name, "tools": tools, "results": results, "failure": None}


async def test_the_python_client_accepts_every_result_over_stdio(
    stdio_session: Any, check: Any
) -> None:
    command, *args = stdio_session.target
    with anyio.fail_after(CONNECTION_TIMEOUT_S):
        async with Client(StdioServerParameters(command=command, args=args)) as client:
            report = await _run(client, stdio_session)
    check([stdio_session], [report])


async def test_the_python_client_accepts_every_result_over_http(
    http_sessions: list[Any], check: Any
) -> None:
    reports = []
    with anyio.fail_after(CONNECTION_TIMEOUT_S):
        for connection in http_sessions:
            async with (
                create_mcp_http_client(headers=connection.headers) as http,
                Client(streamable_http_client(connection.target, http_client=http)) as client,
            ):
                reports.append(await _run(client, connection))
    check(http_sessions, reports)


def test_every_tool_gets_a_well_formed_call_and_nearly_all_a_successful_one(
    plans: list[Any],
) -> None:
    """Guards the plan: without successes, validating structured results would be vacuous."""
    total = 0
    lacking = []
    for plan in plans:
        tools = {t.name for t in prove_gym.get_server(plan.server).visible_tools()}
        assert tools == {c.tool for c in plan.calls if c.good}, plan.server
        total += len(tools)
        lacking += [f"{plan.server}.{t}" for t in sorted(tools - plan.succeeded)]
    assert len(plans) == len(prove_gym.get_registry().servers)
    assert len(lacking) <= total // 20, f"{len(lacking)} of {total} never succeed: {lacking}"
