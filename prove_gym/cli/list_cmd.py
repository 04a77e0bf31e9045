"""``prove-gym list``: installed servers, their tool counts and env ids."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("list", help="list installed servers, tool counts and env ids")
    p.add_argument("--tools", action="store_true", help="also list every tool")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="load every plugin rather than read the cached listing (prove_gym.catalog)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from prove_gym.catalog import server_catalog

    catalog = server_catalog(cache=not args.no_cache)
    rows: list[dict[str, Any]] = [
        {
            "server": entry["server"],
            "version": entry["version"],
            "tools": len(entry["tools"]),
            "writes": sum(writes for _, writes in entry["tools"]),
            "env_id": entry["env_ids"][0],
            "env_ids": entry["env_ids"],
            "tool_names": [name for name, _ in entry["tools"]],
        }
        for entry in catalog
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max([len(r["server"]) for r in rows] + [6])
    print(f"{'server':<{width}}  {'tools':>5}  {'writes':>6}  env ids")
    for r, entry in zip(rows, catalog, strict=True):
        ids = ", ".join(r["env_ids"])
        print(f"{r['server']:<{width}}  {r['tools']:>5}  {r['writes']:>6}  {ids}")
        if args.tools:
            for name, writes in entry["tools"]:
                print(f"{'':<{width}}    - {name} ({'write' if writes else 'read'})")
    total = sum(r["tools"] for r in rows)
    print(f"{len(rows)} servers, {total} tools")
    return 0
