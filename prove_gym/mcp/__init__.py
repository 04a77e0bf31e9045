"""Serve any prove_gym server over MCP (stdio or streamable HTTP), one state per session.

See ``docs/mcp.md``. :class:`ProveMCPServer` is the MCP server (an SDK low-level
server); :func:`serve_stdio`, :func:`http_app` and :func:`serve_http` run it.

Each name is imported from its module on first use (PEP 562), so that a stdio server
never imports the HTTP transport (:mod:`prove_gym.mcp.transports`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prove_gym._lazy import lazy_names

if TYPE_CHECKING:
    from prove_gym.mcp.server import ProveMCPServer, ToolRoute
    from prove_gym.mcp.sessions import (
        DEFAULT_MAX_SESSIONS,
        DEFAULT_TTL,
        SessionLimitReached,
        SessionState,
        SessionStore,
    )
    from prove_gym.mcp.stdio import serve_stdio
    from prove_gym.mcp.tools import (
        ERROR_META,
        HELPER_TOOLS,
        PREFIX_SEPARATOR,
        RESET_TOOL,
        STATE_HASH_TOOL,
        call_result,
        mcp_tool,
        structured,
    )
    from prove_gym.mcp.transports import (
        Endpoint,
        http_app,
        http_endpoints,
        http_server,
        serve_http,
    )

_LAZY: dict[str, str] = {
    "DEFAULT_MAX_SESSIONS": "prove_gym.mcp.sessions",
    "DEFAULT_TTL": "prove_gym.mcp.sessions",
    "ERROR_META": "prove_gym.mcp.tools",
    "HELPER_TOOLS": "prove_gym.mcp.tools",
    "PREFIX_SEPARATOR": "prove_gym.mcp.tools",
    "RESET_TOOL": "prove_gym.mcp.tools",
    "STATE_HASH_TOOL": "prove_gym.mcp.tools",
    "Endpoint": "prove_gym.mcp.transports",
    "ProveMCPServer": "prove_gym.mcp.server",
    "SessionLimitReached": "prove_gym.mcp.sessions",
    "SessionState": "prove_gym.mcp.sessions",
    "SessionStore": "prove_gym.mcp.sessions",
    "ToolRoute": "prove_gym.mcp.server",
    "call_result": "prove_gym.mcp.tools",
    "http_app": "prove_gym.mcp.transports",
    "http_endpoints": "prove_gym.mcp.transports",
    "http_server": "prove_gym.mcp.transports",
    "mcp_tool": "prove_gym.mcp.tools",
    "serve_http": "prove_gym.mcp.transports",
    "serve_stdio": "prove_gym.mcp.stdio",
    "structured": "prove_gym.mcp.tools",
}

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_TTL",
    "ERROR_META",
    "HELPER_TOOLS",
    "PREFIX_SEPARATOR",
    "RESET_TOOL",
    "STATE_HASH_TOOL",
    "Endpoint",
    "ProveMCPServer",
    "SessionLimitReached",
    "SessionState",
    "SessionStore",
    "ToolRoute",
    "call_result",
    "http_app",
    "http_endpoints",
    "http_server",
    "mcp_tool",
    "serve_http",
    "serve_stdio",
    "structured",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
