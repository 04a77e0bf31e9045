"""Reward validity: does the reward rank perturbed oracle trajectories the way their final state does?

The yardstick for every reward change. For every task of a task set (by default
every shipped task of every installed server), the oracle trajectory (the gold
steps, in order, across turns) is perturbed into families of near misses:

=======================  ==================================================================
family                   perturbation (each task gives up to ``--variants`` of each)
=======================  ==================================================================
oracle                   the gold steps unchanged
drop_call                one gold call left out
duplicate_write          a write step repeated right after itself
duplicate_read           a read-only step repeated right after itself
swap_independent         two adjacent gold calls of one turn with no dependency path swapped
swap_dependent           a call swapped with a call of its turn that it directly depends on
wrong_entity_id          an entity-id argument replaced by another existing id of its kind
wrong_scalar             a non-id scalar argument changed (number +1 or x2, bool negated,
                         enum to another member, date +1 day, other strings to a variant)
hallucinated_tool        a call to a tool that does not exist inserted in a normal turn
extra_irrelevant_read    a valid read-only call of a tool the task does not use inserted
ask_first_violation      calls made on a clarify turn (probe, act on a guess, guess and redo)
abstain_violation        a call (a valid read, or an invented tool) made on an abstain turn
=======================  ==================================================================

A family that does not apply to a task (no write to duplicate, no clarify turn)
gives it no variant; the tables report how many tasks and trajectories each
family has. Variants are drawn with ``random.Random(f"{task.id}:{family}")``,
so a run prints the same figures every time.

Every trajectory is executed live on a fresh :class:`~prove_gym.workspace.Workspace`
(the calls' real results, errors included) and labelled by :func:`judge`, a
state-based judge independent of the reward: correct iff the final state hash
equals the gold replay's, every gold read-only step's answer was obtained (some
call of the same tool returned the gold replay's result), and no call was made
on a clarify or abstain turn. Each trajectory is then scored with every reward
config (``default``, ``paper``, and ``state=w``: the default with the state
weight set to w), and the totals are compared normalised by each breakdown's
``max_total``.

Reported per config: the ROC AUC of the reward against the judge's label over
all trajectories (the Mann-Whitney statistic, ties counted 1/2), and per family
the share judged correct, the mean normalised reward and the AUC of the family's
trajectories pooled with the oracle trajectories of the same tasks; then the
margin (the oracle's mean minus the highest mean of a family the judge marks
all wrong) and how many judged-wrong trajectories still score the maximum.

Run: ``prove-gym reward-check`` (every shipped task), ``prove-gym reward-check data/``
(a folder ``prove-gym synth`` wrote: its ``train.jsonl`` and ``test.jsonl``) or
``prove-gym reward-check tasks.jsonl``; ``--reward`` names the config whose figures lead the
report (a preset, or ``state=W``); ``--quick`` for fewer variants, ``--limit N`` tasks,
``--servers a,b``, ``--json PATH`` for every figure and trajectory.
``benchmarks/reward_validity.py`` is the same run. The run time goes to stderr, so stdout
is the same on every run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from prove_gym.registry import Registry, get_registry
from prove_gym.reward import RewardConfig, score
from prove_gym.reward.common import prepare
from prove_gym.reward.state import canonical
from prove_gym.reward.turns import gold_turns, turn_rewards
from prove_gym.server.result import to_jsonable
from prove_gym.server.tool import ToolSpec, enum_choices
from prove_gym.task import Task, load_tasks
from prove_gym.workspace import CallRecord, Workspace, gold_replay

FAMILIES: tuple[str, ...] = (
    "oracle",
    "drop_call",
    "duplicate_write",
    "duplicate_read",
    "swap_independent",
    "swap_dependent",
    "wrong_entity_id",
    "wrong_scalar",
    "hallucinated_tool",
    "extra_irrelevant_read",
    "ask_first_violation",
    "abstain_violation",
)
"""Every perturbation family, in report order."""

STATE_WEIGHTS: tuple[float, ...] = (0.0, 0.5, 2.0)
"""The state weights of the ``state=w`` sweep (on the default config)."""

NO_CALL_KINDS = ("clarify", "abstain")
"""Turn kinds whose right answer is a message without a call."""


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class PlannedCall:
    """One call of a trajectory before it runs.

    Attributes:
        name: The tool name (may not exist: a hallucinated tool).
        arguments: The arguments, a JSON object.
        turn: Index of the user turn the call is made in.
        step: Id of the gold step it copies (changed or not); ``None`` for an inserted call.
    """

    name: str
    arguments: dict[str, Any]
    turn: int
    step: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments, "turn": self.turn}


@dataclass(frozen=True)
class Variant:
    """One perturbed trajectory: its family, what was done, and the calls to run."""

    family: str
    label: str
    calls: tuple[PlannedCall, ...]


@dataclass(frozen=True)
class Verdict:
    """The judge's label of one executed trajectory, with every reason it is wrong."""

    correct: bool
    reasons: tuple[str, ...] = ()


@dataclass
class TaskFacts:
    """What the perturbations and the judge need to know about one task, computed once.

    Attributes:
        task: The task.
        offered: The tools the task offers, by name.
        oracle: The gold steps as calls, in global order, each with its turn.
        gold: The gold replay's records on a fresh workspace (aligned with ``oracle``).
        gold_hash: The state hash after the gold replay.
        prerequisites: Every step's transitive prerequisites (its dependency ancestors), by step id.
        entity_ids: Ids of the initial state's entities, sorted, by ``(server, kind)``.
        entity_keys: The record field holding each kind's ids, by ``(server, kind)``.
        reads: Valid read-only calls of offered tools that no gold step uses (they
            succeed on the initial state); the pool of irrelevant reads.
    """

    task: Task
    offered: dict[str, ToolSpec]
    oracle: tuple[PlannedCall, ...]
    gold: tuple[CallRecord, ...]
    gold_hash: str
    prerequisites: dict[str, frozenset[str]]
    entity_ids: dict[tuple[str, str], tuple[str, ...]]
    entity_keys: dict[tuple[str, str], str]
    reads: tuple[PlannedCall, ...] = field(default=())

    def spec(self, name: str) -> ToolSpec | None:
        """The offered tool called ``name`` (``None`` if it is not offered)."""
        return self.offered.get(name)

    def writes(self, name: str) -> bool:
        """Whether the offered tool ``name`` may change state."""
        spec = self.offered.get(name)
        return spec is not None and spec.writes


def task_facts(task: Task, registry: Registry | None = None) -> TaskFacts:
    """Replay the task's gold steps, list its initial entities and find irrelevant reads.

    The entity ids and the read pool come from the task's *initial* state (a fresh
    workspace), so they do not depend on the trajectory being perturbed.
    """
    registry = registry or get_registry()
    oracle = tuple(
        PlannedCall(s.name, dict(s.arguments), i, s.id)
        for i, turn in enumerate(task.turns)
        for s in turn.steps
    )
    records, gold_hash = gold_replay(task, registry)
    prerequisites: dict[str, frozenset[str]] = {}
    for step in task.steps:  # steps depend only on earlier steps
        found: set[str] = set()
        for dep in step.depends_on:
            found |= {dep, *prerequisites[dep]}
        prerequisites[step.id] = frozenset(found)

    with Workspace(task, registry) as ws:
        entity_ids: dict[tuple[str, str], tuple[str, ...]] = {}
        entity_keys: dict[tuple[str, str], str] = {}
        for server_name in ws.servers:  # distractor servers too: opened here
            session = ws.session(server_name)
            for kind, source in sorted(session.server.entities.items()):
                entity_keys[(server_name, kind)] = source.key
                values = {
                    str(r[source.key])
                    for r in session.list_entities(kind)
                    if r.get(source.key) is not None
                }
                entity_ids[(server_name, kind)] = tuple(sorted(values))
        facts = TaskFacts(
            task,
            dict(ws.offered),
            oracle,
            tuple(records),
            gold_hash,
            prerequisites,
            entity_ids,
            entity_keys,
        )
        facts.reads = _read_pool(facts, ws)
    return facts


def _read_pool(facts: TaskFacts, ws: Workspace) -> tuple[PlannedCall, ...]:
    """One valid call of every offered read-only tool the gold steps do not use."""
    rng = random.Random(f"{facts.task.id}:reads")
    gold_names = {c.name for c in facts.oracle}
    pool = []
    for name in sorted(facts.offered):
        spec = facts.offered[name]
        if spec.writes or spec.hidden or name in gold_names:
            continue
        arguments = _fill_required(spec, ws, facts, rng)
        if arguments is None:
            continue
        if ws.call(name, arguments).result.ok:
            pool.append(PlannedCall(name, arguments, 0))
    return tuple(pool)


def _fill_required(
    spec: ToolSpec, ws: Workspace, facts: TaskFacts, rng: random.Random
) -> dict[str, Any] | None:
    """Values for a tool's required parameters (existing ids, examples, enum members), or ``None``."""
    session = ws.session(spec.server_name)
    ctx = session.context()
    properties = spec.input_schema().get("properties", {})
    arguments: dict[str, Any] = {}
    for param in spec.params:
        if not param.required:
            continue
        examples = spec.examples.get(param.name)
        choices = enum_choices(properties.get(param.name, {}))
        value: Any
        if param.entity is not None:
            ids = facts.entity_ids.get((spec.server_name, param.entity.name), ())
            if not ids:
                return None
            value = [rng.choice(ids)] if param.entity.many else rng.choice(ids)
        elif callable(examples):
            value = examples(ctx, rng)
        elif examples:
            value = rng.choice(list(examples))
        elif choices:
            value = rng.choice(choices)
        else:
            return None
        arguments[param.name] = value
    return arguments


# ---------------------------------------------------------------- perturbations

Perturbation = Callable[[TaskFacts, random.Random, int], list[Variant]]


def oracle(facts: TaskFacts, rng: random.Random, k: int) -> list[Variant]:
    """The gold steps unchanged (one variant; an abstain task's oracle makes no call)."""
    return [Variant("oracle", "gold steps", facts.oracle)]


def drop_call(facts: TaskFacts, rng: random.Random, k: int) -> list[Variant]:
    """Leave one gold call out (up to ``k`` different calls)."""
    calls = facts.oracle
    return [
        Variant("drop_call", f"drop {calls[i].step} {calls[i].name}", calls[:i] + calls[i + 1 :])
        for i in _pick(rng, range(len(calls)), k)
    ]


def duplicate_write(facts: TaskFacts, rng: random.Random, k: int) -> list[Variant]:
    """Repeat a write step right after itself (the label says whether the tool is idempotent)."""
    return _duplicates(facts, rng, k, writes=True)


def duplicate_read(facts: TaskFacts, rng: random.Random, k: int) -> list[Variant]:
    """Repeat a read-only step right after itself."""
    return _duplicates(facts, rng, k, writes=False)


def _duplicates(facts: TaskFacts, rng: random.Random, k: int, *, writes: bool) -> list[Variant]:
    family = "duplicate_write" if writes else "duplicate_read"
    calls = facts.oracle
    where = [
        i for i, c in enumerate(calls) if facts.spec(c.name) and facts.writes(c.name) == writes
    ]
    out = []
    for i in _pick(rng, where, k):
        spec = facts.spec(calls[i].name)
        idem = " (idempotent)" if writes and spec is not None and spec.idempotent else ""
        label = f"repeat {calls[i].step} {calls[i].name}{idem}"
        out.append(Variant(family, label, calls[: i + 1] + calls[i:]))
    return out


def swap_independent(facts: TaskFacts, rng: random.Random, k: int) -> list[Variant]:
    """Swap two adjacent gold calls of the same turn with no dependency path between them."""
    calls = facts.oracle
    pairs = [
        (i, i + 1)
        for i in range(len(calls) - 1)
        if calls[i].turn == calls[i + 1].turn and not _related(facts, calls[i], calls[i + 1])
    ]
    return [_swap(facts, "swap_independent", i, j) for i, j in _pick(rng, pairs, k)]


def swap_dependent(facts: TaskFacts, rng: random.Random, k: int) -> list[Variant]:
    """Swap a call with an earlier call of its turn that it directly depends on."""
    calls = facts.oracle
    depends = {s.id: set(s.depends_on) for s in facts.task.steps}
    pairs = [
        (i, j)
        for j in range(len(calls))
        for i in range(j)
        if calls[i].turn == calls[j].turn and calls[i].step in depends[str(calls[j].step)]
    ]
    return [_swap(facts, "swap_dependent", i, j) for i, j in _pick(rng, pairs, k)]


def _related(facts: TaskFacts, a: PlannedCall, b: PlannedCall) -> bool:
    """Whether a dependency path joins two gold calls (either way)."""
    pa, pb = facts.prerequisites[str(a.step)], facts.prerequisites[str(b.step)]
    return a.step in pb or b.step in pa


def _swap(facts: TaskFacts, family: str, i: int, j: int) -> Variant:
    calls = list(facts.oracle)
    calls[i], calls[j] = calls[j], calls[i]
    label = f"swap {calls[j].step} {calls[j].name} <-> {calls[i].step} {calls[i].name}"
    return Variant(family, label, tuple(calls))


def entity_kind(facts: TaskFacts, spec: ToolSpec, key: str, value: Any) -> str | None:
    """The entity kind an argument names, or ``None`` for a plain value.

    In order: the parameter's declared ``Entity`` kind; for a key ending in
    ``_id``, the kind whose id field has that name; a kind one of whose existing
    ids equals the value (a path that exists, an ``evt_0012`` in a free-form key).
    """
    for param in spec.params:
        if param.name == key and param.entity is not None:
            return param.entity.name
    kinds = [kind for (server, kind) in facts.entity_ids if server == spec.server_name]
    if key.endswith("_id"):
        for kind in kinds:
            if facts.entity_keys[(spec.server_name, kind)] == key:
                return kind
    if isinstance(value, str):
        for kind in kinds:
            if value in facts.entity_ids[(spec.server_name, kind)]:
                return kind
    return None


def wrong_entity_id(facts: TaskFacts, rng: random.Random, k: int) -> list[Variant]:
    """Replace an entity-id argument with another existing id of the same kind.

    The replacement is drawn from the task's initial state (the server's entity
    listing); for a list of ids, one element is replaced by an id not in the list.
    """
    calls = facts.oracle
    sites = []
    for i, call in enumerate(calls):
        spec = facts.spec(call.name)
        if spec is None:
            continue
        for key in sorted(call.arguments):
            kind = entity_kind(facts, spec, key, call.arguments[key])
            if kind is not None:
                sites.append((i, key, kind))
    out = []
    for i, key, kind in _pick(rng, sites, k):
        call = calls[i]
        spec = facts.offered[call.name]
        ids = facts.entity_ids.get((spec.server_name, kind), ())
        value = call.arguments[key]
        new = _other_id(value, ids, rng)
        if new is None:
            continue
        changed = PlannedCall(call.name, {**call.arguments, key: new}, call.turn, call.step)
        label = f"{call.step} {call.name}: {key} {value!r} -> {new!r}"
        out.append(Variant("wrong_entity_id", label, (*calls[:i], changed, *calls[i + 1 :])))
    return out


def _other_id(value: Any, ids: Sequence[str], rng: random.Random) -> Any:
    """Another id than ``value`` (for a list, the list with one element replaced), or ``None``."""
    if isinstance(value, list):
        if not value:
            return None
        others = [x for x in ids if x not in {str(v) for v in value}]
        if not others:
            return None
        at = rng.randrange(len(value))
        return [rng.choice(others) if n == at else v for n, v in enumerate(value)]
    others = [x for x in ids if x != str(value)]
    return rng.choice(others) if others else None


def wrong_scalar(facts: TaskFacts, rng: random.Random, k: int) -> list[Variant]:
    """Change a non-id scalar argument to another plausible value (see :func:`other_scalar`)."""
    calls = facts.oracle
    sites = []
    for i, call in enumerate(calls):
        spec = facts.spec(call.name)
        if spec is None:
            continue
        for key in sorted(call.arguments):
            value = call.arguments[key]
            if isinstance(value, bool | int | float | str) and (
                entity_kind(facts, spec, key, value) is None
            ):
                sites.append((i, key))
    out = []
    for i, key in _pick(rng, sites, k):
        call = calls[i]
        spec = facts.offered[call.name]
        value = call.arguments[key]
        new = other_scalar(value, _property(spec, key), spec.examples.get(key), rng)
        if new == value and type(new) is type(value):
            continue
        changed = PlannedCall(call.name, {**call.arguments, key: new}, call.turn, call.step)
        label = f"{call.step} {call.name}: {key} {value!r} -> {new!r}"
        out.append(Variant("wrong_scalar", label, (*calls[:i], changed, *calls[i + 1 :])))
    return out


def _property(spec: ToolSpec, key: str) -> Mapping[str, Any]:
    """The tool's own JSON schema of parameter ``key`` (enums included, whatever the task shows)."""
    prop = spec.input_schema().get("properties", {}).get(key, {})
    return prop if isinstance(prop, Mapping) else {}


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?")
_MONTH = re.compile(r"\d{4}-\d{2}")
_DECIMAL = re.compile(r"-?\d+\.\d+")


def other_scalar(
    value: bool | int | float | str,
    prop: Mapping[str, Any],
    examples: Any,
    rng: random.Random,
) -> Any:
    """A plausible other value of the same type.

    A bool is negated; a number becomes +1 or x2 (x2 of 0 is 1); an enum string
    another member; a date moves a day, a date-time an hour, a month a month; a
    digit string (a passcode) or a decimal string (an amount) is incremented; any
    other string becomes another of the tool's examples, or gets `` 2`` appended.

    >>> rng = random.Random(0)
    >>> other_scalar(True, {}, None, rng), other_scalar("2026-03-31", {}, None, rng)
    (False, '2026-04-01')
    >>> other_scalar("weekly", {"enum": ["daily", "weekly"]}, None, rng)
    'daily'
    >>> other_scalar("033542", {}, None, rng), other_scalar("665.00", {}, None, rng)
    ('033543', '666.00')
    """
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        if value == 0:
            return type(value)(1)
        return value + 1 if rng.random() < 0.5 else value * 2
    others = sorted({str(c) for c in enum_choices(prop)} - {value})
    if others:
        return rng.choice(others)
    if _DATETIME.fullmatch(value):
        seconds = len(value) > 16
        moved = dt.datetime.fromisoformat(value) + dt.timedelta(hours=1)
        return moved.isoformat(timespec="seconds" if seconds else "minutes")
    if _DATE.fullmatch(value):
        return (dt.date.fromisoformat(value) + dt.timedelta(days=1)).isoformat()
    if _MONTH.fullmatch(value):
        year, month = int(value[:4]), int(value[5:])
        return f"{year + month // 12:04d}-{month % 12 + 1:02d}"
    if value.isdigit() and value.isascii():
        return str(int(value) + 1).zfill(len(value))
    if _DECIMAL.fullmatch(value):
        places = len(value.split(".")[1])
        return f"{Decimal(value) + 1:.{places}f}"
    if isinstance(examples, list | tuple):
        alternatives = sorted({e for e in examples if isinstance(e, str) and e != value})
        if alternatives:
            return rng.choice(alternatives)
    return f"{value} 2"


_VERBS = ("fetch", "lookup", "sync", "bulk", "quick")


def invented_tool_name(base: str, offered: Mapping[str, ToolSpec], rng: random.Random) -> str:
    """A plausible tool name that is not offered, built from ``base`` (``fetch_event``)."""
    noun = base.split("_", 1)[1] if "_" in base else base
    for verb in rng.sample(_VERBS, len(_VERBS)):
        name = f"{verb}_{noun}"
        if name not in offered:
            return name
    return f"{base}_v2"


def hallucinated_tool(facts: TaskFacts, rng: random.Random, k: int) -> list[Variant]:
    """Insert a call to a tool that does not exist (a gold call's arguments, a mangled name)."""
    calls = facts.oracle
    if not calls:
        return []
    out = []
    for at in _pick(rng, range(len(calls) + 1), k):
        near = calls[min(at, len(calls) - 1)]
        name = invented_tool_name(near.name, facts.offered, rng)
        turn = calls[at - 1].turn if at else calls[0].turn
        fake = PlannedCall(name, dict(near.arguments), turn)
        label = f"insert {name} at {at}"
        out.append(Variant("hallucinated_tool", label, (*calls[:at], fake, *calls[at:])))
    return out


def extra_irrelevant_read(facts: TaskFacts, rng: random.Random, k: int) -> list[Variant]:
    """Insert a valid read-only call of an offered tool that no gold step uses."""
    calls = facts.oracle
    if not calls or not facts.reads:
        return []
    out = []
    for read in _pick(rng, facts.reads, k):
        at = rng.randrange(len(calls) + 1)
        turn = calls[at - 1].turn if at else calls[0].turn
        extra = PlannedCall(read.name, dict(read.arguments), turn)
        label = f"insert {read.name} at {at}"
        out.append(Variant("extra_irrelevant_read", label, (*calls[:at], extra, *calls[at:])))
    return out


def ask_first_violation(facts: TaskFacts, rng: random.Random, k: int) -> list[Variant]:
    """Make calls on a clarify turn, where the right move is to ask for the missing value.

    Three variants per clarify turn, each using the gold calls of the next turn
    that has any: *probe* (its first call made early, then the oracle), *act*
    (all its calls made on the clarify turn with the gold values, none after) and
    *guess* (those calls with the missing values wrong on the clarify turn, then
    the oracle).
    """
    calls = facts.oracle
    out = []
    for c, turn in enumerate(facts.task.turns):
        if turn.kind != "clarify":
            continue
        later = [x for x in calls if x.turn > c]
        if not later:
            continue
        answer = [x for x in later if x.turn == later[0].turn]
        before = tuple(x for x in calls if x.turn < c)
        after = tuple(later)
        early = [PlannedCall(x.name, x.arguments, c, x.step) for x in answer]
        probe = Variant(
            "ask_first_violation", f"turn {c}: probe {early[0].name}", (*before, early[0], *after)
        )
        act = Variant(
            "ask_first_violation",
            f"turn {c}: act on it ({len(early)} calls)",
            (*before, *early, *(x for x in after if x.turn != answer[0].turn)),
        )
        guessed = [_guess(facts, x, turn.missing, rng) for x in early]
        guess = Variant(
            "ask_first_violation", f"turn {c}: guess, then redo", (*before, *guessed, *after)
        )
        out += [probe, act, guess]
    return _pick(rng, out, k)


def _guess(
    facts: TaskFacts, call: PlannedCall, missing: Sequence[str], rng: random.Random
) -> PlannedCall:
    """The call with every missing value (by key) replaced by a wrong one."""
    spec = facts.spec(call.name)
    if spec is None:
        return call
    arguments = dict(call.arguments)
    for key in sorted(set(missing) & set(arguments)):
        value = arguments[key]
        kind = entity_kind(facts, spec, key, value)
        if kind is not None:
            new = _other_id(value, facts.entity_ids.get((spec.server_name, kind), ()), rng)
            arguments[key] = value if new is None else new
        elif isinstance(value, bool | int | float | str):
            arguments[key] = other_scalar(value, _property(spec, key), spec.examples.get(key), rng)
    return PlannedCall(call.name, arguments, call.turn, call.step)


def abstain_violation(facts: TaskFacts, rng: random.Random, k: int) -> list[Variant]:
    """Make a call on an abstain turn: a valid irrelevant read (up to two), or an invented tool."""
    calls = facts.oracle
    out = []
    for a, turn in enumerate(facts.task.turns):
        if turn.kind != "abstain":
            continue
        before = tuple(x for x in calls if x.turn < a)
        after = tuple(x for x in calls if x.turn > a)
        for read in _pick(rng, facts.reads, 2):
            extra = PlannedCall(read.name, dict(read.arguments), a)
            out.append(
                Variant("abstain_violation", f"turn {a}: {read.name}", (*before, extra, *after))
            )
        names = sorted(facts.offered)
        if names:
            fake = invented_tool_name(rng.choice(names), facts.offered, rng)
            extra = PlannedCall(fake, {}, a)
            out.append(Variant("abstain_violation", f"turn {a}: {fake}", (*before, extra, *after)))
    return _pick(rng, out, k)


def _pick(rng: random.Random, items: Sequence[Any] | range, k: int) -> list[Any]:
    """Up to ``k`` items drawn without replacement, kept in their original order."""
    items = list(items)
    if len(items) <= k:
        return items
    return [items[i] for i in sorted(rng.sample(range(len(items)), k))]


PERTURBATIONS: dict[str, Perturbation] = {
    "oracle": oracle,
    "drop_call": drop_call,
    "duplicate_write": duplicate_write,
    "duplicate_read": duplicate_read,
    "swap_independent": swap_independent,
    "swap_dependent": swap_dependent,
    "wrong_entity_id": wrong_entity_id,
    "wrong_scalar": wrong_scalar,
    "hallucinated_tool": hallucinated_tool,
    "extra_irrelevant_read": extra_irrelevant_read,
    "ask_first_violation": ask_first_violation,
    "abstain_violation": abstain_violation,
}
"""Every family's perturbation, ``(facts, rng, k) -> variants``."""


def perturb(facts: TaskFacts, family: str, k: int) -> list[Variant]:
    """Up to ``k`` variants of the oracle in ``family``, seeded by task id and family."""
    rng = random.Random(f"{facts.task.id}:{family}")
    return PERTURBATIONS[family](facts, rng, k)


# ------------------------------------------------------------------ run, judge


def execute(
    task: Task,
    calls: Sequence[PlannedCall],
    registry: Registry | None = None,
    *,
    turn_hashes: list[str] | None = None,
) -> tuple[list[CallRecord], str]:
    """Run the calls on a fresh workspace of the task: the live records and the final state
    hash; given ``turn_hashes``, the state hash at the end of every user turn is appended to
    it (a turn's calls are those that carry its index, in the order given)."""
    with Workspace(task, registry or get_registry()) as ws:
        records = []
        pending = list(calls)
        if turn_hashes is not None:
            for t in range(len(task.turns)):
                while pending and pending[0].turn <= t:
                    c = pending.pop(0)
                    records.append(ws.call(c.name, c.arguments, turn=c.turn))
                turn_hashes.append(ws.state_hash())
        records += [ws.call(c.name, c.arguments, turn=c.turn) for c in pending]
        return records, ws.state_hash()


def judge(facts: TaskFacts, records: Sequence[CallRecord], final_state_hash: str) -> Verdict:
    """Label an executed trajectory by its outcome, independently of the reward.

    Correct iff (a) the final state hash equals the gold replay's, (b) for every
    gold step of a read-only tool that succeeds, some call of the same tool got the
    gold replay's result (same content): the answer the user asked for was obtained
    (a read the gold shows failing is an attempt or a refusal, nothing to obtain), and (c) no call was made on a clarify or abstain turn, where
    the right move is a message.
    """
    reasons = []
    if final_state_hash != facts.gold_hash:
        reasons.append("final state differs from the gold replay's")
    for planned, gold in zip(facts.oracle, facts.gold, strict=True):
        if facts.writes(gold.name) or not gold.result.ok:
            continue  # a write is judged by the state; a call the gold shows failing (an
            # attempt it recovers from, a request the state refuses) is no answer to obtain
        if not any(
            r.name == gold.name
            and r.result.ok == gold.result.ok
            and r.result.content == gold.result.content
            for r in records
        ):
            reasons.append(f"answer of {planned.step} ({gold.name}) not obtained")
    turns = facts.task.turns
    for t in sorted({r.turn for r in records}):
        if 0 <= t < len(turns) and turns[t].kind in NO_CALL_KINDS:
            reasons.append(f"call on {turns[t].kind} turn {t}")
    return Verdict(not reasons, tuple(reasons))


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """ROC AUC of ``scores`` against ``labels``: the Mann-Whitney statistic, ties counted 1/2.

    The chance that a random correct item outscores a random wrong one. ``None``
    when either label is absent.

    >>> roc_auc([0.9, 0.5, 0.5, 0.1], [True, True, False, False])
    0.875
    >>> roc_auc([1.0, 1.0], [True, True]) is None
    True
    """
    n_pos = sum(1 for x in labels if x)
    n_neg = len(labels) - n_pos
    if not n_pos or not n_neg:
        return None
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for m in range(i, j + 1):
            ranks[order[m]] = (i + j) / 2 + 1
        i = j + 1
    rank_sum = sum(r for r, x in zip(ranks, labels, strict=True) if x)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


# ----------------------------------------------------------------- the benchmark


@dataclass(frozen=True)
class Trajectory:
    """One executed, judged and scored trajectory."""

    task: str
    family: str
    label: str
    calls: tuple[PlannedCall, ...]
    verdict: Verdict
    rewards: dict[str, float]
    # with --turns: per user turn, (turn judged correct, normalised turn reward)
    turns: tuple[tuple[bool, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "family": self.family,
            "label": self.label,
            "correct": self.verdict.correct,
            "reasons": list(self.verdict.reasons),
            "rewards": self.rewards,
            "calls": [c.to_dict() for c in self.calls],
            **({"turns": [list(t) for t in self.turns]} if self.turns else {}),
        }


def judge_turns(
    task: Task, records: Sequence[CallRecord], hashes: Sequence[str], registry: Registry
) -> list[bool]:
    """Per user turn, independently of the reward: correct iff the state at the turn's end
    is the gold replay's at the end of that turn, every gold read of the turn got the gold
    replay's answer from a call of the same tool in that turn, and no call was made on a
    turn whose right move is to ask or abstain."""
    gold = gold_turns(task, registry)
    writes = prepare(task, registry).writes
    out = []
    for t, turn in enumerate(task.turns):
        own = [r for r in records if r.turn == t]
        ok = hashes[t] == gold[t][0] and not (turn.kind in NO_CALL_KINDS and own)
        scored = [s for s in turn.steps if not s.attempt]
        for step, answer in zip(scored, gold[t][1], strict=True):
            if step.name in writes or answer is None:
                continue
            ok = ok and any(
                r.name == step.name and r.result.ok and canonical(r.result.content) == answer
                for r in own
            )
        out.append(ok)
    return out


def turn_rows(
    task: Task,
    records: Sequence[CallRecord],
    hashes: Sequence[str],
    config: RewardConfig,
    registry: Registry,
) -> tuple[tuple[bool, float], ...]:
    """Per user turn of an executed trajectory (its records, the state hash at the end of
    each turn): (judged correct, turn reward as a fraction of a turn's share of the maximum).

    A turn's share is the episode's maximum over the task's number of turns: a turn done
    right after turns done right scores 1.0 (when the gold scores the maximum), and the
    fractions of a trajectory's turns average to its normalised episode reward."""
    labels = judge_turns(task, records, hashes, registry)
    credits = turn_rewards(task, records, hashes, config, registry)
    share = credits[-1].completion.max_total / len(task.turns)  # the episode's breakdown
    return tuple(
        (label, round(c.reward / share, 12) + 0.0 if share else 0.0)
        for label, c in zip(labels, credits, strict=True)
    )


def chosen_config(spec: str) -> RewardConfig:
    """``--reward``: a preset name (``default``, ``paper``) or the default with weights
    changed, ``name=W[,name=W...]`` (``state=0.3,answers=0``)."""
    if "=" not in spec:
        return RewardConfig.preset(spec)
    weights: dict[str, float] = {}
    for part in spec.split(","):
        name, _, value = part.partition("=")
        try:
            weights[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--reward {spec!r}: {part!r} is not name=weight") from None
    return RewardConfig().with_weights(**weights)


def reward_configs(chosen: str | None = None) -> tuple[dict[str, RewardConfig], list[str]]:
    """The configs to compare, by row name: the chosen one first (when given), the default,
    the paper's, and the default's neighbours (each outcome term off or reweighted, the
    surplus-write penalty off)."""
    base = RewardConfig()
    configs: dict[str, RewardConfig] = {}
    if chosen is not None and chosen != "default":
        configs[chosen] = chosen_config(chosen)
    configs |= {"default": base, "paper": RewardConfig.preset("paper")}
    for w in STATE_WEIGHTS:
        configs[f"state={w:g}"] = base.with_weights(state=w)
    configs["answers=0"] = base.with_weights(answers=0.0)
    configs["surplus=0"] = base.with_weights(surplus_writes=0.0)
    return configs, []


def normalised_reward(
    task: Task, records: Sequence[CallRecord], final_state_hash: str, config: RewardConfig
) -> float:
    """The trajectory's total divided by the breakdown's ``max_total`` (rounded to 12 places)."""
    b = score(task, list(records), config=config, final_state_hash=final_state_hash)
    return round(b.total / b.max_total, 12) + 0.0 if b.max_total else 0.0


def evaluate_task(
    facts: TaskFacts,
    configs: Mapping[str, RewardConfig],
    k: int,
    registry: Registry | None = None,
    *,
    turns: bool = False,
) -> list[Trajectory]:
    """Every family's variants of one task, executed, judged and scored with every config;
    with ``turns``, each user turn judged and paid its turn reward under the first config."""
    registry = registry or get_registry()
    task = facts.task
    out = []
    for family in FAMILIES:
        for variant in perturb(facts, family, k):
            hashes: list[str] | None = [] if turns else None
            records, final = execute(task, variant.calls, registry, turn_hashes=hashes)
            verdict = judge(facts, records, final)
            rewards = {
                name: normalised_reward(task, records, final, cfg) for name, cfg in configs.items()
            }
            per_turn = (
                turn_rows(task, records, hashes, next(iter(configs.values())), registry)
                if hashes is not None
                else ()
            )
            out.append(
                Trajectory(
                    task.id, family, variant.label, variant.calls, verdict, rewards, per_turn
                )
            )
    return out


def summarise_turns(trajectories: Sequence[Trajectory], config: str) -> dict[str, Any]:
    """Per family: the AUC of turn rewards against the per-turn judge (the family's turns
    pooled with its tasks' oracle turns), and, over trajectories, the AUC of the sum of a
    trajectory's turn rewards against the episode judge beside that of the episode reward,
    and the largest gap between that sum and the episode reward (nil: they telescope)."""
    oracles = {t.task: t for t in trajectories if t.family == "oracle"}
    families: dict[str, Any] = {}
    for family in FAMILIES:
        rows = [t for t in trajectories if t.family == family]
        pooled = rows if family == "oracle" else rows + [oracles[x.task] for x in rows]
        turns = [pair for t in pooled for pair in t.turns]
        families[family] = {
            "turns": sum(len(t.turns) for t in rows),
            "correct": _mean([float(ok) for t in rows for ok, _ in t.turns]),
            "auc": roc_auc([r for _, r in turns], [ok for ok, _ in turns]),
        }
    every = [pair for t in trajectories for pair in t.turns]
    labels = [t.verdict.correct for t in trajectories]
    # each turn's fraction of its share: their mean is the sum over the episode's maximum
    sums = [sum(r for _, r in t.turns) / max(1, len(t.turns)) for t in trajectories]
    return {
        "config": config,
        "auc": roc_auc([r for _, r in every], [ok for ok, _ in every]),
        "turns": len(every),
        "sum_auc": roc_auc(sums, labels),
        "episode_auc": roc_auc([t.rewards[config] for t in trajectories], labels),
        "sum_gap": max(
            (abs(x - t.rewards[config]) for x, t in zip(sums, trajectories, strict=True)),
            default=0.0,
        ),
        "families": families,
    }


def format_turns(summary: Mapping[str, Any]) -> str:
    """The per-turn table of :func:`summarise_turns`."""
    lines = [
        f"Credit per user turn ({summary['config']}): ROC AUC of each turn's reward against a "
        "per-turn judge",
        "(correct iff the state at the turn's end is the gold replay's then, the turn's gold",
        "reads answered in that turn, no call on an ask/abstain turn); family turns pooled",
        "with their tasks' oracle turns",
        f"{'family':<22} {'turns':>6} {'correct':>8} {'AUC':>7}",
    ]
    for family, row in summary["families"].items():
        lines.append(
            f"{family:<22} {row['turns']:>6} {_fmt(row['correct'], '.2f'):>8} {_fmt(row['auc']):>7}"
        )
    lines.append(f"{'all turns':<22} {summary['turns']:>6} {'':>8} {_fmt(summary['auc']):>7}")
    lines.append(
        f"Ranking whole trajectories against the episode judge: the turn rewards' sum AUC "
        f"{_fmt(summary['sum_auc'])}, the episode reward AUC {_fmt(summary['episode_auc'])} "
        f"(largest gap between the two, normalised: {summary['sum_gap']:.1e})"
    )
    return "\n".join(lines)


@dataclass
class FamilyStats:
    """One family's figures under one config."""

    tasks: int
    n: int
    correct: float | None
    mean: float | None
    auc: float | None
    mean_correct: float | None
    mean_wrong: float | None


def summarise(trajectories: Sequence[Trajectory], configs: Sequence[str]) -> dict[str, Any]:
    """Per config: overall AUC, margins, judged-wrong at the maximum, and every family's figures.

    A family's AUC pools its trajectories with the oracle trajectories of the
    tasks it applies to. ``margin`` is the oracle's mean minus the highest mean
    of a family judged all wrong; ``wrong_margin`` the oracle's mean minus the
    highest mean of the judged-wrong trajectories of any one family (it also
    covers families where only some variants break the task).
    """
    oracles = {t.task: t for t in trajectories if t.family == "oracle"}
    out: dict[str, Any] = {}
    for cfg in configs:
        families: dict[str, FamilyStats] = {}
        for family in FAMILIES:
            rows = [t for t in trajectories if t.family == family]
            tasks = sorted({t.task for t in rows})
            pooled = (
                rows if family == "oracle" else rows + [oracles[x] for x in tasks if x in oracles]
            )
            families[family] = FamilyStats(
                tasks=len(tasks),
                n=len(rows),
                correct=_mean([float(t.verdict.correct) for t in rows]),
                mean=_mean([t.rewards[cfg] for t in rows]),
                auc=roc_auc([t.rewards[cfg] for t in pooled], [t.verdict.correct for t in pooled]),
                mean_correct=_mean([t.rewards[cfg] for t in rows if t.verdict.correct]),
                mean_wrong=_mean([t.rewards[cfg] for t in rows if not t.verdict.correct]),
            )
        all_wrong = [
            (s.mean, f)
            for f, s in families.items()
            if s.n and s.correct == 0.0 and s.mean is not None
        ]
        any_wrong = [(s.mean_wrong, f) for f, s in families.items() if s.mean_wrong is not None]
        oracle_mean = families["oracle"].mean
        worst = max(all_wrong) if all_wrong else None
        worst_wrong = max(any_wrong) if any_wrong else None
        out[cfg] = {
            "auc": roc_auc(
                [t.rewards[cfg] for t in trajectories], [t.verdict.correct for t in trajectories]
            ),
            "margin": None if worst is None or oracle_mean is None else oracle_mean - worst[0],
            "margin_family": None if worst is None else worst[1],
            "wrong_margin": None
            if worst_wrong is None or oracle_mean is None
            else oracle_mean - worst_wrong[0],
            "wrong_margin_family": None if worst_wrong is None else worst_wrong[1],
            "wrong_at_max": sum(
                1 for t in trajectories if not t.verdict.correct and t.rewards[cfg] >= 1 - 1e-9
            ),
            "correct_below_max": sum(
                1 for t in trajectories if t.verdict.correct and t.rewards[cfg] < 1 - 1e-9
            ),
            "families": {f: vars(s) for f, s in families.items()},
        }
    return out


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def format_report(summary: Mapping[str, Any], header: Sequence[str], notes: Sequence[str]) -> str:
    """The printed tables: mean reward and AUC by family and config, then the per-config summary."""
    configs = list(summary)
    first = summary[configs[0]]["families"]
    fw = max(len(f) for f in FAMILIES)
    cw = [max(7, len(c)) for c in configs]
    lines = [*header, *notes, ""]

    lines.append("Mean reward (total / max_total) by family and config")
    head = f"{'family':<{fw}}  {'tasks':>5}  {'n':>4}  {'correct':>7}"
    lines.append(head + "".join(f"  {c:>{w}}" for c, w in zip(configs, cw, strict=True)))
    for f in FAMILIES:
        s = first[f]
        row = f"{f:<{fw}}  {s['tasks']:>5}  {s['n']:>4}  {_fmt(s['correct'], '.2f'):>7}"
        row += "".join(
            f"  {_fmt(summary[c]['families'][f]['mean']):>{w}}"
            for c, w in zip(configs, cw, strict=True)
        )
        lines.append(row)
    lines.append("")

    lines.append(
        "ROC AUC of reward vs judge (family pooled with its tasks' oracles; n/a: one label absent)"
    )
    lines.append(
        f"{'family':<{fw}}" + "".join(f"  {c:>{w}}" for c, w in zip(configs, cw, strict=True))
    )
    for f in FAMILIES:
        lines.append(
            f"{f:<{fw}}"
            + "".join(
                f"  {_fmt(summary[c]['families'][f]['auc']):>{w}}"
                for c, w in zip(configs, cw, strict=True)
            )
        )
    lines.append(
        f"{'overall':<{fw}}"
        + "".join(f"  {_fmt(summary[c]['auc']):>{w}}" for c, w in zip(configs, cw, strict=True))
    )
    lines.append("")

    lines.append(
        "Per config: overall AUC; margin = oracle mean - highest mean of a family judged all"
    )
    lines.append("wrong; wrong margin = oracle mean - highest mean of one family's judged-wrong")
    lines.append(
        "trajectories; judged-wrong trajectories at the maximum; judged-correct ones below it"
    )
    nw = max(len(c) for c in configs)
    lines.append(
        f"{'config':<{nw}}  {'AUC':>5}  {'margin':>6}  {'(family)':<{fw + 2}}"
        f"  {'wrong margin':>12}  {'(family)':<{fw + 2}}  {'wrong@max':>9}  {'correct<max':>11}"
    )
    for c in configs:
        s = summary[c]
        fam = f"({s['margin_family']})" if s["margin_family"] else "(none)"
        wfam = f"({s['wrong_margin_family']})" if s["wrong_margin_family"] else "(none)"
        lines.append(
            f"{c:<{nw}}  {_fmt(s['auc']):>5}  {_fmt(s['margin']):>6}  {fam:<{fw + 2}}"
            f"  {_fmt(s['wrong_margin']):>12}  {wfam:<{fw + 2}}"
            f"  {s['wrong_at_max']:>9}  {s['correct_below_max']:>11}"
        )
    return "\n".join(lines)


def format_extremes(trajectories: Sequence[Trajectory], config: str, n: int = 5) -> str:
    """The judged-wrong trajectories the config pays most and the judged-correct ones it pays
    least: where its ranking disagrees with the judge (ties broken by task, family, label)."""
    wrong = sorted(
        (t for t in trajectories if not t.verdict.correct),
        key=lambda t: (-t.rewards[config], t.task, t.family, t.label),
    )[:n]
    right = sorted(
        (t for t in trajectories if t.verdict.correct),
        key=lambda t: (t.rewards[config], t.task, t.family, t.label),
    )[:n]
    lines = [f"Highest-paid judged-wrong trajectories ({config})"]
    lines += [
        f"  {t.rewards[config]:.3f}  {t.task}  {t.family}: {t.label}  [{'; '.join(t.verdict.reasons)}]"
        for t in wrong
    ]
    lines.append(f"Lowest-paid judged-correct trajectories ({config})")
    lines += [f"  {t.rewards[config]:.3f}  {t.task}  {t.family}: {t.label}" for t in right]
    return "\n".join(lines)


def select_tasks(
    path: str | None, servers: Sequence[str] | None, registry: Registry
) -> tuple[list[Task], list[str]]:
    """The task set (shipped tasks, or a ``.jsonl`` file), filtered by primary server, and notes."""
    notes = []
    if path is None:
        names = list(servers) if servers else registry.server_names
        tasks = [t for name in names for t in registry.tasks(name)]
    else:
        tasks = load_tasks(path)
        if servers:
            tasks = [t for t in tasks if t.server in servers]
    runnable = []
    for task in tasks:
        missing = [s for s in task.servers if s not in registry.server_names]
        if task.tool_schemas is not None or missing:
            notes.append(
                f"{task.id}: skipped (offline-only task or servers {missing} not installed)"
            )
            continue
        runnable.append(task)
    return runnable, notes


def task_files(source: str | None) -> list[str]:
    """The task files of a source: a folder's train and test splits, or the file itself."""
    if source is None:
        return []
    path = Path(source)
    if path.is_dir():
        found = [str(path / n) for n in ("train.jsonl", "test.jsonl") if (path / n).is_file()]
        if not found:
            raise FileNotFoundError(f"{source}: no train.jsonl or test.jsonl in this folder")
        return found
    if not path.is_file():
        raise FileNotFoundError(f"{source}: no such file or folder")
    return [source]


def run(args: argparse.Namespace) -> int:
    """Check the reward on a task set and print the report (see the module docstring)."""
    k = args.variants or (2 if args.quick else 5)
    servers = [s for s in args.servers.split(",") if s] if args.servers else None

    started = time.perf_counter()
    registry = get_registry()
    files = task_files(args.source or args.tasks)
    tasks: list[Task] = []
    notes: list[str] = []
    sources: list[str | None] = list(files) or [None]  # None: the shipped tasks
    for file in sources:
        found, skipped = select_tasks(file, servers, registry)
        tasks += found
        notes += skipped
    if args.limit is not None:
        tasks = tasks[: args.limit]
    if not tasks:
        raise ValueError("no task to check (look at the source and --servers)")
    configs, config_notes = reward_configs(args.reward)
    notes += config_notes
    trajectories: list[Trajectory] = []
    for task in tasks:
        facts = task_facts(task, registry)
        if task.final_state_hash not in (None, facts.gold_hash):
            notes.append(f"{task.id}: recorded final_state_hash differs from the gold replay's")
        trajectories += evaluate_task(facts, configs, k, registry, turns=args.turns)
    summary = summarise(trajectories, list(configs))

    source = ", ".join(files) or "shipped tasks"
    used = sorted({t.server for t in tasks})
    header = [
        f"Reward validity: {len(tasks)} tasks ({source}: {', '.join(used)}), "
        f"up to {k} variants per family, {len(trajectories)} trajectories",
        "Judge: correct iff final state = gold replay's, every gold read's answer obtained, "
        "no call on a clarify/abstain turn",
    ]
    print(format_report(summary, header, notes))
    if trajectories:
        print()
        print(format_extremes(trajectories, next(iter(configs))), flush=True)
    turn_summary = summarise_turns(trajectories, next(iter(configs))) if args.turns else None
    if turn_summary is not None:
        print()
        print(format_turns(turn_summary), flush=True)
    if args.json:
        payload = {
            "source": source,
            "tasks": [t.id for t in tasks],
            "variants_per_family": k,
            "configs": {name: _describe(cfg) for name, cfg in configs.items()},
            "notes": notes,
            "summary": summary,
            **({"turns": turn_summary} if turn_summary is not None else {}),
            "trajectories": [t.to_dict() for t in trajectories],
        }
        # a call's arguments may hold a Decimal read from a result: written as the tools
        # write money, an exact string
        Path(args.json).write_text(json.dumps(to_jsonable(payload), indent=1) + "\n")
    print(f"ran in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


def _describe(config: RewardConfig) -> dict[str, Any]:
    """A config's weights and knobs, for the JSON."""
    return {
        "weights": dict(config.weights),
        "max_raw": config.max_raw,
        **{
            name: getattr(config, name)
            for name in (
                "alpha",
                "beta",
                "eff_floor",
                "normalise",
                "match_entity_ids",
                "default_keys_optional",
            )
            if hasattr(config, name)
        },
    }
