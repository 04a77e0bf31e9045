"""Per-MCP-session state: each client gets its own copy of the seeded state.

A :class:`SessionStore` hands out :class:`SessionState` objects (one prove_gym
:class:`~prove_gym.server.session.Session` per served server, cloned from the
cached template in well under a millisecond) and enforces the process-wide
limit on how many may be open at once. The transports decide when a state is
opened and closed (see :mod:`prove_gym.mcp.server`).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from prove_gym.mcp.tools import HELPER_TOOLS, RESET_TOOL
from prove_gym.server.base import Server
from prove_gym.server.errors import ErrorKind
from prove_gym.server.result import ToolResult
from prove_gym.server.session import Session
from prove_gym.server.state import combine_hashes

DEFAULT_MAX_SESSIONS = 256
"""Concurrent MCP sessions one process serves unless told otherwise."""

DEFAULT_TTL = 30 * 60.0
"""Seconds an HTTP session may stay idle before it (and its state) is dropped."""


class SessionLimitReached(Exception):
    """Raised when opening a session would exceed :attr:`SessionStore.max_sessions`."""


@dataclass(eq=False)
class SessionState:
    """One MCP session's private state: a prove_gym session per served server.

    Attributes:
        id: A number unique within the process, for logs.
        sessions: The isolated sessions, by server name.
        opened_at: ``time.monotonic()`` when the state was opened.
        last_used: ``time.monotonic()`` of the latest call.
        calls: How many tool calls (helpers included) it has served.
    """

    id: int
    sessions: dict[str, Session]
    opened_at: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Serialises calls made from worker threads (``offload=True``)."""

    @property
    def closed(self) -> bool:
        return any(s.closed for s in self.sessions.values())

    def call(self, server: str, tool: str, arguments: Any) -> ToolResult:
        """Run one tool through :meth:`Session.call`. Hidden tools are allowed: over
        MCP they are left out of ``tools/list`` but callable by name."""
        self.calls += 1
        self.last_used = time.monotonic()
        return self.sessions[server].call(tool, arguments, allow_hidden=True)

    def helper(self, name: str, arguments: Any) -> ToolResult:
        """Run a reserved helper tool (``__reset__``, ``__state_hash__``)."""
        if arguments:
            return ToolResult.failure(
                ErrorKind.BAD_ARGUMENTS, f"{name} takes no arguments; call it with {{}}."
            )
        if name not in HELPER_TOOLS:
            return ToolResult.failure(ErrorKind.UNKNOWN_TOOL, f"{name!r} is not a helper tool.")
        self.calls += 1
        if name == RESET_TOOL:
            self.reset()
        hashes = self.hashes()
        content: dict[str, Any] = {"state_hash": combine_hashes(hashes)}
        if len(hashes) > 1:
            content["servers"] = hashes
        if name == RESET_TOOL:
            content["reset"] = True
        return ToolResult.success(content)

    def reset(self) -> None:
        """Every server back to its seeded initial state."""
        self.last_used = time.monotonic()
        for session in self.sessions.values():
            session.reset()

    def hashes(self) -> dict[str, str]:
        """Canonical state hash per server."""
        return {name: s.state_hash() for name, s in self.sessions.items()}

    def state_hash(self) -> str:
        """One hash over all servers, equal to :meth:`Workspace.state_hash` for the same states."""
        return combine_hashes(self.hashes())

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()


class SessionStore:
    """The open MCP session states of one process, with their limits.

    Args:
        max_sessions: Most states open at once; ``None`` for no limit.
        ttl: Idle seconds after which an HTTP session ends and its state is
            dropped; ``None`` keeps idle sessions until the client ends them.
            (A stdio session lives as long as its process, an in-process
            client's as long as its ``async with`` block.)
    """

    def __init__(
        self, *, max_sessions: int | None = DEFAULT_MAX_SESSIONS, ttl: float | None = DEFAULT_TTL
    ) -> None:
        if max_sessions is not None and max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        if ttl is not None and not ttl > 0:
            raise ValueError(f"ttl must be a positive number of seconds, got {ttl}")
        self.max_sessions = max_sessions
        self.ttl = ttl
        self._open: dict[int, SessionState] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.opened_total = 0

    @property
    def active(self) -> int:
        """How many states are open now."""
        return len(self._open)

    @property
    def full(self) -> bool:
        return self.max_sessions is not None and len(self._open) >= self.max_sessions

    def limit_message(self) -> str:
        """What a client is told when the limit is reached."""
        expiry = (
            f"idle HTTP sessions expire after {self.ttl:g} s"
            if self.ttl is not None
            else "idle sessions do not expire (no TTL)"
        )
        return (
            f"prove serve: the limit of {self.max_sessions} concurrent MCP sessions is reached, "
            f"so no new session can start. Close a session you no longer need (HTTP DELETE "
            f"with its Mcp-Session-Id) or retry later ({expiry}); an operator can raise the "
            f"limit with --max-sessions."
        )

    def open(self, servers: Sequence[Server], seed: int, size: int | None) -> SessionState:
        """A new state with one fresh session per server, counted against the limit.

        Raises:
            SessionLimitReached: ``max_sessions`` states are already open.
        """
        with self._lock:
            if self.full:
                raise SessionLimitReached(self.limit_message())
            state = SessionState(next(self._ids), {})
            self._open[state.id] = state
            self.opened_total += 1
        try:
            state.sessions = {s.name: s.session(seed, size) for s in servers}
        except BaseException:
            self.close(state)
            raise
        return state

    def close(self, state: SessionState) -> None:
        """Free a state's databases and its slot. Safe to call twice."""
        with self._lock:
            self._open.pop(state.id, None)
        state.close()

    def close_all(self) -> None:
        with self._lock:
            states = list(self._open.values())
            self._open.clear()
        for state in states:
            state.close()

    def stats(self) -> dict[str, Any]:
        """Counts for a health endpoint or a log line."""
        return {
            "sessions": self.active,
            "max_sessions": self.max_sessions,
            "ttl_s": self.ttl,
            "opened_total": self.opened_total,
        }
