"""Run :class:`~prove_gym.mcp.server.ProveMCPServer` over streamable HTTP.

(stdio, which serves one client and so one session, is :mod:`prove_gym.mcp.stdio`.)
Streamable HTTP serves many clients from one process: each ``Mcp-Session-Id``
gets its own state, idle sessions end after the store's TTL, and a new session
is refused with a clear JSON-RPC error once ``max_sessions`` are open.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import mcp.types as types
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from prove_gym.http_guard import (
    HostOriginGuard,
    HostOriginRules,
    checked_token,
    host_origin_rules,
    http_server,
    is_loopback,
    serve_http,
    token_matches,
)
from prove_gym.mcp.server import ProveMCPServer
from prove_gym.mcp.sessions import SessionStore
from prove_gym.server.base import Server

# The Host/Origin rules, the token rules and the uvicorn runner are prove_gym.http_guard's,
# shared with the OpenEnv server (which must not import the MCP SDK).
__all__ = [
    "Endpoint",
    "StaticTokenVerifier",
    "http_app",
    "http_endpoints",
    "http_server",
    "is_loopback",
    "serve_http",
    "transport_security",
]


def transport_security(
    host: str, allowed_hosts: Sequence[str] = (), allowed_origins: Sequence[str] = ()
) -> TransportSecuritySettings:
    """The MCP SDK's DNS-rebinding settings for a server bound to ``host``: the rules of
    :func:`prove_gym.http_guard.host_origin_rules`, which the OpenEnv server applies too.

    >>> transport_security("127.0.0.2").allowed_hosts[-2:]
    ['127.0.0.2', '127.0.0.2:*']
    """
    rules = host_origin_rules(host, allowed_hosts, allowed_origins)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=rules.allowed_hosts,
        allowed_origins=rules.allowed_origins,
    )


class StaticTokenVerifier:
    """The MCP SDK's ``TokenVerifier`` for one shared bearer token (compared in constant time)."""

    def __init__(self, token: str) -> None:
        self._token = checked_token(token)

    async def verify_token(self, token: str) -> AccessToken | None:
        if token_matches(token, self._token):
            return AccessToken(token=token, client_id="prove-gym-client", scopes=[])
        return None


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
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    auth_token: str | None = None,
) -> Starlette:
    """A Starlette app serving ``servers`` over streamable HTTP (see :func:`http_endpoints`).

    Args:
        servers: What to serve.
        seed: Seed of every session's initial state.
        size: Size of that state.
        store: Session limits (``max_sessions``, idle ``ttl``) shared by all endpoints.
        host: The host it will listen on: requests whose ``Host`` or ``Origin`` does not
            fit it and the allowed ones are refused (see :func:`transport_security`).
        combine: Serve several servers on one endpoint with prefixed tool names.
        offload: Run tool calls in worker threads (default: inline on the loop).
        json_response: Answer each POST with one JSON body rather than an SSE
            stream (the tools never stream, and clients must accept both).
        allowed_hosts: More ``Host`` values to accept (a DNS name the server is reached by).
        allowed_origins: ``Origin`` values to accept (web apps allowed to call it).
        auth_token: Require ``Authorization: Bearer <token>`` on every request (the MCP
            SDK's bearer authentication; ``/health`` too); ``None`` for no authentication.

    ``GET /health`` answers ``{"status": "ok", "sessions": ..., ...}``.
    """
    store = store if store is not None else SessionStore()
    endpoints = http_endpoints(
        servers, store=store, seed=seed, size=size, combine=combine, offload=offload
    )
    security = transport_security(host, allowed_hosts, allowed_origins)
    # The guard checks every route; the SDK checks its endpoints again (it has no "any Host").
    sdk_security = (
        security
        if security.allowed_hosts != ["*"]
        else security.model_copy(update={"enable_dns_rebinding_protection": False})
    )

    def protect(app: ASGIApp) -> ASGIApp:
        return RequireAuthMiddleware(app, required_scopes=[]) if auth_token else app

    managers: dict[int, StreamableHTTPSessionManager] = {}
    routes: list[Route] = []
    for endpoint in endpoints:
        manager = managers.get(id(endpoint.server))
        if manager is None:
            manager = managers[id(endpoint.server)] = StreamableHTTPSessionManager(
                app=endpoint.server,
                json_response=json_response,
                security_settings=sdk_security,
                session_idle_timeout=store.ttl,
                max_sessions=store.max_sessions,
            )
        gate = _AdmissionGate(StreamableHTTPASGIApp(manager), store)
        routes.append(Route(endpoint.path, endpoint=protect(gate)))

    async def health(request: Request) -> Response:
        return JSONResponse(
            {"status": "ok", "endpoints": [e.path for e in endpoints], **store.stats()}
        )

    checked = protect(_asgi(health)) if auth_token else health
    routes.append(Route("/health", endpoint=checked, methods=["GET"]))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for manager in managers.values():
                await stack.enter_async_context(manager.run())
            try:
                yield
            finally:
                store.close_all()

    rules = HostOriginRules(security.allowed_hosts, security.allowed_origins)
    middleware = [Middleware(HostOriginGuard, rules=rules)]
    if auth_token:
        verifier = StaticTokenVerifier(auth_token)
        middleware += [
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier)),
            Middleware(AuthContextMiddleware),
        ]
    app = Starlette(routes=routes, lifespan=lifespan, middleware=middleware)
    app.state.store = store
    app.state.endpoints = endpoints
    return app


def _asgi(endpoint: Callable[[Request], Any]) -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        response = await endpoint(Request(scope, receive))
        await response(scope, receive, send)

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
        if scope["type"] == "http" and scope["method"] == "POST":
            replay = await self._refuse_batch(scope, receive, send)
            if replay is None:
                return
            receive = replay
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

    @staticmethod
    async def _refuse_batch(scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Answer a JSON-RPC batch (a body starting with ``[``) with 400 at once, before the
        SDK parses it: protocol 2025-06-18 and later have no batches, and validating 10,000
        requests only to refuse them holds the event loop for every other session. Returns
        the ``receive`` to pass on (replaying what was read), or ``None`` once answered."""
        seen: list[Message] = []
        first = b""
        while not first:
            message = await receive()
            seen.append(message)
            if message["type"] != "http.request":
                break
            first = message.get("body", b"").lstrip()[:1]
            if not message.get("more_body", False):
                break
        if first == b"[":
            while seen[-1]["type"] == "http.request" and seen[-1].get("more_body", False):
                seen.append(await receive())  # drain the body before answering
            error = types.JSONRPCError(
                jsonrpc="2.0",
                id=None,
                error=types.ErrorData(
                    code=types.INVALID_REQUEST,
                    message="JSON-RPC batches are not supported: send one request per POST.",
                ),
            )
            body = error.model_dump_json(by_alias=True, exclude_unset=True)
            await Response(body, status_code=400, media_type="application/json")(
                scope, receive, send
            )
            return None

        async def replay() -> Message:
            return seen.pop(0) if seen else await receive()

        return replay
