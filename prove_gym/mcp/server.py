"""Any prove_gym :class:`~prove_gym.server.base.Server` as a real MCP server.

:class:`ProveMCPServer` is an MCP SDK low-level server whose handlers are
generic: ``tools/list`` answers with every visible tool's own schema and
description, ``tools/call`` passes the client's arguments untouched to
:meth:`Session.call` (so validation, error kinds and messages are exactly the
env's), and each MCP session works on its own copy of the seeded state.

Where a session's state lives:

* **stdio** and **in-process** (``mcp.Client(server)``): one state per
  connection, opened when the server's lifespan starts (one stdio process, or
  one ``async with Client(...)`` block), or at its first tool call with
  ``lazy=True`` (as ``prove-gym serve`` runs stdio), and closed when it ends.
* **streamable HTTP**: one state per ``Mcp-Session-Id``, opened at the
  ``initialize`` handshake and closed when the session ends (client DELETE,
  idle TTL, or shutdown).
"""

from __future__ import annotations

import difflib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.lowlevel import Server as LowLevelServer
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND

from prove_gym.mcp.sessions import SessionLimitReached, SessionState, SessionStore
from prove_gym.mcp.tools import (
    HELPER_TOOLS,
    PREFIX_SEPARATOR,
    call_result,
    mcp_tool,
)
from prove_gym.server.base import Server
from prove_gym.server.errors import ErrorKind
from prove_gym.server.result import ToolResult
from prove_gym.server.tool import ToolSpec

if TYPE_CHECKING:
    from mcp.server.connection import Connection
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

_STATE_KEY: Final = "prove_gym.state"
"""Where a streamable-HTTP connection keeps its state (``Connection.state``)."""


@dataclass(frozen=True, slots=True)
class ToolRoute:
    """Where an MCP tool name leads: a server and one of its tools."""

    server: str
    spec: ToolSpec


class _ConnectionScope:
    """The state of one lifespan: one stdio process or one in-process client."""

    def __init__(self) -> None:
        self.state: SessionState | None = None


class ProveMCPServer(LowLevelServer[_ConnectionScope]):
    """An MCP server for one or several prove_gym servers, one isolated state per session.

    Args:
        servers: The server(s) to serve.
        seed: Seed of the initial state every session starts from.
        size: Size of that state (default: each server's ``default_size``).
        store: Where sessions are counted and limited (shared by all the MCP
            servers of one process); a new one with default limits if omitted.
        prefix: Name tools ``<server>__<tool>``. Default: only when serving
            more than one server (names must be unique on one MCP server).
        http: Build it for streamable HTTP (:func:`prove_gym.mcp.transports.http_app`
            sets this): states open at each session's handshake instead of at
            the lifespan (which one HTTP process shares by all its sessions),
            and ``server/discover`` is declined so that clients in
            ``mode="auto"`` use the stateful handshake era.
        offload: Run each tool call in a worker thread instead of inline on the
            event loop (see ``docs/mcp.md``: inline is faster for these
            sub-millisecond calls, and keeps one session's calls in order).
        lazy: Build the ``tools/list`` answer at the first ``tools/list``, and sample the
            state and open a stdio or in-process session's copy at its first tool call,
            instead of when the server is built and its lifespan starts: ``initialize`` is
            then answered before any of it is done (what
            :func:`~prove_gym.mcp.stdio.serve_stdio` does, for the client that launched it).

    Example::

        server = ProveMCPServer(prove_gym.get_server("calendar"), seed=7)
        async with mcp.Client(server) as client:
            result = await client.call_tool("list_calendars", {})
    """

    def __init__(
        self,
        servers: Server | Sequence[Server],
        *,
        seed: int = 0,
        size: int | None = None,
        store: SessionStore | None = None,
        prefix: bool | None = None,
        http: bool = False,
        offload: bool = False,
        lazy: bool = False,
    ) -> None:
        group = [servers] if isinstance(servers, Server) else list(servers)
        if not group:
            raise ValueError("serve at least one server")
        names = [s.name for s in group]
        if len(set(names)) != len(names):
            raise ValueError(f"a server is listed twice: {names}")
        self.servers = group
        self.seed = seed
        self.size = size
        self.store = store if store is not None else SessionStore()
        self.prefixed = len(group) > 1 if prefix is None else prefix
        self.http = http
        self.offload = offload
        self.lazy = lazy
        self.routes: dict[str, ToolRoute] = {}
        for server in group:
            for spec in server.tools.values():
                name = self.mcp_name(server.name, spec.name)
                if name in self.routes or name in HELPER_TOOLS:
                    raise ValueError(
                        f"two tools would both be called {name!r} on one MCP server; "
                        "serve these servers with prefix=True"
                    )
                self.routes[name] = ToolRoute(server.name, spec)
        # What tools/list answers (each tool's input and output schema is pydantic's work,
        # which initialize does not need): built now, or lazily at the first tools/list.
        self._listed = None if lazy else self._listing()
        if not lazy:
            for server in group:
                server.template(seed, size)  # sample now, so opening a session is only a copy
        single = group[0] if len(group) == 1 else None
        super().__init__(
            f"prove-{'+'.join(names)}",
            version=single.version if single else _package_version(),
            description=single.description if single else None,
            instructions=_instructions(group),
            lifespan=_lifespan,
            on_list_tools=self._list_tools,
            # The SDK serializes a handler's dict result like a model (HandlerResult), but
            # types on_call_tool as returning CallToolResult; the wire dict is cheaper.
            on_call_tool=self._call_tool,  # type: ignore[arg-type]
        )
        if http:
            self.middleware.append(self._open_at_handshake)
            # The 2026-07-28 protocol era is stateless (no session id), so it cannot
            # carry a per-session state over HTTP: answering `server/discover` with
            # "method not found" makes `mode="auto"` clients use the handshake era.
            self.add_request_handler("server/discover", types.RequestParams, _no_discover)

    # ----------------------------------------------------------------- names
    def mcp_name(self, server: str, tool: str) -> str:
        """The MCP name of ``server``'s ``tool`` on this MCP server."""
        return f"{server}{PREFIX_SEPARATOR}{tool}" if self.prefixed else tool

    def _listing(self) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                mcp_tool(route.spec, name)
                for name, route in self.routes.items()
                if not route.spec.hidden
            ]
        )

    @property
    def _tools(self) -> types.ListToolsResult:
        """The ``tools/list`` result (built at the first use when ``lazy``)."""
        if self._listed is None:
            self._listed = self._listing()
        return self._listed

    @property
    def tools(self) -> list[types.Tool]:
        """What ``tools/list`` answers (hidden and helper tools left out)."""
        return list(self._tools.tools)

    # ----------------------------------------------------------------- state
    def open_state(self) -> SessionState:
        """A fresh state for a new MCP session (raises :class:`SessionLimitReached`)."""
        return self.store.open(self.servers, self.seed, self.size)

    def _state(self, ctx: ServerRequestContext[_ConnectionScope, Any]) -> SessionState:
        """The state of the MCP session ``ctx`` belongs to, opened on first use.

        A streamable-HTTP session (``Mcp-Session-Id``) keeps its state on its
        connection and closes it when the session ends. HTTP without a session
        (the stateless 2026-07-28 era) is refused: its requests share nothing
        that could hold a state. Anything else (stdio, in-process) uses the
        lifespan's scope, which lives exactly as long as that one client.
        """
        conn = _connection(ctx)
        if conn.session_id is not None:
            state = conn.state.get(_STATE_KEY)
            if state is None:
                state = conn.state[_STATE_KEY] = self._open_or_refuse()
                conn.exit_stack.callback(self.store.close, state)
            return state
        if ctx.request is not None:
            raise MCPError(
                code=INVALID_REQUEST,
                message="prove serve keeps one state per MCP session, and this request has "
                "none (no Mcp-Session-Id). Connect with the initialize handshake "
                "(protocol 2025-11-25 or earlier; mcp.Client does this in mode='auto').",
            )
        scope = ctx.lifespan_context
        if scope.state is None:
            scope.state = self._open_or_refuse()
        return scope.state

    def _open_or_refuse(self) -> SessionState:
        try:
            return self.open_state()
        except SessionLimitReached as exc:
            raise MCPError(
                code=INTERNAL_ERROR, message=str(exc), data={"kind": "session_limit"}
            ) from None

    async def _open_at_handshake(
        self, ctx: ServerRequestContext[_ConnectionScope, Any], call_next: CallNext
    ) -> HandlerResult:
        """Open an HTTP session's state at ``initialize`` (so a full server refuses the
        handshake itself, with a clear message) and pass everything else through."""
        if ctx.method == "initialize":
            self._state(ctx)
        return await call_next(ctx)

    # -------------------------------------------------------------- handlers
    async def _list_tools(
        self,
        ctx: ServerRequestContext[_ConnectionScope, Any],
        params: types.PaginatedRequestParams | None,
    ) -> types.ListToolsResult:
        return self._tools

    async def _call_tool(
        self,
        ctx: ServerRequestContext[_ConnectionScope, Any],
        params: types.CallToolRequestParams,
    ) -> dict[str, Any]:
        state = self._state(ctx)
        name, arguments = params.name, params.arguments
        route = self.routes.get(name)
        if route is None:
            if name in HELPER_TOOLS:
                return call_result(await self._run(state, state.helper, name, arguments))
            raise MCPError(
                code=INVALID_PARAMS,
                message=self._unknown_tool_message(name),
                data={"kind": str(ErrorKind.UNKNOWN_TOOL)},
            )
        return call_result(
            await self._run(state, state.call, route.server, route.spec.name, arguments)
        )

    async def _run(
        self, state: SessionState, fn: Callable[..., ToolResult], *args: Any
    ) -> ToolResult:
        """Run ``fn(*args)`` on ``state``: inline on the event loop, or (``offload``) in a
        worker thread, one call at a time per session."""
        if not self.offload:
            return fn(*args)
        return await anyio.to_thread.run_sync(_locked, state, fn, *args)

    def _unknown_tool_message(self, name: object) -> str:
        names = [t.name for t in self._tools.tools]
        close = difflib.get_close_matches(str(name), names, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        return f"There is no tool named {name!r}.{hint} Available tools: {', '.join(names)}."


def _locked(state: SessionState, fn: Callable[..., ToolResult], *args: Any) -> ToolResult:
    """A call from a worker thread: one call at a time per session."""
    with state.lock:
        return fn(*args)


@asynccontextmanager
async def _lifespan(server: LowLevelServer[Any]) -> AsyncIterator[_ConnectionScope]:
    """One scope per lifespan; for stdio and in-process clients that is one session."""
    assert isinstance(server, ProveMCPServer)
    scope = _ConnectionScope()
    if not server.http and not server.lazy:
        scope.state = server.open_state()
    try:
        yield scope
    finally:
        if scope.state is not None:
            server.store.close(scope.state)


async def _no_discover(ctx: Any, params: types.RequestParams) -> types.DiscoverResult:
    raise MCPError(
        code=METHOD_NOT_FOUND,
        message="This server keeps state per MCP session: use the initialize handshake.",
    )


def _connection(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The connection a request arrived on.

    mcp 2.3 gives low-level handlers a ``ServerRequestContext`` that reaches the
    connection only through its ``ServerSession``; the SDK's announced context
    rework exposes it as ``ctx.connection``. Both are tried, and the supported
    SDK range in pyproject.toml is pinned to the versions the tests prove.
    """
    conn = getattr(ctx, "connection", None) or getattr(ctx.session, "_connection", None)
    if conn is None:  # pragma: no cover - only on an SDK outside the pinned range
        raise RuntimeError("this mcp SDK does not expose the request's connection")
    return conn


def _instructions(servers: Sequence[Server]) -> str | None:
    parts = []
    for s in servers:
        text = "\n\n".join(p for p in (s.description, s.instructions) if p)
        if text:
            parts.append(f"{s.name}: {text}" if len(servers) > 1 else text)
    return "\n\n".join(parts) or None


def _package_version() -> str:
    from prove_gym import __version__

    return __version__
