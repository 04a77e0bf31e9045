"""What every prove_gym HTTP server checks and how it runs, without the MCP SDK.

``prove-gym serve`` has two HTTP servers: MCP over streamable HTTP (:mod:`prove_gym.mcp`,
which needs ``mcp>=2.2``) and OpenEnv (:mod:`prove_gym.adapters.openenv`, whose own
dependencies may pin another ``mcp``). Both apply the same rules, from here, so that this
module imports nothing of either:

- **Host and Origin** (DNS-rebinding protection, :func:`host_origin_rules` and
  :class:`HostOriginGuard`): ``Host`` must name the bound address or an allowed name, and a
  request that carries an ``Origin`` (a browser's, a web page's WebSocket) must come from an
  allowed one; on every route, WebSocket handshakes included.
- **Bearer token** (:func:`checked_token`, :func:`token_matches`, :class:`BearerTokenGuard`):
  one shared token of at least 16 characters, compared in constant time; a server bound to
  a non-loopback address refuses to start without one unless told to (``serve_cmd``).
- **Running** (:func:`http_server`, :func:`serve_http`): a uvicorn server that frees its
  start-up garbage and freezes the rest once it listens (:func:`settle_heap`).
"""

from __future__ import annotations

import gc
import hmac
import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import uvicorn
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "LOOPBACK_HOSTS",
    "MIN_TOKEN_LENGTH",
    "WILDCARD_HOSTS",
    "BearerTokenGuard",
    "HostOriginGuard",
    "HostOriginRules",
    "checked_token",
    "host_origin_rules",
    "http_server",
    "is_loopback",
    "serve_http",
    "settle_heap",
    "token_matches",
]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
MIN_TOKEN_LENGTH = 16


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` serves this machine only (``127.0.0.0/8``, ``::1``, localhost).

    >>> is_loopback("127.0.0.2"), is_loopback("0.0.0.0"), is_loopback("localhost")
    (True, False, True)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class HostOriginRules:
    """The ``Host`` and ``Origin`` values a server accepts: exact values, or ``name:*`` for
    any port; ``allowed_hosts == ["*"]`` accepts any ``Host``."""

    allowed_hosts: list[str]
    allowed_origins: list[str]

    def refusal(self, host: str | None, origin: str | None) -> tuple[int, str] | None:
        """``(status, reason)`` for a request with these headers, or ``None`` to let it in."""
        if self.allowed_hosts != ["*"] and not _allowed(host, self.allowed_hosts):
            return 421, "Invalid Host header"
        if origin and not _allowed(origin, self.allowed_origins):
            return 403, "Invalid Origin header"
        return None


def host_origin_rules(
    host: str, allowed_hosts: Sequence[str] = (), allowed_origins: Sequence[str] = ()
) -> HostOriginRules:
    """DNS-rebinding protection for a server bound to ``host``, on any address.

    ``Host`` must name the bound address (a loopback bind also takes the other loopback
    names) or one of ``allowed_hosts`` (``"mcp.example.org"``, ``"10.0.0.5:*"`` for any
    port); a wildcard bind (``0.0.0.0``, ``::``) checks ``Host`` only when ``allowed_hosts``
    are given. ``Origin``, when a request has one (browsers send it), must be one of
    ``allowed_origins`` (``"https://app.example.org"``); a loopback bind also takes loopback
    origins. Without allowed origins a non-loopback server refuses every request with an
    ``Origin``: no web page can reach it.

    >>> host_origin_rules("127.0.0.2").allowed_hosts[-2:]
    ['127.0.0.2', '127.0.0.2:*']
    """
    name = f"[{host}]" if ":" in host else host
    hosts, origins = list(allowed_hosts), list(allowed_origins)
    if is_loopback(host):
        for known in ("127.0.0.1", "localhost", "[::1]", name):
            hosts += [known, f"{known}:*"]
            origins.append(f"http://{known}:*")
    elif host not in WILDCARD_HOSTS:
        hosts += [name, f"{name}:*"]
    return HostOriginRules(
        allowed_hosts=list(dict.fromkeys(hosts)) or ["*"],
        allowed_origins=list(dict.fromkeys(origins)),
    )


def _allowed(value: str | None, patterns: Sequence[str]) -> bool:
    if not value:
        return False
    return any(value == p or (p.endswith(":*") and value.startswith(p[:-1])) for p in patterns)


def checked_token(token: str) -> str:
    """The shared bearer token, stripped, or :class:`ValueError` when it is too short."""
    if len(token.strip()) < MIN_TOKEN_LENGTH:
        raise ValueError(f"the bearer token must have at least {MIN_TOKEN_LENGTH} characters")
    return token.strip()


def token_matches(given: str, expected: str) -> bool:
    """Whether ``given`` is the token ``expected`` (compared in constant time)."""
    return hmac.compare_digest(given.strip().encode(), expected.encode())


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, reason: str) -> None:
    """Answer ``status`` with ``reason`` as text: an HTTP response, or for a WebSocket
    handshake the same response where the server can send one (uvicorn's
    ``websocket.http.response``), else a close before accepting (an HTTP 403 on the wire)."""
    body = reason.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8")]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer error="invalid_token"'))
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    if "websocket.http.response" in scope.get("extensions", {}):
        await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008, "reason": reason})


class HostOriginGuard:
    """ASGI middleware: refuses HTTP requests and WebSocket handshakes whose ``Host`` or
    ``Origin`` the rules do not accept (421 and 403), before authentication."""

    def __init__(self, app: ASGIApp, rules: HostOriginRules) -> None:
        self.app = app
        self.rules = rules

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            refusal = self.rules.refusal(_header(scope, b"host"), _header(scope, b"origin"))
            if refusal is not None:
                await _refuse(scope, receive, send, *refusal)
                return
        await self.app(scope, receive, send)


class BearerTokenGuard:
    """ASGI middleware: every HTTP request and WebSocket handshake must carry
    ``Authorization: Bearer <token>`` (401 otherwise), for servers without an SDK of their
    own to check it (the MCP server uses the MCP SDK's bearer authentication, with the
    same token rules)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = checked_token(token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scheme, _, given = (_header(scope, b"authorization") or "").partition(" ")
            if scheme.lower() != "bearer" or not token_matches(given, self.token):
                await _refuse(scope, receive, send, 401, "A valid bearer token is required")
                return
        await self.app(scope, receive, send)


def settle_heap() -> None:
    """Free start-up garbage, then take what is left out of the cyclic collector's walks.

    A serving process holds a large heap that lives as long as it does: modules, the
    pydantic models, SQLAlchemy mappers, the sampled state templates (about 250,000 objects
    for ``prove-gym serve calendar``). Python's full collection walks all of it, stalling
    every session at once; it runs every few thousand calls (about 170 ms each on a 2-core
    machine, or 40-60 us per call). ``gc.freeze()`` moves those objects to a generation no
    collection walks, so a full collection walks only what serving allocated since (under
    10 ms). Objects frozen here are still freed by reference counting; only a reference
    cycle among them, made garbage later, would stay. :func:`http_server` and the MCP stdio
    server call this once, when the server is ready to serve.
    """
    gc.collect()
    gc.freeze()


def http_server(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    on_ready: Callable[[str, int], None] | None = None,
    ws_max_size: int = 16 * 1024 * 1024,
) -> uvicorn.Server:
    """A uvicorn server for ``app``, not yet started: ``await server.serve()`` runs it
    (until SIGINT/SIGTERM in the main thread, or until ``server.should_exit = True``).
    It is meant to be its process's server, as ``prove-gym serve`` runs it: once it listens,
    and before ``on_ready``, it frees start-up garbage and freezes the rest
    (``gc.freeze()``, see :func:`settle_heap`), so full collections skip that heap.

    Args:
        port: TCP port; 0 picks a free one (``on_ready`` receives the real one).
        on_ready: Called with (host, port) once the socket accepts connections.
        ws_max_size: The largest WebSocket message read, in bytes; a larger one closes
            its connection with code 1009 (message too big).
    """
    import uvicorn

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and not self.should_exit:
                settle_heap()
                if on_ready is not None:
                    bound = self.servers[0].sockets[0].getsockname()
                    on_ready(host, int(bound[1]))

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        timeout_graceful_shutdown=3,
        ws_max_size=ws_max_size,
    )
    return _Server(config)


async def serve_http(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    on_ready: Callable[[str, int], None] | None = None,
    ws_max_size: int = 16 * 1024 * 1024,
) -> None:
    """Run ``app`` over HTTP until SIGINT/SIGTERM (see :func:`http_server`)."""
    server = http_server(
        app,
        host=host,
        port=port,
        log_level=log_level,
        on_ready=on_ready,
        ws_max_size=ws_max_size,
    )
    await server.serve()
