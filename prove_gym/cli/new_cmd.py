"""``prove-gym new``: write a server plugin package that passes conformance as generated."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "new",
        help="write a new server plugin package (models, sampler, tools, tasks, tests)",
        description="Write a plugin package for a new server: pyproject with the entry point, "
        "models, a seeded sampler, tools, recorded tasks and a test module running the "
        "conformance suite. `pip install -e DIR` and it appears in every command.",
    )
    p.add_argument("name", help="the server's name, a lowercase identifier such as 'notes'")
    p.add_argument("--dir", type=Path, help="where to write it (default: ./prove-<name>)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from prove_gym.scaffold import new_plugin

    directory = args.dir or Path(f"prove-{args.name.replace('_', '-')}")
    written = new_plugin(args.name, directory)
    print(f"wrote {len(written)} files under {directory}:")
    for path in written:
        print(f"  {path.relative_to(directory)}")
    print(f"next: pip install -e {directory} && (cd {directory} && python -m pytest)")
    return 0
