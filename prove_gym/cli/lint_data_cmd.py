"""``prove-gym lint-data``: count the flaws a reader would find in a dataset of tasks."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "lint-data",
        help="count flawed tasks in a dataset, per flaw class, with examples",
        description="Read a dataset of tasks (a `prove-gym synth` folder: train.jsonl and "
        "test.jsonl; or any .jsonl of tasks in this project's format) and print, per flaw "
        "class, how many tasks it flags and three examples. Exits 1 when a class flags more "
        "tasks than its limit (0 for every class but raw_enum_token, 1%%).",
    )
    p.add_argument("path", metavar="DIR", help="a dataset folder or a .jsonl file of tasks")
    p.add_argument(
        "--max",
        action="append",
        default=[],
        metavar="CLASS=LIMIT",
        help="allow CLASS this many flagged tasks (a count, or a share such as 1%%); "
        "'all=LIMIT' sets every class; repeatable",
    )
    p.add_argument("--classes", action="store_true", help="list the flaw classes and exit")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from prove_gym.synth.lint import FLAW_CLASSES, UNREADABLE, Limit, format_lint, lint_path

    if args.classes:
        for name, flaw in FLAW_CLASSES.items():
            print(f"{name} (limit {flaw.limit}): {flaw.summary}")
        return 0
    limits: dict[str, Limit] = {}
    for item in args.max:
        name, sep, value = item.partition("=")
        if not sep:
            print(
                f"prove-gym lint-data: error: --max takes CLASS=LIMIT, got {item!r}",
                file=sys.stderr,
            )
            return 2
        names = [*FLAW_CLASSES, UNREADABLE] if name == "all" else [name]
        if name != "all" and name not in FLAW_CLASSES and name != UNREADABLE:
            known = ", ".join(FLAW_CLASSES)
            print(
                f"prove-gym lint-data: error: no flaw class {name!r} (known: {known})",
                file=sys.stderr,
            )
            return 2
        try:
            limit = Limit.parse(value)
        except ValueError as exc:
            print(f"prove-gym lint-data: error: {exc}", file=sys.stderr)
            return 2
        limits.update(dict.fromkeys(names, limit))
    try:
        report = lint_path(args.path, limits=limits)
    except FileNotFoundError as exc:
        print(f"prove-gym lint-data: error: {exc}", file=sys.stderr)
        return 2
    print(format_lint(report))
    return 1 if report.failed else 0
