"""The conformance suite every server plugin runs, in two lines of its test module.

>>> from prove_gym.testing.conformance import conformance_suite
>>> TestConformance = conformance_suite("calendar", samples=["evt_0001", "evt_9999"])  # doctest: +SKIP

The returned class is a pytest test class; each check is a test method,
parametrized per tool (or task, or env version) where that makes sense:

- ``test_server_contract``: ``Server.problems()`` is empty and every entity source lists
  records carrying its key.
- ``test_tool_contract[tool]``: a description, a described parameter for every parameter,
  at least two phrasings, a valid input schema, an MCP definition that builds.
- ``test_output_schema[tool]``: a typed return (an ``output_schema``), valid JSON schema.
- ``test_phrasings[tool]``: every ``{slot}`` is a parameter and renders cleanly.
- ``test_fuzz[tool]``: hostile, junk and plausible arguments (``hostile_cases``, then
  ``fuzz_arguments``) never make ``Session.call`` raise or answer ``internal``, never leak a
  path of this machine, leave the state unchanged when the call fails or only reads, and
  succeed only with results that validate against the tool's ``output_schema``.
- ``test_call_sequences``: a hypothesis ``RuleBasedStateMachine`` calling random tools on
  one session, with the same checks after every call and the server's ``invariants``.
- ``test_hostile_actions``: whole assistant messages a hostile policy sends (10,000 calls,
  arguments nested 10,000 deep, NaN, megabyte strings) end in a bounded observation, in
  bounded time, with at most the capped number of calls run.
- ``test_sampler_determinism``: the same (seed, size) gives the same state hash here and in
  two fresh processes with other ``PYTHONHASHSEED``s; different seeds give different states.
- ``test_shipped_task[task]``: the oracle scores the maximum on every hand-written task,
  terminates, and reaches its recorded ``final_state_hash``.
- ``test_gymnasium_check_env[vN]``: Gymnasium's ``check_env`` on every env id of the server.
- ``test_principal`` (a server with an acting principal in some env version): every tool
  whose entity parameters a principal owns is called, on a session acting for one
  principal, with another principal's entities; it must be refused with
  ``permission_denied`` naming the rule ``not_your_<entity>`` and change nothing, and the
  same call acting for their owner must not be refused by that rule; a tool the principal
  declares ``admin_only`` must be refused for it.

Each check is also a plain function (:func:`check_fuzz`, :func:`check_tool_contract`, ...)
that raises ``AssertionError`` with a message naming the server, the tool and the likely
cause, in the manner of Gymnasium's ``check_env``. Long campaigns with many more examples
belong in ``benchmarks/fuzz_servers.py``, not in the test suite.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import random
import reprlib
import site
import sqlite3
import string
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

from prove_gym.mcp.tools import mcp_tool, structured
from prove_gym.registry import Registry, get_registry
from prove_gym.server.base import Server
from prove_gym.server.errors import ErrorKind
from prove_gym.server.result import ToolResult
from prove_gym.server.session import Session
from prove_gym.server.state import ADDED_LATER, canonical_state_hash
from prove_gym.server.tool import Bound, ToolSpec
from prove_gym.task import Task, Turn
from prove_gym.testing.strategies import (
    first_value,
    fuzz_arguments,
    hostile_action_cases,
    hostile_cases,
)

__all__ = [
    "DEFAULT_MAX_EXAMPLES",
    "CallChecker",
    "Finding",
    "call_sequence_machine",
    "check_call_sequences",
    "check_fuzz",
    "check_gymnasium",
    "check_hostile_actions",
    "check_output_schema",
    "check_phrasings",
    "check_principal",
    "check_sampler_determinism",
    "check_server_contract",
    "check_task",
    "check_tool_contract",
    "conformance_suite",
]

DEFAULT_MAX_EXAMPLES = 30
"""Fuzzed calls per tool; the call-sequence check runs a third as many sequences."""

SEQUENCE_STEPS = 15
"""Calls per random call sequence."""

FUZZ_SEED = 0
"""The state seed the fuzz and the call sequences run on (``samples`` may name its ids)."""

SLOW_CALL_S = 10.0
"""A single call slower than this is a finding (a regex built from an argument, a loop)."""

Invariants = Callable[[Session], list[str]]


def conformance_suite(
    server: str,
    *,
    registry: Registry | None = None,
    samples: Sequence[Any] = (),
    invariants: Invariants | None = None,
    sizes: Sequence[int] | None = None,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
) -> type:
    """A pytest test class that checks ``server`` against the server contract.

    Assign it to a ``Test*`` name in the plugin's test module::

        TestConformance = conformance_suite("calendar", samples=["evt_0001", "evt_9999"])

    Args:
        server: The server's name.
        registry: Where to find it (default: the installed plugins).
        samples: Plausible values worth fuzzing with, beyond the real ids the suite reads
            from the entity sources: unknown ids (``"evt_9999"``), dates, enum words, tokens
            valid on the state of seed 0.
        invariants: The server's domain rules: returns what is broken in a session's state
            (empty when all hold); checked after every call of the random call sequences.
        sizes: State sizes for the determinism check (default: 1, the default size and
            twice it).
        max_examples: Fuzzed calls per tool (the call sequences run a third as many).
    """
    reg = registry if registry is not None else get_registry()
    srv = reg.get_server(server)
    # every definition of every tool (a later one, Server.tool(since=N), as "name@vN")
    # every definition of every tool, a later one (Server.tool(since=N)) as "name@vN"
    tools = [_label(t) for t in srv.definitions()]
    visible = [_label(t) for t in srv.definitions() if not t.hidden]
    versions = [0, *sorted(getattr(srv, "env_versions", None) or ())]
    # -v0's tasks, then each later version's own (replayed under it: Task.env_versions)
    tasks = list(reg.tasks(server))
    task_ids = [t.id for t in tasks]
    for number in versions[1:]:
        if srv.env_versions[number].tasks_file is not None:
            own = reg.tasks(server, number)
            tasks += own
            task_ids += [f"v{number}-{t.id}" for t in own]
    kept_samples = tuple(samples)
    sequences = max(3, max_examples // 3)

    class TestConformance:
        __doc__ = f"The prove_gym conformance suite for the {server!r} server."

        def test_server_contract(self) -> None:
            check_server_contract(srv)

        @pytest.mark.parametrize("tool", visible)
        def test_tool_contract(self, tool: str) -> None:
            check_tool_contract(srv, tool)

        @pytest.mark.parametrize("tool", visible)
        def test_output_schema(self, tool: str) -> None:
            check_output_schema(srv, tool)

        @pytest.mark.parametrize("tool", visible)
        def test_phrasings(self, tool: str) -> None:
            check_phrasings(srv, tool)

        @pytest.mark.parametrize("tool", tools)
        def test_fuzz(self, tool: str) -> None:
            check_fuzz(srv, tool, samples=kept_samples, max_examples=max_examples)

        @pytest.mark.parametrize("version", versions, ids=[f"v{v}" for v in versions])
        def test_call_sequences(self, version: int) -> None:
            check_call_sequences(
                srv,
                samples=kept_samples,
                invariants=invariants,
                max_examples=sequences,
                version=version,
            )

        def test_hostile_actions(self) -> None:
            check_hostile_actions(srv, registry=reg)

        def test_sampler_determinism(self) -> None:
            check_sampler_determinism(srv, sizes=sizes, registry=registry)

        @pytest.mark.parametrize("task", tasks, ids=task_ids)
        def test_shipped_task(self, task: Task) -> None:
            check_task(task, registry=registry)

        @pytest.mark.parametrize("version", versions, ids=[f"v{v}" for v in versions])
        def test_gymnasium_check_env(self, version: int) -> None:
            check_gymnasium(srv, registry=registry, version=version)

        if any(srv.principal(v) is not None for v in versions):

            def test_principal(self) -> None:
                check_principal(srv)

    return TestConformance


# --------------------------------------------------------------------- contract
def check_server_contract(server: Server) -> None:
    """``Server.problems()`` is empty and every entity source lists records with its key
    (one whose model's table is :func:`~prove_gym.server.added_later` may list none: only a
    later version's tools write its rows, so no sampled state has one)."""
    problems = list(server.problems())
    with server.session(seed=FUZZ_SEED) as session:
        for kind, source in server.entities.items():
            try:
                records = session.list_entities(kind)
            except Exception as exc:
                problems.append(
                    f"{server.name}: entity source {kind!r} raised {type(exc).__name__}: {exc}"
                )
                continue
            table = getattr(source.model, "__table__", None)
            if not records and table is not None and table.info.get(ADDED_LATER):
                continue
            if not records:
                problems.append(
                    f"{server.name}: entity source {kind!r} lists nothing on the state of seed "
                    f"{FUZZ_SEED}: the sampler makes no {kind}, or the source filters them all out"
                )
            elif any(source.key not in r for r in records):
                problems.append(
                    f"{server.name}: entity source {kind!r} lists records without its key "
                    f"{source.key!r} (key= names the record field holding the id)"
                )
    assert not problems, "\n".join(problems)


def check_tool_contract(server: Server, tool: str | ToolSpec) -> None:
    """A description, described parameters, two phrasings, valid schema, an MCP definition."""
    spec = _spec(server, tool)
    where = f"{server.name}.{spec.name}"
    problems = []
    if not spec.description.strip():
        problems.append("no description: write a docstring, it is what the model reads")
    for p in spec.params:
        if not p.description.strip():
            problems.append(
                f"parameter {p.name!r} has no description: document it under Args: "
                f'with an example value ("The event, such as \\"evt_0042\\".")'
            )
    if len(spec.phrasings) < 2:
        problems.append(
            f"{len(spec.phrasings)} phrasing(s): declare at least two phrasings= "
            "(user requests with {parameter} slots)"
        )
    params = {p.name for p in spec.params}
    for phrasing in spec.phrasings:
        unknown = sorted(set(_slots(phrasing)) - params)
        if unknown:
            problems.append(f"phrasing {phrasing!r} has slots {unknown} that are not parameters")
    try:
        Draft202012Validator.check_schema(spec.input_schema())
    except SchemaError as exc:
        problems.append(f"the input schema is not valid JSON schema: {exc.message}")
    try:
        mcp_tool(spec)
    except Exception as exc:
        problems.append(f"the MCP definition does not build: {type(exc).__name__}: {exc}")
    assert not problems, f"{where}: " + "; ".join(problems)


def check_output_schema(server: Server, tool: str | ToolSpec) -> None:
    """The tool has a typed return: an ``output_schema`` that is a valid object schema."""
    spec = _spec(server, tool)
    where = f"{server.name}.{spec.name}"
    assert spec.output_schema is not None, (
        f"{where}: untyped return: annotate it with a TypedDict (from prove_gym.server import "
        "TypedDict), a list of one, or another type pydantic can describe; dict and Any "
        "describe nothing a client can validate"
    )
    try:
        Draft202012Validator.check_schema(spec.output_schema)
    except SchemaError as exc:
        raise AssertionError(
            f"{where}: output_schema is not valid JSON schema ({exc.message}): "
            "the return annotation holds a type pydantic cannot describe"
        ) from None
    assert spec.output_schema.get("type") == "object", (
        f"{where}: output_schema is not an object schema (MCP requires one)"
    )


def check_phrasings(server: Server, tool: str | ToolSpec) -> None:
    """Every phrasing's slots are parameters and the synthesizer's renderer fills them all."""
    from prove_gym.synth.render import SLOT, render_value, usable_phrasings

    spec = _spec(server, tool)
    where = f"{server.name}.{spec.name}"
    params = {p.name for p in spec.params}
    problems = []
    for phrasing in spec.phrasings:
        try:
            slots = _slots(phrasing)
        except ValueError as exc:
            problems.append(f"phrasing {phrasing!r} is not a template ({exc})")
            continue
        for slot in slots:
            if slot not in params:
                problems.append(
                    f"phrasing {phrasing!r} has slot {{{slot}}}, which is not a parameter "
                    f"(parameters: {', '.join(sorted(params)) or 'none'})"
                )
        rendered = SLOT.sub(lambda m: render_value(f"<{m.group(1)}>"), phrasing)
        if "{" in rendered or "}" in rendered:
            problems.append(
                f"phrasing {phrasing!r} renders as {rendered!r}: a brace is left over "
                "(slots are {parameter_name}, nothing else)"
            )
        if not rendered.strip():
            problems.append("an empty phrasing")
    if spec.phrasings and not usable_phrasings(spec):
        problems.append("the synthesizer finds no usable phrasing")
    assert not problems, f"{where}: " + "; ".join(problems)


def _slots(phrasing: str) -> list[str]:
    """Every replacement field of a phrasing, as ``str.format`` reads it (``""`` for ``{}``)."""
    return [field for _, field, _, _ in string.Formatter().parse(phrasing) if field is not None]


# ------------------------------------------------------------------------- calls
@dataclass(frozen=True, slots=True)
class Finding:
    """One thing wrong with one call.

    Attributes:
        kind: ``uncaught`` (``Session.call`` raised), ``internal`` (an ``internal`` error),
            ``no_message`` (an error without a message), ``path_leak`` (a path of this machine
            or a traceback in a message), ``partial_write`` (a failed call changed the state),
            ``read_wrote`` (a read changed the state), ``schema`` (a result its
            ``output_schema`` does not allow) or ``slow``.
        message: What happened, on which arguments, and the likely cause.
    """

    kind: str
    message: str
    cause: str = ""


FINDING_KINDS = (
    "uncaught",
    "internal",
    "no_message",
    "path_leak",
    "partial_write",
    "read_wrote",
    "schema",
    "slow",
)


class CallChecker:
    """Calls tools on one session and reports what is wrong with each call.

    The state before a call is kept as the database's serialised bytes (copying
    them costs microseconds); canonical state hashes are compared only when
    the bytes differ, so fuzzing a server with a large state stays cheap.

    Args:
        server: The server.
        session: A session of it; the checker calls tools on it and resets it.
    """

    def __init__(self, server: Server, session: Session) -> None:
        self.server = server
        self.session = session
        self.calls = 0
        self._before = session.snapshot()
        self._validators: dict[str, Draft202012Validator | None] = {}
        self._records: dict[str, list[dict[str, Any]]] | None = None

    def reset(self) -> None:
        """Back to the session's initial state."""
        self.session.reset()
        self._before = self.session.snapshot()

    def call(self, tool: str, arguments: Any) -> tuple[ToolResult | None, list[Finding]]:
        """Call ``tool`` with ``arguments``; the result (``None`` if it raised) and the findings."""
        spec = self.server.tools_for(self.session.env_version)[tool]
        where = f"{self.server.name}.{tool}"
        shown = _short(arguments)
        self.calls += 1
        start = time.perf_counter()
        try:
            result = self.session.call(tool, arguments, allow_hidden=spec.hidden)
        except Exception as exc:
            self.reset()
            cause = _uncaught_cause(exc)
            return None, [
                Finding(
                    "uncaught",
                    f"{where} raised {type(exc).__name__} ({_cut(str(exc))}) on arguments {shown}: "
                    f"Session.call must answer every input with a result; likely cause: {cause}",
                    cause,
                )
            ]
        elapsed = time.perf_counter() - start
        findings = []
        if elapsed > SLOW_CALL_S:
            findings.append(
                Finding(
                    "slow",
                    f"{where} took {elapsed:.1f} s on arguments {shown}: a regular expression "
                    "or a loop driven by an argument? Bound the argument",
                )
            )
        if not result.ok:
            message = result.message or ""
            if result.error_kind == ErrorKind.INTERNAL:
                cause = _internal_cause(message)
                findings.append(
                    Finding(
                        "internal",
                        f"{where} failed with an internal error on arguments {shown}: "
                        f"{_cut(message)}; likely cause: {cause}",
                        cause,
                    )
                )
            if not message.strip():
                findings.append(
                    Finding(
                        "no_message",
                        f"{where} failed with {result.error_kind} but no message: "
                        "say what failed and what to do next",
                    )
                )
            leaked = self._leak(message, arguments)
            if leaked is not None:
                findings.append(
                    Finding(
                        "path_leak",
                        f"{where} answered arguments {shown} with a message that shows "
                        f"{leaked!r}, a path or traceback of this machine: {_cut(message)}; "
                        "likely cause: an exception's text passed on as the message",
                    )
                )
        if result.ok and spec.writes:
            self._before = self.session.snapshot()
        elif self._changed():
            if result.ok:
                findings.append(
                    Finding(
                        "read_wrote",
                        f"read tool {tool} changed the state ({self.server.name}, arguments "
                        f"{shown}): most likely it writes without writes=True (the session "
                        "rolls a read back, unless the tool commits itself through ctx.sql.raw)",
                    )
                )
            else:
                findings.append(
                    Finding(
                        "partial_write",
                        f"{'write' if spec.writes else 'read'} tool {tool} failed with "
                        f"{result.error_kind} but the state hash changed ({self.server.name}, "
                        f"arguments {shown}): a commit before the failure? Never commit in "
                        "a tool (ctx.sql.raw.commit()); the session commits once the tool "
                        "returns and rolls the whole call back when it raises",
                    )
                )
            self._before = self.session.snapshot()
        if result.ok:
            problem = self._schema_problem(spec, result.content)
            if problem is not None:
                findings.append(
                    Finding(
                        "schema",
                        f"{where} returned a result its output_schema does not allow "
                        f"({problem}) on arguments {shown}: most likely the return annotation "
                        "does not match what the function returns (a missing key, None where "
                        "the type has none, another type)",
                    )
                )
        return result, findings

    def plausible(self, spec: ToolSpec) -> dict[str, list[Any]]:
        """Per-parameter values read from the state: real ids from the entity sources, record
        fields named like parameters, the tool's callable ``examples``, and what its
        ``values=`` sources give for the call made of those."""
        if self._records is None:
            self._records = {}
            for kind in self.server.entities:
                try:
                    records = self.session.list_entities(kind)
                except Exception:
                    records = []  # reported by check_server_contract
                self._records[kind] = records[:3] + records[-2:]
        found: dict[str, list[Any]] = {}
        for p in spec.params:
            values: list[Any] = []
            if p.entity is not None and p.entity.name in self.server.entities:
                key = self.server.entities[p.entity.name].key
                ids = [r[key] for r in self._records.get(p.entity.name, []) if key in r]
                values += [ids[:2]] if p.entity.many and ids else ids
            for records in self._records.values():
                values += [r[p.name] for r in records if p.name in r]
            example = spec.examples.get(p.name)
            if callable(example):
                values += self._call_examples(example)
            if values:
                found[p.name] = values
        # a value source fits the rest of the call: given the first values found above
        drawn = {name: values[0] for name, values in found.items()}
        for name, source in sorted(spec.values.items()):
            fitting = self._call_examples(lambda ctx, rng, s=source: s(ctx, rng, Bound(drawn)))
            fitting = [v for v in fitting if v is not None]
            if fitting:
                found[name] = found.get(name, []) + fitting
        return found

    def _call_examples(self, example: Callable[..., Any]) -> list[Any]:
        session = self.session
        ctx = session.context()
        values = []
        for i in range(3):
            try:
                values.append(example(ctx, random.Random(i)))
            except Exception:
                break
            finally:
                session.rollback()
        return values

    def _changed(self) -> bool:
        now = self.session.snapshot()
        if now == self._before:
            return False
        conn = sqlite3.connect(":memory:")
        try:
            conn.deserialize(self._before)
            before = canonical_state_hash(conn, self.server.base.metadata)
        finally:
            conn.close()
        return before != self.session.state_hash()

    def _leak(self, message: str, arguments: Any) -> str | None:
        sent: str | None = None
        for marker in _leak_markers():
            if marker in message:
                bare = marker.rstrip("/") or marker
                sent = sent if sent is not None else "\n".join(_strings(arguments))
                if bare in sent or bare.encode() in self.session.template.data:
                    continue  # echoed from the arguments, or a path of the simulated world
                return marker
        return None

    def _schema_problem(self, spec: ToolSpec, content: Any) -> str | None:
        if spec.name not in self._validators:
            schema = spec.output_schema
            self._validators[spec.name] = Draft202012Validator(schema) if schema else None
        validator = self._validators[spec.name]
        if validator is None:
            return None
        error = best_match(validator.iter_errors(structured(content)))
        if error is None:
            return None
        path = "/".join(str(p) for p in error.absolute_path) or "the result"
        return f"{_cut(error.message, 200)} at {path}"


def check_fuzz(
    server: Server,
    tool: str | ToolSpec,
    *,
    samples: Sequence[Any] = (),
    max_examples: int = DEFAULT_MAX_EXAMPLES,
) -> None:
    """Call one tool with hostile and fuzzed arguments, each on a fresh state.

    ``tool`` is a name, a :class:`ToolSpec`, or ``"name@vN"`` for a tool's later definition
    (``Server.tool(since=N)``), which is called in a session of version N (acting for the
    first principal of the state, where that version has one).

    First the fixed battery of :func:`~prove_gym.testing.hostile_cases` (every kind of
    problem it finds, by likely cause, is reported at once), then ``max_examples``
    hypothesis examples of :func:`~prove_gym.testing.fuzz_arguments`. Raises
    ``AssertionError`` naming the tool, the arguments and the likely cause (see
    :class:`CallChecker`).
    """
    spec = _spec(server, tool)
    # a later definition (Server.tool(since=N)) is played under its version
    principal = _first_principal(server, spec.since)
    with server.session(seed=FUZZ_SEED, env_version=spec.since, principal=principal) as session:
        checker = CallChecker(server, session)
        plausible = checker.plausible(spec)
        seen: dict[tuple[str, str], Finding] = {}
        for arguments in hostile_cases(spec, plausible):
            checker.reset()
            for finding in checker.call(spec.name, arguments)[1]:
                seen.setdefault((finding.kind, finding.cause), finding)
        assert not seen, "\n".join(f.message for f in seen.values())
        strategy = fuzz_arguments(spec, samples, plausible=plausible)

        @_settings(max_examples)
        @given(arguments=strategy)
        def fuzz(arguments: dict[str, Any]) -> None:
            checker.reset()
            _, findings = checker.call(spec.name, arguments)
            assert not findings, "\n".join(f.message for f in findings)

        fuzz()


# ------------------------------------------------------------------ sequences
def call_sequence_machine(
    server: Server,
    *,
    samples: Sequence[Any] = (),
    invariants: Invariants | None = None,
    version: int = 0,
) -> type[RuleBasedStateMachine]:
    """A ``RuleBasedStateMachine`` calling random tools with fuzzed arguments on one session.

    The session plays env ``version``; where that version has an acting principal, it acts
    for the first one the sampled state lists, so the version's own rules (market hours,
    refusals for another principal's rows) run under the sequences and the invariants.

    Arguments are junk, schema-shaped and plausible, not hostile (hostile values are the
    per-tool fuzz's business), so that sequences of successful writes reach states that
    one call from the sampled state cannot. After every call: the :class:`CallChecker`
    findings (failed calls and reads leave the state unchanged, results fit their schema,
    ...) and ``invariants(session)``.
    """
    acting = server.principal(version)
    principal = None
    with server.session(seed=FUZZ_SEED) as probe:
        checker = CallChecker(server, probe)
        strategies = {
            name: fuzz_arguments(spec, samples, plausible=checker.plausible(spec), hostile=False)
            for name, spec in server.tools_for(version).items()
        }
        if acting is not None:
            key = server.entities[acting.entity].key
            principal = min(r[key] for r in probe.list_entities(acting.entity))
    names = list(strategies)

    class CallSequences(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.session = server.session(seed=FUZZ_SEED, env_version=version, principal=principal)
            self.checker = CallChecker(server, self.session)
            self.history: list[str] = []

        @rule(data=st.data(), tool=st.sampled_from(names))
        def call_a_tool(self, data: st.DataObject, tool: str) -> None:
            arguments = data.draw(strategies[tool], label="arguments")
            result, findings = self.checker.call(tool, arguments)
            outcome = "raised" if result is None else result.status
            self.history.append(f"{tool}({_short(arguments)}) -> {outcome}")
            assert not findings, "\n".join(f.message for f in findings) + self._after()

        if invariants is not None:

            @invariant()
            def the_server_invariants_hold(self) -> None:
                assert invariants is not None
                problems = invariants(self.session)
                assert not problems, (
                    f"{server.name}: the server's invariants are broken: "
                    f"{'; '.join(map(str, problems))}" + self._after()
                )

        def _after(self) -> str:
            if not self.history:
                return f" (in the sampled state of seed {FUZZ_SEED}, before any call)"
            return "\n  after the calls:\n    " + "\n    ".join(self.history[-8:])

        def teardown(self) -> None:
            self.session.close()

    CallSequences.__name__ = CallSequences.__qualname__ = f"{server.name.title()}CallSequences"
    return CallSequences


def check_call_sequences(
    server: Server,
    *,
    samples: Sequence[Any] = (),
    invariants: Invariants | None = None,
    max_examples: int = DEFAULT_MAX_EXAMPLES // 3,
    steps: int = SEQUENCE_STEPS,
    version: int = 0,
) -> None:
    """Run :func:`call_sequence_machine`: ``max_examples`` sequences of up to ``steps`` calls,
    under env ``version`` (the suite runs every version the server declares)."""
    machine = call_sequence_machine(server, samples=samples, invariants=invariants, version=version)
    run_state_machine_as_test(machine, settings=_settings(max_examples, steps=steps))


# ------------------------------------------------------------------ sampling
def check_sampler_determinism(
    server: Server,
    *,
    sizes: Sequence[int] | None = None,
    seeds: Sequence[int] = (0, 1),
    registry: Registry | None = None,
) -> None:
    """Same (seed, size), same state hash and database bytes, here and in two fresh
    processes; seeds differ.

    The first seed is sampled at every size (default: 1, the server's default size and
    twice that), the others at the default size. The fresh processes run with
    ``PYTHONHASHSEED`` 1 and 2 (one samples in order, the other in reverse) and find the
    server through ``registry`` (the installed plugins by default; otherwise by importing
    its base and sampler modules: a server whose sampler is defined inside a function is
    only checked in this process).
    """
    default = server.default_size
    sizes = sorted(set(sizes)) if sizes else sorted({1, default, 2 * default})
    first, *others = seeds
    pairs = [(first, size) for size in sizes] + [(seed, default) for seed in others]
    script = _locate_script(server, registry)
    runs = []
    for hash_seed, order in (("1", pairs), ("2", pairs[::-1])) if script else ():
        proc = subprocess.Popen(
            [sys.executable, "-c", _HASHES + str(script), json.dumps(order)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
        runs.append((hash_seed, proc))
    try:
        here = {pair: _hashes(server, *pair) for pair in pairs}  # while they run
        same = [seed for seed in others if here[(seed, default)][0] == here[(first, default)][0]]
        assert not same, (
            f"{server.name}: seeds {first} and {same[0]} give the same state: the sampler "
            "draws nothing from ctx.rng and ctx.fake"
        )
        for hash_seed, proc in runs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, (
                f"{server.name}: a fresh process (PYTHONHASHSEED={hash_seed}) could not sample "
                f"the server:\n{err[-2000:]}"
            )
            theirs = json.loads(out.strip().splitlines()[-1])
            for seed, size in pairs:
                rows, data = here[(seed, size)]
                rows_there, data_there = theirs[f"{seed}/{size}"]
                assert rows_there == rows, (
                    f"{server.name}: seed {seed}, size {size} gives another state in a fresh "
                    f"process (PYTHONHASHSEED={hash_seed}) than in this one: the sampler "
                    "depends on something besides ctx.rng, ctx.fake and ctx.now (iteration "
                    "over a set of strings, the wall clock, unseeded randomness, state kept "
                    "between samples)"
                )
                assert data_there == data, (
                    f"{server.name}: seed {seed}, size {size} gives the same rows but other "
                    f"database bytes in a fresh process (PYTHONHASHSEED={hash_seed}): rows or "
                    "tables were written in another order (the order of a set, of a dict "
                    "built from one, or of ctx.insert batches)"
                )
    finally:
        for _, proc in runs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def _hashes(server: Server, seed: int, size: int) -> tuple[str, str]:
    """The state's canonical hash, and the SHA-256 of its database bytes."""
    with server.session(seed=seed, size=size) as session:
        return session.state_hash(), hashlib.sha256(session.template.data).hexdigest()


_HASHES = """
import hashlib, json, sys

def hashes(server):
    out = {}
    for seed, size in json.loads(sys.argv[1]):
        with server.session(seed=seed, size=size) as session:
            data = hashlib.sha256(session.template.data).hexdigest()
            out[f"{seed}/{size}"] = [session.state_hash(), data]
    print(json.dumps(out))
"""


def _locate_script(server: Server, registry: Registry | None) -> str | None:
    """Python code that finds ``server`` in a fresh process and prints its hashes."""
    if registry is None:  # the installed plugin: load its entry point alone (a fraction of all)
        return f"""
from importlib.metadata import entry_points
import prove_gym
from prove_gym.registry import ENTRY_POINT_GROUP, Registry

found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == {server.name!r}]
if found:
    registry = Registry(load_entrypoints=False)
    registry.register(found[0].load(), name=found[0].name)
else:  # an entry point not named after its server: every plugin, then the server
    registry = prove_gym.get_registry()
hashes(registry.get_server({server.name!r}))
"""
    parts = []
    for obj in (server.base, server.sampler):
        module = sys.modules.get(getattr(obj, "__module__", ""))
        qualname = getattr(obj, "__qualname__", "")
        path = getattr(module, "__file__", None)
        if module is None or "<locals>" in qualname or "." in qualname or path is None:
            return None
        parts.append((module.__name__, path, qualname))
    (base_mod, base_path, base_name), (fn_mod, fn_path, fn_name) = parts
    return f"""
import importlib, importlib.util
from prove_gym.server import Server

def load(name, path):
    if name in sys.modules:
        return sys.modules[name]
    try:
        return importlib.import_module(name)
    except ImportError:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

hashes(Server(
    {server.name!r},
    version={server.version!r},
    base=getattr(load({base_mod!r}, {base_path!r}), {base_name!r}),
    sampler=getattr(load({fn_mod!r}, {fn_path!r}), {fn_name!r}),
    default_size={server.default_size!r},
))
"""


# ---------------------------------------------------------------- principal
def check_principal(server: Server) -> None:
    """In every env version that declares a new :class:`~prove_gym.server.base.Principal`, a
    call acting for another principal is refused and the same call for its owner is not.

    On the state of seed ``FUZZ_SEED``, for every visible tool with entity parameters a
    principal owns (:meth:`Server.owned_params`): its arguments are built from the entity
    sources (each owned parameter given an entity of one principal, the others their first
    plausible value) for two principals that each own an entity of every such kind. Called on
    a session acting for the one with the other's entities, and with one parameter at a time
    given the other's entity, it must answer ``permission_denied`` naming the rule
    (``not_your_<entity>``) and leave the state unchanged; called for the owner of them all, it
    must not be refused by that rule. An entity whose model refers to the principal's table
    but declares no ``owner=`` (nor ``shared=True``) is reported too: the core would never
    check it. Every tool the principal declares ``admin_only`` must be refused (rule
    ``admin_only``) and change nothing. Where no tool takes an owned parameter (every
    parameter naming a principal is ``shared``: the tools act as the principal without
    naming it), only that is checked.
    """
    seen: list[Any] = []
    for number in sorted(server.env_versions):
        acting = server.principal(number)
        if acting is None or any(acting is p for p in seen):
            continue
        seen.append(acting)
        _check_acting(server, number, acting)


def _check_acting(server: Server, version: int, acting: Any) -> None:
    from prove_gym.server.sql import record_by_key

    where = f"prove/{server.name}-v{version}"
    principal_model = server.entities[acting.entity].model
    problems = []
    for kind, source in server.entities.items():
        if (
            source.model is None
            or source.owner is not None
            or source.shared
            or kind == acting.entity
        ):
            continue
        for column in source.model.__table__.columns:  # type: ignore[attr-defined]
            if any(fk.column.table is principal_model.__table__ for fk in column.foreign_keys):  # type: ignore[union-attr]
                problems.append(
                    f"{where}: entity {kind!r} refers to the {acting.entity} in column "
                    f"{column.name!r} but declares no owner=: a call naming another "
                    f"{acting.entity}'s {kind} is never refused (declare owner={column.name!r})"
                )
    with server.session(seed=FUZZ_SEED) as plain:
        key = server.entities[acting.entity].key
        principals = [r[key] for r in plain.list_entities(acting.entity)]
        assert len(principals) >= 2, (
            f"{where}: the state of seed {FUZZ_SEED} has {len(principals)} {acting.entity}(s) "
            "to act for; the principal check needs two (the sampler makes too few?)"
        )
        owned_by: dict[str, dict[Any, list[Any]]] = {}  # kind -> principal -> its entities' ids
        ctx = plain.context()
        checker = CallChecker(server, plain)
        tools = []
        for spec in server.visible_tools(version):
            owned = server.owned_params(spec, acting)
            if not owned or spec.name in acting.admin_only:  # refused whoever owns what
                continue
            for o in owned:
                if o.source.kind not in owned_by:
                    assert o.source.model is not None
                    by_key = record_by_key(o.source.model)
                    ids: dict[Any, list[Any]] = {}
                    for record in plain.list_entities(o.source.kind):
                        row = ctx.sql.first(by_key, key=record[o.source.key])
                        if row is not None:
                            who = server.owner_id(ctx.sql, o.source, acting, row)
                            ids.setdefault(who, []).append(record[o.source.key])
                    owned_by[o.source.kind] = ids
            plain.rollback()
            tools.append((spec, owned, checker.plausible(spec)))
    assert not problems, "\n".join(problems)
    checked = 0
    for spec, owned, plausible in tools:
        owners = [p for p in principals if all(owned_by[o.source.kind].get(p) for o in owned)][:2]
        if len(owners) < 2:
            continue  # no two principals own one of each: nothing to swap on this state
        mine, theirs = owners
        props = spec.input_schema().get("properties", {})
        many = {p.name for p in spec.params if p.entity is not None and p.entity.many}
        base = {
            p.name: first_value(
                props.get(p.name, {}), plausible.get(p.name, ()), spec.examples.get(p.name)
            )
            for p in spec.params
            if p.required
        }

        def owned_args(
            who: Any, base: dict[str, Any] = base, owned: Any = owned, many: set[str] = many
        ) -> dict[str, Any]:
            args = dict(base)
            for o in owned:
                first = owned_by[o.source.kind][who][0]
                args[o.name] = [first] if o.name in many else first
            return args

        calls = [owned_args(theirs)]
        if len(owned) > 1:
            calls += [{**owned_args(mine), o.name: owned_args(theirs)[o.name]} for o in owned]
        with server.session(seed=FUZZ_SEED, env_version=version, principal=mine) as session:
            before = session.state_hash()
            for args in calls:
                result = session.call(spec.name, args)
                assert result.error_kind == ErrorKind.PERMISSION_DENIED and (
                    f"Rule '{acting.rule}'" in (result.message or "")
                ), (
                    f"{where}.{spec.name}: acting for {acting.entity} {mine!r}, a call naming "
                    f"{theirs!r}'s entities {_short(args)} answered {result.error_kind}: "
                    f"{_cut(result.message or 'ok')}; expected permission_denied with rule "
                    f"'{acting.rule}' (likely cause: an entity kind without owner=, or "
                    "arguments the check could not build: give the tool examples=)"
                )
                assert session.state_hash() == before, f"{where}.{spec.name}: a refused call wrote"
        for who in (mine, theirs):
            with server.session(seed=FUZZ_SEED, env_version=version, principal=who) as session:
                args = owned_args(who)
                result = session.call(spec.name, args)
                assert not (
                    result.error_kind == ErrorKind.PERMISSION_DENIED
                    and f"Rule '{acting.rule}'" in (result.message or "")
                ), (
                    f"{where}.{spec.name}: acting for {acting.entity} {who!r}, a call naming "
                    f"only its own entities {_short(args)} was refused: "
                    f"{_cut(result.message or '')} (an owner= column that names another "
                    "entity than the principal?)"
                )
        checked += 1
    # A server whose tools take no owned parameter at all (a signed-in person who acts only
    # through who they are: every other entity shared) has nothing for the core to refuse.
    assert checked or not tools, (
        f"{where}: no tool could be checked: no two {acting.entity}s own an entity of each "
        f"kind any tool takes on the state of seed {FUZZ_SEED}"
    )
    for name in acting.admin_only:
        spec = server.tools_for(version)[name]
        props = spec.input_schema().get("properties", {})
        with server.session(seed=FUZZ_SEED) as plain:
            plausible = CallChecker(server, plain).plausible(spec)
        args = {
            p.name: first_value(
                props.get(p.name, {}), plausible.get(p.name, ()), spec.examples.get(p.name)
            )
            for p in spec.params
            if p.required
        }
        with server.session(
            seed=FUZZ_SEED, env_version=version, principal=principals[0]
        ) as session:
            before = session.state_hash()
            result = session.call(name, args)
            assert result.error_kind == ErrorKind.PERMISSION_DENIED and (
                (result.message or "").startswith("Rule 'admin_only' failed:")
            ), (
                f"{where}.{name}: admin_only, yet acting for {acting.entity} {principals[0]!r} "
                f"it answered {result.error_kind}: {_cut(result.message or 'ok')}"
            )
            assert session.state_hash() == before, f"{where}.{name}: a refused call wrote"


# --------------------------------------------------------------- tasks, gym
def check_task(task: Task, *, registry: Registry | None = None) -> None:
    """The oracle plays ``task`` to the end: maximum reward, terminated, recorded final state."""
    from prove_gym.episode import Episode
    from prove_gym.eval import OraclePolicy

    where = f"{'+'.join(task.servers)} task {task.id}"
    with Episode(task, registry=registry) as episode:
        agent = OraclePolicy().start(episode)
        while not episode.done:
            episode.step(agent.act(episode))
    breakdown = episode.breakdown
    assert breakdown is not None
    failed = [
        f"{r.name}({_short(r.arguments)}) -> {r.result.error_kind}: {_cut(r.result.message or '')}"
        for r in episode.trajectory
        if not r.result.ok
    ]
    assert episode.terminated, (
        f"{where}: truncated before the last turn (a cap: more gold calls or turns than "
        f"{episode.caps} allows?); failed calls: {failed or 'none'}"
    )
    if task.final_state_hash and not failed:  # the more specific cause first
        assert breakdown.final_state_hash == task.final_state_hash, (
            f"{where}: the gold calls reach another state than the recorded final_state_hash: "
            "the sampler or a write tool changed since the task was recorded (if on purpose, "
            "that is a new env version; re-record the tasks with `prove-gym tasks --rehash`)"
        )
    assert math.isclose(breakdown.total, breakdown.max_total, abs_tol=1e-9), (
        f"{where}: the oracle scored {breakdown.total:.4f} of {breakdown.max_total:.4f} "
        f"({breakdown.components}); failed gold calls: {failed or 'none'}; likely cause: a gold "
        "step no longer succeeds on the task's seed (the sampler or a tool changed)"
    )


def check_hostile_actions(server: Server, *, registry: Registry | None = None) -> None:
    """Play hostile assistant messages (:func:`~prove_gym.testing.hostile_action_cases`) through
    an :class:`~prove_gym.episode.Episode` of the server: each step must return (never
    raise) within ``SLOW_CALL_S``, run at most the capped number of calls and answer with
    an observation under 5 MB."""
    from prove_gym.episode import Episode

    reg = registry if registry is not None else get_registry()
    task = Task(
        id=f"{server.name}-hostile",
        servers=[server.name],
        seed=FUZZ_SEED,
        turns=[Turn(user="Help me."), Turn(user="Thanks.")],
    )
    names = [t.name for t in server.visible_tools() if not t.writes] or [
        t.name for t in server.visible_tools()
    ]

    for action in hostile_action_cases(names[0]):
        with Episode(task, registry=reg) as episode:
            began = time.perf_counter()
            try:
                out = episode.step(action)
            except Exception as exc:
                raise AssertionError(
                    f"{server.name}: Episode.step raised {type(exc).__name__} on a hostile "
                    f"action {_short(action)}: a format's parse or the argument checks let it "
                    "through (parse must never raise; Session.call must answer everything)"
                ) from exc
            elapsed = time.perf_counter() - began
            assert elapsed < SLOW_CALL_S, (
                f"{server.name}: one hostile step took {elapsed:.1f} s ({_short(action)}): "
                "are the call caps (EpisodeCaps.max_calls_per_message) applied?"
            )
            assert len(out.records) <= episode.caps.max_calls_per_message + 1, (
                f"{server.name}: {len(out.records)} calls of one message ran"
            )
            assert len(out.observation) < 5_000_000, (
                f"{server.name}: a {len(out.observation)}-character observation"
            )


def check_gymnasium(server: Server, *, registry: Registry | None = None, version: int = 0) -> None:
    """Gymnasium's ``check_env`` on ``prove/<server>-v<version>``."""
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    from prove_gym.env.env import ProveEnv

    env_id = f"prove/{server.name}-v{version}"
    if registry is None:
        env: Any = gymnasium.make(env_id).unwrapped
    elif version:
        env = ProveEnv(server.name, registry=registry, env_version=version)
    else:
        env = ProveEnv(server.name, registry=registry)
    try:
        check_env(env)
    except AssertionError as exc:
        raise AssertionError(f"{env_id}: gymnasium's check_env failed: {exc}") from exc
    finally:
        env.close()


# ---------------------------------------------------------------- helpers
def _first_principal(server: Server, version: int) -> str | None:
    """The first principal (by id) of the state of ``FUZZ_SEED`` for a session of
    ``version`` to act for; ``None`` where the version acts for nobody."""
    acting = server.principal(version)
    if acting is None:
        return None
    key = server.entities[acting.entity].key
    with server.session(seed=FUZZ_SEED) as probe:
        return min(r[key] for r in probe.list_entities(acting.entity))


def _label(spec: ToolSpec) -> str:
    """How the suite names a definition: ``"place_order"``, or ``"place_order@v3"`` for a
    later one (``Server.tool(since=3)``)."""
    return f"{spec.name}@v{spec.since}" if spec.since else spec.name


def _spec(server: Server, tool: str | ToolSpec) -> ToolSpec:
    """The definition ``tool`` names (``"name"``: its first; ``"name@vN"``: the one
    declared ``since=N``), or ``tool`` itself when it is one."""
    if isinstance(tool, ToolSpec):
        return tool
    name, at, since = tool.rpartition("@v")
    if at and since.isdigit():
        later = server.redefined.get(name, {}).get(int(since))
        if later is None:
            raise KeyError(f"server {server.name!r} does not redefine {name!r} since={since}")
        return later
    name = tool
    if name not in server.tools:
        raise KeyError(f"server {server.name!r} has no tool {name!r}")
    return server.tools[name]


def _settings(max_examples: int, *, steps: int | None = None) -> settings:
    extra: dict[str, Any] = {} if steps is None else {"stateful_step_count": steps}
    return settings(
        max_examples=max_examples,
        deadline=None,
        # the messages name the tool, the arguments and the likely cause: no need to spend
        # minutes on hypothesis' explanation of which lines only failing examples ran
        phases=[p for p in Phase if p is not Phase.explain],
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
            HealthCheck.large_base_example,
        ],
        **extra,
    )


class _Repr(reprlib.Repr):
    def repr_str(self, x: str, level: int) -> str:
        shown = super().repr_str(x, level)
        return shown if len(x) <= self.maxstring else f"{shown} ({len(x)} chars)"


_REPR = _Repr()
_REPR.maxstring = 60
_REPR.maxother = 60
_REPR.maxlevel = 3
_REPR.maxdict = 6
_REPR.maxlist = 4
_REPR.maxlong = 40


def _short(value: Any) -> str:
    """A bounded repr: arguments may hold 100,000-character strings or 1,000 levels of lists."""
    return _REPR.repr(value)


def _cut(text: str, limit: int = 400) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


def _strings(value: Any) -> list[str]:
    """Every string in a JSON-like value (keys too), without recursion."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, Mapping):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list | tuple):
            stack += item
    return found


@functools.cache
def _leak_markers() -> tuple[str, ...]:
    """Paths of this machine (repo, interpreter, site-packages, home) and traceback text."""
    import prove_gym

    paths = {
        Path(prove_gym.__file__).resolve().parent.parent,
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(sys.exec_prefix),
        Path.home(),
        *(Path(p) for p in site.getsitepackages()),
        *(Path(sysconfig.get_path(k)) for k in ("stdlib", "purelib", "platlib")),
    }
    markers = {"/usr/", "/root/", "site-packages", "Traceback (most recent call", '.py", line'}
    for path in paths:
        text = str(path).rstrip("/")
        if text:
            markers.add(text + "/")
            if len(text) >= 10:
                markers.add(text)
    return tuple(sorted(markers, key=len, reverse=True))


_INTERNAL_CAUSES = (
    (
        ("OverflowError", "too large to convert"),
        "an unbounded integer overflowed (SQLite holds 64 bits, timedelta and C ints fewer): "
        "bound the parameter, Annotated[int, Field(ge=..., le=...)]",
    ),
    (
        ("surrogates not allowed",),
        "a string with a lone surrogate ('\\ud800') reached SQLite, which stores UTF-8; such "
        "strings should be refused as bad_arguments before any tool runs (the core's argument "
        "validation, not this tool)",
    ),
    (
        ("pattern too complex",),
        "a long string went into a SQL LIKE pattern (SQLite allows 50,000 bytes, a 4-byte "
        "character counts 4): cap it, Annotated[str, Field(max_length=...)]",
    ),
    (
        ("RecursionError",),
        "a deeply nested argument is walked recursively: bound its shape in the signature",
    ),
    (
        ("NoneType",),
        "an optional argument (or a row that does not exist) is used without a None check",
    ),
    (
        ("InvalidOperation", "ConversionSyntax"),
        "a string was turned into a Decimal unchecked: raise InvalidArgument instead",
    ),
    (
        ("ValueError",),
        "a value is converted (int(), a date, a Decimal) without catching the error: raise "
        "InvalidArgument saying what a valid value looks like",
    ),
    (
        ("ZeroDivisionError",),
        "a zero argument (or an empty set) divides: refuse it with InvalidArgument",
    ),
    (("KeyError", "IndexError"), "a key or index taken from an argument is used unchecked"),
)


def _internal_cause(message: str) -> str:
    for needles, cause in _INTERNAL_CAUSES:
        if any(n in message for n in needles):
            return cause
    return (
        "a bug in the tool: it raised an exception that is not a ToolError (NotFound, "
        "InvalidArgument, PreconditionFailed, PermissionDenied, Conflict)"
    )


def _uncaught_cause(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return (
            "a deeply nested argument overflowed the stack while the core validated or "
            "explained it (the core's Session.call, not this tool)"
        )
    return "an exception escaped the core's Session.call (not a tool bug: tools are wrapped)"
