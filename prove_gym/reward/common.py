"""What every component reads: the calls as records, and the task prepared once for scoring.

Preparing a task compiles the offered schemas into type checks and the gold
steps into key sets and dependency bitmasks; the prepared task also remembers
its gold state hash. Prepared tasks are cached by *content* (registry, task id,
digest of ``task.to_json()``; bounded LRU, thread-safe), so the G rollouts of a
GRPO group, and every episode of a task the env copies, pay preparation and
gold replay once. A task object seen before is found by identity without being
serialised again, so a task is treated as immutable once it has been scored.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prove_gym.registry import Registry, get_registry
from prove_gym.reward.schema_check import ObjectCheck
from prove_gym.server.base import Server
from prove_gym.server.tool import ToolSpec
from prove_gym.task import Task
from prove_gym.workspace import CallRecord, offered_parameters, offered_tools

Calls = Iterable[CallRecord | Mapping[str, Any]]
"""A trajectory: :class:`CallRecord` objects or their dicts (``{"name", "arguments",
"result": {"status": "ok"|"error", ...}, "turn"}``; see :meth:`CallRecord.from_dict`)."""

NO_CALL_KINDS = frozenset({"clarify", "abstain"})


def as_records(calls: Calls) -> list[CallRecord]:
    """The calls as :class:`CallRecord` objects, in order (dicts are converted).

    Arguments given as JSON text (the OpenAI wire format) are decoded when
    they hold an object; other text is kept as the model wrote it.

    >>> as_records([{"name": "get_event", "arguments": '{"event_id": "evt_0001"}'}])[0].arguments
    {'event_id': 'evt_0001'}
    """
    return [c if isinstance(c, CallRecord) else _from_mapping(c) for c in calls]


def _from_mapping(data: Mapping[str, Any]) -> CallRecord:
    record = CallRecord.from_dict(data)
    if isinstance(record.arguments, str):
        try:
            decoded = json.loads(record.arguments)
        except ValueError:
            return record
        if isinstance(decoded, dict):
            record.arguments = decoded
    return record


@dataclass(frozen=True, slots=True)
class StepInfo:
    """One gold step, ready for matching.

    Attributes:
        index: Global position in the task (0-based, across turns).
        id: The step's id.
        name: Tool name.
        keys: Its argument keys (a call matches if it has all of them).
        arguments: Gold argument values.
        prereqs: Bitmask of the indices of the steps it depends on.
        normalise: Declared value normalisation per argument key.
        turn: Index of the user turn it belongs to.
        defaults: The gold arguments whose value is the tool's declared default, by key
            (a call may leave them out when ``MatchRules.defaults_optional``).
        id_keys: Gold argument keys that name an entity (declared id parameters).
    """

    index: int
    id: str
    name: str
    keys: frozenset[str]
    arguments: dict[str, Any]
    prereqs: int
    normalise: Mapping[str, str]
    turn: int
    defaults: Mapping[str, Any] = field(default_factory=dict)
    id_keys: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Attempt:
    """A failed attempt the gold shows before recovering (a step with ``expect_error``).

    A call *repeats* it when it is in the same turn, calls the same tool with the same
    arguments and fails with the same error kind; each attempt excuses one such call.
    """

    turn: int
    name: str
    arguments: dict[str, Any]
    error_kind: str

    def repeated_by(self, call: CallRecord) -> bool:
        return (
            call.turn == self.turn
            and call.name == self.name
            and not call.result.ok
            and str(call.result.error_kind) == self.error_kind
            and isinstance(call.arguments, dict)
            and _same_json(call.arguments, self.arguments)
        )


@dataclass(frozen=True, slots=True)
class PreparedTask:
    """A task compiled for scoring (see :func:`prepare`).

    Attributes:
        task: The task.
        steps: Gold steps in global order.
        by_name: Step indices per tool name.
        gold_names: ``names(G)``.
        offered: The structure check of each offered tool, by the name the model calls.
        no_call_turns: Indices of the turns whose right move is no call (clarify/abstain).
        writes: Offered tools that may change state (declared, or ``readOnlyHint`` false).
        offline: Built from ``task.tool_schemas``: no registered server behind it.
        attempts: The gold's failed attempts (steps with ``expect_error``), in order: never
            in ``steps``; the calls that repeat them are not scored.
        memo: Values computed later for this task (its gold state hash).
        lock: Guards ``memo``, so that concurrent scorings compute each value once.
    """

    task: Task
    steps: tuple[StepInfo, ...]
    by_name: dict[str, tuple[int, ...]]
    gold_names: frozenset[str]
    offered: dict[str, ObjectCheck]
    no_call_turns: frozenset[int]
    writes: frozenset[str] = frozenset()
    offline: bool = False
    attempts: tuple[Attempt, ...] = ()
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    @property
    def n_gt(self) -> int:
        """Number of ground-truth calls (parallel ones included)."""
        return len(self.steps)


class _PreparedCache:
    """Prepared tasks by (registry, task id, digest of the task's JSON): bounded LRU, thread-safe.

    An identity front (``id(task)``, checked with ``is``) spares a task object
    seen before the serialisation that the content key needs.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.by_content: OrderedDict[tuple[int, str, str], tuple[Registry, PreparedTask]] = (
            OrderedDict()
        )
        self.by_object: OrderedDict[tuple[int, int], tuple[Task, Registry, PreparedTask]] = (
            OrderedDict()
        )
        self.lock = threading.Lock()

    def get(self, task: Task, registry: Registry) -> PreparedTask:
        ident = (id(task), id(registry))  # entries hold task and registry: ids are not reused
        with self.lock:
            seen = self.by_object.get(ident)
            if seen is not None and seen[0] is task and seen[1] is registry:
                self.by_object.move_to_end(ident)
                return seen[2]
        digest = hashlib.blake2b(task.to_json().encode(), digest_size=16).hexdigest()
        key = (id(registry), task.id, digest)
        with self.lock:
            found = self.by_content.get(key)
            if found is not None:
                self.by_content.move_to_end(key)
        if found is None:
            built = _build(task, registry)
            with self.lock:  # another thread may have built it meanwhile: keep the first
                found = self.by_content.setdefault(key, (registry, built))
                self.by_content.move_to_end(key)
                _trim(self.by_content, self.size)
        with self.lock:
            self.by_object[ident] = (task, registry, found[1])
            _trim(self.by_object, self.size)
        return found[1]


def _trim(entries: OrderedDict[Any, Any], size: int) -> None:
    while len(entries) > size:
        entries.popitem(last=False)


_cache = _PreparedCache(512)
_checks: dict[int, tuple[ToolSpec, ObjectCheck]] = {}


def prepare(task: Task, registry: Registry | None = None) -> PreparedTask:
    """The task compiled for scoring, from the cache when a task of equal content was seen.

    >>> from prove_gym import Task
    >>> task = Task.from_json({"id": "demo", "servers": ["calendar"], "turns": [{"user": "...",
    ...     "steps": [{"id": "s1", "name": "get_event", "arguments": {"event_id": "evt_0001"}}]}]})
    >>> prepare(task) is prepare(task.model_copy()), prepare(task).gold_names
    (True, frozenset({'get_event'}))
    """
    return _cache.get(task, registry or get_registry())


def _object_check(task: Task, spec: ToolSpec) -> ObjectCheck:
    if spec.qualified_name in task.schema_overrides:
        return ObjectCheck.build(offered_parameters(task, spec))
    hit = _checks.get(id(spec))
    if hit is None or hit[0] is not spec:
        hit = (spec, ObjectCheck.build(spec.input_schema()))
        _checks[id(spec)] = hit  # specs live as long as their server: bounded
    return hit[1]


@dataclass(frozen=True, slots=True)
class _Offered:
    """What scoring reads about one offered tool, from a spec or a plain schema."""

    check: ObjectCheck
    defaults: Mapping[str, Any]
    id_keys: frozenset[str]
    normalise: Mapping[str, str]
    writes: bool | None


def _from_spec(task: Task, spec: ToolSpec) -> _Offered:
    schema = offered_parameters(task, spec)
    return _Offered(
        check=_object_check(task, spec),
        defaults=_schema_defaults(schema),
        id_keys=frozenset(p.name for p in spec.params if p.entity is not None),
        normalise={p.name: p.normalise for p in spec.params if p.normalise is not None},
        writes=spec.writes,
    )


def _from_schema(schema: Mapping[str, Any]) -> tuple[str, _Offered]:
    """A plain OpenAI function schema (``{"type": "function", "function": {...}}`` or the inner
    object), optionally with MCP ``annotations`` (``readOnlyHint``) saying whether it writes."""
    fn = schema.get("function", schema)
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise ValueError(
            "each of task.tool_schemas must be an OpenAI function schema with a 'name', such as "
            '{"type": "function", "function": {"name": "get_order", "parameters": {...}}}'
        )
    params = fn.get("parameters") or {"type": "object", "properties": {}}
    hints = fn.get("annotations") or schema.get("annotations") or {}
    read_only = hints.get("readOnlyHint") if isinstance(hints, Mapping) else None
    return fn["name"], _Offered(
        check=ObjectCheck.build(params),
        defaults=_schema_defaults(params),
        id_keys=frozenset(),
        normalise={},
        writes=None if read_only is None else not read_only,
    )


def _schema_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    return {k: v["default"] for k, v in props.items() if isinstance(v, Mapping) and "default" in v}


def _offered(task: Task, registry: Registry) -> dict[str, _Offered]:
    if task.tool_schemas is not None:
        offered: dict[str, _Offered] = {}
        for schema in task.tool_schemas:
            name, info = _from_schema(schema)
            if name in offered:
                raise ValueError(f"task.tool_schemas offers {name!r} twice")
            offered[name] = info
        return offered
    return {name: _from_spec(task, spec) for name, spec in offered_tools(task, registry).items()}


def _build(task: Task, registry: Registry) -> PreparedTask:
    offered = _offered(task, registry)
    steps: list[StepInfo] = []
    attempts: list[Attempt] = []
    position: dict[str, int] = {}
    by_name: dict[str, list[int]] = {}
    for turn_index, turn in enumerate(task.turns):
        for step in turn.steps:
            if step.expect_error is not None:
                attempts.append(
                    Attempt(turn_index, step.name, dict(step.arguments), step.expect_error)
                )
                continue
            index = len(steps)
            prereqs = 0
            for dep in step.depends_on:
                prereqs |= 1 << position[dep]
            info = offered.get(step.name)
            if task.tool_schemas is None:
                server = task.step_server(step)
                try:  # only this server's plugin is loaded, not every installed one
                    spec: Server | None = registry.get_server(server)
                except KeyError:
                    spec = None
                own = (
                    spec.tools_for(task.env_version(server)).get(step.name)
                    if spec is not None
                    else None
                )
                if own is not None and (info is None or own.server_name != server):
                    info = _from_spec(task, own)  # a gold step on a tool not offered as such
            defaults = info.defaults if info is not None else {}
            steps.append(
                StepInfo(
                    index=index,
                    id=step.id,
                    name=step.name,
                    keys=frozenset(step.arguments),
                    arguments=dict(step.arguments),
                    prereqs=prereqs,
                    normalise=info.normalise if info is not None else {},
                    turn=turn_index,
                    defaults={
                        k: v
                        for k, v in step.arguments.items()
                        if k in defaults and _same(v, defaults[k])
                    },
                    id_keys=frozenset(info.id_keys & step.arguments.keys())
                    if info
                    else frozenset(),
                )
            )
            position[step.id] = index
            by_name.setdefault(step.name, []).append(index)
    return PreparedTask(
        task=task,
        steps=tuple(steps),
        by_name={k: tuple(v) for k, v in by_name.items()},
        gold_names=frozenset(by_name),
        offered={name: o.check for name, o in offered.items()},
        no_call_turns=frozenset(i for i, t in enumerate(task.turns) if t.kind in NO_CALL_KINDS),
        writes=frozenset(name for name, o in offered.items() if o.writes),
        offline=task.tool_schemas is not None,
        attempts=tuple(attempts),
    )


def excused_calls(prepared: PreparedTask, calls: Iterable[CallRecord]) -> frozenset[int]:
    """Indices of the calls that repeat one of the gold's failed attempts (each excuses one).

    Such a call is what the gold conversation itself does before recovering, so it is
    left out of scoring: a trajectory with it and one without pay the same, and
    neither more than the other.
    """
    if not prepared.attempts:
        return frozenset()
    left = list(prepared.attempts)
    out: set[int] = set()
    for i, call in enumerate(calls):
        for k, attempt in enumerate(left):
            if attempt.repeated_by(call):
                out.add(i)
                del left[k]
                break
        if not left:
            break
    return frozenset(out)


def scored_calls(prepared: PreparedTask, calls: Calls) -> list[CallRecord]:
    """The calls scoring reads: all of them but the :func:`excused_calls`."""
    records = as_records(calls)
    excused = excused_calls(prepared, records)
    return [c for i, c in enumerate(records) if i not in excused] if excused else records


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON documents (key order ignored, ``True`` is not ``1``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    return _same(a, b)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values (``True`` is not ``1``)."""
    if type(a) is type(b):
        return bool(a == b)
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b))
    return numbers and a == b
