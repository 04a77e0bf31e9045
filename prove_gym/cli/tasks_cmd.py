"""``prove-gym tasks``: check, or deliberately re-derive, a server's shipped task hashes."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "tasks",
        help="check a server's shipped tasks against their recorded final states (or --rehash)",
        description="Replay every gold call of a server's shipped tasks (its tasks_file) on a "
        "fresh state and compare the final state hash with the recorded one. Exit 1 on any "
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
    from prove_gym.task import load_tasks, save_tasks
    from prove_gym.workspace import gold_replay

    registry = prove_gym.get_registry()
    server = registry.get_server(args.server)
    if server.tasks_file is None:
        raise ValueError(f"server {server.name!r} declares no tasks_file")
    tasks = load_tasks(server.tasks_file)
    changed, failed = [], []
    for task in tasks:
        records, final = gold_replay(task, registry)
        bad = [r for r in records if not r.result.ok]
        if bad:
            failed.append(task.id)
            for r in bad:
                print(f"{task.id}: gold call {r.name} failed: {r.result.to_text()}")
            continue
        if final != task.final_state_hash:
            changed.append((task, final))
            print(f"{task.id}: final state {str(task.final_state_hash)[:12]} -> {final[:12]}")
    if failed:
        print(f"{len(failed)} task(s) no longer replay; fix them first. Nothing was written.")
        return 1
    if not changed:
        print(f"{len(tasks)} tasks of {server.name}: every recorded final state matches")
        return 0
    if not args.rehash:
        print(
            f"{len(changed)} of {len(tasks)} tasks of {server.name} end in another state than "
            "recorded. If the change was deliberate, run with --rehash (and give the env a new "
            "version: CONTRIBUTING.md, Versioning)."
        )
        return 1
    new = {t.id: final for t, final in changed}
    save_tasks(
        (
            t.model_copy(update={"final_state_hash": new.get(t.id, t.final_state_hash)})
            for t in tasks
        ),
        server.tasks_file,
    )
    print(f"rewrote {server.tasks_file.name}: {len(changed)} of {len(tasks)} hashes updated")
    return 0
