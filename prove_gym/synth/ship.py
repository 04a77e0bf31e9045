"""Re-ship a server's tasks with the current generator (``prove-gym tasks --resynthesize``).

Every server ships tasks in its ``tasks_file`` and, for each later env version that
declares one, in that version's ``tasks_file``. Re-shipping a server rebuilds them all from
the declarations, so the same command gives the same bytes on every machine and every run:

1. **Hand-written tasks** (those whose ``meta`` names no ``generator``) are kept: they were
   written and reviewed by hand, and tests, docs and examples play them by id. Each is
   replayed and recorded with its final state; one whose gold call fails stops the server
   (:class:`ShipError`): fix it by hand.
2. **Synthesized tasks**: ``prove-gym synth``'s pipeline for that server alone, at
   :data:`SHIP_SEED` and ``n`` (:data:`SHIP_N`), both splits, each task keeping its
   ``meta.split``. Their ids, ``<server>-<seed>-<k>``, sort after the hand-written
   ``<server>-001``, so a server's first task by id stays a hand-written one.
   ``tasks_file`` holds both, sorted by id.
3. **Each env version's file** is derived from the previous version's tasks (``-v0``'s, or
   the nearest earlier version with a file of its own), in their order
   (:func:`derive_version`):

   - a version whose :class:`~prove_gym.server.base.Principal` is in force keeps the tasks
     whose gold acts for one principal: the first for which every gold call has the same
     outcome as under the previous version (the state's signed-in person, ``Server(me=)``,
     then the others by id; a task that already names a principal of that kind keeps it),
     recorded with ``principals``;
   - a version without one keeps the tasks whose gold calls all have the same outcome
     under it.

   A call's outcome is what :func:`call_outcome` reads: whether it succeeded, and its error
   kind if it failed. Each kept task is recorded with
   ``env_versions`` and the final state hash of its replay under the version; every task
   left out is counted under the first call whose outcome changed (:class:`VersionFile`).

Nothing is written until every file of a server is built, and each file is replaced
whole (:func:`write_shipment`), so an interrupted run leaves each file as it was or as
it should be.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prove_gym.registry import Registry, get_registry
from prove_gym.server.base import Server
from prove_gym.server.result import ToolResult
from prove_gym.synth.config import SHIP_N, SHIP_SEED, SynthConfig
from prove_gym.synth.pipeline import synthesize
from prove_gym.task import Task, load_tasks
from prove_gym.workspace import Workspace, replay_tasks

CallOutcome = tuple[bool, str | None]
"""``(ok, error kind)``: ``(True, None)``, or ``(False, "permission_denied")``."""

_RULE = re.compile(r"Rule '([A-Za-z0-9_]+)' failed")


class ShipError(Exception):
    """A server's tasks cannot be shipped as they are (a hand-written task no longer replays,
    or the server declares no tasks file); nothing of that server was written."""


def call_outcome(result: ToolResult) -> CallOutcome:
    """What a version must keep of a gold call to keep its task: whether it succeeded, and
    its error kind if not. Its content may differ (a version may add a field to a result,
    or rest a limit order the previous one filled)."""
    kind = result.error_kind.value if result.error_kind is not None else None
    return (result.ok, kind)


@dataclass(frozen=True)
class Replayed:
    """A task's gold calls replayed: each call's outcome, and where it stopped.

    Attributes:
        outcomes: The outcome of each gold call run (all of them unless it stopped).
        final_state_hash: The state hash after every gold call (``None`` when it stopped).
        why: Why it stopped: the first call whose outcome was not the expected one, as
            a reason shared by every task it stops the same way.
        at: The index of that call (the number of calls that matched).
        where: ``"<tool>"``: the call that stopped it.
    """

    outcomes: tuple[CallOutcome, ...]
    final_state_hash: str | None
    why: str = ""
    at: int = 0
    where: str = ""


def replay_outcomes(
    task: Task, registry: Registry, expected: Sequence[CallOutcome] | None = None
) -> Replayed:
    """Replay ``task``'s gold calls under its versions and principals; with ``expected``,
    stop at the first call whose outcome differs from it."""
    outcomes: list[CallOutcome] = []
    with Workspace(task, registry) as ws:
        for i, step in enumerate(task.steps):
            result = ws.call(step.name, step.arguments).result
            got = call_outcome(result)
            if expected is not None and got != expected[i]:
                rule = _RULE.search(result.message or "")
                now = got[1] or "success"
                was = expected[i][1] or "success"
                why = f"{now}" + (f" (rule {rule[1]})" if rule else "") + f", was {was}"
                return Replayed(tuple(outcomes), None, why, i, step.name)
            outcomes.append(got)
        return Replayed(tuple(outcomes), ws.state_hash())


@dataclass
class VersionFile:
    """One file a server ships: its tasks, and what was left out and why.

    Attributes:
        server: The server.
        env_version: The version whose tasks these are (0: ``tasks_file``).
        path: Where the file is shipped.
        tasks: Its tasks, in file order.
        left_out: Why tasks of the previous version were left out, with how many.
        examples: Up to three ``"<task id>: <tool>"`` for each reason.
        acting: The principal kind tasks act for (``None`` in a version without one).
    """

    server: str
    env_version: int
    path: Path
    tasks: list[Task]
    left_out: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    acting: str | None = None

    def summary(self) -> str:
        """``"email-v1 (tasks_v1.jsonl): 180 kept, 75 left out: ..."``, one reason a line."""
        head = f"{self.server}-v{self.env_version} ({self.path.name}): {len(self.tasks)} kept"
        if self.acting:
            head += f", each for one {self.acting}"
        if not self.left_out:
            return head + ", none left out"
        lines = [head + f", {sum(self.left_out.values())} left out:"]
        for why, n in sorted(self.left_out.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {n:4d}  {why}  (e.g. {', '.join(self.examples[why])})")
        return "\n".join(lines)


@dataclass
class Shipment:
    """Every file one server ships, built and not yet written (:func:`write_shipment`).

    Attributes:
        server: The server.
        hand_written: Its hand-written tasks kept (replayed and recorded).
        synthesized: Its synthesized tasks.
        short: Synthesized tasks short of the quota (0: the pipeline kept ``n``).
        rehashed: Hand-written tasks whose recorded final state moved.
        files: ``tasks_file`` first, then each version's own file in version order.
        seconds: CPU seconds it took to build.
    """

    server: str
    hand_written: list[Task]
    synthesized: list[Task]
    short: int
    rehashed: list[str]
    files: list[VersionFile]
    seconds: float = 0.0

    def summary(self) -> str:
        """What was kept and left out, per file."""
        splits = Counter(str(t.meta.get("split")) for t in self.synthesized)
        lines = [
            f"{self.server}: {len(self.hand_written)} hand-written + {len(self.synthesized)} "
            f"synthesized ({splits['train']} train / {splits['test']} test, seed {SHIP_SEED})"
            + (f", {self.short} short of the quota" if self.short else "")
            + (f"; hand-written rehashed: {', '.join(self.rehashed)}" if self.rehashed else "")
            + f"  [{self.seconds:.1f} CPU-s]"
        ]
        lines += ["  " + f.summary().replace("\n", "\n  ") for f in self.files]
        return "\n".join(lines)


def is_hand_written(task: Task) -> bool:
    """A task no generator made: its ``meta`` names no ``generator``."""
    return "generator" not in task.meta


def resynthesize(
    server: str,
    *,
    n: int = SHIP_N,
    seed: int = SHIP_SEED,
    workers: int = 1,
    registry: Registry | None = None,
) -> Shipment:
    """Build every file ``server`` ships (see the module docstring); writes nothing.

    Raises:
        ShipError: The server declares no ``tasks_file``, or a hand-written task's gold
            call fails.
    """
    import time

    started = time.process_time()
    registry = registry or get_registry()
    srv = registry.get_server(server)
    if srv.tasks_file is None:
        raise ShipError(f"{server} declares no tasks_file to ship")
    hand = [t for t in load_tasks(srv.tasks_file) if is_hand_written(t)]
    replays = replay_tasks(hand, registry)
    broken = [f"{r.task.id}: gold call {f}" for r in replays for f in r.failures]
    if broken:
        raise ShipError(
            f"{server}: {len(broken)} gold call(s) of hand-written tasks fail; fix them by "
            "hand (nothing was written):\n  " + "\n  ".join(broken[:10])
        )
    rehashed = [r.task.id for r in replays if r.changed]
    hand = [r.recorded() for r in replays]
    cfg = SynthConfig(servers=(server,), n=n, seed=seed, workers=workers)
    result = synthesize(cfg, registry=None if workers > 1 else registry)
    synthesized = list(result.tasks)
    v0 = sorted(hand + synthesized, key=lambda t: t.id)
    ids = [t.id for t in v0]
    if len(set(ids)) != len(ids):
        raise ShipError(f"{server}: a hand-written task's id is also a synthesized one's")
    files = [VersionFile(server, 0, srv.tasks_file, v0)]
    previous = v0
    for number in sorted(srv.env_versions):
        version = srv.env_versions[number]
        if version.tasks_file is None:
            continue  # it plays the previous tasks as they are
        made = derive_version(srv, number, previous, registry)
        made.path = version.tasks_file
        files.append(made)
        previous = made.tasks
    return Shipment(
        server=server,
        hand_written=hand,
        synthesized=synthesized,
        short=result.missing.get(server, 0),
        rehashed=rehashed,
        files=files,
        seconds=time.process_time() - started,
    )


def derive_version(
    server: Server, number: int, previous: Sequence[Task], registry: Registry
) -> VersionFile:
    """The tasks of ``prove/<server>-v<number>`` from the previous version's, in their order.

    A task is kept when its gold calls have the same outcomes (:func:`call_outcome`) under
    ``number`` as under the version it is recorded for; where ``number`` acts for a
    principal, for the first for which they do: the state's signed-in person (``Server(me=)``),
    then the others by id (or the one the task already names, if it names one of that kind). Kept tasks are recorded with the version, the
    principal and their final state hash under it; the others are counted by the reason of
    the replay that got furthest (ties: the first principal by id).
    """
    acting = server.principal(number)
    name = server.name
    out = VersionFile(name, number, Path(), [], acting=acting.entity if acting else None)
    for task in previous:
        before = replay_outcomes(task, registry).outcomes
        if len(before) != len(task.steps):  # never: the previous version's tasks replay
            raise ShipError(f"{task.id}: its gold did not run through under its own version")
        versions = {**task.env_versions, name: number}
        if acting is None:
            candidates: list[str | None] = [None]
        else:
            mine = task.principals.get(name)
            previous_kind = server.principal(task.env_version(name))
            if mine is not None and previous_kind is not None:
                candidates = [mine] if previous_kind.entity == acting.entity else []
            else:
                candidates = list(_principals(server, acting.entity, task))
        furthest: tuple[int, str, str] | None = None  # (matched calls, why, tool)
        kept: Task | None = None
        for who in candidates:
            update: dict[str, object] = {"env_versions": versions}
            if who is not None:
                update["principals"] = {**task.principals, name: who}
            trial = task.model_copy(update=update)
            run = replay_outcomes(trial, registry, before)
            if run.final_state_hash is not None:
                kept = trial.model_copy(update={"final_state_hash": run.final_state_hash})
                break
            if furthest is None or run.at > furthest[0]:
                furthest = (run.at, run.why, run.where)
        if kept is not None:
            out.tasks.append(kept)
            continue
        if furthest is None:
            why, where = f"no {acting.entity if acting else 'principal'} to act for", "-"
        else:
            why, where = furthest[1], furthest[2]
        out.left_out[why] += 1
        examples = out.examples.setdefault(why, [])
        if len(examples) < 3:
            examples.append(f"{task.id}: {where}")
    return out


def _principals(server: Server, kind: str, task: Task) -> list[str]:
    """Who ``task`` may act for under a principal of ``kind``: the person its state signs
    in (``Server(me=)``: the one an earlier version's tasks were written for, whom the
    entity listing leaves out), then the ids of every ``kind`` entity of its initial
    state, sorted."""
    source = server.entities[kind]
    with server.session(task.seed, task.size) as session:
        listed = sorted(str(row[source.key]) for row in session.list_entities(kind))
        me = server.me(session.context()).get(kind) if server.me is not None else None
        session.rollback()
    if me is None:
        return listed
    return [str(me), *(who for who in listed if who != str(me))]


def write_shipment(shipment: Shipment, out: Path | None = None) -> list[Path]:
    """Write every file of ``shipment``: over the shipped files, or into ``out/<server>/``
    under their names. Each file is replaced whole (a temporary file renamed over it).
    Returns the paths written."""
    written = []
    for f in shipment.files:
        path = f.path if out is None else Path(out) / shipment.server / f.path.name
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                for task in f.tasks:
                    fh.write(task.to_json() + "\n")
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written.append(path)
    return written


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def shipped_card(registry: Registry | None = None) -> str:
    """The shipped tasks' card (``docs/tasks.md``, printed by ``prove-gym tasks --card``):
    every file with its counts, and the mix of the synthesized ``-v0`` tasks, read from the
    files alone, so a test can hold the page to them."""
    reg = registry if registry is not None else get_registry()
    rows: list[str] = []
    synthesized: list[Task] = []
    generators: Counter[str] = Counter()
    for name in reg.server_names:
        server = reg.get_server(name)
        if server.tasks_file is None:
            continue
        files: list[tuple[str, Path | None]] = [("v0", server.tasks_file)]
        files += [(f"v{n}", v.tasks_file) for n, v in sorted(server.env_versions.items())]
        for version, path in files:
            if path is None:
                continue
            tasks = load_tasks(path)
            made = [t for t in tasks if not is_hand_written(t)]
            test = sum(t.meta.get("split") == "test" for t in made)
            acting = sum(bool(t.principals) for t in tasks)
            rows.append(
                f"| `prove/{name}-{version}` | `{Path(path).name}` | {len(tasks)} "
                f"| {len(tasks) - len(made)} | {len(made) - test} / {test} | {acting or '-'} |"
            )
            if version == "v0":
                synthesized += made
                generators.update(str(t.meta.get("generator")) for t in made)
    n = len(synthesized)
    knobs = [t.meta.get("knobs", {}) for t in synthesized]
    abstaining = sum(bool(k.get("abstention")) for k in knobs)
    calling = n - abstaining
    levels = Counter(str(t.meta.get("info_level")) for t in synthesized if t.steps)
    turns = [t.turns for t in synthesized]
    lines = [
        "# The shipped tasks",
        "",
        "<!-- Written by `prove-gym tasks --card > docs/tasks.md` from the shipped files; a",
        "test holds this page to them. Re-ship with `prove-gym tasks --resynthesize`",
        "(CONTRIBUTING.md, Tasks), then write it again. -->",
        "",
        "Every server ships its tasks in its plugin folder: the hand-written ones, which tests,",
        "docs and examples play by id, and synthesized ones, made for that server alone by",
        ", ".join(f"`{g}`" for g in sorted(generators))
        + " (`prove-gym tasks --resynthesize`). A later env version ships the earlier",
        "version's tasks whose gold means the same under its rules, each recorded under it",
        "(and, where the version has an acting principal, for one).",
        "",
        "| env | file | tasks | hand-written | synthesized (train / test) | acting for one |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"The {n:,} synthesized `-v0` tasks (the mix `prove-gym synth` reports for a run):",
        "",
        "| | share |",
        "|---|---|",
        "| tool-calling tasks: complete / minimal / missing information | "
        + " / ".join(_pct(levels[k], calling) for k in ("complete", "minimal", "missing"))
        + " |",
        f"| whole tasks of abstention | {_pct(abstaining, n)} |",
        f"| tasks with distractor servers | {_pct(sum(bool(k.get('distractors')) for k in knobs), n)} |",
        f"| tasks with enum values stripped | {_pct(sum(bool(k.get('strip_enums')) for k in knobs), n)} |",
        f"| tasks with a clarify turn | {_pct(sum(any(u.kind == 'clarify' for u in ts) for ts in turns), n)} |",
        f"| tasks with a failed call the gold recovers from | {_pct(sum(bool(t.meta.get('failed_calls')) for t in synthesized), n)} |",
        f"| mean user turns, gold calls per task | {sum(map(len, turns)) / (n or 1):.2f}, "
        f"{sum(len(t.steps) for t in synthesized) / (n or 1):.2f} |",
        "",
    ]
    return "\n".join(lines)
