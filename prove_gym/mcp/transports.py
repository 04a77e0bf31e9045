"""Run :class:`~prove_gym.mcp.server.ProveMCPServer` over stdio or streamable HTTP.

stdio serves one client (the process that launched it), so one session.
Streamable HTTP serves many clients from one process: each ``Mcp-Session-Id``
gets its own state, idle sessions end after the store's TTL, and a new session
is refused with a clear JSON-RPC error once ``max_sessions`` are open.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import mcp.types as types
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from prove_gym.mcp.server import ProveMCPServer
from prove_gym.mcp.sessions import SessionStore
from prove_gym.server.base import Server

if TYPE_CHECKING:
    import uvicorn

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


async def serve_stdio(
    servers: Server | Sequence[Server],
    *,
    seed: int = 0,
    size: int | None = None,
    offload: bool = False,
) -> None:
    """Speak MCP on this process's stdin/stdout until the client closes stdin.

    Several servers share the one connection with prefixed tool names
    (``calendar__create_event``).
    """
    server = ProveMCPServer(
        servers, seed=seed, size=size, store=SessionStore(max_sessions=1, ttl=None), offload=offload
    )
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One MCP endpoint of an HTTP app: its path and the server behind it."""

    path: str
    server: ProveMCPServer


def http_endpoints(
    servers: Sequence[Server],
    *,
    store: SessionStore,
    seed: int = 0,
    size: int | None = None,
    combine: bool = False,
    offload: bool = False,
) -> list[Endpoint]:
    """Where each server is served over HTTP.

    * one server: ``/mcp`` (and the same endpoint at ``/<name>/mcp``);
    * several: ``/<name>/mcp`` each, with their own tool names;
    * several with ``combine``: all at ``/mcp``, tools named ``<server>__<tool>``.
    """
    if not servers:
        raise ValueError("serve at least one server")

    def build(group: Sequence[Server]) -> ProveMCPServer:
        return ProveMCPServer(group, seed=seed, size=size, store=store, http=True, offload=offload)

    if combine or len(servers) == 1:
        server = build(servers)
        paths = ["/mcp"] + ([f"/{servers[0].name}/mcp"] if len(servers) == 1 else [])
        return [Endpoint(p, server) for p in paths]
    return [Endpoint(f"/{s.name}/mcp", build([s])) for s in servers]


def http_app(
    servers: Sequence[Server],
    *,
    seed: int = 0,
    size: int | None = None,
    store: SessionStore | None = None,
    host: str = "127.0.0.1",
    combine: bool = False,
    offload: bool = False,
    json_response: bool = True,
) -> Starlette:
    """A Starlette app serving ``servers`` over streamable HTTP (see :func:`http_endpoints`).

    Args:
        servers: What to serve.
        seed: Seed of every session's initial state.
        size: Size of that state.
        store: Session limits (``max_sessions``, idle ``ttl``) shared by all endpoints.
        host: The host it will listen on; on a loopback host, requests whose
            ``Host``/``Origin`` is not loopback are refused (DNS-rebinding protection).
        combine: Serve several servers on one endpoint with prefixed tool names.
        offload: Run tool calls in worker threads (default: inline on the loop).
        json_response: Answer each POST with one JSON body rather than an SSE
            stream (the tools never stream, and clients must accept both).

    ``GET /health`` answers ``{"status": "ok", "sessions": ..., ...}``.
    """
    store = store if store is not None else SessionStore()
    endpoints = http_endpoints(
        servers, store=store, seed=seed, size=size, combine=combine, offload=offload
    )
    security = None
    if host in LOOPBACK_HOSTS:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    managers: dict[int, StreamableHTTPSessionManager] = {}
    routes: list[Route] = []
    for endpoint in endpoints:
        manager = managers.get(id(endpoint.server))
        if manager is None:
            manager = managers[id(endpoint.server)] = StreamableHTTPSessionManager(
                app=endpoint.server,
                json_response=json_response,
                security_settings=security,
                session_idle_timeout=store.ttl,
                max_sessions=store.max_sessions,
            )
        gate = _AdmissionGate(StreamableHTTPASGIApp(manager), store)
        routes.append(Route(endpoint.path, endpoint=gate))

    async def health(request: Request) -> Response:
        return JSONResponse(
            {"status": "ok", "endpoints": [e.path for e in endpoints], **store.stats()}
        )

    routes.append(Route("/health", endpoint=health, methods=["GET"]))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for manager in managers.values():
                await stack.enter_async_context(manager.run())
            try:
                yield
            finally:
                store.close_all()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.store = store
    app.state.endpoints = endpoints
    return app


class _AdmissionGate:
    """Refuses a new session with a clear message when the store is full.

    A request without ``Mcp-Session-Id`` would open a session; when
    ``max_sessions`` are open it gets HTTP 503 with a JSON-RPC error saying
    what to do, before the SDK sets up a transport for it. (The SDK's own
    ``max_sessions`` stays on as a backstop for handshakes racing each other.)
    """

    def __init__(self, app: ASGIApp, store: SessionStore) -> None:
        self.app = app
        self.store = store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and self.store.full
            and not any(k == b"mcp-session-id" for k, _ in scope["headers"])
        ):
            error = types.JSONRPCError(
                jsonrpc="2.0",
                id=None,
                error=types.ErrorData(
                    code=types.INTERNAL_ERROR,
                    message=self.store.limit_message(),
                    data={"kind": "session_limit"},
                ),
            )
            body = error.model_dump_json(by_alias=True, exclude_unset=True)
            await Response(body, status_code=503, media_type="application/json")(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)


def http_server(
    app: Starlette,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    on_ready: Callable[[str, int], None] | None = None,
) -> uvicorn.Server:
    """A uvicorn server for ``app``, not yet started: ``await server.serve()`` runs it
    (until SIGINT/SIGTERM in the main thread, or until ``server.should_exit = True``).

    Args:
        port: TCP port; 0 picks a free one (``on_ready`` receives the real one).
        on_ready: Called with (host, port) once the socket accepts connections.
    """
    import uvicorn

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if on_ready is not None and self.started and not self.should_exit:
                bound = self.servers[0].sockets[0].getsockname()
                on_ready(host, int(bound[1]))

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        timeout_graceful_shutdown=3,
    )
    return _Server(config)


async def serve_http(
    app: Starlette,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    on_ready: Callable[[str, int], None] | None = None,
) -> None:
    """Run ``app`` over HTTP until SIGINT/SIGTERM (see :func:`http_server`)."""
    server = http_server(app, host=host, port=port, log_level=log_level, on_ready=on_ready)
    await server.serve()
