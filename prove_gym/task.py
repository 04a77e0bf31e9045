"""The Task contract: one dataset row, enough to rebuild the exact initial state anywhere.

A task names its server(s), the seed and size of the initial state, the tools
offered, and the user turns; each turn carries the gold calls as *steps* with
dependency edges. Steps are numbered globally across turns (positions are
global, as the reward requires for multi-turn tasks).

JSON example (one line of a ``.jsonl`` file)::

    {"id": "calendar-0001", "servers": ["calendar"], "seed": 7, "size": 1,
     "turns": [{"user": "Move my 'Design review' to 3pm tomorrow.",
                "steps": [{"id": "s1", "name": "search_events", "arguments": {"query": "Design review"}},
                          {"id": "s2", "name": "update_event",
                           "arguments": {"event_id": "evt_0012", "start": "2026-03-03T15:00"},
                           "depends_on": ["s1"]}]}]}

A step with ``expect_error`` is a *failed attempt* the gold conversation shows (the
paper's state machine): followed in its turn by the recovery (the call again with
corrected arguments, or the tool the error names first, then the call again), or, last
in its turn, *given up*: nothing can make the request succeed, so the right move after
the error is to explain it and call nothing more in that turn. It is played, and fails,
but is not scored: a trajectory that makes it and one that goes straight on pay the
same (see :mod:`prove_gym.reward`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from prove_gym.server.state import MAX_STATE_SIZE

TurnKind = Literal["normal", "clarify", "abstain"]
"""``normal``: the gold steps should be called. ``clarify``: a required value is
missing, the right move is to ask (no call). ``abstain``: no offered tool can
help, the right move is to say so (no call)."""

InfoLevel = Literal["complete", "missing", "minimal"]

ERROR_KINDS = (
    "unknown_tool",
    "bad_arguments",
    "not_found",
    "precondition_failed",
    "permission_denied",
    "conflict",
    "parse_error",
    "internal",
)
"""The values of :class:`~prove_gym.server.errors.ErrorKind` (kept here: tasks import no server)."""


class GoldStep(BaseModel):
    """One ground-truth call.

    Attributes:
        id: Unique within the task (``"s1"``); referenced by ``depends_on``.
        name: Tool name as offered to the model.
        arguments: The gold arguments.
        depends_on: Ids of steps that must be matched earlier (dependency edges).
        server: Server owning the tool; ``None`` means the task's first server.
        expect_error: Set on a failed attempt the gold shows: the error kind the call
            fails with (``"precondition_failed"``...). Such a step is played but never
            scored (no coverage needed, no validity or budget cost when a model makes it
            too); later steps of its turn recover, or, when it is its turn's last step,
            the request is given up (explained, not retried).
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    depends_on: list[str] = Field(default_factory=list)
    server: str | None = None
    expect_error: str | None = None

    @property
    def attempt(self) -> bool:
        """A failed attempt shown before a recovery (``expect_error`` is set): not scored."""
        return self.expect_error is not None

    @model_validator(mode="after")
    def _known_error_kind(self) -> GoldStep:
        if self.expect_error is not None and self.expect_error not in ERROR_KINDS:
            raise ValueError(
                f"step {self.id!r}: expect_error must be one of {list(ERROR_KINDS)}, "
                f"got {self.expect_error!r}"
            )
        return self

    @model_serializer(mode="wrap")
    def _omit_no_attempt(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a step that is not an attempt is written as before: datasets keep their bytes
        data: dict[str, Any] = handler(self)
        if data.get("expect_error") is None:
            data.pop("expect_error", None)
        return data


class Turn(BaseModel):
    """One user turn and the gold behaviour that answers it."""

    model_config = ConfigDict(extra="forbid")

    user: str
    steps: list[GoldStep] = Field(default_factory=list)
    kind: TurnKind = "normal"
    info_level: InfoLevel = "complete"
    missing: list[str] = Field(
        default_factory=list, description="For clarify turns: the values the user left out."
    )

    @model_validator(mode="after")
    def _kind_matches_steps(self) -> Turn:
        if self.kind in ("clarify", "abstain") and self.steps:
            raise ValueError(f"a {self.kind!r} turn has no gold steps (the right move is no call)")
        return self

    @property
    def given_up(self) -> bool:
        """Whether the turn ends on a failed attempt: the request is explained, not retried."""
        return bool(self.steps) and self.steps[-1].attempt


class Task(BaseModel):
    """One episode's specification; see the module docstring for the JSON shape.

    Attributes:
        id: Unique id of the task.
        servers: Servers with live state; the first is the primary one.
        seed: Seed of the initial state (every server is sampled with it).
        size: Size of the initial state.
        tools: Offered tools as ``"server.tool"``; ``None`` offers every visible
            tool of every server in ``servers``.
        schema_overrides: Parameter schemas that replace a tool's own, by
            qualified name (e.g. with enum values stripped).
        tool_schemas: For scoring trajectories of another environment offline: the tools
            the model was offered, as plain OpenAI function schemas (an MCP ``annotations``
            object with ``readOnlyHint`` says whether one writes). With them the task needs
            no registered server; ``servers`` just names the environment. Such a task is
            scored, never run.
        turns: The user turns, in order.
        system: Extra system-prompt text.
        final_state_hash: State hash after replaying all gold steps (set by synthesis).
        meta: Free-form provenance (generator, chain, knobs applied).
        env_versions: The env version each server plays, by name, where it is not ``-v0``
            (``{"trading": 1}``: ``prove/trading-v1``'s tool behaviour). The gold and
            ``final_state_hash`` are recorded under these versions; an env of another
            version refuses the task.
        principals: Who the user is, by server, where the version played declares a
            principal (``{"email": "mbx_03"}``: the owner of that mailbox): every call to
            that server acts for it, and the system prompt says so.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    servers: list[str] = Field(min_length=1)
    seed: int = 0
    size: int | None = Field(default=None, ge=1, le=MAX_STATE_SIZE)
    tools: list[str] | None = None
    schema_overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)
    tool_schemas: list[dict[str, Any]] | None = None
    turns: list[Turn] = Field(min_length=1)
    system: str | None = None
    final_state_hash: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    env_versions: dict[str, int] = Field(default_factory=dict)
    principals: dict[str, str] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _omit_v0(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a task of -v0 servers only is written as before: datasets keep their bytes
        data: dict[str, Any] = handler(self)
        for later in ("env_versions", "principals"):
            if not data.get(later):
                data.pop(later, None)
        return data

    def env_version(self, server: str) -> int:
        """The env version ``server`` plays in this task (0: ``-v0``)."""
        return self.env_versions.get(server, 0)

    @model_validator(mode="after")
    def _check_steps(self) -> Task:
        for name, number in self.env_versions.items():
            if number < 0:
                raise ValueError(f"task {self.id!r}: env version of {name!r} must be >= 0")
        seen: set[str] = set()
        attempts: set[str] = set()
        for turn in self.turns:
            for step in turn.steps:
                if step.id in seen:
                    raise ValueError(f"task {self.id!r}: step id {step.id!r} is used twice")
                missing = [d for d in step.depends_on if d not in seen]
                if missing:
                    raise ValueError(
                        f"task {self.id!r}: step {step.id!r} depends on {missing}, "
                        "which are not earlier steps"
                    )
                if (step.attempt and step.depends_on) or attempts & set(step.depends_on):
                    raise ValueError(
                        f"task {self.id!r}: step {step.id!r}: a failed attempt (expect_error) "
                        "is not scored, so no dependency edge starts or ends at one"
                    )
                seen.add(step.id)
                if step.attempt:
                    attempts.add(step.id)
        if attempts and len(attempts) == len(seen):
            raise ValueError(
                f"task {self.id!r}: every gold step is a failed attempt (expect_error), so "
                "calling nothing would score the maximum: keep at least one that succeeds"
            )
        return self

    @property
    def server(self) -> str:
        """The primary server."""
        return self.servers[0]

    @property
    def steps(self) -> list[GoldStep]:
        """All gold steps, in global order across turns (failed attempts included)."""
        return [step for turn in self.turns for step in turn.steps]

    @property
    def scored_steps(self) -> list[GoldStep]:
        """The gold steps a trajectory is scored against: every step but failed attempts."""
        return [step for turn in self.turns for step in turn.steps if not step.attempt]

    @property
    def kind(self) -> TurnKind:
        """``abstain`` if no turn has gold steps and any abstains, ``clarify`` if a turn
        asks for clarification, else ``normal``."""
        kinds = {t.kind for t in self.turns}
        if not self.scored_steps and "abstain" in kinds:
            return "abstain"
        return "clarify" if "clarify" in kinds else "normal"

    def step_server(self, step: GoldStep) -> str:
        return step.server or self.servers[0]

    def to_json(self) -> str:
        """Compact, key-ordered JSON: byte-identical for identical tasks."""
        return json.dumps(
            self.model_dump(mode="json", exclude_defaults=False),
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, data: str | bytes | dict[str, Any]) -> Task:
        """A task from its JSON text or dict.

        Raises:
            TaskError: The data is not a task; the one-line message names each field that
                is wrong and what was expected there.
        """
        try:
            if isinstance(data, dict):
                return cls.model_validate(data)
            return cls.model_validate_json(data)
        except ValidationError as exc:
            raise TaskError(f"not a valid task: {describe_errors(exc)}") from None

    @classmethod
    def coerce(cls, value: Task | str | bytes | dict[str, Any]) -> Task:
        """Accept a Task, its JSON text or its dict (:class:`TaskError` if it is none)."""
        if isinstance(value, Task):
            return value
        if not isinstance(value, str | bytes | dict):
            raise TaskError(
                f"not a valid task: expected a Task, its dict or its JSON text, "
                f"got {type(value).__name__}"
            )
        return cls.from_json(value)


class TaskError(ValueError):
    """Data that is not a task, or a task that does not fit the installed servers."""


def describe_errors(exc: ValidationError, *, limit: int = 3) -> str:
    """Pydantic's errors as one line: ``field.path: what was expected (got ...)``, the first
    ``limit`` of them, without pydantic's documentation links."""
    parts = []
    for err in exc.errors(include_url=False)[:limit]:
        message = str(err["msg"]).removeprefix("Value error, ")
        kind = err["type"]
        if kind == "json_invalid":
            message = f"not JSON ({message.removeprefix('Invalid JSON: ')})"
        elif kind == "extra_forbidden":
            message = "not a task field"
        elif kind not in ("missing", "value_error", "too_short", "too_long"):
            got = repr(err.get("input"))
            message += f" (got {got if len(got) <= 40 else got[:37] + '...'})"
        where = ".".join(str(p) for p in err["loc"])
        parts.append(f"{where}: {message}" if where else message)
    more = exc.error_count() - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def load_tasks(path: str | Path) -> list[Task]:
    """Read a ``.jsonl`` file of tasks (blank lines ignored)."""
    return list(iter_tasks(path))


def iter_tasks(path: str | Path) -> Iterator[Task]:
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                try:
                    task = Task.from_json(line)
                except TaskError as exc:
                    raise TaskError(f"{path}:{lineno}: {exc}") from None
                yield task


def save_tasks(tasks: Iterable[Task], path: str | Path) -> int:
    """Write tasks as JSON lines; returns how many were written."""
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for task in tasks:
            fh.write(task.to_json() + "\n")
            n += 1
    return n
