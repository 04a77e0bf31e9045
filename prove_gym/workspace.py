"""A :class:`Workspace`: the live sessions of one task and the tools it offers.

The env, the reward's state verification, synthesis and evaluation all run
calls through a workspace, so every path executes the same tool code against
the same isolated state.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prove_gym.registry import Registry, get_registry
from prove_gym.server.errors import ErrorKind
from prove_gym.server.result import ToolResult
from prove_gym.server.session import Session, unknown_tool_message
from prove_gym.server.state import combine_hashes
from prove_gym.server.tool import ToolSpec
from prove_gym.task import Task, TaskError


@dataclass(slots=True)
class CallRecord:
    """One call a policy made, with the live result it got.

    Attributes:
        name: Tool name as the model wrote it (may be unknown).
        arguments: Arguments as the model wrote them (``None`` if unparseable).
        result: What the session returned.
        turn: Index of the user turn the call was made in.
        server: Server that executed it (``None`` if it never reached one).
    """

    name: str
    arguments: Any
    result: ToolResult
    turn: int = 0
    server: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "arguments": self.arguments,
            "result": self.result.to_dict(),
            "turn": self.turn,
            "server": self.server,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallRecord:
        """Accept ``{"name", "arguments", "result": {...}}``; a missing result counts as ok."""
        raw = data.get("result")
        if isinstance(raw, ToolResult):
            result = raw
        elif isinstance(raw, Mapping):
            result = ToolResult.from_dict(raw)
        else:
            result = ToolResult.success(raw)
        return cls(
            name=str(data.get("name", "")),
            arguments=data.get("arguments"),
            result=result,
            turn=int(data.get("turn", 0) or 0),
            server=data.get("server"),
        )


def offered_tools(task: Task, registry: Registry | None = None) -> dict[str, ToolSpec]:
    """The tools a task offers, by the name the model calls, in offering order.

    ``task.tools`` names them as ``"server.tool"``; ``None`` offers every visible
    tool of every server in ``task.servers``. The env and the reward both use
    this, so validity is judged against exactly what the model was shown.

    Raises:
        ValueError: Two offered tools share a name.
    """
    registry = registry or get_registry()
    return dict(_offer(task, registry, offer_key(task, registry))[0])


def offer_key(task: Task, registry: Registry) -> tuple[Any, ...]:
    """What a task's offered tools are a function of: the registry (and its generation:
    :meth:`Registry.register` bumps it), the task's tool names, or its servers, and the env
    versions it plays (a version may define a tool anew: ``Server.tool(since=...)``)."""
    # the versions matter only where a server defines a tool anew from one (since=)
    versions = tuple(sorted(task.env_versions.items()))
    if task.tools is None:
        return (registry, registry.generation, tuple(task.servers), None, versions)
    return (registry, registry.generation, None, tuple(task.tools), versions)


def _offer(
    task: Task, registry: Registry, key: tuple[Any, ...]
) -> tuple[dict[str, ToolSpec], tuple[str, ...]]:
    """The offered tools (the cache's own dict: copy it before handing it out) and the
    servers they belong to, in offering order; built once per :func:`offer_key`."""
    cached = _OFFERED.get(key)
    if cached is not None:  # most resets offer a tool set seen before
        return cached
    if task.tools is None:
        specs = [
            t
            for s in task.servers
            for t in registry.get_server(s).visible_tools(task.env_version(s))
        ]
    else:
        specs = [registry.get_tool(q, task.env_version(q.partition(".")[0])) for q in task.tools]
    offered: dict[str, ToolSpec] = {}
    for spec in specs:
        if spec.name in offered:
            other = offered[spec.name].qualified_name
            raise ValueError(
                f"task {task.id!r} offers two tools named {spec.name!r} "
                f"({other} and {spec.qualified_name})"
            )
        offered[spec.name] = spec
    found = offered, tuple(dict.fromkeys(spec.server_name for spec in specs))
    if len(_OFFERED) >= _OFFERED_MAX:
        _OFFERED.clear()  # bounded; a trainer's task mix refills it at once
    _OFFERED[key] = found
    return found


# _offer's answers by offer_key
_OFFERED: dict[tuple[Any, ...], tuple[dict[str, ToolSpec], tuple[str, ...]]] = {}
_OFFERED_MAX = 4096


def offered_parameters(task: Task, spec: ToolSpec) -> dict[str, Any]:
    """The parameters schema the model sees for ``spec`` (the task's override, if any)."""
    override = task.schema_overrides.get(spec.qualified_name)
    return dict(override) if override is not None else spec.input_schema()


def offered_openai_tools(
    task: Task, registry: Registry | None = None, offered: Mapping[str, ToolSpec] | None = None
) -> list[dict[str, Any]]:
    """The task's offered tools as OpenAI function definitions (schema overrides applied)."""
    specs = offered if offered is not None else offered_tools(task, registry)
    return [t.openai_schema(offered_parameters(task, t)) for t in specs.values()]


LEGACY_HASH_GENERATORS = frozenset({"prove_gym.synth/1", "prove_gym.synth/2"})
"""Generators whose tasks' ``final_state_hash`` covers every offered server's state.

Their tasks keep that scope (:meth:`Workspace.state_hash`), so datasets written by them
still pay the gold its state reward."""


@dataclass
class Workspace:
    """Isolated sessions for the servers a task touches, and its offered tools.

    Each session plays the env version the task names for its server
    (``task.env_versions``; ``-v0`` where it names none), acting for the principal the
    task names for it (``task.principals``) where that version declares one.

    The task's own servers (``task.servers``) get a session at once. A server that
    only lends the task distractor tools gets one the first time one of its tools is
    called (:meth:`session`): most episodes never call one, and its state is then
    never sampled.

    Args:
        task: The task whose initial state and offered tools to build.
        registry: Where servers are looked up (the process-wide one by default).

    Attributes:
        sessions: The live sessions by server: the task's own, then the others in the
            order their tools were first called.
        servers: Every server the task holds state on or offers a tool of, own first.
    """

    task: Task
    registry: Registry = field(default_factory=get_registry)
    sessions: dict[str, Session] = field(init=False)
    offered: dict[str, ToolSpec] = field(init=False)
    servers: tuple[str, ...] = field(init=False)
    offer_key: tuple[Any, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        task = self.task
        self.offer_key = offer_key(task, self.registry)
        offered, servers = _offer(task, self.registry, self.offer_key)
        self.offered = dict(offered)
        self.servers = tuple(dict.fromkeys([*task.servers, *servers]))
        for step in task.steps:
            server = self.registry.get_server(task.step_server(step))
            known = server.tools_for(task.env_version(server.name))
            if step.name not in known:
                near = difflib.get_close_matches(step.name[:200], list(known), n=1)
                raise TaskError(
                    f"task {task.id!r}: gold step {step.id!r} calls {step.name!r}, which "
                    f"server {server.name!r} does not have"
                    + (f" (did you mean {near[0]!r}?)" if near else "")
                )
        for name, number in task.env_versions.items():
            if number and number not in self.registry.get_server(name).env_versions:
                raise TaskError(
                    f"task {task.id!r} plays env version {number} of {name!r}, which declares "
                    f"{self.registry.get_server(name).env_ids}"
                )
        for name in dict.fromkeys([*task.env_versions, *task.principals]):
            acting = self.registry.get_server(name).principal(task.env_version(name))
            if (acting is None) != (name not in task.principals):
                raise TaskError(
                    f"task {task.id!r}: prove/{name}-v{task.env_version(name)} "
                    + (
                        f"acts for one {acting.entity}: name it in the task's principals "
                        f'({{"{name}": "<id>"}})'
                        if acting is not None
                        else "acts for nobody: drop it from the task's principals"
                    )
                )
        self.sessions = {}
        for name in task.servers:
            self.session(name)

    def session(self, server: str) -> Session:
        """The live session of ``server``, opened (at the task's initial state) if none is.

        Raises:
            KeyError: The task neither holds state on ``server`` nor offers its tools.
        """
        found = self.sessions.get(server)
        if found is None:
            if server not in self.servers:
                raise KeyError(f"task {self.task.id!r} has no server {server!r}")
            task = self.task
            try:
                found = self.registry.get_server(server).session(
                    task.seed,
                    task.size,
                    env_version=task.env_version(server),
                    principal=task.principals.get(server),
                )
            except ValueError as exc:  # a principal the state has no row for
                raise TaskError(f"task {task.id!r}: {exc}") from exc
            self.sessions[server] = found
        return found

    def openai_tools(self) -> list[dict[str, Any]]:
        """Offered tools as OpenAI function definitions (schema overrides applied)."""
        return offered_openai_tools(self.task, self.registry, self.offered)

    def call(self, name: Any, arguments: Any, *, turn: int = 0) -> CallRecord:
        """Route a call by tool name to its server's session; never raises for bad input."""
        spec = self.offered.get(name) if isinstance(name, str) else None
        if spec is None:
            message = unknown_tool_message(name, list(self.offered))
            result = ToolResult.failure(ErrorKind.UNKNOWN_TOOL, message)
            return CallRecord(str(name), arguments, result, turn, None)
        result = self.session(spec.server_name).call(spec.name, arguments)
        return CallRecord(spec.name, arguments, result, turn, spec.server_name)

    def replay(self, calls: Iterable[tuple[str, Any]]) -> list[CallRecord]:
        """Run (name, arguments) pairs in order."""
        return [self.call(n, a) for n, a in calls]

    def state_hash(self) -> str:
        """Canonical hash of the task's world: its own servers' states, and the state of
        any other server a call left changed.

        A distractor server left as it started is not in the hash, so the gold (which
        never calls one) is hashed without its state ever being sampled, while a model
        that writes to one gets another hash. Tasks of :data:`LEGACY_HASH_GENERATORS`
        hash every offered server, as those generators did.
        """
        task = self.task
        if task.meta.get("generator") in LEGACY_HASH_GENERATORS:
            return combine_hashes({n: self.session(n).state_hash() for n in self.servers})
        hashes = {n: self.sessions[n].state_hash() for n in task.servers}
        for name, session in self.sessions.items():
            if name in hashes:
                continue
            # rows, not history: a write undone leaves the server out again (both hashes
            # are free while no row was changed; the template's is computed once)
            now = session.state_hash()
            if now != session.template.canonical_hash(session.server.base.metadata):
                hashes[name] = now
        return combine_hashes(hashes)

    def fork(self) -> Workspace:
        """An independent copy: every open session forked (:meth:`Session.fork`), the
        offered tools shared (they never change)."""
        twin = object.__new__(Workspace)  # every field as it is (copy.copy, 4 us faster) ...
        twin.__dict__.update(self.__dict__)  # ... but the sessions and the offer dict
        twin.offered = dict(self.offered)
        twin.sessions = {name: session.fork() for name, session in self.sessions.items()}
        return twin

    def reset(self) -> None:
        for session in self.sessions.values():
            session.reset()

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def gold_replay(task: Task, registry: Registry | None = None) -> tuple[list[CallRecord], str]:
    """Replay the task's gold steps on a fresh workspace: (records, final state hash)."""
    records, hashes = gold_turn_replay(task, registry)
    return records, hashes[-1]


def gold_turn_replay(
    task: Task, registry: Registry | None = None
) -> tuple[list[CallRecord], list[str]]:
    """:func:`gold_replay`, with the state hash at the end of every user turn (the last one
    is the final state's)."""
    with Workspace(task, registry or get_registry()) as ws:
        records = []
        hashes = []
        for i, turn in enumerate(task.turns):
            for step in turn.steps:
                records.append(ws.call(step.name, step.arguments, turn=i))
            hashes.append(ws.state_hash())
        return records, hashes


@dataclass(frozen=True)
class TaskReplay:
    """A task's gold calls replayed on its own initial state (see :func:`replay_tasks`).

    Attributes:
        task: The task as given.
        final_state_hash: The state hash after its gold calls.
        failures: ``"<call>: <result text>"`` for every gold call that did not end as the
            task says: a call that failed, or a failed attempt the gold shows (a step
            with ``expect_error``) that succeeded or failed with another error kind.
    """

    task: Task
    final_state_hash: str
    failures: tuple[str, ...]

    @property
    def changed(self) -> bool:
        """The recorded ``final_state_hash`` differs from the replayed one."""
        return self.task.final_state_hash != self.final_state_hash

    def recorded(self) -> Task:
        """The task with the replayed final state recorded."""
        return self.task.model_copy(update={"final_state_hash": self.final_state_hash})


def replay_tasks(tasks: Iterable[Task], registry: Registry | None = None) -> list[TaskReplay]:
    """Replay each task's gold calls on a fresh state: its final hash, and the calls that did
    not end as the task says (:attr:`TaskReplay.failures`)."""
    out = []
    for task in tasks:
        records, final = gold_replay(task, registry)
        failures = tuple(
            f"{r.name}: {r.result.to_text()}"
            + (f" (the gold shows it failing with {step.expect_error})" if step.attempt else "")
            for step, r in zip(task.steps, records, strict=True)
            if (r.result.error_kind != step.expect_error if step.attempt else not r.result.ok)
        )
        out.append(TaskReplay(task, final, failures))
    return out
