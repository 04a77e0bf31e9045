"""``prove-gym tasks``: check servers' shipped tasks, re-derive their hashes, or re-ship them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    from prove_gym.synth.config import SHIP_N, SHIP_SEED

    p = sub.add_parser(
        "tasks",
        help="check servers' shipped tasks against their recorded final states (or --rehash, "
        "or --resynthesize them)",
        description="Replay every gold call of the servers' shipped tasks (each tasks_file, "
        "and the tasks_file of each later env version, under that version) on a fresh state "
        "and compare the final state hash with the recorded one. Exit 1 on any difference. "
        "After a deliberate change to tools or sampling, --rehash writes the new hashes, but "
        "only when every gold call still succeeds. --resynthesize re-ships them with the "
        "current generator: the hand-written tasks kept, the synthesized ones made again "
        f"(seed {SHIP_SEED}), each env version's file derived from the previous version's "
        "tasks (CONTRIBUTING.md, Tasks).",
    )
    p.add_argument("servers", nargs="*", metavar="SERVER", help="servers (default: every one)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--rehash", action="store_true", help="write the re-derived hashes into the tasks files"
    )
    mode.add_argument(
        "--resynthesize",
        action="store_true",
        help="re-ship every file of the servers: hand-written tasks kept, synthesized ones "
        "made again, env versions' files derived; prints what each file kept and left out",
    )
    mode.add_argument(
        "--card",
        action="store_true",
        help="print the shipped tasks' card (docs/tasks.md): each file's counts and the mix",
    )
    p.add_argument(
        "--n",
        type=int,
        help=f"with --resynthesize: synthesized tasks per server (default {SHIP_N})",
    )
    p.add_argument(
        "--workers",
        type=int,
        help="with --resynthesize: synthesis processes (default 1; the files do not depend on it)",
    )
    p.add_argument(
        "--out",
        type=Path,
        help="with --resynthesize: write OUT/<server>/<file> instead of over the shipped files",
    )
    p.set_defaults(func=run)


def build_args(
    *servers: str,
    rehash: bool = False,
    resynthesize: bool = False,
    n: int | None = None,
    workers: int | None = None,
    out: Path | None = None,
) -> argparse.Namespace:
    """The parsed arguments of ``prove-gym tasks [SERVER ...] [--rehash | --resynthesize]``."""
    return argparse.Namespace(
        servers=list(servers),
        rehash=rehash,
        resynthesize=resynthesize,
        n=n,
        workers=workers,
        out=out,
    )


def run(args: argparse.Namespace) -> int:
    import prove_gym
    from prove_gym.synth.config import resolve_servers

    registry = prove_gym.get_registry()
    names = resolve_servers(args.servers, registry)
    if args.resynthesize:
        return _resynthesize(names, args, registry)
    if getattr(args, "card", False):
        from prove_gym.synth.ship import shipped_card

        print(shipped_card(registry), end="")
        return 0
    if (args.n, args.workers, args.out) != (None, None, None):
        raise ValueError("--n, --workers and --out go with --resynthesize")
    codes = []
    for name in names:
        server = registry.get_server(name)
        if server.tasks_file is None:
            if args.servers:
                raise ValueError(f"server {server.name!r} declares no tasks_file")
            continue
        files = [(server.tasks_file, 0)]
        files += [(v.tasks_file, n) for n, v in server.env_versions.items() if v.tasks_file]
        codes += [
            _check_file(server.name, path, number, args.rehash, registry) for path, number in files
        ]
    return max(codes, default=0)


def _resynthesize(names: list[str], args: argparse.Namespace, registry: Any) -> int:
    """Re-ship each server's files (:mod:`prove_gym.synth.ship`): 0 when every server was
    written with its whole quota, 1 when one fell short (written all the same) or could not
    be shipped (not written)."""
    import time

    from prove_gym.synth.config import SHIP_N
    from prove_gym.synth.ship import ShipError, resynthesize, write_shipment

    n = SHIP_N if args.n is None else args.n
    workers = 1 if args.workers is None else args.workers
    if n < 1 or workers < 1:
        raise ValueError("--n and --workers must be at least 1")
    code = 0
    cpu, wall = time.process_time(), time.perf_counter()
    for name in names:
        try:
            shipment = resynthesize(name, n=n, workers=workers, registry=registry)
        except ShipError as exc:
            print(f"{name}: not shipped: {exc}")
            code = 1
            continue
        write_shipment(shipment, args.out)
        print(shipment.summary(), flush=True)
        if shipment.short:
            print(f"WARNING: {name} kept {shipment.short} synthesized tasks fewer than --n {n}")
            code = 1
    where = args.out if args.out is not None else "the shipped files"
    print(
        f"\nre-shipped {len(names)} server(s) into {where} in "
        f"{time.process_time() - cpu:.1f} CPU-s, {time.perf_counter() - wall:.1f} s"
    )
    return code


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
