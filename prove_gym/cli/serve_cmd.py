"""``prove-gym serve``: any installed server as a real MCP server (stdio or streamable HTTP).

Examples::

    prove-gym serve calendar                                   # stdio, for an MCP client to launch
    prove-gym serve calendar --transport http --port 8000      # http://127.0.0.1:8000/mcp
    prove-gym serve calendar banking --transport http          # /calendar/mcp and /banking/mcp
    prove-gym serve calendar banking --transport http --combine  # /mcp, tools calendar__<tool>, ...
    PROVE_GYM_TOKEN=... prove-gym serve calendar --transport http --host 0.0.0.0 \
        --auth-token-env PROVE_GYM_TOKEN --allowed-host mcp.example.org   # reachable, with auth
    prove-gym serve --openenv --port 8000        # OpenEnv: every server's tasks, ws://.../ws
    prove-gym serve --openenv --tasks runs/synth  # and a synth output's train/test splits

``--openenv`` needs the openenv extra and not the mcp one (docs/openenv.md); the two pin
different mcp releases, so either may be the one installed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

# What prove_gym.mcp.sessions' DEFAULT_TTL and DEFAULT_MAX_SESSIONS are, for the help text:
# reading them there imports the MCP SDK (about a second), which every other command of the
# CLI would pay for while its parser is built (tests/cli/test_serve_cmd.py keeps them equal).
TTL_SHOWN = "1800"
MAX_SESSIONS_SHOWN = "256"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="serve servers over MCP (stdio or streamable HTTP) or OpenEnv (--openenv), "
        "one isolated state per session",
        description="Serve one or more installed servers as an MCP server (needs the mcp "
        "extra). Every MCP session (a stdio process, an HTTP Mcp-Session-Id) gets its own copy "
        "of the state sampled from --seed; the hidden tools __reset__ and __state_hash__ "
        "restore and fingerprint it. With --openenv (needs the openenv extra), serve every "
        "named server's tasks (default: every installed server's) as one OpenEnv environment "
        "over HTTP and WebSocket, one episode per session.",
    )
    p.add_argument(
        "servers",
        nargs="*",
        metavar="SERVER",
        help="server names (see `prove-gym list`); --openenv: default every installed one",
    )
    p.add_argument(
        "--openenv",
        action="store_true",
        help="serve an OpenEnv environment (HTTP and WebSocket sessions) instead of MCP",
    )
    p.add_argument(
        "--tasks",
        action="append",
        default=[],
        metavar="PATH",
        help="--openenv: also offer a `prove-gym synth` output folder's train/test tasks (or "
        "a .jsonl task file) as splits; repeatable",
    )
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
        default=None,
        help="HTTP: seconds before an idle session and its state are dropped; 0 = never "
        f"(default: {TTL_SHOWN})",
    )
    p.add_argument(
        "--max-sessions",
        type=int,
        default=None,
        help=f"HTTP: most concurrent sessions; 0 = no limit (default: {MAX_SESSIONS_SHOWN})",
    )
    p.add_argument(
        "--offload",
        action="store_true",
        help="run tool calls in worker threads instead of inline on the event loop",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST",
        help="HTTP: also accept this Host header (a name the server is reached by, such as "
        "mcp.example.org or mcp.example.org:*); repeatable. A wildcard --host (0.0.0.0) checks "
        "Host only when some are given",
    )
    p.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="HTTP: accept requests from this browser Origin (such as https://app.example.org); "
        "repeatable. Other requests carrying an Origin are refused (DNS-rebinding protection)",
    )
    p.add_argument(
        "--auth-token-env",
        metavar="VAR",
        help="HTTP: require 'Authorization: Bearer <token>', the token read from environment "
        "variable VAR (never pass a token on the command line)",
    )
    p.add_argument(
        "--auth-token-file",
        metavar="FILE",
        help="HTTP: like --auth-token-env, the token read from FILE (its first line)",
    )
    p.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="HTTP: allow a non-loopback --host without a token (anyone who can reach the port "
        "can use the server)",
    )
    p.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="server log level, written to stderr (default: warning)",
    )
    p.set_defaults(func=run)


def _import_problem(exc: ImportError) -> str:
    """Why prove_gym.mcp does not import: mcp is missing, or lacks a name (re-raises the rest)."""
    name = exc.name or ""
    if name != "mcp" and not name.startswith("mcp."):
        raise exc
    if isinstance(exc, ModuleNotFoundError) and name == "mcp":
        return "mcp is not installed"
    return _version_problem() or (
        f"{_installed_mcp() or 'the installed mcp'} lacks {name}, needs {_mcp_requirement()}"
    )


def _version_problem() -> str | None:
    """Why the installed mcp, which imports, is not one serve runs on (outside the extra's
    range, as beside verifiers or OpenEnv); ``None`` when it is. Checked when serve runs,
    not when the command line is parsed (reading package metadata costs ~0.1 s)."""
    installed, requirement = _installed_mcp(), _mcp_requirement()
    if installed is None or _satisfies(installed.removeprefix("mcp "), requirement):
        return None
    return f"{installed} is installed, not {requirement}"


def _installed_mcp() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"mcp {version('mcp')}"
    except PackageNotFoundError:
        return None


def _mcp_requirement() -> str:
    """The ``mcp`` requirement of the ``prove-gym[mcp]`` extra, as installed (``mcp<2.4,>=2.2``)."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        for requirement in requires("prove-gym") or []:
            spec, _, marker = requirement.partition(";")
            if "extra" in marker and '"mcp"' in marker and spec.strip().startswith("mcp"):
                return spec.strip().replace(" ", "")
    except PackageNotFoundError:  # pragma: no cover - a source tree without install metadata
        pass
    return "mcp"


def _satisfies(version: str, requirement: str) -> bool:
    """Whether release ``version`` meets the comparisons of ``requirement`` (``mcp<2.4,>=2.2``).

    Only release numbers are compared (``2.3.0rc1`` as ``2.3.0``); other operators pass.

    >>> _satisfies("2.3.0", "mcp<2.4,>=2.2"), _satisfies("2.0.0", "mcp<2.4,>=2.2")
    (True, False)
    """
    import operator
    import re

    def release(text: str) -> tuple[int, ...]:
        parts = re.match(r"\d+(?:\.\d+)*", text.strip())
        numbers = [int(p) for p in parts.group().split(".")] if parts else [0]
        while len(numbers) > 1 and numbers[-1] == 0:
            numbers.pop()
        return tuple(numbers)

    compare = {
        "<=": operator.le,
        ">=": operator.ge,
        "==": operator.eq,
        "<": operator.lt,
        ">": operator.gt,
    }
    for clause in requirement.removeprefix("mcp").split(","):
        match = re.fullmatch(r"\s*(<=|>=|==|<|>)\s*([\w.]+)\s*", clause)
        if match and not compare[match[1]](release(version), release(match[2])):
            return False
    return True


def _unavailable_message(problem: str) -> str:
    return (
        "prove-gym serve: error: serving over MCP needs the mcp extra: "
        f"pip install 'prove-gym[mcp]' ({problem})"
    )


def run(args: argparse.Namespace) -> int:
    if args.openenv:
        return _run_openenv(args)
    if args.tasks:
        raise ValueError("--tasks offers tasks to an OpenEnv server: add --openenv")
    if not args.servers:
        raise ValueError("name the servers to serve over MCP (see `prove-gym list`)")
    problem = _version_problem()
    if problem is not None:
        print(_unavailable_message(problem), file=sys.stderr)
        return 2
    try:
        from prove_gym.mcp.sessions import DEFAULT_MAX_SESSIONS, DEFAULT_TTL, SessionStore
        from prove_gym.mcp.stdio import serve_stdio
    except ImportError as exc:
        print(_unavailable_message(_import_problem(exc)), file=sys.stderr)
        return 2
    import logging

    import anyio

    from prove_gym import get_registry
    from prove_gym.http_guard import serve_http

    if args.ttl is None:
        args.ttl = DEFAULT_TTL
    if args.max_sessions is None:
        args.max_sessions = DEFAULT_MAX_SESSIONS

    token = _auth_token(args)
    if args.transport == "http":
        _check_reachable(args, token)
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

    try:  # here, not above: a stdio server never imports the HTTP transport
        from prove_gym.mcp.transports import http_app
    except ImportError as exc:
        print(_unavailable_message(_import_problem(exc)), file=sys.stderr)
        return 2
    store = SessionStore(max_sessions=args.max_sessions or None, ttl=args.ttl or None)
    app = http_app(
        servers,
        seed=args.seed,
        size=args.size,
        store=store,
        host=args.host,
        combine=args.combine,
        offload=args.offload,
        allowed_hosts=args.allowed_host,
        allowed_origins=args.allowed_origin,
        auth_token=token,
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
        auth = "bearer token required" if token else "none"
        print(f"  authentication: {auth}", file=sys.stderr)
        sys.stderr.flush()

    anyio.run(
        lambda: serve_http(
            app, host=args.host, port=args.port, log_level=args.log_level, on_ready=ready
        )
    )
    return 0


def _check_reachable(args: argparse.Namespace, token: str | None) -> None:
    """A server reachable from other machines needs a token, or --insecure-no-auth."""
    from prove_gym.http_guard import is_loopback

    if token is None and not args.insecure_no_auth and not is_loopback(args.host):
        raise ValueError(
            f"--host {args.host} is reachable from other machines: require a bearer token with "
            "--auth-token-env VAR or --auth-token-file FILE, or pass --insecure-no-auth to serve "
            "it without authentication"
        )


OPENENV_WS_MAX_SIZE = 4 * 1024 * 1024
"""The largest WebSocket message an OpenEnv session reads (bytes); past it the connection
closes with code 1009. An action's text is cut at 200,000 characters before that."""


def _run_openenv(args: argparse.Namespace) -> int:
    """``serve --openenv``: every named server (default: all) as one OpenEnv environment."""
    for flag, given in (("--combine", args.combine), ("--offload", args.offload)):
        if given:
            raise ValueError(f"{flag} is an MCP option; --openenv serves one environment")
    token = _auth_token(args)
    _check_reachable(args, token)
    try:
        from prove_gym.adapters.openenv import (
            DEFAULT_MAX_SESSIONS,
            DEFAULT_TTL,
            TaskCatalog,
            create_openenv_app,
        )
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] not in ("openenv", "fastapi", "websockets"):
            raise
        print(
            "prove-gym serve: error: --openenv needs the openenv extra: "
            f"pip install 'prove-gym[openenv]' ({exc.name or 'openenv'} does not import)",
            file=sys.stderr,
        )
        return 2
    import logging

    import anyio

    from prove_gym.http_guard import serve_http

    catalog = TaskCatalog(args.tasks, servers=args.servers or None)
    max_sessions = DEFAULT_MAX_SESSIONS if args.max_sessions is None else args.max_sessions
    if max_sessions < 1:
        raise ValueError("--openenv serves at most --max-sessions sessions: give 1 or more")
    ttl = DEFAULT_TTL if args.ttl is None else args.ttl
    app = create_openenv_app(
        catalog,
        max_sessions=max_sessions,
        ttl=ttl or None,
        host=args.host,
        allowed_hosts=args.allowed_host,
        allowed_origins=args.allowed_origin,
        auth_token=token,
    )
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)

    def ready(host: str, port: int) -> None:
        base = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
        splits = catalog.splits()
        print(
            f"prove serve: listening on {base}  (OpenEnv; sessions at {base}/ws)", file=sys.stderr
        )
        print(f"  splits ({len(splits)}): {', '.join(splits)}; list: {base}/tasks", file=sys.stderr)
        ttl_shown = f"{ttl:g} s" if ttl else "none"
        print(f"  sessions: at most {max_sessions}, idle TTL {ttl_shown}", file=sys.stderr)
        auth = "bearer token required" if token else "none"
        print(f"  authentication: {auth}", file=sys.stderr)
        sys.stderr.flush()

    anyio.run(
        lambda: serve_http(
            app,
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            on_ready=ready,
            ws_max_size=OPENENV_WS_MAX_SIZE,
        )
    )
    return 0


def _auth_token(args: argparse.Namespace) -> str | None:
    """The bearer token from ``--auth-token-env`` or ``--auth-token-file`` (``None``: no auth)."""
    if args.auth_token_env and args.auth_token_file:
        raise ValueError("give --auth-token-env or --auth-token-file, not both")
    if args.auth_token_env:
        if args.auth_token_env not in os.environ:
            raise ValueError(
                f"--auth-token-env {args.auth_token_env}: that environment variable is not set "
                f"(export {args.auth_token_env}=<a token of 16 or more characters>)"
            )
        token = os.environ[args.auth_token_env]
        where = f"environment variable {args.auth_token_env}"
    elif args.auth_token_file:
        try:
            lines = Path(args.auth_token_file).read_text().splitlines()
        except OSError as exc:
            raise ValueError(
                f"cannot read --auth-token-file {args.auth_token_file}: {exc.strerror}"
            ) from None
        token = lines[0] if lines else ""
        where = f"file {args.auth_token_file}"
    else:
        return None
    if len(token.strip()) < 16:
        raise ValueError(f"the token in {where} is empty or shorter than 16 characters")
    return token.strip()
