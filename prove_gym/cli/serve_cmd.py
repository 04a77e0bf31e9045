"""``prove serve``: any installed server as a real MCP server (stdio or streamable HTTP).

Examples::

    prove serve calendar                                   # stdio, for an MCP client to launch
    prove serve calendar --transport http --port 8000      # http://127.0.0.1:8000/mcp
    prove serve calendar banking --transport http          # /calendar/mcp and /banking/mcp
    prove serve calendar banking --transport http --combine  # /mcp, tools calendar__<tool>, ...
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from prove_gym.mcp.sessions import DEFAULT_MAX_SESSIONS, DEFAULT_TTL


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="serve servers over MCP (stdio or streamable HTTP), one isolated state per session",
        description="Serve one or more installed servers as an MCP server. Every MCP session "
        "(a stdio process, an HTTP Mcp-Session-Id) gets its own copy of the state sampled "
        "from --seed; the hidden tools __reset__ and __state_hash__ restore and fingerprint it.",
    )
    p.add_argument("servers", nargs="+", metavar="SERVER", help="server names (see `prove list`)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio", help="default: stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP host (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="HTTP port; 0 picks a free one")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial state (default: 0)")
    p.add_argument("--size", type=int, default=None, help="state size (default: the server's)")
    p.add_argument(
        "--combine",
        action="store_true",
        help="HTTP: serve several servers on one /mcp endpoint with tools named "
        "<server>__<tool> (stdio always does this for several servers)",
    )
    p.add_argument(
        "--ttl",
        type=float,
        default=DEFAULT_TTL,
        help=f"HTTP: seconds before an idle session and its state are dropped; 0 = never "
        f"(default: {DEFAULT_TTL:g})",
    )
    p.add_argument(
        "--max-sessions",
        type=int,
        default=DEFAULT_MAX_SESSIONS,
        help=f"HTTP: most concurrent sessions; 0 = no limit (default: {DEFAULT_MAX_SESSIONS})",
    )
    p.add_argument(
        "--offload",
        action="store_true",
        help="run tool calls in worker threads instead of inline on the event loop",
    )
    p.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="server log level, written to stderr (default: warning)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import logging

    import anyio

    from prove_gym import get_registry
    from prove_gym.mcp.sessions import SessionStore
    from prove_gym.mcp.transports import http_app, serve_http, serve_stdio

    registry = get_registry()
    servers = [registry.get_server(name) for name in dict.fromkeys(args.servers)]
    if args.size is not None and args.size < 1:
        raise ValueError(f"--size must be at least 1, got {args.size}")
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)

    if args.transport == "stdio":
        anyio.run(
            lambda: serve_stdio(servers, seed=args.seed, size=args.size, offload=args.offload)
        )
        return 0

    store = SessionStore(max_sessions=args.max_sessions or None, ttl=args.ttl or None)
    app = http_app(
        servers,
        seed=args.seed,
        size=args.size,
        store=store,
        host=args.host,
        combine=args.combine,
        offload=args.offload,
    )

    def ready(host: str, port: int) -> None:
        base = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
        print(f"prove serve: listening on {base}", file=sys.stderr)
        for endpoint in app.state.endpoints:
            names = ", ".join(s.name for s in endpoint.server.servers)
            print(f"  {base}{endpoint.path}  ({names})", file=sys.stderr)
        limit = store.max_sessions or "unlimited"
        ttl = f"{store.ttl:g} s" if store.ttl else "none"
        print(
            f"  sessions: at most {limit}, idle TTL {ttl}; health: {base}/health", file=sys.stderr
        )
        sys.stderr.flush()

    anyio.run(
        lambda: serve_http(
            app, host=args.host, port=args.port, log_level=args.log_level, on_ready=ready
        )
    )
    return 0
