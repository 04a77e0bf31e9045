"""How a prove_gym tool looks on the MCP wire: its definition and its results.

Nothing here is specific to a server: a :class:`~prove_gym.server.tool.ToolSpec`
becomes an MCP ``Tool`` with the very schema and description the env offers,
and a :class:`~prove_gym.server.result.ToolResult` becomes a ``tools/call``
result with structured content (success only) and the text block the env shows
the model.
"""

from __future__ import annotations

from typing import Any, Final

import mcp.types as types

from prove_gym.server.result import ToolResult
from prove_gym.server.tool import ToolSpec

RESET_TOOL: Final = "__reset__"
"""Hidden helper: restore this MCP session's state to the seeded initial state."""

STATE_HASH_TOOL: Final = "__state_hash__"
"""Hidden helper: the canonical hash of this MCP session's current state."""

HELPER_TOOLS: Final = (RESET_TOOL, STATE_HASH_TOOL)
"""Reserved names: callable by any client, never listed by ``tools/list``."""

ERROR_META: Final = "prove-gym/error"
"""``_meta`` key of an error result: ``{"kind": "not_found"}`` (the :class:`ErrorKind`)."""

PREFIX_SEPARATOR: Final = "__"
"""Joins server and tool names when one MCP server serves several servers
(``calendar__create_event``): allowed by every client's tool-name rules."""


def mcp_tool(spec: ToolSpec, name: str | None = None) -> types.Tool:
    """The MCP definition of ``spec``, under ``name`` (default: the tool's own name).

    The input schema and description are exactly what the env offers the model;
    the output schema comes from the tool's typed return (results that are not
    objects travel as ``{"result": ...}``, as :func:`structured` wraps them);
    read/write metadata becomes MCP tool annotations. The simulated world is
    closed, so ``openWorldHint`` is false.

    >>> tool = mcp_tool(get_server("calendar").tools["list_calendars"])
    >>> tool.annotations.read_only_hint
    True
    """
    return types.Tool(
        name=name or spec.name,
        description=spec.description,
        input_schema=spec.input_schema(),
        output_schema=spec.output_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=not spec.writes,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        ),
    )


def structured(content: Any) -> dict[str, Any]:
    """``structuredContent`` for a tool's JSON value: objects as they are, anything
    else (a list, a string) wrapped as ``{"result": value}`` because MCP up to
    2025-11-25 requires an object."""
    return content if isinstance(content, dict) else {"result": content}


def call_result(result: ToolResult) -> dict[str, Any]:
    """The ``tools/call`` result (wire form) for a session's :class:`ToolResult`.

    Success: the JSON value as ``structuredContent`` plus one text block with the
    same text the env shows the model. Failure: ``isError`` with the env's
    actionable ``Error [kind]: message`` text and **no** ``structuredContent``:
    a client validates structured content against the tool's ``outputSchema``
    (the TypeScript SDK does so even for errors), which describes success only.
    The error kind travels in ``_meta`` under :data:`ERROR_META` for programs that
    should not parse the text.
    """
    text = [{"type": "text", "text": result.to_text()}]
    if result.ok:
        return {
            "content": text,
            "structuredContent": structured(result.content),
            "isError": False,
            "resultType": "complete",
        }
    return {
        "content": text,
        "isError": True,
        "resultType": "complete",
        "_meta": {ERROR_META: {"kind": str(result.error_kind)}},
    }
