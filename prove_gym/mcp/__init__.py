"""Serve any prove_gym server over MCP (stdio or streamable HTTP), one state per session.

See ``docs/mcp.md``. :class:`ProveMCPServer` is the MCP server (an SDK low-level
server); :func:`serve_stdio`, :func:`http_app` and :func:`serve_http` run it.
"""

from prove_gym.mcp.server import ProveMCPServer, ToolRoute
from prove_gym.mcp.sessions import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_TTL,
    SessionLimitReached,
    SessionState,
    SessionStore,
)
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
    serve_stdio,
)

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
