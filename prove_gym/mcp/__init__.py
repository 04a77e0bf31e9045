"""Serve any prove_gym server over MCP (stdio or streamable HTTP), one state per session."""

from prove_gym.mcp.server import ProveMCPServer, ToolRoute
from prove_gym.mcp.sessions import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_TTL,
    SessionLimitReached,
    SessionState,
    SessionStore,
)
from prove_gym.mcp.tools import (
    HELPER_TOOLS,
    PREFIX_SEPARATOR,
    RESET_TOOL,
    STATE_HASH_TOOL,
    call_result,
    mcp_tool,
    structured,
)

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_TTL",
    "HELPER_TOOLS",
    "PREFIX_SEPARATOR",
    "RESET_TOOL",
    "STATE_HASH_TOOL",
    "ProveMCPServer",
    "SessionLimitReached",
    "SessionState",
    "SessionStore",
    "ToolRoute",
    "call_result",
    "mcp_tool",
    "structured",
]
