"""``prove-gym list``: installed servers, their tool counts and env ids."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("list", help="list installed servers, tool counts and env ids")
    p.add_argument("--tools", action="store_true", help="also list every tool")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from prove_gym import env_id, get_registry

    servers = get_registry().servers
    rows: list[dict[str, Any]] = []
    for name, server in servers.items():
        tools = server.visible_tools()
        rows.append(
            {
                "server": name,
                "version": server.version,
                "tools": len(tools),
                "writes": sum(t.writes for t in tools),
                "env_id": env_id(name),
                "tool_names": [t.name for t in tools],
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max([len(r["server"]) for r in rows] + [6])
    print(f"{'server':<{width}}  {'tools':>5}  {'writes':>6}  env id")
    for r in rows:
        print(f"{r['server']:<{width}}  {r['tools']:>5}  {r['writes']:>6}  {r['env_id']}")
        if args.tools:
            for t in servers[r["server"]].visible_tools():
                mode = "write" if t.writes else "read"
                print(f"{'':<{width}}    - {t.name} ({mode})")
    total = sum(r["tools"] for r in rows)
    print(f"{len(rows)} servers, {total} tools")
    return 0
