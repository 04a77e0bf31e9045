"""Run :class:`~prove_gym.mcp.server.ProveMCPServer` over stdio: one client, one session.

Kept apart from :mod:`prove_gym.mcp.transports` (streamable HTTP), which a stdio server
does not import: an MCP client that launches ``prove-gym serve calendar`` waits for its
``initialize`` answer, and everything done before it is time that client waits. (Most of
that time is the MCP SDK's own import, about 0.55 CPU-seconds: ``import mcp`` brings its
client, both protocol eras' models and its HTTP modules, whichever transport runs.)
"""

from __future__ import annotations

import gc
from collections.abc import Sequence

from mcp.server.stdio import stdio_server

from prove_gym.http_guard import settle_heap
from prove_gym.mcp.server import ProveMCPServer
from prove_gym.mcp.sessions import SessionState, SessionStore
from prove_gym.server.base import Server


class _SettlingStore(SessionStore):
    """The store of a stdio server's one session: once its state is sampled, the heap is
    settled (:func:`~prove_gym.http_guard.settle_heap`), the state's objects included."""

    def open(self, servers: Sequence[Server], seed: int, size: int | None) -> SessionState:
        state = super().open(servers, seed, size)
        settle_heap()
        return state


async def serve_stdio(
    servers: Server | Sequence[Server],
    *,
    seed: int = 0,
    size: int | None = None,
    offload: bool = False,
) -> None:
    """Speak MCP on this process's stdin/stdout until the client closes stdin.

    Several servers share the one connection with prefixed tool names
    (``calendar__create_event``). ``initialize`` is answered before anything is sampled:
    the session's state is sampled at its first tool call (``ProveMCPServer(lazy=True)``),
    and the heap is then settled (``gc.collect()`` and ``gc.freeze()``, see
    :func:`~prove_gym.http_guard.settle_heap`). Until then the start-up heap is frozen as
    it is, without the collection (a walk of over 100,000 objects that finds a few dozen
    garbage ones: the imports' own collections took the rest).
    """
    server = ProveMCPServer(
        servers,
        seed=seed,
        size=size,
        store=_SettlingStore(max_sessions=1, ttl=None),
        offload=offload,
        lazy=True,
    )
    gc.freeze()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
