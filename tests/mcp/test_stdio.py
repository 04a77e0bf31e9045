"""`prove serve calendar` over stdio, launched by the SDK's stdio client."""

from __future__ import annotations

import sys

import anyio
from mcp import Client, StdioServerParameters

from prove_gym import Server
from prove_gym.mcp import RESET_TOOL, STATE_HASH_TOOL

SEED = 7


def _params(*servers: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "prove_gym", "serve", *servers, "--seed", str(SEED)]
    )


async def test_prove_serve_speaks_mcp_over_stdio_with_its_own_state(
    calendar: Server, trajectory, direct, over_mcp
) -> None:
    steps = trajectory(3)
    expected, expected_hash = direct(calendar, steps)
    with anyio.fail_after(60):
        async with Client(_params("calendar")) as client:
            tools = (await client.list_tools()).tools
            results, state_hash = await over_mcp(client, steps)
            reset = await client.call_tool(RESET_TOOL, {})
            after_reset = await client.call_tool(STATE_HASH_TOOL, {})
    assert [t.name for t in tools] == [t.name for t in calendar.visible_tools()]
    assert [t.input_schema for t in tools] == [t.input_schema() for t in calendar.visible_tools()]
    assert [r.is_error for r in results] == [not r.ok for r in expected]
    assert [r.content[0].text for r in results] == [r.to_text() for r in expected]
    assert state_hash == expected_hash
    initial = calendar.session(SEED).state_hash()
    assert reset.structured_content["state_hash"] == initial
    assert after_reset.structured_content["state_hash"] == initial
