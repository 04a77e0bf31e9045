"""``prove-gym tasks``: check, or deliberately re-derive, a server's shipped task hashes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "tasks",
        help="check a server's shipped tasks against their recorded final states (or --rehash)",
        description="Replay every gold call of a server's shipped tasks (its tasks_file, and "
        "the tasks_file of each later env version, under that version) on a fresh state and "
        "compare the final state hash with the recorded one. Exit 1 on any "
        "difference. After a deliberate change to tools or sampling, --rehash writes the new "
        "hashes, but only when every gold call still succeeds.",
    )
    p.add_argument("server", help="the server whose tasks_file to check")
    p.add_argument(
        "--rehash", action="store_true", help="write the re-derived hashes into the tasks file"
    )
    p.set_defaults(func=run)


def build_args(server: str, *, rehash: bool = False) -> argparse.Namespace:
    """The parsed arguments of ``prove-gym tasks SERVER [--rehash]``."""
    return argparse.Namespace(server=server, rehash=rehash)


def run(args: argparse.Namespace) -> int:
    import prove_gym

    registry = prove_gym.get_registry()
    server = registry.get_server(args.server)
    if server.tasks_file is None:
        raise ValueError(f"server {server.name!r} declares no tasks_file")
    files = [(server.tasks_file, 0)]
    files += [(v.tasks_file, n) for n, v in server.env_versions.items() if v.tasks_file]
    codes = [
        _check_file(server.name, path, number, args.rehash, registry) for path, number in files
    ]
    return max(codes)


def _check_file(server: str, path: Path, env_version: int, rehash: bool, registry: Any) -> int:
    """Replay one tasks file (the tasks of ``prove/<server>-v<env_version>``): 0 when every
    recorded final state matches (or was rewritten with ``rehash``), else 1."""
    from prove_gym.task import load_tasks, save_tasks
    from prove_gym.workspace import replay_tasks

    tasks = load_tasks(path)
    label = f"{server}-v{env_version} ({path.name})"
    astray = [t.id for t in tasks if t.env_version(server) != env_version]
    if astray:
        print(
            f"{label}: {len(astray)} task(s) are not recorded for v{env_version} "
            f'(set "env_versions": {{"{server}": {env_version}}}): {", ".join(astray[:5])}'
        )
        return 1
    replays = replay_tasks(tasks, registry)
    for r in replays:
        for failure in r.failures:
            print(f"{r.task.id}: gold call {failure}")
        if not r.failures and r.changed:
            old = str(r.task.final_state_hash)[:12]
            print(f"{r.task.id}: final state {old} -> {r.final_state_hash[:12]}")
    failed = [r for r in replays if r.failures]
    changed = [r for r in replays if r.changed]
    if failed:
        print(
            f"{label}: {len(failed)} task(s) no longer replay; fix them first. Nothing was written."
        )
        return 1
    if not changed:
        print(f"{len(replays)} tasks of {label}: every recorded final state matches")
        return 0
    if not rehash:
        print(
            f"{len(changed)} of {len(replays)} tasks of {label} end in another state than "
            "recorded. If the change was deliberate, run with --rehash (and give the env a new "
            "version: CONTRIBUTING.md, Versioning)."
        )
        return 1
    save_tasks((r.recorded() for r in replays), path)
    print(f"rewrote {path.name}: {len(changed)} of {len(replays)} hashes updated")
    return 0
