"""The ``prove-gym`` command (``prove`` is an alias). Each subcommand lives in its own module.

A subcommand module defines ``add_parser(subparsers) -> None``, which adds its
parser and sets ``func`` (a callable taking the parsed ``argparse.Namespace``
and returning an exit code). Modules are imported only when listed in
:data:`COMMANDS`, and their heavy imports happen inside ``func``; running a command builds
that command's parser alone (``--help`` and a mistyped command build them all).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

COMMANDS = [
    "list",
    "demo",
    "serve",
    "graph",
    "synth",
    "lint-data",
    "eval",
    "reward-check",
    "train",
    "tasks",
    "new",
]
"""Subcommands, in help order; each is a module ``prove_gym.cli.<name>_cmd`` (``-`` as ``_``)."""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with ``only`` just that subcommand's parser (what parsing a
    command needs: ``prove-gym list`` does not import what ``synth``'s options are built from)."""
    parser = argparse.ArgumentParser(
        prog="prove-gym",
        description="Stateful MCP tool servers as RL environments with programmatic rewards.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in [only] if only in COMMANDS else COMMANDS:
        path = f"prove_gym.cli.{name.replace('-', '_')}_cmd"
        try:
            module = importlib.import_module(path)
        except ModuleNotFoundError as exc:
            if exc.name == path:
                continue
            raise
        module.add_parser(sub)
    return parser


def _version() -> str:
    from importlib.metadata import version

    return f"prove-gym {version('prove-gym')}"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=argv[0] if argv else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (``prove-gym graph x | head``): stop quietly, as Unix tools do;
        # point stdout at devnull so the interpreter's final flush cannot raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (KeyError, ValueError, FileNotFoundError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"prove-gym {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
