"""The interop tests' plan: good and bad arguments for every tool of every server, the
results the env gives them, a served ``prove-gym serve``, and the checks every client's
report must pass.

A plan is built in process, on the very state ``prove-gym serve --seed SEED`` serves
(the same seed gives the same state in any process), so each call's expected result,
error flag and text, is known before any client sends it:

* **good** calls: for every visible tool, arguments that validate against its input
  schema, searched until the call succeeds: the first value of each required
  parameter (the conformance kit's :func:`~prove_gym.testing.hostile_cases` base), the
  shipped tasks' gold arguments, then combinations of real values read from the state
  (entity ids, record fields named like parameters, one record's fields together) and
  from earlier results (an ``auth_token`` from ``authenticate``). Only the call that succeeded is kept (a failed call leaves the state as it was,
  which the conformance kit checks), so the plan stays short. A tool that no search
  makes succeed still gets its first well-formed candidate.
* **bad** calls: required arguments missing (or an unknown argument, for a tool
  without parameters), a value of the wrong JSON type, an id that does not exist;
  and, on every connection, one call of a tool that does not exist (a JSON-RPC error).

The expected results come from replaying exactly the kept calls on a fresh session.
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from prove_gym import Server, get_registry
from prove_gym.mcp import ERROR_META, PREFIX_SEPARATOR, structured
from prove_gym.server.session import Session
from prove_gym.server.tool import ToolSpec
from prove_gym.testing import hostile_cases
from prove_gym.testing.conformance import CallChecker
from prove_gym.testing.served import ServedHTTP

SEED = 0
"""The seed every interop client's server is started with (``prove-gym serve --seed``)."""

TRIES = 60
"""Random argument combinations tried per tool before giving up on a success (the slowest
tool to find one needs about 30; the 9 tools that never get one cost the most)."""

UNKNOWN_ID = "zz_no_such_id_0000"
"""An id no server has."""


@dataclass(frozen=True, slots=True)
class Call:
    """One planned ``tools/call`` and the result the env gives it."""

    server: str
    tool: str
    arguments: dict[str, Any]
    good: bool
    is_error: bool = False
    text: str = ""


@dataclass(slots=True)
class ServerPlan:
    """Every call for one server, in order, and which tools succeeded."""

    server: str
    calls: list[Call] = field(default_factory=list)
    succeeded: set[str] = field(default_factory=set)


def build_plans(names: Sequence[str] | None = None, seed: int = SEED) -> list[ServerPlan]:
    """Plans for ``names`` (default: every installed server), sorted by server name."""
    registry = get_registry()
    chosen = sorted(registry.servers) if names is None else list(names)
    plans = []
    for name in chosen:
        server = registry.servers[name]
        gold: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for task in registry.tasks(name):
            for step in task.steps:
                if step.arguments not in gold[step.name] and _jsonable(step.arguments):
                    gold[step.name].append(step.arguments)
        plans.append(_plan(server, seed, gold))
    return plans


def _plan(server: Server, seed: int, gold: Mapping[str, list[dict[str, Any]]]) -> ServerPlan:
    tools = server.visible_tools()
    kept: list[tuple[str, dict[str, Any], bool]] = []
    with server.session(seed) as session:
        search = _Search(server, session, gold)
        for spec in tools:
            arguments = search.success(spec)
            if arguments is None:
                arguments = search.well_formed(spec)
            kept.append((spec.name, arguments, True))
            for bad in _bad(spec, arguments):
                kept.append((spec.name, bad, False))
                search.harvest(session.call(spec.name, bad).content)
    plan = ServerPlan(server.name)
    with server.session(seed) as replay:
        for tool, arguments, good in kept:
            result = replay.call(tool, arguments)
            plan.calls.append(
                Call(server.name, tool, arguments, good, not result.ok, result.to_text())
            )
            if good and result.ok:
                plan.succeeded.add(tool)
    return plan


class _Search:
    """Argument candidates for one server's tools, from its state and earlier results."""

    def __init__(
        self, server: Server, session: Session, gold: Mapping[str, list[dict[str, Any]]]
    ) -> None:
        self.server = server
        self.session = session
        self.gold = gold
        self.checker = CallChecker(server, session)
        self.records = {kind: session.list_entities(kind) for kind in server.entities}
        self.seen: dict[str, list[Any]] = defaultdict(list)
        for records in self.records.values():
            for record in records:
                self._remember(record)

    def _remember(self, record: Mapping[str, Any]) -> None:
        for key, value in record.items():
            pool = self.seen[key]
            if _jsonable(value) and value not in pool and len(pool) < 200:
                pool.append(value)

    def harvest(self, content: Any) -> None:
        """Remember the fields of a result (an ``auth_token``, a new id) as candidates."""
        stack = [content]
        while stack:
            value = stack.pop()
            if isinstance(value, Mapping):
                self._remember(value)
                stack += list(value.values())
            elif isinstance(value, list):
                stack += value[:20]

    def candidates(self, spec: ToolSpec, rng: random.Random) -> Iterator[dict[str, Any]]:
        plausible = self.checker.plausible(spec)
        base = hostile_cases(spec, plausible)[0]
        yield base
        yield from self.gold.get(spec.name, ())[:5]
        names = {p.name for p in spec.params}
        values = self._values(spec, plausible, base)
        required = [p.name for p in spec.params if p.required]
        optional = [p.name for p in spec.params if not p.required and values.get(p.name)]
        joint = [r for records in self.records.values() for r in records if names & set(r)]
        for _ in range(TRIES):
            arguments = {n: rng.choice(values[n]) for n in required if values.get(n)}
            for n in optional:
                if rng.random() < 0.3:
                    arguments[n] = rng.choice(values[n])
            if joint and rng.random() < 0.5:  # fields of one record belong together
                record = rng.choice(joint)
                arguments.update({k: v for k, v in record.items() if k in names})
            yield arguments

    def _values(
        self, spec: ToolSpec, plausible: Mapping[str, list[Any]], base: Mapping[str, Any]
    ) -> dict[str, list[Any]]:
        values: dict[str, list[Any]] = {}
        for p in spec.params:
            pool = list(plausible.get(p.name, ()))
            if p.entity is not None and p.entity.name in self.records:
                key = self.server.entities[p.entity.name].key
                ids = [r[key] for r in self.records[p.entity.name] if key in r]
                pool += [ids[i : i + 2] for i in range(0, len(ids), 7)] if p.entity.many else ids
            pool += self.seen.get(p.name, [])
            pool += [g[p.name] for g in self.gold.get(spec.name, ()) if p.name in g]
            if not pool and p.name in base:
                pool = [base[p.name]]
            values[p.name] = [v for v in pool if _jsonable(v)]
        return values

    def success(self, spec: ToolSpec) -> dict[str, Any] | None:
        """Arguments with which ``spec`` succeeds now (the call is made), or ``None``."""
        rng = random.Random(f"{self.server.name}.{spec.name}")
        validator = Draft202012Validator(spec.input_schema())
        for arguments in self.candidates(spec, rng):
            if not _jsonable(arguments) or not validator.is_valid(arguments):
                continue
            result = self.session.call(spec.name, arguments)
            if result.ok:
                self.harvest(result.content)
                return arguments
        return None

    def well_formed(self, spec: ToolSpec) -> dict[str, Any]:
        """The first candidate that validates against the input schema."""
        rng = random.Random(f"{self.server.name}.{spec.name}")
        validator = Draft202012Validator(spec.input_schema())
        for arguments in self.candidates(spec, rng):
            if _jsonable(arguments) and validator.is_valid(arguments):
                return arguments
        raise AssertionError(f"{self.server.name}.{spec.name}: no well-formed arguments found")


def _bad(spec: ToolSpec, good: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Arguments a confused model sends: missing, ill-typed, naming an unknown id."""
    required = [p.name for p in spec.params if p.required]
    bad: list[dict[str, Any]] = [{} if required else {"no_such_argument": 1}]
    props: Mapping[str, Any] = spec.input_schema().get("properties", {})
    if spec.params:
        first = spec.params[0].name
        bad.append({**good, first: _wrong_type(props.get(first, {}))})
    entity = next((p.name for p in spec.params if p.entity is not None), None)
    if entity is not None:
        many = next(p for p in spec.params if p.name == entity).entity
        unknown: Any = [UNKNOWN_ID] if many is not None and many.many else UNKNOWN_ID
        bad.append({**good, entity: unknown})
    return bad


def _wrong_type(schema: Mapping[str, Any]) -> Any:
    """A JSON value of a type ``schema`` does not take (and pydantic does not coerce)."""
    text = json.dumps(schema)
    return "not-a-list" if '"array"' in text or '"object"' in text else {"nested": ["object"]}


def _jsonable(value: Any) -> bool:
    """JSON without NaN or infinities: what every client can send."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return not (isinstance(value, float) and math.isnan(value))


# ----------------------------------------------------------------- connections
UNKNOWN_TOOL = "no_such_tool"
"""Called once on every connection: a JSON-RPC error ``-32602``, not a result."""

TOKEN_ENV = "PROVE_GYM_INTEROP_TOKEN"
TOKEN = "interop-token-0123456789abcdef"
"""The HTTP server requires this bearer token (``--auth-token-env``), as a deployment would."""


@dataclass(frozen=True, slots=True)
class Connection:
    """One MCP session a client opens, and the calls it makes there, in order.

    ``calls`` pairs each MCP tool name with its planned :class:`Call`, or with ``None``
    for the call of a tool that does not exist.
    """

    name: str
    transport: str
    target: list[str] | str
    calls: list[tuple[str, Call | None]]
    tools: set[str]
    schemas: dict[str, dict[str, Any]]
    headers: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The connection as ``tests/interop/ts/interop.mjs`` reads it."""
        calls = [
            {
                "tool": tool,
                "arguments": call.arguments if call else {},
                "expect": "result" if call else "rpc_error",
            }
            for tool, call in self.calls
        ]
        if self.transport == "stdio":
            assert isinstance(self.target, list)
            command, *args = self.target
            return {
                "name": self.name,
                "transport": "stdio",
                "command": command,
                "args": args,
                "calls": calls,
            }
        return {
            "name": self.name,
            "transport": "http",
            "url": self.target,
            "headers": self.headers,
            "calls": calls,
        }


def serve_command(plans: Sequence[ServerPlan], *extra: str) -> list[str]:
    """``prove-gym serve`` for every planned server (``python -m prove_gym``: this venv's)."""
    names = [p.server for p in plans]
    return [sys.executable, "-m", "prove_gym", "serve", *names, "--seed", str(SEED), *extra]


def stdio_connection(plans: Sequence[ServerPlan]) -> Connection:
    """One stdio process serving every server, its tools named ``<server>__<tool>``."""
    calls: list[tuple[str, Call | None]] = [
        (f"{c.server}{PREFIX_SEPARATOR}{c.tool}", c) for p in plans for c in p.calls
    ]
    calls.append((UNKNOWN_TOOL, None))
    tools, schemas = _listing(plans, prefixed=True)
    return Connection("stdio", "stdio", serve_command(plans), calls, tools, schemas)


def http_connections(plans: Sequence[ServerPlan], base: str) -> list[Connection]:
    """One session per server, each on its own endpoint ``/<server>/mcp`` of one process."""
    out = []
    for p in plans:
        calls: list[tuple[str, Call | None]] = [(c.tool, c) for c in p.calls]
        calls.append((UNKNOWN_TOOL, None))
        tools, schemas = _listing([p], prefixed=False)
        url = f"{base}/{p.server}/mcp"
        bearer = {"authorization": f"Bearer {TOKEN}"}
        out.append(Connection(f"http:{p.server}", "http", url, calls, tools, schemas, bearer))
    return out


def _listing(
    plans: Sequence[ServerPlan], *, prefixed: bool
) -> tuple[set[str], dict[str, dict[str, Any]]]:
    """What ``tools/list`` must answer: every visible tool, and its output schema."""
    tools: set[str] = set()
    schemas: dict[str, dict[str, Any]] = {}
    registry = get_registry()
    for p in plans:
        for spec in registry.servers[p.server].visible_tools():
            name = f"{p.server}{PREFIX_SEPARATOR}{spec.name}" if prefixed else spec.name
            tools.add(name)
            assert spec.output_schema is not None, f"{p.server}.{spec.name}: no output schema"
            schemas[name] = spec.output_schema
    return tools, schemas


# -------------------------------------------------------------------- checking
def problems_with(connection: Connection, report: Mapping[str, Any]) -> list[str]:
    """What is wrong with one connection's report (interop.mjs's shape; see there).

    Every tool is listed with its output schema; every planned call got a result (no
    protocol error) with the env's error flag and text; an error result has no
    structured content and its kind under ``_meta``; a success's structured content is
    the text's JSON value (objects as they are, others as ``{"result": ...}``) and
    validates against the tool's output schema; the unknown tool is a ``-32602`` error.
    """
    where = connection.name
    if report.get("failure"):
        return [f"{where}: the connection failed: {report['failure']}"]
    found: list[str] = []
    listed = {t["name"]: t for t in report["tools"]}
    if set(listed) != connection.tools:
        missing, extra = connection.tools - set(listed), set(listed) - connection.tools
        found.append(
            f"{where}: tools/list differs: missing {sorted(missing)}, extra {sorted(extra)}"
        )
    found += [
        f"{where}: {n} lists no output schema" for n, t in listed.items() if not t["outputSchema"]
    ]
    results = report["results"]
    if len(results) != len(connection.calls):
        found.append(f"{where}: {len(results)} results for {len(connection.calls)} calls")
    validators: dict[str, Draft202012Validator] = {}
    for i, ((tool, call), got) in enumerate(zip(connection.calls, results, strict=False)):
        at = f"{where} #{i} {tool}({json.dumps(call.arguments if call else {})[:200]})"
        if call is None:
            error = got.get("rpcError") or {}
            if error.get("code") != -32602 or "There is no tool named" not in error.get(
                "message", ""
            ):
                found.append(f"{at}: expected JSON-RPC error -32602 for an unknown tool, got {got}")
            continue
        if "rpcError" in got:
            found.append(f"{at}: protocol error {got['rpcError']}")
            continue
        if got["isError"] != call.is_error or got["text"] != call.text:
            found.append(
                f"{at}: got isError={got['isError']} {str(got['text'])[:300]!r}, the env gives "
                f"isError={call.is_error} {call.text[:300]!r}"
            )
            continue
        content = got["structuredContent"]
        if call.is_error:
            kind = (got.get("meta") or {}).get(ERROR_META, {}).get("kind")
            if content is not None:
                found.append(f"{at}: an error result with structuredContent {content!r}")
            if not call.text.startswith(f"Error [{kind}]: "):
                found.append(f"{at}: error kind {kind!r} under _meta does not match {call.text!r}")
            continue
        if content != structured(json.loads(call.text)):
            found.append(f"{at}: structuredContent {str(content)[:300]} is not the text's value")
        validator = validators.get(tool) or Draft202012Validator(connection.schemas[tool])
        validators[tool] = validator
        error = next(iter(validator.iter_errors(content)), None)
        if error is not None:
            found.append(f"{at}: structuredContent fails the output schema: {error.message[:300]}")
    return found


def assert_clean(connections: Sequence[Connection], reports: Sequence[Mapping[str, Any]]) -> None:
    """Every connection's report is clean; the first problems are shown, with their count."""
    assert len(reports) == len(connections), f"{len(reports)} reports for {len(connections)}"
    found = [p for c, r in zip(connections, reports, strict=True) for p in problems_with(c, r)]
    assert not found, f"{len(found)} problem(s):\n" + "\n".join(found[:30])


# ------------------------------------------------------------------- a server
# -------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def plans() -> list[ServerPlan]:
    """Good and bad calls for every tool of every installed server (about 8 s to build)."""
    return build_plans()


@pytest.fixture(scope="session")
def served_http(plans: list[ServerPlan]) -> Iterator[ServedHTTP]:
    """One ``prove-gym serve`` process serving every server over HTTP, each at ``/<name>/mcp``."""
    names = [p.server for p in plans]  # with a bearer token from the environment
    args = [*names, "--seed", str(SEED), "--auth-token-env", TOKEN_ENV]
    served = ServedHTTP(args, env={TOKEN_ENV: TOKEN}, timeout=90)
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="session")
def stdio_session(plans: list[ServerPlan]) -> Connection:
    """The stdio session: one process serving every server, tools ``<server>__<tool>``."""
    return stdio_connection(plans)


@pytest.fixture(scope="session")
def http_sessions(plans: list[ServerPlan], served_http: ServedHTTP) -> list[Connection]:
    """The HTTP sessions: one per server, on its own endpoint of :func:`served_http`."""
    return http_connections(plans, served_http.base)


@pytest.fixture(scope="session")
def check() -> Callable[[Sequence[Connection], Sequence[Mapping[str, Any]]], None]:
    """``check(connections, reports)`` asserts every report is clean (:func:`assert_clean`)."""
    return assert_clean
